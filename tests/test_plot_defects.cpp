// Figures that were wrong or silently empty for a first-time user (issue 13), and what a chart
// must never lose. Asserted on what the chart builders produce, through the recording renderer.
#include <catch2/catch.hpp>
#include <cmath>
#include <filesystem>

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

// The RTX 3080 roofline of a shipped scenario, built (not drawn)
BuiltFigure rtx3080_roofline(const std::string& scenario) {
  Scenario s = load_scenario(src(scenario));
  RunResult r = run(s);
  PlotSpec p;
  p.kind = Kind::Roofline;
  p.platforms = {"rtx3080"};
  return build_one(p, r, s);
}

// ResNet-50's roofline on the RTX 3080 (its ~20 compute-bound markers crowd the roof near the
// ridge), drawn into a recording renderer
struct Drawn {
  RecordingRenderer rec;
  DrawReport rep;
};
Drawn resnet50_roofline() {
  BuiltFigure b = rtx3080_roofline("scenarios/resnet50.yaml");
  Drawn d;
  d.rep = draw(b.figure, d.rec);
  return d;
}

}  // namespace

TEST_CASE("trend: network: keeps one network's totals, without it, one line per network", "[plots][defects]") {
  Scenario s = parse_scenario(kTwoNets, "t.yaml");
  RunResult r = run(s);
  PlotSpec t;
  t.kind = Kind::Trend;
  t.x = "batch";
  t.y = "time_s";
  t.series = "platform";
  t.networks = {"big"};
  BuiltFigure b = build_one(t, r, s);
  REQUIRE(b.figure.lines.size() == 1);
  REQUIRE(b.figure.lines[0].pts.size() == 3);
  // big, batch 4: bytes = (4·256 in + 256·256 weights + 4·256 out)·4 = 270,336; memory bound at
  // 760.32 GB/s (2·4·256·256 = 524,288 FLOP take 17.6 ns at 29.8 TFLOP/s), plus one 5 us launch
  CHECK(b.figure.lines[0].pts[2].y == Approx((4 * 256 + 256 * 256 + 4 * 256) * 4.0 / 760.32e9 + 5e-6));
  t.networks.clear();
  BuiltFigure both = build_one(t, r, s);
  REQUIRE(both.figure.lines.size() == 2);  // never one saw-tooth line through both networks
  for (const Line& l : both.figure.lines) CHECK(l.pts.size() == 3);
}

TEST_CASE("network: takes a list, and layers and heatmap draw a figure per network named", "[plots][defects]") {
  // from YAML, as a user writes it: a list of two on a trend, one name on a roofline
  Scenario s = parse_scenario(std::string(kTwoNets) +
                                  "plots:\n  - {kind: trend, x: batch, y: time_s, series: platform, network: [small, big]}\n"
                                  "  - {kind: layers, network: [small, big], point: 2}\n  - {kind: roofline, network: big, labels: none}\n",
                              "t.yaml");
  RunResult r = run(s);
  Diags d;
  std::vector<PlotSpec> specs = parse_plot_specs(s.plots, sweep_names(s.sweep), d);
  REQUIRE(d.empty());
  REQUIRE(specs.size() == 3);
  CHECK(specs[0].networks == std::vector<std::string>{"small", "big"});
  // the trend: one line per network (3 batch sizes each)
  BuiltFigure trend = build_one(specs[0], r, s);
  REQUIRE(trend.figure.lines.size() == 2);
  // the layers chart: a figure for each, its bar the network's one layer at batch 4 (point 2):
  // small: (4·64 + 64·64 + 4·64)·4 B = 18,432 B at 760.32 GB/s; big: (4·256 + 256·256 + 4·256)·4 B = 270,336 B
  auto layers = build_figures(specs[1], r, s);
  REQUIRE(layers.size() == 2);
  CHECK(layers[0].name == "layers_rtx3080_small");
  CHECK(layers[1].name == "layers_rtx3080_big");
  REQUIRE(layers[0].figure.bars.size() >= 1);
  REQUIRE(layers[1].figure.bars.size() >= 1);
  const double small_s = (4 * 64 + 64 * 64 + 4 * 64) * 4.0 / 760.32e9, big_s = (4 * 256 + 256 * 256 + 4 * 256) * 4.0 / 760.32e9;
  CHECK(layers[0].figure.bars[0].values.at(0) == Approx(small_s));
  CHECK(layers[1].figure.bars[0].values.at(0) == Approx(big_s));
  // an unknown name in the list is an error at that name: line 8 (kTwoNets is 6 lines, then plots:),
  // column 57 = 2 spaces + "- {" 3 + "kind: trend, " 13 + "x: batch, " 10 + "y: time_s, " 11 + "network: [" 10 + "small, " 7, plus 1
  Scenario bad = parse_scenario(std::string(kTwoNets) + "plots:\n  - {kind: trend, x: batch, y: time_s, network: [small, bog]}\n", "t.yaml");
  Diags d2;
  std::vector<PlotSpec> bs = parse_plot_specs(bad.plots, sweep_names(bad.sweep), d2);
  REQUIRE(bs.size() == 1);
  try {
    build_figures(bs[0], r, bad);
    FAIL("no error");
  } catch (const ConfigError& e) {
    CHECK(std::string(e.what()).find("t.yaml:8:57: error: plot names network 'bog'") != std::string::npos);
  }
}

TEST_CASE("platforms: the base name of a what-if entry selects its variants, on one roofline and in a trend", "[plots][defects]") {
  // rtx3080 and a what-if copy at half and a quarter of its compute, named per point
  Scenario s = parse_scenario("name: w\nsweep: {grid: {f: [0.5, 0.25]}}\n"
                              "platforms: [rtx3080, {base: rtx3080, name: \"slow@${f}\", scale: {compute: \"${f}\"}}]\n"
                              "networks:\n  - {name: n, input: [1, 64], layers: [{name: fc, op: linear, out_features: 64}]}\n",
                              "w.yaml");
  RunResult r = run(s);
  PlotSpec p;
  p.kind = Kind::Roofline;
  p.platforms = {"slow"};
  BuiltFigure b = build_one(p, r, s);  // one figure, both variants' roofs
  CHECK(b.name == "roofline_slow");
  // the compute roofs: 29.8 TFLOP/s × 0.5 and × 0.25 (fp32), one flat line each
  std::vector<double> peaks;
  for (const Line& l : b.figure.lines)
    if (l.pts.size() == 2 && l.pts[0].y == l.pts[1].y && l.style.dash == Dash::Solid) peaks.push_back(l.pts[0].y);
  std::sort(peaks.begin(), peaks.end());
  peaks.erase(std::unique(peaks.begin(), peaks.end()), peaks.end());
  REQUIRE(peaks.size() == 2);
  CHECK(peaks[0] == Approx(29.8e12 * 0.25));
  CHECK(peaks[1] == Approx(29.8e12 * 0.5));
  // a trend with the base name keeps the variants' series, not rtx3080's
  PlotSpec t;
  t.kind = Kind::Trend;
  t.x = "f";
  t.y = "time_s";
  t.series = "platform";
  t.platforms = {"slow"};
  BuiltFigure tb = build_one(t, r, s);
  REQUIRE(tb.figure.lines.size() == 1);
  CHECK(tb.figure.lines[0].pts.size() == 2);
}

