#include "measure/probe.hpp"

#include <algorithm>
#include <atomic>
#include <barrier>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <thread>

#if defined(__x86_64__)
#include <immintrin.h>
#define RSIM_X86 1
#endif

namespace rsim::measure {

namespace {

using Clock = std::chrono::steady_clock;
double since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

// Opaque constants: the compiler cannot fold the kernels' arithmetic away.
volatile double g_mul = 0.9999999, g_add = 1e-7;
volatile double g_sink = 0;

#if RSIM_X86
// ---- FMA / multiply-add chains: N independent accumulators, each updated once per iteration ----
#define RSIM_FMA_KERNEL(NAME, TARGET, VEC, SET1, OP, ELEM, STORE, LANES)            \
  template <int N>                                                                 \
  __attribute__((target(TARGET), noinline)) double NAME(long iters) {              \
    VEC a = SET1(static_cast<ELEM>(g_mul)), b = SET1(static_cast<ELEM>(g_add));    \
    VEC acc[N];                                                                    \
    _Pragma("GCC unroll 32") for (int j = 0; j < N; ++j) acc[j] = SET1(static_cast<ELEM>(1 + 0.001 * j)); \
    for (long i = 0; i < iters; ++i) {                                             \
      _Pragma("GCC unroll 32") for (int j = 0; j < N; ++j) acc[j] = OP(acc[j], a, b); \
    }                                                                              \
    alignas(64) ELEM buf[LANES];                                                   \
    double s = 0;                                                                  \
    for (int j = 0; j < N; ++j) {                                                  \
      STORE(buf, acc[j]);                                                          \
      for (int k = 0; k < LANES; ++k) s += static_cast<double>(buf[k]);            \
    }                                                                              \
    return s;                                                                      \
  }

#define RSIM_MULADD(MUL, ADD) [](auto x, auto a, auto b) __attribute__((always_inline)) { return ADD(MUL(x, a), b); }

__attribute__((target("avx512f"), always_inline)) inline __m512 fma512ps(__m512 x, __m512 a, __m512 b) { return _mm512_fmadd_ps(x, a, b); }
__attribute__((target("avx512f"), always_inline)) inline __m512d fma512pd(__m512d x, __m512d a, __m512d b) { return _mm512_fmadd_pd(x, a, b); }
__attribute__((target("avx2,fma"), always_inline)) inline __m256 fma256ps(__m256 x, __m256 a, __m256 b) { return _mm256_fmadd_ps(x, a, b); }
__attribute__((target("avx2,fma"), always_inline)) inline __m256d fma256pd(__m256d x, __m256d a, __m256d b) { return _mm256_fmadd_pd(x, a, b); }
__attribute__((target("sse2"), always_inline)) inline __m128 muladd128ps(__m128 x, __m128 a, __m128 b) { return _mm_add_ps(_mm_mul_ps(x, a), b); }
__attribute__((target("sse2"), always_inline)) inline __m128d muladd128pd(__m128d x, __m128d a, __m128d b) { return _mm_add_pd(_mm_mul_pd(x, a), b); }
__attribute__((target("fma"), always_inline)) inline __m128 fmass(__m128 x, __m128 a, __m128 b) { return _mm_fmadd_ss(x, a, b); }
__attribute__((target("fma"), always_inline)) inline __m128d fmasd(__m128d x, __m128d a, __m128d b) { return _mm_fmadd_sd(x, a, b); }
__attribute__((target("sse2"), always_inline)) inline __m128 muladdss(__m128 x, __m128 a, __m128 b) { return _mm_add_ss(_mm_mul_ss(x, a), b); }
__attribute__((target("sse2"), always_inline)) inline __m128d muladdsd(__m128d x, __m128d a, __m128d b) { return _mm_add_sd(_mm_mul_sd(x, a), b); }

__attribute__((target("avx512f"), always_inline)) inline void st512ps(float* p, __m512 v) { _mm512_store_ps(p, v); }
__attribute__((target("avx512f"), always_inline)) inline void st512pd(double* p, __m512d v) { _mm512_store_pd(p, v); }
__attribute__((target("avx"), always_inline)) inline void st256ps(float* p, __m256 v) { _mm256_store_ps(p, v); }
__attribute__((target("avx"), always_inline)) inline void st256pd(double* p, __m256d v) { _mm256_store_pd(p, v); }
__attribute__((target("sse2"), always_inline)) inline void st128ps(float* p, __m128 v) { _mm_store_ps(p, v); }
__attribute__((target("sse2"), always_inline)) inline void st128pd(double* p, __m128d v) { _mm_store_pd(p, v); }
__attribute__((target("sse2"), always_inline)) inline void stss(float* p, __m128 v) { p[0] = _mm_cvtss_f32(v); }
__attribute__((target("sse2"), always_inline)) inline void stsd(double* p, __m128d v) { p[0] = _mm_cvtsd_f64(v); }
__attribute__((target("avx512f"), always_inline)) inline __m512 set512ps(float v) { return _mm512_set1_ps(v); }
__attribute__((target("avx512f"), always_inline)) inline __m512d set512pd(double v) { return _mm512_set1_pd(v); }
__attribute__((target("avx"), always_inline)) inline __m256 set256ps(float v) { return _mm256_set1_ps(v); }
__attribute__((target("avx"), always_inline)) inline __m256d set256pd(double v) { return _mm256_set1_pd(v); }
__attribute__((target("sse2"), always_inline)) inline __m128 set128ps(float v) { return _mm_set1_ps(v); }
__attribute__((target("sse2"), always_inline)) inline __m128d set128pd(double v) { return _mm_set1_pd(v); }

RSIM_FMA_KERNEL(k_avx512_fp32, "avx512f", __m512, set512ps, fma512ps, float, st512ps, 16)
RSIM_FMA_KERNEL(k_avx512_fp64, "avx512f", __m512d, set512pd, fma512pd, double, st512pd, 8)
RSIM_FMA_KERNEL(k_avx2_fp32, "avx2,fma", __m256, set256ps, fma256ps, float, st256ps, 8)
RSIM_FMA_KERNEL(k_avx2_fp64, "avx2,fma", __m256d, set256pd, fma256pd, double, st256pd, 4)
RSIM_FMA_KERNEL(k_sse2_fp32, "sse2", __m128, set128ps, muladd128ps, float, st128ps, 4)
RSIM_FMA_KERNEL(k_sse2_fp64, "sse2", __m128d, set128pd, muladd128pd, double, st128pd, 2)
RSIM_FMA_KERNEL(k_scalar_fma_fp32, "fma", __m128, set128ps, fmass, float, stss, 1)
RSIM_FMA_KERNEL(k_scalar_fma_fp64, "fma", __m128d, set128pd, fmasd, double, stsd, 1)
RSIM_FMA_KERNEL(k_scalar_fp32, "sse2", __m128, set128ps, muladdss, float, stss, 1)
RSIM_FMA_KERNEL(k_scalar_fp64, "sse2", __m128d, set128pd, muladdsd, double, stsd, 1)

// bf16 pairs (vdpbf16ps: 16 lanes × 2 products) and int8 quads (vpdpbusd: 16 lanes × 4 products)
template <int N>
__attribute__((target("avx512f,avx512bf16"), noinline)) double k_avx512_bf16(long iters) {
  __m512bh a = (__m512bh)_mm512_set1_epi16(static_cast<short>(0x3c00)), b = (__m512bh)_mm512_set1_epi16(static_cast<short>(0x3c00));
  __m512 acc[N];
  _Pragma("GCC unroll 32") for (int j = 0; j < N; ++j) acc[j] = _mm512_set1_ps(static_cast<float>(g_add));
  for (long i = 0; i < iters; ++i) {
    _Pragma("GCC unroll 32") for (int j = 0; j < N; ++j) acc[j] = _mm512_dpbf16_ps(acc[j], a, b);
  }
  alignas(64) float buf[16];
  double s = 0;
  for (int j = 0; j < N; ++j) {
    _mm512_store_ps(buf, acc[j]);
    for (float v : buf) s += v;
  }
  return s;
}
template <int N>
__attribute__((target("avx512f,avx512vnni"), noinline)) double k_avx512_int8(long iters) {
  __m512i a = _mm512_set1_epi8(1), b = _mm512_set1_epi8(static_cast<char>(static_cast<int>(g_add * 1e7)));
  __m512i acc[N];
  _Pragma("GCC unroll 32") for (int j = 0; j < N; ++j) acc[j] = _mm512_set1_epi32(j);
  for (long i = 0; i < iters; ++i) {
    _Pragma("GCC unroll 32") for (int j = 0; j < N; ++j) acc[j] = _mm512_dpbusd_epi32(acc[j], a, b);
  }
  alignas(64) int buf[16];
  double s = 0;
  for (int j = 0; j < N; ++j) {
    _mm512_store_si512(buf, acc[j]);
    for (int v : buf) s += v;
  }
  return s;
}

#define RSIM_CHAINS(FN)                       \
  [](int chains, long iters) -> double {      \
    switch (chains) {                         \
      case 1: return FN<1>(iters);            \
      case 2: return FN<2>(iters);            \
      case 4: return FN<4>(iters);            \
      case 6: return FN<6>(iters);            \
      case 8: return FN<8>(iters);            \
      case 10: return FN<10>(iters);          \
      case 12: return FN<12>(iters);          \
      case 14: return FN<14>(iters);          \
      case 16: return FN<16>(iters);          \
      case 20: return FN<20>(iters);          \
      default: return FN<24>(iters);          \
    }                                         \
  }
#endif  // RSIM_X86

struct FmaKernel {
  const char* isa;
  const char* precision;
  double lanes;
  bool fma;
  double flops_per_lane;  // per instruction and lane: 2 for an FMA or a mul+add pair, 4 bf16 pairs, 8 int8 quads
  int max_chains;         // what the register file holds with two operand registers to spare
  bool (*available)(const CpuFeatures&);
  const char* needs;
  double (*run)(int chains, long iters);
};

const std::vector<FmaKernel>& fma_kernels() {
  static const std::vector<FmaKernel> k = {
#if RSIM_X86
      {"avx512", "fp32", 16, true, 2, 24, [](const CpuFeatures& f) { return f.avx512f; }, "avx512f", RSIM_CHAINS(k_avx512_fp32)},
      {"avx512", "fp64", 8, true, 2, 24, [](const CpuFeatures& f) { return f.avx512f; }, "avx512f", RSIM_CHAINS(k_avx512_fp64)},
      {"avx512", "bf16", 16, true, 4, 24, [](const CpuFeatures& f) { return f.avx512f && f.avx512_bf16; }, "avx512_bf16", RSIM_CHAINS(k_avx512_bf16)},
      {"avx512", "int8", 16, true, 8, 24, [](const CpuFeatures& f) { return f.avx512f && f.avx512_vnni; }, "avx512_vnni", RSIM_CHAINS(k_avx512_int8)},
      {"avx2", "fp32", 8, true, 2, 12, [](const CpuFeatures& f) { return f.avx2 && f.fma; }, "avx2 and fma", RSIM_CHAINS(k_avx2_fp32)},
      {"avx2", "fp64", 4, true, 2, 12, [](const CpuFeatures& f) { return f.avx2 && f.fma; }, "avx2 and fma", RSIM_CHAINS(k_avx2_fp64)},
      {"sse2", "fp32", 4, false, 2, 16, [](const CpuFeatures& f) { return f.sse2; }, "sse2", RSIM_CHAINS(k_sse2_fp32)},
      {"sse2", "fp64", 2, false, 2, 16, [](const CpuFeatures& f) { return f.sse2; }, "sse2", RSIM_CHAINS(k_sse2_fp64)},
      {"scalar", "fp32", 1, true, 2, 12, [](const CpuFeatures& f) { return f.fma; }, "fma", RSIM_CHAINS(k_scalar_fma_fp32)},
      {"scalar", "fp64", 1, true, 2, 12, [](const CpuFeatures& f) { return f.fma; }, "fma", RSIM_CHAINS(k_scalar_fma_fp64)},
      {"scalar", "fp32", 1, false, 2, 12, [](const CpuFeatures& f) { return f.sse2 && !f.fma; }, "sse2", RSIM_CHAINS(k_scalar_fp32)},
      {"scalar", "fp64", 1, false, 2, 12, [](const CpuFeatures& f) { return f.sse2 && !f.fma; }, "sse2", RSIM_CHAINS(k_scalar_fp64)},
#endif
  };
  return k;
}

// ---- the running clock: a chain of dependent one-cycle integer adds ----
double add_chain_cycles(long iters) {
#if RSIM_X86
  unsigned long x = 0;
  for (long i = 0; i < iters; ++i) {
    asm volatile(".rept 100\n\taddq $1, %0\n\t.endr" : "+r"(x));
  }
  g_sink = static_cast<double>(x);
  return static_cast<double>(iters) * 100;
#else
  (void)iters;
  return 0;
#endif
}

// ---- bandwidth kernels: read (sum), write (store), copy, triad (a = b + s·c) ----
#if RSIM_X86
#define RSIM_BW_KERNELS(SUF, TARGET, VEC, W, LOAD, STORE, ADD, MUL, SET1, ZERO)                      \
  __attribute__((target(TARGET), noinline)) double read_##SUF(const float* a, size_t n, long passes) { \
    VEC s0 = ZERO(), s1 = ZERO(), s2 = ZERO(), s3 = ZERO(), s4 = ZERO(), s5 = ZERO(), s6 = ZERO(), s7 = ZERO(); \
    for (long p = 0; p < passes; ++p)                                                                \
    for (size_t i = 0; i + 8 * W <= n; i += 8 * W) {                                                 \
      s0 = ADD(s0, LOAD(a + i));                                                                     \
      s1 = ADD(s1, LOAD(a + i + W));                                                                 \
      s2 = ADD(s2, LOAD(a + i + 2 * W));                                                             \
      s3 = ADD(s3, LOAD(a + i + 3 * W));                                                             \
      s4 = ADD(s4, LOAD(a + i + 4 * W));                                                             \
      s5 = ADD(s5, LOAD(a + i + 5 * W));                                                             \
      s6 = ADD(s6, LOAD(a + i + 6 * W));                                                             \
      s7 = ADD(s7, LOAD(a + i + 7 * W));                                                             \
    }                                                                                                \
    VEC s = ADD(ADD(ADD(s0, s1), ADD(s2, s3)), ADD(ADD(s4, s5), ADD(s6, s7)));                       \
    alignas(64) float buf[W];                                                                        \
    STORE(buf, s);                                                                                   \
    double t = 0;                                                                                    \
    for (int k = 0; k < W; ++k) t += buf[k];                                                         \
    return t;                                                                                        \
  }                                                                                                  \
  __attribute__((target(TARGET), noinline)) double write_##SUF(float* a, size_t n) {                  \
    VEC v = SET1(static_cast<float>(g_add));                                                         \
    for (size_t i = 0; i + 4 * W <= n; i += 4 * W) {                                                 \
      STORE(a + i, v);                                                                               \
      STORE(a + i + W, v);                                                                           \
      STORE(a + i + 2 * W, v);                                                                       \
      STORE(a + i + 3 * W, v);                                                                       \
    }                                                                                                \
    return a[0];                                                                                     \
  }                                                                                                  \
  __attribute__((target(TARGET), noinline)) double copy_##SUF(float* a, const float* b, size_t n) {   \
    for (size_t i = 0; i + 4 * W <= n; i += 4 * W) {                                                 \
      VEC x0 = LOAD(b + i), x1 = LOAD(b + i + W), x2 = LOAD(b + i + 2 * W), x3 = LOAD(b + i + 3 * W); \
      STORE(a + i, x0);                                                                              \
      STORE(a + i + W, x1);                                                                          \
      STORE(a + i + 2 * W, x2);                                                                      \
      STORE(a + i + 3 * W, x3);                                                                      \
    }                                                                                                \
    return a[0];                                                                                     \
  }                                                                                                  \
  __attribute__((target(TARGET), noinline)) double triad_##SUF(float* a, const float* b, const float* c, size_t n) { \
    VEC s = SET1(static_cast<float>(g_mul));                                                         \
    for (size_t i = 0; i + 4 * W <= n; i += 4 * W) {                                                 \
      STORE(a + i, ADD(LOAD(b + i), MUL(s, LOAD(c + i))));                                           \
      STORE(a + i + W, ADD(LOAD(b + i + W), MUL(s, LOAD(c + i + W))));                               \
      STORE(a + i + 2 * W, ADD(LOAD(b + i + 2 * W), MUL(s, LOAD(c + i + 2 * W))));                   \
      STORE(a + i + 3 * W, ADD(LOAD(b + i + 3 * W), MUL(s, LOAD(c + i + 3 * W))));                   \
    }                                                                                                \
    return a[0];                                                                                     \
  }

