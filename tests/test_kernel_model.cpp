// The GPU kernel models (engine/hardware/kernel_model.hpp): tiles and waves, the GEMM time by hand, the
// engine's use of it, carrying a fit between platforms, and the fit from op data.
#include <catch2/catch.hpp>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <random>

#include "engine/hardware/kernel_model.hpp"
#include "engine/model/text_file.hpp"
#include "helpers.hpp"
#include "measure/calibrate_ops.hpp"

using namespace rsim;
namespace fs = std::filesystem;

namespace {
// A table of tests/data/aiconfigurator (a copy of ../shared/external/aiconfigurator), decompressed
std::string op_table(const std::string& gpu, const std::string& file) {
  std::string why;
  auto text = read_text_file(test::src("tests/data/aiconfigurator/" + gpu + "/" + file), size_t(1) << 30, "op table", why);
  if (!text) throw std::runtime_error(why);
  return *text;
}
// The catalog platform `name`, resolved as a scenario would
Platform catalog_platform(const std::string& name) {
  static Catalog cat(test::src("hardware"));
  PlatformCache cache(cat);
  Diags d;
  Platform p = resolve_platform(CNode::make_scalar(name), cache, d);
  if (!d.empty()) throw std::runtime_error(ConfigError(d.list()).what());
  return p;
}
}  // namespace

TEST_CASE("kernel model: tiles, waves and the last wave over the SMs", "[kernel_model]") {
  // 1024 × 1024 in 128 × 128 tiles: 8 · 8 = 64 tiles on 132 SMs, one wave 64/132 full
  Waves w = gemm_waves(GemmShape{1, 1024, 1024, 512}, TileShape{128, 128}, 1, 132);
  CHECK(w.tiles == 64);
  CHECK(w.waves == 1);
  CHECK(w.last_wave_occupancy == Approx(64.0 / 132));
  // exactly one wave: 1408 = 11 · 128 rows, 1536 = 12 · 128 columns → 132 tiles
  w = gemm_waves(GemmShape{1, 1408, 1536, 512}, TileShape{128, 128}, 1, 132);
  CHECK(w.tiles == 132);
  CHECK(w.waves == 1);
  CHECK(w.last_wave_occupancy == 1);
  // one column more spills a 13th column of tiles: 11 · 13 = 143 tiles, 2 waves, the second 11/132 full
  w = gemm_waves(GemmShape{1, 1408, 1537, 512}, TileShape{128, 128}, 1, 132);
  CHECK(w.tiles == 143);
  CHECK(w.waves == 2);
  CHECK(w.last_wave_occupancy == Approx(11.0 / 132));
  // a batch of 4 groups and split-K 2 multiply the tiles: 4 · 64 · 2 = 512 → ⌈512/132⌉ = 4 waves
  w = gemm_waves(GemmShape{4, 1024, 1024, 512}, TileShape{128, 128}, 2, 132);
  CHECK(w.tiles == 512);
  CHECK(w.waves == 4);
  CHECK(w.last_wave_occupancy == Approx((512.0 - 3 * 132) / 132));
}

namespace {
// efficiency 1, no fill, no per-SM bandwidth limit: the candidates' times follow from the flops alone
GemmParams plain(double floor_s, double wave_s) {
  GemmParams p;
  p.compute_efficiency = 1, p.pipeline_fill = 0, p.bandwidth_efficiency = 1, p.sm_bandwidth = 1000, p.floor_s = floor_s, p.wave_s = wave_s;
  return p;
}
}  // namespace

TEST_CASE("kernel model: a tiny GEMM is its floor plus one tile", "[kernel_model]") {
  // 64 × 64 × 64 on 132 SMs of 1 TFLOP/s each (132 TFLOP/s), 1 TB/s, floor 1 µs. The 64 × 64 tile
  // is one tile, one K step: 2 · 64 · 64 · 64 = 524,288 FLOPs / 1e12 = 0.524288 µs; a larger tile
  // computes more (64 × 128: 1.048576 µs); split-K would leave a part under one 64-element K step.
  // Memory: 24,576 bytes / 1 TB/s = 0.024576 µs, below the compute path.
  const GemmTime t = gemm_time(GemmShape{1, 64, 64, 64}, 24576, plain(1e-6, 0), 132e12, 1e12, 132);
  CHECK(t.tile.m == 64);
  CHECK(t.tile.n == 64);
  CHECK(t.split_k == 1);
  CHECK(t.compute_s == Approx(0.524288e-6));
  CHECK(t.memory_s == Approx(0.024576e-6));
  CHECK(t.time_s == Approx(1.524288e-6));
}

TEST_CASE("kernel model: when tiles tie, the fewest waves win", "[kernel_model]") {
  // 256 × 256 × 8192 on 4 SMs of 1 TFLOP/s: every tiling that fills its waves computes
  // 2 · 256 · 256 · 8192 / 4e12 = 268.435456 µs (64 × 64: 16 tiles in 4 waves of 128 K steps of
  // 0.524288 µs; 128 × 128: 4 tiles, 1 wave of 128 steps of 2.097152 µs). With 1 µs a wave, one
  // wave wins: 128 × 128, 268.435456 + 1 µs. (128 × 256: 2 tiles leave 2 SMs idle, 536.87 µs.)
  const GemmTime t = gemm_time(GemmShape{1, 256, 256, 8192}, 0, plain(0, 1e-6), 4e12, 1e18, 4);
  CHECK(t.tile.m == 128);
  CHECK(t.tile.n == 128);
  CHECK(t.split_k == 1);
  CHECK(t.waves.waves == 1);
  CHECK(t.time_s == Approx(269.435456e-6));
}

TEST_CASE("kernel model: few tiles pull a share of the bandwidth, split-K costs its partials", "[kernel_model]") {
  // m = 1, n = 128, k = 65536 (a GEMV) on 100 SMs, bandwidth 1 TB/s at efficiency 1, sm_bandwidth 2:
  // one CTA pulls 2 · 1e12 / 100 = 20 GB/s. Bytes: weights 128 · 65536 · 2 = 16,777,216 (+ the
  // small in/out: 65536 · 2 + 128 · 2 = 131,328) = 16,908,544.
  // split 16 with 64 × 64 tiles: 2 n-tiles · 16 = 32 CTAs → 32 · 20 GB/s = 640 GB/s; partials
  // 8 · 1 · 128 · 16 = 16,384 bytes: (16,908,544 + 16,384) / 640e9 = 26.4452 µs.
  // Without split-K (2 CTAs at 40 GB/s) it would take 422.7 µs; compute is negligible (peak 1e18).
  GemmParams p = plain(0, 0);
  p.sm_bandwidth = 2;
  const GemmTime t = gemm_time(GemmShape{1, 1, 128, 65536}, 16908544, p, 1e18, 1e12, 100);
  CHECK(t.split_k == 16);
  CHECK(t.tile.n == 64);
  CHECK(t.memory_s == Approx((16908544.0 + 16384) / 640e9));
}

