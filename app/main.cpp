#include <iostream>

#include "app/cli.hpp"

int main(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  return rsim::rsim_main(args, std::cout, std::cerr);
}
