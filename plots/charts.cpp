#include "plots/charts.hpp"

#include "engine/names.hpp"

#include <algorithm>
#include <deque>
#include <cmath>
#include <map>
#include <set>
#include <unordered_set>

#include "engine/output.hpp"
#include "engine/units.hpp"
#include "plots/draw.hpp"

namespace rsim::plots {

namespace {

struct ColumnInfo {
  const char* name;
  const char* title;
  const char* unit;  // tick unit
  bool platform_free;  // same on every platform
};

const ColumnInfo kColumns[] = {
    {"intensity", "Arithmetic intensity [FLOP/byte]", "", true},
    {"mac_intensity", "MAC intensity [MAC/byte]", "", true},
    {"macs", "MACs", "", true},
    {"flops", "FLOPs", "", true},
    {"params", "Parameters", "", true},
    {"bytes", "Bytes moved [B]", "B", true},
    {"weight_bytes", "Weight bytes [B]", "B", true},
    {"input_bytes", "Input bytes [B]", "B", true},
    {"output_bytes", "Output bytes [B]", "B", true},
    {"attainable_flops_per_s", "Attainable performance [FLOP/s]", "FLOP/s", false},
    {"derated_attainable_flops_per_s", "Attainable performance, derated [FLOP/s]", "FLOP/s", false},
    {"achieved_flops_per_s", "Achieved performance [FLOP/s]", "FLOP/s", false},
    {"derated_achieved_flops_per_s", "Achieved performance, derated [FLOP/s]", "FLOP/s", false},
    {"time_s", "Time [s]", "s", false},
    {"derated_time_s", "Time, derated roofs [s]", "s", false},
    {"memory_bound_layers", "Memory-bound layers", "", false},
    {"compute_bound_layers", "Compute-bound layers", "", false},
    {"derated_memory_bound_layers", "Memory-bound layers (derated)", "", false},
    {"derated_compute_bound_layers", "Compute-bound layers (derated)", "", false},
    {"layers", "Layers", "", true},
    {"kernels", "Kernels", "", true},
    {"derated_time_per_sample_s", "Time per sample, derated roofs [s]", "s", false},
    // transformers (networks with a phase)
    {"active_params", "Active parameters", "", true},
    {"tokens_per_s", "Throughput [tokens/s]", "", false},
    {"derated_tokens_per_s", "Throughput, derated roofs [tokens/s]", "", false},
    {"time_per_output_token_s", "Time per output token [s]", "s", false},
    {"derated_time_per_output_token_s", "Time per output token, derated roofs [s]", "s", false},
    {"time_to_first_token_s", "Time to first token [s]", "s", false},
    {"derated_time_to_first_token_s", "Time to first token, derated roofs [s]", "s", false},
    {"weight_footprint_bytes", "Weights held in memory [B]", "B", true},
    {"kv_cache_bytes", "KV cache [B]", "B", true},
    {"memory_footprint_bytes", "Memory footprint (weights, KV cache, activations) [B]", "B", true},
    // requests and parallelism
    {"e2e_latency_s", "End-to-end latency [s]", "s", false},
    {"derated_e2e_latency_s", "End-to-end latency, derated roofs [s]", "s", false},
    {"tokens_per_s_per_user", "Tokens per second per user [tokens/s]", "", false},
    {"tokens_per_s_per_gpu", "Tokens per second per GPU [tokens/s]", "", false},
    {"params_per_gpu", "Parameters per GPU", "", true},
    {"comm_bytes", "Communication payload [B]", "B", true},
    {"comm_time_s", "Communication time [s]", "s", false},
    {"pipeline_bubble", "Pipeline bubble (idle share of GPU time)", "", false},
    {"gpus", "GPUs", "", false},
};

const ColumnInfo* column(const std::string& n) {
  for (const auto& c : kColumns)
    if (n == c.name) return &c;
  return nullptr;
}

// A value of a layer row; NaN when the column is not a layer column.
double row_value(const Row& r, const std::string& c) {
  if (c == "intensity") return r.theoretical.intensity;
  if (c == "mac_intensity") return r.bytes > 0 ? r.cost.macs / r.bytes : (r.cost.macs > 0 ? INFINITY : 0);
  if (c == "macs") return r.cost.macs;
  if (c == "flops") return r.cost.flops;
  if (c == "params") return r.cost.params;
  if (c == "bytes") return r.bytes;
  if (c == "weight_bytes") return r.cost.weight_bytes;
  if (c == "input_bytes") return r.cost.input_total();
  if (c == "output_bytes") return r.cost.output_total();
  if (c == "attainable_flops_per_s" || c == "achieved_flops_per_s") return r.theoretical.attainable_flops_per_s;
  if (c == "derated_attainable_flops_per_s" || c == "derated_achieved_flops_per_s") return r.derated.attainable_flops_per_s;
  if (c == "time_s") return r.theoretical.time_s;
  if (c == "derated_time_s") return r.derated.time_s;
  if (c == "layers") return 1;
  return NAN;
}

double summary_value(const SummaryRow& s, const std::string& c) {
  if (c == "intensity") return s.intensity;
  if (c == "mac_intensity") return s.bytes > 0 ? s.macs / s.bytes : 0;
  if (c == "macs") return s.macs;
  if (c == "flops") return s.flops;
  if (c == "params") return s.params;
  if (c == "bytes") return s.bytes;
  if (c == "attainable_flops_per_s" || c == "achieved_flops_per_s") return s.achieved_flops_per_s;
  if (c == "derated_attainable_flops_per_s" || c == "derated_achieved_flops_per_s") return s.derated_achieved_flops_per_s;
  if (c == "time_s") return s.time_s;
  if (c == "derated_time_s") return s.derated_time_s;
  if (c == "memory_bound_layers") return s.memory_bound;
  if (c == "compute_bound_layers") return s.compute_bound;
  if (c == "derated_memory_bound_layers") return s.derated_memory_bound;
  if (c == "derated_compute_bound_layers") return s.derated_compute_bound;
  if (c == "layers") return s.layers;
  if (c == "kernels") return s.kernels;
  if (c == "derated_time_per_sample_s") return s.derated_time_s / s.batch;
  if (c == "active_params") return s.active_params;
  if (c == "weight_footprint_bytes") return s.weight_footprint_bytes;
  if (c == "kv_cache_bytes") return s.kv_cache_bytes;
  if (c == "memory_footprint_bytes") return s.memory_footprint_bytes;
  LlmTotals t = llm_totals(s);
  if (c == "tokens_per_s") return t.tokens_per_s;
  if (c == "derated_tokens_per_s") return t.derated_tokens_per_s;
  if (c == "time_per_output_token_s") return t.tpot_s;
  if (c == "derated_time_per_output_token_s") return t.derated_tpot_s;
  if (c == "time_to_first_token_s") return t.ttft_s;
  if (c == "derated_time_to_first_token_s") return t.derated_ttft_s;
  if (c == "e2e_latency_s") return t.e2e_s;
  if (c == "derated_e2e_latency_s") return t.derated_e2e_s;
  if (c == "tokens_per_s_per_user") return t.tokens_per_s_per_user;
  if (c == "tokens_per_s_per_gpu") return t.tokens_per_s_per_gpu;
  if (c == "params_per_gpu") return s.params_per_gpu;
  if (c == "comm_bytes") return s.comm_bytes;
  if (c == "comm_time_s") return s.comm_time_s;
  if (c == "pipeline_bubble") return s.pipeline_bubble;
  if (c == "gpus") return s.gpus;
  return NAN;
}

// (the execution mode when it is not the default: graph and eager network times are not sums of kernels)
std::string conventions(const Settings& s) {
  return "FLOPs = " + format_number(s.flops_per_mac) + "×MAC · bytes = " + memory_model_name(s.memory_model) +
         (s.execution == Execution::Fused ? "" : std::string(" · execution: ") + execution_name(s.execution));
}

// What a network total holds beside its kernels' roofline times, for the subtitle: the launch
// overhead per kernel under `execution: fused` ("+5 µs launch per kernel"); graph and eager modes
// are named by conventions(). "" when no platform adds one.
std::string launch_note(const RunResult& r, const std::vector<std::string>& plats, const Settings& set) {
  if (set.execution != Execution::Fused) return "";
  std::set<double> seen;
  for (const auto& pr : r.results)
    for (const auto& p : pr.platforms)
      if ((plats.empty() || std::find(plats.begin(), plats.end(), p->name) != plats.end()) && p->runtime.launch_overhead_s > 0)
        seen.insert(p->runtime.launch_overhead_s);
  if (seen.empty()) return "";
  if (seen.size() == 1) return "+" + si(*seen.begin(), "s", 3) + " launch per kernel";
  return "+" + si(*seen.begin(), "s", 3) + " to " + si(*seen.rbegin(), "s", 3) + " launch per kernel (by platform)";
}

std::vector<std::string> platform_names(const RunResult& r) {
  std::vector<std::string> n;
  for (const auto& pr : r.results)
    for (const auto& p : pr.platforms)
      if (std::find(n.begin(), n.end(), p->name) == n.end()) n.push_back(p->name);
  return n;
}

const Platform* find_platform(const RunResult& r, const std::string& name) {
  for (const auto& pr : r.results)
    for (const auto& p : pr.platforms)
      if (p->name == name) return p.get();
  return nullptr;
}

// Whether the plot entry gave `key` itself (not a default)
bool given(const PlotSpec& p, const std::string& key) { return std::find(p.given.begin(), p.given.end(), key) != p.given.end(); }

// `xlim` / `ylim` of a plot entry: the axes' ranges as given (ticks outside them dropped).
void apply_limits(Figure& f, const PlotSpec& spec) {
  auto set = [&](Axis& a, const std::vector<double>& lim) {
    if (lim.size() != 2) return;
    if (a.scale == Scale::Log && lim[0] <= 0)
      throw ConfigError(spec.loc, std::string(&a == &f.x ? "xlim" : "ylim") + " must be positive on a logarithmic axis",
                        {Note{{}, std::string("give ") + (&a == &f.x ? "xscale" : "yscale") + ": linear, or a positive lower limit"}});
    a.min = lim[0], a.max = lim[1];
    a.ticks.erase(std::remove_if(a.ticks.begin(), a.ticks.end(), [&](double t) { return t < lim[0] || t > lim[1]; }), a.ticks.end());
  };
  set(f.x, spec.xlim);
  set(f.y, spec.ylim);
}

// A platform's place among every platform of the run (first appearance over the points): its
// identity, so that it keeps one colour in every figure of the run, whichever others a figure draws.
size_t platform_identity(const RunResult& r, const std::string& name) {
  std::vector<std::string> seen;
  for (const auto& pr : r.results)
    for (const auto& p : pr.platforms) {
      if (p->name == name) return static_cast<size_t>(std::find(seen.begin(), seen.end(), name) - seen.begin());
      if (std::find(seen.begin(), seen.end(), p->name) == seen.end()) seen.push_back(p->name);
    }
  return seen.size();
}

// An axis title for a sweep variable: its `label:` and `unit:` ("Vector clock [GHz]"), or its name.
std::string var_title(const Scenario& s, const std::string& name) {
  for (const auto* list : {&s.sweep.zip, &s.sweep.grid})
    for (const SweepVar& v : *list)
      if (v.name == name) return (v.label.empty() ? name : v.label) + (v.unit.empty() ? "" : " [" + v.unit + "]");
  return name;
}

std::vector<std::string> network_names(const RunResult& r) {
  std::vector<std::string> n;
  for (const auto& pr : r.results)
    for (const auto& sm : pr.summary)
      if (std::find(n.begin(), n.end(), sm.network) == n.end()) n.push_back(sm.network);
  return n;
}

// A scenario's `platforms:` entry k resolves to one platform per point; what-if variants get a
// name per point ("x@2.2GHz", or any name of their own). The slot of a platform name: the entry
// whose platform has that name (or that prefix before '@') at some point; SIZE_MAX when none.
size_t platform_slot(const RunResult& r, const std::string& name) {
  for (const auto& pr : r.results)
    for (size_t k = 0; k < pr.platforms.size(); ++k)
      if (pr.platforms[k]->name == name || pr.platforms[k]->name.substr(0, pr.platforms[k]->name.find('@')) == name) return k;
  return SIZE_MAX;
}

// What a slot is called on a chart: its one name, the common part before '@' of its variants, or
// the `base:` of a what-if entry.
std::string slot_name(const RunResult& r, const Scenario& s, size_t k) {
  std::vector<std::string> names;
  for (const auto& pr : r.results)
    if (k < pr.platforms.size() && std::find(names.begin(), names.end(), pr.platforms[k]->name) == names.end()) names.push_back(pr.platforms[k]->name);
  if (names.empty()) return "?";
  if (names.size() == 1) return names[0];
  std::string prefix = names[0].substr(0, names[0].find('@'));
  if (std::all_of(names.begin(), names.end(), [&](const std::string& n) { return n.substr(0, n.find('@')) == prefix; })) return prefix;
  if (k < s.platforms.size() && s.platforms[k].is_map())
    if (const CNode* b = s.platforms[k].find("base"); b && b->is_scalar()) return b->scalar + " (what-if)";
  return names[0];
}

size_t slot_at(const PointResult& pr, const std::string& platform) {
  for (size_t k = 0; k < pr.platforms.size(); ++k)
    if (pr.platforms[k]->name == platform) return k;
  return 0;
}

std::string first_network(const RunResult& r) {
  for (const auto& pr : r.results)
    for (const auto& row : pr.rows) return row.network;
  return "";
}

// "groups=32" / "k=3, p=1"
std::string point_text(const RunResult& r, size_t point) { return bindings_text(r.points[point].bindings); }

// Decade-aligned log range containing [lo, hi] with some air.
void log_range(Axis& a, double lo, double hi) {
  if (!(lo > 0) || !std::isfinite(lo)) lo = hi > 0 ? hi / 100 : 1;
  if (!(hi > 0) || !std::isfinite(hi)) hi = lo * 100;
  a.scale = Scale::Log;
  a.min = std::pow(10.0, std::floor(std::log10(lo / 1.6)));
  a.max = std::pow(10.0, std::ceil(std::log10(hi * 1.6)));
  if (a.max / a.min < 100) a.max = a.min * 100;
}

void linear_range(Axis& a, double lo, double hi, bool from_zero) {
  a.scale = Scale::Linear;
  if (from_zero && lo > 0) lo = 0;
  if (hi == lo) hi = lo + (lo == 0 ? 1 : std::fabs(lo) * 0.5);
  double pad = (hi - lo) * 0.06;
  a.min = (from_zero && lo == 0) ? 0 : lo - pad;
  a.max = hi + pad;
}

// Auto: log when all values are positive and span more than a factor of 20.
void auto_range(Axis& a, const std::vector<double>& v, const std::string& mode, bool from_zero) {
  double lo = 1e300, hi = -1e300;
  bool positive = true;
  for (double x : v) {
    if (!std::isfinite(x)) continue;
    lo = std::min(lo, x), hi = std::max(hi, x);
    positive = positive && x > 0;
  }
  if (lo > hi) lo = 0, hi = 1;
  bool log = mode == "log" || (mode == "auto" && positive && lo > 0 && hi / lo >= (from_zero ? 20 : 8));
  if (log && positive && lo > 0) {
    a.scale = Scale::Log;
    a.min = lo / 1.4;
    a.max = hi * 1.4;
    // snap to decades when close, so the ticks read well
    double dl = std::floor(std::log10(a.min)), dh = std::ceil(std::log10(a.max));
    if (std::log10(a.min) - dl < 0.3) a.min = std::pow(10.0, dl);
    if (dh - std::log10(a.max) < 0.3) a.max = std::pow(10.0, dh);
  } else {
    linear_range(a, lo, hi, from_zero);
  }
}

std::string csv_line(const std::vector<std::string>& cells) {
  std::string s;
  for (size_t i = 0; i < cells.size(); ++i) s += (i ? "," : "") + csv_escape(cells[i]);
  return s + "\n";
}

// ---------------------------------------------------------------- roofline

// Roof colours for overlays: none of them is a bound colour (blue, orange) used by the points.
Color roof_color(size_t i) {
  static const unsigned c[] = {0x009E73, 0xCC79A7, 0x56B4E9, 0x000000, 0xD55E00, 0x999933};
  return rgb(c[i % 6]);
}

// 1234567 → "1,234,567"
std::string grouped(size_t n) {
  std::string d = std::to_string(n), out;
  for (size_t i = 0; i < d.size(); ++i) {
    if (i && (d.size() - i) % 3 == 0) out += ',';
    out += d[i];
  }
  return out;
}

bool close_to(double a, double b) { return std::fabs(a - b) <= 1e-9 * std::max(std::fabs(a), std::fabs(b)); }

// Adds a line unless an identical one (same points and dash) is there already.
void add_line(Figure& f, Line L) {
  for (const auto& o : f.lines)
    if (!L.label.empty() && o.label == L.label) L.label.clear();  // one label per value
  for (const auto& o : f.lines) {
    if (o.pts.size() != L.pts.size() || o.style.dash != L.style.dash) continue;
    bool same = true;
    for (size_t i = 0; i < o.pts.size() && same; ++i) same = close_to(o.pts[i].x, L.pts[i].x) && close_to(o.pts[i].y, L.pts[i].y);
    if (same) return;
  }
  f.lines.push_back(L);
}

// ---------------------------------------------------------------- roofline

// A point of a roofline: a layer (or a network total) at one sweep point on one platform.
struct RoofPt {
  double x, y;
  std::string label, bound, op, network, platform;
  size_t point;
  bool over = false;  // a network point whose memory footprint exceeds the platform's memory
  double launch_share = -1;  // a network point under execution: fused: its kernels' launch overhead over its time (-1: none)
};

bool over_memory(const SummaryRow& sm) { return sm.memory_size_bytes > 0 && sm.memory_footprint_bytes > sm.memory_size_bytes; }

// A platform on the chart and its compute roofs for the precisions the points use.
struct RoofSet {
  const Platform* p;
  std::vector<const ComputeRoof*> roofs;
  size_t identity = 0;  // platform_identity: its colour in every figure of the run
};

std::set<DType> dtypes_on(const RunResult& r, const std::vector<std::string>& plats) {
  std::set<DType> used;
  for (const auto& pr : r.results)
    for (const auto& row : pr.rows)
      if (std::find(plats.begin(), plats.end(), row.platform) != plats.end()) used.insert(row.dtype);
  return used;
}

// The points: each layer (or network total) of every sweep point on the chart's platforms, on
// the derated roofs or the theoretical ones. Log axes cannot show 0 or ∞: such points are
// counted in `hidden` (the subtitle says how many) instead.
std::vector<RoofPt> roofline_points(const PlotSpec& spec, const RunResult& r, const std::vector<std::string>& plats, bool on_derated, int& hidden) {
  const bool networks = spec.points == "networks";
  const bool link = spec.intensity == "interconnect";  // x: FLOPs per byte over the links (what communicates only)
  std::vector<RoofPt> pts;
  size_t npoints = r.points.size();
  std::set<std::string> layer_names;
  for (const auto& pr : r.results)
    for (const auto& row : pr.rows)
      if (spec.network.empty() || row.network == spec.network) layer_names.insert(row.network + "/" + row.layer);
  auto drawable = [&](double x, double y) {
    if (!(x > 0) || !(y > 0) || !std::isfinite(x)) return ++hidden, false;
    return true;
  };
  for (size_t pi = 0; pi < r.results.size(); ++pi) {
    const PointResult& pr = r.results[pi];
    if (networks) {
      for (const auto& sm : pr.summary) {
        if (std::find(plats.begin(), plats.end(), sm.platform) == plats.end()) continue;
        if (!spec.network.empty() && sm.network != spec.network) continue;
        if (link && !(sm.comm_bytes > 0)) continue;  // (nothing over the links)
        double x = link ? sm.flops / sm.comm_bytes : sm.intensity, y = on_derated ? sm.derated_achieved_flops_per_s : sm.achieved_flops_per_s;
        if (!drawable(x, y)) continue;
        std::string label = sm.network + (npoints > 1 ? " · " + point_text(r, pi) : "");
        // a network is memory bound when its intensity is under the platform's ridge
        // (with the links as roofs: interconnect-bound under the ridge of the link its all-reduces
        // run on, else as on the memory roofline)
        std::string bound = "memory";
        for (const auto& pl : pr.platforms)
          if (const ComputeRoof* roof = pl->name == sm.platform ? pl->roof_for(pr.settings.dtype) : nullptr) {
            double peak = on_derated ? roof->derated_flops_per_s : roof->peak_flops_per_s;
            double bw = on_derated ? pl->memory.front().derated_bandwidth_bytes_per_s : pl->memory.front().bandwidth_bytes_per_s;
            if (sm.intensity > peak / bw) bound = "compute";
            const InterconnectLevel* l = link ? pl->link_for(static_cast<long long>(sm.tensor_parallel)) : nullptr;
            if (l && x < peak / l->bandwidth_bytes_per_s) bound = "interconnect";
          }
        pts.push_back({x, y, label, bound, "network", sm.network, sm.platform, pi, over_memory(sm)});
        // what of its time the launches are (why a network sits under every roof at small batch)
        for (const auto& pl : pr.platforms)
          if (pl->name == sm.platform && pr.settings.execution == Execution::Fused && pl->runtime.launch_overhead_s > 0) {
            const double t = on_derated ? sm.derated_time_s : sm.time_s;
            if (t > 0) pts.back().launch_share = std::min(1.0, sm.kernels * pl->runtime.launch_overhead_s / t);
          }
      }
      continue;
    }
    for (const auto& row : pr.rows) {
      if (std::find(plats.begin(), plats.end(), row.platform) == plats.end()) continue;
      if (!spec.network.empty() && row.network != spec.network) continue;
      const RoofPoint& rp = on_derated ? row.derated : row.theoretical;
      double x = rp.intensity, y = rp.attainable_flops_per_s;
      std::string bound = bound_name(rp.bound);
      if (link) {  // FLOPs per byte over the links; the rate its compute and its collective allow
        if (!(row.cost.comm_bytes > 0)) continue;
        x = row.cost.flops / row.cost.comm_bytes;
        const double t = std::max(rp.compute_time_s, rp.comm_time_s);
        y = t > 0 ? row.cost.flops / t : 0;
      }
      if (!drawable(x, y)) continue;
      std::string label;
      bool one_layer = layer_names.size() == 1;
      if (!one_layer) label = row.layer;
      // on an overlay the roof a point sits on tells its platform (and so its sweep point)
      if (npoints > 1 && !(plats.size() > 1 && !label.empty())) label += (label.empty() ? "" : " · ") + point_text(r, pi);
      if (plats.size() > 1 && label.empty()) label = row.platform;
      pts.push_back({x, y, label, bound, row.op, row.network, row.platform, pi});
    }
  }
  return pts;
}

std::vector<RoofSet> roof_sets(const RunResult& r, const std::vector<std::string>& plats, const std::set<DType>& dtypes_used) {
  std::vector<RoofSet> sets;
  for (const auto& name : plats) {
    const Platform* p = find_platform(r, name);
    if (!p) continue;
    RoofSet rs{p, {}, platform_identity(r, name)};
    for (DType t : dtypes_used)
      if (const ComputeRoof* cr = p->roof_for(t); cr && std::find(rs.roofs.begin(), rs.roofs.end(), cr) == rs.roofs.end()) rs.roofs.push_back(cr);
    sets.push_back(rs);
  }
  return sets;
}

// Log–log axes wide enough for every point (a factor 4 beside it) and every ridge (50× left,
// 10× right), from the lowest roof's 1/50 to the highest peak.
void roofline_axes(Figure& f, const std::vector<RoofPt>& pts, const std::vector<RoofSet>& sets) {
  double xmin = 1e300, xmax = 0, ymin = 1e300, ymax = 0;
  for (const auto& p : pts) xmin = std::min(xmin, p.x / 4), xmax = std::max(xmax, p.x * 4), ymin = std::min(ymin, p.y), ymax = std::max(ymax, p.y);
  for (const RoofSet& rs : sets)
    for (const ComputeRoof* cr : rs.roofs)
      for (const auto& m : rs.p->memory) {
        double ridge = cr->peak_flops_per_s / m.bandwidth_bytes_per_s;
        double dridge = cr->derated_flops_per_s / m.derated_bandwidth_bytes_per_s;
        xmin = std::min({xmin, ridge / 50, dridge / 50});
        xmax = std::max({xmax, ridge * 10, dridge * 10});
        ymax = std::max(ymax, cr->peak_flops_per_s);
        ymin = std::min(ymin, std::min(cr->peak_flops_per_s, cr->derated_flops_per_s) / 50);
      }
  log_range(f.x, xmin, xmax);
  log_range(f.y, ymin, ymax);
  f.x.title = "Arithmetic intensity [FLOP/byte]";  // ([OP/byte] for integer roofs: below)
  // integer roofs only (int8 points): operations, not floating-point ones
  bool integer = !sets.empty();
  for (const RoofSet& rs : sets)
    for (const ComputeRoof* cr : rs.roofs) integer = integer && dtype_name(cr->dtypes.front())[0] == 'i';
  f.y.title = integer ? "Performance [OP/s]" : "Performance [FLOP/s]";
  if (integer) f.x.title = "Arithmetic intensity [OP/byte]";
  f.y.unit = integer ? "OP/s" : "FLOP/s";
}

// One compute roof over one memory level, theoretical or derated: the slanted memory roof up to
// the ridge, the flat compute roof from it (main memory only), each labelled with its value, and
// the ridge point.
void add_roof(Figure& f, const RoofSet& rs, const std::string& short_name, size_t ri, size_t mi, bool derated, bool overlay, bool theo_shared) {
  const Platform& p = *rs.p;
  const ComputeRoof& cr = *rs.roofs[ri];
  const MemoryLevel& m = p.memory[mi];
  bool mem_same = m.derated_bandwidth_bytes_per_s == m.bandwidth_bytes_per_s;
  bool comp_same = cr.derated_flops_per_s == cr.peak_flops_per_s;
  const char* unit = dtype_name(cr.dtypes.front())[0] == 'i' ? "OP/s" : "FLOP/s";
  Color c = overlay ? roof_color(rs.identity) : rgb(0x333333);
  double peak = derated ? cr.derated_flops_per_s : cr.peak_flops_per_s;
  double bw = derated ? m.derated_bandwidth_bytes_per_s : m.bandwidth_bytes_per_s;
  double ridge = peak / bw;
  // on an overlay each platform's theoretical roof is its colour, lighter and dashed; one that
  // every platform shares (what-if variants of one machine) is neutral grey
  Color theo = c;
  theo.a = 0.55;
  LineStyle st{derated || !overlay ? c : theo_shared ? rgb(0x555555) : theo, derated ? 1.6 : 1.1, derated ? Dash::Solid : Dash::Dashed};
  // (derated roofs are solid on an overlay too, as the legend says: the platform's colour tells them apart)
  if (mi > 0) st.width *= 0.8;
  Line mem;  // slanted, up to the ridge
  mem.pts = {{f.x.min, bw * f.x.min}, {ridge, peak}};
  mem.style = st;
  bool label_mem = ri == 0 && (derated ? true : !mem_same);
  if (label_mem) mem.label = (derated && !mem_same ? "derated " : m.name + " ") + si(bw, "B/s", 4);
  mem.label_at = 0.55;
  add_line(f, mem);
  if (mi > 0) return;  // caches only add their slanted roof
  Line comp;  // flat, from the ridge
  comp.pts = {{ridge, peak}, {f.x.max, peak}};
  comp.style = st;
  // on an overlay the legend gives each variant's peak; the lines would be too close to label
  if ((derated || !comp_same) && !(overlay && derated)) comp.label = (derated && !comp_same ? "derated " : cr.name + " ") + si(peak, unit, 4);
  comp.label_at = 0.78;
  comp.label_above = !(derated && !comp_same);  // a derated roof under its theoretical one: label below
  add_line(f, comp);
  Point rp;
  rp.at = {ridge, peak};
  rp.marker = Marker::Diamond;
  rp.size = 6;
  rp.fill = rgb(0xFFFFFF);
  char buf[64];
  std::snprintf(buf, sizeof buf, "ridge %.3g", ridge);
  // on an overlay a ridge says whose it is (unless every platform shares it)
  rp.label = overlay && (derated || !theo_shared) ? short_name + " " + buf : std::string(buf);
  rp.on_top = true;
  bool dup = std::any_of(f.points.begin(), f.points.end(), [&](const Point& o) { return close_to(o.at.x, ridge) && close_to(o.at.y, peak); });
  if (!dup) f.points.push_back(rp);
}

// Every platform's roofs: theoretical first (dashed, under), then derated (solid); a roof that
// derating leaves alone is drawn and labelled once. Returns whether any roof is derated.
bool add_roofs(Figure& f, const std::vector<RoofSet>& sets, bool show_theo, bool show_der, bool print) {
  bool overlay = sets.size() > 1, any_derating = false;
  // what-if variants of one platform share most of their names: their ridges say what differs
  // ("@2.2GHz ridge 18.3"), from the last separator before it
  std::vector<std::string> short_names;
  std::string common = sets.empty() ? "" : sets.front().p->name;
  for (const RoofSet& o : sets) {
    size_t k = 0;
    while (k < common.size() && k < o.p->name.size() && common[k] == o.p->name[k]) ++k;
    common.resize(k);
  }
  size_t cut = 0;
  for (size_t k = 0; k < common.size(); ++k)
    if (common[k] == '@') cut = k;
    else if (common[k] == '_' || common[k] == '-' || common[k] == ' ') cut = k + 1;
  for (const RoofSet& o : sets) short_names.push_back(common.size() >= 5 && cut > 0 && cut < o.p->name.size() ? o.p->name.substr(cut) : o.p->name);
  // the theoretical roofs are shared when every platform has the same peaks and bandwidths
  bool theo_shared = true;
  for (const RoofSet& o : sets) {
    const RoofSet& a = sets.front();
    theo_shared = theo_shared && o.roofs.size() == a.roofs.size() && o.p->memory.size() == a.p->memory.size();
    for (size_t i = 0; theo_shared && i < o.roofs.size(); ++i) theo_shared = close_to(o.roofs[i]->peak_flops_per_s, a.roofs[i]->peak_flops_per_s);
    for (size_t i = 0; theo_shared && i < o.p->memory.size(); ++i) theo_shared = close_to(o.p->memory[i].bandwidth_bytes_per_s, a.p->memory[i].bandwidth_bytes_per_s);
  }
  for (size_t set_i = 0; set_i < sets.size(); ++set_i) {
    const Platform& p = *sets[set_i].p;
    for (size_t ri = 0; ri < sets[set_i].roofs.size(); ++ri) {
      const ComputeRoof& cr = *sets[set_i].roofs[ri];
      for (size_t mi = 0; mi < p.memory.size(); ++mi) {
        const MemoryLevel& m = p.memory[mi];
        bool all_same = m.derated_bandwidth_bytes_per_s == m.bandwidth_bytes_per_s && cr.derated_flops_per_s == cr.peak_flops_per_s;
        if (!all_same) any_derating = true;
        for (int derated = 0; derated < 2; ++derated) {
          if (!derated && all_same) continue;
          if ((derated && !show_der && !all_same) || (!derated && !show_theo)) continue;
          add_roof(f, sets[set_i], short_names[set_i], ri, mi, derated != 0, overlay, theo_shared);
        }
      }
    }
  }
  // each platform's legend entry gives its derated peak and bandwidth; at a printed size, where
  // the legend shares the page with the plot, its name only (the values: plot data, report.md)
  if (overlay)
    for (size_t set_i = 0; set_i < sets.size(); ++set_i)
      f.legend.push_back(LegendEntry{sets[set_i].p->name + (print ? "" : (sets[set_i].roofs.empty() ? "" : ": " + si(sets[set_i].roofs.front()->derated_flops_per_s,
                                                                                                    dtype_name(sets[set_i].roofs.front()->dtypes.front())[0] == 'i' ? "OP/s" : "FLOP/s", 4)) +
                                                                    ", " + si(sets[set_i].p->memory.front().derated_bandwidth_bytes_per_s, "B/s", 4)),
                                     true, LineStyle{roof_color(sets[set_i].identity), 1.6, Dash::Solid}, false, {}, {}});
  return any_derating;
}

// Roofs of a script's efficiency model: layers whose derated peak or bandwidth differs from
// every platform roof (an efficiency_compute or efficiency_bandwidth under 1) sit on roofs of
// their own. Each distinct one (the four highest) is drawn dotted and labelled with its share of
// the platform's derated roof ("efficiency 30 %: 8.94 TFLOP/s"). Returns whether any was drawn.
bool add_efficiency_roofs(Figure& f, const std::vector<RoofSet>& sets, const RunResult& r, const std::string& network) {
  bool any = false;
  const bool overlay = sets.size() > 1;
  for (size_t set_i = 0; set_i < sets.size(); ++set_i) {
    const RoofSet& rs = sets[set_i];
    if (rs.roofs.empty() || rs.p->memory.empty()) continue;
    auto is_platform_roof = [&](double peak, double bw) {
      for (const ComputeRoof* cr : rs.roofs)
        for (const auto& m : rs.p->memory)
          if (close_to(peak, cr->derated_flops_per_s) && close_to(bw, m.derated_bandwidth_bytes_per_s)) return true;
      return false;
    };
    std::vector<std::pair<double, double>> own;  // (peak, bandwidth)
    for (const auto& pr : r.results)
      for (const auto& row : pr.rows) {
        if (row.platform != rs.p->name || (!network.empty() && row.network != network)) continue;
        double peak = row.derated.peak_flops_per_s, bw = row.derated.bandwidth_bytes_per_s;
        if (!(peak > 0) || !(bw > 0) || is_platform_roof(peak, bw)) continue;
        if (std::none_of(own.begin(), own.end(), [&](const auto& o) { return close_to(o.first, peak) && close_to(o.second, bw); })) own.emplace_back(peak, bw);
      }
    std::sort(own.begin(), own.end(), [](const auto& a, const auto& b) { return a.first > b.first; });
    if (own.size() > 4) own.resize(4);
    const double base_peak = rs.roofs.front()->derated_flops_per_s, base_bw = rs.p->memory.front().derated_bandwidth_bytes_per_s;
    for (const auto& [peak, bw] : own) {
      LineStyle st{overlay ? roof_color(rs.identity) : rgb(0x777777), 0.9, Dash::Dotted};
      double ridge = peak / bw;
      char pct[64];
      Line mem;
      mem.pts = {{f.x.min, bw * f.x.min}, {ridge, peak}};
      mem.style = st;
      if (!close_to(bw, base_bw)) {
        std::snprintf(pct, sizeof pct, "efficiency %.0f %%: ", 100 * bw / base_bw);
        mem.label = pct + si(bw, "B/s", 3);
      }
      mem.label_at = 0.4;
      mem.label_above = false;
      add_line(f, mem);
      Line comp;
      comp.pts = {{ridge, peak}, {f.x.max, peak}};
      comp.style = st;
      if (!close_to(peak, base_peak)) {
        std::snprintf(pct, sizeof pct, "efficiency %.0f %%: ", 100 * peak / base_peak);
        comp.label = pct + si(peak, "FLOP/s", 3);
      }
      comp.label_at = 0.7;
      comp.label_above = false;
      add_line(f, comp);
      any = true;
    }
  }
  if (any) f.legend.push_back(LegendEntry{"efficiency-model roof", true, LineStyle{rgb(0x777777), 0.9, Dash::Dotted}, false, {}, {}});
  return any;
}

// Points that coincide (the same layer at several sweep points, or on what-if variants that
// leave it alone) become one marker, labelled with the first and how many more it stands for.
// Each point joins the first earlier marker it coincides with. Markers are indexed by (bound,
// op) and then by x, so a point looks only at the markers within x's tolerance: linear in
// points (40k points would take seconds with a scan of every marker).
std::vector<RoofPt> merge_coincident(const std::vector<RoofPt>& pts) {
  std::vector<RoofPt> merged;
  std::vector<int> extra;
  std::map<std::pair<std::string, std::string>, std::multimap<double, size_t>> index;
  for (const auto& p : pts) {
    size_t found = SIZE_MAX;
    std::multimap<double, size_t>* by_x = nullptr;
    if (std::isfinite(p.x) && std::isfinite(p.y)) {  // close_to never holds for inf or NaN
      by_x = &index[{p.bound, p.op}];
      double tol = 2e-9 * std::fabs(p.x);  // covers close_to's 1e-9 × max(|a|, |b|)
      for (auto it = by_x->lower_bound(p.x - tol); it != by_x->end() && it->first <= p.x + tol; ++it) {
        const RoofPt& m = merged[it->second];
        if (it->second < found && close_to(m.x, p.x) && close_to(m.y, p.y)) found = it->second;
      }
    }
    if (found != SIZE_MAX) {
      if (p.label != merged[found].label) ++extra[found];
      continue;
    }
    if (by_x) by_x->emplace(p.x, merged.size());
    merged.push_back(p);
    extra.push_back(0);
  }
  for (size_t k = 0; k < merged.size(); ++k)
    if (extra[k] > 0) merged[k].label += " (+" + std::to_string(extra[k]) + ")";
  return merged;
}

// The markers: shape by op (or network, point, platform), colour by bound (or a series), a label
// per column of equal points; and their legend entries.
// `more`: points left out of `pts` because they coincide with drawn markers (they count towards
// the density that makes markers small).
void add_roofline_markers(Figure& f, const PlotSpec& spec, const RunResult& r, const std::vector<RoofPt>& pts, size_t more, bool overlay_legend) {
  const bool networks = spec.points == "networks";
  std::vector<std::string> marker_keys, color_keys;
  // network points have no op: their shape tells the network apart
  auto key_of = [&](const RoofPt& p, const std::string& by) {
    if (by == "op") return networks ? p.network : p.op;
    if (by == "network") return p.network;
    if (by == "point") return point_text(r, p.point);
    if (by == "platform") return p.platform;
    return p.bound;
  };
  for (const auto& p : pts) {
    std::string mk = key_of(p, spec.marker), ck = key_of(p, spec.color);
    if (std::find(marker_keys.begin(), marker_keys.end(), mk) == marker_keys.end()) marker_keys.push_back(mk);
    if (std::find(color_keys.begin(), color_keys.end(), ck) == color_keys.end()) color_keys.push_back(ck);
  }
  const size_t max_shapes = style_preset(spec.style).fixed || spec.physical ? 4 : 8;
  bool label_points = spec.labels == "all" || (spec.labels == "auto" && pts.size() <= 60);
  std::vector<std::pair<std::string, double>> labelled_at;  // (label, x): one label per column of equal points
  // Thousands of unlabelled markers: one per pixel of the canvas (the whole figure at its dpi, so
  // finer than the plot's pixels) and shape and colour; the others would paint the same pixels.
  const bool per_pixel = !label_points && pts.size() > 2000 && f.x.min > 0 && f.y.min > 0 && f.x.max > f.x.min && f.y.max > f.y.min;
  const double px_w = f.width * spec.dpi / 72, px_h = f.height * spec.dpi / 72;
  const double lx = std::log10(f.x.min), ly = std::log10(f.y.min), sx = std::log10(f.x.max) - lx, sy = std::log10(f.y.max) - ly;
  std::unordered_set<uint64_t> painted;
  for (const auto& p : pts) {
    Point q;
    q.at = {p.x, p.y};
    size_t mi = static_cast<size_t>(std::find(marker_keys.begin(), marker_keys.end(), key_of(p, spec.marker)) - marker_keys.begin());
    size_t ci = static_cast<size_t>(std::find(color_keys.begin(), color_keys.end(), key_of(p, spec.color)) - color_keys.begin());
    if (per_pixel) {
      const double col = std::floor((std::log10(p.x) - lx) / sx * px_w), row = std::floor((std::log10(p.y) - ly) / sy * px_h);
      if (col >= 0 && row >= 0 && col < px_w && row < px_h) {  // outside the axes: drawn (and clipped) as before
        const uint64_t cell = static_cast<uint64_t>(col) | static_cast<uint64_t>(row) << 20 | static_cast<uint64_t>(mi & 0xFFF) << 40 | static_cast<uint64_t>(ci & 0xFFF) << 52;
        if (!painted.insert(cell).second) continue;
      }
    }
    q.marker = marker_keys.size() <= max_shapes ? marker_cycle(mi) : Marker::Circle;  // past 8 shapes repeat (4 in print, where the legend is small): use one
    q.fill = spec.color == "bound" ? bound_color(p.bound) : spec.color == "platform" ? roof_color(platform_identity(r, p.platform)) : palette(ci);
    q.fill.a = 0.9;
    q.size = pts.size() + more > 500 ? 4 : 7;
    q.hollow = p.over;
    bool repeat = std::any_of(labelled_at.begin(), labelled_at.end(), [&](const auto& l) { return l.first == p.label && close_to(l.second, p.x); });
    if (label_points && !repeat) {
      q.label = p.label;
      labelled_at.emplace_back(p.label, p.x);
    }
    f.points.push_back(q);
  }
  if (spec.labels == "auto" && pts.size() > 60) f.allow_key = false;
  if (std::any_of(pts.begin(), pts.end(), [](const RoofPt& p) { return p.over; })) {
    LegendEntry e{"does not fit in memory", false, {}, true, Marker::Circle, rgb(0x444444)};
    e.hollow = true;
    f.legend.push_back(e);
  }
  if (spec.color == "bound") {
    for (const char* b : {"memory", "compute", "interconnect"}) {
      bool present = std::any_of(pts.begin(), pts.end(), [&](const RoofPt& p) { return p.bound == b; });
      if (present) f.legend.push_back(LegendEntry{std::string(b) + " bound", false, {}, true, Marker::Circle, bound_color(b)});
    }
  } else if (spec.color == "platform") {
    // an overlay's legend names each platform beside its roof, in its colour: the points need no
    // entries of their own (one platform: one colour, nothing to tell apart)
    if (!overlay_legend)
      for (size_t i = 0; i < color_keys.size() && i < 8; ++i)
        f.legend.push_back(LegendEntry{color_keys[i], false, {}, true, Marker::Square, roof_color(platform_identity(r, color_keys[i]))});
  } else {
    for (size_t i = 0; i < color_keys.size() && i < 8; ++i) f.legend.push_back(LegendEntry{color_keys[i], false, {}, true, Marker::Square, palette(i)});
  }
  if (marker_keys.size() <= max_shapes && (marker_keys.size() > 1 || spec.marker != "op"))
    for (size_t i = 0; i < marker_keys.size(); ++i) f.legend.push_back(LegendEntry{marker_keys[i], false, {}, true, marker_cycle(i), rgb(0xBBBBBB)});
}

BuiltFigure roofline(const PlotSpec& spec, const RunResult& r, const Scenario& s, const std::vector<std::string>& plats) {
  BuiltFigure out;
  Figure& f = out.figure;
  f.width = spec.width, f.height = spec.height;
  const Settings& set = r.results.front().settings;
  const bool networks = spec.points == "networks";
  const bool show_theo = spec.roofs != "derated", show_der = spec.roofs != "theoretical";
  const bool on_derated = show_der;  // points sit on the derated roofs when those are drawn
  const std::set<DType> dtypes_used = dtypes_on(r, plats);
  std::string dtypes_text;
  for (DType t : dtypes_used) dtypes_text += (dtypes_text.empty() ? "" : "/") + std::string(dtype_name(t));

  int hidden = 0;
  const std::vector<RoofPt> all_pts = roofline_points(spec, r, plats, on_derated, hidden);  // the plot data keeps every point
  // rows the run's figure collector left out (they coincide with drawn markers)
  size_t coinciding = 0;
  if (!networks)
    for (const auto& t : r.thinned)
      if (std::find(plats.begin(), plats.end(), t.platform) != plats.end() && (spec.network.empty() || t.network == spec.network)) {
        hidden += static_cast<int>(on_derated ? t.hidden_derated : t.hidden);
        coinciding += t.rows - (on_derated ? t.hidden_derated : t.hidden);
      }
  std::vector<RoofSet> sets = roof_sets(r, plats, dtypes_used);
  // the interconnect as the roof: each platform's links in place of its memory levels (the same
  // drawing: a slanted roof per link, bandwidth × FLOPs per byte over it, under the compute roof)
  const bool link = spec.intensity == "interconnect";
  std::deque<Platform> linked;
  if (link) {
    std::vector<RoofSet> kept;
    for (RoofSet rs : sets) {
      if (rs.p->interconnect.empty()) continue;  // (a platform without links: nothing to draw)
      Platform q = *rs.p;
      q.memory.clear();
      for (const InterconnectLevel& l : rs.p->interconnect) {
        MemoryLevel m;
        m.name = l.name;
        m.bandwidth_bytes_per_s = m.derated_bandwidth_bytes_per_s = l.bandwidth_bytes_per_s;
        q.memory.push_back(m);
      }
      linked.push_back(std::move(q));
      rs.p = &linked.back();
      kept.push_back(rs);
    }
    sets = std::move(kept);
    if (sets.empty()) {
      std::string names;
      for (const auto& n : plats) names += (names.empty() ? "" : ", ") + n;
      throw ConfigError(spec.loc, "a roofline with intensity: interconnect needs a platform with interconnect: levels; " + names + " states none",
                        {Note{{}, "give the platform its links (interconnect: [{name, bandwidth, latency, gpus}]) or draw intensity: memory"}});
    }
  }
  roofline_axes(f, all_pts, sets);
  if (link) f.x.title = "Communication intensity [FLOP/link byte]";
  apply_limits(f, spec);
  const bool overlay = sets.size() > 1;
  const bool any_derating = add_roofs(f, sets, show_theo, show_der, style_preset(spec.style).fixed || spec.physical);
  const bool efficiency = !link && show_der && add_efficiency_roofs(f, sets, r, spec.network);
  // network points on several platforms' roofs: colour = platform (its roofs' colour), marker =
  // network, unless the plot says `color:`; bound is in the plot data CSV
  PlotSpec mspec = spec;
  if (networks && overlay && !given(spec, "color")) mspec.color = "platform";
  add_roofline_markers(f, mspec, r, merge_coincident(all_pts), coinciding, overlay);
  if (any_derating && show_theo && show_der) {
    f.legend.push_back(LegendEntry{"theoretical roof", true, LineStyle{rgb(0x333333), 1.1, Dash::Dashed}, false, {}, {}});
    f.legend.push_back(LegendEntry{"derated roof", true, LineStyle{rgb(0x333333), 1.6, Dash::Solid}, false, {}, {}});
  }

  std::string plat_text;
  for (const auto& n : plats) plat_text += (plat_text.empty() ? "" : ", ") + n;
  if (plats.size() > 2) plat_text = std::to_string(plats.size()) + " platforms (see legend)";
  f.title = spec.title.empty() ? std::string(link ? "Interconnect roofline — " : "Roofline — ") + (overlay ? s.name : (sets.empty() ? plat_text : sets[0].p->title.empty() ? plat_text : sets[0].p->title)) : spec.title;
  f.subtitle = plat_text + (spec.network.empty() ? "" : " · " + spec.network) + " · " + dtypes_text + " · " + conventions(set) + " · " + (networks ? "networks" : "layers") +
               (on_derated && (any_derating || efficiency) ? " on derated roofs" : "") + (efficiency ? " (efficiency model: dotted)" : "");
  if (networks)
    if (const std::string ln = launch_note(r, plats, set); !ln.empty()) f.subtitle += " · " + ln;
  if (link) f.subtitle += " · what communicates";
  if (hidden > 0) f.subtitle += " · " + std::to_string(hidden) + " not drawn (0 FLOPs or 0 bytes)";
  if (coinciding > 0) f.subtitle += " · " + grouped(coinciding) + " more points on drawn markers";

  std::vector<std::string> head = {"platform", "network", "label", "point", "op", link ? "comm_intensity" : "intensity", "performance_flops_per_s", "bound"};
  if (networks) head.push_back("launch_share");  // the share of a network's time that is kernel launches
  out.data_csv = csv_line(head);
  for (const auto& p : all_pts) {
    std::vector<std::string> cells = {p.platform, p.network, p.label, std::to_string(p.point), p.op, format_number(p.x), format_number(p.y), p.bound};
    if (networks) cells.push_back(p.launch_share >= 0 ? format_number(p.launch_share) : "");
    out.data_csv += csv_line(cells);
  }
  return out;
}

// ---------------------------------------------------------------- trend

double x_of_row(const Row& row, const std::string& x, const RunResult& r, size_t point, bool& ok) {
  ok = true;
  auto dim = [&](size_t i) -> double {  // of the first output, e.g. 1x64x56x56
    ok = i < row.output_shape.size();
    return ok ? static_cast<double>(row.output_shape[i]) : NAN;
  };
  if (x == "output_size") return dim(2);
  if (x == "out_channels") return dim(1);
  for (const auto& [k, v] : r.points[point].bindings)
    if (k == x) {
      auto n = parse_double(v);
      ok = n.has_value();
      return n ? *n : NAN;
    }
  ok = false;
  return NAN;
}

}  // namespace

std::vector<P> thin_line(const std::vector<P>& pts, const Axis& x, double columns) {
  if (pts.size() <= static_cast<size_t>(4 * columns) || columns < 1) return pts;
  const bool log = x.scale == Scale::Log;
  auto pos = [&](double v) { return log ? std::log10(v) : v; };
  const double lo = pos(x.min), span = pos(x.max) - lo;
  for (size_t i = 1; i < pts.size(); ++i)
    if (!(pts[i].x >= pts[i - 1].x) || (log && !(pts[i - 1].x > 0))) return pts;
  if (!(span > 0) || !std::isfinite(span)) return pts;
  std::vector<P> out;
  size_t first = 0;
  while (first < pts.size()) {
    const double col = std::floor((pos(pts[first].x) - lo) / span * columns);
    size_t last = first, low = first, high = first;
    while (last + 1 < pts.size() && std::floor((pos(pts[last + 1].x) - lo) / span * columns) == col) {
      ++last;
      if (pts[last].y < pts[low].y) low = last;
      if (pts[last].y > pts[high].y) high = last;
    }
    std::vector<size_t> keep{first, low, high, last};
    std::sort(keep.begin(), keep.end());
    keep.erase(std::unique(keep.begin(), keep.end()), keep.end());
    for (size_t k : keep) out.push_back(pts[k]);
    first = last + 1;
  }
  return out;
}

bool trend_reads_rows(const PlotSpec& spec) {
  return spec.kind == Kind::Trend && spec.x != "layer" && (!spec.layer.empty() || spec.x == "output_size" || spec.x == "out_channels");
}

namespace {

BuiltFigure trend(const PlotSpec& spec, const RunResult& r, const Scenario& s) {
  BuiltFigure out;
  Figure& f = out.figure;
  f.width = spec.width, f.height = spec.height;
  const ColumnInfo* yc = column(spec.y);
  const Settings& set = r.results.front().settings;
  bool platform_free = yc->platform_free;
  std::string series_by = spec.series == "auto" ? (platform_free ? "network" : "platform") : spec.series;
  bool categorical = spec.x == "layer";
  // series → (x, y, x label)
  struct S {
    std::string name;
    std::vector<P> pts;
    std::vector<char> over;  // per point (summary totals): 1 where the network does not fit in memory
    std::string platform;    // the platform whose line it is, when the series are platforms (its colour)
  };
  auto shown = [&](const std::string& platform, const std::string& slot) {
    return spec.platforms.empty() || std::find(spec.platforms.begin(), spec.platforms.end(), platform) != spec.platforms.end() ||
           std::find(spec.platforms.begin(), spec.platforms.end(), slot) != spec.platforms.end();
  };
  std::vector<S> series;
  std::vector<std::string> cats;
  auto series_of = [&](const std::string& key) -> S& {
    for (auto& sr : series)
      if (sr.name == key) return sr;
    series.push_back(S{key, {}, {}, series_by == "platform" ? key : std::string()});
    return series.back();
  };
  std::string net = spec.network.empty() ? first_network(r) : spec.network;
  const size_t nets_shown = network_names(r).size();
  int skipped_zero = 0;
  bool x_non_numeric = false;
  std::map<size_t, std::string> slot_names;
  for (size_t pi = 0; pi < r.results.size(); ++pi) {
    const PointResult& pr = r.results[pi];
    if (categorical) {
      if (pi != static_cast<size_t>(spec.point)) continue;
      for (const auto& row : pr.rows) {
        if (row.network != net || (!spec.op.empty() && row.op != spec.op)) continue;
        if (row.cost.flops == 0 && spec.y.find("intensity") != std::string::npos) {
          if (row.platform == pr.platforms.front()->name) ++skipped_zero;  // counted once, not per platform
          continue;
        }
        std::string key = series_by == "platform" ? row.platform : row.network;
        if (platform_free && row.platform != pr.platforms.front()->name) continue;
        if (std::find(cats.begin(), cats.end(), row.layer) == cats.end()) cats.push_back(row.layer);
        double xi = static_cast<double>(std::find(cats.begin(), cats.end(), row.layer) - cats.begin());
        series_of(key).pts.push_back({xi, row_value(row, spec.y)});
      }
      continue;
    }
    if (trend_reads_rows(spec)) {
      for (const auto& row : pr.rows) {
        if (!spec.layer.empty() && row.layer != spec.layer) continue;
        if (!spec.network.empty() && row.network != spec.network) continue;
        if (!spec.op.empty() && row.op != spec.op) continue;
        if (platform_free && row.platform != pr.platforms.front()->name) continue;
        if (!shown(row.platform, row.platform)) continue;
        bool ok;
        double xv = x_of_row(row, spec.x, r, pi, ok);
        if (!ok) {
          x_non_numeric = true;
          continue;
        }
        std::string key = series_by == "platform" ? row.platform : series_by == "layer" ? row.layer : row.network;
        series_of(key).pts.push_back({xv, row_value(row, spec.y)});
      }
      continue;
    }
    for (const auto& sm : pr.summary) {
      if (platform_free && sm.platform != pr.platforms.front()->name) continue;
      if (!spec.network.empty() && sm.network != spec.network) continue;
      // what-if variants (one `platforms:` entry, a name per point) are one platform swept: one series
      const size_t slot = slot_at(pr, sm.platform);
      auto [named, fresh] = slot_names.try_emplace(slot);
      if (fresh) named->second = slot_name(r, s, slot);  // a scan of every point: once per slot
      const std::string& plat = named->second;
      if (!shown(sm.platform, plat)) continue;
      std::string key = series_by == "platform" ? plat : series_by == "network" ? sm.network : series_by + "=" + (env_find(r.points[pi].bindings, series_by) ? *env_find(r.points[pi].bindings, series_by) : "?");
      // a platform-dependent value split by something else needs one line per platform too
      if (!platform_free && series_by != "platform" && pr.platforms.size() > 1) key += " · " + plat;
      // and totals of several networks are never joined into one line
      if (series_by != "network" && spec.network.empty() && nets_shown > 1) key += " · " + sm.network;
      const std::string* v = env_find(r.points[pi].bindings, spec.x);
      auto xv = v ? parse_double(*v) : std::nullopt;
      if (!xv) {
        x_non_numeric = true;
        // categorical sweep values
        std::string label = v ? *v : "?";
        if (std::find(cats.begin(), cats.end(), label) == cats.end()) cats.push_back(label);
        xv = static_cast<double>(std::find(cats.begin(), cats.end(), label) - cats.begin());
      }
      S& sr = series_of(key);
      sr.pts.push_back({*xv, summary_value(sm, spec.y)});
      sr.over.resize(sr.pts.size() - 1, 0);
      sr.over.push_back(over_memory(sm));
    }
  }
  if (x_non_numeric && !cats.empty()) categorical = true;
  bool any_over = false;
  for (auto& sr : series) {
    sr.over.resize(sr.pts.size(), 0);
    std::vector<size_t> order(sr.pts.size());
    for (size_t k = 0; k < order.size(); ++k) order[k] = k;
    std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return sr.pts[a].x < sr.pts[b].x; });
    std::vector<P> pts;
    std::vector<char> over;
    for (size_t k : order) pts.push_back(sr.pts[k]), over.push_back(sr.over[k]), any_over = any_over || sr.over[k];
    sr.pts = std::move(pts), sr.over = std::move(over);
  }

