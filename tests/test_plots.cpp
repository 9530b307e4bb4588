// Figures: chart builders checked through a recording renderer (roofs, ridges, ranges, labels),
// the file formats by their magic bytes, and determinism.
#include <catch2/catch.hpp>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <set>

#include "cli_helpers.hpp"
#include "helpers.hpp"
#include "plots/chart_serving.hpp"
#include "plots/charts.hpp"
#include "plots/draw.hpp"
#include "plots/draw_internal.hpp"
#include "plots/recording_renderer.hpp"
#include "plots/report.hpp"

using namespace rsim;
using namespace rsim::plots;
using namespace rsim::test;

namespace {

PlotSpec roofline_spec(std::vector<std::string> platforms = {}) {
  PlotSpec s;
  s.kind = Kind::Roofline;
  s.platforms = std::move(platforms);
  return s;
}

struct Drawn {
  BuiltFigure fig;
  RecordingRenderer rec;
  DrawReport rep;
};

std::unique_ptr<Drawn> draw_first(const PlotSpec& spec, const RunResult& r, const Scenario& s) {
  auto d = std::make_unique<Drawn>();
  auto figs = build_figures(spec, r, s);
  REQUIRE_FALSE(figs.empty());
  d->fig = figs.front();
  d->rep = draw(d->fig.figure, d->rec);
  return d;
}

// Every text inside the canvas; point labels apart from each other and from line labels.
void check_layout(const Drawn& d) {
  for (const Rect& t : d.rep.texts) {
    INFO("text box at " << t.x << "," << t.y << " size " << t.w << "x" << t.h);
    CHECK(t.inside(d.rep.canvas));
  }
  for (size_t i = 0; i < d.rep.point_labels.size(); ++i) {
    CHECK(d.rep.point_labels[i].inside(d.rep.plot));
    for (size_t j = i + 1; j < d.rep.point_labels.size(); ++j) CHECK_FALSE(d.rep.point_labels[i].overlaps(d.rep.point_labels[j]));
    for (const Quad& q : d.rep.line_labels) CHECK_FALSE(quad_overlaps(q, d.rep.point_labels[i]));
    if (d.rep.legend.w > 0) CHECK_FALSE(d.rep.legend.overlaps(d.rep.point_labels[i]));
  }
  for (size_t i = 0; i < d.rep.line_labels.size(); ++i)
    for (size_t j = i + 1; j < d.rep.line_labels.size(); ++j) CHECK_FALSE(quads_overlap(d.rep.line_labels[i], d.rep.line_labels[j]));
}

bool has_text(const RecordingRenderer& r, const std::string& s) {
  for (const auto& t : r.texts)
    if (t.s == s) return true;
  return false;
}

}  // namespace

TEST_CASE("roofline: one slanted and one flat roof, the ridge at peak / bandwidth", "[plots]") {
  Scenario s = load_scenario(src("scenarios/group_conv_sweep.yaml"));
  RunResult r = run(s);
  auto d = draw_first(roofline_spec({"rtx3080"}), r, s);
  const Figure& f = d->fig.figure;
  double ridge = 29.8e12 / 760.32e9;  // 39.19 FLOP/byte
  REQUIRE(f.lines.size() == 2);       // no derating on the RTX 3080: one memory and one compute roof
  CHECK(f.lines[0].pts.back().x == Approx(ridge));
  CHECK(f.lines[0].pts.back().y == Approx(29.8e12));
  CHECK(f.lines[0].pts.front().y == Approx(760.32e9 * f.x.min));  // slope = bandwidth
  CHECK(f.lines[1].pts.front().x == Approx(ridge));
  // 6 layer points (groups 32 … 1) plus the ridge marker
  CHECK(f.points.size() == 7);
  CHECK(has_text(d->rec, "ridge 39.2"));
  // the axes contain every point, and the log ticks are decades
  for (const plots::Point& p : f.points) {
    CHECK(p.at.x >= f.x.min);
    CHECK(p.at.x <= f.x.max);
    CHECK(p.at.y >= f.y.min);
    CHECK(p.at.y <= f.y.max);
  }
  for (double t : d->rep.xticks) CHECK(std::fabs(std::log10(t) - std::round(std::log10(t))) < 1e-9);
  // one unit per axis: the prefix in the title, plain numbers on the ticks
  CHECK(has_text(d->rec, "Performance [TFLOP/s]"));
  CHECK(has_text(d->rec, "10"));
  CHECK_FALSE(has_text(d->rec, "10 TFLOP/s"));
  CHECK(has_text(d->rec, "Arithmetic intensity [FLOP/byte]"));
  CHECK(d->fig.figure.subtitle.find("FLOPs = 2×MAC · bytes = inputs+weights+outputs") != std::string::npos);
  check_layout(*d);
  // the depthwise point (groups = 32) is labelled and memory bound
  CHECK(has_text(d->rec, "groups=32"));
  CHECK(f.points[1].fill.b > f.points[1].fill.r);  // blue = memory bound
}

