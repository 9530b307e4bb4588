// What the command files of app/ share: exit codes, option parsing with did-you-mean, and text
// tables. Boost.Program_options is included here and in app/ only.
#pragma once
#include <boost/program_options.hpp>
#include <chrono>
#include <cstdio>
#include <iosfwd>
#include <mutex>
#include <string>
#include <vector>

#include "engine/eval/evaluate.hpp"
#include "engine/output/shard.hpp"

namespace rsim::cli {

namespace po = boost::program_options;

constexpr int kOk = 0, kConfig = 1, kUsage = 2;

// Display width of UTF-8 text (code points; every character here is one column wide).
size_t display_width(const std::string& s);
// Left-aligned columns, two spaces apart, aligned by display width.
std::string text_table(const std::vector<std::vector<std::string>>& rows);
// "rsim: error: MSG", a note with the hint, the pointer to --help; returns kUsage.
int usage_error(std::ostream& err, const std::string& msg, const std::string& hint = "");
// Parses a subcommand's options; on a usage problem prints it and returns false with `code` set.
bool parse(const std::vector<std::string>& args, const po::options_description& desc, const po::positional_options_description& pos,
           po::variables_map& vm, std::ostream& err, int& code);

// The commands, one file each (app/cmd_*.cpp); app/cli.cpp's table names them.
int cmd_run(const std::vector<std::string>& args, std::ostream& out, std::ostream& err);       // cmd_run.cpp
int cmd_merge(const std::vector<std::string>& args, std::ostream& out, std::ostream& err);     // cmd_merge.cpp
int cmd_validate(const std::vector<std::string>& args, std::ostream& out, std::ostream& err);  // cmd_run.cpp
int cmd_estimate(const std::vector<std::string>& args, std::ostream& out, std::ostream& err);  // cmd_estimate.cpp: a model's answer with no YAML written
int cmd_import(const std::vector<std::string>& args, std::ostream& out, std::ostream& err);    // cmd_import.cpp
int cmd_hw(const std::vector<std::string>& args, std::ostream& out, std::ostream& err);        // cmd_hw.cpp
int cmd_ops(const std::vector<std::string>& args, std::ostream& out, std::ostream& err);       // cmd_hw.cpp
int cmd_schema(const std::vector<std::string>& args, std::ostream& out, std::ostream& err);    // cmd_hw.cpp
int cmd_probe(const std::vector<std::string>& args, std::ostream& out, std::ostream& err);     // cmd_probe.cpp
int cmd_plan(const std::vector<std::string>& args, std::ostream& out, std::ostream& err);      // cmd_measure.cpp
int cmd_measure(const std::vector<std::string>& args, std::ostream& out, std::ostream& err);   // cmd_measure.cpp
int cmd_calibrate(const std::vector<std::string>& args, std::ostream& out, std::ostream& err); // cmd_calibrate.cpp

// A command's synopsis in the table of app/cli.cpp ("run FILE [--out DIR] ...")
const char* synopsis(const std::string& command);

// A ConfigError printed; returns kConfig.
int print_config_error(std::ostream& err, const ConfigError& e);
// `--set NAME=VALUE` pairs; a malformed one is a usage error (ok = false).
std::vector<std::pair<std::string, std::string>> parse_sets(const std::vector<std::string>& sets, bool& ok, std::ostream& err);
// The `--hw-dir DIR` option several commands take.
po::options_description hw_dir_option();
// Diagnostics in file order: by file (first seen first), line and column; each once.
ConfigError in_file_order(const Diags& found);
// Runs `$RSIM_PYTHON -m rsim_torch ARGS...` (rsim_torch_spawn.cpp); returns its exit status.
int run_rsim_torch(const std::vector<std::string>& args, std::ostream& err);

// Passes points on, keeping the run's warnings (e.g. a model that does not fit a platform's memory).
class WarningSink : public ResultSink {
 public:
  explicit WarningSink(ResultSink* next) : next_(next) {}
  void start(const RunHeader& h) override { next_->start(h); }
  void prepare(PointResult& pr, const Point& p) override { next_->prepare(pr, p); }
  void consume(PointResult&& pr, const Point& p) override {
    for (auto& w : pr.warnings) {
      if (first_.size() < 3) first_.push_back(w);
      ++total_;
    }
    for (const FootprintExcess& x : pr.footprint_excess) {  // (their text made only for the first few)
      if (first_.size() < 3) first_.push_back(footprint_warning(x, p));
      ++total_;
    }
    next_->consume(std::move(pr), p);
  }
  // The first few, then a count.
  void print(std::ostream& err) const {
    for (const auto& w : first_) err << format_diagnostic(w);
    if (total_ > first_.size())
      err << "rsim: note: " << total_ - first_.size() << " more warning" << (total_ - first_.size() == 1 ? "" : "s")
          << " like these (summary.csv: fits_in_memory)\n";
  }

