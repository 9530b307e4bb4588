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

// A batch entry written in place (a Work built on the stack and copied is read back wider than it
// was written: a store-forwarding stall on every entry of the hot loop)
// (flatten: GCC at -O2 calls emplace_back out of line, a call a token in the hot loop)
[[gnu::flatten]] inline void add_work(std::vector<Work>& v, size_t request, long long tokens, long long context, bool last) {
  Work& w = v.emplace_back();
  w.request = request, w.tokens = tokens, w.context = context, w.last = last;
}

struct Seq {
  long long prompt = 0, output = 0, generated = 0, computed = 0;
  long long blocks = 0, shared = 0;  // blocks held; of them, the leading ones from the cache
  double last_token_s = 0;
  bool scheduled = false;
  bool transferred = false;  // its prompt's KV cache came from a prefill engine (until a preemption)
};

// What the engines of a deployment share: the requests, their state and their outcomes
struct Shared {
  const std::vector<Request>& req;
  const EngineConfig& cfg;
  const StepCost& cost;
  const DecodeCost& decode_cost;
  bool keep;
  std::vector<Seq> seqs;
  Simulation sim;
};

class Engine {
 public:
  enum class Role { Both, Prefill, Decode };
  Engine(Shared& sh, long long id, Role role) : sh_(sh), cfg_(sh.cfg), id_(id), role_(role), pool_(sh.cfg.kv_blocks) {}
  // a request routed here at t (the engine, idle, wakes at t)
  void enqueue(size_t i, double t) {
    if (!active()) now_ = std::max(now_, t);
    stalled_ = false;
    waiting_.push_back(i);
  }
  bool active() const { return !stalled_ && (!waiting_.empty() || !running_.empty()); }
  double now() const { return now_; }
  long long load() const { return static_cast<long long>(waiting_.size() + running_.size()); }
  long long running() const { return static_cast<long long>(running_.size()); }
  long long step_running() const { return step_running_; }  // running during the last step
  Role role() const { return role_; }
  // One iteration from now(): the requests it ends (finished; a prefill engine's: prefilled) into
  // `done`. False when nothing could be scheduled (the engine stalls until a request comes).
  bool step(std::vector<size_t>& done);
  // The decode-only iterations that start before `until` and end no request (none admitted, none
  // preempted), stepped from their aggregates with the shared decode cost: false when the next
  // iteration is not one (the caller steps it)
  bool fast_forward(double until);
  // a request no schedule can serve: its note
  static bool never_fits(Shared& sh, size_t i, long long total_blocks);
  std::vector<Sample> timeline;
  double running_time = 0, kv_time = 0;
  long long iterations = 0;

 private:
  Shared& sh_;
  const EngineConfig& cfg_;
  long long id_;
  Role role_;
  BlockPool pool_;
  std::deque<size_t> waiting_;
  std::vector<size_t> running_;
  double now_ = 0;
  bool stalled_ = false;
  long long step_running_ = 0;
  std::vector<Work> prefill_, decode_;
  std::vector<long long> slack_;  // (fast_forward's)

  void release(size_t i);
  void preempt(size_t i);
  bool schedule_vllm(std::vector<Work>& prefill, std::vector<Work>& decode);
  void schedule_static(std::vector<Work>& prefill, std::vector<Work>& decode);
  long long admit(size_t i, long long budget, std::vector<Work>& prefill, std::vector<Work>& decode);
  void finish_step(const std::vector<Work>& prefill, const std::vector<Work>& decode, double start, std::vector<size_t>& done);
  void sample(double start, double end);
  // what admitting request i takes: the cache's hits, the evictable ones among them, the first
  // token computed, the tokens n and the new blocks
  struct Admission {
    long long hits = 0, evictable = 0, start = 0, n = 0, blocks = 0;
  };
  Admission plan_admit(size_t i, long long budget) const;
  bool admits(const Admission& a, long long budget, long long available) const { return a.n <= budget && a.blocks + a.evictable <= available; }
};

