// Measured rows faster than their roofline bound, and why (a check before fitting).
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

std::string beats_bound_reason(const std::string& op, const std::string& input_shape, const std::string& output_shape, double macs) {
  auto dims = [](const std::string& t) {
    std::vector<double> d;
    const std::string first = t.substr(0, t.find(';'));
    size_t pos = 0;
    while (pos < first.size()) {
      size_t x = first.find('x', pos);
      if (x == std::string::npos) x = first.size();
      d.push_back(to_d(first.substr(pos, x - pos)));
      pos = x + 1;
    }
    return d;
  };
  if (op != "conv2d") return "";
  const auto in = dims(input_shape), out = dims(output_shape);
  if (in.size() != 4 || out.size() != 4 || !(macs > 0)) return "";
  const double outputs = out[0] * out[1] * out[2] * out[3], taps = macs / outputs;  // MACs per output: channels per group × kernel area
  const bool same_size = in[2] == out[2] && in[3] == out[3];
  if (same_size && std::fabs(taps - 9 * in[1]) < 0.5)
    return "a 3x3 stride-1 convolution: the library may run Winograd, which multiplies fewer times than the convolution's MACs "
           "(declare it: algorithms: {conv3x3: winograd_f4x4} on the platform)";
  if (std::fabs(taps - in[1]) < 0.5 && out[2] < in[2])
    return "a strided 1x1 convolution reads only the input pixels it uses (1/stride^2 of its input; declare it: "
           "algorithms: {conv1x1_strided: touched_input} on the platform)";
  return "";
}

std::vector<BeatsBound> beats_bound(const std::vector<Sample>& rows) {
  std::vector<BeatsBound> out;
  for (const auto& s : rows)
    if (s.measured_min_s > 0 && s.time_s > 0 && s.measured_min_s < s.time_s)
      out.push_back({s.network, s.layer, s.op, beats_bound_reason(s.op, s.input_shape, s.output_shape, s.macs), s.measured_min_s, s.time_s});
  return out;
}