__attribute__((target("avx512f"), always_inline)) inline __m512 ld512(const float* p) { return _mm512_load_ps(p); }
__attribute__((target("avx512f"), always_inline)) inline __m512 add512(__m512 a, __m512 b) { return _mm512_add_ps(a, b); }
__attribute__((target("avx512f"), always_inline)) inline __m512 mul512(__m512 a, __m512 b) { return _mm512_mul_ps(a, b); }
__attribute__((target("avx512f"), always_inline)) inline __m512 zero512() { return _mm512_setzero_ps(); }
__attribute__((target("avx"), always_inline)) inline __m256 ld256(const float* p) { return _mm256_load_ps(p); }
__attribute__((target("avx"), always_inline)) inline __m256 add256(__m256 a, __m256 b) { return _mm256_add_ps(a, b); }
__attribute__((target("avx"), always_inline)) inline __m256 mul256(__m256 a, __m256 b) { return _mm256_mul_ps(a, b); }
__attribute__((target("avx"), always_inline)) inline __m256 zero256() { return _mm256_setzero_ps(); }
__attribute__((target("sse2"), always_inline)) inline __m128 ld128(const float* p) { return _mm_load_ps(p); }
__attribute__((target("sse2"), always_inline)) inline __m128 add128(__m128 a, __m128 b) { return _mm_add_ps(a, b); }
__attribute__((target("sse2"), always_inline)) inline __m128 mul128(__m128 a, __m128 b) { return _mm_mul_ps(a, b); }
__attribute__((target("sse2"), always_inline)) inline __m128 zero128() { return _mm_setzero_ps(); }

