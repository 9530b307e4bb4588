// shard.rsim: a sharded run's points, whole (every field of their rows, network totals, warnings),
// in the machine's own byte order (shards are merged where they were made, or on its kind).
#include "engine/output/shard.hpp"

#include <cerrno>
#include <cstring>
#include <fstream>
#include <algorithm>
#include <map>
#include <mutex>
#include <thread>
#include <stdexcept>
#include <type_traits>

namespace rsim {

namespace {

constexpr char kMagic[8] = {'R', 'S', 'I', 'M', 'S', 'H', 'D', '1'};
constexpr uint64_t kEnd = ~uint64_t{0};  // the index that ends the points, followed by their count

// A field written on its way out and read back on its way in, by the same lists (fields() below):
// a field left out of a list is left out of both.
struct Out {
  std::string& b;
  template <class T>
  void raw(const T& v) {
    b.append(reinterpret_cast<const char*>(&v), sizeof v);
  }
};
struct In {
  const char* p;
  const char* end;
  const std::string& path;
  std::map<std::string, std::shared_ptr<const SourceFile>>& files;
  template <class T>
  void raw(T& v) {
    if (static_cast<size_t>(end - p) < sizeof v) throw std::runtime_error(path + ": cut short (not a whole shard: was its run interrupted?)");
    std::memcpy(&v, p, sizeof v);
    p += sizeof v;
  }
};

template <class A, class T>
  requires(std::is_arithmetic_v<T> || std::is_enum_v<T>)
void io(A& a, T& v) {
  a.raw(v);
}
void io(Out& a, std::string& s) {
  uint64_t n = s.size();
  a.raw(n);
  a.b += s;
}
void io(In& a, std::string& s) {
  uint64_t n = 0;
  a.raw(n);
  if (static_cast<uint64_t>(a.end - a.p) < n) throw std::runtime_error(a.path + ": cut short (not a whole shard: was its run interrupted?)");
  s.assign(a.p, n);
  a.p += n;
}
template <class A, class T>
void io(A& a, std::vector<T>& v) {
  uint64_t n = v.size();
  a.raw(n);
  if constexpr (std::is_same_v<A, In>) {
    if (n > static_cast<uint64_t>(a.end - a.p)) throw std::runtime_error(a.path + ": cut short (not a whole shard: was its run interrupted?)");
    v.resize(n);
  }
  for (auto& x : v) io(a, x);
}
template <class A, class T, size_t N>
void io(A& a, std::array<T, N>& v) {
  for (auto& x : v) io(a, x);
}
template <class A, class T>
void io(A& a, std::optional<T>& v) {
  bool has = v.has_value();
  a.raw(has);
  if constexpr (std::is_same_v<A, In>)
    if (has) v.emplace();
  if (has) io(a, *v);
}
void io(Out& a, SourceLoc& l) {
  std::string path = l.file ? l.file->path : std::string();
  io(a, path), a.raw(l.line), a.raw(l.col);
}
void io(In& a, SourceLoc& l) {
  std::string path;
  io(a, path), a.raw(l.line), a.raw(l.col);
  l.file = nullptr;
  if (path.empty()) return;
  auto& f = a.files[path];  // the file as it is now, quoted under the warning
  if (!f) {
    std::ifstream in(path, std::ios::binary);
    f = SourceFile::from_text(path, std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>()));
  }
  l.file = f;
}
template <class A, class... T>
void all(A& a, T&... v) {
  (io(a, v), ...);
}

template <class A>
void io(A& a, OpCost& c) {
  all(a, c.macs, c.flops, c.macs_executed, c.flops_executed, c.params, c.weight_bytes, c.input_bytes, c.output_bytes, c.active_params, c.scale_bytes,
      c.kv_read_bytes, c.kv_write_bytes, c.scratch_bytes, c.resident_weight_bytes, c.kv_cache_bytes, c.quantized_weight_bytes, c.activation_bytes, c.shard,
      c.comm_bytes, c.all_to_all_bytes, c.all_gather_bytes);
}
template <class A>
void io(A& a, RoofPoint& r) {
  all(a, r.peak_flops_per_s, r.bandwidth_bytes_per_s, r.intensity, r.attainable_flops_per_s, r.compute_time_s, r.memory_time_s, r.time_s, r.bound, r.comm_time_s);
}
template <class A>
void io(A& a, DecodeShape& d) {
  all(a, d.batch, d.heads, d.kv_heads, d.head_dim, d.kv_tokens, d.max_kv_tokens, d.window, d.kv_bytes);
}
template <class A>
void io(A& a, Row& r) {
  all(a, r.point, r.platform, r.network, r.layer, r.op, r.dtype, r.compute_dtype, r.weights_dtype, r.kv_dtype, r.has_weights, r.touches_kv, r.input_shapes,
      r.output_shapes, r.output_shape, r.cost, r.bytes, r.compute_roof, r.memory_level, r.theoretical, r.derated, r.decode, r.collective, r.kernel, r.kernel_index,
      r.efficiency.compute, r.efficiency.bandwidth, r.metrics, r.twin);
}
template <class A>
void io(A& a, TimeParts& p) {
  all(a, p.compute, p.memory, p.launch, p.host, p.comm, p.bubble, p.assumed, p.assumed_comm, p.lo, p.hi);
}
template <class A>
void io(A& a, SummaryRow& s) {
  all(a, s.point, s.platform, s.network, s.layers, s.kernels, s.macs, s.flops, s.params, s.bytes, s.batch, s.intensity, s.time_s, s.derated_time_s, s.parts, s.dparts,
      s.banded, s.achieved_flops_per_s, s.derated_achieved_flops_per_s, s.memory_bound, s.compute_bound, s.derated_memory_bound, s.derated_compute_bound,
      s.active_params, s.phase, s.tokens, s.weight_footprint_bytes, s.kv_cache_bytes, s.activation_bytes, s.memory_footprint_bytes, s.memory_size_bytes,
      s.kv_write_bytes, s.kv_bytes_per_token, s.new_tokens_per_seq, s.memory_name, s.tensor_parallel, s.params_per_gpu, s.comm_bytes, s.comm_time_s, s.gpus,
      s.pipeline_parallel, s.micro_batches, s.pipeline_bubble, s.expert_parallel, s.data_parallel, s.ttft_s, s.derated_ttft_s, s.tpot_s, s.derated_tpot_s,
      s.prompt, s.generate, s.dtype, s.dtype_from_file, s.continuous, s.macs_by_dtype, s.layers_by_dtype, s.file_dtypes, s.ignored);
}
template <class A>
void io(A& a, Note& n) {
  all(a, n.loc, n.message);
}
template <class A>
void io(A& a, Diagnostic& d) {
  all(a, d.loc, d.message, d.notes, d.warning);
}
template <class A>
void io(A& a, FootprintExcess& x) {
  all(a, x.loc, x.network, x.platform, x.memory, x.footprint, x.size, x.weights, x.kv_cache, x.activations);
}
template <class A>
void io(A& a, PointResult& pr) {
  all(a, pr.rows, pr.summary, pr.warnings, pr.footprint_excess, pr.request_layer_evaluations);
}
template <class A>
void io(A& a, ShardHeader& h) {
  all(a, h.version, h.scenario, h.given, h.hash, h.options, h.k, h.n, h.points, h.var_names, h.metric_names);
}
// A field added to these is a field added to their lists above (else a merge would lose it).
static_assert(sizeof(Row) == 856 && sizeof(SummaryRow) == 800, "a field added to Row or SummaryRow goes into its list above");

}  // namespace

