// The what-if studies: each README conclusion, checked against the reference networks of
// tests/reference_nets.hpp (written from the papers, independent of rsim's model files and cost
// code) and the platforms' datasheet figures. The README's rounded figures are checked against the
// reference's, so a README that drifts from the arithmetic fails too.
#include <catch2/catch.hpp>
#include <set>

#include "helpers.hpp"
#include "reference_nets.hpp"

using namespace rsim;
using namespace rsim::test;

namespace {
const SummaryRow& total(const RunResult& r, size_t point, const std::string& platform, const std::string& network) {
  for (const auto& s : r.results.at(point).summary)
    if (s.platform == platform && s.network == network) return s;
  throw std::runtime_error("no summary " + platform + "/" + network);
}
// kernels as written: every layer but the views (flatten, dropout)
double kernels(const ref::Net& n) { return static_cast<double>(n.layers.size()); }
}  // namespace

TEST_CASE("reference networks: the published totals", "[studies]") {
  // the reference networks themselves against the usual published counts (conv + linear MACs)
  CHECK(ref::resnet50().macs() == Approx(4.089e9).epsilon(0.001));  // 4.09 G (torchvision's 4.1 GMACs)
  CHECK(ref::vgg16().macs() == Approx(15.47e9).epsilon(0.001));
  CHECK(ref::mobilenet_v1().macs() == Approx(569e6).epsilon(0.002));  // Howard et al.: 569 M mult-adds
  CHECK(ref::mobilenet_v2().macs() == Approx(300e6).epsilon(0.01));  // Sandler et al.: 300 M
  // ResNet-50's kernels as written: 53 convs (1 stem, 16 blocks × 3, 4 projections), 53 BN,
  // 49 ReLU (stem and 3 per block), 16 adds, max pool, average pool, fc = 174
  CHECK(kernels(ref::resnet50()) == 53 + 53 + 49 + 16 + 3);
  // fused: each conv with its BN, ReLU and add is one kernel; plus the two pools and fc = 56
  CHECK(ref::resnet50().kernels.size() == 53 + 3);
  // MobileNet V2: 52 convs (stem, 17 blocks: 2 in the first, 3 in the others, conv_last), 52 BN,
  // 35 ReLU6 (stem, 1 + 16 × 2 in the blocks, last), 10 adds (1 + 2 + 3 + 2 + 2), 2 pools+fc = 151
  CHECK(kernels(ref::mobilenet_v2()) == 52 + 52 + 35 + 10 + 2);
  CHECK(ref::mobilenet_v2().kernels.size() == 52 + 2);
}

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
  // by hand: only layer1.0.conv1 (1×1, 64 → 64 at 56×56) lies between them:
  // 2·56·56·64·64 = 25,690,112 FLOPs over (56·56·64 in + 64·64 weights + 56·56·64 out)·4 =
  // 1,622,016 bytes = 15.84 FLOP/byte (README: one layer, at 15.8)
  ref::Net rn = ref::resnet50();
  std::set<std::string> between_ref;
  for (const ref::Work& l : rn.layers)
    if (l.flops() / l.bytes() > lo && l.flops() / l.bytes() <= hi) between_ref.insert(l.name);
  CHECK(between_ref == std::set<std::string>{"layer1.0.conv1"});
  CHECK(changed == between_ref);
  // the totals: every layer's max(FLOPs / peak, bytes / 76.8 GB/s), summed
  double ref22 = rn.time(1408e9, 76.8e9), ref15 = rn.time(960e9, 76.8e9);
  const SummaryRow& s22 = total(r, 0, "xeon_silver_4210_2s@2.2GHz", "resnet50");
  const SummaryRow& s15 = total(r, 1, "xeon_silver_4210_2s@1.5GHz", "resnet50");
  CHECK(s22.flops == rn.flops());
  CHECK(s22.bytes == rn.bytes());
  CHECK(s22.derated_time_s == Approx(ref22).epsilon(1e-12));
  CHECK(s15.derated_time_s == Approx(ref15).epsilon(1e-12));
  CHECK(ref22 == Approx(9.0e-3).epsilon(0.01));  // README: 9.0 ms → 11.7 ms, +30 %
  CHECK(ref15 == Approx(11.7e-3).epsilon(0.01));
  CHECK(ref15 / ref22 == Approx(1.30).epsilon(0.01));
}

