// `rsim calibrate`: efficiency models fitted from measured files into a platform file.
#include "app/cli_common.hpp"

#include "session/session.hpp"
#include "engine/output/output.hpp"
#include "measure/calibrate.hpp"

namespace po = boost::program_options;
namespace fs = std::filesystem;

namespace rsim::cli {

// A measured CSV: 1 GiB is about 2,000,000 layer rows of rsim measure's (570 bytes each), far
// beyond any measurement; a larger file (or a device read without end) is refused before it is read.
constexpr size_t kMaxMeasuredCsvBytes = 1u << 30;

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

// `rsim calibrate --ops` (cmd_calibrate_ops.cpp): its options, and the command
po::options_description calibrate_ops_options();
int calibrate_ops(const po::variables_map& vm, std::ostream& out, std::ostream& err);

namespace {

// What a CPU fit found: each class's laws, the overhead and the contention, then the
// cross-validation's errors per network and per pair of networks
void print_cpu_fit(std::ostream& out, size_t samples_n, const measure::Model& model, const measure::CrossValidation& cv) {
  const auto& rules = model.rules;
  char buf[256];
  out << "fitted on " << samples_n << " measured layers; efficiency = a · x^b · g^c per class (x: MACs for compute, bytes for bandwidth; g: channels per group):\n";
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
}

}  // namespace

int cmd_calibrate(const std::vector<std::string>& args, std::ostream& out, std::ostream& err) {
  po::options_description desc("rsim calibrate options");
  desc.add_options()("help,h", "show this help")("files", po::value<std::vector<std::string>>(), "measured.csv and measured_networks.csv files (rsim measure, rsim_torch), in any order")(
      "platform,p", po::value<std::string>(), "the platform measured: a catalog name or a platform file")(
      "output,o", po::value<std::string>(), "the calibrated platform file to write; its stem is its name")(
      "predictions", po::value<std::string>(), "also write the cross-validated prediction of every measured layer (CSV)")(
      "drop-bad-rows", "leave out rows whose measured time is not a finite number >= 0 (inf, NaN, negative), counted (default: an error at the line)");
  desc.add(hw_dir_option()).add(calibrate_ops_options());
  po::positional_options_description pos;
  pos.add("files", -1);
  po::variables_map vm;
  int code = kOk;
  if (!parse(args, desc, pos, vm, err, code)) return code;
  if (vm.count("help")) {
    out << "usage: rsim " << synopsis("calibrate") << "\n\n" << desc;
    return kOk;
  }
  if (vm.count("ops") || vm.count("check")) return calibrate_ops(vm, out, err);  // cmd_calibrate_ops.cpp
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
  print_cpu_fit(out, samples.size(), model, cv);
  out << "wrote " << vm["output"].as<std::string>() << "\n" << (vm.count("predictions") ? "wrote " + vm["predictions"].as<std::string>() + "\n" : "");
  return kOk;
}

}  // namespace rsim::cli
