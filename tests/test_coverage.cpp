// Features no other test reached (issue 11, item 5): the memory level rooflines use, a network's
// named inputs, per-layer dtype, `--set` on a zipped variable, $RSIM_HARDWARE and $RSIM_MODELS, the
// terminal tables, and the fusion passes the other tests do not exercise. Every number by hand.
#include <catch2/catch.hpp>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "app/cli.hpp"
#include "cli_helpers.hpp"
#include "helpers.hpp"

using namespace rsim;
using namespace rsim::test;
namespace fs = std::filesystem;

namespace {

void write(const fs::path& p, const std::string& text) { std::ofstream(p) << text; }

const Row& row(const RunResult& r, const std::string& layer, size_t point = 0) {
  for (const auto& x : r.results.at(point).rows)
    if (x.layer == layer) return x;
  throw std::runtime_error("no row " + layer);
}

// 1 TFLOP/s fp32 and 4 TFLOP/s fp16; DRAM 100 GB/s (first: the default level), L2 1 TB/s of 1 MiB
const char* kBox = R"(platforms:
  - name: box
    compute: [{name: c, dtypes: [fp32], peak: 1 TFLOP/s}, {name: h, dtypes: [fp16], peak: 4 TFLOP/s}]
    memory: [{name: DRAM, bandwidth: 100 GB/s}, {name: L2, bandwidth: 1 TB/s, size: 1 MiB}]
)";

// small: ReLU over 64·16·16 = 16,384 elements: 16,384 FLOPs, (16,384 + 16,384)·4 = 131,072 bytes
// big: 3×3 conv 64 → 512, padding 1: 2·512·16·16·64·9 = 150,994,944 FLOPs; weights 512·64·9·4 =
//      1,179,648 bytes (alone more than 1 MiB = 1,048,576), + 65,536 in + 512·256·4 = 524,288 out
// half: ReLU in fp16 over 512·16·16 = 131,072 elements: 131,072 FLOPs, 131,072·2·2 = 524,288 bytes
std::string levels(const std::string& memory_level) {
  return "name: t\nsettings: {memory_level: " + memory_level + "}\n" + kBox +
         R"(networks:
  - name: n
    input: [1, 64, 16, 16]
    layers:
      - {name: small, op: relu}
      - {name: big, op: conv2d, out_channels: 512, kernel: 3, padding: 1, bias: false}
      - {name: half, op: relu, dtype: fp16}
)";
}

}  // namespace

TEST_CASE("memory_level: the first level by default, a named level, or auto by working set", "[coverage]") {
  // default (no memory_level): the first level, DRAM, for every layer
  std::string no_setting = levels("auto");
  no_setting.erase(no_setting.find("settings:"), no_setting.find("platforms:") - no_setting.find("settings:"));
  RunResult dram = run_text(no_setting);
  CHECK(row(dram, "small").memory_level == "DRAM");
  CHECK(row(dram, "small").theoretical.time_s == Approx(131072 / 100e9));  // 1.31 us
  // a named level: L2 for every layer, whatever its size
  RunResult l2 = run_text(levels("L2"));
  CHECK(row(l2, "small").memory_level == "L2");
  CHECK(row(l2, "big").memory_level == "L2");
  CHECK(row(l2, "small").theoretical.time_s == Approx(131072 / 1e12));  // 131 ns
  // auto: the smallest level holding the working set (inputs + weights + outputs)
  RunResult a = run_text(levels("auto"));
  CHECK(row(a, "small").memory_level == "L2");  // 131,072 bytes fit 1 MiB
  CHECK(row(a, "big").memory_level == "DRAM");  // 1,769,472 bytes do not
  CHECK(row(a, "half").memory_level == "L2");   // 524,288 bytes fit
  CHECK(row(a, "small").theoretical.time_s == Approx(131072 / 1e12));
  CHECK(row(a, "small").theoretical.bound == Bound::Memory);
  CHECK(row(a, "big").theoretical.bandwidth_bytes_per_s == 100e9);
  CHECK(row(a, "big").theoretical.time_s == Approx(150994944 / 1e12));  // compute bound: 151 us
  CHECK(row(a, "big").theoretical.bound == Bound::Compute);
  // an unknown level: an error at the platform, with a suggestion
  std::string e = error_of([&] { run_text(levels("L3")); });
  CHECK(e ==
        "t.yaml:4:5: error: platform 'box' has no memory level 'L3'\n"
        "  - name: box\n"
        "    ^\n"
        "note: did you mean 'L2'?\n");
}

