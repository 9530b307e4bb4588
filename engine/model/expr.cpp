#include "engine/model/expr.hpp"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <string_view>

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

bool tree_has_expr(const CNode& n) {
  switch (n.kind) {
    case CNode::Kind::Scalar: return has_expr(n.scalar);
    case CNode::Kind::Seq:
      return std::any_of(n.items.begin(), n.items.end(), [](const CNode& i) { return tree_has_expr(i); });
    case CNode::Kind::Map:
      return std::any_of(n.entries.begin(), n.entries.end(), [](const CEntry& e) { return tree_has_expr(e.value); });
    case CNode::Kind::Null: break;
  }
  return false;
}


static bool is_keyword(std::string_view w) {
  static constexpr std::string_view kKeywords[] = {"and", "break", "do", "else", "elseif", "end", "false", "for", "function", "goto", "if",
                                                   "in", "local", "nil", "not", "or", "repeat", "return", "then", "true", "until", "while"};
  if (w.size() < 2 || w.size() > 8 || w[0] < 'a' || w[0] > 'w') return false;  // (none is shorter, longer, or starts elsewhere)
  for (std::string_view k : kKeywords)
    if (w == k) return true;
  return false;
}

std::vector<std::string> expr_names(const std::string& text, bool& opaque) {
  std::vector<std::string> names;
  auto word = [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; };
  size_t open = 0;
  while ((open = text.find("${", open)) != std::string::npos) {
    // the expression ends where substitute() ends it: at the brace that closes `${`, quotes or not
    size_t end = open + 2;
    for (int depth = 0; end < text.size(); ++end) {
      if (text[end] == '{') ++depth;
      else if (text[end] == '}' && depth-- == 0) break;
    }
    char quote = 0;
    char before = 0;    // the last character before this token that is not a space
    bool dots = false;  // `before` ends `..` (concatenation), not a field access
    for (size_t i = open + 2; i < end; ++i) {
      const char c = text[i];
      if (quote) {
        if (c == '\\') ++i;
        else if (c == quote) quote = 0, before = c, dots = false;
        continue;
      }
      if (c == '"' || c == '\'') {
        quote = c;
        continue;
      }
      if (c == '[' && i + 1 < end && (text[i + 1] == '[' || text[i + 1] == '=')) opaque = true;  // a long string
      if (std::isdigit(static_cast<unsigned char>(c))) {  // a number, with its exponent or hex digits
        while (i + 1 < end && (word(text[i + 1]) || text[i + 1] == '.' ||
                               ((text[i + 1] == '+' || text[i + 1] == '-') && std::string_view("eEpP").find(text[i]) != std::string_view::npos)))
          ++i;
        before = '0', dots = false;
        continue;
      }
      if (word(c)) {
        size_t j = i;
        while (j < end && word(text[j])) ++j;
        std::string w = text.substr(i, j - i);
        i = j - 1;
        const bool field = (before == '.' && !dots) || before == ':';
        before = 'a', dots = false;
        if (field || is_keyword(w)) continue;
        if (w == "math" || w == "_ENV") opaque = true;
        if (std::find(names.begin(), names.end(), w) == names.end()) names.push_back(std::move(w));
        continue;
      }
      if (c != ' ' && c != '\t' && c != '\n' && c != '\r') {
        dots = c == '.' && before == '.' && !dots;
        before = c;
      }
    }
    open = end;
  }
  return names;
}

// Column of offset `off` inside a scalar that starts at `loc`: exact for plain and quoted
// scalars on one line; the scalar's start otherwise.
static SourceLoc point_into(const SourceLoc& loc, const std::string& text, size_t off) {
  if (!loc.known() || text.find('\n') != std::string::npos) return loc;
  const std::string& line = loc.file->lines[static_cast<size_t>(loc.line - 1)];
  size_t start = static_cast<size_t>(loc.col - 1);
  int quote = (start < line.size() && (line[start] == '"' || line[start] == '\'')) ? 1 : 0;
  return loc.shifted(quote + static_cast<int>(off));
}

// `${NAME}` where NAME is a bound number written the way the evaluator prints it: its value,
// without a call into the evaluator (the same text it would return). nullptr: ask the evaluator.
static const std::string* plain_variable(std::string_view expr, const Env& env) {
  while (!expr.empty() && expr.front() == ' ') expr.remove_prefix(1);
  while (!expr.empty() && expr.back() == ' ') expr.remove_suffix(1);
  if (expr.empty() || expr.size() > 64 || std::isdigit(static_cast<unsigned char>(expr.front()))) return nullptr;
  for (char c : expr)
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_') return nullptr;
  if (is_keyword(expr)) return nullptr;
  const std::string* v = nullptr;
  for (auto it = env.rbegin(); it != env.rend() && !v; ++it)
    if (it->first == expr) v = &it->second;
  if (!v || v->empty()) return nullptr;
  // an integer (Lua integer: printed in decimal) or a finite float printed as format_number does
  if (v->find_first_of(".eE") == std::string::npos) {
    // printed as to_string prints it: an optional minus, then 0 alone (not after a minus) or digits
    // without a leading 0, and in range
    const std::string& t = *v;
    const size_t k = t[0] == '-' ? 1 : 0;
    if (k == t.size() || (t[k] == '0' && (k == 1 || t.size() > 1))) return nullptr;
    for (size_t j = k; j < t.size(); ++j)
      if (t[j] < '0' || t[j] > '9') return nullptr;
    long long i = 0;
    auto [ptr, ec] = std::from_chars(t.data(), t.data() + t.size(), i);
    if (ec == std::errc() && ptr == t.data() + t.size()) return v;
    return nullptr;
  }
  auto d = parse_double(*v);
  if (d && std::isfinite(*d) && format_number(*d) == *v) return v;
  return nullptr;
}

std::string substitute(const std::string& text, const Env& env, ExprEvaluator& ev, const SourceLoc& loc) {
  if (!has_expr(text)) return text;
  std::string out;
  size_t i = 0;
  while (i < text.size()) {
    size_t open = text.find("${", i);
    if (open == std::string::npos) {
      out.append(text, i, std::string::npos);
      break;
    }
    out.append(text, i, open - i);
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
    if (const std::string* v = plain_variable(std::string_view(text).substr(open + 2, close - open - 2), env)) {
      if (open == 0 && close + 1 == text.size()) return *v;  // the whole text: "${name}"
      out += *v;
      i = close + 1;
      continue;
    }
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
