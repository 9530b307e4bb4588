#include "engine/expr.hpp"

namespace rsim {

const std::string* env_find(const Env& env, const std::string& name) {
  for (auto it = env.rbegin(); it != env.rend(); ++it)
    if (it->first == name) return &it->second;
  return nullptr;
}

std::vector<std::string> env_names(const Env& env) {
  std::vector<std::string> n;
  for (const auto& [k, v] : env) n.push_back(k);
  return n;
}

bool has_expr(const std::string& text) { return text.find("${") != std::string::npos; }

// Column of offset `off` inside a scalar that starts at `loc`: exact for plain and quoted
// scalars on one line; the scalar's start otherwise.
static SourceLoc point_into(const SourceLoc& loc, const std::string& text, size_t off) {
  if (!loc.known() || text.find('\n') != std::string::npos) return loc;
  const std::string& line = loc.file->lines[static_cast<size_t>(loc.line - 1)];
  size_t start = static_cast<size_t>(loc.col - 1);
  int quote = (start < line.size() && (line[start] == '"' || line[start] == '\'')) ? 1 : 0;
  return loc.shifted(quote + static_cast<int>(off));
}

std::string substitute(const std::string& text, const Env& env, ExprEvaluator& ev, const SourceLoc& loc) {
  if (!has_expr(text)) return text;
  std::string out;
  size_t i = 0;
  while (i < text.size()) {
    size_t open = text.find("${", i);
    if (open == std::string::npos) {
      out += text.substr(i);
      break;
    }
    out += text.substr(i, open - i);
    // find the matching brace, allowing nested braces (Lua table constructors)
    int depth = 0;
    size_t close = std::string::npos;
    for (size_t j = open + 2; j < text.size(); ++j) {
      if (text[j] == '{') ++depth;
      else if (text[j] == '}') {
        if (depth == 0) {
          close = j;
          break;
        }
        --depth;
      }
    }
    if (close == std::string::npos)
      throw ConfigError(point_into(loc, text, open), "unterminated '${' in '" + text + "'", {Note{{}, "close the expression with '}'"}});
    std::string expr = text.substr(open + 2, close - open - 2);
    try {
      out += ev.eval(expr, env);
    } catch (const ExprError& e) {
      std::vector<Note> notes;
      std::string names;
      for (const auto& n : env_names(env)) names += (names.empty() ? "" : ", ") + n;
      if (!names.empty()) notes.push_back(Note{{}, "variables here: " + names});
      throw ConfigError(point_into(loc, text, open), "in '${" + expr + "}': " + e.what(), notes);
    }
    i = close + 1;
  }
  return out;
}

CNode substitute_tree(const CNode& n, const Env& env, ExprEvaluator& ev, Diags& d) {
  CNode out;
  out.kind = n.kind;
  out.loc = n.loc;
  switch (n.kind) {
    case CNode::Kind::Null: break;
    case CNode::Kind::Scalar:
      try {
        out.scalar = substitute(n.scalar, env, ev, n.loc);
      } catch (const ConfigError& e) {
        d.add(e);
        out.scalar = n.scalar;
      }
      break;
    case CNode::Kind::Seq:
      out.items.reserve(n.items.size());
      for (const auto& i : n.items) out.items.push_back(substitute_tree(i, env, ev, d));
      break;
    case CNode::Kind::Map:
      out.entries.reserve(n.entries.size());
      for (const auto& e : n.entries) out.entries.push_back(CEntry{e.key, e.key_loc, substitute_tree(e.value, env, ev, d)});
      break;
  }
  return out;
}

}  // namespace rsim
