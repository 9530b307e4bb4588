// `rsim probe` against reference microbenchmarks written independently of it, in the same run
// (issue 10): each figure of the probe beside the reference's and the target.
//   - peak: a hand-written FMA chain in inline assembly (likwid-bench's peakflops style: as many
//     independent accumulators as the ISA has registers to spare, no chain sweep), fp32 and fp64,
//     on 1 thread and on every thread, for the widest ISA the CPU has. Target: probe ≥ 95 %.
//   - bandwidth: the STREAM kernels Copy (a = b) and Triad (a = b + s·c) as plain C loops over
//     doubles, vectorised by the compiler for each ISA (target_clones), STREAM's counting (no
//     write-allocate traffic), best of many timed passes; at a working set in the middle of each
//     plateau the probe detected (L1, L2, L3) and at STREAM's own DRAM size (each array ≥ 4 × the
//     last cache). Target: probe ≥ 90 %.
//   - read (issue 26): each level the probe names against a plain read kernel (a sum with 64
//     accumulators) over fixed windows: L1 the best over ≤ 32 KiB, L2 the median over 160–640 KiB,
//     L3 the median over 3–12 MiB, DRAM the best over 256–512 MiB. Target: within ±10 %.
//   - the probe's wall time: --quick < 15 s, full < 90 s.
// Run: make bench-probe (or build/bench/rsim_bench_probe [--quick]: the quick probe only).
// On a shared machine every figure is a best-of; a loaded machine lowers both sides of a ratio,
// but not always equally: run it on a quiet machine before trusting a miss. Each reference gets
// the probe's sampling budget (samples × duration), so neither side is luckier by design.
#include <pthread.h>
#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <barrier>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "measure/probe.hpp"

using namespace rsim::measure;

namespace {

using Clock = std::chrono::steady_clock;

void pin(int cpu) {
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(cpu, &set);
  pthread_setaffinity_np(pthread_self(), sizeof set, &set);
}

// Runs body(t) on `threads` pinned threads released together by a barrier; wall seconds from the
// first thread's start to the last one's end (each thread reads the clock itself).
double on_threads(int threads, const std::function<void(int)>& body) {
  int ncpu = static_cast<int>(std::max(1L, sysconf(_SC_NPROCESSORS_ONLN)));
  std::barrier sync(threads);
  std::vector<Clock::time_point> start(static_cast<size_t>(threads)), end(static_cast<size_t>(threads));
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t)
    pool.emplace_back([&, t] {
      pin(t % ncpu);
      sync.arrive_and_wait();
      start[static_cast<size_t>(t)] = Clock::now();
      body(t);
      end[static_cast<size_t>(t)] = Clock::now();
    });
  for (auto& th : pool) th.join();
  return std::chrono::duration<double>(*std::max_element(end.begin(), end.end()) - *std::min_element(start.begin(), start.end())).count();
}

// ---- reference peak: fixed-register FMA chains in assembly ----
#if defined(__x86_64__)
// 12 ymm accumulators (ymm0-11), ymm12/13 the operands: 12 FMAs per iteration, 100 iterations unrolled by .rept 4.
#define REF_FMA_YMM(NAME, INSN, LANES)                                                                       \
  double NAME(long iters) {                                                                                  \
    asm volatile("vxorps %%ymm12, %%ymm12, %%ymm12\n\tvxorps %%ymm13, %%ymm13, %%ymm13\n\t" ::: "xmm12", "xmm13"); \
    for (long i = 0; i < iters; ++i)                                                                         \
      asm volatile(".rept 4\n\t" INSN " %%ymm12, %%ymm13, %%ymm0\n\t" INSN " %%ymm12, %%ymm13, %%ymm1\n\t"  \
                   INSN " %%ymm12, %%ymm13, %%ymm2\n\t" INSN " %%ymm12, %%ymm13, %%ymm3\n\t"                 \
                   INSN " %%ymm12, %%ymm13, %%ymm4\n\t" INSN " %%ymm12, %%ymm13, %%ymm5\n\t"                 \
                   INSN " %%ymm12, %%ymm13, %%ymm6\n\t" INSN " %%ymm12, %%ymm13, %%ymm7\n\t"                 \
                   INSN " %%ymm12, %%ymm13, %%ymm8\n\t" INSN " %%ymm12, %%ymm13, %%ymm9\n\t"                 \
                   INSN " %%ymm12, %%ymm13, %%ymm10\n\t" INSN " %%ymm12, %%ymm13, %%ymm11\n\t.endr"         \
                   ::: "xmm0", "xmm1", "xmm2", "xmm3", "xmm4", "xmm5", "xmm6", "xmm7", "xmm8", "xmm9",      \
                   "xmm10", "xmm11");                                                                        \
    asm volatile("vzeroupper");                                                                              \
    return static_cast<double>(iters) * 4 * 12 * (LANES) * 2;                                               \
  }
