// The platform catalog (hardware/*.yaml) against the figures of the seed documents, and the
// platform parser's derivations, derating and error messages.
//
// Every expected value below is derived by hand from the seed figures (seed file number in the
// comment) or from the vendor datasheet named in the platform file, with the arithmetic written
// out; none is copied from rsim's output.
#include <catch2/catch.hpp>

#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <string>

#include "engine/eval/evaluate.hpp"  // PlatformCache, resolve_platform

using namespace rsim;

namespace {

const std::string kHardware = RSIM_SOURCE_DIR "/hardware";

// Load one catalog platform; fails the test if it does not load cleanly.
Platform load(const std::string& name) {
  Catalog cat(kHardware);
  PlatformCache cache(cat);
  Diags d;
  Platform p = resolve_platform(CNode::make_scalar(name), cache, d);
  INFO(name << ":\n" << (d.empty() ? std::string() : ConfigError(d.list()).what()));
  REQUIRE(d.empty());
  REQUIRE(p.name == name);
  return p;
}

const ComputeRoof& roof(const Platform& p, DType t) {
  const ComputeRoof* r = p.roof_for(t);
  INFO(p.name << " has no roof for " << dtype_name(t));
  REQUIRE(r != nullptr);
  return *r;
}

// The level rooflines use by default.
const MemoryLevel& mem(const Platform& p) {
  REQUIRE_FALSE(p.memory.empty());
  return p.memory.front();
}

double ridge(const Platform& p, DType t) { return roof(p, t).peak_flops_per_s / mem(p).bandwidth_bytes_per_s; }
double derated_ridge(const Platform& p, DType t) {
  return roof(p, t).derated_flops_per_s / mem(p).derated_bandwidth_bytes_per_s;
}

// Build a platform from inline YAML written as file "p.yaml".
Platform build(const std::string& yaml, Diags& d) {
  CNode n = parse_yaml(yaml, "p.yaml");
  return build_platform(n, nullptr, d);
}

std::string all_messages(const Diags& d) { return d.empty() ? std::string() : ConfigError(d.list()).what(); }

constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;

}  // namespace

// ---------------------------------------------------------------------------------------------
// The catalog as a whole

TEST_CASE("platforms: every catalog file loads, is named like its file and is documented", "[platforms]") {
  namespace fs = std::filesystem;
  std::vector<std::string> stems;
  for (const auto& e : fs::directory_iterator(kHardware))
    if (e.path().extension() == ".yaml") stems.push_back(e.path().stem().string());
  // the seed platforms and at least these files
  for (const char* want : {"v100", "quadro_rtx6000", "rtx3080", "rtx3090", "gtx1080ti", "jetson_agx_xavier",
                           "xeon_silver_4210_2s", "xeon_e5_2697v2_2s", "i5_6300u", "avx512_16core"}) {
    INFO(want);
    CHECK(std::find(stems.begin(), stems.end(), want) != stems.end());
  }
  REQUIRE(stems.size() >= 10);

  Catalog cat(kHardware);
  CHECK(cat.names().size() == stems.size());
  PlatformCache cache(cat);
  for (const auto& stem : stems) {
    INFO("hardware/" << stem << ".yaml");
    Diags d;
    Platform p = resolve_platform(CNode::make_scalar(stem), cache, d);
    INFO(all_messages(d));
    CHECK(d.empty());
    CHECK(p.name == stem);
    CHECK_FALSE(p.title.empty());
    CHECK_FALSE(p.source.empty());
    CHECK((p.kind == "gpu" || p.kind == "cpu" || p.kind == "soc"));
    CHECK_FALSE(p.compute.empty());
    CHECK_FALSE(p.memory.empty());
    CHECK(p.roof_for(DType::fp32) != nullptr);  // every platform has an fp32 roof
    for (const auto& r : p.compute) {
      CHECK(r.peak_flops_per_s > 0);
      CHECK(r.derated_flops_per_s > 0);
      CHECK(r.derated_flops_per_s <= r.peak_flops_per_s);
      CHECK_FALSE(r.dtypes.empty());
    }
    for (const auto& m : p.memory) {
      CHECK(m.bandwidth_bytes_per_s > 0);
      CHECK(m.derated_bandwidth_bytes_per_s > 0);
      CHECK(m.derated_bandwidth_bytes_per_s <= m.bandwidth_bytes_per_s);
    }
    // the header comment gives the sources and the arithmetic
    std::ifstream in(cat.path_of(stem));
    std::string first;
    std::getline(in, first);
    CHECK(first.rfind("# ", 0) == 0);
  }
}

TEST_CASE("platforms: a catalog file whose name differs from its file is rejected", "[platforms]") {
  namespace fs = std::filesystem;
  fs::path dir = fs::temp_directory_path() / ("rsim_test_platforms_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  {
    std::ofstream f(dir / "foo.yaml");
    f << "name: bar\ncompute:\n  - {name: fp32, dtypes: [fp32], peak: 1 TFLOP/s}\nmemory:\n  - {name: DRAM, bandwidth: 10 GB/s}\n";
  }
  Catalog cat(dir.string());
  PlatformCache cache(cat);
  Diags d;
  resolve_platform(CNode::make_scalar("foo"), cache, d);
  REQUIRE(d.size() == 1);
  CHECK(d.list()[0].message == "platform file " + (dir / "foo.yaml").string() + " is named 'bar'; the name must match the file");
  CHECK(d.list()[0].loc.line == 1);
  fs::remove_all(dir);
}

// ---------------------------------------------------------------------------------------------
// One test per seed platform (seeds README, "Platforms and the figures each must reproduce")

TEST_CASE("platforms: NVIDIA Tesla V100 (seeds 000, 004, V100 datasheet)", "[platforms]") {
  Platform p = load("v100");
  // 5120 CUDA cores × 1.53 GHz × 1 lane × 1 FMA × 2 = 15,667.2 GFLOP/s
  CHECK(roof(p, DType::fp32).peak_flops_per_s == Approx(5120 * 1.53e9 * 1 * 1 * 2));
  CHECK(roof(p, DType::fp32).peak_flops_per_s == Approx(15.7e12).epsilon(0.005));  // the seeds' rounded "15.7 TFLOPS"
  CHECK(roof(p, DType::fp16).peak_flops_per_s == Approx(125e12));                   // datasheet, tensor cores
  CHECK(roof(p, DType::fp64).peak_flops_per_s == Approx(7.8e12));                   // datasheet, SXM2
  CHECK(roof(p, DType::fp32).name == "fp32 CUDA cores");
  CHECK(p.roof_for(DType::int8) == nullptr);  // no int8 figure sourced: no roof
  // HBM2: 877 MHz × 2 (DDR) × 4096 bit / 8 = 898.048 GB/s
  CHECK(mem(p).bandwidth_bytes_per_s == Approx(877e6 * 2 * 4096 / 8));
  CHECK(mem(p).bandwidth_bytes_per_s == Approx(898e9).epsilon(1e-4));
  // not seed 004's 1.75 GHz × 2 × 512 B = 1792 GB/s
  CHECK(mem(p).bandwidth_bytes_per_s < 0.6 * (1.75e9 * 2 * 512));
  CHECK(mem(p).size_bytes == 16 * kGiB);
  // ridge: 15.6672e12 / 898.048e9 = 17.45; the seed writes 17.4
  CHECK(ridge(p, DType::fp32) == Approx((5120 * 1.53e9 * 2) / (877e6 * 2 * 512)));
  CHECK(ridge(p, DType::fp32) == Approx(17.4).margin(0.1));
  CHECK(derated_ridge(p, DType::fp32) == Approx(ridge(p, DType::fp32)));  // no derating
}

