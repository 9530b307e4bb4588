// `rsim calibrate --ops`: the memory-bound family of the GPU kernel model (elementwise, norms,
// pooling, copies) fitted from rsim measured.csv rows of layers without MACs (see calibrate_ops.hpp).
#include <algorithm>
#include <cmath>
#include <map>
#include <set>

#include "measure/calibrate.hpp"
#include "measure/calibrate_ops.hpp"

namespace rsim::measure {

std::vector<MemorySample> read_measured_memory(const std::string& text, const std::string& path, size_t& other) {
  std::vector<MemorySample> out;
  for (const Sample& s : read_measured_csv(text, path)) {
    const double t = s.measured_min_s > 0 ? s.measured_min_s : s.measured_s;
    if (s.macs > 0 || !(s.bytes > 0) || !(t > 0)) {
      ++other;
      continue;
    }
    out.push_back(MemorySample{s.op, s.network, s.bytes, s.work, s.peak, t});
  }
  return out;
}

namespace {

double bandwidth_of(const Platform& p) {
  if (p.memory.empty() || !(p.memory.front().bandwidth_bytes_per_s > 0)) throw std::runtime_error("platform '" + p.name + "' states no memory bandwidth");
  return p.memory.front().bandwidth_bytes_per_s;
}

double median_of(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

// The parameters from the rows `use` selects (fitted rows only)
MemoryParams fit_on(const std::vector<MemorySample>& rows, const std::vector<bool>& use, double bw) {
  std::map<std::string, std::vector<double>> by_op;
  std::vector<double> elementwise, every;
  for (size_t i = 0; i < rows.size(); ++i) {
    if (!use[i]) continue;
    const double e = std::min(1.0, rows[i].bytes / (bw * rows[i].measured_s));
    by_op[rows[i].op].push_back(e);
    every.push_back(e);
    if (op_class(rows[i].op) == "elementwise") elementwise.push_back(e);
  }
  MemoryParams m;
  if (every.empty()) return m;
  m.bandwidth_efficiency = median_of(elementwise.empty() ? every : elementwise);
  for (const auto& [op, v] : by_op)
    if (op_class(op) != "elementwise") m.ops.emplace_back(op, median_of(v));
  return m;
}

}  // namespace

double memory_bound(const MemorySample& s, const Platform& p) {
  return std::max(s.peak > 0 ? s.flops / s.peak : 0.0, s.bytes / bandwidth_of(p));
}

double predict_memory(const MemorySample& s, const MemoryParams& m, const Platform& p) {
  return std::max(memory_kernel_time(s.flops, s.bytes, m, s.peak, bandwidth_of(p), s.op), memory_bound(s, p));
}

MemoryFit fit_memory(const std::vector<MemorySample>& rows, const Platform& p) {
  const double bw = bandwidth_of(p);
  MemoryFit fit;
  fit.rows = rows.size();
  std::vector<bool> fitted(rows.size());
  std::set<std::string> networks;
  std::map<std::string, size_t> op_rows;
  for (size_t i = 0; i < rows.size(); ++i) {
    fitted[i] = rows[i].bytes / bw >= kMemoryFitMinStream;
    if (!fitted[i]) continue;
    ++fit.fitted_rows, ++op_rows[rows[i].op];
    networks.insert(rows[i].network);
  }
  if (fit.fitted_rows == 0)
    throw std::runtime_error("no memory-bound row moves enough bytes to fit (at least " + std::to_string(kMemoryFitMinStream * 1e6) +
                             " us at the platform's bandwidth; smaller kernels timed alone are launches)");
  fit.op_rows.assign(op_rows.begin(), op_rows.end());
  fit.params = fit_on(rows, fitted, bw);
  std::vector<double> all;
  fit.cv_predicted_s.resize(rows.size());
  for (size_t i = 0; i < rows.size(); ++i) {
    fit.cv_predicted_s[i] = predict_memory(rows[i], fit.params, p);
    if (fitted[i]) all.push_back(rows[i].measured_s / fit.cv_predicted_s[i]);
  }
  fit.fitted = error_stats(all);
  // held out by network: its rows predicted by the fit on the others' (an operator no other
  // network has takes the others' base)
  std::vector<double> held;
  if (networks.size() > 1)
    for (const std::string& net : networks) {
      std::vector<bool> use = fitted;
      for (size_t i = 0; i < rows.size(); ++i)
        if (rows[i].network == net) use[i] = false;
      const MemoryParams m = fit_on(rows, use, bw);
      for (size_t i = 0; i < rows.size(); ++i)
        if (fitted[i] && rows[i].network == net) {
          fit.cv_predicted_s[i] = predict_memory(rows[i], m, p);
          held.push_back(rows[i].measured_s / fit.cv_predicted_s[i]);
        }
    }
  fit.held_out = error_stats(held);
  return fit;
}

}  // namespace rsim::measure