  std::vector<double> xs, ys;
  for (const auto& sr : series)
    for (const auto& p : sr.pts) xs.push_back(p.x), ys.push_back(p.y);
  // ridge references when y is intensity
  std::vector<Reference> refs;
  std::vector<Line> ridge_lines;
  // what-if variants (a platform per sweep point in one `platforms:` entry) each apply at their
  // own points: their ridge is a line through those points, not a reference across every x
  std::set<std::string> varying;
  if (spec.y == "intensity" && !categorical) {
    size_t slots = 0;
    for (const auto& pr : r.results) slots = std::max(slots, pr.platforms.size());
    for (size_t k = 0; k < slots; ++k) {
      std::set<std::string> names;
      Line L;
      for (size_t pi = 0; pi < r.results.size(); ++pi) {
        const PointResult& pr = r.results[pi];
        if (k >= pr.platforms.size()) continue;
        const Platform& pl = *pr.platforms[k];
        names.insert(pl.name);
        const ComputeRoof* roof = pl.roof_for(set.dtype);
        const std::string* v = env_find(r.points[pi].bindings, spec.x);
        auto xv = v ? parse_double(*v) : std::nullopt;
        if (roof && xv && !pl.memory.empty()) L.pts.push_back({*xv, roof->derated_flops_per_s / pl.memory.front().derated_bandwidth_bytes_per_s});
      }
      if (names.size() < 2 || L.pts.size() < 2) continue;
      varying.insert(names.begin(), names.end());
      std::stable_sort(L.pts.begin(), L.pts.end(), [](const P& a, const P& b) { return a.x < b.x; });
      L.pts.erase(std::unique(L.pts.begin(), L.pts.end(), [](const P& a, const P& b) { return close_to(a.x, b.x) && close_to(a.y, b.y); }), L.pts.end());
      L.style = LineStyle{rgb(ridge_lines.size() % 2 ? 0x666666 : 0x333333), 1.0, ridge_lines.size() % 2 ? Dash::Dotted : Dash::Dashed};
      L.label = slot_name(r, s, k) + " ridge";
      L.label_at = 0.5;
      for (const P& q : L.pts) ys.push_back(q.y);
      ridge_lines.push_back(L);
    }
  }
  if (spec.y == "intensity") {
    size_t ci = 0;
    for (const auto& name : platform_names(r)) {
      if (varying.count(name)) continue;
      const Platform* p = find_platform(r, name);
      if (!p) continue;
      const ComputeRoof* roof = p->roof_for(set.dtype);
      if (!roof) continue;
      const MemoryLevel& m = p->memory.front();
      double ridge = roof->derated_flops_per_s / m.derated_bandwidth_bytes_per_s;
      char buf[160];
      std::snprintf(buf, sizeof buf, "%s ridge %.3g", name.c_str(), ridge);
      refs.push_back(Reference{false, ridge, LineStyle{rgb(ci % 2 ? 0x666666 : 0x333333), 1.0, ci % 2 ? Dash::Dotted : Dash::Dashed}, buf});
      ys.push_back(ridge);
      ++ci;
    }
  }
  // memory size references when y is a memory footprint: one line per platform that states it
  if (spec.y == "memory_footprint_bytes" || spec.y == "weight_footprint_bytes" || spec.y == "kv_cache_bytes") {
    size_t ci = 0;
    for (const auto& name : platform_names(r)) {
      const Platform* p = find_platform(r, name);
      if (!p) continue;
      const MemoryLevel* big = nullptr;
      for (const auto& m : p->memory)
        if (m.size_bytes > 0 && (!big || m.size_bytes > big->size_bytes)) big = &m;
      if (!big) continue;
      char buf[160];
      std::snprintf(buf, sizeof buf, "%s %.0f GiB", name.c_str(), big->size_bytes / 1073741824.0);  // (the level: in the platform)
      refs.push_back(Reference{false, big->size_bytes, LineStyle{rgb(ci % 2 ? 0x666666 : 0x333333), 1.0, ci % 2 ? Dash::Dotted : Dash::Dashed}, buf});
      ys.push_back(big->size_bytes);
      ++ci;
    }
  }
  if (categorical) {
    f.x.categories = cats;
    f.x.min = -0.5;
    f.x.max = static_cast<double>(cats.size()) - 0.5;
  } else {
    auto_range(f.x, xs, spec.xscale, false);
    std::vector<double> distinct = xs;
    std::sort(distinct.begin(), distinct.end());
    distinct.erase(std::unique(distinct.begin(), distinct.end()), distinct.end());
    if (distinct.size() <= 12) f.x.ticks = distinct;  // label the swept values themselves
  }
  auto_range(f.y, ys, spec.yscale, true);
  // a footprint against memory sizes in GiB: the axis in GiB too (decades of a binary prefix)
  if ((spec.y == "memory_footprint_bytes" || spec.y == "weight_footprint_bytes" || spec.y == "kv_cache_bytes") && f.y.scale == Scale::Log &&
      f.y.min > 0) {
    double unit = 1;
    for (double u : {1099511627776.0, 1073741824.0, 1048576.0, 1024.0})  // the largest the lowest value reaches: ticks of 1 and up
      if (f.y.min >= u) {
        unit = u;
        break;
      }
    std::vector<double> ticks;
    for (double v = unit * std::pow(10.0, std::floor(std::log10(f.y.min / unit))); v <= f.y.max * 1.0001; v *= 10)
      if (v >= f.y.min * 0.9999) ticks.push_back(v);
    if (ticks.size() >= 2) {
      f.y.iec = true;
      f.y.ticks = ticks;
    }
  }
  apply_limits(f, spec);
  f.x.title = spec.x == "layer" ? "Layer" : spec.x == "output_size" ? "Output size [H]" : spec.x == "out_channels" ? "Output channels" : var_title(s, spec.x);
  f.y.title = yc->title;
  f.y.unit = yc->unit;
  // A series of more points than the chart has room for markers is a line alone (markers would
  // merge into a band), and a line of more points than pixel columns keeps per column what draws
  // its pixels (thin_line).
  const size_t max_marked = 60;
  const double columns = spec.width * spec.dpi / 72;
  // series that are platforms take each platform's colour of the run (its roofs' in a roofline),
  // when no two of them share one; else the series palette
  std::set<size_t> identities;
  bool by_platform = !series.empty() && series.size() <= 6;
  for (const auto& sr : series) by_platform = by_platform && !sr.platform.empty() && identities.insert(platform_identity(r, sr.platform) % 6).second;
  auto series_color = [&](size_t i) { return by_platform ? roof_color(platform_identity(r, series[i].platform)) : palette(i); };
  for (size_t i = 0; i < series.size(); ++i) {
    const bool marked = categorical || series[i].pts.size() <= max_marked;
    Line L;
    L.pts = categorical ? series[i].pts : thin_line(series[i].pts, f.x, columns);
    L.style = LineStyle{series_color(i), 1.6, dash_cycle(i)};
    // past the 8 colours and shapes a style repeats: the line carries its name too
    if (series.size() > 8) {
      L.label = series[i].name;
      L.label_at = 0.9 - 0.6 * static_cast<double>(i % 8) / 8;
    }
    if (!categorical) f.lines.push_back(L);  // layers are not a continuum: markers only
    for (size_t k = 0; k < series[i].pts.size(); ++k) {
      const bool over = series[i].over[k];
      if (!marked && !over) continue;  // (a point that does not fit is always marked)
      Point q;
      q.at = series[i].pts[k];
      q.marker = marker_cycle(i);
      q.fill = series_color(i);
      q.size = 6.5;
      q.hollow = over;
      f.points.push_back(q);
    }
    f.legend.push_back(LegendEntry{series[i].name, !categorical, L.style, marked, marker_cycle(i), series_color(i)});
  }
  if (any_over) {
    // a value the same on every platform (a footprint) is drawn once, from the first platform: its memory is the one
    const bool several = r.results.front().platforms.size() > 1 && platform_free;
    LegendEntry e{several ? "over " + slot_name(r, s, 0) + "'s memory" : "does not fit in memory", false, {}, true, Marker::Circle, rgb(0x444444)};
    e.hollow = true;
    f.legend.push_back(e);
  }
  out.series = series.size();
  for (auto& ref : refs) f.refs.push_back(ref);
  for (auto& l : ridge_lines) f.lines.push_back(l);
  f.title = spec.title.empty() ? std::string(yc->title).substr(0, std::string(yc->title).find(" [")) + " vs " + f.x.title : spec.title;
  f.subtitle = s.name + " · " + (spec.layer.empty() ? (spec.x == "layer" ? "per layer" : "network totals") : "layer " + spec.layer) + " · " +
               dtype_name(set.dtype) + " · " + conventions(set);
  // a network total's time holds the launches (a layer's row does not)
  if (!trend_reads_rows(spec) && !categorical && (spec.y.find("time") != std::string::npos || spec.y.find("tokens") != std::string::npos || spec.y.find("achieved") != std::string::npos))
    if (const std::string ln = launch_note(r, spec.platforms, set); !ln.empty()) f.subtitle += " · " + ln;
  if (!refs.empty() || !ridge_lines.empty()) f.subtitle += spec.y == "intensity" ? " · dashed/dotted: ridge points (derated)" : " · dashed/dotted: memory sizes";
  if (skipped_zero > 0) f.subtitle += " · " + std::to_string(skipped_zero) + " layers with 0 FLOPs left out";
  // x axis of a categorical layer chart: many names need rotated labels — use indices beyond 12
  if (categorical && cats.size() > 12) {
    for (size_t i = 0; i < cats.size(); ++i) f.x.categories[i] = (i % ((cats.size() + 11) / 12) == 0) ? std::to_string(i) : "";
    f.x.title = "Layer index (names in the plot data CSV)";
  }
  out.data_csv = csv_line({"series", spec.x, spec.y, "fits_in_memory"});
  for (const auto& sr : series)
    for (size_t k = 0; k < sr.pts.size(); ++k) {
      const P& p = sr.pts[k];
      out.data_csv += csv_line({sr.name, categorical && static_cast<size_t>(p.x) < cats.size() ? cats[static_cast<size_t>(p.x)] : format_number(p.x),
                                format_number(p.y), k < sr.over.size() && sr.over[k] ? "false" : "true"});
    }
  return out;
}

