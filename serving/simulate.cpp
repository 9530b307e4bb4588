#include "serving/simulate.hpp"

#include <algorithm>
#include <cmath>
#include <deque>
#include <set>
#include <stdexcept>
#include <unordered_map>

namespace rsim::serving {

namespace {

long long ceil_div(long long a, long long b) { return (a + b - 1) / b; }

// The paged KV cache: private blocks of running sequences, and prompt blocks kept by content hash
// (prefix caching), shared by reference count; an unreferenced cached block is evictable (least
// recently released first) and counts as free.
class BlockPool {
 public:
  explicit BlockPool(long long total) : total_(total > 0 ? total : std::numeric_limits<long long>::max() / 4), bounded_(total > 0) {}
  long long used() const { return private_ + static_cast<long long>(cache_.size() - evictable_.size()); }
  long long available() const { return total_ - used(); }
  bool bounded() const { return bounded_; }
  long long total() const { return total_; }
  // k private blocks, evicting cached ones as needed (the caller checked available() ≥ k)
  void alloc(long long k) {
    while (total_ - private_ - static_cast<long long>(cache_.size()) < k && !evictable_.empty()) {
      auto lru = evictable_.begin();
      cache_.erase(lru->second);
      evictable_.erase(lru);
    }
    private_ += k;
  }
  void free_private(long long k) { private_ -= k; }
  // the leading hashes present in the cache (at most `most`), and how many of them are evictable
  long long lookup(const std::vector<uint64_t>& h, long long most, long long& evictable) const {
    long long n = 0;
    evictable = 0;
    for (; n < most && n < static_cast<long long>(h.size()); ++n) {
      auto it = cache_.find(h[static_cast<size_t>(n)]);
      if (it == cache_.end()) break;
      if (it->second.refs == 0) ++evictable;
    }
    return n;
  }
  void acquire(uint64_t h) {
    Entry& e = cache_.at(h);
    if (e.refs++ == 0) evictable_.erase({e.stamp, h});
  }
  void release(uint64_t h) {
    Entry& e = cache_.at(h);
    if (--e.refs == 0) e.stamp = ++clock_, evictable_.insert({e.stamp, h});
  }
  // a private block, now full of prompt tokens of hash h, joins the cache (or, when the cache has
  // it already, the cached copy is shared and the private one freed)
  void publish(uint64_t h) {
    if (cache_.count(h)) {
      acquire(h);
    } else {
      cache_.emplace(h, Entry{1, 0});
    }
    --private_;
  }

 private:
  struct Entry {
    long long refs = 0;
    uint64_t stamp = 0;
  };
  long long total_, private_ = 0;
  bool bounded_;
  uint64_t clock_ = 0;
  std::unordered_map<uint64_t, Entry> cache_;
  std::set<std::pair<uint64_t, uint64_t>> evictable_;
};

struct Seq {
  long long prompt = 0, output = 0, generated = 0, computed = 0;
  long long blocks = 0, shared = 0;  // blocks held; of them, the leading ones from the cache
  double last_token_s = 0;
  bool scheduled = false;
};

class Engine {
 public:
  Engine(const std::vector<Request>& reqs, const EngineConfig& cfg, const StepCost& cost, bool keep)
      : req_(reqs), cfg_(cfg), cost_(cost), keep_(keep), pool_(cfg.kv_blocks), seqs_(reqs.size()) {
    sim_.requests.resize(reqs.size());
    size_t gaps = 0;
    for (const Request& r : reqs) gaps += static_cast<size_t>(std::max(0LL, r.output - 1));
    sim_.itl_s.reserve(gaps);
    for (size_t i = 0; i < reqs.size(); ++i) {
      Outcome& o = sim_.requests[i];
      o.arrival_s = reqs[i].arrival_s, o.prompt = reqs[i].prompt, o.output = reqs[i].output;
      seqs_[i].prompt = reqs[i].prompt, seqs_[i].output = reqs[i].output;
    }
  }
  Simulation run();

