#include "scripting/lua_host.hpp"

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
constexpr size_t kGraceBytes = 16u << 20;  // what a C++ section may allocate beyond the cap
constexpr int kHookStep = 1000;            // instructions between two budget checks

enum Key { K_macs, K_flops, K_params, K_weights, K_weight_bytes, K_input_bytes, K_output_bytes, K_compute, K_bandwidth, K_count };
const char* const kKeyNames[K_count] = {"macs",         "flops",       "params",  "weights",  "weight_bytes",
                                        "input_bytes", "output_bytes", "compute", "bandwidth"};

void count_hook(lua_State* L, lua_Debug*);
}  // namespace

struct LuaHost::Impl {
  enum class Dead { No, Budget, Memory, Closed };

  ~Impl() {
    if (!L) return;
    dead = Dead::Closed;  // finalizers do not run at close: their first instruction raises
    lua_sethook(L, count_hook, LUA_MASKCOUNT, 1);
    lua_close(L);
  }
  lua_State* L = nullptr;
  size_t mem_used = 0, mem_limit = 0;
  long long instr_used = 0, instr_limit = 0;
  int grace = 0;  // > 0 inside a C++ section
  bool refused = false;  // the last request for memory was over the cap
  Dead dead = Dead::No;
  std::string fatal_where;                // "file:line:" where the budget or the cap ran out
  std::vector<std::string> fatal_trace;   // the stack there
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
  // read them during the call and must not keep them. They are only written raw.
  int in_ref = LUA_NOREF, out_ref = LUA_NOREF;
  std::vector<int> attrs_ref;  // per operator
  int key_ref[K_count] = {};   // interned field names, so results are read without allocating
  int stop_ref = LUA_NOREF;    // the error value raised in a dead state (allocates nothing)

  // ---- fatal errors
  void die(Dead why) {
    if (dead != Dead::No || !L) return;
    dead = why;
    lua_sethook(L, count_hook, LUA_MASKCOUNT, 1);
    // Where: read-only walks of the call stack (safe inside the allocator and the hook).
    try {
      lua_Debug ar;
      for (int level = 0; level < 64 && lua_getstack(L, level, &ar); ++level) {
        if (!lua_getinfo(L, "Sl", &ar) || ar.currentline <= 0) continue;
        std::string src = ar.source && (ar.source[0] == '@' || ar.source[0] == '=') ? ar.source + 1 : ar.short_src;
        std::string at = src + ":" + std::to_string(ar.currentline) + ":";
        if (fatal_where.empty()) fatal_where = at;
        if (fatal_trace.size() < 12) fatal_trace.push_back(at + (*ar.what == 'm' ? " in main chunk" : " in a function defined at line " + std::to_string(ar.linedefined)));
      }
      if (!fatal_trace.empty()) fatal_trace.insert(fatal_trace.begin(), "stack traceback:");
    } catch (...) {
    }
  }

  std::string fatal_text() const {
    std::string t = dead == Dead::Memory ? "script used more than " + format_number(static_cast<double>(mem_limit) / 1048576.0) +
                                               " MiB of memory (limits.memory)"
                                         : "script ran for more than " + format_number(static_cast<double>(instr_limit)) +
                                               " instructions (an endless loop? raise limits.instructions if not)";
    return fatal_where.empty() ? t : fatal_where + " " + t;
  }

  // ---- calls into Lua, protected, with the instruction budget and a traceback
  struct Failure {
    std::string message;
    std::vector<std::string> traceback;
  };

  static int msgh(lua_State* L) {
    const char* msg = lua_type(L, 1) == LUA_TSTRING ? lua_tostring(L, 1) : nullptr;
    if (!msg) msg = luaL_typename(L, 1);
    luaL_traceback(L, L, msg, 1);
    return 1;
  }

