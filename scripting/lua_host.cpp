#include "scripting/lua_host.hpp"
#include "scripting/lua_host_detail.hpp"

extern "C" {
#include <lauxlib.h>
#include <lua.h>
#include <lualib.h>
}

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <utility>

#include "engine/model/config.hpp"
#include "engine/eval/evaluate.hpp"
#include "engine/graph/graph.hpp"
#include "engine/output/output.hpp"
#include "engine/hardware/platform.hpp"
#include "engine/model/names.hpp"
#include "scripting/lua_value.hpp"

// How the sandbox holds (see README.md, "The sandbox"):
// - Every call into Lua goes through one protected trampoline that also pushes the arguments, so
//   an allocation failure or a metamethod error while pushing is a Lua error, not a panic.
// - Results are read after the call with raw, non-raising API calls only (lua_rawget,
//   lua_rawlen, lua_tonumberx, ...): no metamethod of a script runs outside the sandbox.
// - C functions given to scripts run their C++ part in a `CppSection`: allocations cannot fail
//   and no collection (no finalizer) runs there, so no Lua error can cross a C++ frame with live
//   destructors; a C++ failure becomes a Lua error after that frame is gone.
// - The instruction budget and the memory cap are fatal: the state is marked dead, the count
//   hook then fires on every instruction and raises again, and every allocation fails, so
//   pcall/xpcall/finalizers cannot catch and continue. The first location is kept for the message.
// - Allocations and the C functions that loop inside C (patterns, string.rep, load, tonumber,
//   utf8.*, table.insert/remove/sort/concat/unpack/move) are charged against the budget.
// - At close the state is dead: finalizers do not run.

