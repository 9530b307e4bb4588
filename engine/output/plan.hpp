// `rsim plan`: every point × network × layer of a scenario as JSON (docs/plan.schema.json): the
// operator with all its attributes, the tensors it reads (the layers that feed it), its shapes and
// precisions, and rsim's predicted columns on each platform. A measurement that has only PyTorch
// (python/rsim_torch) builds and times the layers, and the network as a forward pass, from it.
#pragma once
#include <string>

#include "engine/eval/evaluate.hpp"

namespace rsim {

constexpr int kPlanVersion = 1;

// The plan of a scenario (every point of its sweep, or opt.points). Throws ConfigError.
std::string plan_json(const Scenario& s, const Catalog& catalog, RunOptions opt, const std::string& rsim_version);

}  // namespace rsim
