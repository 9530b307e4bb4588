// `rsim calibrate --ops`: the decode-attention model (engine/hardware/kernel_model.hpp) fitted on
// AIConfigurator's generation_attention_perf rows.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <sstream>
#include <stdexcept>

#include "measure/calibrate_ops.hpp"

namespace rsim::measure {

std::vector<DecodeSample> read_generation_attention(const std::string& text, const std::string& path, std::vector<std::string>& skipped) {
  std::istringstream in(text);
  const std::array<size_t, 9> col = header_columns<9>(
      in, {{"batch_size", "num_heads", "num_key_value_heads", "head_dim", "window_size", "attn_dtype", "kv_cache_dtype", "step", "latency"}},
      path, "an AIConfigurator generation_attention_perf.csv");
  std::string line;
  std::vector<DecodeSample> out;
  size_t n = 1, other = 0;
  while (std::getline(in, line)) {
    ++n;
    if (line.empty() || line == "\r") continue;
    const std::vector<std::string> f = split(line);
    const std::string& at = f.size() > col[5] ? f[col[5]] : std::string();
    const std::string& kv = f.size() > col[6] ? f[col[6]] : std::string();
    if (at != "bfloat16" || !(kv == "bfloat16" || kv == "fp8")) {
      ++other;
      continue;
    }
    DecodeSample s;
    s.line = n;
    s.kv = kv == "fp8" ? DType::fp8 : DType::bf16;
    DecodeShape& a = s.shape;
    a.batch = number_at(f, col[0], "batch_size", path, n), a.heads = number_at(f, col[1], "num_heads", path, n);
    a.kv_heads = number_at(f, col[2], "num_key_value_heads", path, n), a.head_dim = number_at(f, col[3], "head_dim", path, n);
    a.window = number_at(f, col[4], "window_size", path, n);
    a.kv_tokens = a.max_kv_tokens = number_at(f, col[7], "step", path, n) + 1;  // the cached tokens and the new one
    a.kv_bytes = kv == "fp8" ? 1 : 2;
    s.measured_s = number_at(f, col[8], "latency", path, n) * 1e-3;
    if (!(a.batch >= 1 && a.heads >= 1 && a.kv_heads >= 1 && a.head_dim >= 1 && s.measured_s > 0))
      throw std::runtime_error(path + ":" + std::to_string(n) + ": a size below 1 or a latency not above 0");
    const double seen = a.window > 0 ? std::min(a.kv_tokens, a.window) : a.kv_tokens;
    s.bytes = a.batch * a.kv_heads * seen * a.head_dim * 2 * a.kv_bytes + a.batch * a.heads * a.head_dim * 2 * 2;
    out.push_back(s);
  }
  if (other) skipped.push_back(std::to_string(other) + " rows of " + path + " (attention dtypes other than bfloat16, KV dtypes other than bfloat16 and fp8)");
  return out;
}

namespace {

struct Figures {
  OpFigures op;
  DecodeFigures dec;
};
Figures figures_of(const Platform& p) {
  Figures f;
  f.op = op_figures(p, DType::bf16);  // (the bound's compute part: a decode is its bytes')
  if (!(p.boost_clock_hz > 0)) throw std::runtime_error("platform '" + p.name + "' states no boost_clock (the decode-attention model counts cycles)");
  f.dec = DecodeFigures{f.op.sms, p.boost_clock_hz, f.op.bandwidth, p.l2_size_bytes};
  return f;
}
double bound_on(const DecodeSample& s, const Figures& f) {
  const DecodeShape& a = s.shape;
  const double seen = a.window > 0 ? std::min(a.kv_tokens, a.window) : a.kv_tokens;
  return std::max(4 * a.batch * a.heads * seen * a.head_dim / f.op.peak, s.bytes / f.op.bandwidth);
}
double predict_on(const DecodeSample& s, const DecodePlan& plan, const DecodeAttentionParams& a, const Figures& f) {
  return std::max(decode_attention_time(s.shape, plan, a, f.dec).time_s, bound_on(s, f));
}
double logistic(double x) { return 1 / (1 + std::exp(-x)); }
double logit(double p) { return std::log(p / (1 - p)); }
// the bandwidth share through a logistic, the rest through exp (times in us)
DecodeAttentionParams from_vec(const FitVec& x) {
  DecodeAttentionParams a;
  a.floor_s = std::exp(x[0]) * 1e-6, a.bandwidth_efficiency = logistic(x[1]);
  a.cta_cycles = std::exp(x[2]), a.cta_bytes_per_cycle = std::exp(x[3]), a.group_cycles = std::exp(x[4]);
  a.mmha_cta_cycles = std::exp(x[5]), a.mmha_token_cycles = std::exp(x[6]), a.multi_block_s = std::exp(x[7]) * 1e-6;
  a.l2_bytes_per_cycle = std::exp(x[8]), a.append_s = std::exp(x[9]) * 1e-6;
  return a;
}
FitVec to_vec(const DecodeAttentionParams& a) {
  auto l = [](double v) { return std::log(std::max(v, 1e-12)); };
  return {l(a.floor_s * 1e6), logit(std::clamp(a.bandwidth_efficiency, 1e-6, 1 - 1e-6)), l(a.cta_cycles), l(a.cta_bytes_per_cycle), l(a.group_cycles),
          l(a.mmha_cta_cycles), l(a.mmha_token_cycles), l(a.multi_block_s * 1e6), l(a.l2_bytes_per_cycle), l(a.append_s * 1e6), 0, 0};
}
constexpr size_t kDims = 10;

DecodeAttentionParams fit_on(const std::vector<DecodeSample>& rows, const std::vector<DecodePlan>& plans, const std::vector<size_t>& idx, const Figures& fig,
                             const DecodeAttentionParams& start, int iters) {
  std::vector<size_t> use;  // at most 4000 rows, evenly spaced
  const size_t cap = std::min<size_t>(idx.size(), 4000);
  for (size_t i = 0; i < cap; ++i) use.push_back(idx[i * idx.size() / cap]);
  auto loss = [&](const FitVec& x) {
    const DecodeAttentionParams a = from_vec(x);
    double s = 0;
    for (size_t i : use) s += std::fabs(std::log(rows[i].measured_s / predict_on(rows[i], plans[i], a, fig)));
    return use.empty() ? 0.0 : s / static_cast<double>(use.size());
  };
  FitVec x = nelder_mead(loss, to_vec(start), kDims, iters);
  x = nelder_mead(loss, x, kDims, iters);  // restarts from the best point
  x = nelder_mead(loss, x, kDims, iters);
  return from_vec(x);
}

}  // namespace

double predict_decode(const DecodeSample& s, const DecodeAttentionParams& a, const Platform& p) {
  const Figures f = figures_of(p);
  return predict_on(s, decode_plan(s.shape, f.dec.sms), a, f);
}
double decode_bound(const DecodeSample& s, const Platform& p) { return bound_on(s, figures_of(p)); }

DecodeFit fit_decode(const std::vector<DecodeSample>& all, DType kv, const Platform& p, int folds, int iters) {
  DecodeFit fit;
  fit.kv = kv;
  std::vector<DecodeSample> rows;
  for (const auto& s : all)
    if (s.kv == kv) rows.push_back(s);
  fit.rows = rows.size();
  if (rows.empty()) return fit;
  const Figures fig = figures_of(p);
  std::vector<DecodePlan> plans;
  for (const auto& s : rows) plans.push_back(decode_plan(s.shape, fig.dec.sms));
  std::vector<size_t> every(rows.size());
  for (size_t i = 0; i < rows.size(); ++i) every[i] = i;
  // a start of the right orders of magnitude (microseconds, thousands of cycles, tens of bytes a cycle)
  DecodeAttentionParams start;
  start.floor_s = 3.5e-6, start.bandwidth_efficiency = 0.9, start.cta_cycles = 6500, start.cta_bytes_per_cycle = 30, start.group_cycles = 1.2;
  start.mmha_cta_cycles = 10000, start.mmha_token_cycles = 0.15, start.multi_block_s = 2e-6, start.l2_bytes_per_cycle = 12, start.append_s = 2e-6;
  fit.params = fit_on(rows, plans, every, fig, start, iters);
  std::vector<double> ratios;
  for (size_t i = 0; i < rows.size(); ++i) ratios.push_back(rows[i].measured_s / predict_on(rows[i], plans[i], fit.params, fig));
  fit.fitted = error_stats(ratios);
  if (folds > 1) {  // held out by head shape: every (heads, KV heads, head dim) in one fold
    auto fold_of = [&](const DecodeSample& s) {
      return static_cast<int>((static_cast<long long>(s.shape.heads) * 7919 + static_cast<long long>(s.shape.kv_heads) * 104729 +
                               static_cast<long long>(s.shape.head_dim) * 15485863) % folds);
    };
    fit.cv_predicted_s.assign(rows.size(), 0);
    for (int f = 0; f < folds; ++f) {
      std::vector<size_t> train;
      for (size_t i = 0; i < rows.size(); ++i)
        if (fold_of(rows[i]) != f) train.push_back(i);
      const DecodeAttentionParams a = fit_on(rows, plans, train, fig, fit.params, iters / 6 + 1);
      for (size_t i = 0; i < rows.size(); ++i)
        if (fold_of(rows[i]) == f) fit.cv_predicted_s[i] = predict_on(rows[i], plans[i], a, fig);
    }
    std::vector<double> held;
    for (size_t i = 0; i < rows.size(); ++i) held.push_back(rows[i].measured_s / fit.cv_predicted_s[i]);
    fit.held_out = error_stats(held);
  }
  return fit;
}

std::string decode_fits_yaml(const std::vector<DecodeFit>& fits) {
  if (fits.empty()) return "";
  std::string s = "  decode_attention:\n";
  char buf[256];
  for (const auto& f : fits) {
    std::snprintf(buf, sizeof buf, "    # %s KV cache: %zu decode rows; median %.3f, within 1.25x %.1f %% (held out by head shape %.1f %%)\n", dtype_name(f.kv),
                  f.rows, f.fitted.median, 100 * f.fitted.within_1_25, 100 * f.held_out.within_1_25);
    s += buf;
    s += std::string("    ") + dtype_name(f.kv) + ": " + decode_params_yaml(f.params) + "\n";
  }
  return s;
}

}  // namespace rsim::measure