  Failure failure_from_stack(int rc) {
    Failure f;
    if (dead != Dead::No) {
      f.message = fatal_text();
      f.traceback = fatal_trace;
      lua_settop(L, 1);
      return f;
    }
    if (rc == LUA_ERRMEM) {  // over the cap with no second request (no collection possible there): fatal all the same
      dead = Dead::Memory;
      f.message = fatal_text();
      lua_settop(L, 1);
      return f;
    } else {
      std::string all = lua_type(L, -1) == LUA_TSTRING ? lua_tostring(L, -1) : "error";
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
    lua_gc(L, LUA_GCCOLLECT);  // give back what a failed call piled up (finalizers run under the budget)
    return f;
  }

  // Calls the function at registry `fn_ref` with the arguments `push(L)` pushes (it returns their
  // count), inside one protected call. On success leaves `nres` results above the handler.
  // `push` must not throw and must hold no object with a destructor while it calls Lua.
  template <class Push>
  bool call(int fn_ref, int nres, Failure& f, Push&& push) {
    if (dead != Dead::No) {
      f = failure_from_stack(LUA_ERRRUN);
      return false;
    }
    struct Ctx {
      int fn_ref, nres;
      std::remove_reference_t<Push>* push;
    } ctx{fn_ref, nres, &push};
    lua_settop(L, 1);
    instr_used = 0;
    lua_pushcfunction(L, [](lua_State* S) -> int {
      auto* c = static_cast<Ctx*>(lua_touserdata(S, 1));
      lua_settop(S, 0);
      lua_rawgeti(S, LUA_REGISTRYINDEX, c->fn_ref);
      int n = (*c->push)(S);
      lua_call(S, n, c->nres);
      return c->nres;
    });
    lua_pushlightuserdata(L, &ctx);
    int rc = lua_pcall(L, 1, nres, 1);
    if (rc != LUA_OK) {
      f = failure_from_stack(rc);
      return false;
    }
    return true;
  }

  // "file:line: " of the function at registry `ref` (its definition), for result errors.
  std::string fn_location(int ref) {
    lua_rawgeti(L, LUA_REGISTRYINDEX, ref);
    lua_Debug ar;
    if (!lua_getinfo(L, ">S", &ar)) return "";
    std::string src = ar.source && (ar.source[0] == '@' || ar.source[0] == '=') ? ar.source + 1 : ar.short_src;
    return src + ":" + std::to_string(ar.linedefined) + ": ";
  }

  // Pushes t[key] raw (no metamethod, no allocation); returns its type.
  int raw_field(int t, Key k) {
    lua_rawgeti(L, LUA_REGISTRYINDEX, key_ref[k]);
    return lua_rawget(L, t);
  }

  // "file.lua:12: message" → a located diagnostic in the script itself
  SourceLoc locate(const std::string& msg) const {
    for (const auto& file : files) {
      const std::string& n = file->path;
      if (msg.rfind(n + ":", 0) == 0) {
        auto line = parse_integer(msg.substr(n.size() + 1, msg.find(':', n.size() + 1) - n.size() - 1));
        if (line) {
          int col = 1;  // the line's first non-blank: where the statement starts
          if (*line >= 1 && static_cast<size_t>(*line) <= file->lines.size()) {
            const std::string& text = file->lines[static_cast<size_t>(*line - 1)];
            size_t c = text.find_first_not_of(" \t");
            if (c != std::string::npos) col = static_cast<int>(c) + 1;
          }
          return SourceLoc{file, static_cast<int>(*line), col};
        }
      }
    }
    return {};
  }
};

namespace {

using Impl = LuaHost::Impl;

Impl* impl_of(lua_State* L) { return *static_cast<Impl**>(lua_getextraspace(L)); }

// C++ code inside a C function or after a call: allocations cannot fail (they still count) and
// no collection runs, so no Lua error and no finalizer can happen while C++ objects are live.
class CppSection {
 public:
  explicit CppSection(lua_State* L) : L_(L), im_(impl_of(L)) {
    ++im_->grace;
    running_ = lua_gc(L_, LUA_GCISRUNNING) == 1;
    if (running_) lua_gc(L_, LUA_GCSTOP);
  }
  ~CppSection() {
    if (running_) lua_gc(L_, LUA_GCRESTART);
    --im_->grace;
  }
  CppSection(const CppSection&) = delete;
  CppSection& operator=(const CppSection&) = delete;

 private:
  lua_State* L_;
  Impl* im_;
  bool running_ = false;
};

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
