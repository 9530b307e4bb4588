// A platform's GPU figures (sm_count, boost_clock, l2), its kernel model (`kernel_model:`) and its
// contention: read from the platform's map (build_platform calls read_platform_extras).
#include <cmath>

#include "engine/hardware/platform.hpp"
#include "engine/ops/ops.hpp"
#include "engine/model/units.hpp"

namespace rsim {

namespace {

std::optional<double> quantity_of(const CNode* n, Dim dim, Diags& d, const std::string& what) {
  if (!n) return std::nullopt;
  if (!n->is_scalar()) {
    d.error(n->loc, what + " must be a quantity such as '" + dim_example(dim) + "'");
    return std::nullopt;
  }
  QuantityResult q = parse_quantity(n->scalar, dim);
  if (!q.value) {
    d.error(n->loc, what + ": " + q.error);
    return std::nullopt;
  }
  if (!(*q.value >= 0) || !std::isfinite(*q.value)) {
    d.error(n->loc, what + " must not be negative");
    return std::nullopt;
  }
  return q.value;
}

// A number of a kernel model in [lo, hi] (lo excluded when open), or nullopt after an error
std::optional<double> bounded(const CNode* n, Diags& d, const std::string& what, double lo, double hi, bool open) {
  if (!n) return std::nullopt;
  auto v = to_number(*n, d, what);
  if (!v) return std::nullopt;
  if (!(open ? *v > lo : *v >= lo) || !(*v <= hi)) {
    d.error(n->loc, what + " must be " + (open ? "above " : "at least ") + format_number(lo) + " and at most " + format_number(hi) + ", got " + n->scalar);
    return std::nullopt;
  }
  return v;
}

std::optional<double> time_of(const CNode* n, Diags& d, const std::string& what) {
  auto t = quantity_of(n, Dim::Time, d, what);
  if (t && *t > 1) {
    d.error(n->loc, what + " must be at most 1 s");
    return std::nullopt;
  }
  return t;
}

GemmParams read_gemm_params(const CNode& n, const std::string& what, Diags& d) {
  GemmParams p;
  MapReader m(n, keys::map("gemm_params"), what, d);
  if (!m.ok()) return p;
  if (auto v = bounded(m.require("compute_efficiency"), d, "compute_efficiency", 0, 1, true)) p.compute_efficiency = *v;
  if (auto v = bounded(m.require("pipeline_fill"), d, "pipeline_fill", 0, 1000, false)) p.pipeline_fill = *v;
  if (auto v = bounded(m.require("bandwidth_efficiency"), d, "bandwidth_efficiency", 0, 1, true)) p.bandwidth_efficiency = *v;
  if (auto v = bounded(m.require("sm_bandwidth"), d, "sm_bandwidth", 0, 1e4, true)) p.sm_bandwidth = *v;
  if (auto v = time_of(m.require("floor"), d, "floor")) p.floor_s = *v;
  if (auto v = time_of(m.get("wave"), d, "wave")) p.wave_s = *v;
  if (auto v = bounded(m.get("prologue_bytes"), d, "prologue_bytes", 0, 1000, false)) p.prologue_bytes = *v;
  if (auto v = time_of(m.get("prologue_floor"), d, "prologue_floor")) p.prologue_floor_s = *v;
  m.finish();
  return p;
}

AttentionParams read_attention_params(const CNode& n, const std::string& what, Diags& d) {
  AttentionParams p;
  MapReader m(n, keys::map("attention_params"), what, d);
  if (!m.ok()) return p;
  if (auto v = bounded(m.require("compute_efficiency"), d, "compute_efficiency", 0, 1, true)) p.compute_efficiency = *v;
  if (auto v = bounded(m.require("bandwidth_efficiency"), d, "bandwidth_efficiency", 0, 1, true)) p.bandwidth_efficiency = *v;
  if (auto v = time_of(m.require("score"), d, "score")) p.score_s = *v;
  if (auto v = time_of(m.require("mask"), d, "mask")) p.mask_s = *v;
  if (auto v = time_of(m.require("block"), d, "block")) p.block_s = *v;
  if (auto v = time_of(m.require("tile"), d, "tile")) p.tile_s = *v;
  if (auto v = time_of(m.require("floor"), d, "floor")) p.floor_s = *v;
  m.finish();
  return p;
}

DecodeAttentionParams read_decode_params(const CNode& n, const std::string& what, Diags& d) {
  DecodeAttentionParams p;
  MapReader m(n, keys::map("decode_params"), what, d);
  if (!m.ok()) return p;
  auto positive = [&](const char* key, double& out) {
    if (auto v = bounded(m.require(key), d, key, 0, 1e12, true)) out = *v;
  };
  if (auto v = time_of(m.require("floor"), d, "floor")) p.floor_s = *v;
  if (auto v = bounded(m.require("bandwidth_efficiency"), d, "bandwidth_efficiency", 0, 1, true)) p.bandwidth_efficiency = *v;
  positive("cta_cycles", p.cta_cycles), positive("group_cycles", p.group_cycles), positive("cta_bytes_per_cycle", p.cta_bytes_per_cycle);
  positive("mmha_cta_cycles", p.mmha_cta_cycles), positive("mmha_token_cycles", p.mmha_token_cycles), positive("l2_bytes_per_cycle", p.l2_bytes_per_cycle);
  if (auto v = time_of(m.require("multi_block"), d, "multi_block")) p.multi_block_s = *v;
  if (auto v = time_of(m.require("append"), d, "append")) p.append_s = *v;
  m.finish();
  return p;
}

KernelModel read_kernel_model(const CNode& n, Diags& d) {
  KernelModel k;
  MapReader m(n, keys::map("kernel_model"), "kernel_model", d);
  if (!m.ok()) return k;
  const CNode* from = m.get("from");
  if (from) k.from = to_string(*from, d, "from").value_or(""), k.from_loc = from->loc;
  if (const CNode* v = m.get("source")) k.source = to_string(*v, d, "source").value_or("");
  if (const CNode* v = m.get("basis")) basis_value(*v, d);
  const CNode* gemm = m.get("gemm");
  const CNode* memory = m.get("memory");
  if (from && (gemm || memory))
    d.error(from->loc, "kernel_model takes its parameters from '" + k.from + "' or states them, not both",
            {Note{{}, "remove `from:`, or the gemm/memory parameters"}});
  if (gemm) {
    if (!gemm->is_map() || gemm->entries.empty()) {
      d.error(gemm->loc, "gemm must map compute dtypes to parameters, e.g. {bf16: {compute_efficiency: 0.8, ...}}");
    } else {
      for (const auto& e : gemm->entries) {
        // `fp8_block`: fp8 GEMMs with block scales (AIConfigurator's name)
        const bool block = e.key.size() > 6 && e.key.compare(e.key.size() - 6, 6, "_block") == 0;
        auto t = parse_dtype(block ? e.key.substr(0, e.key.size() - 6) : e.key);
        if (!t || (block && dtype_bytes(*t) > 1)) {
          d.error(e.key_loc, "gemm names '" + e.key + "', which is not a dtype", {Note{{}, "a compute dtype such as bf16, fp16, fp8, tf32, or fp8_block"}});
          continue;
        }
        (block ? k.gemm_block : k.gemm).emplace_back(*t, read_gemm_params(e.value, "kernel_model.gemm." + e.key, d));
      }
    }
  }
  if (const CNode* att = m.get("attention")) {
    if (from) d.error(att->loc, "kernel_model takes its parameters from '" + k.from + "' or states them, not both");
    if (!att->is_map() || att->entries.empty()) d.error(att->loc, "attention must map compute dtypes to parameters, e.g. {bf16: {compute_efficiency: 0.5, ...}}");
    else
      for (const auto& e : att->entries) {
        auto t = parse_dtype(e.key);
        if (!t) {
          d.error(e.key_loc, "attention names '" + e.key + "', which is not a dtype", {Note{{}, "a compute dtype such as bf16, fp16, fp8"}});
          continue;
        }
        k.attention.emplace_back(*t, read_attention_params(e.value, "kernel_model.attention." + e.key, d));
      }
  }
  if (const CNode* dec = m.get("decode_attention")) {
    if (from) d.error(dec->loc, "kernel_model takes its parameters from '" + k.from + "' or states them, not both");
    if (!dec->is_map() || dec->entries.empty()) d.error(dec->loc, "decode_attention must map KV-cache dtypes to parameters, e.g. {bf16: {floor: 3.5 us, ...}}");
    else
      for (const auto& e : dec->entries) {
        auto t = parse_dtype(e.key);
        if (!t) {
          d.error(e.key_loc, "decode_attention names '" + e.key + "', which is not a dtype", {Note{{}, "a KV-cache dtype such as bf16, fp16, fp8"}});
          continue;
        }
        k.decode.emplace_back(*t, read_decode_params(e.value, "kernel_model.decode_attention." + e.key, d));
      }
  }
  if (memory) {
    MapReader mm(*memory, keys::map("kernel_memory"), "kernel_model.memory", d);
    MemoryParams p;
    if (auto v = bounded(mm.require("bandwidth_efficiency"), d, "bandwidth_efficiency", 0, 1, true)) p.bandwidth_efficiency = *v;
    if (auto v = time_of(mm.require("floor"), d, "floor")) p.floor_s = *v;
    if (const CNode* ops = mm.get("ops")) {  // {OPERATOR: its own share of the bandwidth}
      if (!ops->is_map()) d.error(ops->loc, "kernel_model.memory.ops must map operators to their share of the bandwidth, e.g. {batchnorm: 0.55}");
      else
        for (const auto& e : ops->entries) {
          const OpDef* op = builtin_ops().find(e.key);
          if (!op) {
            d.error(e.key_loc, "kernel_model.memory.ops names '" + e.key + "', which is not a built-in operator", {Note{{}, "`rsim ops` lists them"}});
            continue;
          }
          if (auto v = bounded(&e.value, d, "kernel_model.memory.ops." + e.key, 0, 1, true)) p.ops.emplace_back(op->name, *v);
        }
    }
    mm.finish();
    k.memory = p;
  }
  if (const CNode* c = m.get("collective")) {
    if (from) d.error(c->loc, "kernel_model takes its parameters from '" + k.from + "' or states them, not both");
    MapReader cm(*c, keys::map("kernel_collective"), "kernel_model.collective", d);
    for (Collective kind : {Collective::AllReduce, Collective::AllGather, Collective::ReduceScatter, Collective::AllToAll, Collective::CustomAllReduce})
      if (const CNode* v = cm.get(collective_name(kind))) {
        const std::string what = std::string("kernel_model.collective.") + collective_name(kind);
        MapReader pm(*v, keys::map("collective_params"), what, d);
        CollectiveParams p;
        if (auto t = time_of(pm.require("floor"), d, "floor")) p.floor_s = *t;
        if (auto t = time_of(pm.require("step"), d, "step")) p.step_s = *t;
        if (auto e = bounded(pm.require("bandwidth_efficiency"), d, "bandwidth_efficiency", 0, 1, true)) p.bandwidth_efficiency = *e;
        if (auto e = bounded(pm.get("bulk_efficiency"), d, "bulk_efficiency", 0, 2, true)) p.bulk_efficiency = *e;
        if (auto t = time_of(pm.get("bulk_latency"), d, "bulk_latency")) p.bulk_latency_s = *t;
        pm.finish();
        k.collectives.emplace_back(kind, p);
      }
    cm.finish();
  }
  if (!from && !k.active()) d.error(n.loc, "kernel_model needs `from: PLATFORM` or its gemm/attention/decode_attention/memory/collective parameters");
  m.finish();
  return k;
}

}  // namespace

void read_platform_extras(MapReader& m, Platform& p, Diags& d) {
  if (const CNode* v = m.get("sm_count"))
    if (auto n = to_integer(*v, d, "sm_count")) {
      if (*n < 1 || *n > 100000) d.error(v->loc, "sm_count must be 1 to 100000 (the GPU's streaming multiprocessors or compute units), got " + v->scalar);
      else p.sm_count = static_cast<int>(*n);
    }
  if (const CNode* v = m.get("boost_clock"))
    if (auto f = quantity_of(v, Dim::Frequency, d, "boost_clock")) {
      if (!(*f > 0)) d.error(v->loc, "boost_clock must be above 0");
      else p.boost_clock_hz = *f;
    }
  if (const CNode* l2 = m.get("l2")) {
    MapReader lm(*l2, keys::map("l2"), "l2", d);
    if (auto s = quantity_of(lm.require("size"), Dim::Bytes, d, "l2 size")) p.l2_size_bytes = *s;
    if (auto b = quantity_of(lm.get("bandwidth"), Dim::ByteRate, d, "l2 bandwidth")) p.l2_bandwidth_bytes_per_s = *b;
    if (const CNode* v = lm.get("basis"))
      if (auto b = basis_value(*v, d)) p.l2_bandwidth_basis = *b;
    p.l2_source.clear();
    if (const CNode* v = lm.get("source")) p.l2_source = v->scalar;
    lm.finish();
  }
  if (const CNode* c = m.get("contention")) {
    MapReader cm(*c, keys::map("contention"), "contention", d);
    if (const CNode* v = cm.require("onset_s"))
      if (auto x = to_number(*v, d, "onset_s")) {
        if (!(*x > 0) || *x > 1e3) d.error(v->loc, "onset_s must be a time in seconds above 0 and at most 1000 (rsim calibrate writes it)");
        else p.contention.onset_s = *x;
      }
    if (const CNode* v = cm.require("slowdown"))
      if (auto x = to_number(*v, d, "slowdown")) {
        if (!(*x >= 1) || *x > 1e3) d.error(v->loc, "slowdown must be at least 1 (a core of its own) and at most 1000");
        else p.contention.slowdown = *x;
      }
    cm.finish();
  }
  if (const CNode* k = m.get("kernel_model")) {
    p.kernel_model = read_kernel_model(*k, d);
    if ((!p.kernel_model.gemm.empty() || !p.kernel_model.gemm_block.empty()) && p.sm_count == 0)
      d.error(k->loc, "kernel_model's GEMM model needs the platform's sm_count", {Note{{}, "add `sm_count: N` (the datasheet's SM count)"}});
    if ((p.kernel_model.active() || !p.kernel_model.from.empty()) && p.kind != "gpu")
      d.error(k->loc, "kernel_model prices GPU kernels; platform '" + p.name + "' is a " + (p.kind.empty() ? std::string("platform without kind: gpu") : p.kind));
  }
}

}  // namespace rsim
