// Defects a first-time user hit (issue 13): output columns, kernels.csv, scaled what-if roofs,
// `hw show --scenario`. Each test failed before its fix.
#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include "app/cli.hpp"
#include "cli_helpers.hpp"
#include "helpers.hpp"

using namespace rsim;
using namespace rsim::test;
namespace fs = std::filesystem;

namespace {

const char* kFused = R"(name: t
platforms:
  - name: gpu
    compute: [{name: c, dtypes: [fp32], peak: 10 TFLOP/s}]
    memory: [{name: m, bandwidth: 1 TB/s}]
    runtime: {launch_overhead: 5 us}
networks:
  - name: n
    input: [1, 64, 56, 56]
    layers:
      - {name: conv, op: conv2d, out_channels: 64, kernel: 3, padding: 1, bias: false}
      - {name: bn, op: batchnorm}
      - {name: relu, op: relu}
passes: [fuse_conv_bn_act]
)";


fs::path write_temp(const std::string& name, const std::string& text) {
  fs::path p = fs::temp_directory_path() / ("rsim_first_use_" + std::to_string(::getpid()) + "_" + name);
  std::ofstream(p) << text;
  return p;
}

}  // namespace

TEST_CASE("summary.csv names the dtype of each row", "[output]") {
  Scenario s = parse_scenario(
      "name: t\nsettings: {dtype: fp16}\nplatforms: [a100_sxm_80gb]\n"
      "networks: [{name: n, input: [1, 64], layers: [{name: fc, op: linear, out_features: 64}]}]\n",
      "t.yaml");
  RunResult r = run(s);
  auto t = csv_rows(summary_csv(r, s));
  REQUIRE(t.size() == 2);
  CHECK(cell(t, 1, "network") == "n");
  CHECK(cell(t, 1, "dtype") == "fp16");
}

TEST_CASE("results.json states how network time is summed: per kernel, with launch overheads", "[output]") {
  Scenario s = parse_scenario(kFused, "t.yaml");
  RunResult r = run(s);
  RunInfo info{"test", &s};
  std::string j = results_json(r, info);
  CHECK(j.find("network time is the sum of layer times") == std::string::npos);
  CHECK(j.find("the kernels (a layer, or a fused group") != std::string::npos);
  CHECK(j.find("runtime.launch_overhead per kernel") != std::string::npos);
  CHECK(j.find("graph = their sum plus runtime.graph_gap between kernels") != std::string::npos);
}

TEST_CASE("a sweep variable named like an output column gives no duplicate CSV header", "[output]") {
  Scenario s = parse_scenario(
      "name: t\nsweep: {grid: {batch: [1, 2], dtype: [fp32, fp16]}}\nsettings: {dtype: \"${dtype}\"}\nplatforms: [a100_sxm_80gb]\n"
      "networks: [{name: n, input: [\"${batch}\", 64], layers: [{name: fc, op: linear, out_features: 64}]}]\n",
      "t.yaml");
  RunResult r = run(s);
  for (const std::string& csv : {results_csv(r, s), summary_csv(r, s), kernels_csv(r)}) {
    auto head = csv_rows(csv).front();
    std::set<std::string> unique(head.begin(), head.end());
    CHECK(unique.size() == head.size());
  }
  auto sum = csv_rows(summary_csv(r, s));
  // point 3 = batch 2, dtype fp16 (the grid's last variable varies fastest)
  CHECK(cell(sum, 4, "sweep.batch") == "2");
  CHECK(cell(sum, 4, "batch") == "2");  // the network's first input dimension
  CHECK(cell(sum, 4, "sweep.dtype") == "fp16");
  CHECK(cell(sum, 4, "dtype") == "fp16");
  auto res = csv_rows(results_csv(r, s));
  CHECK(cell(res, 1, "sweep.dtype") == "fp32");
  CHECK(cell(res, 1, "batch") == "1");  // results.csv has no batch column of its own: the name stays
  CHECK(res[0][1] == "batch");
}

