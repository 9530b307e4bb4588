#include "scripting/lua_value.hpp"

extern "C" {
#include <lauxlib.h>
#include <lua.h>
#include <lualib.h>
}

#include <cctype>
#include <cmath>
#include <cstdlib>
#include <cstring>

namespace rsim {

namespace {

struct Walk {
  lua_State* L;
  long values = 0;
  std::string why;
};

bool node_of(Walk& w, int idx, int depth, CNode& out) {
  lua_State* L = w.L;
  switch (lua_type(L, idx)) {
    case LUA_TNUMBER:
      if (lua_isinteger(L, idx)) out = CNode::make_scalar(std::to_string(lua_tointeger(L, idx)));
      else {
        double v = lua_tonumber(L, idx);
        if (!std::isfinite(v)) {
          w.why = std::isnan(v) ? "is NaN" : "is infinite";
          return false;
        }
        out = CNode::make_scalar(format_number(v));
      }
      break;
    case LUA_TBOOLEAN: out = CNode::make_scalar(lua_toboolean(L, idx) ? "true" : "false"); break;
    case LUA_TSTRING: {
      size_t len = 0;
      const char* s = lua_tolstring(L, idx, &len);  // a string: no conversion, no allocation
      w.values += static_cast<long>(len / 64);
      out = CNode::make_scalar(std::string(s, len));
      break;
    }
    case LUA_TTABLE: {
      if (depth >= kLuaMaxDepth) {
        w.why = "is nested more than " + std::to_string(kLuaMaxDepth) + " tables deep (a cycle?)";
        return false;
      }
      if (lua_getmetatable(L, idx)) {
        lua_pop(L, 1);
        w.why = "has a metatable; give a plain table";
        return false;
      }
      if (!lua_checkstack(L, 2)) {
        w.why = "is nested too deep";
        return false;
      }
      lua_Unsigned n = lua_rawlen(L, idx);
      if (n > static_cast<lua_Unsigned>(kLuaMaxValues)) {
        w.why = "has more than " + std::to_string(kLuaMaxValues) + " values";
        return false;
      }
      out = CNode{};
      out.kind = CNode::Kind::Seq;
      for (lua_Unsigned i = 1; i <= n; ++i) {
        lua_rawgeti(L, idx, static_cast<lua_Integer>(i));
        CNode item;
        bool ok = node_of(w, lua_gettop(L), depth + 1, item);
        lua_pop(L, 1);
        if (!ok) return false;
        out.items.push_back(std::move(item));
      }
      break;
    }
    default:
      w.why = std::string("is a ") + lua_typename(L, lua_type(L, idx)) + ", not a number, string, boolean or list";
      return false;
  }
  if (++w.values > kLuaMaxValues) {
    w.why = "has more than " + std::to_string(kLuaMaxValues) + " values";
    return false;
  }
  return true;
}

// Lua's character classes (%a, %d, ...; upper case is the complement; anything else is itself)
bool class_match(unsigned char c, unsigned char cl) {
  bool res;
  switch (std::tolower(cl)) {
    case 'a': res = std::isalpha(c); break;
    case 'c': res = std::iscntrl(c); break;
    case 'd': res = std::isdigit(c); break;
    case 'g': res = std::isgraph(c); break;
    case 'l': res = std::islower(c); break;
    case 'p': res = std::ispunct(c); break;
    case 's': res = std::isspace(c); break;
    case 'u': res = std::isupper(c); break;
    case 'w': res = std::isalnum(c); break;
    case 'x': res = std::isxdigit(c); break;
    default: return cl == c;
  }
  return std::isupper(cl) ? !res : res;
}

// p[0] = '[' and p[len - 1] = ']'
bool set_match(unsigned char c, const char* p, size_t len) {
  size_t end = len - 1, i = 1;
  bool sig = true;
  if (p[1] == '^') {
    sig = false;
    i = 2;
  }
  for (; i < end; ++i) {
    unsigned char x = static_cast<unsigned char>(p[i]);
    if (x == '%' && i + 1 < end) {
      ++i;
      if (class_match(c, static_cast<unsigned char>(p[i]))) return sig;
    } else if (i + 2 < end && p[i + 1] == '-') {
      if (x <= c && c <= static_cast<unsigned char>(p[i + 2])) return sig;
      i += 2;
    } else if (x == c) {
      return sig;
    }
  }
  return !sig;
}

bool single_match(unsigned char c, const char* p, size_t len) {
  if (p[0] == '.') return true;
  if (p[0] == '%') return class_match(c, static_cast<unsigned char>(p[1]));
  if (p[0] == '[') return set_match(c, p, len);
  return static_cast<unsigned char>(p[0]) == c;
}

// Index one past the ']' closing the set that starts at p[i] = '[', or m + 1 when malformed.
size_t set_end(const char* p, size_t m, size_t i) {
  ++i;
  if (i < m && p[i] == '^') ++i;
  do {
    if (i >= m) return m + 1;
    if (p[i++] == '%' && i < m) ++i;
  } while (i >= m || p[i] != ']');
  return i + 1;
}

size_t longest_run(const char* s, size_t n, const char* item, size_t len) {
  size_t best = 0, cur = 0;
  for (size_t k = 0; k < n; ++k) {
    if (single_match(static_cast<unsigned char>(s[k]), item, len)) best = std::max(best, ++cur);
    else cur = 0;
  }
  return best;
}

}  // namespace

bool lua_value_to_node(lua_State* L, int idx, CNode& out, std::string& why) {
  Walk w{L, 0, {}};
  bool ok = node_of(w, lua_absindex(L, idx), 0, out);
  if (!ok) why = w.why;
  return ok;
}

bool lua_value_to_shape(lua_State* L, int idx, Shape& out, std::string& why) {
  idx = lua_absindex(L, idx);
  out.clear();
  if (lua_type(L, idx) != LUA_TTABLE) {
    why = std::string("is a ") + lua_typename(L, lua_type(L, idx)) + ", not a list of dimensions";
    return false;
  }
  if (lua_getmetatable(L, idx)) {
    lua_pop(L, 1);
    why = "has a metatable; return a plain list";
    return false;
  }
  lua_Unsigned n = lua_rawlen(L, idx);
  if (n < 1 || n > 16) {
    why = "has " + std::to_string(n) + " dimensions; a shape has 1 to 16";
    return false;
  }
  if (!lua_checkstack(L, 1)) {
    why = "cannot be read (no stack space)";
    return false;
  }
  for (lua_Unsigned i = 1; i <= n; ++i) {
    lua_rawgeti(L, idx, static_cast<lua_Integer>(i));
    int isnum = 0;
    lua_Number v = lua_tonumberx(L, -1, &isnum);  // no metamethods; a numeric string converts without allocating
    lua_pop(L, 1);
    if (!isnum || !std::isfinite(v) || v != std::floor(v) || v < 1 || v > 9e15) {
      why = "has dimension " + std::to_string(i) + " that is not a positive whole number (at most 9e15)";
      return false;
    }
    out.push_back(static_cast<int64_t>(v));
  }
  return true;
}

double lua_pattern_work(const char* s, size_t n, const char* p, size_t m, double limit) {
  double starts = static_cast<double>(n) + 1;
  size_t i = 0;
  if (m > 0 && p[0] == '^') {
    starts = 1;
    i = 1;
  }
  double per_start = static_cast<double>(m) + 1;  // one step per pattern item
  double mult = 1;                                // backtracking: the product of the choices
  double own = 0;                                 // this function's own work
  const double N = static_cast<double>(n) + 1;
  while (i < m) {
    char c = p[i];
    if (c == '(' || c == ')') {
      ++i;
      continue;
    }
    if (c == '$' && i + 1 == m) break;
    size_t item = i, len = 1;
    bool single = true;
    if (c == '%') {
      if (i + 1 >= m) break;  // malformed: Lua reports it
      char d = p[i + 1];
      if (d == 'b') {  // a balanced match scans up to n characters
        i += 4;
        mult *= N;
        single = false;
      } else if (d == 'f') {  // a frontier looks at two characters
        i += 2;
        if (i >= m || p[i] != '[') break;
        i = set_end(p, m, i);
        if (i > m) break;
        continue;
      } else if (std::isdigit(static_cast<unsigned char>(d))) {  // a back-reference compares up to n characters
        i += 2;
        mult *= N;
        single = false;
      } else {
        len = 2;
      }
    } else if (c == '[') {
      size_t e = set_end(p, m, i);
      if (e > m) break;
      len = e - i;
    }
    if (single) {
      i = item + len;
      if (i < m && (p[i] == '*' || p[i] == '+' || p[i] == '-')) {
        ++i;
        size_t rest = i;
        while (rest < m && p[rest] == ')') ++rest;
        bool last = rest == m || (rest + 1 == m && p[rest] == '$');  // nothing after it can fail: no backtracking
        own += static_cast<double>(n) * static_cast<double>(len);
        if (own > limit) return limit + 1;
        double run = static_cast<double>(longest_run(s, n, p + item, len));
        if (last) per_start += run;
        else mult *= run + 1;
      } else if (i < m && p[i] == '?') {
        ++i;
        mult *= 2;
      }
    }
    if (starts * per_start * mult + own > limit) return limit + 1;
  }
  double w = starts * per_start * mult + own;
  return w > limit ? limit + 1 : w;
}

// ---- fuzzing

namespace {

void* fuzz_alloc(void* ud, void* ptr, size_t osize, size_t nsize) {
  auto* used = static_cast<size_t*>(ud);
  size_t old = ptr ? osize : 0;
  if (nsize == 0) {
    *used -= old;
    std::free(ptr);
    return nullptr;
  }
  if (nsize > old && *used + (nsize - old) > (256u << 20)) return nullptr;
  void* q = std::realloc(ptr, nsize);
  if (q) *used = *used - old + nsize;
  return q;
}

int erroring(lua_State* L) { return luaL_error(L, "a metamethod ran"); }

struct FuzzInput {
  const unsigned char* d;
  size_t n, pos = 0;
  unsigned next() { return pos < n ? d[pos++] : 0u; }
  bool more() const { return pos < n; }
};

// Runs in a protected call: builds values on the stack from the bytes, then converts each one.
int fuzz_body(lua_State* L) {
  auto* in = static_cast<FuzzInput*>(lua_touserdata(L, 1));
  lua_settop(L, 0);
  int steps = 0;
  while (in->more() && steps++ < 4096) {
    if (!lua_checkstack(L, 8)) break;
    unsigned op = in->next() % 12;
    int top = lua_gettop(L);
    switch (op) {
      case 0: lua_pushinteger(L, static_cast<lua_Integer>(static_cast<signed char>(in->next()))); break;
      case 1: {
        unsigned char b[8];
        for (auto& x : b) x = static_cast<unsigned char>(in->next());
        double v;
        std::memcpy(&v, b, sizeof v);
        lua_pushnumber(L, v);  // NaN, infinities, subnormals, huge
        break;
      }
      case 2: {
        size_t len = in->next() % 64;
        char buf[64];
        for (size_t k = 0; k < len; ++k) buf[k] = static_cast<char>(in->next());
        lua_pushlstring(L, buf, len);
        break;
      }
      case 3: lua_createtable(L, 0, 0); break;
      case 4:  // t[#t + 1] = v
        if (top >= 2 && lua_type(L, top - 1) == LUA_TTABLE) {
          lua_rawseti(L, top - 1, static_cast<lua_Integer>(lua_rawlen(L, top - 1)) + 1);
        }
        break;
      case 5:  // a cycle: t[1] = t
        if (top >= 1 && lua_type(L, top) == LUA_TTABLE) {
          lua_pushvalue(L, top);
          lua_rawseti(L, top, 1);
        }
        break;
      case 6:  // a metatable whose every metamethod errors
        if (top >= 1 && lua_type(L, top) == LUA_TTABLE) {
          lua_createtable(L, 0, 3);
          for (const char* mm : {"__index", "__len", "__newindex"}) {
            lua_pushcfunction(L, erroring);
            lua_setfield(L, -2, mm);
          }
          lua_setmetatable(L, top);
        }
        break;
      case 7: lua_pushboolean(L, static_cast<int>(in->next() & 1)); break;
      case 8: lua_pushnil(L); break;
      case 9:  // t[k] = v with k at a big index (a hole)
        if (top >= 2 && lua_type(L, top - 1) == LUA_TTABLE) lua_rawseti(L, top - 1, static_cast<lua_Integer>(in->next()) * 1000);
        break;
      case 10:
        if (top >= 1) lua_pushvalue(L, 1 + static_cast<int>(in->next() % static_cast<unsigned>(top)));
        break;
      default:
        if (top >= 1) lua_pop(L, 1);
        break;
    }
  }
  int top = lua_gettop(L);
  for (int i = 1; i <= top; ++i) {
    CNode node;
    Shape shape;
    std::string why;
    (void)lua_value_to_node(L, i, node, why);
    (void)lua_value_to_shape(L, i, shape, why);
    if (i < top && lua_type(L, i) == LUA_TSTRING && lua_type(L, i + 1) == LUA_TSTRING) {
      size_t n = 0, m = 0;
      const char* s = lua_tolstring(L, i, &n);
      const char* p = lua_tolstring(L, i + 1, &m);
      double w = lua_pattern_work(s, n, p, m, 1e7);
      if (!(w >= 0)) std::abort();
    }
  }
  return 0;
}

}  // namespace

void lua_fuzz_values(const unsigned char* data, size_t size) {
  size_t used = 0;
  lua_State* L = lua_newstate(fuzz_alloc, &used);
  if (!L) return;
  FuzzInput in{data, size};
  lua_pushcfunction(L, fuzz_body);
  lua_pushlightuserdata(L, &in);
  (void)lua_pcall(L, 1, 0, 0);
  lua_close(L);
}

}  // namespace rsim
