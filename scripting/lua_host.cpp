#include "scripting/lua_host.hpp"

extern "C" {
#include <lauxlib.h>
#include <lua.h>
#include <lualib.h>
}

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iostream>

#include "engine/config.hpp"
#include "engine/evaluate.hpp"
#include "engine/graph.hpp"
#include "engine/output.hpp"
#include "engine/platform.hpp"

namespace rsim {

namespace {
thread_local LuaHost* tl_current = nullptr;
}  // namespace

struct LuaHost::Impl {
  // Closing here (not in ~LuaHost) frees the state also when a script fails in the constructor.
  ~Impl() {
    if (L) lua_close(L);
  }
  lua_State* L = nullptr;
  size_t mem_used = 0, mem_limit = 0;
  long long instr_used = 0, instr_limit = 0;
  bool loading = true;
  std::vector<ScriptOpInfo> ops;
  struct Refs {
    int infer = LUA_NOREF, cost = LUA_NOREF;
  };
  std::vector<Refs> op_refs;
  int efficiency_ref = LUA_NOREF;
  std::vector<std::string> metric_names;
  std::vector<int> metric_refs;
  std::vector<std::shared_ptr<const SourceFile>> files;  // scripts, for located messages
  // Tables handed to rules are reused from call to call (no allocation on the hot path): rules
  // read them during the call and must not keep them.
  int in_ref = LUA_NOREF, out_ref = LUA_NOREF;
  std::vector<int> attrs_ref;  // per operator

  // ---- calls into Lua, protected, with the instruction budget and a traceback
  struct Failure {
    std::string message;
    std::vector<std::string> traceback;
  };

  static int msgh(lua_State* L) {
    const char* msg = lua_tostring(L, 1);
    if (!msg) msg = luaL_typename(L, 1);
    luaL_traceback(L, L, msg, 1);
    return 1;
  }

  Failure failure_from_stack(int rc) {
    Failure f;
    if (rc == LUA_ERRMEM) {
      f.message = "script used more than " + format_number(static_cast<double>(mem_limit) / 1048576.0) + " MiB of memory (limits.memory)";
    } else {
      std::string all = lua_tostring(L, -1) ? lua_tostring(L, -1) : "error";
      size_t nl = all.find("\nstack traceback:");
      f.message = all.substr(0, nl);
      if (nl != std::string::npos) {
        std::string rest = all.substr(nl + 1);
        size_t pos = 0;
        while (pos < rest.size() && f.traceback.size() < 12) {
          size_t e = rest.find('\n', pos);
          std::string line = rest.substr(pos, e == std::string::npos ? std::string::npos : e - pos);
          while (!line.empty() && (line[0] == '\t' || line[0] == ' ')) line.erase(0, 1);
          if (!line.empty() && line.find("[C]: in ?") == std::string::npos) f.traceback.push_back(line);
          if (e == std::string::npos) break;
          pos = e + 1;
        }
      }
    }
    lua_settop(L, 1);
    lua_gc(L, LUA_GCCOLLECT);  // give back what a failed call piled up
    return f;
  }

  // Calls the function below `nargs` arguments on the stack. On success leaves `nres` results.
  // The message handler stays at stack index 1 for the state's life: no shuffling per call.
  bool call(int nargs, int nres, Failure& f) {
    instr_used = 0;
    int rc = lua_pcall(L, nargs, nres, 1);
    if (rc != LUA_OK) {
      f = failure_from_stack(rc);
      return false;
    }
    return true;
  }

