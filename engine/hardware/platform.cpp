#include "engine/hardware/platform.hpp"
#include "engine/hardware/platform_detail.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>

#include "engine/model/units.hpp"

namespace fs = std::filesystem;

namespace rsim {
using platform_detail::num;
using platform_detail::rate_unit;
using platform_detail::si6;

const ComputeRoof* Platform::roof_for(DType t) const {
  for (const auto& r : compute)
    if (std::find(r.dtypes.begin(), r.dtypes.end(), t) != r.dtypes.end()) return &r;
  return nullptr;
}

double Contention::apply(double t) const {
  if (!active() || !(t > 0)) return t;
  return t * (1 + (slowdown - 1) / (1 + std::pow(onset_s / t, steepness)));
}

double PowerLaw::at(double x, double g, double p) const { return std::clamp(raw(x, g, p), 0.001, 1.0); }

double PowerLaw::raw(double x, double g, double p) const {
  if (x_lo > 0 && x > 0 && x < x_lo) x = x_lo;
  if (x_hi > 0 && x > x_hi) x = x_hi;
  if (g_lo > 0 && g > 0 && g < g_lo) g = g_lo;
  if (g_hi > 0 && g > g_hi) g = g_hi;
  double e = x > 0 ? a * std::pow(x, b) : a;
  if (g > 0 && c != 0) e *= std::pow(g, c);
  if (p > 0 && has_occupancy()) {
    if (p_lo > 0 && p < p_lo) p = p_lo;
    if (p < p_sat) e *= std::pow(p / p_sat, d);
  }
  return e;
}

bool PowerLaw::beyond(double x, double g, double p) const {
  return (x_lo > 0 && x > 0 && x < x_lo) || (x_hi > 0 && x > x_hi) || (g > 0 && ((g_lo > 0 && g < g_lo) || (g_hi > 0 && g > g_hi))) ||
         (p > 0 && has_occupancy() && p_lo > 0 && p < p_lo);
}

const PowerLaw& CalibrationRule::bandwidth_on(const std::string& level) const {
  for (const auto& [name, law] : bandwidth_by_level)
    if (name == level) return law;
  return bandwidth;
}

std::string measured_layer_key(const std::string& op, const std::string& roof, const std::string& input, const std::string& output, double macs) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.0f", std::round(macs));
  std::string k;
  k.reserve(op.size() + roof.size() + input.size() + output.size() + 24);
  k.append(op).append(1, '|').append(roof).append(1, '|').append(input).append(1, '|').append(output).append(1, '|').append(buf);
  return k;
}

const CalibrationRule* Platform::calibration_for(const std::string& op, const std::string& roof) const {
  const CalibrationRule* any = nullptr;  // a rule for every roof (or, with no roof asked for, the first)
  for (const auto& r : calibration) {
    if (std::find(r.ops.begin(), r.ops.end(), op) == r.ops.end()) continue;
    if (!r.roof.empty() && r.roof == roof) return &r;
    if ((r.roof.empty() || roof.empty()) && !any) any = &r;
  }
  return any;
}

const std::string& Platform::algorithm_for(const std::string& kind, DType compute) const {
  static const std::string none;
  const std::string* any = &none;
  for (const auto& a : algorithms) {
    if (a.kind != kind) continue;
    if (a.dtype && *a.dtype == compute) return a.algorithm;
    if (!a.dtype) any = &a.algorithm;
  }
  return *any;
}

const std::vector<std::string>& basis_names() {
  static const std::vector<std::string> n = {"datasheet", "assumption", "measured", "calibrated", "carried"};
  return n;
}

const char* basis_name(Basis b) {
  switch (b) {
    case Basis::Datasheet: return "datasheet";
    case Basis::Assumption: return "assumption";
    case Basis::Measured: return "measured";
    case Basis::Calibrated: return "calibrated";
    case Basis::Carried: return "carried";
    case Basis::Unstated: break;
  }
  return "unstated";
}

Basis weaker(Basis a, Basis b) {
  if (a == Basis::Assumption || b == Basis::Assumption) return Basis::Assumption;
  return a == Basis::Unstated ? b : a;
}

const char* execution_name(Execution e) {
  switch (e) {
    case Execution::Fused: return "fused";
    case Execution::Graph: return "graph";
    case Execution::Eager: return "eager";
    case Execution::Ideal: return "ideal";
  }
  return "fused";
}