TEST_CASE("roofline: theoretical dashed and derated solid, each ridge marked", "[plots]") {
  Scenario s = load_scenario(src("scenarios/group_conv_sweep.yaml"));
  RunResult r = run(s);
  auto d = draw_first(roofline_spec({"xeon_silver_4210_2s"}), r, s);
  const Figure& f = d->fig.figure;
  int dashed = 0, solid = 0;
  for (const Line& l : f.lines) (l.style.dash == Dash::Dashed ? dashed : solid)++;
  CHECK(dashed == 2);
  CHECK(solid == 2);
  std::vector<double> ridges;
  for (const plots::Point& p : f.points)
    if (p.marker == Marker::Diamond) ridges.push_back(p.at.x);
  REQUIRE(ridges.size() == 2);
  CHECK(ridges[0] == Approx(2 * 10 * 2.2e9 * 32 / 76.8e9));  // 18.33: base clock
  CHECK(ridges[1] == Approx(2 * 10 * 1.5e9 * 32 / 76.8e9));  // 12.5: AVX-512 clock
  CHECK(has_text(d->rec, "derated 960 GFLOP/s"));
  CHECK(has_text(d->rec, "theoretical roof"));  // legend explains the dashes
  check_layout(*d);
}

TEST_CASE("roofline: a crowded chart numbers its points and keeps a key", "[plots]") {
  Scenario s = load_scenario(src("scenarios/resnet50.yaml"));
  RunResult r = run(s);
  auto d = draw_first(roofline_spec({"rtx3080"}), r, s);
  CHECK(d->rep.numbered > 24);
  // ResNet-50's repeated blocks put several layers on one marker ("layer1.1.conv1 (+2)"): the
  // key's heading says what the suffix means
  CHECK(has_text(d->rec, "key · (+N): N more here"));
  check_layout(*d);
}

TEST_CASE("trend: ridge references per platform and the swept values as ticks", "[plots]") {
  Scenario s = load_scenario(src("scenarios/group_conv_sweep.yaml"));
  RunResult r = run(s);
  PlotSpec t;
  t.kind = Kind::Trend;
  t.x = "groups";
  auto d = draw_first(t, r, s);
  const Figure& f = d->fig.figure;
  REQUIRE(f.refs.size() == 2);
  CHECK(f.refs[0].value == Approx(29.8e12 / 760.32e9));
  CHECK(f.refs[1].value == Approx(960e9 / 76.8e9));
  CHECK(f.x.ticks == std::vector<double>{1, 2, 4, 8, 16, 32});
  CHECK(f.x.scale == Scale::Log);  // 1 … 32 spans more than a factor 8
  REQUIRE(f.lines.size() == 1);    // intensity is the same on every platform: one series
  CHECK(f.lines[0].pts.size() == 6);
  check_layout(*d);
}

TEST_CASE("layers: 175 layers give the 39 largest and an others bar", "[plots]") {
  Scenario s = load_scenario(src("scenarios/resnet50.yaml"));
  RunResult r = run(s);
  PlotSpec l;
  l.kind = Kind::Layers;
  l.platforms = {"xeon_silver_4210_2s"};
  auto d = draw_first(l, r, s);
  const Figure& f = d->fig.figure;
  REQUIRE(f.y.categories.size() == 40);  // categories run bottom to top: "others" is first
  CHECK(f.y.categories.front().rfind("others (136 layers, ", 0) == 0);  // 175 − 39, and their summed time
  REQUIRE(f.bars.size() == 2);  // theoretical and derated
  CHECK(f.height < 1000);       // fits a page, no longer 175 rows tall
  // the others bar is the sum of the layers not shown: every layer's time adds up to the total
  double all = 0, shown = 0;
  for (const Row* row : rows_of(r, 0, "xeon_silver_4210_2s")) all += row->theoretical.time_s;
  for (size_t i = 1; i < f.bars[0].values.size(); ++i) shown += f.bars[0].values[i];
  CHECK(f.bars[0].values[0] == Approx(all - shown));
  // every shown layer is named, and the names do not overlap
  std::vector<Rect> names;
  for (size_t i = 0; i < d->rep.texts.size(); ++i)
    if (d->rec.texts[i].anchor == Anchor::Right && d->rec.texts[i].angle == 0 && d->rec.texts[i].s.rfind("layer", 0) == 0) names.push_back(d->rep.texts[i]);
  CHECK(names.size() >= 30);
  for (size_t i = 1; i < names.size(); ++i) CHECK_FALSE(names[i].overlaps(names[i - 1]));
  CHECK(d->fig.data_csv.find("\nflatten,") != std::string::npos);  // a 0-byte view, never among the largest  // the plot data keeps every layer
  // the others bar runs past the axis (its sum beside single layers): it ends in a break mark, two
  // white strokes on it near the axis end, one per series (theoretical and derated): 4 strokes
  CHECK(f.bars[0].values[0] > f.x.max);
  size_t breaks = 0;
  for (const auto& L : d->rec.lines)
    if (L.style.color.r == 1 && L.style.color.g == 1 && L.style.color.b == 1 && L.pts.size() == 2) ++breaks;
  CHECK(breaks == 4);
  check_layout(*d);
}

