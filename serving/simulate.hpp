// A discrete-event simulation of an LLM inference engine serving requests: each iteration the
// scheduler forms a batch (decoding sequences, then prefill chunks within the token budget,
// admissions while KV-cache blocks last, preemptions when they run out), a cost function prices
// that exact batch, and time moves on by its cost. The scheduler is vLLM v1's (continuous
// batching, FCFS, chunked prefill, paged KV cache with prefix caching, recompute preemption), or a
// static batch for comparison. Times in seconds from the first arrival.
#pragma once
#include <cstdint>
#include <functional>
#include <limits>
#include <string>
#include <vector>

#include "serving/workload.hpp"

namespace rsim::serving {

struct EngineConfig {
  enum class Scheduler { Vllm, Static } scheduler = Scheduler::Vllm;
  long long max_num_seqs = 256;
  long long max_num_batched_tokens = 2048;  // the token budget of one iteration (vllm)
  bool chunked_prefill = true;
  long long block_size = 16;
  long long kv_blocks = 0;  // the paged KV cache's blocks; 0: unbounded
  bool prefix_caching = false;
  long long concurrency = 0;  // > 0: a closed loop, at most this many requests in flight
  long long max_context = 0;  // the model's context length (prompt + output); 0: no limit
  // an arrival rate the engine cannot keep up with: the simulation ends this long after the last
  // arrival (requests still queued are noted, not timed)
  double drain_s = 3600;
};

// Engines behind a router: `replicas` data-parallel copies of the engine, each request sent to one
// (round_robin in arrival order, or least_loaded: the fewest unfinished requests, the lowest index on
// a tie); or, disaggregated, a prefill pool and a decode pool: a prefill engine computes the prompt,
// its KV cache moves to a decode engine (transfer_s), which computes the prompt's last token again
// to sample the first (as vLLM's KV connectors do) and decodes the rest.
struct Deployment {
  enum class Router { RoundRobin, LeastLoaded } router = Router::LeastLoaded;
  long long replicas = 1;
  bool disaggregated = false;
  long long prefill_replicas = 1, decode_replicas = 1;
  // the KV transfer: KV bytes a token per GPU (each GPU sends its share at once) over a link
  double kv_bytes_per_token = 0, link_bandwidth_bytes_per_s = 0, link_latency_s = 0;
  std::string link_name;
  double transfer_s(long long tokens) const {
    return link_bandwidth_bytes_per_s > 0 ? static_cast<double>(tokens) * kv_bytes_per_token / link_bandwidth_bytes_per_s + link_latency_s : link_latency_s;
  }
  long long engines() const { return disaggregated ? prefill_replicas + decode_replicas : replicas; }
};

// One sequence's part of an iteration: `tokens` new tokens computed after `context` tokens
// already in its KV cache (a prefill chunk: its prompt's next tokens; a decode: 1 token)
struct Work {
  size_t request = 0;
  long long tokens = 0;
  long long context = 0;
  bool last = true;  // its tokens end what the sequence knows: it samples a token (false: a prompt's chunk before its last)
};

// The price of one iteration, in seconds: its prefill chunks and its decodes, run as one batch
using StepCost = std::function<double(const std::vector<Work>& prefill, const std::vector<Work>& decode)>;
// The price of an iteration of decodes only, from their aggregates: n sequences, the sum of their
// contexts and the longest. Optional; where given it must equal StepCost's price of those decodes,
// and a single engine then steps its runs of decode-only iterations (no arrival, no finish, no
// admission, no preemption between) without listing their sequences: the same results, to the bit
using DecodeCost = std::function<double(long long n, long long context_sum, long long context_max)>;

struct Step {
  long long engine = 0;  // which engine of the deployment (disaggregated: the prefill pool's first)
  double start_s = 0, time_s = 0;
  std::vector<Work> prefill, decode;
  long long running = 0, waiting = 0, kv_blocks_used = 0;
};

struct Outcome {
  double arrival_s = 0;
  long long prompt = 0, output = 0;
  double scheduled_s = std::numeric_limits<double>::quiet_NaN();  // first scheduled
  double first_token_s = std::numeric_limits<double>::quiet_NaN();
  double finish_s = std::numeric_limits<double>::quiet_NaN();
  long long cached_tokens = 0;  // prompt tokens read from the prefix cache (at its first scheduling)
  long long preemptions = 0;
  long long replica = 0;          // the engine that served it (disaggregated: its prefill engine)
  long long decode_replica = -1;  // disaggregated: its decode engine
  double kv_transfer_s = std::numeric_limits<double>::quiet_NaN();  // disaggregated: the KV cache's move
  std::string note;  // why it has no times (it can never be scheduled; the run ended first)
  bool done() const { return finish_s == finish_s; }
};

// Once a second of simulated time: the engine's state and the tokens of the second before
struct Sample {
  double t = 0;
  long long running = 0, waiting = 0;
  double kv_usage = 0;  // used blocks over kv_blocks (0 when unbounded)
  double prompt_tokens = 0, output_tokens = 0;
};

struct Simulation {
  std::vector<Outcome> requests;
  std::vector<Step> steps;     // every iteration (when asked for)
  // Every gap between two tokens of a request, pooled, kept compactly: a gap that is one whole
  // iteration (the token of the step before, then this step's) is counted with that iteration's
  // time; any other gap (a preemption, a chunked prefill between) is kept on its own
  std::vector<std::pair<double, long long>> itl_steps;  // (an iteration's time, the gaps it ends)
  std::vector<double> itl_other_s;
  long long itl_count() const;
  std::vector<Sample> timeline;
  double end_s = 0;            // the last iteration's end
  double running_time = 0, kv_time = 0;  // ∫ running dt (all engines), ∫ kv usage dt (the engines' mean)
  long long max_running = 0, iterations = 0, preemptions = 0;
  bool queue_unbounded = false;  // the run ended with requests still waiting (the drain bound)
};

// Serves `requests` (arrivals in order; a closed loop sends them as earlier ones finish) on the
// deployment's engines, all with `cfg` and `cost`. A closed loop's concurrency is the deployment's.
// (keep_steps lists every iteration: the decode-only runs are then stepped one by one)
Simulation simulate(const std::vector<Request>& requests, const EngineConfig& cfg, const StepCost& cost, bool keep_steps = false, const Deployment& dep = {},
                    const DecodeCost& decode_cost = {});

// The pooled token gaps as (time, how many), sorted by time, equal times merged
std::vector<std::pair<double, long long>> pooled_itl(const Simulation& s);

// Linear interpolation between order statistics (numpy's default): q in [0, 1]; NaN when empty.
double percentile(std::vector<double> v, double q);

struct Slo {
  double ttft_s = 0, tpot_s = 0;  // 0: no target
};

// serving.csv's figures of one simulation
struct Summary {
  long long requests = 0, finished = 0;
  double duration_s = 0, requests_per_s = 0, input_tokens_per_s = 0, output_tokens_per_s = 0;
  double ttft[4] = {}, tpot[4] = {}, itl[4] = {}, e2e[4] = {};  // mean, p50, p90, p99
  double goodput_requests_per_s = 0, slo_attainment = 0;
  double mean_running = 0, mean_kv_usage = 0, prefix_hit_rate = 0;
  long long max_running = 0, preemptions = 0;
};
Summary summarize(const Simulation& s, const Slo& slo);

// The time per output token of one request: (finish − first token) / (output − 1); NaN for one token
double tpot_of(const Outcome& o);

}  // namespace rsim::serving
