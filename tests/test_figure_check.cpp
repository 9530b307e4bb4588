// A machine check of every figure (issue 29): every shipped scenario's plots (its own, else the
// default ones) in every style — screen, paper, paper-wide, slides — drawn through the recording
// renderer, and from the texts it drew and their measured boxes:
//   - no text extends past the page;
//   - no two text boxes overlap (labels may cross lines, never other text);
//   - no title, axis title or the user's own title is cut short with "…";
//   - every legend entry has a drawn sample (a line, a marker or a bar) on its row, and the
//     sample's colour is drawn outside the legend too (a grey sample stands for a form: its
//     marker shape, dash or hatching is drawn outside the legend);
//   - a point label without a leader line is not clearly nearer another marker than its own.
// It is how the next figure defect gets caught before a reader sees it.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <sstream>

#include "helpers.hpp"
#include "plots/charts.hpp"
#include "plots/draw.hpp"
#include "plots/recording_renderer.hpp"

using namespace rsim;
using namespace rsim::plots;
using namespace rsim::test;
namespace fs = std::filesystem;

namespace {

// Whether two boxes share more than a sliver (0.5 pt either way: glyph boxes touch at their edges).
bool overlap(const Rect& a, const Rect& b) {
  const double w = std::min(a.x + a.w, b.x + b.w) - std::max(a.x, b.x), h = std::min(a.y + a.h, b.y + b.h) - std::max(a.y, b.y);
  return w > 0.5 && h > 0.5;
}

// "Time, derated ro… [ms]" cut from "Time, derated roofs [ms]": a shortened form of `full`
bool cut_from(const std::string& text, const std::string& full) {
  const size_t e = text.find("…");
  if (e == std::string::npos || full.empty()) return false;
  const std::string head = text.substr(0, e);
  return !head.empty() && full.compare(0, head.size(), head) == 0 && text != full;
}

bool same_rgb(const Color& a, const Color& b) { return std::fabs(a.r - b.r) < 1e-6 && std::fabs(a.g - b.g) < 1e-6 && std::fabs(a.b - b.b) < 1e-6; }
bool grey(const Color& c) { return std::fabs(c.r - c.g) < 1e-6 && std::fabs(c.g - c.b) < 1e-6; }
bool inside(const Rect& box, P p) { return p.x >= box.x - 0.5 && p.x <= box.x + box.w + 0.5 && p.y >= box.y - 0.5 && p.y <= box.y + box.h + 0.5; }
P centre(const Rect& r) { return {r.x + r.w / 2, r.y + r.h / 2}; }

// Each text in the legend box is an entry: its sample is what is drawn on its row, left of it.
std::vector<std::string> check_legend(const RecordingRenderer& rec, const DrawReport& rep, const std::string& where) {
  std::vector<std::string> bad;
  const Rect& L = rep.legend;
  if (L.w <= 0) return bad;
  for (size_t i = 0; i < rep.texts.size() && i < rec.texts.size(); ++i) {
    const Rect& t = rep.texts[i];
    if (!inside(L, centre(t))) continue;
    const double y = t.y + t.h / 2, tol = t.h * 0.75;
    const std::string what = where + ": legend entry '" + rec.texts[i].s + "'";
    auto on_row = [&](P p) { return inside(L, p) && std::fabs(p.y - y) < tol && p.x < t.x; };
    // the sample: a line, a marker, a bar (the legend's own background is not one)
    const RecordingRenderer::Polyline* line = nullptr;
    const RecordingRenderer::MarkerCall* mark = nullptr;
    const RecordingRenderer::RectCall* bar = nullptr;
    for (const auto& l : rec.lines)
      if (!l.pts.empty() && on_row(l.pts.front()) && on_row(l.pts.back())) line = &l;
    for (const auto& m : rec.markers)
      if (on_row(m.at)) mark = &m;
    for (const auto& f : rec.fills)
      if (f.r.w < L.w - 1 && on_row(centre(f.r)) && f.fill.a > 0) bar = &f;
    if (!line && !mark && !bar) {
      bad.push_back(what + " has no drawn sample");
      continue;
    }
    // outside the legend: the same colour, or for a grey sample the same form
    auto outside = [&](P p) { return !inside(L, p); };
    if (mark) {
      const bool hollow = same_rgb(mark->fill, rgb(0xFFFFFF));
      const Color c = hollow ? mark->stroke : mark->fill;
      bool found = false;
      for (const auto& m : rec.markers)
        if (outside(m.at) && (grey(c) ? m.m == mark->m && (!hollow || same_rgb(m.fill, rgb(0xFFFFFF)))
                                      : same_rgb(m.fill, c) || (same_rgb(m.fill, rgb(0xFFFFFF)) && same_rgb(m.stroke, c))))  // (a series drawn hollow only: none of it fits)
          found = true;
      for (const auto& f : rec.fills)  // a bound colour on a bar chart
        if (!grey(c) && outside(centre(f.r)) && same_rgb(f.fill, c)) found = true;
      if (!found) bad.push_back(what + ": its marker is drawn nowhere outside the legend in its " + (grey(c) ? "shape" : "colour"));
    }
    if (line) {
      const LineStyle& st = line->style;
      bool found = false;
      for (const auto& l : rec.lines)
        if (!l.pts.empty() && outside(l.pts.front()) && (grey(st.color) ? l.style.dash == st.dash : same_rgb(l.style.color, st.color))) found = true;
      if (!found) bad.push_back(what + ": its line is drawn nowhere outside the legend in its " + (grey(st.color) ? "dash" : "colour"));
    }
    if (bar && !mark && !line) {
      bool found = false;
      for (const auto& f : rec.fills)
        if (outside(centre(f.r)) && f.r.w < rep.canvas.w / 2 + rep.plot.w && (grey(bar->fill) || same_rgb(f.fill, bar->fill))) found = true;
      if (!found) bad.push_back(what + ": its bar is drawn nowhere outside the legend");
    }
  }
  return bad;
}

std::vector<std::string> check_figure(const BuiltFigure& b, const std::string& where) {
  std::vector<std::string> bad;
  RecordingRenderer rec;
  const DrawReport rep = draw(b.figure, rec);
  const Rect& page = rep.canvas;
  for (size_t i = 0; i < rep.texts.size() && i < rec.texts.size(); ++i) {
    const Rect& t = rep.texts[i];
    const std::string& s = rec.texts[i].s;
    if (t.x < page.x - 0.5 || t.y < page.y - 0.5 || t.x + t.w > page.x + page.w + 0.5 || t.y + t.h > page.y + page.h + 0.5)
      bad.push_back(where + ": '" + s + "' extends past the page (" + std::to_string(t.x) + ".." + std::to_string(t.x + t.w) + " of " + std::to_string(page.w) + ")");
    // a slanted label's box (a tick label at 45°, a roof's value along its line) is its bounds,
    // far larger than its glyphs: level and upright texts are judged by their boxes here, the
    // labels along lines by their quads below
    auto slanted = [&](size_t k) {
      const double a = std::fmod(std::fabs(rec.texts[k].angle), M_PI / 2);
      return a > 0.01 && a < M_PI / 2 - 0.01;
    };
    for (size_t j = i + 1; j < rep.texts.size() && j < rec.texts.size(); ++j)
      if (!slanted(i) && !slanted(j) && overlap(t, rep.texts[j])) bad.push_back(where + ": '" + s + "' overlaps '" + rec.texts[j].s + "'");
    if (!slanted(i))
      for (const Quad& q : rep.line_labels) {
        const Rect qb = q.bounds();
        const bool itself = std::fabs(qb.x - t.x) < 1.5 && std::fabs(qb.y - t.y) < 1.5 && std::fabs(qb.w - t.w) < 3 && std::fabs(qb.h - t.h) < 3;
        if (!itself && quad_overlaps(q, Rect{t.x + 0.5, t.y + 0.5, t.w - 1, t.h - 1})) bad.push_back(where + ": '" + s + "' overlaps a label along a line");
      }
    for (const std::string* full : {&b.figure.title, &b.figure.x.title, &b.figure.y.title})
      if (cut_from(s, *full)) bad.push_back(where + ": '" + s + "' is cut short (from '" + *full + "')");
  }
  for (auto& m : check_legend(rec, rep, where)) bad.push_back(m);
  auto gap = [](P m, const Rect& b) { return std::hypot(std::max({b.x - m.x, 0.0, m.x - b.x - b.w}), std::max({b.y - m.y, 0.0, m.y - b.y - b.h})); };
  for (size_t i = 0; i < rep.point_labels.size(); ++i) {
    if (rep.point_label_leader.at(i)) continue;
    const double own = gap(rep.point_label_at.at(i), rep.point_labels[i]);
    for (const auto& m : rec.markers)
      // (markers on top of each other, under 3 pt apart, no label tells apart)
      if (!(rep.legend.w > 0 && inside(rep.legend, m.at)) && std::hypot(m.at.x - rep.point_label_at[i].x, m.at.y - rep.point_label_at[i].y) > 3 && gap(m.at, rep.point_labels[i]) < own - 1) {
        bad.push_back(where + ": a point label without a leader is nearer another marker than its own");
        break;
      }
  }
  return bad;
}

}  // namespace