RSIM_BW_KERNELS(avx512, "avx512f", __m512, 16, ld512, st512ps, add512, mul512, set512ps, zero512)
RSIM_BW_KERNELS(avx2, "avx", __m256, 8, ld256, st256ps, add256, mul256, set256ps, zero256)
RSIM_BW_KERNELS(sse2, "sse2", __m128, 4, ld128, st128ps, add128, mul128, set128ps, zero128)
#endif

struct BwKernels {
  const char* isa = "none";
  // read runs `passes` passes and sums its accumulators once: summed per pass, the reduction (a
  // chain of dependent adds) took as long as a pass over an L1-sized array and halved the L1 figure
  double (*read)(const float*, size_t, long) = nullptr;
  double (*write)(float*, size_t) = nullptr;
  double (*copy)(float*, const float*, size_t) = nullptr;
  double (*triad)(float*, const float*, const float*, size_t) = nullptr;
};

BwKernels bw_kernels(const CpuFeatures& f) {
#if RSIM_X86
  if (f.avx512f) return {"avx512", read_avx512, write_avx512, copy_avx512, triad_avx512};
  if (f.avx) return {"avx2", read_avx2, write_avx2, copy_avx2, triad_avx2};
  return {"sse2", read_sse2, write_sse2, copy_sse2, triad_sse2};
#else
  (void)f;
  return {};
#endif
}