namespace {
const char* kPlatform =
    "  - name: g\n    kind: gpu\n    sm_count: 132\n"
    "    compute: [{name: tc, dtypes: [bf16, fp16], peak: 132 TFLOP/s}]\n"
    "    memory: [{name: hbm, bandwidth: 1 TB/s}]\n"
    "    kernel_model:\n      source: test\n"
    "      gemm: {bf16: {compute_efficiency: 1, pipeline_fill: 0, bandwidth_efficiency: 1, sm_bandwidth: 1000, floor: 1 us}}\n"
    "      memory: {bandwidth_efficiency: 0.5, floor: 2 us}\n";
// A linear layer, a ReLU and a SwiGLU MLP on [64, 64] (the two tests below)
const char* kMlpNet =
    "networks:\n  - name: n\n    inputs: {x: [64, 64]}\n    layers:\n"
    "      - {name: fc, op: linear, inputs: [x], out_features: 64, bias: false}\n"
    "      - {name: act, op: relu, inputs: [fc]}\n"
    "      - {name: mlp, op: swiglu, inputs: [act], intermediate: 64}\n";
}  // namespace

TEST_CASE("kernel model: the engine prices a linear layer by it, time_s stays the roofline", "[kernel_model]") {
  // linear 64 → 64 without bias on [64, 64] bf16: the tiny GEMM above, 1.524288 µs derated; the
  // theoretical bound max(524,288 / 132e12, 24,576 / 1e12) = 24.576 ns
  const std::string y = std::string("name: t\nsettings: {execution: ideal, dtype: bf16}\nplatforms:\n") + kPlatform +
                        kMlpNet;
  RunResult r = test::run_text(y);
  auto rows = test::rows_of(r, 0, "g");
  REQUIRE(rows.size() == 3);
  CHECK(rows[0]->bytes == 24576);
  CHECK(rows[0]->theoretical.time_s == Approx(24.576e-9));
  CHECK(rows[0]->derated.time_s == Approx(1.524288e-6));
  CHECK(rows[0]->derated.bound == Bound::Compute);
  // relu of 64 · 64 bf16: 8,192 bytes in + 8,192 out = 16,384 / (1 TB/s · 0.5) = 32.768 ns + 2 µs floor
  CHECK(rows[1]->derated.time_s == Approx(2.032768e-6));
  CHECK(rows[1]->derated.bound == Bound::Memory);
  // swiglu D = F = 64 on 64 tokens: gate, up and down are each the tiny GEMM (24,576 bytes, 1.524288 µs);
  // the layer moves x 8,192 + weights 3 · 8,192 + out 8,192 + scratch 3 passes over 2 · 64 · 64 bf16
  // = 49,152: 90,112 bytes; the GEMMs' 3 · 24,576 = 73,728 leave 16,384 for the activation's pass:
  // 16,384 / 0.5 TB/s = 32.768 ns + 2 µs floor
  CHECK(rows[2]->bytes == 90112);
  CHECK(rows[2]->derated.time_s == Approx(3 * 1.524288e-6 + 2.032768e-6));
  const SummaryRow& s = test::summary_of(r, 0, "g");
  CHECK(s.derated_time_s == Approx(1.524288e-6 + 2.032768e-6 + 3 * 1.524288e-6 + 2.032768e-6));
  // theoretical: 24.576 ns + 16.384 ns + swiglu's 90,112 bytes / 1 TB/s (its 1.6 MFLOP take 12 ns)
  CHECK(s.time_s == Approx(24.576e-9 + 16384.0 / 1e12 + 90112.0 / 1e12));
  // fp16 takes bf16's parameters (one roof serves both)
  RunResult h = test::run_text(std::string(y).replace(y.find("dtype: bf16"), 11, "dtype: fp16"));
  CHECK(test::rows_of(h, 0, "g")[0]->derated.time_s == Approx(1.524288e-6));
}

TEST_CASE("kernel model: fp8 weights with a quant_group take the block-scaled GEMM's parameters", "[kernel_model]") {
  // linear 64 → 64 on [64, 64], all fp8, on 132 SMs of 1 TFLOP/s each: one 64 × 64 tile, one K step,
  // 2 · 64 · 64 · 64 = 524,288 FLOPs / 1e12 = 0.524288 µs; its bytes (4,096 in + 4,096 weights (+ 64 of
  // fp16 scales at quant_group 128) + 4,096 out ≈ 12.3 kB / 1 TB/s ≈ 12 ns) are below it. Platform g
  // states fp8 (floor 1 µs) and fp8_block (floor 4 µs); platform h fp8 alone.
  const std::string params = "compute_efficiency: 1, pipeline_fill: 0, bandwidth_efficiency: 1, sm_bandwidth: 1000";
  auto platform = [&](const std::string& name, bool block) {
    return "  - name: " + name + "\n    kind: gpu\n    sm_count: 132\n    compute: [{name: tc, dtypes: [fp8], peak: 132 TFLOP/s}]\n"
           "    memory: [{name: hbm, bandwidth: 1 TB/s}]\n    kernel_model:\n      gemm: {fp8: {" + params + ", floor: 1 us}" +
           (block ? ", fp8_block: {" + params + ", floor: 4 us}" : std::string()) + "}\n";
  };
  const std::string net = "networks:\n  - name: n\n    inputs: {x: [64, 64]}\n    layers: [{name: fc, op: linear, inputs: [x], out_features: 64, bias: false}]\n";
  auto fc = [&](const std::string& quant_group, const std::string& on) {
    RunResult r = test::run_text("name: t\nsettings: {execution: ideal, dtype: fp8, quant_group: " + quant_group + "}\nplatforms:\n" + platform("g", true) +
                                 platform("h", false) + net);
    return test::rows_of(r, 0, on).at(0)->derated.time_s;
  };
  CHECK(fc("0", "g") == Approx(0.524288e-6 + 1e-6));    // per-tensor scales: fp8's
  CHECK(fc("128", "g") == Approx(0.524288e-6 + 4e-6));  // block scales: fp8_block's
  CHECK(fc("128", "h") == Approx(0.524288e-6 + 1e-6));  // none stated: fp8's
  // hw show names them (the entry as a file of its own: unindented)
  auto file = [&](std::string y) {
    y = y.substr(4);
    for (size_t at = y.find("\n    "); at != std::string::npos; at = y.find("\n    ", at + 1)) y.erase(at + 1, 4);
    return y;
  };
  Diags d;
  Platform p = build_platform(parse_yaml(file(platform("g", true)), "g.yaml"), nullptr, d);
  REQUIRE(d.empty());
  CHECK(describe_gpu_figures(p).find("gemm fp8 with block scales: {compute_efficiency: 1,") != std::string::npos);
  // a block variant of a wide dtype is refused
  Diags e;
  std::string bad = file(platform("g", true));
  bad.replace(bad.find("fp8_block"), 9, "bf16_block");
  build_platform(parse_yaml(bad, "g.yaml"), nullptr, e);
  CHECK_FALSE(e.empty());
}