TEST_CASE("heatmap: a cell per grid point, annotated when small", "[plots]") {
  Scenario s = load_scenario(src("scenarios/fc_sweep.yaml"));
  RunResult r = run(s);
  PlotSpec h;
  h.kind = Kind::Heatmap;
  h.x = "features";
  h.layer = "batch";
  h.value = "derated_time_s";
  h.platforms = {"xeon_silver_4210_2s"};
  auto d = draw_first(h, r, s);
  const Heatmap& m = *d->fig.figure.heatmap;
  CHECK(m.xcats == std::vector<std::string>{"256", "512", "1024", "2048", "4096"});
  CHECK(m.ycats == std::vector<std::string>{"1", "8", "64"});
  // batch 1, 4096 features: weights (4096² + 4096)·4 bytes dominate; memory bound at 76.8 GB/s
  double bytes = (4096.0 * 4096 + 4096 + 4096 + 4096) * 4;
  CHECK(m.values[0][4] == Approx(bytes / 76.8e9));
  check_layout(*d);
}

TEST_CASE("each format starts with its magic bytes, SVG and PDF are byte-identical run to run", "[plots]") {
  Scenario s = load_scenario(src("scenarios/group_conv_sweep.yaml"));
  RunResult r = run(s);
  BuiltFigure b = build_figures(roofline_spec({"rtx3080"}), r, s).front();
  auto render = [&](Format f) {
    CairoRenderer cr(f, 100);
    draw(b.figure, cr);
    return cr.bytes();
  };
  std::string png = render(Format::PNG), svg = render(Format::SVG), pdf = render(Format::PDF);
  CHECK(png.substr(0, 8) == std::string("\x89PNG\r\n\x1a\n", 8));
  CHECK(svg.substr(0, 5) == "<?xml");
  CHECK(svg.find("<svg") != std::string::npos);
  CHECK(pdf.substr(0, 5) == "%PDF-");
  CHECK(png.size() > 10000);
  CHECK(svg.size() > 10000);
  CHECK(pdf.size() > 5000);
  CHECK(render(Format::SVG) == svg);
  CHECK(render(Format::PDF) == pdf);
}

TEST_CASE("plot specs: unknown kinds, columns and variables are config errors", "[plots][errors]") {
  CNode n = parse_yaml("- {kind: rooflne}\n- {kind: trend, x: grups, y: intensty}\n", "p.yaml");
  Diags d;
  parse_plot_specs(n, {"groups"}, d);
  CHECK(ConfigError(d.list()).what() ==
        std::string("p.yaml:1:10: error: unknown plot kind 'rooflne'\n"
                    "- {kind: rooflne}\n"
                    "         ^\n"
                    "note: did you mean 'roofline'?\n"
                    "p.yaml:2:20: error: x 'grups' is not a sweep variable or a layer attribute\n"
                    "- {kind: trend, x: grups, y: intensty}\n"
                    "                   ^\n"
                    "note: did you mean 'groups'?\n"
                    "p.yaml:2:30: error: y cannot be 'intensty'\n"
                    "- {kind: trend, x: grups, y: intensty}\n"
                    "                             ^\n"
                    "note: did you mean 'intensity'?\n"));
}

TEST_CASE("report.md names the conventions and embeds every figure", "[plots]") {
  Scenario s = load_scenario(src("scenarios/group_conv_sweep.yaml"));
  RunResult r = run(s);
  std::vector<std::pair<std::string, std::vector<Format>>> figs;
  auto files = render_figures(r, s, default_plot_specs(r, s), RenderOptions{}, figs);
  std::string md = report_markdown(r, s, figs);
  CHECK(md.rfind("# group_conv_sweep\n", 0) == 0);
  CHECK(md.find("FLOPs = 2 × MACs") != std::string::npos);
  for (const auto& [name, formats] : figs) CHECK(md.find("![" + name + "](" + name + ".png)") != std::string::npos);
  // a roofline per platform and a trend for the swept variable, each with its data CSV
  CHECK(figs.size() == 3);
  size_t csvs = 0;
  for (const auto& f : files) csvs += f.name.size() > 4 && f.name.substr(f.name.size() - 4) == ".csv";
  CHECK(csvs == 3);
}

