// Graph passes: fusion and elimination change bytes and kernels, never FLOPs of the work kept.
#include <catch2/catch.hpp>

#include "helpers.hpp"

using namespace rsim;
using namespace rsim::test;

namespace {

const char* kBlock = R"(name: t
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
)";

const SummaryRow& net(const RunResult& r, const std::string& name) {
  for (const auto& s : r.results[0].summary)
    if (s.network == name) return s;
  throw std::runtime_error("no network " + name);
}

const Row& row(const RunResult& r, const std::string& network, const std::string& layer) {
  for (const auto& x : r.results[0].rows)
    if (x.network == network && x.layer == layer) return x;
  throw std::runtime_error("no row " + layer);
}

}  // namespace

TEST_CASE("conv + BN + ReLU fused: one kernel, no intermediates, BN folded into the conv", "[passes]") {
  RunResult r = run_text(std::string(kBlock) + "passes: [fuse_conv_bn_act]\n");
  const double act = 64.0 * 56 * 56 * 4;       // one 1×64×56×56 fp32 tensor: 802,816 bytes
  const double weights = 64.0 * 64 * 9 * 4;    // conv weights
  const SummaryRow& before = net(r, "n");
  const SummaryRow& after = net(r, "n.optimized");
  // before: conv reads in + weights, writes out; BN reads, 4·C constants, writes; ReLU reads, writes
  CHECK(before.bytes == (act + weights + act) + (act + 4 * 64 * 4 + act) + (act + act));
  CHECK(before.kernels == 3);
  // after: the input and the weights (plus the folded bias, 64 floats) in, the ReLU's output out
  CHECK(after.bytes == act + weights + 64 * 4 + act);
  CHECK(after.kernels == 1);
  // BN's 2 FLOPs per element vanish with the fold; the conv's and the ReLU's stay
  CHECK(before.flops - after.flops == 2 * 64.0 * 56 * 56);
  CHECK(row(r, "n.optimized", "bn").kernel == "conv");
  CHECK(row(r, "n.optimized", "relu").kernel == "conv");
  // time: the kernel's FLOPs (conv 2·56·56·64·64·9 = 231,211,008 plus the ReLU's 1 per output,
  // 200,704) over 10 TFLOP/s = 23.14 us, against its bytes (802,816 + 147,456 + 256 + 802,816 =
  // 1,753,344) over 1 TB/s = 1.75 us: compute bound, plus one 5 us launch
  double flops = 2.0 * 56 * 56 * 64 * 64 * 9 + 64.0 * 56 * 56;
  CHECK(after.flops == flops);
  CHECK(after.time_s == Approx(flops / 10e12 + 5e-6));
  CHECK(before.time_s > after.time_s + 2 * 5e-6);  // two launches saved, and bytes
}

TEST_CASE("standalone BN folds into a scale, reshapes and concat/split are eliminated", "[passes]") {
  std::string y = R"(name: t
platforms: [rtx3080]
passes: all
networks:
  - name: n
    input: [1, 8, 4, 4]
    layers:
      - {name: r1, op: reshape_copy, shape: [1, 8, 16]}
      - {name: r2, op: reshape_copy, shape: [1, 8, 4, 4]}
      - {name: pool, op: max_pool2d, kernel: 2}
      - {name: bn, op: batchnorm}
      - {name: a, op: relu6, inputs: [pool]}
      - {name: cat, op: concat, inputs: [bn, a]}
      - {name: sp, op: split, sections: 2}
      - {name: out, op: add, inputs: ["sp:0", "sp:1"]}
)";
  RunResult r = run_text(y);
  CHECK(row(r, "n.optimized", "r1").kernel.empty());  // the first of two reshapes vanishes
  CHECK(row(r, "n.optimized", "r1").bytes == 0);
  CHECK(row(r, "n", "r1").bytes == 2 * 8.0 * 16 * 4);
  CHECK(row(r, "n.optimized", "cat").bytes == 0);     // concat then the matching split: both go
  CHECK(row(r, "n.optimized", "sp").bytes == 0);
  // pool's output feeds bn and a: not fusable (two consumers); bn stays alone and folds: 4·C → 2·C
  CHECK(row(r, "n", "bn").cost.weight_bytes == 4 * 8 * 4);
  CHECK(row(r, "n.optimized", "bn").cost.weight_bytes == 2 * 8 * 4);
  CHECK(net(r, "n.optimized").flops == net(r, "n").flops);
}

TEST_CASE("unknown passes are listed", "[passes][errors]") {
  std::string e = error_of([] { parse_scenario(std::string(kBlock) + "passes: [fuse_conv_batchnorm]\n", "t.yaml"); });
  CHECK(e.find("t.yaml:14:10: error: unknown pass 'fuse_conv_batchnorm'") == 0);
  CHECK(e.find("note: passes: all, none, eliminate_noops") != std::string::npos);
}