// ---------------------------------------------------------------- per-layer bars

BuiltFigure layers(const PlotSpec& spec, const RunResult& r, const Scenario& s, const std::string& platform) {
  BuiltFigure out;
  Figure& f = out.figure;
  size_t pi = static_cast<size_t>(spec.point);
  const PointResult& pr = r.results[pi];
  std::string net = spec.network.empty() ? first_network(r) : spec.network;
  std::vector<const Row*> rows;
  for (const auto& row : pr.rows)
    if (row.platform == platform && row.network == net) rows.push_back(&row);
  bool time = spec.metric == "time_s";
  // hundreds of layers: the largest ones and an "others" bar, so the chart fits a page
  size_t keep = rows.size();
  {
    bool derated_bars = time && std::any_of(rows.begin(), rows.end(), [](const Row* row) { return row->derated.time_s != row->theoretical.time_s; });
    double pitch = spec.font_size * 1.45 * (derated_bars ? 1.5 : 1);
    if (style_preset(spec.style).fixed || spec.physical) keep = std::max<size_t>(4, static_cast<size_t>((spec.height - 8 * spec.font_size) / pitch));
    else if (rows.size() > 60) keep = 40;
  }
  double others_theo = 0, others_der = 0;
  size_t others = 0;
  const std::vector<const Row*> all_rows = rows;  // the plot data keeps every layer
  if (rows.size() > keep) {
    auto value = [&](const Row* row) { return time ? row->theoretical.time_s : row_value(*row, spec.metric); };
    std::vector<const Row*> sorted = rows;
    std::stable_sort(sorted.begin(), sorted.end(), [&](const Row* a, const Row* b) { return value(a) > value(b); });
    for (size_t i = keep - 1; i < sorted.size(); ++i) {
      others_theo += value(sorted[i]);
      others_der += time ? sorted[i]->derated.time_s : 0;
      ++others;
    }
    sorted.resize(keep - 1);
    rows = sorted;  // largest first
  }
  BarSeries theo, der;
  theo.legend = time ? "theoretical roofs" : spec.metric;
  der.legend = "derated roofs";
  der.hatched = true;
  for (const Row* row : rows) {
    f.y.categories.push_back(row->layer);
    if (time) {
      theo.values.push_back(row->theoretical.time_s);
      theo.colors.push_back(bound_color(bound_name(row->theoretical.bound)));
      der.values.push_back(row->derated.time_s);
      der.colors.push_back(bound_color(bound_name(row->derated.bound)));
    } else {
      theo.values.push_back(row_value(*row, spec.metric));
      theo.colors.push_back(bound_color(bound_name(row->theoretical.bound)));
    }
  }
  if (others > 0) {
    // the sum of the rest can dwarf the largest layers: its value is written in its label, and
    // the axis is scaled to the layers shown (the bar runs to the edge when longer)
    f.y.categories.push_back("others (" + std::to_string(others) + " layers" + (time ? ", " + si(others_theo, "s", 3) : "") + ")");
    theo.values.push_back(others_theo);
    theo.colors.push_back(bound_color("none"));
    der.values.push_back(others_der);
    der.colors.push_back(bound_color("none"));
  }
  f.bars.push_back(theo);
  bool any_derated = time && std::any_of(rows.begin(), rows.end(), [](const Row* row) { return row->derated.time_s != row->theoretical.time_s; });
  if (any_derated) f.bars.push_back(der);
  size_t n = f.y.categories.size();
  f.width = spec.width;
  bool fixed = style_preset(spec.style).fixed || spec.physical;
  f.height = fixed ? spec.height : std::max(spec.height, 110.0 + static_cast<double>(n) * (any_derated ? 17.0 : 12.0));
  f.y.min = -0.5;
  f.y.max = static_cast<double>(n) - 0.5;
  // categories top to bottom: flip by reversing the axis direction
  std::reverse(f.y.categories.begin(), f.y.categories.end());
  for (auto& b : f.bars) {
    std::reverse(b.values.begin(), b.values.end());
    std::reverse(b.colors.begin(), b.colors.end());
  }
  std::vector<double> vals;
  for (const auto& b : f.bars)
    for (size_t i = others > 0 ? 1 : 0; i < b.values.size(); ++i)  // after the flip, "others" is first
      if (b.values[i] > 0) vals.push_back(b.values[i]);
  // bars start at zero: linear unless asked for log (a log axis has no zero to start from)
  // linear unless the values span more than 100× (then small bars would vanish): log
  double vlo = vals.empty() ? 1 : *std::min_element(vals.begin(), vals.end()), vhi = vals.empty() ? 1 : *std::max_element(vals.begin(), vals.end());
  auto_range(f.x, vals, spec.xscale == "auto" ? (vhi > 100 * vlo ? "log" : "linear") : spec.xscale, true);
  if (f.x.scale == Scale::Linear) f.x.min = 0;
  const ColumnInfo* c = column(spec.metric);
  f.x.title = c ? c->title : spec.metric;
  if (time) f.x.title = "Time per layer [s]";
  f.x.unit = c ? c->unit : "";
  f.y.title = "";
  for (const char* b : {"memory", "compute"})  // only the bounds that occur
    if (std::any_of(rows.begin(), rows.end(), [&](const Row* row) { return bound_name(row->theoretical.bound) == std::string(b) || bound_name(row->derated.bound) == std::string(b); }))
      f.legend.push_back(LegendEntry{std::string(b) + " bound", false, {}, true, Marker::Square, bound_color(b)});
  if (any_derated) {
    f.legend.push_back(LegendEntry{"upper bar: theoretical", false, {}, false, {}, {}});
    f.legend.push_back(LegendEntry{"lower bar (hatched): derated", false, {}, false, {}, {}});
  }
  const Platform* p = find_platform(r, platform);
  f.title = spec.title.empty() ? (time ? "Time per layer — " : "Per layer — ") + (p && !p->title.empty() ? p->title : platform) : spec.title;
  f.subtitle = s.name + " · " + net + (r.points.size() > 1 ? " · " + point_text(r, pi) : "") + " · " + dtype_name(pr.settings.dtype) + " · " +
               conventions(pr.settings);
  out.data_csv = csv_line({"layer", "op", spec.metric, "bound", time ? "derated_time_s" : "", time ? "derated_bound" : ""});
  for (const Row* row : all_rows)
    out.data_csv += csv_line({row->layer, row->op, format_number(time ? row->theoretical.time_s : row_value(*row, spec.metric)), bound_name(row->theoretical.bound),
                              time ? format_number(row->derated.time_s) : "", time ? bound_name(row->derated.bound) : ""});
  return out;
}