TEST_CASE("trend over output_size and out_channels: each row's first output dimensions", "[plots]") {
  // a 3×3 conv (padding 1) from 2 channels on s×s inputs to c channels: the output is 1×c×s×s and
  // FLOPs = 2 × c·2·9·s² (the bias add is folded into the accumulator)
  std::string y = R"(name: t
sweep: {zip: {s: [4, 8, 16], c: [3, 5, 7]}}
platforms: [rtx3080]
networks:
  - name: n
    input: [1, 2, "${s}", "${s}"]
    layers:
      - {name: conv, op: conv2d, out_channels: "${c}", kernel: 3, padding: 1}
)";
  Scenario s = parse_scenario(y, "t.yaml");
  RunResult r = run(s);
  for (const char* x : {"output_size", "out_channels"}) {
    PlotSpec t;
    t.kind = Kind::Trend;
    t.x = x;
    t.y = "flops";
    t.layer = "conv";
    auto d = draw_first(t, r, s);
    const Figure& f = d->fig.figure;
    REQUIRE(f.lines.size() == 1);
    REQUIRE(f.lines[0].pts.size() == 3);
    const double sz[] = {4, 8, 16}, ch[] = {3, 5, 7};
    for (size_t i = 0; i < 3; ++i) {
      CHECK(f.lines[0].pts[i].x == (std::string(x) == "output_size" ? sz[i] : ch[i]));
      CHECK(f.lines[0].pts[i].y == 2 * ch[i] * 2 * 9 * sz[i] * sz[i]);
    }
  }
}

TEST_CASE("what does not fit in memory is marked: hollow trend and roofline points, hatched heatmap cells, a column in the figures' data", "[plots][llm]") {
  // Llama-2-7B in fp16 on an RTX 3080 (10 GiB): its weights alone are 2 · 6,738,415,616 B = 12.55 GiB,
  // so every decode point is over; on an H100 (80 GiB) batch 1 and 64 at 4096 cached tokens fit
  // (KV 2 · 32 · 4096 · 4096 · 2 B = 2 GiB a sequence: 64 sequences = 128 GiB do not)
  const std::string text =
      "name: fit\nsettings: {dtype: fp16}\nsweep: {grid: {b: [1, 64]}}\nplatforms: [h100_sxm, rtx3080]\nnetworks:\n"
      "  - {model: llama2_7b, args: {phase: decode, batch: \"${b}\", context: 4095}}\n";
  Scenario s = parse_scenario(text, src("scenarios/t.yaml"));
  RunResult r = run(s);
  const double kv = 2.0 * 32 * 4096 * 4096 * 2;  // per sequence: 4095 cached + 1 new token
  CHECK(kv == 2147483648.0);
  PlotSpec t;
  t.kind = Kind::Trend;
  t.x = "b";
  t.y = "tokens_per_s";
  auto d = draw_first(t, r, s);
  // four points (2 batches × 2 platforms): on the H100 batch 1 fits (12.55 GiB + 2 GiB) and 64 does
  // not (12.55 + 128 GiB); on the RTX 3080 neither
  int hollow = 0;
  for (const auto& p : d->fig.figure.points) hollow += p.hollow;
  CHECK(hollow == 3);
  CHECK(d->fig.data_csv.find("series,b,tokens_per_s,fits_in_memory\n") == 0);
  CHECK(std::count(d->fig.data_csv.begin(), d->fig.data_csv.end(), '\n') == 5);
  CHECK(d->fig.data_csv.find(",false\n") != std::string::npos);
  CHECK(has_text(d->rec, "does not fit in memory"));
  // network points on a roofline
  PlotSpec rf = roofline_spec({"h100_sxm"});
  rf.points = "networks";
  auto dr = draw_first(rf, r, s);
  int hollow_r = 0;
  for (const auto& p : dr->fig.figure.points) hollow_r += p.hollow;
  CHECK(hollow_r == 1);
  // heatmap cells
  PlotSpec h;
  h.kind = Kind::Heatmap;
  h.x = "b";
  h.layer = "b";
  h.value = "tokens_per_s";
  h.platforms = {"h100_sxm"};
  BuiltFigure hb = build_figures(h, r, s).front();
  REQUIRE(hb.figure.heatmap.has_value());
  int over = 0;
  for (const auto& row : hb.figure.heatmap->over)
    for (char c : row) over += c;
  CHECK(over == 1);
}