// A request that no schedule can serve gets a note and no times
bool Engine::never_fits(Shared& sh, size_t i, long long total_blocks) {
  const EngineConfig& cfg = sh.cfg;
  const Seq& s = sh.seqs[i];
  std::string& note = sh.sim.requests[i].note;
  if (cfg.max_context > 0 && s.prompt + s.output > cfg.max_context)
    note = "prompt + output = " + std::to_string(s.prompt + s.output) + " tokens, over the model's context of " + std::to_string(cfg.max_context);
  else if (total_blocks > 0 && ceil_div(s.prompt + s.output, cfg.block_size) > total_blocks)
    note = "needs " + std::to_string(ceil_div(s.prompt + s.output, cfg.block_size)) + " KV blocks; the cache holds " + std::to_string(total_blocks);
  else if (cfg.scheduler == EngineConfig::Scheduler::Vllm && !cfg.chunked_prefill && s.prompt > cfg.max_num_batched_tokens)
    note = "a prompt of " + std::to_string(s.prompt) + " tokens, over max_num_batched_tokens " + std::to_string(cfg.max_num_batched_tokens) + " without chunked prefill";
  return !note.empty();
}

// its blocks back to the pool (cached ones released, private ones freed)
void Engine::release(size_t i) {
  Seq& s = sh_.seqs[i];
  for (long long b = 0; b < s.shared; ++b) pool_.release(sh_.req[i].block_hashes[static_cast<size_t>(b)]);
  pool_.free_private(s.blocks - s.shared);
  s.blocks = s.shared = 0;
}

// Recompute preemption: its blocks back to the pool, to the front of the queue, computed again
void Engine::preempt(size_t i) {
  release(i);
  Seq& s = sh_.seqs[i];
  s.computed = 0, s.transferred = false;
  ++sh_.sim.requests[i].preemptions;
  ++sh_.sim.preemptions;
  waiting_.push_front(i);
}

// A waiting request into the batch, with the prompt blocks the cache holds (or, transferred, its
// prompt's KV cache but the last token); false when its next tokens do not fit the budget (without
// chunked prefill) or the free blocks (0 tokens)
Engine::Admission Engine::plan_admit(size_t i, long long budget) const {
  const Seq& s = sh_.seqs[i];
  Admission a;
  if (s.transferred) a.start = s.prompt - 1;
  else if (cfg_.prefix_caching && s.computed == 0)  // at least one token computed: the last is never read from the cache
    a.hits = pool_.lookup(sh_.req[i].block_hashes, (s.prompt + s.generated - 1) / cfg_.block_size, a.evictable), a.start = a.hits * cfg_.block_size;
  const long long need = s.prompt + s.generated - a.start;
  a.n = cfg_.chunked_prefill ? std::min(need, budget) : need;
  a.blocks = ceil_div(a.start + a.n, cfg_.block_size) - a.hits;
  return a;
}

long long Engine::admit(size_t i, long long budget, std::vector<Work>& prefill, std::vector<Work>& decode) {
  Seq& s = sh_.seqs[i];
  const std::vector<uint64_t>& h = sh_.req[i].block_hashes;
  const Admission a = plan_admit(i, budget);
  if (!admits(a, budget, pool_.available())) return 0;
  const long long hits = a.hits, start = a.start, n = a.n, blocks = a.blocks;
  for (long long b = 0; b < hits; ++b) pool_.acquire(h[static_cast<size_t>(b)]);
  pool_.alloc(blocks);
  s.shared = hits, s.blocks = hits + blocks, s.computed = start;
  Outcome& o = sh_.sim.requests[i];
  if (!s.scheduled) {
    s.scheduled = true;
    o.scheduled_s = now_;
    o.cached_tokens = start;
  }
  add_work(s.transferred && n == 1 ? decode : prefill, i, n, start, start + n == s.prompt + s.generated);
  return n;
}