TEST_CASE("every figure of every shipped scenario, in every style: inside the page, no text over text, no title cut short", "[plots][figure-check]") {
  std::vector<fs::path> files;
  for (const auto& e : fs::directory_iterator(src("scenarios")))
    if (e.path().extension() == ".yaml") files.push_back(e.path());
  std::sort(files.begin(), files.end());
  REQUIRE(files.size() >= 20);
  std::vector<std::string> bad;
  size_t figures = 0;
  for (const auto& f : files) {
    Scenario s = load_scenario(f.string());
    RunResult r = run(s);
    Diags d;
    std::vector<PlotSpec> specs;
    if (!s.plots.is_null()) specs = parse_plot_specs(s.plots, sweep_names(s.sweep), d);
    apply_figure_defaults(specs, s.settings, d);
    INFO(f.filename().string() << ": " << (d.empty() ? std::string() : ConfigError(d.list()).what()));
    REQUIRE(d.empty());
    if (specs.empty()) specs = default_plot_specs(r, s);
    for (const char* style : {"screen", "paper", "paper-wide", "slides"})
      for (PlotSpec spec : specs) {
        spec.style = style;
        spec.given = {"style"};
        spec.physical = false;
        for (const BuiltFigure& b : build_figures(spec, r, s)) {
          ++figures;
          for (auto& m : check_figure(b, f.filename().string() + " " + b.name + " (" + style + ")")) bad.push_back(m);
        }
      }
  }
  std::ostringstream all;
  for (const auto& m : bad) all << m << "\n";
  if (!bad.empty()) std::printf("%s", all.str().c_str());  // one per line, for reading
  INFO(figures << " figures checked; " << bad.size() << " defects (listed above)");
  CHECK(figures > 100);
  CHECK(bad.empty());
}