TEST_CASE("a trend of more lines than a figure tells apart is split by platform, or refused when asked for", "[plots]") {
  // 9 values of c × 2 platforms = 18 lines: one figure per platform of 9 lines is still too many
  // for a plot the scenario asks for; 4 values × 3 platforms = 12 lines: 3 figures of 4
  const std::string nine =
      "name: many\nsweep: {grid: {c: [1, 2, 3, 4, 5, 6, 7, 8, 9], k: [1, 3]}}\nplatforms: [rtx3080, v100]\nnetworks:\n"
      "  - {name: n, input: [1, \"${c}\", 8, 8], layers: [{op: conv2d, out_channels: 8, kernel: \"${k}\"}]}\n"
      "plots:\n  - {kind: trend, x: k, y: time_s, series: c}\n";
  Scenario s = parse_scenario(nine, src("scenarios/t.yaml"));
  RunResult r = run(s);
  Diags d;
  std::vector<PlotSpec> specs = parse_plot_specs(s.plots, {"c", "k"}, d);
  REQUIRE(specs.size() == 1);
  const std::string e = error_of([&] { build_figures(specs[0], r, s); });
  CHECK(e.find("error: this trend would draw 9 lines on each platform; a figure tells 8 apart") != std::string::npos);
  const std::string four =
      "name: split\nsweep: {grid: {c: [1, 2, 3, 4], k: [1, 3]}}\nplatforms: [rtx3080, v100, h100_sxm]\nnetworks:\n"
      "  - {name: n, input: [1, \"${c}\", 8, 8], layers: [{op: conv2d, out_channels: 8, kernel: \"${k}\"}]}\n"
      "plots:\n  - {kind: trend, x: k, y: time_s, series: c}\n";
  Scenario s4 = parse_scenario(four, src("scenarios/t.yaml"));
  RunResult r4 = run(s4);
  std::vector<PlotSpec> specs4 = parse_plot_specs(s4.plots, {"c", "k"}, d);
  auto figs = build_figures(specs4[0], r4, s4);
  REQUIRE(figs.size() == 3);
  CHECK(figs[0].name == "trend_time_s_vs_k_rtx3080");
  for (const auto& f : figs) CHECK(f.series == 4);
  // platforms: on a trend keeps those platforms only (it was validated and then ignored)
  PlotSpec one = specs4[0];
  one.platforms = {"v100"};
  auto f1 = build_figures(one, r4, s4);
  REQUIRE(f1.size() == 1);
  CHECK(f1[0].series == 4);
  CHECK(f1[0].data_csv.find("rtx3080") == std::string::npos);
}

TEST_CASE("the interconnect as a roof: layers that communicate at their FLOPs per byte over the link", "[plots][parallel][llm]") {
  // Llama-3.1-70B prefill of 2048 tokens over 8 H100s (tensor: 8): layer.0.o_proj does
  // 2 · 2048 · 8192 · 8192 / 8 = 34,359,738,368 FLOPs on one GPU and all-reduces 2048 · 8192 · 2 =
  // 33,554,432 B: 1024 FLOP per byte over the link
  const std::string text =
      "name: link\nsettings: {parallel: {tensor: 8}}\nplatforms: [h100_sxm]\nnetworks:\n"
      "  - {model: hf, args: {config: ../tests/data/hf/llama3_1_70b.json, seq: 2048}}\n";
  Scenario s = parse_scenario(text, src("scenarios/t.yaml"));
  RunResult r = run(s);
  PlotSpec p = roofline_spec({"h100_sxm"});
  p.intensity = "interconnect";
  p.roofs = "theoretical";
  auto d = draw_first(p, r, s);
  const double flops = 2 * 2048 * 8192.0 * 8192 / 8, bytes = 2048 * 8192 * 2.0;
  CHECK(flops / bytes == 1024);
  CHECK(d->fig.data_csv.find("platform,network,label,point,op,comm_intensity,performance_flops_per_s,bound\n") == 0);
  // its rate: FLOPs over the longer of its compute (34.36e9 / 989.5e12 = 34.7 µs) and its ring
  // all-reduce (2 · 7/8 · 33,554,432 / 450e9 + 14 · 1 µs = 144.49 µs)
  const double ring = 2 * 7.0 / 8 * bytes / 450e9 + 14e-6;
  const std::string line = d->fig.data_csv.substr(d->fig.data_csv.find("layer.0.o_proj,"));
  CHECK(line.find(",1024,") != std::string::npos);
  CHECK(line.substr(0, line.find('\n')).find(",interconnect") != std::string::npos);
  bool at_rate = false;
  for (const plots::Point& q : d->fig.figure.points) at_rate = at_rate || (q.at.x == Approx(1024) && q.at.y == Approx(flops / ring).epsilon(1e-9));
  CHECK(at_rate);
  // the roofs: NVLink 4 (450 GB/s, ridge 989.5e12 / 450e9 = 2198.9) and InfiniBand NDR (50 GB/s, ridge 19,790)
  bool nvlink = false, ib = false;
  for (const auto& l : d->fig.figure.lines) {
    nvlink = nvlink || (l.pts.back().x == Approx(989.5e12 / 450e9) && l.pts.back().y == Approx(989.5e12));
    ib = ib || (l.pts.back().x == Approx(989.5e12 / 50e9) && l.pts.back().y == Approx(989.5e12));
  }
  CHECK(nvlink);
  CHECK(ib);
  CHECK(d->fig.figure.x.title == "Communication intensity [FLOP/link byte]");
  CHECK(has_text(d->rec, "NVLink 4 450 GB/s"));
  // layers that do not communicate (q_proj, column-parallel) are not on it
  CHECK(d->fig.data_csv.find("layer.0.q_proj,") == std::string::npos);
  // a platform without links cannot draw it
  Scenario s2 = parse_scenario("name: l\nplatforms: [l4]\nnetworks:\n  - {name: n, input: [1, 8], layers: [{name: a, op: linear, out_features: 8}]}\n",
                               src("scenarios/t.yaml"));
  RunResult r2 = run(s2);
  PlotSpec p2 = roofline_spec({"l4"});
  p2.intensity = "interconnect";
  CHECK_THROWS_WITH(build_figures(p2, r2, s2), Catch::Contains("needs a platform with interconnect: levels; l4 states none"));
}