TEST_CASE("platforms: NVIDIA Quadro RTX 6000 (seed 000, Quadro RTX 6000 datasheet)", "[platforms]") {
  Platform p = load("quadro_rtx6000");
  // GDDR6: 1750 MHz × 8 = 14 Gbps per pin, × 384 bit / 8 = 48 B → 672 GB/s
  CHECK(mem(p).bandwidth_bytes_per_s == Approx(1750e6 * 8 * 384 / 8));
  CHECK(mem(p).bandwidth_bytes_per_s == Approx(14e9 * 48));
  CHECK(mem(p).bandwidth_bytes_per_s == Approx(672e9));
  // fp32: 4608 CUDA cores × 1.77 GHz × 2 = 16.31 TFLOP/s (datasheet: 16.3)
  CHECK(roof(p, DType::fp32).peak_flops_per_s == Approx(4608 * 1.77e9 * 2));
  CHECK(roof(p, DType::fp32).peak_flops_per_s == Approx(16.3e12).epsilon(1e-3));
  CHECK(roof(p, DType::fp16).peak_flops_per_s == Approx(130.5e12));  // 576 tensor cores × 1.77 GHz × 64 FMA × 2
  CHECK(roof(p, DType::fp16).peak_flops_per_s == Approx(576 * 1.77e9 * 64 * 2).epsilon(1e-3));
  CHECK(roof(p, DType::int8).peak_flops_per_s == Approx(261e12));  // 2 × fp16 tensor
  // ridges: 16.31 / 0.672 = 24.27; 130.5 / 0.672 = 194.2; 261 / 0.672 = 388.4
  CHECK(ridge(p, DType::fp32) == Approx(4608 * 1.77e9 * 2 / 672e9));
  CHECK(ridge(p, DType::int8) == Approx(261e12 / 672e9));
  CHECK(mem(p).size_bytes == 24 * kGiB);
}

TEST_CASE("platforms: NVIDIA GeForce RTX 3080 (seed 000)", "[platforms]") {
  Platform p = load("rtx3080");
  CHECK(roof(p, DType::fp32).peak_flops_per_s == Approx(29.8e12));
  CHECK(roof(p, DType::fp16).peak_flops_per_s == Approx(119e12));
  CHECK(roof(p, DType::int8).peak_flops_per_s == Approx(238e12));
  CHECK(mem(p).bandwidth_bytes_per_s == Approx(760.32e9));
  // ridges: 29.8e12 / 760.32e9 = 39.194; 119e12 / 760.32e9 = 156.513; 238e12 / 760.32e9 = 313.026
  CHECK(ridge(p, DType::fp32) == Approx(29.8e12 / 760.32e9));
  CHECK(ridge(p, DType::fp16) == Approx(119e12 / 760.32e9));
  CHECK(ridge(p, DType::int8) == Approx(238e12 / 760.32e9));
  // the seed's rounded figures
  CHECK(ridge(p, DType::fp32) == Approx(39.19).epsilon(1e-3));
  CHECK(ridge(p, DType::fp16) == Approx(156.51).epsilon(1e-3));
  CHECK(ridge(p, DType::int8) == Approx(313.03).epsilon(1e-3));
  CHECK(derated_ridge(p, DType::int8) == Approx(ridge(p, DType::int8)));
}

TEST_CASE("platforms: NVIDIA GeForce RTX 3090 (seed 003)", "[platforms]") {
  Platform p = load("rtx3090");
  // 10496 cores × 1.7 GHz × 2 = 35,686.4 GFLOP/s
  CHECK(roof(p, DType::fp32).peak_flops_per_s == Approx(10496 * 1.7e9 * 2));
  CHECK(roof(p, DType::fp32).peak_flops_per_s == Approx(35686.4e9));
  // GDDR6X: 19.5 Gbps × 384 bit / 8 = 936 GB/s
  CHECK(mem(p).bandwidth_bytes_per_s == Approx(19.5e9 * 384 / 8));
  CHECK(mem(p).bandwidth_bytes_per_s == Approx(936e9));
  // ridge: 35,686.4 / 936 = 38.127; the seed writes 38.13
  CHECK(ridge(p, DType::fp32) == Approx(35686.4e9 / 936e9));
  CHECK(ridge(p, DType::fp32) == Approx(38.13).epsilon(1e-3));
}

TEST_CASE("platforms: NVIDIA GeForce GTX 1080 Ti (seed 001)", "[platforms]") {
  Platform p = load("gtx1080ti");
  CHECK(roof(p, DType::fp32).peak_flops_per_s == Approx(11.3e12));
  CHECK(mem(p).bandwidth_bytes_per_s == Approx(484e9));
  // ridge: 11.3e12 / 484e9 = 23.347; the seed writes 23.3
  CHECK(ridge(p, DType::fp32) == Approx(11.3e12 / 484e9));
  CHECK(ridge(p, DType::fp32) == Approx(23.3).margin(0.05));
  // seed 001: VGG16 (I ≈ 25) is compute bound on it, MobileNet v1 (I ≈ 7) memory bound
  CHECK(25 > ridge(p, DType::fp32));
  CHECK(7 < ridge(p, DType::fp32));
}

TEST_CASE("platforms: NVIDIA Jetson AGX Xavier (seed 000)", "[platforms]") {
  Platform p = load("jetson_agx_xavier");
  CHECK(p.kind == "soc");
  CHECK(roof(p, DType::int8).peak_flops_per_s == Approx(22.4e12));
  CHECK(mem(p).bandwidth_bytes_per_s == Approx(137e9));
  // fp32 roof chosen so that the fp32 ridge is the seed's 10.2 FLOP/B: 10.2 × 137 GB/s = 1.3974 TFLOP/s
  CHECK(roof(p, DType::fp32).peak_flops_per_s == Approx(10.2 * 137e9));
  CHECK(ridge(p, DType::fp32) == Approx(10.2));
  // int8 ridge: 22.4e12 / 137e9 = 163.5
  CHECK(ridge(p, DType::int8) == Approx(22.4e12 / 137e9));
}

TEST_CASE("platforms: 2 × Intel Xeon Silver 4210 (seed 003)", "[platforms]") {
  Platform p = load("xeon_silver_4210_2s");
  const ComputeRoof& r = roof(p, DType::fp32);
  // theoretical at base clock: 2 sockets × 10 cores × 2.2 GHz × 16 lanes × 1 FMA × 2 = 1408 GFLOP/s
  CHECK(r.peak_flops_per_s == Approx(2 * 10 * 2.2e9 * 16 * 1 * 2));
  CHECK(r.peak_flops_per_s == Approx(1408e9));
  // derated at the measured AVX-512 clock: 2 × 10 × 1.5 GHz × 32 FLOP/cycle = 960 GFLOP/s
  CHECK(r.derated_flops_per_s == Approx(2 * 10 * 1.5e9 * 32));
  CHECK(r.derated_flops_per_s == Approx(960e9));
  // measured peaks (seed 003: 939.63 peakperf, 946.83 cpufp, 938.3 aida64) are within 3 % of the derated roof
  for (double measured : {939.63e9, 946.83e9, 938.3e9}) CHECK(measured / r.derated_flops_per_s == Approx(1).epsilon(0.03));
  // memory: 4 channels × 2400 MT/s × 64 bit / 8 = 76.8 GB/s
  CHECK(mem(p).bandwidth_bytes_per_s == Approx(4 * 2400e6 * 64 / 8));
  CHECK(mem(p).bandwidth_bytes_per_s == Approx(76.8e9));
  CHECK(mem(p).size_bytes == 128 * kGiB);  // 4 × 32 GB
  // ridge: the seed's "12.5 theoretical" is at the AVX-512 clock, i.e. rsim's derated ridge: 960 / 76.8 = 12.5
  CHECK(derated_ridge(p, DType::fp32) == Approx(12.5));
  // at the base clock it would be 1408 / 76.8 = 18.33
  CHECK(ridge(p, DType::fp32) == Approx(1408.0 / 76.8));
}

TEST_CASE("platforms: 2 × Intel Xeon E5-2697 v2 (seed 004)", "[platforms]") {
  Platform p = load("xeon_e5_2697v2_2s");
  // 2 sockets × 12 cores × 2.7 GHz × 8 AVX lanes × (1 add + 1 mul) = 1036.8 GFLOP/s
  CHECK(roof(p, DType::fp32).peak_flops_per_s == Approx(2 * 12 * 2.7e9 * 8 * (1 + 1)));
  CHECK(roof(p, DType::fp32).peak_flops_per_s == Approx(1036.8e9));
  // 1866 MT/s × 4 channels × 8 B × 2 sockets = 119.424 GB/s (seed: 119 GB/s)
  CHECK(mem(p).bandwidth_bytes_per_s == Approx(1866e6 * 4 * 8 * 2));
  CHECK(mem(p).bandwidth_bytes_per_s == Approx(119e9).epsilon(0.005));
  CHECK(ridge(p, DType::fp32) == Approx(1036.8e9 / 119.424e9));
}

