// Context attention's kernel model (kernel_model.hpp): FlashAttention-style query tiles over key
// blocks, fitted on AIConfigurator's context_attention_perf rows (rsim calibrate --ops).
#include <algorithm>
#include <cmath>
#include <cstdio>

#include "engine/hardware/kernel_model.hpp"

namespace rsim {

const AttentionParams* KernelModel::attention_for(DType t, const std::vector<DType>& same_roof) const {
  for (const auto& [d, p] : attention)
    if (d == t) return &p;
  for (DType o : same_roof)
    for (const auto& [d, p] : attention)
      if (d == o) return &p;
  return nullptr;
}

namespace {

// visit(blocks, masked) for each query tile of one sequence and head
template <class F>
void each_tile(const AttentionShape& a, int tm, int bn, F&& visit) {
  const long long sq = static_cast<long long>(a.sq), skv = static_cast<long long>(a.skv), w = static_cast<long long>(a.window);
  const long long off = a.causal ? skv - sq : 0;  // the queries are the last sq positions
  const long long tiles = (sq + tm - 1) / tm;
  for (long long t = 0; t < tiles; ++t) {
    if (!a.causal) {
      visit(static_cast<double>((skv + bn - 1) / bn), 0.0);
      continue;
    }
    const long long a0 = off + t * tm, a1 = off + std::min((t + 1) * tm, sq) - 1;  // its first and last query's positions
    const bool windowed = w > 0 && w <= a1;
    const long long k_lo = windowed ? std::max(0LL, a0 - w + 1) : 0;             // the first key any of them sees
    const long long b0 = k_lo / bn, b1 = a1 / bn;
    // a block is whole (no score masked) when every query of the tile sees every key of it: its
    // last key at most a0, and (windowed) its first key at least a1 − w + 1
    const long long upper = (a0 + 1) / bn - 1;
    const long long lower = windowed ? std::max(b0, (a1 - w + 1 + bn - 1) / bn) : b0;
    const long long whole = std::max(0LL, std::min(upper, b1) - lower + 1);
    const long long blocks = b1 - b0 + 1;
    visit(static_cast<double>(blocks), static_cast<double>(blocks - whole));
  }
}

}  // namespace

AttentionTiles attention_tiles(const AttentionShape& a) {
  AttentionTiles r;
  r.tile_m = a.sq <= 64 ? 64 : kAttnTileM;
  r.block_n = a.head_dim <= 128 ? kAttnBlockN : 64;
  each_tile(a, r.tile_m, r.block_n, [&](double blocks, double masked) {
    r.tiles += 1, r.blocks += blocks, r.masked += masked;
    if (blocks > r.max_blocks || (blocks == r.max_blocks && masked > r.max_masked)) r.max_blocks = blocks, r.max_masked = masked;
  });
  return r;
}

double attention_time(const AttentionShape& a, double bytes, const AttentionParams& p, double peak, double bandwidth, int sm_count) {
  return attention_time(a, attention_tiles(a), bytes, p, peak, bandwidth, sm_count);
}

double attention_time(const AttentionShape& a, const AttentionTiles& t, double bytes, const AttentionParams& p, double peak, double bandwidth, int sm_count) {
  const double sms = std::max(1, sm_count);
  const double scores = static_cast<double>(t.tile_m) * t.block_n;  // a block's
  const double block = 4 * scores * a.head_dim / (peak / sms * p.compute_efficiency) + scores * p.score_s + p.block_s;
  const double per_head = t.blocks * block + t.masked * scores * p.mask_s + t.tiles * p.tile_s;
  const double total = a.batch * a.heads * per_head;
  const double longest = t.max_blocks * block + t.max_masked * scores * p.mask_s + p.tile_s;
  const double compute = std::max(total / sms, longest);
  const double memory = bytes / (bandwidth * p.bandwidth_efficiency);
  return p.floor_s + std::max(compute, memory);
}

std::string attention_params_yaml(const AttentionParams& p) {
  char buf[400];
  std::snprintf(buf, sizeof buf,
                "{compute_efficiency: %.4g, bandwidth_efficiency: %.4g, score: %.4g ns, mask: %.4g ns, block: %.4g ns, tile: %.4g ns, floor: %.4g us}",
                p.compute_efficiency, p.bandwidth_efficiency, p.score_s * 1e9, p.mask_s * 1e9, p.block_s * 1e9, p.tile_s * 1e9, p.floor_s * 1e6);
  return buf;
}

}  // namespace rsim
