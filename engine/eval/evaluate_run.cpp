// A scenario run: its points evaluated (in parallel, in order) into a sink, or collected; the evaluator that serving prices batches with.
#include "engine/eval/evaluate.hpp"

#include "engine/ops/llm_models.hpp"
#include "engine/graph/passes.hpp"

#include <algorithm>
#include <atomic>
#include <charconv>
#include <condition_variable>
#include <map>
#include <optional>
#include <filesystem>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <string_view>
#include <thread>
#include <type_traits>
#include <unordered_map>

namespace rsim {

void CollectSink::start(const RunHeader& h) {
  r_.var_names = h.var_names;
  r_.metric_names = h.metric_names;
}

void CollectSink::consume(PointResult&& pr, const Point& p) {
  for (const FootprintExcess& x : pr.footprint_excess) pr.warnings.push_back(footprint_warning(x, p));
  pr.footprint_excess.clear();
  r_.points.push_back(p);
  r_.results.push_back(std::move(pr));
  r_.results.back().text.clear();
}

struct PointEvaluator::State {
  PlatformCache cache;
  ModelLibrary models;
  std::unique_ptr<ExprEvaluator> ev;
  std::unique_ptr<ScriptHooks> hooks;
  std::unique_ptr<EvalContext> ctx;
  PointResult out;
  State(const Catalog& c, std::vector<std::string> dirs) : cache(c), models(std::move(dirs)) {}
};

PointEvaluator::PointEvaluator(const Catalog& catalog, const RunOptions& opt, const std::string& scenario_path) {
  std::vector<std::string> dirs = {(std::filesystem::path(scenario_path).parent_path() / "models").string()};
  dirs.insert(dirs.end(), opt.model_dirs.begin(), opt.model_dirs.end());
  st_ = std::make_unique<State>(catalog, std::move(dirs));
  st_->ev = opt.make_evaluator();
  if (opt.make_hooks) st_->hooks = opt.make_hooks();
  st_->ctx = std::make_unique<EvalContext>(EvalContext{opt.ops ? *opt.ops : builtin_ops(), st_->cache, *st_->ev, st_->hooks.get(), &st_->models, opt.importer.get()});
  st_->ctx->rows = true;
  st_->ctx->should_stop = opt.should_stop;
}

PointEvaluator::~PointEvaluator() = default;

const PointResult& PointEvaluator::evaluate(const Scenario& s, const Point& p) {
  evaluate_point(s, p, *st_->ctx, st_->out);
  return st_->out;
}

RunResult run_scenario(const Scenario& s, const Catalog& catalog, const RunOptions& opt) {
  RunResult rr;
  CollectSink sink(rr);
  stream_scenario(s, catalog, opt, sink);
  return rr;
}

namespace {

// A point's text and rows held while it waits for its turn
size_t held_bytes(const PointResult& r) { return r.text.capacity() + r.rows.capacity() * sizeof(Row); }

// A streamed run's workers and what they share: each evaluates the next point, and whoever completes
// the next point in order hands it (and any that follow it, ready) to the sink
struct Stream {
  const Scenario& s;
  const RunOptions& opt;
  ResultSink& sink;
  RunHeader& header;
  const OpRegistry& ops;
  PlatformCache& cache;
  ModelLibrary& models;
  size_t n;
  bool listed;
  // A worker may run ahead of the point being delivered by `window` points, and by up to
  // `window_far` while the points waiting in `ready` hold less than kAheadBytes: the worker
  // delivering may be writing a few MB to the files meanwhile (small points: dozens of them)
  size_t window, window_far;
  static constexpr size_t kAheadBytes = 32 << 20;
  size_t ready_bytes = 0;  // the text and rows of the points in `ready`

  std::mutex mu;  // guards everything below
  std::condition_variable cv;
  size_t next = 0, delivered = 0, done = 0;
  bool stop = false, started = false;
  bool delivering = false;  // a worker is handing points to the sink (outside the lock)
  std::map<size_t, std::pair<PointResult, Point>> ready;  // evaluated, waiting for their turn
  // points delivered from `ready`: their storage (rows, strings, lists) for a worker's next point
  std::vector<std::pair<PointResult, Point>> spare;
  size_t err_index = SIZE_MAX;
  std::unique_ptr<ConfigError> err;
  std::exception_ptr other;
  // the platforms without `${…}`, resolved once for the run (EvalContext::fixed_platforms)
  std::map<const CNode*, std::shared_ptr<const Platform>> fixed_platforms;