  // "file.lua:12: message" → a located diagnostic in the script itself
  SourceLoc locate(const std::string& msg) const {
    for (const auto& file : files) {
      const std::string& n = file->path;
      if (msg.rfind(n + ":", 0) == 0) {
        auto line = parse_integer(msg.substr(n.size() + 1, msg.find(':', n.size() + 1) - n.size() - 1));
        if (line) return SourceLoc{file, static_cast<int>(*line), 1};
      }
    }
    return {};
  }
};

namespace {

LuaHost::Impl* impl_of(lua_State* L) { return *static_cast<LuaHost::Impl**>(lua_getextraspace(L)); }

void* limited_alloc(void* ud, void* ptr, size_t osize, size_t nsize) {
  auto* im = static_cast<LuaHost::Impl*>(ud);
  size_t old = ptr ? osize : 0;
  if (nsize == 0) {
    im->mem_used -= old;
    std::free(ptr);
    return nullptr;
  }
  if (nsize > old && im->mem_used + (nsize - old) > im->mem_limit) return nullptr;
  void* p = std::realloc(ptr, nsize);
  if (p) im->mem_used = im->mem_used - old + nsize;
  return p;
}

void count_hook(lua_State* L, lua_Debug*) {
  LuaHost::Impl* im = impl_of(L);
  im->instr_used += 1000;
  if (im->instr_used > im->instr_limit)
    luaL_error(L, "script ran for more than %s instructions (an endless loop? raise limits.instructions if not)",
               format_number(static_cast<double>(im->instr_limit)).c_str());
}

// ---- values between C++ and Lua

void push_shape(lua_State* L, const Shape& s) {
  lua_createtable(L, static_cast<int>(s.size()), 0);
  for (size_t i = 0; i < s.size(); ++i) {
    lua_pushinteger(L, s[i]);
    lua_rawseti(L, -2, static_cast<lua_Integer>(i + 1));
  }
}

void push_shapes(lua_State* L, const std::vector<Shape>& v) {
  lua_createtable(L, static_cast<int>(v.size()), 0);
  for (size_t i = 0; i < v.size(); ++i) {
    push_shape(L, v[i]);
    lua_rawseti(L, -2, static_cast<lua_Integer>(i + 1));
  }
}

void push_attr(lua_State* L, const AttrSpec& spec, const AttrValue& v) {
  if (!v.set) {
    lua_pushnil(L);
    return;
  }
  switch (spec.type) {
    case AttrType::Int: lua_pushinteger(L, v.i); break;
    case AttrType::Float: lua_pushnumber(L, v.f); break;
    case AttrType::Bool: lua_pushboolean(L, v.b); break;
    case AttrType::String:
    case AttrType::Choice: lua_pushstring(L, v.s.c_str()); break;
    case AttrType::Padding:
      if (!v.s.empty()) {
        lua_pushstring(L, v.s.c_str());
        break;
      }
      [[fallthrough]];
    case AttrType::Pair:
    case AttrType::Ints: {
      lua_createtable(L, static_cast<int>(v.ints.size()), 0);
      for (size_t i = 0; i < v.ints.size(); ++i) {
        lua_pushinteger(L, v.ints[i]);
        lua_rawseti(L, -2, static_cast<lua_Integer>(i + 1));
      }
      break;
    }
  }
}

// Fills the list table at `t` with `n` values from `get`, dropping any longer old contents.
template <class Get>
void fill_list(lua_State* L, int t, size_t n, Get get) {
  lua_Integer old = static_cast<lua_Integer>(lua_rawlen(L, t));
  for (size_t i = 0; i < n; ++i) {
    lua_pushinteger(L, get(i));
    lua_rawseti(L, t, static_cast<lua_Integer>(i + 1));
  }
  for (lua_Integer i = static_cast<lua_Integer>(n) + 1; i <= old; ++i) {
    lua_pushnil(L);
    lua_rawseti(L, t, i);
  }
}

// Pushes the reusable table `ref` filled with `v` (a list of shapes).
void push_shapes_reused(lua_State* L, int ref, const std::vector<Shape>& v) {
  lua_rawgeti(L, LUA_REGISTRYINDEX, ref);
  int t = lua_gettop(L);
  lua_Integer old = static_cast<lua_Integer>(lua_rawlen(L, t));
  for (size_t i = 0; i < v.size(); ++i) {
    if (lua_rawgeti(L, t, static_cast<lua_Integer>(i + 1)) != LUA_TTABLE) {
      lua_pop(L, 1);
      lua_createtable(L, static_cast<int>(v[i].size()), 0);
      lua_pushvalue(L, -1);
      lua_rawseti(L, t, static_cast<lua_Integer>(i + 1));
    }
    fill_list(L, lua_gettop(L), v[i].size(), [&](size_t k) { return static_cast<lua_Integer>(v[i][k]); });
    lua_pop(L, 1);
  }
  for (lua_Integer i = static_cast<lua_Integer>(v.size()) + 1; i <= old; ++i) {
    lua_pushnil(L);
    lua_rawseti(L, t, i);
  }
}

// Pushes the operator's reusable attribute table, refreshed with `a`.
void push_attrs_reused(lua_State* L, int ref, const std::vector<AttrSpec>& specs, const Attrs& a) {
  lua_rawgeti(L, LUA_REGISTRYINDEX, ref);
  int t = lua_gettop(L);
  for (const auto& spec : specs) {
    const AttrValue& v = a.at(spec.name);
    bool list = v.set && (spec.type == AttrType::Pair || spec.type == AttrType::Ints || (spec.type == AttrType::Padding && v.s.empty()));
    if (list) {
      if (lua_getfield(L, t, spec.name.c_str()) != LUA_TTABLE) {
        lua_pop(L, 1);
        lua_createtable(L, static_cast<int>(v.ints.size()), 0);
        lua_pushvalue(L, -1);
        lua_setfield(L, t, spec.name.c_str());
      }
      fill_list(L, lua_gettop(L), v.ints.size(), [&](size_t k) { return static_cast<lua_Integer>(v.ints[k]); });
      lua_pop(L, 1);
    } else {
      push_attr(L, spec, v);
      lua_setfield(L, t, spec.name.c_str());
    }
  }
}

void push_attrs(lua_State* L, const std::vector<AttrSpec>& specs, const Attrs& a) {
  lua_createtable(L, 0, static_cast<int>(specs.size()));
  for (const auto& spec : specs) {
    push_attr(L, spec, a.at(spec.name));
    lua_setfield(L, -2, spec.name.c_str());
  }
}

void set_num(lua_State* L, const char* k, double v) {
  lua_pushnumber(L, v);
  lua_setfield(L, -2, k);
}
void set_str(lua_State* L, const char* k, const std::string& v) {
  lua_pushlstring(L, v.data(), v.size());
  lua_setfield(L, -2, k);
}

// A shape list returned by a script: a table of positive whole numbers.
bool read_shape(lua_State* L, int idx, Shape& out, std::string& why) {
  if (!lua_istable(L, idx)) {
    why = std::string("a shape must be a list of dimensions, got a ") + luaL_typename(L, idx);
    return false;
  }
  lua_Integer n = luaL_len(L, idx);
  if (n < 1 || n > 16) {
    why = "a shape needs 1 to 16 dimensions";
    return false;
  }
  for (lua_Integer i = 1; i <= n; ++i) {
    lua_rawgeti(L, idx, i);
    int isnum = 0;
    lua_Number v = lua_tonumberx(L, -1, &isnum);
    lua_pop(L, 1);
    if (!isnum || !std::isfinite(v) || v != std::floor(v) || v < 1 || v > 9e15) {
      why = "dimension " + std::to_string(i) + " must be a positive whole number";
      return false;
    }
    out.push_back(static_cast<int64_t>(v));
  }
  return true;
}

// Lua value at idx → YAML-like node, so built-in attribute parsing applies unchanged.
CNode to_node(lua_State* L, int idx) {
  idx = lua_absindex(L, idx);
  switch (lua_type(L, idx)) {
    case LUA_TNUMBER: return CNode::make_scalar(lua_isinteger(L, idx) ? std::to_string(lua_tointeger(L, idx)) : format_number(lua_tonumber(L, idx)));
    case LUA_TBOOLEAN: return CNode::make_scalar(lua_toboolean(L, idx) ? "true" : "false");
    case LUA_TSTRING: return CNode::make_scalar(lua_tostring(L, idx));
    case LUA_TTABLE: {
      CNode n;
      n.kind = CNode::Kind::Seq;
      lua_Integer len = luaL_len(L, idx);
      for (lua_Integer i = 1; i <= len; ++i) {
        lua_rawgeti(L, idx, i);
        n.items.push_back(to_node(L, -1));
        lua_pop(L, 1);
      }
      return n;
    }
    default: return CNode{};
  }
}

// ---- the rsim table

int l_numel(lua_State* L) {
  Shape s;
  std::string why;
  if (!read_shape(L, 1, s, why)) return luaL_error(L, "rsim.numel: %s", why.c_str());
  lua_pushnumber(L, elements(s));
  return 1;
}

int l_print(lua_State* L) {
  int n = lua_gettop(L);
  std::string line = "lua: ";
  for (int i = 1; i <= n; ++i) line += (i > 1 ? "\t" : "") + std::string(luaL_tolstring(L, i, nullptr)), lua_pop(L, 1);
  std::cerr << line << "\n";
  return 0;
}

// load(chunk [, name [, mode [, env]]]) that accepts only text: no precompiled bytecode
int l_load_text(lua_State* L) {
  size_t len;
  const char* s = luaL_checklstring(L, 1, &len);
  const char* name = luaL_optstring(L, 2, "=(load)");
  int has_env = !lua_isnone(L, 4);
  if (luaL_loadbufferx(L, s, len, name, "t") != LUA_OK) {
    lua_pushnil(L);
    lua_insert(L, -2);
    return 2;
  }
  if (has_env) {
    lua_pushvalue(L, 4);
    if (!lua_setupvalue(L, -2, 1)) lua_pop(L, 1);
  }
  return 1;
}

// rsim.cost.NAME{input = {...}, attr = ...}: a built-in operator's cost, for composing fused ops
int l_builtin_cost(lua_State* L) {
  const char* name = lua_tostring(L, lua_upvalueindex(1));
  const OpDef* op = builtin_ops().find(name);
  luaL_checktype(L, 1, LUA_TTABLE);
  std::vector<Shape> in;
  std::string why;
  lua_getfield(L, 1, "inputs");
  if (lua_istable(L, -1)) {
    lua_Integer n = luaL_len(L, -1);
    for (lua_Integer i = 1; i <= n; ++i) {
      lua_rawgeti(L, -1, i);
      Shape s;
      if (!read_shape(L, lua_gettop(L), s, why)) return luaL_error(L, "rsim.cost.%s: inputs[%d]: %s", name, static_cast<int>(i), why.c_str());
      in.push_back(s);
      lua_pop(L, 1);
    }
  }
  lua_pop(L, 1);
  lua_getfield(L, 1, "input");
  if (!lua_isnil(L, -1)) {
    Shape s;
    if (!read_shape(L, lua_gettop(L), s, why)) return luaL_error(L, "rsim.cost.%s: input: %s", name, why.c_str());
    in.push_back(s);
  }
  lua_pop(L, 1);
  if (in.empty()) return luaL_error(L, "rsim.cost.%s needs 'input' (a shape) or 'inputs' (a list of shapes)", name);
  DType dt = DType::fp32;
  lua_getfield(L, 1, "dtype");
  if (lua_isstring(L, -1)) {
    auto t = parse_dtype(lua_tostring(L, -1));
    if (!t) return luaL_error(L, "rsim.cost.%s: unknown dtype '%s'", name, lua_tostring(L, -1));
    dt = *t;
  }
  lua_pop(L, 1);
  // the other keys are the operator's attributes
  CNode attrs;
  attrs.kind = CNode::Kind::Map;
  lua_pushnil(L);
  while (lua_next(L, 1)) {
    if (lua_type(L, -2) == LUA_TSTRING) {
      std::string k = lua_tostring(L, -2);
      if (k != "input" && k != "inputs" && k != "dtype") attrs.entries.push_back(CEntry{k, {}, to_node(L, -1)});
    }
    lua_pop(L, 1);
  }
  Diags d;
  std::string where = std::string("rsim.cost.") + name;
  for (const auto& e : attrs.entries) {
    bool known = false;
    for (const auto& a : op->attrs) known = known || a.name == e.key;
    if (!known) d.error({}, where + ": unknown attribute '" + e.key + "'");
  }
  Attrs a = read_attrs(*op, attrs, d, where);
  if (!d.empty()) return luaL_error(L, "%s", d.list().front().message.c_str());
  try {
    OpArgs args{a, in, dt};
    std::vector<Shape> out = op->infer(args);
    OpWork w = op->work ? op->work(args, out) : OpWork{};
    lua_createtable(L, 0, 6);
    set_num(L, "macs", w.macs);
    set_num(L, "flops", w.other_flops);
    set_num(L, "params", w.params);
    set_num(L, "weights", w.weight_elems);
    push_shapes(L, out);
    lua_setfield(L, -2, "outputs");
    return 1;
  } catch (const ShapeError& e) {
    return luaL_error(L, "%s: %s", where.c_str(), e.what());
  }
}

AttrType attr_type(const std::string& t, bool& ok) {
  ok = true;
  if (t == "int") return AttrType::Int;
  if (t == "number") return AttrType::Float;
  if (t == "bool") return AttrType::Bool;
  if (t == "string") return AttrType::String;
  if (t == "choice") return AttrType::Choice;
  if (t == "pair") return AttrType::Pair;
  if (t == "ints") return AttrType::Ints;
  if (t == "padding") return AttrType::Padding;
  ok = false;
  return AttrType::Int;
}

std::string default_text(lua_State* L, int idx) {
  switch (lua_type(L, idx)) {
    case LUA_TNUMBER: return lua_isinteger(L, idx) ? std::to_string(lua_tointeger(L, idx)) : format_number(lua_tonumber(L, idx));
    case LUA_TBOOLEAN: return lua_toboolean(L, idx) ? "true" : "false";
    case LUA_TSTRING: return lua_tostring(L, idx);
    case LUA_TTABLE: {
      std::string s = "[";
      lua_Integer n = luaL_len(L, idx);
      for (lua_Integer i = 1; i <= n; ++i) {
        lua_rawgeti(L, idx, i);
        s += (i > 1 ? ", " : "") + format_number(lua_tonumber(L, -1));
        lua_pop(L, 1);
      }
      return s + "]";
    }
    default: return "";
  }
}

std::string opt_string(lua_State* L, int t, const char* k) {
  lua_getfield(L, t, k);
  std::string s = lua_isstring(L, -1) ? lua_tostring(L, -1) : "";
  lua_pop(L, 1);
  return s;
}

// rsim.op{name=..., attrs=..., inputs=..., infer=..., cost=..., summary=..., formula=..., view=...}
int l_op(lua_State* L) {
  LuaHost::Impl* im = impl_of(L);
  if (!im->loading) return luaL_error(L, "rsim.op must be called while the script loads, not from inside a rule");
  luaL_checktype(L, 1, LUA_TTABLE);
  // a misspelt key would silently drop a rule: reject it with a suggestion
  static const std::vector<std::string> keys = {"name", "summary", "formula", "inputs", "attrs", "infer", "cost", "view"};
  lua_pushnil(L);
  while (lua_next(L, 1)) {
    lua_pop(L, 1);
    std::string k = lua_type(L, -1) == LUA_TSTRING ? lua_tostring(L, -1) : "?";
    if (std::find(keys.begin(), keys.end(), k) == keys.end()) {
      std::string hint = did_you_mean(k, keys);
      return luaL_error(L, "rsim.op: unknown key '%s'%s", k.c_str(), hint.empty() ? " (keys: name, summary, formula, inputs, attrs, infer, cost, view)" : ("; " + hint).c_str());
    }
  }
  ScriptOpInfo info;
  info.name = opt_string(L, 1, "name");
  if (info.name.empty()) return luaL_error(L, "rsim.op needs a 'name'");
  for (char c : info.name)
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '_')) return luaL_error(L, "rsim.op: name '%s' may use letters, digits and _", info.name.c_str());
  for (const auto& o : im->ops)
    if (o.name == info.name) return luaL_error(L, "rsim.op: '%s' is registered twice", info.name.c_str());
  info.summary = opt_string(L, 1, "summary");
  if (info.summary.empty()) info.summary = "operator from a script";
  info.formula = opt_string(L, 1, "formula");
  if (info.formula.empty()) info.formula = "as computed by the script's cost function";
  lua_Debug ar;
  if (lua_getstack(L, 1, &ar) && lua_getinfo(L, "Sl", &ar)) info.script = std::string(ar.short_src) + ":" + std::to_string(ar.currentline);
  lua_getfield(L, 1, "view");
  info.view = lua_toboolean(L, -1);
  lua_pop(L, 1);
  lua_getfield(L, 1, "inputs");
  if (lua_isinteger(L, -1)) info.min_inputs = info.max_inputs = static_cast<int>(lua_tointeger(L, -1));
  else if (lua_istable(L, -1)) {
    lua_getfield(L, -1, "min");
    info.min_inputs = static_cast<int>(luaL_optinteger(L, -1, 1));
    lua_getfield(L, -2, "max");
    info.max_inputs = static_cast<int>(luaL_optinteger(L, -1, -1));
    lua_pop(L, 2);
  } else if (!lua_isnil(L, -1))
    return luaL_error(L, "rsim.op '%s': inputs is a count or {min = A, max = B}", info.name.c_str());
  lua_pop(L, 1);
  if (info.min_inputs < 0 || (info.max_inputs >= 0 && info.max_inputs < info.min_inputs) || info.min_inputs > 64)
    return luaL_error(L, "rsim.op '%s': bad input count", info.name.c_str());
  lua_getfield(L, 1, "attrs");
  if (lua_istable(L, -1)) {
    int at = lua_gettop(L);
    lua_pushnil(L);
    while (lua_next(L, at)) {
      if (lua_type(L, -2) != LUA_TSTRING || !lua_istable(L, -1))
        return luaL_error(L, "rsim.op '%s': attrs maps names to {type = ..., default = ..., doc = ...}", info.name.c_str());
      AttrSpec spec;
      spec.name = lua_tostring(L, -2);
      int st = lua_gettop(L);
      std::string type = opt_string(L, st, "type");
      bool ok;
      spec.type = attr_type(type.empty() ? "number" : type, ok);
      if (!ok) return luaL_error(L, "rsim.op '%s': attribute '%s' has unknown type '%s' (int, number, bool, string, choice, pair, ints, padding)",
                                 info.name.c_str(), spec.name.c_str(), type.c_str());
      spec.doc = opt_string(L, st, "doc");
      lua_getfield(L, st, "default");
      spec.def = lua_isnil(L, -1) ? "" : default_text(L, lua_gettop(L));
      lua_pop(L, 1);
      lua_getfield(L, st, "optional");
      if (lua_toboolean(L, -1) && spec.def.empty()) spec.def = "~";
      lua_pop(L, 1);
      lua_getfield(L, st, "choices");
      if (lua_istable(L, -1)) {
        lua_Integer n = luaL_len(L, -1);
        for (lua_Integer i = 1; i <= n; ++i) {
          lua_rawgeti(L, -1, i);
          if (lua_isstring(L, -1)) spec.choices.push_back(lua_tostring(L, -1));
          lua_pop(L, 1);
        }
      }
      lua_pop(L, 1);
      if (spec.type == AttrType::Choice && spec.choices.empty())
        return luaL_error(L, "rsim.op '%s': choice attribute '%s' needs choices = {...}", info.name.c_str(), spec.name.c_str());
      info.attrs.push_back(spec);
      lua_pop(L, 1);
    }
    // a stable order: by name (Lua tables have none)
    std::sort(info.attrs.begin(), info.attrs.end(), [](const AttrSpec& a, const AttrSpec& b) { return a.name < b.name; });
  }
  lua_pop(L, 1);
  LuaHost::Impl::Refs refs;
  lua_getfield(L, 1, "infer");
  if (lua_isfunction(L, -1)) refs.infer = luaL_ref(L, LUA_REGISTRYINDEX);
  else if (!lua_isnil(L, -1)) return luaL_error(L, "rsim.op '%s': infer must be a function", info.name.c_str());
  else lua_pop(L, 1);
  lua_getfield(L, 1, "cost");
  if (lua_isfunction(L, -1)) refs.cost = luaL_ref(L, LUA_REGISTRYINDEX);
  else if (!lua_isnil(L, -1) || !info.view) return luaL_error(L, "rsim.op '%s': cost must be a function (only a view may leave it out)", info.name.c_str());
  else lua_pop(L, 1);
  im->ops.push_back(info);
  im->op_refs.push_back(refs);
  return 0;
}

