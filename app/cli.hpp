// The rsim command line: a table of subcommands, each parsed with Boost.Program_options.
#pragma once
#include <iosfwd>
#include <string>
#include <vector>

#include "session/session.hpp"  // what the CLI shares with the Python module

namespace rsim {

// Runs `rsim ARGS...` (args excludes the program name). Returns the exit code:
// 0 ok, 1 scenario or configuration error, 2 usage error.
int rsim_main(const std::vector<std::string>& args, std::ostream& out, std::ostream& err);

}  // namespace rsim
