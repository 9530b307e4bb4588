// rsim calibrate's fits: power laws (weighted, robust, with occupancy), rules per class and roof, the model, its cross-validation and error bands.
#include "measure/calibrate.hpp"
#include "measure/calibrate_detail.hpp"

#include <algorithm>
#include <array>
#include <cstdint>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <atomic>
#include <deque>
#include <set>
#include <thread>
#include <stdexcept>

namespace rsim::measure {

using namespace detail;

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

// Weighted least squares of y = l + b·u + c·w on (u, w, y) triples; c only with use_g, b only when u
// varies and not no_b. An exponent is fitted only over x (or g) spanning at least a factor of 2: over
// a narrower range (one layer's shape at a few batches, say) its slope is the noise between the
// times divided by almost nothing (an exponent of 60 once, and a = e^−1000 = 0), so that law is flat.
constexpr double kMinLogSpan = 0.6931471805599453;  // log 2
PowerLaw solve_wls(const std::vector<std::array<double, 3>>& v, const std::vector<double>& wt, bool use_g, bool no_b = false) {
  {
    double ulo = INFINITY, uhi = -INFINITY, wlo = INFINITY, whi = -INFINITY;
    for (size_t i = 0; i < v.size(); ++i)
      if (wt[i] > 0) ulo = std::min(ulo, v[i][0]), uhi = std::max(uhi, v[i][0]), wlo = std::min(wlo, v[i][1]), whi = std::max(whi, v[i][1]);
    if (!(uhi - ulo >= kMinLogSpan)) no_b = true;
    if (!(whi - wlo >= kMinLogSpan)) use_g = false;
  }
  double n = 0, mu = 0, mw = 0, my = 0;
  for (size_t i = 0; i < v.size(); ++i) n += wt[i], mu += wt[i] * v[i][0], mw += wt[i] * v[i][1], my += wt[i] * v[i][2];
  mu /= n, mw /= n, my /= n;
  double suu = 0, suw = 0, sww = 0, suy = 0, swy = 0;
  for (size_t i = 0; i < v.size(); ++i) {
    double u = v[i][0] - mu, w = v[i][1] - mw, y = v[i][2] - my;
    suu += wt[i] * u * u, suw += wt[i] * u * w, sww += wt[i] * w * w, suy += wt[i] * u * y, swy += wt[i] * w * y;
  }
  PowerLaw p;
  if (no_b) {
    if (use_g && sww > 1e-12) p.c = swy / sww;
    else mw = 0;
  } else if (!use_g) {
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

namespace {

PowerLaw fit_robust(const std::vector<std::array<double, 3>>& v, bool use_g, bool no_b) {
  // Huber's M-estimate by iteratively reweighted least squares: a residual beyond log 1.5 (the
  // tolerance of the target) counts with weight log 1.5 / |residual|, so one layer on a slow
  // fallback kernel (a grouped conv oneDNN runs as a GEMM) cannot drag the law of the others.
  std::vector<double> wt(v.size(), 1.0);
  PowerLaw p = solve_wls(v, wt, use_g, no_b);
  for (int it = 0; it < 200; ++it) {
    for (size_t i = 0; i < v.size(); ++i) {
      double r = std::fabs(v[i][2] - std::log(p.a) - p.b * v[i][0] - (use_g ? p.c * v[i][1] : 0));
      wt[i] = r <= kHuber ? 1.0 : kHuber / r;
    }
    PowerLaw q = solve_wls(v, wt, use_g, no_b);
    bool done = std::fabs(std::log(q.a / p.a)) < 1e-13 && std::fabs(q.b - p.b) < 1e-13 && std::fabs(q.c - p.c) < 1e-13;
    p = q;
    if (done) break;
  }
  return p;
}

}  // namespace

PowerLaw fit_power_law_grouped(const std::vector<XGE>& xge, bool nonnegative_b) {
  std::vector<std::array<double, 3>> v;  // log x, log g (0 without groups), log e
  std::set<double> gs;
  for (const auto& p : xge)
    if (p.x > 0 && p.e > 0 && p.g >= 0 && std::isfinite(p.x) && std::isfinite(p.e) && std::isfinite(p.g)) {
      v.push_back({std::log(p.x), p.g > 0 ? std::log(p.g) : 0, std::log(p.e)});
      if (p.g > 0) gs.insert(p.g);
    }
  if (v.empty()) return {};
  const bool use_g = gs.size() >= 2;
  PowerLaw p = fit_robust(v, use_g, false);
  if (nonnegative_b && p.b < 0) p = fit_robust(v, use_g, true);  // (a law that loses efficiency with size: flat)
  return p;
}

namespace {

// Weighted least squares of y = l + Σ β_j · z_j over the columns `cols` of v (z = v[0..2], y = v[3]),
// by the centred normal equations and Gaussian elimination; false when they are singular.
bool solve_columns(const std::vector<std::array<double, 4>>& v, const std::vector<double>& wt, const std::vector<int>& cols, double& l,
                   std::array<double, 3>& beta) {
  const size_t k = cols.size();
  double n = 0;
  std::array<double, 4> mean{};
  for (size_t i = 0; i < v.size(); ++i) {
    n += wt[i];
    for (int j = 0; j < 4; ++j) mean[static_cast<size_t>(j)] += wt[i] * v[i][static_cast<size_t>(j)];
  }
  if (!(n > 0)) return false;
  for (double& m : mean) m /= n;
  double a[3][4] = {};  // [S | s_y]
  for (size_t i = 0; i < v.size(); ++i)
    for (size_t r = 0; r < k; ++r) {
      const double zr = v[i][static_cast<size_t>(cols[r])] - mean[static_cast<size_t>(cols[r])];
      for (size_t c = 0; c < k; ++c) a[r][c] += wt[i] * zr * (v[i][static_cast<size_t>(cols[c])] - mean[static_cast<size_t>(cols[c])]);
      a[r][k] += wt[i] * zr * (v[i][3] - mean[3]);
    }
  double scale = 1e-300;
  for (size_t r = 0; r < k; ++r) scale = std::max(scale, std::fabs(a[r][r]));
  for (size_t c = 0; c < k; ++c) {
    size_t piv = c;
    for (size_t r = c + 1; r < k; ++r)
      if (std::fabs(a[r][c]) > std::fabs(a[piv][c])) piv = r;
    if (std::fabs(a[piv][c]) < 1e-10 * scale) return false;
    std::swap(a[piv], a[c]);
    for (size_t r = 0; r < k; ++r) {
      if (r == c) continue;
      const double f = a[r][c] / a[c][c];
      for (size_t cc = c; cc <= k; ++cc) a[r][cc] -= f * a[c][cc];
    }
  }
  beta = {0, 0, 0};
  l = mean[3];
  for (size_t r = 0; r < k; ++r) {
    beta[static_cast<size_t>(cols[r])] = a[r][k] / a[r][r];
    l -= beta[static_cast<size_t>(cols[r])] * mean[static_cast<size_t>(cols[r])];
  }
  return true;
}

// Huber's loss of a residual (squares up to kHuber, linear beyond)
double huber(double r) {
  r = std::fabs(r);
  return r <= kHuber ? 0.5 * r * r : kHuber * r - 0.5 * kHuber * kHuber;
}

// Huber's M-estimate of y = l + Σ β_j · z_j by iteratively reweighted least squares; the loss
// (Σ huber) or infinity when singular.
double fit_columns_robust(const std::vector<std::array<double, 4>>& v, const std::vector<int>& cols, double& l, std::array<double, 3>& beta) {
  std::vector<double> wt(v.size(), 1.0);
  if (!solve_columns(v, wt, cols, l, beta)) return INFINITY;
  auto residual = [&](const std::array<double, 4>& p) { return p[3] - l - beta[0] * p[0] - beta[1] * p[1] - beta[2] * p[2]; };
  for (int it = 0; it < 200; ++it) {
    for (size_t i = 0; i < v.size(); ++i) {
      const double r = std::fabs(residual(v[i]));
      wt[i] = r <= kHuber ? 1.0 : kHuber / r;
    }
    double l2 = 0;
    std::array<double, 3> b2{};
    if (!solve_columns(v, wt, cols, l2, b2)) break;
    const bool done = std::fabs(l2 - l) < 1e-13 && std::fabs(b2[0] - beta[0]) < 1e-13 && std::fabs(b2[1] - beta[1]) < 1e-13 && std::fabs(b2[2] - beta[2]) < 1e-13;
    l = l2, beta = b2;
    if (done) break;
  }
  double loss = 0;
  for (const auto& p : v) loss += huber(residual(p));
  return loss;
}

}  // namespace

PowerLaw fit_power_law_occupancy(const std::vector<XGE>& xge, bool nonnegative_b) {
  PowerLaw base = fit_power_law_grouped(xge, nonnegative_b);
  std::vector<std::array<double, 4>> v;  // log x, log g, log min(1, p / p_sat), log e
  std::vector<double> ps;
  std::set<double> gs, distinct;
  for (const auto& q : xge) {
    if (!(q.x > 0 && q.e > 0 && q.g >= 0 && std::isfinite(q.x) && std::isfinite(q.e) && std::isfinite(q.g))) continue;
    if (!(q.p > 0) || !std::isfinite(q.p)) return base;  // a point of unknown occupancy: none fitted
    v.push_back({std::log(q.x), q.g > 0 ? std::log(q.g) : 0, 0, std::log(q.e)});
    ps.push_back(q.p);
    distinct.insert(q.p);
    if (q.g > 0) gs.insert(q.g);
  }
  if (v.size() < kOccupancySamples || distinct.size() < 3) return base;
  const bool use_g = gs.size() >= 2;
  const double n = static_cast<double>(v.size());
  double loss0 = 0;
  for (const auto& p : v) loss0 += huber(p[3] - std::log(base.a) - base.b * p[0] - (use_g ? base.c * p[1] : 0));
  if (!(loss0 > 1e-20 * n)) return base;  // (the law alone is exact)
  PowerLaw best = base;
  double best_loss = loss0 * std::exp(-2 * std::log(n) / n);  // what the occupancy factor must beat (the criterion)
  const double p_min = *distinct.begin(), p_max = *distinct.rbegin();
  double xlo = INFINITY, xhi = -INFINITY;  // (x's exponent only over a span of x: solve_wls)
  for (const auto& p : v) xlo = std::min(xlo, p[0]), xhi = std::max(xhi, p[0]);
  const bool x_varies = xhi - xlo >= kMinLogSpan;
  for (int i = 1;; ++i) {
    const double sat = p_min * std::pow(2.0, i / 4.0);
    if (sat > p_max) break;
    for (size_t j = 0; j < v.size(); ++j) v[j][2] = std::log(std::min(1.0, ps[j] / sat));
    std::vector<int> cols{0, 2};
    if (use_g) cols = {0, 1, 2};
    if (!x_varies) cols.erase(cols.begin());
    double l = 0;
    std::array<double, 3> beta{};
    double loss = fit_columns_robust(v, cols, l, beta);
    if (x_varies && nonnegative_b && beta[0] < 0) {  // (no slowdown with size: flat in x)
      cols.erase(cols.begin());
      loss = fit_columns_robust(v, cols, l, beta);
    }
    if (!(beta[2] > 1e-6) || beta[2] > 4 || !(loss < best_loss) || !std::isfinite(l)) continue;
    best_loss = loss;
    best = PowerLaw{};
    best.a = std::exp(l), best.b = beta[0], best.c = use_g ? beta[1] : 0, best.d = beta[2], best.p_sat = sat;
    best.p_lo = p_min, best.p_hi = p_max;  // (fewer outputs than any point: the factor at p_min)
  }
  return best;
}

namespace detail {

// One rule per class and compute roof (the roofs in order of first appearance), each fitted on its
// samples: the compute law over the compute-bound ones, the bandwidth law over the memory-bound
// ones, and a law per memory level that holds at least kLevelSamples of those.
// (gpu: laws that never lose efficiency with size, and the compute law's occupancy factor)
CalibrationRule fit_rule(const std::string& cls, const std::string& roof, const std::vector<const Sample*>& samples, bool gpu) {
  const bool nonnegative_b = gpu;
  std::vector<XGE> ce, be;
  std::vector<std::pair<std::string, std::vector<XGE>>> by_level;  // in order of first appearance
  for (const Sample* sp : samples) {
    const Sample& s = *sp;
    if (s.compute_bound && s.work > 0) {
      ce.push_back({s.macs > 0 ? s.macs : s.work, s.cpg, s.work / (s.peak * s.measured_s), s.outputs});
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
  r.ops = class_ops(cls);
  r.roof = roof;
  r.compute = gpu ? fit_power_law_occupancy(ce, nonnegative_b) : fit_power_law_grouped(ce, nonnegative_b);
  r.bandwidth = fit_power_law_grouped(be, nonnegative_b);
  for (const auto& [level, pts] : by_level)
    if (pts.size() >= kLevelSamples && by_level.size() > 1) r.bandwidth_by_level.emplace_back(level, fit_power_law_grouped(pts, nonnegative_b));
  return r;
}

// The samples of each class and roof, in the order of classes() and of the roofs' first appearance.
std::vector<std::pair<std::pair<std::string, std::string>, std::vector<const Sample*>>> by_class_and_roof(const std::vector<Sample>& samples) {
  std::vector<std::pair<std::pair<std::string, std::string>, std::vector<const Sample*>>> groups;
  std::vector<std::string> roofs;
  for (const auto& s : samples)
    if (std::find(roofs.begin(), roofs.end(), s.roof) == roofs.end()) roofs.push_back(s.roof);
  for (const auto& [cls, ops] : classes())
    for (const auto& roof : roofs) {
      std::vector<const Sample*> v;
      for (const auto& s : samples)
        if (s.roof == roof && std::find(ops.begin(), ops.end(), s.op) != ops.end()) v.push_back(&s);
      if (!v.empty()) groups.push_back({{cls, roof}, std::move(v)});
    }
  return groups;
}

const CalibrationRule* rule_for(const std::vector<CalibrationRule>& rules, const std::string& op, const std::string& roof) {
  const CalibrationRule* any = nullptr;
  for (const auto& r : rules) {
    if (std::find(r.ops.begin(), r.ops.end(), op) == r.ops.end()) continue;
    if (r.roof == roof) return &r;
    if (r.roof.empty() && !any) any = &r;
  }
  return any;
}

}  // namespace detail

std::vector<CalibrationRule> fit_calibration(const std::vector<Sample>& samples) {
  std::vector<CalibrationRule> rules;
  for (const auto& [key, v] : by_class_and_roof(samples)) rules.push_back(fit_rule(key.first, key.second, v));
  return rules;
}

double predict_s(const Sample& s, const std::vector<CalibrationRule>& rules) {
  double ec = 1, eb = 1;
  if (const CalibrationRule* r = rule_for(rules, s.op, s.roof)) {
    ec = r->compute.at(s.macs > 0 ? s.macs : s.work, s.cpg, s.outputs);
    eb = r->bandwidth_on(s.level).at(s.bytes, s.cpg);
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

namespace {

// A fit searches overheads and contentions, each a robust fit of every class: its cost grows with
// the rows. Past kMaxFitRows the fit takes every k-th row (in file order: every network and class
// keeps its share), so a file of 10^6 layers fits in seconds, and the laws of 20,000 layers are
// as good as those of all of them.
// The search over overheads and contentions (hundreds of candidate fits) runs on at most
// kSearchRows of those, spread the same way; the laws at the overhead and contention it finds are
// then fitted on all kMaxFitRows.
constexpr size_t kMaxFitRows = 20000, kSearchRows = 2000;

std::vector<Sample> thinned(const std::vector<Sample>& v, size_t cap = kMaxFitRows) {
  if (v.size() <= cap) return v;
  const size_t k = (v.size() + cap - 1) / cap;
  std::vector<Sample> out;
  out.reserve(v.size() / k + 1);
  for (size_t i = 0; i < v.size(); i += k) out.push_back(v[i]);
  return out;
}

}  // namespace

Model fit_model(const std::vector<Sample>& all_samples) {
  const std::vector<Sample> kept = thinned(all_samples);
  const std::vector<Sample> samples = thinned(kept, kSearchRows);
  std::vector<Sample> run = samples;
  // the rules fitted on the times with the overhead and the contention taken out (a layer never
  // below a tenth of its measured time), and their loss
  auto fit = [&](double o, const Contention& c, double& loss) {
    for (size_t j = 0; j < samples.size(); ++j) {
      double t = std::max(samples[j].measured_s - o, 0.1 * samples[j].measured_s);
      run[j].measured_s = samples[j].compute_bound ? remove_contention(t, c) : t;
    }
    Model m;
    m.rules = fit_calibration(run), m.contention = c, m.overhead_s = o;
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
  if (!std::isfinite(best_loss)) best = Model{}, best.rules = fit_calibration(samples);
  // the times the rules are fitted on (overhead and contention out), over every row kept: the
  // laws, their ranges and the transfers
  run = kept;
  for (size_t j = 0; j < kept.size(); ++j) {
    double t = std::max(kept[j].measured_s - best.overhead_s, 0.1 * kept[j].measured_s);
    run[j].measured_s = kept[j].compute_bound ? remove_contention(t, best.contention) : t;
  }
  if (kept.size() > samples.size() && std::isfinite(best_loss)) best.rules = fit_calibration(run);
  complete_rules(best.rules, run);
  return best;
}

Model fit_laws_at(const std::vector<Sample>& all_samples, double overhead_s, const Contention& contention) {
  std::vector<Sample> run = thinned(all_samples);
  for (auto& s : run) {
    const double t = std::max(s.measured_s - overhead_s, 0.1 * s.measured_s);
    s.measured_s = s.compute_bound ? remove_contention(t, contention) : t;
  }
  Model m;
  m.overhead_s = overhead_s, m.contention = contention;
  m.rules = fit_calibration(run);
  complete_rules(m.rules, run);
  return m;
}

namespace {

// The range of x (MACs or FLOPs for compute, bytes for bandwidth) and g of one side's samples.
void set_ranges(PowerLaw& law, const std::vector<const Sample*>& v, bool compute) {
  law.x_lo = law.x_hi = law.g_lo = law.g_hi = 0;
  for (const Sample* s : v) {
    const double x = compute ? (s->macs > 0 ? s->macs : s->work) : s->bytes;
    if (x > 0) law.x_lo = law.x_lo > 0 ? std::min(law.x_lo, x) : x, law.x_hi = std::max(law.x_hi, x);
    if (s->cpg > 0) law.g_lo = law.g_lo > 0 ? std::min(law.g_lo, s->cpg) : s->cpg, law.g_hi = std::max(law.g_hi, s->cpg);
  }
  law.p_lo = law.p_hi = 0;
  if (law.has_occupancy())
    for (const Sample* s : v)
      if (s->outputs > 0) law.p_lo = law.p_lo > 0 ? std::min(law.p_lo, s->outputs) : s->outputs, law.p_hi = std::max(law.p_hi, s->outputs);
}

// Each bandwidth_by_level law: the range of the memory-bound layers bounded on its level.
void set_level_ranges(CalibrationRule& r, const std::vector<const Sample*>& memory_bound) {
  for (auto& [level, law] : r.bandwidth_by_level) {
    std::vector<const Sample*> on;
    for (const Sample* s : memory_bound)
      if (s->level == level) on.push_back(s);
    set_ranges(law, on, false);
  }
}

}  // namespace

void complete_rules(std::vector<CalibrationRule>& rules, const std::vector<Sample>& fitted) {
  std::vector<std::string> roofs;
  for (const auto& s : fitted)
    if (std::find(roofs.begin(), roofs.end(), s.roof) == roofs.end()) roofs.push_back(s.roof);
  for (const auto& roof : roofs) {
    // every class's layers on this roof, by side; the pooled laws of each side (g left out: the
    // classes they go to group channels differently, or not at all)
    std::vector<Sample> pooled;
    for (const auto& s : fitted)
      if (s.roof == roof && op_class(s.op) != "other") pooled.push_back(s), pooled.back().cpg = 0;
    std::vector<const Sample*> pc, pb, all;
    for (const auto& s : pooled) {
      all.push_back(&s);
      (s.compute_bound ? pc : pb).push_back(&s);
    }
    CalibrationRule pool = fit_rule("pooled", roof, all);
    set_ranges(pool.compute, pc, true);
    set_ranges(pool.bandwidth, pb, false);
    set_level_ranges(pool, pb);
    // 1. each fitted rule: its laws bounded to the layers they were fitted on; a side without
    // layers takes the pooled law of that side
    for (auto& r : rules) {
      if (r.roof != roof || r.extrapolated) continue;
      std::vector<const Sample*> c, b;
      for (const auto& s : fitted)
        if (s.roof == roof && std::find(r.ops.begin(), r.ops.end(), s.op) != r.ops.end()) {
          if (s.compute_bound && s.work > 0) c.push_back(&s);
          else if (!s.compute_bound && s.bytes > 0) b.push_back(&s);
        }
      if (c.empty() && !pc.empty()) {
        r.compute = pool.compute;
        r.extrapolated_compute = true;
      } else {
        set_ranges(r.compute, c, true);
      }
      if (b.empty() && !pb.empty()) {
        r.bandwidth = pool.bandwidth;
        r.bandwidth_by_level = pool.bandwidth_by_level;
        r.extrapolated_bandwidth = true;
      } else {
        set_ranges(r.bandwidth, b, false);
        set_level_ranges(r, b);
      }
      if (r.extrapolated_compute && r.extrapolated_bandwidth) r.extrapolated = true, r.extrapolated_compute = r.extrapolated_bandwidth = false;
    }
    // 2. every class without a rule on this roof: the pooled laws, extrapolated
    if (all.empty()) continue;
    for (const auto& cls : class_names()) {
      const std::vector<std::string> ops = class_ops(cls);
      if (std::any_of(rules.begin(), rules.end(), [&](const CalibrationRule& r) { return r.roof == roof && r.name == cls; })) continue;
      CalibrationRule r = pool;
      r.name = cls;
      r.ops = ops;
      r.extrapolated = true;
      rules.push_back(std::move(r));
    }
  }
}

bool extrapolated_for(const Sample& s, const std::vector<CalibrationRule>& rules) {
  const CalibrationRule* r = rule_for(rules, s.op, s.roof);
  if (!r) return false;  // an operator of no class: the roofline, not a transfer
  if (r->extrapolated) return true;
  if (s.compute_bound) return r->extrapolated_compute || r->compute.beyond(s.macs > 0 ? s.macs : s.work, s.cpg, s.outputs);
  return r->extrapolated_bandwidth || r->bandwidth_on(s.level).beyond(s.bytes, s.cpg);
}

CrossValidation cross_validate(const std::vector<Sample>& samples, const std::function<void(size_t, size_t)>& progress, const Model* full) {
  CrossValidation cv;
  std::vector<std::string> nets;
  std::map<std::string, std::vector<size_t>> rows_of;  // each network's samples, in order
  for (size_t i = 0; i < samples.size(); ++i) {
    auto [it, fresh] = rows_of.try_emplace(samples[i].network);
    if (fresh) nets.push_back(samples[i].network);
    it->second.push_back(i);
  }
  if (nets.size() < 2) return cv;
  // up to kMaxFolds networks: each held out alone, and every ordered pair; more: the networks in
  // kMaxFolds folds (network i in fold i mod kMaxFolds), each fold held out at once, no pairs
  const bool grouped = nets.size() > kMaxFolds;
  std::vector<std::vector<std::string>> folds;
  for (size_t i = 0; i < nets.size(); ++i) {
    if (!grouped) folds.push_back({nets[i]});
    else if (i < kMaxFolds) folds.push_back({nets[i]});
    else folds[i % kMaxFolds].push_back(nets[i]);
  }
  cv.grouped_networks = grouped ? nets.size() : 0;
  const size_t steps = folds.size() + (grouped ? 0 : nets.size());
  size_t step = 0;
  // grouped: each fold's laws at the overhead and contention of the fit on everything (a platform's,
  // which a twelfth of the networks barely moves; searching them again is hundreds of fits a fold)
  Model everything;
  if (grouped && !full) everything = fit_model(samples), full = &everything;
  std::vector<size_t> fold_of(samples.size()), fold_rows(folds.size(), 0);
  {
    std::map<std::string, size_t> fold_of_net;
    for (size_t fi = 0; fi < folds.size(); ++fi)
      for (const auto& n : folds[fi]) fold_of_net[n] = fi;
    for (size_t i = 0; i < samples.size(); ++i) ++fold_rows[fold_of[i] = fold_of_net.at(samples[i].network)];
  }
  for (size_t fi = 0; fi < folds.size(); ++fi) {
    if (progress) progress(step++, steps);
    // the other folds' rows (grouped, past kMaxFitRows: every k-th of them, as the fit would keep)
    const size_t n_train = samples.size() - fold_rows[fi];
    const size_t k = grouped ? std::max<size_t>(1, (n_train + kMaxFitRows - 1) / kMaxFitRows) : 1;
    std::vector<Sample> train;
    std::vector<const Sample*> test;
    size_t seen = 0;
    for (size_t i = 0; i < samples.size(); ++i) {
      if (fold_of[i] == fi) test.push_back(&samples[i]);
      else if (seen++ % k == 0) train.push_back(samples[i]);
    }
    Model model = grouped ? fit_laws_at(train, full->overhead_s, full->contention) : fit_model(train);
    CrossValidation::Fold f;
    f.network = folds[fi][0];
    if (grouped)
      f.network = "fold " + std::to_string(fi + 1) + " of " + std::to_string(folds.size()) + " (" +
                  (folds[fi].size() == 1 ? folds[fi][0] + ")" : std::to_string(folds[fi].size()) + " networks: " + folds[fi][0] + ", " + folds[fi][1] + ", …)");
    std::vector<double> err, before;
    double sum_p = 0, sum_m = 0;
    size_t flop_layers = 0, within = 0;
    for (const Sample* sp : test) {
      const Sample& s = *sp;
      double p = predict_s(s, model), p0 = predict_s(s, std::vector<CalibrationRule>{});
      const bool ex = extrapolated_for(s, model.rules);
      cv.predictions.push_back({s.network, s.op, s.work, s.measured_s, p0, p, ex});
      f.extrapolated += ex;
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
  // each network predicted by a fit on one other network alone
  if (grouped) return cv;
  for (const auto& from : nets) {
    if (progress) progress(step++, steps);
    std::vector<Sample> train;
    for (size_t i : rows_of.at(from)) train.push_back(samples[i]);
    Model model = fit_model(train);
    for (const auto& to : nets) {
      if (to == from) continue;
      CrossValidation::Pair pr;
      pr.fit_on = from, pr.predicted = to;
      double sum_p = 0, sum_m = 0;
      size_t flop_layers = 0, within = 0;
      for (size_t i : rows_of.at(to)) {
        const Sample& s = samples[i];
        ++pr.layers;
        const double p = predict_s(s, model);
        sum_p += p, sum_m += s.measured_s;
        pr.extrapolated += extrapolated_for(s, model.rules);
        if (s.work > 0) {
          ++flop_layers;
          const double r = p / s.measured_s;
          within += r <= 1.5 && r >= 1 / 1.5;
        }
      }
      pr.within_1_5x = flop_layers ? static_cast<double>(within) / static_cast<double>(flop_layers) : 0;
      pr.network_err = sum_m > 0 ? std::fabs(sum_p / sum_m - 1) : 0;
      cv.pairs.push_back(pr);
    }
  }
  return cv;
}

double percentile_linear(std::vector<double> v, double q) {
  if (v.empty()) return NAN;
  std::sort(v.begin(), v.end());
  const double at = q * static_cast<double>(v.size() - 1);
  const size_t i = static_cast<size_t>(std::floor(at));
  if (i + 1 >= v.size()) return v.back();
  return v[i] + (at - static_cast<double>(i)) * (v[i + 1] - v[i]);
}

void set_error_bands(std::vector<CalibrationRule>& rules, const CrossValidation& cv) {
  std::map<std::string, std::vector<double>> ratios;  // per class: measured / predicted
  for (const auto& p : cv.predictions)
    if (p.calibrated_s > 0 && p.measured_s > 0) ratios[op_class(p.op)].push_back(p.measured_s / p.calibrated_s);
  for (CalibrationRule& r : rules) {
    auto it = ratios.find(r.name);
    if (it == ratios.end() || it->second.size() < 5) continue;
    r.band = true;
    r.error_lo = percentile_linear(it->second, 0.1), r.error_hi = percentile_linear(it->second, 0.9);
  }
}

void set_error_bands(std::vector<CalibrationRule>& rules, const std::vector<double>& ratios) {
  if (ratios.size() < 3) return;
  const double lo = percentile_linear(ratios, 0.1), hi = percentile_linear(ratios, 0.9);
  for (CalibrationRule& r : rules) r.band = true, r.error_lo = lo, r.error_hi = hi;
}

std::string predictions_csv(const CrossValidation& cv) {
  std::string out = "network,op,class,flops,measured_s,uncalibrated_s,calibrated_s,extrapolated\n";
  char buf[128];
  auto cell = [](const std::string& t) {
    if (t.find_first_of(",\"\n") == std::string::npos) return t;
    std::string q = "\"";
    for (char c : t) q += c == '"' ? std::string("\"\"") : std::string(1, c);
    return q + "\"";
  };
  for (const auto& p : cv.predictions) {
    std::snprintf(buf, sizeof buf, ",%.9g,%.9g,%.9g,%.9g,%s\n", p.work, p.measured_s, p.uncalibrated_s, p.calibrated_s, p.extrapolated ? "true" : "false");
    out += cell(p.network) + "," + cell(p.op) + "," + op_class(p.op) + buf;
  }
  return out;
}

}  // namespace rsim::measure