// 1.02, 2, 0.5: three significant digits
std::string fmt_ratio(double v) {
  char b[32];
  std::snprintf(b, sizeof b, "%.3g", v);
  return b;
}

struct AlignedFree {
  void operator()(float* p) const { std::free(p); }
};
using Buffer = std::unique_ptr<float, AlignedFree>;

}  // namespace

SampleOutcome sample_best(const std::function<double()>& sample, int min_samples, double expect, double budget_s,
                          const std::function<double()>& now) {
  SampleOutcome o;
  const double start = now();
  while (o.samples < min_samples || (expect > 0 && o.best < expect && now() - start < budget_s)) {
    o.best = std::max(o.best, sample());
    ++o.samples;
  }
  o.reached = !(expect > 0) || o.best >= expect;
  return o;
}

double run_pinned(int threads, const std::function<void(int)>& body) {
  if (threads <= 1) {
    double secs = 0;
    std::thread t([&] {
      pin_this_thread(0);
      auto t0 = Clock::now();
      body(0);
      secs = since(t0);
    });
    t.join();
    return secs;
  }
  int ncpu = online_cpus();
  std::barrier sync(threads);
  std::vector<Clock::time_point> start(static_cast<size_t>(threads)), end(static_cast<size_t>(threads));
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t)
    pool.emplace_back([&, t] {
      pin_this_thread(t % ncpu);
      sync.arrive_and_wait();
      start[static_cast<size_t>(t)] = Clock::now();
      body(t);
      end[static_cast<size_t>(t)] = Clock::now();
    });
  for (auto& th : pool) th.join();
  auto s = *std::min_element(start.begin(), start.end());
  auto e = *std::max_element(end.begin(), end.end());
  return std::chrono::duration<double>(e - s).count();
}