// ---------------------------------------------------------------- heatmap

BuiltFigure heatmap(const PlotSpec& spec, const RunResult& r, const Scenario& s, const std::string& platform) {
  BuiltFigure out;
  Figure& f = out.figure;
  f.width = spec.width, f.height = spec.height;
  Heatmap h;
  std::string xv = spec.x, yv = spec.layer;  // heatmap: x and y are sweep variables (y stored in `layer`)
  std::string net = spec.network.empty() ? first_network(r) : spec.network;
  size_t slot = platform_slot(r, platform);
  std::map<std::pair<std::string, std::string>, double> cell;
  std::set<std::pair<std::string, std::string>> over;  // cells whose network does not fit in memory
  for (size_t pi = 0; pi < r.results.size(); ++pi) {
    const std::string* a = env_find(r.points[pi].bindings, xv);
    const std::string* b = env_find(r.points[pi].bindings, yv);
    if (!a || !b) continue;
    if (std::find(h.xcats.begin(), h.xcats.end(), *a) == h.xcats.end()) h.xcats.push_back(*a);
    if (std::find(h.ycats.begin(), h.ycats.end(), *b) == h.ycats.end()) h.ycats.push_back(*b);
    // what-if platforms get a name per point: take the one in the same `platforms:` entry
    const PointResult& pr = r.results[pi];
    if (slot >= pr.platforms.size()) continue;
    for (const auto& sm : pr.summary)
      if (sm.platform == pr.platforms[slot]->name && sm.network == net) {
        cell[{*a, *b}] = summary_value(sm, spec.value);
        if (over_memory(sm)) over.insert({*a, *b});
      }
  }
  auto numeric_sort = [](std::vector<std::string>& v) {
    if (std::all_of(v.begin(), v.end(), [](const std::string& x) { return parse_double(x).has_value(); }))
      std::stable_sort(v.begin(), v.end(), [](const std::string& a, const std::string& b) { return *parse_double(a) < *parse_double(b); });
  };
  numeric_sort(h.xcats);
  numeric_sort(h.ycats);
  for (const auto& yc : h.ycats) {
    std::vector<double> row;
    std::vector<char> row_over;
    for (const auto& xc : h.xcats) {
      auto it = cell.find({xc, yc});
      row.push_back(it == cell.end() ? NAN : it->second);
      row_over.push_back(over.count({xc, yc}) ? 1 : 0);
    }
    h.values.push_back(row);
    h.over.push_back(row_over);
  }
  const ColumnInfo* c = column(spec.value);
  h.value_label = c ? c->title : spec.value;
  h.value_unit = c ? c->unit : "";
  double lo = 1e300, hi = 0;
  for (const auto& row : h.values)
    for (double v : row)
      if (v > 0 && std::isfinite(v)) lo = std::min(lo, v), hi = std::max(hi, v);
  h.log_colors = hi / lo > 30;
  if (spec.color_scale == "range" && spec.color_range.size() == 2) {  // [lo, hi] given
    h.range_lo = spec.color_range[0], h.range_hi = spec.color_range[1];
    h.log_colors = h.range_lo > 0 && h.range_hi / h.range_lo > 30;
  }
  f.heatmap = h;
  f.grid = false;
  f.x.title = var_title(s, xv);
  f.y.title = var_title(s, yv);
  f.title = spec.title.empty() ? std::string(c ? c->title : spec.value).substr(0, std::string(c ? c->title : spec.value).find(" [")) + " — " + platform : spec.title;
  f.subtitle = s.name + " · " + net + " network totals · " + dtype_name(r.results.front().settings.dtype) + " · " + conventions(r.results.front().settings);
  if (spec.value.find("time") != std::string::npos || spec.value.find("tokens") != std::string::npos || spec.value.find("achieved") != std::string::npos)
    if (const std::string ln = launch_note(r, {}, r.results.front().settings); !ln.empty()) f.subtitle += " · " + ln;
  if (!over.empty()) f.subtitle += " · hatched: does not fit in memory";
  out.data_csv = csv_line({xv, yv, spec.value, "fits_in_memory"});
  for (size_t yi = 0; yi < h.ycats.size(); ++yi)
    for (size_t xi = 0; xi < h.xcats.size(); ++xi)
      out.data_csv += csv_line({h.xcats[xi], h.ycats[yi], format_number(h.values[yi][xi]), h.over[yi][xi] ? "false" : "true"});
  return out;
}

