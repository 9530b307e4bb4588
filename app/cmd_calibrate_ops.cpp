// `rsim calibrate --ops DIR`: the GPU kernel model fitted from measured op data (AIConfigurator's
// gemm_perf.csv), or with --check, a platform's kernel model (its own, or carried with
// `kernel_model: {from: …}`) against such data.
#include <filesystem>

#include "app/cli_common.hpp"
#include "session/session.hpp"
#include "engine/output.hpp"
#include "engine/text_file.hpp"
#include "measure/calibrate_ops.hpp"

namespace fs = std::filesystem;

namespace rsim::cli {

namespace {

constexpr size_t kMaxOpTableBytes = size_t(1) << 30;

// The gemm_perf.csv[.gz] files of DIR (searched below it), or DIR itself when it is one
std::vector<std::string> gemm_tables(const std::string& dir) {
  std::vector<std::string> found;
  std::error_code ec;
  if (fs::is_regular_file(dir, ec)) return {dir};
  for (auto it = fs::recursive_directory_iterator(dir, ec); !ec && it != fs::recursive_directory_iterator(); it.increment(ec)) {
    const std::string name = it->path().filename().string();
    if (it->is_regular_file(ec) && (name == "gemm_perf.csv" || name == "gemm_perf.csv.gz")) found.push_back(it->path().string());
  }
  std::sort(found.begin(), found.end());
  return found;
}

std::string stats_text(const measure::ErrorStats& e) {
  char buf[200];
  std::snprintf(buf, sizeof buf, "p10 %.3f  median %.3f  p90 %.3f  within 1.25x %5.1f %%  within 1.5x %5.1f %%", e.p10, e.median, e.p90, 100 * e.within_1_25,
                100 * e.within_1_5);
  return buf;
}

}  // namespace

int calibrate_ops(const po::variables_map& vm, std::ostream& out, std::ostream& err) {
  const std::string dir = vm["ops"].as<std::string>();
  if (!vm.count("platform")) return usage_error(err, "calibrate --ops needs --platform", "rsim calibrate --ops DIR --platform h200 -o h200_op.yaml");
  const bool check = vm.count("check") > 0;
  if (!check && !vm.count("output")) return usage_error(err, "calibrate --ops needs -o FITTED.yaml (or --check)");
  const std::vector<std::string> files = gemm_tables(dir);
  if (files.empty()) {
    err << "rsim: error: no gemm_perf.csv or gemm_perf.csv.gz under '" << dir << "'\n";
    return kConfig;
  }
  // the platform: a catalog name, or a platform file (which may be a what-if: base:, kernel_model: {from: …})
  const std::string plat = vm["platform"].as<std::string>();
  Catalog catalog(find_hardware_dir(vm["hw-dir"].as<std::string>()));
  PlatformCache cache(catalog);
  Platform p;
  std::string ptext;
  try {
    const bool file = plat.find('/') != std::string::npos || (plat.size() > 5 && plat.substr(plat.size() - 5) == ".yaml");
    const std::string path = file ? plat : catalog.path_of(plat);
    std::string why;
    std::optional<std::string> t = read_regular_file(path, kMaxScenarioBytes, "platform file", why);
    if (!t) {
      err << "rsim: error: cannot read platform file '" << path << "': " << why << "\n";
      return kConfig;
    }
    ptext = *t;
    Diags d;
    const CNode node = file ? parse_yaml(ptext, path) : CNode::make_scalar(plat);
    p = resolve_platform(node, cache, d);
    if (!d.empty()) return print_config_error(err, ConfigError(d.list()));
  } catch (const ConfigError& e) {
    return print_config_error(err, e);
  }
  if (!check && (p.kernel_model.active() || ptext.find("\nkernel_model:") != std::string::npos)) {
    err << "rsim: error: platform '" << p.name << "' has a kernel model already; fit on the platform without one\n";
    return kConfig;
  }
  std::vector<measure::GemmSample> rows;
  std::vector<std::string> skipped;
  try {
    for (const auto& f : files) {
      std::string why;
      std::optional<std::string> text = read_text_file(f, kMaxOpTableBytes, "GEMM table", why);
      if (!text) {
        err << "rsim: error: cannot read '" << f << "': " << why << "\n";
        return kConfig;
      }
      auto r = measure::read_aiconfigurator_gemm(*text, f, skipped);
      rows.insert(rows.end(), r.begin(), r.end());
    }
  } catch (const std::exception& e) {
    err << "rsim: error: " << e.what() << "\n";
    return kConfig;
  }
  for (const auto& s : skipped) err << "rsim: note: skipped " << s << " (a dtype the GEMM model does not fit)\n";
  std::vector<DType> dtypes;
  for (const auto& r : rows)
    if (std::find(dtypes.begin(), dtypes.end(), r.compute) == dtypes.end()) dtypes.push_back(r.compute);
  if (dtypes.empty()) {
    err << "rsim: error: no GEMM rows of a dtype the model fits (bfloat16, float16, fp8) in " << dir << "\n";
    return kConfig;
  }
  std::string csv = "dtype,m,n,k,measured_s,predicted_s,bound_s\n";
  char buf[256];
  try {
    if (check) {
      if (!p.kernel_model.active()) {
        err << "rsim: error: platform '" << p.name << "' has no kernel model to check (fit one, or carry one with kernel_model: {from: …})\n";
        return kConfig;
      }
      out << "kernel model of " << p.name << (p.kernel_model.source.empty() ? "" : " (" + p.kernel_model.source + ")") << " against " << rows.size()
          << " GEMMs of " << dir << "; measured / predicted:\n";
      for (DType t : dtypes) {
        const GemmParams* g = p.kernel_model.gemm_for(t, p.roof_for(t) ? p.roof_for(t)->dtypes : std::vector<DType>{});
        if (!g) {
          out << "  " << dtype_name(t) << ": no GEMM parameters for this dtype\n";
          continue;
        }
        std::vector<double> model, bound;
        for (const auto& r : rows) {
          if (r.compute != t) continue;
          const double pr = measure::predict_gemm(r, *g, p), b = measure::gemm_bound(r, p);
          model.push_back(r.measured_s / pr), bound.push_back(r.measured_s / b);
          std::snprintf(buf, sizeof buf, "%s,%.0f,%.0f,%.0f,%.6g,%.6g,%.6g\n", dtype_name(t), r.m, r.n, r.k, r.measured_s, pr, b);
          csv += buf;
        }
        out << "  " << dtype_name(t) << " (" << model.size() << " rows)\n    kernel model   " << stats_text(measure::error_stats(model))
            << "\n    roofline bound " << stats_text(measure::error_stats(bound)) << "\n";
      }
    } else {
      std::vector<measure::GemmFit> fits;
      out << "fitting the GEMM model on " << rows.size() << " rows of " << dir << " with " << p.name << "'s figures (" << p.sm_count << " SMs, "
          << si(p.memory.front().bandwidth_bytes_per_s, "B/s") << "):\n";
      for (DType t : dtypes) {
        fits.push_back(measure::fit_gemm(rows, t, p));
        const measure::GemmFit& f = fits.back();
        out << "  " << dtype_name(t) << ": " << f.rows << " rows";
        if (f.flagged) out << " (" << f.flagged << " faster than the roofline bound, e.g. L2-resident weights: kept in the errors, not fitted)";
        out << "\n    parameters " << gemm_params_yaml(f.params) << "\n    fitted   " << stats_text(f.fitted) << "\n    held out " << stats_text(f.held_out)
            << "  (5 folds by weight shape (n, k))\n";
        size_t i = 0;
        for (const auto& r : rows) {
          if (r.compute != t) continue;
          std::snprintf(buf, sizeof buf, "%s,%.0f,%.0f,%.0f,%.6g,%.6g,%.6g\n", dtype_name(t), r.m, r.n, r.k, r.measured_s, f.cv_predicted_s[i++],
                        measure::gemm_bound(r, p));
          csv += buf;
        }
      }
      const std::string output = vm["output"].as<std::string>();
      std::string from;
      for (const auto& f : files) from += (from.empty() ? "" : ", ") + f;
      const std::string yaml = measure::kernel_model_platform_yaml(ptext, fs::path(output).stem().string(), fits,
                                                                   "rsim calibrate --ops on " + std::to_string(rows.size()) + " GEMM rows of " + from);
      Diags d;  // the result must load as a platform
      build_platform(parse_yaml(yaml, output), nullptr, d);
      if (!d.empty()) return print_config_error(err, ConfigError(d.list()));
      write_file_atomic(output, yaml);
      out << "wrote " << output << "\n";
    }
    if (vm.count("predictions")) {
      write_file_atomic(vm["predictions"].as<std::string>(), csv);
      out << "wrote " << vm["predictions"].as<std::string>() << (check ? "" : " (held-out predictions)") << "\n";
    }
  } catch (const std::exception& e) {
    err << "rsim: error: " << e.what() << "\n";
    return kConfig;
  }
  return kOk;
}

}  // namespace rsim::cli