size_t placement_offset(std::uintptr_t base, size_t capacity, size_t bytes) {
  std::uintptr_t align = 64;
  while (align < bytes) align *= 2;
  std::uintptr_t start = (base + align - 1) / align * align;
  size_t off = static_cast<size_t>(start - base);
  return off <= capacity && bytes <= capacity - off ? off : 0;
}

int saturating_chains(const std::vector<std::pair<int, double>>& sweep, double within) {
  double best = 0;
  for (const auto& [c, r] : sweep) best = std::max(best, r);
  for (const auto& [c, r] : sweep)
    if (r >= best * (1 - within)) return c;
  return sweep.empty() ? 0 : sweep.back().first;
}

std::vector<LevelSize> level_sizes(const std::vector<CacheLevel>& caches, int threads) {
  // The working set is split evenly among the threads; a private cache holds one thread's share,
  // a shared one the shares of every thread on it.
  std::vector<LevelSize> out;
  int ncpu = online_cpus();
  for (const CacheLevel& c : caches) {
    double instances_used = std::max(1.0, std::ceil(static_cast<double>(std::min(threads, ncpu)) / c.shared_by));
    out.push_back(LevelSize{"L" + std::to_string(c.level), c.size_bytes * instances_used, c.source});
  }
  return out;
}

const PeakResult* best_peak(const ProbeResult& r, const std::string& precision, int threads) {
  const PeakResult* best = nullptr;
  for (const auto& p : r.peaks)
    if (p.precision == precision && p.threads == threads && (!best || p.flops_per_s > best->flops_per_s)) best = &p;
  return best;
}

std::vector<std::string> probe_mislabels(const ProbeResult& r) {
  std::vector<std::string> out;
  for (const auto& lp : r.plateaus) {
    if (lp.kernel != "read") continue;
    const Plateau* dram = nullptr;
    double largest = 0;
    for (const auto& p : lp.plateaus) {
      if (p.level == "DRAM") dram = &p;
      else largest = std::max(largest, p.size_bytes > 0 ? p.size_bytes : p.to_bytes);
    }
    if (!dram) continue;
    const std::string at = std::to_string(lp.threads) + " thread" + (lp.threads == 1 ? "" : "s");
    auto gb = [](double v) {
      char b[32];
      std::snprintf(b, sizeof b, "%.4g GB/s", v / 1e9);
      return std::string(b);
    };
    auto mib = [](double v) {
      char b[32];
      std::snprintf(b, sizeof b, "%.4g MiB", v / 1048576.0);
      return std::string(b);
    };
    for (const auto& p : lp.plateaus)
      if (p.level != "DRAM" && dram->bytes_per_s >= p.bytes_per_s)
        out.push_back("DRAM read on " + at + " is " + gb(dram->bytes_per_s) + " (" + mib(dram->from_bytes) + " to " + mib(dram->to_bytes) +
                      "), not below " + p.level + "'s " + gb(p.bytes_per_s) + " (" + mib(p.from_bytes) + " to " + mib(p.to_bytes) + ")");
    if (dram->from_bytes < 4 * largest)
      out.push_back("the DRAM plateau on " + at + " starts at " + mib(dram->from_bytes) + ", below 4 × the largest cache (" + mib(largest) + ")");
  }
  return out;
}

const Plateau* find_plateau(const ProbeResult& r, const std::string& kernel, int threads, const std::string& level) {
  for (const auto& lp : r.plateaus)
    if (lp.kernel == kernel && lp.threads == threads)
      for (const auto& p : lp.plateaus)
        if (p.level == level) return &p;
  return nullptr;
}