 private:
  ResultSink* next_;
  std::vector<Diagnostic> first_;
  size_t total_ = 0;
};

// A progress bar on stderr for runs longer than a second, only on a terminal.
class Progress {
 public:
  explicit Progress(bool enabled, std::string what = "points") : enabled_(enabled), what_(std::move(what)), start_(std::chrono::steady_clock::now()) {}
  void update(size_t done, size_t total) {
    if (!enabled_) return;
    auto now = std::chrono::steady_clock::now();
    std::lock_guard<std::mutex> lock(mu_);
    if (now - start_ < std::chrono::seconds(1)) return;
    if (done != total && now - last_ < std::chrono::milliseconds(100)) return;
    last_ = now;
    int width = 40;
    int filled = static_cast<int>(static_cast<double>(done) / static_cast<double>(total) * width);
    std::fprintf(stderr, "\r[%s%s] %zu/%zu %s", std::string(static_cast<size_t>(filled), '#').c_str(),
                 std::string(static_cast<size_t>(width - filled), ' ').c_str(), done, total, what_.c_str());
    shown_ = true;
  }
  void finish() {
    if (shown_) std::fprintf(stderr, "\n");
  }

 private:
  bool enabled_;
  std::string what_;
  bool shown_ = false;
  std::chrono::steady_clock::time_point start_, last_{};
  std::mutex mu_;
};

// Sharded runs (cmd_merge.cpp). `rsim run --shard K/N`: which shard (n = 0: not sharded).
struct ShardRun {
  size_t k = 0, n = 0;
};
// "K/N" or "slurm" (K = SLURM_ARRAY_TASK_ID − SLURM_ARRAY_TASK_MIN, N = SLURM_ARRAY_TASK_COUNT); false
// after a usage error naming --shard
bool parse_shard(const std::string& text, ShardRun& shard, std::ostream& err);
std::string shard_suffix(const ShardRun& shard);  // "-shard-K-of-N" ("" when not sharded)
// The options a run's result depends on, as `--name=value` (what the shards of one run must share)
std::vector<std::string> shard_options(const po::variables_map& vm);
// Evaluates the shard's points into DIR/shard.rsim (committed whole); returns the exit code
int run_shard(const Scenario& s, const Catalog& catalog, RunOptions opt, const ShardRun& shard, const std::vector<std::string>& options,
              const std::string& dir, bool quiet, std::ostream& out, std::ostream& err);
// `rsim merge`: the shards, one per k in order, that cmd_run replays in place of evaluating
struct MergeRun {
  std::vector<std::unique_ptr<ShardReader>> shards;
};
void check_merge_scenario(Scenario& s, const MergeRun& m);  // throws ConfigError: the file changed since the shards ran
int cmd_run(const std::vector<std::string>& args, std::ostream& out, std::ostream& err, MergeRun* merge);  // cmd_run.cpp

}  // namespace rsim::cli
