#include "scripting/lua_expr.hpp"

extern "C" {
#include <lauxlib.h>
#include <lua.h>
#include <lualib.h>
}

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <iterator>
#include <unordered_map>

#include "engine/model/config.hpp"
#include "engine/model/names.hpp"

namespace rsim {

namespace {

constexpr size_t kMemoryLimit = 64u << 20;  // bytes a state may hold
constexpr int kInstructionLimit = 1000000;  // per expression

struct Budget {
  size_t used = 0;
};

void* limited_alloc(void* ud, void* ptr, size_t osize, size_t nsize) {
  auto* b = static_cast<Budget*>(ud);
  size_t old = ptr ? osize : 0;
  if (nsize == 0) {
    b->used -= old;
    std::free(ptr);
    return nullptr;
  }
  if (nsize > old && b->used + (nsize - old) > kMemoryLimit) return nullptr;
  void* p = std::realloc(ptr, nsize);
  if (p) b->used = b->used - old + nsize;
  return p;
}

void count_hook(lua_State* L, lua_Debug*) { luaL_error(L, "expression ran for more than %d instructions", kInstructionLimit); }

// `**` → `^` outside string literals.
std::string translate(const std::string& e) {
  std::string out;
  char quote = 0;
  for (size_t i = 0; i < e.size(); ++i) {
    char c = e[i];
    if (quote) {
      out += c;
      if (c == '\\' && i + 1 < e.size()) out += e[++i];
      else if (c == quote) quote = 0;
      continue;
    }
    if (c == '"' || c == '\'') quote = c;
    if (c == '*' && i + 1 < e.size() && e[i + 1] == '*') {
      out += '^';
      ++i;
      continue;
    }
    out += c;
  }
  return out;
}

std::string strip_chunk_prefix(std::string msg) {
  // "expr:1: message" → "message"
  if (msg.rfind("expr:1: ", 0) == 0) msg = msg.substr(8);
  return msg;
}

class LuaExprEvaluator : public ExprEvaluator {
 public:
  LuaExprEvaluator() {
    L_ = lua_newstate(limited_alloc, &budget_);
    if (!L_) throw ExprError("cannot create a Lua state");
    // Only base and math; the expression sees a curated table, never the globals.
    luaL_requiref(L_, LUA_GNAME, luaopen_base, 1);
    luaL_requiref(L_, LUA_MATHLIBNAME, luaopen_math, 1);
    lua_settop(L_, 0);
    // functions table: math.*, plus min/max/floor/ceil/... at top level
    lua_newtable(L_);
    lua_getglobal(L_, "math");
    lua_pushvalue(L_, -1);
    lua_setfield(L_, -3, "math");
    for (const char* f : {"min", "max", "floor", "ceil", "sqrt", "abs", "log", "exp", "pi", "huge", "tointeger"}) {
      lua_getfield(L_, -1, f);
      lua_setfield(L_, -3, f);
    }
    lua_pop(L_, 1);
    for (const char* f : {"tostring", "tonumber", "type"}) {
      lua_getglobal(L_, f);
      lua_setfield(L_, -2, f);
    }
    // log2(x) and round(x)
    luaL_dostring(L_, "return function(x) return math.log(x, 2) end");
    lua_setfield(L_, -2, "log2");
    luaL_dostring(L_, "return function(x) return math.floor(x + 0.5) end");
    lua_setfield(L_, -2, "round");
    funcs_ref_ = luaL_ref(L_, LUA_REGISTRYINDEX);
    // unknown names raise an error rather than becoming nil
    lua_newtable(L_);  // metatable for env tables
    lua_rawgeti(L_, LUA_REGISTRYINDEX, funcs_ref_);
    lua_pushcclosure(L_, &LuaExprEvaluator::index_fn, 1);
    lua_setfield(L_, -2, "__index");
    meta_ref_ = luaL_ref(L_, LUA_REGISTRYINDEX);
  }
  ~LuaExprEvaluator() override { lua_close(L_); }