namespace {

// One probe: its options, the result it fills, how long and how often a rate is sampled, and the
// physical cores the threads run on; each stage a member function.
struct Prober {
  const ProbeOptions& opt;
  ProbeResult& r;
  const double sample_s_default;
  const int samples_default;
  const double retry_budget_s;
  const int cores;

  void say(const std::string& s) const {
    if (opt.progress) opt.progress(s);
  }

  // Runs `kernel(iters)` on `threads` threads, with iters sized for `sample_s`; returns the best
  // rate (units of work per second) over the samples, `work(iters)` = work per thread. With
  // `expect` > 0, samples until the best reaches it or retry_budget_s passes (then `missed`).
  double best_rate(int threads, const std::function<void(long)>& kernel, const std::function<double(long)>& work,
                   double sample_s = 0, int samples = 0, double expect = 0, bool* missed = nullptr) const {
    auto seconds_now = [] { return std::chrono::duration<double>(Clock::now().time_since_epoch()).count(); };
    if (sample_s <= 0) sample_s = sample_s_default;
    if (samples <= 0) samples = samples_default;
    long iters = 1000;
    for (;;) {  // calibrate on one thread
      double t = run_pinned(1, [&](int) { kernel(iters); });
      if (t >= sample_s / 4 || iters > (1L << 40)) {
        iters = std::max(1L, static_cast<long>(static_cast<double>(iters) * sample_s / std::max(t, 1e-9)));
        break;
      }
      iters *= 8;
    }
    auto one = [&] {
      double t = run_pinned(threads, [&](int) { kernel(iters); });
      return t > 0 ? work(iters) * threads / t : 0.0;
    };
    SampleOutcome o = sample_best(one, samples, expect, retry_budget_s, seconds_now);
    if (missed) *missed = !o.reached;
    return o.best;
  }

  void scaled(const std::string& what, double one, double all, double expect_factor) {
    r.warnings.push_back(what + " on " + std::to_string(r.threads) + " threads reached " + fmt_ratio(all / one) +
                         "× the 1-thread rate (expected about " + fmt_ratio(expect_factor) + "× from " + std::to_string(cores) +
                         " physical core" + (cores == 1 ? "" : "s") + ") after " + fmt_ratio(retry_budget_s) +
                         " s of samples: other work on the CPUs, or a virtual CPU the host did not run; probe again on a quieter machine");
  }

  // 1. clock
  void probe_clock() {
    say("clock: dependent add chain");
    // the clock scales every theoretical roof: 60 samples of 0.25 ms, so that some run undisturbed
    auto cycles = [](long it) { return static_cast<double>(it) * 100; };
    r.clock_hz = best_rate(1, [](long it) { add_chain_cycles(it); }, cycles, 0.00025, 60);
    if (r.threads > 1) {
      // a dependent chain per thread: every logical CPU runs one at the clock, SMT siblings too
      bool missed = false;
      r.clock_all_hz = best_rate(r.threads, [](long it) { add_chain_cycles(it); }, cycles, 0.00025, 60, 0.95 * r.clock_hz * r.threads, &missed) / r.threads;
      if (missed) scaled("the clock chain", r.clock_hz, r.clock_all_hz * r.threads, r.threads);
    } else {
      r.clock_all_hz = r.clock_hz;
    }
  }

  // 2. peaks
  void probe_peaks() {
    std::vector<std::string> skipped_isas;
    for (const FmaKernel& k : fma_kernels()) {
      if (!k.available(r.features)) {
        // the scalar mul+add fallback is only for CPUs without FMA: not a skipped ISA
        if (std::string(k.isa) == "scalar") continue;
        std::string msg = std::string(k.isa) + " " + k.precision + ": the CPU lacks " + k.needs;
        r.skipped.push_back(msg);
        continue;
      }
      say(std::string("peak: ") + k.isa + " " + k.precision);
      PeakResult p;
      p.isa = k.isa;
      p.precision = k.precision;
      p.lanes = k.lanes;
      p.fma = k.fma;
      double per_iter_per_chain = k.lanes * k.flops_per_lane;
      for (int c : {1, 2, 4, 6, 8, 10, 12, 14, 16, 20, 24}) {
        if (c > k.max_chains) break;
        double rate = best_rate(1, [&](long it) { g_sink = k.run(c, it); },
                                [&](long it) { return static_cast<double>(it) * c * per_iter_per_chain; });
        p.chain_sweep.emplace_back(c, rate);
      }
      p.chains = saturating_chains(p.chain_sweep);
      for (const auto& [c, rate] : p.chain_sweep) p.flops_per_s = std::max(p.flops_per_s, rate);
      p.threads = 1;
      r.peaks.push_back(p);
      if (r.threads > 1) {
        PeakResult all = p;
        all.threads = r.threads;
        all.chain_sweep.clear();
        int c = p.chains;
        // the FMA pipes are per core: logical CPUs on one core share them
        bool missed = false;
        all.flops_per_s = best_rate(r.threads, [&](long it) { g_sink = k.run(c, it); },
                                    [&](long it) { return static_cast<double>(it) * c * per_iter_per_chain; }, 0, 0,
                                    0.9 * p.flops_per_s * cores, &missed);
        if (missed) scaled(std::string(k.isa) + " " + k.precision + " FMA peak", p.flops_per_s, all.flops_per_s, cores);
        r.peaks.push_back(all);
      }
      if (r.best_isa.empty()) r.best_isa = k.isa;
    }
  }