TEST_CASE("kernel model: the H200's block-scaled fp8 GEMM fit carried to the H100 (shared AIConfigurator data)", "[kernel_model][external]") {
  // AIConfigurator's fp8_block rows (TensorRT-LLM's fp8 GEMM with 128 × 128 weight blocks and 1 × 128
  // activation groups, 29,268 shapes on each GPU): the catalog's h200_op parameters (fitted by rsim
  // calibrate --ops on the H200 alone) applied to the H100's figures. Measured when they were fitted:
  // 74.9 % within 1.25×, 91.5 % within 1.5× (the roofline bound: 2.6 % and 6.4 %). Short of the
  // 80 % issue 42 asks of bf16 and fp8: held here at 70 % and 88 % so that a regression shows.
  std::vector<std::string> skipped;
  const std::vector<measure::GemmSample> rows = measure::read_aiconfigurator_gemm(op_table("h100_sxm", "gemm_perf.csv.gz"), "h100", skipped);
  const Platform h200_op = catalog_platform("h200_op"), h100 = catalog_platform("h100_sxm");
  REQUIRE(h200_op.kernel_model.gemm_block.size() == 1);
  const GemmParams& g = h200_op.kernel_model.gemm_block[0].second;
  std::vector<double> model, bound;
  for (const auto& s : rows)
    if (s.block) model.push_back(s.measured_s / measure::predict_gemm(s, g, h100)), bound.push_back(s.measured_s / measure::gemm_bound(s, h100));
  const measure::ErrorStats e = measure::error_stats(model), b = measure::error_stats(bound);
  INFO("H100 fp8_block: median " << e.median << ", within 1.25x " << e.within_1_25 << ", within 1.5x " << e.within_1_5);
  CHECK(e.n == 29268);
  CHECK(e.within_1_25 >= 0.70);
  CHECK(e.within_1_5 >= 0.88);
  CHECK(b.within_1_25 < 0.05);
}

TEST_CASE("kernel model: under execution graph its times give up the graph gap they hold", "[kernel_model]") {
  // The model's figures were timed kernel after kernel in a CUDA graph, so a modelled kernel's time
  // holds the gap before it: graph mode takes the runtime's graph_gap (0.5 µs here) out of it, never
  // below the roofline bound, and its clock adds it back. Network of the test above, 3 kernels:
  //   fc    1.524288 − 0.5 = 1.024288 µs; relu 2.032768 − 0.5 = 1.532768 µs;
  //   mlp   3 · 1.524288 + 2.032768 − 0.5 = 6.105632 µs
  //   total: launch 3 µs (the first) + 2 gaps of 0.5 µs + the three = 3 + 1 + 8.662688 = 12.662688 µs
  // (the model's own sum, 3 µs launch + 1.524288 + 2.032768 + 6.605632, less the first kernel's gap)
  const std::string y = std::string("name: t\nsettings: {execution: graph, dtype: bf16}\nplatforms:\n") + kPlatform +
                        "    runtime: {launch_overhead: 3 us, graph_gap: 0.5 us}\n" + kMlpNet;
  RunResult r = test::run_text(y);
  auto rows = test::rows_of(r, 0, "g");
  REQUIRE(rows.size() == 3);
  CHECK(rows[0]->derated.time_s == Approx(1.024288e-6));
  CHECK(rows[1]->derated.time_s == Approx(1.532768e-6));
  CHECK(rows[2]->derated.time_s == Approx(6.105632e-6));
  const SummaryRow& s = test::summary_of(r, 0, "g");
  CHECK(s.derated_time_s == Approx(12.662688e-6));
  CHECK(s.dparts.launch == Approx(4e-6));  // the launch and the two gaps: the overhead part
  // a gap larger than the kernel: the time stops at the roofline bound (fc: 24.576 ns)
  RunResult big = test::run_text(std::string(y).replace(y.find("graph_gap: 0.5 us"), 17, "graph_gap: 1.6 us"));
  CHECK(test::rows_of(big, 0, "g")[0]->derated.time_s == Approx(24.576e-9));
  // fused mode keeps the model's times whole (its launch overhead is the runtime's own figure)
  RunResult fused = test::run_text(std::string(y).replace(y.find("execution: graph"), 16, "execution: fused"));
  CHECK(test::rows_of(fused, 0, "g")[0]->derated.time_s == Approx(1.524288e-6));
}

TEST_CASE("kernel model: never below the roofline bound, over random shapes", "[kernel_model]") {
  std::mt19937 rng(7);
  std::uniform_int_distribution<int> dim(1, 9000);
  GemmParams p;
  p.compute_efficiency = 0.9, p.pipeline_fill = 1, p.bandwidth_efficiency = 0.95, p.sm_bandwidth = 1.5, p.floor_s = 0, p.wave_s = 0;
  for (int i = 0; i < 300; ++i) {
    const double m = dim(rng), n = dim(rng), k = dim(rng);
    const double bytes = 2 * (m * k + k * n + m * n);
    const double bound = std::max(2 * m * n * k / 989.5e12, bytes / 3.35e12);
    const GemmTime t = gemm_time(GemmShape{1, m, n, k}, bytes, p, 989.5e12, 3.35e12, 132);
    INFO(m << " x " << n << " x " << k);
    CHECK(t.time_s >= bound * (1 - 1e-12));
  }
}

