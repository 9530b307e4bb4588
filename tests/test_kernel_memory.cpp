// The kernel model's memory-bound family (engine/hardware/kernel_model.hpp): an operator's own share
// of the bandwidth, by hand through the engine; its fit from measured layers (rsim calibrate --ops);
// and the shipped H200 fit against the H200's measured ResNet-50 layers (tests/data/h200, ours).
#include <catch2/catch.hpp>

#include "engine/hardware/kernel_model.hpp"
#include "engine/model/text_file.hpp"
#include "helpers.hpp"
#include "measure/calibrate_ops.hpp"

using namespace rsim;

namespace {
// 1 TB/s of memory, a base share of 0.8 and a 2 µs floor; max pooling at a quarter of the bandwidth
const char* kMemPlatform =
    "  - name: g\n    kind: gpu\n    sm_count: 132\n"
    "    compute: [{name: c, dtypes: [fp32], peak: 100 TFLOP/s}]\n"
    "    memory: [{name: hbm, bandwidth: 1 TB/s}]\n"
    "    kernel_model:\n      source: test\n"
    "      memory: {bandwidth_efficiency: 0.8, floor: 2 us, ops: {max_pool2d: 0.25}}\n";
// relu over [1, 1, 1024, 1024] fp32, then a 2×2 max pool of stride 2
const char* kMemNet =
    "networks:\n  - name: n\n    input: [1, 1, 1024, 1024]\n    layers:\n"
    "      - {name: act, op: relu}\n"
    "      - {name: pool, op: max_pool2d, kernel: 2, stride: 2}\n";
}  // namespace

TEST_CASE("kernel model: a memory-bound operator takes its own share of the bandwidth", "[kernel_model][memory]") {
  const std::string y = std::string("name: t\nsettings: {execution: ideal, dtype: fp32}\nplatforms:\n") + kMemPlatform + kMemNet;
  RunResult r = test::run_text(y);
  auto rows = test::rows_of(r, 0, "g");
  REQUIRE(rows.size() == 2);
  // relu: 1,048,576 fp32 elements in and out = 8,388,608 bytes; / (1 TB/s · 0.8) = 10.48576 µs, + 2 µs floor
  CHECK(rows[0]->bytes == 8388608);
  CHECK(rows[0]->derated.time_s == Approx(12.48576e-6));
  // max pool: 1,048,576 in + 512 · 512 = 262,144 out, × 4 bytes = 5,242,880; / (1 TB/s · 0.25) = 20.97152 µs, + 2 µs
  CHECK(rows[1]->bytes == 5242880);
  CHECK(rows[1]->derated.time_s == Approx(22.97152e-6));
  // under a CUDA graph a kernel fitted alone gives up no more of the gap than its floor: with a 5 µs
  // gap, relu 12.48576 − 2 = 10.48576 µs (the whole gap would have taken it to 7.48576)
  const std::string g = std::string("name: t\nsettings: {execution: graph, dtype: fp32}\nplatforms:\n") + kMemPlatform +
                        "    runtime: {launch_overhead: 3 us, graph_gap: 5 us}\n" + kMemNet;
  CHECK(test::rows_of(test::run_text(g), 0, "g")[0]->derated.time_s == Approx(10.48576e-6));
}

TEST_CASE("kernel model: memory ops must name built-in operators and shares in (0, 1]", "[kernel_model][memory][errors]") {
  const std::string base = std::string("name: t\nplatforms:\n") + kMemPlatform + kMemNet;
  std::string y = base;
  y.replace(y.find("max_pool2d: 0.25"), 16, "max_pool2x: 0.25");
  CHECK_THAT(test::error_of([&] { test::run_text(y); }), Catch::Contains("kernel_model.memory.ops names 'max_pool2x', which is not a built-in operator"));
  y = base;
  y.replace(y.find("max_pool2d: 0.25"), 16, "max_pool2d: 1.5");
  CHECK_THAT(test::error_of([&] { test::run_text(y); }), Catch::Contains("max_pool2d"));
}

