// General tensor operators (N-d convolution and pooling, GEMM, gathers, reductions, broadcasting
// comparisons, padding, ...): what imported models (ONNX) need beyond the hand-written layer set.
// Registered into the built-in registry by ops.cpp with one call.
#pragma once
#include "engine/ops/ops.hpp"

namespace rsim {

void add_tensor_ops(OpRegistry& r);

}  // namespace rsim