  std::string eval(const std::string& expr, const Env& env) override {
    lua_settop(L_, 0);
    // Every Lua call that allocates runs inside lua_pcall: an allocation refused by the memory cap
    // outside one would be an unprotected error, which aborts (fuzz_expr found it).
    int fn_ref;
    auto it = compiled_.find(expr);
    if (it != compiled_.end()) {
      fn_ref = it->second;
    } else {
      if (compiled_.size() >= kMaxCompiled) {  // distinct expressions are few in a scenario; bound them anyway
        for (const auto& [text, ref] : compiled_) luaL_unref(L_, LUA_REGISTRYINDEX, ref);
        compiled_.clear();
        lua_gc(L_, LUA_GCCOLLECT);
      }
      std::string code = "return " + translate(expr);
      int rc = luaL_loadbufferx(L_, code.data(), code.size(), "=expr", "t");  // protected itself
      if (rc == LUA_OK) {
        lua_pushcfunction(L_, &LuaExprEvaluator::ref_fn);
        lua_insert(L_, -2);
        rc = lua_pcall(L_, 1, 1, 0);
      }
      if (rc != LUA_OK) {
        std::string msg = rc == LUA_ERRMEM || !lua_tostring(L_, -1) ? "expression used more than 64 MiB" : "syntax error: " + strip_chunk_prefix(lua_tostring(L_, -1));
        lua_settop(L_, 0);
        throw ExprError(msg);
      }
      fn_ref = static_cast<int>(lua_tointeger(L_, -1));
      lua_settop(L_, 0);
      compiled_[expr] = fn_ref;
    }
    // the function with a fresh environment: an empty table whose reads fall through to the
    // bindings, then to the functions (so an expression's own assignments never outlive it). The
    // bindings table of an Env is built once and kept for the next expressions of the same Env
    // (a network's slots share a few): pushing every binding per expression was most of the time
    // of re-binding a transformer.
    // (compared from the end, where a block's bindings differ from its siblings', newest first)
    auto same = [&](const CachedEnv& c) { return c.env.size() == env.size() && std::equal(env.rbegin(), env.rend(), c.env.rbegin()); };
    auto cached = envs_.end();
    for (auto i = envs_.rbegin(); i != envs_.rend() && cached == envs_.end(); ++i)
      if (same(*i)) cached = std::prev(i.base());
    Prep prep{&env, fn_ref, meta_ref_, cached != envs_.end() ? cached->proxy_ref : LUA_NOREF};
    lua_pushcfunction(L_, &LuaExprEvaluator::prepare_fn);
    lua_pushlightuserdata(L_, &prep);
    if (lua_pcall(L_, 1, 1, 0) != LUA_OK) {
      lua_settop(L_, 0);
      throw ExprError("expression used more than 64 MiB");
    }
    if (cached == envs_.end()) {
      if (envs_.size() >= kMaxEnvs) {
        luaL_unref(L_, LUA_REGISTRYINDEX, envs_.front().proxy_ref);
        envs_.erase(envs_.begin());
      }
      envs_.push_back(CachedEnv{env, prep.proxy_ref});
    }
    lua_sethook(L_, count_hook, LUA_MASKCOUNT, kInstructionLimit);
    int rc = lua_pcall(L_, 0, 1, 0);
    lua_sethook(L_, nullptr, 0, 0);
    if (rc != LUA_OK) {
      std::string msg = rc == LUA_ERRMEM ? "expression used more than 64 MiB" : strip_chunk_prefix(lua_tostring(L_, -1) ? lua_tostring(L_, -1) : "error");
      lua_settop(L_, 0);
      throw ExprError(msg);
    }
    std::string out;
    int t = lua_type(L_, -1);
    if (t == LUA_TNUMBER) {
      if (lua_isinteger(L_, -1)) out = std::to_string(lua_tointeger(L_, -1));
      else {
        double v = lua_tonumber(L_, -1);
        if (!std::isfinite(v)) {
          lua_settop(L_, 0);
          throw ExprError(std::isnan(v) ? "result is not a number (0/0?)" : "result is infinite (division by zero?)");
        }
        out = format_number(v);
      }
    } else if (t == LUA_TSTRING) {
      size_t len;
      const char* s = lua_tolstring(L_, -1, &len);
      out.assign(s, len);
      if (std::string why = text_problem(out); !why.empty()) {
        lua_settop(L_, 0);
        throw ExprError("the result " + why);
      }
    } else if (t == LUA_TBOOLEAN) {
      out = lua_toboolean(L_, -1) ? "true" : "false";
    } else {
      std::string tn = lua_typename(L_, t);
      lua_settop(L_, 0);
      throw ExprError("result is a " + tn + ", not a number or a word");
    }
    lua_settop(L_, 0);
    return out;
  }

