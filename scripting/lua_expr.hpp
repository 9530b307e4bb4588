// `${...}` expressions evaluated by Lua 5.4 in a small sandbox: arithmetic, comparisons,
// `and`/`or`, min/max and the math library; variables are the point's bindings.
#pragma once
#include <memory>

#include "engine/model/expr.hpp"

namespace rsim {

// A new evaluator (one per worker thread). `**` is accepted as a power operator besides `^`.
std::unique_ptr<ExprEvaluator> make_lua_evaluator();

}  // namespace rsim
