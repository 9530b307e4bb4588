// `${...}` substitution. The engine owns the syntax and the tree walk; evaluating the expression
// itself is a service (Lua, in scripting/) reached through ExprEvaluator.
#pragma once
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "engine/model/config.hpp"

namespace rsim {

// Variable bindings, innermost last (a later entry shadows an earlier one of the same name).
// Values are text: numbers as written ("56", "1.5"), or words ("same").
using Env = std::vector<std::pair<std::string, std::string>>;

const std::string* env_find(const Env& env, const std::string& name);

class ExprError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

class ExprEvaluator {
 public:
  virtual ~ExprEvaluator() = default;
  // Evaluates one expression (the text between `${` and `}`); returns its value as text.
  // Throws ExprError with a message that needs no location.
  virtual std::string eval(const std::string& expr, const Env& env) = 0;
};

bool has_expr(const std::string& text);
// Whether any scalar of a tree has a `${…}` (keys are never substituted).
bool tree_has_expr(const CNode& n);
// Replaces every `${expr}` in `text`. Errors point into the scalar at `loc`.
std::string substitute(const std::string& text, const Env& env, ExprEvaluator& ev, const SourceLoc& loc);
// Substitutes every scalar of a tree (keys are left alone). Errors are collected in `d`.
CNode substitute_tree(const CNode& n, const Env& env, ExprEvaluator& ev, Diags& d);
// The bound names, in order (for "variables here" notes).
std::vector<std::string> env_names(const Env& env);

// The names the `${…}` of `text` may read: identifiers outside string literals, not a keyword, not
// a field after `.` or `:`. A `${…}` whose value may depend on more than these (one that reaches
// `math`, whose random() is no function of the bindings, or `_ENV`, or holds a long string `[[`)
// sets `opaque`. With the same values for these names, substituting `text` gives the same result.
std::vector<std::string> expr_names(const std::string& text, bool& opaque);

}  // namespace rsim