std::string sanitize(const std::string& s) {
  std::string o;
  for (char c : s) o += (std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_' || c == '.') ? c : '_';
  return o;
}

}  // namespace

const std::vector<std::string>& plottable_columns() {
  static const std::vector<std::string> v = [] {
    std::vector<std::string> o;
    for (const auto& c : kColumns) o.push_back(c.name);
    return o;
  }();
  return v;
}

namespace {
std::vector<BuiltFigure> build_figures_as_given(const PlotSpec& spec, const RunResult& r, const Scenario& s);

// `subtitle: short` keeps what short_subtitle keeps; `none` drops the line.
std::string subtitle_as(const std::string& mode, const std::string& full) {
  if (mode == "none") return "";
  return mode == "short" ? short_subtitle(full) : full;
}
}

std::vector<BuiltFigure> build_figures(const PlotSpec& given_spec, const RunResult& r, const Scenario& s) {
  std::vector<BuiltFigure> out = build_figures_as_given(resolved(given_spec), r, s);
  StylePreset st = style_preset(given_spec.style);
  for (BuiltFigure& b : out) {
    b.spec = &given_spec;
    Figure& f = b.figure;
    f.font_size = resolved(given_spec).font_size;
    f.line_scale = st.line_scale;
    f.marker_scale = st.marker_scale;
    f.fixed_size = st.fixed || given_spec.physical;
    if (!st.title && given_spec.title.empty()) f.title.clear();  // a paper figure's title is its caption
    f.subtitle = subtitle_as(given_spec.subtitle, f.subtitle);
  }
  return out;
}

