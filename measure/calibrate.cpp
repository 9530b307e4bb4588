#include "measure/calibrate.hpp"

#include <algorithm>
#include <array>
#include <cstdint>
#include <cmath>
#include <cstdio>
#include <set>
#include <stdexcept>

namespace rsim::measure {

namespace {

const std::vector<std::pair<std::string, std::vector<std::string>>>& classes() {
  static const std::vector<std::pair<std::string, std::vector<std::string>>> c = {
      // one class for every convolution: channels per group (g) tells depthwise (g = 1), grouped
      // and dense ones apart, so a network's depthwise layers are predicted from grouped ones elsewhere
      {"conv", {"conv2d", "conv_transpose2d", "depthwise_conv2d"}},
      {"matmul", {"linear", "matmul"}},
      // windowed pooling reads each input under every window that covers it, a global pool makes
      // one reduction pass: measured here, oneDNN's max pools run at 6–7 % of the probed bandwidth
      // whatever their size, global ones at 24–42 %; one law over both bent with size (bandwidth
      // efficiency ∝ bytes^-0.58) and missed VGG-16's larger and smaller max pools by 2.5× and 5×
      {"pooling", {"max_pool2d", "avg_pool2d"}},
      {"global pooling", {"global_avg_pool", "adaptive_avg_pool2d"}},
      {"normalization", {"batchnorm", "layernorm", "softmax"}},
      {"copy", {"concat", "transpose", "permute", "reshape_copy", "slice", "split", "upsample"}},
      {"elementwise", {"relu", "relu6", "leaky_relu", "sigmoid", "tanh", "gelu", "silu", "hardswish", "hardsigmoid", "add", "sub", "mul", "div"}}};
  return c;
}

std::vector<std::string> split_csv_line(const std::string& line) {
  std::vector<std::string> out;
  std::string cur;
  bool q = false;
  for (size_t i = 0; i < line.size(); ++i) {
    char c = line[i];
    if (q) {
      if (c == '"' && i + 1 < line.size() && line[i + 1] == '"') cur += '"', ++i;
      else if (c == '"') q = false;
      else cur += c;
    } else if (c == '"') {
      q = true;
    } else if (c == ',') {
      out.push_back(cur);
      cur.clear();
    } else {
      cur += c;
    }
  }
  out.push_back(cur);
  return out;
}

double to_d(const std::string& s) {
  if (s.empty()) return 0;
  try {
    return std::stod(s);
  } catch (...) {
    return 0;
  }
}

double quantile(std::vector<double> v, double q) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[std::min(v.size() - 1, static_cast<size_t>(q * static_cast<double>(v.size())))];
}

}  // namespace

std::string op_class(const std::string& op) {
  for (const auto& [c, ops] : classes())
    if (std::find(ops.begin(), ops.end(), op) != ops.end()) return c;
  return "other";
}

std::vector<std::string> class_ops(const std::string& cls) {
  for (const auto& [c, ops] : classes())
    if (c == cls) return ops;
  return {};
}

