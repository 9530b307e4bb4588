#include <iostream>

#include "app/cli.hpp"
#include "app/result_set.hpp"

int main(int argc, char** argv) {
  rsim::install_interrupt_cleanup();  // SIGINT/SIGTERM: the run in progress leaves no staging folder
  std::vector<std::string> args(argv + 1, argv + argc);
  return rsim::rsim_main(args, std::cout, std::cerr);
}
