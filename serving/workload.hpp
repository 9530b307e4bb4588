// Serving workloads: the requests an engine is sent — a trace read from a file, or synthetic
// arrivals and lengths drawn from a seeded generator (the same seed, the same requests, on every
// machine: the generator and its distributions are written here, not taken from the standard
// library, whose distributions differ between implementations).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "engine/model/diagnostics.hpp"

namespace rsim::serving {

struct Request {
  double arrival_s = 0;     // from the first arrival (a closed loop: set when sent)
  long long prompt = 0;     // input tokens
  long long output = 0;     // tokens to generate (≥ 1)
  // The prompt's full blocks as content hashes, for prefix caching (hash i covers tokens
  // [0, (i + 1) · block)): from a trace's token ids, or a synthetic shared prefix. Empty: no reuse.
  std::vector<uint64_t> block_hashes;
  long long line = 0;       // the trace line it came from (0: synthetic)
};

// A splitmix64-seeded xoshiro256** generator and the draws the workloads need
class Rng {
 public:
  explicit Rng(uint64_t seed);
  uint64_t next();
  double uniform();                       // [0, 1)
  double exponential(double mean);        // mean · −ln(1 − u)
  double normal(double mean, double sd);  // Box–Muller
  double gamma(double shape, double scale);  // Marsaglia–Tsang (shape < 1: boosted)

 private:
  uint64_t s_[4];
  bool has_spare_ = false;
  double spare_ = 0;
};

enum class Process { Poisson, Gamma, Constant, Burst };
struct Arrivals {
  Process process = Process::Poisson;
  double rate = 1;  // requests per second (burst: unused, all at 0)
  double cv = 1;    // gamma: the coefficient of variation of the gaps (1 = Poisson)
};

struct Lengths {
  enum class Dist { Fixed, Uniform, Normal, Lognormal } dist = Dist::Fixed;
  double mean = 128;
  double cv = 1;  // normal, lognormal: std / mean
  long long min = 1, max = 1LL << 40;  // truncation (uniform: its range)
};

struct Synthetic {
  long long requests = 100;
  Arrivals arrivals;
  Lengths prompt, output;
  long long concurrency = 0;          // > 0: a closed loop (arrivals unused: each sent when one finishes)
  long long shared_prefix_tokens = 0;  // every prompt starts with one of `groups` system prompts of this length
  long long shared_prefix_groups = 1;
  uint64_t seed = 1;
};

// The requests, arrivals in order (a closed loop's first `concurrency` at 0, the rest at 0 too:
// the simulation sends them as earlier ones finish). Prompts include the shared prefix.
std::vector<Request> generate(const Synthetic& w, long long block_size);

// A trace file: JSONL with arrival_time_ns, input_toks, output_toks and optional input_tok_ids
// (vLLM's benchmark traces, ../shared/external/vllm_runs), or a CSV with a header naming
// arrival_s, prompt_tokens and output_tokens, or the Azure LLM inference trace's TIMESTAMP,
// ContextTokens, GeneratedTokens (timestamps as dates or seconds). Arrivals are shifted so that
// the first is 0 and must not decrease. A line that cannot be read is a ConfigError at its
// file:line; `used` is where the scenario names the file.
std::vector<Request> read_trace(const std::string& path, long long block_size, const SourceLoc& used);

// Content hashes of a token sequence's full blocks (a chain: each block's hash covers its prefix)
std::vector<uint64_t> block_hashes(const std::vector<long long>& ids, long long block_size);

}  // namespace rsim::serving