TEST_CASE("platforms: Intel Core i5-6300U (seed 003, Intel ARK)", "[platforms]") {
  Platform p = load("i5_6300u");
  // 2 cores × 2.4 GHz × (256 / 32 = 8 lanes × 2 FMA × 2) = 153.6 GFLOP/s
  CHECK(roof(p, DType::fp32).peak_flops_per_s == Approx(2 * 2.4e9 * (256 / 32 * 2 * 2)));
  CHECK(roof(p, DType::fp32).peak_flops_per_s == Approx(153.6e9));
  // Intel ARK: DDR4-2133 dual channel: 2133 MT/s × 8 B × 2 = 34.128 GB/s (ARK: 34.1 GB/s)
  CHECK(mem(p).bandwidth_bytes_per_s == Approx(2133e6 * 8 * 2));
  CHECK(mem(p).bandwidth_bytes_per_s == Approx(34.1e9).epsilon(1e-3));
}

TEST_CASE("platforms: 16-core AVX-512 x86 (seed 002)", "[platforms]") {
  Platform p = load("avx512_16core");
  const ComputeRoof& r = roof(p, DType::fp32);
  // 16 cores × 4.5 GHz × 16 lanes × 2 FMA × 2 = 4.608 TFLOP/s
  CHECK(r.peak_flops_per_s == Approx(16 * 4.5e9 * 16 * 2 * 2));
  CHECK(r.peak_flops_per_s == Approx(4.608e12));
  // all-core AVX-512 clock 2.9 GHz: 16 × 2.9 GHz × 64 = 2.9696 TFLOP/s (seed: ≈ 2.96)
  CHECK(r.derated_flops_per_s == Approx(16 * 2.9e9 * 64));
  CHECK(r.derated_flops_per_s == Approx(2.96e12).epsilon(0.005));
  // the measured 2.86 TFLOP/s is 96 % of it
  CHECK(2.86e12 / r.derated_flops_per_s == Approx(0.963).epsilon(0.002));
  CHECK(mem(p).bandwidth_bytes_per_s == Approx(96e9));
  CHECK(mem(p).derated_bandwidth_bytes_per_s == Approx(74e9));
  CHECK(mem(p).derated_bandwidth_bytes_per_s / mem(p).bandwidth_bytes_per_s == Approx(0.77).epsilon(0.01));  // 74 / 96
  // ridges: 4608 / 96 = 48; 2969.6 / 74 = 40.13
  CHECK(ridge(p, DType::fp32) == Approx(48));
  CHECK(derated_ridge(p, DType::fp32) == Approx(16 * 2.9e9 * 64 / 74e9));
}

// ---------------------------------------------------------------------------------------------
// Derivations and derating in build_platform

TEST_CASE("platforms: flops_per_cycle and clock × data_rate derivations", "[platforms]") {
  Diags d;
  Platform p = build(R"(name: p
compute:
  - name: fp32
    dtypes: [fp32]
    derive: {units: 4, clock: 2 GHz, flops_per_cycle: 32}
memory:
  - name: DDR
    derive: {clock: 1.2 GHz, data_rate: 2, bus_width: 8 B, channels: 2, sockets: 2}
  - name: L2
    bandwidth: 1 TiB/s
    size: 4 MiB
)",
                     d);
  INFO(all_messages(d));
  REQUIRE(d.empty());
  CHECK(p.compute[0].peak_flops_per_s == Approx(4 * 2e9 * 32));
  CHECK(p.memory[0].bandwidth_bytes_per_s == Approx(1.2e9 * 2 * 8 * 2 * 2));  // 8 B = 64 bit
  CHECK(p.memory[1].bandwidth_bytes_per_s == Approx(1024.0 * kGiB));
  CHECK(p.memory[1].size_bytes == 4 * 1024 * 1024);
  CHECK(p.level("L2") == &p.memory[1]);
}

TEST_CASE("platforms: platform-wide derating", "[platforms]") {
  SECTION("bandwidth_fraction 0.77 of 96 GB/s is 73.92 GB/s") {
    Diags d;
    Platform p = build(R"(name: p
derate: {bandwidth_fraction: 0.77}
compute:
  - {name: fp32, dtypes: [fp32], peak: 4.608 TFLOP/s}
memory:
  - name: DRAM
    bandwidth: 96 GB/s
)",
                       d);
    INFO(all_messages(d));
    REQUIRE(d.empty());
    CHECK(p.memory[0].bandwidth_bytes_per_s == Approx(96e9));
    CHECK(p.memory[0].derated_bandwidth_bytes_per_s == Approx(96e9 * 0.77));
    CHECK(p.memory[0].derated_bandwidth_bytes_per_s == Approx(73.92e9));
    CHECK(p.compute[0].derated_flops_per_s == Approx(4.608e12));  // compute untouched
  }
  SECTION("platform-wide vector_clock and compute_efficiency apply to every roof, over its own values") {
    // so that `base: X` plus `derate:` in a scenario changes every roof of X
    Diags d;
    Platform p = build(R"(name: p
derate: {vector_clock: 1.5 GHz, compute_efficiency: 0.9}
compute:
  - name: fp32
    dtypes: [fp32]
    derive: {units: 20, clock: 2.2 GHz, lanes: 16, fma_pipes: 1}
  - name: own
    dtypes: [fp64]
    derive: {units: 20, clock: 2.2 GHz, lanes: 8, fma_pipes: 1}
    vector_clock: 2 GHz
    efficiency: 0.5
  - name: given
    dtypes: [int8]
    peak: 100 TOP/s
memory:
  - {name: DRAM, bandwidth: 76.8 GB/s}
)",
                       d);
    INFO(all_messages(d));
    REQUIRE(d.empty());
    // 20 × 1.5 GHz × 16 lanes × 1 FMA × 2 × 0.9
    CHECK(p.compute[0].derated_flops_per_s == Approx(20 * 1.5e9 * 16 * 1 * 2 * 0.9));
    // the platform's values replace the roof's own 2 GHz and 0.5: 20 × 1.5 GHz × 8 × 2 × 0.9
    CHECK(p.compute[1].derated_flops_per_s == Approx(20 * 1.5e9 * 8 * 1 * 2 * 0.9));
    // a given peak has no clock to rescale; only the efficiency applies: 100e12 × 0.9
    CHECK(p.compute[2].derated_flops_per_s == Approx(100e12 * 0.9));
    CHECK(p.memory[0].derated_bandwidth_bytes_per_s == Approx(76.8e9));  // memory untouched
  }
  SECTION("a level's own fraction or measured value applies without a platform-wide fraction") {
    Diags d;
    Platform p = build(R"(name: p
compute:
  - name: fp32
    dtypes: [fp32]
    derive: {units: 20, clock: 2.2 GHz, lanes: 16, fma_pipes: 1}
    vector_clock: 1.5 GHz
    efficiency: 0.5
memory:
  - name: DRAM
    bandwidth: 76.8 GB/s
    measured: 72.245 GB/s
  - name: L3
    bandwidth: 200 GB/s
    fraction: 0.8
  - name: plain
    bandwidth: 10 GB/s
)",
                       d);
    INFO(all_messages(d));
    REQUIRE(d.empty());
    // 20 × 1.5 GHz × 16 × 2 × 0.5
    CHECK(p.compute[0].derated_flops_per_s == Approx(20 * 1.5e9 * 16 * 2 * 0.5));
    CHECK(p.memory[0].derated_bandwidth_bytes_per_s == Approx(72.245e9));
    CHECK(p.memory[1].derated_bandwidth_bytes_per_s == Approx(200e9 * 0.8));
    CHECK(p.memory[2].derated_bandwidth_bytes_per_s == Approx(10e9));  // no derating
  }
  SECTION("a platform-wide bandwidth_fraction replaces a level's fraction and measured value") {
    Diags d;
    Platform p = build(R"(name: p
derate: {bandwidth_fraction: 0.5}
compute:
  - {name: fp32, dtypes: [fp32], peak: 1 TFLOP/s}
memory:
  - {name: DRAM, bandwidth: 76.8 GB/s, measured: 72.245 GB/s}
  - {name: L3, bandwidth: 200 GB/s, fraction: 0.8}
)",
                       d);
    INFO(all_messages(d));
    REQUIRE(d.empty());
    CHECK(p.memory[0].derated_bandwidth_bytes_per_s == Approx(76.8e9 * 0.5));
    CHECK(p.memory[1].derated_bandwidth_bytes_per_s == Approx(200e9 * 0.5));
  }
}

