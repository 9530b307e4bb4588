// What lua_host.cpp (the host, the sandbox, the calls) and lua_api.cpp (the `rsim` table's C
// functions scripts call) share: the host's state, the C++ section, the budget. Not for other rooms.
#pragma once
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


namespace rsim {

namespace lua_detail {

constexpr size_t kGraceBytes = 16u << 20;  // what a C++ section may allocate beyond the cap
constexpr int kHookStep = 1000;            // instructions between two budget checks

enum Key { K_macs, K_flops, K_params, K_weights, K_weight_bytes, K_input_bytes, K_output_bytes, K_compute, K_bandwidth, K_count };
inline const char* const kKeyNames[K_count] = {"macs",         "flops",       "params",  "weights",  "weight_bytes",
                                        "input_bytes", "output_bytes", "compute", "bandwidth"};

void count_hook(lua_State* L, lua_Debug*);

}  // namespace lua_detail

struct LuaHost::Impl {
  enum class Dead { No, Budget, Memory, Closed };

  ~Impl() {
    if (!L) return;
    dead = Dead::Closed;  // finalizers do not run at close: their first instruction raises
    lua_sethook(L, lua_detail::count_hook, LUA_MASKCOUNT, 1);
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
  int key_ref[lua_detail::K_count] = {};   // interned field names, so results are read without allocating
  int stop_ref = LUA_NOREF;    // the error value raised in a dead state (allocates nothing)

  // ---- fatal errors
  void die(Dead why) {
    if (dead != Dead::No || !L) return;
    dead = why;
    lua_sethook(L, lua_detail::count_hook, LUA_MASKCOUNT, 1);
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
  int raw_field(int t, lua_detail::Key k) {
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

namespace lua_detail {

using Impl = LuaHost::Impl;


inline Impl* impl_of(lua_State* L) { return *static_cast<Impl**>(lua_getextraspace(L)); }

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

// Adds `work` (in instructions) to the budget of the running call; raises when it is spent.
void charge(lua_State* L, double work);
// Raises the fatal stop (the budget or the memory cap ran out) as a Lua error
[[noreturn]] void raise_stop(lua_State* L);

// The `rsim` table's C functions and the pushes the host's calls share (lua_api.cpp)
int l_print(lua_State* L);
int l_error(lua_State* L);
int l_setmetatable(lua_State* L);
int l_load_text(lua_State* L);
int l_builtin_cost(lua_State* L);
int l_numel(lua_State* L);
int l_op(lua_State* L);
int l_efficiency(lua_State* L);
int l_metric(lua_State* L);
void push_shapes(lua_State* L, const std::vector<Shape>& v);
void push_shapes_reused(lua_State* L, int ref, const std::vector<Shape>& v);
void push_attrs_reused(lua_State* L, int ref, const std::vector<AttrSpec>& specs, const Attrs& a);
void push_attrs(lua_State* L, const std::vector<AttrSpec>& specs, const Attrs& a);
void set_num(lua_State* L, const char* k, double v);
void set_str(lua_State* L, const char* k, const std::string& v);
void set_cstr(lua_State* L, const char* k, const char* v);

}  // namespace lua_detail
}  // namespace rsim