TEST_CASE("kernel model: carried from another platform, and its errors", "[kernel_model]") {
  const fs::path dir = fs::temp_directory_path() / "rsim_km_catalog";
  fs::create_directories(dir);
  auto put = [&](const std::string& name, const std::string& text) { std::ofstream(dir / (name + ".yaml")) << text; };
  const std::string body = "compute: [{name: tc, dtypes: [bf16], peak: 132 TFLOP/s}]\nmemory: [{name: hbm, bandwidth: 1 TB/s}]\n";
  put("fitted", "name: fitted\nkind: gpu\nsm_count: 132\n" + body +
                    "kernel_model:\n  source: a fit\n  gemm: {bf16: {compute_efficiency: 0.5, pipeline_fill: 2, bandwidth_efficiency: 0.8, sm_bandwidth: 2, floor: 3 us}}\n");
  put("plain", "name: plain\nkind: gpu\nsm_count: 66\n" + body);
  put("cpu", "name: cpu\nkind: cpu\n" + body);
  put("loop_a", "name: loop_a\nkind: gpu\nsm_count: 1\n" + body + "kernel_model: {from: loop_b}\n");
  put("loop_b", "name: loop_b\nkind: gpu\nsm_count: 1\n" + body + "kernel_model: {from: loop_a}\n");
  Catalog cat(dir.string());
  PlatformCache cache(cat);
  auto resolve = [&](const std::string& yaml, Diags& d) { return resolve_platform(parse_yaml(yaml, "s.yaml"), cache, d); };
  {
    Diags d;
    Platform p = resolve("{name: w, base: plain, kernel_model: {from: fitted}}", d);
    REQUIRE(d.empty());
    CHECK(p.sm_count == 66);  // the target's own figure
    REQUIRE(p.kernel_model.gemm.size() == 1);
    CHECK(p.kernel_model.gemm[0].second.compute_efficiency == 0.5);
    CHECK(p.kernel_model.gemm[0].second.floor_s == Approx(3e-6));
    CHECK(p.kernel_model.source == "carried from fitted (a fit)");
    CHECK(describe_platform(p).find("carried from fitted") != std::string::npos);
  }
  auto error = [&](const std::string& yaml) {
    Diags d;
    resolve(yaml, d);
    return d.empty() ? std::string() : ConfigError(d.list()).what();
  };
  CHECK(error("{name: w, base: plain, kernel_model: {from: cpu}}").find("names a cpu") != std::string::npos);
  CHECK(error("{name: w, base: plain, kernel_model: {from: fitted, gemm: {bf16: {compute_efficiency: 1, pipeline_fill: 0, bandwidth_efficiency: 1, "
              "sm_bandwidth: 1, floor: 1 us}}}}")
            .find("takes its parameters from 'fitted' or states them, not both") != std::string::npos);
  // a what-if's kernel_model replaces its base's whole: from a platform without one is an error
  CHECK(error("{name: w, base: fitted, kernel_model: {from: plain}}").find("has no kernel model to carry") != std::string::npos);
  {  // a what-if of a fitted platform keeps its parameters
    Diags d;
    Platform p = resolve("{name: w, base: fitted, scale: {compute: 2}}", d);
    REQUIRE(d.empty());
    REQUIRE(p.kernel_model.gemm.size() == 1);
    CHECK(p.kernel_model.gemm[0].second.compute_efficiency == 0.5);
  }
  CHECK(error("{name: w, base: cpu, kernel_model: {from: plain}}").find("kernel_model prices GPU kernels") != std::string::npos);
  CHECK(error("{name: w, base: plain, kernel_model: {from: plain}}").find("has no kernel model to carry") != std::string::npos);
  {
    Diags d;
    resolve_platform(CNode::make_scalar("loop_a"), cache, d);
    REQUIRE(!d.empty());
    CHECK(std::string(ConfigError(d.list()).what()).find("leads back to 'loop_a' (loop_a → loop_b → loop_a)") != std::string::npos);
  }
  CHECK(error("{name: w, base: plain, sm_count: 0}").find("sm_count must be 1 to 100000") != std::string::npos);
  CHECK(error("{name: w, base: plain, kernel_model: {from: nowhere}}").find("unknown platform 'nowhere'") != std::string::npos);
  fs::remove_all(dir);
}

