// A platform read from its YAML (a catalog file or a scenario entry, over its `base:`): its roofs,
// memory levels, links, runtime, derating and the basis of each figure, checked and located.
#include "engine/hardware/platform.hpp"
#include "engine/hardware/platform_detail.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "engine/model/units.hpp"

namespace rsim {
using platform_detail::num;
using platform_detail::rate_unit;
using platform_detail::si6;

namespace {

std::optional<double> quantity(const CNode* n, Dim dim, Diags& d, const std::string& what) {
  if (!n) return std::nullopt;
  if (!n->is_scalar()) {
    d.error(n->loc, what + " must be a single value such as '" + dim_example(dim) + "'");
    return std::nullopt;
  }
  QuantityResult q = parse_quantity(n->scalar, dim);
  if (!q.value) {
    d.error(n->loc, what + ": " + q.error);
    return std::nullopt;
  }
  if (*q.value <= 0) {
    d.error(n->loc, what + " must be positive");
    return std::nullopt;
  }
  return q.value;
}

std::optional<double> fraction(const CNode* n, Diags& d, const std::string& what) {
  if (!n) return std::nullopt;
  auto v = to_number(*n, d, what);
  if (v && (*v <= 0 || *v > 1)) {
    d.error(n->loc, what + " must be a fraction in (0, 1], got " + n->scalar);
    return std::nullopt;
  }
  return v;
}

std::optional<double> count(const CNode* n, Diags& d, const std::string& what) {
  if (!n) return std::nullopt;
  auto v = to_number(*n, d, what);
  if (v && *v <= 0) {
    d.error(n->loc, what + " must be positive, got " + n->scalar);
    return std::nullopt;
  }
  return v;
}

std::string plural(double v, const char* word) { return std::string(word) + (v == 1 ? "" : "s"); }

// `basis:` of a map whose figures are `figures` (its keys that hold numbers): one value for every
// figure, or a map from figure to value. Errors are located; an unknown value or figure is named
// with the list to choose from.
struct BasisOf {
  Basis all = Basis::Unstated;
  std::vector<std::pair<std::string, Basis>> by;
  Basis of(const std::string& figure) const {
    for (const auto& [k, b] : by)
      if (k == figure) return b;
    return all;
  }
};

}  // namespace

std::optional<Basis> basis_value(const CNode& n, Diags& d) {
  if (!n.is_scalar()) {
    d.error(n.loc, "basis must be one of datasheet, assumption, measured, calibrated or carried");
    return std::nullopt;
  }
  const auto& names = basis_names();
  for (size_t i = 0; i < names.size(); ++i)
    if (n.scalar == names[i]) return static_cast<Basis>(i + 1);
  const std::string hint = did_you_mean(n.scalar, names);
  d.error(n.loc, "unknown basis '" + n.scalar + "'", {Note{{}, hint.empty() ? "choose datasheet, assumption, measured, calibrated or carried" : hint}});
  return std::nullopt;
}

namespace {

BasisOf read_basis(const CNode* n, const std::vector<std::string>& figures, const std::string& what, Diags& d) {
  BasisOf b;
  if (!n) return b;
  if (!n->is_map()) {
    if (auto v = basis_value(*n, d)) b.all = *v;
    return b;
  }
  for (const auto& e : n->entries) {
    if (std::find(figures.begin(), figures.end(), e.key) == figures.end()) {
      std::string list;
      for (const auto& f : figures) list += (list.empty() ? "" : ", ") + f;
      const std::string hint = did_you_mean(e.key, figures);
      d.error(e.key_loc, "basis names '" + e.key + "', which is not a figure of " + what, {Note{{}, hint.empty() ? "its figures: " + list : hint}});
      continue;
    }
    if (auto v = basis_value(e.value, d)) b.by.emplace_back(e.key, *v);
  }
  return b;
}

struct Derating {
  std::optional<double> vector_clock;
  std::optional<double> compute_efficiency;
  std::optional<double> bandwidth_fraction;
  Basis vector_clock_basis = Basis::Unstated, compute_efficiency_basis = Basis::Unstated, bandwidth_fraction_basis = Basis::Unstated;
};

Derating read_derating(const CNode* n, Diags& d) {
  Derating r;
  if (!n) return r;
  MapReader m(*n, keys::map("derate"), "derate", d);
  r.vector_clock = quantity(m.get("vector_clock"), Dim::Frequency, d, "vector_clock");
  r.compute_efficiency = fraction(m.get("compute_efficiency"), d, "compute_efficiency");
  r.bandwidth_fraction = fraction(m.get("bandwidth_fraction"), d, "bandwidth_fraction");
  const BasisOf b = read_basis(m.get("basis"), {"vector_clock", "compute_efficiency", "bandwidth_fraction"}, "derate", d);
  r.vector_clock_basis = b.of("vector_clock"), r.compute_efficiency_basis = b.of("compute_efficiency");
  r.bandwidth_fraction_basis = b.of("bandwidth_fraction");
  m.finish();
  return r;
}

ComputeRoof read_compute(const CNode& n, const Derating& plat, Diags& d) {
  ComputeRoof r;
  MapReader m(n, keys::map("compute_roof"), "compute roof", d);
  if (const CNode* v = m.require("name")) r.name = to_string(*v, d, "name").value_or("");
  std::string what = "compute roof '" + r.name + "'";
  if (const CNode* v = m.require("dtypes")) {
    for (const CNode* i : as_list(*v)) {
      auto s = to_string(*i, d, "dtype");
      if (!s) continue;
      auto t = parse_dtype(*s);
      if (!t) {
        std::string hint = did_you_mean(*s, dtype_names());
        d.error(i->loc, "unknown dtype '" + *s + "'", {Note{{}, hint.empty() ? "dtypes: fp64, fp32, tf32, bf16, fp16, fp8, int8, int4" : hint}});
        continue;
      }
      r.dtypes.push_back(*t);
    }
  }
  const CNode* peak = m.get("peak");
  const CNode* derive = m.get("derive");
  std::optional<double> clock;
  double per_clock = 0;  // FLOP per cycle summed over units
  std::string per_clock_text;
  if (peak && derive) d.error(derive->loc, what + " gives both 'peak' and 'derive'; keep one");
  if (!peak && !derive) d.error(n.loc, what + " needs 'peak' (e.g. '29.8 TFLOP/s') or 'derive' (units, clock, lanes, fma_pipes)");
  if (peak) {
    if (auto p = quantity(peak, Dim::FlopRate, d, "peak")) {
      r.peak_flops_per_s = *p;
      r.derivation = "given: " + si6(*p, rate_unit(r));
    }
  } else if (derive) {
    MapReader dm(*derive, keys::map("compute_derive"), "derive", d);
    auto units = count(dm.require("units"), d, "units");
    clock = quantity(dm.require("clock"), Dim::Frequency, d, "clock");
    auto lanes = count(dm.get("lanes"), d, "lanes");
    auto fma = count(dm.get("fma_pipes"), d, "fma_pipes");
    auto add = count(dm.get("add_pipes"), d, "add_pipes");
    auto mul = count(dm.get("mul_pipes"), d, "mul_pipes");
    auto fpc = count(dm.get("flops_per_cycle"), d, "flops_per_cycle");
    dm.finish();
    double flops_per_cycle = 0;
    if (fpc) {
      if (fma || add || mul || lanes) d.error(derive->loc, "give either flops_per_cycle or lanes with pipes, not both");
      flops_per_cycle = *fpc;
      per_clock_text = num(*fpc) + " FLOP/cycle";
    } else if (fma) {
      if (add || mul) d.error(derive->loc, "give either fma_pipes or add_pipes and mul_pipes, not both");
      double l = lanes.value_or(1);
      flops_per_cycle = l * *fma * 2;
      per_clock_text = num(l) + " " + plural(l, "lane") + " × " + num(*fma) + " FMA " + plural(*fma, "pipe") + " × 2";
    } else if (add || mul) {
      double l = lanes.value_or(1);
      flops_per_cycle = l * (add.value_or(0) + mul.value_or(0));
      per_clock_text = num(l) + " " + plural(l, "lane") + " × (" + num(add.value_or(0)) + " add + " + num(mul.value_or(0)) + " mul pipes)";
    } else if (derive->is_map()) {
      d.error(derive->loc, "derive needs fma_pipes, add_pipes/mul_pipes or flops_per_cycle");
    }
    if (units && clock && flops_per_cycle > 0) {
      per_clock = *units * flops_per_cycle;
      r.peak_flops_per_s = per_clock * *clock;
      r.derivation = num(*units) + " units × " + si6(*clock, "Hz") + " × " + per_clock_text + " = " + si6(r.peak_flops_per_s, "FLOP/s");
    }
  }
  auto vclock = quantity(m.get("vector_clock"), Dim::Frequency, d, "vector_clock");
  auto eff = fraction(m.get("efficiency"), d, "efficiency");
  auto measured = quantity(m.get("measured"), Dim::FlopRate, d, "measured");
  std::optional<std::string> measured_by;
  if (const CNode* v = m.get("measured_by")) measured_by = to_string(*v, d, "measured_by");
  if (vclock && !derive) d.error(m.get("vector_clock")->loc, what + ": vector_clock needs a derived peak (derive: units, clock, ...) to rescale");
  if (measured && (vclock || eff)) d.error(m.get("measured")->loc, what + " gives 'measured' with 'vector_clock' or 'efficiency'; keep one");
  // platform-wide derating wins over a roof's own, so `base: X` + `derate:` changes every roof
  if (plat.vector_clock && derive) vclock = plat.vector_clock;
  if (plat.compute_efficiency) eff = plat.compute_efficiency;
  if (plat.vector_clock || plat.compute_efficiency) measured.reset();
  {
    const BasisOf b = read_basis(m.get("basis"), {"peak", "derive", "vector_clock", "efficiency", "measured"}, what, d);
    r.basis = b.of(peak ? "peak" : "derive");
    Basis db = Basis::Unstated;
    if (plat.vector_clock && derive) db = weaker(db, plat.vector_clock_basis);
    else if (vclock) db = weaker(db, b.of("vector_clock"));
    if (plat.compute_efficiency) db = weaker(db, plat.compute_efficiency_basis);
    else if (eff) db = weaker(db, b.of("efficiency"));
    if (measured) db = b.of("measured") == Basis::Unstated ? Basis::Measured : b.of("measured");
    r.derate_basis = db;
  }
  m.finish();
  double measured_v = measured.value_or(0);
  if (measured_v > 0 && r.peak_flops_per_s > 0 && measured_v > r.peak_flops_per_s * (1 + 1e-9)) {
    d.error(m.node().find("measured")->loc, what + ": measured " + si6(measured_v, rate_unit(r)) + " is above the theoretical " +
                                                 si6(r.peak_flops_per_s, rate_unit(r)),
            {Note{{}, "check both figures: a measurement cannot beat the hardware's limit"}});
    measured_v = 0;
  }
  if (measured_v > 0) {
    r.derated_flops_per_s = measured_v;
    r.derated_derivation = "measured: " + si6(measured_v, rate_unit(r)) + " (" + num(100 * measured_v / r.peak_flops_per_s) + " % of theoretical)";
    if (measured_by && !measured_by->empty()) r.derated_derivation += " by " + *measured_by;
    return r;
  }

  r.derated_flops_per_s = r.peak_flops_per_s;
  std::string text;
  if (vclock && clock && *vclock > *clock) {
    d.error(n.loc, what + ": vector_clock " + si6(*vclock, "Hz") + " is above the clock " + si6(*clock, "Hz"),
            {Note{{}, "derating lowers a roof; to model a turbo clock, raise 'clock' instead"}});
    vclock.reset();
  }
  if (vclock && clock && per_clock > 0) {
    r.derated_flops_per_s = per_clock * *vclock;
    text = "at vector clock " + si6(*vclock, "Hz") + " instead of " + si6(*clock, "Hz") + ": " + si6(r.derated_flops_per_s, "FLOP/s");
  }
  if (eff) {
    double before = r.derated_flops_per_s;
    r.derated_flops_per_s *= *eff;
    text += (text.empty() ? "" : "; ") + si6(before, "FLOP/s") + " × efficiency " + num(*eff) + " = " + si6(r.derated_flops_per_s, "FLOP/s");
  }
  r.derated_derivation = text.empty() ? "no derating: same as theoretical" : text;
  return r;
}

MemoryLevel read_memory(const CNode& n, const Derating& plat, Diags& d) {
  MemoryLevel r;
  MapReader m(n, keys::map("memory_level"), "memory level", d);
  if (const CNode* v = m.require("name")) r.name = to_string(*v, d, "name").value_or("");
  std::string what = "memory level '" + r.name + "'";
  const CNode* bw = m.get("bandwidth");
  const CNode* derive = m.get("derive");
  if (bw && derive) d.error(derive->loc, what + " gives both 'bandwidth' and 'derive'; keep one");
  if (!bw && !derive) d.error(n.loc, what + " needs 'bandwidth' (e.g. '760.32 GB/s') or 'derive' (transfer_rate, bus_width, channels)");
  if (bw) {
    if (auto b = quantity(bw, Dim::ByteRate, d, "bandwidth")) {
      r.bandwidth_bytes_per_s = *b;
      r.derivation = "given: " + si6(*b, "B/s");
    }
  } else if (derive) {
    MapReader dm(*derive, keys::map("memory_derive"), "derive", d);
    auto rate = quantity(dm.get("transfer_rate"), Dim::TransferRate, d, "transfer_rate");
    auto clk = quantity(dm.get("clock"), Dim::Frequency, d, "clock");
    auto ddr = count(dm.get("data_rate"), d, "data_rate");
    auto width = quantity(dm.require("bus_width"), Dim::Bits, d, "bus_width");
    auto ch = count(dm.get("channels"), d, "channels");
    auto sockets = count(dm.get("sockets"), d, "sockets");
    dm.finish();
    std::string rate_text;
    std::optional<double> transfers;
    if (rate && (clk || ddr)) d.error(derive->loc, "give either transfer_rate or clock with data_rate, not both");
    if (rate) {
      transfers = rate;
      rate_text = si6(*rate, "T/s");
    } else if (clk && ddr) {
      transfers = *clk * *ddr;
      rate_text = si6(*clk, "Hz") + " × " + num(*ddr) + " (data rate)";
    } else if (derive->is_map()) {
      d.error(derive->loc, "derive needs transfer_rate (e.g. '2400 MT/s') or clock with data_rate (2 for DDR)");
    }
    if (transfers && width) {
      double c = ch.value_or(1), s = sockets.value_or(1);
      r.bandwidth_bytes_per_s = *transfers * *width / 8 * c * s;
      r.derivation = rate_text + " × " + num(*width) + " bit / 8";
      if (ch) r.derivation += " × " + num(c) + " channel" + (c == 1 ? "" : "s");
      if (sockets) r.derivation += " × " + num(s) + " socket" + (s == 1 ? "" : "s");
      r.derivation += " = " + si6(r.bandwidth_bytes_per_s, "B/s");
    }
  }
  auto frac = fraction(m.get("fraction"), d, "fraction");
  auto measured = quantity(m.get("measured"), Dim::ByteRate, d, "measured");
  if (auto sz = quantity(m.get("size"), Dim::Bytes, d, "size")) r.size_bytes = *sz;
  if (const CNode* v = m.get("size_source")) {
    r.size_source = to_string(*v, d, "size_source").value_or("");
    const std::vector<std::string> sources = {"sysfs", "cpuid", "sysconf", "curve", "datasheet"};
    if (!r.size_source.empty() && std::find(sources.begin(), sources.end(), r.size_source) == sources.end()) {
      std::string hint = did_you_mean(r.size_source, sources);
      d.error(v->loc, what + ": unknown size_source '" + r.size_source + "'", {Note{{}, hint.empty() ? "choose sysfs, cpuid, sysconf, curve or datasheet" : hint}});
    }
  }
  std::optional<std::string> measured_by;
  if (const CNode* v = m.get("measured_by")) measured_by = to_string(*v, d, "measured_by");
  const BasisOf basis = read_basis(m.get("basis"), {"bandwidth", "derive", "fraction", "measured", "size"}, what, d);
  r.basis = basis.of(m.node().find("derive") ? "derive" : "bandwidth");
  r.size_basis = basis.of("size");
  if (r.size_basis == Basis::Unstated && r.size_source == "datasheet") r.size_basis = Basis::Datasheet;
  m.finish();
  if (frac && measured) d.error(n.loc, what + " gives both 'fraction' and 'measured'; keep one");
  if (frac) r.derate_basis = basis.of("fraction");
  if (measured) r.derate_basis = basis.of("measured") == Basis::Unstated ? Basis::Measured : basis.of("measured");
  if (plat.bandwidth_fraction) {  // platform-wide derating wins, as for compute
    frac = plat.bandwidth_fraction;
    measured.reset();
    r.derate_basis = plat.bandwidth_fraction_basis;
  }
  r.derated_bandwidth_bytes_per_s = r.bandwidth_bytes_per_s;
  if (measured && r.bandwidth_bytes_per_s > 0 && *measured > r.bandwidth_bytes_per_s * (1 + 1e-9)) {
    d.error(m.node().find("measured")->loc, what + ": measured " + si6(*measured, "B/s") + " is above the theoretical " +
                                                 si6(r.bandwidth_bytes_per_s, "B/s"),
            {Note{{}, "check both figures: a measurement cannot beat the hardware's limit"}});
    measured.reset();
  }
  if (measured) {
    r.derated_bandwidth_bytes_per_s = *measured;
    r.derated_derivation = "measured: " + si6(*measured, "B/s") + " (" + num(100 * *measured / r.bandwidth_bytes_per_s) + " % of theoretical)";
  } else if (frac) {
    r.derated_bandwidth_bytes_per_s = r.bandwidth_bytes_per_s * *frac;
    r.derated_derivation = si6(r.bandwidth_bytes_per_s, "B/s") + " × achievable fraction " + num(*frac) + " = " + si6(r.derated_bandwidth_bytes_per_s, "B/s");
  } else {
    r.derated_derivation = "no derating: same as theoretical";
  }
  if (measured_by && !measured_by->empty()) {
    if (measured) r.derated_derivation += " by " + *measured_by;
    else r.derivation += " (measured by " + *measured_by + ")";
  }
  return r;
}

// A time of `runtime:` (0 allowed) within [0, 1 s], or nullopt after an error.
std::optional<double> runtime_time(const CNode* n, Diags& d, const std::string& what) {
  if (!n) return std::nullopt;
  if (!n->is_scalar()) {
    d.error(n->loc, what + " must be a time such as '5 us'");
    return std::nullopt;
  }
  QuantityResult q = parse_quantity(n->scalar, Dim::Time);
  if (!q.value) {
    d.error(n->loc, what + ": " + q.error);
    return std::nullopt;
  }
  if (!(*q.value >= 0) || *q.value > 1) {
    d.error(n->loc, what + " must be between 0 and 1 s");
    return std::nullopt;
  }
  return q.value;
}

Runtime read_runtime(const CNode& n, Diags& d) {
  Runtime r;
  MapReader m(n, keys::map("runtime"), "runtime", d);
  if (!m.ok()) return r;
  if (auto v = runtime_time(m.get("launch_overhead"), d, "launch_overhead")) r.launch_overhead_s = *v;
  if (auto v = runtime_time(m.get("graph_gap"), d, "graph_gap")) r.graph_gap_s = *v;
  if (auto v = runtime_time(m.get("host_overhead"), d, "host_overhead")) r.host_overhead_s = *v;
  const BasisOf b = read_basis(m.get("basis"), {"launch_overhead", "graph_gap", "host_overhead"}, "runtime", d);
  r.launch_basis = b.of("launch_overhead"), r.gap_basis = b.of("graph_gap"), r.host_basis = b.of("host_overhead");
  m.get("source");
  m.finish();
  return r;
}

// `base` (a derate or runtime map) with its `basis:` no longer naming the figures `top` sets: a
// scalar basis becomes a map of the figures that stay.
CNode without_basis_of(const CNode& base, const CNode& top) {
  CNode out = base;
  for (auto& e : out.entries) {
    if (e.key != "basis") continue;
    CNode m;
    m.kind = CNode::Kind::Map;
    m.loc = e.value.loc;
    if (e.value.is_scalar()) {
      for (const auto& f : base.entries)
        if (f.key != "basis" && f.key != "source" && !top.find(f.key)) m.entries.push_back(CEntry{f.key, e.key_loc, e.value});
    } else if (e.value.is_map()) {
      for (const auto& f : e.value.entries)
        if (!top.find(f.key)) m.entries.push_back(f);
    } else {
      continue;
    }
    e.value = std::move(m);
  }
  return out;
}

// Overlay: keys of `top` replace those of `base`; `derate` and `runtime` merge key by key, so a
// what-if that sets one derating factor keeps the base's others (e.g. its AVX-512 clock), and one
// that sets the graph gap keeps the base's host overhead.
CNode overlay(const CNode& base, const CNode& top) {
  CNode out = base;
  for (const auto& e : top.entries) {
    if (e.key == "base") continue;
    bool replaced = false;
    for (auto& b : out.entries)
      if (b.key == e.key) {
        if ((e.key == "derate" || e.key == "runtime") && b.value.is_map() && e.value.is_map()) {
          // a figure the what-if replaces loses the base's basis for it (unless it gives its own)
          CNode kept = b.value;
          if (!e.value.find("basis")) kept = without_basis_of(kept, e.value);
          b.value = overlay(kept, e.value);
        } else {
          b.value = e.value;
        }
        replaced = true;
      }
    if (!replaced) out.entries.push_back(e);
  }
  out.loc = top.loc;
  return out;
}

// `interconnect:` the levels between GPUs, from the smallest group to the largest
void read_interconnect(const CNode* ic, Platform& p, Diags& d) {
  if (!ic->is_seq() || ic->items.empty())
    d.error(ic->loc, "interconnect must be a list of levels {name, bandwidth, latency, gpus}, e.g. NVLink then InfiniBand");
  else
    for (const auto& item : ic->items) {
      InterconnectLevel l;
      MapReader lm(item, keys::map("interconnect_level"), "interconnect level", d);
      if (const CNode* v = lm.require("name")) l.name = to_string(*v, d, "name").value_or("");
      if (const CNode* v = lm.require("bandwidth"))
        if (auto b = quantity(v, Dim::ByteRate, d, "bandwidth")) l.bandwidth_bytes_per_s = *b;
      if (auto t = runtime_time(lm.require("latency"), d, "latency")) l.latency_s = *t;
      if (const CNode* v = lm.require("gpus"))
        if (auto n = to_integer(*v, d, "gpus")) {
          if (*n < 2 || *n > 1000000) d.error(v->loc, "gpus must be 2 to 1000000 (the GPUs this level connects)");
          else l.gpus = *n;
        }
      if (const CNode* v = lm.get("source")) l.source = to_string(*v, d, "source").value_or("");
      {
        const BasisOf b = read_basis(lm.get("basis"), {"bandwidth", "latency"}, "interconnect level '" + l.name + "'", d);
        l.basis = b.of("bandwidth"), l.latency_basis = b.of("latency");
      }
      if (!p.interconnect.empty() && l.gpus <= p.interconnect.back().gpus)
        d.error(item.loc, "interconnect level '" + l.name + "' connects " + std::to_string(l.gpus) + " GPUs, no more than the level before it (" +
                              std::to_string(p.interconnect.back().gpus) + ")",
                {Note{{}, "list the levels from the smallest group (NVLink in a node) to the largest (the network between nodes)"}});
      lm.finish();
      p.interconnect.push_back(std::move(l));
    }
}

// One rule of `calibration:` (rsim calibrate writes them), read after the memory levels (a rule's
// bandwidth_by_level names them) and the roofs (its roof)
CalibrationRule read_calibration_rule(const CNode& item, const Platform& p, Diags& d) {
  CalibrationRule rule;
  MapReader cm(item, "calibration rule", d);
  if (const CNode* v = cm.require("class")) rule.name = to_string(*v, d, "class").value_or("");
  if (const CNode* v = cm.require("ops"))
    for (const CNode* o : as_list(*v))
      if (auto s = to_string(*o, d, "op")) rule.ops.push_back(*s);
  if (const CNode* v = cm.get("roof")) rule.roof = to_string(*v, d, "roof").value_or("");
  if (auto h = runtime_time(cm.get("host_overhead"), d, "host_overhead")) rule.host_overhead_s = *h;
  if (const CNode* v = cm.get("error_band")) {  // [lo, hi]: measured / predicted, 0 < lo <= 1 <= hi
    std::optional<double> lo, hi;
    if (v->is_seq() && v->items.size() == 2) lo = to_number(v->items[0], d, "error_band"), hi = to_number(v->items[1], d, "error_band");
    if (!lo || !hi || !(*lo > 0) || !(*lo <= *hi) || !(*hi <= 1000))
      d.error(v->loc, "error_band must be [lo, hi] with 0 < lo <= hi <= 1000: measured / predicted at the 10th and 90th percentile of the class's held-out errors");
    else rule.band = true, rule.error_lo = *lo, rule.error_hi = *hi;
  }
  if (const CNode* v = cm.get("extrapolated")) {
    const std::string e = to_string(*v, d, "extrapolated").value_or("false");
    if (e == "true") rule.extrapolated = true;
    else if (e == "compute") rule.extrapolated_compute = true;
    else if (e == "bandwidth") rule.extrapolated_bandwidth = true;
    else if (e != "false")
      d.error(v->loc, "extrapolated must be true, false, compute or bandwidth (the laws transferred from other classes)");
  }
  // [a, b] or [a, b, c]
  auto read_law = [&](const CNode& v, const std::string& key, PowerLaw& pl) {
    if (!v.is_seq() || v.items.size() < 2 || v.items.size() > 3) {
      d.error(v.loc, key + " must be [a, b] or [a, b, c]: efficiency = a · x^b · (channels per group)^c");
      return false;
    }
    auto a = to_number(v.items[0], d, "a");
    auto b = to_number(v.items[1], d, "b");
    if (a && !(*a > 0)) d.error(v.items[0].loc, "a must be positive");
    if (a && *a > 0) pl.a = *a;
    if (b) pl.b = *b;
    if (v.items.size() == 3)
      if (auto c = to_number(v.items[2], d, "c")) pl.c = *c;
    return true;
  };
  for (const char* key : {"compute", "bandwidth"})
    if (const CNode* v = cm.require(key)) read_law(*v, key, std::string(key) == "compute" ? rule.compute : rule.bandwidth);
  // occupancy: [d, p_sat] on the compute law: × min(1, outputs / p_sat)^d
  if (const CNode* v = cm.get("occupancy")) {
    if (!v->is_seq() || v->items.size() != 2) {
      d.error(v->loc, "occupancy must be [d, saturation]: compute efficiency × min(1, output elements / saturation)^d");
    } else {
      auto e = to_number(v->items[0], d, "occupancy exponent");
      auto sat = to_number(v->items[1], d, "occupancy saturation");
      if (e && !(*e >= 0 && *e <= 4)) d.error(v->items[0].loc, "the occupancy exponent must lie in [0, 4] (rsim calibrate fits it)");
      else if (sat && !(*sat > 0)) d.error(v->items[1].loc, "the occupancy saturation must be a positive number of output elements");
      else if (e && sat) rule.compute.d = *e, rule.compute.p_sat = *sat;
    }
  }
  // range: {compute_x: [lo, hi], bandwidth_x: [lo, hi], channels_per_group: [lo, hi], outputs: [lo, hi]}
  double range[4][2] = {{0, 0}, {0, 0}, {0, 0}, {0, 0}};
  if (const CNode* v = cm.get("range")) {
    MapReader rm(*v, "range", d);
    const char* keys[4] = {"compute_x", "bandwidth_x", "channels_per_group", "outputs"};
    for (int k = 0; k < 4; ++k)
      if (const CNode* r = rm.get(keys[k])) {
        double lo = -1, hi = -1;
        if (r->is_seq() && r->items.size() == 2) {
          lo = to_number(r->items[0], d, keys[k]).value_or(-1);
          hi = to_number(r->items[1], d, keys[k]).value_or(-1);
        }
        if (!(lo > 0) || !(hi >= lo))
          d.error(r->loc, std::string("range.") + keys[k] + " must be [lo, hi] with 0 < lo ≤ hi: the range of the layers the laws were fitted on");
        else
          range[k][0] = lo, range[k][1] = hi;
      }
    rm.finish();
  }
  if (const CNode* v = cm.get("bandwidth_by_level")) {
    if (!v->is_map()) {
      d.error(v->loc, "bandwidth_by_level must map memory level names to [a, b] or [a, b, c]");
    } else {
      for (const auto& e : v->entries) {
        PowerLaw pl;
        if (std::none_of(p.memory.begin(), p.memory.end(), [&](const MemoryLevel& ml) { return ml.name == e.key; })) {
          std::vector<std::string> names;
          for (const auto& ml : p.memory) names.push_back(ml.name);
          std::string hint = did_you_mean(e.key, names), list;
          for (const auto& n : names) list += (list.empty() ? "" : ", ") + n;
          d.error(e.key_loc, "bandwidth_by_level names memory level '" + e.key + "', which the platform lacks",
                  {Note{{}, !hint.empty() ? hint : "its levels: " + list}});
        } else if (read_law(e.value, "bandwidth_by_level." + e.key, pl)) {
          rule.bandwidth_by_level.emplace_back(e.key, pl);
        }
      }
    }
  }
  auto set_range = [&](PowerLaw& pl, int k) {
    pl.x_lo = range[k][0], pl.x_hi = range[k][1];
    pl.g_lo = range[2][0], pl.g_hi = range[2][1];
  };
  set_range(rule.compute, 0);
  rule.compute.p_lo = range[3][0], rule.compute.p_hi = range[3][1];
  set_range(rule.bandwidth, 1);
  for (auto& [level, pl] : rule.bandwidth_by_level) set_range(pl, 1);
  cm.finish();
  if (!rule.roof.empty() && std::none_of(p.compute.begin(), p.compute.end(), [&](const ComputeRoof& r) { return r.name == rule.roof; })) {
    std::vector<std::string> names;
    for (const auto& r : p.compute) names.push_back(r.name);
    std::string hint = did_you_mean(rule.roof, names), list;
    for (const auto& n : names) list += (list.empty() ? "" : ", ") + n;
    d.error(cm.node().find("roof")->loc, "calibration rule '" + rule.name + "' names compute roof '" + rule.roof + "', which the platform lacks",
            {Note{{}, !hint.empty() ? hint : "its roofs: " + list}});
  }
  return rule;
}

// `algorithms:` the convolution algorithms the platform's libraries run, per precision or for all
void read_algorithms(const CNode* al, Platform& p, Diags& d) {
  MapReader am(*al, keys::map("algorithms"), "algorithms", d);
  const std::vector<std::pair<std::string, std::vector<std::string>>> kinds = {{"conv3x3", {"direct", "winograd_f2x2", "winograd_f4x4"}},
                                                                                {"conv1x1_strided", {"full", "touched_input"}}};
  for (const auto& [kind, choices] : kinds) {
    const CNode* v = am.get(kind);
    if (!v) continue;
    auto add = [&, &kind = kind, &choices = choices](const CNode& n, std::optional<DType> dt) {
      auto t = to_string(n, d, kind);
      if (!t) return;
      if (std::find(choices.begin(), choices.end(), *t) == choices.end()) {
        std::string hint = did_you_mean(*t, choices), list;
        for (const auto& c : choices) list += (list.empty() ? "" : ", ") + c;
        d.error(n.loc, "unknown " + kind + " algorithm '" + *t + "'", {Note{{}, hint.empty() ? "choose " + list : hint}});
        return;
      }
      p.algorithms.push_back(AlgorithmChoice{kind, dt, *t});
    };
    if (v->is_map()) {
      for (const auto& e : v->entries) {
        auto dt = parse_dtype(e.key);
        if (!dt) {
          d.error(e.key_loc, "'" + e.key + "' is not a precision", {Note{{}, "e.g. " + kind + ": {fp32: " + choices.back() + "}"}});
          continue;
        }
        add(e.value, *dt);
      }
    } else {
      add(*v, std::nullopt);
    }
  }
  am.finish();
}

// `measured_layers:` (rsim calibrate): layer shapes timed on this platform whose class laws missed them
void read_measured_layers(const CNode* ml, Platform& p, Diags& d) {
  if (!ml->is_seq()) d.error(ml->loc, "measured_layers must be a list of {op, roof, input, output, macs, factor} (rsim calibrate writes it)");
  else
    for (const auto& item : ml->items) {
      MapReader lm(item, keys::map("measured_layer"), "measured layer", d);
      if (!lm.ok()) continue;
      MeasuredLayer l;
      bool good = true;
      auto text = [&](const char* key, std::string& into) {
        const CNode* v = lm.require(key);
        auto t = v ? to_string(*v, d, key) : std::nullopt;
        if (!t || t->empty()) {
          if (v && t) d.error(v->loc, std::string(key) + " must not be empty");
          good = false;
          return;
        }
        into = *t;
      };
      text("op", l.op);
      text("roof", l.roof);
      text("input", l.input);
      text("output", l.output);
      if (const CNode* v = lm.require("macs")) {
        auto x = to_number(*v, d, "macs");
        if (x && !(*x >= 0 && *x < 1e30)) d.error(v->loc, "macs must be a number of MACs ≥ 0 (the layer's macs column)"), x.reset();
        if (x) l.macs = *x;
        else good = false;
      } else {
        good = false;
      }
      if (const CNode* v = lm.require("factor")) {
        auto x = to_number(*v, d, "factor");
        if (x && !(*x > 0 && *x <= 1000))
          d.error(v->loc, "factor must lie in (0, 1000]: the layer's time over its law's (rsim calibrate fits it)"), x.reset();
        if (x) l.factor = *x;
        else good = false;
      } else {
        good = false;
      }
      if (const CNode* v = lm.get("from")) l.from = to_string(*v, d, "from").value_or("");
      if (good && std::none_of(p.compute.begin(), p.compute.end(), [&](const ComputeRoof& r) { return r.name == l.roof; })) {
        std::vector<std::string> names;
        for (const auto& r : p.compute) names.push_back(r.name);
        std::string hint = did_you_mean(l.roof, names), list;
        for (const auto& n : names) list += (list.empty() ? "" : ", ") + n;
        d.error(lm.node().find("roof")->loc, "measured layer names compute roof '" + l.roof + "', which the platform lacks",
                {Note{{}, !hint.empty() ? hint : "its roofs: " + list}});
        good = false;
      }
      lm.finish();
      if (!good) continue;
      auto [it, fresh] = p.measured_factors.emplace(measured_layer_key(l.op, l.roof, l.input, l.output, l.macs), l.factor);
      if (!fresh) {
        d.error(item.loc, "measured layer " + l.op + " " + l.input + " -> " + l.output + " on '" + l.roof + "' is listed twice",
                {Note{{}, "keep one entry per operator, roof, shapes and MACs"}});
        continue;
      }
      p.measured_layers.push_back(std::move(l));
    }
}

// `scale: {compute: 2, bandwidth: 1.5}`: a what-if that multiplies every roof (up or down),
// theoretical and derated alike, e.g. on a `base:` platform
void apply_scale(const CNode* sc, Platform& p, Diags& d) {
  MapReader sm(*sc, keys::map("scale"), "scale", d);
  if (sm.ok()) {
    for (const char* key : {"compute", "bandwidth"}) {
      const CNode* v = sm.get(key);
      if (!v) continue;
      auto f = to_number(*v, d, std::string("scale.") + key);
      if (!f) continue;
      if (!(*f > 0) || *f > 1e6) {
        d.error(v->loc, std::string("scale.") + key + " must be a positive factor, got " + v->scalar);
        continue;
      }
      std::string note = " × scale " + num(*f);
      if (std::string(key) == "compute")
        for (auto& r : p.compute) {
          r.peak_flops_per_s *= *f, r.derated_flops_per_s *= *f;
          r.derivation += note + " = " + si6(r.peak_flops_per_s, rate_unit(r));
          r.derated_derivation += note + " = " + si6(r.derated_flops_per_s, rate_unit(r));
        }
      else
        for (auto& l : p.memory) {
          l.bandwidth_bytes_per_s *= *f, l.derated_bandwidth_bytes_per_s *= *f;
          l.derivation += note + " = " + si6(l.bandwidth_bytes_per_s, "B/s");
          l.derated_derivation += note + " = " + si6(l.derated_bandwidth_bytes_per_s, "B/s");
        }
    }
    if (!sc->is_map() || (!sm.get("compute") && !sm.get("bandwidth")))
      d.error(sc->loc, "scale needs compute and/or bandwidth factors, e.g. scale: {compute: 2, bandwidth: 1.5}");
    sm.finish();
  }
}

}  // namespace

Platform build_platform(const CNode& node, const CNode* base, Diags& d) {
  CNode merged = base && base->is_map() && node.is_map() ? overlay(*base, node) : node;
  Platform p;
  MapReader m(merged, keys::map("platform"), "platform", d);
  if (!m.ok()) return p;
  m.allow({"base"});
  if (const CNode* v = m.require("name")) p.name = to_string(*v, d, "name").value_or("");
  if (const CNode* v = m.get("title")) p.title = to_string(*v, d, "title").value_or("");
  // a what-if of a catalog platform is titled as itself, unless it gives a title of its own
  if (base && base->is_map() && node.is_map() && !node.find("title") && node.find("name") && node.find("name")->is_scalar() && base->find("name") &&
      base->find("name")->is_scalar() && node.find("name")->scalar != base->find("name")->scalar)
    p.title = node.find("name")->scalar + " — what-if of " + (p.title.empty() ? base->find("name")->scalar : p.title);
  if (const CNode* v = m.get("kind")) p.kind = to_string(*v, d, "kind").value_or("");
  if (const CNode* v = m.get("source")) p.source = to_string(*v, d, "source").value_or("");
  m.get("notes");
  if (const CNode* lo = merged.find("launch_overhead")) {  // the key of rsim before `runtime:`
    const CEntry* e = nullptr;
    for (const auto& x : merged.entries)
      if (x.key == "launch_overhead") e = &x;
    d.error(e ? e->key_loc : lo->loc, "launch_overhead has moved into the platform's runtime block",
            {Note{{}, "write `runtime: {launch_overhead: " + (lo->is_scalar() ? lo->scalar : std::string("5 us")) +
                          "}` (with graph_gap and host_overhead for `execution: graph | eager`)"}});
  }
  if (const CNode* rt = m.get("runtime")) p.runtime = read_runtime(*rt, d);
  if (const CNode* ic = m.get("interconnect")) read_interconnect(ic, p, d);
  Derating der = read_derating(m.get("derate"), d);
  if (const CNode* c = m.require("compute")) {
    if (!c->is_seq() || c->items.empty())
      d.error(c->loc, "compute must be a list of roofs (name, dtypes, peak or derive)");
    else
      for (const auto& item : c->items) p.compute.push_back(read_compute(item, der, d));
  }
  read_platform_extras(m, p, d);  // sm_count, boost_clock, l2, kernel_model, contention (platform_gpu.cpp)
  if (const CNode* c = m.require("memory")) {
    if (!c->is_seq() || c->items.empty())
      d.error(c->loc, "memory must be a list of levels (name, bandwidth or derive)");
    else
      for (const auto& item : c->items) p.memory.push_back(read_memory(item, der, d));
  }
  // after the memory levels: a rule's bandwidth_by_level names them
  if (const CNode* c = m.get("calibration")) {
    if (!c->is_seq()) d.error(c->loc, "calibration must be a list of {class, ops, compute: [a, b], bandwidth: [a, b]} (rsim calibrate writes it)");
    else
      for (const auto& item : c->items) p.calibration.push_back(read_calibration_rule(item, p, d));
  }
  if (const CNode* al = m.get("algorithms")) read_algorithms(al, p, d);
  if (const CNode* ml = m.get("measured_layers")) read_measured_layers(ml, p, d);
  if (const CNode* sc = m.get("scale")) apply_scale(sc, p, d);
  m.finish(merged.find("launch_overhead") ? std::vector<std::string>{"launch_overhead"} : std::vector<std::string>{});  // (reported above)
  return p;
}

}  // namespace rsim