  // 3. bandwidth
  void probe_bandwidth() {
    BwKernels bk = bw_kernels(r.features);
    if (!bk.read) {
      r.skipped.push_back("bandwidth: no vector ISA on this CPU");
    } else {
      double last_cache = r.caches.empty() ? 0 : r.caches.back().size_bytes;
      double max_ws = opt.max_working_set_bytes > 0 ? opt.max_working_set_bytes : std::max(512.0 * 1024 * 1024, 4 * last_cache);
      // Four sizes per octave (two with --quick) up to 2 × the last cache; beyond, where only DRAM
      // answers and each pass is long, one per octave (--quick: every other octave, and the largest).
      const double per_octave = opt.quick ? 2 : 4;
      std::vector<double> sizes;
      double dense_to = last_cache > 0 ? 2 * last_cache : max_ws;
      for (double ws = 8 * 1024; ws <= max_ws * 1.0001;) {
        sizes.push_back(ws);
        ws *= ws < dense_to ? std::pow(2.0, 1 / per_octave) : opt.quick ? 4 : 2;
      }
      if (sizes.back() < max_ws * 0.99) sizes.push_back(max_ws);
      std::vector<int> thread_counts = {1};
      if (r.threads > 1) thread_counts.push_back(r.threads);
      // one buffer per thread, first touched by its pinned thread
      std::vector<Buffer> bufs(static_cast<size_t>(r.threads));
      std::vector<size_t> cap(static_cast<size_t>(r.threads));
      run_pinned(r.threads, [&](int t) {
        double bytes = t == 0 ? max_ws : max_ws / r.threads;
        // + 3 × 1024 floats: room for the gaps that spread the arrays over the page (below)
        size_t n = (static_cast<size_t>(bytes / sizeof(float)) / 64 + 2) * 64 + 3 * 1024;
        float* p = static_cast<float*>(std::aligned_alloc(64, n * sizeof(float)));
        if (p) {
          for (size_t i = 0; i < n; ++i) p[i] = 1.0f;
          cap[static_cast<size_t>(t)] = n;
        }
        bufs[static_cast<size_t>(t)].reset(p);
      });
      bool ok = std::all_of(bufs.begin(), bufs.end(), [](const Buffer& b) { return b != nullptr; });
      if (!ok) r.skipped.push_back("bandwidth: cannot allocate the working sets");
      for (const char* kname : {"read", "write", "copy", "triad"}) {
        if (!ok) break;
        std::string kn = kname;
        say("bandwidth: " + kn);
        for (int T : thread_counts) {
          for (double ws : sizes) bandwidth_sample(bk, bufs, cap, kn, T, ws, last_cache);
          bandwidth_levels(kn, T);
        }
      }
    }
  }

