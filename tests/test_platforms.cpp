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

#include "engine/evaluate.hpp"  // PlatformCache, resolve_platform

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

TEST_CASE("platforms: NVIDIA Tesla V100 (seeds 000, 004; V100 datasheet)", "[platforms]") {
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

TEST_CASE("platforms: NVIDIA Quadro RTX 6000 (seed 000; Quadro RTX 6000 datasheet)", "[platforms]") {
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

TEST_CASE("platforms: Intel Core i5-6300U (seed 003; Intel ARK)", "[platforms]") {
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
  CHECK(p.title == "NVIDIA GeForce RTX 3080 (Ampere)");  // inherited
  REQUIRE(p.compute.size() == 3);                         // inherited roofs
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
