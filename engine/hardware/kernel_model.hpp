// GPU kernel cost models (a platform's `kernel_model:`): what a GPU kernel of a layer takes, in
// terms of the platform's datasheet figures (SM count, tensor-core peak per dtype, memory
// bandwidth) and a few fitted parameters per op family. The plain roofline stays the reference:
// a layer's kernel-model time is its derated time and is never below its roofline bound.
//
// GEMM-like layers (linear, gemm, matmul, dense and grouped convolutions as implicit GEMMs):
//   a library tiles the output [m × n] (per batch or group) in CTA tiles tm × tn from
//   kGemmTiles, optionally splitting K in s parts (kSplitK), and keeps the fastest candidate:
//     tiles   = batch · ⌈m/tm⌉ · ⌈n/tn⌉ · s,   waves = ⌈tiles / SMs⌉
//     compute = waves · (⌈⌈k/s⌉ / kGemmTileK⌉ + pipeline_fill) · 2·tm·tn·kGemmTileK / (peak/SMs · compute_efficiency)
//     memory  = (bytes + split-K partials 8·batch·m·n·s when s > 1)
//               / min(bandwidth · bandwidth_efficiency, min(tiles, SMs) · sm_bandwidth · bandwidth · bandwidth_efficiency / SMs)
//     time    = max(compute, memory) + floor + waves · wave
//   plus, where the math runs in a narrower dtype than the activations (fp8 from bf16), the
//   activations' conversion kernel before it: prologue_floor + batch·m·k · prologue_bytes /
//   (bandwidth · bandwidth_efficiency).
// A gated MLP (swiglu, geglu) is its three GEMMs, plus the pass of its activation over the rest of
// its bytes (a memory-bound kernel with `memory:`, else at the GEMMs' streaming bandwidth).
// Memory-bound layers (everything else that moves bytes; `memory:` given):
//   time = max(FLOPs / peak, bytes / (bandwidth · efficiency)) + floor
//   (efficiency: the operator's own under `ops:`, else bandwidth_efficiency; of a CUDA graph's gap
//   such a kernel holds at most its floor)
// Collectives (`collective:`, per kind; a kind without its own takes all_reduce's), n GPUs over a
// link of bandwidth B (each way):
//   time = floor + step · (n − 1) + min(bus bytes / (B · bandwidth_efficiency),
//                                       bus bytes / (B · bulk_efficiency) + bulk_latency)
//   bus bytes: all-reduce 2(n − 1)/n · bytes; all-gather, reduce-scatter and all-to-all (n − 1)/n · bytes
//   (bytes: the whole tensor; an all-to-all's, what each GPU sends). Two protocols, as NCCL's: one
//   for small messages (low latency, a share of the bandwidth), one for bulk transfers (a start-up
//   latency, nearly all of it; bulk_efficiency 0: none). custom_all_reduce (the runtime's own, within
//   the first interconnect level): the same formula; an all-reduce there takes the faster of the two.
// Attention with a prefill's queries (flash, at least two queries: the context phase),
// FlashAttention-style: each (sequence, head) tiles its Sq queries in tiles of kAttnTileM rows
// (64 when Sq ≤ 64), each tile visiting the key blocks of kAttnBlockN keys (64 for head dims over
// 128) its queries see (causal, window, a cached prefix); a block some of whose
// scores are masked out costs `mask` more per score:
//   block   = 4·tm·bn·hd / (peak/SMs · compute_efficiency) + tm·bn · score + block_s
//   total   = Σ over tiles (blocks · block + masked blocks · tm·bn · mask) + tiles · tile_s
//   longest = the costliest tile's
//   time    = floor + max(max(total / SMs, longest), bytes / (bandwidth · bandwidth_efficiency))
// Decode attention (one query per sequence over its KV cache; `decode_attention:`, per KV-cache
// dtype), as TensorRT-LLM runs it on NVIDIA GPUs: a grouped-query attention (2 to 32 query heads
// per KV head) in its XQA kernel (an fp8 cache always; a bf16 one when b · KV heads · ⌈L/128⌉ · 4
// ≥ SMs), else the masked-MHA kernel. L: the KV tokens read (cached and new), Lw: those inside
// the window, G: query heads per KV head, kv: the KV dtype's bytes, clk: the boost clock.
//   XQA: one CTA per (sequence, KV head) and split s ways along the history (TensorRT-LLM's
//     multi-block rule: s = ⌊L/128⌋, at most round(√(8s)), cut to fill 8 waves, at most 6000/b);
//     CTAs resident per SM: 2 with an fp8 cache, 1 with bf16; chunk = ⌈L/s⌉; the CTAs whose chunk
//     reaches into the window stream tok = ⌈min(chunk, Lw) / 64⌉ · 64 tokens (whole pages)
//       fixed  = ⌈b·KVH·s / (SMs·resident)⌉ · (cta + group · G · d) / clk
//       stream = ⌈b·KVH·active / (SMs·resident)⌉ · tok · max(512, 2·d·kv) / cta_bytes_per_cycle / clk
//       time   = fixed + ‖ memory(b·KVH·active·tok·2·d·kv), stream ‖₃ + append
//     (append: the separate RoPE and KV-append kernel of the bf16-cache path, and of fp8's head dim 64)
//   masked MHA: one CTA per (sequence, query head) × tiles of the history (to fill about one wave),
//     T threads (256, up to 1024 for small batches), dmax = head dim rounded up to 64/128/256
//       time   = ‖ ⌈b·H·tiles / (SMs · 1024/T)⌉ · (mmha_cta + 1024/T · ⌈Lw/tiles⌉ · dmax · mmha_token) / clk,
//                  memory(b·KVH·Lw·2·d·kv) ‖₃
//   memory(x) = min(x, L2/2) / (l2_bytes_per_cycle · SMs · clk) + the rest / (bandwidth · bandwidth_efficiency)
//     (the first half of the L2 serves a CUDA graph's replays from cache)
//   total = floor + multi_block (when split) + the kernel's time; ‖a, b‖₃ = (a³ + b³)^⅓
// Mixtures of experts keep the derated roofline.
#pragma once
#include <array>
#include <optional>
#include <string>
#include <vector>