namespace {

std::vector<BuiltFigure> build_figures_as_given(const PlotSpec& spec, const RunResult& r, const Scenario& s) {
  std::vector<BuiltFigure> out;
  std::vector<std::string> all = platform_names(r);
  std::vector<std::string> plats = spec.platforms.empty() ? all : spec.platforms;
  for (size_t pi = 0; pi < plats.size(); ++pi)
    if (const std::string& p = plats[pi]; std::find(all.begin(), all.end(), p) == all.end()) {
      // what-if platforms are named per point ("x@2.2GHz"): accept the base name for heatmaps
      bool prefix = platform_slot(r, p) != SIZE_MAX;
      if (!(spec.kind == Kind::Heatmap && prefix)) {
        std::string hint = did_you_mean(p, all);
        const SourceLoc& at = pi < spec.platform_locs.size() && !spec.platforms.empty() ? spec.platform_locs[pi] : spec.loc;
        throw ConfigError(at, "plot names platform '" + p + "', which this run does not evaluate", {Note{{}, hint.empty() ? "platforms here: " + [&] { std::string t; for (auto& a : all) t += (t.empty() ? "" : ", ") + a; return t; }() : hint}});
      }
    }
  if (!spec.network.empty()) {
    std::vector<std::string> nets = network_names(r);
    if (std::find(nets.begin(), nets.end(), spec.network) == nets.end()) {
      std::string hint = did_you_mean(spec.network, nets), list;
      for (const auto& n : nets) list += (list.empty() ? "" : ", ") + n;
      throw ConfigError(spec.network_loc.known() ? spec.network_loc : spec.loc, "plot names network '" + spec.network + "', which this run does not evaluate",
                        {Note{{}, hint.empty() ? "networks here: " + list : hint}});
    }
  }
  if (spec.kind == Kind::Layers && (spec.point < 0 || static_cast<size_t>(spec.point) >= r.points.size()))
    throw ConfigError(spec.loc, "plot point " + std::to_string(spec.point) + " is out of range: the run has " + std::to_string(r.points.size()) + " points");
  auto named = [&](BuiltFigure b, const std::string& def) {
    b.name = sanitize(spec.name.empty() ? def : spec.name + (plats.size() > 1 && !spec.overlay && spec.kind != Kind::Trend ? "_" + def.substr(def.find('_') + 1) : ""));
    b.spec = &spec;
    return b;
  };
  switch (spec.kind) {
    case Kind::Roofline:
      if (spec.overlay || plats.size() == 1) out.push_back(named(roofline(spec, r, s, plats), plats.size() == 1 ? "roofline_" + plats[0] : "roofline"));
      else
        for (const auto& p : plats) out.push_back(named(roofline(spec, r, s, {p}), "roofline_" + p));
      break;
    case Kind::Trend: {
      // more lines than 8 colours and dashes tell apart: one figure per platform when the
      // platforms multiply them; still too many in a plot the scenario asks for: refused
      const std::string stem = "trend_" + spec.y + "_vs_" + spec.x;
      BuiltFigure b = trend(spec, r, s);
      const size_t kMaxSeries = 8;
      if (b.series > kMaxSeries && spec.platforms.empty() && all.size() > 1 && spec.series != "platform") {
        std::vector<BuiltFigure> facets;
        for (const auto& p : all) {
          PlotSpec one = spec;
          one.platforms = {p};
          BuiltFigure fb = trend(one, r, s);
          if (fb.series == 0) continue;
          fb.figure.title += " — " + p;
          fb.name = sanitize((spec.name.empty() ? stem : spec.name) + "_" + p);
          fb.spec = &spec;
          facets.push_back(std::move(fb));
        }
        size_t most = 0;
        for (const auto& fb : facets) most = std::max(most, fb.series);
        if (most <= kMaxSeries || !spec.loc.known()) {
          for (auto& fb : facets) out.push_back(std::move(fb));
          break;
        }
        b.series = most;
      }
      if (b.series > kMaxSeries && spec.loc.known())
        throw ConfigError(spec.loc, "this trend would draw " + std::to_string(b.series) + " lines" + (spec.platforms.empty() && all.size() > 1 ? " on each platform" : "") +
                                        "; a figure tells 8 apart",
                          {Note{{}, "pin a variable (rsim run --set NAME=VALUE, or fewer values), pick `series:` with fewer values, give `network:`, or one platform with `platforms: [NAME]`"}});
      out.push_back(named(std::move(b), stem));
      break;
    }
    case Kind::Layers:
      for (const auto& p : spec.platforms.empty() ? std::vector<std::string>{all.front()} : plats)
        out.push_back(named(layers(spec, r, s, p), "layers_" + p));
      break;
    case Kind::Heatmap:
      for (const auto& p : spec.platforms.empty() ? std::vector<std::string>{r.results.front().platforms.front()->name} : plats) {
        std::string shown = slot_name(r, s, platform_slot(r, p));
        BuiltFigure b = heatmap(spec, r, s, p);
        if (spec.title.empty()) b.figure.title = b.figure.title.substr(0, b.figure.title.rfind(" — ")) + " — " + shown;
        std::string stem = shown.substr(0, shown.find(" (what-if)"));
        out.push_back(named(std::move(b), "heatmap_" + stem));
      }
      if (spec.color_scale == "shared" && out.size() > 1) {  // one range over every heatmap of the entry
        double lo = 1e300, hi = -1e300, lo_pos = 1e300;
        for (const auto& b : out)
          for (const auto& row : b.figure.heatmap->values)
            for (double v : row)
              if (std::isfinite(v)) lo = std::min(lo, v), hi = std::max(hi, v), lo_pos = v > 0 ? std::min(lo_pos, v) : lo_pos;
        if (hi > lo)
          for (auto& b : out) {
            Heatmap& h = *b.figure.heatmap;
            h.log_colors = lo > 0 && hi / lo_pos > 30;
            h.range_lo = h.log_colors ? lo_pos : lo, h.range_hi = hi;
            b.figure.subtitle += " · colour scale shared by " + std::to_string(out.size()) + " heatmaps";
          }
      }
      break;
  }
  return out;
}

}  // namespace

