// `rsim plan` and `rsim measure`: the layers of a scenario timed for real beside their predictions.
#include "app/cli_common.hpp"

#include "session/session.hpp"
#include "engine/output/output.hpp"
#include "engine/output/plan.hpp"
#include "measure/measure_run.hpp"
#include "plots/draw.hpp"
#include "plots/report.hpp"

namespace po = boost::program_options;
namespace fs = std::filesystem;

namespace rsim::cli {

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
    out << "usage: rsim " << synopsis("plan") << "\n\n" << desc;
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
    out << "usage: rsim " << synopsis("measure") << "\n\n" << desc;
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
    set_setting(s, "mac_count", "executed");  // a direct kernel skips the taps on padding: bound what it executes
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

}  // namespace rsim::cli
