// Running rsim_torch (the PyTorch backend of probe and measure) in a child Python process.
#include "app/cli_common.hpp"

#include <spawn.h>
#include <sys/wait.h>

#include "session/session.hpp"

namespace po = boost::program_options;
namespace fs = std::filesystem;

namespace rsim::cli {

// The folder that holds rsim_torch: share/rsim/python of the installation, else the source tree's
// python/ (from a build folder); "" when neither has it.
fs::path find_python_dir() {
  std::error_code ec;
  if (fs::path data = installed_data(); !data.empty() && fs::is_directory(data / "python" / "rsim_torch", ec)) return data / "python";
  if (fs::path src = build_tree_source(); !src.empty() && fs::is_directory(src / "python" / "rsim_torch", ec)) return src / "python";
  return {};
}

int spawn_rsim_torch(const std::string& python, const std::vector<std::string>& args, std::ostream& err);

// rsim_torch's exit status when the interpreter has no torch
constexpr int kNoTorch = 3;

// Runs `$RSIM_PYTHON -m rsim_torch ARGS...` (python3 by default) with rsim_torch on PYTHONPATH,
// whatever the working directory; its output goes to `err` as it comes. Returns its exit status.
// When RSIM_PYTHON is unset and python3 has no torch, /usr/bin/python3 (the interpreter Debian's
// python3-torch serves) is tried before giving up, and rsim says so.
int run_rsim_torch(const std::vector<std::string>& args, std::ostream& err) {
  const char* env = std::getenv("RSIM_PYTHON");
  const bool chosen = env && *env;
  const int rc = spawn_rsim_torch(chosen ? env : "python3", args, err);
  std::error_code ec;
  const std::string system_python = "/usr/bin/python3";
  if (rc != kNoTorch) return rc;
  if (chosen || !fs::exists(system_python, ec)) return kConfig;
  // (the same interpreter as python3 on the PATH: nothing else to try)
  if (const char* path = std::getenv("PATH"))
    for (std::string dir, list = std::string(path) + ":"; !list.empty(); list.erase(0, list.find(':') + 1)) {
      dir = list.substr(0, list.find(':'));
      if (dir.empty()) continue;
      const fs::path cand = fs::path(dir) / "python3";
      if (fs::exists(cand, ec)) {
        if (fs::equivalent(cand, system_python, ec)) return kConfig;
        break;
      }
    }
  err << "rsim: python3 on the PATH has no torch; trying " << system_python << " (Debian's python3-torch); RSIM_PYTHON picks another\n";
  const int again = spawn_rsim_torch(system_python, args, err);
  if (again == 0) err << "rsim: rsim_torch ran with " << system_python << "\n";
  return again == kNoTorch ? kConfig : again;
}

int spawn_rsim_torch(const std::string& python, const std::vector<std::string>& args, std::ostream& err) {
  const fs::path dir = find_python_dir();
  if (dir.empty()) {
    err << "rsim: error: cannot find rsim_torch (share/rsim/python of the installation, or python/ of the source tree)\n";
    return kConfig;
  }
  std::string path = dir.string();
  if (const char* pp = std::getenv("PYTHONPATH"); pp && *pp) path += std::string(":") + pp;
  std::vector<std::string> argv_s = {python, "-m", "rsim_torch"};
  argv_s.insert(argv_s.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (auto& a : argv_s) argv.push_back(a.data());
  argv.push_back(nullptr);
  std::vector<std::string> env_s;
  for (char** e = environ; *e; ++e)
    if (std::strncmp(*e, "PYTHONPATH=", 11) != 0) env_s.push_back(*e);
  env_s.push_back("PYTHONPATH=" + path);
  std::vector<char*> envp;
  for (auto& e : env_s) envp.push_back(e.data());
  envp.push_back(nullptr);
  int fds[2];
  if (pipe(fds) != 0) {
    err << "rsim: error: cannot start " << python << ": " << std::strerror(errno) << "\n";
    return kConfig;
  }
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_adddup2(&fa, fds[1], 1);
  posix_spawn_file_actions_adddup2(&fa, fds[1], 2);
  posix_spawn_file_actions_addclose(&fa, fds[0]);
  pid_t pid = 0;
  const int rc = posix_spawnp(&pid, python.c_str(), &fa, nullptr, argv.data(), envp.data());
  posix_spawn_file_actions_destroy(&fa);
  close(fds[1]);
  if (rc != 0) {
    close(fds[0]);
    err << "rsim: error: cannot run the Python interpreter '" << python << "' (" << std::strerror(rc)
        << "): install python3 with PyTorch (Debian: apt install python3-torch), or set RSIM_PYTHON to one that has it\n";
    return kConfig;
  }
  char buf[4096];
  for (ssize_t n; (n = read(fds[0], buf, sizeof buf)) != 0;) {
    if (n < 0) {
      if (errno == EINTR) continue;
      break;
    }
    err.write(buf, n);
    err.flush();
  }
  close(fds[0]);
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  err << "rsim: error: " << python << " -m rsim_torch ended by signal " << (WIFSIGNALED(status) ? WTERMSIG(status) : 0) << "\n";
  return kConfig;
}

}  // namespace rsim::cli
