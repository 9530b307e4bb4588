#include "app/cli.hpp"
#include "app/cli_common.hpp"

#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include <boost/program_options.hpp>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>
#include <functional>
#include <iostream>
#include <memory>
#include <mutex>
#include <thread>

#include "app/result_set.hpp"
#include "session/session.hpp"
#include "engine/evaluate.hpp"
#include "engine/output.hpp"
#include "engine/plan.hpp"
#include "engine/schema.hpp"
#include "engine/units.hpp"
#include "measure/measure_run.hpp"
#include "measure/calibrate.hpp"
#include "importers/onnx_import.hpp"
#include "measure/probe.hpp"
#include "measure/probe_output.hpp"
#include "measure/probe_figures.hpp"
#include "plots/draw.hpp"
#include "plots/charts.hpp"
#include "plots/collect.hpp"
#include "plots/report.hpp"
#include "scripting/lua_expr.hpp"
#include "serving/serve.hpp"
#include "scripting/lua_host.hpp"

namespace po = boost::program_options;
namespace fs = std::filesystem;

namespace rsim {

using cli::kConfig;
using cli::kOk;
using cli::kUsage;
using cli::parse;
using cli::text_table;
using cli::usage_error;

namespace {


struct Command {
  const char* name;
  const char* synopsis;
  const char* help;
  int (*fn)(const std::vector<std::string>&, std::ostream&, std::ostream&);
};

int cmd_run(const std::vector<std::string>&, std::ostream&, std::ostream&);
int cmd_validate(const std::vector<std::string>&, std::ostream&, std::ostream&);
int cmd_hw(const std::vector<std::string>&, std::ostream&, std::ostream&);
int cmd_ops(const std::vector<std::string>&, std::ostream&, std::ostream&);
int cmd_import(const std::vector<std::string>&, std::ostream&, std::ostream&);
int cmd_probe(const std::vector<std::string>&, std::ostream&, std::ostream&);
int cmd_schema(const std::vector<std::string>&, std::ostream&, std::ostream&);
// A measured CSV: 1 GiB is about 2,000,000 layer rows of rsim measure's (570 bytes each), far
// beyond any measurement; a larger file (or a device read without end) is refused before it is read.
constexpr size_t kMaxMeasuredCsvBytes = 1u << 30;

int cmd_calibrate(const std::vector<std::string>&, std::ostream&, std::ostream&);
int cmd_measure(const std::vector<std::string>&, std::ostream&, std::ostream&);
int cmd_plan(const std::vector<std::string>&, std::ostream&, std::ostream&);
using cli::cmd_estimate;

const Command kCommands[] = {
    {"run", "run FILE [--out DIR] [--set NAME=VALUE]... [--jobs N] [--hw-dir DIR] [--quiet] [--rows N] [--tables all|summary] [--format png,svg,pdf] "
            "[--style STYLE] [--dpi N] [--no-plots]",
     "evaluate a scenario and write results.csv, summary.csv and results.json", cmd_run},
    {"estimate", "estimate MODEL --platform P [--platform P]... [--dtype D] [--batch B] [--execution E] [--phase prefill|decode] [--seq N] [--context N]",
     "a model's time on platforms (a zoo name, an .onnx file or a config.json), what it is made of and what limits it, per op type, with no scenario written",
     cmd_estimate},
    {"validate", "validate FILE... [--all-points] [--hw-dir DIR]", "check scenarios without writing anything (a sample of each sweep variable's values; --all-points: every point)", cmd_validate},
    {"hw", "hw list | hw show NAME [--scenario FILE] [--hw-dir DIR]",
     "list the platform catalog, or show one platform's roofs and derivations (a scenario's inline or what-if platform with --scenario)", cmd_hw},
    {"ops", "ops [NAME] [--scenario FILE]", "list the operators (with a scenario's scripted ones), or show one operator's attributes and cost formula", cmd_ops},
    {"probe", "probe [--quick] [--threads N] [-o PLATFORM.yaml] [--json FILE] [--out DIR] [--backend native|torch] [--device D]",
     "measure this CPU's roofs: FMA peaks per ISA and precision, clock, bandwidth per memory level (--backend torch: any device through PyTorch)", cmd_probe},
    {"measure", "measure FILE [--platform PLATFORM(.yaml|name)] [--backend onednn|torch] [--device D] [--execution eager,graph] [--reps N] [--cache warm|cold] [--out DIR] [--set NAME=VALUE]...",
     "run every layer for real beside its roofline prediction: with oneDNN on this CPU, measured.csv, a figure and findings.txt; with "
     "--backend torch on any device, plan.json, measured.csv and measured_networks.csv (each network as a forward pass)",
     cmd_measure},
    {"plan", "plan FILE [-o PLAN.json] [--set NAME=VALUE]... [--hw-dir DIR]",
     "write every point × network × layer (operator, attributes, inputs, shapes, dtypes, predictions) as JSON for rsim_torch to measure where rsim is not built",
     cmd_plan},
    {"calibrate", "calibrate MEASURED.csv... [MEASURED_NETWORKS.csv...] --platform PLATFORM(.yaml|name) -o CALIBRATED.yaml [--predictions FILE.csv] [--drop-bad-rows] [--hw-dir DIR]",
     "fit an efficiency model per op class (and the runtime, from whole networks) from measured files into a platform file; print the cross-validated error", cmd_calibrate},
    {"schema", "schema [scenario | platform]", "print the JSON Schema (draft 2020-12) of scenario files, or of platform files, for editors", cmd_schema},
    {"import", "import MODEL.onnx [--input NAME=1x3x224x224]... [--dim NAME=VALUE]... [--check-dims NAME=1,8]... [--name NAME] [-o FILE.yaml] [--summary]",
     "write an ONNX model as a zoo model file (symbolic dimensions become parameters), or summarise it", cmd_import},
};

std::string usage_text() {
  std::string s = "usage: rsim COMMAND [ARGS]\n\nA roofline simulator: per-layer FLOPs, bytes, intensity and bound time from YAML scenarios.\n\ncommands:\n";
  for (const auto& c : kCommands) {  // (a help line of any length)
    std::string name = c.name;
    name.resize(std::max<size_t>(name.size(), 10), ' ');
    s += "  " + name + " " + c.help + "\n";
  }
  s += "\noptions:\n  --help     show this help (or `rsim COMMAND --help`)\n  --version  print the version\n";
  s += "\nexit status: 0 ok, 1 scenario or configuration error, 2 usage error\n";
  return s;
}

const Command* find_command(const std::string& name) {
  for (const auto& c : kCommands)
    if (name == c.name) return &c;
  return nullptr;
}

// Passes points on, keeping the run's warnings (e.g. a model that does not fit a platform's memory).
class WarningSink : public ResultSink {
 public:
  explicit WarningSink(ResultSink* next) : next_(next) {}
  void start(const RunHeader& h) override { next_->start(h); }
  void prepare(PointResult& pr, const Point& p) override { next_->prepare(pr, p); }
  void consume(PointResult&& pr, const Point& p) override {
    for (auto& w : pr.warnings) {
      if (first_.size() < 3) first_.push_back(w);
      ++total_;
    }
    for (const FootprintExcess& x : pr.footprint_excess) {  // (their text made only for the first few)
      if (first_.size() < 3) first_.push_back(footprint_warning(x, p));
      ++total_;
    }
    next_->consume(std::move(pr), p);
  }
  // The first few, then a count.
  void print(std::ostream& err) const {
    for (const auto& w : first_) err << format_diagnostic(w);
    if (total_ > first_.size())
      err << "rsim: note: " << total_ - first_.size() << " more warning" << (total_ - first_.size() == 1 ? "" : "s")
          << " like these (summary.csv: fits_in_memory)\n";
  }

 private:
  ResultSink* next_;
  std::vector<Diagnostic> first_;
  size_t total_ = 0;
};

int print_config_error(std::ostream& err, const ConfigError& e) {
  err << e.what();
  return kConfig;
}

// A progress bar on stderr for runs longer than a second, only on a terminal.
class Progress {
 public:
  explicit Progress(bool enabled, std::string what = "points") : enabled_(enabled), what_(std::move(what)), start_(std::chrono::steady_clock::now()) {}
  void update(size_t done, size_t total) {
    if (!enabled_) return;
    auto now = std::chrono::steady_clock::now();
    std::lock_guard<std::mutex> lock(mu_);
    if (now - start_ < std::chrono::seconds(1)) return;
    if (done != total && now - last_ < std::chrono::milliseconds(100)) return;
    last_ = now;
    int width = 40;
    int filled = static_cast<int>(static_cast<double>(done) / static_cast<double>(total) * width);
    std::fprintf(stderr, "\r[%s%s] %zu/%zu %s", std::string(static_cast<size_t>(filled), '#').c_str(),
                 std::string(static_cast<size_t>(width - filled), ' ').c_str(), done, total, what_.c_str());
    shown_ = true;
  }
  void finish() {
    if (shown_) std::fprintf(stderr, "\n");
  }

