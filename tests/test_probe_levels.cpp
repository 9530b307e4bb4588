// The probe's level detection on a real cache-less VM's curve (issue 42, item 5).
#include <catch2/catch.hpp>

#include "measure/plateau.hpp"

using namespace rsim::measure;

TEST_CASE("probe levels: a 2-vCPU EPYC VM without sysfs cache folders", "[probe]") {
  // The single-thread read curve the issue quotes (working set → GB/s), with the only hint the VM
  // gives: sysconf's bogus 508 MiB L3. The levels: L1 to ~46 K at ~430, L2 64 K–741 K at ~165,
  // L3 1–12 M at ~100, DRAM ~35 GB/s (the 16.8–134 M points are the fall from the L3 to DRAM).
  const double K = 1e3, M = 1e6, G = 1e9;
  const std::vector<std::pair<double, double>> pts = {
      {8 * K, 420}, {16 * K, 430}, {32 * K, 430}, {46 * K, 436}, {64 * K, 159}, {131 * K, 163}, {262 * K, 167}, {524 * K, 219},
      {741 * K, 202}, {1.0 * M, 123}, {1.5 * M, 103}, {2.1 * M, 107}, {3.0 * M, 101}, {4.2 * M, 108}, {5.9 * M, 101}, {8.4 * M, 97},
      {11.9 * M, 97}, {16.8 * M, 84}, {23.7 * M, 63}, {33.6 * M, 52}, {47.5 * M, 47}, {67 * M, 40}, {95 * M, 42}, {134 * M, 39},
      {190 * M, 33}, {268 * M, 32}, {380 * M, 34}, {537 * M, 35}, {759 * M, 37}, {1.07 * G, 36}, {2.13 * G, 34}};
  std::vector<CurvePoint> curve;
  for (const auto& [ws, gbs] : pts) curve.push_back({ws, gbs * 1e9});
  const LevelDetection d = detect_levels(curve, {{"L3", 508.0 * 1024 * 1024, "sysconf"}});
  std::string seen;
  for (const auto& p : d.plateaus) seen += p.level + " " + std::to_string(p.from_bytes) + "-" + std::to_string(p.to_bytes) + " " + std::to_string(p.bytes_per_s / 1e9) + "\n";
  INFO(seen);
  // Before: one hint made one cache level (64 K–11.9 M "L1" at 167 GB/s) and the 8–46 K plateau was
  // lost. Now: L1 up to 46 K at its best point, 436; L2 from 64 K; DRAM the best point past 4 × the
  // largest cache, 37 GB/s. Still wrong (issue 42, item 5, open): the L2 reaches to 11.9 M (the 1–12 M
  // plateau at ~100 merged into it) and the 34–134 M fall to DRAM is taken for an L3 at ~50.
  REQUIRE(d.plateaus.size() == 4);
  CHECK(d.plateaus[0].level == "L1");
  CHECK(d.plateaus[0].from_bytes == 8 * K);
  CHECK(d.plateaus[0].to_bytes == 46 * K);
  CHECK(d.plateaus[0].bytes_per_s == 436e9);
  CHECK(d.plateaus[1].level == "L2");
  CHECK(d.plateaus[1].from_bytes == 64 * K);
  CHECK(d.plateaus[3].level == "DRAM");
  CHECK(d.plateaus[3].bytes_per_s == 37e9);
}