std::string calibrated_platform_yaml(const std::string& text, const std::string& name, const std::vector<CalibrationRule>& rules,
                                     const std::string& fitted_from, const Contention& contention, const Runtime* runtime,
                                     const std::string& runtime_source, const std::vector<MeasuredLayer>& measured) {
  std::string out;
  size_t pos = 0;
  bool named = false, in_runtime = false;
  while (pos < text.size()) {
    size_t nl = text.find('\n', pos);
    if (nl == std::string::npos) nl = text.size();
    std::string line = text.substr(pos, nl - pos);
    pos = nl + 1;
    if (in_runtime) {  // the block's indented lines (and blank ones) go with it
      if (line.empty() || line[0] == ' ' || line[0] == '\t') continue;
      in_runtime = false;
    }
    if (!named && line.rfind("name:", 0) == 0) {
      line = "name: " + name;
      named = true;
    }
    if (runtime && line.rfind("runtime:", 0) == 0) {  // replaced below
      in_runtime = true;
      continue;
    }
    out += line + "\n";
  }
  char buf[512];
  out += "# Calibrated by `rsim calibrate` from " + fitted_from + ": per op class (and compute roof), efficiency = a · x^b · g^c\n";
  out += "# (clamped to (0, 1]), x = the layer's MACs for compute (FLOPs without MACs), its bytes for bandwidth, g = its\n";
  out += "# input channels per group (grouped operators; factor 1 for the others); bandwidth_by_level: the bandwidth law of a\n";
  out += "# memory level that held enough of the class's memory-bound layers (others take bandwidth); host_overhead: the\n";
  out += "# host's time to issue one kernel of the class in eager mode; extrapolated: no measured layer of the class ran on\n";
  out += "# that roof, so the laws are the roof's other classes' together (compute or bandwidth: that side's law alone, the class's\n";
  out += "# layers being all on the other side of the ridge); range: the layers the laws were fitted on (beyond it a law keeps\n";
  out += "# its value at the nearer end); occupancy: [d, p_sat], the compute law's factor min(1, p / p_sat)^d, p = the layer's\n";
  out += "# output elements (a GPU kernel with few outputs leaves multiprocessors idle). derated_time_s carries it.\n";
  out += "calibration:\n";
  auto quoted = [](const std::string& t) {
    std::string q = "\"";
    for (char c : t) q += c == '"' || c == '\\' ? std::string("\\") + c : std::string(1, c);
    return q + "\"";
  };
  for (const auto& r : rules) {
    std::string ops;
    for (const auto& o : r.ops) ops += (ops.empty() ? "" : ", ") + o;
    out += "  - {class: " + r.name;
    if (!r.roof.empty()) out += ", roof: " + quoted(r.roof);
    std::snprintf(buf, sizeof buf, ", ops: [%s], compute: [%.6g, %.6g, %.6g], bandwidth: [%.6g, %.6g, %.6g]", ops.c_str(), r.compute.a, r.compute.b,
                  r.compute.c, r.bandwidth.a, r.bandwidth.b, r.bandwidth.c);
    out += buf;
    if (!r.bandwidth_by_level.empty()) {
      out += ", bandwidth_by_level: {";
      for (size_t i = 0; i < r.bandwidth_by_level.size(); ++i) {
        const auto& [level, law] = r.bandwidth_by_level[i];
        std::snprintf(buf, sizeof buf, "%s%s: [%.6g, %.6g, %.6g]", i ? ", " : "", quoted(level).c_str(), law.a, law.b, law.c);
        out += buf;
      }
      out += "}";
    }
    if (r.compute.has_occupancy()) {
      std::snprintf(buf, sizeof buf, ", occupancy: [%.6g, %.6g]", r.compute.d, r.compute.p_sat);
      out += buf;
    }
    if (r.host_overhead_s >= 0) {
      std::snprintf(buf, sizeof buf, ", host_overhead: %.6g us", r.host_overhead_s * 1e6);
      out += buf;
    }
    if (r.band) {  // the spread of the class's held-out errors (measured / predicted, 10th and 90th percentile)
      std::snprintf(buf, sizeof buf, ", error_band: [%.4g, %.4g]", r.error_lo, r.error_hi);
      out += buf;
    }
    if (r.extrapolated) out += ", extrapolated: true";
    else if (r.extrapolated_compute) out += ", extrapolated: compute";
    else if (r.extrapolated_bandwidth) out += ", extrapolated: bandwidth";
    // the range the laws were fitted on (the widest over the bandwidth laws; g over both sides)
    double bx_lo = r.bandwidth.x_lo, bx_hi = r.bandwidth.x_hi, g_lo = 0, g_hi = 0;
    for (const auto& [level, law] : r.bandwidth_by_level)
      if (law.x_lo > 0) bx_lo = bx_lo > 0 ? std::min(bx_lo, law.x_lo) : law.x_lo, bx_hi = std::max(bx_hi, law.x_hi);
    for (const PowerLaw* law : {&r.compute, &r.bandwidth})
      if (law->g_lo > 0) g_lo = g_lo > 0 ? std::min(g_lo, law->g_lo) : law->g_lo, g_hi = std::max(g_hi, law->g_hi);
    std::string range;
    auto pair = [&](const char* key, double lo, double hi) {
      if (!(lo > 0)) return;
      std::snprintf(buf, sizeof buf, "%s%s: [%.6g, %.6g]", range.empty() ? "" : ", ", key, lo, hi);
      range += buf;
    };
    pair("compute_x", r.compute.x_lo, r.compute.x_hi);
    pair("bandwidth_x", bx_lo, bx_hi);
    pair("channels_per_group", g_lo, g_hi);
    if (r.compute.has_occupancy()) pair("outputs", r.compute.p_lo, r.compute.p_hi);
    if (!range.empty()) out += ", range: {" + range + "}";
    out += "}\n";
  }
  if (runtime) {
    out += "# The runtime: launch_overhead per kernel (execution: fused) or per graph; graph_gap between the kernels of one\n";
    out += "# CUDA graph; host_overhead per kernel in eager mode for a class without its own.\n";
    out += "runtime:\n";
    std::snprintf(buf, sizeof buf, "  launch_overhead: %.6g us\n", runtime->launch_overhead_s * 1e6);
    out += buf;
    if (runtime->has_graph_gap()) {
      std::snprintf(buf, sizeof buf, "  graph_gap: %.6g us\n", runtime->graph_gap_s * 1e6);
      out += buf;
    }
    if (runtime->has_host_overhead()) {
      std::snprintf(buf, sizeof buf, "  host_overhead: %.6g us\n", runtime->host_overhead_s * 1e6);
      out += buf;
    }
    if (!runtime_source.empty()) out += "  source: " + quoted(runtime_source) + "\n";
    {  // what each time rests on: the fitted ones calibrated, the others as the base platform said
      std::string b;
      auto add = [&](const char* key, Basis x, bool stated) {
        if (stated && x != Basis::Unstated) b += (b.empty() ? "" : ", ") + std::string(key) + ": " + basis_name(x);
      };
      add("launch_overhead", runtime->launch_basis, true);
      add("graph_gap", runtime->gap_basis, runtime->has_graph_gap());
      add("host_overhead", runtime->host_basis, runtime->has_host_overhead());
      if (!b.empty()) out += "  basis: {" + b + "}\n";
    }
  }
  if (!measured.empty()) {
    out += "# Layer shapes timed in those files whose times the class laws missed by more than 10 % either way (a library's\n";
    out += "# choice per shape, such as Winograd for some 3x3 convolutions): a layer of the same op, roof, input and output\n";
    out += "# shapes and MACs runs at its law's time x factor (the median measured / law time of the layers of that shape).\n";
    out += "measured_layers:\n";
    for (const auto& l : measured) {
      std::snprintf(buf, sizeof buf, ", macs: %.0f, factor: %.4g", l.macs, l.factor);
      out += "  - {op: " + quoted(l.op) + ", roof: " + quoted(l.roof) + ", input: " + quoted(l.input) + ", output: " + quoted(l.output) + buf;
      if (!l.from.empty()) out += ", from: " + quoted(l.from);
      out += "}\n";
    }
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