// vLLM v1: the running sequences first (a decode, or their prompt's next chunk), preempting the
// latest admitted when blocks run out; then, in a step that preempted none, waiting requests FCFS
// while the budget, max_num_seqs and the blocks allow. False when nothing could be scheduled.
bool Engine::schedule_vllm(std::vector<Work>& prefill, std::vector<Work>& decode) {
  long long budget = cfg_.max_num_batched_tokens;
  bool preempted = false;
  for (size_t k = 0; k < running_.size() && budget > 0;) {
    const size_t i = running_[k];
    Seq& s = sh_.seqs[i];
    const long long need = s.prompt + s.generated - s.computed, n = std::min(need, budget);
    // a new block only when its tokens pass the last one held (most decodes need none: a branch,
    // not a select that divides every time)
    long long blocks = 0;
    if (s.computed + n > s.blocks * cfg_.block_size) [[unlikely]]
      blocks = n == 1 && s.computed == s.blocks * cfg_.block_size ? 1 : ceil_div(s.computed + n, cfg_.block_size) - s.blocks;
    bool self = false;
    while (blocks > 0 && blocks > pool_.available()) {
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
    if (blocks > 0) pool_.alloc(blocks), s.blocks += blocks;
    add_work(s.generated > 0 && need == 1 ? decode : prefill, i, n, s.computed, n == need);
    budget -= n;
    ++k;
  }
  if (!preempted)
    while (!waiting_.empty() && budget > 0 && static_cast<long long>(running_.size()) < cfg_.max_num_seqs) {
      const size_t i = waiting_.front();
      const long long n = admit(i, budget, prefill, decode);
      if (n == 0) break;
      budget -= n;
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
      Seq& s = sh_.seqs[i];
      const long long blocks = ceil_div(s.prompt + s.output, cfg_.block_size);
      if (blocks > pool_.available()) break;
      pool_.alloc(blocks);
      const long long start = s.transferred ? s.prompt - 1 : 0;
      s.blocks = blocks, s.scheduled = true, s.computed = start;
      if (!(sh_.sim.requests[i].scheduled_s == sh_.sim.requests[i].scheduled_s)) sh_.sim.requests[i].scheduled_s = now_;
      add_work(prefill, i, s.prompt - start, start, true);
      waiting_.pop_front();
      running_.push_back(i);
    }
    return;
  }
  for (size_t i : running_) add_work(decode, i, 1, sh_.seqs[i].computed, true);
}

// The iteration done: its tokens computed, a token for each sequence whose known tokens are all
// computed, the finished ones out (a prefill engine's once their prompt is computed: the KV
// cache leaves for a decode engine, the token it sampled is not sent)
void Engine::finish_step(const std::vector<Work>& prefill, const std::vector<Work>& decode, double start, std::vector<size_t>& done) {
  sample(start, now_);  // (the state during the step)
  long long prompt_tokens = 0, output_tokens = 0, whole_gaps = 0;  // (integers: a double's sum is a 4-cycle chain a token)
  for (const auto* list : {&prefill, &decode})
    for (const Work& w : *list) {
      Seq& s = sh_.seqs[w.request];
      if (s.generated == 0 && !s.transferred) prompt_tokens += w.tokens;
      s.computed += w.tokens;
      if (cfg_.prefix_caching) {  // prompt blocks now full join the prefix cache, in order
        const std::vector<uint64_t>& h = sh_.req[w.request].block_hashes;
        while (s.shared < static_cast<long long>(h.size()) && (s.shared + 1) * cfg_.block_size <= std::min(s.computed, s.prompt) && s.shared < s.blocks)
          pool_.publish(h[static_cast<size_t>(s.shared++)]);
      }
      if (s.computed < s.prompt + s.generated) continue;  // a prefill chunk before the last
      if (role_ == Role::Prefill) {
        done.push_back(w.request);
        continue;
      }
      ++s.generated;
      ++output_tokens;
      if (s.generated == 1) sh_.sim.requests[w.request].first_token_s = now_;
      else if (s.last_token_s == start) ++whole_gaps;  // one whole iteration since its last token
      else sh_.sim.itl_other_s.push_back(now_ - s.last_token_s);
      s.last_token_s = now_;
      if (s.generated >= s.output) done.push_back(w.request);
    }
  if (whole_gaps > 0) sh_.sim.itl_steps.emplace_back(now_ - start, whole_gaps);
  for (size_t i : done) {
    if (role_ != Role::Prefill) sh_.sim.requests[i].finish_s = now_;
    release(i);
    running_.erase(std::find(running_.begin(), running_.end(), i));
  }
  Sample& at = timeline[static_cast<size_t>(std::ceil(now_))];
  at.prompt_tokens += static_cast<double>(prompt_tokens), at.output_tokens += static_cast<double>(output_tokens);
}