TEST_CASE("kernels.csv: one row per kernel, its bound that of the kernel, not of a layer alone", "[output][passes]") {
  Scenario s = parse_scenario(kFused, "t.yaml");
  RunResult r = run(s);
  auto t = csv_rows(kernels_csv(r));
  // n: conv, bn, relu each their own kernel; n.optimized: one kernel "conv"
  REQUIRE(t.size() == 1 + 3 + 1);
  CHECK(cell(t, 4, "network") == "n.optimized");
  CHECK(cell(t, 4, "kernel") == "conv");
  CHECK(cell(t, 4, "layers") == "3");
  CHECK(cell(t, 4, "layer_names") == "conv;bn;relu");
  const double act = 64.0 * 56 * 56 * 4;                        // 802,816 bytes
  const double flops = 2.0 * 64 * 64 * 9 * 56 * 56 + 64 * 56 * 56;  // conv (BN folded away) + ReLU
  const double bytes = act + 64.0 * 64 * 9 * 4 + 64 * 4 + act;   // input, weights + folded bias, output
  CHECK(std::stod(cell(t, 4, "flops")) == Approx(flops));
  CHECK(std::stod(cell(t, 4, "bytes")) == Approx(bytes));
  // 231.4 MFLOP / 10 TFLOP/s = 23.1 us > 1.75 MB / 1 TB/s = 1.75 us: compute bound, plus 5 us launch
  CHECK(std::stod(cell(t, 4, "time_s")) == Approx(flops / 10e12 + 5e-6));
  CHECK(cell(t, 4, "bound") == "compute");
  CHECK(std::stod(cell(t, 4, "launch_overhead_s")) == Approx(5e-6));
  // the ReLU inside it, alone, is memory bound: its row says so, the kernel does not
  auto rows = csv_rows(results_csv(r, s));
  CHECK(cell(rows, 6, "layer") == "relu");
  CHECK(cell(rows, 6, "kernel") == "conv");
  CHECK(cell(rows, 6, "bound") == "memory");
}

TEST_CASE("scale: {compute, bandwidth} scales a base platform's roofs up or down", "[platforms]") {
  Scenario s = parse_scenario(
      "name: t\nplatforms:\n  - {base: rtx3080, name: fast, scale: {compute: 2, bandwidth: 1.5}}\n"
      "networks: [{name: n, input: [1, 64], layers: [{name: fc, op: linear, out_features: 64}]}]\n",
      "t.yaml");
  RunResult r = run(s);
  const Platform& p = *r.results[0].platforms[0];
  CHECK(p.compute[0].peak_flops_per_s == Approx(2 * 29.8e12));
  CHECK(p.compute[0].derated_flops_per_s == Approx(2 * 29.8e12));
  CHECK(p.memory[0].bandwidth_bytes_per_s == Approx(1.5 * 760.32e9));
  CHECK(p.compute[0].derivation.find("× scale 2 = 59.6 TFLOP/s") != std::string::npos);
  std::string e = error_of([] {
    run_text("name: t\nplatforms:\n  - {base: rtx3080, name: fast, scale: {compute: 0}}\n"
             "networks: [{name: n, input: [1, 64], layers: [{name: fc, op: linear, out_features: 64}]}]\n");
  });
  CHECK(e ==
        "t.yaml:3:50: error: scale.compute must be a positive factor, got 0\n"
        "  - {base: rtx3080, name: fast, scale: {compute: 0}}\n"
        "                                                 ^\n");
}

