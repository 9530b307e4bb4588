// rsim calibrate of GPU measurements: rules with host overheads, the runtime from whole networks, each network predicted without itself.
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

namespace {

// The fixed times a rule's fit tries: 0, then 0.25 µs · 2^(i/4), i = 0 … 40 (0.25 µs … 256 µs).
std::vector<double> fixed_time_grid() {
  std::vector<double> g{0};
  for (int i = 0; i <= 40; ++i) g.push_back(0.25e-6 * std::pow(2.0, i / 4.0));
  return g;
}

double rule_time(const Sample& s, const CalibrationRule& r) {
  const double ec = r.compute.at(s.macs > 0 ? s.macs : s.work, s.cpg, s.outputs), eb = r.bandwidth_on(s.level).at(s.bytes, s.cpg);
  return std::max(s.work / (s.peak * ec), s.bytes / (s.bandwidth * eb));
}

// A class's rule on one roof with the fixed time each of its layers took beside its work (the
// host's time to issue it, for layers timed one by one in eager mode): the pair with the least
// squares of log(predicted / measured), the laws fitted on the times with that fixed time taken
// out (a layer never below a tenth of its measured time).
CalibrationRule fit_rule_with_fixed_time(const std::string& cls, const std::string& roof, const std::vector<const Sample*>& samples,
                                         double& fixed_s) {
  std::vector<Sample> run;
  run.reserve(samples.size());
  for (const Sample* s : samples) run.push_back(*s);
  std::vector<const Sample*> ptrs;
  for (const auto& s : run) ptrs.push_back(&s);
  CalibrationRule best;
  double best_loss = INFINITY;
  fixed_s = 0;
  const double eps = 1e-12 * (1.0 + static_cast<double>(samples.size()));
  for (double o : fixed_time_grid()) {
    for (size_t j = 0; j < samples.size(); ++j) run[j].measured_s = std::max(samples[j]->measured_s - o, 0.1 * samples[j]->measured_s);
    CalibrationRule r = fit_rule(cls, roof, ptrs, true);
    double loss = 0;
    for (const Sample* s : samples) {
      const double e = std::log((rule_time(*s, r) + o) / s->measured_s);
      loss += e * e;
    }
    if (loss < best_loss - eps) best_loss = loss, best = std::move(r), fixed_s = o;
  }
  return best;
}


// The least squares of log(predicted / measured) over `cases` for a parameter on a grid, refined
// around the best point by golden sections; predict(k, x) is case k's prediction at x.
template <class F>
double fit_1d(size_t cases, double lo, double hi, size_t steps, const std::vector<double>& measured, F predict) {
  auto loss = [&](double x) {
    double l = 0;
    for (size_t k = 0; k < cases; ++k) {
      const double e = std::log(predict(k, x) / measured[k]);
      l += e * e;
    }
    return l;
  };
  double best = lo, best_loss = INFINITY;
  const double step = (hi - lo) / static_cast<double>(steps);
  for (size_t i = 0; i <= steps; ++i) {
    const double x = lo + step * static_cast<double>(i), l = loss(x);
    if (l < best_loss) best_loss = l, best = x;
  }
  double a = std::max(lo, best - step), b = std::min(hi, best + step);
  const double r = 0.5 * (std::sqrt(5.0) - 1);
  for (int it = 0; it < 60 && b - a > 1e-12 * (1 + std::fabs(best)); ++it) {
    const double c = b - r * (b - a), d = a + r * (b - a);
    (loss(c) < loss(d) ? b : a) = (loss(c) < loss(d) ? d : c);
  }
  const double mid = 0.5 * (a + b);
  return loss(mid) < best_loss ? mid : best;
}

}  // namespace

bool gpu_data(const std::vector<Sample>& rows, const std::vector<NetworkSample>& nets) {
  if (!nets.empty()) return true;
  return std::any_of(rows.begin(), rows.end(), [](const Sample& s) { return s.measured_s > 0 && (s.execution == "eager" || s.execution == "graph"); });
}

