// Running a scenario as `rsim run` does, for every front end (the CLI in app/, the Python module
// in python/), which depend on this library and never on each other: where the data is (the
// platform catalog, the model zoo), the options an evaluation takes (scripts, Lua expressions, the
// ONNX importer), the tables of a run and its figures.
#pragma once
#include <filesystem>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "engine/eval/evaluate.hpp"
#include "engine/scenario/scenario.hpp"
#include "plots/charts.hpp"
#include "scripting/lua_host.hpp"

namespace rsim {

// Where the platform catalog is: --hw-dir, $RSIM_HARDWARE, <prefix>/share/rsim/hardware beside an
// installed rsim (<prefix>/bin/rsim), and only when run from a build folder, the source tree.
std::string find_hardware_dir(const std::string& given);
// Where `model: NAME` looks after the scenario's own models/ folder: $RSIM_MODELS, then the zoo
// (<prefix>/share/rsim/models, or scenarios/models of the source tree from a build folder).
std::vector<std::string> model_dirs();
// Where the data is looked for when rsim is embedded in another program (the Python module): the
// folder of the embedding binary instead of the running executable's.
void set_data_anchor(const std::string& dir);

// The tables `rsim run FILE --set NAME=VALUE...` writes, as CSV text (the same bytes), for
// bindings: the scenario's scripts, the catalog and the zoo as `rsim run` finds them.
// Throws ConfigError (a located message) for a bad scenario.
struct RunArtifacts;  // the evaluated run and its scenario, kept for figures (plot_run)
struct RunTables {
  std::string results_csv, summary_csv, kernels_csv;
  std::string requests_csv, serving_csv, timeline_csv;  // the request-level simulation's, when the scenario has `serving:`
  std::shared_ptr<const RunArtifacts> run;
};
// `should_stop` (may be empty) is asked before each point; true stops the run with rsim::Interrupted.
RunTables run_tables(const std::string& path, const std::vector<std::pair<std::string, std::string>>& sets, const std::string& hw_dir = "",
                     int jobs = 1, const std::function<bool()>& should_stop = {});
// The same for a scenario given as YAML text (JSON is YAML too); `name` stands for its file in
// messages ("<text>:3:5: error: ...") and relative paths (plugins, onnx:) resolve from the
// working directory.
RunTables run_tables_text(const std::string& yaml, const std::string& name, const std::vector<std::pair<std::string, std::string>>& sets,
                          const std::string& hw_dir = "", int jobs = 1, const std::function<bool()>& should_stop = {});
// The figures `rsim run` would draw for that run (the scenario's plots, else the default ones)
// written into `dir` with report.md, as `rsim run --format ... --style ...` writes them ("" keeps
// each plot's). Returns the files written. Throws ConfigError for a bad format or style.
std::vector<std::string> plot_run(const RunTables& run, const std::string& dir, const std::vector<std::string>& formats, const std::string& style);

// <prefix>/share/rsim of an installed binary (<prefix>/bin/rsim); empty when unknown.
std::filesystem::path installed_data();
// The source tree, only when rsim runs from its build folder (a marker file CMake writes beside the
// binaries of a build tree, never installed); empty otherwise.
std::filesystem::path build_tree_source();

// The scenario's `plots:` section, checked before anything is evaluated (ConfigError).
std::vector<plots::PlotSpec> load_plot_specs(const Scenario& s);
// How every command evaluates a scenario as `rsim run` does: its scripts' operators, efficiency
// model and metrics, Lua expressions, the model zoo, and onnx: entries.
RunOptions scenario_run_options(const ScriptSetup& scripts);

}  // namespace rsim