ShardWriter::ShardWriter(const std::string& path, ShardHeader h) : path_(path), h_(std::move(h)) {
  f_ = std::fopen(path.c_str(), "wb");
  if (!f_) throw std::runtime_error("cannot write '" + path + "': " + std::strerror(errno));
}

ShardWriter::~ShardWriter() {
  if (f_) std::fclose(f_);
}

void ShardWriter::start(const RunHeader& h) {
  h_.var_names = h.var_names, h_.metric_names = h.metric_names;
  buf_.append(kMagic, sizeof kMagic);
  Out o{buf_};
  io(o, h_);
}

void ShardWriter::consume(PointResult&& pr, const Point& p) {
  Out o{buf_};
  uint64_t index = p.index;
  o.raw(index);
  io(o, pr);
  ++written_;
  if (buf_.size() > (4u << 20)) flush();
}

void ShardWriter::flush() {
  if (!buf_.empty() && std::fwrite(buf_.data(), 1, buf_.size(), f_) != buf_.size()) throw std::runtime_error("cannot write '" + path_ + "': " + std::strerror(errno));
  buf_.clear();
}

void ShardWriter::finish() {
  Out o{buf_};
  o.raw(kEnd);
  uint64_t n = written_;
  o.raw(n);
  flush();
  const int rc = std::fclose(f_);
  f_ = nullptr;
  if (rc != 0) throw std::runtime_error("cannot write '" + path_ + "': " + std::strerror(errno));
}

struct ShardReader::State {
  std::string path, bytes;
  std::map<std::string, std::shared_ptr<const SourceFile>> files;
  size_t at = 0, read = 0;
  bool done = false;
};