double measured_factor(const Sample& s, const std::unordered_map<std::string, double>* measured) {
  if (!measured || measured->empty() || s.input_shape.empty()) return 1;
  auto it = measured->find(measured_layer_key(s.op, s.roof, s.input_shape, s.output_shape, s.macs_counted));
  return it == measured->end() ? 1.0 : it->second;
}

KernelPlan plan_kernels(const std::vector<const Sample*>& layers, const std::vector<CalibrationRule>& rules,
                        const std::unordered_map<std::string, double>* measured) {
  KernelPlan k;
  std::vector<std::string> names;
  std::vector<double> c, m;
  std::map<std::string, size_t> at;
  for (const Sample* s : layers) {
    if (s->kernel.empty()) continue;  // a view runs no kernel
    auto [it, fresh] = at.try_emplace(s->kernel, c.size());
    if (fresh) c.push_back(0), m.push_back(0), k.host_s.push_back(-1);
    const size_t i = it->second;
    double ec = 1, eb = 1;
    if (const CalibrationRule* r = rule_for(rules, s->op, s->roof)) {
      ec = r->compute.at(s->macs > 0 ? s->macs : s->work, s->cpg, s->outputs);
      eb = r->bandwidth_on(s->level).at(s->bytes, s->cpg);
      k.host_s[i] = std::max(k.host_s[i], r->host_overhead_s);
    }
    divide_efficiencies(ec, eb, measured_factor(*s, measured));  // (as the engine does)
    c[i] += s->work / (s->peak * ec);
    m[i] += s->bytes / (s->bandwidth * eb);
  }
  for (size_t i = 0; i < c.size(); ++i) k.time_s.push_back(std::max(c[i], m[i]));
  return k;
}

double network_time_s(const KernelPlan& k, Execution e, const Runtime& r) {
  ExecutionClock clock(e, r);
  for (size_t i = 0; i < k.time_s.size(); ++i) clock.add(k.time_s[i], k.time_s[i], k.host_s[i]);
  return clock.dt;
}