TEST_CASE("platforms: units accepted in platform files", "[platforms]") {
  Diags d;
  Platform p = build(R"(name: p
compute:
  - {name: a, dtypes: [int8], peak: 238 TOPS}
  - {name: b, dtypes: [fp16], peak: 119000 GFLOP/s}
  - {name: c, dtypes: [fp32], peak: 1.5e12 FLOP/s}
memory:
  - {name: m1, bandwidth: 6255 MiB/s}
  - {name: m2, bandwidth: 1.5 GiB/s}
  - {name: m3, derive: {transfer_rate: 14 Gbps, bus_width: 48 B}}
)",
                     d);
  INFO(all_messages(d));
  REQUIRE(d.empty());
  CHECK(p.roof_for(DType::int8)->peak_flops_per_s == Approx(238e12));
  CHECK(p.roof_for(DType::fp16)->peak_flops_per_s == Approx(119e12));
  CHECK(p.roof_for(DType::fp32)->peak_flops_per_s == Approx(1.5e12));
  CHECK(p.memory[0].bandwidth_bytes_per_s == Approx(6255.0 * 1024 * 1024));
  CHECK(p.memory[1].bandwidth_bytes_per_s == Approx(1.5 * kGiB));
  CHECK(p.memory[2].bandwidth_bytes_per_s == Approx(14e9 * 48));  // 48 B bus = 384 bit
}

// ---------------------------------------------------------------------------------------------
// Inline what-if platforms

TEST_CASE("platforms: an inline platform with base: rtx3080 overrides its memory", "[platforms]") {
  Catalog cat(kHardware);
  PlatformCache cache(cat);
  Diags d;
  CNode entry = parse_yaml(R"(name: rtx3080_half_bw
base: rtx3080
memory:
  - name: GDDR6X
    bandwidth: 380.16 GB/s
)",
                           "s.yaml");
  Platform p = resolve_platform(entry, cache, d);
  INFO(all_messages(d));
  REQUIRE(d.empty());
  CHECK(p.name == "rtx3080_half_bw");
  // titled as itself, a what-if of its base (the base's title inherited into it); a title: of its own wins
  CHECK(p.title == "rtx3080_half_bw — what-if of NVIDIA GeForce RTX 3080 (Ampere)");
  {
    Diags d2;
    CHECK(resolve_platform(parse_yaml("name: mine\nbase: rtx3080\ntitle: My 3080\n", "s.yaml"), cache, d2).title == "My 3080");
    CHECK(d2.empty());
  }
  REQUIRE(p.compute.size() == 3);  // inherited roofs
  CHECK(roof(p, DType::fp32).peak_flops_per_s == Approx(29.8e12));
  CHECK(roof(p, DType::int8).peak_flops_per_s == Approx(238e12));
  CHECK(mem(p).bandwidth_bytes_per_s == Approx(760.32e9 / 2));
  // half the bandwidth doubles the ridge: 2 × 29.8e12 / 760.32e9 = 78.39
  CHECK(ridge(p, DType::fp32) == Approx(2 * 29.8e12 / 760.32e9));
}

TEST_CASE("platforms: an inline platform with an unknown base suggests the catalog name", "[platforms]") {
  Catalog cat(kHardware);
  PlatformCache cache(cat);
  Diags d;
  CNode entry = parse_yaml("name: x\nbase: rtx308\n", "s.yaml");
  resolve_platform(entry, cache, d);
  REQUIRE(d.size() == 1);
  CHECK(format_diagnostic(d.list()[0]) ==
        "s.yaml:2:7: error: unknown platform 'rtx308'\n"
        "base: rtx308\n"
        "      ^\n"
        "note: did you mean 'rtx3080'?\n");
}

// ---------------------------------------------------------------------------------------------
// Error messages of build_platform

TEST_CASE("platforms: a bandwidth without a unit", "[platforms]") {
  Diags d;
  build(R"(name: p
compute:
  - name: fp32
    dtypes: [fp32]
    peak: 1 TFLOP/s
memory:
  - name: DRAM
    bandwidth: 760
)",
        d);
  REQUIRE(d.size() == 1);
  CHECK(format_diagnostic(d.list()[0]) ==
        "p.yaml:8:16: error: bandwidth: '760' has no unit; write a bandwidth with its unit, e.g. '760.32 GB/s'\n"
        "    bandwidth: 760\n"
        "               ^\n");
}

TEST_CASE("platforms: a misspelt key gets a did-you-mean", "[platforms]") {
  Diags d;
  build(R"(name: p
compute:
  - name: fp32
    dtypes: [fp32]
    peak: 1 TFLOP/s
memory:
  - name: DRAM
    bandwith: 760.32 GB/s
)",
        d);
  // the level lacks a bandwidth (line 7, where the level's map starts) and has an unknown key (line 8)
  REQUIRE(d.size() == 2);
  CHECK(format_diagnostic(d.list()[0]) ==
        "p.yaml:7:5: error: memory level 'DRAM' needs 'bandwidth' (e.g. '760.32 GB/s') or 'derive' (transfer_rate, bus_width, channels)\n"
        "  - name: DRAM\n"
        "    ^\n");
  CHECK(format_diagnostic(d.list()[1]) ==
        "p.yaml:8:5: error: unknown key 'bandwith' in memory level\n"
        "    bandwith: 760.32 GB/s\n"
        "    ^\n"
        "note: did you mean 'bandwidth'?\n");
}

TEST_CASE("platforms: a misspelt top-level key", "[platforms]") {
  Diags d;
  build("name: p\ntitel: T\ncompute:\n  - {name: fp32, dtypes: [fp32], peak: 1 TFLOP/s}\nmemory:\n  - {name: m, bandwidth: 1 GB/s}\n", d);
  REQUIRE(d.size() == 1);
  CHECK(format_diagnostic(d.list()[0]) ==
        "p.yaml:2:1: error: unknown key 'titel' in platform\n"
        "titel: T\n"
        "^\n"
        "note: did you mean 'title'?\n");
}

TEST_CASE("platforms: both peak and derive on one roof", "[platforms]") {
  Diags d;
  build(R"(name: p
compute:
  - name: fp32
    dtypes: [fp32]
    peak: 1 TFLOP/s
    derive: {units: 2, clock: 1 GHz, fma_pipes: 1}
memory:
  - {name: m, bandwidth: 1 GB/s}
)",
        d);
  REQUIRE(d.size() == 1);
  CHECK(d.list()[0].message == "compute roof 'fp32' gives both 'peak' and 'derive'; keep one");
  CHECK(d.list()[0].loc.line == 6);
}

TEST_CASE("platforms: both bandwidth and derive on one memory level", "[platforms]") {
  Diags d;
  build(R"(name: p
compute:
  - {name: fp32, dtypes: [fp32], peak: 1 TFLOP/s}
memory:
  - name: m
    bandwidth: 1 GB/s
    derive: {transfer_rate: 2400 MT/s, bus_width: 64 bit}
)",
        d);
  REQUIRE(d.size() == 1);
  CHECK(d.list()[0].message == "memory level 'm' gives both 'bandwidth' and 'derive'; keep one");
  CHECK(d.list()[0].loc.line == 7);
}

TEST_CASE("platforms: a fraction above 1", "[platforms]") {
  Diags d;
  build(R"(name: p
compute:
  - {name: fp32, dtypes: [fp32], peak: 1 TFLOP/s}
memory:
  - name: m
    bandwidth: 96 GB/s
    fraction: 1.5
)",
        d);
  REQUIRE(d.size() == 1);
  CHECK(format_diagnostic(d.list()[0]) ==
        "p.yaml:7:15: error: fraction must be a fraction in (0, 1], got 1.5\n"
        "    fraction: 1.5\n"
        "              ^\n");
}