TEST_CASE("heatmap numbers: 3 or 2 significant digits with a k/M/G prefix as on axis ticks, whole numbers never as exponents", "[plots]") {
  using layout::heat_number;
  CHECK(heat_number(104, 2) == "104");     // %.2g would print 1e+02: a paper heatmap's cells then never fit
  CHECK(heat_number(104, 3) == "104");
  CHECK(heat_number(12345, 2) == "12 k");   // 12.345 k to 2 digits
  CHECK(heat_number(12345, 3) == "12.3 k");
  CHECK(heat_number(1234, 2) == "1.2 k");
  CHECK(heat_number(999.7, 3) == "1 k");    // 0.9997 k rounds to 1.00 k
  CHECK(heat_number(4.8312, 3) == "4.83");
  CHECK(heat_number(0.0012345, 3) == "0.0012");  // under 0.01: two digits
  CHECK(heat_number(2.5e9, 3) == "2.5 G");
  CHECK(heat_number(0, 3) == "0");
}

TEST_CASE("roofline: the layers of several networks are told apart by marker, the key naming network · phase", "[plots][newcomer]") {
  // Failing case first: both networks' layers were drawn with the op's marker and one colour per
  // bound, and nothing said which network a point belongs to. Now the marker is the network's, and
  // the key's entries are "llama3_8b · decode" (its phase, which its name does not say) and "resnet50".
  const std::string y =
      "name: two\nplatforms: [h100_sxm]\nnetworks:\n  - {model: llama3_8b, args: {phase: decode, context: 512}}\n  - {model: resnet50}\n";
  Scenario s = parse_scenario(y, src("scenarios/two.yaml"));
  RunResult r = run(s);
  auto d = draw_first(roofline_spec(), r, s);
  std::vector<std::string> keys;
  for (const LegendEntry& e : d->fig.figure.legend)
    if (e.has_marker && e.fill.r == e.fill.g) keys.push_back(e.text);  // (the grey shape samples)
  CHECK(keys == std::vector<std::string>{"llama3_8b · decode", "resnet50"});
  // two shapes on the chart: one per network
  std::set<int> shapes;
  for (const plots::Point& p : d->fig.figure.points)
    if (p.marker != Marker::Diamond) shapes.insert(static_cast<int>(p.marker));
  CHECK(shapes.size() == 2);
  // networks as points: each labelled with its phase too
  PlotSpec nets = roofline_spec();
  nets.points = "networks";
  auto n = draw_first(nets, r, s);
  CHECK(has_text(n->rec, "llama3_8b · decode"));
}