REF_FMA_YMM(ref_fma_avx2_fp32, "vfmadd231ps", 8)
REF_FMA_YMM(ref_fma_avx2_fp64, "vfmadd231pd", 4)

// 24 zmm accumulators (zmm0-23), zmm24/25 the operands.
#define Z3(I, A, B, C) I " %%zmm24, %%zmm25, %%zmm" #A "\n\t" I " %%zmm24, %%zmm25, %%zmm" #B "\n\t" I " %%zmm24, %%zmm25, %%zmm" #C "\n\t"
#define REF_FMA_ZMM(NAME, INSN, LANES)                                                                         \
  __attribute__((target("avx512f"))) double NAME(long iters) {                                                                                    \
    asm volatile("vpxord %%zmm24, %%zmm24, %%zmm24\n\tvpxord %%zmm25, %%zmm25, %%zmm25\n\t" ::: "xmm24", "xmm25"); \
    for (long i = 0; i < iters; ++i)                                                                           \
      asm volatile(".rept 4\n\t" Z3(INSN, 0, 1, 2) Z3(INSN, 3, 4, 5) Z3(INSN, 6, 7, 8) Z3(INSN, 9, 10, 11)    \
                       Z3(INSN, 12, 13, 14) Z3(INSN, 15, 16, 17) Z3(INSN, 18, 19, 20) Z3(INSN, 21, 22, 23) ".endr" \
                   ::: "xmm0", "xmm1", "xmm2", "xmm3", "xmm4", "xmm5", "xmm6", "xmm7", "xmm8", "xmm9", "xmm10",  \
                   "xmm11", "xmm12", "xmm13", "xmm14", "xmm15", "xmm16", "xmm17", "xmm18", "xmm19", "xmm20",    \
                   "xmm21", "xmm22", "xmm23");                                                                 \
    asm volatile("vzeroupper");                                                                                \
    return static_cast<double>(iters) * 4 * 24 * (LANES) * 2;                                                  \
  }
REF_FMA_ZMM(ref_fma_avx512_fp32, "vfmadd231ps", 16)
REF_FMA_ZMM(ref_fma_avx512_fp64, "vfmadd231pd", 8)
#endif

// The sampling budget is the probe's own (count × duration): on a shared machine the best of
// more or longer samples is luckier, and the ratio must compare kernels, not luck.
struct Budget {
  int samples;
  double sample_s;
};

// Best FLOP/s over the budget's runs, each on `threads` threads.
double ref_peak(double (*kernel)(long), int threads, Budget b) {
  long iters = 1000;
  for (;;) {
    auto t0 = Clock::now();
    kernel(iters);
    double t = std::chrono::duration<double>(Clock::now() - t0).count();
    if (t > b.sample_s / 2) {
      iters = static_cast<long>(static_cast<double>(iters) * b.sample_s / t) + 1;
      break;
    }
    iters *= 4;
  }
  double best = 0;
  for (int s = 0; s < b.samples; ++s) {
    std::vector<double> flops(static_cast<size_t>(threads));
    double t = on_threads(threads, [&](int th) { flops[static_cast<size_t>(th)] = kernel(iters); });
    double f = 0;
    for (double x : flops) f += x;
    best = std::max(best, f / t);
  }
  return best;
}

