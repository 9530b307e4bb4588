// `rsim calibrate --ops DIR`: the GPU kernel models' parameters (engine/hardware/kernel_model.hpp) fitted
// from measured op data — NVIDIA AIConfigurator's per-op tables (gemm_perf.csv[.gz]: gemm_dtype,
// m, n, k, latency in milliseconds per call, timed in a CUDA graph) — and their errors.
#pragma once
#include <algorithm>
#include <array>
#include <istream>
#include <stdexcept>
#include <functional>
#include <string>
#include <vector>

#include "engine/hardware/kernel_model.hpp"
#include "engine/hardware/platform.hpp"

namespace rsim::measure {

// One timed GEMM: a Linear(k → n) on activations [m, k]
struct GemmSample {
  DType compute = DType::bf16, activations = DType::bf16, weights = DType::bf16;
  bool block = false;  // fp8_block: block scales (weights per 128 × 128 block, activations per 1 × 128 group)
  double m = 0, n = 0, k = 0;
  double measured_s = 0;
  size_t line = 0;
};

// The rows of an AIConfigurator gemm_perf.csv (extra columns ignored). bfloat16 and float16 are
// GEMMs in that dtype; fp8 is per-tensor FP8 weights with the activations (bf16) quantized on the
// fly; fp8_block the same with block scales (`block`: the kernel model's `fp8_block:`). Rows of
// other dtypes (nvfp4, int8_wo, int4_wo, sq) are skipped and counted in `skipped` ("nvfp4: 2 rows"). A missing column, a non-numeric or negative value: a
// std::runtime_error "FILE:LINE: …" naming the column.
std::vector<GemmSample> read_aiconfigurator_gemm(const std::string& text, const std::string& path, std::vector<std::string>& skipped);

// The bytes a GEMM row moves as rsim counts a linear layer's: activations in, weights, outputs
double gemm_sample_bytes(const GemmSample& s);
// The kernel model's time of a row on platform `p` with parameters `g` (the engine's rule: the
// model, never below the theoretical roofline bound)
double predict_gemm(const GemmSample& s, const GemmParams& g, const Platform& p);
// The theoretical roofline bound of a row on `p` (max(FLOPs / peak, bytes / bandwidth))
double gemm_bound(const GemmSample& s, const Platform& p);

// A distribution of measured / predicted
struct ErrorStats {
  size_t n = 0;
  double p10 = 0, median = 0, p90 = 0;
  double within_1_25 = 0, within_1_5 = 0;  // shares of rows, 0–1
};
ErrorStats error_stats(std::vector<double> ratios);

struct GemmFit {
  DType dtype = DType::bf16;
  bool block = false;  // block-scaled (fp8_block)
  GemmParams params;
  size_t rows = 0;     // of the dtype
  size_t flagged = 0;  // faster than the theoretical bound (L2-resident weights): kept in the errors, not fitted
  ErrorStats fitted;   // on every row of the dtype
  ErrorStats held_out; // each row predicted by a fit without its weight shape (5 folds over (n, k))
  std::vector<double> cv_predicted_s;  // per row (in `rows` order of the dtype)
};
// Fits the GEMM parameters of one compute dtype on platform `p`'s figures (its sm_count, the
// roof of the dtype, its first memory level) by minimising the mean |log(measured / predicted)|
// (Nelder–Mead); `folds` > 1 adds the held-out errors.
GemmFit fit_gemm(const std::vector<GemmSample>& rows, DType dtype, const Platform& p, int folds = 5, bool block = false);
// A GEMM variant's name as the platform file writes it: the dtype, `_block` when block-scaled (fp8_block)
std::string gemm_variant_name(DType dtype, bool block);

// One timed collective (nccl-tests through AIConfigurator's nccl_perf.csv: op_name, nccl_dtype,
// num_gpus, message_size in elements, latency in ms)
// Shared by the op-table readers and fits: a CSV line's fields; a field as a number (its column
// named in the error at path:line); Nelder–Mead over the first `dims` of up to 12 coordinates
std::vector<std::string> split(const std::string& line);

// The columns `need` of a header line (its first line, read from `in`), or a located error naming
// the missing one and what the table has (`table`: "an AIConfigurator gemm_perf.csv")
template <size_t N>
std::array<size_t, N> header_columns(std::istream& in, const std::array<const char*, N>& need, const std::string& path, const std::string& table) {
  std::string all;
  for (const char* c : need) all += (all.empty() ? "" : ", ") + std::string(c);
  std::string line;
  if (!std::getline(in, line)) throw std::runtime_error(path + ":1: empty file (expected a header " + all + ")");
  const std::vector<std::string> head = split(line);
  std::array<size_t, N> col{};
  for (size_t i = 0; i < N; ++i) {
    auto it = std::find(head.begin(), head.end(), need[i]);
    if (it == head.end()) throw std::runtime_error(path + ":1: no column '" + need[i] + "' (" + table + " has " + all + ")");
    col[i] = static_cast<size_t>(it - head.begin());
  }
  return col;
}
double number_at(const std::vector<std::string>& f, size_t col, const std::string& name, const std::string& path, size_t line);
using FitVec = std::array<double, 12>;
// A dtype's tensor peak, the first memory level's bandwidth and the SM count (errors naming what is missing)
struct OpFigures {
  double peak = 0, bandwidth = 0;
  int sms = 0;
};
OpFigures op_figures(const Platform& p, DType t);
FitVec nelder_mead(const std::function<double(const FitVec&)>& f, FitVec x0, size_t dims, int iters);

struct CollectiveSample {
  Collective kind = Collective::AllReduce;
  long long gpus = 2;
  double bytes = 0, measured_s = 0;
  size_t line = 0;
};
// all_reduce, all_gather, reduce_scatter and alltoall rows; other ops or dtypes skipped and counted
std::vector<CollectiveSample> read_nccl_perf(const std::string& text, const std::string& path, std::vector<std::string>& skipped);
// TensorRT-LLM's own all-reduce (AIConfigurator's custom_allreduce_perf.csv: allreduce_dtype,
// num_gpus, message_size in elements, latency in ms) as custom_all_reduce rows; other dtypes skipped
std::vector<CollectiveSample> read_custom_allreduce_perf(const std::string& text, const std::string& path, std::vector<std::string>& skipped);
// The collective model's time of a row on `p`'s interconnect level for its GPU count
double predict_collective(const CollectiveSample& s, const CollectiveParams& c, const Platform& p);
struct CollectiveFit {
  Collective kind = Collective::AllReduce;
  CollectiveParams params;
  size_t rows = 0;
  ErrorStats fitted, held_out;  // held out: each GPU count predicted by a fit on the others
};
CollectiveFit fit_collective(const std::vector<CollectiveSample>& rows, Collective kind, const Platform& p);

// One timed context attention (AIConfigurator's context_attention_perf.csv: batch_size, isl,
// num_heads, num_key_value_heads, head_dim, window_size, attn_dtype, kv_cache_dtype, latency in
// ms): causal, isl queries over isl keys; computed in fp8 when the attention or its KV cache is fp8
struct AttentionSample {
  DType compute = DType::bf16;
  AttentionShape shape;
  AttentionTiles tiles;
  double kv_heads = 1, kv_bytes = 2, bytes = 0, measured_s = 0;  // bytes as rsim's attention layer moves them
  size_t line = 0;
};
std::vector<AttentionSample> read_context_attention(const std::string& text, const std::string& path, std::vector<std::string>& skipped);
double predict_attention(const AttentionSample& s, const AttentionParams& a, const Platform& p);
double attention_bound(const AttentionSample& s, const Platform& p);
struct AttentionFit {
  DType dtype = DType::bf16;
  AttentionParams params;
  size_t rows = 0;
  ErrorStats fitted, held_out;  // held out: 5 folds by head shape (heads, KV heads, head dim)
  std::vector<double> cv_predicted_s;
};
AttentionFit fit_attention(const std::vector<AttentionSample>& rows, DType dtype, const Platform& p, int folds = 5);
std::string attention_fits_yaml(const std::vector<AttentionFit>& fits);  // the `  attention:` lines of a kernel_model block
// One timed decode attention (AIConfigurator's generation_attention_perf.csv: batch_size,
// num_heads, num_key_value_heads, head_dim, window_size, attn_dtype, kv_cache_dtype, step,
// latency in ms): one query per sequence over step + 1 KV tokens, by the KV cache's dtype
struct DecodeSample {
  DType kv = DType::bf16;
  DecodeShape shape;
  double bytes = 0, measured_s = 0;  // bytes: the KV read inside the window, q read and the output written (bf16)
  size_t line = 0;
};
std::vector<DecodeSample> read_generation_attention(const std::string& text, const std::string& path, std::vector<std::string>& skipped);
double predict_decode(const DecodeSample& s, const DecodeAttentionParams& a, const Platform& p);  // never below the bound
double decode_bound(const DecodeSample& s, const Platform& p);
struct DecodeFit {
  DType kv = DType::bf16;
  DecodeAttentionParams params;
  size_t rows = 0;
  ErrorStats fitted, held_out;  // held out: 5 folds by head shape (heads, KV heads, head dim)
  std::vector<double> cv_predicted_s;
};
// `iters`: the optimiser's iterations of its first pass (two restarts of as many follow)
DecodeFit fit_decode(const std::vector<DecodeSample>& rows, DType kv, const Platform& p, int folds = 5, int iters = 3000);
std::string decode_fits_yaml(const std::vector<DecodeFit>& fits);  // the `  decode_attention:` lines of a kernel_model block

// Memory-bound layers (calibrate_memory.cpp): the timed rows of rsim measured.csv files (`rsim
// measure`, rsim_torch, the shared H200's) whose operator has no MACs and moves bytes. `peak`: the
// roof the row was bounded on (its FLOPs' path); `network`: the file's network (the held-out folds)
struct MemorySample {
  std::string op, network;
  double bytes = 0, flops = 0, peak = 0, measured_s = 0;
};
// The rows of measured.csv text; other rows (MACs, no bytes, no time) are counted in `other`
std::vector<MemorySample> read_measured_memory(const std::string& text, const std::string& path, size_t& other);
// Rows whose bytes take at least this long at the platform's bandwidth are fitted: below it a
// kernel timed alone is as long as its launch (about 10 µs from PyTorch), which a bandwidth says nothing of
constexpr double kMemoryFitMinStream = 20e-6;
double predict_memory(const MemorySample& s, const MemoryParams& m, const Platform& p);
double memory_bound(const MemorySample& s, const Platform& p);  // max(FLOPs / peak, bytes / bandwidth)
struct MemoryFit {
  MemoryParams params;
  size_t rows = 0, fitted_rows = 0;  // all rows; those bandwidth-bound enough to fit
  std::vector<std::pair<std::string, size_t>> op_rows;  // rows fitted per operator
  ErrorStats fitted, held_out;  // on the fitted rows; held out: each network predicted by a fit without it
  std::vector<double> cv_predicted_s;  // per row (held out where fitted, else the fit's)
};
// Each operator's share of the bandwidth: the median over its fitted rows of bytes / (bandwidth ·
// measured) (what minimises the mean |log(measured / predicted)| of a one-parameter law); the base
// (bandwidth_efficiency) that of the elementwise operators' rows (op_class), else of every row;
// operators outside the elementwise class get their own under `ops:`. The floor is not fitted
// (kernels timed alone: their small rows are launches): 0.
MemoryFit fit_memory(const std::vector<MemorySample>& rows, const Platform& p);

// The platform file `ptext` renamed `name`, with a `kernel_model:` block of the fits
std::string kernel_model_platform_yaml(const std::string& ptext, const std::string& name, const std::vector<GemmFit>& fits,
                                       const std::vector<CollectiveFit>& collectives, const std::string& source);

}  // namespace rsim::measure