TEST_CASE("per-layer dtype: bytes in that precision, the compute roof of that precision", "[coverage]") {
  RunResult r = run_text(levels("auto"));
  const Row& h = row(r, "half");
  CHECK(h.dtype == DType::fp16);
  CHECK(h.output_shapes == "1x512x16x16");
  CHECK(h.cost.flops == 512.0 * 16 * 16);
  CHECK(h.bytes == 512.0 * 16 * 16 * 2 * 2);  // in + out, 2 bytes each
  CHECK(h.compute_roof == "h");
  CHECK(h.theoretical.peak_flops_per_s == 4e12);
  // the fp32 layers beside it keep 4 bytes and the fp32 roof
  CHECK(row(r, "small").bytes == 64.0 * 16 * 16 * 4 * 2);
  CHECK(row(r, "small").compute_roof == "c");
}

TEST_CASE("a platform whose main memory states no size has no capacity to exceed", "[coverage]") {
  // only L2 states a size (1 MiB), the network's weights alone are 1.1 MiB: no warning, since DRAM
  // (no size) holds anything
  RunResult r = run_text(levels("auto"));
  CHECK(r.results[0].warnings.empty());
  CHECK(r.results[0].summary.at(0).memory_size_bytes == 0);
}

TEST_CASE("a network's named inputs feed layers by name", "[coverage]") {
  RunResult r = run_text(std::string("name: t\n") + kBox + R"(networks:
  - name: n
    inputs: {x: [1, 64, 8, 8], y: [1, 64, 8, 8]}
    layers:
      - {name: sum, op: add, inputs: [x, y]}
      - {name: mm, op: matmul, inputs: [x, y]}
)");
  const Row& sum = row(r, "sum");
  CHECK(sum.input_shapes == "1x64x8x8;1x64x8x8");
  CHECK(sum.cost.flops == 64.0 * 8 * 8);                 // one add per element: 4,096
  CHECK(sum.bytes == (2 * 4096.0 + 4096.0) * 4);         // both inputs read, one output written
  const Row& mm = row(r, "mm");
  CHECK(mm.output_shapes == "1x64x8x8");                 // (64×8)·(8×8) per batch and channel
  CHECK(mm.cost.macs == 64.0 * 8 * 8 * 8);               // 64 products of 8×8 by 8×8: 32,768
  CHECK(mm.cost.flops == 2 * 64.0 * 8 * 8 * 8);
}

TEST_CASE("a zipped variable pinned by --set takes one of its values, its partners follow", "[coverage][cli]") {
  fs::path dir = scratch_dir("zip");
  // k and p advance together so that the output stays 8×8: (8 + 2p − k) + 1 = 8
  write(dir / "z.yaml", std::string("name: z\nsweep: {zip: {k: [1, 3, 5], p: [0, 1, 2]}}\n") + kBox + R"(networks:
  - name: n
    input: [1, 16, 8, 8]
    layers:
      - {name: conv, op: conv2d, out_channels: 16, kernel: "${k}", padding: "${p}", bias: false}
)");
  Scenario s = load_scenario((dir / "z.yaml").string());
  apply_overrides(s, {{"k", "3"}});
  RunResult r = run(s);
  REQUIRE(r.points.size() == 1);
  CHECK(row(r, "conv").output_shapes == "1x16x8x8");
  CHECK(row(r, "conv").cost.macs == 16.0 * 8 * 8 * 16 * 3 * 3);  // k = 3 with p = 1: 147,456
  // a number written differently is the same value
  Scenario s2 = load_scenario((dir / "z.yaml").string());
  apply_overrides(s2, {{"k", "5.0"}});
  RunResult r2 = run(s2);
  REQUIRE(r2.points.size() == 1);
  CHECK(row(r2, "conv").cost.macs == 16.0 * 8 * 8 * 16 * 5 * 5);  // k = 5 with p = 2
  // a value the zip does not list cannot keep the pairs: an error naming the values
  Scenario s3 = load_scenario((dir / "z.yaml").string());
  CHECK(error_of([&] { apply_overrides(s3, {{"k", "4"}}); }) ==
        "rsim: error: --set k=4: 'k' is a zipped variable and 4 is not one of its values\n"
        "rsim: note: its values: 1, 3, 5; pinning one of them pins p to the value beside it\n");
  fs::remove_all(dir);
}