 private:
  const std::vector<Request>& req_;
  const EngineConfig& cfg_;
  const StepCost& cost_;
  bool keep_;
  BlockPool pool_;
  std::vector<Seq> seqs_;
  Simulation sim_;
  std::deque<size_t> waiting_;
  std::vector<size_t> running_;
  size_t next_ = 0;  // the next request not yet arrived (or, in a closed loop, not yet sent)
  long long in_flight_ = 0;
  double now_ = 0;

  bool never_fits(size_t i);
  void arrive();
  void preempt(size_t i);
  bool schedule_vllm(std::vector<Work>& prefill, std::vector<Work>& decode);
  void schedule_static(std::vector<Work>& prefill, std::vector<Work>& decode);
  bool admit(size_t i, long long budget, std::vector<Work>& prefill);
  void finish_step(const std::vector<Work>& prefill, const std::vector<Work>& decode, double start);
  void sample(double start, double end);
};

// A request that no schedule can serve gets a note and no times
bool Engine::never_fits(size_t i) {
  const Seq& s = seqs_[i];
  std::string& note = sim_.requests[i].note;
  if (cfg_.max_context > 0 && s.prompt + s.output > cfg_.max_context)
    note = "prompt + output = " + std::to_string(s.prompt + s.output) + " tokens, over the model's context of " + std::to_string(cfg_.max_context);
  else if (pool_.bounded() && ceil_div(s.prompt + s.output, cfg_.block_size) > pool_.total())
    note = "needs " + std::to_string(ceil_div(s.prompt + s.output, cfg_.block_size)) + " KV blocks; the cache holds " + std::to_string(pool_.total());
  else if (cfg_.scheduler == EngineConfig::Scheduler::Vllm && !cfg_.chunked_prefill && s.prompt > cfg_.max_num_batched_tokens)
    note = "a prompt of " + std::to_string(s.prompt) + " tokens, over max_num_batched_tokens " + std::to_string(cfg_.max_num_batched_tokens) + " without chunked prefill";
  return !note.empty();
}

void Engine::arrive() {
  const bool closed = cfg_.concurrency > 0;
  while (next_ < req_.size()) {
    if (closed ? in_flight_ >= cfg_.concurrency : req_[next_].arrival_s > now_) break;
    const size_t i = next_++;
    if (closed) sim_.requests[i].arrival_s = now_;
    if (never_fits(i)) continue;
    waiting_.push_back(i);
    ++in_flight_;
  }
}

// Recompute preemption: its blocks back to the pool, to the front of the queue, computed again
void Engine::preempt(size_t i) {
  Seq& s = seqs_[i];
  for (long long b = 0; b < s.shared; ++b) pool_.release(req_[i].block_hashes[static_cast<size_t>(b)]);
  pool_.free_private(s.blocks - s.shared);
  s.blocks = s.shared = s.computed = 0;
  ++sim_.requests[i].preemptions;
  ++sim_.preemptions;
  waiting_.push_front(i);
}

// A waiting request into the batch, with the prompt blocks the cache holds; false when its next
// tokens do not fit the budget (without chunked prefill) or the free blocks
bool Engine::admit(size_t i, long long budget, std::vector<Work>& prefill) {
  Seq& s = seqs_[i];
  const std::vector<uint64_t>& h = req_[i].block_hashes;
  long long hits = 0, evictable = 0;
  if (cfg_.prefix_caching && s.computed == 0)  // at least one token computed: the last is never read from the cache
    hits = pool_.lookup(h, (s.prompt + s.generated - 1) / cfg_.block_size, evictable);
  const long long start = hits * cfg_.block_size, need = s.prompt + s.generated - start;
  const long long n = cfg_.chunked_prefill ? std::min(need, budget) : need;
  if (n > budget) return false;
  const long long blocks = ceil_div(start + n, cfg_.block_size) - hits;
  if (blocks + evictable > pool_.available()) return false;
  for (long long b = 0; b < hits; ++b) pool_.acquire(h[static_cast<size_t>(b)]);
  pool_.alloc(blocks);
  s.shared = hits, s.blocks = hits + blocks, s.computed = start;
  if (!s.scheduled) {
    s.scheduled = true;
    sim_.requests[i].scheduled_s = now_;
    sim_.requests[i].cached_tokens = start;
  }
  prefill.push_back(Work{i, n, start, start + n == s.prompt + s.generated});
  return true;
}

// vLLM v1: the running sequences first (a decode, or their prompt's next chunk), preempting the
// latest admitted when blocks run out; then, in a step that preempted none, waiting requests FCFS
// while the budget, max_num_seqs and the blocks allow. False when nothing could be scheduled.
bool Engine::schedule_vllm(std::vector<Work>& prefill, std::vector<Work>& decode) {
  long long budget = cfg_.max_num_batched_tokens;
  bool preempted = false;
  for (size_t k = 0; k < running_.size() && budget > 0;) {
    const size_t i = running_[k];
    Seq& s = seqs_[i];
    const long long need = s.prompt + s.generated - s.computed, n = std::min(need, budget);
    const long long blocks = ceil_div(s.computed + n, cfg_.block_size) - s.blocks;
    bool self = false;
    while (blocks > pool_.available()) {
      const size_t victim = running_.back();
      running_.pop_back();
      preempt(victim);
      preempted = true;
      if (victim == i) {
        self = true;
        break;
      }
    }
    if (self) break;
    pool_.alloc(blocks);
    s.blocks += blocks;
    (s.generated > 0 && need == 1 ? decode : prefill).push_back(Work{i, n, s.computed, n == need});
    budget -= n;
    ++k;
  }
  if (!preempted)
    while (!waiting_.empty() && budget > 0 && static_cast<long long>(running_.size()) < cfg_.max_num_seqs) {
      const size_t i = waiting_.front();
      if (!admit(i, budget, prefill)) break;
      budget -= prefill.back().tokens;
      waiting_.pop_front();
      running_.push_back(i);
    }
  return !prefill.empty() || !decode.empty();
}

// A static batch: when the engine is idle, up to max_num_seqs arrived requests whose whole KV
// (prompt and output) fits, prefilled together in one step; then decoded together until the last
// finishes, admitting none meanwhile
void Engine::schedule_static(std::vector<Work>& prefill, std::vector<Work>& decode) {
  if (running_.empty()) {
    while (!waiting_.empty() && static_cast<long long>(running_.size()) < cfg_.max_num_seqs) {
      const size_t i = waiting_.front();
      Seq& s = seqs_[i];
      const long long blocks = ceil_div(s.prompt + s.output, cfg_.block_size);
      if (blocks > pool_.available()) break;
      pool_.alloc(blocks);
      s.blocks = blocks, s.scheduled = true;
      sim_.requests[i].scheduled_s = now_;
      prefill.push_back(Work{i, s.prompt, 0, true});
      waiting_.pop_front();
      running_.push_back(i);
    }
    return;
  }
  for (size_t i : running_) decode.push_back(Work{i, 1, seqs_[i].computed, true});
}

// The iteration done: its tokens computed, a token for each sequence whose known tokens are all
// computed, the finished ones out
void Engine::finish_step(const std::vector<Work>& prefill, const std::vector<Work>& decode, double start) {
  sample(start, now_);  // (the state during the step)
  double prompt_tokens = 0, output_tokens = 0;
  std::vector<size_t> finished;
  for (const auto* list : {&prefill, &decode})
    for (const Work& w : *list) {
      Seq& s = seqs_[w.request];
      Outcome& o = sim_.requests[w.request];
      if (s.generated == 0) prompt_tokens += static_cast<double>(w.tokens);
      s.computed += w.tokens;
      // prompt blocks now full join the prefix cache, in order
      if (cfg_.prefix_caching)
        while (s.shared < static_cast<long long>(req_[w.request].block_hashes.size()) && (s.shared + 1) * cfg_.block_size <= std::min(s.computed, s.prompt) &&
               s.shared < s.blocks)
          pool_.publish(req_[w.request].block_hashes[static_cast<size_t>(s.shared++)]);
      if (s.computed < s.prompt + s.generated) continue;  // a prefill chunk before the last
      ++s.generated;
      output_tokens += 1;
      if (s.generated == 1) o.first_token_s = now_;
      else sim_.itl_s.push_back(static_cast<float>(now_ - s.last_token_s));
      s.last_token_s = now_;
      if (s.generated >= s.output) finished.push_back(w.request);
    }
  for (size_t i : finished) {
    Seq& s = seqs_[i];
    sim_.requests[i].finish_s = now_;
    for (long long b = 0; b < s.shared; ++b) pool_.release(req_[i].block_hashes[static_cast<size_t>(b)]);
    pool_.free_private(s.blocks - s.shared);
    s.blocks = s.shared = 0;
    running_.erase(std::find(running_.begin(), running_.end(), i));
    --in_flight_;
  }
  Sample& at = sim_.timeline[static_cast<size_t>(std::ceil(now_))];
  at.prompt_tokens += prompt_tokens, at.output_tokens += output_tokens;
}

// The timeline's seconds within [start, end]: the state during the step (its tokens are added to
// the second it ends in)
void Engine::sample(double start, double end) {
  const size_t last = static_cast<size_t>(std::ceil(end));
  if (sim_.timeline.size() < last + 1) {
    const size_t from = sim_.timeline.size();
    sim_.timeline.resize(last + 1);
    for (size_t k = from; k <= last; ++k) sim_.timeline[k].t = static_cast<double>(k);
  }
  const double kv = pool_.bounded() ? static_cast<double>(pool_.used()) / static_cast<double>(pool_.total()) : 0;
  for (size_t k = static_cast<size_t>(std::max(0.0, std::ceil(start))); k <= last; ++k) {
    if (static_cast<double>(k) < start || static_cast<double>(k) > end) continue;
    Sample& x = sim_.timeline[k];
    x.running = static_cast<long long>(running_.size()), x.waiting = static_cast<long long>(waiting_.size()), x.kv_usage = kv;
  }
}

Simulation Engine::run() {
  const double last_arrival = cfg_.concurrency > 0 || req_.empty() ? 0 : req_.back().arrival_s;
  std::vector<Work> prefill, decode;
  for (;;) {
    arrive();
    prefill.clear(), decode.clear();
    const bool any = cfg_.scheduler == EngineConfig::Scheduler::Static ? (schedule_static(prefill, decode), !prefill.empty() || !decode.empty())
                                                                      : schedule_vllm(prefill, decode);
    if (!any) {
      if (next_ < req_.size() && cfg_.concurrency <= 0) {  // idle until the next arrival
        now_ = std::max(now_, req_[next_].arrival_s);
        continue;
      }
      break;  // (nothing waits that can run: every request done or noted)
    }
    if (cfg_.concurrency <= 0 && now_ > last_arrival + cfg_.drain_s) {
      sim_.queue_unbounded = true;
      break;
    }
    const double start = now_, t = std::max(0.0, cost_(prefill, decode));
    if (!std::isfinite(t)) throw std::runtime_error("an iteration's cost is not a finite time (" + std::to_string(t) + " s): the platform's roofs cannot price it");
    const double kv = pool_.bounded() ? static_cast<double>(pool_.used()) / static_cast<double>(pool_.total()) : 0;
    sim_.running_time += t * static_cast<double>(running_.size());
    sim_.kv_time += t * kv;
    sim_.max_running = std::max(sim_.max_running, static_cast<long long>(running_.size()));
    ++sim_.iterations;
    if (keep_)
      sim_.steps.push_back(Step{start, t, prefill, decode, static_cast<long long>(running_.size()), static_cast<long long>(waiting_.size()), pool_.used()});
    now_ = start + t;
    finish_step(prefill, decode, start);
  }
  for (auto& o : sim_.requests)
    if (!o.done() && o.note.empty()) o.note = "not finished: the run ended " + std::to_string(cfg_.drain_s) + " s after the last arrival with the queue still growing";
  sim_.end_s = now_;
  return std::move(sim_);
}

// a sorted list's quantile, interpolated between order statistics
template <class T>
double quantile_sorted(const std::vector<T>& v, double q) {
  if (v.empty()) return std::numeric_limits<double>::quiet_NaN();
  const double pos = q * static_cast<double>(v.size() - 1);
  const size_t lo = static_cast<size_t>(std::floor(pos)), hi = static_cast<size_t>(std::ceil(pos));
  return static_cast<double>(v[lo]) + (static_cast<double>(v[hi]) - static_cast<double>(v[lo])) * (pos - static_cast<double>(lo));
}

// mean, p50, p90, p99 (reorders v): each quantile's two order statistics by selection, in
// linear time (a list of 10^7 token gaps is not sorted)
template <class T>
void four(double out[4], std::vector<T>& v) {
  double s = 0;
  for (T x : v) s += static_cast<double>(x);
  out[0] = v.empty() ? std::numeric_limits<double>::quiet_NaN() : s / static_cast<double>(v.size());
  const double qs[3] = {0.5, 0.9, 0.99};
  for (int k = 0; k < 3; ++k) {
    if (v.empty()) {
      out[k + 1] = std::numeric_limits<double>::quiet_NaN();
      continue;
    }
    const double pos = qs[k] * static_cast<double>(v.size() - 1);
    const size_t lo = static_cast<size_t>(std::floor(pos));
    std::nth_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(lo), v.end());
    const double a = static_cast<double>(v[lo]);
    const double b = lo + 1 < v.size() ? static_cast<double>(*std::min_element(v.begin() + static_cast<std::ptrdiff_t>(lo) + 1, v.end())) : a;
    out[k + 1] = a + (b - a) * (pos - static_cast<double>(lo));
  }
}

}  // namespace