// ---- reference bandwidth: STREAM Copy and Triad, plain loops ----
// (no-tree-loop-distribute-patterns: the copy stays a loop of ordinary stores, not a call to memcpy)
__attribute__((target_clones("avx512f", "avx2", "default"), noinline, optimize("no-tree-loop-distribute-patterns"))) void stream_copy(double* __restrict a, const double* __restrict b, size_t n) {
  for (size_t i = 0; i < n; ++i) a[i] = b[i];
}
__attribute__((target_clones("avx512f", "avx2", "default"), noinline)) void stream_triad(double* __restrict a, const double* __restrict b,
                                                                                          const double* __restrict c, double s, size_t n) {
  for (size_t i = 0; i < n; ++i) a[i] = b[i] + s * c[i];
}

struct FreeDeleter {
  void operator()(double* p) const { std::free(p); }
};

// Best bytes/s of `pass(thread, reps)` moving `bytes_per_rep` per thread and repetition: the
// repetitions per sample doubled on one thread until a sample takes half the budget's time, then
// sized for it; the best of the budget's samples on `threads` threads.
double best_bytes_per_s(int threads, double bytes_per_rep, const std::function<void(int, long)>& pass, Budget b) {
  long reps = 1;
  for (;;) {
    double t = on_threads(1, [&](int) { pass(0, reps); });
    if (t >= b.sample_s / 2) {
      reps = std::max(1L, static_cast<long>(static_cast<double>(reps) * b.sample_s / t));
      break;
    }
    reps *= 2;
  }
  double best = 0;
  for (int s = 0; s < b.samples; ++s) {
    double t = on_threads(threads, [&](int th) { pass(th, reps); });
    best = std::max(best, bytes_per_rep * threads * static_cast<double>(reps) / t);
  }
  return best;
}

// Best bytes/s of `kernel` ("copy" or "triad") with a working set of `ws_bytes` in total (split
// evenly among `threads`, each thread's arrays first touched by that thread).
double ref_stream(const std::string& kernel, int threads, double ws_bytes, Budget b) {
  int arrays = kernel == "copy" ? 2 : 3;
  size_t n = std::max<size_t>(64, static_cast<size_t>(ws_bytes / threads / arrays / sizeof(double)) / 8 * 8);
  std::vector<std::unique_ptr<double, FreeDeleter>> mem(static_cast<size_t>(threads));
  on_threads(threads, [&](int t) {
    auto* p = static_cast<double*>(std::aligned_alloc(64, ((3 * n * sizeof(double)) / 64 + 1) * 64));
    for (size_t i = 0; i < 3 * n; ++i) p[i] = 1.0 + static_cast<double>(i % 7);
    mem[static_cast<size_t>(t)].reset(p);
  });
  auto pass = [&](int t, long reps) {
    double* a = mem[static_cast<size_t>(t)].get();
    for (long r = 0; r < reps; ++r) {
      if (kernel == "copy") stream_copy(a, a + n, n);
      else stream_triad(a, a + n, a + 2 * n, 0.5, n);
    }
  };
  return best_bytes_per_s(threads, static_cast<double>(arrays) * static_cast<double>(n) * sizeof(double), pass, b);
}

// ---- reference read: a plain sum over doubles, 64 independent accumulators (8 vectors of 8 on
// AVX-512) so that the adds never wait on each other; the compiler vectorises it for each ISA ----
// (the passes run inside, so that the 64 accumulators are summed once per sample, not per pass)
__attribute__((target_clones("avx512f", "avx2", "default"), noinline)) double read_sum(const double* __restrict a, size_t n, long reps) {
  double acc[64] = {};
  for (long r = 0; r < reps; ++r)
    for (size_t i = 0; i + 64 <= n; i += 64)
      for (size_t k = 0; k < 64; ++k) acc[k] += a[i + k];
  double s = 0;
  for (double x : acc) s += x;
  return s;
}