TEST_CASE("the figure check's legend rule finds a legend entry without a sample and a colour drawn nowhere else", "[plots][figure-check]") {
  // a trend-like figure: one blue line with circles, and in its legend the blue line, an entry
  // with no sample, and a green line that nothing in the plot is drawn in
  Figure f;
  f.x.min = 0, f.x.max = 10, f.y.min = 0, f.y.max = 10;
  Line blue;
  blue.pts = {{1, 1}, {9, 9}};
  blue.style = LineStyle{palette(0), 1.5};
  f.lines.push_back(blue);
  f.legend.push_back(LegendEntry{"blue series", true, blue.style, false, {}, {}});
  f.legend.push_back(LegendEntry{"words only", false, {}, false, {}, {}});
  f.legend.push_back(LegendEntry{"green series", true, LineStyle{palette(2), 1.5}, false, {}, {}});
  RecordingRenderer rec;
  const DrawReport rep = draw(f, rec);
  REQUIRE(rep.legend.w > 0);
  const std::vector<std::string> bad = check_legend(rec, rep, "t");
  REQUIRE(bad.size() == 2);
  CHECK(bad[0] == "t: legend entry 'words only' has no drawn sample");
  CHECK(bad[1] == "t: legend entry 'green series': its line is drawn nowhere outside the legend in its colour");
}
