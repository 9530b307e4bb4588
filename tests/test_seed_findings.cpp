// The six experiments of seed 000, checked from rsim's numbers: each finding of the seed holds,
// and one layer per experiment is checked against hand arithmetic.
#include <catch2/catch.hpp>

#include "helpers.hpp"

using namespace rsim;
using namespace rsim::test;

namespace {
// Network-level intensity per sweep point on one platform.
std::vector<double> point_intensities(const RunResult& r, const std::string& platform) {
  std::vector<double> v;
  for (size_t p = 0; p < r.points.size(); ++p) v.push_back(summary_of(r, p, platform).intensity);
  return v;
}
}  // namespace

TEST_CASE("kernel size: intensity rises with k and its growth rate falls", "[seed][scenarios]") {
  RunResult r = run_file("scenarios/kernel_size_sweep.yaml");
  REQUIRE(r.points.size() == 6);  // k = 1, 3, 5, 7, 9, 11
  auto I = point_intensities(r, "rtx3080");
  for (size_t i = 1; i < I.size(); ++i) {
    CHECK(I[i] > I[i - 1]);
    if (i >= 2) CHECK(I[i] / I[i - 1] < I[i - 1] / I[i - 2]);  // growth ratio falls
  }
  // k = 3 by hand: 256→256 on 56×56, same padding, bias.
  const Row& k3 = *rows_of(r, 1, "rtx3080").at(0);
  double macs = 56.0 * 56 * 256 * 256 * 3 * 3;                  // outputs × Cin·k²
  double bytes = (256.0 * 56 * 56 + (256.0 * 256 * 9 + 256) + 256.0 * 56 * 56) * 4;  // in + weights+bias + out
  CHECK(k3.cost.macs == macs);
  CHECK(k3.cost.flops == 2 * macs);
  CHECK(k3.bytes == bytes);
  CHECK(k3.theoretical.intensity == Approx(2 * macs / bytes));
  // the 1×1 conv has the fewest FLOPs and the lowest intensity
  const Row& k1 = *rows_of(r, 0, "rtx3080").at(0);
  CHECK(k1.cost.flops == 2.0 * 56 * 56 * 256 * 256);
  CHECK(k1.theoretical.intensity == Approx(2.0 * 56 * 56 * 256 * 256 / ((2 * 256.0 * 56 * 56 + 256.0 * 256 + 256) * 4)));
}

TEST_CASE("output size: intensity rises with output size, growth rate falls", "[seed][scenarios]") {
  RunResult r = run_file("scenarios/output_size_sweep.yaml");
  std::vector<double> I;
  std::vector<long long> sizes;
  for (const Row* row : rows_of(r, 0, "rtx3080"))
    if (row->op == "conv2d") I.push_back(row->theoretical.intensity);
  REQUIRE(I.size() == 6);  // 7, 14, 28, 56, 112, 224
  for (size_t i = 1; i < I.size(); ++i) {
    CHECK(I[i] > I[i - 1]);
    if (i >= 2) CHECK(I[i] / I[i - 1] < I[i - 1] / I[i - 2]);
  }
  // the last conv: 256→256 3×3 at 224×224
  const Row& last = *rows_of(r, 0, "rtx3080").back();
  CHECK(last.output_shapes == "1x256x224x224");
  CHECK(last.cost.macs == 224.0 * 224 * 256 * 256 * 9);
  // nearest upsampling is pure data movement: 0 FLOPs, reads 7×7, writes 14×14
  const Row& up = *rows_of(r, 0, "rtx3080").at(1);
  CHECK(up.cost.flops == 0);
  CHECK(up.bytes == (256.0 * 7 * 7 + 256.0 * 14 * 14) * 4);
  CHECK(up.theoretical.bound == Bound::Memory);
}

