// A sharded run's own output: `rsim run SCEN --shard K/N` evaluates the points whose index ≡ K
// (mod N) and keeps their results whole in one file (shard.rsim); `rsim merge` reads every shard
// and hands the points, in index order, to the same writers an unsharded run uses, so that the
// merged result set is the unsharded one byte for byte.
#pragma once
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "engine/eval/evaluate.hpp"

namespace rsim {

// What a shard says about itself: the run it belongs to and its place in it.
struct ShardHeader {
  std::string version;        // rsim's
  std::string scenario;       // the scenario file's absolute path
  std::string given;          // and as the run was given it (Scenario::path: what the tables write)
  std::string hash;           // fnv1a64 of its bytes (Scenario::hash)
  std::vector<std::string> options;  // rsim run's options but --shard, --out, --jobs and --quiet
  size_t k = 0, n = 1;        // this shard, of n
  size_t points = 0;          // points of the whole sweep
  std::vector<std::string> var_names, metric_names;
};

// Writes each point it is handed to `path` (a file in the shard's staging folder). finish()
// closes it with the count of points written; a file without that end is a shard cut short.
class ShardWriter : public ResultSink {
 public:
  ShardWriter(const std::string& path, ShardHeader h);
  ~ShardWriter() override;
  void start(const RunHeader& h) override;
  void consume(PointResult&& pr, const Point& p) override;
  void finish();  // throws std::runtime_error

 private:
  void flush();
  std::FILE* f_ = nullptr;
  std::string path_, buf_;
  ShardHeader h_;
  size_t written_ = 0;
};

// Reads a shard file: its header, then its points in order. Throws std::runtime_error naming the
// file for one that is not a shard, of another rsim version's format, or cut short.
class ShardReader {
 public:
  explicit ShardReader(const std::string& path);
  ~ShardReader();
  const ShardHeader& header() const { return h_; }
  // The next point's index and result (settings and platforms left empty: the merge binds them);
  // false after the last one.
  bool next(size_t& index, PointResult& pr);

 private:
  struct State;
  std::unique_ptr<State> st_;
  ShardHeader h_;
};

// The points of shard k of n: those whose index ≡ k (mod n), k < n.
std::vector<Point> shard_points(const Sweep& s, size_t k, size_t n);

// Hands every point of the shards (one reader per k, in order of k) to `sink` in index order, each
// with the settings and platforms its point binds to (the scenario evaluated without its
// networks), as stream_scenario would have. Throws std::runtime_error on a shard that lacks a point.
void replay_shards(const Scenario& s, const Catalog& catalog, const RunOptions& opt, std::vector<std::unique_ptr<ShardReader>>& shards, ResultSink& sink);

}  // namespace rsim
