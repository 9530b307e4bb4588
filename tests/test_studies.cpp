// The what-if studies: each README conclusion, checked from rsim's numbers. Where a number can be
// derived by hand (ridges, byte savings), the test derives it; the rest are the README's figures.
#include <catch2/catch.hpp>
#include <set>

#include "helpers.hpp"

using namespace rsim;
using namespace rsim::test;

namespace {
const SummaryRow& total(const RunResult& r, size_t point, const std::string& platform, const std::string& network) {
  for (const auto& s : r.results.at(point).summary)
    if (s.platform == platform && s.network == network) return s;
  throw std::runtime_error("no summary " + platform + "/" + network);
}
}  // namespace

TEST_CASE("study: the AVX-512 clock drop on ResNet-50 (2 × Xeon Silver 4210)", "[studies]") {
  RunResult r = run_file("scenarios/study_avx512_resnet50.yaml");
  // ridges against 76.8 GB/s: 1408 / 76.8 = 18.33 at 2.2 GHz, 960 / 76.8 = 12.5 at 1.5 GHz
  double hi = 1408e9 / 76.8e9, lo = 960e9 / 76.8e9;
  std::set<std::string> changed, between;
  for (size_t i = 0; i < r.results[0].rows.size(); ++i) {
    const Row& a = r.results[0].rows[i];
    const Row& b = r.results[1].rows[i];
    if (a.derated.bound != b.derated.bound) changed.insert(a.layer);
    if (a.theoretical.intensity > lo && a.theoretical.intensity <= hi) between.insert(a.layer);
  }
  CHECK(changed == between);  // exactly the layers between the two ridges change bound
  CHECK(changed == std::set<std::string>{"layer1.0.conv1"});  // README: one layer, at 15.8 FLOP/byte
  double t22 = total(r, 0, "xeon_silver_4210_2s@2.2GHz", "resnet50").derated_time_s;
  double t15 = total(r, 1, "xeon_silver_4210_2s@1.5GHz", "resnet50").derated_time_s;
  CHECK(t22 == Approx(9.00e-3).epsilon(0.01));  // README: 9.0 ms → 11.7 ms, +30 %
  CHECK(t15 == Approx(11.71e-3).epsilon(0.01));
  CHECK(t15 / t22 == Approx(1.30).epsilon(0.01));
}

TEST_CASE("study: clock × bandwidth on seed 002's 16-core machine", "[studies]") {
  RunResult r = run_file("scenarios/study_avx512_16core_grid.yaml");
  REQUIRE(r.points.size() == 9);  // 3 clocks × 3 bandwidths; point 0 = 4.5 GHz, 96 GB/s
  auto t = [&](size_t p) { return r.results[p].summary.at(0).derated_time_s; };
  // README: 4.83 ms → 5.53 (clock only, +15 %), 6.02 (bandwidth only, +25 %), 6.57 (both, +36 %)
  CHECK(t(0) == Approx(4.831e-3).epsilon(0.01));
  CHECK(t(6) / t(0) == Approx(1.145).epsilon(0.01));
  CHECK(t(2) / t(0) == Approx(1.246).epsilon(0.01));
  CHECK(t(8) / t(0) == Approx(1.36).epsilon(0.01));
  CHECK(t(8) < t(2) + t(6) - t(0) + 1e-12);  // the two losses overlap: less than their sum
}

TEST_CASE("study: batch size barely helps when activations dominate the bytes", "[studies]") {
  RunResult r = run_file("scenarios/study_batch.yaml");
  REQUIRE(r.points.size() == 9);  // batch 1 … 256
  const SummaryRow& rn1 = total(r, 0, "rtx3080", "resnet50");
  const SummaryRow& rn256 = total(r, 8, "rtx3080", "resnet50");
  const SummaryRow& mb1 = total(r, 0, "rtx3080", "mobilenet_v2");
  const SummaryRow& mb256 = total(r, 8, "rtx3080", "mobilenet_v2");
  // README: ResNet-50 19.3 → 25.4 FLOP/byte; MobileNet V2 3.6 → 3.95; time per image −7 % each
  CHECK(rn1.intensity == Approx(19.3).epsilon(0.01));
  CHECK(rn256.intensity == Approx(25.4).epsilon(0.01));
  CHECK(mb1.intensity == Approx(3.63).epsilon(0.01));
  CHECK(mb256.intensity == Approx(3.95).epsilon(0.01));
  double rn_gain = (rn256.derated_time_s / 256) / rn1.derated_time_s;
  double mb_gain = (mb256.derated_time_s / 256) / mb1.derated_time_s;
  CHECK(rn_gain == Approx(0.93).epsilon(0.02));
  CHECK(mb_gain == Approx(0.93).epsilon(0.02));
  CHECK(rn256.batch == 256);
}