  Stream(const Scenario& s_, const RunOptions& opt_, ResultSink& sink_, RunHeader& header_, const OpRegistry& ops_, PlatformCache& cache_, ModelLibrary& models_,
         size_t n_, bool listed_, size_t window_, size_t window_far_)
      : s(s_), opt(opt_), sink(sink_), header(header_), ops(ops_), cache(cache_), models(models_), n(n_), listed(listed_), window(window_), window_far(window_far_) {}
  void fail(std::exception_ptr e) {  // with mu held
    if (!other) other = e;
    stop = true;
    cv.notify_all();
  }
  void deliver(std::unique_lock<std::mutex>& lock, bool direct, PointResult& pr, const Point& p);
  void worker();
};

// Whoever completes the next point in order delivers it and any that follow it, one worker
// at a time and without the lock (writing the files), so the others keep evaluating
// (`direct`: this worker's own point, pr, is the next in order)
void Stream::deliver(std::unique_lock<std::mutex>& lock, bool direct, PointResult& pr, const Point& p) {
  if (delivering) return;
  delivering = true;
  bool own = direct;
  while (!stop && started && (own || (!ready.empty() && ready.begin()->first == delivered))) {
    std::optional<decltype(ready)::node_type> node;
    if (!own) {
      node = ready.extract(ready.begin());
      ready_bytes -= held_bytes(node->mapped().first);
    }
    lock.unlock();
    std::exception_ptr bad;
    try {
      if (own) sink.consume(std::move(pr), p);
      else sink.consume(std::move(node->mapped().first), node->mapped().second);
    } catch (...) {
      bad = std::current_exception();
    }
    own = false;
    lock.lock();
    if (node) spare.push_back(std::move(node->mapped()));
    if (bad) {
      fail(bad);
      break;
    }
    ++delivered;
    cv.notify_all();
  }
  delivering = false;
}

void Stream::worker() {
  // a worker that cannot set up (a script fails to load) stops the run with that error
  std::unique_ptr<ExprEvaluator> ev;
  std::unique_ptr<ScriptHooks> hooks;
  try {
    ev = opt.make_evaluator();
    if (opt.make_hooks) hooks = opt.make_hooks();
  } catch (...) {
    std::lock_guard<std::mutex> lock(mu);
    fail(std::current_exception());
    return;
  }
  EvalContext ctx{ops, cache, *ev, hooks.get(), &models, opt.importer.get()};
  ctx.rows = opt.rows;
  ctx.on_networks = opt.on_networks;
  ctx.should_stop = opt.should_stop;
  ctx.fixed_platforms = fixed_platforms;
  {
    std::unique_lock<std::mutex> lock(mu);
    if (!started) {  // the first worker ready starts the sink (every worker has the same metrics)
      started = true;
      if (hooks) header.metric_names = hooks->metric_names();
      try {
        sink.start(header);
      } catch (...) {
        fail(std::current_exception());
      }
      cv.notify_all();
    }
  }
  // a point and its result, written over from point to point: a sink that keeps a result moves
  // it away; one that does not (the table writer) leaves its lists' storage to the next point
  Point p;
  PointResult pr;
  while (true) {
    size_t i;
    {
      std::unique_lock<std::mutex> lock(mu);
      cv.wait(lock, [&] { return stop || next >= n || next < delivered + window || (next < delivered + window_far && ready_bytes < kAheadBytes); });
      if (stop || next >= n) break;
      i = next++;
    }
    if (opt.should_stop && opt.should_stop()) {
      std::lock_guard<std::mutex> lock(mu);
      fail(std::make_exception_ptr(Interrupted()));
      break;
    }
    if (listed) p = opt.points[i];
    else sweep_point(s.sweep, i, p);
    try {
      evaluate_point(s, p, ctx, pr);
      sink.prepare(pr, p);
    } catch (const ConfigError& e) {
      std::lock_guard<std::mutex> lock(mu);
      if (i < err_index) {
        err_index = i;
        err = std::make_unique<ConfigError>(e);
      }
      stop = true;
      cv.notify_all();
      break;
    } catch (...) {
      std::lock_guard<std::mutex> lock(mu);
      fail(std::current_exception());
      break;
    }
    std::unique_lock<std::mutex> lock(mu);
    // the next point in order, with no worker delivering, is delivered from here (one worker:
    // every point); any other waits in `ready`
    const bool direct = !delivering && !stop && started && i == delivered;
    if (!direct) {
      ready_bytes += held_bytes(pr);
      ready.emplace(i, std::make_pair(std::move(pr), std::move(p)));
      if (!spare.empty()) {  // written over by this worker's next point
        pr = std::move(spare.back().first);
        p = std::move(spare.back().second);
        spare.pop_back();
      }
    }
    deliver(lock, direct, pr, p);
    ++done;
    cv.notify_all();
    if (opt.progress) {
      size_t k = done;
      lock.unlock();
      opt.progress(k, n);
    }
  }
}

}  // namespace

void stream_scenario(const Scenario& s, const Catalog& catalog, const RunOptions& opt, ResultSink& sink) {
  RunHeader header;
  header.var_names = sweep_names(s.sweep);
  const bool listed = !opt.points.empty();
  if (!listed) check_point_limit(s.sweep);
  const size_t n = listed ? opt.points.size() : static_cast<size_t>(point_count(s.sweep));
  header.points = n;
  const OpRegistry& ops = opt.ops ? *opt.ops : builtin_ops();
  PlatformCache cache(catalog);
  std::vector<std::string> model_dirs = {(std::filesystem::path(s.path).parent_path() / "models").string()};
  model_dirs.insert(model_dirs.end(), opt.model_dirs.begin(), opt.model_dirs.end());
  ModelLibrary models(model_dirs);
  int jobs = std::max(1, std::min<int>(opt.jobs, static_cast<int>(std::min<size_t>(n, 1024))));
  Stream st(s, opt, sink, header, ops, cache, models, n, listed, 4 * static_cast<size_t>(jobs), 64 * static_cast<size_t>(jobs));
  if (n > 0) {
    st.fixed_platforms = resolve_fixed_platforms(s, cache);
    if (jobs == 1) {
      st.worker();
    } else {
      std::vector<std::thread> threads;
      for (int j = 0; j < jobs; ++j) threads.emplace_back([&st] { st.worker(); });
      for (auto& t : threads) t.join();
    }
  } else {
    sink.start(header);
  }
  if (st.other) std::rethrow_exception(st.other);
  if (st.err) throw *st.err;
}

}  // namespace rsim
