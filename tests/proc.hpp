// Runs the real rsim executable in a child process: exit status or signal, stdout, stderr, wall
// time and peak resident memory. A child still running after `timeout_s` is killed (a hang guard,
// not a speed check: speed belongs in bench/).
#pragma once
#include <fcntl.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

namespace rsim::test {

struct Proc {
  bool exited = false;   // normal exit (not a signal)
  int code = -1;         // exit status when exited
  int signal = 0;        // the signal that ended it, when not exited
  bool timed_out = false;
  double secs = 0;
  long max_rss_kib = 0;
  std::string out, err;
};

inline std::string slurp(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

inline Proc run_exe(const std::vector<std::string>& args, double timeout_s = 20) {
  namespace fs = std::filesystem;
  static int seq = 0;
  fs::path base = fs::temp_directory_path() / ("rsim_proc_" + std::to_string(::getpid()) + "_" + std::to_string(seq++));
  std::string out_path = base.string() + ".out", err_path = base.string() + ".err";
  std::vector<std::string> argv_s = {RSIM_BINARY};
  argv_s.insert(argv_s.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (auto& a : argv_s) argv.push_back(a.data());
  argv.push_back(nullptr);
  auto t0 = std::chrono::steady_clock::now();
  pid_t pid = ::fork();
  if (pid == 0) {
    int o = ::open(out_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
    int e = ::open(err_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
    ::dup2(o, 1);
    ::dup2(e, 2);
    ::execv(argv[0], argv.data());
    ::_exit(127);
  }
  Proc p;
  int status = 0;
  struct rusage ru {};
  while (true) {
    pid_t r = ::wait4(pid, &status, WNOHANG, &ru);
    if (r == pid) break;
    p.secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (p.secs > timeout_s && !p.timed_out) {
      p.timed_out = true;
      ::kill(pid, SIGKILL);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  p.secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  p.max_rss_kib = ru.ru_maxrss;
  p.exited = WIFEXITED(status);
  if (p.exited) p.code = WEXITSTATUS(status);
  else if (WIFSIGNALED(status)) p.signal = WTERMSIG(status);
  p.out = slurp(out_path);
  p.err = slurp(err_path);
  fs::remove(out_path);
  fs::remove(err_path);
  return p;
}

}  // namespace rsim::test