std::vector<Sample> read_measured_csv(const std::string& text, const std::string& name) {
  std::vector<Sample> out;
  size_t pos = 0;
  std::vector<std::string> header;
  std::map<std::string, size_t> col;
  auto need = [&](const char* c) {
    auto it = col.find(c);
    if (it == col.end()) throw std::runtime_error(name + ": no column '" + c + "' (is it a measured.csv written by rsim measure?)");
    return it->second;
  };
  size_t i_cpg = SIZE_MAX, i_level = SIZE_MAX;  // optional: measured.csv files of older rsim versions lack them
  size_t i_net = 0, i_op = 0, i_flops = 0, i_fx = 0, i_macs = 0, i_mx = 0, i_count = 0, i_bytes = 0, i_peak = 0, i_bw = 0, i_bound = 0, i_t = 0;
  while (pos < text.size()) {
    size_t nl = text.find('\n', pos);
    if (nl == std::string::npos) nl = text.size();
    std::string line = text.substr(pos, nl - pos);
    pos = nl + 1;
    if (line.empty()) continue;
    auto cells = split_csv_line(line);
    if (header.empty()) {
      header = cells;
      for (size_t i = 0; i < header.size(); ++i) col[header[i]] = i;
      i_net = need("network"), i_op = need("op"), i_flops = need("flops"), i_fx = need("flops_executed"), i_macs = need("macs"),
      i_mx = need("macs_executed"), i_count = need("mac_count"), i_bytes = need("bytes"), i_peak = need("derated_peak_flops_per_s"),
      i_bw = need("derated_bandwidth_bytes_per_s"), i_bound = need("bound"), i_t = need("measured_time_s");
      if (auto it = col.find("channels_per_group"); it != col.end()) i_cpg = it->second;
      if (auto it = col.find("memory_level"); it != col.end()) i_level = it->second;
      continue;
    }
    if (cells.size() < header.size()) continue;
    Sample s;
    s.network = cells[i_net];
    s.op = cells[i_op];
    bool executed = cells[i_count] == "executed";
    s.work = to_d(cells[executed ? i_fx : i_flops]);
    s.macs = to_d(cells[executed ? i_mx : i_macs]);
    s.bytes = to_d(cells[i_bytes]);
    s.peak = to_d(cells[i_peak]);
    s.bandwidth = to_d(cells[i_bw]);
    s.compute_bound = cells[i_bound] == "compute";
    s.measured_s = to_d(cells[i_t]);
    if (i_cpg != SIZE_MAX) s.cpg = to_d(cells[i_cpg]);
    if (i_level != SIZE_MAX) s.level = cells[i_level];
    if (s.measured_s > 0 && s.peak > 0 && s.bandwidth > 0) out.push_back(s);
  }
  return out;
}

PowerLaw fit_power_law(const std::vector<std::pair<double, double>>& xe) {
  PowerLaw p;
  std::vector<std::pair<double, double>> v;
  for (const auto& [x, e] : xe)
    if (x > 0 && e > 0 && std::isfinite(x) && std::isfinite(e)) v.emplace_back(std::log(x), std::log(e));
  if (v.empty()) return p;
  double n = static_cast<double>(v.size()), sx = 0, sy = 0;
  for (const auto& [x, y] : v) sx += x, sy += y;
  double mx = sx / n, my = sy / n, sxx = 0, sxy = 0;
  for (const auto& [x, y] : v) sxx += (x - mx) * (x - mx), sxy += (x - mx) * (y - my);
  p.b = sxx > 1e-12 ? sxy / sxx : 0;
  p.a = std::exp(my - p.b * mx);
  return p;
}

namespace {

// Weighted least squares of y = l + b·u + c·w on (u, w, y) triples; c only with use_g, b only when u varies.
PowerLaw solve_wls(const std::vector<std::array<double, 3>>& v, const std::vector<double>& wt, bool use_g) {
  double n = 0, mu = 0, mw = 0, my = 0;
  for (size_t i = 0; i < v.size(); ++i) n += wt[i], mu += wt[i] * v[i][0], mw += wt[i] * v[i][1], my += wt[i] * v[i][2];
  mu /= n, mw /= n, my /= n;
  double suu = 0, suw = 0, sww = 0, suy = 0, swy = 0;
  for (size_t i = 0; i < v.size(); ++i) {
    double u = v[i][0] - mu, w = v[i][1] - mw, y = v[i][2] - my;
    suu += wt[i] * u * u, suw += wt[i] * u * w, sww += wt[i] * w * w, suy += wt[i] * u * y, swy += wt[i] * w * y;
  }
  PowerLaw p;
  if (!use_g) {
    p.b = suu > 1e-12 ? suy / suu : 0;
    mw = 0;
  } else {  // normal equations, centred: [Suu Suw; Suw Sww] [b c]' = [Suy Swy]'
    double det = suu * sww - suw * suw;
    if (std::fabs(det) > 1e-9 * std::max(1.0, suu * sww)) {
      p.b = (suy * sww - swy * suw) / det;
      p.c = (swy * suu - suy * suw) / det;
    } else if (sww > 1e-12) {  // x and g move together: g alone
      p.c = swy / sww;
    }
  }
  p.a = std::exp(my - p.b * mu - p.c * mw);
  return p;
}

}  // namespace