// Best bytes/s of the read kernel over a working set of `ws_bytes` in total (split evenly among
// `threads`, each thread's array first touched by that thread).
double ref_read(int threads, double ws_bytes, Budget b) {
  size_t n = std::max<size_t>(64, static_cast<size_t>(ws_bytes / threads / sizeof(double)) / 64 * 64);
  std::vector<std::unique_ptr<double, FreeDeleter>> mem(static_cast<size_t>(threads));
  on_threads(threads, [&](int t) {
    auto* p = static_cast<double*>(std::aligned_alloc(64, ((n * sizeof(double)) / 64 + 1) * 64));
    for (size_t i = 0; i < n; ++i) p[i] = 1.0 + static_cast<double>(i % 7);
    mem[static_cast<size_t>(t)].reset(p);
  });
  volatile double sink = 0;
  auto pass = [&](int t, long reps) {
    const double s = read_sum(mem[static_cast<size_t>(t)].get(), n, reps);
    if (t == 0) sink = s;
  };
  return best_bytes_per_s(threads, static_cast<double>(n) * sizeof(double), pass, b);
}

// The reference for each level's read bandwidth: L1 the best over working sets ≤ 32 KiB,
// L2 the median over 160–640 KiB, L3 the median over 3–12 MiB, DRAM the best over 256–512 MiB
// (4 sizes per octave; each size's figure is the best of the budget's samples).
double ref_read_level(const std::string& level, int threads, Budget b) {
  double lo = 4096, hi = 32768;
  bool best = true;
  if (level == "L2") lo = 160 * 1024.0, hi = 640 * 1024.0, best = false;
  if (level == "L3") lo = 3 * 1048576.0, hi = 12 * 1048576.0, best = false;
  if (level == "DRAM") lo = 256 * 1048576.0, hi = 512 * 1048576.0;
  std::vector<double> v;
  for (double ws = lo; ws <= hi * 1.0001; ws *= std::pow(2.0, level == "DRAM" ? 0.5 : 0.25)) v.push_back(ref_read(threads, ws, b));
  std::sort(v.begin(), v.end());
  return best ? v.back() : v[v.size() / 2];
}

int misses = 0;
// A two-sided target: |probe / reference − 1| ≤ tolerance.
void row_within(const std::string& what, double probe, double ref, double tolerance, const char* unit, double scale) {
  double ratio = ref > 0 ? probe / ref : 0;
  bool ok = std::fabs(ratio - 1) <= tolerance;
  if (!ok) ++misses;
  std::printf("  %-34s %10.1f %-7s %10.1f %-7s %6.1f %%   ±%3.0f %%  %s\n", what.c_str(), probe / scale, unit, ref / scale, unit, 100 * ratio,
              100 * tolerance, ok ? "met" : "MISSED");
}
void row(const std::string& what, double probe, double ref, double target, const char* unit, double scale) {
  double ratio = ref > 0 ? probe / ref : 0;
  bool ok = ratio >= target;
  if (!ok) ++misses;
  std::printf("  %-34s %10.1f %-7s %10.1f %-7s %6.1f %%   ≥ %3.0f %%  %s\n", what.c_str(), probe / scale, unit, ref / scale, unit, 100 * ratio,
              100 * target, ok ? "met" : "MISSED");
}

}  // namespace