// The timeline's seconds within [start, end]: the state during the step (its tokens are added to
// the second it ends in)
void Engine::sample(double start, double end) {
  const size_t last = static_cast<size_t>(std::ceil(end));
  if (timeline.size() < last + 1) {
    const size_t from = timeline.size();
    timeline.resize(last + 1);
    for (size_t k = from; k <= last; ++k) timeline[k].t = static_cast<double>(k);
  }
  const double kv = pool_.bounded() ? static_cast<double>(pool_.used()) / static_cast<double>(pool_.total()) : 0;
  for (size_t k = static_cast<size_t>(std::max(0.0, std::ceil(start))); k <= last; ++k) {
    if (static_cast<double>(k) < start || static_cast<double>(k) > end) continue;
    Sample& x = timeline[k];
    x.running = static_cast<long long>(running_.size()), x.waiting = static_cast<long long>(waiting_.size()), x.kv_usage = kv;
  }
}

bool Engine::step(std::vector<size_t>& done) {
  std::vector<Work>& prefill = prefill_;  // (kept between steps: no allocation a step)
  std::vector<Work>& decode = decode_;
  prefill.clear(), decode.clear();
  const bool any = cfg_.scheduler == EngineConfig::Scheduler::Static ? (schedule_static(prefill, decode), !prefill.empty() || !decode.empty())
                                                                    : schedule_vllm(prefill, decode);
  if (!any) {
    stalled_ = true;
    return false;
  }
  const double start = now_, t = std::max(0.0, sh_.cost(prefill, decode));
  if (!std::isfinite(t)) throw std::runtime_error("an iteration's cost is not a finite time (" + std::to_string(t) + " s): the platform's roofs cannot price it");
  const double kv = pool_.bounded() ? static_cast<double>(pool_.used()) / static_cast<double>(pool_.total()) : 0;
  step_running_ = static_cast<long long>(running_.size());
  running_time += t * static_cast<double>(running_.size());
  kv_time += t * kv;
  ++iterations;
  if (sh_.keep)
    sh_.sim.steps.push_back(Step{id_, start, t, prefill, decode, static_cast<long long>(running_.size()), static_cast<long long>(waiting_.size()), pool_.used()});
  now_ = start + t;
  finish_step(prefill, decode, start, done);
  return true;
}

