// Graph passes (seed 004): fusion and elimination on a built network. A fused group is one
// kernel: the tensors passed inside it are neither written nor read. Passes change costs and
// kernel assignments; they never change what a network computes.
#pragma once
#include <string>
#include <vector>

#include "engine/model/config.hpp"
#include "engine/graph/graph.hpp"

namespace rsim {

// Every pass rsim knows, in the order they run.
const std::vector<std::string>& pass_names();
// A one-line description of a pass (for docs and `rsim ops`-style listings).
std::string pass_description(const std::string& name);

// Reads `passes: [names]` or `passes: all` (also `optimize: all`). Errors in `d`.
std::vector<std::string> read_passes(const CNode& node, Diags& d);

// Applies the passes to a copy of `net` and returns it; `net` itself is left alone.
Network apply_passes(const Network& net, const std::vector<std::string>& passes);

}  // namespace rsim
