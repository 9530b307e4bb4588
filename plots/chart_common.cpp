#include "plots/chart_common.hpp"

#include <algorithm>
#include <cmath>
#include <set>

#include "engine/model/names.hpp"
#include "engine/output/output.hpp"
#include "engine/model/units.hpp"
#include "plots/draw.hpp"

namespace rsim::plots::chart {

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


bool over_memory(const SummaryRow& sm) { return sm.memory_size_bytes > 0 && sm.memory_footprint_bytes > sm.memory_size_bytes; }

std::string network_text(const PlotSpec& spec) {
  std::string t;
  for (const auto& n : spec.networks) t += (t.empty() ? " · " : ", ") + n;
  return t;
}

}  // namespace rsim::plots::chart

namespace rsim::plots {

bool shows_network(const PlotSpec& spec, const std::string& name) {
  return spec.networks.empty() || std::find(spec.networks.begin(), spec.networks.end(), name) != spec.networks.end();
}

const std::vector<std::string>& plottable_columns() {
  static const std::vector<std::string> v = [] {
    std::vector<std::string> o;
    for (const auto& c : chart::kColumns) o.push_back(c.name);
    return o;
  }();
  return v;
}

}  // namespace rsim::plots
