// Painting: grid, bars, lines, axes, points and the numbered key.
#include "plots/draw_internal.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "engine/model/units.hpp"

namespace rsim::plots::layout {

namespace {
// A value as report.html's tooltips write it: the axis's category, or 4 digits with its unit
std::string value_text(const Axis& a, double v) {
  if (!a.categories.empty()) {
    const double i = std::round(v);
    if (i >= 0 && i < static_cast<double>(a.categories.size()) && std::fabs(v - i) < 1e-9) return a.categories[static_cast<size_t>(i)];
  }
  if (!a.unit.empty()) return si(v, a.unit, 4);
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.4g", v);
  return buf;
}
std::string bar_tip(const Figure& f, const BarSeries& b, size_t c) {
  if (c < b.tips.size() && !b.tips[c].empty()) return b.tips[c];
  std::string t = c < f.y.categories.size() ? f.y.categories[c] : std::string();
  if (!b.legend.empty()) t += (t.empty() ? "" : " · ") + b.legend;
  return t + (t.empty() ? "" : ": ") + value_text(f.x, b.values[c]);
}
std::string point_tip(const Figure& f, const Point& pt) {
  if (!pt.tip.empty()) return pt.tip;
  auto axis = [](const Axis& a) { return a.title.empty() ? std::string() : a.title + " "; };
  return (pt.label.empty() ? "" : pt.label + ": ") + axis(f.x) + value_text(f.x, pt.at.x) + ", " + axis(f.y) + value_text(f.y, pt.at.y);
}
}  // namespace

void paint_grid(Pass& p) {
  const Figure& f = p.f;
  const Transform& T = p.T;
  const Rect& plot = p.plot;
  if (!f.grid || p.has_heat) return;
  for (double v : minor_ticks(f.x)) p.r.polyline({{T.tx(v), plot.y}, {T.tx(v), plot.y + plot.h}}, LineStyle{kGridMinor, 0.5});
  for (double v : minor_ticks(f.y)) p.r.polyline({{plot.x, T.ty(v)}, {plot.x + plot.w, T.ty(v)}}, LineStyle{kGridMinor, 0.5});
  if (f.x.categories.empty())
    for (double v : p.xt) p.r.polyline({{T.tx(v), plot.y}, {T.tx(v), plot.y + plot.h}}, LineStyle{kGrid, 0.7});
  if (f.y.categories.empty())
    for (double v : p.yt) p.r.polyline({{plot.x, T.ty(v)}, {plot.x + plot.w, T.ty(v)}}, LineStyle{kGrid, 0.7});
}

namespace {
// Where a stacked bar's label starts: after the bar's end (`end`, in data units), at its middle.
P bar_label_at(Pass& p, size_t c, double end) {
  return P{std::min(p.T.tx(end), p.plot.x + p.plot.w) + 4, p.T.ty(static_cast<double>(c)) + p.r.measure("0", p.Z.label, false).ascent / 2};
}
}  // namespace

// The labels after stacked bars, over the lines (a reference line through a label is cut by the
// label's white ground)
void paint_bar_labels(Pass& p) {
  const Figure& f = p.f;
  if (!f.stacked) return;
  for (size_t c = 0; c < f.y.categories.size() && c < f.bar_labels.size(); ++c) {
    if (f.bar_labels[c].empty()) continue;
    double end = std::max(0.0, f.x.min);
    for (const BarSeries& b : f.bars)
      if (c < b.values.size() && b.values[c] > 0) end += b.values[c];
    const P at = bar_label_at(p, c, end);
    Rect box = text_rect(p.r, at, f.bar_labels[c], p.Z.label, 0, Anchor::Left, false);
    box.x -= 1.5, box.w += 3;
    p.r.rect(box, rgb(0xFFFFFF), nullptr);
    p.text(at, f.bar_labels[c], p.Z.label, kText, 0, Anchor::Left, false);
  }
}

// Horizontal bars, one slot per category, series side by side; hatched bars are the derated ones.
void paint_bars(Pass& p) {
  const Figure& f = p.f;
  if (f.bars.empty()) return;
  Renderer& r = p.r;
  const Transform& T = p.T;
  const Rect& plot = p.plot;
  size_t ncat = f.y.categories.size();
  double slot = plot.h / static_cast<double>(std::max<size_t>(ncat, 1));
  if (f.stacked) {  // the series end to end, one bar per category (its label: paint_bar_labels)
    const double bh = std::min(20.0, slot * 0.72);
    for (size_t c = 0; c < ncat; ++c) {
      const double cy = T.ty(static_cast<double>(c));
      double acc = std::max(0.0, f.x.min);
      for (const BarSeries& b : f.bars) {
        if (c >= b.values.size() || !(b.values[c] > 0)) continue;
        const double x0 = T.tx(acc), x1 = std::min(T.tx(acc + b.values[c]), plot.x + plot.w);
        acc += b.values[c];
        if (x1 <= x0) continue;
        const Rect br{x0, cy - bh / 2, std::max(0.5, x1 - x0), bh};
        p.obs.boxes.push_back(br);
        r.tip(bar_tip(f, b, c));
        r.rect(br, c < b.colors.size() ? b.colors[c] : b.color, nullptr);
      }
      if (c < f.bar_labels.size() && !f.bar_labels[c].empty())  // (room kept for it: the legend avoids it)
        p.obs.boxes.push_back(text_rect(r, bar_label_at(p, c, acc), f.bar_labels[c], p.Z.label, 0, Anchor::Left, false));
    }
    return;
  }
  double nser = static_cast<double>(f.bars.size());
  double bh = std::min(14.0, slot * 0.8 / nser);
  for (size_t c = 0; c < ncat; ++c) {
    double cy = T.ty(static_cast<double>(c));
    for (size_t s = 0; s < f.bars.size(); ++s) {
      const BarSeries& b = f.bars[s];
      if (c >= b.values.size() || !(b.values[c] > 0)) continue;
      double x0 = f.x.scale == Scale::Log ? plot.x : T.tx(std::max(0.0, f.x.min));
      double x1 = std::min(T.tx(b.values[c]), plot.x + plot.w);
      double y0 = cy - bh * nser / 2 + bh * static_cast<double>(s);
      Rect br{x0, y0, std::max(0.5, x1 - x0), bh * 0.92};
      p.obs.boxes.push_back(br);  // the legend must not cover a bar
      Color col = c < b.colors.size() ? b.colors[c] : b.color;
      r.tip(bar_tip(f, b, c));
      if (b.hatched) {
        Color light = col;
        light.a = 0.28;
        r.rect(br, light, nullptr);
        r.hatch(br, col);
        LineStyle st{col, 0.8};
        r.rect(br, Color{0, 0, 0, 0}, &st);
      } else {
        r.rect(br, col, nullptr);
      }
      // a bar longer than the axis (the "others" bar of many layers) ends in a break mark: two
      // slanted gaps near the axis end, so that it does not read as a bar of the axis's length
      if (T.tx(b.values[c]) > plot.x + plot.w + 0.5 && br.w > 24) {
        const LineStyle gap{rgb(0xFFFFFF), 2.2};
        for (double dx : {14.0, 8.0}) {
          const double xb = br.x + br.w - dx;
          r.polyline({{xb - 2.5, br.y + br.h + 1.5}, {xb + 2.5, br.y - 1.5}}, gap);
        }
      }
    }
  }
}

// Reference lines and data lines, clipped to the plot.
void paint_lines(Pass& p) {
  Renderer& r = p.r;
  const Transform& T = p.T;
  const Rect& plot = p.plot;
  r.clip(plot);
  for (const auto& ref : p.f.refs) {
    if (ref.vertical) r.polyline({{T.tx(ref.value), plot.y}, {T.tx(ref.value), plot.y + plot.h}}, ref.style);
    else r.polyline({{plot.x, T.ty(ref.value)}, {plot.x + plot.w, T.ty(ref.value)}}, ref.style);
  }
  for (const auto& L : p.f.lines) {
    std::vector<P> s;
    for (const auto& pt : L.pts) s.push_back(T.to(pt));
    r.polyline(s, L.style);
  }
  r.unclip();
}

// The frame, major and minor ticks with their labels, and the axis titles.
void paint_axes(Pass& p) {
  Renderer& r = p.r;
  const Figure& f = p.f;
  const Transform& T = p.T;
  const Rect& plot = p.plot;
  const double kTick = p.Z.tick, kAxisTitle = p.Z.axis_title;
  LineStyle frame{rgb(0x444444), 0.8};
  r.polyline({{plot.x, plot.y}, {plot.x + plot.w, plot.y}, {plot.x + plot.w, plot.y + plot.h}, {plot.x, plot.y + plot.h}, {plot.x, plot.y}}, frame);
  for (double v : p.xt) {
    double x = T.tx(v);
    r.polyline({{x, plot.y + plot.h}, {x, plot.y + plot.h + 4}}, frame);
    if (p.rotate_x) p.text({x + 3, plot.y + plot.h + 8}, p.xlabel(v), kTick, kText, M_PI / 4, Anchor::Right, false);
    else p.text({x, plot.y + plot.h + 6 + r.measure("0", kTick, false).ascent}, p.xlabel(v), kTick, kText, 0, Anchor::Center, false);
  }
  for (double v : minor_ticks(f.x)) r.polyline({{T.tx(v), plot.y + plot.h}, {T.tx(v), plot.y + plot.h + 2}}, frame);
  // the x tick labels drawn (level ones): a y tick label that would touch one (the corner, where
  // the lowest y label meets the first x label at a large font) is left out, its tick kept
  std::vector<Rect> xlabels;
  if (!p.rotate_x)
    for (double v : p.xt)
      xlabels.push_back(text_rect(r, {T.tx(v), plot.y + plot.h + 6 + r.measure("0", kTick, false).ascent}, p.xlabel(v), kTick, 0, Anchor::Center, false));
  for (double v : p.yt) {
    double y = T.ty(v);
    r.polyline({{plot.x - 4, y}, {plot.x, y}}, frame);
    const P at{plot.x - 6, y + r.measure("0", kTick, false).ascent / 2};
    const Rect box = text_rect(r, at, p.ylabel(v), kTick, 0, Anchor::Right, false);
    if (std::any_of(xlabels.begin(), xlabels.end(), [&](const Rect& x) { return x.overlaps(box); })) continue;
    p.text(at, p.ylabel(v), kTick, kText, 0, Anchor::Right, false);
  }
  for (double v : minor_ticks(f.y)) r.polyline({{plot.x - 2, T.ty(v)}, {plot.x, T.ty(v)}}, frame);
  p.rep.xticks = p.xt;
  p.rep.yticks = p.yt;
  if (!f.x.title.empty()) {  // under the plot's middle, moved (or shrunk) to stay on the canvas when wider than the plot
    std::string t = f.x.title;
    const Rect& cv = p.rep.canvas;
    const double size = fit_axis_title(r, t, kAxisTitle, cv.w - 8), half = r.measure(t, size, false).width / 2;
    const double cx = std::clamp(plot.x + plot.w / 2, cv.x + 4 + half, std::max(cv.x + 4 + half, cv.x + cv.w - 4 - half));
    p.text({cx, f.height - 10 - p.below_h}, t, size, kText, 0, Anchor::Center, false);
  }
  if (!f.y.title.empty()) {
    // beside the plot, from its top to the canvas bottom (never up into the title): a longer
    // title shrinks, then shortens before its unit
    // title shrinks, then shortens before its unit; a long one takes two lines first (the
    // break at the space that leaves the longer line shortest), side by side
    double lo_y = plot.y - 4, hi_y = f.height - 10 - p.below_h;
    std::vector<std::string> lines = {f.y.title};
    if (p.y_title_two) {
      double best = 1e300;
      for (size_t k = f.y.title.find(' '); k != std::string::npos; k = f.y.title.find(' ', k + 1)) {
        const std::string a = f.y.title.substr(0, k), b = f.y.title.substr(k + 1);
        const double w = std::max(r.measure(a, kAxisTitle, false).width, r.measure(b, kAxisTitle, false).width);
        if (w < best) best = w, lines = {a, b};
      }
    }
    double size = kAxisTitle;
    for (auto& l : lines) size = std::min(size, fit_axis_title(r, l, kAxisTitle, hi_y - lo_y));
    const double asc = r.measure(lines.front(), kAxisTitle, false).ascent;
    for (size_t i = 0; i < lines.size(); ++i) {
      double half = r.measure(lines[i], size, false).width / 2;
      double y = std::clamp(plot.y + plot.h / 2, lo_y + half, std::max(lo_y + half, hi_y - half));
      p.text({10 + asc + static_cast<double>(i) * (1.3 * asc + 1), y}, lines[i], size, kText, M_PI / 2, Anchor::Center, false);
    }
  }
}

// Markers; those marked `on_top` (ridge points) last, so data never hides them.
void paint_points(Pass& p) {
  auto paint = [&](const Point& pt) {
    p.r.tip(point_tip(p.f, pt));
    if (pt.hollow) p.r.marker(p.T.to(pt.at), pt.marker, pt.size, rgb(0xFFFFFF), pt.fill);
    else p.r.marker(p.T.to(pt.at), pt.marker, pt.size, pt.fill, rgb(0x222222));
  };
  for (const auto& pt : p.f.points)
    if (!pt.on_top) paint(pt);
  for (const auto& pt : p.f.points)
    if (pt.on_top) paint(pt);
}

// The numbered key beside the chart.
void paint_key(Pass& p, const Plan& plan) {
  if (p.key_lines.empty()) return;
  const double kLabel = p.Z.label;
  // (a legend under the plot takes no room beside it)
  double kx = p.plot.x + p.plot.w + 14 + p.key_gap + p.cbar_w + (plan.legend_outside && !p.legend_below ? p.legend_w + 12 : 0);
  const double ky = p.plot.y + 8;
  p.text({kx, ky}, key_title(p.key_lines), kLabel, kMuted, 0, Anchor::Left, true);
  const size_t rows = std::max<size_t>(1, p.key_rows);
  int drawn = 0;
  for (size_t i = 0; i < p.key_lines.size(); ++i) {
    const double x = kx + static_cast<double>(i / rows) * p.key_col_w;
    const double y = ky + static_cast<double>(i % rows + 1) * kLabel * 1.375;
    if (y > p.f.height - 8) break;  // (layout_key sized the columns so that this never happens)
    p.text({x, y}, p.key_lines[i], kLabel, kText, 0, Anchor::Left, false);
    ++drawn;
  }
  p.rep.numbered = drawn;
}

}  // namespace rsim::plots::layout