TEST_CASE("channels: more channels, higher intensity", "[seed][scenarios]") {
  RunResult r = run_file("scenarios/channel_sweep.yaml");
  auto rows = rows_of(r, 0, "xeon_silver_4210_2s");
  REQUIRE(rows.size() == 6);
  for (size_t i = 1; i < rows.size(); ++i) CHECK(rows[i]->theoretical.intensity > rows[i - 1]->theoretical.intensity);
  // conv1 16→32 by hand
  double macs = 56.0 * 56 * 32 * 16 * 9;
  double bytes = (16.0 * 56 * 56 + 32.0 * 16 * 9 + 32 + 32.0 * 56 * 56) * 4;
  CHECK(rows[0]->cost.macs == macs);
  CHECK(rows[0]->theoretical.intensity == Approx(2 * macs / bytes));
}

TEST_CASE("group conv: depthwise has the lowest intensity and is memory bound", "[seed][scenarios]") {
  RunResult r = run_file("scenarios/group_conv_sweep.yaml");
  REQUIRE(r.points.size() == 6);  // groups 32, 16, 8, 4, 2, 1
  auto I = point_intensities(r, "rtx3080");
  for (size_t i = 1; i < I.size(); ++i) CHECK(I[i] > I[i - 1]);  // fewer groups, higher intensity
  const Row& dw = *rows_of(r, 0, "rtx3080").at(0);
  const Row& dense = *rows_of(r, 5, "rtx3080").at(0);
  // depthwise: 32 groups of one channel: MACs = 56·56·32·(32/32)·9
  CHECK(dw.cost.macs == 56.0 * 56 * 32 * 1 * 9);
  CHECK(dense.cost.macs == 56.0 * 56 * 32 * 32 * 9);
  CHECK(dw.cost.params == 32.0 * 1 * 9 + 32);  // weights + bias
  // RTX 3080 ridge is 29.8e12 / 760.32e9 = 39.19 FLOP/B: depthwise far below it, dense above
  CHECK(dw.theoretical.bound == Bound::Memory);
  CHECK(dense.theoretical.bound == Bound::Compute);
  CHECK(dw.theoretical.intensity < 39.19 / 10);
  CHECK(dense.theoretical.intensity > 39.19);
}

TEST_CASE("reshape: each copying reshape adds bytes, no FLOPs, and lowers intensity", "[seed][scenarios]") {
  RunResult r = run_file("scenarios/reshape_sweep.yaml");
  REQUIRE(r.points.size() == 3);  // 0, 3, 5 reshapes
  const SummaryRow& s0 = summary_of(r, 0, "rtx3080");
  const SummaryRow& s3 = summary_of(r, 1, "rtx3080");
  const SummaryRow& s5 = summary_of(r, 2, "rtx3080");
  CHECK(s0.flops == s3.flops);
  CHECK(s3.flops == s5.flops);
  CHECK(s0.layers == 6);
  CHECK(s3.layers == 9);
  CHECK(s5.layers == 11);
  double reshape_bytes = 2 * 64.0 * 56 * 56 * 4;  // reads and writes one 1×64×56×56 fp32 tensor
  CHECK(s3.bytes - s0.bytes == Approx(3 * reshape_bytes));
  CHECK(s5.bytes - s0.bytes == Approx(5 * reshape_bytes));
  CHECK(s0.intensity > s3.intensity);
  CHECK(s3.intensity > s5.intensity);
}

TEST_CASE("fully connected: about 0.25 MAC per byte at batch 1, memory bound", "[seed][scenarios]") {
  RunResult r = run_file("scenarios/fc_sweep.yaml");
  for (size_t p = 0; p < r.points.size(); ++p) {
    const auto& b = r.points[p].bindings;
    REQUIRE(b[0].first == "batch");
    if (b[0].second != "1") continue;
    for (const Row& row : r.results[p].rows) {
      double c = std::stod(b[1].second);
      // MACs = Cin·Cout; bytes = (Cin·Cout + Cout (bias) + Cin (input) + Cout (output)) · 4
      CHECK(row.cost.macs == c * c);
      CHECK(row.bytes == (c * c + c + c + c) * 4);
      CHECK(row.cost.macs / row.bytes == Approx(0.25).epsilon(0.02));
      CHECK(row.theoretical.bound == Bound::Memory);
      CHECK(row.derated.bound == Bound::Memory);
    }
  }
  // batching reuses the weights: intensity rises with batch at 4096 features
  double i1 = 0, i64 = 0;
  for (size_t p = 0; p < r.points.size(); ++p) {
    const auto& b = r.points[p].bindings;
    if (b[1].second != "4096") continue;
    if (b[0].second == "1") i1 = summary_of(r, p, "rtx3080").intensity;
    if (b[0].second == "64") i64 = summary_of(r, p, "rtx3080").intensity;
  }
  CHECK(i64 > 30 * i1);
}

