// The rsim command line: a table of subcommands, each parsed with Boost.Program_options.
#pragma once
#include <functional>
#include <iosfwd>
#include <memory>
#include <string>
#include <vector>

namespace rsim {

// Runs `rsim ARGS...` (args excludes the program name). Returns the exit code:
// 0 ok, 1 scenario or configuration error, 2 usage error.
int rsim_main(const std::vector<std::string>& args, std::ostream& out, std::ostream& err);

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

}  // namespace rsim