int l_efficiency(lua_State* L) {
  LuaHost::Impl* im = impl_of(L);
  if (!im->loading) return luaL_error(L, "rsim.efficiency must be called while the script loads");
  luaL_checktype(L, 1, LUA_TFUNCTION);
  if (im->efficiency_ref != LUA_NOREF) return luaL_error(L, "rsim.efficiency is set twice; combine the models in one function");
  lua_pushvalue(L, 1);
  im->efficiency_ref = luaL_ref(L, LUA_REGISTRYINDEX);
  return 0;
}

int l_metric(lua_State* L) {
  LuaHost::Impl* im = impl_of(L);
  if (!im->loading) return luaL_error(L, "rsim.metric must be called while the script loads");
  std::string name = luaL_checkstring(L, 1);
  luaL_checktype(L, 2, LUA_TFUNCTION);
  if (name.empty()) return luaL_error(L, "rsim.metric needs a name");
  for (char c : name)
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '_')) return luaL_error(L, "rsim.metric: name '%s' may use letters, digits and _", name.c_str());
  for (const auto& m : im->metric_names)
    if (m == name) return luaL_error(L, "rsim.metric '%s' is defined twice", name.c_str());
  for (const auto& c : results_columns())
    if (c == name) return luaL_error(L, "rsim.metric '%s' would hide the built-in column of that name", name.c_str());
  im->metric_names.push_back(name);
  lua_pushvalue(L, 2);
  im->metric_refs.push_back(luaL_ref(L, LUA_REGISTRYINDEX));
  return 0;
}

