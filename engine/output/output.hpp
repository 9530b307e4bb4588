// Result files (CSV, JSON) and the terminal table. Numbers in files are plain SI.
#pragma once
#include <cmath>
#include <cstdio>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "engine/eval/evaluate.hpp"

namespace rsim {

struct RunInfo {
  std::string version;  // rsim version
  const Scenario* scenario = nullptr;
};

std::string csv_escape(const std::string& s);
std::string json_escape(const std::string& s);
std::string num_text(double v);  // shortest round-trip text; "inf" for infinity
// The header of a sweep variable's column: its name, or `sweep.NAME` when a column of the table
// already has that name (a sweep over `batch` in summary.csv, over `dtype` in results.csv).
std::string sweep_column(const std::string& var, const std::vector<std::string>& columns);

// Whole tables of a collected run (tests, small runs). The same bytes as TableWriter writes.
std::string results_csv(const RunResult& r, const Scenario& s);
std::string summary_csv(const RunResult& r, const Scenario& s);
// One row per kernel (a layer, or a group fused by a pass): its layers, FLOPs, bytes, time and the
// bound of the kernel as a whole (results.csv's `bound` describes each layer alone).
std::string kernels_csv(const RunResult& r);
std::string results_json(const RunResult& r, const RunInfo& info);

// The pieces of each table: a header, then one piece per point, in point order (results.json
// separates points with a comma and ends with results_json_tail()).
std::string results_csv_header(const RunHeader& h);
std::string summary_csv_header(const RunHeader& h);
std::string kernels_csv_header(const RunHeader& h);
// ops.csv: per point × platform × network, one row per operator type (its layers, the kernels
// they start, FLOPs, bytes, the layers' roofline times and their share of the network's derated
// time), then `overhead`: what the execution mode adds
struct OpTotal {
  std::string op;
  double layers = 0, kernels = 0, flops = 0, bytes = 0, time_s = 0, derated_time_s = 0, share = 0;
};
std::vector<OpTotal> op_totals(const PointResult& pr, const std::string& platform, const std::string& network);
const std::vector<std::string>& ops_columns();
std::string ops_csv_header(const RunHeader& h);
void append_ops_csv(std::string& out, const PointResult& pr, const Point& p);
std::string ops_csv(const RunResult& r);
std::string results_json_head(const RunHeader& h, const RunInfo& info);
const char* results_json_tail();
void append_results_csv(std::string& out, const PointResult& pr, const Point& p);
void append_summary_csv(std::string& out, const PointResult& pr, const Point& p);
void append_kernels_csv(std::string& out, const PointResult& pr, const Point& p);
// A point of results.json in three parts: its object up to the list of its platforms
// (`{"index":…,"bindings":…,"settings":…,"platforms":[`), the platforms (PlatformRefs), the rest
// (`],"summary":[…],"layers":[…]}`; `layers`: false leaves out the per-layer rows).
void append_point_json_head(std::string& out, const PointResult& pr, const Point& p);
void append_point_json_tail(std::string& out, const PointResult& pr, const RunHeader& h, bool layers);

// The platforms of results.json's points, in point order: a platform is written in full at the
// first point that uses it; a later point that uses the same platform (the same definition, to
// the byte) writes {"name": NAME, "as_in_point": INDEX} instead of repeating it.
class PlatformRefs {
 public:
  // the point's platforms, comma-separated
  void append(std::string& out, const PointResult& pr, const Point& p);

 private:
  struct Written {
    std::shared_ptr<const Platform> platform;
    std::string text;
    size_t point = 0;
    std::string ref;  // {"name":…,"as_in_point":…}, made when first needed
  };
  std::vector<Written> written_;  // the first 64 distinct platforms (later ones are written in full)
};

// A whole point (head, platforms through `refs`, tail).
void append_results_json(std::string& out, const PointResult& pr, const Point& p, const RunHeader& h, bool layers, PlatformRefs& refs);

// All: results.csv, summary.csv, kernels.csv, results.json; Summary: summary.csv and
// results.json without per-layer rows
enum class Tables { All, Summary };

// Streams the tables into files in `dir` as points arrive: each point is formatted on its
// worker (prepare) and written in point order (consume); nothing but the files grows with the
// number of points. `next` (optional) receives every point after it is written.
class TableWriter : public ResultSink {
 public:
  TableWriter(std::string dir, Tables tables, RunInfo info);
  ~TableWriter() override;
  TableWriter(const TableWriter&) = delete;
  TableWriter& operator=(const TableWriter&) = delete;
  void start(const RunHeader& h) override;
  void prepare(PointResult& pr, const Point& p) override;
  void consume(PointResult&& pr, const Point& p) override;
  // Ends results.json and closes the files; returns their names. Throws std::runtime_error.
  std::vector<std::string> finish();
  double bytes() const { return bytes_; }

  ResultSink* next = nullptr;
  // Called once, after the first point, with the projected size of all tables in bytes.
  std::function<void(double bytes)> on_projection;