TEST_CASE("kernel model: AIConfigurator's GEMM table, read as it is", "[kernel_model]") {
  std::vector<std::string> skipped;
  auto rows = measure::read_aiconfigurator_gemm(
      "gemm_dtype,m,n,k,latency,kernel_source\nbfloat16,1,4096,4096,0.0125,x\nnvfp4,8,128,128,0.01,x\nfp8,2,64,64,0.004,x\nnvfp4,8,256,128,0.01,x\n"
      "fp8_block,8,256,128,0.02,x\n",
      "g.csv", skipped);
  REQUIRE(rows.size() == 3);
  CHECK(rows[0].compute == DType::bf16);
  CHECK(rows[0].measured_s == Approx(12.5e-6));  // milliseconds per call
  CHECK(rows[1].compute == DType::fp8);
  CHECK(rows[1].activations == DType::bf16);  // quantized on the fly
  CHECK_FALSE(rows[1].block);
  // fp8_block: fp8 weights and math with block scales, bf16 activations; 0.02 ms
  CHECK(rows[2].compute == DType::fp8);
  CHECK(rows[2].weights == DType::fp8);
  CHECK(rows[2].activations == DType::bf16);
  CHECK(rows[2].block);
  CHECK(rows[2].measured_s == Approx(20e-6));
  REQUIRE(skipped.size() == 1);
  CHECK(skipped[0] == "nvfp4: 2 rows");
  // bytes as rsim counts a linear layer: fp8 row 2·64 bf16 in (256) + 64·64 fp8 weights (4096) + 2·64 bf16 out (256)
  CHECK(measure::gemm_sample_bytes(rows[1]) == 4608);
  auto why = [](const std::string& text) {
    std::vector<std::string> s;
    try {
      measure::read_aiconfigurator_gemm(text, "g.csv", s);
    } catch (const std::runtime_error& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  CHECK(why("gemm_dtype,m,n,latency\n") == "g.csv:1: no column 'k' (an AIConfigurator gemm_perf.csv has gemm_dtype, m, n, k, latency)");
  CHECK(why("gemm_dtype,m,n,k,latency\nbfloat16,1,2,3,-1\n") == "g.csv:2: column 'latency' is negative (-1)");
  CHECK(why("gemm_dtype,m,n,k,latency\nbfloat16,1,2,3,0.1\nbfloat16,1,x,3,0.1\n") == "g.csv:3: column 'n' is 'x', not a number");
}

TEST_CASE("kernel model: the fit recovers the times of known parameters", "[kernel_model]") {
  // synthetic timings made with known parameters on a 132-SM platform; the fit must reproduce them
  Diags d;
  Platform p = build_platform(parse_yaml("name: g\nkind: gpu\nsm_count: 132\ncompute: [{name: tc, dtypes: [bf16], peak: 989.5 TFLOP/s}]\n"
                                         "memory: [{name: hbm, bandwidth: 4.8 TB/s}]\n",
                                         "g.yaml"),
                              nullptr, d);
  REQUIRE(d.empty());
  GemmParams truth;
  truth.compute_efficiency = 0.75, truth.pipeline_fill = 3, truth.bandwidth_efficiency = 0.8, truth.sm_bandwidth = 1.5;
  truth.floor_s = 4e-6, truth.wave_s = 0.2e-6;
  std::vector<measure::GemmSample> rows;
  for (double m : {1, 16, 128, 1024, 4096, 16384})
    for (double n : {256, 1024, 4096, 16384})
      for (double k : {256, 1024, 4096, 16384}) {
        measure::GemmSample s;
        s.m = m, s.n = n, s.k = k;
        s.measured_s = measure::predict_gemm(s, truth, p);
        rows.push_back(s);
      }
  const measure::GemmFit f = measure::fit_gemm(rows, DType::bf16, p, 0);
  CHECK(f.rows == rows.size());
  CHECK(f.fitted.within_1_25 == 1);
  CHECK(f.fitted.median == Approx(1).epsilon(0.02));
  CHECK(f.params.compute_efficiency == Approx(0.75).epsilon(0.1));
  CHECK(f.params.floor_s == Approx(4e-6).epsilon(0.25));
}

TEST_CASE("kernel model: an H200 fit carried to the H100 by its datasheet (shared AIConfigurator data)", "[kernel_model][external]") {
  // ../shared/external/aiconfigurator: TensorRT-LLM Linear timings on an H200 and an H100 SXM (NVIDIA's
  // AIConfigurator database). Fitted on the H200's bf16 rows alone, applied to the catalog H100's
  // figures (132 SMs, 989.5 TFLOP/s bf16, 3.35 TB/s), the H100's rows: issue 42 asks ≥ 80 % within
  // 1.25× and ≥ 95 % within 1.5× (the plain roofline bound: 10 % within 1.25×).
  auto load = [&](const std::string& gpu) {
    std::vector<std::string> skipped;
    return measure::read_aiconfigurator_gemm(op_table(gpu, "gemm_perf.csv.gz"), gpu, skipped);
  };
  const Platform h200 = catalog_platform("h200"), h100 = catalog_platform("h100_sxm");
  std::vector<measure::GemmSample> fit_rows;
  for (const auto& s : load("h200_sxm"))
    if (s.compute == DType::bf16) fit_rows.push_back(s);
  const measure::GemmFit f = measure::fit_gemm(fit_rows, DType::bf16, h200, 0);
  std::vector<double> r;
  for (const auto& s : load("h100_sxm"))
    if (s.compute == DType::bf16) r.push_back(s.measured_s / measure::predict_gemm(s, f.params, h100));
  const measure::ErrorStats e = measure::error_stats(r);
  INFO("H100 bf16 rows " << e.n << ": median " << e.median << ", within 1.25x " << e.within_1_25 << ", within 1.5x " << e.within_1_5);
  CHECK(e.n == 35700);
  CHECK(e.within_1_25 >= 0.80);
  CHECK(e.within_1_5 >= 0.95);
}

TEST_CASE("kernel model: a collective by hand, and the formulas where there is none", "[kernel_model]") {
  // all-reduce of 1 MB among 8 GPUs on 450 GB/s: bus bytes 2 · 7/8 · 1e6 = 1.75e6; at efficiency 0.5
  // 1.75e6 / 225e9 = 7.7778 µs (the bulk protocol at 1.0 would take 3.8889 + 20 µs latency: slower);
  // + floor 5 µs + 7 steps of 1 µs = 19.7778 µs
  CollectiveParams c;
  c.floor_s = 5e-6, c.step_s = 1e-6, c.bandwidth_efficiency = 0.5, c.bulk_efficiency = 1, c.bulk_latency_s = 20e-6;
  CHECK(collective_time(c, Collective::AllReduce, 1e6, 8, 450e9) == Approx(19.7778e-6).epsilon(1e-4));
  // 100 MB: small protocol 1.75e8 / 225e9 = 777.78 µs; bulk 1.75e8 / 450e9 + 20 µs = 408.89 µs: bulk, + 12 µs
  CHECK(collective_time(c, Collective::AllReduce, 1e8, 8, 450e9) == Approx(420.889e-6).epsilon(1e-4));
  // an all-gather of the whole 1 MB tensor: bus bytes 7/8 · 1e6 = 0.875e6 → 3.8889 µs + 12 µs
  CHECK(collective_time(c, Collective::AllGather, 1e6, 8, 450e9) == Approx(15.8889e-6).epsilon(1e-4));
  CHECK(collective_time(c, Collective::AllReduce, 1e6, 1, 450e9) == 0);
  // a model with all_reduce's parameters alone prices an all-to-all by them; an empty one keeps the
  // formulas: ring 2 · 7/8 · 1e6 / 450e9 + 2 · 7 · 1 µs = 17.8889 µs, tree 2 · 1e6 / 450e9 + 2 · ⌈log2 8⌉ · 1 µs
  // = 4.4444 + 6 = 10.4444 µs: the tree
  KernelModel km;
  CHECK(all_reduce_on(km, 1e6, 8, 450e9, 1e-6).time_s == Approx(10.4444e-6).epsilon(1e-4));
  CHECK(all_reduce_on(km, 1e6, 8, 450e9, 1e-6).tree);
  km.collectives.emplace_back(Collective::AllReduce, c);
  CHECK(all_to_all_on(km, 1e6, 8, 450e9, 1e-6) == Approx(15.8889e-6).epsilon(1e-4));
}

TEST_CASE("kernel model: a custom all-reduce within the first interconnect level, the faster of it and NCCL's", "[kernel_model]") {
  // NCCL's as in the test above: 1 MB among 8 GPUs on 450 GB/s = 19.7778 µs. The custom one: floor
  // 3 µs, no steps, efficiency 0.3: 1.75e6 / 135e9 = 12.963 µs + 3 = 15.963 µs: faster, taken in the
  // domain; outside it (or with no custom parameters) NCCL's 19.7778 µs
  CollectiveParams nccl, custom;
  nccl.floor_s = 5e-6, nccl.step_s = 1e-6, nccl.bandwidth_efficiency = 0.5, nccl.bulk_efficiency = 1, nccl.bulk_latency_s = 20e-6;
  custom.floor_s = 3e-6, custom.bandwidth_efficiency = 0.3;
  KernelModel km;
  km.collectives.emplace_back(Collective::AllReduce, nccl);
  CHECK(all_reduce_on(km, 1e6, 8, 450e9, 1e-6, true).time_s == Approx(19.7778e-6).epsilon(1e-4));
  km.collectives.emplace_back(Collective::CustomAllReduce, custom);
  CHECK(collective_time(custom, Collective::CustomAllReduce, 1e6, 8, 450e9) == Approx(15.963e-6).epsilon(1e-4));
  CHECK(all_reduce_on(km, 1e6, 8, 450e9, 1e-6, true).time_s == Approx(15.963e-6).epsilon(1e-4));
  CHECK(all_reduce_on(km, 1e6, 8, 450e9, 1e-6, false).time_s == Approx(19.7778e-6).epsilon(1e-4));
  // 100 MB: the custom one 1.75e8 / 135e9 + 3 µs = 1299.3 µs; NCCL's bulk protocol 420.889 µs is faster
  CHECK(all_reduce_on(km, 1e8, 8, 450e9, 1e-6, true).time_s == Approx(420.889e-6).epsilon(1e-4));
  // it prices nothing else: an all-gather takes all_reduce's parameters, never the custom one's
  KernelModel only_custom;
  only_custom.collectives.emplace_back(Collective::CustomAllReduce, custom);
  CHECK(only_custom.collective_for(Collective::AllGather) == nullptr);
}

TEST_CASE("kernel model: the H200's custom all-reduce fit carried to the H100 (shared AIConfigurator data)", "[kernel_model][external]") {
  // TensorRT-LLM's own all-reduce through AIConfigurator, bf16 on 2, 4 and 8 GPUs of an HGX H200 and an
  // HGX H100: fitted on the H200, on the H100's NVLink 4 (450 GB/s each way, the catalog's), ≥ 80 % of
  // sizes within 1.25× (issue 42's bound for the NCCL all-reduce); on its own rows the ring/tree formula
  // on the catalog's assumed 1 µs a step is far off at the small sizes this kernel serves
  auto load = [&](const std::string& gpu) {
    std::vector<std::string> skipped;
    return measure::read_custom_allreduce_perf(op_table(gpu, "custom_allreduce_perf.csv.gz"), gpu, skipped);
  };
  const Platform h200 = catalog_platform("h200"), h100 = catalog_platform("h100_sxm");
  const std::vector<measure::CollectiveSample> h200_rows = load("h200_sxm");
  REQUIRE(h200_rows.size() == 69);  // 23 sizes × 3 GPU counts
  // a row by hand: 8 GPUs, 128 elements of bf16 = 256 bytes, 0.0030470401048660277 ms
  CHECK(h200_rows[46].gpus == 8);
  CHECK(h200_rows[46].bytes == 256);
  CHECK(h200_rows[46].measured_s == Approx(3.0470401e-6).epsilon(1e-6));
  const measure::CollectiveFit f = measure::fit_collective(h200_rows, Collective::CustomAllReduce, h200);
  CHECK(f.rows == 69);
  std::vector<double> r;
  for (const auto& s : load("h100_sxm")) r.push_back(s.measured_s / measure::predict_collective(s, f.params, h100));
  const measure::ErrorStats e = measure::error_stats(r);
  INFO("H100 custom all-reduce: median " << e.median << ", within 1.25x " << e.within_1_25);
  CHECK(e.n == 69);
  CHECK(e.within_1_25 >= 0.80);
}

TEST_CASE("kernel model: time_s unchanged on a platform with a kernel model", "[kernel_model]") {
  // Llama-3-8B decode at tensor parallelism 2 on the catalog H200 and on h200_op (the same file plus a
  // fitted kernel model): the roofline bound and its communication are the same; the derated time differs
  const std::string y =
      "name: t\nsettings: {execution: ideal, parallel: {tensor: 2}}\nplatforms: [h200, h200_op]\n"
      "networks:\n  - {model: llama3_8b, args: {phase: decode, batch: 8, context: 1024}}\n";
  RunResult r = test::run(parse_scenario(y, test::src("scenarios/t.yaml")));
  const SummaryRow& a = test::summary_of(r, 0, "h200");
  const SummaryRow& b = test::summary_of(r, 0, "h200_op");
  CHECK(a.time_s == b.time_s);
  CHECK(a.parts.comm == b.parts.comm);
  CHECK(a.derated_time_s != b.derated_time_s);
  CHECK(b.dparts.assumed < a.dparts.assumed);  // its GEMMs rest on the fit, not on the assumed bandwidth fraction
}

TEST_CASE("kernel model: the H200's NCCL fit carried to the H100 (shared AIConfigurator data)", "[kernel_model][external]") {
  // nccl-tests through AIConfigurator on 2, 4 and 8 GPUs of an HGX H200 and an HGX H100: fitted on the
  // H200's all-reduces, on the H100's NVLink 4 (450 GB/s each way, the catalog's): issue 42 asks ≥ 80 %
  // of sizes within 1.25× (the ring/tree formula on the catalog's assumed 1 µs a step: 3 %)
  auto load = [&](const std::string& gpu) {
    std::vector<std::string> skipped;
    return measure::read_nccl_perf(op_table(gpu, "nccl_perf.csv.gz"), gpu, skipped);
  };
  const Platform h200 = catalog_platform("h200"), h100 = catalog_platform("h100_sxm");
  const measure::CollectiveFit f = measure::fit_collective(load("h200_sxm"), Collective::AllReduce, h200);
  CHECK(f.rows == 126);  // 21 sizes × 3 GPU counts × 2 dtypes
  std::vector<double> r;
  for (const auto& s : load("h100_sxm"))
    if (s.kind == Collective::AllReduce) r.push_back(s.measured_s / measure::predict_collective(s, f.params, h100));
  const measure::ErrorStats e = measure::error_stats(r);
  INFO("H100 all-reduce: median " << e.median << ", within 1.25x " << e.within_1_25);
  CHECK(e.n == 126);
  CHECK(e.within_1_25 >= 0.80);
}

TEST_CASE("kernel model: context attention's query tiles and key blocks by hand", "[kernel_model]") {
  // causal 256 queries over 256 keys, head dim 128: tiles of 128 queries, blocks of 128 keys.
  // Tile 0 (queries 0–127) sees block 0, its diagonal (masked); tile 1 (128–255) sees block 0
  // whole (keys 0–127 ≤ its first query 128) and block 1 masked: 2 tiles, 3 blocks, 2 masked
  AttentionShape a{1, 4, 128, 256, 256, 0, true};
  AttentionTiles t = attention_tiles(a);
  CHECK(t.tile_m == 128);
  CHECK(t.block_n == 128);
  CHECK(t.tiles == 2);
  CHECK(t.blocks == 3);
  CHECK(t.masked == 2);
  CHECK(t.max_blocks == 2);
  CHECK(t.max_masked == 1);
  // a window of 128 over 512 (head dim 64: still 128-key blocks). Tile 0 sees block 0 (masked);
  // tile k ≥ 1 (queries 128k … 128k + 127) sees keys from 128k − 127: blocks k − 1 (its first
  // keys fall out of the last query's window: masked) and k (the diagonal): 4 tiles, 7 blocks, all masked
  t = attention_tiles(AttentionShape{1, 1, 64, 512, 512, 128, true});
  CHECK(t.tiles == 4);
  CHECK(t.blocks == 7);
  CHECK(t.masked == 7);
  // 128 new queries after a cached prefix of 256 (positions 256–383): keys 0–383, blocks 0, 1, 2;
  // blocks 0 and 1 (keys ≤ 255 < 256) whole, block 2 the diagonal
  t = attention_tiles(AttentionShape{1, 1, 128, 128, 384, 0, true});
  CHECK(t.tiles == 1);
  CHECK(t.blocks == 3);
  CHECK(t.masked == 1);
  // head dim 256: blocks of 64 keys; not causal: every tile sees all ⌈300/64⌉ = 5 blocks, none masked;
  // 40 queries: one tile of 64
  t = attention_tiles(AttentionShape{2, 1, 256, 40, 300, 0, false});
  CHECK(t.block_n == 64);
  CHECK(t.tile_m == 64);
  CHECK(t.tiles == 1);
  CHECK(t.blocks == 5);
  CHECK(t.masked == 0);
}

namespace {
// 4 SMs of 1 TFLOP/s each, 1 TB/s; the attention parameters below
const char* kAttnPlatform =
    "  - name: a4\n    kind: gpu\n    sm_count: 4\n"
    "    compute: [{name: tc, dtypes: [bf16], peak: 4 TFLOP/s}]\n"
    "    memory: [{name: hbm, bandwidth: 1 TB/s}]\n"
    "    kernel_model:\n      source: test\n"
    "      attention: {bf16: {compute_efficiency: 1, bandwidth_efficiency: 1, score: 0.001 ns, mask: 0.002 ns, block: 1 ns, tile: 100 ns, floor: 5 us}}\n";
}  // namespace

TEST_CASE("kernel model: a context attention's time by hand, through the engine", "[kernel_model]") {
  // 4 heads of 128, causal 256 over 256 (the tiles above: 2 tiles, 3 blocks, 2 masked; the longest
  // tile 2 blocks, 1 masked). A block: 4 · 128 · 128 · 128 / 1 TFLOP/s = 8.388608 µs, + 16,384 scores
  // · 0.001 ns = 16.384 ns, + 1 ns: 8.405992 µs. Per head: 3 blocks 25.217976 µs + 2 masked · 16,384
  // · 0.002 ns = 65.536 ns + 2 tiles · 100 ns = 25.483512 µs; 4 heads on 4 SMs: 25.483512 µs; the
  // longest tile 2 · 8.405992 + 0.032768 + 0.1 = 16.944752 µs. Bytes q, k, v, out: 4 · 256 · 512 · 2
  // = 1,048,576: 1.048576 µs. Time = 5 µs + 25.483512 µs = 30.483512 µs
  const double block = 8.388608e-6 + 16.384e-9 + 1e-9;
  const double per_head = 3 * block + 2 * 16384 * 0.002e-9 + 2 * 100e-9;
  CHECK(per_head == Approx(25.483512e-6));
  AttentionParams p{1, 1, 0.001e-9, 0.002e-9, 1e-9, 100e-9, 5e-6};
  CHECK(attention_time(AttentionShape{1, 4, 128, 256, 256, 0, true}, 1048576, p, 4e12, 1e12, 4) == Approx(30.483512e-6));
  const std::string y = std::string("name: t\nsettings: {execution: ideal, dtype: bf16}\nplatforms:\n") + kAttnPlatform +
                        "networks:\n  - name: n\n    inputs: {q: [1, 256, 512], k: [1, 256, 512], v: [1, 256, 512], q1: [1, 1, 512]}\n    layers:\n"
                        "      - {name: ctx, op: attention, inputs: [q, k, v], heads: 4, causal: true}\n"
                        "      - {name: dec, op: attention, inputs: [q1, k, v], heads: 4, causal: true}\n";
  RunResult r = test::run_text(y);
  auto rows = test::rows_of(r, 0, "a4");
  REQUIRE(rows.size() == 2);
  CHECK(rows[0]->bytes == 1048576);
  CHECK(rows[0]->derated.time_s == Approx(30.483512e-6));
  CHECK(rows[0]->derated.bound == Bound::Compute);
  // the theoretical roofline unchanged: scores P = 4 · (256 · 256 − 256 · 255 / 2) = 131,584, FLOPs
  // 4 · P · 128 + 6 · P = 68,160,512 / 4 TFLOP/s = 17.040128 µs
  CHECK(rows[0]->theoretical.time_s == Approx(17.040128e-6));
  // a decode step (one query over 256 keys) is not this model's: the derated roofline (no derating stated)
  CHECK(rows[1]->derated.time_s == Approx(rows[1]->theoretical.time_s));
}

TEST_CASE("kernel model: the H200's context-attention fit carried to the H100 (shared AIConfigurator data)", "[kernel_model][external]") {
  // ../shared/external/aiconfigurator: TensorRT-LLM's context attention timed on an H200 and an H100 SXM
  // (75,837 rows each: batch 1–256, 1–16,384 tokens, 1–96 heads, head dims 64–256, full and sliding
  // windows, bf16 and fp8). Fitted on the H200's rows alone, carried to the catalog H100's figures:
  // issue 42 asks ≥ 80 % within 1.25× and ≥ 95 % within 1.5× (the plain roofline bound: see INFO)
  auto load = [&](const std::string& gpu) {
    std::vector<std::string> skipped;
    return measure::read_context_attention(op_table(gpu, "context_attention_perf.csv.gz"), gpu, skipped);
  };
  const Platform h200 = catalog_platform("h200"), h100 = catalog_platform("h100_sxm");
  const auto fit_rows = load("h200_sxm"), check_rows = load("h100_sxm");
  CHECK(fit_rows.size() == 75837);
  for (DType t : {DType::bf16, DType::fp8}) {
    const measure::AttentionFit f = measure::fit_attention(fit_rows, t, h200, 0);
    std::vector<double> r, bound;
    for (const auto& s : check_rows)
      if (s.compute == t) r.push_back(s.measured_s / measure::predict_attention(s, f.params, h100)), bound.push_back(s.measured_s / measure::attention_bound(s, h100));
    const measure::ErrorStats e = measure::error_stats(r), b = measure::error_stats(bound);
    INFO(dtype_name(t) << " H100 rows " << e.n << ": median " << e.median << ", within 1.25x " << e.within_1_25 << ", within 1.5x " << e.within_1_5
                       << " (roofline bound within 1.25x " << b.within_1_25 << ")");
    CHECK(e.within_1_25 >= 0.80);
    CHECK(e.within_1_5 >= 0.95);
  }
}

namespace {
// 4 SMs at 1 GHz, 1 MiB of L2 (half of it, 512 KiB, may hold KV), 1 TB/s; the decode parameters below
const char* kDecodePlatform =
    "  - name: d4\n    kind: gpu\n    sm_count: 4\n    boost_clock: 1 GHz\n    l2: {size: 1 MiB}\n"
    "    compute: [{name: tc, dtypes: [bf16, fp8], peak: 4 TFLOP/s}]\n"
    "    memory: [{name: hbm, bandwidth: 1 TB/s}]\n"
    "    kernel_model:\n      source: test\n      decode_attention:\n"
    "        fp8: {floor: 2 us, bandwidth_efficiency: 0.5, cta_cycles: 1000, group_cycles: 1, cta_bytes_per_cycle: 64, mmha_cta_cycles: 2000,"
    " mmha_token_cycles: 0.5, multi_block: 1 us, l2_bytes_per_cycle: 32, append: 3 us}\n"
    "        bf16: {floor: 3 us, bandwidth_efficiency: 0.5, cta_cycles: 1000, group_cycles: 1, cta_bytes_per_cycle: 64, mmha_cta_cycles: 2000,"
    " mmha_token_cycles: 0.5, multi_block: 1 us, l2_bytes_per_cycle: 32, append: 3 us}\n";
}  // namespace

TEST_CASE("kernel model: decode attention's XQA and masked-MHA times by hand, through the engine", "[kernel_model]") {
  // XQA (grouped query, fp8 cache): 2 sequences, 8 query heads over 2 KV heads (G = 4) of 128,
  // 1024 KV tokens. Split: ⌊1024/128⌋ = 8, min(8, round(√(8·8)) = 8); fill 2·2·8 / 4 SMs / 8 = 0.5 ≤ 1:
  // 8 parts of ⌈1024/8⌉ = 128 tokens, all 8 in the (absent) window, 128 tokens each (2 pages of 64)
  DecodeShape xs{2, 8, 2, 128, 1024, 1024, 0, 1};
  DecodePlan xp = decode_plan(xs, 4);
  CHECK(xp.xqa);
  CHECK(xp.splits == 8);
  CHECK(xp.active == 8);
  CHECK(xp.tokens == 128);
  // CTAs b·KVH = 4, ·8 parts = 32, 2 resident per SM (fp8) on 4 SMs: 4 waves, 4 busy.
  //   fixed  = 4 · (1000 + 1 · 4 · 128) cycles = 6048 ns
  //   stream = 4 · 128 tokens · max(512, 2 · 128 · 1) / 64 = 8 cycles a token = 4096 ns
  //   bytes  = 4 · 8 · 128 · 128 · 2 · 1 = 1,048,576: 524,288 from the L2 at 32 B · 4 SMs · 1 GHz =
  //            4.096 µs, 524,288 from memory at 0.5 TB/s = 1.048576 µs: 5.144576 µs
  //   time   = floor 2 + multi-block 1 (split) + 6.048 + ∛(5.144576³ + 4.096³) µs (no append: fp8 at d 128)
  const double xqa = 2e-6 + 1e-6 + 6.048e-6 + std::cbrt(std::pow(5.144576e-6, 3) + std::pow(4.096e-6, 3));
  CHECK(xqa == Approx(14.94321e-6).epsilon(1e-5));
  // masked MHA (2 heads over 2 KV heads: not grouped), bf16 cache, 1 sequence of 100 tokens, head dim 64:
  // b·h = 2 < 4·4 SMs: threads min(256 · min(⌈16/2⌉, 4), 1024) = 1024, a loop covers 1024 / (64·2/16) · 8
  // = 1024 tokens: tiles max(1, min(⌈4/2⌉, ⌈101/1024⌉)) = 1; 1 CTA an SM, waves ⌈2 · 1 / 4⌉ = 1:
  //   stream = 2000 + 1 · 100 · 64 · 0.5 = 5200 cycles = 5.2 µs; bytes 2 · 100 · 64 · 2 · 2 = 51,200,
  //   all in the L2: 51,200 / (32 · 4 · 1 GHz) = 0.4 µs; time = floor 3 + ∛(5.2³ + 0.4³) µs
  DecodeShape ms{1, 2, 2, 64, 100, 100, 0, 2};
  DecodePlan mp = decode_plan(ms, 4);
  CHECK_FALSE(mp.xqa);
  CHECK(mp.threads == 1024);
  CHECK(mp.tiles == 1);
  const double mmha = 3e-6 + std::cbrt(std::pow(5.2e-6, 3) + std::pow(0.4e-6, 3));
  CHECK(mmha == Approx(8.200789e-6).epsilon(1e-5));
  const std::string y = std::string("name: t\nsettings: {execution: ideal, dtype: bf16}\nplatforms:\n") + kDecodePlatform +
                        "networks:\n  - name: n\n    inputs: {q: [2, 1, 1024], k: [2, 1024, 256], q2: [1, 1, 128], k2: [1, 100, 128]}\n    layers:\n"
                        "      - {name: xqa, op: attention, inputs: [q, k, k], heads: 8, kv_heads: 2, causal: true, kv_dtype: fp8}\n"
                        "      - {name: mmha, op: attention, inputs: [q2, k2, k2], heads: 2, causal: true}\n";
  RunResult r = test::run_text(y);
  auto rows = test::rows_of(r, 0, "d4");
  REQUIRE(rows.size() == 2);
  CHECK(rows[0]->derated.time_s == Approx(xqa));
  CHECK(rows[1]->derated.time_s == Approx(mmha));
  CHECK(rows[1]->derated.bound == Bound::Compute);  // its CTAs' path (5.2 µs) over its bytes' (0.4 µs)
}

TEST_CASE("kernel model: a decoder layer's copies record their decode shape too", "[kernel_model]") {
  // Two layers of the same shapes: the engine prices the second as the first's twin. Both rows must
  // carry the decode kernel's shape (the serving pricer reads it to price a batch's decodes as one
  // kernel; a copy without it fell back to a per-sequence line). The XQA shape of the test above:
  // 2 sequences, 8 query heads over 2 KV heads of 128, 1024 fp8 KV tokens, 14.94321 µs each.
  const std::string y = std::string("name: t\nsettings: {execution: ideal, dtype: bf16}\nplatforms:\n") + kDecodePlatform +
                        "networks:\n  - name: n\n    inputs: {q: [2, 1, 1024], k: [2, 1024, 256]}\n    layers:\n"
                        "      - {name: a, op: attention, inputs: [q, k, k], heads: 8, kv_heads: 2, causal: true, kv_dtype: fp8}\n"
                        "      - {name: b, op: attention, inputs: [q, k, k], heads: 8, kv_heads: 2, causal: true, kv_dtype: fp8}\n";
  RunResult r = test::run_text(y);
  auto rows = test::rows_of(r, 0, "d4");
  REQUIRE(rows.size() == 2);
  for (const Row* row : rows) {
    CHECK(row->derated.time_s == Approx(14.94321e-6).epsilon(1e-5));
    REQUIRE(row->decode.has_value());
    CHECK(row->decode->batch == 2);
    CHECK(row->decode->heads == 8);
    CHECK(row->decode->kv_heads == 2);
    CHECK(row->decode->kv_tokens == 1024);
  }
}

TEST_CASE("kernel model: the H200's decode-attention fit carried to the H100 (shared AIConfigurator data)", "[kernel_model][external]") {
  // ../shared/external/aiconfigurator: TensorRT-LLM's decode attention (one query per sequence over a
  // KV cache of 2 to 131,072 tokens, batch 1–2048, 1–128 heads, GQA, sliding windows, bf16 and fp8 caches) timed on an
  // H200 and an H100 SXM. Fitted on the H200 alone (no folds, a short search), carried to the catalog
  // H100's figures (132 SMs, 1.98 GHz, 3.35 TB/s, 50 MB L2): ≥ 85 % within 1.25×, ≥ 95 % within 1.5×
  auto load = [&](const std::string& gpu) {
    std::vector<std::string> skipped;
    return measure::read_generation_attention(op_table(gpu, "generation_attention_perf.csv.gz"), gpu, skipped);
  };
  const Platform h200 = catalog_platform("h200"), h100 = catalog_platform("h100_sxm");
  const auto fit_rows = load("h200_sxm"), check_rows = load("h100_sxm");
  for (DType t : {DType::bf16, DType::fp8}) {
    const measure::DecodeFit f = measure::fit_decode(fit_rows, t, h200, 0, 1000);
    std::vector<double> r, bound;
    for (const auto& s : check_rows)
      if (s.kv == t) r.push_back(s.measured_s / measure::predict_decode(s, f.params, h100)), bound.push_back(s.measured_s / measure::decode_bound(s, h100));
    const measure::ErrorStats e = measure::error_stats(r), b = measure::error_stats(bound);
    INFO(dtype_name(t) << " H100 rows " << e.n << ": median " << e.median << ", within 1.25x " << e.within_1_25 << ", within 1.5x " << e.within_1_5
                       << " (roofline bound within 1.25x " << b.within_1_25 << ")");
    CHECK(e.n > 20000);
    CHECK(e.within_1_25 >= 0.85);
    CHECK(e.within_1_5 >= 0.95);
    CHECK(b.within_1_25 < 0.10);  // the plain bound: 6.6 % (bf16) and 3.7 % (fp8) of these rows
  }
}
