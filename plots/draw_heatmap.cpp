// A heatmap's colour scale, cells, values and colour bar.
#include "plots/draw_internal.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "engine/model/units.hpp"

namespace rsim::plots::layout {

// One number format for every value of a heatmap (cells and colour bar), written as axis ticks
// are: three significant digits, a k/M/G prefix after a space from a thousand on ("237",
// "1.03 k", "12.4"), never an exponent (with two digits, 104 is "104", not "1e+02": whole
// numbers keep their integer digits).
std::string heat_number(double x, int digits) {
  if (!std::isfinite(x)) return "–";
  char b[32];
  double ax = std::fabs(x);
  if (ax == 0) return "0";
  static const struct {
    double f;
    const char* p;
  } steps[] = {{1e15, " P"}, {1e12, " T"}, {1e9, " G"}, {1e6, " M"}, {1e3, " k"}, {1, ""}};
  for (const auto& st : steps)
    if (ax >= st.f * 0.9995 || st.f == 1) {
      const double v = x / st.f;
      if (std::fabs(v) >= std::pow(10.0, digits) * 0.9995) std::snprintf(b, sizeof b, "%.0f%s", v, st.p);
      else std::snprintf(b, sizeof b, "%.*g%s", ax >= 0.01 || st.f > 1 ? digits : 2, v, st.p);
      return b;
    }
  return "";  // (not reached: the last step takes every value)
}

HeatScale heat_scale(const Heatmap& h, Renderer& r, double tick_size) {
  HeatScale hs;
  for (const auto& row : h.values)
    for (double v : row)
      if (std::isfinite(v) && (!h.log_colors || v > 0)) hs.lo = std::min(hs.lo, v), hs.hi = std::max(hs.hi, v);
  if (hs.lo > hs.hi) hs.lo = 0, hs.hi = 1;
  if (h.range_hi > h.range_lo) hs.lo = h.range_lo, hs.hi = h.range_hi;  // fixed or shared: values beyond it take the end colours
  hs.axis.scale = h.log_colors ? Scale::Log : Scale::Linear;
  hs.axis.min = hs.lo, hs.axis.max = hs.hi > hs.lo ? hs.hi : hs.lo * 1.0001 + 1e-300;
  hs.title = h.value_label;
  if (!h.value_unit.empty()) {
    static const struct {
      double f;
      const char* p;
    } steps[] = {{1e18, "E"}, {1e15, "P"}, {1e12, "T"}, {1e9, "G"}, {1e6, "M"}, {1e3, "k"}, {1, ""}, {1e-3, "m"}, {1e-6, "µ"}, {1e-9, "n"}, {1e-12, "p"}};
    double top = std::max(std::fabs(hs.lo), std::fabs(hs.hi));
    for (const auto& st : steps)
      if (top >= st.f * 0.9999 || st.f == 1e-12) {
        hs.divisor = st.f;
        std::string unit = std::string(st.p) + h.value_unit, bracket = "[" + h.value_unit + "]";
        size_t k = hs.title.find(bracket);
        if (k != std::string::npos) hs.title.replace(k, bracket.size(), "[" + unit + "]");
        else hs.title += " [" + unit + "]";
        break;
      }
  }
  hs.ticks = major_ticks(hs.axis);
  for (double v : hs.ticks) {
    hs.tick_text.push_back(heat_number(v / hs.divisor));
    hs.tick_w = std::max(hs.tick_w, r.measure(hs.tick_text.back(), tick_size, false).width);
  }
  return hs;
}

double lum_of(const Color& c) { return 0.299 * c.r + 0.587 * c.g + 0.114 * c.b; }

void paint_heatmap(Renderer& r, DrawReport& rep, const Heatmap& h, const HeatScale& hs, const Rect& plot, double canvas_h, const Sizes& Z) {
  const Color kCellText = rgb(0x222222);
  double cw = plot.w / static_cast<double>(h.xcats.size()), ch = plot.h / static_cast<double>(h.ycats.size());
  // the cell texts, in one size that lets every one of them fit (not under 6 pt), three
  // significant digits or, when those cannot fit, two; or no texts at all
  std::vector<std::vector<std::string>> texts;
  double size = Z.label;
  bool annotate = false;
  for (int digits : {3, 2}) {
    texts.assign(h.ycats.size(), {});
    double widest = 0, tall = 0;
    for (size_t yi = 0; yi < h.ycats.size(); ++yi)
      for (size_t xi = 0; xi < h.xcats.size(); ++xi) {
        texts[yi].push_back(heat_number(h.values[yi][xi] / hs.divisor, digits));
        TextBox b = r.measure(texts[yi].back(), Z.label, false);
        widest = std::max(widest, b.width), tall = std::max(tall, b.ascent + b.descent);
      }
    size = widest > cw - 4 ? std::max(6.0, Z.label * (cw - 4) / widest) : Z.label;
    annotate = h.annotate && widest * size / Z.label <= cw - 4 && tall * size / Z.label <= ch - 2;
    if (annotate) break;
  }
  for (size_t yi = 0; yi < h.ycats.size(); ++yi)
    for (size_t xi = 0; xi < h.xcats.size(); ++xi) {
      double v = h.values[yi][xi];
      Rect c{plot.x + cw * static_cast<double>(xi), plot.y + plot.h - ch * static_cast<double>(yi + 1), cw, ch};
      bool valid = std::isfinite(v) && (hs.axis.scale != Scale::Log || v > 0);
      Color col = valid ? viridis(hs.norm(v)) : rgb(0xCCCCCC);
      {  // report.html: the cell's row, column and value
        std::string t = h.ycats[yi] + " · " + h.xcats[xi] + ": ";
        if (!valid) t += "no value";
        else if (!h.value_unit.empty()) t += si(v, h.value_unit, 4);
        else {
          char buf[32];
          std::snprintf(buf, sizeof buf, "%.4g", v);
          t += buf;
        }
        if (!h.value_label.empty()) t += " (" + h.value_label + ")";
        r.tip(t);
      }
      r.rect(c, col, nullptr);
      if (yi < h.over.size() && xi < h.over[yi].size() && h.over[yi][xi]) {  // does not fit in memory: faint hatching
        Color hc = lum_of(col) > 0.5 ? rgb(0x000000) : rgb(0xFFFFFF);
        hc.a = 0.3;
        r.hatch(c, hc);
      }
      if (!annotate) continue;
      double lum = 0.299 * col.r + 0.587 * col.g + 0.114 * col.b;
      TextBox b = r.measure(texts[yi][xi], size, false);
      put_text(r, rep, {c.x + cw / 2, c.y + ch / 2 + b.ascent / 2 - 1}, texts[yi][xi], size, lum > 0.5 ? kCellText : rgb(0xFFFFFF), 0, Anchor::Center, false);
    }
  // colour bar, its ticks in the title's unit, the title beside them
  Rect bar{plot.x + plot.w + 18, plot.y, 12, plot.h};
  const int steps = 64;
  for (int i = 0; i < steps; ++i) {
    double t0 = static_cast<double>(i) / steps;
    r.rect(Rect{bar.x, bar.y + bar.h * (1 - t0 - 1.0 / steps), bar.w, bar.h / steps + 0.3}, viridis(t0 + 0.5 / steps), nullptr);
  }
  LineStyle edge{rgb(0x555555), 0.6};
  r.rect(bar, Color{0, 0, 0, 0}, &edge);
  const double tick = Z.tick - 1;
  for (size_t i = 0; i < hs.ticks.size(); ++i) {
    double yy = bar.y + bar.h * (1 - Transform::frac(hs.axis, hs.ticks[i]));
    r.polyline({{bar.x + bar.w, yy}, {bar.x + bar.w + 3, yy}}, edge);
    put_text(r, rep, {bar.x + bar.w + 5, yy + r.measure("0", tick, false).ascent / 2}, hs.tick_text[i], tick, kCellText, 0, Anchor::Left, false);
  }
  if (!hs.title.empty()) {
    std::string t = hs.title;
    double ts = fit_axis_title(r, t, Z.tick, canvas_h - 10 - (plot.y - 4));
    double half = r.measure(t, ts, false).width / 2;
    P at{0, std::clamp(plot.y + plot.h / 2, plot.y - 4 + half, std::max(plot.y - 4 + half, canvas_h - 10 - half))};
    Rect b = text_rect(r, at, t, ts, M_PI / 2, Anchor::Center, false);
    at.x = bar.x + bar.w + 5 + hs.tick_w + 8 - b.x;
    put_text(r, rep, at, t, ts, kCellText, M_PI / 2, Anchor::Center, false);
  }
}

}  // namespace rsim::plots::layout
