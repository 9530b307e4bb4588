// Shapes and element types: the vocabulary of operators.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace rsim {

enum class DType { fp64, fp32, tf32, bf16, fp16, fp8, int8, int4 };

// Bytes per element as stored in memory (tf32 is stored as fp32; int4 packs two per byte).
double dtype_bytes(DType t);
const char* dtype_name(DType t);
std::optional<DType> parse_dtype(const std::string& s);
const std::vector<std::string>& dtype_names();

// Storage and math precision beyond the activation dtype: settings, network or layer keys
// `weights_dtype`, `kv_dtype`, `compute_dtype`, `quant_group`. Unset = the activation dtype.
struct Precision {
  std::optional<DType> weights;  // matrix weights (linear, conv, embedding, experts)
  std::optional<DType> kv;       // the KV cache
  std::optional<DType> compute;  // the precision the math runs in: picks the compute roof
  long long quant_group = 0;     // weights per fp16 scale for int8/int4/fp8 weights; 0: no scales
  std::optional<DType> embedding;  // embedding tables and the LM head (int4 checkpoints keep them in bf16)
};

// How a network is split over GPUs (settings or network key `parallel:`): Megatron-style tensor
// parallelism over `tensor` GPUs; `pipeline` stages (contiguous layers balanced by parameters), a
// step running `micro_batches` micro-batches of the network's batch through them (GPipe: fill and
// drain); `expert`: a mixture's experts spread over that many data-parallel replicas (all-to-all of
// the routed tokens); `data` replicas of the whole, each with the network's batch. GPUs in all:
// tensor × pipeline × data. `overlap_full`: communication hidden behind compute.
struct Parallelism {
  long long tensor = 1, pipeline = 1, micro_batches = 1, expert = 1, data = 1;
  bool overlap_full = false;
  long long gpus() const { return tensor * pipeline * data; }
  bool operator==(const Parallelism& o) const {
    return tensor == o.tensor && pipeline == o.pipeline && micro_batches == o.micro_batches && expert == o.expert && data == o.data &&
           overlap_full == o.overlap_full;
  }
};

// Weights stored as int8, int4 or fp8 carry one fp16 scale per `quant_group` weights.
bool dtype_needs_scales(DType t);
constexpr double kQuantScaleBytes = 2;  // one fp16 scale per group

using Shape = std::vector<int64_t>;

double elements(const Shape& s);
std::string shape_str(const Shape& s);  // "1x32x56x56"
void append_shape(std::string& out, const Shape& s);  // appends shape_str(s)
// appends every shape, joined by ';' (results.csv's input_shape and output_shape columns)
void append_shapes(std::string& out, const std::vector<Shape>& shapes);

}  // namespace rsim
