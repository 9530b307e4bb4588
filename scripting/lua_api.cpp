// The `rsim` table scripts call (rsim.op, rsim.efficiency, rsim.metric, rsim.numel, rsim.cost,
// print, error, setmetatable, load): C functions whose C++ part runs in a CppSection (see
// lua_host.cpp, "How the sandbox holds").
#include "scripting/lua_host_detail.hpp"

namespace rsim::lua_detail {

// ---- C functions given to scripts

// Thrown inside a C++ section: becomes a Lua error at the script's line.
struct ScriptArgError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

template <class Body>
int run_section(lua_State* L, Body& body, char* msg, size_t cap) {
  CppSection section(L);
  try {
    return body();
  } catch (const std::exception& e) {
    std::snprintf(msg, cap, "%s", e.what());
  } catch (...) {
    std::snprintf(msg, cap, "internal error");
  }
  return -1;
}

// Runs `body` (C++ using raw, non-raising Lua calls and pushes) in a C++ section; its
// ScriptArgError becomes a Lua error once every C++ object of the body is gone.
template <class Body>
int guarded(lua_State* L, Body&& body) {
  char msg[1024];
  int n = run_section(L, body, msg, sizeof msg);
  if (n < 0) return luaL_error(L, "%s", msg);
  return n;
}

void raw_set(lua_State* L, int t, const char* k) {  // t[k] = top, raw; pops the value
  lua_pushstring(L, k);
  lua_insert(L, -2);
  lua_rawset(L, t);
}

int raw_get(lua_State* L, int t, const char* k) {  // pushes t[k], raw
  lua_pushstring(L, k);
  return lua_rawget(L, t);
}

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
    case AttrType::Choice: lua_pushlstring(L, v.s.data(), v.s.size()); break;
    case AttrType::Padding:
      if (!v.s.empty()) {
        lua_pushlstring(L, v.s.data(), v.s.size());
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

// Pushes the operator's reusable attribute table, refreshed with `a` (written raw).
void push_attrs_reused(lua_State* L, int ref, const std::vector<AttrSpec>& specs, const Attrs& a) {
  lua_rawgeti(L, LUA_REGISTRYINDEX, ref);
  int t = lua_gettop(L);
  for (const auto& spec : specs) {
    const AttrValue& v = a.at(spec.name);
    bool list = v.set && (spec.type == AttrType::Pair || spec.type == AttrType::Ints || (spec.type == AttrType::Padding && v.s.empty()));
    if (list) {
      if (raw_get(L, t, spec.name.c_str()) != LUA_TTABLE) {
        lua_pop(L, 1);
        lua_createtable(L, static_cast<int>(v.ints.size()), 0);
        lua_pushvalue(L, -1);
        raw_set(L, t, spec.name.c_str());
      }
      fill_list(L, lua_gettop(L), v.ints.size(), [&](size_t k) { return static_cast<lua_Integer>(v.ints[k]); });
      lua_pop(L, 1);
    } else {
      push_attr(L, spec, v);
      raw_set(L, t, spec.name.c_str());
    }
  }
}

void push_attrs(lua_State* L, const std::vector<AttrSpec>& specs, const Attrs& a) {
  lua_createtable(L, 0, static_cast<int>(specs.size()));
  int t = lua_gettop(L);
  for (const auto& spec : specs) {
    push_attr(L, spec, a.at(spec.name));
    raw_set(L, t, spec.name.c_str());
  }
}

void set_num(lua_State* L, const char* k, double v) {
  lua_pushnumber(L, v);
  lua_setfield(L, -2, k);  // a fresh table: no metamethods
}
void set_str(lua_State* L, const char* k, const std::string& v) {
  lua_pushlstring(L, v.data(), v.size());
  lua_setfield(L, -2, k);
}
void set_cstr(lua_State* L, const char* k, const char* v) {
  lua_pushstring(L, v);
  lua_setfield(L, -2, k);
}

// ---- the rsim table

// C++ work done for a script is charged like instructions: about 1 per 5 ns.
constexpr double kCostCall = 2000, kOpCall = 2000, kSmallCall = 20;

int l_numel(lua_State* L) {
  charge(L, kSmallCall);
  return guarded(L, [&] {
    Shape s;
    std::string why;
    if (!lua_value_to_shape(L, 1, s, why)) throw ScriptArgError("rsim.numel: the shape " + why);
    lua_pushnumber(L, elements(s));
    return 1;
  });
}

int l_print(lua_State* L) {
  charge(L, kSmallCall);
  int n = lua_gettop(L);
  luaL_checkstack(L, n, "too many values to print");
  for (int i = 1; i <= n; ++i) luaL_tolstring(L, i, nullptr);  // may run __tostring: no C++ object is live here
  return guarded(L, [&] {
    std::string line = "lua: ";
    for (int i = 1; i <= n; ++i) {
      size_t len = 0;
      const char* s = lua_tolstring(L, n + i, &len);  // strings now: no conversion
      if (i > 1) line += '\t';
      line.append(s, std::min<size_t>(len, 4096));
    }
    std::cerr << line << "\n";
    return 0;
  });
}

// error(message [, level]), charged: raising and catching cost more than an instruction
int l_error(lua_State* L) {
  charge(L, 200);
  int level = static_cast<int>(luaL_optinteger(L, 2, 1));
  lua_settop(L, 1);
  if (lua_type(L, 1) == LUA_TSTRING && level > 0) {
    luaL_where(L, level);  // the position of the function that called error
    lua_pushvalue(L, 1);
    lua_concat(L, 2);
  }
  return lua_error(L);
}

// setmetatable(t, mt) without finalizers: Lua runs __gc with hooks off, outside any budget
int l_setmetatable(lua_State* L) {
  if (lua_type(L, 2) == LUA_TTABLE) {
    lua_pushliteral(L, "__gc");
    if (lua_rawget(L, 2) != LUA_TNIL) return luaL_error(L, "setmetatable: finalizers (__gc) are not available in rsim's sandbox");
    lua_pop(L, 1);
  }
  lua_pushvalue(L, lua_upvalueindex(1));
  lua_insert(L, 1);
  lua_call(L, lua_gettop(L) - 1, LUA_MULTRET);
  return lua_gettop(L);
}

// load(chunk [, name [, mode [, env]]]) that accepts only text: no precompiled bytecode
int l_load_text(lua_State* L) {
  size_t len;
  const char* s = luaL_checklstring(L, 1, &len);
  const char* name = luaL_optstring(L, 2, "=(load)");
  int has_env = !lua_isnone(L, 4);
  if (luaL_loadbufferx(L, s, len, name, "t") != LUA_OK) {
    if (impl_of(L)->dead != Impl::Dead::No) raise_stop(L);
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
  charge(L, kCostCall);
  return guarded(L, [&] {
    const char* name = lua_tostring(L, lua_upvalueindex(1));
    const OpDef* op = builtin_ops().find(name);
    std::string where = std::string("rsim.cost.") + name;
    if (lua_type(L, 1) != LUA_TTABLE) throw ScriptArgError(where + " needs a table {input = shape, attribute = value, ...}");
    if (!lua_checkstack(L, 8)) throw ScriptArgError(where + ": no stack space");
    std::vector<Shape> in;
    std::string why;
    DType dt = DType::fp32;
    CNode attrs;
    attrs.kind = CNode::Kind::Map;
    bool have_input = false, have_inputs = false;
    std::vector<Shape> inputs_list;
    Shape input_one;
    lua_pushnil(L);
    while (lua_next(L, 1)) {  // raw iteration
      if (lua_type(L, -2) == LUA_TSTRING) {
        std::string k = lua_tostring(L, -2);
        int v = lua_gettop(L);
        if (k == "inputs") {
          have_inputs = true;
          if (lua_type(L, v) != LUA_TTABLE || lua_getmetatable(L, v)) throw ScriptArgError(where + ": 'inputs' must be a plain list of shapes");
          lua_Unsigned n = lua_rawlen(L, v);
          if (n > 64) throw ScriptArgError(where + ": 'inputs' has " + std::to_string(n) + " shapes (at most 64)");
          for (lua_Unsigned i = 1; i <= n; ++i) {
            lua_rawgeti(L, v, static_cast<lua_Integer>(i));
            Shape s;
            if (!lua_value_to_shape(L, -1, s, why)) throw ScriptArgError(where + ": inputs[" + std::to_string(i) + "] " + why);
            lua_pop(L, 1);
            inputs_list.push_back(s);
          }
        } else if (k == "input") {
          have_input = true;
          if (!lua_value_to_shape(L, v, input_one, why)) throw ScriptArgError(where + ": 'input' " + why);
        } else if (k == "dtype") {
          if (lua_type(L, v) != LUA_TSTRING) throw ScriptArgError(where + ": 'dtype' must be a string such as \"fp16\"");
          std::string t = lua_tostring(L, v);
          auto parsed = parse_dtype(t);
          if (!parsed) throw ScriptArgError(where + ": unknown dtype '" + t + "'");
          dt = *parsed;
        } else {
          CNode node;
          if (!lua_value_to_node(L, v, node, why)) throw ScriptArgError(where + ": '" + k + "' " + why);
          attrs.entries.push_back(CEntry{k, {}, std::move(node)});
        }
      }
      lua_pop(L, 1);
    }
    in = inputs_list;
    if (have_input) in.push_back(input_one);
    if (!have_input && !have_inputs) throw ScriptArgError(where + " needs 'input' (a shape) or 'inputs' (a list of shapes)");
    // lua_next's order is the table's: sort so that messages do not depend on it
    std::sort(attrs.entries.begin(), attrs.entries.end(), [](const CEntry& a, const CEntry& b) { return a.key < b.key; });
    Diags d;
    for (const auto& e : attrs.entries) {
      bool known = false;
      for (const auto& a : op->attrs) known = known || a.name == e.key;
      if (!known) d.error({}, where + ": unknown attribute '" + e.key + "'");
    }
    Attrs a = read_attrs(*op, attrs, d, where);
    if (!d.empty()) throw ScriptArgError(d.list().front().message);
    OpArgs args{a, in, dt};
    std::vector<Shape> out;
    OpWork w;
    try {
      out = op->infer(args);
      if (op->work) w = op->work(args, out);
    } catch (const ShapeError& e) {
      throw ScriptArgError(where + ": " + e.what());
    }
    lua_createtable(L, 0, 6);
    set_num(L, "macs", w.macs);
    set_num(L, "flops", w.other_flops);
    set_num(L, "params", w.params);
    set_num(L, "weights", w.weight_elems);
    push_shapes(L, out);
    lua_setfield(L, -2, "outputs");
    return 1;
  });
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

// An attribute's default as YAML-like text ("3", "[1, 2]", "same"); throws on values that are not.
std::string default_text(lua_State* L, int idx, const std::string& where) {
  CNode n;
  std::string why;
  if (!lua_value_to_node(L, idx, n, why)) throw ScriptArgError(where + " " + why);
  if (n.is_scalar()) return n.scalar;
  std::string s = "[";
  for (size_t i = 0; i < n.items.size(); ++i) {
    if (!n.items[i].is_scalar()) throw ScriptArgError(where + " must be a value or a list of values");
    s += (i > 0 ? ", " : "") + n.items[i].scalar;
  }
  return s + "]";
}

// t[k] as a string ("" when absent or not a string), raw.
std::string opt_string(lua_State* L, int t, const char* k) {
  raw_get(L, t, k);
  std::string s;
  if (lua_type(L, -1) == LUA_TSTRING) {
    size_t len = 0;
    const char* p = lua_tolstring(L, -1, &len);
    s.assign(p, len);
  }
  lua_pop(L, 1);
  return s;
}

bool valid_script_name(const std::string& s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; });
}

// rsim.op{name=..., attrs=..., inputs=..., infer=..., cost=..., summary=..., formula=..., view=...}
int l_op(lua_State* L) {
  charge(L, kOpCall);
  return guarded(L, [&] {
    Impl* im = impl_of(L);
    if (!im->loading) throw ScriptArgError("rsim.op must be called while the script loads, not from inside a rule");
    if (lua_type(L, 1) != LUA_TTABLE) throw ScriptArgError("rsim.op needs a table {name = ..., cost = function ... end, ...}");
    if (!lua_checkstack(L, 10)) throw ScriptArgError("rsim.op: no stack space");
    lua_settop(L, 1);
    // a misspelt key would silently drop a rule: reject it with a suggestion
    static const std::vector<std::string> keys = {"name", "summary", "formula", "inputs", "attrs", "infer", "cost", "view"};
    lua_pushnil(L);
    while (lua_next(L, 1)) {
      lua_pop(L, 1);
      std::string k = lua_type(L, -1) == LUA_TSTRING ? lua_tostring(L, -1) : "?";
      if (std::find(keys.begin(), keys.end(), k) == keys.end()) {
        std::string hint = did_you_mean(k, keys);
        throw ScriptArgError("rsim.op: unknown key '" + k + "'" +
                             (hint.empty() ? " (keys: name, summary, formula, inputs, attrs, infer, cost, view)" : "; " + hint));
      }
    }
    ScriptOpInfo info;
    info.name = opt_string(L, 1, "name");
    if (info.name.empty()) throw ScriptArgError("rsim.op needs a 'name'");
    if (!valid_script_name(info.name)) throw ScriptArgError("rsim.op: name '" + printable(info.name) + "' may use letters, digits and _");
    for (const auto& o : im->ops)
      if (o.name == info.name) throw ScriptArgError("rsim.op: '" + info.name + "' is registered twice");
    info.summary = opt_string(L, 1, "summary");
    if (info.summary.empty()) info.summary = "operator from a script";
    info.formula = opt_string(L, 1, "formula");
    if (info.formula.empty()) info.formula = "as computed by the script's cost function";
    lua_Debug ar;
    if (lua_getstack(L, 1, &ar) && lua_getinfo(L, "Sl", &ar)) info.script = std::string(ar.short_src) + ":" + std::to_string(ar.currentline);
    raw_get(L, 1, "view");
    info.view = lua_toboolean(L, -1);
    lua_pop(L, 1);
    auto count = [&](int idx, const char* what, int def) -> int {
      int t = lua_type(L, idx);
      if (t == LUA_TNIL) return def;
      int isint = 0;
      lua_Integer v = lua_tointegerx(L, idx, &isint);
      if (t != LUA_TNUMBER || !isint || v < 0 || v > 64)
        throw ScriptArgError("rsim.op '" + info.name + "': " + what + " must be a whole number from 0 to 64");
      return static_cast<int>(v);
    };
    int it = raw_get(L, 1, "inputs");
    if (it == LUA_TNUMBER) info.min_inputs = info.max_inputs = count(-1, "inputs", 1);
    else if (it == LUA_TTABLE) {
      int t = lua_gettop(L);
      raw_get(L, t, "min");
      info.min_inputs = count(-1, "inputs.min", 1);
      raw_get(L, t, "max");
      info.max_inputs = count(-1, "inputs.max", -1);
      lua_pop(L, 2);
    } else if (it != LUA_TNIL)
      throw ScriptArgError("rsim.op '" + info.name + "': inputs is a count or {min = A, max = B}");
    lua_pop(L, 1);
    if (info.min_inputs < 0 || (info.max_inputs >= 0 && info.max_inputs < info.min_inputs) || info.min_inputs > 64)
      throw ScriptArgError("rsim.op '" + info.name + "': bad input count");
    if (raw_get(L, 1, "attrs") == LUA_TTABLE) {
      int at = lua_gettop(L);
      lua_pushnil(L);
      while (lua_next(L, at)) {
        if (lua_type(L, -2) != LUA_TSTRING || lua_type(L, -1) != LUA_TTABLE)
          throw ScriptArgError("rsim.op '" + info.name + "': attrs maps names to {type = ..., default = ..., doc = ...}");
        AttrSpec spec;
        spec.name = lua_tostring(L, -2);
        if (!valid_script_name(spec.name))
          throw ScriptArgError("rsim.op '" + info.name + "': attribute name '" + printable(spec.name) + "' may use letters, digits and _");
        int st = lua_gettop(L);
        std::string type = opt_string(L, st, "type");
        bool ok;
        spec.type = attr_type(type.empty() ? "number" : type, ok);
        if (!ok)
          throw ScriptArgError("rsim.op '" + info.name + "': attribute '" + spec.name + "' has unknown type '" + printable(type) +
                               "' (int, number, bool, string, choice, pair, ints, padding)");
        spec.doc = opt_string(L, st, "doc");
        if (raw_get(L, st, "default") != LUA_TNIL)
          spec.def = default_text(L, lua_gettop(L), "rsim.op '" + info.name + "': the default of '" + spec.name + "'");
        lua_pop(L, 1);
        raw_get(L, st, "optional");
        if (lua_toboolean(L, -1) && spec.def.empty()) spec.def = "~";
        lua_pop(L, 1);
        if (raw_get(L, st, "choices") == LUA_TTABLE) {
          int ct = lua_gettop(L);
          lua_Unsigned n = std::min<lua_Unsigned>(lua_rawlen(L, ct), 1000);
          for (lua_Unsigned i = 1; i <= n; ++i) {
            if (lua_rawgeti(L, ct, static_cast<lua_Integer>(i)) == LUA_TSTRING) spec.choices.push_back(lua_tostring(L, -1));
            lua_pop(L, 1);
          }
        }
        lua_pop(L, 1);
        if (spec.type == AttrType::Choice && spec.choices.empty())
          throw ScriptArgError("rsim.op '" + info.name + "': choice attribute '" + spec.name + "' needs choices = {...}");
        info.attrs.push_back(spec);
        lua_pop(L, 1);
      }
      // a stable order: by name (Lua tables have none)
      std::sort(info.attrs.begin(), info.attrs.end(), [](const AttrSpec& a, const AttrSpec& b) { return a.name < b.name; });
    }
    lua_pop(L, 1);
    int ti = raw_get(L, 1, "infer");
    int tc = raw_get(L, 1, "cost");
    lua_pop(L, 2);
    if (ti != LUA_TNIL && ti != LUA_TFUNCTION) throw ScriptArgError("rsim.op '" + info.name + "': infer must be a function");
    if (tc != LUA_TFUNCTION && (tc != LUA_TNIL || !info.view))
      throw ScriptArgError("rsim.op '" + info.name + "': cost must be a function (only a view may leave it out)");
    Impl::Refs refs;
    if (ti == LUA_TFUNCTION) {
      raw_get(L, 1, "infer");
      refs.infer = luaL_ref(L, LUA_REGISTRYINDEX);
    }
    if (tc == LUA_TFUNCTION) {
      raw_get(L, 1, "cost");
      refs.cost = luaL_ref(L, LUA_REGISTRYINDEX);
    }
    im->ops.push_back(info);
    im->op_refs.push_back(refs);
    return 0;
  });
}

int l_efficiency(lua_State* L) {
  charge(L, kSmallCall);
  return guarded(L, [&] {
    Impl* im = impl_of(L);
    if (!im->loading) throw ScriptArgError("rsim.efficiency must be called while the script loads");
    if (lua_type(L, 1) != LUA_TFUNCTION) throw ScriptArgError("rsim.efficiency needs a function(layer, platform)");
    if (im->efficiency_ref != LUA_NOREF) throw ScriptArgError("rsim.efficiency is set twice; combine the models in one function");
    lua_pushvalue(L, 1);
    im->efficiency_ref = luaL_ref(L, LUA_REGISTRYINDEX);
    return 0;
  });
}

int l_metric(lua_State* L) {
  charge(L, kOpCall);
  return guarded(L, [&] {
    Impl* im = impl_of(L);
    if (!im->loading) throw ScriptArgError("rsim.metric must be called while the script loads");
    if (lua_type(L, 1) != LUA_TSTRING || lua_type(L, 2) != LUA_TFUNCTION) throw ScriptArgError("rsim.metric needs a name and a function(row)");
    std::string name = lua_tostring(L, 1);
    if (name.empty()) throw ScriptArgError("rsim.metric needs a name");
    if (!valid_script_name(name)) throw ScriptArgError("rsim.metric: name '" + printable(name) + "' may use letters, digits and _");
    for (const auto& m : im->metric_names)
      if (m == name) throw ScriptArgError("rsim.metric '" + name + "' is defined twice");
    for (const auto& c : results_columns())
      if (c == name) throw ScriptArgError("rsim.metric '" + name + "' would hide the built-in column of that name");
    lua_pushvalue(L, 2);
    im->metric_refs.push_back(luaL_ref(L, LUA_REGISTRYINDEX));
    im->metric_names.push_back(name);
    return 0;
  });
}

}  // namespace rsim::lua_detail