namespace {

// A class's rule on one roof from layers timed one by one in eager mode. Such a time is the larger
// of the host's time to issue the layer (h, the same for every layer of the class) and the
// kernel's own time: back to back, the host issues the next call while the GPU still runs the last
// one, so a short kernel hides behind h and a long one hides h. The pair (h, laws) with the least
// squares of log(max(h, predicted) / measured): the laws fitted on the layers measured well above
// h (at least kAboveHost × h; the others only say their kernel took at most h).
constexpr double kAboveHost = 1.5;
CalibrationRule fit_rule_eager(const std::string& cls, const std::string& roof, const std::vector<const Sample*>& samples, double& host_s) {
  CalibrationRule best = fit_rule(cls, roof, samples, true);
  double best_loss = INFINITY;
  host_s = 0;
  const double eps = 1e-12 * (1.0 + static_cast<double>(samples.size()));
  for (double h : fixed_time_grid()) {
    std::vector<const Sample*> above;
    for (const Sample* s : samples)
      if (s->measured_s >= kAboveHost * h) above.push_back(s);
    if (above.empty()) break;  // (h only grows)
    CalibrationRule r = fit_rule(cls, roof, above, true);
    // a layer measured near h says only that its kernel took at most its time: one the laws
    // predict slower than that joins the fit at three quarters of its time, until none does
    std::deque<Sample> bounded;
    for (int round = 0; round < 4; ++round) {
      bool added = false;
      for (const Sample* s : samples)
        if (s->measured_s < kAboveHost * h && rule_time(*s, r) > s->measured_s &&
            std::none_of(bounded.begin(), bounded.end(), [&](const Sample& b) { return b.layer == s->layer && b.network == s->network; })) {
          bounded.push_back(*s);
          bounded.back().measured_s = 0.75 * s->measured_s;
          above.push_back(&bounded.back());
          added = true;
        }
      if (!added) break;
      r = fit_rule(cls, roof, above, true);
    }
    double loss = 0;
    for (const Sample* s : samples) {
      const double e = std::log(std::max(h, rule_time(*s, r)) / s->measured_s);
      loss += e * e;
    }
    if (loss < best_loss - eps) best_loss = loss, best = std::move(r), host_s = h;
  }
  return best;
}

// A layer of a measured network: its compute and memory times under the rules, and the roof and
// bound the network correction of its time goes by.
// (the efficiencies as the engine will apply them: the law with the rule's factor folded in,
// clamped to [0.001, 1], then ÷ a measured shape's factor, clamped again)
struct PlannedLayer {
  size_t kernel = 0;
  double compute = 0, memory = 0;  // work / peak and bytes / bandwidth: the times at efficiency 1
  double ec = 1, eb = 1;           // the laws' efficiencies before the clamp
  double shape = 1;                // a measured shape's factor (2b)
  double host = -1;
  int pair = -1;  // its rule's index (the rule's factor scales its time; -1: no rule)
};
struct PlannedNetwork {
  const NetworkSample* m = nullptr;
  std::vector<PlannedLayer> layers;
  size_t kernels = 0;
};


// A network's time with each rule's layers' efficiencies ÷ factor[rule] (its times × factor, as
// far as the roofline lets them go).
double planned_time(const PlannedNetwork& p, const std::vector<double>& factor, Execution e, const Runtime& rt, double host_scale, double default_host) {
  thread_local std::vector<double> c, m, h;
  c.assign(p.kernels, 0), m.assign(p.kernels, 0), h.assign(p.kernels, -1);
  for (const PlannedLayer& l : p.layers) {
    const double f = l.pair >= 0 ? factor[static_cast<size_t>(l.pair)] : 1;
    double ec = std::clamp(l.ec / f, 0.001, 1.0), eb = std::clamp(l.eb / f, 0.001, 1.0);  // (the law with the factor in a, as written)
    divide_efficiencies(ec, eb, l.shape);
    c[l.kernel] += l.compute / ec;
    m[l.kernel] += l.memory / eb;
    h[l.kernel] = std::max(h[l.kernel], l.host);
  }
  ExecutionClock clock(e, rt);
  for (size_t i = 0; i < p.kernels; ++i) clock.add(std::max(c[i], m[i]), std::max(c[i], m[i]), (h[i] >= 0 ? h[i] : default_host) * host_scale);
  return clock.dt;
}

// Each network's layer rows, each layer once: a file of rsim_torch's lists a layer timed eager and
// in a CUDA graph as two rows, and a network runs it once (its first row stands for it)
std::map<std::string, std::vector<const Sample*>> network_layers(const std::vector<Sample>& rows) {
  std::map<std::string, std::vector<const Sample*>> out;
  std::set<std::pair<std::string, std::string>> seen;  // network, layer
  for (const auto& s : rows)
    if (s.layer.empty() || seen.insert({s.network, s.layer}).second) out[s.network].push_back(&s);
  return out;
}

double median_of(std::vector<double> v) {
  if (v.empty()) return NAN;
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

// 1. (per class and roof) the rule, with its host or fixed time; the layers its laws were fitted
// on into kernel_timed (the graph-timed ones with the fixed time taken out, into `shifted`)
void fit_class_rules(const std::vector<Sample>& timed, Model& model, std::vector<const Sample*>& kernel_timed,
                     std::map<std::string, std::vector<double>>& hosts_of_roof, std::vector<Sample>& shifted) {
  for (const auto& [key, all] : by_class_and_roof(timed)) {
    // layers timed both ways (rsim_torch measures eager and graph on CUDA by default): a layer's time
    // in a CUDA graph is its kernel's (and the graph's launch), its eager time mostly the host's, so
    // the laws come from the graph times and the host time h from the eager ones
    std::vector<const Sample*> in_graph, in_eager;
    for (const Sample* s : all) (s->execution == "eager" ? in_eager : in_graph).push_back(s);
    double both_h = -1;
    if (!in_graph.empty() && !in_eager.empty()) (void)fit_rule_eager(key.first, key.second, in_eager, both_h);
    const std::vector<const Sample*>& v = both_h >= 0 ? in_graph : all;
    size_t eager = 0;
    for (const Sample* s : v) eager += s->execution == "eager";
    if (2 * eager > v.size()) {  // timed one by one in eager mode: the fixed time is the host's
      double h = 0;
      CalibrationRule r = fit_rule_eager(key.first, key.second, v, h);
      r.host_overhead_s = h;
      hosts_of_roof[key.second].push_back(h);
      for (const Sample* s : v)
        if (s->measured_s >= kAboveHost * h) kernel_timed.push_back(s);
      model.rules.push_back(std::move(r));
    } else {  // timed in a CUDA graph (or alone): a fixed time per layer beside its work, taken out
      double fixed = 0;
      CalibrationRule r = fit_rule_with_fixed_time(key.first, key.second, v, fixed);
      for (const Sample* s : v) {
        Sample x = *s;
        x.measured_s = std::max(s->measured_s - fixed, 0.1 * s->measured_s);
        shifted.push_back(x);
      }
      if (both_h >= 0) r.host_overhead_s = both_h, hosts_of_roof[key.second].push_back(both_h);
      model.rules.push_back(std::move(r));
    }
  }
}

// 2. the rules of the classes the networks run but no timed layer showed on their roof, from the
// roof's other classes' layers
void extrapolate_missing_rules(const std::vector<Sample>& rows, const std::vector<const Sample*>& kernel_timed,
                               const std::map<std::string, std::vector<double>>& hosts_of_roof, Model& model) {
  std::vector<std::pair<std::string, std::string>> missing;  // class, roof
  for (const auto& s : rows) {
    const std::string cls = op_class(s.op);
    if (cls == "other" || rule_for(model.rules, s.op, s.roof)) continue;
    if (std::find(missing.begin(), missing.end(), std::make_pair(cls, s.roof)) == missing.end()) missing.emplace_back(cls, s.roof);
  }
  for (const auto& [cls, roof] : missing) {
    std::vector<const Sample*> pool;
    for (const Sample* s : kernel_timed)
      if (s->roof == roof) pool.push_back(s);
    if (pool.empty()) continue;  // nothing measured on this roof: the roofline stands
    CalibrationRule r = fit_rule(cls, roof, pool, true);
    r.bandwidth_by_level.clear();
    r.extrapolated = true;
    if (auto it = hosts_of_roof.find(roof); it != hosts_of_roof.end()) r.host_overhead_s = median_of(it->second);
    model.rules.push_back(std::move(r));
  }
}

// 2b. the shapes whose median measured / law time lies beyond kMeasuredMiss, with their factors
void fit_measured_shapes(const std::vector<const Sample*>& kernel_timed, Model& model) {
  std::map<std::string, std::vector<std::pair<double, const Sample*>>> by_shape;  // (sorted by key: the same list from every run)
  for (const Sample* s : kernel_timed) {
    if (s->input_shape.empty() || s->output_shape.empty() || s->roof.empty() || !(s->measured_s > 0)) continue;
    const CalibrationRule* r = rule_for(model.rules, s->op, s->roof);
    if (!r || r->extrapolated) continue;
    const double t = rule_time(*s, *r);
    // timed one by one in eager mode: a layer whose law puts its kernel well under the host's time
    // per call was timed at the host's pace however long it took (a slow call, not a slow kernel)
    if (t > 0 && std::isfinite(t) && (s->execution != "eager" || t >= r->host_overhead_s))
      by_shape[measured_layer_key(s->op, s->roof, s->input_shape, s->output_shape, s->macs_counted)].emplace_back(s->measured_s / t, s);
  }
  for (auto& [key, v] : by_shape) {
    std::vector<double> f;
    for (const auto& x : v) f.push_back(x.first);
    const double m = median_of(f);
    if (!(std::fabs(std::log(m)) > std::log(kMeasuredMiss))) continue;
    const Sample& s = *v.front().second;
    MeasuredLayer l;
    l.op = s.op, l.roof = s.roof, l.input = s.input_shape, l.output = s.output_shape, l.macs = s.macs_counted, l.factor = m;
    l.from = s.network + "/" + s.layer + (v.size() > 1 ? " (median of " + std::to_string(v.size()) + " layers)" : "");
    model.measured_factors.emplace(key, m);
    model.measured_layers.push_back(std::move(l));
  }
}

// 3. a network's layers (those that run a kernel) timed under the rules, each rule it uses marked
// in pair_used
PlannedNetwork plan_network(const NetworkSample& n, const std::vector<const Sample*>& layers, const Model& model, std::vector<char>& pair_used) {
  PlannedNetwork p;
  p.m = &n;
  std::map<std::string, size_t> at;
  for (const Sample* s : layers) {
    if (s->kernel.empty()) continue;
    auto [k, fresh] = at.try_emplace(s->kernel, at.size());
    PlannedLayer l;
    l.kernel = k->second;
    l.compute = s->work / s->peak;
    l.memory = s->bytes / s->bandwidth;
    l.shape = measured_factor(*s, &model.measured_factors);  // a measured shape (2b)
    if (const CalibrationRule* r = rule_for(model.rules, s->op, s->roof)) {
      l.ec = r->compute.raw(s->macs > 0 ? s->macs : s->work, s->cpg, s->outputs);
      l.eb = r->bandwidth_on(s->level).raw(s->bytes, s->cpg);
      l.host = r->host_overhead_s;
      l.pair = static_cast<int>(r - model.rules.data());
      pair_used[static_cast<size_t>(l.pair)] = 1;
    }
    p.layers.push_back(l);
  }
  p.kernels = at.size();
  return p;
}

// What the fit of the network rows found: per rule the factor on its layers' times, which
// executions the rows ran, the runtime with the graph gap, the scale of the rules' host overheads
// and the host time of kernels of no rule
struct NetworkFit {
  std::vector<double> factor;
  bool graph_rows = false, eager_rows = false;
  Runtime rt;
  double scale = 1, host = 0;
};

// 3. the correction per rule, the graph gap and the scale of the host overheads, fitted together
// on the planned networks' times
NetworkFit fit_network_factors(const Model& model, const std::vector<PlannedNetwork>& planned, const std::vector<char>& pair_used,
                               const std::vector<double>& rule_hosts, const Runtime& base, double h0) {
  std::vector<double> factor(model.rules.size(), 1.0);  // per rule: the factor on its layers' times
  bool graph_rows = false, eager_rows = false;
  for (const auto& p : planned) graph_rows |= p.m->execution == Execution::Graph, eager_rows |= p.m->execution == Execution::Eager;
  Runtime rt = base;
  if (graph_rows) rt.graph_gap_s = 0;
  double scale = 1, host = h0;  // eager: the rules' host overheads × scale; `host` for kernels of no rule
  // the loss: the squares of log(predicted / measured) over the network rows, and a light pull of
  // each factor towards 1 (a rule whose layers carry little of any network's time stays near 1)
  // (0.3: on the shared H200 data, the held-out networks' median error was least near it, graph
  // and eager alike: 0.05 lets one network family's rows pull another's class, 1 undoes the factors)
  constexpr double kFactorPull = 0.3;
  // (only_roof ≥ 0: the networks with a layer of that roof, the only part of the loss its
  // correction changes)
  int only_roof = -1;
  std::vector<std::vector<char>> has_roof(planned.size(), std::vector<char>(model.rules.size(), 0));
  for (size_t i = 0; i < planned.size(); ++i)
    for (const PlannedLayer& l : planned[i].layers)
      if (l.pair >= 0) has_roof[i][static_cast<size_t>(l.pair)] = 1;
  auto loss = [&]() {
    double l = 0;
    for (size_t i = 0; i < planned.size(); ++i) {
      const PlannedNetwork& p = planned[i];
      if (only_roof >= 0 && !has_roof[i][static_cast<size_t>(only_roof)]) continue;
      const double t = planned_time(p, factor, p.m->execution, rt, scale, host);
      const double e = std::log(t / p.m->time_s);
      l += e * e;
    }
    for (double f : factor) l += kFactorPull * std::log(f) * std::log(f);
    return l;
  };
  // golden sections of the loss over x in [lo, hi]; x keeps its value unless another is better.
  // `set` applies a value of x to what the loss reads.
  auto line_search = [&](double& x, double lo, double hi, const std::function<void(double)>& set) {
    const double r = 0.5 * (std::sqrt(5.0) - 1);
    const double x0 = x;
    set(x0);
    const double l0 = loss();
    double a = lo, b = hi;
    for (int it = 0; it < 22; ++it) {
      const double c = b - r * (b - a), d = a + r * (b - a);
      set(c);
      const double lc = loss();
      set(d);
      const double ld = loss();
      (lc < ld ? b : a) = lc < ld ? d : c;
    }
    x = 0.5 * (a + b);
    set(x);
    if (!(loss() < l0)) x = x0, set(x0);
  };
  if (!planned.empty()) {
    for (int round = 0; round < 4; ++round) {
      for (size_t k = 0; k < factor.size(); ++k) {  // per rule: the factor on its layers' times
        if (!pair_used[k]) continue;
        only_roof = static_cast<int>(k);
        double la = std::log(factor[k]);
        line_search(la, std::log(0.05), std::log(20.0), [&](double v) { factor[k] = std::exp(v); });
        only_roof = -1;
      }
      if (graph_rows) {
        double g = rt.graph_gap_s;
        line_search(g, 0, 100e-6, [&](double v) { rt.graph_gap_s = v; });
      }
      if (eager_rows) {
        double ls = std::log(scale);
        line_search(ls, std::log(0.25), std::log(4.0), [&](double v) { scale = std::exp(v); });
        if (rule_hosts.empty()) {
          double h = host;
          line_search(h, 0, 500e-6, [&](double v) { host = v; });
        }
      }
    }
  }
  return NetworkFit{std::move(factor), graph_rows, eager_rows, rt, scale, host};
}

}  // namespace

Model fit_gpu_model(const std::vector<Sample>& rows, const std::vector<NetworkSample>& nets, const Runtime& base) {
  Model model;
  model.gpu = true;
  model.runtime = base;
  std::vector<Sample> timed;
  for (const auto& s : rows)
    if (s.measured_s > 0) timed.push_back(s);
  // 1. a rule per class and roof; the layers each rule's laws were fitted on, for the transfers
  std::vector<const Sample*> kernel_timed;  // layers whose time is their kernel's
  std::map<std::string, std::vector<double>> hosts_of_roof;
  std::vector<Sample> shifted;  // graph-timed layers with the rule's fixed time taken out
  shifted.reserve(timed.size());
  fit_class_rules(timed, model, kernel_timed, hosts_of_roof, shifted);
  for (const auto& s : shifted) kernel_timed.push_back(&s);
  // 2. classes the networks run but no timed layer showed on their roof: the roof's other classes' laws
  extrapolate_missing_rules(rows, kernel_timed, hosts_of_roof, model);
  // 2b. the layer shapes the laws miss: a library's choice per shape (cuDNN runs some 3×3
  // convolutions as Winograd and others of the same MACs not) that no smooth law follows. Each
  // shape timed well above the host (the layers the laws were fitted on) and long by its law too,
  // whose median measured / law time lies beyond kMeasuredMiss either way, is kept with that
  // factor; a network layer of the same operator, roof, shapes and MACs then runs at its law's
  // time × factor.
  fit_measured_shapes(kernel_timed, model);
  // 3. the network rows: each network's layers timed under the rules; per roof and bound, a
  // correction of the layers' times (layers timed one by one hide short kernels behind the host),
  // the graph gap and the scale of the host overheads, fitted together on the networks' times
  const std::map<std::string, std::vector<const Sample*>> layers_of = network_layers(rows);
  std::vector<std::string> roofs;  // roofs with a rule, in order
  for (const auto& r : model.rules)
    if (std::find(roofs.begin(), roofs.end(), r.roof) == roofs.end()) roofs.push_back(r.roof);
  std::vector<PlannedNetwork> planned;
  std::vector<char> pair_used(model.rules.size(), 0);
  std::vector<double> rule_hosts;
  for (const auto& r : model.rules)
    if (r.host_overhead_s >= 0 && !r.extrapolated) rule_hosts.push_back(r.host_overhead_s);
  const double h0 = !rule_hosts.empty() ? median_of(rule_hosts) : base.has_host_overhead() ? base.host_overhead_s : 0;
  for (const auto& n : nets) {
    auto it = layers_of.find(n.network);
    if (it == layers_of.end()) continue;  // no layer rows: nothing to time it by
    PlannedNetwork p = plan_network(n, it->second, model, pair_used);
    if (p.kernels) planned.push_back(std::move(p));
  }
  auto [factor, graph_rows, eager_rows, rt, scale, host] = fit_network_factors(model, planned, pair_used, rule_hosts, base, h0);
  // each rule's factor into its laws: a time × f is an efficiency ÷ f
  for (size_t k = 0; k < model.rules.size(); ++k) {
    CalibrationRule& r = model.rules[k];
    r.compute.a /= factor[k];
    r.bandwidth.a /= factor[k];
    for (auto& [level, law] : r.bandwidth_by_level) law.a /= factor[k];
    if (r.host_overhead_s >= 0) r.host_overhead_s *= scale;
    r.network_factor = factor[k];
  }
  model.host_scale = scale;
  model.runtime = base;
  if (graph_rows) model.runtime.graph_gap_s = rt.graph_gap_s;
  if (eager_rows || h0 > 0) model.runtime.host_overhead_s = (rule_hosts.empty() ? host : h0) * (rule_hosts.empty() ? 1 : scale);
  return model;
}

NetworkValidation validate_networks(const std::vector<Sample>& rows, const std::vector<NetworkSample>& nets, const Runtime& base, const Model* fitted) {
  NetworkValidation v;
  const std::map<std::string, std::vector<const Sample*>> layers_of = network_layers(rows);
  const Model all = fitted ? *fitted : fit_gpu_model(rows, nets, base);
  std::vector<std::string> names;
  for (const auto& n : nets)
    if (layers_of.count(n.network) && std::find(names.begin(), names.end(), n.network) == names.end()) names.push_back(n.network);
  // one fit per held-out network, on the machine's cores
  std::vector<std::vector<NetworkValidation::Case>> cases(names.size());
  std::atomic<size_t> next{0};
  auto work = [&]() {
    for (size_t i; (i = next++) < names.size();) {
      const std::string& held = names[i];
      std::vector<Sample> train_rows;
      std::vector<NetworkSample> train_nets;
      for (const auto& s : rows)
        if (s.network != held) train_rows.push_back(s);
      for (const auto& n : nets)
        if (n.network != held) train_nets.push_back(n);
      const Model m = fit_gpu_model(train_rows, train_nets, base);
      const auto& layers = layers_of.at(held);
      const KernelPlan p = plan_kernels(layers, m.rules, &m.measured_factors), pa = plan_kernels(layers, all.rules, &all.measured_factors),
                       p0 = plan_kernels(layers, {});
      for (const auto& n : nets) {
        if (n.network != held) continue;
        NetworkValidation::Case c;
        c.m = n;
        c.predicted_s = network_time_s(p, n.execution, m.runtime);
        c.fitted_s = network_time_s(pa, n.execution, all.runtime);
        c.uncalibrated_s = network_time_s(p0, n.execution, base);
        c.kernels = p.time_s.size();
        cases[i].push_back(c);
      }
    }
  };
  const size_t workers = std::min<size_t>(names.size(), std::max(1u, std::thread::hardware_concurrency()));
  std::vector<std::thread> threads;
  for (size_t w = 1; w < workers; ++w) threads.emplace_back(work);
  work();
  for (auto& t : threads) t.join();
  for (auto& c : cases) v.cases.insert(v.cases.end(), c.begin(), c.end());
  return v;
}

}  // namespace rsim::measure