bool Engine::fast_forward(double until) {
  const long long n = static_cast<long long>(running_.size()), bs = cfg_.block_size;
  if (!sh_.decode_cost || sh_.keep || role_ != Role::Both || cfg_.scheduler != EngineConfig::Scheduler::Vllm || n == 0 || n > cfg_.max_num_batched_tokens ||
      !(now_ < until))
    return false;
  // every running sequence decodes (its token of the last iteration is its latest), holds blocks
  // to within one of its tokens and has no prompt block left to publish; none ends in the run
  long long sum = 0, kmax = 0, left = std::numeric_limits<long long>::max();
  std::vector<long long>& slack = slack_;  // how many blocks fall due at each step mod block_size
  slack.assign(static_cast<size_t>(bs), 0);
  for (size_t i : running_) {
    const Seq& s = sh_.seqs[i];
    const long long d = s.blocks * bs - s.computed;
    if (s.generated == 0 || s.computed != s.prompt + s.generated - 1 || s.last_token_s != now_ || d < 0 || d >= bs) return false;
    if (cfg_.prefix_caching && s.shared < static_cast<long long>(sh_.req[i].block_hashes.size()) && (s.shared + 1) * bs <= std::min(s.computed, s.prompt) &&
        s.shared < s.blocks)
      return false;
    ++slack[static_cast<size_t>(d)];
    sum += s.computed, kmax = std::max(kmax, s.computed), left = std::min(left, s.output - s.generated);
  }
  // a waiting request that could join: each iteration would admit it, unless its blocks do not
  // fit (a run only takes blocks, so what does not fit now never does in it); the prefix cache's
  // hits could change under eviction: not run then
  const long long budget = cfg_.max_num_batched_tokens - n;
  const bool could_admit = !waiting_.empty() && n < cfg_.max_num_seqs && budget > 0;
  if (could_admit && cfg_.prefix_caching) return false;
  const Admission next = could_admit ? plan_admit(waiting_.front(), budget) : Admission{};
  long long m = 0;
  for (; m < left - 1 && now_ < until; ++m) {
    const long long due = slack[static_cast<size_t>(m % bs)];
    if (due > pool_.available()) break;  // a preemption: the slow path's
    if (could_admit && admits(next, budget, pool_.available() - due)) break;
    if (due > 0) pool_.alloc(due);
    const double start = now_, t = std::max(0.0, sh_.decode_cost(n, sum + n * m, kmax + m));
    if (!std::isfinite(t)) throw std::runtime_error("an iteration's cost is not a finite time (" + std::to_string(t) + " s): the platform's roofs cannot price it");
    const double kv = pool_.bounded() ? static_cast<double>(pool_.used()) / static_cast<double>(pool_.total()) : 0;
    step_running_ = n;
    running_time += t * static_cast<double>(n);
    kv_time += t * kv;
    ++iterations;
    now_ = start + t;
    sample(start, now_);
    sh_.sim.itl_steps.emplace_back(now_ - start, n);
    timeline[static_cast<size_t>(std::ceil(now_))].output_tokens += static_cast<double>(n);
  }
  if (m == 0) return false;
  for (size_t i : running_) {
    Seq& s = sh_.seqs[i];
    const long long d = s.blocks * bs - s.computed;  // blocks fell due at steps d, d + bs, … (from 0)
    if (d <= m - 1) s.blocks += 1 + (m - 1 - d) / bs;
    s.computed += m, s.generated += m, s.last_token_s = now_;
  }
  return true;
}

// The deployment: arrivals (and a closed loop's sends, and KV transfers) delivered in time order,
// each to an engine the router picks; the engine that is earliest steps next. An arrival at an
// engine's step start joins that step.
class Cluster {
 public:
  Cluster(const std::vector<Request>& reqs, const EngineConfig& cfg, const StepCost& cost, const DecodeCost& decode_cost, bool keep, const Deployment& dep)
      : sh_{reqs, cfg, cost, decode_cost, keep, std::vector<Seq>(reqs.size()), Simulation{}}, dep_(dep) {
    sh_.sim.requests.resize(reqs.size());
    for (size_t i = 0; i < reqs.size(); ++i) {
      Outcome& o = sh_.sim.requests[i];
      o.arrival_s = reqs[i].arrival_s, o.prompt = reqs[i].prompt, o.output = reqs[i].output;
      sh_.seqs[i].prompt = reqs[i].prompt, sh_.seqs[i].output = reqs[i].output;
    }
    const long long front = dep.disaggregated ? dep.prefill_replicas : dep.replicas, back = dep.disaggregated ? dep.decode_replicas : 0;
    for (long long k = 0; k < front; ++k) engines_.emplace_back(sh_, k, dep.disaggregated ? Engine::Role::Prefill : Engine::Role::Both);
    for (long long k = 0; k < back; ++k) engines_.emplace_back(sh_, front + k, Engine::Role::Decode);
    pools_[0] = {0, static_cast<size_t>(front)}, pools_[1] = {static_cast<size_t>(front), static_cast<size_t>(front + back)};
  }
  Simulation run();

 private:
  struct Event {
    double t;
    uint64_t order;
    size_t request;  // a transfer's; a closed loop's send takes the next request when delivered
    bool transfer;
    bool operator>(const Event& o) const { return t != o.t ? t > o.t : order > o.order; }
  };
  Shared sh_;
  const Deployment& dep_;
  std::deque<Engine> engines_;
  std::pair<size_t, size_t> pools_[2];  // the engines a new request, a transferred one, goes to
  size_t rr_[2] = {0, 0};
  std::vector<Event> events_;  // a min-heap
  uint64_t order_ = 0;
  size_t next_ = 0;
  long long in_flight_ = 0;