TEST_CASE("study: clock × bandwidth on seed 002's 16-core machine", "[studies]") {
  RunResult r = run_file("scenarios/study_avx512_16core_grid.yaml");
  REQUIRE(r.points.size() == 9);  // 3 clocks × 3 bandwidths; point 0 = 4.5 GHz, 96 GB/s
  auto t = [&](size_t p) { return r.results[p].summary.at(0).derated_time_s; };
  // the roofs by hand: 16 cores × clock × 16 lanes × 2 FMA pipes × 2 FLOPs = 1024 × clock GFLOP/s
  // (4608 at 4.5 GHz, 2969.6 at 2.9); bandwidth as swept
  ref::Net rn = ref::resnet50();
  auto ref = [&](double ghz, double gbs) { return rn.time(1024e9 * ghz, gbs * 1e9); };
  CHECK(t(0) == Approx(ref(4.5, 96)).epsilon(1e-12));
  CHECK(t(2) == Approx(ref(4.5, 74)).epsilon(1e-12));
  CHECK(t(6) == Approx(ref(2.9, 96)).epsilon(1e-12));
  CHECK(t(8) == Approx(ref(2.9, 74)).epsilon(1e-12));
  // README: 4.83 ms → 5.53 (clock only, +15 %), 6.02 (bandwidth only, +25 %), 6.57 (both, +36 %)
  CHECK(ref(4.5, 96) == Approx(4.83e-3).epsilon(0.01));
  CHECK(ref(2.9, 96) / ref(4.5, 96) == Approx(1.145).epsilon(0.01));
  CHECK(ref(4.5, 74) / ref(4.5, 96) == Approx(1.246).epsilon(0.01));
  CHECK(ref(2.9, 74) / ref(4.5, 96) == Approx(1.36).epsilon(0.01));
  CHECK(t(8) < t(2) + t(6) - t(0) + 1e-12);  // the two losses overlap: less than their sum
}

TEST_CASE("study: batch size barely helps when activations dominate the bytes", "[studies]") {
  RunResult r = run_file("scenarios/study_batch.yaml");
  REQUIRE(r.points.size() == 9);  // batch 1 … 256
  const SummaryRow& rn1 = total(r, 0, "rtx3080", "resnet50");
  const SummaryRow& rn256 = total(r, 8, "rtx3080", "resnet50");
  const SummaryRow& mb1 = total(r, 0, "rtx3080", "mobilenet_v2");
  const SummaryRow& mb256 = total(r, 8, "rtx3080", "mobilenet_v2");
  ref::Net r1 = ref::resnet50(1), r256 = ref::resnet50(256), m1 = ref::mobilenet_v2(1), m256 = ref::mobilenet_v2(256);
  CHECK(rn1.intensity == Approx(r1.flops() / r1.bytes()).epsilon(1e-12));
  CHECK(rn256.intensity == Approx(r256.flops() / r256.bytes()).epsilon(1e-12));
  CHECK(mb1.intensity == Approx(m1.flops() / m1.bytes()).epsilon(1e-12));
  CHECK(mb256.intensity == Approx(m256.flops() / m256.bytes()).epsilon(1e-12));
  // README: ResNet-50 19.3 → 25.4 FLOP/byte; MobileNet V2 3.6 → 3.95; time per image −7 % each
  CHECK(r1.flops() / r1.bytes() == Approx(19.3).epsilon(0.01));
  CHECK(r256.flops() / r256.bytes() == Approx(25.4).epsilon(0.01));
  CHECK(m1.flops() / m1.bytes() == Approx(3.63).epsilon(0.01));
  CHECK(m256.flops() / m256.bytes() == Approx(3.95).epsilon(0.01));
  // RTX 3080 (29.8 TFLOP/s, 760.32 GB/s, launches not charged here)
  CHECK(rn1.derated_time_s == Approx(r1.time(29.8e12, 760.32e9)).epsilon(1e-12));
  CHECK(rn256.derated_time_s == Approx(r256.time(29.8e12, 760.32e9)).epsilon(1e-12));
  CHECK(mb256.derated_time_s == Approx(m256.time(29.8e12, 760.32e9)).epsilon(1e-12));
  double rn_gain = (r256.time(29.8e12, 760.32e9) / 256) / r1.time(29.8e12, 760.32e9);
  double mb_gain = (m256.time(29.8e12, 760.32e9) / 256) / m1.time(29.8e12, 760.32e9);
  CHECK(rn_gain == Approx(0.93).epsilon(0.02));
  CHECK(mb_gain == Approx(0.93).epsilon(0.02));
  CHECK(rn256.batch == 256);
}