const MemoryLevel* Platform::level_for(double ws) const {
  const MemoryLevel* best = nullptr;  // smallest sized level that holds ws
  const MemoryLevel* unsized = nullptr;
  const MemoryLevel* largest = nullptr;
  for (const auto& m : memory) {
    if (m.size_bytes <= 0) {
      if (!unsized) unsized = &m;
      continue;
    }
    if (!largest || m.size_bytes > largest->size_bytes) largest = &m;
    if (m.size_bytes >= ws && (!best || m.size_bytes < best->size_bytes)) best = &m;
  }
  if (best) return best;
  if (unsized) return unsized;
  return largest ? largest : (memory.empty() ? nullptr : &memory.front());
}

const InterconnectLevel* Platform::link_for(long long n) const {
  for (const auto& l : interconnect)
    if (l.gpus >= n) return &l;
  return interconnect.empty() ? nullptr : &interconnect.back();
}

const MemoryLevel* Platform::level(const std::string& n) const {
  for (const auto& m : memory)
    if (m.name == n) return &m;
  return nullptr;
}

std::vector<std::string> Platform::dtypes() const {
  std::vector<std::string> out;
  for (const auto& r : compute)
    for (DType t : r.dtypes)
      if (std::find(out.begin(), out.end(), dtype_name(t)) == out.end()) out.push_back(dtype_name(t));
  return out;
}

std::vector<std::string> Catalog::names() const {
  std::vector<std::string> n;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(dir_, ec)) {
    if (e.path().extension() == ".yaml") n.push_back(e.path().stem().string());
  }
  std::sort(n.begin(), n.end());
  return n;
}

std::string Catalog::path_of(const std::string& name) const { return (fs::path(dir_) / (name + ".yaml")).string(); }

bool Catalog::has(const std::string& name) const {
  if (name.empty() || name.find('/') != std::string::npos || name[0] == '.') return false;
  std::error_code ec;
  return fs::is_regular_file(path_of(name), ec);
}

CNode Catalog::load(const std::string& name) const { return load_yaml_file(path_of(name)); }

namespace {

std::string size_text(double bytes) {
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  int u = 0;
  while (bytes >= 1024 && u < 4) {
    bytes /= 1024;
    ++u;
  }
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.4g %s", bytes, units[u]);
  return buf;
}

}  // namespace

std::vector<std::string> assumed_figures(const Platform& p, Execution e, bool links) {
  std::vector<std::string> out;
  const Runtime& rt = p.runtime;
  if ((e == Execution::Fused || e == Execution::Graph) && rt.launch_overhead_s > 0 && rt.launch_basis == Basis::Assumption)
    out.push_back("launch overhead " + si6(rt.launch_overhead_s, "s") + (e == Execution::Fused ? " per kernel" : " per graph"));
  if (e == Execution::Graph && rt.has_graph_gap() && rt.gap_basis == Basis::Assumption) out.push_back("graph gap " + si6(rt.graph_gap_s, "s"));
  if (e == Execution::Eager && rt.has_host_overhead() && rt.host_basis == Basis::Assumption) out.push_back("host overhead " + si6(rt.host_overhead_s, "s") + " per kernel");
  for (const auto& l : p.interconnect) {
    if (!links) break;
    if (l.basis == Basis::Assumption) out.push_back(l.name + " bandwidth " + si6(l.bandwidth_bytes_per_s, "B/s"));
    if (l.latency_basis == Basis::Assumption) out.push_back(l.name + " latency " + si6(l.latency_s, "s"));
  }
  for (const auto& r : p.compute) {
    if (r.basis == Basis::Assumption) out.push_back(r.name + " peak " + si6(r.peak_flops_per_s, rate_unit(r)));
    if (r.derate_basis == Basis::Assumption && r.derated_flops_per_s != r.peak_flops_per_s)
      out.push_back(r.name + " derated to " + num(100 * r.derated_flops_per_s / r.peak_flops_per_s) + " % of its peak");
  }
  for (const auto& m : p.memory) {
    if (m.basis == Basis::Assumption) out.push_back(m.name + " bandwidth " + si6(m.bandwidth_bytes_per_s, "B/s"));
    if (m.derate_basis == Basis::Assumption && m.derated_bandwidth_bytes_per_s != m.bandwidth_bytes_per_s)
      out.push_back(m.name + " achievable bandwidth " + num(100 * m.derated_bandwidth_bytes_per_s / m.bandwidth_bytes_per_s) + " % of " +
                    si6(m.bandwidth_bytes_per_s, "B/s"));
  }
  return out;
}