 private:
  // What waits to be written goes out in one writev per file: the large pieces of a point's text
  // from the text itself (kept in held_ until then: no copy of the bulk of the tables in user
  // space), small pieces through the arena.
  static constexpr size_t kArena = 1 << 20;     // small pieces (headers, a JSON comma, platforms)
  static constexpr size_t kHeldPiece = 2048;    // a piece of a point's text this long is not copied
  static constexpr size_t kPending = 2 << 20;   // bytes waiting before consume writes them
  struct Piece {
    const char* data;
    size_t size;
  };
  struct File {
    std::string name;
    int fd = -1;
    std::vector<Piece> pending;  // in file order
    size_t written = 0;          // bytes in the file
    size_t reserved = 0;         // its size with the room allocated ahead (see reserve)
    bool can_reserve = true;     // false once the file system refuses
  };
  // A large file's disk room is allocated ahead of its writes, kReserveStep at a time (fewer
  // block allocations per page written); finish cuts each file to what was written.
  static constexpr size_t kReserveFrom = 1 << 20, kReserveStep = 16 << 20;
  void reserve(File& f, size_t more);
  void open(const std::string& name, const std::string& head);
  // `held`: text lies in a point's text moved to held_ (it stays until flush_all)
  void put(size_t file, std::string_view text, bool held = false);
  void write_pending();  // writes every file's pending pieces; throws std::runtime_error
  void flush_all();      // the same, then the held texts go back to the pool
  void write_all(const File& f, const char* p, size_t n);  // throws std::runtime_error
  std::unique_ptr<char[]> arena_;
  size_t arena_used_ = 0;
  size_t pending_ = 0;
  std::deque<std::string> held_;  // points' texts referenced by pending pieces (a deque: never moved)
  std::mutex pool_mu_;
  std::vector<std::string> pool_;  // texts written out, for prepare to fill again (any thread)
  std::string dir_;
  Tables tables_;
  RunInfo info_;
  PlatformRefs platform_refs_;
  RunHeader header_;
  std::vector<File> files_;
  std::string platforms_;  // a point's platforms in results.json (consume's room, reused)
  double bytes_ = 0;
  size_t points_ = 0;
};

// Keeps the first points of a run (enough for the terminal tables) and counts the rest.
class PreviewSink : public ResultSink {
 public:
  PreviewSink(size_t max_rows, size_t max_summary) : max_rows_(max_rows), max_summary_(max_summary) {}
  void start(const RunHeader& h) override;
  void consume(PointResult&& pr, const Point& p) override;
  const RunResult& result() const { return r_; }
  size_t total_rows() const { return total_rows_; }
  size_t total_summary() const { return total_summary_; }

 private:
  size_t max_rows_, max_summary_;
  size_t kept_rows_ = 0, kept_summary_ = 0, total_rows_ = 0, total_summary_ = 0;
  RunResult r_;
};

// The compact per-layer table for the terminal, with SI prefixes; at most `max_rows` rows.
// `total_rows`: how many rows the run has when `r` holds only the first ones (0: r's own count).
std::string terminal_table(const RunResult& r, size_t max_rows, size_t total_rows = 0);
// Network totals per point and platform, then a note per network that leaves out ignored operators.
std::string terminal_summary(const RunResult& r, size_t max_rows, size_t total_rows = 0);
// "note: network 'N' leaves out operators mapped to ignore (onnx_ops): Op (k nodes); ..." lines, one per
// network (and list); "" when no network ignores any.
std::string ignored_notes(const RunResult& r);
// The dtype the layers of a run's networks ran in (each network's: SummaryRow::dtype), or
// "mixed (bf16, fp16)" when they differ; the first point's settings.dtype when there is no network
std::string run_dtype_label(const RunResult& r);
// The limit of a network row's derated time as text ("launch 97 %"; "" when it has no time)
std::string limit_text(const SummaryRow& s);
// A network's limit in words when it is not compute or memory ("" otherwise), e.g.
// "effnet_b0 on h100_sxm: 97 % of 968 µs is launch overhead (189 kernels × 5 µs, an assumed figure)"
std::string limit_sentence(const SummaryRow& s, const Settings& set, const Platform* pl);
// Those sentences of a run, one per line (the first `most`, then how many more)
std::string limit_notes(const RunResult& r, size_t most = 8);

// Writes `content` to `path` through a temporary file and a rename. Throws std::runtime_error.
void write_file_atomic(const std::string& path, const std::string& content);

// Transformer totals of a summary row (NaN where they do not apply: no phase, or the other phase).
struct LlmTotals {
  double tokens = NAN, tokens_per_s = NAN, derated_tokens_per_s = NAN;
  double ttft_s = NAN, derated_ttft_s = NAN;  // prefill: time to first token
  double tpot_s = NAN, derated_tpot_s = NAN;  // decode: time per output token
  // a request: its end-to-end latency (prefill and every decode step), 1 / time per output token,
  // and generated tokens per second over the request per GPU
  double e2e_s = NAN, derated_e2e_s = NAN, tokens_per_s_per_user = NAN, tokens_per_s_per_gpu = NAN;
};
LlmTotals llm_totals(const SummaryRow& s);

// Column names of results.csv and summary.csv (without the sweep variables), for docs and tests.
const std::vector<std::string>& results_columns();
const std::vector<std::string>& summary_columns();
const std::vector<std::string>& kernels_columns();

}  // namespace rsim