std::vector<PlotSpec> default_plot_specs(const RunResult& r, const Scenario&) {
  std::vector<PlotSpec> specs;
  std::vector<std::string> plats = platform_names(r);
  PlotSpec roof;
  roof.kind = Kind::Roofline;
  // what-if runs name a platform per point: draw those variants together
  size_t per_point = r.results.front().platforms.size();
  roof.overlay = plats.size() > per_point;
  if (roof.overlay) roof.name = "roofline";
  specs.push_back(roof);
  auto value_of = [&](size_t pi, const std::string& name) {
    const std::string* v = env_find(r.points[pi].bindings, name);
    return v ? *v : std::string();
  };
  for (const auto& v : r.var_names) {
    PlotSpec t;
    t.kind = Kind::Trend;
    t.x = v;
    t.y = "intensity";
    // A value of v at several points (a grid of v and other variables) would join points of
    // different settings into one zig-zag line: one line per value of another variable that tells
    // them apart (at most 12 lines), or no default trend over v.
    std::set<std::string> xs;
    bool repeats = false;
    for (size_t pi = 0; pi < r.points.size() && !repeats; ++pi) repeats = !xs.insert(value_of(pi, v)).second;
    if (repeats) {
      std::string by;
      for (const auto& u : r.var_names) {
        if (!by.empty()) break;
        if (u == v) continue;
        std::set<std::pair<std::string, std::string>> pairs;
        std::set<std::string> values;
        bool apart = true;
        for (size_t pi = 0; pi < r.points.size() && apart; ++pi) {
          apart = pairs.emplace(value_of(pi, v), value_of(pi, u)).second;
          values.insert(value_of(pi, u));
        }
        if (apart && values.size() <= 12) by = u;
      }
      if (by.empty()) continue;
      t.series = by;
    }
    specs.push_back(t);
    if (plats.size() > per_point || r.results.front().rows.size() > r.results.front().summary.size()) {
      PlotSpec tt = t;
      tt.y = "derated_time_s";
      specs.push_back(tt);
    }
  }
  if (r.var_names.empty()) {
    PlotSpec t;
    t.kind = Kind::Trend;
    t.x = "layer";
    t.y = "intensity";
    specs.push_back(t);
    PlotSpec l;
    l.kind = Kind::Layers;
    specs.push_back(l);
  }
  return specs;
}

StylePreset style_preset(const std::string& style) {
  const double mm = 72 / 25.4;
  if (style == "paper") return {88 * mm, 66 * mm, 8, 0.75, 0.8, 300, true, false};
  if (style == "paper-wide") return {180 * mm, 80 * mm, 8, 0.75, 0.8, 300, true, false};
  if (style == "slides") return {720, 405, 14, 1.5, 1.5, 150, true, true};
  return {648, 432, 9, 1, 1, 150, false, true};
}

