#include <malloc.h>

#include <iostream>

#include "app/cli.hpp"
#include "app/result_set.hpp"

int main(int argc, char** argv) {
  // Each sweep point's rows and their text are allocated and freed as the point streams through:
  // glibc's defaults return that memory to the kernel and fault it back in at the next point (a
  // fifth of a run's time). Freed memory is kept for reuse instead; the peak stays the same.
  mallopt(M_MMAP_THRESHOLD, 64 << 20);
  mallopt(M_TRIM_THRESHOLD, 256 << 20);
  rsim::install_interrupt_cleanup();  // SIGINT/SIGTERM: the run in progress leaves no staging folder
  std::vector<std::string> args(argv + 1, argv + argc);
  int rc = rsim::rsim_main(args, std::cout, std::cerr);
  // what rsim printed must have reached standard output: `rsim schema > /dev/full` is a failure
  std::cout.flush();
  if (!std::cout) {
    std::cerr << "rsim: error: cannot write to standard output (a full disk, a closed pipe?): the output is incomplete\n";
    return rc ? rc : 1;
  }
  return rc;
}