TEST_CASE("study: VGG16 and MobileNet V1 on five GPUs (seed 001 extended)", "[studies]") {
  RunResult r = run_file("scenarios/study_platforms.yaml");
  // seed 001 convention (MAC = FLOP, weights + outputs), every layer counted
  const SummaryRow& vgg = total(r, 0, "gtx1080ti", "vgg16");
  const SummaryRow& mob = total(r, 0, "gtx1080ti", "mobilenet_v1");
  ref::Net v = ref::vgg16(), m = ref::mobilenet_v1();
  double v_int = v.flops(1) / v.bytes(true), m_int = m.flops(1) / m.bytes(true);
  CHECK(vgg.intensity == Approx(v_int).epsilon(1e-12));
  CHECK(mob.intensity == Approx(m_int).epsilon(1e-12));
  CHECK(v_int == Approx(23.2).epsilon(0.01));  // README: 23.2, a hair under the 1080 Ti's 23.35
  CHECK(v_int < 11.3e12 / 484e9);
  CHECK(m_int == Approx(7.53).epsilon(0.01));  // seed 001's ≈ 7
  // every platform: it runs MobileNet V1 at least 7× faster than VGG16
  for (const char* p : {"gtx1080ti", "rtx3080", "v100", "a100_sxm_80gb", "h100_sxm"}) {
    INFO(p);
    CHECK(total(r, 0, p, "vgg16").derated_time_s / total(r, 0, p, "mobilenet_v1").derated_time_s > 7);
  }
  // times with MAC = FLOP and weights + outputs as bytes, layer by layer
  auto t = [](const ref::Net& n, double peak, double bw) {
    return ref::Net::sum(n.layers, [&](const ref::Work& l) { return std::max(l.flops(1) / peak, l.bytes(true) / bw); });
  };
  double v1080 = t(v, 11.3e12, 484e9);
  double vh100 = t(v, 67e12, 3.35e12 * 0.85);  // H100 SXM: 67 TFLOP/s fp32; 3.35 TB/s derated to 85 %
  CHECK(vgg.derated_time_s == Approx(v1080).epsilon(1e-12));
  CHECK(total(r, 0, "h100_sxm", "vgg16").derated_time_s == Approx(vh100).epsilon(1e-12));
  CHECK(mob.derated_time_s == Approx(t(m, 11.3e12, 484e9)).epsilon(1e-12));
  // README: VGG16 2.52 ms on the 1080 Ti → 0.43 ms on the H100 (5.9×)
  CHECK(v1080 == Approx(2.52e-3).epsilon(0.01));
  CHECK(v1080 / vh100 == Approx(5.9).epsilon(0.02));
}

TEST_CASE("study: fusion halves ResNet-50's bytes and cuts MobileNet V2's by 60 %", "[studies]") {
  RunResult r = run_file("scenarios/study_fusion.yaml");
  const SummaryRow& rn = total(r, 0, "rtx3080_launch5us", "resnet50");
  const SummaryRow& rno = total(r, 0, "rtx3080_launch5us", "resnet50.optimized");
  const SummaryRow& mb = total(r, 0, "rtx3080_launch5us", "mobilenet_v2");
  const SummaryRow& mbo = total(r, 0, "rtx3080_launch5us", "mobilenet_v2.optimized");
  ref::Net rr = ref::resnet50(), mr = ref::mobilenet_v2();
  // GPU: 29.8 TFLOP/s, 760.32 GB/s, 5 us per kernel launch
  const double P = 29.8e12, B = 760.32e9, L = 5e-6;
  CHECK(rn.bytes == rr.bytes());
  CHECK(rno.bytes == rr.fused_bytes());
  CHECK(rn.kernels == 174);  // derived in "reference networks" above
  CHECK(rno.kernels == 56);
  CHECK(rn.derated_time_s == Approx(rr.time(P, B, L)).epsilon(1e-12));
  CHECK(rno.derated_time_s == Approx(rr.fused_time(P, B, L)).epsilon(1e-12));
  CHECK(mb.bytes == mr.bytes());
  CHECK(mbo.bytes == mr.fused_bytes());
  CHECK(mbo.kernels == 54);
  CHECK(mb.derated_time_s == Approx(mr.time(P, B, L)).epsilon(1e-12));
  CHECK(mbo.derated_time_s == Approx(mr.fused_time(P, B, L)).epsilon(1e-12));
  // README: ResNet-50 426 → 216 MB, 174 → 56 kernels, 1.51 → 0.64 ms on the GPU with 5 µs launches
  CHECK(rr.bytes() == Approx(426e6).epsilon(0.005));
  CHECK(rr.fused_bytes() == Approx(216e6).epsilon(0.005));
  CHECK(rr.time(P, B, L) == Approx(1.51e-3).epsilon(0.01));
  CHECK(rr.fused_time(P, B, L) == Approx(0.64e-3).epsilon(0.01));
  // MobileNet V2: 173 → 69 MB, 151 → 54 kernels, 0.98 → 0.36 ms
  CHECK(mr.bytes() == Approx(173e6).epsilon(0.005));
  CHECK(mr.fused_bytes() == Approx(69e6).epsilon(0.01));
  CHECK(mr.time(P, B, L) == Approx(0.98e-3).epsilon(0.01));
  CHECK(mr.fused_time(P, B, L) == Approx(0.36e-3).epsilon(0.01));
  // launches alone: 5 µs × (174 − 56) kernels saved on ResNet-50 = 0.59 ms
  CHECK((rn.kernels - rno.kernels) * 5e-6 == Approx(0.59e-3));
  // on the CPU (960 GFLOP/s at the AVX-512 clock, 76.8 GB/s, no launch cost): ResNet-50 11.7 → 8.7 ms
  CHECK(total(r, 0, "xeon_silver_4210_2s", "resnet50.optimized").derated_time_s == Approx(rr.fused_time(960e9, 76.8e9)).epsilon(1e-12));
  CHECK(rr.fused_time(960e9, 76.8e9) == Approx(8.70e-3).epsilon(0.01));
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