TEST_CASE("compare: each platform's time in its parts, over a baseline's, the speedup after each bar", "[plots][newcomer]") {
  // A ReLU over 1,000,000 fp32 elements: 4 MB read + 4 MB written = 8,000,000 B, 1,000,000 FLOPs
  // (1 µs at 1 TFLOP/s: memory bound on both). slow: 8e6 B / 100 GB/s = 80 µs + 1 µs launch = 81 µs;
  // fast: 8e6 / 200 GB/s = 40 µs + 1 µs = 41 µs. Over slow: fast's memory part 40/81, its launch 1/81,
  // the speedup 81 / 41 = 1.9756 → "1.98×"; slow 1 → "1.00× (baseline)".
  const std::string y =
      "name: cmp\nplatforms:\n"
      "  - {name: slow, compute: [{name: vec, dtypes: [fp32], peak: 1 TFLOP/s}], memory: [{name: dram, bandwidth: 100 GB/s}], runtime: {launch_overhead: 1 us}}\n"
      "  - {name: fast, compute: [{name: vec, dtypes: [fp32], peak: 1 TFLOP/s}], memory: [{name: dram, bandwidth: 200 GB/s}], runtime: {launch_overhead: 1 us}}\n"
      "networks:\n  - name: n\n    inputs: {x: [1, 1000000]}\n    layers: [{name: r, op: relu, inputs: [x]}]\n";
  Scenario s = parse_scenario(y, "cmp.yaml");
  RunResult r = run(s);
  PlotSpec spec;
  spec.kind = Kind::Compare;
  spec.baseline = "slow";
  auto d = draw_first(spec, r, s);
  const Figure& f = d->fig.figure;
  CHECK(f.stacked);
  // the first platform on top: the axis runs bottom to top, so the categories are reversed
  CHECK(f.y.categories == std::vector<std::string>{"fast", "slow"});
  CHECK(f.bar_labels == std::vector<std::string>{"1.98×", "1.00× (baseline)"});
  REQUIRE(f.bars.size() == 2);  // the parts that occur: memory-bound work, launches
  CHECK(f.bars[0].legend == "work: memory-bound kernels");
  CHECK(f.bars[0].values[0] == Approx(40.0 / 81).epsilon(1e-12));
  CHECK(f.bars[0].values[1] == Approx(80.0 / 81).epsilon(1e-12));
  CHECK(f.bars[1].legend == "overhead: kernel launches");
  CHECK(f.bars[1].values[0] == Approx(1.0 / 81).epsilon(1e-12));
  CHECK(f.x.title == "Time relative to slow (= 1)");
  CHECK(f.title == "Speedup over slow — n");
  CHECK(d->fig.data_csv.find("n,fast,4.1e-05,0,4e-05,1e-06,0,0,0,memory,1.9756097560975") != std::string::npos);
  check_layout(*d);
  // without a baseline: the times in seconds
  PlotSpec times;
  times.kind = Kind::Compare;
  auto t = draw_first(times, r, s);
  CHECK(t->fig.figure.bar_labels == std::vector<std::string>{"41 µs", "81 µs"});
  CHECK(t->fig.figure.bars[0].values[1] == Approx(80e-6).epsilon(1e-12));
  check_layout(*t);
}

TEST_CASE("compare: a baseline that is not a platform of the figure is a located error with a suggestion", "[plots][errors]") {
  const std::filesystem::path dir = scratch_dir("compare_baseline");
  const std::string f = (dir / "c.yaml").string();
  std::ofstream(f) << "name: c\nplatforms: [h100_sxm, h200]\nnetworks:\n  - {model: resnet50}\nplots:\n  - {kind: compare, baseline: h100}\n";
  const CliOut o = cli({"run", f, "--out", (dir / "out").string()});
  CHECK(o.code == 1);
  CHECK(o.err.find(f + ":6:31: error: baseline 'h100' is not a platform of this figure") != std::string::npos);
  CHECK(o.err.find("h100_sxm") != std::string::npos);
  CHECK_FALSE(std::filesystem::exists(dir / "out"));
  std::filesystem::remove_all(dir);
}

TEST_CASE("serving_curve: a serving.csv column against the swept rate, a line per platform, the SLO dashed", "[plots][serving]") {
  // two runs (rate 5 and 10) on one platform with TTFT p99 0.2 s and 1.5 s, a TTFT target of 1 s:
  // one line through (5, 0.2) and (10, 1.5), the rates as the ticks, a dashed reference at 1 s
  rsim::serving::ServingTables t;
  for (const auto& [rate, p99] : std::vector<std::pair<std::string, double>>{{"5", 0.2}, {"10", 1.5}}) {
    rsim::serving::ServedRun r;
    r.bindings = {{"rate", rate}}, r.platform = "h100_sxm", r.network = "llama3_8b";
    r.summary.ttft[3] = p99;
    r.slo.ttft_s = 1;
    t.runs.push_back(r);
  }
  Scenario s = parse_scenario("name: sv\nplatforms: [h100_sxm]\nnetworks:\n  - {model: llama3_8b}\nsweep: {grid: {rate: [5, 10]}}\n", src("scenarios/sv.yaml"));
  PlotSpec spec;
  spec.kind = Kind::ServingCurve, spec.x = "rate", spec.y = "ttft_p99_s";
  const auto figs = serving_figures(spec, t, s);
  REQUIRE(figs.size() == 1);
  const Figure& f = figs[0].figure;
  REQUIRE(f.lines.size() == 1);
  CHECK(f.lines[0].pts.size() == 2);
  CHECK(f.lines[0].pts[1].x == 10);
  CHECK(f.lines[0].pts[1].y == 1.5);
  CHECK(f.x.ticks == std::vector<double>{5, 10});
  REQUIRE(f.refs.size() == 1);
  CHECK_FALSE(f.refs[0].vertical);
  CHECK(f.refs[0].value == 1);
  CHECK(f.y.title == "TTFT p99 [s]");
  CHECK(figs[0].name == "serving_ttft_p99_s_vs_rate");
  RecordingRenderer rec;
  const DrawReport rep = draw(f, rec);
  for (const Rect& r : rep.texts) CHECK(r.inside(rep.canvas));
}