int main(int argc, char** argv) {
  bool quick_only = argc > 1 && std::strcmp(argv[1], "--quick") == 0;
  std::setvbuf(stdout, nullptr, _IOLBF, 0);
  std::printf("rsim probe against reference microbenchmarks, in one run%s\n", quick_only ? " (--quick probe only)" : "");

  ProbeOptions qo;
  qo.quick = true;
  ProbeResult quick = run_probe(qo);
  ProbeResult full;
  if (!quick_only) full = run_probe(ProbeOptions{});
  const ProbeResult& r = quick_only ? quick : full;
  std::printf("%s, %d threads, features %s; probe %s\n\n", r.cpu.c_str(), r.threads, features_text(r.features).c_str(),
              quick_only ? "--quick" : "full");

  // the probe's budgets (measure/probe.cpp): peaks 5 × 2 ms (--quick) or 9 × 5 ms; bandwidth 3 × 2 ms or
  // 9 × 5 ms, beyond 4 × the last cache 2 or 4 samples
  const Budget peak_budget = quick_only ? Budget{5, 0.002} : Budget{9, 0.005};
  const Budget bw_budget = quick_only ? Budget{3, 0.002} : Budget{9, 0.005};
  const Budget dram_budget = quick_only ? Budget{2, 0.002} : Budget{4, 0.005};
  std::printf("  %-34s %18s %18s %8s %8s\n", "figure", "probe", "reference", "ratio", "target");
  // peaks: the widest ISA the CPU has
  double (*ref32)(long) = nullptr;
  double (*ref64)(long) = nullptr;
  std::string isa;
#if defined(__x86_64__)
  if (r.features.avx512f) ref32 = ref_fma_avx512_fp32, ref64 = ref_fma_avx512_fp64, isa = "avx512";
  else if (r.features.avx2 && r.features.fma) ref32 = ref_fma_avx2_fp32, ref64 = ref_fma_avx2_fp64, isa = "avx2";
#endif
  if (!ref32) {
    std::printf("  peak: no reference kernel for this CPU (needs AVX2+FMA or AVX-512)\n");
  } else {
    for (int T : {1, r.threads}) {
      for (auto [prec, ref] : {std::pair{"fp32", ref32}, std::pair{"fp64", ref64}}) {
        const PeakResult* p = best_peak(r, prec, T);
        double rv = ref_peak(ref, T, peak_budget);
        row(std::string("peak ") + prec + " " + isa + ", " + std::to_string(T) + (T == 1 ? " thread" : " threads"), p ? p->flops_per_s : 0, rv,
            0.95, "GFLOP/s", 1e9);
      }
      if (r.threads == 1) break;
    }
  }
  // bandwidth: each plateau of the probe's own curve, and STREAM's DRAM size
  double last_cache = r.caches.empty() ? 0 : r.caches.back().size_bytes;
  for (const char* kernel : {"copy", "triad"}) {
    for (int T : {1, r.threads}) {
      for (const char* level : {"L1", "L2", "L3", "DRAM"}) {
        const Plateau* pl = find_plateau(r, kernel, T, level);
        if (!pl) continue;
        double ws = std::string(level) == "DRAM" ? std::max(3 * 4 * last_cache, 3 * 80e6) : std::sqrt(pl->from_bytes * pl->to_bytes);
        double rv = ref_stream(kernel, T, ws, std::string(level) == "DRAM" ? dram_budget : bw_budget);
        char what[96];
        std::snprintf(what, sizeof what, "%s %s %d thr (ws %.3g MB)", kernel, level, T, ws / 1e6);
        row(what, pl->bytes_per_s, rv, 0.90, "GB/s", 1e9);
      }
      if (r.threads == 1) break;
    }
  }
  // read: each level the probe names against a plain read kernel over the windows
  for (int T : {1, r.threads}) {
    for (const char* level : {"L1", "L2", "L3", "DRAM"}) {
      const Plateau* pl = find_plateau(r, "read", T, level);
      if (!pl) {
        std::printf("  read %-4s %d thr: the probe names no such level  MISSED\n", level, T);
        ++misses;
        continue;
      }
      double rv = ref_read_level(level, T, std::string(level) == "DRAM" ? dram_budget : bw_budget);
      char what[96];
      std::snprintf(what, sizeof what, "read %s %d thr (plain kernel)", level, T);
      row_within(what, pl->bytes_per_s, rv, 0.10, "GB/s", 1e9);
    }
    if (r.threads == 1) break;
  }
  std::printf("\n  %-34s %10.1f s %28s ≤ 15 s   %s\n", "probe --quick wall time", quick.seconds, "", quick.seconds < 15 ? "met" : "MISSED");
  if (quick.seconds >= 15) ++misses;
  if (!quick_only) {
    std::printf("  %-34s %10.1f s %28s ≤ 90 s   %s\n", "probe (full) wall time", full.seconds, "", full.seconds < 90 ? "met" : "MISSED");
    if (full.seconds >= 90) ++misses;
  }
  std::printf("\n%d target(s) missed; load average at the end: ", misses);
  double load[3] = {0, 0, 0};
  if (getloadavg(load, 3) == 3) std::printf("%.2f %.2f %.2f (a busy machine lowers every figure)\n", load[0], load[1], load[2]);
  else std::printf("unknown\n");
  return 0;
}