ShardReader::ShardReader(const std::string& path) : st_(std::make_unique<State>()) {
  st_->path = path;
  std::ifstream in(path, std::ios::binary | std::ios::ate);
  if (!in) throw std::runtime_error("cannot read '" + path + "': " + std::strerror(errno));
  st_->bytes.resize(static_cast<size_t>(in.tellg()));
  in.seekg(0);
  if (!in.read(st_->bytes.data(), static_cast<std::streamsize>(st_->bytes.size()))) throw std::runtime_error("cannot read '" + path + "'");
  if (st_->bytes.size() < sizeof kMagic || std::memcmp(st_->bytes.data(), kMagic, sizeof kMagic) != 0)
    throw std::runtime_error(path + ": not a shard of rsim run --shard (or one of another rsim's format)");
  In i{st_->bytes.data() + sizeof kMagic, st_->bytes.data() + st_->bytes.size(), path, st_->files};
  io(i, h_);
  st_->at = static_cast<size_t>(i.p - st_->bytes.data());
}

ShardReader::~ShardReader() = default;

bool ShardReader::next(size_t& index, PointResult& pr) {
  if (st_->done) return false;
  In i{st_->bytes.data() + st_->at, st_->bytes.data() + st_->bytes.size(), st_->path, st_->files};
  uint64_t ix = 0;
  i.raw(ix);
  if (ix == kEnd) {
    uint64_t n = 0;
    i.raw(n);
    if (n != st_->read) throw std::runtime_error(st_->path + ": holds " + std::to_string(st_->read) + " points but says " + std::to_string(n));
    st_->done = true;
    return false;
  }
  pr = PointResult{};
  io(i, pr);
  st_->at = static_cast<size_t>(i.p - st_->bytes.data());
  ++st_->read;
  index = ix;
  return true;
}

std::vector<Point> shard_points(const Sweep& s, size_t k, size_t n) {
  std::vector<Point> out;
  const size_t total = static_cast<size_t>(point_count(s));
  for (size_t i = k; i < total; i += n) out.push_back(sweep_point(s, i));
  return out;
}

void replay_shards(const Scenario& s, const Catalog& catalog, const RunOptions& opt, std::vector<std::unique_ptr<ShardReader>>& shards, ResultSink& sink) {
  const ShardHeader& h = shards.front()->header();
  sink.start(RunHeader{h.var_names, h.metric_names, h.points});
  Scenario bare = s;  // each point's settings and platforms, bound without evaluating a network
  bare.networks.clear();
  bare.requests.clear();
  // In batches: the points read and bound in order (one binder: a platform no `${…}` changes is
  // one object at every point, as in a run), prepared (formatted) by `jobs` workers, and consumed
  // in order (what stream_scenario's workers and sink do)
  const size_t workers = static_cast<size_t>(std::max(1, opt.jobs));
  PointEvaluator binder(catalog, opt, s.path);
  const size_t batch = 64 * workers;
  std::vector<PointResult> prs(batch);
  std::vector<Point> pts(batch);
  for (size_t first = 0; first < h.points; first += batch) {
    const size_t m = std::min(batch, h.points - first);
    for (size_t j = 0; j < m; ++j) {
      const size_t i = first + j;
      size_t index = 0;
      if (!shards[i % shards.size()]->next(index, prs[j]) || index != i)
        throw ConfigError(SourceLoc{}, "shard " + std::to_string(i % shards.size()) + " lacks point " + std::to_string(i) + " (was it written for this sweep?)");
      pts[j] = sweep_point(s.sweep, i);
      const PointResult& bound = binder.evaluate(bare, pts[j]);
      prs[j].settings = bound.settings;
      prs[j].platforms = bound.platforms;
    }
    std::exception_ptr failed;
    std::mutex mu;
    auto work = [&](size_t w) {
      try {
        for (size_t j = w; j < m; j += workers) sink.prepare(prs[j], pts[j]);
      } catch (...) {
        std::lock_guard<std::mutex> lock(mu);
        if (!failed) failed = std::current_exception();
      }
    };
    if (workers == 1 || m < 2 * workers) {
      for (size_t w = 0; w < workers; ++w) work(w);
    } else {
      std::vector<std::thread> threads;
      for (size_t w = 1; w < workers; ++w) threads.emplace_back(work, w);
      work(0);
      for (auto& t : threads) t.join();
    }
    if (failed) std::rethrow_exception(failed);
    for (size_t j = 0; j < m; ++j) sink.consume(std::move(prs[j]), pts[j]);
    if (opt.progress) opt.progress(first + m, h.points);
  }
}

}  // namespace rsim