namespace rsim {
using namespace lua_detail;

namespace {

// A syntax error in a script's first statement (its first line that is not blank or a `--`
// comment) is shown only when that statement opens as a plugin does — `rsim.…`, `local`,
// `function`, a control keyword; anything else there (a key file named x.lua) is not a Lua
// script, and neither its line nor the token Lua's message names is shown. The statement's line,
// and whether it opens so.
std::pair<int, bool> first_statement(const std::string& code) {
  const FirstLine l = first_text_line(code, [](const std::string& t) { return t.rfind("--", 0) == 0; });
  if (l.number == 0) return {1, true};
  size_t e = 0;
  while (e < l.text.size() && (std::isalnum(static_cast<unsigned char>(l.text[e])) || l.text[e] == '_')) ++e;
  const std::string word = l.text.substr(0, e);
  for (const char* k : {"rsim", "local", "function", "return", "if", "for", "while", "do", "repeat"})
    if (word == k) return {l.number, true};
  return {l.number, false};
}

thread_local LuaHost* tl_current = nullptr;
}  // namespace


namespace {

void* limited_alloc(void* ud, void* ptr, size_t osize, size_t nsize) {
  auto* im = static_cast<Impl*>(ud);
  size_t old = ptr ? osize : 0;
  if (nsize == 0) {
    im->mem_used -= old;
    std::free(ptr);
    return nullptr;
  }
  if (nsize > old) {
    size_t grow = nsize - old;
    if (im->grace > 0) {
      if (im->mem_used + grow > im->mem_limit + kGraceBytes) return nullptr;  // not reached: sections push little
    } else {
      if (im->dead != Impl::Dead::No) return nullptr;
      if (im->mem_used + grow > im->mem_limit) {
        // The first refusal lets Lua collect (an emergency collection) and ask again; a
        // second one in a row is fatal.
        if (im->refused) im->die(Impl::Dead::Memory);
        im->refused = true;
        return nullptr;
      }
      im->refused = false;
      im->instr_used += static_cast<long long>(grow / 16);  // filling fresh memory is work too
      if (im->instr_used > im->instr_limit) {
        im->die(Impl::Dead::Budget);
        return nullptr;
      }
    }
  }
  void* p = std::realloc(ptr, nsize);
  if (p) im->mem_used = im->mem_used - old + nsize;
  return p;
}

}  // namespace

namespace lua_detail {

[[noreturn]] void raise_stop(lua_State* L) {
  lua_rawgeti(L, LUA_REGISTRYINDEX, impl_of(L)->stop_ref);
  lua_error(L);
  std::abort();  // lua_error does not return
}

void count_hook(lua_State* L, lua_Debug*) {
  Impl* im = impl_of(L);
  if (im->dead == Impl::Dead::No) {
    im->instr_used += kHookStep;
    if (im->instr_used <= im->instr_limit) return;
    im->die(Impl::Dead::Budget);
  }
  raise_stop(L);
}

// Adds `work` (in instructions) to the budget of the running call; raises when it is spent.
void charge(lua_State* L, double work) {
  Impl* im = impl_of(L);
  if (im->dead == Impl::Dead::No) {
    double left = static_cast<double>(im->instr_limit - im->instr_used);
    if (!(work <= left)) {
      im->instr_used = im->instr_limit + 1;
      im->die(Impl::Dead::Budget);
    } else {
      im->instr_used += static_cast<long long>(work);
      return;
    }
  }
  raise_stop(L);
}

}  // namespace lua_detail

namespace {

// ---- library functions that loop inside C, wrapped to charge their work first

enum class Work { Find, Match, Gmatch, Gsub, Rep, Load, ToNumber, StringLinear, TableShift, TableSort, TableRange, TableLen, Error };

size_t str_len_at(lua_State* L, int i) {
  if (lua_type(L, i) == LUA_TSTRING) return lua_rawlen(L, i);
  return lua_type(L, i) == LUA_TNUMBER ? 64 : 0;  // a number converts to a short string
}

double table_len_at(lua_State* L, int i) { return lua_type(L, i) == LUA_TTABLE ? static_cast<double>(lua_rawlen(L, i)) : 0.0; }

double work_of(lua_State* L, Work kind) {
  Impl* im = impl_of(L);
  double left = static_cast<double>(im->instr_limit - im->instr_used);
  switch (kind) {
    case Work::Find:
    case Work::Match:
    case Work::Gmatch:
    case Work::Gsub: {
      if (lua_type(L, 1) != LUA_TSTRING || lua_type(L, 2) != LUA_TSTRING) return static_cast<double>(str_len_at(L, 1) + str_len_at(L, 2));
      size_t n = 0, m = 0;
      const char* s = lua_tolstring(L, 1, &n);
      const char* p = lua_tolstring(L, 2, &m);
      if (kind == Work::Find && lua_toboolean(L, 4)) return static_cast<double>(n) * (1.0 + static_cast<double>(m) / 64.0) / 16.0;  // plain
      if (kind == Work::Gmatch && m > 0 && p[0] == '^') return 1 + lua_pattern_work(s, n, p + 1, m - 1, left);  // no anchor in gmatch
      return lua_pattern_work(s, n, p, m, left);
    }
    case Work::Rep: {
      int isnum = 0;
      lua_Integer count = lua_tointegerx(L, 2, &isnum);
      return isnum && count > 0 ? static_cast<double>(count) : 0.0;  // one copy per count; the output is charged as it is allocated
    }
    case Work::Load:
    case Work::ToNumber: return static_cast<double>(str_len_at(L, 1));
    case Work::StringLinear: return static_cast<double>(str_len_at(L, 1)) / 4.0;
    case Work::TableShift: return lua_gettop(L) >= (lua_type(L, 2) == LUA_TNONE ? 1 : 2) ? 4 * table_len_at(L, 1) : 0.0;
    case Work::TableSort: {
      double n = table_len_at(L, 1);
      return n * std::log2(n + 2) * 4;
    }
    case Work::TableRange: {  // unpack(t, i, j), move(a1, f, e, t)
      int isnum_i = 0, isnum_j = 0;
      lua_Integer i = lua_tointegerx(L, 2, &isnum_i), j = lua_tointegerx(L, 3, &isnum_j);
      if (isnum_i && isnum_j) return 4 * std::max(0.0, static_cast<double>(j) - static_cast<double>(i));
      return 4 * table_len_at(L, 1);
    }
    case Work::TableLen: return 4 * table_len_at(L, 1);
    case Work::Error: return 200;  // raising and catching: a longjmp, a message, a traceback
  }
  return 0;
}

int l_charged(lua_State* L) {
  auto kind = static_cast<Work>(lua_tointeger(L, lua_upvalueindex(2)));
  charge(L, work_of(L, kind));
  lua_pushvalue(L, lua_upvalueindex(1));
  lua_insert(L, 1);
  lua_call(L, lua_gettop(L) - 1, LUA_MULTRET);
  return lua_gettop(L);
}

// Replaces table[name] (a C function) by a charged wrapper; expects the table on top.
void wrap(lua_State* L, const char* name, Work kind) {
  lua_getfield(L, -1, name);
  lua_pushinteger(L, static_cast<lua_Integer>(kind));
  lua_pushcclosure(L, l_charged, 2);
  lua_setfield(L, -2, name);
}

// ---- results, read raw after the call

// A cost field: absent → unchanged (or an error when required), else a finite number ≥ 0.
bool cost_field(Impl& im, int t, Key k, bool required, double& out, std::string& why) {
  int type = im.raw_field(t, k);
  const char* name = kKeyNames[k];
  if (type == LUA_TNIL) {
    lua_pop(im.L, 1);
    if (required) {
      why = std::string("the cost function's result has no '") + name + "'";
      return false;
    }
    return true;
  }
  if (type != LUA_TNUMBER) {
    why = std::string("'") + name + "' must be a number, got a " + lua_typename(im.L, type);
    lua_pop(im.L, 1);
    return false;
  }
  double v = lua_tonumber(im.L, -1);
  lua_pop(im.L, 1);
  if (std::isnan(v)) why = std::string("'") + name + "' is NaN";
  else if (std::isinf(v)) why = std::string("'") + name + "' is infinite";
  else if (v < 0) why = std::string("'") + name + "' is negative (" + format_number(v) + ")";
  else if (v > 1e30) why = std::string("'") + name + "' is " + format_number(v) + ", beyond any real layer (at most 1e30)";
  else {
    out = v;
    return true;
  }
  return false;
}

bool byte_list(Impl& im, int t, Key k, size_t expect, std::vector<double>& out, std::string& why) {
  lua_State* L = im.L;
  const char* name = kKeyNames[k];
  int type = im.raw_field(t, k);
  if (type == LUA_TNIL) {
    lua_pop(L, 1);
    return true;
  }
  int lt = lua_gettop(L);
  bool meta = type == LUA_TTABLE && lua_getmetatable(L, lt);
  if (meta) lua_pop(L, 1);
  if (type != LUA_TTABLE || meta) {
    why = std::string("'") + name + (meta ? "' has a metatable; return a plain list" : "' must be a list with one byte count per tensor");
    lua_pop(L, 1);
    return false;
  }
  size_t n = static_cast<size_t>(lua_rawlen(L, lt));
  if (n != expect) {
    why = std::string("'") + name + "' has " + std::to_string(n) + " entries for " + std::to_string(expect) + " tensors";
    lua_pop(L, 1);
    return false;
  }
  for (size_t i = 1; i <= n; ++i) {
    lua_rawgeti(L, lt, static_cast<lua_Integer>(i));
    int isnum = 0;
    double v = lua_tonumberx(L, -1, &isnum);
    lua_pop(L, 1);
    if (!isnum || !std::isfinite(v) || v < 0 || v > 1e30) {
      why = std::string("'") + name + "[" + std::to_string(i) + "]' must be a finite number from 0 to 1e30";
      lua_pop(L, 1);
      return false;
    }
    out.push_back(v);
  }
  lua_pop(L, 1);
  return true;
}

bool plain_table(lua_State* L, int t) {
  if (lua_type(L, t) != LUA_TTABLE) return false;
  if (!lua_getmetatable(L, t)) return true;
  lua_pop(L, 1);
  return false;
}

// After a call: room to read the results raw, with allocations held off.
class Reading {
 public:
  explicit Reading(lua_State* L) : section_(L) { ok_ = lua_checkstack(L, 2 * kLuaMaxDepth + 16) != 0; }
  bool ok() const { return ok_; }