 private:
  bool enabled_;
  std::string what_;
  bool shown_ = false;
  std::chrono::steady_clock::time_point start_, last_{};
  std::mutex mu_;
};

std::vector<std::pair<std::string, std::string>> parse_sets(const std::vector<std::string>& sets, bool& ok, std::ostream& err) {
  std::vector<std::pair<std::string, std::string>> out;
  ok = true;
  for (const auto& s : sets) {
    size_t eq = s.find('=');
    if (eq == std::string::npos || eq == 0) {
      usage_error(err, "--set needs NAME=VALUE, got '" + s + "'");
      ok = false;
      continue;
    }
    out.emplace_back(s.substr(0, eq), s.substr(eq + 1));
  }
  return out;
}

po::options_description hw_dir_option() {
  po::options_description d;
  d.add_options()("hw-dir", po::value<std::string>()->default_value(""), "platform catalog folder (default: $RSIM_HARDWARE, else share/rsim/hardware of the installation)");
  return d;
}


namespace {


// Diagnostics in file order: by file (first seen first), line and column.
ConfigError in_file_order(const Diags& found) {
  std::vector<Diagnostic> list;
  for (const Diagnostic& dg : found.list()) {  // once each (the settings' errors: when loaded, and again at each evaluated point)
    const bool seen = std::any_of(list.begin(), list.end(), [&](const Diagnostic& o) {
      return o.loc.file.get() == dg.loc.file.get() && o.loc.line == dg.loc.line && o.loc.col == dg.loc.col && o.message == dg.message && o.warning == dg.warning;
    });
    if (!seen) list.push_back(dg);
  }
  std::vector<const SourceFile*> files;
  for (const auto& dg : list)
    if (std::find(files.begin(), files.end(), dg.loc.file.get()) == files.end()) files.push_back(dg.loc.file.get());
  auto rank = [&](const Diagnostic& dg) { return static_cast<size_t>(std::find(files.begin(), files.end(), dg.loc.file.get()) - files.begin()); };
  std::stable_sort(list.begin(), list.end(), [&](const Diagnostic& a, const Diagnostic& b) {
    return std::make_tuple(rank(a), a.loc.line, a.loc.col) < std::make_tuple(rank(b), b.loc.line, b.loc.col);
  });
  return ConfigError(list);
}

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

}  // namespace

int cmd_run(const std::vector<std::string>& args, std::ostream& out, std::ostream& err) {
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
      "style", po::value<std::string>(), "draw every figure in this style: screen, paper, paper-wide, slides (overrides the scenario's)");
  desc.add(hw_dir_option());
  po::positional_options_description pos;
  pos.add("file", 1);
  po::variables_map vm;
  int code = kOk;
  if (!parse(args, desc, pos, vm, err, code)) return code;
  if (vm.count("help")) {
    out << "usage: rsim " << kCommands[0].synopsis << "\n\n" << desc;
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
  std::string hw = find_hardware_dir(vm["hw-dir"].as<std::string>());
  try {
    plots::RenderOptions ropt;
    ropt.formats.clear();
    {
      std::string list = vm["format"].as<std::string>();
      size_t start = 0;
      while (start <= list.size()) {
        size_t comma = list.find(',', start);
        std::string f = list.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
        if (f == "png") ropt.formats.push_back(plots::Format::PNG);
        else if (f == "svg") ropt.formats.push_back(plots::Format::SVG);
        else if (f == "pdf") ropt.formats.push_back(plots::Format::PDF);
        else if (!f.empty()) return usage_error(err, "unknown figure format '" + f + "'", "formats: png, svg, pdf");
        if (comma == std::string::npos) break;
        start = comma + 1;
      }
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
    // --style: the style's own size, font and resolution for every figure
    auto restyle = [&](std::vector<plots::PlotSpec>& v) {
      if (style.empty()) return;
      for (auto& sp : v) {
        sp.style = style;
        sp.given = {"style"};
        sp.physical = false;
      }
    };
    Diags unknown;
    Scenario s = load_scenario(vm["file"].as<std::string>(), &unknown);
    apply_overrides(s, sets);
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
    restyle(specs);
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

    fs::path dir = vm.count("out") ? fs::path(vm["out"].as<std::string>()) : fs::path("out") / s.name;
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
    writer.on_projection = [&](double bytes) {
      if (bytes <= 1e9 || vm.count("quiet")) return;
      char buf[64];
      std::snprintf(buf, sizeof buf, "%.1f GB", bytes / 1e9);
      err << "rsim: warning: the tables of this run will take about " << buf << " ("
          << (tables == Tables::All ? "per-layer rows of every point" : "network totals of every point") << ")\n";
      if (tables == Tables::All) err << "rsim: note: `--tables summary` writes network totals only\n";
      err.flush();
    };
    RunResult collected;  // every point's totals and the layer rows the figures draw
    plots::FigureCollector collect(collected, specs);
    PreviewSink preview(vm["rows"].as<size_t>(), 40);  // without figures: the first points only
    WarningSink warnings(want_plots ? static_cast<ResultSink*>(&collect) : static_cast<ResultSink*>(&preview));
    writer.next = &warnings;
    auto t0 = std::chrono::steady_clock::now();
    stream_scenario(s, catalog, opt, writer);
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
      if (!s.serving.is_null()) {  // the request-level simulation, its tables beside the run's
        serving::ServingTables st = serving::serve_scenario(s, catalog, opt);
        for (const auto& [name, text] : {std::pair<const char*, const std::string*>{"requests.csv", &st.requests_csv}, {"serving.csv", &st.serving_csv},
                                         {"timeline.csv", &st.timeline_csv}}) {
          write_file_atomic((fs::path(set->staging()) / name).string(), *text);
          written.push_back(name);
        }
        served = st.text;
        // results.json gains the serving rows (its last '}' closes the document)
        const std::string json_path = (fs::path(set->staging()) / "results.json").string();
        if (std::ifstream in(json_path, std::ios::binary); in) {
          std::string doc((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
          const size_t end = doc.find_last_of('}');
          if (end != std::string::npos) {
            doc.insert(end, ",\"serving\":" + serving::serving_json(st));
            write_file_atomic(json_path, doc);
          }
        }
        serving_report = serving::serving_markdown(st);
        served_tables = std::move(st);
      }
      if (want_plots) {
        if (specs.empty()) {
          specs = plots::default_plot_specs(collected, s);
          Diags d;
          plots::apply_figure_defaults(specs, s.settings, d);
          d.throw_if_any();
          restyle(specs);
        }
        std::vector<std::pair<std::string, std::vector<plots::Format>>> figures;
        std::vector<plots::OutputFile> files =
            plots::render_figures(collected, s, specs, ropt, figures, &failures, served_tables ? &*served_tables : nullptr);
        files.push_back({"report.md", plots::report_markdown(collected, s, figures) + serving_report});
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
    if (!vm.count("quiet")) {
      const RunResult& r = want_plots ? collected : preview.result();
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
      if (tables == Tables::All) out << terminal_table(r, vm["rows"].as<size_t>(), want_plots ? collect.total_rows() : preview.total_rows()) << "\n";
      const size_t rows = vm["rows"].as<size_t>();
      if (rows > 0)
        out << "network totals (time = the kernels' work plus what the execution mode adds; mem/comp = memory- and compute-bound layers, theoretical roofs; "
               "limit = the part with the largest share of the derated time):\n";
      out << terminal_summary(r, rows, want_plots ? collect.total_summary() : preview.total_summary()) << "\n";
      if (!served.empty()) out << "serving (docs/serving.md; requests.csv, serving.csv, timeline.csv):\n" << served << "\n";
      char buf[64];
      std::snprintf(buf, sizeof buf, "%.3f s", secs);
      out << "wrote " << dir.string() << "/: " << (tables == Tables::All ? "results.csv, summary.csv, kernels.csv, ops.csv, results.json" : "summary.csv, results.json (network totals)");
      if (!served.empty()) out << ", requests.csv, serving.csv, timeline.csv";
      if (n_figures) out << ", report.md and " << n_figures << " figure" << (n_figures == 1 ? "" : "s");
      out << " (evaluated in " << buf << ")\n";
    }
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
    out << "usage: rsim " << find_command("validate")->synopsis << "\n\n" << desc;
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

int cmd_import(const std::vector<std::string>& args, std::ostream& out, std::ostream& err) {
  po::options_description desc("rsim import options");
  desc.add_options()("help,h", "show this help")("file", po::value<std::string>(), "ONNX model")(
      "input", po::value<std::vector<std::string>>()->composing(),
      "NAME=1x3x224x224: fix an input's shape; NAME=batchx3x224x224 fixes the sizes given and keeps the symbols named (repeatable)")(
      "dim", po::value<std::vector<std::string>>()->composing(),
      "NAME=VALUE: a symbolic dimension's default; NAME alone: keep just the symbols named so, fix the rest with --input (repeatable)")(
      "name", po::value<std::string>(), "the network's name (default: the file's stem)")(
      "check-dims", po::value<std::vector<std::string>>()->composing(),
      "NAME=1,8: check that the imported model takes these sizes of a symbol it keeps (every combination; the others at their --dim default)")(
      "output,o", po::value<std::string>(), "write the model here (default: standard output)")(
      "summary", "print the op-type histogram, totals and unsupported ops instead");
  po::positional_options_description pos;
  pos.add("file", 1);
  po::variables_map vm;
  int code = kOk;
  if (!parse(args, desc, pos, vm, err, code)) return code;
  if (vm.count("help")) {
    out << "usage: rsim " << find_command("import")->synopsis << "\n\n" << desc;
    return kOk;
  }
  if (!vm.count("file")) return usage_error(err, "import needs an ONNX model", "rsim import model.onnx -o models/model.yaml");
  OnnxImportOptions opt;
  std::vector<std::pair<std::string, long long>> dims;
  if (vm.count("input"))
    for (const auto& a : vm["input"].as<std::vector<std::string>>()) {
      size_t eq = a.find('=');
      Shape shape;
      bool ok = eq != std::string::npos && eq > 0 && eq + 1 < a.size();
      for (size_t start = eq + 1; ok && start <= a.size();) {
        size_t x = a.find('x', start);
        auto v = parse_integer(a.substr(start, x == std::string::npos ? std::string::npos : x - start));
        if (!v || *v <= 0 || *v > 1000000000LL) ok = false;
        else shape.push_back(*v);
        if (x == std::string::npos) break;
        start = x + 1;
      }
      if (!ok) {  // sizes and symbols, e.g. x=batchx3x256x256 (rsim import only: the model's symbols by name)
        std::vector<std::string> dims;
        bool named = eq != std::string::npos && eq > 0 && eq + 1 < a.size();
        for (size_t start = eq + 1; named && start <= a.size();) {
          size_t x = a.find('x', start);
          // a symbol may hold an 'x' ("max_len"): a part that is not a size joins the next until it is one or the end
          std::string part = a.substr(start, x == std::string::npos ? std::string::npos : x - start);
          auto v = parse_integer(part);
          if (v && (*v <= 0 || *v > 1000000000LL)) named = false;
          if (!part.empty()) dims.push_back(part);
          else named = false;
          if (x == std::string::npos) break;
          start = x + 1;
        }
        if (!named) return usage_error(err, "--input wants NAME=DIMS with positive sizes or the model's symbols, e.g. input=1x3x224x224 or x=batchx3x256x256, not '" + a + "'");
        opt.input_dims.emplace_back(a.substr(0, eq), dims);
        continue;
      }
      opt.inputs.emplace_back(a.substr(0, eq), shape);
    }
  if (vm.count("dim"))
    for (const auto& a : vm["dim"].as<std::vector<std::string>>()) {
      size_t eq = a.find('=');
      if (eq == std::string::npos && !a.empty()) {  // --dim batch: keep just the symbols named so
        opt.keep.push_back(a);
        continue;
      }
      auto v = eq == std::string::npos ? std::nullopt : parse_integer(a.substr(eq + 1));
      if (eq == 0 || !v || *v <= 0 || *v > 1000000000LL)
        return usage_error(err, "--dim wants NAME=VALUE with a positive size (a default), or NAME alone (keep just the symbols named), e.g. batch=1, not '" + a + "'");
      dims.emplace_back(a.substr(0, eq), *v);
    }
  if (vm.count("name")) opt.name = vm["name"].as<std::string>();
  if (vm.count("check-dims"))
    for (const auto& a : vm["check-dims"].as<std::vector<std::string>>()) {
      const size_t eq = a.find('=');
      std::vector<long long> values;
      bool ok = eq != std::string::npos && eq > 0 && eq + 1 < a.size();
      for (size_t start = eq + 1; ok && start <= a.size();) {
        const size_t comma = a.find(',', start);
        auto v = parse_integer(a.substr(start, comma == std::string::npos ? std::string::npos : comma - start));
        if (!v || *v <= 0 || *v > 1000000000LL) ok = false;
        else values.push_back(*v);
        if (comma == std::string::npos) break;
        start = comma + 1;
      }
      if (!ok) return usage_error(err, "--check-dims wants NAME=SIZES with positive sizes separated by commas, e.g. batch=1,8, not '" + a + "'");
      opt.check_dims.emplace_back(a.substr(0, eq), values);
    }
  try {
    auto model = load_onnx(vm["file"].as<std::string>());
    if (vm.count("summary")) {
      opt.dims = dims;
      out << onnx_summary(*model, opt);
      return kOk;
    }
    {
      // every --dim must name a symbolic dimension (checked by a plain import with them bound)
      auto bad = onnx_unsupported_ops(*model, {});
      if (!bad.empty()) import_onnx(*model, opt);  // throws the error listing them
    }
    std::string yaml = onnx_to_model_yaml(*model, opt, dims);
    if (vm.count("output")) write_file_atomic(vm["output"].as<std::string>(), yaml);
    else out << yaml;
    return kOk;
  } catch (const ConfigError& e) {
    return print_config_error(err, e);
  }
}

// `hw show NAME --scenario FILE`: the platform as the scenario resolves it at each sweep point; a
// what-if named per point ("x@${clock}GHz") is found by its full name or by the part before '@'.
int show_scenario_platform(const std::string& file, const std::string& name, const Catalog& catalog, std::ostream& out, std::ostream& err) {
  try {
    Scenario s = load_scenario(file);
    ScriptSetup scripts = setup_scripts(s);
    RunOptions opt = scenario_run_options(scripts);
    RunResult r = run_scenario(s, catalog, opt);
    std::vector<std::string> names;
    size_t shown = 0;
    for (size_t pi = 0; pi < r.results.size(); ++pi)
      for (const auto& held : r.results[pi].platforms) {
        const Platform& p = *held;
        if (std::find(names.begin(), names.end(), p.name) == names.end()) names.push_back(p.name);
        bool match = p.name == name || p.name.substr(0, p.name.find('@')) == name;
        bool again = std::any_of(r.results.begin(), r.results.begin() + static_cast<std::ptrdiff_t>(pi), [&](const PointResult& e) {
          return std::any_of(e.platforms.begin(), e.platforms.end(), [&](const std::shared_ptr<const Platform>& q) { return q->name == p.name; });
        });
        if (!match || again) continue;  // one description per distinct platform
        if (shown++) out << "\n";
        if (!r.points[pi].bindings.empty()) out << "at sweep point " << pi << ": " << bindings_text(r.points[pi].bindings) << "\n";
        out << describe_platform(p);
      }
    if (shown == 0) {
      std::string hint = did_you_mean(name, names), all;
      for (const auto& n : names) all += (all.empty() ? "" : ", ") + n;
      err << "rsim: error: scenario '" << file << "' has no platform '" << name << "'\n";
      err << "rsim: note: " << (hint.empty() ? "its platforms: " + all : hint) << "\n";
      return kConfig;
    }
    return kOk;
  } catch (const ConfigError& e) {
    return print_config_error(err, e);
  }
}

int cmd_hw(const std::vector<std::string>& args, std::ostream& out, std::ostream& err) {
  po::options_description desc("rsim hw options");
  desc.add_options()("help,h", "show this help")("action", po::value<std::string>(), "list or show")("name", po::value<std::string>(), "platform")(
      "scenario", po::value<std::string>(), "show: look NAME up among this scenario's platforms (inline, `base:` what-ifs, every sweep point)");
  desc.add(hw_dir_option());
  po::positional_options_description pos;
  pos.add("action", 1).add("name", 1);
  po::variables_map vm;
  int code = kOk;
  if (!parse(args, desc, pos, vm, err, code)) return code;
  if (vm.count("help")) {
    out << "usage: rsim " << find_command("hw")->synopsis << "\n\n" << desc;
    return kOk;
  }
  std::string action = vm.count("action") ? vm["action"].as<std::string>() : "list";
  Catalog catalog(find_hardware_dir(vm["hw-dir"].as<std::string>()));
  PlatformCache cache(catalog);
  if (action == "list") {
    if (vm.count("name")) return usage_error(err, "hw list takes no name", "rsim hw show " + vm["name"].as<std::string>());
    auto names = catalog.names();
    if (names.empty()) {
      err << "rsim: error: no platforms in '" << catalog.dir() << "'\n";
      return kConfig;
    }
    // name, kind, title, every compute roof, the first memory level, the fastest roof's ridge
    std::vector<std::vector<std::string>> rows = {{"name", "kind", "title", "compute roofs (theoretical)", "memory (theoretical / derated)", "ridge"}};
    int rc = kOk;
    for (const auto& n : names) {
      Diags d;
      Platform p = resolve_platform(CNode::make_scalar(n), cache, d);
      if (!d.empty()) {
        err << ConfigError(d.list()).what();
        rc = kConfig;
        continue;
      }
      std::string roofs;
      for (const auto& r : p.compute) {
        std::string dts;
        for (DType t : r.dtypes) dts += (dts.empty() ? "" : "/") + std::string(dtype_name(t));
        roofs += (roofs.empty() ? "" : ", ") + dts + " " + si(r.peak_flops_per_s, "", 4);
      }
      const MemoryLevel& m = p.memory.front();
      // the ridge of the fastest roof (a GPU's tensor cores, not its fp64 units listed first)
      const ComputeRoof* fastest = &p.compute.front();
      for (const auto& r : p.compute)
        if (r.peak_flops_per_s > fastest->peak_flops_per_s) fastest = &r;
      std::string fast_dts;
      for (DType t : fastest->dtypes) fast_dts += (fast_dts.empty() ? "" : "/") + std::string(dtype_name(t));
      char ridge[96];
      std::snprintf(ridge, sizeof ridge, "%.2f (%s)", fastest->peak_flops_per_s / m.bandwidth_bytes_per_s, fast_dts.c_str());
      rows.push_back({n, p.kind, p.title, roofs, m.name + " " + si(m.bandwidth_bytes_per_s, "B/s") + " / " + si(m.derated_bandwidth_bytes_per_s, "B/s"), ridge});
    }
    out << text_table(rows);
    out << "compute in FLOP/s (OP/s for int); ridge = the fastest roof / the first memory level, in FLOP/byte (OP/byte); `rsim hw show NAME` for every "
           "roof's ridge and the derivations\n";
    return rc;
  }
  if (action == "show") {
    if (!vm.count("name")) return usage_error(err, "hw show needs a platform name", "`rsim hw list` shows the names");
    Diags d;
    std::string name = vm["name"].as<std::string>();
    if (vm.count("scenario")) return show_scenario_platform(vm["scenario"].as<std::string>(), name, catalog, out, err);
    Platform p = resolve_platform(CNode::make_scalar(name), cache, d);
    if (!d.empty()) {
      err << ConfigError(d.list()).what();
      return kConfig;
    }
    out << describe_platform(p);
    return kOk;
  }
  std::string hint = did_you_mean(action, {"list", "show"});
  return usage_error(err, "unknown hw action '" + action + "'", hint.empty() ? "use `rsim hw list` or `rsim hw show NAME`" : hint);
}

int cmd_ops(const std::vector<std::string>& args, std::ostream& out, std::ostream& err) {
  po::options_description desc("rsim ops options");
  desc.add_options()("help,h", "show this help")("name", po::value<std::string>(), "operator")(
      "scenario", po::value<std::string>(), "also list the operators a scenario's scripts define");
  po::positional_options_description pos;
  pos.add("name", 1);
  po::variables_map vm;
  int code = kOk;
  if (!parse(args, desc, pos, vm, err, code)) return code;
  if (vm.count("help")) {
    out << "usage: rsim " << find_command("ops")->synopsis << "\n\n" << desc;
    return kOk;
  }
  ScriptSetup scripts;
  scripts.ops = builtin_ops();
  if (vm.count("scenario")) {
    try {
      scripts = setup_scripts(load_scenario(vm["scenario"].as<std::string>()));
    } catch (const ConfigError& e) {
      return print_config_error(err, e);
    }
  }
  const OpRegistry& ops = scripts.ops;
  if (!vm.count("name")) {
    out << "operators (FLOPs = 2 × MACs for multiply-accumulate ops; `rsim ops NAME` shows each formula):\n";
    for (const auto& n : ops.names()) {
      char buf[256];
      std::snprintf(buf, sizeof buf, "  %-20s %s\n", n.c_str(), ops.find(n)->summary.c_str());
      out << buf;
    }
    std::string al;
    for (const auto& [a, t] : ops.aliases()) al += (al.empty() ? "" : ", ") + a + " → " + t;
    out << "aliases: " << al << "\n";
    return kOk;
  }
  std::string name = vm["name"].as<std::string>();
  const OpDef* op = ops.find(name);
  if (!op) {
    std::string hint = did_you_mean(name, ops.all_names());
    err << "rsim: error: unknown operator '" << name << "'\n";
    err << "rsim: note: " << (hint.empty() ? "`rsim ops` lists the operators" : hint) << "\n";
    return kConfig;
  }
  out << describe_op(*op, ops.aliases());
  return kOk;
}

// The folder that holds rsim_torch: share/rsim/python of the installation, else the source tree's
// python/ (from a build folder); "" when neither has it.
fs::path find_python_dir() {
  std::error_code ec;
  if (fs::path data = installed_data(); !data.empty() && fs::is_directory(data / "python" / "rsim_torch", ec)) return data / "python";
  if (fs::path src = build_tree_source(); !src.empty() && fs::is_directory(src / "python" / "rsim_torch", ec)) return src / "python";
  return {};
}

int spawn_rsim_torch(const std::string& python, const std::vector<std::string>& args, std::ostream& err);

// rsim_torch's exit status when the interpreter has no torch
constexpr int kNoTorch = 3;

// Runs `$RSIM_PYTHON -m rsim_torch ARGS...` (python3 by default) with rsim_torch on PYTHONPATH,
// whatever the working directory; its output goes to `err` as it comes. Returns its exit status.
// When RSIM_PYTHON is unset and python3 has no torch, /usr/bin/python3 (the interpreter Debian's
// python3-torch serves) is tried before giving up, and rsim says so.
int run_rsim_torch(const std::vector<std::string>& args, std::ostream& err) {
  const char* env = std::getenv("RSIM_PYTHON");
  const bool chosen = env && *env;
  const int rc = spawn_rsim_torch(chosen ? env : "python3", args, err);
  std::error_code ec;
  const std::string system_python = "/usr/bin/python3";
  if (rc != kNoTorch) return rc;
  if (chosen || !fs::exists(system_python, ec)) return kConfig;
  // (the same interpreter as python3 on the PATH: nothing else to try)
  if (const char* path = std::getenv("PATH"))
    for (std::string dir, list = std::string(path) + ":"; !list.empty(); list.erase(0, list.find(':') + 1)) {
      dir = list.substr(0, list.find(':'));
      if (dir.empty()) continue;
      const fs::path cand = fs::path(dir) / "python3";
      if (fs::exists(cand, ec)) {
        if (fs::equivalent(cand, system_python, ec)) return kConfig;
        break;
      }
    }
  err << "rsim: python3 on the PATH has no torch; trying " << system_python << " (Debian's python3-torch); RSIM_PYTHON picks another\n";
  const int again = spawn_rsim_torch(system_python, args, err);
  if (again == 0) err << "rsim: rsim_torch ran with " << system_python << "\n";
  return again == kNoTorch ? kConfig : again;
}

int spawn_rsim_torch(const std::string& python, const std::vector<std::string>& args, std::ostream& err) {
  const fs::path dir = find_python_dir();
  if (dir.empty()) {
    err << "rsim: error: cannot find rsim_torch (share/rsim/python of the installation, or python/ of the source tree)\n";
    return kConfig;
  }
  std::string path = dir.string();
  if (const char* pp = std::getenv("PYTHONPATH"); pp && *pp) path += std::string(":") + pp;
  std::vector<std::string> argv_s = {python, "-m", "rsim_torch"};
  argv_s.insert(argv_s.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (auto& a : argv_s) argv.push_back(a.data());
  argv.push_back(nullptr);
  std::vector<std::string> env_s;
  for (char** e = environ; *e; ++e)
    if (std::strncmp(*e, "PYTHONPATH=", 11) != 0) env_s.push_back(*e);
  env_s.push_back("PYTHONPATH=" + path);
  std::vector<char*> envp;
  for (auto& e : env_s) envp.push_back(e.data());
  envp.push_back(nullptr);
  int fds[2];
  if (pipe(fds) != 0) {
    err << "rsim: error: cannot start " << python << ": " << std::strerror(errno) << "\n";
    return kConfig;
  }
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_adddup2(&fa, fds[1], 1);
  posix_spawn_file_actions_adddup2(&fa, fds[1], 2);
  posix_spawn_file_actions_addclose(&fa, fds[0]);
  pid_t pid = 0;
  const int rc = posix_spawnp(&pid, python.c_str(), &fa, nullptr, argv.data(), envp.data());
  posix_spawn_file_actions_destroy(&fa);
  close(fds[1]);
  if (rc != 0) {
    close(fds[0]);
    err << "rsim: error: cannot run the Python interpreter '" << python << "' (" << std::strerror(rc)
        << "): install python3 with PyTorch (Debian: apt install python3-torch), or set RSIM_PYTHON to one that has it\n";
    return kConfig;
  }
  char buf[4096];
  for (ssize_t n; (n = read(fds[0], buf, sizeof buf)) != 0;) {
    if (n < 0) {
      if (errno == EINTR) continue;
      break;
    }
    err.write(buf, n);
    err.flush();
  }
  close(fds[0]);
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  err << "rsim: error: " << python << " -m rsim_torch ended by signal " << (WIFSIGNALED(status) ? WTERMSIG(status) : 0) << "\n";
  return kConfig;
}

int cmd_probe(const std::vector<std::string>& args, std::ostream& out, std::ostream& err) {
  po::options_description desc("rsim probe options");
  desc.add_options()("help,h", "show this help")("quick", "a shorter run (< 15 s): fewer working sets and samples")(
      "threads", po::value<int>()->default_value(0), "threads for the 'all' figures (default: every online CPU)")(
      "output,o", po::value<std::string>(), "write the platform file (catalog format); its stem is the platform's name")(
      "json", po::value<std::string>(), "write the measurements as JSON")(
      "out", po::value<std::string>(), "folder for the figures probe_roofline and probe_bandwidth (PNG and SVG)")(
      "max-working-set", po::value<std::string>(), "largest working set of the bandwidth sweep (default: 512 MiB, or 4 × the last cache)")(
      "backend", po::value<std::string>()->default_value("native"), "native: this CPU with rsim's own kernels; torch: any device through PyTorch (rsim_torch)")(
      "device", po::value<std::string>()->default_value("cuda:0"), "with --backend torch: cuda[:N], cpu or mps");
  po::positional_options_description pos;
  po::variables_map vm;
  int code = kOk;
  if (!parse(args, desc, pos, vm, err, code)) return code;
  if (vm.count("help")) {
    out << "usage: rsim " << find_command("probe")->synopsis << "\n\n" << desc;
    return kOk;
  }
  const std::string backend = vm["backend"].as<std::string>();
  if (backend != "native" && backend != "torch")
    return usage_error(err, "--backend must be native or torch, got '" + backend + "'", did_you_mean(backend, {"native", "torch"}));
  if (backend == "torch") {  // the device through PyTorch: rsim_torch writes the platform file
    std::vector<std::string> a = {"probe", "--device", vm["device"].as<std::string>()};
    if (vm.count("quick")) a.push_back("--quick");
    if (vm.count("output")) a.insert(a.end(), {"-o", vm["output"].as<std::string>()});
    if (vm.count("json")) a.insert(a.end(), {"--json", vm["json"].as<std::string>()});
    return run_rsim_torch(a, err);
  }
  int threads = vm["threads"].as<int>();
  if (threads < 0 || threads > 1024) return usage_error(err, "--threads must be between 1 and 1024");
  measure::ProbeOptions opt;
  opt.quick = vm.count("quick") > 0;
  opt.threads = threads;
  if (vm.count("max-working-set")) {
    std::string v = vm["max-working-set"].as<std::string>();
    auto q = parse_quantity(v, Dim::Bytes).value;
    if (!q || *q < 64 * 1024) return usage_error(err, "--max-working-set must be a size of at least 64 KiB, got '" + v + "'", "e.g. --max-working-set 1GiB");
    // the sweep maps up to twice the working set (copy and triad buffers): beyond half this
    // machine's memory it would page or be killed, not measure DRAM
    const double ram = static_cast<double>(::sysconf(_SC_PHYS_PAGES)) * static_cast<double>(::sysconf(_SC_PAGESIZE));
    if (ram > 0 && 2 * *q > ram / 2) {
      char b[200];
      std::snprintf(b, sizeof b, "--max-working-set %s needs about %.3g GB of buffers; this machine has %.3g GB: at most a quarter of it (%.3g GB) may be swept",
                    v.c_str(), 2 * *q / 1e9, ram / 1e9, ram / 4e9);
      err << "rsim: error: " << b << "\nrsim: note: e.g. --max-working-set 1GiB: DRAM is reached far below that\n";
      return kConfig;
    }
    opt.max_working_set_bytes = *q;
  }
  std::string platform_name;
  if (vm.count("output")) {
    platform_name = fs::path(vm["output"].as<std::string>()).stem().string();
    bool ok = !platform_name.empty() && std::all_of(platform_name.begin(), platform_name.end(), [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-'; });
    if (!ok) return usage_error(err, "the platform file's stem '" + platform_name + "' is its name: use letters, digits, '_' and '-'", "e.g. -o hardware/this_machine.yaml");
  }
  bool tty = isatty(2);
  opt.progress = [&](const std::string& s) {
    if (tty) std::fprintf(stderr, "\rprobe: %-60s", s.c_str());
  };
  measure::ProbeResult r = measure::run_probe(opt);
  if (tty) std::fprintf(stderr, "\r%-70s\r", "");
  std::vector<plots::OutputFile> files;
  // levels that cannot be right (a DRAM plateau at a cache's bandwidth, or inside a cache's sizes):
  // no platform file, the figures say why (the JSON and the figures are still written)
  const std::vector<std::string> mislabels = measure::probe_mislabels(r);
  if (vm.count("output") && mislabels.empty()) files.push_back({vm["output"].as<std::string>(), measure::probe_platform_yaml(r, platform_name)});
  if (vm.count("json")) files.push_back({vm["json"].as<std::string>(), measure::probe_json(r)});
  if (vm.count("out")) {
    fs::path dir = vm["out"].as<std::string>();
    std::error_code ec;
    fs::create_directories(dir, ec);
    if (ec) {
      err << "rsim: error: cannot create output folder '" << dir.string() << "': " << ec.message() << "\n";
      return kConfig;
    }
    for (auto& [stem, fig] : measure::probe_figures(r))
      for (plots::Format f : {plots::Format::PNG, plots::Format::SVG})
      {
        plots::CairoRenderer cr(f, 150);
        plots::draw(fig, cr);
        files.push_back({(dir / (stem + "." + plots::format_ext(f))).string(), cr.bytes()});
      }
  }
  try {
    for (const auto& f : files) write_file_atomic(f.name, f.bytes);
  } catch (const std::exception& e) {
    err << "rsim: error: " << e.what() << "\n";
    return kConfig;
  }
  out << measure::probe_report(r);
  for (const auto& f : files) out << "wrote " << f.name << "\n";
  if (!mislabels.empty()) {
    err << "rsim: error: the memory levels of this probe look mislabelled" << (vm.count("output") ? "; " + vm["output"].as<std::string>() + " was not written" : "")
        << ":\n";
    for (const auto& m : mislabels) err << "  " << m << "\n";
    err << "note: probe again on a quieter machine, or with --max-working-set past the last cache\n";
    return kConfig;
  }
  return kOk;
}

int cmd_schema(const std::vector<std::string>& args, std::ostream& out, std::ostream& err) {
  po::options_description desc("rsim schema options");
  desc.add_options()("help,h", "show this help")("what", po::value<std::string>()->default_value("scenario"), "scenario or platform");
  po::positional_options_description pos;
  pos.add("what", 1);
  po::variables_map vm;
  int code = kOk;
  if (!parse(args, desc, pos, vm, err, code)) return code;
  if (vm.count("help")) {
    out << "usage: rsim " << find_command("schema")->synopsis << "\n\n"
        << "Prints a JSON Schema (draft 2020-12). Save it and name it on a YAML file's first line for completion and checks:\n"
        << "  rsim schema > scenario.schema.json\n"
        << "  # yaml-language-server: $schema=scenario.schema.json\n\n"
        << desc;
    return kOk;
  }
  std::string what = vm["what"].as<std::string>();
  if (what == "scenario") out << scenario_schema(builtin_ops(), plots::plottable_columns());
  else if (what == "platform") out << platform_schema();
  else {
    std::string hint = did_you_mean(what, {"scenario", "platform"});
    return usage_error(err, "unknown schema '" + what + "'", hint.empty() ? "use `rsim schema` or `rsim schema platform`" : hint);
  }
  return kOk;
}

int cmd_plan(const std::vector<std::string>& args, std::ostream& out, std::ostream& err) {
  po::options_description desc("rsim plan options");
  desc.add_options()("help,h", "show this help")("file", po::value<std::string>(), "scenario YAML file")(
      "output,o", po::value<std::string>(), "the plan file to write (default: standard output)")(
      "set", po::value<std::vector<std::string>>()->composing(), "NAME=VALUE: set a var or pin a sweep variable (repeatable)");
  desc.add(hw_dir_option());
  po::positional_options_description pos;
  pos.add("file", 1);
  po::variables_map vm;
  int code = kOk;
  if (!parse(args, desc, pos, vm, err, code)) return code;
  if (vm.count("help")) {
    out << "usage: rsim " << find_command("plan")->synopsis << "\n\n" << desc;
    return kOk;
  }
  if (!vm.count("file")) return usage_error(err, "plan needs a scenario file", "rsim plan scenarios/resnet50.yaml -o plan.json");
  bool sets_ok = true;
  auto sets = parse_sets(vm.count("set") ? vm["set"].as<std::vector<std::string>>() : std::vector<std::string>{}, sets_ok, err);
  if (!sets_ok) return kUsage;
  try {
    Scenario s = load_scenario(vm["file"].as<std::string>());
    apply_overrides(s, sets);
    Catalog catalog(find_hardware_dir(vm["hw-dir"].as<std::string>()));
    ScriptSetup scripts = setup_scripts(s);
    RunOptions opt = scenario_run_options(scripts);
    const std::string plan = plan_json(s, catalog, opt, RSIM_VERSION);
    if (!vm.count("output") || vm["output"].as<std::string>() == "-") {
      out << plan;
      out.flush();
      if (!out) {
        err << "rsim: error: cannot write the plan to standard output\n";
        return kConfig;
      }
      return kOk;
    }
    try {
      write_file_atomic(vm["output"].as<std::string>(), plan);
    } catch (const std::exception& e) {
      err << "rsim: error: " << e.what() << "\n";
      return kConfig;
    }
    return kOk;
  } catch (const ConfigError& e) {
    return print_config_error(err, e);
  }
}

// `rsim measure --backend torch`: the scenario's plan (its own platforms give the predictions,
// unless --platform replaces them), measured by rsim_torch into the output folder.
int measure_torch(const po::variables_map& vm, std::ostream& out, std::ostream& err) {
  bool sets_ok = true;
  auto sets = parse_sets(vm.count("set") ? vm["set"].as<std::vector<std::string>>() : std::vector<std::string>{}, sets_ok, err);
  if (!sets_ok) return kUsage;
  const int reps = vm["reps"].as<int>();
  if (reps < 1 || reps > 100000) return usage_error(err, "--reps must be between 1 and 100000");
  try {
    Scenario s = load_scenario(vm["file"].as<std::string>());
    apply_overrides(s, sets);
    if (vm.count("platform")) measure::use_platform(s, vm["platform"].as<std::string>());
    Catalog catalog(find_hardware_dir(vm["hw-dir"].as<std::string>()));
    ScriptSetup scripts = setup_scripts(s);
    RunOptions opt = scenario_run_options(scripts);
    const std::string plan = plan_json(s, catalog, opt, RSIM_VERSION);
    fs::path dir = vm.count("out") ? fs::path(vm["out"].as<std::string>()) : fs::path("out") / (s.name + "-measured");
    std::error_code ec;
    fs::create_directories(dir, ec);
    if (ec) {
      err << "rsim: error: cannot create output folder '" << dir.string() << "': " << ec.message() << "\n";
      return kConfig;
    }
    const fs::path plan_path = dir / "plan.json";
    write_file_atomic(plan_path.string(), plan);
    std::vector<std::string> a = {"measure", plan_path.string(), "--device", vm["device"].as<std::string>(), "--reps", std::to_string(reps), "-o",
                                  dir.string()};
    if (vm.count("execution")) a.insert(a.end(), {"--execution", vm["execution"].as<std::string>()});
    const int rc = run_rsim_torch(a, err);
    if (rc == 0 && !vm.count("quiet")) out << "wrote " << dir.string() << "/: plan.json, measured.csv, measured_networks.csv\n";
    return rc;
  } catch (const ConfigError& e) {
    return print_config_error(err, e);
  } catch (const std::exception& e) {
    err << "rsim: error: " << e.what() << "\n";
    return kConfig;
  }
}

int cmd_measure(const std::vector<std::string>& args, std::ostream& out, std::ostream& err) {
  po::options_description desc("rsim measure options");
  desc.add_options()("help,h", "show this help")("file", po::value<std::string>(), "scenario YAML file")(
      "platform,p", po::value<std::string>(), "the platform that replaces the scenario's: a catalog name or a platform file (e.g. from rsim probe)")(
      "reps", po::value<int>()->default_value(20), "timed repetitions per layer (after 3 warm-up runs)")(
      "cache", po::value<std::string>()->default_value("warm"), "warm: repetitions back to back; cold: the caches are flushed before each")(
      "out,o", po::value<std::string>(), "output folder (default: out/<scenario name>-measured)")(
      "set", po::value<std::vector<std::string>>()->composing(), "NAME=VALUE: set a var or pin a sweep variable (repeatable)")(
      "quiet,q", "print nothing but errors and findings")(
      "backend", po::value<std::string>()->default_value("onednn"), "onednn: this CPU; torch: any device through PyTorch (rsim_torch, $RSIM_PYTHON)")(
      "device", po::value<std::string>()->default_value("cuda:0"), "with --backend torch: cuda[:N], cpu or mps")(
      "execution", po::value<std::string>(), "with --backend torch: eager, graph or eager,graph (default: every mode the device supports)")(
      "max-memory", po::value<std::string>(), "a layer whose tensors need more is not run, with a note (e.g. '8 GiB'; default: half this machine's memory)");
  desc.add(hw_dir_option());
  po::positional_options_description pos;
  pos.add("file", 1);
  po::variables_map vm;
  int code = kOk;
  if (!parse(args, desc, pos, vm, err, code)) return code;
  if (vm.count("help")) {
    out << "usage: rsim " << find_command("measure")->synopsis << "\n\n" << desc;
    return kOk;
  }
  if (!vm.count("file")) return usage_error(err, "measure needs a scenario file", "rsim measure scenarios/resnet50.yaml --platform this_machine.yaml");
  const std::string backend = vm["backend"].as<std::string>();
  if (backend != "onednn" && backend != "torch")
    return usage_error(err, "--backend must be onednn or torch, got '" + backend + "'", did_you_mean(backend, {"onednn", "torch"}));
  if (backend == "torch") return measure_torch(vm, out, err);
  if (!vm.count("platform")) return usage_error(err, "measure needs --platform (a catalog name or a platform file)", "make one with `rsim probe -o this_machine.yaml`");
  int reps = vm["reps"].as<int>();
  if (reps < 1 || reps > 100000) return usage_error(err, "--reps must be between 1 and 100000");
  std::string cache = vm["cache"].as<std::string>();
  if (cache != "warm" && cache != "cold") {
    std::string hint = did_you_mean(cache, {"warm", "cold"});
    return usage_error(err, "--cache must be warm or cold, got '" + cache + "'", hint);
  }
  if (!measure::timing_available()) {
    err << "rsim: error: cannot measure: " << measure::timing_backend() << "\n";
    return kConfig;
  }
  bool sets_ok = true;
  auto sets = parse_sets(vm.count("set") ? vm["set"].as<std::vector<std::string>>() : std::vector<std::string>{}, sets_ok, err);
  if (!sets_ok) return kUsage;
  try {
    Scenario s = load_scenario(vm["file"].as<std::string>());
    apply_overrides(s, sets);
    measure::use_platform(s, vm["platform"].as<std::string>());
    // the roofs that bound the layer as it is timed: warm = the level that holds its working set
    measure::set_memory_level(s, cache == "warm" ? "auto" : "");
    measure::set_setting(s, "mac_count", "executed");  // a direct kernel skips the taps on padding: bound what it executes
    Catalog catalog(find_hardware_dir(vm["hw-dir"].as<std::string>()));
    ScriptSetup scripts = setup_scripts(s);
    RunOptions opt = scenario_run_options(scripts);  // (an onnx: entry reads as in `rsim run`; it had no importer here)
    measure::TimingOptions topt;
    topt.reps = reps;
    topt.cold = cache == "cold";
    if (vm.count("max-memory")) {
      const QuantityResult q = parse_quantity(vm["max-memory"].as<std::string>(), Dim::Bytes);
      if (!q.value || !(*q.value > 0)) return usage_error(err, "--max-memory: " + (q.value ? std::string("must be more than 0") : q.error), "e.g. --max-memory '8 GiB'");
      topt.max_bytes = *q.value;
    }
    Progress progress(isatty(2) && !vm.count("quiet"));
    measure::MeasureResult m = measure::measure_scenario(s, catalog, opt, topt, [&](size_t d, size_t t) { progress.update(d, t); });
    progress.finish();
    fs::path dir = vm.count("out") ? fs::path(vm["out"].as<std::string>()) : fs::path("out") / (s.name + "-measured");
    std::error_code ec;
    fs::create_directories(dir, ec);
    if (ec) {
      err << "rsim: error: cannot create output folder '" << dir.string() << "': " << ec.message() << "\n";
      return kConfig;
    }
    std::vector<plots::OutputFile> files = {{"measured.csv", measure::measured_csv(m, results_csv(m.run, s))}};
    plots::Figure fig = measure::measured_roofline(m, s.name + ": measured beside the roofline (" + cache + " caches)");
    for (plots::Format f : {plots::Format::PNG, plots::Format::SVG}) {
      plots::CairoRenderer cr(f, 150);
      plots::draw(fig, cr);
      files.push_back({std::string("measured_roofline.") + plots::format_ext(f), cr.bytes()});
    }
    std::string findings;
    for (const auto& f : m.findings) findings += "  " + f + "\n";
    files.push_back({"findings.txt", findings.empty() ? "none: every measured layer took at least its roofline bound\n" : findings});
    try {
      for (const auto& f : files) write_file_atomic((dir / f.name).string(), f.bytes);
    } catch (const std::exception& e) {
      err << "rsim: error: " << e.what() << "\n";
      return kConfig;
    }
    // the share of layers at or above their bound, and the prediction error, theoretical and derated
    size_t at_or_above = 0, n = 0, k = 0;
    std::vector<double> err_t, err_d;
    for (const auto& pr : m.run.results)
      for (const Row& row : pr.rows) {
        const auto& mr = m.rows[k++];
        if (!mr.timing.ran || !(row.theoretical.time_s > 0)) continue;
        ++n;
        at_or_above += mr.measured_time_s >= row.theoretical.time_s * (1 - measure::kBoundSlack);
        err_t.push_back(std::fabs(row.theoretical.time_s / mr.measured_time_s - 1));
        err_d.push_back(std::fabs(row.derated.time_s / mr.measured_time_s - 1));
      }
    auto pct = [](std::vector<double> v, double q) {
      if (v.empty()) return 0.0;
      std::sort(v.begin(), v.end());
      return v[std::min(v.size() - 1, static_cast<size_t>(q * static_cast<double>(v.size())))];
    };
    char buf[256];
    if (!vm.count("quiet")) {
      out << s.name << " on " << m.run.results.front().platforms.front()->name << ": " << m.backend << ", " << cache << " caches, " << reps
          << " timed repetitions per layer (median)\n";
      out << "layers run: " << m.ran << ", not run: " << m.skipped << " (see measured_note in measured.csv)\n";
      if (n) {
        std::snprintf(buf, sizeof buf, "measured ≥ roofline bound (5 %% slack): %zu of %zu layers (%.1f %%)\n", at_or_above, n, 100.0 * static_cast<double>(at_or_above) / static_cast<double>(n));
        out << buf;
        std::snprintf(buf, sizeof buf, "|predicted/measured − 1|: theoretical median %.2f, p90 %.2f; derated median %.2f, p90 %.2f\n", pct(err_t, 0.5),
                      pct(err_t, 0.9), pct(err_d, 0.5), pct(err_d, 0.9));
        out << buf;
      }
    }
    if (!m.findings.empty()) {
      out << "findings (" << m.findings.size() << "):\n";
      size_t shown = 0;
      for (const auto& f : m.findings) {
        if (++shown > 20) {
          out << "  ... " << m.findings.size() - 20 << " more in findings.txt\n";
          break;
        }
        out << "  " << f << "\n";
      }
    }
    if (!vm.count("quiet")) out << "wrote " << dir.string() << "/: measured.csv, measured_roofline.png, measured_roofline.svg, findings.txt\n";
    return kOk;
  } catch (const ConfigError& e) {
    return print_config_error(err, e);
  }
}

// `rsim calibrate` of GPU measurements (layers timed by PyTorch, whole networks): rules per class
// and compute roof with host overheads, the runtime from the network rows, and each network row
// predicted by a fit without that network.
int calibrate_gpu(const po::variables_map& vm, const std::string& path, const std::string& ptext, const Runtime& base,
                  const std::vector<measure::Sample>& rows, const std::vector<measure::NetworkSample>& nets, const std::string& from,
                  std::ostream& out, std::ostream& err) {
  const measure::Model model = measure::fit_gpu_model(rows, nets, base);
  const std::string output = vm["output"].as<std::string>();
  const std::string name = fs::path(output).stem().string();
  size_t timed = 0;
  for (const auto& r : rows) timed += r.measured_s > 0;
  std::string source = "rsim calibrate: graph_gap and host_overhead fitted on " + std::to_string(nets.size()) + " measured network times";
  if (nets.empty()) source = "rsim calibrate: host overheads from " + std::to_string(timed) + " layers timed in eager mode";
  const measure::NetworkValidation val = measure::validate_networks(rows, nets, base, &model);
  // the band of every rule: the networks predicted by fits without them (measured / predicted)
  std::vector<CalibrationRule> rules = model.rules;
  {
    std::vector<double> ratios;
    for (const auto& c : val.cases)
      if (c.predicted_s > 0) ratios.push_back(c.m.time_s / c.predicted_s);
    measure::set_error_bands(rules, ratios);
  }
  Runtime runtime = model.runtime;  // the fitted times are calibrated
  if (!nets.empty()) runtime.gap_basis = runtime.host_basis = Basis::Calibrated;
  else runtime.host_basis = Basis::Calibrated;
  const std::string yaml = measure::calibrated_platform_yaml(ptext, name, rules, from, {}, &runtime, source, model.measured_layers);
  {  // the result must load as a platform
    Diags d;
    build_platform(parse_yaml(yaml, output), nullptr, d);
    if (!d.empty()) {
      err << ConfigError(d.list()).what();
      return kConfig;
    }
  }
  const auto beaten = measure::beats_bound(rows);
  std::string pred = "network,execution,kernels,measured_s,predicted_s,fitted_s,uncalibrated_s\n";
  char buf[512];
  for (const auto& c : val.cases) {
    std::snprintf(buf, sizeof buf, ",%s,%zu,%.9g,%.9g,%.9g,%.9g\n", execution_name(c.m.execution), c.kernels, c.m.time_s, c.predicted_s, c.fitted_s,
                  c.uncalibrated_s);
    pred += csv_escape(c.m.network) + buf;
  }
  try {
    write_file_atomic(output, yaml);
    if (vm.count("predictions")) write_file_atomic(vm["predictions"].as<std::string>(), pred);
  } catch (const std::exception& e) {
    err << "rsim: error: " << e.what() << "\n";
    return kConfig;
  }
  out << "fitted on " << timed << " measured layers and " << nets.size() << " measured networks (GPU: a rule per op class and compute roof; "
      << "efficiency = a · x^b · g^c (× an occupancy factor where one was fitted), x: MACs for compute, bytes for bandwidth; host: the "
      << "host's time per kernel in eager mode; network: the factor the network times put on the class's layer times, already in a):\n";
  for (const auto& r : model.rules) {
    std::string host = r.host_overhead_s >= 0 ? si(r.host_overhead_s, "s", 3) : std::string("-");
    std::snprintf(buf, sizeof buf, "  %-15s %-26s compute a %.4g b %+.4f c %+.4f   bandwidth a %.4g b %+.4f c %+.4f   host %-8s network × %.3g%s\n",
                  r.name.c_str(), r.roof.empty() ? "(every roof)" : r.roof.c_str(), r.compute.a, r.compute.b, r.compute.c, r.bandwidth.a, r.bandwidth.b,
                  r.bandwidth.c, host.c_str(), r.network_factor, r.extrapolated ? "   (extrapolated: no measured layer of the class on this roof)" : "");
    out << buf;
    if (r.compute.has_occupancy()) {  // (kernels with few outputs leave multiprocessors idle)
      std::snprintf(buf, sizeof buf, "  %-15s %-26s compute × min(1, outputs / %.6g)^%.3f (occupancy; outputs from %.6g)\n", "", "", r.compute.p_sat, r.compute.d,
                    r.compute.p_lo);
      out << buf;
    }
  }
  out << "runtime: launch_overhead " << si(model.runtime.launch_overhead_s, "s", 3) << " (the platform's)";
  out << ", graph_gap " << (model.runtime.has_graph_gap() ? si(model.runtime.graph_gap_s, "s", 3) : std::string("none"));
  out << ", host_overhead " << (model.runtime.has_host_overhead() ? si(model.runtime.host_overhead_s, "s", 3) : std::string("none"));
  if (model.host_scale != 1) {
    std::snprintf(buf, sizeof buf, " (the layers' host times × %.3g, fitted on the eager networks)", model.host_scale);
    out << buf;
  }
  out << "\n";
  if (!model.measured_layers.empty()) {  // (the widest misses first, a few of them)
    out << "measured layers: " << model.measured_layers.size() << " timed layer shape" << (model.measured_layers.size() == 1 ? "" : "s")
        << " the laws missed by more than 10 % (measured_layers: such a layer runs at its law's time × factor)";
    std::vector<const MeasuredLayer*> v;
    for (const auto& l : model.measured_layers) v.push_back(&l);
    std::stable_sort(v.begin(), v.end(), [](const MeasuredLayer* a, const MeasuredLayer* b) { return std::fabs(std::log(a->factor)) > std::fabs(std::log(b->factor)); });
    out << (v.size() > 5 ? ", the 5 widest:\n" : ":\n");
    for (size_t i = 0; i < v.size() && i < 5; ++i) {
      std::snprintf(buf, sizeof buf, "  %-10s %-22s %s -> %s  × %.3g  (%s)\n", v[i]->op.c_str(), v[i]->roof.c_str(), v[i]->input.c_str(), v[i]->output.c_str(),
                    v[i]->factor, v[i]->from.c_str());
      out << buf;
    }
  }

  if (val.cases.empty()) {
    out << "networks: none measured as a whole (give measured_networks.csv to fit graph_gap and host_overhead)\n";
  } else {
    out << "each network predicted by a fit without it (its layers and its rows): measured, predicted, ratio (fitted on all; uncalibrated)\n";
    for (Execution e : {Execution::Graph, Execution::Eager, Execution::Fused}) {
      size_t n = 0, within = 0;
      std::vector<double> errs;
      for (const auto& c : val.cases) {
        if (c.m.execution != e) continue;
        const double r = c.predicted_s / c.m.time_s;
        ++n, within += r <= 1.25 && r >= 1 / 1.25;
        errs.push_back(std::fabs(r - 1));
        std::snprintf(buf, sizeof buf, "  %-6s %-30s %10s %10s  %5.2f  (%5.2f; %5.2f)\n", execution_name(e), c.m.network.c_str(), si(c.m.time_s, "s", 4).c_str(),
                      si(c.predicted_s, "s", 4).c_str(), r, c.fitted_s / c.m.time_s, c.uncalibrated_s / c.m.time_s);
        out << buf;
      }
      if (!n) continue;
      std::sort(errs.begin(), errs.end());
      std::snprintf(buf, sizeof buf, "  %-6s %zu of %zu networks within 1.25×; median |predicted/measured − 1| %.1f %%, largest %.1f %%\n", execution_name(e), within,
                    n, 100 * errs[errs.size() / 2], 100 * errs.back());
      out << buf;
    }
  }
  if (!beaten.empty()) {
    out << beaten.size() << " measured layer" << (beaten.size() == 1 ? "" : "s") << " faster than the theoretical bound (time_s):\n";
    size_t shown = 0;
    for (const auto& b : beaten) {
      if (++shown > 12) {
        out << "  ... " << beaten.size() - 12 << " more\n";
        break;
      }
      std::snprintf(buf, sizeof buf, "  %s %s (%s): %s measured, bound %s", b.network.c_str(), b.layer.c_str(), b.op.c_str(), si(b.measured_min_s, "s", 4).c_str(),
                    si(b.time_s, "s", 4).c_str());
      out << buf << (b.reason.empty() ? std::string("; reason unknown") : "; " + b.reason) << "\n";
    }
  }
  out << "wrote " << output << "\n";
  if (vm.count("predictions")) out << "wrote " << vm["predictions"].as<std::string>() << "\n";
  (void)path;
  return kOk;
}

int cmd_calibrate(const std::vector<std::string>& args, std::ostream& out, std::ostream& err) {
  po::options_description desc("rsim calibrate options");
  desc.add_options()("help,h", "show this help")("files", po::value<std::vector<std::string>>(), "measured.csv and measured_networks.csv files (rsim measure, rsim_torch), in any order")(
      "platform,p", po::value<std::string>(), "the platform measured: a catalog name or a platform file")(
      "output,o", po::value<std::string>(), "the calibrated platform file to write; its stem is its name")(
      "predictions", po::value<std::string>(), "also write the cross-validated prediction of every measured layer (CSV)")(
      "drop-bad-rows", "leave out rows whose measured time is not a finite number >= 0 (inf, NaN, negative), counted (default: an error at the line)");
  desc.add(hw_dir_option());
  po::positional_options_description pos;
  pos.add("files", -1);
  po::variables_map vm;
  int code = kOk;
  if (!parse(args, desc, pos, vm, err, code)) return code;
  if (vm.count("help")) {
    out << "usage: rsim " << find_command("calibrate")->synopsis << "\n\n" << desc;
    return kOk;
  }
  if (!vm.count("files")) return usage_error(err, "calibrate needs at least one measured.csv", "rsim calibrate out/resnet50-measured/measured.csv --platform p.yaml -o p_cal.yaml");
  if (!vm.count("platform")) return usage_error(err, "calibrate needs --platform");
  if (!vm.count("output")) return usage_error(err, "calibrate needs -o CALIBRATED.yaml");
  std::string plat = vm["platform"].as<std::string>();
  std::string path = plat;
  if (plat.find('/') == std::string::npos && !(plat.size() > 5 && plat.substr(plat.size() - 5) == ".yaml"))
    path = Catalog(find_hardware_dir(vm["hw-dir"].as<std::string>())).path_of(plat);
  std::string why;
  std::optional<std::string> ptext_read = read_regular_file(path, kMaxScenarioBytes, "platform file", why);
  if (!ptext_read) {  // (a FIFO or a device is refused, never waited on or read without end)
    err << "rsim: error: cannot read platform file '" << path << "': " << why << "\n";
    return kConfig;
  }
  std::string ptext = std::move(*ptext_read);
  if (ptext.find("\ncalibration:") != std::string::npos) {
    err << "rsim: error: " << path << " is already calibrated; calibrate the uncalibrated platform\n";
    return kConfig;
  }
  Runtime base_runtime;  // the platform's own: launch_overhead per graph, and what a fit without network rows keeps
  std::string base_name;
  {
    Diags d;
    Platform bp = build_platform(parse_yaml(ptext, path), nullptr, d);
    if (!d.empty()) {
      err << ConfigError(d.list()).what();
      return kConfig;
    }
    base_runtime = bp.runtime;
    base_name = bp.name;
  }
  std::vector<measure::Sample> rows;          // every layer row of the measured.csv files
  std::vector<measure::NetworkSample> nets;   // every row of the measured_networks.csv files
  std::string from;
  size_t dropped = 0;  // --drop-bad-rows: rows whose measured time is not a finite number ≥ 0
  size_t* drop = vm.count("drop-bad-rows") ? &dropped : nullptr;
  try {
    for (const auto& f : vm["files"].as<std::vector<std::string>>()) {
      std::string why_csv;
      std::optional<std::string> read = read_regular_file(f, kMaxMeasuredCsvBytes, "measured CSV", why_csv);
      if (!read) {
        err << "rsim: error: cannot read '" << f << "': " << why_csv << "\n";
        return kConfig;
      }
      const std::string& text = *read;
      switch (measure::measured_kind(text)) {
        case measure::CsvKind::Layers: {
          auto s = measure::read_measured_rows(text, f, drop);
          rows.insert(rows.end(), s.begin(), s.end());
          break;
        }
        case measure::CsvKind::Networks: {
          auto n = measure::read_measured_networks_csv(text, f, drop);
          nets.insert(nets.end(), n.begin(), n.end());
          break;
        }
        case measure::CsvKind::Unknown:
          err << "rsim: error: " << f << " is neither a measured.csv (a header with network, layer, op, ..., measured_time_s) nor a "
              << "measured_networks.csv (network, execution, measured_time_s)\n";
          return kConfig;
      }
      from += (from.empty() ? "" : ", ") + fs::path(f).parent_path().filename().string() + "/" + fs::path(f).filename().string();
    }
  } catch (const std::exception& e) {
    err << "rsim: error: " << e.what() << "\n";
    return kConfig;
  }
  if (dropped > 0)
    err << "rsim: warning: left out " << dropped << " row" << (dropped == 1 ? "" : "s") << " whose measured time is not a finite number ≥ 0 (--drop-bad-rows)\n";
  std::vector<measure::Sample> samples;  // the timed layers
  for (const auto& r : rows)
    if (r.measured_s > 0) samples.push_back(r);
  {  // layers measured against another platform than --platform: their roofs are not this one's
    std::vector<std::string> others;
    for (const auto& r : rows)
      if (!r.platform.empty() && r.platform != base_name && std::find(others.begin(), others.end(), r.platform) == others.end()) others.push_back(r.platform);
    for (const auto& o : others)
      err << "rsim: warning: layers in the measured files were evaluated on platform '" << o << "', not on --platform's '" << base_name
          << "': the fit divides their times by that platform's roofs and writes the result into this one\n";
  }
  if (samples.empty() && nets.empty()) {
    err << "rsim: error: no measured layers or networks in the given files\n";
    return kConfig;
  }
  if (measure::gpu_data(rows, nets)) return calibrate_gpu(vm, path, ptext, base_runtime, rows, nets, from, out, err);
  if (samples.empty()) {
    err << "rsim: error: no measured layers in the given files\n";
    return kConfig;
  }
  measure::Model model = measure::fit_model(samples);
  Progress progress(isatty(2), "cross-validation fits");  // (on a terminal: thousands of layers take a while)
  auto cv = measure::cross_validate(samples, [&](size_t d, size_t t) { progress.update(d, t); }, &model);
  progress.finish();
  measure::set_error_bands(model.rules, cv);  // each class's held-out spread
  const auto& rules = model.rules;
  std::string name = fs::path(vm["output"].as<std::string>()).stem().string();
  Runtime rt = base_runtime;
  rt.launch_overhead_s = model.overhead_s;
  rt.launch_basis = Basis::Calibrated;
  std::string yaml = measure::calibrated_platform_yaml(ptext, name, rules, from, model.contention, model.overhead_s > 0 ? &rt : nullptr,
                                                       "launch_overhead fitted by rsim calibrate (a fixed time per layer)");
  {  // the result must load as a platform
    Diags d;
    build_platform(parse_yaml(yaml, vm["output"].as<std::string>()), nullptr, d);
    if (!d.empty()) {
      err << ConfigError(d.list()).what();
      return kConfig;
    }
  }
  try {
    write_file_atomic(vm["output"].as<std::string>(), yaml);
    if (vm.count("predictions")) write_file_atomic(vm["predictions"].as<std::string>(), measure::predictions_csv(cv));
  } catch (const std::exception& e) {
    err << "rsim: error: " << e.what() << "\n";
    return kConfig;
  }
  char buf[256];
  out << "fitted on " << samples.size() << " measured layers; efficiency = a · x^b · g^c per class (x: MACs for compute, bytes for bandwidth; g: channels per group):\n";
  for (const auto& r : rules) {
    std::snprintf(buf, sizeof buf, "  %-15s compute a %.4g b %+.4f c %+.4f   bandwidth a %.4g b %+.4f c %+.4f%s\n", r.name.c_str(), r.compute.a, r.compute.b,
                  r.compute.c, r.bandwidth.a, r.bandwidth.b, r.bandwidth.c,
                  r.extrapolated           ? "   (extrapolated: no layer of the class measured)"
                  : r.extrapolated_compute ? "   (compute law extrapolated: no compute-bound layer)"
                  : r.extrapolated_bandwidth ? "   (bandwidth law extrapolated: no memory-bound layer)"
                                             : "");
    out << buf;
    for (const auto& [level, law] : r.bandwidth_by_level) {
      std::snprintf(buf, sizeof buf, "  %-15s %-37s bandwidth a %.4g b %+.4f c %+.4f\n", "", ("  on " + level).c_str(), law.a, law.b, law.c);
      out << buf;
    }
  }
  if (model.overhead_s > 0) {
    std::snprintf(buf, sizeof buf, "  overhead        %.3g µs per layer (the platform's runtime.launch_overhead)\n", model.overhead_s * 1e6);
    out << buf;
  } else {
    out << "  overhead        none\n";
  }
  if (model.contention.active()) {
    std::snprintf(buf, sizeof buf, "  contention      compute-bound layers longer than %.3g ms take up to %.3g× the class laws' time (time sharing, or long layers' "
                  "own slowdown; onset_s %.4g, slowdown %.4g)\n",
                  model.contention.onset_s * 1e3, model.contention.slowdown, model.contention.onset_s, model.contention.slowdown);
    out << buf;
  } else {
    out << "  contention      none (the measured core was not shared, or the fit found no sign of it)\n";
  }
  if (cv.folds.empty()) {
    out << "cross-validation: needs measurements of at least two networks (fit on the others, predict the held-out one)\n";
  } else {
    if (cv.grouped_networks)
      out << "cross-validated (" << cv.grouped_networks << " networks in " << cv.folds.size()
          << " folds: each fold's networks predicted by a fit on the others): |predicted/measured − 1| per layer\n";
    else
      out << "cross-validated (each network predicted by a fit on the others): |predicted/measured − 1| per layer\n";
    for (const auto& f : cv.folds) {
      std::snprintf(buf, sizeof buf, "  %-24s %4zu layers  median %.2f (uncalibrated %.2f)  p90 %.2f  within 1.5×: %.0f %%  network time %.1f %%  extrapolated: %zu\n",
                    f.network.c_str(), f.layers, f.median_err, f.median_err_before, f.p90_err, 100 * f.within_1_5x, 100 * f.network_err, f.extrapolated);
      out << buf;
    }
    if (cv.grouped_networks)
      out << "each network predicted by a fit on one other alone: not fitted past " << measure::kMaxFolds << " networks (" << cv.grouped_networks
          << " here; every ordered pair would be " << cv.grouped_networks * (cv.grouped_networks - 1) << " predictions)\n";
    else
      out << "each network predicted by a fit on one other network alone (how a user calibrates on one model and predicts the next):\n";
    for (const auto& p : cv.pairs) {
      std::snprintf(buf, sizeof buf, "  %-24s -> %-24s within 1.5×: %3.0f %%  network time %.1f %%  extrapolated: %zu of %zu\n", p.fit_on.c_str(),
                    p.predicted.c_str(), 100 * p.within_1_5x, 100 * p.network_err, p.extrapolated, p.layers);
      out << buf;
    }
  }
  out << "wrote " << vm["output"].as<std::string>() << "\n";
  if (vm.count("predictions")) out << "wrote " << vm["predictions"].as<std::string>() << "\n";
  return kOk;
}

}  // namespace

int rsim_main(const std::vector<std::string>& args, std::ostream& out, std::ostream& err) {
  if (args.empty()) {
    err << usage_text();
    return kUsage;
  }
  const std::string& first = args[0];
  if (first == "--help" || first == "-h" || first == "help") {
    out << usage_text();
    return kOk;
  }
  if (first == "--version" || first == "-V") {
    out << "rsim " << RSIM_VERSION << "\n";
    return kOk;
  }
  if (const Command* c = find_command(first)) {
    std::vector<std::string> rest(args.begin() + 1, args.end());
    try {
      return c->fn(rest, out, err);
    } catch (const ConfigError& e) {
      return print_config_error(err, e);
    } catch (const std::exception& e) {
      err << "rsim: error: " << e.what() << "\n";
      return kConfig;
    }
  }
  std::vector<std::string> names;
  for (const auto& c : kCommands) names.push_back(c.name);
  if (first.rfind("-", 0) == 0) {
    std::string hint = did_you_mean(first, {"--help", "--version"});
    return usage_error(err, "unknown option '" + first + "'", hint);
  }
  std::string hint = did_you_mean(first, names);
  return usage_error(err, "unknown command '" + first + "'", hint);
}

}  // namespace rsim