TEST_CASE("platforms: more build_platform errors", "[platforms]") {
  SECTION("fraction and measured together") {
    Diags d;
    build("name: p\ncompute:\n  - {name: c, dtypes: [fp32], peak: 1 TFLOP/s}\nmemory:\n"
          "  - {name: m, bandwidth: 96 GB/s, fraction: 0.5, measured: 74 GB/s}\n",
          d);
    REQUIRE(d.size() == 1);
    CHECK(d.list()[0].message == "memory level 'm' gives both 'fraction' and 'measured'; keep one");
  }
  SECTION("vector_clock on a roof given as a peak") {
    Diags d;
    build("name: p\ncompute:\n  - {name: c, dtypes: [fp32], peak: 1 TFLOP/s, vector_clock: 1 GHz}\nmemory:\n"
          "  - {name: m, bandwidth: 96 GB/s}\n",
          d);
    REQUIRE(d.size() == 1);
    CHECK(d.list()[0].message ==
          "compute roof 'c': vector_clock needs a derived peak (derive: units, clock, ...) to rescale");
  }
  SECTION("an unknown dtype") {
    Diags d;
    build("name: p\ncompute:\n  - {name: c, dtypes: [fp23], peak: 1 TFLOP/s}\nmemory:\n  - {name: m, bandwidth: 96 GB/s}\n", d);
    REQUIRE(d.size() == 1);
    CHECK(d.list()[0].message == "unknown dtype 'fp23'");
    REQUIRE(d.list()[0].notes.size() == 1);
    CHECK(d.list()[0].notes[0].message.find("did you mean") == 0);
  }
  SECTION("a wrong dimension") {
    Diags d;
    build("name: p\ncompute:\n  - {name: c, dtypes: [fp32], peak: 1 GB/s}\nmemory:\n  - {name: m, bandwidth: 96 GB/s}\n", d);
    REQUIRE(d.size() == 1);
    CHECK(d.list()[0].message == "peak: unknown unit 'GB/s' for a compute rate; write e.g. '29.8 TFLOP/s'");
  }
  SECTION("fma_pipes together with add_pipes") {
    Diags d;
    build("name: p\ncompute:\n  - {name: c, dtypes: [fp32], derive: {units: 1, clock: 1 GHz, fma_pipes: 1, add_pipes: 1}}\n"
          "memory:\n  - {name: m, bandwidth: 96 GB/s}\n",
          d);
    REQUIRE(d.size() == 1);
    CHECK(d.list()[0].message == "give either fma_pipes or add_pipes and mul_pipes, not both");
  }
  SECTION("missing compute and memory") {
    Diags d;
    build("name: p\n", d);
    REQUIRE(d.size() == 2);
    CHECK(d.list()[0].message == "platform needs 'compute'");
    CHECK(d.list()[1].message == "platform needs 'memory'");
  }
}

TEST_CASE("platforms: a what-if derate merges with the base's, keeping its AVX-512 clock", "[platforms]") {
  Catalog cat(kHardware);
  PlatformCache cache(cat);
  Diags d;
  CNode n = parse_yaml("{base: xeon_silver_4210_2s, name: w, derate: {bandwidth_fraction: 0.7}}", "p.yaml");
  Platform p = resolve_platform(n, cache, d);
  REQUIRE(d.empty());
  CHECK(roof(p, DType::fp32).derated_flops_per_s == Approx(2 * 10 * 1.5e9 * 32));  // still at 1.5 GHz: 960 GFLOP/s
  CHECK(mem(p).derated_bandwidth_bytes_per_s == Approx(76.8e9 * 0.7));
}

TEST_CASE("platforms: derating cannot raise a roof", "[platforms]") {
  Diags d;
  build("name: p\ncompute:\n  - {name: c, dtypes: [fp32], derive: {units: 2, clock: 2 GHz, lanes: 8, fma_pipes: 1}, vector_clock: 3 GHz}\n"
        "memory:\n  - {name: m, bandwidth: 10 GB/s, measured: 12 GB/s}\n",
        d);
  CHECK(all_messages(d) ==
        "p.yaml:3:5: error: compute roof 'c': vector_clock 3 GHz is above the clock 2 GHz\n"
        "  - {name: c, dtypes: [fp32], derive: {units: 2, clock: 2 GHz, lanes: 8, fma_pipes: 1}, vector_clock: 3 GHz}\n"
        "    ^\n"
        "note: derating lowers a roof; to model a turbo clock, raise 'clock' instead\n"
        "p.yaml:5:45: error: memory level 'm': measured 12 GB/s is above the theoretical 10 GB/s\n"
        "  - {name: m, bandwidth: 10 GB/s, measured: 12 GB/s}\n"
        "                                            ^\n"
        "note: check both figures: a measurement cannot beat the hardware's limit\n");
}

// ---------------------------------------------------------------------------------------------
// Vendor platforms (vendor datasheets / whitepapers named in each file). Tensor and matrix figures
// are DENSE: where the datasheet quotes 2:4-sparsity figures, the expected value is that halved.
// The bandwidth fractions (0.85 GPUs, 0.8 DDR/LPDDR) are the files' stated assumptions.

TEST_CASE("platforms: NVIDIA A100 SXM4 80GB (A100 datasheet)", "[platforms]") {
  Platform p = load("a100_sxm_80gb");
  CHECK(p.kind == "gpu");
  // fp32 19.5 TFLOP/s; cross-check 6912 CUDA cores × 1.41 GHz × 2 = 19.49 TFLOP/s
  CHECK(roof(p, DType::fp32).peak_flops_per_s == Approx(19.5e12));
  CHECK(roof(p, DType::fp32).peak_flops_per_s == Approx(6912 * 1.41e9 * 2).epsilon(0.001));
  CHECK(roof(p, DType::tf32).peak_flops_per_s == Approx(312e12 / 2));  // 156 dense, 312 sparse
  CHECK(roof(p, DType::bf16).peak_flops_per_s == Approx(624e12 / 2));  // 312 dense
  CHECK(&roof(p, DType::fp16) == &roof(p, DType::bf16));                // one roof for both
  CHECK(roof(p, DType::int8).peak_flops_per_s == Approx(1248e12 / 2));  // 624 dense
  CHECK(roof(p, DType::fp64).peak_flops_per_s == Approx(19.5e12));      // fp64 tensor cores
  CHECK(p.roof_for(DType::fp8) == nullptr);                             // Ampere has no fp8
  // HBM2e 2039 GB/s, 80 GB; derated at the assumed 0.85
  CHECK(mem(p).bandwidth_bytes_per_s == Approx(2039e9));
  CHECK(mem(p).derated_bandwidth_bytes_per_s == Approx(2039e9 * 0.85));
  CHECK(mem(p).size_bytes == 80 * kGiB);
  CHECK(p.memory.size() == 1);  // the 40 MB L2 has no published bandwidth
  // ridges: 19.5 / 2.039 = 9.56; 312 / 2.039 = 153.0
  CHECK(ridge(p, DType::fp32) == Approx(19.5e12 / 2039e9));
  CHECK(ridge(p, DType::fp32) == Approx(9.56).epsilon(0.001));
  CHECK(ridge(p, DType::fp16) == Approx(153.0).epsilon(0.001));
  CHECK(derated_ridge(p, DType::fp32) == Approx(19.5e12 / (2039e9 * 0.85)));
}

TEST_CASE("platforms: NVIDIA H100 SXM5 80GB (H100 datasheet)", "[platforms]") {
  Platform p = load("h100_sxm");
  CHECK(roof(p, DType::fp32).peak_flops_per_s == Approx(67e12));
  // cross-check (H100 whitepaper): 16,896 CUDA cores × 1.98 GHz × 2 = 66.9 TFLOP/s
  CHECK(roof(p, DType::fp32).peak_flops_per_s == Approx(16896 * 1.98e9 * 2).epsilon(0.002));
  CHECK(roof(p, DType::fp64).peak_flops_per_s == Approx(67e12));  // fp64 tensor cores
  // datasheet sparsity figures halved
  CHECK(roof(p, DType::tf32).peak_flops_per_s == Approx(989e12 / 2));
  CHECK(roof(p, DType::bf16).peak_flops_per_s == Approx(1979e12 / 2));
  CHECK(roof(p, DType::fp16).peak_flops_per_s == Approx(1979e12 / 2));
  CHECK(roof(p, DType::fp8).peak_flops_per_s == Approx(3958e12 / 2));
  CHECK(roof(p, DType::int8).peak_flops_per_s == Approx(3958e12 / 2));
  // the whitepaper's dense figures agree to 0.05 %: 494.7, 989.4, 1978.9
  CHECK(roof(p, DType::tf32).peak_flops_per_s == Approx(494.7e12).epsilon(5e-4));
  CHECK(roof(p, DType::fp16).peak_flops_per_s == Approx(989.4e12).epsilon(5e-4));
  CHECK(roof(p, DType::fp8).peak_flops_per_s == Approx(1978.9e12).epsilon(5e-4));
  // HBM3 3.35 TB/s, 80 GB
  CHECK(mem(p).bandwidth_bytes_per_s == Approx(3.35e12));
  CHECK(mem(p).derated_bandwidth_bytes_per_s == Approx(3.35e12 * 0.85));
  CHECK(mem(p).size_bytes == 80 * kGiB);
  // ridges: 67 / 3.35 = 20; 989.5 / 3.35 = 295.4; 1979 / 3.35 = 590.7
  CHECK(ridge(p, DType::fp32) == Approx(20.0));
  CHECK(ridge(p, DType::bf16) == Approx(989.5e12 / 3.35e12));
  CHECK(ridge(p, DType::fp8) == Approx(590.7).epsilon(1e-3));
  CHECK(derated_ridge(p, DType::fp32) == Approx(20.0 / 0.85));
}

