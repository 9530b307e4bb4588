// User scripts (Lua 5.4) in a sandbox: custom operators, an efficiency model and derived metrics.
// One LuaHost per worker thread; each loads the same scripts, so every worker computes the same.
#pragma once
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "engine/eval/hooks.hpp"
#include "engine/ops/ops.hpp"
#include "engine/scenario/scenario.hpp"

namespace rsim {

// An operator a script registered with rsim.op{...}: its schema; the rules stay in Lua.
struct ScriptOpInfo {
  std::string name, summary, formula, script;
  std::vector<AttrSpec> attrs;
  int min_inputs = 1, max_inputs = 1;
  bool view = false;
};

class LuaHost : public ScriptHooks {
 public:
  // Runs every script (their registrations). Throws ConfigError with the script's file:line.
  LuaHost(const std::vector<Script>& scripts, const ScriptLimits& limits);
  ~LuaHost() override;
  LuaHost(const LuaHost&) = delete;
  LuaHost& operator=(const LuaHost&) = delete;

  const std::vector<ScriptOpInfo>& ops() const;

  bool has_efficiency() const override;
  Efficiency efficiency(const Row& row, const Layer& layer, const Platform& platform) override;
  const std::vector<std::string>& metric_names() const override;
  std::vector<double> metrics(const Row& row, const Layer& layer) override;

  // A scripted operator's rules; errors become ShapeError with the traceback as notes.
  std::vector<Shape> infer(size_t op, const OpArgs& args);
  OpWork work(size_t op, const OpArgs& args, const std::vector<Shape>& out);

  // The host of the calling thread (the last one created on it), or nullptr.
  static LuaHost* current();

  struct Impl;

 private:
  std::unique_ptr<Impl> impl_;
};

// Adds the scripts' operators to `reg`; their rules call LuaHost::current().
void register_script_ops(OpRegistry& reg, const std::vector<ScriptOpInfo>& ops);

// Everything a run needs from a scenario's scripts: the registry with their operators and a
// factory of per-worker hosts. `ops` stays valid as long as the returned object lives.
struct ScriptSetup {
  OpRegistry ops;
  std::vector<ScriptOpInfo> infos;
  std::function<std::unique_ptr<ScriptHooks>()> make_hooks;  // empty when the scenario has no scripts
};
ScriptSetup setup_scripts(const Scenario& s);

}  // namespace rsim