TEST_CASE("timeline: a served run's running and waiting requests second by second", "[plots][serving]") {
  // samples at t = 1 and 2 s: running 3 then 5, waiting 7 then 0: two lines through those points
  rsim::serving::ServingTables t;
  rsim::serving::ServedRun r;
  r.platform = "rtx4090", r.network = "llama3_8b", r.kv_blocks = 100;
  r.sim.timeline.resize(3);
  for (int k = 0; k < 3; ++k) r.sim.timeline[static_cast<size_t>(k)].t = k;
  r.sim.timeline[1].running = 3, r.sim.timeline[1].waiting = 7;
  r.sim.timeline[2].running = 5, r.sim.timeline[2].waiting = 0;
  t.runs.push_back(r);
  Scenario s = parse_scenario("name: tl\nplatforms: [rtx4090]\nnetworks:\n  - {model: llama3_8b}\n", src("scenarios/tl.yaml"));
  PlotSpec spec;
  spec.kind = Kind::Timeline, spec.y = "requests";
  const auto figs = serving_figures(spec, t, s);
  REQUIRE(figs.size() == 1);
  const Figure& f = figs[0].figure;
  REQUIRE(f.lines.size() == 2);
  CHECK(f.lines[0].pts.size() == 2);  // (the sample at 0 is the run's start: not drawn)
  CHECK(f.lines[0].pts[1].y == 5);
  CHECK(f.lines[1].pts[0].y == 7);
  CHECK(f.legend.at(0).text == "running");
  CHECK(figs[0].name == "timeline_requests");
  CHECK(figs[0].data_csv.find("2,5,0,") != std::string::npos);
}

TEST_CASE("latency_cdf: the share of requests at or below each TTFT, a line per run, percentiles dotted, the SLO dashed", "[plots][serving]") {
  // four finished requests with TTFTs 1, 2, 3 and 4 s (arrivals at 0) and one unfinished: the
  // empirical distribution steps 0 → 1/4 at 1 s, → 2/4 at 2 s, → 3/4 at 3 s, → 1 at 4 s; the SLO of 2.5 s
  // a vertical dashed line; p50, p90, p99 horizontal.
  rsim::serving::ServingTables t;
  rsim::serving::ServedRun r;
  r.platform = "rtx4090", r.network = "llama3_8b";
  r.slo.ttft_s = 2.5;
  for (int k = 1; k <= 4; ++k) {
    rsim::serving::Outcome o;
    o.arrival_s = 0, o.first_token_s = k, o.finish_s = k + 1, o.output = 2;
    r.sim.requests.push_back(o);
  }
  r.sim.requests.push_back(rsim::serving::Outcome{});  // no times: not counted
  t.runs.push_back(r);
  Scenario s = parse_scenario("name: cdf\nplatforms: [rtx4090]\nnetworks:\n  - {model: llama3_8b}\n", src("scenarios/cdf.yaml"));
  PlotSpec spec;
  spec.kind = Kind::LatencyCdf, spec.y = "ttft", spec.point = -1;
  const auto figs = serving_figures(spec, t, s);
  REQUIRE(figs.size() == 1);
  const Figure& f = figs[0].figure;
  REQUIRE(f.lines.size() == 1);
  const std::vector<P>& pts = f.lines[0].pts;
  REQUIRE(pts.size() == 8);  // each order statistic: the step's foot and its top
  const double expect[8][2] = {{1, 0}, {1, 0.25}, {2, 0.25}, {2, 0.5}, {3, 0.5}, {3, 0.75}, {4, 0.75}, {4, 1}};
  for (size_t i = 0; i < 8; ++i) {
    CHECK(pts[i].x == expect[i][0]);
    CHECK(pts[i].y == expect[i][1]);
  }
  REQUIRE(f.refs.size() == 4);
  CHECK(f.refs[3].vertical);
  CHECK(f.refs[3].value == 2.5);
  CHECK(f.refs[0].value == 0.5);
  CHECK(f.legend.at(0).text == "llama3_8b on rtx4090");
  CHECK(figs[0].name == "cdf_ttft");
  CHECK(f.title == "Time to first token distribution — llama3_8b");
  CHECK(figs[0].data_csv.find("0,rtx4090,llama3_8b,0.5,2\n") != std::string::npos);
}
