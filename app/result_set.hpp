// A result set committed whole: files are written into a staging folder beside the output
// folder and swapped in with one rename (the commit point), under an advisory lock, so that an
// interrupted or failed run leaves the previous set untouched and two runs never mix.
#pragma once
#include <string>
#include <vector>

namespace rsim {

class ResultSet {
 public:
  // Locks `target` (waiting for another rsim writing there; `on_wait` is called once before
  // waiting), removes staging folders that killed runs left, and creates a fresh staging folder.
  // Throws std::runtime_error.
  template <class OnWait>
  ResultSet(const std::string& target, OnWait on_wait) : target_(target) {
    open(&call<OnWait>, &on_wait);
  }
  ~ResultSet();  // not committed: the staging folder is removed; the lock is released
  ResultSet(const ResultSet&) = delete;
  ResultSet& operator=(const ResultSet&) = delete;

  const std::string& staging() const { return staging_; }
  // Makes the staging folder the output folder. Files in the old folder that no rsim run wrote
  // (not in its .rsim-files) are carried over; rsim's own files are replaced as a set.
  // `files` are the names written into the staging folder. Throws std::runtime_error.
  void commit(const std::vector<std::string>& files);

 private:
  template <class F>
  static void call(void* f) {
    (*static_cast<F*>(f))();
  }
  void open(void (*on_wait)(void*), void* ctx);
  std::string target_, staging_, lock_path_;
  int lock_fd_ = -1;
  bool committed_ = false;
};

// In the rsim executable: SIGINT and SIGTERM remove the staging folder of the run in progress
// (if it has not committed yet) and end the process with 128 + the signal. Call once, before any
// thread starts. Without it (tests), signals keep their default action.
void install_interrupt_cleanup();

}  // namespace rsim