// A cost field: absent → `def` (or an error when required), else a finite number ≥ 0.
bool cost_field(lua_State* L, int t, const char* k, bool required, double& out, std::string& why) {
  lua_getfield(L, t, k);
  int type = lua_type(L, -1);
  if (type == LUA_TNIL) {
    lua_pop(L, 1);
    if (required) {
      why = std::string("the cost function's result has no '") + k + "'";
      return false;
    }
    return true;
  }
  if (type != LUA_TNUMBER) {
    why = std::string("'") + k + "' must be a number, got a " + lua_typename(L, type);
    lua_pop(L, 1);
    return false;
  }
  double v = lua_tonumber(L, -1);
  lua_pop(L, 1);
  if (std::isnan(v)) why = std::string("'") + k + "' is NaN";
  else if (std::isinf(v)) why = std::string("'") + k + "' is infinite";
  else if (v < 0) why = std::string("'") + k + "' is negative (" + format_number(v) + ")";
  else {
    out = v;
    return true;
  }
  return false;
}

bool byte_list(lua_State* L, int t, const char* k, size_t expect, std::vector<double>& out, std::string& why) {
  lua_getfield(L, t, k);
  if (lua_isnil(L, -1)) {
    lua_pop(L, 1);
    return true;
  }
  if (!lua_istable(L, -1)) {
    why = std::string("'") + k + "' must be a list with one byte count per tensor";
    lua_pop(L, 1);
    return false;
  }
  int lt = lua_gettop(L);
  size_t n = static_cast<size_t>(luaL_len(L, lt));
  if (n != expect) {
    why = std::string("'") + k + "' has " + std::to_string(n) + " entries for " + std::to_string(expect) + " tensors";
    lua_pop(L, 1);
    return false;
  }
  for (size_t i = 1; i <= n; ++i) {
    lua_rawgeti(L, lt, static_cast<lua_Integer>(i));
    int isnum = 0;
    double v = lua_tonumberx(L, -1, &isnum);
    lua_pop(L, 1);
    if (!isnum || !std::isfinite(v) || v < 0) {
      why = std::string("'") + k + "[" + std::to_string(i) + "]' must be a finite number ≥ 0";
      lua_pop(L, 1);
      return false;
    }
    out.push_back(v);
  }
  lua_pop(L, 1);
  return true;
}