PowerLaw fit_power_law_grouped(const std::vector<XGE>& xge) {
  std::vector<std::array<double, 3>> v;  // log x, log g (0 without groups), log e
  std::set<double> gs;
  for (const auto& p : xge)
    if (p.x > 0 && p.e > 0 && p.g >= 0 && std::isfinite(p.x) && std::isfinite(p.e) && std::isfinite(p.g)) {
      v.push_back({std::log(p.x), p.g > 0 ? std::log(p.g) : 0, std::log(p.e)});
      if (p.g > 0) gs.insert(p.g);
    }
  if (v.empty()) return {};
  const bool use_g = gs.size() >= 2;
  // Huber's M-estimate by iteratively reweighted least squares: a residual beyond log 1.5 (the
  // tolerance of the target) counts with weight log 1.5 / |residual|, so one layer on a slow
  // fallback kernel (a grouped conv oneDNN runs as a GEMM) cannot drag the law of the others.
  std::vector<double> wt(v.size(), 1.0);
  PowerLaw p = solve_wls(v, wt, use_g);
  for (int it = 0; it < 200; ++it) {
    for (size_t i = 0; i < v.size(); ++i) {
      double r = std::fabs(v[i][2] - std::log(p.a) - p.b * v[i][0] - (use_g ? p.c * v[i][1] : 0));
      wt[i] = r <= kHuber ? 1.0 : kHuber / r;
    }
    PowerLaw q = solve_wls(v, wt, use_g);
    bool done = std::fabs(std::log(q.a / p.a)) < 1e-13 && std::fabs(q.b - p.b) < 1e-13 && std::fabs(q.c - p.c) < 1e-13;
    p = q;
    if (done) break;
  }
  return p;
}

std::vector<CalibrationRule> fit_calibration(const std::vector<Sample>& samples) {
  std::vector<CalibrationRule> rules;
  std::set<std::string> seen;
  for (const auto& s : samples) seen.insert(op_class(s.op));
  for (const auto& [cls, ops] : classes()) {
    if (!seen.count(cls)) continue;
    std::vector<XGE> ce, be;
    std::vector<std::pair<std::string, std::vector<XGE>>> by_level;  // in order of first appearance
    for (const auto& s : samples) {
      if (op_class(s.op) != cls) continue;
      if (s.compute_bound && s.work > 0) {
        ce.push_back({s.macs > 0 ? s.macs : s.work, s.cpg, s.work / (s.peak * s.measured_s)});
      } else if (!s.compute_bound && s.bytes > 0) {
        XGE p{s.bytes, s.cpg, s.bytes / (s.bandwidth * s.measured_s)};
        be.push_back(p);
        if (s.level.empty()) continue;
        auto it = std::find_if(by_level.begin(), by_level.end(), [&](const auto& l) { return l.first == s.level; });
        if (it == by_level.end()) it = by_level.insert(by_level.end(), {s.level, {}});
        it->second.push_back(p);
      }
    }
    CalibrationRule r;
    r.name = cls;
    r.ops = ops;
    r.compute = fit_power_law_grouped(ce);
    r.bandwidth = fit_power_law_grouped(be);
    for (const auto& [level, pts] : by_level)
      if (pts.size() >= kLevelSamples && by_level.size() > 1) r.bandwidth_by_level.emplace_back(level, fit_power_law_grouped(pts));
    rules.push_back(r);
  }
  return rules;
}

double predict_s(const Sample& s, const std::vector<CalibrationRule>& rules) {
  double ec = 1, eb = 1;
  for (const auto& r : rules)
    if (std::find(r.ops.begin(), r.ops.end(), s.op) != r.ops.end()) {
      ec = r.compute.at(s.macs > 0 ? s.macs : s.work, s.cpg);
      eb = r.bandwidth_on(s.level).at(s.bytes, s.cpg);
    }
  return std::max(s.work / (s.peak * ec), s.bytes / (s.bandwidth * eb));
}

double remove_contention(double measured_s, const Contention& c) {
  if (!c.active() || !(measured_s > 0)) return measured_s;
  double lo = measured_s / c.slowdown, hi = measured_s;  // apply(t) ∈ [t, slowdown · t]
  for (int i = 0; i < 60 && hi - lo > 1e-15 * hi; ++i) {
    double mid = 0.5 * (lo + hi);
    (c.apply(mid) < measured_s ? lo : hi) = mid;
  }
  return 0.5 * (lo + hi);
}