TEST_CASE("hw show NAME --scenario FILE shows a scenario's what-if platform at each point", "[cli]") {
  fs::path f = write_temp("whatif.yaml",
                          "name: w\nsweep: {grid: {f: [2, 4]}}\nplatforms:\n"
                          "  - {base: rtx3080, name: \"rtx3080@x${f}\", scale: {compute: \"${f}\"}}\n"
                          "networks: [{name: n, input: [1, 64], layers: [{name: fc, op: linear, out_features: 64}]}]\n");
  CliOut o = cli({"hw", "show", "rtx3080", "--scenario", f.string(), "--hw-dir", src("hardware")});
  CHECK(o.code == 0);
  CHECK(o.out.find("at sweep point 0: f=2\nrtx3080@x2") != std::string::npos);
  CHECK(o.out.find("theoretical 59.6 TFLOP/s") != std::string::npos);   // 2 × 29.8
  CHECK(o.out.find("at sweep point 1: f=4\nrtx3080@x4") != std::string::npos);
  CHECK(o.out.find("theoretical 119.2 TFLOP/s") != std::string::npos);  // 4 × 29.8
  CliOut one = cli({"hw", "show", "rtx3080@x4", "--scenario", f.string(), "--hw-dir", src("hardware")});
  CHECK(one.out.find("rtx3080@x2") == std::string::npos);
  CliOut bad = cli({"hw", "show", "rtx3080@x3", "--scenario", f.string(), "--hw-dir", src("hardware")});
  CHECK(bad.code == 1);
  CHECK(bad.err == "rsim: error: scenario '" + f.string() + "' has no platform 'rtx3080@x3'\nrsim: note: did you mean 'rtx3080@x2'?\n");
  fs::remove(f);
}

TEST_CASE("${…}: ~= is not-equal, and/or pick an operand, as the README says", "[scenario]") {
  RunResult r = run_text(
      "name: t\nsweep: {grid: {g: [1, 2]}}\nplatforms: [rtx3080]\nnetworks:\n  - name: n\n    input: [1, 8, 4, 4]\n    layers:\n"
      "      - {name: c, op: conv2d, out_channels: \"${g == 1 and 8 or 16}\", kernel: 1, bias: false}\n"
      "      - {name: r, op: relu, when: \"${g ~= 1}\"}\n");
  // g = 1: the conv has 8 output channels and the ReLU is left out; g = 2: 16 channels and the ReLU
  REQUIRE(r.results[0].rows.size() == 1);
  CHECK(r.results[0].rows[0].output_shapes == "1x8x4x4");
  REQUIRE(r.results[1].rows.size() == 2);
  CHECK(r.results[1].rows[0].output_shapes == "1x16x4x4");
}

TEST_CASE("a sweep variable may give a label and a unit for figures", "[scenario]") {
  Scenario s = parse_scenario(
      "name: t\nsweep: {grid: {clock_ghz: {values: [2.2, 1.5], label: Vector clock, unit: GHz}, n: {from: 1, to: 3, step: 1, label: Size}}}\n"
      "platforms: [rtx3080]\nnetworks: [{name: n, input: [1, 64], layers: [{name: fc, op: linear, out_features: 64}]}]\n",
      "t.yaml");
  REQUIRE(s.sweep.grid.size() == 2);
  CHECK(s.sweep.grid[0].values == std::vector<std::string>{"2.2", "1.5"});
  CHECK(s.sweep.grid[0].label == "Vector clock");
  CHECK(s.sweep.grid[0].unit == "GHz");
  CHECK(s.sweep.grid[1].values == std::vector<std::string>{"1", "2", "3"});
  CHECK(s.sweep.grid[1].label == "Size");
  std::string e = error_of([] {
    parse_scenario("name: t\nsweep: {grid: {a: {values: [1], from: 1, to: 2, step: 1}}}\nplatforms: [x]\n"
                   "networks: [{name: n, input: [1, 64], layers: [{name: fc, op: linear, out_features: 64}]}]\n",
                   "t.yaml");
  });
  CHECK(e ==
        "t.yaml:2:19: error: sweep variable 'a' gives both 'values' and a range (from, to, ...); keep one\n"
        "sweep: {grid: {a: {values: [1], from: 1, to: 2, step: 1}}}\n"
        "                  ^\n");
}
