// Whole models written with blocks: counts pinned to the reference implementations.
#include <catch2/catch.hpp>

#include "helpers.hpp"

using namespace rsim;
using namespace rsim::test;

TEST_CASE("ResNet-50 fits on a page and matches torchvision", "[models]") {
  RunResult r = run_file("scenarios/resnet50.yaml");
  const SummaryRow& s = summary_of(r, 0, "rtx3080");
  CHECK(s.params == 25557032);  // torchvision.models.resnet50().parameters(), BN γ/β included
  // the usual published count is 4.1 G multiply-accumulates (conv + fc)
  CHECK(s.macs > 4.05e9);
  CHECK(s.macs < 4.15e9);
  // stem conv by hand: 112·112 outputs × 64 channels × 3·7·7 MACs
  const Row& stem = *rows_of(r, 0, "rtx3080").at(0);
  CHECK(stem.output_shapes == "1x64x112x112");
  CHECK(stem.cost.macs == 112.0 * 112 * 64 * 3 * 7 * 7);
  // the projection shortcut exists only in the first block of each stage: 4 of them
  int downs = 0;
  for (const Row* row : rows_of(r, 0, "rtx3080")) downs += row->layer.size() > 5 && row->layer.substr(row->layer.size() - 5) == ".down";
  CHECK(downs == 4);
  CHECK(rows_of(r, 0, "rtx3080").back()->output_shapes == "1x1000");
}
