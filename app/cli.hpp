// The rsim command line: a table of subcommands, each parsed with Boost.Program_options.
#pragma once
#include <iosfwd>
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
struct RunTables {
  std::string results_csv, summary_csv, kernels_csv;
};
RunTables run_tables(const std::string& path, const std::vector<std::pair<std::string, std::string>>& sets, const std::string& hw_dir = "",
                     int jobs = 1);

}  // namespace rsim
