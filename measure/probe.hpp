// `rsim probe`: this machine's real roofs. FMA peaks per ISA × precision × threads (with the
// number of independent accumulator chains that saturates the pipes, found by a sweep), the
// running clock (a dependent add chain), and read/write/copy/triad bandwidth over a working-set
// sweep with pinned threads, from which plateau detection names L1, L2, L3 and DRAM.
// Every kernel is compiled for its ISA with a per-function target attribute and dispatched at
// run time, so one binary runs everywhere and says which ISAs it skipped.
#pragma once
#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "measure/cpu.hpp"
#include "measure/plateau.hpp"

namespace rsim::measure {

struct PeakResult {
  std::string isa;        // avx512, avx2, sse2, scalar
  std::string precision;  // fp64, fp32, bf16, int8
  int threads = 1;
  int chains = 0;         // independent accumulator chains used (detected at 1 thread)
  double flops_per_s = 0; // best of the samples (int8: OP/s)
  double lanes = 0;       // elements per instruction
  bool fma = true;        // false: separate multiply and add instructions
  std::vector<std::pair<int, double>> chain_sweep;  // chains → FLOP/s (1 thread)
};

struct BandwidthSample {
  std::string kernel;  // read, write, copy, triad
  int threads = 1;
  double working_set_bytes = 0;
  double bytes_per_s = 0;
};

struct LevelPlateaus {
  std::string kernel;
  int threads = 1;
  std::vector<Plateau> plateaus;
};

struct ProbeOptions {
  bool quick = false;
  int threads = 0;  // 0: every online CPU
  double max_working_set_bytes = 0;  // 0: 512 MiB, or 4 × the last cache if that is larger
  bool bandwidth = true;             // false: compute only (for tests)
  std::function<void(const std::string&)> progress;  // one line per stage, may be empty
};

struct ProbeResult {
  std::string cpu;
  CpuFeatures features;
  std::vector<CacheLevel> caches;
  int threads = 1;        // "all"
  double clock_hz = 0;    // 1 thread, dependent add chain
  double clock_all_hz = 0;  // every thread running the chain
  std::vector<PeakResult> peaks;
  std::vector<std::string> skipped;  // "avx512: the CPU lacks avx512f"
  // figures that stayed below what the CPU's cores should reach (an all-thread run that did not
  // scale within its time budget: other work on the CPUs, or a vCPU the host did not run)
  std::vector<std::string> warnings;
  std::vector<BandwidthSample> bandwidth;
  std::vector<LevelPlateaus> plateaus;  // per kernel and thread count
  std::string best_isa;               // the widest ISA that ran
  double seconds = 0;
  std::vector<std::pair<std::string, double>> stage_seconds;  // "clock", "peaks", "bandwidth" → wall seconds
  bool quick = false;
};

ProbeResult run_probe(const ProbeOptions& opt);

// What makes a probe's levels untrustworthy, checked before a platform file is written: a DRAM read
// plateau at or above a cache level's at the same thread count, or one starting below 4 × the
// largest cache. Empty when the levels are sound.
std::vector<std::string> probe_mislabels(const ProbeResult& r);

// The best peak for a precision and thread count (the widest ISA wins ties); nullptr if none.
const PeakResult* best_peak(const ProbeResult& r, const std::string& precision, int threads);
// The plateau of a level for a kernel and thread count; nullptr if none.
const Plateau* find_plateau(const ProbeResult& r, const std::string& kernel, int threads, const std::string& level);
// The level capacities the plateau detection uses: per-thread share for `threads`.
std::vector<LevelSize> level_sizes(const std::vector<CacheLevel>& caches, int threads);

// Samples of a rate, taken until the best reaches `expect` (0: no expectation) with at least
// `min_samples` taken, or until `budget_s` seconds (by `now`) have passed since the first sample.
struct SampleOutcome {
  double best = 0;
  int samples = 0;
  bool reached = true;  // the best reached `expect`
};
SampleOutcome sample_best(const std::function<double()>& sample, int min_samples, double expect, double budget_s,
                          const std::function<double()>& now);

// The smallest chain count whose rate is within `within` of the best (pure; for tests).
int saturating_chains(const std::vector<std::pair<int, double>>& sweep, double within = 0.03);

// Where a working set of `bytes` starts in a buffer at address `base` holding `capacity` bytes: the
// byte offset of the first address aligned to the smallest power of two ≥ `bytes` from which the
// working set still fits, 0 if none does (pure; for tests). The probe's small working sets thus
// never straddle a large power-of-two address boundary (see the bandwidth sweep in probe.cpp (Prober::bandwidth_sample)).
size_t placement_offset(std::uintptr_t base, size_t capacity, size_t bytes);

// Runs body(t) on `threads` threads, thread t pinned to CPU t mod online CPUs, started together;
// returns the wall time from the common start to the last finish.
double run_pinned(int threads, const std::function<void(int)>& body);

}  // namespace rsim::measure