TEST_CASE("platforms: NVIDIA H200 SXM 141GB (H200 datasheet)", "[platforms]") {
  Platform p = load("h200");
  Platform h100 = load("h100_sxm");
  // same compute as the H100 SXM
  for (DType t : {DType::fp64, DType::fp32, DType::tf32, DType::bf16, DType::fp16, DType::fp8, DType::int8}) {
    INFO(dtype_name(t));
    CHECK(roof(p, t).peak_flops_per_s == Approx(roof(h100, t).peak_flops_per_s));
  }
  CHECK(roof(p, DType::fp32).peak_flops_per_s == Approx(67e12));
  CHECK(roof(p, DType::fp8).peak_flops_per_s == Approx(3958e12 / 2));
  // HBM3e 4.8 TB/s, 141 GB: 4.8 / 3.35 = 1.43× the H100's bandwidth
  CHECK(mem(p).bandwidth_bytes_per_s == Approx(4.8e12));
  CHECK(mem(p).bandwidth_bytes_per_s / mem(h100).bandwidth_bytes_per_s == Approx(4.8 / 3.35));  // 1.43
  CHECK(mem(p).derated_bandwidth_bytes_per_s == Approx(4.8e12 * 0.85));
  CHECK(mem(p).size_bytes == 141 * kGiB);
  // ridges: 67 / 4.8 = 13.96; 989.5 / 4.8 = 206.1
  CHECK(ridge(p, DType::fp32) == Approx(67e12 / 4.8e12));
  CHECK(ridge(p, DType::fp16) == Approx(206.1).epsilon(1e-3));
}

TEST_CASE("platforms: NVIDIA H200 NVL (H200 datasheet, NVL column)", "[platforms]") {
  Platform p = load("h200_nvl");
  // datasheet NVL column, sparsity figures halved: tf32 835 / 2, bf16 1671 / 2, fp8 3341 / 2
  CHECK(roof(p, DType::fp32).peak_flops_per_s == Approx(60e12));
  CHECK(roof(p, DType::fp64).peak_flops_per_s == Approx(60e12));
  CHECK(roof(p, DType::tf32).peak_flops_per_s == Approx(835e12 / 2));
  CHECK(roof(p, DType::bf16).peak_flops_per_s == Approx(1671e12 / 2));
  CHECK(&roof(p, DType::fp16) == &roof(p, DType::bf16));
  CHECK(roof(p, DType::fp8).peak_flops_per_s == Approx(3341e12 / 2));
  CHECK(roof(p, DType::int8).peak_flops_per_s == Approx(3341e12 / 2));
  // the same memory as the SXM part: HBM3e 4.8 TB/s, 141 GB; the same 132 SMs and 50 MB L2
  CHECK(mem(p).bandwidth_bytes_per_s == Approx(4.8e12));
  CHECK(mem(p).derated_bandwidth_bytes_per_s == Approx(4.8e12 * 0.85));  // 4.08 TB/s
  CHECK(mem(p).size_bytes == 141 * kGiB);
  CHECK(p.sm_count == 132);
  CHECK(p.l2_size_bytes == 50.0 * 1024 * 1024);
  // the NVL bridge: 900 GB/s per GPU both ways together = 450 each way, among up to 4 GPUs
  REQUIRE(p.link_for(4) != nullptr);
  CHECK(p.link_for(4)->bandwidth_bytes_per_s == Approx(900e9 / 2));
  // ridges: 60 / 4.8 = 12.5; 835.5 / 4.8 = 174.1; derated 835.5 / 4.08 = 204.8
  CHECK(ridge(p, DType::fp32) == Approx(12.5));
  CHECK(ridge(p, DType::bf16) == Approx(174.1).epsilon(1e-3));
  CHECK(derated_ridge(p, DType::bf16) == Approx(204.8).epsilon(1e-3));
}

TEST_CASE("platforms: NVIDIA B200 (HGX B200 datasheet / 8)", "[platforms]") {
  Platform p = load("b200");
  // the 8-GPU board's figures / 8; FP4 to TF32 are quoted with sparsity and halved
  CHECK(roof(p, DType::fp32).peak_flops_per_s == Approx(600e12 / 8));  // 75
  // cross-check: 148 SMs × 128 fp32 lanes × 2 (FMA) × 1.98 GHz = 75.0 TFLOP/s
  CHECK(roof(p, DType::fp32).peak_flops_per_s == Approx(148 * 128 * 2 * 1.98e9).epsilon(0.001));
  CHECK(roof(p, DType::fp64).peak_flops_per_s == Approx(296e12 / 8));  // 37
  CHECK(roof(p, DType::tf32).peak_flops_per_s == Approx(18e15 / 8 / 2));  // 1125
  CHECK(roof(p, DType::bf16).peak_flops_per_s == Approx(36e15 / 8 / 2));  // 2250
  CHECK(&roof(p, DType::fp16) == &roof(p, DType::bf16));
  CHECK(roof(p, DType::fp8).peak_flops_per_s == Approx(72e15 / 8 / 2));  // 4500
  CHECK(roof(p, DType::int8).peak_flops_per_s == Approx(72e15 / 8 / 2));
  // HBM3e: 64 TB/s and 1,440 GB on the board: 8 TB/s and 180 GB per GPU
  CHECK(mem(p).bandwidth_bytes_per_s == Approx(64e12 / 8));
  CHECK(mem(p).derated_bandwidth_bytes_per_s == Approx(8e12 * 0.85));  // 6.8 TB/s
  CHECK(mem(p).size_bytes == 1440 / 8 * kGiB);
  CHECK(p.sm_count == 148);
  CHECK(p.l2_size_bytes == 129536.0 * 1024);  // 126.5 MiB as CUDA reports it
  // NVLink 5: 1.8 TB/s per GPU both ways together = 900 GB/s each way, 8 GPUs a board
  REQUIRE(p.link_for(8) != nullptr);
  CHECK(p.link_for(8)->bandwidth_bytes_per_s == Approx(1.8e12 / 2));
  CHECK(p.link_for(16)->bandwidth_bytes_per_s == Approx(400e9 / 8));  // one 400 Gb/s NIC per GPU
  // ridges: 75 / 8 = 9.375; 2250 / 8 = 281.25; 4500 / 8 = 562.5; derated 2250 / 6.8 = 330.9
  CHECK(ridge(p, DType::fp32) == Approx(9.375));
  CHECK(ridge(p, DType::bf16) == Approx(281.25));
  CHECK(ridge(p, DType::fp8) == Approx(562.5));
  CHECK(derated_ridge(p, DType::bf16) == Approx(330.9).epsilon(1e-3));
}

TEST_CASE("platforms: NVIDIA GB200, one GPU (GB200 NVL72 datasheet / 2)", "[platforms]") {
  Platform p = load("gb200");
  Platform b200 = load("b200");
  // one superchip (1 Grace + 2 Blackwell GPUs) / 2; sparsity figures halved
  CHECK(roof(p, DType::fp32).peak_flops_per_s == Approx(180e12 / 2));  // 90
  CHECK(roof(p, DType::fp64).peak_flops_per_s == Approx(90e12 / 2));   // 45
  CHECK(roof(p, DType::tf32).peak_flops_per_s == Approx(5e15 / 2 / 2));   // 1250
  CHECK(roof(p, DType::bf16).peak_flops_per_s == Approx(10e15 / 2 / 2));  // 2500
  CHECK(roof(p, DType::fp8).peak_flops_per_s == Approx(20e15 / 2 / 2));   // 5000
  CHECK(roof(p, DType::int8).peak_flops_per_s == Approx(20e15 / 2 / 2));
  // the same GPU as the B200 at a higher power limit: 2500 / 2250 = 1.11× the B200's bf16 roof
  CHECK(roof(p, DType::bf16).peak_flops_per_s / roof(b200, DType::bf16).peak_flops_per_s == Approx(2500.0 / 2250));
  CHECK(mem(p).bandwidth_bytes_per_s == Approx(16e12 / 2));  // 8 TB/s
  CHECK(mem(p).size_bytes == 372 / 2 * kGiB);                // 186 GB
  CHECK(p.sm_count == b200.sm_count);
  // NVLink 5 across the 72 GPUs of the rack: 900 GB/s each way
  REQUIRE(p.link_for(72) != nullptr);
  CHECK(p.link_for(72)->bandwidth_bytes_per_s == Approx(1.8e12 / 2));
  CHECK(p.link_for(72)->gpus == 72);
  // ridges: 90 / 8 = 11.25; 2500 / 8 = 312.5; 5000 / 8 = 625
  CHECK(ridge(p, DType::fp32) == Approx(11.25));
  CHECK(ridge(p, DType::bf16) == Approx(312.5));
  CHECK(ridge(p, DType::fp8) == Approx(625.0));
}

