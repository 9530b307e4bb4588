// The expression evaluator: `${...}` substitution with the Lua evaluator on any text and bindings.
// Input: bindings "name=value" lines, then a line "---", then the text to substitute.
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "engine/expr.hpp"
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
  try {
    (void)rsim::has_expr(text);
    (void)rsim::substitute(text, env, *ev, rsim::SourceLoc{});
  } catch (const rsim::ConfigError&) {
  } catch (const rsim::ExprError&) {
  }
  return 0;
}
