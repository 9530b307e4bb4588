#include "app/result_set.hpp"

#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <set>
#include <stdexcept>
#include <thread>

namespace fs = std::filesystem;

namespace rsim {

namespace {

// The staging folder of the run in progress, for the interrupt thread.
std::mutex g_mu;
std::string g_staging;
bool g_guarded = false;

std::string sys_error(const std::string& what, const std::string& path) { return what + " '" + path + "': " + std::strerror(errno); }

// Names an earlier run listed in the folder's manifest.
std::set<std::string> manifest_of(const fs::path& dir) {
  std::set<std::string> names;
  std::ifstream in(dir / ".rsim-files");
  std::string line;
  while (std::getline(in, line))
    if (!line.empty()) names.insert(line);
  return names;
}

}  // namespace

void ResultSet::open(void (*on_wait)(void*), void* ctx) {
  fs::path target = fs::absolute(fs::path(target_)).lexically_normal();
  if (!target.has_filename()) target = target.parent_path();
  std::error_code ec;
  // --out as a symbolic link is refused, naming it: the folder is replaced as a whole at every
  // commit, which replaced the link by a new folder and left its target without the results
  if (fs::is_symlink(fs::symlink_status(target, ec)))
    throw std::runtime_error("output folder '" + target_ + "' is a symbolic link" +
                             (fs::exists(target, ec) ? " (to '" + fs::canonical(target, ec).string() + "')" : std::string(" to nothing")) +
                             "; rsim replaces its output folder as a whole: give the folder itself");
  fs::path parent = target.parent_path();
  std::string base = target.filename().string();
  fs::create_directories(parent, ec);
  if (ec) throw std::runtime_error("cannot create output folder '" + parent.string() + "': " + ec.message());
  if (fs::exists(target, ec) && !fs::is_directory(target, ec))
    throw std::runtime_error("output folder '" + target_ + "' exists and is not a folder");
  // The folder is replaced as a whole: never the working folder or one above it, nor a folder
  // holding sub-folders (a person's files are carried over into the new set, folders are not).
  fs::path cwd = fs::current_path(ec);
  if (!ec && fs::exists(target)) {
    fs::path canon = fs::canonical(target, ec);
    std::string c = cwd.string(), t = canon.string();
    if (!ec && (c == t || (c.size() > t.size() && c.compare(0, t.size(), t) == 0 && (t.back() == '/' || c[t.size()] == '/'))))
      throw std::runtime_error("output folder '" + target_ + "' is the working folder or contains it; rsim replaces its output folder as a whole: use a folder of its own (e.g. out/NAME)");
    for (const auto& e : fs::directory_iterator(target, ec))
      if (e.is_directory(ec))
        throw std::runtime_error("output folder '" + target_ + "' holds the folder '" + e.path().filename().string() +
                                 "'; rsim replaces its output folder as a whole: use a folder of its own (e.g. out/NAME)");
  }
  // the lock lives beside the folder: the folder itself is replaced at every commit
  lock_path_ = (parent / ("." + base + ".rsim-lock")).string();
  lock_fd_ = ::open(lock_path_.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (lock_fd_ < 0) throw std::runtime_error(sys_error("cannot create lock file", lock_path_));
  if (::flock(lock_fd_, LOCK_EX | LOCK_NB) != 0) {
    if (errno != EWOULDBLOCK) throw std::runtime_error(sys_error("cannot lock", lock_path_));
    on_wait(ctx);
    while (::flock(lock_fd_, LOCK_EX) != 0)
      if (errno != EINTR) throw std::runtime_error(sys_error("cannot lock", lock_path_));
  }
  // with the lock held, any staging or old folder is a leftover of a killed run
  std::string stage_prefix = "." + base + ".rsim-staging-", old_prefix = "." + base + ".rsim-old-";
  for (const auto& e : fs::directory_iterator(parent, ec)) {
    std::string n = e.path().filename().string();
    if (n.rfind(old_prefix, 0) == 0 && !fs::exists(target)) {
      fs::rename(e.path(), target, ec);  // killed between the two renames of a commit: the old set comes back
      continue;
    }
    if (n.rfind(stage_prefix, 0) == 0 || n.rfind(old_prefix, 0) == 0) fs::remove_all(e.path(), ec);
  }
  staging_ = (parent / (stage_prefix + std::to_string(::getpid()))).string();
  target_ = target.string();
  // the interrupt handler knows the folder before it exists: an interrupt the moment it appears
  // removes it (it was set after creating it, and a signal in between left the folder behind)
  std::lock_guard<std::mutex> lock(g_mu);
  g_staging = staging_;
  fs::remove_all(staging_, ec);
  if (!fs::create_directory(staging_, ec) || ec) {
    g_staging.clear();
    throw std::runtime_error("cannot create staging folder '" + staging_ + "': " + ec.message());
  }
}

void ResultSet::commit(const std::vector<std::string>& files) {
  fs::path target(target_), staging(staging_);
  std::error_code ec;
  std::string manifest;
  for (const auto& f : files) manifest += f + "\n";
  {
    std::ofstream m(staging / ".rsim-files", std::ios::binary);
    m << manifest;
    if (!m.flush()) throw std::runtime_error("cannot write '" + (staging / ".rsim-files").string() + "'");
  }
  bool had_target = fs::is_directory(target, ec);
  if (had_target) {
    // what a person put into the folder stays: linked (or copied) into the new set
    std::set<std::string> ours = manifest_of(target);
    std::set<std::string> now(files.begin(), files.end());
    for (const auto& e : fs::directory_iterator(target, ec)) {
      std::string n = e.path().filename().string();
      if (ours.count(n) || now.count(n) || n == ".rsim-files") continue;
      std::error_code lec;
      fs::create_hard_link(e.path(), staging / n, lec);  // plain files only (checked when opened)
      if (lec) fs::copy(e.path(), staging / n, lec);
      if (lec) throw std::runtime_error("cannot carry '" + e.path().string() + "' over into the new result set: " + lec.message());
    }
  }
  std::lock_guard<std::mutex> lock(g_mu);  // an interrupt now waits for the commit to finish
  if (!had_target) {
    if (::rename(staging_.c_str(), target_.c_str()) != 0) throw std::runtime_error(sys_error("cannot rename staging folder to", target_));
  } else if (::renameat2(AT_FDCWD, staging_.c_str(), AT_FDCWD, target_.c_str(), RENAME_EXCHANGE) != 0) {
    // no atomic exchange on this filesystem: two renames; a run killed between them is repaired
    // by the next run (the old folder is renamed back)
    std::string old = (target.parent_path() / ("." + target.filename().string() + ".rsim-old-" + std::to_string(::getpid()))).string();
    if (::rename(target_.c_str(), old.c_str()) != 0) throw std::runtime_error(sys_error("cannot move the previous result set aside:", target_));
    if (::rename(staging_.c_str(), target_.c_str()) != 0) {
      int saved = errno;
      (void)::rename(old.c_str(), target_.c_str());
      errno = saved;
      throw std::runtime_error(sys_error("cannot rename staging folder to", target_));
    }
    staging_ = old;
  }
  // staging_ now names the previous set (or nothing): removed below and by the destructor
  committed_ = true;
  fs::remove_all(staging_, ec);
  g_staging.clear();
}

ResultSet::~ResultSet() {
  {
    std::lock_guard<std::mutex> lock(g_mu);
    if (g_staging == staging_) g_staging.clear();
  }
  std::error_code ec;
  if (!staging_.empty()) fs::remove_all(staging_, ec);
  if (lock_fd_ >= 0) ::close(lock_fd_);  // releases the lock
}

void install_interrupt_cleanup() {
  if (g_guarded) return;
  g_guarded = true;
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGTERM);
  // blocked in every thread (threads inherit the mask); one thread waits for them
  pthread_sigmask(SIG_BLOCK, &set, nullptr);
  std::thread([set] {
    int sig = 0;
    while (sigwait(&set, &sig) != 0) {
    }
    std::lock_guard<std::mutex> lock(g_mu);  // not while a commit is swapping folders
    if (!g_staging.empty()) {
      // workers are still writing into the folder: a file they create after remove_all listed it
      // made its last rmdir fail and left the folder behind (seen in CI). Renamed first, the
      // folder takes no new files by its path; what a worker opened before is removed on a retry.
      std::string doomed = g_staging + ".interrupted";
      if (::rename(g_staging.c_str(), doomed.c_str()) != 0) doomed = g_staging;
      std::error_code ec;
      for (int tries = 0; tries < 100; ++tries) {
        fs::remove_all(doomed, ec);
        if (!fs::exists(doomed, ec)) break;
      }
    }
    std::fflush(stdout);
    ::_exit(128 + sig);
  }).detach();
}

}  // namespace rsim