void push_layer(lua_State* L, const Layer& layer, const Row& row) {
  lua_createtable(L, 0, 16);
  set_str(L, "name", layer.name);
  set_str(L, "op", row.op);
  set_str(L, "network", row.network);
  set_str(L, "dtype", dtype_name(layer.dtype));
  set_num(L, "macs", row.cost.macs);
  set_num(L, "flops", row.cost.flops);
  set_num(L, "params", row.cost.params);
  set_num(L, "bytes", row.bytes);
  set_num(L, "weight_bytes", row.cost.weight_bytes);
  set_num(L, "input_bytes", row.cost.input_total());
  set_num(L, "output_bytes", row.cost.output_total());
  set_num(L, "intensity", row.theoretical.intensity);
  set_num(L, "point", static_cast<double>(row.point));
  push_shapes(L, layer.in_shapes);
  lua_setfield(L, -2, "inputs");
  push_shapes(L, layer.out_shapes);
  lua_setfield(L, -2, "outputs");
  push_attrs(L, layer.op->attrs, layer.attrs);
  lua_setfield(L, -2, "attrs");
}

}  // namespace

LuaHost::LuaHost(const std::vector<Script>& scripts, const ScriptLimits& limits) : impl_(std::make_unique<Impl>()) {
  Impl& im = *impl_;
  im.mem_limit = static_cast<size_t>(limits.memory_bytes);
  im.instr_limit = static_cast<long long>(limits.instructions);
  im.L = lua_newstate(limited_alloc, &im);
  if (!im.L) throw ConfigError(SourceLoc{}, "cannot create a Lua state");
  lua_State* L = im.L;
  *static_cast<Impl**>(lua_getextraspace(L)) = &im;
  lua_sethook(L, count_hook, LUA_MASKCOUNT, 1000);
  // the sandbox: base (without file access and bytecode), math, string, table, utf8
  luaL_requiref(L, LUA_GNAME, luaopen_base, 1);
  luaL_requiref(L, LUA_MATHLIBNAME, luaopen_math, 1);
  luaL_requiref(L, LUA_STRLIBNAME, luaopen_string, 1);
  luaL_requiref(L, LUA_TABLIBNAME, luaopen_table, 1);
  luaL_requiref(L, LUA_UTF8LIBNAME, luaopen_utf8, 1);
  lua_settop(L, 0);
  lua_pushcfunction(L, Impl::msgh);  // index 1 from now on
  for (const char* g : {"dofile", "loadfile", "require", "collectgarbage"}) {
    lua_pushnil(L);
    lua_setglobal(L, g);
  }
  lua_pushcfunction(L, l_load_text);
  lua_setglobal(L, "load");
  lua_pushcfunction(L, l_print);
  lua_setglobal(L, "print");
  lua_getglobal(L, "string");
  lua_pushnil(L);
  lua_setfield(L, -2, "dump");
  lua_pop(L, 1);
  // rsim.*
  lua_newtable(L);
  lua_pushcfunction(L, l_op);
  lua_setfield(L, -2, "op");
  lua_pushcfunction(L, l_efficiency);
  lua_setfield(L, -2, "efficiency");
  lua_pushcfunction(L, l_metric);
  lua_setfield(L, -2, "metric");
  lua_pushcfunction(L, l_numel);
  lua_setfield(L, -2, "numel");
  lua_newtable(L);
  for (const auto& n : builtin_ops().names()) {
    lua_pushstring(L, n.c_str());
    lua_pushcclosure(L, l_builtin_cost, 1);
    lua_setfield(L, -2, n.c_str());
  }
  lua_setfield(L, -2, "cost");
  lua_setglobal(L, "rsim");

  for (const Script& s : scripts) {
    im.files.push_back(SourceFile::from_text(s.name, s.code));
    if (luaL_loadbufferx(L, s.code.data(), s.code.size(), ("@" + s.name).c_str(), "t") != LUA_OK) {
      std::string msg = lua_tostring(L, -1) ? lua_tostring(L, -1) : "syntax error";
      lua_settop(L, 1);
      SourceLoc at = im.locate(msg);
      std::string text = at.known() ? msg.substr(msg.find(':', s.name.size() + 1) + 2) : msg;
      throw ConfigError(at.known() ? at : s.loc, "Lua syntax error: " + text, {Note{s.loc, "script loaded here"}});
    }
    Impl::Failure f;
    if (!im.call(0, 0, f)) {
      SourceLoc at = im.locate(f.message);
      std::vector<Note> notes;
      for (const auto& t : f.traceback) notes.push_back(Note{{}, t});
      notes.push_back(Note{s.loc, "script loaded here"});
      std::string text = at.known() ? f.message.substr(f.message.find(':', at.file->path.size() + 1) + 2) : f.message;
      throw ConfigError(at.known() ? at : s.loc, text, notes);
    }
  }
  im.loading = false;
  lua_newtable(L);
  im.in_ref = luaL_ref(L, LUA_REGISTRYINDEX);
  lua_newtable(L);
  im.out_ref = luaL_ref(L, LUA_REGISTRYINDEX);
  for (size_t i = 0; i < im.ops.size(); ++i) {
    lua_newtable(L);
    im.attrs_ref.push_back(luaL_ref(L, LUA_REGISTRYINDEX));
  }
  tl_current = this;
}