TEST_CASE("kernel model: the memory-bound fit by hand: medians per operator, held out by network", "[kernel_model][memory]") {
  Diags d;
  const Platform p = build_platform(parse_yaml("name: p\nkind: gpu\ncompute: [{name: c, dtypes: [fp32], peak: 100 TFLOP/s}]\n"
                                               "memory: [{name: hbm, bandwidth: 1 TB/s}]\n", "p.yaml"), nullptr, d);
  REQUIRE(d.empty());
  // shares bytes / (1 TB/s · time): relu 0.8, 0.8, 0.9; batchnorm 0.5, 0.4, 0.6 (networks a, b, c);
  // and a relu of 1 MB, 1 µs at the full bandwidth: under the 20 µs a fitted row needs
  std::vector<measure::MemorySample> rows = {
      {"relu", "a", 1e8, 0, 0, 125e-6},       {"batchnorm", "a", 1e8, 0, 0, 200e-6}, {"relu", "b", 2e8, 0, 0, 250e-6},
      {"batchnorm", "b", 1e8, 0, 0, 250e-6}, {"relu", "c", 1e8, 0, 0, 1e8 / 0.9e12}, {"batchnorm", "c", 1e8, 0, 0, 1e8 / 0.6e12},
      {"relu", "c", 1e6, 0, 0, 30e-6}};
  const measure::MemoryFit f = measure::fit_memory(rows, p);
  CHECK(f.rows == 7);
  CHECK(f.fitted_rows == 6);
  // the base: relu's (elementwise) median 0.8; batchnorm (a normalization) its own median 0.5
  CHECK(f.params.bandwidth_efficiency == Approx(0.8));
  REQUIRE(f.params.ops.size() == 1);
  CHECK(f.params.ops[0].first == "batchnorm");
  CHECK(f.params.ops[0].second == Approx(0.5));
  CHECK(f.params.floor_s == 0);
  // network a held out: the fit on b and c has relu (0.8 + 0.9) / 2 = 0.85 and batchnorm (0.4 + 0.6) / 2 = 0.5
  CHECK(f.cv_predicted_s[0] == Approx(1e8 / 0.85e12));
  CHECK(f.cv_predicted_s[1] == Approx(1e8 / 0.5e12));
  // the small row is predicted by the full fit, never below its bound: 1e6 / 0.8e12 = 1.25 µs
  CHECK(f.cv_predicted_s[6] == Approx(1.25e-6));
  // nothing big enough to fit: an error that says why
  CHECK_THROWS_WITH(measure::fit_memory({rows[6]}, p), Catch::Contains("no memory-bound row moves enough bytes"));
}

TEST_CASE("kernel model: h200_op's memory-bound fit on our H200's timed ResNet-50 layers", "[kernel_model][memory][external]") {
  // tests/data/h200 (a copy of ../shared/gpu/h200): each torchvision module timed alone on a real
  // H200. Rows whose bytes take 20 µs or more at 4.8 TB/s; the fit that h200_op states was made on
  // them (90 % within 1.25×): held here at 85 %, and the catalog's h200 (85 % of the bandwidth, an
  // assumption) shown to miss them (median measured / derated about 1.56)
  static Catalog cat(test::src("hardware"));
  PlatformCache cache(cat);
  Diags d;
  const Platform h200_op = resolve_platform(CNode::make_scalar("h200_op"), cache, d);
  REQUIRE(d.empty());
  REQUIRE(h200_op.kernel_model.memory);
  std::vector<double> model, derated;
  for (const char* f : {"resnet50_b32_fp16", "resnet50_b32_fp32", "resnet50_b256_fp16", "resnet50_b256_fp32"}) {
    std::string why;
    auto text = read_text_file(test::src(std::string("tests/data/h200/") + f + ".measured.csv"), size_t(1) << 26, "measured.csv", why);
    REQUIRE(text);
    size_t other = 0;
    for (const auto& s : measure::read_measured_memory(*text, f, other)) {
      if (s.bytes / 4.8e12 < measure::kMemoryFitMinStream) continue;
      model.push_back(s.measured_s / measure::predict_memory(s, *h200_op.kernel_model.memory, h200_op));
      derated.push_back(s.measured_s / (s.bytes / (4.8e12 * 0.85)));
    }
  }
  REQUIRE(model.size() > 100);
  const measure::ErrorStats m = measure::error_stats(model), c = measure::error_stats(derated);
  CHECK(m.within_1_25 >= 0.85);
  CHECK(m.median == Approx(1.0).margin(0.05));
  CHECK(c.within_1_25 < 0.4);
  CHECK(c.median > 1.4);
}