TEST_CASE("$RSIM_HARDWARE and $RSIM_MODELS: a catalog and a zoo elsewhere", "[coverage][cli]") {
  fs::path dir = scratch_dir("env");
  fs::create_directories(dir / "hw");
  fs::create_directories(dir / "zoo");
  fs::create_directories(dir / "work");
  // a platform only this catalog has: 2 TFLOP/s, 200 GB/s
  write(dir / "hw" / "envbox.yaml",
        "name: envbox\ntitle: a test box\nkind: cpu\ncompute: [{name: c, dtypes: [fp32], peak: 2 TFLOP/s}]\n"
        "memory: [{name: m, bandwidth: 200 GB/s}]\n");
  // a model only this zoo has: one ReLU over [1, 8, 4, 4]
  write(dir / "zoo" / "envnet.yaml", "name: envnet\ninput: [1, 8, 4, 4]\nlayers:\n  - {name: r, op: relu}\n");
  write(dir / "work" / "s.yaml", "name: s\nplatforms: [envbox]\nnetworks:\n  - {model: envnet}\n");
  ::setenv("RSIM_HARDWARE", (dir / "hw").c_str(), 1);
  ::setenv("RSIM_MODELS", (dir / "zoo").c_str(), 1);
  CliOut o = cli({"run", (dir / "work" / "s.yaml").string(), "--out", (dir / "out").string(), "--no-plots", "-q"});
  ::unsetenv("RSIM_HARDWARE");
  ::unsetenv("RSIM_MODELS");
  INFO(o.err);
  REQUIRE(o.code == 0);
  std::ifstream in(dir / "out" / "summary.csv");
  std::string header, line;
  std::getline(in, header);
  std::getline(in, line);
  CHECK(line.rfind("0,envbox,envnet,", 0) == 0);
  // 128 elements: 128 FLOPs, 1,024 bytes over 200 GB/s = 5.12 ns, memory bound
  CHECK(line.find(",5.12e-09,") != std::string::npos);
  // without the variables neither name resolves (the catalog from --hw-dir has no envbox)
  CliOut bad = cli({"validate", (dir / "work" / "s.yaml").string(), "--hw-dir", src("hardware")});
  CHECK(bad.code == 1);
  fs::remove_all(dir);
}

TEST_CASE("the terminal tables: one row per layer and per network, numbers with units", "[coverage][cli]") {
  fs::path dir = scratch_dir("term");
  write(dir / "t.yaml", levels("auto"));
  CliOut o = cli({"run", (dir / "t.yaml").string(), "--out", (dir / "out").string(), "--no-plots"});
  REQUIRE(o.code == 0);
  // small: 16.38 k FLOPs, 131.1 kB, 0.125 FLOP/B, attainable 1 TB/s · 0.125 = 125 GFLOP/s, 131.1 ns
  // big: 151 M FLOPs, 1.769 MB, 150,994,944 / 1,769,472 = 85.3 FLOP/B, at the 1 TFLOP/s roof, 151 µs
  // half: 131.1 k FLOPs, 524.3 kB, 0.25 FLOP/B, 1 TB/s · 0.25 = 250 GFLOP/s, 524.3 ns
  // totals: 16,384 + 150,994,944 + 131,072 = 151.1 M FLOPs; 131,072 + 1,769,472 + 524,288 = 2.425 MB;
  // 62.3 FLOP/B; 3 kernels; 131.072 ns + 150.995 µs + 524.288 ns = 151.7 µs; 151.1 M / 151.7 µs =
  // 996.7 GFLOP/s; 2 memory- and 1 compute-bound layers; the limit: compute, the big kernel's
  // 150.995 of 151.650 µs (99.6 %, written 100 %)
  std::string expected =
      "t: 1 point × 1 platform; FLOPs = 2×MAC, bytes = inputs+weights+outputs, fp32\n"
      "\n"
      "pt  platform  network  layer  op        FLOPs     bytes  FLOP/B   attainable      time  bound    derated time  bound\n"
      "--  --------  -------  -----  ------  -------  --------  ------  -----------  --------  -------  ------------  -------\n"
      " 0  box       n        small  relu    16.38 k  131.1 kB   0.125  125 GFLOP/s  131.1 ns  memory       131.1 ns  memory\n"
      " 0  box       n        big    conv2d    151 M  1.769 MB    85.3    1 TFLOP/s    151 µs  compute        151 µs  compute\n"
      " 0  box       n        half   relu    131.1 k  524.3 kB    0.25  250 GFLOP/s  524.3 ns  memory       524.3 ns  memory\n"
      "\n"
      "network totals (time = the kernels' work plus what the execution mode adds; mem/comp = memory- and compute-bound layers, theoretical roofs; "
      "limit = the part with the largest share of the derated time):\n"
      "pt  platform  network    FLOPs     bytes  FLOP/B  kernels      time  derated time       achieved  mem/comp layers  limit\n"
      "--  --------  -------  -------  --------  ------  -------  --------  ------------  -------------  ---------------  -------------\n"
      " 0  box       n        151.1 M  2.425 MB    62.3        3  151.7 µs      151.7 µs  996.7 GFLOP/s              2/1  compute 100 %\n"
      "\n";
  CHECK(o.out.substr(0, expected.size()) == expected);
  CHECK(o.out.substr(expected.size()).rfind("wrote " + (dir / "out").string() + "/: results.csv, summary.csv, kernels.csv, ops.csv, results.json", 0) == 0);
  fs::remove_all(dir);
}