double predict_s(const Sample& s, const Model& m) {
  double t = predict_s(s, m.rules);
  return (s.compute_bound ? m.contention.apply(t) : t) + m.overhead_s;
}

std::vector<double> overhead_grid() {
  std::vector<double> g{0};
  for (int i = 0; i <= 12; ++i) g.push_back(0.25e-6 * std::pow(2.0, i / 2.0));
  return g;
}

Model fit_model(const std::vector<Sample>& samples) {
  std::vector<Sample> run = samples;
  // the rules fitted on the times with the overhead and the contention taken out (a layer never
  // below a tenth of its measured time), and their loss
  auto fit = [&](double o, const Contention& c, double& loss) {
    for (size_t j = 0; j < samples.size(); ++j) {
      double t = std::max(samples[j].measured_s - o, 0.1 * samples[j].measured_s);
      run[j].measured_s = samples[j].compute_bound ? remove_contention(t, c) : t;
    }
    Model m{fit_calibration(run), c, o};
    loss = 0;
    for (const auto& s : samples) {
      double r = std::log(predict_s(s, m) / s.measured_s);
      loss += r * r;
    }
    return m;
  };
  // a candidate must beat the best by more than rounding: ties (e.g. two layers, which any
  // contention fits exactly) keep the first, i.e. no overhead, the least contention
  const double eps = 1e-12 * (1.0 + static_cast<double>(samples.size()));
  Model best;
  double best_loss = INFINITY;
  // by turns: the overhead with the contention found so far, then the contention with that
  // overhead, until neither changes (an overhead alone can imitate some contention, and back)
  for (int round = 0; round < 4; ++round) {
    const Model before = best;
    const Contention c0 = best.contention;
    for (double o : overhead_grid()) {
      double loss;
      Model m = fit(o, c0, loss);
      if (loss < best_loss - eps) best_loss = loss, best = std::move(m);
    }
    const double overhead = best.overhead_s;
    for (int k = 0; k <= 20; ++k) {
      Contention c;
      c.slowdown = 1 + 0.25 * k;
      for (int i = -16; i <= 24; ++i) {
        c.onset_s = 1e-3 * std::pow(2.0, i / 4.0);
        if (k == 0 && i > -16) break;  // slowdown 1: the onset does not matter
        double loss;
        Model m = fit(overhead, k == 0 ? Contention{} : c, loss);
        if (loss < best_loss - eps) best_loss = loss, best = std::move(m);
      }
    }
    if (round > 0 && best.overhead_s == before.overhead_s && best.contention.onset_s == before.contention.onset_s &&
        best.contention.slowdown == before.contention.slowdown)
      break;
  }
  if (!std::isfinite(best_loss)) best = Model{fit_calibration(samples), Contention{}, 0};
  return best;
}

CrossValidation cross_validate(const std::vector<Sample>& samples) {
  CrossValidation cv;
  std::vector<std::string> nets;
  for (const auto& s : samples)
    if (std::find(nets.begin(), nets.end(), s.network) == nets.end()) nets.push_back(s.network);
  if (nets.size() < 2) return cv;
  for (const auto& held : nets) {
    std::vector<Sample> train, test;
    for (const auto& s : samples) (s.network == held ? test : train).push_back(s);
    Model model = fit_model(train);
    CrossValidation::Fold f;
    f.network = held;
    std::vector<double> err, before;
    double sum_p = 0, sum_m = 0;
    size_t flop_layers = 0, within = 0;
    for (const auto& s : test) {
      double p = predict_s(s, model), p0 = predict_s(s, std::vector<CalibrationRule>{});
      cv.predictions.push_back({s.network, s.op, s.work, s.measured_s, p0, p});
      err.push_back(std::fabs(p / s.measured_s - 1));
      before.push_back(std::fabs(p0 / s.measured_s - 1));
      sum_p += p, sum_m += s.measured_s;
      if (s.work > 0) {
        ++flop_layers;
        double r = p / s.measured_s;
        within += r <= 1.5 && r >= 1 / 1.5;
      }
    }
    f.layers = test.size();
    f.median_err = quantile(err, 0.5);
    f.p90_err = quantile(err, 0.9);
    f.median_err_before = quantile(before, 0.5);
    f.within_1_5x = flop_layers ? static_cast<double>(within) / static_cast<double>(flop_layers) : 0;
    f.network_err = sum_m > 0 ? std::fabs(sum_p / sum_m - 1) : 0;
    cv.folds.push_back(f);
  }
  return cv;
}

