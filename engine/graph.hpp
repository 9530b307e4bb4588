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
  DType dtype = DType::fp32;
  OpCost cost;
  SourceLoc loc;
  // Set by graph passes: the kernel this layer runs in (its own name when alone; "" when it moves
  // nothing or was eliminated), and why it changed.
  std::string kernel;
  bool eliminated = false;
};

struct Network {
  std::string name;
  std::vector<std::pair<std::string, Shape>> inputs;
  std::vector<Layer> layers;
};

struct BuildOptions {
  const OpRegistry& ops;
  ExprEvaluator& ev;
  DType dtype = DType::fp32;
  double flops_per_mac = 2;
};

// Builds one network from its scenario entry with the point's bindings.
// Config and shape errors are collected in `d` (building stops at the first shape error).
Network build_network(const CNode& node, const Env& env, const BuildOptions& opt, Diags& d);

}  // namespace rsim