#include "engine/model/diagnostics.hpp"
#include "engine/model/tensor.hpp"

namespace rsim {

struct Layer;

// One GEMM of a layer: `batch` independent [m × k] · [k × n] products (groups, batched matmuls)
struct GemmShape {
  double batch = 1, m = 0, n = 0, k = 0;
};
// The GEMMs a layer runs (per GPU), each with the bytes it moves: one for linear, gemm, matmul and
// dense or grouped convolutions (the layer's `bytes`); gate, up and down for a gated MLP (swiglu,
// geglu: activations in and out and its weights each, the rest of the layer's bytes its
// activation's pass). Empty when the layer is not GEMM-like (or a dimension is below 1).
struct GemmPart {
  GemmShape g;
  double bytes = 0;
};
std::vector<GemmPart> gemm_parts(const Layer& L, double bytes);

struct GemmParams {
  double compute_efficiency = 0;    // share of an SM's tensor-core peak in the K loop, (0, 1]
  double pipeline_fill = 0;         // K steps before a tile's first result (the pipeline's fill), ≥ 0
  double bandwidth_efficiency = 0;  // share of the memory bandwidth a GEMM streams at, (0, 1]
  double sm_bandwidth = 0;          // the bandwidth one CTA pulls, in shares of bandwidth / SMs (> 0)
  double floor_s = 0;               // per kernel (work, not launch overhead)
  double wave_s = 0;                // per wave of tiles
  double prologue_bytes = 0;        // per activation element of the conversion kernel (0: none)
  double prologue_floor_s = 0;
};
struct MemoryParams {
  double bandwidth_efficiency = 0;  // (0, 1]
  double floor_s = 0;
  // per operator (its canonical name): its own share of the bandwidth; an operator not named
  // takes bandwidth_efficiency
  std::vector<std::pair<std::string, double>> ops;
  double efficiency(const std::string& op) const {
    for (const auto& [name, e] : ops)
      if (name == op) return e;
    return bandwidth_efficiency;
  }
};

// Context attention's parameters (per compute dtype; TensorRT-LLM computes in fp8 when the KV
// cache is fp8)
struct AttentionParams {
  double compute_efficiency = 0;    // share of an SM's tensor-core peak in a block's two MMAs, (0, 1]
  double bandwidth_efficiency = 0;  // (0, 1]
  double score_s = 0;               // per score computed, on one SM (the softmax)
  double mask_s = 0;                // per score of a partly masked block, on one SM
  double block_s = 0;               // per key block a tile visits
  double tile_s = 0;                // per query tile (a CTA's start)
  double floor_s = 0;               // per kernel
};
constexpr int kAttnTileM = 128, kAttnBlockN = 128;
// Decode attention's parameters (per KV-cache dtype)
struct DecodeAttentionParams {
  double floor_s = 0;               // per kernel
  double bandwidth_efficiency = 0;  // share of the memory bandwidth past the L2, (0, 1]
  double cta_cycles = 0;            // XQA: per CTA wave
  double group_cycles = 0;          // XQA: per query head of a group and head-dim element, per CTA wave
  double cta_bytes_per_cycle = 0;   // XQA: the KV one CTA streams per cycle
  double mmha_cta_cycles = 0;       // masked MHA: per CTA wave
  double mmha_token_cycles = 0;     // masked MHA: per token and (rounded) head-dim element of a CTA
  double multi_block_s = 0;         // a split history's extra kernel (the partial results' reduction)
  double l2_bytes_per_cycle = 0;    // per SM, the bytes the L2 serves
  double append_s = 0;              // the separate RoPE / KV-append kernel where one runs
};
// A decode attention's shape on one GPU: `batch` sequences of `heads` query heads over `kv_heads`
// KV heads, reading `kv_tokens` each (cached and new; `max_kv_tokens`: the longest, which sizes
// the split), a KV cache of `kv_bytes` per element
struct DecodeShape {
  double batch = 1, heads = 1, kv_heads = 1, head_dim = 0, kv_tokens = 0, max_kv_tokens = 0, window = 0, kv_bytes = 2;
};
// The kernel TensorRT-LLM picks and its grid
struct DecodePlan {
  bool xqa = false;
  double splits = 1, active = 1, tokens = 0;  // XQA: the history's parts, those inside the window, tokens each streams
  double tiles = 1, threads = 256, dmax = 128;  // masked MHA
};
DecodePlan decode_plan(const DecodeShape& s, int sm_count);
// The GPU figures the decode model reads
struct DecodeFigures {
  int sms = 0;
  double clock_hz = 0, bandwidth = 0, l2_bytes = 0;
};
struct DecodeTime {
  double time_s = 0;    // floor + multi_block + the kernel's
  double memory_s = 0;  // the kernel's bytes (L2 and memory)
  double stream_s = 0;  // the CTAs' own path (XQA: fixed + stream; MMHA: its waves)
  double overhead_s = 0;  // floor, multi-block, append
  DecodePlan plan;
};
DecodeTime decode_attention_time(const DecodeShape& s, const DecodeAttentionParams& p, const DecodeFigures& f);
DecodeTime decode_attention_time(const DecodeShape& s, const DecodePlan& plan, const DecodeAttentionParams& p, const DecodeFigures& f);
// A decode attention layer's shape (one query over a KV cache; per GPU: its heads from its MACs);
// false for a prefill's attention or another operator
bool decode_shape(const Layer& L, DecodeShape& s);
std::string decode_params_yaml(const DecodeAttentionParams& p);
// An attention's shape on one GPU: `batch` sequences of `heads` query heads, sq queries (the last
// sq of skv positions) over skv keys
struct AttentionShape {
  double batch = 1, heads = 1, head_dim = 0, sq = 0, skv = 0, window = 0;
  bool causal = false;
};
// Its query tiles and key blocks (per sequence and head): blocks and masked blocks in all, and of the
// costliest tile
struct AttentionTiles {
  int tile_m = 0, block_n = 0;
  double tiles = 0, blocks = 0, masked = 0, max_blocks = 0, max_masked = 0;
};
AttentionTiles attention_tiles(const AttentionShape& a);
// A context attention layer's shape (per GPU: its heads from its MACs); false for a decode step (one
// query), naive attention, or another operator
bool attention_shape(const Layer& L, AttentionShape& a);
double attention_time(const AttentionShape& a, double bytes, const AttentionParams& p, double peak_flops_per_s, double bandwidth_bytes_per_s, int sm_count);
// The same from its tiles, counted once (a fit prices each row many times)
double attention_time(const AttentionShape& a, const AttentionTiles& t, double bytes, const AttentionParams& p, double peak_flops_per_s,
                      double bandwidth_bytes_per_s, int sm_count);
std::string attention_params_yaml(const AttentionParams& p);

// CustomAllReduce: the inference runtime's own all-reduce within one NVLink domain (TensorRT-LLM's
// one-shot/two-shot kernels, vLLM's custom all-reduce), the same formula as all_reduce's; the
// engine's all-reduce on the platform's first interconnect level takes the faster of it and
// all_reduce's (NCCL's), as TensorRT-LLM's AUTO strategy and vLLM do
enum class Collective { AllReduce, AllGather, ReduceScatter, AllToAll, CustomAllReduce };
const char* collective_name(Collective c);  // "all_reduce", "all_gather", "reduce_scatter", "all_to_all", "custom_all_reduce"
struct CollectiveParams {
  double floor_s = 0, step_s = 0, bandwidth_efficiency = 1, bulk_efficiency = 0, bulk_latency_s = 0;
};

struct KernelModel {
  std::vector<std::pair<DType, GemmParams>> gemm;  // per compute dtype
  // block-scaled GEMMs (`fp8_block:`: fp8 weights with a quant_group, scales per block of elements,
  // activations quantized per group), per compute dtype
  std::vector<std::pair<DType, GemmParams>> gemm_block;
  std::optional<MemoryParams> memory;
  std::vector<std::pair<DType, AttentionParams>> attention;  // context attention, per compute dtype
  std::vector<std::pair<DType, DecodeAttentionParams>> decode;  // decode attention, per KV-cache dtype
  std::vector<std::pair<Collective, CollectiveParams>> collectives;
  // A kind's parameters: its own, else all_reduce's, else nullptr (custom_all_reduce: its own only)
  const CollectiveParams* collective_for(Collective c) const;
  std::string from;    // `from:`: the platform whose parameters these are ("" = the platform's own)
  SourceLoc from_loc;
  std::string source;  // where the parameters come from
  bool active() const { return !gemm.empty() || !gemm_block.empty() || memory.has_value() || !collectives.empty() || !attention.empty() || !decode.empty(); }
  // The parameters for a compute dtype: its own, else those of a dtype that shares its roof on the
  // platform (`same_roof`: fp16 takes bf16's on one bf16/fp16 roof), else nullptr
  const GemmParams* gemm_for(DType t, const std::vector<DType>& same_roof) const;
  // A layer's: block-scaled parameters for a narrow compute dtype with a quant_group, where the
  // platform has them, else gemm_for's
  const GemmParams* gemm_for_layer(DType t, long long quant_group, const std::vector<DType>& same_roof) const;
  const AttentionParams* attention_for(DType t, const std::vector<DType>& same_roof) const;  // the same for attention
  const DecodeAttentionParams* decode_for(DType kv) const;  // decode attention's for a KV-cache dtype (fp16 takes bf16's), else nullptr
};

constexpr int kGemmTileK = 64;  // the K step of a tile's main loop, in elements
struct TileShape {
  int m = 0, n = 0;
};
// The CTA tiles a GEMM library chooses among (CUTLASS's and cuBLAS's common Hopper/Ampere shapes)
inline constexpr std::array<TileShape, 6> kGemmTiles{{{64, 64}, {64, 128}, {128, 64}, {128, 128}, {128, 256}, {256, 128}}};
inline constexpr std::array<int, 5> kSplitK{{1, 2, 4, 8, 16}};

// Tiles of a GEMM over the SMs: their number, the waves, and the last wave's share of the SMs busy
struct Waves {
  double tiles = 0, waves = 0, last_wave_occupancy = 0;
};
Waves gemm_waves(const GemmShape& g, TileShape t, int split_k, int sm_count);

struct GemmTime {
  double time_s = 0;     // the kernel(s): max(compute, memory) + floor + waves · wave (+ prologue)
  double compute_s = 0, memory_s = 0, overhead_s = 0, prologue_s = 0;
  TileShape tile;
  int split_k = 1;
  Waves waves;
};
// The fastest candidate for `g` moving `bytes` (the layer's, under the scenario's memory model) on
// `sm_count` SMs of `peak_flops_per_s` and memory of `bandwidth_bytes_per_s`; `prologue_elements`:
// the activation elements a conversion kernel handles first (0: none)
GemmTime gemm_time(const GemmShape& g, double bytes, const GemmParams& p, double peak_flops_per_s, double bandwidth_bytes_per_s, int sm_count,
                   double prologue_elements = 0);
// A memory-bound kernel of operator `op`: max(flops / peak, bytes / (bandwidth · efficiency)) + floor
double memory_kernel_time(double flops, double bytes, const MemoryParams& p, double peak_flops_per_s, double bandwidth_bytes_per_s, const std::string& op = {});

struct Platform;
struct ComputeRoof;
struct MemoryLevel;
struct RoofPoint;
// Prices layer L's kernel on `pl` by the platform's kernel model, on `roof` and `level`, and writes
// it into `derated` (the derated roof point: compute and memory paths, the floor added to the
// larger, bound, attainable rate), never below `bound_s` (the layer's roofline bound on the
// theoretical roofs). False, `derated` untouched, when the model does not cover the layer. A decode
// attention priced by the decode model leaves its shape in `*decode` (the serving pricer's).
// `held_gap`: the gap before each kernel that the execution mode adds and that the model's time
// already holds (its figures were timed kernel after kernel in a CUDA graph: under `execution:
// graph` the runtime's graph_gap), taken out of the time, never below `bound_s`.
bool apply_kernel_model(RoofPoint& derated, const Layer& L, const Platform& pl, const ComputeRoof& roof, const MemoryLevel& level, double work,
                        double bytes, double bound_s, std::optional<DecodeShape>* decode = nullptr, double held_gap = 0);

// A collective's time by the model above
double collective_time(const CollectiveParams& p, Collective c, double bytes, long long n, double bandwidth);
// The engine's collectives: by the platform's collective model where it has one, else the
// roofline's formulas (roofline.hpp) with the link's latency
struct CollectiveTime;
// (in_domain: the GPUs share the platform's first interconnect level, where a custom all-reduce runs)
CollectiveTime all_reduce_on(const KernelModel& km, double bytes, long long n, double bandwidth, double latency, bool in_domain = false);
double all_gather_on(const KernelModel& km, double bytes, long long n, double bandwidth, double latency);
double all_to_all_on(const KernelModel& km, double bytes, long long n, double bandwidth, double latency);
std::string collective_params_yaml(const CollectiveParams& p);

// `hw show`'s lines for a platform's GPU figures and kernel model ("" when it states none)
std::string describe_gpu_figures(const Platform& p);

// The parameters as YAML lines of a `kernel_model:` block (indented by `indent` spaces), as rsim
// calibrate writes them and `hw show` prints them
std::string gemm_params_yaml(const GemmParams& p);
std::string memory_params_yaml(const MemoryParams& p);  // {bandwidth_efficiency, floor, ops: {…}}

}  // namespace rsim