std::string describe_platform(const Platform& p) {
  std::string s = p.name + (p.title.empty() ? "" : " — " + p.title) + "\n";
  if (!p.kind.empty()) s += "  kind: " + p.kind + "\n";
  if (!p.source.empty()) s += "  source: " + p.source + "\n";
  // each figure with what it rests on (`basis:`), e.g. "launch overhead 5 µs assumption"
  auto b = [](Basis x) { return std::string("  ") + basis_name(x); };
  if (p.runtime.launch_overhead_s > 0 || p.runtime.has_graph_gap() || p.runtime.has_host_overhead()) {
    s += "  runtime:\n";
    s += "    launch overhead " + si6(p.runtime.launch_overhead_s, "s") + b(p.runtime.launch_basis) + "  (per kernel under fused, per graph under graph)\n";
    s += p.runtime.has_graph_gap() ? "    graph gap " + si6(p.runtime.graph_gap_s, "s") + b(p.runtime.gap_basis) + "  (between kernels of a graph)\n"
                                   : "    no graph gap (execution: graph unavailable)\n";
    s += p.runtime.has_host_overhead() ? "    host overhead " + si6(p.runtime.host_overhead_s, "s") + b(p.runtime.host_basis) + "  (per kernel in eager mode)\n"
                                       : "    no host overhead (execution: eager unavailable)\n";
  }
  for (const auto& l : p.interconnect)
    s += "  interconnect: " + l.name + ", " + si6(l.bandwidth_bytes_per_s, "B/s") + b(l.basis) + " each way, " + si6(l.latency_s, "s") + b(l.latency_basis) +
         " a message, up to " + std::to_string(l.gpus) + " GPUs" + (l.source.empty() ? "" : " (" + l.source + ")") + "\n";
  for (const auto& a : p.algorithms)
    s += "  algorithm: " + a.kind + (a.dtype ? std::string(" (") + dtype_name(*a.dtype) + ")" : std::string()) + " runs " + a.algorithm + "\n";
  if (!p.calibration.empty())
    s += "  calibration: " + std::to_string(p.calibration.size()) + " rule" + (p.calibration.size() == 1 ? "" : "s") +
         " (rsim calibrate: efficiency laws per op class and roof)\n";
  if (!p.measured_layers.empty()) {
    double lo = INFINITY, hi = 0;
    for (const auto& l : p.measured_layers) lo = std::min(lo, l.factor), hi = std::max(hi, l.factor);
    s += "  measured layers: " + std::to_string(p.measured_layers.size()) + " timed shape" + (p.measured_layers.size() == 1 ? "" : "s") +
         " at their law's time × factor (" + num(lo) + (hi > lo ? " to " + num(hi) : std::string()) + ")\n";
  }
  s += describe_gpu_figures(p);  // sm_count, clock, L2, kernel model (kernel_model.cpp)
  if (p.contention.active())
    s += "  contention (calibrated): compute-bound layers longer than " + si6(p.contention.onset_s, "s") + " slowed up to " + num(p.contention.slowdown) +
         "×\n";
  s += "  compute roofs:\n";
  for (const auto& r : p.compute) {
    std::string dts;
    for (DType t : r.dtypes) dts += (dts.empty() ? "" : ", ") + std::string(dtype_name(t));
    s += "    " + r.name + " [" + dts + "]\n";
    s += "      theoretical " + si6(r.peak_flops_per_s, rate_unit(r)) + b(r.basis) + "  (" + r.derivation + ")\n";
    s += "      derated     " + si6(r.derated_flops_per_s, rate_unit(r)) + (r.derate_basis == Basis::Unstated ? "" : b(r.derate_basis)) + "  (" +
         r.derated_derivation + ")\n";
  }
  s += "  memory levels:\n";
  for (const auto& m : p.memory) {
    s += "    " + m.name +
         (m.size_bytes > 0 ? " (" + size_text(m.size_bytes) + (m.size_source.empty() ? "" : ", size from " + m.size_source) + b(m.size_basis) + ")" : "") + "\n";
    s += "      theoretical " + si6(m.bandwidth_bytes_per_s, "B/s") + b(m.basis) + "  (" + m.derivation + ")\n";
    s += "      derated     " + si6(m.derated_bandwidth_bytes_per_s, "B/s") + (m.derate_basis == Basis::Unstated ? "" : b(m.derate_basis)) + "  (" +
         m.derated_derivation + ")\n";
  }
  if (!p.memory.empty()) {
    const MemoryLevel& mem = p.memory.front();
    s += "  ridge points against " + mem.name + " [FLOP/byte] (theoretical / derated):\n";
    for (const auto& r : p.compute) {
      char buf[160];
      std::snprintf(buf, sizeof buf, "    %-24s %.2f / %.2f\n", r.name.c_str(), r.peak_flops_per_s / mem.bandwidth_bytes_per_s,
                    r.derated_flops_per_s / mem.derated_bandwidth_bytes_per_s);
      s += buf;
    }
  }
  return s;
}

}  // namespace rsim
