// JSON Schemas (draft 2020-12) of the scenario and platform formats, generated from the key tables
// the loaders read (engine/model/keys.hpp), the operators' attribute specs and the unit tables, so an
// editor's completion and checks say what rsim accepts.
#pragma once
#include <string>
#include <vector>

#include "engine/ops/ops.hpp"

namespace rsim {

// `plot_columns`: the results columns a chart can draw (from plots/, which sits above the engine).
std::string scenario_schema(const OpRegistry& ops, const std::vector<std::string>& plot_columns);
std::string platform_schema();

}  // namespace rsim