TEST_CASE("roofline: network: draws only that network's layers", "[plots][defects]") {
  Scenario s = parse_scenario(kTwoNets, "t.yaml");
  RunResult r = run(s);
  PlotSpec p;
  p.kind = Kind::Roofline;
  p.networks = {"small"};
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

TEST_CASE("print: a paper roofline at 88 × 66 mm is a PDF page of that size with SVG <text> of 6 pt or more", "[plots][print]") {
  Scenario s = load_scenario(src("scenarios/resnet50.yaml"));
  RunResult r = run(s);
  CNode n = parse_yaml("- {kind: roofline, platforms: [rtx3080], style: paper, width: 88 mm, height: 66 mm}\n", "p.yaml");
  Diags d;
  auto specs = parse_plot_specs(n, {}, d);
  REQUIRE(d.empty());
  BuiltFigure b = build_one(specs[0], r, s);
  CHECK(b.figure.fixed_size);
  CHECK(b.figure.width == Approx(88 / 25.4 * 72));   // 249.45 pt
  CHECK(b.figure.height == Approx(66 / 25.4 * 72));  // 187.09 pt
  CHECK(b.figure.title.empty());                      // a paper figure's title is its caption
  RecordingRenderer rec;
  DrawReport rep = draw(b.figure, rec);
  CHECK(rec.width == Approx(88 / 25.4 * 72));  // the canvas never widens at a printed size
  CHECK(rec.height == Approx(66 / 25.4 * 72));
  for (const auto& t : rec.texts) {
    INFO(t.s);
    CHECK(t.size >= 6);
  }
  for (const Rect& t : rep.texts) CHECK(t.inside(rep.canvas));
  CairoRenderer pdf(Format::PDF), svg(Format::SVG);
  draw(b.figure, pdf);
  draw(b.figure, svg);
  CHECK(pdf.bytes().find("/MediaBox [ 0 0 249.448819 187.086614 ]") != std::string::npos);
  const std::string& x = svg.bytes();
  CHECK(x.find("width=\"249.45pt\" height=\"187.09pt\" viewBox=\"0 0 249.45 187.09\"") != std::string::npos);
  CHECK(x.find("<text") != std::string::npos);
  CHECK(x.find(">Arithmetic intensity [FLOP/byte]</text>") != std::string::npos);
  CHECK(x.find("<glyph") == std::string::npos);  // no outlines standing in for text
  size_t texts = 0;
  for (size_t k = x.find("font-size=\""); k != std::string::npos; k = x.find("font-size=\"", k + 1)) {
    ++texts;
    CHECK(std::stod(x.substr(k + 11)) >= 6);
  }
  CHECK(texts == rec.texts.size());
}

TEST_CASE("print: sizes take units, styles and settings.figures give defaults, errors are located", "[plots][print]") {
  CNode n = parse_yaml(
      "- {kind: roofline, width: 3.5 in, height: 2.5 in, font_size: 7 pt}\n"
      "- {kind: roofline, width: 1600 px, dpi: 200}\n"
      "- {kind: roofline}\n",
      "p.yaml");
  Diags d;
  auto specs = parse_plot_specs(n, {}, d);
  REQUIRE(d.empty());
  CHECK(specs[0].width == Approx(3.5 * 72));
  CHECK(specs[0].height == Approx(2.5 * 72));
  CHECK(specs[0].font_size == 7);
  CHECK(specs[0].physical);
  CHECK(specs[1].width == Approx(1600 * 72 / 200.0));  // 1600 px at 200 dpi = 8 in = 576 pt
  CHECK_FALSE(specs[1].physical);
  CNode settings = parse_yaml("figures: {style: slides, font_size: 12}\n", "s.yaml");
  apply_figure_defaults(specs, settings, d);
  REQUIRE(d.empty());
  CHECK(specs[0].font_size == 7);  // a plot's own key wins
  CHECK(specs[2].style == "slides");
  CHECK(resolved(specs[2]).width == 720);  // 10 in: 16:9 slides
  CHECK(resolved(specs[2]).font_size == 12);
  CNode bad = parse_yaml("- {kind: roofline, width: 88 mn, style: papr}\n", "b.yaml");
  Diags e;
  parse_plot_specs(bad, {}, e);
  CHECK(ConfigError(e.list()).what() ==
        std::string("b.yaml:1:41: error: style cannot be 'papr'\n"
                    "- {kind: roofline, width: 88 mn, style: papr}\n"
                    "                                        ^\n"
                    "note: did you mean 'paper'?\n"
                    "b.yaml:1:27: error: width must be a length such as '88 mm', '3.5 in' or '1600 px', got '88 mn'\n"
                    "- {kind: roofline, width: 88 mn, style: papr}\n"
                    "                          ^\n"
                    "note: did you mean 'mm'?\n"));
}

TEST_CASE("a numbered key: every number in it is drawn at its point", "[plots][defects]") {
  auto [rec, rep] = resnet50_roofline();
  REQUIRE(rep.numbered > 24);
  for (int k = 1; k <= rep.numbered; ++k) {
    INFO("number " << k);
    CHECK(has_text(rec, std::to_string(k)));
  }
}

TEST_CASE("a number that must be drawn goes beside the markers, with a leader, before it goes over one", "[plots][defects]") {
  // Every numbered label of ResNet-50's roofline finds a spot clear of the markers within 150 pt (before, four of them were
  // printed over their neighbours' markers). A label box and a marker overlap when they share more
  // than 1 pt in both directions.
  auto [rec, rep] = resnet50_roofline();
  REQUIRE(rep.point_labels.size() > 20);
  int over = 0;
  for (const Rect& box : rep.point_labels)
    for (const auto& m : rec.markers) {
      const double h = m.size / 2;
      const double ox = std::min(box.x + box.w, m.at.x + h) - std::max(box.x, m.at.x - h);
      const double oy = std::min(box.y + box.h, m.at.y + h) - std::max(box.y, m.at.y - h);
      if (ox > 1 && oy > 1) ++over;
    }
  CHECK(over == 0);
}

TEST_CASE("every example scenario's figures, screen and paper: text inside the canvas, paper text ≥ 6 pt", "[plots][print][scenarios]") {
  for (const auto& e : std::filesystem::directory_iterator(src("scenarios"))) {
    if (e.path().extension() != ".yaml") continue;
    INFO(e.path().filename().string());
    Scenario s = load_scenario(e.path().string());
    RunResult r = run(s);
    Diags d;
    std::vector<PlotSpec> specs = s.plots.is_null() ? default_plot_specs(r, s) : parse_plot_specs(s.plots, sweep_names(s.sweep), d);
    REQUIRE(d.empty());
    for (const char* style : {"screen", "paper"})
      for (PlotSpec spec : specs) {
        spec.style = style;
        spec.given = {"style"};
        for (const BuiltFigure& b : build_figures(spec, r, s)) {
          INFO(style << " " << b.name);
          RecordingRenderer rec;
          DrawReport rep = draw(b.figure, rec);
          CHECK(rec.begins >= 1);
          CHECK(rec.ends == 1);
          for (const Rect& t : rep.texts) CHECK(t.inside(rep.canvas));
          if (std::string(style) == "paper") {
            CHECK(rec.width == Approx(88 / 25.4 * 72));
            for (const auto& t : rec.texts) CHECK(t.size >= 6);
          }
        }
      }
  }
}

TEST_CASE("titles, subtitles and legend entries of multi-byte text shorten until they fit (the loop ends)", "[plots][defects][print]") {
  // The old loop cut a text to 90 % of its BYTE count, counted as code points: a text of
  // two-byte characters (µ) or one ending in a three-byte ellipsis was never shortened, and the
  // layout looped for ever. Each step must now drop at least one code point.
  std::string mu;
  for (int i = 0; i < 80; ++i) mu += "µ";
  Figure f;
  f.width = 88 / 25.4 * 72;
  f.height = 66 / 25.4 * 72;
  f.fixed_size = true;
  f.font_size = 8;
  f.title = mu;
  f.subtitle = "…" + mu + "…";
  f.x.min = 1;
  f.x.max = 10;
  f.y.min = 1;
  f.y.max = 10;
  for (int i = 0; i < 6; ++i) {
    Line l;
    l.pts = {{1, 1.0 + i}, {10, 2.0 + i}};
    l.legend = "what-if variant with a long common prefix … " + mu + std::to_string(i);
    f.lines.push_back(l);
    f.legend.push_back(LegendEntry{l.legend, true, {}, false, Marker::Circle, {}});
  }
  RecordingRenderer rec;
  DrawReport rep = draw(f, rec);
  for (const Rect& t : rep.texts) CHECK(t.inside(rep.canvas));
  bool title_cut = false;
  for (const auto& t : rec.texts)
    if (t.s.rfind("µµ", 0) == 0 && t.s.size() > 3 && t.s.compare(t.s.size() - 3, 3, "…") == 0) title_cut = true;
  CHECK(title_cut);
}

TEST_CASE("ticks at swept powers of two are round: binary multiples, never '16.384 k'", "[plots][defects]") {
  Figure f;
  f.x.scale = Scale::Log;
  f.x.min = 800, f.x.max = 160000;
  f.x.ticks = {1024, 4096, 16384, 65536, 131072};  // 2^10 … 2^17, as a sweep over context lengths gives
  f.y.min = 0, f.y.max = 1;
  f.lines.push_back(Line{{{1024, 0.1}, {131072, 0.9}}, {}, "", "", 0.85, true, ""});
  RecordingRenderer rec;
  DrawReport rep = draw(f, rec);
  CHECK(has_text(rec, "1 Ki"));    // 1024 = 1 × 1024
  CHECK(has_text(rec, "16 Ki"));   // 16384 = 16 × 1024
  CHECK(has_text(rec, "128 Ki"));  // 131072 = 128 × 1024
  for (const auto& t : rec.texts) CHECK(t.s.find("16.384") == std::string::npos);
  // whole numbers that are not powers of two stay whole: 12288 = 12 × 1024 but 3000 is not
  Figure g = f;
  g.x.ticks = {3000, 12288, 100000};
  g.x.min = 2000;
  RecordingRenderer rec2;
  draw(g, rec2);
  CHECK(has_text(rec2, "12288"));
  CHECK(has_text(rec2, "100000"));
  // x tick labels never touch: on the log axis 64 Ki and 128 Ki crowd the right end of a
  // printed-size plot, and one of them gives way
  f.width = 88 / 25.4 * 72, f.height = 66 / 25.4 * 72, f.fixed_size = true, f.font_size = 8;
  RecordingRenderer rec3;
  DrawReport r3 = draw(f, rec3);
  std::vector<Rect> ticks;
  for (size_t i = 0; i < rec3.texts.size(); ++i)
    if (rec3.texts[i].s.find("Ki") != std::string::npos) ticks.push_back(r3.texts[i]);
  REQUIRE(ticks.size() >= 2);
  CHECK(has_text(rec3, "128 Ki"));  // the largest value keeps its label
  for (size_t i = 0; i < ticks.size(); ++i)
    for (size_t j = i + 1; j < ticks.size(); ++j) CHECK_FALSE(ticks[i].overlaps(ticks[j]));
}

TEST_CASE("heatmap values: one format in every cell and on the colour bar, the bar's unit matches its ticks", "[plots][defects]") {
  Figure f;
  Heatmap h;
  h.xcats = {"1", "2"};
  h.ycats = {"a", "b"};
  h.values = {{237, 1030}, {12.5, 0.5}};
  h.value_label = "Tokens";
  f.heatmap = h;
  f.grid = false;
  RecordingRenderer rec;
  draw(f, rec);
  // three significant digits, a k after a space, as on axis ticks, from a thousand on: 1030 = 1.03 k
  for (const char* s : {"237", "1.03 k", "12.5", "0.5"}) {
    INFO(s);
    CHECK(has_text(rec, s));
  }
  for (const auto& t : rec.texts) CHECK(t.s.find("e+") == std::string::npos);
  // a time in seconds from 3 µs to 2 ms: the bar's title says ms and its ticks are in ms
  Figure g;
  Heatmap t;
  t.xcats = {"1", "2"};
  t.ycats = {"a"};
  t.values = {{3e-6, 2e-3}};
  t.value_label = "Time [s]";
  t.value_unit = "s";
  t.log_colors = true;
  g.heatmap = t;
  g.grid = false;
  RecordingRenderer rec2;
  draw(g, rec2);
  CHECK(has_text(rec2, "Time [ms]"));
  CHECK(has_text(rec2, "0.003"));  // 3e-6 s = 0.003 ms
  CHECK(has_text(rec2, "2"));      // 2e-3 s = 2 ms
  CHECK(has_text(rec2, "0.01"));   // a colour-bar tick: 1e-5 s = 0.01 ms
  for (const auto& x : rec2.texts) CHECK(x.s.find("µs") == std::string::npos);
}

TEST_CASE("overlay of platforms: theoretical roofs in each platform's colour, ridges say whose, a printed legend keeps every entry", "[plots][defects][print]") {
  Scenario s = load_scenario(src("scenarios/study_platforms.yaml"));
  RunResult r = run(s);
  Diags d;
  std::vector<PlotSpec> specs = parse_plot_specs(s.plots, sweep_names(s.sweep), d);
  REQUIRE(d.empty());
  REQUIRE(specs.size() == 1);
  BuiltFigure b = build_one(specs[0], r, s);
  // the h100_sxm's theoretical roof (3.35 TB/s, dashed) is drawn in its own colour, lighter:
  // the same colour as its derated roof (solid), at 55 % opacity
  const Line* theo = nullptr;
  const Line* der = nullptr;
  for (const Line& l : b.figure.lines) {
    if (l.label.find("HBM3 3.35 TB/s") != std::string::npos) theo = &l;
    // derated 3.35 × 0.85 = 2.8475 TB/s, labelled to 4 significant digits like the legend (it read
    // "1.52064 TB/s" beside a legend's "1.521 TB/s")
    if (l.label.find("derated 2.848 TB/s") != std::string::npos || l.label.find("derated 2.847 TB/s") != std::string::npos) der = &l;
  }
  REQUIRE(theo);
  REQUIRE(der);
  CHECK(theo->style.dash == Dash::Dashed);
  CHECK(theo->style.color.r == Approx(der->style.color.r));
  CHECK(theo->style.color.g == Approx(der->style.color.g));
  CHECK(theo->style.color.a == Approx(0.55));
  // rtx3080: 29.8 TFLOP/s / 760.32 GB/s = 39.19 FLOP/byte, named on the overlay
  bool named = false;
  for (const plots::Point& p : b.figure.points) named = named || p.label == "rtx3080 ridge 39.2";
  CHECK(named);
  // network points on 5 platforms' roofs are coloured by platform, each its roofs' colour (issue 29:
  // nothing told whose a point was): the h100_sxm points in the h100_sxm's derated roof colour
  size_t h100_points = 0;
  for (const plots::Point& p : b.figure.points)
    if (p.marker != Marker::Diamond && p.fill.r == Approx(der->style.color.r) && p.fill.g == Approx(der->style.color.g) && p.fill.b == Approx(der->style.color.b))
      ++h100_points;
  CHECK(h100_points == 2);  // vgg16 and mobilenet_v1 on the h100_sxm
  // at paper size all 9 legend entries stay (5 platforms, 2 networks, 2 roof kinds; no bound
  // entries: colour is the platform's)
  PlotSpec paper = specs[0];
  paper.style = "paper";
  paper.given = {"style"};
  BuiltFigure pb = build_one(paper, r, s);
  RecordingRenderer rec;
  DrawReport rep = draw(pb.figure, rec);
  CHECK(pb.figure.legend.size() == 9);
  for (const auto& t : rec.texts) CHECK(t.s.find("more (plot data)") == std::string::npos);
  CHECK(rep.legend.w > 0);
}

TEST_CASE("an axis too wide for one prefix: ticks keep their own, the title no bare unit beside them", "[plots][defects]") {
  Figure f;
  f.x.min = 1, f.x.max = 10;
  f.y.scale = Scale::Log;
  f.y.min = 1e7, f.y.max = 1e12;  // 10 MFLOP/s … 1 TFLOP/s: 1e7 / 1e12 = 1e-5 of the top prefix
  f.y.unit = "FLOP/s";
  f.y.title = "Performance [FLOP/s]";
  RecordingRenderer rec;
  draw(f, rec);
  CHECK(has_text(rec, "Performance"));
  CHECK_FALSE(has_text(rec, "Performance [FLOP/s]"));
  CHECK(has_text(rec, "10 MFLOP/s"));
  CHECK(has_text(rec, "1 TFLOP/s"));
  // one decade less (1e8 / 1e12 = 1e-4): one prefix, in the title
  f.y.min = 1e8;
  RecordingRenderer rec2;
  draw(f, rec2);
  CHECK(has_text(rec2, "Performance [TFLOP/s]"));
  CHECK(has_text(rec2, "0.0001"));
}

TEST_CASE("what-if trend: each variant's ridge only where it applies, as one line through its points", "[plots][defects]") {
  Scenario s = load_scenario(src("scenarios/avx512_clock_whatif.yaml"));
  RunResult r = run(s);
  PlotSpec t;
  t.kind = Kind::Trend;
  t.x = "clock_ghz";
  t.y = "intensity";
  BuiltFigure b = build_one(t, r, s);
  CHECK(b.figure.refs.empty());  // no horizontal line per variant across every clock
  const Line* ridge = nullptr;
  for (const Line& l : b.figure.lines)
    if (l.label == "xeon_silver_4210_2s ridge") ridge = &l;
  REQUIRE(ridge);
  REQUIRE(ridge->pts.size() == 4);  // 1.5, 1.8, 2.0, 2.2 GHz
  // 2 × 10 cores × clock × 32 fp32 FLOP per cycle (one AVX-512 FMA unit) over the 76.8 GB/s
  // the variants keep: 1.5 GHz → 960 GFLOP/s / 76.8 GB/s = 12.5, 2.2 GHz → 1.408 TFLOP/s → 18.33
  CHECK(ridge->pts.front().x == Approx(1.5));
  CHECK(ridge->pts.front().y == Approx(20 * 1.5e9 * 32 / 76.8e9));
  CHECK(ridge->pts.back().x == Approx(2.2));
  CHECK(ridge->pts.back().y == Approx(20 * 2.2e9 * 32 / 76.8e9));
}

TEST_CASE("a trend with more series than distinct styles labels its lines directly", "[plots][defects]") {
  std::string y = "name: many\nsweep: {grid: {batch: [1, 2, 4]}}\nplatforms: [rtx3080]\nnetworks:\n";
  for (int i = 1; i <= 10; ++i)  // 10 networks: past the 8 colours, shapes and dashes repeat
    y += "  - {name: n" + std::to_string(i) + ", input: [\"${batch}\", " + std::to_string(32 * i) + "], layers: [{name: fc, op: linear, out_features: 64}]}\n";
  Scenario s = parse_scenario(y, "many.yaml");
  RunResult r = run(s);
  PlotSpec t;
  t.kind = Kind::Trend;
  t.x = "batch";
  t.y = "intensity";
  t.series = "network";
  BuiltFigure b = build_one(t, r, s);
  size_t labelled = 0;
  for (const Line& l : b.figure.lines) labelled += l.label.size() >= 2 && l.label[0] == 'n';
  CHECK(labelled == 10);
}

TEST_CASE("roofline: a script's efficiency model draws its roofs", "[plots][defects]") {
  // scenarios/lua/efficiency_energy.lua: depthwise convolutions reach 30 % of the compute roof,
  // small layers 60 %
  BuiltFigure b = rtx3080_roofline("scenarios/depthwise_efficiency.yaml");
  bool dw = false, small = false;
  for (const Line& l : b.figure.lines) {
    if (l.style.dash != Dash::Dotted || l.pts.size() != 2 || l.pts[0].y != l.pts[1].y) continue;
    dw = dw || (l.pts[0].y == Approx(0.3 * 29.8e12) && l.label == "efficiency 30 %: 8.94 TFLOP/s");
    small = small || (l.pts[0].y == Approx(0.6 * 29.8e12) && l.label == "efficiency 60 %: 17.9 TFLOP/s");
  }
  CHECK(dw);
  CHECK(small);
  bool in_legend = false;
  for (const auto& e : b.figure.legend) in_legend = in_legend || e.text == "efficiency-model roof";
  CHECK(in_legend);
}

TEST_CASE("a unitless log axis up to 100 k: one format, never '1000' beside '10 k'", "[plots][defects]") {
  Figure f;
  f.x.min = 1, f.x.max = 10;
  f.y.scale = Scale::Log;
  f.y.min = 100, f.y.max = 1e5;  // tokens per second
  RecordingRenderer rec;
  draw(f, rec);
  CHECK(has_text(rec, "100"));
  CHECK(has_text(rec, "1 k"));  // 1000 = 1 × 10^3
  CHECK(has_text(rec, "10 k"));
  CHECK(has_text(rec, "100 k"));
  CHECK_FALSE(has_text(rec, "1000"));
}

TEST_CASE("a numbered key taller than the canvas: in columns, or no key and a note, never cut off", "[plots][defects]") {
  // 55 1×1 convs of 1, 2, … 55 output channels, each fed by the network input (8 channels, 8×8):
  // 55 distinct points, more key lines than the canvas is tall
  std::string y = "name: k\nplatforms: [rtx3080]\nnetworks:\n  - name: n\n    input: [1, 8, 8, 8]\n    layers:\n";
  for (int i = 1; i <= 55; ++i)
    y += "      - {name: c" + std::to_string(i) + ", op: conv2d, inputs: [input], out_channels: " + std::to_string(i) + ", kernel: 1}\n";
  Scenario s = parse_scenario(y, "k.yaml");
  RunResult r = run(s);
  PlotSpec p;
  p.kind = Kind::Roofline;
  p.labels = "all";
  BuiltFigure b = build_one(p, r, s);
  RecordingRenderer rec;
  DrawReport rep = draw(b.figure, rec);
  if (rep.numbered > 0) {
    // every line of the key ("N  label": the 55 convs and the ridge) drawn, inside the canvas
    size_t lines = 0;
    for (const auto& t : rec.texts) {
      size_t d = 0;
      while (d < t.s.size() && std::isdigit(static_cast<unsigned char>(t.s[d]))) ++d;
      if (d > 0 && t.s.compare(d, 2, "  ") == 0) ++lines;
    }
    CHECK(lines == 56);
    CHECK(static_cast<int>(lines) == rep.numbered);
  } else {
    CHECK(has_text(rec, "labels that do not fit: in the plot data CSV"));
  }
  for (const Rect& t : rep.texts) CHECK(t.inside(rep.canvas));
}

TEST_CASE("default trends over a grid: one line per value of the other variable, never a zig-zag", "[plots][defects]") {
  auto specs_of = [](const std::string& sweep) {
    Scenario s = parse_scenario("name: g\nsweep: " + sweep + "\nplatforms: [rtx3080]\nnetworks:\n  - name: n\n    input: [1, 8, 8, 8]\n"
                                "    layers:\n      - {name: c, op: conv2d, out_channels: 4, kernel: 1}\n",
                                "g.yaml");
    RunResult r = run(s);
    std::vector<std::pair<std::string, std::string>> trends;  // (x, series)
    for (const PlotSpec& p : default_plot_specs(r, s))
      if (p.kind == Kind::Trend) trends.emplace_back(p.x, p.series);
    return trends;
  };
  using V = std::vector<std::pair<std::string, std::string>>;
  // 3 × 2 grid: at each a, b tells the 2 points apart, and the other way round
  CHECK(specs_of("{grid: {a: [1, 2, 3], b: [10, 20]}}") == V{{"a", "b"}, {"b", "a"}});
  // zipped: one point per value, a line per platform as before
  CHECK(specs_of("{zip: {a: [1, 2, 3], b: [10, 20, 30]}}") == V{{"a", "auto"}, {"b", "auto"}});
  // three variables: no single other variable tells the points at one value apart, so no default trend
  CHECK(specs_of("{grid: {a: [1, 2], b: [1, 2], c: [1, 2]}}").empty());
  // a grid whose other variable has more than 12 values: no default trend over the variable it would split
  CHECK(specs_of("{grid: {a: [1, 2], b: {from: 1, to: 13, step: 1}}}") == V{{"b", "a"}});
}

TEST_CASE("an int8 roofline counts operations: OP/s on the axis, the roof and the legend", "[plots][figures]") {
  // the H100's int8 tensor roof is 1,979 TOP/s (dense): integer operations, not FLOP
  Scenario s = parse_scenario("name: t\nsettings: {dtype: int8}\nplatforms: [h100_sxm, a100_sxm_80gb]\nnetworks:\n"
                              "  - {name: n, input: [1, 64], layers: [{op: linear, out_features: 64}]}\n"
                              "plots:\n  - {kind: roofline, overlay: true}\n",
                              src("scenarios/t.yaml"));
  RunResult r = run(s);
  Diags d;
  std::vector<PlotSpec> specs = parse_plot_specs(s.plots, {}, d);
  REQUIRE(specs.size() == 1);
  BuiltFigure b = build_one(specs[0], r, s);
  CHECK(b.figure.y.title == "Performance [OP/s]");
  CHECK(b.figure.x.title == "Arithmetic intensity [OP/byte]");
  // on an overlay the legend gives each platform's derated peak: 1,979 TOP/s (int8 is not derated)
  bool legend = false;
  for (const LegendEntry& e : b.figure.legend) legend = legend || e.text.find("h100_sxm: 1.979 POP/s, ") == 0;
  CHECK(legend);
  // one platform alone labels its roof
  PlotSpec one = specs[0];
  one.overlay = false;
  one.platforms = {"h100_sxm"};
  BuiltFigure b1 = build_one(one, r, s);
  bool roof = false;
  for (const Line& l : b1.figure.lines) roof = roof || l.label.find("int8 tensor cores 1.979 POP/s") != std::string::npos;
  CHECK(roof);
}

TEST_CASE("a slides roofline keeps its last x tick label on the canvas", "[plots][figures]") {
  // ResNet-50 on the RTX 3080 in the slides style: the x axis ends at 10000 FLOP/byte, whose label
  // is centred on the plot's right edge (it was clipped to "1000")
  Scenario s = load_scenario(src("scenarios/resnet50.yaml"));
  RunResult r = run(s);
  PlotSpec spec;
  spec.kind = Kind::Roofline;
  spec.platforms = {"rtx3080"};
  spec.style = "slides";
  spec = resolved(spec);
  BuiltFigure b = build_one(spec, r, s);
  RecordingRenderer rec;
  DrawReport rep = draw(b.figure, rec);
  bool last = false;
  for (const auto& t : rec.texts) last = last || t.s == "10000" || t.s == "10 k";
  CHECK(last);
  for (const Rect& t : rep.texts) {
    INFO("text box at " << t.x << "," << t.y << " size " << t.w << "x" << t.h << " on a canvas " << rep.canvas.w);
    CHECK(t.inside(rep.canvas));
  }
}

TEST_CASE("a platform keeps its colour in every figure of a run: roofs, points and trend lines", "[plots][defects]") {
  // three platforms; a roofline of all three, one of the last two (platforms:), and a trend of the
  // time per platform. The v100's colour is the same wherever it is drawn (it was the second
  // colour in one figure and the first in the other: colours went by position in the figure).
  Scenario s = parse_scenario(
      "name: ident\nplatforms: [rtx3080, v100, h100_sxm]\nsweep: {grid: {b: [1, 8]}}\n"
      "networks: [{model: resnet18, args: {batch: \"${b}\"}}]\n"
      "plots:\n"
      "  - {kind: roofline, points: networks, overlay: true, name: all}\n"
      "  - {kind: roofline, points: networks, overlay: true, platforms: [v100, h100_sxm], name: two}\n"
      "  - {kind: trend, x: b, y: derated_time_s, name: t}\n",
      src("scenarios/ident.yaml"));
  RunResult r = run(s);
  Diags d;
  std::vector<PlotSpec> specs = parse_plot_specs(s.plots, sweep_names(s.sweep), d);
  REQUIRE(d.empty());
  REQUIRE(specs.size() == 3);
  auto colour_of = [](const Figure& f, const std::string& platform) {
    for (const auto& e : f.legend)
      if (e.text.rfind(platform, 0) == 0) return e.has_line ? e.line.color : e.fill;
    FAIL("no legend entry for " << platform);
    return Color{};
  };
  BuiltFigure all = build_one(specs[0], r, s), two = build_one(specs[1], r, s), trend = build_one(specs[2], r, s);
  for (const char* p : {"v100", "h100_sxm"}) {
    const Color a = colour_of(all.figure, p), b = colour_of(two.figure, p), t = colour_of(trend.figure, p);
    CHECK(a.r == Approx(b.r));
    CHECK(a.g == Approx(b.g));
    CHECK(a.b == Approx(b.b));
    CHECK(a.r == Approx(t.r));
    CHECK(a.g == Approx(t.g));
    CHECK(a.b == Approx(t.b));
  }
  // and the three differ from each other
  const Color x = colour_of(all.figure, "rtx3080"), y = colour_of(all.figure, "v100"), z = colour_of(all.figure, "h100_sxm");
  CHECK_FALSE((x.r == y.r && x.g == y.g && x.b == y.b));
  CHECK_FALSE((y.r == z.r && y.g == z.g && y.b == z.b));
}

TEST_CASE("figure controls: subtitle full | short | none, xlim and ylim, a heatmap's colour scale shared or fixed", "[plots][defects]") {
  Scenario s = parse_scenario(
      "name: ctl\nplatforms: [rtx3080, v100]\nsweep: {grid: {b: [1, 8], c: [16, 32]}}\n"
      "networks: [{name: fc, input: [\"${b}\", \"${c}\"], layers: [{op: linear, out_features: 64, bias: false}]}]\n"
      "plots:\n"
      "  - {kind: roofline, points: networks, overlay: true, name: full}\n"
      "  - {kind: roofline, points: networks, overlay: true, name: short, subtitle: short}\n"
      "  - {kind: roofline, points: networks, overlay: true, name: none, subtitle: none, xlim: [0.5, 200], ylim: [1e9, 1e14]}\n"
      "  - {kind: trend, x: b, y: derated_time_s, name: t, xlim: [0, 10], xscale: linear, yscale: linear, ylim: [0, 0.001]}\n"
      "  - {kind: heatmap, x: b, y: c, value: derated_time_s, platforms: [rtx3080, v100], color_scale: shared, name: hs}\n"
      "  - {kind: heatmap, x: b, y: c, value: derated_time_s, platforms: [rtx3080], color_scale: [1e-6, 1e-3], name: hr}\n",
      src("scenarios/ctl.yaml"));
  RunResult r = run(s);
  Diags d;
  std::vector<PlotSpec> specs = parse_plot_specs(s.plots, sweep_names(s.sweep), d);
  REQUIRE(d.empty());
  BuiltFigure full = build_one(specs[0], r, s), shrt = build_one(specs[1], r, s), none = build_one(specs[2], r, s);
  // full: "rtx3080, v100 · fc… · fp32 · FLOPs = 2×MAC · bytes = … · networks on … · +5 µs launch per kernel"
  // (both catalog GPUs charge 5 µs per kernel under execution: fused, in the network points' times)
  CHECK(full.figure.subtitle.rfind("rtx3080, v100 · ", 0) == 0);
  CHECK(full.figure.subtitle.find("FLOPs = 2×MAC") != std::string::npos);
  CHECK(full.figure.subtitle.find("+5 µs launch per kernel") != std::string::npos);
  // short: the first part and the launch note only
  CHECK(shrt.figure.subtitle == "rtx3080, v100 · +5 µs launch per kernel");
  CHECK(none.figure.subtitle.empty());
  // limits as given
  CHECK(none.figure.x.min == 0.5);
  CHECK(none.figure.x.max == 200);
  CHECK(none.figure.y.min == 1e9);
  CHECK(none.figure.y.max == 1e14);
  BuiltFigure t = build_one(specs[3], r, s);
  CHECK(t.figure.x.min == 0);
  CHECK(t.figure.x.max == 10);
  CHECK(t.figure.y.max == 0.001);
  for (double tick : t.figure.x.ticks) CHECK(tick <= 10);
  // the same limits on b's automatic axis (1 and 8: logarithmic) cannot start at 0
  PlotSpec logx = specs[3];
  logx.xscale = "auto";
  CHECK_THROWS_WITH(build_figures(logx, r, s), Catch::Contains("xlim must be positive on a logarithmic axis"));
  // shared: both heatmaps take the range over the two (the rtx3080's and the v100's times together)
  std::vector<BuiltFigure> hs = build_figures(specs[4], r, s);
  REQUIRE(hs.size() == 2);
  double lo = 1e300, hi = 0;
  for (const auto& b : hs)
    for (const auto& row : b.figure.heatmap->values)
      for (double v : row) lo = std::min(lo, v), hi = std::max(hi, v);
  for (const auto& b : hs) {
    CHECK(b.figure.heatmap->range_lo == lo);
    CHECK(b.figure.heatmap->range_hi == hi);
  }
  // the two platforms' own ranges differ, so sharing changed at least one of them
  double lo0 = 1e300, hi0 = 0;
  for (const auto& row : hs[0].figure.heatmap->values)
    for (double v : row) lo0 = std::min(lo0, v), hi0 = std::max(hi0, v);
  CHECK((lo0 != lo || hi0 != hi));
  BuiltFigure hr = build_one(specs[5], r, s);
  CHECK(hr.figure.heatmap->range_lo == 1e-6);
  CHECK(hr.figure.heatmap->range_hi == 1e-3);
  CHECK(hr.figure.heatmap->log_colors);  // 1e-3 / 1e-6 = 1000 > 30: a logarithmic colour scale
  // errors: a range that is not [lo, hi], a roofline limit at 0
  Diags bad;
  Scenario b = parse_scenario("name: b\nplatforms: [rtx3080]\nnetworks: [{name: fc, input: [1, 8], layers: [{op: relu}]}]\n"
                              "plots:\n  - {kind: roofline, xlim: [10, 1]}\n  - {kind: roofline, ylim: [0, 1e12]}\n  - {kind: heatmap, x: a, y: a, color_scale: wide}\n",
                              src("scenarios/b.yaml"));
  parse_plot_specs(b.plots, {"a"}, bad);
  REQUIRE(bad.size() == 3);
  CHECK(bad.list()[0].message == "xlim must be [lo, hi] with lo < hi");
  CHECK(bad.list()[1].message == "ylim must be positive: a roofline's axes are logarithmic");
  CHECK(bad.list()[2].message == "color_scale cannot be 'wide'");
}

TEST_CASE("a title too long for a printed figure stays whole, on one line or two, instead of ending in an ellipsis", "[plots][defects][print]") {
  // llm_decode's first heatmap at paper size (88 mm): its 48-character title ended in "int4…" at 6 pt
  Scenario s = load_scenario(src("scenarios/llm_decode.yaml"));
  RunResult r = run(s);
  Diags d;
  std::vector<PlotSpec> specs = parse_plot_specs(s.plots, sweep_names(s.sweep), d);
  REQUIRE(d.empty());
  PlotSpec paper = specs[1];  // "Llama-3-8B decode tokens/s on H100, int4 weights"
  paper.style = "paper";
  paper.given.push_back("style");
  BuiltFigure b = build_one(paper, r, s);
  RecordingRenderer rec;
  DrawReport rep = draw(b.figure, rec);
  std::vector<std::string> bold;
  for (size_t i = 0; i < rec.texts.size(); ++i)
    if (rec.texts[i].bold) {
      bold.push_back(rec.texts[i].s);
      CHECK(rep.texts[i].x >= rep.canvas.x);
      CHECK(rep.texts[i].x + rep.texts[i].w <= rep.canvas.x + rep.canvas.w);
    }
  REQUIRE((bold.size() == 1 || bold.size() == 2));
  const std::string whole = bold.size() == 1 ? bold[0] : bold[0] + " " + bold[1];
  CHECK(whole == "Llama-3-8B decode tokens/s on H100, int4 weights");
  for (const auto& t : rec.texts) CHECK(t.s.find("…") == std::string::npos);
  // with a title twice as long it takes two lines (the first part, then the rest), still whole
  paper.title = "Llama-3-8B decode tokens/s on H100 with int4 weights and fp16 activations, context by batch";
  BuiltFigure b2 = build_one(paper, r, s);
  RecordingRenderer rec2;
  DrawReport rep2 = draw(b2.figure, rec2);
  std::vector<std::string> bold2;
  for (size_t i = 0; i < rec2.texts.size(); ++i)
    if (rec2.texts[i].bold) {
      bold2.push_back(rec2.texts[i].s);
      CHECK(rep2.texts[i].x + rep2.texts[i].w <= rep2.canvas.x + rep2.canvas.w);
    }
  REQUIRE(bold2.size() == 2);
  CHECK(bold2[0] + " " + bold2[1] == paper.title);
}

TEST_CASE("a network point's launch share is in the roofline's plot data", "[plots][defects]") {
  // one linear layer 64 → 64 (no bias) at batch 1, fp32, on the rtx3080 (no derating; 5 µs launch
  // per kernel, fused): bytes = 64·4 in + 64·64·4 weights + 64·4 out = 256 + 16,384 + 256 = 16,896 B;
  // memory time 16,896 / 760.32e9 = 22.222 ns (compute 8,192 FLOPs / 29.8e12 = 0.27 ns is less);
  // network time 22.222 ns + 5 µs = 5.022222 µs; launch share 5 / 5.022222 = 0.995575
  Scenario s = parse_scenario("name: ls\nplatforms: [rtx3080]\nnetworks: [{name: fc, input: [1, 64], layers: [{op: linear, out_features: 64, bias: false}]}]\n"
                              "plots:\n  - {kind: roofline, points: networks}\n",
                              src("scenarios/ls.yaml"));
  RunResult r = run(s);
  Diags d;
  std::vector<PlotSpec> specs = parse_plot_specs(s.plots, sweep_names(s.sweep), d);
  REQUIRE(d.empty());
  BuiltFigure b = build_one(specs[0], r, s);
  const std::string& csv = b.data_csv;
  REQUIRE(csv.rfind("platform,network,label,point,op,intensity,performance_flops_per_s,bound,launch_share,limit\n", 0) == 0);
  std::string row = csv.substr(csv.find('\n') + 1);
  // its limit: the launch, 99.6 % of its time (its label says so)
  CHECK(row.substr(row.rfind(',') + 1) == "launch\n");
  CHECK(row.find("fc (launch 100 %)") != std::string::npos);
  row = row.substr(0, row.rfind(','));
  const double share = std::stod(row.substr(row.rfind(',') + 1));
  CHECK(share == Approx(5e-6 / (16896 / 760.32e9 + 5e-6)).epsilon(1e-4));
  CHECK(share == Approx(0.995575).epsilon(1e-5));
}

TEST_CASE("a memory footprint axis beside memory sizes in GiB is in GiB too", "[plots][defects]") {
  // llm_footprint: footprints from about 5 GiB (Llama-3-8B int4 at 1 Ki tokens) to about 600 GiB
  // (Llama-2-7B at 128 Ki), against 24, 80, 141 and 192 GiB memories. The axis read "TB" (decimal)
  // with ticks 0.01, 0.1, 1 beside labels in GiB; now: [GiB], ticks at 10 and 100 GiB
  // (10 · 2^30 and 100 · 2^30 bytes: the decades of GiB inside the range)
  Scenario s = load_scenario(src("scenarios/llm_footprint.yaml"));
  RunResult r = run(s);
  Diags d;
  std::vector<PlotSpec> specs = parse_plot_specs(s.plots, sweep_names(s.sweep), d);
  REQUIRE(d.empty());
  BuiltFigure b = build_one(specs[0], r, s);
  CHECK(b.figure.y.iec);
  REQUIRE(b.figure.y.ticks.size() == 2);
  CHECK(b.figure.y.ticks[0] == 10.0 * 1073741824.0);
  CHECK(b.figure.y.ticks[1] == 100.0 * 1073741824.0);
  RecordingRenderer rec;
  draw(b.figure, rec);
  bool gib_title = false, ten = false, hundred = false;
  for (const auto& t : rec.texts) {
    gib_title = gib_title || (t.s.find("Memory footprint") == 0 && t.s.find("[GiB]") != std::string::npos);
    ten = ten || t.s == "10";
    hundred = hundred || t.s == "100";
  }
  CHECK(gib_title);
  CHECK(ten);
  CHECK(hundred);
}

TEST_CASE("a legend entry too long for its column is cut at a word, not inside one", "[plots][defects][print]") {
  // a printed figure (88 × 66 mm) whose legend goes under the plot in columns: the entries' common
  // start goes first ("…first network at batch eight"), then whole words from the end
  // ("…first network at…"), never letters mid-word, while words remain
  Figure f;
  f.width = 88 / 25.4 * 72, f.height = 66 / 25.4 * 72;
  f.fixed_size = true;
  f.x.min = 1, f.x.max = 10;
  f.y.min = 1, f.y.max = 10;
  const std::vector<std::string> names = {"memory footprint of the first network at batch eight", "memory footprint of the second network at batch eight",
                                          "memory footprint of the third network at batch eight", "memory footprint of the fourth network at batch eight",
                                          "memory footprint of the fifth network at batch eight", "memory footprint of the sixth network at batch eight"};
  for (size_t i = 0; i < names.size(); ++i) {
    Line L;
    L.pts = {{1, 1 + static_cast<double>(i)}, {10, 2 + static_cast<double>(i)}};
    L.style = LineStyle{rgb(0x0072B2), 1.5, Dash::Solid};
    f.lines.push_back(L);
    f.legend.push_back(LegendEntry{names[i], true, L.style, false, {}, {}});
  }
  RecordingRenderer rec;
  draw(f, rec);
  size_t cut = 0;
  const std::string ell = "…";
  for (const auto& t : rec.texts) {
    if (t.s.size() < ell.size() || t.s.compare(t.s.size() - ell.size(), ell.size(), ell) != 0) continue;  // cut at its end
    ++cut;
    std::string kept = t.s.substr(0, t.s.size() - ell.size());
    const bool lead = kept.compare(0, ell.size(), ell) == 0;  // the common start dropped too
    if (lead) kept = kept.substr(ell.size());
    INFO(t.s);
    REQUIRE_FALSE(kept.empty());
    // the kept part is whole words of one of the names: the name goes on with a space after it
    bool at_word = false;
    for (const auto& n : names) {
      const size_t at = n.find(kept);
      at_word = at_word || (at != std::string::npos && (lead || at == 0) && at + kept.size() < n.size() && n[at + kept.size()] == ' ');
    }
    CHECK(at_word);
  }
  CHECK(cut > 0);  // (the case is one that needs cutting)
}

TEST_CASE("a legend with no free corner takes a free place down the plot's edge before it leaves the plot", "[plots][defects]") {
  // two lines across the whole width at 9 % and 91 % of a linear 0..100 axis: every corner of a
  // 4-entry legend (4 rows of 14 pt at 9 pt text, over 50 pt) meets one of them, the middle band is free
  Figure f;
  f.x.min = 0, f.x.max = 100, f.y.min = 0, f.y.max = 100;
  for (double y : {9.0, 91.0}) {
    Line l;
    l.pts = {{0, y}, {100, y}};
    l.style = LineStyle{palette(f.lines.size()), 1.5};
    f.lines.push_back(l);
  }
  for (int i = 0; i < 4; ++i) f.legend.push_back(LegendEntry{"series number " + std::to_string(i), true, f.lines[static_cast<size_t>(i % 2)].style, false, {}, {}});
  RecordingRenderer rec;
  DrawReport rep = draw(f, rec);
  REQUIRE(rep.legend.w > 0);
  // inside the plot, between the lines (y grows downwards on the page)
  CHECK(rep.legend.x >= rep.plot.x);
  CHECK(rep.legend.x + rep.legend.w <= rep.plot.x + rep.plot.w);
  const double y91 = rep.plot.y + rep.plot.h * (1 - 0.91), y9 = rep.plot.y + rep.plot.h * (1 - 0.09);
  CHECK(rep.legend.y > y91);
  CHECK(rep.legend.y + rep.legend.h < y9);
}

TEST_CASE("series keep the scenario's order in every trend of a run: per platform as declared, its networks as declared", "[plots][defects]") {
  // study_batch declares resnet50 before mobilenet_v2 and platforms rtx3080, a100_sxm_80gb
  Scenario s = load_scenario(src("scenarios/study_batch.yaml"));
  RunResult r = run(s);
  Diags d;
  std::vector<PlotSpec> specs = parse_plot_specs(s.plots, sweep_names(s.sweep), d);
  REQUIRE(specs.size() == 2);
  auto legend = [&](const PlotSpec& p) {
    std::vector<std::string> out;
    for (const auto& e : build_one(p, r, s).figure.legend) out.push_back(e.text);
    return out;
  };
  CHECK(legend(specs[0]) == std::vector<std::string>{"resnet50", "mobilenet_v2"});
  CHECK(legend(specs[1]) == std::vector<std::string>{"resnet50 · rtx3080", "mobilenet_v2 · rtx3080", "resnet50 · a100_sxm_80gb", "mobilenet_v2 · a100_sxm_80gb"});
}