  void push(double t, size_t request, bool transfer) {
    events_.push_back(Event{t, order_++, request, transfer});
    std::push_heap(events_.begin(), events_.end(), std::greater<Event>());
  }
  size_t route(int pool) {
    const auto [lo, hi] = pools_[pool];
    if (dep_.router == Deployment::Router::RoundRobin) return lo + rr_[pool]++ % (hi - lo);
    size_t best = lo;
    for (size_t k = lo + 1; k < hi; ++k)
      if (engines_[k].load() < engines_[best].load()) best = k;
    return best;
  }
  void deliver_new(size_t i, double t);
  void merge();
};

void Cluster::deliver_new(size_t i, double t) {
  const bool closed = sh_.cfg.concurrency > 0;
  Outcome& o = sh_.sim.requests[i];
  if (closed) o.arrival_s = t;
  if (Engine::never_fits(sh_, i, sh_.cfg.kv_blocks)) {
    if (closed) push(t, 0, false);  // its slot goes to the next
    return;
  }
  ++in_flight_;
  const size_t e = route(0);
  o.replica = static_cast<long long>(e);
  engines_[e].enqueue(i, t);
}

Simulation Cluster::run() {
  const bool closed = sh_.cfg.concurrency > 0;
  const std::vector<Request>& req = sh_.req;
  const double last_arrival = closed || req.empty() ? 0 : req.back().arrival_s;
  const double inf = std::numeric_limits<double>::infinity();
  if (closed)
    for (long long k = 0; k < sh_.cfg.concurrency; ++k) push(0, 0, false);
  std::vector<size_t> done;
  long long running_sum = 0;
  for (;;) {
    const double t_new = !closed && next_ < req.size() ? req[next_].arrival_s : inf;
    const double t_event = events_.empty() ? inf : events_.front().t;
    Engine* e = nullptr;
    for (Engine& x : engines_)
      if (x.active() && (!e || x.now() < e->now())) e = &x;
    const double t_engine = e ? e->now() : inf;
    if (t_new == inf && t_event == inf && !e) break;
    if (std::min(t_new, t_event) <= t_engine) {
      if (t_event <= t_new) {
        const Event ev = events_.front();
        std::pop_heap(events_.begin(), events_.end(), std::greater<Event>());
        events_.pop_back();
        if (ev.transfer) {
          const size_t d = route(1);
          sh_.sim.requests[ev.request].decode_replica = static_cast<long long>(d - pools_[1].first);
          sh_.seqs[ev.request].transferred = true;
          engines_[d].enqueue(ev.request, ev.t);
        } else if (next_ < req.size()) {
          deliver_new(next_++, ev.t);
        }
      } else {
        deliver_new(next_++, t_new);
      }
      continue;
    }
    if (!closed && t_engine > last_arrival + sh_.cfg.drain_s) {
      sh_.sim.queue_unbounded = true;
      break;
    }
    // one engine: a run of decode-only iterations up to the next arrival or send at once (with
    // more, the engines' steps interleave: max_running sums them step by step)
    if (engines_.size() == 1 && e->fast_forward(closed ? t_event : std::min({t_new, t_event, last_arrival + sh_.cfg.drain_s}))) {
      sh_.sim.max_running = std::max(sh_.sim.max_running, e->step_running());
      continue;
    }
    done.clear();
    if (!e->step(done)) continue;
    running_sum = 0;
    for (const Engine& x : engines_) running_sum += &x == e ? x.step_running() : x.running();
    sh_.sim.max_running = std::max(sh_.sim.max_running, running_sum);
    for (size_t i : done) {
      if (e->role() == Engine::Role::Prefill) {
        const double x = dep_.transfer_s(req[i].prompt);
        sh_.sim.requests[i].kv_transfer_s = x;
        push(e->now() + x, i, true);
        continue;
      }
      --in_flight_;
      if (closed) push(e->now(), 0, false);
    }
  }
  merge();
  for (auto& o : sh_.sim.requests)
    if (!o.done() && o.note.empty()) o.note = "not finished: the run ended " + std::to_string(sh_.cfg.drain_s) + " s after the last arrival with the queue still growing";
  return std::move(sh_.sim);
}

