// A machine check of every figure (issue 29): every shipped scenario's plots (its own, else the
// default ones) in every style — screen, paper, paper-wide, slides — drawn through the recording
// renderer, and from the texts it drew and their measured boxes:
//   - no text extends past the page;
//   - no two text boxes overlap (labels may cross lines, never other text);
//   - no title, axis title or the user's own title is cut short with "…".
// It is how the next figure defect gets caught before a reader sees it.
#include <catch2/catch.hpp>

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