TEST_CASE("study: VGG16 and MobileNet V1 on five GPUs (seed 001 extended)", "[studies]") {
  RunResult r = run_file("scenarios/study_platforms.yaml");
  // seed 001 convention (MAC = FLOP, weights + outputs), every layer counted
  const SummaryRow& vgg = total(r, 0, "gtx1080ti", "vgg16");
  const SummaryRow& mob = total(r, 0, "gtx1080ti", "mobilenet_v1");
  CHECK(vgg.intensity == Approx(23.2).epsilon(0.01));  // README: 23.2, a hair under the 1080 Ti's 23.35
  CHECK(vgg.intensity < 11.3e12 / 484e9);
  CHECK(mob.intensity == Approx(7.53).epsilon(0.01));  // seed 001's ≈ 7
  // every platform: MobileNet V1 under the ridge, and it runs VGG16 at least 7× faster
  for (const char* p : {"gtx1080ti", "rtx3080", "v100", "a100_sxm_80gb", "h100_sxm"}) {
    INFO(p);
    CHECK(total(r, 0, p, "vgg16").derated_time_s / total(r, 0, p, "mobilenet_v1").derated_time_s > 7);
  }
  // README: VGG16 2.52 ms on the 1080 Ti → 0.43 ms on the H100 (5.9×)
  CHECK(vgg.derated_time_s == Approx(2.524e-3).epsilon(0.01));
  CHECK(vgg.derated_time_s / total(r, 0, "h100_sxm", "vgg16").derated_time_s == Approx(5.9).epsilon(0.02));
}

TEST_CASE("study: fusion halves ResNet-50's bytes and cuts MobileNet V2's by 60 %", "[studies]") {
  RunResult r = run_file("scenarios/study_fusion.yaml");
  const SummaryRow& rn = total(r, 0, "rtx3080_launch5us", "resnet50");
  const SummaryRow& rno = total(r, 0, "rtx3080_launch5us", "resnet50.optimized");
  const SummaryRow& mb = total(r, 0, "rtx3080_launch5us", "mobilenet_v2");
  const SummaryRow& mbo = total(r, 0, "rtx3080_launch5us", "mobilenet_v2.optimized");
  // README: ResNet-50 426 → 216 MB, 174 → 56 kernels, 1.51 → 0.64 ms on the GPU with 5 µs launches
  CHECK(rno.bytes / rn.bytes == Approx(0.506).epsilon(0.01));
  CHECK(rn.kernels == 174);
  CHECK(rno.kernels == 56);
  CHECK(rn.derated_time_s == Approx(1.514e-3).epsilon(0.01));
  CHECK(rno.derated_time_s == Approx(0.641e-3).epsilon(0.01));
  // MobileNet V2: 173 → 69 MB, 151 → 54 kernels, 0.98 → 0.36 ms
  CHECK(mbo.bytes / mb.bytes == Approx(0.398).epsilon(0.01));
  CHECK(mbo.kernels == 54);
  CHECK(mb.derated_time_s / mbo.derated_time_s == Approx(2.72).epsilon(0.02));
  // launches alone: 5 µs × (174 − 56) kernels saved on ResNet-50
  CHECK((rn.kernels - rno.kernels) * 5e-6 == Approx(0.59e-3));
  // on the CPU (no launch cost): ResNet-50 11.7 → 8.7 ms
  CHECK(total(r, 0, "xeon_silver_4210_2s", "resnet50.optimized").derated_time_s == Approx(8.70e-3).epsilon(0.01));
}

TEST_CASE("study: doubling bandwidth moves 11 YOLOv5s layers to compute bound", "[studies]") {
  RunResult r = run_file("scenarios/study_bandwidth_upgrade.yaml");
  double ridge1 = 29.8e12 / 760.32e9, ridge2 = ridge1 / 2;  // 39.2 → 19.6 FLOP/byte
  int crossed = 0, between = 0;
  for (size_t i = 0; i < r.results[0].rows.size(); ++i) {
    const Row& a = r.results[0].rows[i];
    const Row& b = r.results[2].rows[i];
    crossed += a.theoretical.bound == Bound::Memory && b.theoretical.bound == Bound::Compute;
    between += a.theoretical.intensity > ridge2 && a.theoretical.intensity <= ridge1;
  }
  CHECK(crossed == between);
  CHECK(crossed == 11);  // README
  double t1 = r.results[0].summary.at(0).time_s, t2 = r.results[2].summary.at(0).time_s;
  CHECK(t1 == Approx(1.249e-3).epsilon(0.01));  // README: 1.25 → 0.88 ms (−30 %)
  CHECK(t2 / t1 == Approx(0.705).epsilon(0.01));
}