std::string predictions_csv(const CrossValidation& cv) {
  std::string out = "network,op,class,flops,measured_s,uncalibrated_s,calibrated_s\n";
  char buf[128];
  auto cell = [](const std::string& t) {
    if (t.find_first_of(",\"\n") == std::string::npos) return t;
    std::string q = "\"";
    for (char c : t) q += c == '"' ? std::string("\"\"") : std::string(1, c);
    return q + "\"";
  };
  for (const auto& p : cv.predictions) {
    std::snprintf(buf, sizeof buf, ",%.9g,%.9g,%.9g,%.9g\n", p.work, p.measured_s, p.uncalibrated_s, p.calibrated_s);
    out += cell(p.network) + "," + cell(p.op) + "," + op_class(p.op) + buf;
  }
  return out;
}

std::string calibrated_platform_yaml(const std::string& text, const std::string& name, const std::vector<CalibrationRule>& rules,
                                     const std::string& fitted_from, const Contention& contention, double overhead_s) {
  std::string out;
  size_t pos = 0;
  bool named = false;
  while (pos < text.size()) {
    size_t nl = text.find('\n', pos);
    if (nl == std::string::npos) nl = text.size();
    std::string line = text.substr(pos, nl - pos);
    pos = nl + 1;
    if (!named && line.rfind("name:", 0) == 0) {
      line = "name: " + name;
      named = true;
    }
    if (overhead_s > 0 && line.rfind("launch_overhead:", 0) == 0) continue;  // replaced below
    out += line + "\n";
  }
  char buf[256];
  out += "# Calibrated by `rsim calibrate` from " + fitted_from + ": per op class, efficiency = a · x^b · g^c (clamped to (0, 1]),\n";
  out += "# x = the layer's MACs for compute (FLOPs without MACs), its bytes for bandwidth, g = its input channels per group\n";
  out += "# (grouped operators; factor 1 for the others); bandwidth_by_level: the bandwidth law of a memory level that\n";
  out += "# held enough of the class's memory-bound layers (others take bandwidth); derated_time_s carries it.\n";
  out += "calibration:\n";
  for (const auto& r : rules) {
    std::string ops;
    for (const auto& o : r.ops) ops += (ops.empty() ? "" : ", ") + o;
    std::snprintf(buf, sizeof buf, "  - {class: %s, ops: [%s], compute: [%.6g, %.6g, %.6g], bandwidth: [%.6g, %.6g, %.6g]", r.name.c_str(), ops.c_str(),
                  r.compute.a, r.compute.b, r.compute.c, r.bandwidth.a, r.bandwidth.b, r.bandwidth.c);
    out += buf;
    if (!r.bandwidth_by_level.empty()) {
      out += ", bandwidth_by_level: {";
      for (size_t i = 0; i < r.bandwidth_by_level.size(); ++i) {
        const auto& [level, law] = r.bandwidth_by_level[i];
        std::snprintf(buf, sizeof buf, "%s%s: [%.6g, %.6g, %.6g]", i ? ", " : "", level.c_str(), law.a, law.b, law.c);
        out += buf;
      }
      out += "}";
    }
    out += "}\n";
  }
  if (overhead_s > 0) {
    out += "# The fixed time of running a layer at all (a primitive's dispatch), fitted beside the laws; added per kernel.\n";
    std::snprintf(buf, sizeof buf, "launch_overhead: %.6g us\n", overhead_s * 1e6);
    out += buf;
  }
  if (contention.active()) {
    out += "# Long compute-bound layers slower than the class laws (time sharing with other work on the measured core,\n";
    out += "# or the layers' own slowdown): a compute-bound layer of derated time t takes t · (1 + (slowdown − 1) / (1 + (onset_s / t)^8)).\n";
    std::snprintf(buf, sizeof buf, "contention: {onset_s: %.6g, slowdown: %.6g}\n", contention.onset_s, contention.slowdown);
    out += buf;
  }
  return out;
}

}  // namespace rsim::measure