LuaHost::~LuaHost() {
  if (tl_current == this) tl_current = nullptr;
}

LuaHost* LuaHost::current() { return tl_current; }
const std::vector<ScriptOpInfo>& LuaHost::ops() const { return impl_->ops; }
bool LuaHost::has_efficiency() const { return impl_->efficiency_ref != LUA_NOREF; }
const std::vector<std::string>& LuaHost::metric_names() const { return impl_->metric_names; }

std::vector<Shape> LuaHost::infer(size_t op, const OpArgs& args) {
  Impl& im = *impl_;
  lua_State* L = im.L;
  const ScriptOpInfo& info = im.ops[op];
  if (im.op_refs[op].infer == LUA_NOREF) {
    if (args.in.empty()) throw ShapeError("custom operator '" + info.name + "' has no infer function and no input to copy the shape of");
    return {args.in[0]};  // default: the shape of the first input
  }
  lua_rawgeti(L, LUA_REGISTRYINDEX, im.op_refs[op].infer);
  push_shapes_reused(L, im.in_ref, args.in);
  push_attrs_reused(L, im.attrs_ref[op], info.attrs, args.attrs);
  lua_pushstring(L, dtype_name(args.dtype));
  Impl::Failure f;
  if (!im.call(3, 1, f)) throw ShapeError(f.message, f.traceback);
  std::vector<Shape> out;
  std::string why;
  if (!lua_istable(L, -1)) why = std::string("infer must return a list of output shapes, got a ") + luaL_typename(L, -1);
  else {
    lua_Integer n = luaL_len(L, -1);
    if (n < 1) why = "infer returned no output shape";
    for (lua_Integer i = 1; i <= n && why.empty(); ++i) {
      lua_rawgeti(L, -1, i);
      Shape s;
      if (!read_shape(L, lua_gettop(L), s, why)) why = "output " + std::to_string(i) + ": " + why;
      out.push_back(s);
      lua_pop(L, 1);
    }
  }
  lua_settop(L, 1);
  if (!why.empty()) throw ShapeError("custom operator '" + info.name + "': " + why);
  return out;
}