TEST_CASE("platforms: NVIDIA L40S (L40S datasheet)", "[platforms]") {
  Platform p = load("l40s");
  CHECK(roof(p, DType::fp32).peak_flops_per_s == Approx(91.6e12));
  // cross-check: 142 SMs × 128 lanes × 2 (FMA) × 2.52 GHz = 91.6 TFLOP/s
  CHECK(roof(p, DType::fp32).peak_flops_per_s == Approx(142 * 128 * 2 * 2.52e9).epsilon(0.001));
  // dense (the datasheet's sparse figures are twice these, except bf16/fp16: 362.05 dense, 733
  // with sparsity, as printed)
  CHECK(roof(p, DType::tf32).peak_flops_per_s == Approx(366e12 / 2));
  CHECK(roof(p, DType::bf16).peak_flops_per_s == Approx(362.05e12));
  CHECK(&roof(p, DType::fp16) == &roof(p, DType::bf16));
  CHECK(roof(p, DType::fp8).peak_flops_per_s == Approx(1466e12 / 2));
  CHECK(roof(p, DType::int8).peak_flops_per_s == Approx(1466e12 / 2));
  CHECK(p.roof_for(DType::fp64) == nullptr);  // no fp64 figure in the datasheet
  // GDDR6 864 GB/s, 48 GB
  CHECK(mem(p).bandwidth_bytes_per_s == Approx(864e9));
  CHECK(mem(p).derated_bandwidth_bytes_per_s == Approx(864e9 * 0.85));  // 734.4 GB/s
  CHECK(mem(p).size_bytes == 48 * kGiB);
  CHECK(p.l2_source.find("assumption") == 0);  // the datasheet gives no L2
  // hw show says so beside the figure (a datasheet L2 prints bare: the H200 NVL's below)
  CHECK(describe_platform(p).find("L2 96 MiB (assumption") != std::string::npos);
  CHECK(describe_platform(load("h200_nvl")).find("L2 50 MiB\n") != std::string::npos);
  // ridges: 91.6 / 0.864 = 106.0; 362.05 / 0.864 = 419.0
  CHECK(ridge(p, DType::fp32) == Approx(106.0).epsilon(1e-3));
  CHECK(ridge(p, DType::bf16) == Approx(362.05e12 / 864e9));
  CHECK(ridge(p, DType::bf16) == Approx(419.0).epsilon(1e-3));
}

TEST_CASE("platforms: NVIDIA L4 (L4 datasheet)", "[platforms]") {
  Platform p = load("l4");
  CHECK(roof(p, DType::fp32).peak_flops_per_s == Approx(30.3e12));
  CHECK(roof(p, DType::tf32).peak_flops_per_s == Approx(120e12 / 2));  // 60 dense
  CHECK(roof(p, DType::fp16).peak_flops_per_s == Approx(242e12 / 2));  // 121 dense
  CHECK(&roof(p, DType::fp16) == &roof(p, DType::bf16));
  CHECK(roof(p, DType::fp8).peak_flops_per_s == Approx(485e12 / 2));   // 242.5 dense
  CHECK(roof(p, DType::int8).peak_flops_per_s == Approx(485e12 / 2));
  CHECK(p.roof_for(DType::fp64) == nullptr);  // no fp64 figure in the datasheet
  CHECK(mem(p).bandwidth_bytes_per_s == Approx(300e9));
  CHECK(mem(p).derated_bandwidth_bytes_per_s == Approx(255e9));  // 300 × 0.85
  CHECK(mem(p).size_bytes == 24 * kGiB);
  // ridges: 30.3 / 0.3 = 101; 121 / 0.3 = 403.3
  CHECK(ridge(p, DType::fp32) == Approx(101.0));
  CHECK(ridge(p, DType::bf16) == Approx(121e12 / 300e9));
}

TEST_CASE("platforms: NVIDIA GeForce RTX 4090 (Ada whitepaper v2.02)", "[platforms]") {
  Platform p = load("rtx4090");
  // 128 SMs × 128 = 16,384 CUDA cores × 2.52 GHz × 2 = 82.58 TFLOP/s (whitepaper: 82.6)
  CHECK(roof(p, DType::fp32).peak_flops_per_s == Approx(128 * 128 * 2.52e9 * 2));
  CHECK(roof(p, DType::fp32).peak_flops_per_s == Approx(82.6e12).epsilon(0.001));
  CHECK(roof(p, DType::tf32).peak_flops_per_s == Approx(82.6e12));
  // FP32-accumulate tensor figures: fp16/bf16 165.2, fp8 330.3 (half the FP16-accumulate 330.3 / 660.6)
  CHECK(roof(p, DType::fp16).peak_flops_per_s == Approx(165.2e12));
  CHECK(roof(p, DType::bf16).peak_flops_per_s == Approx(165.2e12));
  CHECK(roof(p, DType::fp8).peak_flops_per_s == Approx(660.6e12 / 2));
  CHECK(roof(p, DType::int8).peak_flops_per_s == Approx(660.6e12));
  CHECK(p.roof_for(DType::fp64) == nullptr);
  // GDDR6X: 21 Gbps × 384 bit / 8 = 1008 GB/s
  CHECK(mem(p).bandwidth_bytes_per_s == Approx(21e9 * 384 / 8));
  CHECK(mem(p).bandwidth_bytes_per_s == Approx(1008e9));
  CHECK(mem(p).derated_bandwidth_bytes_per_s == Approx(1008e9 * 0.85));
  CHECK(mem(p).size_bytes == 24 * kGiB);
  // ridges: 82.58 / 1.008 = 81.92; 165.2 / 1.008 = 163.9
  CHECK(ridge(p, DType::fp32) == Approx(16384 * 2.52e9 * 2 / 1008e9));
  CHECK(ridge(p, DType::fp16) == Approx(163.9).epsilon(1e-3));
}

TEST_CASE("platforms: NVIDIA Jetson AGX Orin 64GB (datasheet, technical brief)", "[platforms]") {
  Platform p = load("jetson_agx_orin");
  CHECK(p.kind == "soc");
  // 2048 CUDA cores × 1.3 GHz × 2 = 5.3248 TFLOP/s (technical brief: 5.3)
  CHECK(roof(p, DType::fp32).peak_flops_per_s == Approx(2048 * 1.3e9 * 2));
  CHECK(roof(p, DType::fp32).peak_flops_per_s == Approx(5.3e12).epsilon(0.005));
  // GPU int8: 170 sparse TOP/s / 2 = 85 dense; the headline 275 = 170 (GPU) + 105 (DLAs), sparse
  CHECK(roof(p, DType::int8).peak_flops_per_s == Approx(170e12 / 2));
  CHECK(roof(p, DType::int8).peak_flops_per_s < 275e12 / 2);
  CHECK(p.roof_for(DType::fp16) == nullptr);  // not published
  // LPDDR5 204.8 GB/s = 6400 MT/s × 256 bit / 8
  CHECK(mem(p).bandwidth_bytes_per_s == Approx(204.8e9));
  CHECK(mem(p).bandwidth_bytes_per_s == Approx(6400e6 * 256 / 8));
  CHECK(mem(p).derated_bandwidth_bytes_per_s == Approx(204.8e9 * 0.8));
  CHECK(mem(p).size_bytes == 64 * kGiB);
  // ridges: 5324.8 / 204.8 = 26.0; 85000 / 204.8 = 415.0
  CHECK(ridge(p, DType::fp32) == Approx(26.0));
  CHECK(ridge(p, DType::int8) == Approx(85e12 / 204.8e9));
}

