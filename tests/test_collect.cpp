// What the figures keep of a streamed run (plots/collect.hpp): every point's totals, and layer
// rows only where a chart reads them; past a threshold, one row per roofline marker cell
// (⌊1000 · log10⌋ of intensity and FLOP/s on both roofs, with platform, network, op, dtypes and
// bounds). Rows are built by hand here so that each cell is derived in the comments.
#include <catch2/catch.hpp>
#include <cmath>

#include "helpers.hpp"
#include "plots/charts.hpp"
#include "plots/collect.hpp"

using namespace rsim;
using namespace rsim::plots;
using namespace rsim::test;

namespace {

// A layer row at (intensity, FLOP/s) on both roofs; flops 0 → a point a roofline cannot draw.
Row row_at(const std::string& layer, double intensity, double flops_per_s) {
  Row r;
  r.platform = "rtx3080";
  r.network = "net";
  r.layer = layer;
  r.op = "conv2d";
  for (RoofPoint* rp : {&r.theoretical, &r.derated}) {
    rp->peak_flops_per_s = 29.8e12;
    rp->bandwidth_bytes_per_s = 760.32e9;
    rp->intensity = intensity;
    rp->attainable_flops_per_s = flops_per_s;
    rp->bound = flops_per_s > 0 ? Bound::Memory : Bound::None;
  }
  return r;
}

// The points of a one-layer run on the RTX 3080 (platforms, settings and totals from a real
// run), with the given rows.
struct Feed {
  RunResult template_run = run_text("name: t\nplatforms: [rtx3080]\nnetworks:\n  - name: net\n    input: [1, 8, 8, 8]\n    layers:\n      - {op: relu}\n");
  size_t index = 0;
  void into(FigureCollector& c, std::vector<Row> rows) {
    PointResult pr = template_run.results.front();
    pr.rows = std::move(rows);
    rsim::Point p;
    p.index = index++;
    c.consume(std::move(pr), p);
  }
};

}  // namespace

TEST_CASE("figure collector: past the threshold a row is kept only in a new marker cell", "[plots][collect]") {
  RunResult r;
  FigureCollector c(r, {}, 2);  // the default figures; thinning after 2 rows
  Feed feed;
  // point 0 is kept whole (the terminal table and the layers chart read it): A and B.
  // A: log10(10) = 1 → cell 1000; log10(1e12) = 12 → 12000.
  // B: log10(10.001) = 1.0000434 → ⌊1000.04⌋ = 1000: A's cell, kept anyway at point 0.
  feed.into(c, {row_at("A", 10, 1e12), row_at("B", 10.001, 1e12)});
  // point 1, 2 rows kept so far (= the threshold):
  // C: log10(10.002) = 1.0000869 → 1000; log10(1.001e12) = 12.000434 → 12000: A's cell, left out;
  // D: log10(10.1) = 1.0043214 → 1004: a new cell, kept;
  // E: 0 FLOPs, not drawable (cell INT32_MIN on both axes): new, kept.
  feed.into(c, {row_at("C", 10.002, 1.001e12), row_at("D", 10.1, 1e12), row_at("E", 0, 0)});
  // point 2: F like E (left out, counted as not drawable on both roofs), G in A's cell (left out)
  feed.into(c, {row_at("F", 0, 0), row_at("G", 10, 1e12)});
  REQUIRE(r.results.size() == 3);
  CHECK(r.results[0].rows.size() == 2);
  REQUIRE(r.results[1].rows.size() == 2);
  CHECK(r.results[1].rows[0].layer == "D");
  CHECK(r.results[1].rows[1].layer == "E");
  CHECK(r.results[2].rows.empty());
  CHECK(r.results[2].summary.size() == 1);  // the totals are always kept
  CHECK(c.total_rows() == 2 + 3 + 2);
  CHECK(c.kept_rows() == 2 + 2);
  REQUIRE(r.thinned.size() == 1);
  CHECK(r.thinned[0].platform == "rtx3080");
  CHECK(r.thinned[0].network == "net");
  CHECK(r.thinned[0].rows == 3);            // C, F, G
  CHECK(r.thinned[0].hidden == 1);          // F
  CHECK(r.thinned[0].hidden_derated == 1);  // F

  // The roofline counts what it does not draw: E (kept) and F (left out) have 0 FLOPs → 2; C and G
  // sit on A's marker → 2 more points.
  Scenario s = parse_scenario("name: t\nplatforms: [rtx3080]\nnetworks:\n  - name: net\n    input: [1, 8, 8, 8]\n    layers:\n      - {op: relu}\n", "t.yaml");
  PlotSpec spec;
  spec.kind = Kind::Roofline;
  auto figs = build_figures(spec, r, s);
  REQUIRE(figs.size() == 1);
  const std::string& sub = figs[0].figure.subtitle;
  CHECK(sub.find(" · 2 not drawn (0 FLOPs or 0 bytes) · 2 more points on drawn markers") != std::string::npos);
}

