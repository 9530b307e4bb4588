// Figures that were wrong or silently empty for a first-time user (issue 13), and what a chart
// must never lose. Asserted on what the chart builders produce, through the recording renderer.
#include <catch2/catch.hpp>
#include <cmath>

#include "helpers.hpp"
#include "plots/charts.hpp"
#include "plots/draw.hpp"
#include "plots/recording_renderer.hpp"

using namespace rsim;
using namespace rsim::plots;
using namespace rsim::test;

namespace {

// Two fully connected networks (no bias) swept over batch on one GPU.
const char* kTwoNets = R"(name: t
sweep: {grid: {batch: [1, 2, 4]}}
platforms: [rtx3080]
networks:
  - {name: small, input: ["${batch}", 64], layers: [{name: fc, op: linear, out_features: 64, bias: false}]}
  - {name: big, input: ["${batch}", 256], layers: [{name: fc, op: linear, out_features: 256, bias: false}]}
)";

BuiltFigure build_one(const PlotSpec& spec, const RunResult& r, const Scenario& s) {
  auto figs = build_figures(spec, r, s);
  REQUIRE(figs.size() == 1);
  return figs.front();
}

[[maybe_unused]] bool has_text(const RecordingRenderer& r, const std::string& s) {
  for (const auto& t : r.texts)
    if (t.s == s) return true;
  return false;
}

}  // namespace

TEST_CASE("trend: network: keeps one network's totals; without it, one line per network", "[plots][defects]") {
  Scenario s = parse_scenario(kTwoNets, "t.yaml");
  RunResult r = run(s);
  PlotSpec t;
  t.kind = Kind::Trend;
  t.x = "batch";
  t.y = "time_s";
  t.series = "platform";
  t.network = "big";
  BuiltFigure b = build_one(t, r, s);
  REQUIRE(b.figure.lines.size() == 1);
  REQUIRE(b.figure.lines[0].pts.size() == 3);
  // big, batch 4: bytes = (4·256 in + 256·256 weights + 4·256 out)·4 = 270,336; memory bound at
  // 760.32 GB/s (2·4·256·256 = 524,288 FLOP take 17.6 ns at 29.8 TFLOP/s), plus one 5 us launch
  CHECK(b.figure.lines[0].pts[2].y == Approx((4 * 256 + 256 * 256 + 4 * 256) * 4.0 / 760.32e9 + 5e-6));
  t.network.clear();
  BuiltFigure both = build_one(t, r, s);
  REQUIRE(both.figure.lines.size() == 2);  // never one saw-tooth line through both networks
  for (const Line& l : both.figure.lines) CHECK(l.pts.size() == 3);
}

TEST_CASE("roofline: network: draws only that network's layers", "[plots][defects]") {
  Scenario s = parse_scenario(kTwoNets, "t.yaml");
  RunResult r = run(s);
  PlotSpec p;
  p.kind = Kind::Roofline;
  p.network = "small";
  p.labels = "none";
  BuiltFigure b = build_one(p, r, s);
  // 3 batch sizes × 1 layer of `small`; `big` would add 3 more
  size_t n = 0;
  for (const auto& pt : b.figure.points) n += pt.marker != Marker::Diamond;
  CHECK(n == 3);
  CHECK(b.figure.subtitle.find("small") != std::string::npos);
  CHECK(b.data_csv.find(",big,") == std::string::npos);
}

TEST_CASE("a plot naming a network the run lacks is a located error with a suggestion", "[plots][defects][errors]") {
  std::string yaml = std::string(kTwoNets) + "plots:\n  - {kind: trend, x: batch, y: time_s, network: bgi}\n";
  Scenario s = parse_scenario(yaml, "t.yaml");
  RunResult r = run(s);
  Diags d;
  auto specs = parse_plot_specs(s.plots, sweep_names(s.sweep), d);
  REQUIRE(d.empty());
  std::string e = error_of([&] { build_figures(specs[0], r, s); });
  CHECK(e ==
        "t.yaml:8:49: error: plot names network 'bgi', which this run does not evaluate\n"
        "  - {kind: trend, x: batch, y: time_s, network: bgi}\n"
        "                                                ^\n"
        "note: did you mean 'big'?\n");
}

TEST_CASE("heatmap over what-if variants with names of their own fills every cell", "[plots][defects]") {
  Scenario s = parse_scenario(R"(name: t
sweep: {grid: {c: [1, 2, 3, 4], bw: [100, 200, 300, 400, 500, 600]}}
platforms:
  - {base: rtx3080, name: "fast_${c}_${bw}", scale: {compute: "${c}", bandwidth: "${bw / 100}"}}
networks:
  - {name: n, input: [1, 64], layers: [{name: fc, op: linear, out_features: 64, bias: false}]}
)",
                              "t.yaml");
  RunResult r = run(s);
  PlotSpec h;
  h.kind = Kind::Heatmap;
  h.x = "c";
  h.layer = "bw";
  h.value = "time_s";
  BuiltFigure b = build_one(h, r, s);
  const Heatmap& m = *b.figure.heatmap;
  REQUIRE(m.values.size() == 6);
  int filled = 0;
  for (const auto& row : m.values)
    for (double v : row) filled += std::isfinite(v);
  CHECK(filled == 24);
  // c = 1, bw = 300: bytes (64 + 64·64 + 64)·4 = 16,896 over 3 × 760.32 GB/s, plus the 5 us launch
  CHECK(m.values[2][0] == Approx(16896 / (3 * 760.32e9) + 5e-6));
}