TEST_CASE("platforms: AMD Instinct MI300X (MI300X data sheet, ROCm docs, CDNA 3 white paper)", "[platforms]") {
  Platform p = load("mi300x");
  CHECK(p.kind == "gpu");
  // 304 CUs × 2.1 GHz × FLOP/clock/CU
  const double cu_hz = 304 * 2.1e9;
  CHECK(roof(p, DType::fp32).peak_flops_per_s == Approx(cu_hz * 256));
  CHECK(roof(p, DType::tf32).peak_flops_per_s == Approx(cu_hz * 1024));
  CHECK(roof(p, DType::fp16).peak_flops_per_s == Approx(cu_hz * 2048));
  CHECK(&roof(p, DType::fp16) == &roof(p, DType::bf16));
  CHECK(roof(p, DType::fp8).peak_flops_per_s == Approx(cu_hz * 4096));
  CHECK(roof(p, DType::int8).peak_flops_per_s == Approx(cu_hz * 4096));
  CHECK(roof(p, DType::fp64).peak_flops_per_s == Approx(cu_hz * 256));  // matrix fp64 (vector: 128)
  // the data sheet's rounded peaks: 163.4, 653.7, 1307.4, 2614.9
  CHECK(roof(p, DType::fp32).peak_flops_per_s == Approx(163.4e12).epsilon(1e-3));
  CHECK(roof(p, DType::tf32).peak_flops_per_s == Approx(653.7e12).epsilon(1e-3));
  CHECK(roof(p, DType::bf16).peak_flops_per_s == Approx(1307.4e12).epsilon(1e-3));
  CHECK(roof(p, DType::int8).peak_flops_per_s == Approx(2614.9e12).epsilon(1e-3));
  // HBM3: 5.2 Gbps × 1024 bit / 8 × 8 stacks = 5.3248 TB/s (data sheet: 5.3 TB/s), 8 × 24 GB
  CHECK(mem(p).bandwidth_bytes_per_s == Approx(5.2e9 * 1024 / 8 * 8));
  CHECK(mem(p).bandwidth_bytes_per_s == Approx(5.3e12).epsilon(0.005));
  CHECK(mem(p).derated_bandwidth_bytes_per_s == Approx(5.3248e12 * 0.85));
  CHECK(mem(p).size_bytes == 192 * kGiB);
  // further levels: Infinity Cache 17.2 TB/s (256 MB), L2 2 KB/clk × 8 XCDs × 2.1 GHz = 34.4 TB/s
  REQUIRE(p.memory.size() == 3);
  const MemoryLevel* ic = p.level("Infinity Cache");
  REQUIRE(ic != nullptr);
  CHECK(ic->bandwidth_bytes_per_s == Approx(17.2e12));
  CHECK(ic->size_bytes == 256.0 * 1024 * 1024);
  const MemoryLevel* l2 = p.level("L2");
  REQUIRE(l2 != nullptr);
  CHECK(l2->bandwidth_bytes_per_s == Approx(2048 * 8 * 2.1e9).epsilon(1e-3));
  CHECK(l2->size_bytes == 32.0 * 1024 * 1024);
  // ridges: 163.4 / 5.3248 = 30.69; 1307.4 / 5.3248 = 245.5
  CHECK(ridge(p, DType::fp32) == Approx(cu_hz * 256 / 5.3248e12));
  CHECK(ridge(p, DType::fp32) == Approx(30.69).epsilon(1e-3));
  CHECK(ridge(p, DType::bf16) == Approx(245.5).epsilon(1e-3));
}

TEST_CASE("platforms: AMD EPYC 9654, 1 socket (AMD product page, Zen 4 FP pipes)", "[platforms]") {
  Platform p = load("epyc_9654");
  CHECK(p.kind == "cpu");
  // 96 cores × 2.4 GHz base × 32 fp32 FLOP/cycle (8 lanes × 2 FMA × 2) = 7372.8 GFLOP/s
  CHECK(roof(p, DType::fp32).peak_flops_per_s == Approx(96 * 2.4e9 * 32));
  CHECK(roof(p, DType::fp32).peak_flops_per_s == Approx(7372.8e9));
  // fp64: 96 × 2.4 GHz × 16 = 3686.4 GFLOP/s
  CHECK(roof(p, DType::fp64).peak_flops_per_s == Approx(96 * 2.4e9 * 16));
  CHECK(roof(p, DType::fp64).peak_flops_per_s == Approx(3686.4e9));
  // no AVX-512 clock published for Zen 4: derated compute = theoretical
  CHECK(roof(p, DType::fp32).derated_flops_per_s == Approx(roof(p, DType::fp32).peak_flops_per_s));
  // at the 3.55 GHz all-core boost it would be 96 × 3.55 × 32 = 10,905.6 GFLOP/s (not modelled)
  CHECK(roof(p, DType::fp32).peak_flops_per_s < 96 * 3.55e9 * 32);
  CHECK(p.roof_for(DType::bf16) == nullptr);
  CHECK(p.roof_for(DType::int8) == nullptr);
  // 12 channels × 4800 MT/s × 8 B = 460.8 GB/s
  CHECK(mem(p).bandwidth_bytes_per_s == Approx(12 * 4800e6 * 64 / 8));
  CHECK(mem(p).bandwidth_bytes_per_s == Approx(460.8e9));
  CHECK(mem(p).derated_bandwidth_bytes_per_s == Approx(460.8e9 * 0.8));
  // ridges: 7372.8 / 460.8 = 16; derated 7372.8 / 368.64 = 20
  CHECK(ridge(p, DType::fp32) == Approx(16.0));
  CHECK(derated_ridge(p, DType::fp32) == Approx(20.0));
  CHECK(ridge(p, DType::fp64) == Approx(8.0));
}

TEST_CASE("platforms: Intel Xeon Platinum 8480+, 1 socket (Intel ARK, AMX rates)", "[platforms]") {
  Platform p = load("xeon_8480_plus");
  CHECK(p.kind == "cpu");
  // 56 cores × 2.0 GHz × 64 fp32 FLOP/cycle (16 lanes × 2 FMA × 2) = 7168 GFLOP/s
  CHECK(roof(p, DType::fp32).peak_flops_per_s == Approx(56 * 2.0e9 * 16 * 2 * 2));
  CHECK(roof(p, DType::fp32).peak_flops_per_s == Approx(7168e9));
  // fp64: 56 × 2.0 × 32 = 3584 GFLOP/s
  CHECK(roof(p, DType::fp64).peak_flops_per_s == Approx(56 * 2.0e9 * 32));
  // AMX: bf16 56 × 2.0 × 1024 = 114.688 TFLOP/s; int8 56 × 2.0 × 2048 = 229.376 TOP/s
  CHECK(roof(p, DType::bf16).peak_flops_per_s == Approx(56 * 2.0e9 * 1024));
  CHECK(roof(p, DType::bf16).peak_flops_per_s == Approx(114.688e12));
  CHECK(roof(p, DType::int8).peak_flops_per_s == Approx(56 * 2.0e9 * 2048));
  CHECK(roof(p, DType::int8).peak_flops_per_s == Approx(229.376e12));
  CHECK(p.roof_for(DType::fp16) == nullptr);
  // no AVX-512 / AMX clock sourced: derated compute = theoretical at the base clock
  CHECK(roof(p, DType::bf16).derated_flops_per_s == Approx(roof(p, DType::bf16).peak_flops_per_s));
  // 8 channels × 4800 MT/s × 8 B = 307.2 GB/s
  CHECK(mem(p).bandwidth_bytes_per_s == Approx(8 * 4800e6 * 64 / 8));
  CHECK(mem(p).bandwidth_bytes_per_s == Approx(307.2e9));
  CHECK(mem(p).derated_bandwidth_bytes_per_s == Approx(307.2e9 * 0.8));
  // ridges: 7168 / 307.2 = 23.33; bf16 114688 / 307.2 = 373.3
  CHECK(ridge(p, DType::fp32) == Approx(7168.0 / 307.2));
  CHECK(ridge(p, DType::bf16) == Approx(114688.0 / 307.2));
  CHECK(derated_ridge(p, DType::fp32) == Approx(7168.0 / (307.2 * 0.8)));
}

TEST_CASE("platforms: Apple M2 Max, 38-core GPU (Apple Newsroom)", "[platforms]") {
  Platform p = load("m2_max");
  CHECK(p.kind == "soc");
  // 13.6 TFLOP/s; cross-check 38 cores × 128 ALUs × 1.398 GHz × 2 = 13.60 TFLOP/s
  CHECK(roof(p, DType::fp32).peak_flops_per_s == Approx(13.6e12));
  CHECK(roof(p, DType::fp32).peak_flops_per_s == Approx(38 * 128 * 1.398e9 * 2).epsilon(1e-3));
  REQUIRE(p.compute.size() == 1);  // no other precision has a published rate
  CHECK(mem(p).bandwidth_bytes_per_s == Approx(400e9));
  CHECK(mem(p).derated_bandwidth_bytes_per_s == Approx(320e9));  // 400 × 0.8
  CHECK(mem(p).size_bytes == 96 * kGiB);
  // ridge: 13.6 / 0.4 = 34; derated 13.6 / 0.32 = 42.5
  CHECK(ridge(p, DType::fp32) == Approx(34.0));
  CHECK(derated_ridge(p, DType::fp32) == Approx(42.5));
}
