// What graph_build.cpp, graph_rebind.cpp and graph_parallel.cpp share (not for other rooms).
#pragma once
#include <string>

#include "engine/graph/graph.hpp"

namespace rsim::graph_detail {

// A node as flat text (a slot's value, compared between points)
std::string flat(const CNode& n);
// Which of a layer's inputs are a KV cache (bit k: input k), graph_rebind.cpp
unsigned kv_mask(const Network& net, const Layer& L);
// parallel.expert on a mixture: its expert_parallel attribute set (graph_parallel.cpp)
void expert_attr(const Network& net, Layer& L);

}  // namespace rsim::graph_detail