namespace {


// A length: "88 mm", "3.5 in", "2.5 cm", "250 pt", "1600 px" (pixels of the PNG at the plot's dpi),
// or a plain number of points. Returns points; `physical` says whether it was a printed length.
std::optional<double> parse_length(const CNode& v, const std::string& key, double dpi, bool& physical, Diags& d) {
  auto t = to_string(v, d, key);
  if (!t) return std::nullopt;
  std::string s = *t;
  size_t i = 0;
  while (i < s.size() && (std::isdigit(static_cast<unsigned char>(s[i])) || s[i] == '.' || s[i] == 'e' || s[i] == 'E' || s[i] == '+' || s[i] == '-')) ++i;
  auto num = parse_double(s.substr(0, i));
  std::string unit = s.substr(i);
  unit.erase(0, unit.find_first_not_of(' '));
  static const std::vector<std::string> units = {"mm", "cm", "in", "pt", "px"};
  if (!num || (!unit.empty() && std::find(units.begin(), units.end(), unit) == units.end())) {
    std::string hint = unit.empty() ? "" : did_you_mean(unit, units);
    d.error(v.loc, key + " must be a length such as '88 mm', '3.5 in' or '1600 px', got '" + s + "'", {Note{{}, hint.empty() ? "units: mm, cm, in, pt, px" : hint}});
    return std::nullopt;
  }
  double pts = *num;
  physical = unit != "px" && !unit.empty();
  if (unit == "mm") pts = *num * 72 / 25.4;
  else if (unit == "cm") pts = *num * 72 / 2.54;
  else if (unit == "in") pts = *num * 72;
  else if (unit == "px") pts = *num * 72 / dpi;
  if (pts < 72 || pts > 6000) {
    d.error(v.loc, key + " must be between 1 in (25.4 mm, 72 pt) and 6000 pt, got '" + s + "'");
    return std::nullopt;
  }
  return pts;
}

// style, width, height, font_size, dpi: in a plot or in `settings.figures`
void read_style_keys(MapReader& m, PlotSpec& p, Diags& d) {
  if (const CNode* v = m.get("style")) {
    static const std::vector<std::string> styles = {"screen", "paper", "paper-wide", "slides"};
    auto t = to_string(*v, d, "style");
    if (t && std::find(styles.begin(), styles.end(), *t) == styles.end()) {
      std::string hint = did_you_mean(*t, styles);
      d.error(v->loc, "style cannot be '" + *t + "'", {Note{{}, hint.empty() ? "choose one of: screen, paper, paper-wide, slides" : hint}});
    } else if (t) {
      p.style = *t;
      p.given.push_back("style");
    }
  }
  if (const CNode* v = m.get("dpi")) {
    auto x = to_number(*v, d, "dpi");
    if (x && (*x < 36 || *x > 600)) d.error(v->loc, "dpi must be between 36 and 600");
    else if (x) p.dpi = *x, p.given.push_back("dpi");
  }
  double dpi = given(p, "dpi") ? p.dpi : style_preset(p.style).dpi;
  for (auto [key, dst] : {std::pair<const char*, double*>{"width", &p.width}, {"height", &p.height}})
    if (const CNode* v = m.get(key)) {
      bool phys = false;
      if (auto x = parse_length(*v, key, dpi, phys, d)) {
        *dst = *x;
        p.given.push_back(key);
        p.physical = p.physical || phys;
      }
    }
  if (const CNode* v = m.get("font_size")) {
    auto t = to_string(*v, d, "font_size");
    std::string s = t.value_or("");
    if (s.size() > 2 && s.substr(s.size() - 2) == "pt") s = s.substr(0, s.size() - 2);
    while (!s.empty() && s.back() == ' ') s.pop_back();
    auto x = parse_double(s);
    if (t && (!x || *x < 6 || *x > 40)) d.error(v->loc, "font_size must be between 6 pt and 40 pt, e.g. '8 pt', got '" + *t + "'");
    else if (x) p.font_size = *x, p.given.push_back("font_size");
  }
}

}  // namespace

PlotSpec resolved(const PlotSpec& spec) {
  PlotSpec p = spec;
  StylePreset st = style_preset(p.style);
  if (!given(p, "width")) p.width = st.width;
  if (!given(p, "height")) p.height = st.height;
  if (!given(p, "font_size")) p.font_size = st.font_size;
  if (!given(p, "dpi")) p.dpi = st.dpi;
  return p;
}

void apply_figure_defaults(std::vector<PlotSpec>& specs, const CNode& settings, Diags& d) {
  const CNode* fig = settings.is_map() ? settings.find("figures") : nullptr;
  if (!fig) return;
  PlotSpec def;
  MapReader m(*fig, keys::map("figures"), "settings.figures", d);
  if (!m.ok()) return;
  read_style_keys(m, def, d);
  m.finish();
  for (PlotSpec& p : specs) {
    for (const std::string& key : def.given) {
      if (given(p, key)) continue;
      if (key == "style") p.style = def.style;
      if (key == "width") p.width = def.width;
      if (key == "height") p.height = def.height;
      if (key == "font_size") p.font_size = def.font_size;
      if (key == "dpi") p.dpi = def.dpi;
      p.given.push_back(key);
    }
    p.physical = p.physical || def.physical;
  }
}

std::vector<PlotSpec> parse_plot_specs(const CNode& node, const std::vector<std::string>& sweep_vars, Diags& d) {
  std::vector<PlotSpec> specs;
  if (!node.is_seq()) {
    d.error(node.loc, "plots must be a list of charts (kind: roofline, trend, layers or heatmap)");
    return specs;
  }
  for (const CNode& item : node.items) {
    PlotSpec p;
    p.loc = item.loc;
    MapReader m(item, keys::map("plot.roofline"), "plot", d);
    if (!m.ok()) continue;
    std::string kind;
    if (const CNode* k = m.require("kind")) kind = to_string(*k, d, "kind").value_or("");
    if (kind == "roofline" || kind == "trend" || kind == "layers" || kind == "heatmap") m.use(keys::map("plot." + kind));
    if (kind == "roofline") p.kind = Kind::Roofline;
    else if (kind == "trend") p.kind = Kind::Trend;
    else if (kind == "layers") p.kind = Kind::Layers;
    else if (kind == "heatmap") p.kind = Kind::Heatmap;
    else if (!kind.empty()) {
      std::string hint = did_you_mean(kind, {"roofline", "trend", "layers", "heatmap"});
      d.error(item.find("kind")->loc, "unknown plot kind '" + kind + "'", {Note{{}, hint.empty() ? "kinds: roofline, trend, layers, heatmap" : hint}});
      continue;
    } else {
      continue;  // no kind (m.require reported it): nothing more can be checked against a kind's keys
    }
    // the choices of a key, from the plot kind's key table (engine/keys.cpp), as `rsim schema` lists them
    auto table_choices = [&](const char* key) { return keys::map("plot." + kind).find(key)->type.choices; };
    auto str = [&](const char* key, std::string& dst, std::vector<std::string> choices = {}) {
      if (const CNode* v = m.get(key)) {
        auto t = to_string(*v, d, key);
        if (!t) return;
        if (!choices.empty() && std::find(choices.begin(), choices.end(), *t) == choices.end()) {
          std::string hint = did_you_mean(*t, choices), all;
          for (const auto& c : choices) all += (all.empty() ? "" : ", ") + c;
          d.error(v->loc, std::string(key) + " cannot be '" + *t + "'", {Note{{}, hint.empty() ? "choose one of: " + all : hint}});
          return;
        }
        dst = *t;
      }
    };
    str("name", p.name);
    if (!p.name.empty()) {
      const CNode* nn = item.find("name");
      bool chars = std::all_of(p.name.begin(), p.name.end(),
                               [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_' || c == '.'; });
      if (!chars || p.name.find_first_not_of('.') == std::string::npos)
        d.error(nn->loc, "plot name '" + printable(p.name) + "' names the figure's files: use letters, digits, '-', '_' and '.'");
      else if (p.name == "results" || p.name == "summary" || p.name == "report")
        d.error(nn->loc, "plot name '" + p.name + "' would overwrite the run's " + (p.name == "report" ? "report.md" : p.name + ".csv") + "; pick another");
      else
        for (const PlotSpec& o : specs)
          if (o.name == p.name) d.error(nn->loc, "two plots are named '" + p.name + "': their files would overwrite each other", {Note{o.loc, "the other plot"}});
    }
    str("title", p.title);
    str("network", p.network);
    if (const CNode* v = item.find("network")) p.network_loc = v->loc;
    if (const CNode* v = m.get("platforms")) {
      for (const CNode* i : as_list(*v))
        if (auto t = to_string(*i, d, "platform")) p.platforms.push_back(*t), p.platform_locs.push_back(i->loc);
    }
    if (const CNode* v = m.get("formats")) {
      for (const CNode* i : as_list(*v)) {
        auto t = to_string(*i, d, "format");
        if (!t) continue;
        if (*t == "png") p.formats.push_back(Format::PNG);
        else if (*t == "svg") p.formats.push_back(Format::SVG);
        else if (*t == "pdf") p.formats.push_back(Format::PDF);
        else d.error(i->loc, "unknown format '" + *t + "'", {Note{{}, "formats: png, svg, pdf"}});
      }
    }
    read_style_keys(m, p, d);
    str("subtitle", p.subtitle, {"full", "short", "none"});
    // [lo, hi] with lo < hi (and lo > 0 on a log axis, checked where the axis is known)
    auto range = [&](const char* key, std::vector<double>& dst) {
      const CNode* v = m.get(key);
      if (!v) return;
      std::vector<double> got;
      if (v->is_seq())
        for (const auto& i : v->items)
          if (auto x = to_number(i, d, key)) got.push_back(*x);
      if (got.size() != 2 || !(got[0] < got[1]) || !std::isfinite(got[0]) || !std::isfinite(got[1])) {
        if (got.size() == v->items.size() || !v->is_seq())
          d.error(v->loc, std::string(key) + " must be [lo, hi] with lo < hi", {Note{{}, std::string("e.g. ") + key + ": [0.1, 1000]"}});
        return;
      }
      dst = got;
    };
    std::vector<std::string> cols = plottable_columns();
    auto check_var = [&](const char* key, const std::string& v, const std::vector<std::string>& extra) {
      std::vector<std::string> ok = sweep_vars;
      ok.insert(ok.end(), extra.begin(), extra.end());
      if (std::find(ok.begin(), ok.end(), v) == ok.end()) {
        std::string hint = did_you_mean(v, ok), all;
        for (const auto& c : ok) all += (all.empty() ? "" : ", ") + c;
        d.error(item.find(key) ? item.find(key)->loc : item.loc, std::string(key) + " '" + v + "' is not a sweep variable" + (extra.empty() ? "" : " or a layer attribute"),
                {Note{{}, hint.empty() ? (all.empty() ? "this scenario sweeps nothing" : "choose one of: " + all) : hint}});
      }
    };
    switch (p.kind) {
      case Kind::Roofline:
        str("points", p.points, table_choices("points"));
        str("color", p.color, table_choices("color"));
        if (item.find("color")) p.given.push_back("color");
        str("marker", p.marker, table_choices("marker"));
        str("labels", p.labels, table_choices("labels"));
        str("roofs", p.roofs, table_choices("roofs"));
        str("intensity", p.intensity, table_choices("intensity"));
        if (const CNode* v = m.get("overlay")) p.overlay = to_bool(*v, d, "overlay").value_or(false);
        range("xlim", p.xlim);
        range("ylim", p.ylim);
        for (const auto* lim : {&p.xlim, &p.ylim})
          if (!lim->empty() && lim->front() <= 0)
            d.error(item.find(lim == &p.xlim ? "xlim" : "ylim")->loc, std::string(lim == &p.xlim ? "xlim" : "ylim") + " must be positive: a roofline's axes are logarithmic");
        break;
      case Kind::Trend:
        if (m.require("x")) {
          str("x", p.x);
          check_var("x", p.x, {"layer", "output_size", "out_channels"});
        }
        str("y", p.y, cols);
        {
          std::vector<std::string> choices = {"auto", "platform", "network", "layer"};
          choices.insert(choices.end(), sweep_vars.begin(), sweep_vars.end());
          str("series", p.series, choices);  // a sweep variable: one line per value
        }
        str("layer", p.layer);
        str("op", p.op);
        str("xscale", p.xscale, table_choices("xscale"));
        str("yscale", p.yscale, table_choices("yscale"));
        if (const CNode* v = m.get("point")) p.point = to_integer(*v, d, "point").value_or(0);
        range("xlim", p.xlim);
        range("ylim", p.ylim);
        break;
      case Kind::Layers:
        str("metric", p.metric, table_choices("metric"));
        str("xscale", p.xscale, table_choices("xscale"));
        if (const CNode* v = m.get("point")) p.point = to_integer(*v, d, "point").value_or(0);
        break;
      case Kind::Heatmap:
        if (m.require("x")) {
          str("x", p.x);
          check_var("x", p.x, {});
        }
        if (m.require("y")) {
          str("y", p.layer);
          check_var("y", p.layer, {});
        }
        str("value", p.value, cols);
        if (const CNode* v = item.find("color_scale")) {
          if (v->is_seq()) {
            range("color_scale", p.color_range);
            if (!p.color_range.empty()) p.color_scale = "range";
          } else {
            str("color_scale", p.color_scale, {"auto", "shared"});
          }
          m.get("color_scale");
        }
        break;
    }
    m.finish();
    specs.push_back(p);
  }
  return specs;
}

}  // namespace rsim::plots