namespace {
const Row& layer(const RunResult& r, size_t point, const std::string& name) {
  for (const Row& row : r.results.at(point).rows)
    if (row.layer == name) return row;
  throw std::runtime_error("no layer " + name);
}
}  // namespace

TEST_CASE("what-if: AVX-512 clock drop on 2 × Xeon Silver 4210 moves a layer across the ridge", "[seed][whatif]") {
  RunResult r = run_file("scenarios/avx512_clock_whatif.yaml");
  REQUIRE(r.points.size() == 4);  // 2.2, 2.0, 1.8, 1.5 GHz
  const Row& at22 = layer(r, 0, "g4");
  const Row& at15 = layer(r, 3, "g4");
  CHECK(at22.derated.peak_flops_per_s == Approx(2 * 10 * 2.2e9 * 16 * 2));  // 1408 GFLOP/s
  CHECK(at15.derated.peak_flops_per_s == Approx(2 * 10 * 1.5e9 * 16 * 2));  // 960 GFLOP/s
  CHECK(at15.derated.bandwidth_bytes_per_s == Approx(2400e6 * 64 / 8 * 4));  // 76.8 GB/s
  // groups = 4: MACs = 56·56·32·(32/4)·9; bytes = (2·32·56·56 + 32·8·9 + 32)·4
  double flops = 2.0 * 56 * 56 * 32 * 8 * 9, bytes = (2.0 * 32 * 56 * 56 + 32 * 8 * 9 + 32) * 4;
  CHECK(at22.theoretical.intensity == Approx(flops / bytes));
  REQUIRE(flops / bytes < 1408e9 / 76.8e9);  // below the 2.2 GHz ridge (18.33) ...
  REQUIRE(flops / bytes > 960e9 / 76.8e9);   // ... above the 1.5 GHz ridge (12.5)
  CHECK(at22.derated.bound == Bound::Memory);
  CHECK(at15.derated.bound == Bound::Compute);
  CHECK(summary_of(r, 3, at15.platform).derated_time_s > summary_of(r, 0, at22.platform).derated_time_s);
}

TEST_CASE("what-if: seed-002 bandwidth fraction 96 → 74 GB/s", "[seed][whatif]") {
  RunResult r = run_file("scenarios/bandwidth_fraction_whatif.yaml");
  REQUIRE(r.points.size() == 5);  // 1.0 … 0.77
  const Row& full = layer(r, 0, "pw");
  const Row& low = layer(r, 4, "pw");
  CHECK(full.derated.peak_flops_per_s == Approx(16 * 2.9e9 * 16 * 2 * 2));  // 2969.6 GFLOP/s
  CHECK(low.derated.bandwidth_bytes_per_s == Approx(96e9 * 0.77));           // 73.92 GB/s
  // pointwise 128→128 on 56×56: 2·3136·128·128 FLOPs over (2·128·3136 + 128·128 + 128)·4 bytes
  double I = 2.0 * 3136 * 128 * 128 / ((2.0 * 128 * 3136 + 128 * 128 + 128) * 4);
  CHECK(full.theoretical.intensity == Approx(I));
  CHECK(full.derated.bound == Bound::Compute);  // I = 31.4 > 2969.6 / 96 = 30.9
  CHECK(low.derated.bound == Bound::Memory);    // I = 31.4 < 2969.6 / 73.92 = 40.2
  // a memory-bound layer's time scales with 1 / fraction
  CHECK(layer(r, 4, "dw").derated.time_s == Approx(layer(r, 0, "dw").derated.time_s / 0.77));
}