TEST_CASE("figure collector: rows a chart reads at every point are never left out", "[plots][collect]") {
  Feed feed;
  SECTION("a trend of one layer keeps that layer's rows") {
    RunResult r;
    PlotSpec t;
    t.kind = Kind::Trend;
    t.layer = "A";
    t.x = "c";
    FigureCollector c(r, {t}, 0);  // thinning from the first row
    feed.into(c, {row_at("A", 10, 1e12), row_at("B", 10, 1e12)});  // point 0: whole
    feed.into(c, {row_at("A", 10, 1e12), row_at("B", 10, 1e12)});  // A: read by the trend; B: A's cell
    REQUIRE(r.results[1].rows.size() == 1);
    CHECK(r.results[1].rows[0].layer == "A");
  }
  SECTION("labels: all keeps every row (each point has its label)") {
    RunResult r;
    PlotSpec roof;
    roof.kind = Kind::Roofline;
    roof.labels = "all";
    FigureCollector c(r, {roof}, 0);
    feed.into(c, {row_at("A", 10, 1e12)});
    feed.into(c, {row_at("A", 10, 1e12), row_at("B", 10, 1e12)});
    CHECK(r.results[1].rows.size() == 2);
    CHECK(r.thinned.empty());
  }
  SECTION("without a roofline of layers, rows past the first point are kept only for a trend that reads them") {
    RunResult r;
    PlotSpec roof;
    roof.kind = Kind::Roofline;
    roof.points = "networks";
    PlotSpec t;
    t.kind = Kind::Trend;
    t.layer = "A";
    t.x = "c";
    FigureCollector c(r, {roof, t});  // default threshold: nothing would be thinned for a roofline
    feed.into(c, {row_at("A", 10, 1e12), row_at("B", 20, 1e12)});
    feed.into(c, {row_at("A", 10, 1e12), row_at("B", 30, 1e12)});  // B: in a new cell, but nobody draws it
    REQUIRE(r.results[1].rows.size() == 1);
    CHECK(r.results[1].rows[0].layer == "A");
    CHECK(r.results[0].rows.size() == 2);  // the first point whole
  }
  SECTION("a layers chart of point 1 keeps point 1 whole") {
    RunResult r;
    PlotSpec l;
    l.kind = Kind::Layers;
    l.point = 1;
    FigureCollector c(r, {l}, 0);
    feed.into(c, {row_at("A", 10, 1e12)});
    feed.into(c, {row_at("A", 10, 1e12), row_at("B", 10, 1e12)});
    feed.into(c, {row_at("A", 10, 1e12)});
    CHECK(r.results[1].rows.size() == 2);
    CHECK(r.results[2].rows.empty());
  }
}

TEST_CASE("thin_line: per pixel column the first, lowest, highest and last point", "[plots][collect]") {
  Axis x;  // linear 0 … 10, 2 columns: [0, 5) and [5, 10]
  x.min = 0;
  x.max = 10;
  std::vector<P> pts;
  for (int i = 0; i < 100; ++i) pts.push_back({i / 10.0, i / 10.0});  // y = x, 100 points > 4 × 2 columns
  pts[20].y = 100;  // the highest of column 0, at x = 2
  pts[30].y = -5;   // the lowest of column 0, at x = 3
  std::vector<P> t = thin_line(pts, x, 2);
  // column 0 (i = 0 … 49, ⌊i / 50⌋ = 0): first i = 0, high i = 20, low i = 30, last i = 49, in x order;
  // column 1 (i = 50 … 99): first i = 50 (also its lowest), last i = 99 (also its highest)
  REQUIRE(t.size() == 6);
  const double want[6][2] = {{0, 0}, {2, 100}, {3, -5}, {4.9, 4.9}, {5, 5}, {9.9, 9.9}};
  for (size_t k = 0; k < 6; ++k) {
    CHECK(t[k].x == Approx(want[k][0]));
    CHECK(t[k].y == Approx(want[k][1]));
  }
  // at most 4 points per column (8 here): kept whole; out of x order: kept whole
  CHECK(thin_line(std::vector<P>(pts.begin(), pts.begin() + 8), x, 2).size() == 8);
  std::vector<P> unordered = pts;
  std::swap(unordered[0], unordered[1]);
  CHECK(thin_line(unordered, x, 2).size() == 100);
}

TEST_CASE("roofline: thousands of unlabelled markers on one pixel are drawn once", "[plots][collect]") {
  Feed feed;
  Scenario s = parse_scenario("name: t\nplatforms: [rtx3080]\nnetworks:\n  - name: net\n    input: [1, 8, 8, 8]\n    layers:\n      - {op: relu}\n", "t.yaml");
  PlotSpec spec;
  spec.kind = Kind::Roofline;
  auto markers_for = [&](int n) {
    RunResult r;
    FigureCollector c(r, {});
    std::vector<Row> rows;
    // intensities 10 · (1 + k · 1e-7): distinct points (merging needs a relative 1e-9), together
    // 2.2e-4 of a decade wide where a pixel is ~1e-3 of one (axes over ≥ 3 decades, ≤ 1350 px)
    for (int k = 0; k < n; ++k) rows.push_back(row_at("L" + std::to_string(k), 10 * (1 + k * 1e-7), 7.6032e12 * (1 + k * 1e-7)));
    feed.into(c, std::move(rows));
    auto figs = build_figures(spec, r, s);
    REQUIRE(figs.size() == 1);
    return figs[0].figure.points.size();
  };
  CHECK(markers_for(1500) == 1500 + 1);  // up to 2000 markers each is drawn (+ the ridge marker)
  size_t many = markers_for(2500);       // on one pixel, or two if the points straddle a pixel edge
  CHECK(many >= 1 + 1);
  CHECK(many <= 2 + 1);
}
