// `rsim calibrate --ops`: the context-attention model (engine/hardware/kernel_model.hpp) fitted on
// AIConfigurator's context_attention_perf rows.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <sstream>
#include <stdexcept>

#include "measure/calibrate_ops.hpp"

namespace rsim::measure {

std::vector<AttentionSample> read_context_attention(const std::string& text, const std::string& path, std::vector<std::string>& skipped) {
  std::istringstream in(text);
  const std::array<size_t, 9> col = header_columns<9>(
      in, {{"batch_size", "isl", "num_heads", "num_key_value_heads", "head_dim", "window_size", "attn_dtype", "kv_cache_dtype", "latency"}},
      path, "an AIConfigurator context_attention_perf.csv");
  std::string line;
  std::vector<AttentionSample> out;
  size_t n = 1, other = 0;
  while (std::getline(in, line)) {
    ++n;
    if (line.empty() || line == "\r") continue;
    const std::vector<std::string> f = split(line);
    const std::string& at = f.size() > col[6] ? f[col[6]] : std::string();
    const std::string& kv = f.size() > col[7] ? f[col[7]] : std::string();
    const bool fp8 = at == "fp8" || kv == "fp8";
    if (!(at == "bfloat16" || at == "fp8") || !(kv == "bfloat16" || kv == "fp8")) {
      ++other;
      continue;
    }
    AttentionSample s;
    s.line = n;
    s.compute = fp8 ? DType::fp8 : DType::bf16;
    AttentionShape& a = s.shape;
    a.batch = number_at(f, col[0], "batch_size", path, n), a.sq = a.skv = number_at(f, col[1], "isl", path, n);
    a.heads = number_at(f, col[2], "num_heads", path, n), s.kv_heads = number_at(f, col[3], "num_key_value_heads", path, n);
    a.head_dim = number_at(f, col[4], "head_dim", path, n), a.window = number_at(f, col[5], "window_size", path, n), a.causal = true;
    s.measured_s = number_at(f, col[8], "latency", path, n) * 1e-3;
    if (!(a.batch >= 1 && a.sq >= 1 && a.heads >= 1 && s.kv_heads >= 1 && a.head_dim >= 1 && a.window >= 0 && s.measured_s > 0))
      throw std::runtime_error(path + ":" + std::to_string(n) + ": a size below 1, a negative window or a latency not above 0");
    s.kv_bytes = kv == "fp8" ? 1 : 2;
    // q read and the output written (bf16), K and V read in the KV dtype: the attention layer's bytes
    s.bytes = 2 * a.batch * a.sq * a.heads * a.head_dim * 2 + 2 * a.batch * a.skv * s.kv_heads * a.head_dim * s.kv_bytes;
    s.tiles = attention_tiles(a);
    out.push_back(s);
  }
  if (other) skipped.push_back(std::to_string(other) + " rows of " + path + " (attention or KV dtypes other than bfloat16 and fp8)");
  return out;
}

namespace {

using Figures = OpFigures;
Figures figures_of(const Platform& p, DType t) { return op_figures(p, t); }
double flops_of(const AttentionSample& s) {
  const AttentionShape& a = s.shape;
  double pairs = a.sq * (a.sq + 1) / 2;
  if (a.window > 0 && a.window < a.sq) pairs = a.window * (a.window + 1) / 2 + (a.sq - a.window) * a.window;
  return 4 * pairs * a.head_dim * a.heads * a.batch;
}
double bound_on(const AttentionSample& s, const Figures& f) { return std::max(flops_of(s) / f.peak, s.bytes / f.bandwidth); }
double predict_on(const AttentionSample& s, const AttentionParams& a, const Figures& f) {
  return std::max(attention_time(s.shape, s.tiles, s.bytes, a, f.peak, f.bandwidth, f.sms), bound_on(s, f));
}
double logistic(double x) { return 1 / (1 + std::exp(-x)); }
double logit(double p) { return std::log(p / (1 - p)); }
// efficiencies through a logistic; times (in ns, the floor in us) through exp
AttentionParams from_vec(const FitVec& x) {
  AttentionParams a;
  a.compute_efficiency = logistic(x[0]), a.bandwidth_efficiency = logistic(x[1]);
  a.score_s = std::exp(x[2]) * 1e-9, a.mask_s = std::exp(x[3]) * 1e-9, a.block_s = std::exp(x[4]) * 1e-9, a.tile_s = std::exp(x[5]) * 1e-9;
  a.floor_s = std::exp(x[6]) * 1e-6;
  return a;
}
FitVec to_vec(const AttentionParams& a) {
  auto l = [](double v) { return std::log(std::max(v, 1e-15)); };
  return {logit(std::clamp(a.compute_efficiency, 1e-6, 1 - 1e-6)), logit(std::clamp(a.bandwidth_efficiency, 1e-6, 1 - 1e-6)), l(a.score_s * 1e9),
          l(a.mask_s * 1e9), l(a.block_s * 1e9), l(a.tile_s * 1e9), l(a.floor_s * 1e6), 0};
}
AttentionParams fit_on(const std::vector<AttentionSample>& rows, const std::vector<size_t>& idx, const Figures& fig, const AttentionParams& start, int iters) {
  std::vector<size_t> use;  // at most 4000 rows, evenly spaced
  for (size_t i = 0; i < std::min<size_t>(idx.size(), 4000); ++i) use.push_back(idx[i * idx.size() / std::min<size_t>(idx.size(), 4000)]);
  auto loss = [&](const FitVec& x) {
    const AttentionParams a = from_vec(x);
    double s = 0;
    for (size_t i : use) s += std::fabs(std::log(rows[i].measured_s / predict_on(rows[i], a, fig)));
    return use.empty() ? 0.0 : s / static_cast<double>(use.size());
  };
  FitVec x = nelder_mead(loss, to_vec(start), 7, iters);
  x = nelder_mead(loss, x, 7, iters / 2);  // a restart from the best point
  x = nelder_mead(loss, x, 7, iters / 2);
  return from_vec(x);
}

}  // namespace

double predict_attention(const AttentionSample& s, const AttentionParams& a, const Platform& p) { return predict_on(s, a, figures_of(p, s.compute)); }
double attention_bound(const AttentionSample& s, const Platform& p) { return bound_on(s, figures_of(p, s.compute)); }

AttentionFit fit_attention(const std::vector<AttentionSample>& all, DType dtype, const Platform& p, int folds) {
  AttentionFit fit;
  fit.dtype = dtype;
  std::vector<AttentionSample> rows;
  for (const auto& s : all)
    if (s.compute == dtype) rows.push_back(s);
  fit.rows = rows.size();
  if (rows.empty()) return fit;
  const Figures fig = figures_of(p, dtype);
  std::vector<size_t> every(rows.size());
  for (size_t i = 0; i < rows.size(); ++i) every[i] = i;
  AttentionParams start;
  start.compute_efficiency = 0.5, start.bandwidth_efficiency = 0.25, start.score_s = 0.01e-9, start.mask_s = 0.2e-9, start.block_s = 5e-9;
  start.tile_s = 1e-6, start.floor_s = 12e-6;
  fit.params = fit_on(rows, every, fig, start, 1500);
  std::vector<double> ratios;
  for (const auto& s : rows) ratios.push_back(s.measured_s / predict_on(s, fit.params, fig));
  fit.fitted = error_stats(ratios);
  if (folds > 1) {  // held out by head shape: every (heads, KV heads, head dim) in one fold
    auto fold_of = [&](const AttentionSample& s) {
      return static_cast<int>((static_cast<long long>(s.shape.heads) * 7919 + static_cast<long long>(s.kv_heads) * 104729 +
                               static_cast<long long>(s.shape.head_dim) * 15485863) % folds);
    };
    fit.cv_predicted_s.assign(rows.size(), 0);
    for (int f = 0; f < folds; ++f) {
      std::vector<size_t> train;
      for (size_t i = 0; i < rows.size(); ++i)
        if (fold_of(rows[i]) != f) train.push_back(i);
      const AttentionParams a = fit_on(rows, train, fig, fit.params, 400);
      for (size_t i = 0; i < rows.size(); ++i)
        if (fold_of(rows[i]) == f) fit.cv_predicted_s[i] = predict_on(rows[i], a, fig);
    }
    std::vector<double> held;
    for (size_t i = 0; i < rows.size(); ++i) held.push_back(rows[i].measured_s / fit.cv_predicted_s[i]);
    fit.held_out = error_stats(held);
  }
  return fit;
}

std::string attention_fits_yaml(const std::vector<AttentionFit>& fits) {
  if (fits.empty()) return "";
  std::string s = "  attention:\n";
  char buf[256];
  for (const auto& f : fits) {
    std::snprintf(buf, sizeof buf, "    # %s: %zu context rows; median %.3f, within 1.25x %.1f %% (held out by head shape %.1f %%)\n", dtype_name(f.dtype), f.rows,
                  f.fitted.median, 100 * f.fitted.within_1_25, 100 * f.held_out.within_1_25);
    s += buf;
    s += std::string("    ") + dtype_name(f.dtype) + ": " + attention_params_yaml(f.params) + "\n";
  }
  return s;
}

}  // namespace rsim::measure