OpWork LuaHost::work(size_t op, const OpArgs& args, const std::vector<Shape>& out) {
  Impl& im = *impl_;
  lua_State* L = im.L;
  const ScriptOpInfo& info = im.ops[op];
  OpWork w;
  if (im.op_refs[op].cost == LUA_NOREF) return w;  // a view
  lua_rawgeti(L, LUA_REGISTRYINDEX, im.op_refs[op].cost);
  push_shapes_reused(L, im.in_ref, args.in);
  push_shapes_reused(L, im.out_ref, out);
  push_attrs_reused(L, im.attrs_ref[op], info.attrs, args.attrs);
  lua_pushstring(L, dtype_name(args.dtype));
  Impl::Failure f;
  if (!im.call(4, 1, f)) throw ShapeError(f.message, f.traceback);
  std::string why;
  int t = lua_gettop(L);
  if (!lua_istable(L, t)) why = std::string("cost must return a table {macs = ..., flops = ..., ...}, got a ") + luaL_typename(L, t);
  else {
    bool ok = cost_field(L, t, "macs", true, w.macs, why) && cost_field(L, t, "flops", true, w.other_flops, why) &&
              cost_field(L, t, "params", false, w.params, why) && cost_field(L, t, "weights", false, w.weight_elems, why);
    double wb = -1;
    if (ok && cost_field(L, t, "weight_bytes", false, wb, why)) w.weight_bytes = wb;
    else ok = false;
    ok = ok && byte_list(L, t, "input_bytes", args.in.size(), w.input_bytes, why) && byte_list(L, t, "output_bytes", out.size(), w.output_bytes, why);
  }
  lua_settop(L, 1);
  if (!why.empty()) throw ShapeError("custom operator '" + info.name + "': " + why);
  return w;
}