namespace {
// a 1×1 conv 16 → 16 on 8×8 (in and out 1,024 elements each, 256 weights) with a residual add and
// a ReLU; a 64 → 32 linear with a bias add and a GELU; an elementwise chain mul → sigmoid
const char* kFusable = R"(name: t
platforms:
  - name: gpu
    compute: [{name: c, dtypes: [fp32], peak: 10 TFLOP/s}]
    memory: [{name: m, bandwidth: 1 TB/s}]
    runtime: {launch_overhead: 5 us}
networks:
  - name: res
    input: [1, 16, 8, 8]
    layers:
      - {name: conv, op: conv2d, out_channels: 16, kernel: 1, bias: false}
      - {name: add, op: add, inputs: [conv, input]}
      - {name: relu, op: relu}
  - name: mlp
    inputs: {x: [4, 64], b: [4, 32]}
    layers:
      - {name: fc, op: linear, inputs: [x], out_features: 32, bias: false}
      - {name: bias, op: add, inputs: [fc, b]}
      - {name: act, op: gelu}
  - name: chain
    inputs: {x: [1, 1024], y: [1, 1024]}
    layers:
      - {name: mul, op: mul, inputs: [x, y]}
      - {name: sig, op: sigmoid}
)";
const SummaryRow& net(const RunResult& r, const std::string& name) {
  for (const auto& s : r.results[0].summary)
    if (s.network == name) return s;
  throw std::runtime_error("no network " + name);
}
}  // namespace

TEST_CASE("fuse_conv_add, fuse_matmul_add, fuse_gemm_act and fuse_elementwise", "[coverage][passes]") {
  RunResult r = run_text(std::string(kFusable) + "passes: [fuse_conv_add, fuse_conv_bn_act, fuse_matmul_add, fuse_gemm_act, fuse_elementwise]\n");
  // res before: conv (1,024 + 256 + 1,024), add (2,048 + 1,024), relu (1,024 + 1,024) elements, 3 kernels
  CHECK(net(r, "res").bytes == (1024 + 256 + 1024 + 2048 + 1024 + 1024 + 1024) * 4.0);
  CHECK(net(r, "res").kernels == 3);
  // after: one kernel reads the input, the weights and the residual (the same input, read again),
  // writes the ReLU's output: (1,024 + 256 + 1,024 + 1,024)·4 = 13,312 bytes
  CHECK(net(r, "res.optimized").bytes == (1024 + 256 + 1024 + 1024) * 4.0);
  CHECK(net(r, "res.optimized").kernels == 1);
  // FLOPs kept: conv 2·1,024·16 = 32,768, add 1,024, relu 1,024
  CHECK(net(r, "res.optimized").flops == 2.0 * 1024 * 16 + 1024 + 1024);
  // mlp: linear (256 in + 2,048 weights + 128 out), add (256 in + 128 out), gelu (128 + 128)
  CHECK(net(r, "mlp").bytes == ((256 + 2048 + 128) + (256 + 128) + (128 + 128)) * 4.0);
  CHECK(net(r, "mlp.optimized").kernels == 1);
  // fused: x, the weights and b in, the GELU's output out
  CHECK(net(r, "mlp.optimized").bytes == (256 + 2048 + 128 + 128) * 4.0);
  CHECK(net(r, "mlp.optimized").flops == 2.0 * 4 * 64 * 32 + 128 + 8 * 128);  // GEMM, bias add, GELU 8 per element
  // chain: mul (2,048 in, 1,024 out), sigmoid (1,024 + 1,024) → one kernel: 2,048 in, 1,024 out
  CHECK(net(r, "chain").bytes == (2048 + 1024 + 1024 + 1024) * 4.0);
  CHECK(net(r, "chain.optimized").bytes == (2048 + 1024) * 4.0);
  CHECK(net(r, "chain.optimized").kernels == 1);
  // time of the fused chain: 1,024 + 4·1,024 FLOPs over 10 TFLOP/s = 0.51 ns vs 12,288 bytes over
  // 1 TB/s = 12.29 ns, plus one 5 us launch
  CHECK(net(r, "chain.optimized").time_s == Approx(12288 / 1e12 + 5e-6));
  // with the passes off the networks stay as written
  RunResult none = run_text(std::string(kFusable) + "passes: [fuse_conv_bn_act]\n");
  CHECK(net(none, "res.optimized").kernels == 3);  // the add sits between the conv and the ReLU
  CHECK(net(none, "chain.optimized").kernels == 2);
}
