// Decode attention's kernel model (kernel_model.hpp): TensorRT-LLM's XQA and masked-MHA decode
// kernels, their grids by the library's own rules, fitted on AIConfigurator's
// generation_attention_perf rows (rsim calibrate --ops). The kernel heuristics below are
// TensorRT-LLM's (1.x, decoderXQAImplJIT's mayHavePerfGain, computeMultiBlockCount, the masked-MHA
// launcher's block size and seq_len_tile), read from its source: fixed rules of the library, not fitted.
#include <algorithm>
#include <cmath>
#include <cstdio>

#include "engine/graph/graph.hpp"
#include "engine/hardware/kernel_model.hpp"

namespace rsim {

namespace {

constexpr double kPage = 64;              // tokens per KV page (and per XQA tile)
constexpr double kL2Share = 0.5;          // of the L2, holding KV across a CUDA graph's replays
constexpr double kTokenBytesFloor = 512;  // an XQA CTA's cost per token, in bytes, is at least this
constexpr double kMinHistoryPerBlock = 128, kTargetWaves = 8, kMaxSubSequences = 6000;

// the 3-norm joining the memory path and the CTAs' own: near the larger when one dominates, above
// it when they are alike (a CTA cannot stream at the whole bandwidth and compute at once)
double pnorm(double a, double b) { return std::cbrt(a * a * a + b * b * b); }

}  // namespace

const DecodeAttentionParams* KernelModel::decode_for(DType kv) const {
  for (const auto& [d, p] : decode)
    if (d == kv) return &p;
  if (kv == DType::fp16)
    for (const auto& [d, p] : decode)
      if (d == DType::bf16) return &p;
  return nullptr;
}

DecodePlan decode_plan(const DecodeShape& s, int sm_count) {
  DecodePlan p;
  const double sms = std::max(1, sm_count);
  const double L = std::max(1.0, s.kv_tokens), hist = std::max(L, s.max_kv_tokens);
  const double Lw = s.window > 0 ? std::min(L, s.window) : L;
  const double group = s.heads / std::max(1.0, s.kv_heads);
  const bool fp8 = s.kv_bytes <= 1;
  // XQA: grouped-query (not plain multi-head) attention of at most 32 heads a group; with a 16-bit
  // cache only when its CTAs would fill the SMs
  const bool gain = s.batch * s.kv_heads * std::max(1.0, std::floor(hist / kMinHistoryPerBlock)) * 4 >= sms;
  p.xqa = s.heads != s.kv_heads && group <= 32 && (fp8 || gain);
  // the multi-block split of the history
  double n = std::floor(hist / kMinHistoryPerBlock);
  n = std::max(1.0, std::min(n, std::round(std::sqrt(n * kTargetWaves))));
  const double fill = s.batch * s.kv_heads * n / sms / kTargetWaves;
  if (fill > 1) n = std::floor(n / fill);
  p.splits = std::max(1.0, std::min(std::max(n, 1.0), std::floor(kMaxSubSequences / std::max(1.0, s.batch))));
  const double chunk = std::ceil(L / p.splits);
  p.active = std::min(p.splits, std::ceil(Lw / chunk));
  p.tokens = std::ceil(std::min(chunk, Lw) / kPage) * kPage;
  // masked MHA: the block size and the history's tiles
  const double bh = s.batch * s.heads;
  p.dmax = s.head_dim <= 64 ? 64 : s.head_dim <= 128 ? 128 : 256;
  const double factor = std::min(std::ceil(sms * 4 / bh), 4.0);
  p.threads = bh >= 4 * sms ? 256 : std::min(256 * factor, 1024.0);
  const double per_loop = p.threads / (p.dmax * 2 / 16) * 8;  // tokens a block's KV loop covers
  p.tiles = std::max(1.0, std::min(std::ceil(sms / bh), std::ceil((L + 1) / per_loop)));
  return p;
}

DecodeTime decode_attention_time(const DecodeShape& s, const DecodeAttentionParams& p, const DecodeFigures& f) {
  return decode_attention_time(s, decode_plan(s, f.sms), p, f);
}

DecodeTime decode_attention_time(const DecodeShape& s, const DecodePlan& plan, const DecodeAttentionParams& p, const DecodeFigures& f) {
  DecodeTime t;
  t.plan = plan;
  const double sms = std::max(1, f.sms), clk = f.clock_hz;
  const double L = std::max(1.0, s.kv_tokens), Lw = s.window > 0 ? std::min(L, s.window) : L;
  const double kv = s.kv_bytes, d = s.head_dim, group = s.heads / std::max(1.0, s.kv_heads);
  const bool fp8 = kv <= 1;
  auto memory = [&](double bytes) {
    const double cached = std::min(bytes, f.l2_bytes * kL2Share);
    return (cached > 0 ? cached / (p.l2_bytes_per_cycle * sms * clk) : 0) + (bytes - cached) / (f.bandwidth * p.bandwidth_efficiency);
  };
  bool split = false;
  double kernel = 0;
  if (plan.xqa) {
    const double resident = fp8 ? 2 : 1;
    const double ctas = s.batch * s.kv_heads;
    const double waves = std::ceil(ctas * plan.splits / (sms * resident)), busy = std::ceil(ctas * plan.active / (sms * resident));
    const double fixed = waves * (p.cta_cycles + p.group_cycles * group * d) / clk;
    const double per_token = std::max(kTokenBytesFloor, d * 2 * kv) / p.cta_bytes_per_cycle;
    const double stream = busy * plan.tokens * per_token / clk;
    t.memory_s = memory(ctas * plan.active * plan.tokens * d * 2 * kv);
    const double append = (!fp8 || d == 64) ? p.append_s : 0;
    t.stream_s = fixed + stream;
    kernel = fixed + pnorm(t.memory_s, stream) + append;
    t.overhead_s = append;
    split = plan.splits > 1;
  } else {
    const double per_sm = 1024 / plan.threads;
    const double waves = std::ceil(s.batch * s.heads * plan.tiles / (sms * per_sm));
    t.stream_s = waves * (p.mmha_cta_cycles + per_sm * std::ceil(Lw / plan.tiles) * plan.dmax * p.mmha_token_cycles) / clk;
    t.memory_s = memory(s.batch * s.kv_heads * Lw * d * 2 * kv);
    kernel = pnorm(t.stream_s, t.memory_s);
    split = plan.tiles > 1;
  }
  t.overhead_s += p.floor_s + (split ? p.multi_block_s : 0);
  t.time_s = p.floor_s + (split ? p.multi_block_s : 0) + kernel;
  return t;
}

bool decode_shape(const Layer& L, DecodeShape& s) {
  if (!L.op || L.op->name != "attention" || L.in_shapes.size() < 2 || L.in_shapes[0].size() != 3 || L.in_shapes[1].size() != 3) return false;
  const Shape& q = L.in_shapes[0];
  if (q[1] != 1 || !(L.cost.macs > 0)) return false;  // one query per sequence
  const double h = static_cast<double>(L.attrs.i("heads"));
  const double kvh = L.attrs.has("kv_heads") ? static_cast<double>(L.attrs.i("kv_heads")) : h;
  if (!(h >= 1) || !(kvh >= 1)) return false;
  s.batch = static_cast<double>(q[0]);
  s.head_dim = L.attrs.has("head_dim") ? static_cast<double>(L.attrs.i("head_dim")) : static_cast<double>(q[2]) / h;
  s.kv_tokens = s.max_kv_tokens = static_cast<double>(L.in_shapes[1][1]);
  s.window = L.attrs.b("causal") ? static_cast<double>(L.attrs.i("window")) : 0;
  s.kv_bytes = dtype_bytes(L.kv_dtype());
  // the scores the operator counts (flash skips what the window masks), for the heads this GPU runs
  const bool naive = L.attrs.s("implementation") == "naive";
  const double pairs = (naive || !(s.window > 0)) ? s.kv_tokens : std::min(s.kv_tokens, s.window);
  if (!(pairs > 0) || !(s.head_dim > 0) || !(s.batch >= 1)) return false;
  s.heads = L.cost.macs / (2 * s.head_dim * s.batch * pairs);  // (tensor parallelism's share of h)
  s.kv_heads = s.heads * kvh / h;
  return s.heads > 0 && s.heads <= h * (1 + 1e-9) && s.kv_heads > 0;
}

std::string decode_params_yaml(const DecodeAttentionParams& p) {
  char buf[512];
  std::snprintf(buf, sizeof buf,
                "{floor: %.4g us, bandwidth_efficiency: %.4g, cta_cycles: %.4g, group_cycles: %.4g, cta_bytes_per_cycle: %.4g, mmha_cta_cycles: %.4g, "
                "mmha_token_cycles: %.4g, multi_block: %.4g us, l2_bytes_per_cycle: %.4g, append: %.4g us}",
                p.floor_s * 1e6, p.bandwidth_efficiency, p.cta_cycles, p.group_cycles, p.cta_bytes_per_cycle, p.mmha_cta_cycles, p.mmha_token_cycles,
                p.multi_block_s * 1e6, p.l2_bytes_per_cycle, p.append_s * 1e6);
  return buf;
}

}  // namespace rsim