 private:
  lua_State* L_ = nullptr;
  Budget budget_;
  int funcs_ref_ = LUA_NOREF;
  int meta_ref_ = LUA_NOREF;
  std::unordered_map<std::string, int> compiled_;
  struct CachedEnv {
    Env env;
    int proxy_ref;  // the metatable {__index = the bindings of env}
  };
  std::vector<CachedEnv> envs_;  // the last few, oldest first

  static constexpr size_t kMaxCompiled = 4096;
  static constexpr size_t kMaxEnvs = 8;
  struct Prep {
    const Env* env;
    int fn_ref, meta_ref;
    int proxy_ref;  // LUA_NOREF: build the bindings of env (prepare_fn sets it)
  };
  // protected: the registry reference of the value it is given
  static int ref_fn(lua_State* L) {
    lua_settop(L, 1);
    lua_pushinteger(L, luaL_ref(L, LUA_REGISTRYINDEX));
    return 1;
  }
  // protected: the compiled function with its _ENV set to a fresh table reading through to the
  // bindings (a Prep* argument; built first when proxy_ref is LUA_NOREF)
  static int prepare_fn(lua_State* L) {
    Prep* p = static_cast<Prep*>(lua_touserdata(L, 1));
    lua_settop(L, 0);
    if (p->proxy_ref == LUA_NOREF) {
      build_bindings(L, p);
      p->proxy_ref = luaL_ref(L, LUA_REGISTRYINDEX);
    }
    lua_rawgeti(L, LUA_REGISTRYINDEX, p->fn_ref);
    lua_createtable(L, 0, 0);
    lua_rawgeti(L, LUA_REGISTRYINDEX, p->proxy_ref);
    lua_setmetatable(L, -2);
    lua_setupvalue(L, -2, 1);  // _ENV
    return 1;
  }
  // pushes {__index = bindings}, the bindings falling back to the functions
  static void build_bindings(lua_State* L, const Prep* p) {
    lua_createtable(L, 0, 1);
    lua_createtable(L, 0, static_cast<int>(p->env->size()));
    for (const auto& [name, value] : *p->env) {
      lua_pushlstring(L, name.data(), name.size());  // the whole name (setfield would stop at a NUL byte)
      auto num = parse_double(value);
      if (num && !value.empty()) {
        auto i = parse_integer(value);
        if (i && value.find_first_of(".eE") == std::string::npos) lua_pushinteger(L, *i);
        else lua_pushnumber(L, *num);
      } else {
        lua_pushlstring(L, value.data(), value.size());
      }
      lua_rawset(L, -3);
    }
    lua_rawgeti(L, LUA_REGISTRYINDEX, p->meta_ref);
    lua_setmetatable(L, -2);
    lua_setfield(L, -2, "__index");
  }

  static int index_fn(lua_State* L) {
    // upvalue 1: functions table; args: env table, key
    lua_pushvalue(L, 2);
    lua_rawget(L, lua_upvalueindex(1));
    if (!lua_isnil(L, -1)) return 1;
    const char* key = lua_tostring(L, 2);
    return luaL_error(L, "unknown variable '%s'", key ? key : "?");
  }
};

}  // namespace

std::unique_ptr<ExprEvaluator> make_lua_evaluator() { return std::make_unique<LuaExprEvaluator>(); }

}  // namespace rsim
