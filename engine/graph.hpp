// Networks: an input, then layers that consume the previous output unless they name their
// inputs; reusable blocks with parameters and repeat counts. Built per sweep point with shape
// inference and per-layer costs.
#pragma once
#include <string>
#include <vector>

#include "engine/config.hpp"
#include "engine/expr.hpp"
#include "engine/ops.hpp"

namespace rsim {

struct TensorRef {
  int layer = -1;   // -1: a network input
  int output = 0;   // output index of that layer, or the input index
};

struct Layer {
  std::string name;  // full name, e.g. "stage1.0.conv1"
  const OpDef* op = nullptr;
  Attrs attrs;
  std::vector<TensorRef> inputs;
  std::vector<Shape> in_shapes;
  std::vector<Shape> out_shapes;
  DType dtype = DType::fp32;  // activations
  Precision precision;        // weights, KV cache and math precision (unset: dtype)
  DType weights_dtype() const { return precision.weights.value_or(dtype); }
  DType kv_dtype() const { return precision.kv.value_or(dtype); }
  DType compute_dtype() const { return precision.compute.value_or(dtype); }  // picks the compute roof
  bool touches_kv = false;    // reads or appends to the KV cache
  bool tied_weights = false;  // its weights are another layer's (tied embeddings): read, not counted as params or memory
  OpCost cost;
  SourceLoc loc;
  // Set by graph passes: the kernel this layer runs in (its own name when alone; "" when it moves
  // nothing or was eliminated), and why it changed.
  std::string kernel;
  bool eliminated = false;
};

struct Network {
  std::string name;
  std::string phase;  // "prefill" or "decode" for a transformer (network key `phase`); "" otherwise
  std::vector<std::pair<std::string, Shape>> inputs;
  std::vector<Layer> layers;
};

struct BuildOptions {
  const OpRegistry& ops;
  ExprEvaluator& ev;
  DType dtype = DType::fp32;
  double flops_per_mac = 2;
  Precision precision{};
};

// Reads the precision keys (weights_dtype, kv_dtype, compute_dtype, quant_group) of a settings,
// network or layer map into `p`, overriding what it holds. Other keys are left to the caller.
void read_precision_keys(const CNode& map, Precision& p, Diags& d);
extern const std::vector<std::string> kPrecisionKeys;

// Builds one network from its scenario entry with the point's bindings.
// Config and shape errors are collected in `d` (building stops at the first shape error).
Network build_network(const CNode& node, const Env& env, const BuildOptions& opt, Diags& d);

// Input channels per group of a grouped operator (conv2d, conv_transpose2d: Cin / groups;
// depthwise_conv2d: 1); 0 for an operator without channel groups. A variable of calibration.
double channels_per_group(const Layer& L);

}  // namespace rsim
