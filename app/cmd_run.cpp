// `rsim run` and `rsim validate`: a scenario evaluated and written, or only checked.
#include "app/cli_common.hpp"

#include <fstream>
#include <thread>

#include "app/result_set.hpp"
#include "session/session.hpp"
#include "engine/output/output.hpp"
#include "plots/collect.hpp"
#include "plots/report.hpp"
#include "serving/serve.hpp"

namespace po = boost::program_options;
namespace fs = std::filesystem;

namespace rsim::cli {

namespace {

// A scenario that loaded with unknown top-level keys (`unknown`): the errors its plots and an
// evaluation of a sample of its points find too, thrown together in file order, so that one run
// reports every error of the file (an unknown key does not hide an unknown platform).
[[noreturn]] void throw_with_evaluation_errors(const Scenario& s, const Catalog& catalog, const Diags& unknown, bool plots_read = false) {
  Diags found = unknown;
  try {
    if (!plots_read) load_plot_specs(s);
  } catch (const ConfigError& e) {
    found.add(e);
  }
  try {
    ScriptSetup scripts = setup_scripts(s);
    RunOptions opt = scenario_run_options(scripts);
    opt.jobs = 1;
    opt.points = validation_points(s.sweep);
    run_scenario(s, catalog, opt);
    serving::validate_serving(s, opt, opt.points, found);
  } catch (const ConfigError& e) {
    found.add(e);
  }
  throw in_file_order(found);
}

// --format's list ("png,svg"); `bad`: the first name that is not a format
std::vector<plots::Format> parse_formats(const std::string& list, std::string& bad) {
  std::vector<plots::Format> formats;
  size_t start = 0;
  while (start <= list.size()) {
    size_t comma = list.find(',', start);
    std::string f = list.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
    if (f == "png") formats.push_back(plots::Format::PNG);
    else if (f == "svg") formats.push_back(plots::Format::SVG);
    else if (f == "pdf") formats.push_back(plots::Format::PDF);
    else if (!f.empty() && bad.empty()) bad = f;
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return formats;
}

}  // namespace

// --style: the style's own size, font and resolution for every figure
void restyle(std::vector<plots::PlotSpec>& v, const std::string& style) {
  if (style.empty()) return;
  for (auto& sp : v) {
    sp.style = style;
    sp.given = {"style"};
    sp.physical = false;
  }
}

namespace {

// rsim run's options
po::options_description run_options() {
  po::options_description desc("rsim run options");
  desc.add_options()("help,h", "show this help")("file", po::value<std::string>(), "scenario YAML file")(
      "out,o", po::value<std::string>(), "output folder (default: out/<scenario name>)")(
      "set", po::value<std::vector<std::string>>()->composing(), "NAME=VALUE: set a var or pin a sweep variable (repeatable)")(
      "jobs,j", po::value<int>()->default_value(0), "worker threads (default: every core)")(
      "tables", po::value<std::string>()->default_value("all"), "all: results.csv, summary.csv, results.json; summary: network totals only (no per-layer rows, no figures)")(
      "quiet,q", "print nothing but errors")("rows", po::value<size_t>()->default_value(40), "rows of each table shown in the terminal (0: their counts only)")(
      "format", po::value<std::string>()->default_value("png,svg"), "figure formats, comma-separated: png, svg, pdf")(
      "dpi", po::value<double>()->default_value(0), "PNG resolution (default: each plot's own, 150)")(
      "no-plots", "write the tables only")(
      "style", po::value<std::string>(), "draw every figure in this style: screen, paper, paper-wide, slides (overrides the scenario's)")(
      "shard", po::value<std::string>(), "K/N: evaluate only the points whose index is K mod N into DIR/shard.rsim, for rsim merge; slurm: K and N of the array job");
  desc.add(hw_dir_option());
  return desc;
}

// The request-level simulation's tables (requests.csv, serving.csv, timeline.csv) into the staging
// folder beside the run's, and its rows into results.json; its terminal lines into `served`, its
// report section into `report`
serving::ServingTables serve_into(const Scenario& s, const Catalog& catalog, const RunOptions& opt, const std::string& staging,
                                  std::vector<std::string>& written, std::string& served, std::string& report) {
  serving::ServingTables st = serving::serve_scenario(s, catalog, opt);
  for (const auto& [name, text] : {std::pair<const char*, const std::string*>{"requests.csv", &st.requests_csv}, {"serving.csv", &st.serving_csv},
                                   {"timeline.csv", &st.timeline_csv}}) {
    write_file_atomic((fs::path(staging) / name).string(), *text);
    written.push_back(name);
  }
  served = st.text;
  // results.json gains the serving rows (its last '}' closes the document)
  const std::string json_path = (fs::path(staging) / "results.json").string();
  if (std::ifstream in(json_path, std::ios::binary); in) {
    std::string doc((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    const size_t end = doc.find_last_of('}');
    if (end != std::string::npos) {
      doc.insert(end, ",\"serving\":" + serving::serving_json(st));
      write_file_atomic(json_path, doc);
    }
  }
  report = serving::serving_markdown(st);
  return st;
}

// The warning for tables projected past 1 GB
void warn_projection(std::ostream& err, double bytes, Tables tables, bool quiet) {
  if (bytes <= 1e9 || quiet) return;
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.1f GB", bytes / 1e9);
  err << "rsim: warning: the tables of this run will take about " << buf << " ("
      << (tables == Tables::All ? "per-layer rows of every point" : "network totals of every point") << ")\n";
  if (tables == Tables::All) err << "rsim: note: `--tables summary` writes network totals only\n";
  err.flush();
}

// What a run prints: its conventions, the layer table, the network totals, the serving runs and
// the files written
void print_run(std::ostream& out, const Scenario& s, const RunResult& r, const po::variables_map& vm, Tables tables, bool want_plots, size_t total_rows,
               size_t total_summary, const std::string& served, const fs::path& dir, size_t n_figures, double secs) {
  size_t n_points = want_plots ? r.points.size() : static_cast<size_t>(point_count(s.sweep));
  const PointResult& first = r.results.front();
  out << s.name << ": " << n_points << " point" << (n_points == 1 ? "" : "s") << " × " << first.platforms.size()
      << " platform" << (first.platforms.size() == 1 ? "" : "s") << "; FLOPs = " << format_number(first.settings.flops_per_mac)
      << "×MAC, bytes = " << memory_model_name(first.settings.memory_model) << ", " << run_dtype_label(r);
  const Precision& pc = first.settings.precision;
  if (pc.weights) out << ", weights " << dtype_name(*pc.weights) << (pc.quant_group > 0 ? " (scale per " + std::to_string(pc.quant_group) + ")" : "");
  if (pc.kv) out << ", KV cache " << dtype_name(*pc.kv);
  if (pc.compute) out << ", math in " << dtype_name(*pc.compute);
  out << "\n\n";
  if (tables == Tables::All) out << terminal_table(r, vm["rows"].as<size_t>(), total_rows) << "\n";
  const size_t rows = vm["rows"].as<size_t>();
  if (rows > 0)
    out << "network totals (time = the kernels' work plus what the execution mode adds; mem/comp = memory- and compute-bound layers, theoretical roofs; "
           "limit = the part with the largest share of the derated time):\n";
  out << terminal_summary(r, rows, total_summary) << "\n";
  if (!served.empty()) out << "serving (docs/serving.md; requests.csv, serving.csv, timeline.csv):\n" << served << "\n";
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.3f s", secs);
  out << "wrote " << dir.string() << "/: " << (tables == Tables::All ? "results.csv, summary.csv, kernels.csv, ops.csv, results.json" : "summary.csv, results.json (network totals)");
  if (!served.empty()) out << ", requests.csv, serving.csv, timeline.csv";
  if (n_figures) out << ", report.md, report.html and " << n_figures << " figure" << (n_figures == 1 ? "" : "s");
  out << " (evaluated in " << buf << ")\n";
}

}  // namespace

int cmd_run(const std::vector<std::string>& args, std::ostream& out, std::ostream& err) { return cmd_run(args, out, err, nullptr); }

int cmd_run(const std::vector<std::string>& args, std::ostream& out, std::ostream& err, MergeRun* merge) {
  const po::options_description desc = run_options();
  po::positional_options_description pos;
  pos.add("file", 1);
  po::variables_map vm;
  int code = kOk;
  if (!parse(args, desc, pos, vm, err, code)) return code;
  if (vm.count("help")) {
    out << "usage: rsim " << synopsis("run") << "\n\n" << desc;
    return kOk;
  }
  if (!vm.count("file")) return usage_error(err, "run needs a scenario file", "rsim run scenarios/group_conv_sweep.yaml");
  int jobs = vm["jobs"].as<int>();
  if (jobs == 0) jobs = static_cast<int>(std::clamp(std::thread::hardware_concurrency(), 1u, 256u));
  if (jobs < 1 || jobs > 256) return usage_error(err, "--jobs must be between 1 and 256");
  Tables tables = Tables::All;
  if (vm["tables"].as<std::string>() == "summary") tables = Tables::Summary;
  else if (vm["tables"].as<std::string>() != "all") {
    std::string hint = did_you_mean(vm["tables"].as<std::string>(), {"all", "summary"});
    return usage_error(err, "unknown --tables '" + vm["tables"].as<std::string>() + "'", hint.empty() ? "use all or summary" : hint);
  }
  bool sets_ok = true;
  auto sets = parse_sets(vm.count("set") ? vm["set"].as<std::vector<std::string>>() : std::vector<std::string>{}, sets_ok, err);
  if (!sets_ok) return kUsage;
  ShardRun shard;
  if (vm.count("shard") && !parse_shard(vm["shard"].as<std::string>(), shard, err)) return kUsage;
  std::string hw = find_hardware_dir(vm["hw-dir"].as<std::string>());
  try {
    plots::RenderOptions ropt;
    {
      std::string bad;
      ropt.formats = parse_formats(vm["format"].as<std::string>(), bad);
      if (!bad.empty()) return usage_error(err, "unknown figure format '" + bad + "'", "formats: png, svg, pdf");
      double dpi = vm["dpi"].as<double>();
      if (dpi != 0 && (dpi < 36 || dpi > 600)) return usage_error(err, "--dpi must be between 36 and 600");
      ropt.dpi = dpi;
    }
    bool want_plots = !vm.count("no-plots") && !ropt.formats.empty() && tables == Tables::All;
    std::string style = vm.count("style") ? vm["style"].as<std::string>() : "";
    if (!style.empty() && style != "screen" && style != "paper" && style != "paper-wide" && style != "slides") {
      std::string hint = did_you_mean(style, {"screen", "paper", "paper-wide", "slides"});
      return usage_error(err, "unknown style '" + style + "'", hint.empty() ? "styles: screen, paper, paper-wide, slides" : hint);
    }
    Diags unknown;
    Scenario s = load_scenario(vm["file"].as<std::string>(), &unknown);
    apply_overrides(s, sets);
    if (merge) check_merge_scenario(s, *merge);
    Catalog catalog(hw);
    if (!unknown.empty()) throw_with_evaluation_errors(s, catalog, unknown);
    std::vector<plots::PlotSpec> specs;
    try {
      specs = load_plot_specs(s);
    } catch (const ConfigError& e) {  // with the errors of the rest of the file
      Diags plot_errors;
      plot_errors.add(e);
      throw_with_evaluation_errors(s, catalog, plot_errors, true);
    }
    restyle(specs, style);
    if (!vm.count("quiet"))
      for (const Diagnostic& w : s.load_warnings) err << format_diagnostic(w);
    if (want_plots && !vm.count("quiet"))
      for (const Diagnostic& w : platform_name_warnings(s)) err << format_diagnostic(w);
    Progress progress(isatty(2) && !vm.count("quiet"));
    ScriptSetup scripts = setup_scripts(s);  // plugins' operators, efficiency model, metrics
    RunOptions opt = scenario_run_options(scripts);
    opt.jobs = jobs;
    {  // the serving section's errors before anything is evaluated
      Diags sd;
      serving::validate_serving(s, opt, validation_points(s.sweep), sd);
      if (!sd.empty()) throw in_file_order(sd);
    }
    opt.rows = tables == Tables::All;
    opt.progress = [&progress](size_t d, size_t t) { progress.update(d, t); };

    fs::path dir = vm.count("out") ? fs::path(vm["out"].as<std::string>()) : fs::path("out") / (s.name + shard_suffix(shard));
    if (shard.n) return run_shard(s, catalog, opt, shard, shard_options(vm), dir.string(), vm.count("quiet") > 0, out, err);
    // Everything goes into a staging folder beside `dir`, swapped in at the end: an error or an
    // interrupt leaves the previous result set as it was.
    std::unique_ptr<ResultSet> set;
    try {
      set = std::make_unique<ResultSet>(dir.string(), [&] {
        err << "rsim: waiting for another rsim writing into '" << dir.string() << "' to finish\n";
        err.flush();
      });
    } catch (const std::exception& e) {
      err << "rsim: error: " << e.what() << "\n";
      return kConfig;
    }
    RunInfo info{RSIM_VERSION, &s};
    TableWriter writer(set->staging(), tables, info);
    const bool quiet = vm.count("quiet") > 0;
    writer.on_projection = [&err, tables, quiet](double bytes) { warn_projection(err, bytes, tables, quiet); };
    RunResult collected;  // every point's totals and the layer rows the figures draw
    plots::FigureCollector collect(collected, specs);
    PreviewSink preview(vm["rows"].as<size_t>(), 40);  // without figures: the first points only
    WarningSink warnings(want_plots ? static_cast<ResultSink*>(&collect) : static_cast<ResultSink*>(&preview));
    writer.next = &warnings;
    auto t0 = std::chrono::steady_clock::now();
    if (merge) replay_shards(s, catalog, opt, merge->shards, writer);
    else stream_scenario(s, catalog, opt, writer);
    progress.finish();
    if (!vm.count("quiet")) warnings.print(err);  // --quiet: nothing but errors (summary.csv's fits_in_memory still says what a warning would)
    double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();

    size_t n_figures = 0;
    std::vector<std::string> failures;
    std::string served;  // the serving runs' lines for the terminal
    std::optional<serving::ServingTables> served_tables;
    std::string serving_report;  // report.md's serving section
    try {
      std::vector<std::string> written = writer.finish();
      if (!s.serving.is_null())  // the request-level simulation, its tables beside the run's
        served_tables = serve_into(s, catalog, opt, set->staging(), written, served, serving_report);
      if (want_plots) {
        if (specs.empty()) {
          specs = plots::default_plot_specs(collected, s);
          Diags d;
          plots::apply_figure_defaults(specs, s.settings, d);
          d.throw_if_any();
          restyle(specs, style);
        }
        std::vector<std::pair<std::string, std::vector<plots::Format>>> figures;
        std::vector<std::pair<std::string, std::string>> svgs;  // report.html's figures, with tooltips
        const serving::ServingTables* st = served_tables ? &*served_tables : nullptr;
        auto files = plots::render_figures(collected, s, specs, ropt, figures, &failures, st, &svgs);
        files.push_back({"report.md", plots::report_markdown(collected, s, figures) + serving_report});
        files.push_back({"report.html", plots::report_html(collected, s, svgs, st)});
        for (const auto& f : files) {
          write_file_atomic((fs::path(set->staging()) / f.name).string(), f.bytes);
          written.push_back(f.name);
        }
        n_figures = figures.size();
      }
      set->commit(written);
    } catch (const ConfigError&) {
      throw;
    } catch (const std::exception& e) {
      err << "rsim: error: " << e.what() << "\n";
      return kConfig;
    }
    for (const auto& f : failures) err << "rsim: warning: figure " << f << "; not drawn (the tables are written)\n";
    if (!vm.count("quiet"))
      print_run(out, s, want_plots ? collected : preview.result(), vm, tables, want_plots, want_plots ? collect.total_rows() : preview.total_rows(),
                want_plots ? collect.total_summary() : preview.total_summary(), served, dir, n_figures, secs);
    return kOk;
  } catch (const ConfigError& e) {
    return print_config_error(err, e);
  }
}

int cmd_validate(const std::vector<std::string>& args, std::ostream& out, std::ostream& err) {
  po::options_description desc("rsim validate options");
  desc.add_options()("help,h", "show this help")("files", po::value<std::vector<std::string>>(), "scenario files")(
      "all-points", "evaluate every point of the sweep (default: every variable at its first, last, extreme and 16 spread values)");
  desc.add(hw_dir_option());
  po::positional_options_description pos;
  pos.add("files", -1);
  po::variables_map vm;
  int code = kOk;
  if (!parse(args, desc, pos, vm, err, code)) return code;
  if (vm.count("help")) {
    out << "usage: rsim " << synopsis("validate") << "\n\n" << desc;
    return kOk;
  }
  if (!vm.count("files")) return usage_error(err, "validate needs at least one scenario file");
  Catalog catalog(find_hardware_dir(vm["hw-dir"].as<std::string>()));
  int rc = kOk;
  for (const auto& f : vm["files"].as<std::vector<std::string>>()) {
    // every error of the file at once: the plots' and the evaluation's are collected together
    // (a scenario that does not load, or scripts that do not compile, stop here)
    Diags found, unknown;  // (unknown top-level keys: reported with the rest, in file order)
    try {
      Scenario s = load_scenario(f, &unknown);
      std::vector<plots::PlotSpec> specs;
      try {
        specs = load_plot_specs(s);
      } catch (const ConfigError& e) {
        found.add(e);
      }
      ScriptSetup scripts = setup_scripts(s);
      RunOptions opt = scenario_run_options(scripts);
      opt.jobs = static_cast<int>(std::clamp(std::thread::hardware_concurrency(), 1u, 256u));
      // not every point: every value of every sweep variable, bound at least once
      opt.points = vm.count("all-points") ? std::vector<Point>{} : validation_points(s.sweep);
      size_t total = static_cast<size_t>(point_count(s.sweep));
      RunResult r;
      try {
        r = run_scenario(s, catalog, opt);
      } catch (const ConfigError& e) {
        found.add(e);
      }
      serving::validate_serving(s, opt, opt.points, found);
      if (found.empty()) {
        // the figures' names (variables, metrics, platforms) checked on the evaluated points,
        // numbered 0, 1, … as the charts expect; a plot's point is checked against the whole sweep
        for (size_t i = 0; i < r.points.size(); ++i) {
          r.points[i].index = i;
          for (auto& row : r.results[i].rows) row.point = i;
          for (auto& sm : r.results[i].summary) sm.point = i;
        }
        for (auto spec : specs) {
          try {  // each plot's error, not only the first
            if (spec.kind == plots::Kind::Layers || spec.kind == plots::Kind::Compare) {
              if (spec.point < 0 || static_cast<size_t>(spec.point) >= total)
                throw ConfigError(spec.loc, "plot point " + std::to_string(spec.point) + " is out of range: the run has " + std::to_string(total) + " points");
              spec.point = 0;
            }
            plots::build_figures(spec, r, s);
          } catch (const ConfigError& e) {
            found.add(e);
          }
        }
        size_t rows = 0;
        for (const auto& pr : r.results) rows += pr.rows.size() + pr.request_layer_evaluations;  // (a request's later decode steps too)
        if (found.empty() && unknown.empty()) {
          out << f << ": ok (" << total << " point" << (total == 1 ? "" : "s");
          if (r.points.size() < total) out << "; " << r.points.size() << " evaluated: each variable's first, last, extreme and spread values";
          out << ", " << rows << " layer evaluations)\n";
        }
      }
    } catch (const ConfigError& e) {
      found.add(e);
    }
    found.merge(unknown);
    if (!found.empty()) {
      err << in_file_order(found).what();
      rc = kConfig;
    }
  }
  return rc;
}

}  // namespace rsim::cli