Simulation simulate(const std::vector<Request>& requests, const EngineConfig& cfg, const StepCost& cost, bool keep_steps) {
  return Engine(requests, cfg, cost, keep_steps).run();
}

double percentile(std::vector<double> v, double q) {
  std::sort(v.begin(), v.end());
  return quantile_sorted(v, q);
}

double tpot_of(const Outcome& o) {
  return o.output > 1 && o.done() ? (o.finish_s - o.first_token_s) / static_cast<double>(o.output - 1) : std::numeric_limits<double>::quiet_NaN();
}

Summary summarize(const Simulation& s, const Slo& slo) {
  Summary m;
  std::vector<double> ttft, tpot, e2e;
  std::vector<float> itl = s.itl_s;
  double first = std::numeric_limits<double>::infinity(), last = 0, in_tokens = 0, out_tokens = 0, prompt = 0, cached = 0;
  long long good = 0;
  for (const Outcome& o : s.requests) {
    ++m.requests;
    m.preemptions += o.preemptions;
    if (!o.done()) continue;
    ++m.finished;
    first = std::min(first, o.arrival_s), last = std::max(last, o.finish_s);
    in_tokens += static_cast<double>(o.prompt), out_tokens += static_cast<double>(o.output);
    prompt += static_cast<double>(o.prompt), cached += static_cast<double>(o.cached_tokens);
    ttft.push_back(o.first_token_s - o.arrival_s);
    e2e.push_back(o.finish_s - o.arrival_s);
    const double tp = tpot_of(o);
    if (tp == tp) tpot.push_back(tp);
    const bool ok = (slo.ttft_s <= 0 || ttft.back() <= slo.ttft_s) && (slo.tpot_s <= 0 || !(tp == tp) || tp <= slo.tpot_s);
    good += ok;
  }
  m.duration_s = m.finished > 0 ? last - first : 0;
  const double d = m.duration_s > 0 ? m.duration_s : std::numeric_limits<double>::quiet_NaN();
  m.requests_per_s = static_cast<double>(m.finished) / d;
  m.input_tokens_per_s = in_tokens / d, m.output_tokens_per_s = out_tokens / d;
  four(m.ttft, ttft), four(m.tpot, tpot), four(m.itl, itl), four(m.e2e, e2e);
  m.goodput_requests_per_s = static_cast<double>(good) / d;
  m.slo_attainment = m.requests > 0 ? static_cast<double>(good) / static_cast<double>(m.requests) : 0;
  m.mean_running = s.end_s > 0 ? s.running_time / s.end_s : 0;
  m.mean_kv_usage = s.end_s > 0 ? s.kv_time / s.end_s : 0;
  m.max_running = s.max_running;
  m.prefix_hit_rate = prompt > 0 ? cached / prompt : 0;
  return m;
}

}  // namespace rsim::serving
