// For tests that drive rsim as a user does: the command line in-process, and scratch folders.
#pragma once
#include <unistd.h>

#include <filesystem>
#include <sstream>
#include <string>
#include <vector>

#include "app/cli.hpp"

namespace rsim::test {

struct CliOut {
  int code;
  std::string out, err;
};

// rsim_main with these arguments: its exit code and what it printed on each stream.
inline CliOut cli(std::vector<std::string> args) {
  std::ostringstream o, e;
  int c = rsim_main(args, o, e);
  return {c, o.str(), e.str()};
}

// A folder in the temp directory for this test process, emptied; created unless `create` is false
// (for a test that checks that rsim writes nothing there).
inline std::filesystem::path scratch_dir(const std::string& name, bool create = true) {
  std::filesystem::path p = std::filesystem::temp_directory_path() / ("rsim_test_" + name + "_" + std::to_string(::getpid()));
  std::filesystem::remove_all(p);
  if (create) std::filesystem::create_directories(p);
  return p;
}

}  // namespace rsim::test
