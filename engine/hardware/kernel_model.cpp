// GPU kernel cost models: the GEMM tiling model and the memory-bound kernel (kernel_model.hpp).
#include "engine/hardware/kernel_model.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>

#include "engine/graph/graph.hpp"
#include "engine/hardware/platform.hpp"
#include "engine/hardware/roofline.hpp"
#include "engine/model/units.hpp"

namespace rsim {

const GemmParams* KernelModel::gemm_for(DType t, const std::vector<DType>& same_roof) const {
  for (const auto& [d, p] : gemm)
    if (d == t) return &p;
  for (DType o : same_roof)
    for (const auto& [d, p] : gemm)
      if (d == o) return &p;
  return nullptr;
}

const GemmParams* KernelModel::gemm_for_layer(DType t, long long quant_group, const std::vector<DType>& same_roof) const {
  if (quant_group > 0 && dtype_bytes(t) <= 1)
    for (const auto& [d, p] : gemm_block)
      if (d == t) return &p;
  return gemm_for(t, same_roof);
}

const char* collective_name(Collective c) {
  switch (c) {
    case Collective::AllReduce: return "all_reduce";
    case Collective::AllGather: return "all_gather";
    case Collective::ReduceScatter: return "reduce_scatter";
    case Collective::AllToAll: return "all_to_all";
    case Collective::CustomAllReduce: return "custom_all_reduce";
  }
  return "all_reduce";
}

const CollectiveParams* KernelModel::collective_for(Collective c) const {
  for (const auto& [k, p] : collectives)
    if (k == c) return &p;
  if (c == Collective::CustomAllReduce) return nullptr;
  for (const auto& [k, p] : collectives)
    if (k == Collective::AllReduce) return &p;
  return nullptr;
}

double collective_time(const CollectiveParams& p, Collective c, double bytes, long long n, double bandwidth) {
  if (n < 2 || !(bytes > 0)) return 0;
  const double share = static_cast<double>(n - 1) / static_cast<double>(n);
  const double bus = (c == Collective::AllReduce || c == Collective::CustomAllReduce ? 2 : 1) * share * bytes;
  double move = bus / (bandwidth * p.bandwidth_efficiency);  // the small-message protocol
  if (p.bulk_efficiency > 0) move = std::min(move, bus / (bandwidth * p.bulk_efficiency) + p.bulk_latency_s);  // the bulk one, where it is faster
  return p.floor_s + p.step_s * static_cast<double>(n - 1) + move;
}

CollectiveTime all_reduce_on(const KernelModel& km, double bytes, long long n, double bandwidth, double latency, bool in_domain) {
  CollectiveTime t;
  if (const CollectiveParams* p = km.collective_for(Collective::AllReduce)) t = CollectiveTime{collective_time(*p, Collective::AllReduce, bytes, n, bandwidth), false};
  else t = all_reduce_time(bytes, n, bandwidth, latency);
  if (const CollectiveParams* c = in_domain ? km.collective_for(Collective::CustomAllReduce) : nullptr)
    if (const double custom = collective_time(*c, Collective::CustomAllReduce, bytes, n, bandwidth); custom < t.time_s) t = CollectiveTime{custom, false};
  return t;
}
double all_gather_on(const KernelModel& km, double bytes, long long n, double bandwidth, double latency) {
  if (const CollectiveParams* p = km.collective_for(Collective::AllGather)) return collective_time(*p, Collective::AllGather, bytes, n, bandwidth);
  return all_gather_time(bytes, n, bandwidth, latency);
}
double all_to_all_on(const KernelModel& km, double bytes, long long n, double bandwidth, double latency) {
  if (const CollectiveParams* p = km.collective_for(Collective::AllToAll)) return collective_time(*p, Collective::AllToAll, bytes, n, bandwidth);
  return all_to_all_time(bytes, n, bandwidth, latency);
}

std::string collective_params_yaml(const CollectiveParams& p) {
  char buf[256];
  std::snprintf(buf, sizeof buf, "{floor: %.4g us, step: %.4g us, bandwidth_efficiency: %.4g, bulk_efficiency: %.4g, bulk_latency: %.4g us}", p.floor_s * 1e6,
                p.step_s * 1e6, p.bandwidth_efficiency, p.bulk_efficiency, p.bulk_latency_s * 1e6);
  return buf;
}

namespace {

double product(const Shape& s, size_t from, size_t to) {
  double p = 1;
  for (size_t i = from; i < to && i < s.size(); ++i) p *= static_cast<double>(s[i]);
  return p;
}

bool is_op(const Layer& L, std::initializer_list<const char*> names) {
  for (const char* n : names)
    if (L.op->name == n) return true;
  return false;
}

}  // namespace

bool attention_shape(const Layer& L, AttentionShape& a) {
  if (!L.op || L.op->name != "attention" || L.in_shapes.size() < 2 || L.in_shapes[0].size() != 3 || L.in_shapes[1].size() != 3) return false;
  if (L.attrs.s("implementation") != "flash" || !(L.cost.macs > 0)) return false;
  const Shape& q = L.in_shapes[0];
  const double h = static_cast<double>(L.attrs.i("heads"));
  a.batch = static_cast<double>(q[0]), a.sq = static_cast<double>(q[1]), a.skv = static_cast<double>(L.in_shapes[1][1]);
  a.head_dim = L.attrs.has("head_dim") ? static_cast<double>(L.attrs.i("head_dim")) : static_cast<double>(q[2]) / h;
  a.causal = L.attrs.b("causal"), a.window = static_cast<double>(L.attrs.i("window"));
  if (a.sq < 2) return false;  // one query is a decode step's (the serving pricer's per-sequence q = 1): not this model's
  // scores per sequence and head, as the operator counts them (flash), for the heads this GPU runs
  double pairs = a.sq * a.skv;
  if (a.causal) {
    const double off = a.skv - a.sq;
    if (a.window > 0) {
      const double n1 = std::clamp(a.window - off, 0.0, a.sq);  // queries that see fewer than the window
      pairs = n1 * off + n1 * (n1 + 1) / 2 + (a.sq - n1) * a.window;
    } else {
      pairs = a.sq * a.skv - a.sq * (a.sq - 1) / 2;
    }
  }
  if (!(pairs > 0) || !(a.head_dim > 0)) return false;
  a.heads = L.cost.macs / (2 * a.head_dim * a.batch * pairs);  // (tensor parallelism's share of h)
  return a.heads > 0 && a.heads <= h * (1 + 1e-9);
}

std::vector<GemmPart> gemm_parts(const Layer& L, double bytes) {
  if (!L.op || L.out_shapes.empty() || L.in_shapes.empty() || !(L.cost.macs > 0)) return {};
  const Shape& out = L.out_shapes[0];
  const Shape& in = L.in_shapes[0];
  if (out.empty() || in.empty()) return {};
  auto valid = [](const GemmShape& g) { return g.m >= 1 && g.n >= 1 && g.k >= 1 && g.batch >= 1 && std::isfinite(g.m * g.n * g.k * g.batch); };
  GemmShape g;
  if (is_op(L, {"swiglu", "geglu"})) {
    // T tokens of D; F per GPU from the MACs (3 · T · D · F): gate and up [T × D] · [D × F], down [T × F] · [F × D]
    const double d = static_cast<double>(in.back()), t = product(in, 0, in.size() - 1);
    const double f = L.cost.macs / (3 * t * d);
    const double a = dtype_bytes(L.dtype), w = dtype_bytes(L.weights_dtype());
    const GemmShape up{1, t, f, d}, down{1, t, d, f};
    if (!valid(up)) return {};
    const double up_bytes = t * d * a + d * f * w + t * f * a, down_bytes = t * f * a + f * d * w + t * d * a;
    if (2 * up_bytes + down_bytes > bytes * (1 + 1e-9)) return {};  // (a cost counted otherwise: the roofline)
    return {{up, up_bytes}, {up, up_bytes}, {down, down_bytes}};
  }
  if (is_op(L, {"linear", "gemm"})) {
    // [m × k] · [k × n]: n the output's last dimension, m the rest; k from the MACs (per GPU: a
    // column split shares n, a row split k)
    g.n = static_cast<double>(out.back());
    g.m = product(out, 0, out.size() - 1);
    const double k_in = static_cast<double>(in.back());
    const double share = L.cost.macs / (g.m * g.n * k_in);
    if (L.shard == Layer::Shard::Row || L.shard == Layer::Shard::Partial) g.k = k_in * share;
    else g.k = k_in, g.n *= share;
  } else if (is_op(L, {"matmul"})) {
    if (out.size() < 2) return {};
    g.m = static_cast<double>(out[out.size() - 2]);
    g.n = static_cast<double>(out.back());
    g.batch = product(out, 0, out.size() - 2);
    g.k = L.cost.macs / (g.batch * g.m * g.n);
  } else if (is_op(L, {"conv2d", "conv_nd"})) {
    // an implicit GEMM per group: m = N · output pixels, n = Cout / groups, k = Cin/groups · taps
    if (out.size() < 3) return {};
    const double groups = L.attrs.has("groups") ? static_cast<double>(L.attrs.i("groups")) : 1;
    const double cin = in.size() > 1 ? static_cast<double>(in[1]) : 0;
    if (!(groups >= 1) || cin <= groups) return {};  // depthwise: memory-bound, not a GEMM
    g.batch = groups;
    g.m = static_cast<double>(out[0]) * product(out, 2, out.size());
    g.n = static_cast<double>(out[1]) / groups;
    g.k = L.cost.macs / (g.batch * g.m * g.n);
  } else {
    return {};
  }
  if (!valid(g)) return {};
  return {{g, bytes}};
}

Waves gemm_waves(const GemmShape& g, TileShape t, int split_k, int sm_count) {
  Waves w;
  w.tiles = g.batch * std::ceil(g.m / t.m) * std::ceil(g.n / t.n) * split_k;
  const double s = sm_count;
  w.waves = std::ceil(w.tiles / s);
  w.last_wave_occupancy = w.waves > 0 ? (w.tiles - (w.waves - 1) * s) / s : 0;
  return w;
}

GemmTime gemm_time(const GemmShape& g, double bytes, const GemmParams& p, double peak, double bandwidth, int sm_count, double prologue_elements) {
  GemmTime best;
  best.time_s = std::numeric_limits<double>::infinity();
  const double sms = sm_count;
  const double per_sm = peak / sms;  // one SM's share of the tensor-core peak
  const double stream = bandwidth * p.bandwidth_efficiency;
  for (const TileShape& t : kGemmTiles)
    for (int s : kSplitK) {
      if (s > 1 && std::ceil(g.k / s) < kGemmTileK) break;  // no split below one K step per part
      const Waves w = gemm_waves(g, t, s, sm_count);
      const double steps = std::ceil(std::ceil(g.k / s) / kGemmTileK);
      const double tile_s = (steps + p.pipeline_fill) * 2.0 * t.m * t.n * kGemmTileK / (per_sm * p.compute_efficiency);
      const double compute = w.waves * tile_s;
      // fewer CTAs than SMs pull less than the whole bandwidth: each at most sm_bandwidth × its share
      const double bw = std::min(stream, std::min(w.tiles, sms) * p.sm_bandwidth * stream / sms);
      const double partials = s > 1 ? 8.0 * g.batch * g.m * g.n * s : 0;  // fp32 partial sums written and read back
      const double memory = (bytes + partials) / bw;
      const double overhead = p.floor_s + w.waves * p.wave_s;
      const double time = std::max(compute, memory) + overhead;
      if (time < best.time_s) {
        best.time_s = time, best.compute_s = compute, best.memory_s = memory, best.overhead_s = overhead;
        best.tile = t, best.split_k = s, best.waves = w;
      }
    }
  if (prologue_elements > 0 && p.prologue_bytes > 0) {
    best.prologue_s = p.prologue_floor_s + prologue_elements * p.prologue_bytes / stream;
    best.time_s += best.prologue_s;
  }
  return best;
}

double memory_kernel_time(double flops, double bytes, const MemoryParams& p, double peak, double bandwidth, const std::string& op) {
  const double c = peak > 0 ? flops / peak : 0;
  const double m = bandwidth > 0 ? bytes / (bandwidth * p.efficiency(op)) : 0;
  return std::max(c, m) + p.floor_s;
}

bool apply_kernel_model(RoofPoint& derated, const Layer& L, const Platform& pl, const ComputeRoof& roof, const MemoryLevel& level, double work,
                        double bytes, double bound_s, std::optional<DecodeShape>* decode, double held_gap) {
  const KernelModel& km = pl.kernel_model;
  double compute = 0, memory = 0, total = 0;
  const std::vector<GemmPart> parts = gemm_parts(L, bytes);
  if (!parts.empty()) {
    const GemmParams* p = km.gemm_for_layer(L.compute_dtype(), L.precision.quant_group, roof.dtypes);
    if (!p || pl.sm_count < 1) return false;
    // the math in a narrower dtype than the activations (fp8 from bf16): they are converted first
    const bool narrower = dtype_bytes(L.compute_dtype()) < dtype_bytes(L.dtype);
    double rest = bytes;
    for (const GemmPart& part : parts) {
      const GemmShape& g = part.g;
      const GemmTime t = gemm_time(g, part.bytes, *p, roof.peak_flops_per_s, level.bandwidth_bytes_per_s, pl.sm_count, narrower ? g.batch * g.m * g.k : 0);
      compute += t.compute_s, memory += t.memory_s + t.prologue_s, total += t.time_s;
      rest -= part.bytes;
    }
    if (rest > 0 && parts.size() > 1) {  // a gated MLP's activation pass
      const double eff = km.memory ? km.memory->bandwidth_efficiency : p->bandwidth_efficiency;
      const double pass = rest / (level.bandwidth_bytes_per_s * eff);
      memory += pass, total += pass + (km.memory ? km.memory->floor_s : 0);
    }
  } else if (DecodeShape ds; L.op && L.op->name == "attention" && decode_shape(L, ds)) {
    // decode attention (one query per sequence), by the KV cache's dtype
    const DecodeAttentionParams* p = km.decode_for(L.kv_dtype());
    if (!p || pl.sm_count < 1 || !(pl.boost_clock_hz > 0)) return false;
    const DecodeTime t = decode_attention_time(ds, *p, DecodeFigures{pl.sm_count, pl.boost_clock_hz, level.bandwidth_bytes_per_s, pl.l2_size_bytes});
    compute = t.stream_s, memory = t.memory_s, total = t.time_s;
    if (decode) *decode = ds;
  } else if (L.op && L.op->name == "attention") {
    // context attention (flash, more than one query)
    AttentionShape a;
    const AttentionParams* p = km.attention_for(L.compute_dtype(), roof.dtypes);
    if (!p || pl.sm_count < 1 || !attention_shape(L, a)) return false;
    memory = bytes / (level.bandwidth_bytes_per_s * p->bandwidth_efficiency);
    compute = attention_time(a, 0, *p, roof.peak_flops_per_s, level.bandwidth_bytes_per_s, pl.sm_count) - p->floor_s;  // (no bytes: its tiles alone)
    total = p->floor_s + std::max(compute, memory);
  } else {
    // memory-bound kernels: layers without MACs (elementwise, norms, pooling, copies) and depthwise
    // convolutions; attention, mixtures and other MAC-carrying operators keep the roofline
    const bool depthwise = L.op && (L.op->name == "depthwise_conv2d" || ((L.op->name == "conv2d" || L.op->name == "conv_nd") && L.cost.macs > 0));
    if (!km.memory || !(bytes > 0) || (L.cost.macs > 0 && !depthwise)) return false;
    const std::string& op = L.op ? L.op->name : std::string();
    compute = roof.peak_flops_per_s > 0 ? work / roof.peak_flops_per_s : 0;
    memory = bytes / (level.bandwidth_bytes_per_s * km.memory->efficiency(op));
    total = memory_kernel_time(work, bytes, *km.memory, roof.peak_flops_per_s, level.bandwidth_bytes_per_s, op);
    held_gap = std::min(held_gap, km.memory->floor_s);  // (fitted on kernels timed alone, it holds no more of a graph's gap than its floor)
  }
  total = std::max(total - held_gap, bound_s);
  compute = std::min(compute, total), memory = std::min(memory, total);
  const bool compute_bound = compute >= memory;
  derated.compute_time_s = compute_bound ? total : compute;  // the floor counts as work, on the larger path
  derated.memory_time_s = compute_bound ? memory : total;
  derated.time_s = total;
  derated.bound = compute_bound ? Bound::Compute : Bound::Memory;
  derated.attainable_flops_per_s = total > 0 ? work / total : 0;
  return true;
}

std::string describe_gpu_figures(const Platform& p) {
  std::string s;
  if (p.sm_count > 0 || p.boost_clock_hz > 0 || p.l2_size_bytes > 0) {
    s += "  GPU:";
    if (p.sm_count > 0) s += " " + std::to_string(p.sm_count) + " SMs";
    if (p.boost_clock_hz > 0) s += ", boost clock " + si(p.boost_clock_hz, "Hz");
    if (p.l2_size_bytes > 0)
      s += ", L2 " + format_number(p.l2_size_bytes / 1048576) + " MiB" +
           (p.l2_source.empty() || p.l2_source == "datasheet" ? std::string() : " (" + p.l2_source + ")") +
           (p.l2_bandwidth_bytes_per_s > 0 ? " at " + si(p.l2_bandwidth_bytes_per_s, "B/s") + " " + basis_name(p.l2_bandwidth_basis) : std::string());
    s += "\n";
  }
  const KernelModel& k = p.kernel_model;
  if (!k.active() && k.from.empty()) return s;
  s += "  kernel model" + (k.from.empty() ? std::string() : " (carried from " + k.from + ": its fitted parameters on this platform's datasheet figures)") +
       ":" + (k.source.empty() ? "" : " " + k.source) + "\n";
  for (const auto& [t, g] : k.gemm) s += std::string("    gemm ") + dtype_name(t) + ": " + gemm_params_yaml(g) + "\n";
  for (const auto& [t, g] : k.gemm_block) s += std::string("    gemm ") + dtype_name(t) + " with block scales: " + gemm_params_yaml(g) + "\n";
  for (const auto& [t, a] : k.attention) s += std::string("    context attention ") + dtype_name(t) + ": " + attention_params_yaml(a) + "\n";
  for (const auto& [t, a] : k.decode) s += std::string("    decode attention, ") + dtype_name(t) + " KV cache: " + decode_params_yaml(a) + "\n";
  for (const auto& [c, cp] : k.collectives) s += std::string("    ") + collective_name(c) + ": " + collective_params_yaml(cp) + "\n";
  if (k.memory) s += "    memory-bound: " + memory_params_yaml(*k.memory) + "\n";
  return s;
}

std::string memory_params_yaml(const MemoryParams& p) {
  char buf[160];
  std::snprintf(buf, sizeof buf, "{bandwidth_efficiency: %.4g, floor: %.4g us", p.bandwidth_efficiency, p.floor_s * 1e6);
  std::string s = buf;
  if (!p.ops.empty()) {
    s += ", ops: {";
    for (size_t i = 0; i < p.ops.size(); ++i) {
      std::snprintf(buf, sizeof buf, "%s%s: %.4g", i ? ", " : "", p.ops[i].first.c_str(), p.ops[i].second);
      s += buf;
    }
    s += "}";
  }
  return s + "}";
}

std::string gemm_params_yaml(const GemmParams& p) {
  char buf[512];
  std::snprintf(buf, sizeof buf,
                "{compute_efficiency: %.4g, pipeline_fill: %.4g, bandwidth_efficiency: %.4g, sm_bandwidth: %.4g, floor: %.4g us, wave: %.4g us",
                p.compute_efficiency, p.pipeline_fill, p.bandwidth_efficiency, p.sm_bandwidth, p.floor_s * 1e6, p.wave_s * 1e6);
  std::string s = buf;
  if (p.prologue_bytes > 0) {
    std::snprintf(buf, sizeof buf, ", prologue_bytes: %.4g, prologue_floor: %.4g us", p.prologue_bytes, p.prologue_floor_s * 1e6);
    s += buf;
  }
  return s + "}";
}

}  // namespace rsim