// The engines' figures into the simulation's: running and waiting summed, KV use their mean
void Cluster::merge() {
  Simulation& sim = sh_.sim;
  size_t n = 0;
  for (const Engine& x : engines_) {
    n = std::max(n, x.timeline.size());
    sim.end_s = std::max(sim.end_s, x.now());
    sim.running_time += x.running_time;
    sim.kv_time += x.kv_time / static_cast<double>(engines_.size());
    sim.iterations += x.iterations;
  }
  sim.timeline.resize(n);
  for (size_t k = 0; k < n; ++k) sim.timeline[k].t = static_cast<double>(k);
  for (const Engine& x : engines_)
    for (size_t k = 0; k < x.timeline.size(); ++k) {
      Sample& a = sim.timeline[k];
      const Sample& b = x.timeline[k];
      a.running += b.running, a.waiting += b.waiting, a.kv_usage += b.kv_usage / static_cast<double>(engines_.size());
      a.prompt_tokens += b.prompt_tokens, a.output_tokens += b.output_tokens;
    }
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

Simulation simulate(const std::vector<Request>& requests, const EngineConfig& cfg, const StepCost& cost, bool keep_steps, const Deployment& dep,
                    const DecodeCost& decode_cost) {
  if (dep.engines() < 1 || (dep.disaggregated && (dep.prefill_replicas < 1 || dep.decode_replicas < 1)))
    throw std::invalid_argument("a deployment needs at least one engine in each pool");
  return Cluster(requests, cfg, cost, decode_cost, keep_steps, dep).run();
}

long long Simulation::itl_count() const {
  long long n = static_cast<long long>(itl_other_s.size());
  for (const auto& x : itl_steps) n += x.second;
  return n;
}

std::vector<std::pair<double, long long>> pooled_itl(const Simulation& s) {
  std::vector<std::pair<double, long long>> v = s.itl_steps;
  for (double x : s.itl_other_s) v.emplace_back(x, 1);
  std::sort(v.begin(), v.end());
  size_t w = 0;
  for (size_t i = 0; i < v.size(); ++i) {
    if (w > 0 && v[w - 1].first == v[i].first) v[w - 1].second += v[i].second;
    else v[w++] = v[i];
  }
  v.resize(w);
  return v;
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
  four(m.ttft, ttft), four(m.tpot, tpot), four(m.e2e, e2e);
  {  // the pooled gaps: a mean, and each quantile's two order statistics from the cumulative counts
    const std::vector<std::pair<double, long long>> itl = pooled_itl(s);
    long long total = 0;
    double sum = 0;
    for (const auto& [v, c] : itl) total += c, sum += v * static_cast<double>(c);
    const double nan = std::numeric_limits<double>::quiet_NaN();
    m.itl[0] = total > 0 ? sum / static_cast<double>(total) : nan;
    const double qs[3] = {0.5, 0.9, 0.99};
    for (int k = 0; k < 3; ++k) {
      if (total == 0) {
        m.itl[k + 1] = nan;
        continue;
      }
      const double pos = qs[k] * static_cast<double>(total - 1);
      const long long lo = static_cast<long long>(std::floor(pos));
      auto at = [&](long long rank) {  // the rank-th smallest gap (from 0)
        long long seen = 0;
        for (const auto& [v, c] : itl)
          if ((seen += c) > rank) return v;
        return itl.back().first;
      };
      const double a = at(lo), b = lo + 1 < total ? at(lo + 1) : a;
      m.itl[k + 1] = a + (b - a) * (pos - static_cast<double>(lo));
    }
  }
  m.goodput_requests_per_s = static_cast<double>(good) / d;
  m.slo_attainment = m.requests > 0 ? static_cast<double>(good) / static_cast<double>(m.requests) : 0;
  m.mean_running = s.end_s > 0 ? s.running_time / s.end_s : 0;
  m.mean_kv_usage = s.end_s > 0 ? s.kv_time / s.end_s : 0;
  m.max_running = s.max_running;
  m.prefix_hit_rate = prompt > 0 ? cached / prompt : 0;
  return m;
}

}  // namespace rsim::serving