Efficiency LuaHost::efficiency(const Row& row, const Layer& layer, const Platform& platform) {
  Impl& im = *impl_;
  lua_State* L = im.L;
  lua_rawgeti(L, LUA_REGISTRYINDEX, im.efficiency_ref);
  push_layer(L, layer, row);
  lua_createtable(L, 0, 8);
  set_str(L, "name", platform.name);
  set_str(L, "kind", platform.kind);
  set_num(L, "peak", row.theoretical.peak_flops_per_s);
  set_num(L, "bandwidth", row.theoretical.bandwidth_bytes_per_s);
  if (const ComputeRoof* r = platform.roof_for(layer.dtype)) set_num(L, "derated_peak", r->derated_flops_per_s);
  set_num(L, "derated_bandwidth", platform.memory.front().derated_bandwidth_bytes_per_s);
  Impl::Failure f;
  std::string where = "efficiency model for layer '" + layer.name + "' on '" + platform.name + "'";
  if (!im.call(2, 1, f)) {
    std::vector<Note> notes;
    for (const auto& tl : f.traceback) notes.push_back(Note{{}, tl});
    throw ConfigError(layer.loc, where + ": " + f.message, notes);
  }
  Efficiency e;
  std::string why;
  int t = lua_gettop(L);
  if (!lua_istable(L, t)) why = std::string("must return {compute = ..., bandwidth = ...}, got a ") + luaL_typename(L, t);
  else
    for (auto [k, dst] : {std::pair<const char*, double*>{"compute", &e.compute}, {"bandwidth", &e.bandwidth}}) {
      double v = 1;
      if (!cost_field(L, t, k, false, v, why)) break;
      if (v <= 0 || v > 1) {
        why = std::string("'") + k + "' must be a fraction in (0, 1], got " + format_number(v);
        break;
      }
      *dst = v;
    }
  lua_settop(L, 1);
  if (!why.empty()) throw ConfigError(layer.loc, where + ": " + why);
  return e;
}

std::vector<double> LuaHost::metrics(const Row& row, const Layer& layer) {
  Impl& im = *impl_;
  lua_State* L = im.L;
  std::vector<double> out;
  for (size_t i = 0; i < im.metric_refs.size(); ++i) {
    lua_rawgeti(L, LUA_REGISTRYINDEX, im.metric_refs[i]);
    push_layer(L, layer, row);
    set_str(L, "platform", row.platform);
    set_num(L, "time_s", row.theoretical.time_s);
    set_num(L, "derated_time_s", row.derated.time_s);
    set_num(L, "attainable_flops_per_s", row.theoretical.attainable_flops_per_s);
    set_num(L, "derated_attainable_flops_per_s", row.derated.attainable_flops_per_s);
    set_num(L, "peak_flops_per_s", row.theoretical.peak_flops_per_s);
    set_num(L, "bandwidth_bytes_per_s", row.theoretical.bandwidth_bytes_per_s);
    set_str(L, "bound", bound_name(row.theoretical.bound));
    set_str(L, "derated_bound", bound_name(row.derated.bound));
    set_num(L, "efficiency_compute", row.efficiency.compute);
    set_num(L, "efficiency_bandwidth", row.efficiency.bandwidth);
    Impl::Failure f;
    std::string where = "metric '" + im.metric_names[i] + "' for layer '" + layer.name + "' on '" + row.platform + "'";
    if (!im.call(1, 1, f)) {
      std::vector<Note> notes;
      for (const auto& tl : f.traceback) notes.push_back(Note{{}, tl});
      throw ConfigError(layer.loc, where + ": " + f.message, notes);
    }
    int isnum = 0;
    double v = lua_tonumberx(L, -1, &isnum);
    std::string tn = luaL_typename(L, -1);
    lua_settop(L, 1);
    if (!isnum) throw ConfigError(layer.loc, where + ": must return a number, got a " + tn);
    if (!std::isfinite(v)) throw ConfigError(layer.loc, where + ": returned " + std::string(std::isnan(v) ? "NaN" : "infinity"));
    out.push_back(v);
  }
  return out;
}

void register_script_ops(OpRegistry& reg, const std::vector<ScriptOpInfo>& ops) {
  for (size_t i = 0; i < ops.size(); ++i) {
    const ScriptOpInfo& info = ops[i];
    OpDef d;
    d.name = info.name;
    d.summary = info.summary + " (" + info.script + ")";
    d.formula = info.formula;
    d.attrs = info.attrs;
    d.min_inputs = info.min_inputs;
    d.max_inputs = info.max_inputs;
    d.view = info.view;
    d.infer = [i, name = info.name](const OpArgs& a) {
      LuaHost* h = LuaHost::current();
      if (!h) throw ShapeError("custom operator '" + name + "' used without its script loaded");
      return h->infer(i, a);
    };
    d.work = [i, name = info.name](const OpArgs& a, const std::vector<Shape>& out) {
      LuaHost* h = LuaHost::current();
      if (!h) throw ShapeError("custom operator '" + name + "' used without its script loaded");
      return h->work(i, a, out);
    };
    reg.add(d);
  }
}

ScriptSetup setup_scripts(const Scenario& s) {
  ScriptSetup out;
  out.ops = builtin_ops();
  if (s.scripts.empty()) return out;
  {
    LuaHost schema(s.scripts, s.limits);  // runs the registrations once, on this thread
    out.infos = schema.ops();
  }
  for (const auto& info : out.infos)
    if (out.ops.find(info.name)) {
      const Script& first = s.scripts.front();
      throw ConfigError(first.loc, "script operator '" + info.name + "' (" + info.script + ") has the name of a built-in operator; pick another");
    }
  register_script_ops(out.ops, out.infos);
  std::vector<Script> scripts = s.scripts;
  ScriptLimits limits = s.limits;
  out.make_hooks = [scripts, limits]() -> std::unique_ptr<ScriptHooks> { return std::make_unique<LuaHost>(scripts, limits); };
  return out;
}

}  // namespace rsim
