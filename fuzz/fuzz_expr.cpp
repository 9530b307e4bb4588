// The expression evaluator: `${...}` substitution with the Lua evaluator on any text and bindings.
// Input: bindings "name=value" lines, then a line "---", then the text to substitute.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "engine/model/expr.hpp"
#include "scripting/lua_expr.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static std::unique_ptr<rsim::ExprEvaluator> ev = rsim::make_lua_evaluator();
  std::string in(reinterpret_cast<const char*>(data), size);
  rsim::Env env;
  size_t sep = in.find("\n---\n");
  std::string text = sep == std::string::npos ? in : in.substr(sep + 5);
  if (sep != std::string::npos) {
    size_t pos = 0;
    while (pos < sep && env.size() < 16) {
      size_t e = in.find('\n', pos);
      if (e == std::string::npos || e > sep) e = sep;
      std::string line = in.substr(pos, e - pos);
      size_t eq = line.find('=');
      if (eq != std::string::npos) env.emplace_back(line.substr(0, eq), line.substr(eq + 1));
      pos = e + 1;
    }
  }
  // The result, or that it fails (the message names the bindings, not their values).
  auto result = [&](const rsim::Env& e) -> std::string {
    try {
      return "ok:" + rsim::substitute(text, e, *ev, rsim::SourceLoc{});
    } catch (const rsim::ConfigError&) {
      return "error";
    } catch (const rsim::ExprError&) {
      return "error";
    }
  };
  (void)rsim::has_expr(text);
  const std::string first = result(env);
  // expr_names is what re-binding trusts to skip a `${…}`: unless the text is opaque, a binding
  // whose name it does not list cannot change the result
  bool opaque = false;
  std::vector<std::string> names = rsim::expr_names(text, opaque);
  if (!opaque) {
    rsim::Env other = env;
    bool changed = false;
    for (auto& [k, v] : other)
      if (std::find(names.begin(), names.end(), k) == names.end()) v = v == "7" ? "8" : "7", changed = true;
    if (changed && result(other) != first) __builtin_trap();
  }
  return 0;
}