 private:
  CppSection section_;
  bool ok_ = false;
};

void push_layer(lua_State* L, const Layer& layer, const Row& row) {
  lua_createtable(L, 0, 16);
  set_str(L, "name", layer.name);
  set_str(L, "op", row.op);
  set_str(L, "network", row.network);
  set_cstr(L, "dtype", dtype_name(layer.dtype));
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
  ++im.grace;  // setting up cannot fail on the cap (and is not protected)
  im.L = lua_newstate(limited_alloc, &im);
  if (!im.L) throw ConfigError(SourceLoc{}, "cannot create a Lua state");
  lua_State* L = im.L;
  *static_cast<Impl**>(lua_getextraspace(L)) = &im;
  lua_sethook(L, count_hook, LUA_MASKCOUNT, kHookStep);
  // Generational collection: each C++ section stops the collector and restarts it, and a restart
  // leaves the next allocation to run a collection step. An incremental step walks the whole heap
  // a piece at a time (a rule that returns a table paid one per call: 0.18 M calls/s); a young
  // collection looks at what the call itself made.
  lua_gc(L, LUA_GCGEN, 0, 0);
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
  lua_pushinteger(L, static_cast<lua_Integer>(Work::Load));
  lua_pushcclosure(L, l_charged, 2);
  lua_setglobal(L, "load");
  lua_pushcfunction(L, l_print);
  lua_setglobal(L, "print");
  lua_pushglobaltable(L);
  wrap(L, "tonumber", Work::ToNumber);
  for (const char* f : {"pcall", "xpcall"}) wrap(L, f, Work::Error);
  lua_pushcfunction(L, l_error);
  lua_setfield(L, -2, "error");
  lua_getfield(L, -1, "setmetatable");
  lua_pushcclosure(L, l_setmetatable, 1);
  lua_setfield(L, -2, "setmetatable");
  lua_pop(L, 1);
  lua_getglobal(L, "string");
  lua_pushnil(L);
  lua_setfield(L, -2, "dump");
  wrap(L, "find", Work::Find);
  wrap(L, "match", Work::Match);
  wrap(L, "gmatch", Work::Gmatch);
  wrap(L, "gsub", Work::Gsub);
  wrap(L, "rep", Work::Rep);
  lua_pop(L, 1);
  lua_getglobal(L, "utf8");
  for (const char* f : {"len", "codepoint", "offset"}) wrap(L, f, Work::StringLinear);
  lua_pop(L, 1);
  lua_getglobal(L, "table");
  wrap(L, "insert", Work::TableShift);
  wrap(L, "remove", Work::TableShift);
  wrap(L, "sort", Work::TableSort);
  wrap(L, "concat", Work::TableLen);
  wrap(L, "unpack", Work::TableRange);
  wrap(L, "move", Work::TableRange);
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
  for (int k = 0; k < K_count; ++k) {
    lua_pushstring(L, kKeyNames[k]);
    im.key_ref[k] = luaL_ref(L, LUA_REGISTRYINDEX);
  }
  lua_pushliteral(L, "script stopped");
  im.stop_ref = luaL_ref(L, LUA_REGISTRYINDEX);
  lua_newtable(L);
  im.in_ref = luaL_ref(L, LUA_REGISTRYINDEX);
  lua_newtable(L);
  im.out_ref = luaL_ref(L, LUA_REGISTRYINDEX);
  --im.grace;

  for (const Script& s : scripts) {
    // a script that is not text, or whose first statement does not parse, is not shown: not its
    // lines, not the token Lua's message names (a key file named x.lua)
    if (!quotable_text(s.code))
      throw ConfigError(SourceLoc{SourceFile::from_text(s.name, ""), 0, 0}, "not a Lua script: it is not UTF-8 text (a NUL byte, or binary data on its first line; its content is not shown)",
                        {Note{s.loc, "script loaded here"}});
    im.files.push_back(SourceFile::from_text(s.name, s.code));
    int rc = luaL_loadbufferx(L, s.code.data(), s.code.size(), ("@" + s.name).c_str(), "t");  // protected: returns, never raises
    if (rc != LUA_OK) {
      if (im.dead != Impl::Dead::No) throw ConfigError(s.loc, im.fatal_text());
      std::string msg = lua_type(L, -1) == LUA_TSTRING ? lua_tostring(L, -1) : "syntax error";
      lua_settop(L, 1);
      SourceLoc at = im.locate(msg);
      // (an inline `lua:` block is the scenario's own text, already shown as YAML: not judged)
      const bool plugin_file = s.name.size() > 4 && s.name.compare(s.name.size() - 4, 4, ".lua") == 0;
      if (const auto [first, plugin_like] = first_statement(s.code); plugin_file && at.known() && at.line <= first && !plugin_like)
        throw ConfigError(SourceLoc{SourceFile::from_text(s.name, ""), at.line, 0},
                          "not a Lua script: its first statement does not parse (its content is not shown)", {Note{s.loc, "script loaded here"}});
      std::string text = at.known() ? msg.substr(msg.find(':', s.name.size() + 1) + 2) : msg;
      throw ConfigError(at.known() ? at : s.loc, "Lua syntax error: " + text, {Note{s.loc, "script loaded here"}});
    }
    int chunk;
    {
      CppSection section(L);
      chunk = luaL_ref(L, LUA_REGISTRYINDEX);
    }
    Impl::Failure f;
    bool ok = im.call(chunk, 0, f, [](lua_State*) { return 0; });
    if (im.dead == Impl::Dead::No) luaL_unref(L, LUA_REGISTRYINDEX, chunk);
    if (!ok) {
      SourceLoc at = im.locate(f.message);
      std::vector<Note> notes;
      for (const auto& t : f.traceback) notes.push_back(Note{{}, t});
      notes.push_back(Note{s.loc, "script loaded here"});
      std::string text = at.known() ? f.message.substr(f.message.find(':', at.file->path.size() + 1) + 2) : f.message;
      throw ConfigError(at.known() ? at : s.loc, text, notes);
    }
  }
  im.loading = false;
  {
    CppSection section(L);
    for (size_t i = 0; i < im.ops.size(); ++i) {
      lua_newtable(L);
      im.attrs_ref.push_back(luaL_ref(L, LUA_REGISTRYINDEX));
    }
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
  int ref = im.op_refs[op].infer;
  if (ref == LUA_NOREF) {
    if (args.in.empty()) throw ShapeError("custom operator '" + info.name + "' has no infer function and no input to copy the shape of");
    return {args.in[0]};  // default: the shape of the first input
  }
  for (const auto& spec : info.attrs) (void)args.attrs.at(spec.name);  // throws here, not inside Lua
  Impl::Failure f;
  bool ok = im.call(ref, 1, f, [&](lua_State* S) {
    push_shapes_reused(S, im.in_ref, args.in);
    push_attrs_reused(S, im.attrs_ref[op], info.attrs, args.attrs);
    lua_pushstring(S, dtype_name(args.dtype));
    return 3;
  });
  if (!ok) throw ShapeError(f.message, f.traceback);
  std::vector<Shape> out;
  std::string why;
  {
    Reading rd(L);
    int t = lua_gettop(L);
    if (!rd.ok()) why = "infer's result cannot be read (no stack space)";
    else if (lua_type(L, t) != LUA_TTABLE) why = std::string("infer must return a list of output shapes, got a ") + luaL_typename(L, t);
    else if (!plain_table(L, t)) why = "infer's result has a metatable; return a plain list";
    else {
      lua_Unsigned n = lua_rawlen(L, t);
      if (n < 1) why = "infer returned no output shape";
      if (n > 64) why = "infer returned " + std::to_string(n) + " output shapes (at most 64)";
      for (lua_Unsigned i = 1; i <= n && why.empty(); ++i) {
        lua_rawgeti(L, t, static_cast<lua_Integer>(i));
        Shape s;
        if (!lua_value_to_shape(L, -1, s, why)) why = "infer's output " + std::to_string(i) + " " + why;
        out.push_back(s);
        lua_pop(L, 1);
      }
    }
    if (!why.empty()) why = im.fn_location(ref) + "custom operator '" + info.name + "': " + why;
    lua_settop(L, 1);
  }
  if (!why.empty()) throw ShapeError(why);
  return out;
}

OpWork LuaHost::work(size_t op, const OpArgs& args, const std::vector<Shape>& out) {
  Impl& im = *impl_;
  lua_State* L = im.L;
  const ScriptOpInfo& info = im.ops[op];
  OpWork w;
  int ref = im.op_refs[op].cost;
  if (ref == LUA_NOREF) return w;  // a view
  for (const auto& spec : info.attrs) (void)args.attrs.at(spec.name);  // throws here, not inside Lua
  Impl::Failure f;
  bool ok = im.call(ref, 1, f, [&](lua_State* S) {
    push_shapes_reused(S, im.in_ref, args.in);
    push_shapes_reused(S, im.out_ref, out);
    push_attrs_reused(S, im.attrs_ref[op], info.attrs, args.attrs);
    lua_pushstring(S, dtype_name(args.dtype));
    return 4;
  });
  if (!ok) throw ShapeError(f.message, f.traceback);
  std::string why;
  {
    Reading rd(L);
    int t = lua_gettop(L);
    if (!rd.ok()) why = "the cost function's result cannot be read (no stack space)";
    else if (lua_type(L, t) != LUA_TTABLE) why = std::string("cost must return a table {macs = ..., flops = ..., ...}, got a ") + luaL_typename(L, t);
    else if (!plain_table(L, t)) why = "the cost function's result has a metatable; return a plain table";
    else {
      bool good = cost_field(im, t, K_macs, true, w.macs, why) && cost_field(im, t, K_flops, true, w.other_flops, why) &&
                  cost_field(im, t, K_params, false, w.params, why) && cost_field(im, t, K_weights, false, w.weight_elems, why);
      double wb = -1;
      if (good && cost_field(im, t, K_weight_bytes, false, wb, why)) w.weight_bytes = wb;
      else good = false;
      good = good && byte_list(im, t, K_input_bytes, args.in.size(), w.input_bytes, why) &&
             byte_list(im, t, K_output_bytes, out.size(), w.output_bytes, why);
    }
    if (!why.empty()) why = im.fn_location(ref) + "custom operator '" + info.name + "': " + why;
    lua_settop(L, 1);
  }
  if (!why.empty()) throw ShapeError(why);
  return w;
}

Efficiency LuaHost::efficiency(const Row& row, const Layer& layer, const Platform& platform) {
  Impl& im = *impl_;
  lua_State* L = im.L;
  for (const auto& spec : layer.op->attrs) (void)layer.attrs.at(spec.name);  // throws here, not inside Lua
  const ComputeRoof* roof = platform.roof_for(layer.dtype);
  Impl::Failure f;
  std::string where = "efficiency model for layer '" + layer.name + "' on '" + platform.name + "'";
  bool ok = im.call(im.efficiency_ref, 1, f, [&](lua_State* S) {
    push_layer(S, layer, row);
    lua_createtable(S, 0, 8);
    set_str(S, "name", platform.name);
    set_str(S, "kind", platform.kind);
    set_num(S, "peak", row.theoretical.peak_flops_per_s);
    set_num(S, "bandwidth", row.theoretical.bandwidth_bytes_per_s);
    if (roof) set_num(S, "derated_peak", roof->derated_flops_per_s);
    set_num(S, "derated_bandwidth", platform.memory.front().derated_bandwidth_bytes_per_s);
    return 2;
  });
  if (!ok) {
    std::vector<Note> notes;
    for (const auto& tl : f.traceback) notes.push_back(Note{{}, tl});
    throw ConfigError(layer.loc, where + ": " + f.message, notes);
  }
  Efficiency e;
  std::string why;
  {
    Reading rd(L);
    int t = lua_gettop(L);
    if (!rd.ok()) why = "the result cannot be read (no stack space)";
    else if (lua_type(L, t) != LUA_TTABLE) why = std::string("must return {compute = ..., bandwidth = ...}, got a ") + luaL_typename(L, t);
    else if (!plain_table(L, t)) why = "the result has a metatable; return a plain table {compute = ..., bandwidth = ...}";
    else
      for (auto [k, dst] : {std::pair<Key, double*>{K_compute, &e.compute}, {K_bandwidth, &e.bandwidth}}) {
        double v = 1;
        if (!cost_field(im, t, k, false, v, why)) break;
        if (v <= 0 || v > 1 || v < 1e-12) {
          why = std::string("'") + kKeyNames[k] + "' must be a fraction in [1e-12, 1], got " + format_number(v);
          break;
        }
        *dst = v;
      }
    if (!why.empty()) why = im.fn_location(im.efficiency_ref) + where + ": " + why;
    lua_settop(L, 1);
  }
  if (!why.empty()) throw ConfigError(layer.loc, why);
  return e;
}

std::vector<double> LuaHost::metrics(const Row& row, const Layer& layer) {
  Impl& im = *impl_;
  lua_State* L = im.L;
  for (const auto& spec : layer.op->attrs) (void)layer.attrs.at(spec.name);  // throws here, not inside Lua
  std::vector<double> out;
  for (size_t i = 0; i < im.metric_refs.size(); ++i) {
    Impl::Failure f;
    std::string where = "metric '" + im.metric_names[i] + "' for layer '" + layer.name + "' on '" + row.platform + "'";
    bool ok = im.call(im.metric_refs[i], 1, f, [&](lua_State* S) {
      push_layer(S, layer, row);
      set_str(S, "platform", row.platform);
      set_num(S, "time_s", row.theoretical.time_s);
      set_num(S, "derated_time_s", row.derated.time_s);
      set_num(S, "attainable_flops_per_s", row.theoretical.attainable_flops_per_s);
      set_num(S, "derated_attainable_flops_per_s", row.derated.attainable_flops_per_s);
      set_num(S, "peak_flops_per_s", row.theoretical.peak_flops_per_s);
      set_num(S, "bandwidth_bytes_per_s", row.theoretical.bandwidth_bytes_per_s);
      set_cstr(S, "bound", bound_name(row.theoretical.bound));
      set_cstr(S, "derated_bound", bound_name(row.derated.bound));
      set_num(S, "efficiency_compute", row.efficiency.compute);
      set_num(S, "efficiency_bandwidth", row.efficiency.bandwidth);
      return 1;
    });
    if (!ok) {
      std::vector<Note> notes;
      for (const auto& tl : f.traceback) notes.push_back(Note{{}, tl});
      throw ConfigError(layer.loc, where + ": " + f.message, notes);
    }
    int isnum = 0;
    double v = lua_tonumberx(L, -1, &isnum);  // raw: a number, or a numeric string read without allocating
    std::string tn = luaL_typename(L, -1);
    lua_settop(L, 1);
    std::string why;
    if (!isnum) why = "must return a number, got a " + tn;
    else if (!std::isfinite(v)) why = "returned " + std::string(std::isnan(v) ? "NaN" : "infinity");
    if (!why.empty()) throw ConfigError(layer.loc, im.fn_location(im.metric_refs[i]) + where + ": " + why);
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
