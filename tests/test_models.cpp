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

TEST_CASE("models are used by name, with arguments, and checked", "[models]") {
  std::string base = "name: t\nplatforms: [rtx3080]\nnetworks:\n";
  auto scen = [&](const std::string& nets) {
    Scenario s = parse_scenario(base + nets, src("scenarios/t.yaml"));  // resolves scenarios/models/
    return s;
  };
  RunResult b1 = run(scen("  - {model: resnet50}\n"));
  RunResult b8 = run(scen("  - {model: resnet50, name: rn50_b8, args: {batch: 8}}\n"));
  // batch 8 multiplies every layer's MACs by 8; the parameters stay
  CHECK(summary_of(b8, 0, "rtx3080").macs == 8 * summary_of(b1, 0, "rtx3080").macs);
  CHECK(summary_of(b8, 0, "rtx3080").params == summary_of(b1, 0, "rtx3080").params);
  CHECK(summary_of(b8, 0, "rtx3080").network == "rn50_b8");
  std::string unknown = error_of([&] { run(scen("  - {model: resnet5}\n")); });
  CHECK(unknown.find("scenarios/t.yaml:4:13: error: unknown model 'resnet5'") != std::string::npos);
  CHECK(unknown.find("note: did you mean 'resnet50'?") != std::string::npos);
  std::string arg = error_of([&] { run(scen("  - {model: resnet50, args: {batchsize: 8}}\n")); });
  CHECK(arg.find("error: model 'resnet50' has no parameter 'batchsize'") != std::string::npos);
  CHECK(arg.find("note: its parameters: batch, size") != std::string::npos);
}