  // One kernel's bandwidth on T threads over a working set of `ws` bytes (none below 8 KiB a thread)
  void bandwidth_sample(const BwKernels& bk, const std::vector<Buffer>& bufs, const std::vector<size_t>& cap, const std::string& kn, int T, double ws,
                        double last_cache) {
    // elements per array for one thread's share, a multiple of 64 floats
    double share = ws / T;
    if (share < 8 * 1024) return;  // below 8 KiB a thread's share is all start-up
    int arrays = kn == "copy" ? 2 : kn == "triad" ? 3 : 1;
    size_t n = static_cast<size_t>(share / sizeof(float) / arrays) / 64 * 64;
    if (n < 64) return;
    double bytes_per_pass = static_cast<double>(n) * sizeof(float) * arrays;  // STREAM counting
    // Where the arrays sit matters, not only how large they are: an L1 that finds a line's way
    // from a hash of its virtual address (AMD Zen's "utag" way predictor) cannot hold two lines
    // of one set whose hashes match, and pages on either side of a large power-of-two address
    // boundary (every bit above the page offset flips) can hash alike. malloc placed the large
    // buffer just below a 64 MiB-aligned address (0x…effff040 here), so a working set at its
    // start straddled such a boundary: every pass missed L1 on the colliding page pair, and the
    // probe read L1 at half its bandwidth (a V-shaped curve inside L1, since a larger working
    // set dilutes the misses of a fixed page pair). Each working set therefore starts at an
    // address aligned to the power of two that holds it, where its pages differ only in their
    // low bits, as an ordinary allocation's do.
    // Consecutive arrays start `stride` floats apart, at page offsets 0, 1/3 and 2/3 of 4 KiB
    // (copy: 0 and 1/2), rounded to a cache line. A load from b + i or c + i then shares its
    // low 12 address bits (whose match with an older store in flight stalls the load: 4K
    // aliasing) only with stores to a at least 1.3 KiB back; with the arrays n + 16 floats
    // apart that distance depended on n and fell to 192 bytes at some sizes, which dipped
    // triad in L1. Spread over the page, the arrays also cover the L1 sets as evenly as one
    // contiguous block does, and cross their pages at different times (arrays at one page
    // offset, tried, overfilled some sets near the L1 size and lost 6 % in L3).
    const size_t page = 4096 / sizeof(float), shift = page / static_cast<size_t>(arrays) / 16 * 16;
    size_t stride = (n + page - 1 - shift) / page * page + shift;
    size_t used = (static_cast<size_t>(arrays - 1) * stride + n) * sizeof(float);
    auto pass = [&](int t, long passes) {
      float* base = bufs[static_cast<size_t>(t)].get();
      float* a = base + placement_offset(reinterpret_cast<std::uintptr_t>(base), cap[static_cast<size_t>(t)] * sizeof(float), used) /
                            sizeof(float);
      // the kernel chosen once per sample: a pass of a small working set lasts ~100 cycles,
      // which the name comparisons per pass would lengthen measurably
      double s = 0;
      if (arrays == 1 && kn == "read")
        s = bk.read(a, n, passes);
      else if (arrays == 1)
        for (long k = 0; k < passes; ++k) s += bk.write(a, n);
      else if (arrays == 2)
        for (long k = 0; k < passes; ++k) s += bk.copy(a, a + stride, n);
      else
        for (long k = 0; k < passes; ++k) s += bk.triad(a, a + stride, a + 2 * stride, n);
      if (s == 12345.678) g_sink = s;
    };
    // The passes per sample grow until a sample lasts half of sample_s; only samples that
    // long count (the first, short ones warm the caches). A sample slowed by another process
    // is just a bad sample: it cannot shrink the later ones to a few passes whose time
    // would be the threads' start-up (which drew tiny working sets at MB/s).
    const int want = ws > 4 * last_cache && last_cache > 0 ? (opt.quick ? 2 : 4) : (opt.quick ? 3 : samples_default);
    long passes = 1;
    double best = 0;
    for (int taken = 0, runs = 0; taken < want && runs < 64; ++runs) {
      double t = run_pinned(T, [&](int t) { pass(t, passes); });
      if (t >= sample_s_default / 2) {
        best = std::max(best, bytes_per_pass * static_cast<double>(passes) * T / t);
        ++taken;
      } else {
        double grow = t > 0 ? sample_s_default / t : 1024;
        passes = std::max(passes + 1, static_cast<long>(static_cast<double>(passes) * std::min(grow, 1024.0)));
      }
    }
    r.bandwidth.push_back(BandwidthSample{kn, T, bytes_per_pass * T, best});
  }

  // The levels a kernel's curve on T threads shows (its samples so far), with the read's warnings
  void bandwidth_levels(const std::string& kn, int T) {
    std::vector<CurvePoint> curve;
    for (const auto& b : r.bandwidth)
      if (b.kernel == kn && b.threads == T) curve.push_back(CurvePoint{b.working_set_bytes, b.bytes_per_s});
    LevelDetection det = detect_levels(curve, level_sizes(r.caches, T));
    for (const auto& w : det.warnings) {  // (each once: the kernels see the same levels)
      const std::string text = kn + ", " + std::to_string(T) + " thread" + (T == 1 ? "" : "s") + ": " + w;
      if (kn == "read") r.warnings.push_back(text);
    }
    r.plateaus.push_back(LevelPlateaus{kn, T, std::move(det.plateaus)});
  }
};

}  // namespace

ProbeResult run_probe(const ProbeOptions& opt) {
  auto t_start = Clock::now();
  ProbeResult r;
  r.quick = opt.quick;
  r.cpu = cpu_model_name();
  r.features = detect_features();
  r.caches = detect_caches();
  r.threads = opt.threads > 0 ? opt.threads : online_cpus();
  // Many short samples, best taken: on a shared machine a short window without interference is
  // likelier than a long one.
  const double sample_s = opt.quick ? 0.002 : 0.005;
  const int samples = opt.quick ? 5 : 9;

  // An all-thread run whose best sample stays below what the cores should reach (one core's rate
  // × cores) is sampled again, for at most this long: on a virtual machine the host sometimes
  // leaves a vCPU unscheduled for longer than a whole series of short samples (seen here: the
  // two-thread FMA peak measured at one core's rate, once in a run).
  const double retry_budget_s = opt.quick ? 0.5 : 2.0;
  // what `n` of this CPU's cores reach: the logical CPUs the threads are pinned to may share cores
  const int cores = physical_cores_among(std::min(r.threads, online_cpus()));
  Prober p{opt, r, sample_s, samples, retry_budget_s, cores};

  auto stage_start = Clock::now();
  auto stage_done = [&](const char* name) {
    r.stage_seconds.emplace_back(name, since(stage_start));
    stage_start = Clock::now();
  };
  p.probe_clock();
  stage_done("clock");
  p.probe_peaks();
  stage_done("peaks");
  if (opt.bandwidth) p.probe_bandwidth();
  if (opt.bandwidth) stage_done("bandwidth");
  r.seconds = since(t_start);
  return r;
}

}  // namespace rsim::measure
