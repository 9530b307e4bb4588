// `rsim calibrate --ops`: AIConfigurator's GEMM tables read, the kernel model fitted, its errors.
#include "measure/calibrate_ops.hpp"

#include <algorithm>
#include <cstdint>
#include <array>
#include <cmath>
#include <cstdio>
#include <functional>
#include <limits>
#include <sstream>
#include <stdexcept>

namespace rsim::measure {

std::vector<std::string> split(const std::string& line) {
  std::vector<std::string> f;
  std::string cur;
  for (char c : line) {
    if (c == ',') f.push_back(cur), cur.clear();
    else if (c != '\r') cur += c;
  }
  f.push_back(cur);
  return f;
}

double number_at(const std::vector<std::string>& f, size_t col, const std::string& name, const std::string& path, size_t line) {
  const std::string& t = col < f.size() ? f[col] : std::string();
  char* end = nullptr;
  const double v = std::strtod(t.c_str(), &end);
  if (t.empty() || end != t.c_str() + t.size() || !std::isfinite(v))
    throw std::runtime_error(path + ":" + std::to_string(line) + ": column '" + name + "' is '" + t + "', not a number");
  if (v < 0) throw std::runtime_error(path + ":" + std::to_string(line) + ": column '" + name + "' is negative (" + t + ")");
  return v;
}


std::vector<GemmSample> read_aiconfigurator_gemm(const std::string& text, const std::string& path, std::vector<std::string>& skipped) {
  std::istringstream in(text);
  const std::array<size_t, 5> col = header_columns<5>(in, {{"gemm_dtype", "m", "n", "k", "latency"}}, path, "an AIConfigurator gemm_perf.csv");
  std::string line;
  std::vector<GemmSample> rows;
  std::vector<std::pair<std::string, size_t>> other;
  size_t n = 1;
  while (std::getline(in, line)) {
    ++n;
    if (line.empty() || line == "\r") continue;
    const std::vector<std::string> f = split(line);
    const std::string dt = col[0] < f.size() ? f[col[0]] : "";
    GemmSample s;
    if (dt == "bfloat16") s.compute = s.activations = s.weights = DType::bf16;
    else if (dt == "float16") s.compute = s.activations = s.weights = DType::fp16;
    else if (dt == "fp8") s.compute = s.weights = DType::fp8, s.activations = DType::bf16;
    else if (dt == "fp8_block") s.compute = s.weights = DType::fp8, s.activations = DType::bf16, s.block = true;
    else {
      auto it = std::find_if(other.begin(), other.end(), [&](const auto& o) { return o.first == dt; });
      if (it == other.end()) other.emplace_back(dt, 1);
      else ++it->second;
      continue;
    }
    s.m = number_at(f, col[1], "m", path, n), s.n = number_at(f, col[2], "n", path, n), s.k = number_at(f, col[3], "k", path, n);
    s.measured_s = number_at(f, col[4], "latency", path, n) * 1e-3;  // milliseconds per call
    if (!(s.m >= 1 && s.n >= 1 && s.k >= 1)) throw std::runtime_error(path + ":" + std::to_string(n) + ": m, n and k must be at least 1");
    s.line = n;
    rows.push_back(s);
  }
  for (const auto& [dt, c] : other) skipped.push_back((dt.empty() ? std::string("(no dtype)") : dt) + ": " + std::to_string(c) + " rows");
  return rows;
}

double gemm_sample_bytes(const GemmSample& s) {
  return s.m * s.k * dtype_bytes(s.activations) + s.n * s.k * dtype_bytes(s.weights) + s.m * s.n * dtype_bytes(s.activations);
}

OpFigures op_figures(const Platform& p, DType t) {
  const ComputeRoof* r = p.roof_for(t);
  if (!r) throw std::runtime_error("platform '" + p.name + "' has no compute roof for " + dtype_name(t));
  if (p.memory.empty()) throw std::runtime_error("platform '" + p.name + "' has no memory level");
  if (p.sm_count < 1) throw std::runtime_error("platform '" + p.name + "' states no sm_count (the kernel models tile over the SMs): add `sm_count: N`");
  return {r->peak_flops_per_s, p.memory.front().bandwidth_bytes_per_s, p.sm_count};
}

namespace {

using Figures = OpFigures;
Figures figures(const Platform& p, DType t) { return op_figures(p, t); }

double bound_on(const GemmSample& s, const Figures& f) { return std::max(2 * s.m * s.n * s.k / f.peak, gemm_sample_bytes(s) / f.bandwidth); }

double predict_on(const GemmSample& s, const GemmParams& g, const Figures& f) {
  const bool narrower = dtype_bytes(s.compute) < dtype_bytes(s.activations);
  const GemmTime t = gemm_time(GemmShape{1, s.m, s.n, s.k}, gemm_sample_bytes(s), g, f.peak, f.bandwidth, f.sms, narrower ? s.m * s.k : 0);
  return std::max(t.time_s, bound_on(s, f));
}

// The fitted parameters from an unconstrained vector: efficiencies through a logistic, the rest exp
using Vec = FitVec;
double logistic(double x) { return 1 / (1 + std::exp(-x)); }
double logit(double p) { return std::log(p / (1 - p)); }
GemmParams from_vec(const Vec& x, bool prologue) {
  GemmParams g;
  g.compute_efficiency = logistic(x[0]);
  g.pipeline_fill = std::exp(x[1]);
  g.bandwidth_efficiency = logistic(x[2]);
  g.sm_bandwidth = std::exp(x[3]);
  g.floor_s = std::exp(x[4]) * 1e-6;
  g.wave_s = std::exp(x[5]) * 1e-6;
  if (prologue) g.prologue_bytes = std::exp(x[6]), g.prologue_floor_s = std::exp(x[7]) * 1e-6;
  return g;
}
Vec to_vec(const GemmParams& g) {
  auto l = [](double v) { return std::log(std::max(v, 1e-9)); };
  return {logit(std::clamp(g.compute_efficiency, 1e-6, 1 - 1e-6)), l(g.pipeline_fill), logit(std::clamp(g.bandwidth_efficiency, 1e-6, 1 - 1e-6)),
          l(g.sm_bandwidth), l(g.floor_s * 1e6), l(g.wave_s * 1e6), l(g.prologue_bytes), l(g.prologue_floor_s * 1e6)};
}

}  // namespace

// Nelder–Mead over the first `dims` coordinates of x, `iters` iterations
FitVec nelder_mead(const std::function<double(const Vec&)>& f, Vec x0, size_t dims, int iters) {
  std::vector<Vec> pts(dims + 1, x0);
  std::vector<double> val(dims + 1);
  for (size_t i = 0; i < dims; ++i) pts[i + 1][i] += 0.5;
  for (size_t i = 0; i <= dims; ++i) val[i] = f(pts[i]);
  std::vector<size_t> order(dims + 1);
  for (int it = 0; it < iters; ++it) {
    for (size_t i = 0; i <= dims; ++i) order[i] = i;
    std::sort(order.begin(), order.end(), [&](size_t a, size_t b) { return val[a] < val[b]; });
    const size_t best = order[0], worst = order[dims], second = order[dims - 1];
    Vec c{};
    for (size_t i = 0; i <= dims; ++i)
      if (i != worst)
        for (size_t j = 0; j < dims; ++j) c[j] += pts[i][j] / static_cast<double>(dims);
    auto along = [&](double t) {
      Vec y = pts[worst];
      for (size_t j = 0; j < dims; ++j) y[j] = c[j] + t * (pts[worst][j] - c[j]);
      return y;
    };
    const Vec r = along(-1);
    const double fr = f(r);
    if (fr < val[best]) {
      const Vec e = along(-2);
      const double fe = f(e);
      if (fe < fr) pts[worst] = e, val[worst] = fe;
      else pts[worst] = r, val[worst] = fr;
    } else if (fr < val[second]) {
      pts[worst] = r, val[worst] = fr;
    } else {
      const Vec k = along(0.5);
      const double fk = f(k);
      if (fk < val[worst]) {
        pts[worst] = k, val[worst] = fk;
      } else {
        for (size_t i = 0; i <= dims; ++i)
          if (i != best) {
            for (size_t j = 0; j < dims; ++j) pts[i][j] = pts[best][j] + 0.5 * (pts[i][j] - pts[best][j]);
            val[i] = f(pts[i]);
          }
      }
    }
  }
  size_t b = 0;
  for (size_t i = 1; i <= dims; ++i)
    if (val[i] < val[b]) b = i;
  return pts[b];
}

namespace {

// At most `cap` rows of `idx`, evenly spaced (a deterministic subsample for the optimiser)
std::vector<size_t> thin(const std::vector<size_t>& idx, size_t cap) {
  if (idx.size() <= cap) return idx;
  std::vector<size_t> out;
  out.reserve(cap);
  for (size_t i = 0; i < cap; ++i) out.push_back(idx[i * idx.size() / cap]);
  return out;
}

GemmParams fit_on(const std::vector<GemmSample>& rows, const std::vector<size_t>& idx, const Figures& fig, bool prologue, const GemmParams& start, int iters) {
  const std::vector<size_t> use = thin(idx, 4000);
  auto loss = [&](const Vec& x) {
    const GemmParams g = from_vec(x, prologue);
    double s = 0;
    for (size_t i : use) s += std::fabs(std::log(rows[i].measured_s / predict_on(rows[i], g, fig)));
    return use.empty() ? 0.0 : s / static_cast<double>(use.size());
  };
  const size_t dims = prologue ? 8 : 6;
  Vec x = nelder_mead(loss, to_vec(start), dims, iters);
  x = nelder_mead(loss, x, dims, iters / 2);  // a restart from the best point (Nelder–Mead stalls on a collapsed simplex)
  return from_vec(x, prologue);
}

}  // namespace

double gemm_bound(const GemmSample& s, const Platform& p) { return bound_on(s, figures(p, s.compute)); }
double predict_gemm(const GemmSample& s, const GemmParams& g, const Platform& p) { return predict_on(s, g, figures(p, s.compute)); }

ErrorStats error_stats(std::vector<double> r) {
  ErrorStats e;
  e.n = r.size();
  if (r.empty()) return e;
  std::sort(r.begin(), r.end());
  auto q = [&](double p) {  // linear interpolation between order statistics
    const double pos = p * static_cast<double>(r.size() - 1);
    const size_t lo = static_cast<size_t>(pos);
    const size_t hi = std::min(lo + 1, r.size() - 1);
    return r[lo] + (pos - static_cast<double>(lo)) * (r[hi] - r[lo]);
  };
  e.p10 = q(0.1), e.median = q(0.5), e.p90 = q(0.9);
  size_t a = 0, b = 0;
  for (double v : r) a += v <= 1.25 && v >= 1 / 1.25, b += v <= 1.5 && v >= 1 / 1.5;
  e.within_1_25 = static_cast<double>(a) / static_cast<double>(r.size());
  e.within_1_5 = static_cast<double>(b) / static_cast<double>(r.size());
  return e;
}

std::string gemm_variant_name(DType dtype, bool block) { return std::string(dtype_name(dtype)) + (block ? "_block" : ""); }

GemmFit fit_gemm(const std::vector<GemmSample>& all, DType dtype, const Platform& p, int folds, bool block) {
  GemmFit fit;
  fit.dtype = dtype, fit.block = block;
  std::vector<GemmSample> rows;
  for (const auto& s : all)
    if (s.compute == dtype && s.block == block) rows.push_back(s);
  fit.rows = rows.size();
  if (rows.empty()) return fit;
  const Figures fig = figures(p, dtype);
  const bool prologue = dtype_bytes(rows.front().compute) < dtype_bytes(rows.front().activations);
  std::vector<size_t> fitted;  // rows no faster than the theoretical bound
  for (size_t i = 0; i < rows.size(); ++i) {
    if (rows[i].measured_s > 0 && rows[i].measured_s >= bound_on(rows[i], fig)) fitted.push_back(i);
    else ++fit.flagged;
  }
  GemmParams start;
  start.compute_efficiency = 0.8, start.pipeline_fill = 2, start.bandwidth_efficiency = 0.85, start.sm_bandwidth = 1.5;
  start.floor_s = 3e-6, start.wave_s = 0.3e-6;
  if (prologue) start.prologue_bytes = 4, start.prologue_floor_s = 3e-6;
  fit.params = fit_on(rows, fitted, fig, prologue, start, 800);
  std::vector<double> ratios;
  for (const auto& s : rows) ratios.push_back(s.measured_s / predict_on(s, fit.params, fig));
  fit.fitted = error_stats(ratios);
  if (folds > 1) {  // held out by weight shape: every (n, k) in one fold
    auto fold_of = [&](const GemmSample& s) {
      return static_cast<int>((static_cast<long long>(s.n) * 7919 + static_cast<long long>(s.k) * 104729) % folds);
    };
    fit.cv_predicted_s.assign(rows.size(), 0);
    for (int f = 0; f < folds; ++f) {
      std::vector<size_t> train;
      for (size_t i : fitted)
        if (fold_of(rows[i]) != f) train.push_back(i);
      const GemmParams g = fit_on(rows, train, fig, prologue, fit.params, 300);
      for (size_t i = 0; i < rows.size(); ++i)
        if (fold_of(rows[i]) == f) fit.cv_predicted_s[i] = predict_on(rows[i], g, fig);
    }
    std::vector<double> held;
    for (size_t i = 0; i < rows.size(); ++i) held.push_back(rows[i].measured_s / fit.cv_predicted_s[i]);
    fit.held_out = error_stats(held);
  }
  return fit;
}

namespace {

// The collective rows of an AIConfigurator comm table: nccl_perf (an op_name a row) or, `custom`,
// custom_allreduce_perf (every row TensorRT-LLM's own all-reduce); other ops or dtypes counted in skipped
std::vector<CollectiveSample> read_comm_table(const std::string& text, const std::string& path, std::vector<std::string>& skipped, bool custom) {
  std::istringstream in(text);
  std::array<size_t, 5> col{};  // op_name (custom: none), dtype, num_gpus, message_size, latency
  if (custom) {
    const std::array<size_t, 4> c =
        header_columns<4>(in, {{"allreduce_dtype", "num_gpus", "message_size", "latency"}}, path, "an AIConfigurator custom_allreduce_perf.csv");
    col = {SIZE_MAX, c[0], c[1], c[2], c[3]};
  } else {
    col = header_columns<5>(in, {{"op_name", "nccl_dtype", "num_gpus", "message_size", "latency"}}, path, "an AIConfigurator nccl_perf.csv");
  }
  std::string line;
  std::vector<CollectiveSample> rows;
  std::vector<std::pair<std::string, size_t>> other;
  size_t n = 1;
  while (std::getline(in, line)) {
    ++n;
    if (line.empty() || line == "\r") continue;
    const std::vector<std::string> f = split(line);
    const std::string op = custom ? "custom all-reduce" : col[0] < f.size() ? f[col[0]] : "", dt = col[1] < f.size() ? f[col[1]] : "";
    CollectiveSample s;
    const double elem = dt == "half" || dt == "bfloat16" || dt == "float16" ? 2 : dt == "int8" || dt == "fp8" ? 1 : dt == "float" || dt == "float32" ? 4 : 0;
    bool known = elem > 0;
    if (custom) s.kind = Collective::CustomAllReduce;
    else if (op == "all_reduce") s.kind = Collective::AllReduce;
    else if (op == "all_gather") s.kind = Collective::AllGather;
    else if (op == "reduce_scatter") s.kind = Collective::ReduceScatter;
    else if (op == "alltoall" || op == "all_to_all") s.kind = Collective::AllToAll;
    else known = false;
    if (!known) {
      const std::string key = op + " " + dt;
      auto it = std::find_if(other.begin(), other.end(), [&](const auto& o) { return o.first == key; });
      if (it == other.end()) other.emplace_back(key, 1);
      else ++it->second;
      continue;
    }
    const double gpus = number_at(f, col[2], "num_gpus", path, n);
    if (gpus < 2 || gpus > 1e6 || gpus != std::floor(gpus)) throw std::runtime_error(path + ":" + std::to_string(n) + ": num_gpus must be a whole number of at least 2");
    s.gpus = static_cast<long long>(gpus);
    s.bytes = number_at(f, col[3], "message_size", path, n) * elem;
    s.measured_s = number_at(f, col[4], "latency", path, n) * 1e-3;
    s.line = n;
    rows.push_back(s);
  }
  for (const auto& [k, c] : other) skipped.push_back(k + ": " + std::to_string(c) + " rows");
  return rows;
}

}  // namespace

std::vector<CollectiveSample> read_nccl_perf(const std::string& text, const std::string& path, std::vector<std::string>& skipped) {
  return read_comm_table(text, path, skipped, false);
}

std::vector<CollectiveSample> read_custom_allreduce_perf(const std::string& text, const std::string& path, std::vector<std::string>& skipped) {
  return read_comm_table(text, path, skipped, true);
}

namespace {
double link_bandwidth(const Platform& p, long long gpus) {
  const InterconnectLevel* l = p.link_for(gpus);
  if (!l) throw std::runtime_error("platform '" + p.name + "' states no interconnect: a collective model needs its links' bandwidth");
  return l->bandwidth_bytes_per_s;
}
}  // namespace

double predict_collective(const CollectiveSample& s, const CollectiveParams& c, const Platform& p) {
  return collective_time(c, s.kind, s.bytes, s.gpus, link_bandwidth(p, s.gpus));
}

CollectiveFit fit_collective(const std::vector<CollectiveSample>& all, Collective kind, const Platform& p) {
  CollectiveFit fit;
  fit.kind = kind;
  std::vector<CollectiveSample> rows;
  for (const auto& s : all)
    if (s.kind == kind && s.bytes > 0 && s.measured_s > 0) rows.push_back(s);
  fit.rows = rows.size();
  if (rows.empty()) return fit;
  auto params = [](const Vec& x) {
    CollectiveParams c;
    c.floor_s = std::exp(x[0]) * 1e-6, c.step_s = std::exp(x[1]) * 1e-6, c.bandwidth_efficiency = logistic(x[2]);
    c.bulk_efficiency = 2 * logistic(x[3]), c.bulk_latency_s = std::exp(x[4]) * 1e-6;
    return c;
  };
  auto fit_on_rows = [&](const std::vector<size_t>& use) {
    auto loss = [&](const Vec& x) {
      const CollectiveParams c = params(x);
      double s = 0;
      for (size_t i : use) s += std::fabs(std::log(rows[i].measured_s / predict_collective(rows[i], c, p)));
      return s / static_cast<double>(std::max<size_t>(use.size(), 1));
    };
    Vec x = nelder_mead(loss, Vec{std::log(5.0), std::log(1.0), logit(0.5), logit(0.45), std::log(50.0), 0, 0, 0}, 5, 800);
    return params(nelder_mead(loss, x, 5, 400));
  };
  std::vector<size_t> every(rows.size());
  for (size_t i = 0; i < rows.size(); ++i) every[i] = i;
  fit.params = fit_on_rows(every);
  std::vector<double> r, held;
  for (const auto& s : rows) r.push_back(s.measured_s / predict_collective(s, fit.params, p));
  fit.fitted = error_stats(r);
  std::vector<long long> counts;
  for (const auto& s : rows)
    if (std::find(counts.begin(), counts.end(), s.gpus) == counts.end()) counts.push_back(s.gpus);
  if (counts.size() > 1) {
    for (long long n : counts) {
      std::vector<size_t> train;
      for (size_t i = 0; i < rows.size(); ++i)
        if (rows[i].gpus != n) train.push_back(i);
      const CollectiveParams c = fit_on_rows(train);
      for (const auto& s : rows)
        if (s.gpus == n) held.push_back(s.measured_s / predict_collective(s, c, p));
    }
    fit.held_out = error_stats(held);
  }
  return fit;
}

std::string kernel_model_platform_yaml(const std::string& ptext, const std::string& name, const std::vector<GemmFit>& fits,
                                       const std::vector<CollectiveFit>& collectives, const std::string& source) {
  std::string out;
  std::istringstream in(ptext);
  std::string line;
  bool renamed = false;
  while (std::getline(in, line)) {
    if (!renamed && line.rfind("name:", 0) == 0) {
      out += "name: " + name + "\n";
      renamed = true;
      continue;
    }
    out += line + "\n";
  }
  if (!renamed) out = "name: " + name + "\n" + out;
  out += "# kernel_model: fitted by `rsim calibrate --ops` (docs/kernel-models.md). Per compute dtype, measured / predicted on the\n";
  out += "# rows fitted and held out by weight shape (n, k), 5 folds:\n";
  char buf[320];
  for (const auto& f : fits) {
    std::snprintf(buf, sizeof buf, "#   %s: %zu rows (%zu faster than the roofline bound, not fitted); median %.3f, within 1.25x %.1f %% (held out %.1f %%)\n",
                  gemm_variant_name(f.dtype, f.block).c_str(), f.rows, f.flagged, f.fitted.median, 100 * f.fitted.within_1_25, 100 * f.held_out.within_1_25);
    out += buf;
  }
  for (const auto& f : collectives) {
    std::snprintf(buf, sizeof buf, "#   %s: %zu rows; median %.3f, within 1.25x %.1f %% (each GPU count held out: %.1f %%)\n", collective_name(f.kind), f.rows,
                  f.fitted.median, 100 * f.fitted.within_1_25, 100 * f.held_out.within_1_25);
    out += buf;
  }
  out += "kernel_model:\n  source: \"" + source + "\"\n  basis: calibrated\n";
  if (!fits.empty()) out += "  gemm:\n";
  for (const auto& f : fits) out += "    " + gemm_variant_name(f.dtype, f.block) + ": " + gemm_params_yaml(f.params) + "\n";
  if (!collectives.empty()) out += "  collective:\n";
  for (const auto& f : collectives) out += std::string("    ") + collective_name(f.kind) + ": " + collective_params_yaml(f.params) + "\n";
  return out;
}

}  // namespace rsim::measure
