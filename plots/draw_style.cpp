// The palette, markers, dashes, axis ticks and their labels, and rotated text boxes.
#include "plots/draw.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace rsim::plots {

Color rgb(unsigned hex, double alpha) {
  return Color{((hex >> 16) & 0xFF) / 255.0, ((hex >> 8) & 0xFF) / 255.0, (hex & 0xFF) / 255.0, alpha};
}

Color palette(size_t i) {
  // Okabe–Ito, reordered so neighbours differ in lightness as well as hue
  static const unsigned c[] = {0x0072B2, 0xD55E00, 0x009E73, 0xCC79A7, 0xE69F00, 0x56B4E9, 0x000000, 0x999933};
  return rgb(c[i % 8]);
}

Marker marker_cycle(size_t i) {
  static const Marker m[] = {Marker::Circle,   Marker::Square,  Marker::TriangleUp, Marker::Diamond,
                             Marker::TriangleDown, Marker::Pentagon, Marker::Hexagon, Marker::Cross};
  return m[i % 8];
}

Dash dash_cycle(size_t i) {
  static const Dash d[] = {Dash::Solid, Dash::Dashed, Dash::DashDot, Dash::Dotted};
  return d[i % 4];
}

Color bound_color(const std::string& bound) {
  // dark blue and light orange: apart in hue and in greyscale (luminance ≈ 0.38 vs 0.62)
  if (bound == "memory") return rgb(0x0072B2);
  if (bound == "compute") return rgb(0xE69F00);
  if (bound == "interconnect") return rgb(0x009E73);  // bluish green: a third hue, between the two in luminance
  return rgb(0x777777);
}

Color viridis(double t) {
  static const double stops[][3] = {{0.267, 0.005, 0.329}, {0.229, 0.322, 0.546}, {0.128, 0.567, 0.551},
                                    {0.369, 0.789, 0.383}, {0.993, 0.906, 0.144}};
  t = std::clamp(t, 0.0, 1.0) * 4;
  int i = std::min(3, static_cast<int>(t));
  double f = t - i;
  Color c;
  c.r = stops[i][0] + (stops[i + 1][0] - stops[i][0]) * f;
  c.g = stops[i][1] + (stops[i + 1][1] - stops[i][1]) * f;
  c.b = stops[i][2] + (stops[i + 1][2] - stops[i][2]) * f;
  return c;
}

static double nice_step(double span, int target) {
  double raw = span / target;
  double mag = std::pow(10, std::floor(std::log10(raw)));
  for (double m : {1.0, 2.0, 2.5, 5.0, 10.0})
    if (m * mag >= raw) return m * mag;
  return 10 * mag;
}

std::vector<double> major_ticks(const Axis& a) {
  std::vector<double> t;
  if (!a.ticks.empty()) return a.ticks;
  if (!a.categories.empty()) {
    for (size_t i = 0; i < a.categories.size(); ++i) t.push_back(static_cast<double>(i));
    return t;
  }
  if (a.scale == Scale::Log) {
    int lo = static_cast<int>(std::ceil(std::log10(a.min) - 1e-9));
    int hi = static_cast<int>(std::floor(std::log10(a.max) + 1e-9));
    int step = std::max(1, (hi - lo + 1 + 7) / 8);  // at most ~8 labelled decades
    for (int k = lo; k <= hi; k += step) t.push_back(std::pow(10.0, k));
    if (t.size() < 2) {  // less than a decade: label 1-2-5 steps inside it
      t.clear();
      for (int k = lo - 1; k <= hi; ++k)
        for (double m : {1.0, 2.0, 5.0}) {
          double v = m * std::pow(10.0, k);
          if (v >= a.min * (1 - 1e-9) && v <= a.max * (1 + 1e-9)) t.push_back(v);
        }
    }
    return t;
  }
  double step = nice_step(a.max - a.min, 6);
  for (double v = std::ceil(a.min / step - 1e-9) * step; v <= a.max + step * 1e-9; v += step) t.push_back(std::fabs(v) < step * 1e-9 ? 0 : v);
  return t;
}

std::vector<double> minor_ticks(const Axis& a) {
  std::vector<double> t;
  if (a.scale != Scale::Log || !a.categories.empty()) return t;
  int lo = static_cast<int>(std::floor(std::log10(a.min)));
  int hi = static_cast<int>(std::ceil(std::log10(a.max)));
  if (hi - lo > 12) return t;
  for (int k = lo; k <= hi; ++k)
    for (int m = 2; m <= 9; ++m) {
      double v = m * std::pow(10.0, k);
      if (v > a.min && v < a.max) t.push_back(v);
    }
  return t;
}

std::string tick_label(double v, const Axis& a) {
  if (!a.categories.empty()) {
    size_t i = static_cast<size_t>(std::llround(v));
    return i < a.categories.size() ? a.categories[i] : "";
  }
  if (a.binary) {
    static const struct {
      double f;
      const char* p;
    } bin[] = {{1099511627776.0, " Ti"}, {1073741824.0, " Gi"}, {1048576.0, " Mi"}, {1024.0, " Ki"}, {1, ""}};
    char b[40];
    for (const auto& st : bin)
      if (std::fabs(v) >= st.f || st.f == 1) {
        std::snprintf(b, sizeof b, "%g%s", v / st.f, st.p);
        return b;
      }
  }
  if (a.divisor > 0) {
    char b[32];
    double x = v / a.divisor;
    std::snprintf(b, sizeof b, "%g", std::fabs(x) < 1e-12 ? 0.0 : x);
    return b;
  }
  static const struct {
    double f;
    const char* p;
  } steps[] = {{1e18, "E"}, {1e15, "P"}, {1e12, "T"}, {1e9, "G"}, {1e6, "M"}, {1e3, "k"}, {1, ""}, {1e-3, "m"}, {1e-6, "µ"}, {1e-9, "n"}, {1e-12, "p"}};
  char buf[64];
  if (v == 0) return "0";
  double av = std::fabs(v);
  // a prefix from 10 k on, or from 1 k on an axis that reaches 100 k (never "1000" beside "10 k")
  bool si = !a.unit.empty() || av >= (a.max >= 1e5 * 0.9999 ? 1e3 * 0.9999 : 1e4) || av < 1e-3;
  if (!si) {
    std::snprintf(buf, sizeof buf, "%g", v);
    return buf;
  }
  for (const auto& s : steps)
    if (av >= s.f * 0.9999) {
      std::snprintf(buf, sizeof buf, "%g", v / s.f);
      std::string out = buf;
      std::string suffix = std::string(s.p) + a.unit;
      return suffix.empty() ? out : out + " " + suffix;
    }
  std::snprintf(buf, sizeof buf, "%g", v);
  return buf;
}

Rect Quad::bounds() const {
  double x0 = c[0].x, x1 = c[0].x, y0 = c[0].y, y1 = c[0].y;
  for (const P& p : c) x0 = std::min(x0, p.x), x1 = std::max(x1, p.x), y0 = std::min(y0, p.y), y1 = std::max(y1, p.y);
  return Rect{x0, y0, x1 - x0, y1 - y0};
}

static bool separated(const P* a, int na, const P* b, int nb, double pad) {
  // try the edge normals of both polygons as separating axes
  for (int pass = 0; pass < 2; ++pass) {
    const P* poly = pass ? b : a;
    int n = pass ? nb : na;
    for (int i = 0; i < n; ++i) {
      P e{poly[(i + 1) % n].x - poly[i].x, poly[(i + 1) % n].y - poly[i].y};
      double len = std::hypot(e.x, e.y);
      if (len == 0) continue;
      P axis{-e.y / len, e.x / len};
      double amin = 1e300, amax = -1e300, bmin = 1e300, bmax = -1e300;
      for (int k = 0; k < na; ++k) {
        double d = a[k].x * axis.x + a[k].y * axis.y;
        amin = std::min(amin, d), amax = std::max(amax, d);
      }
      for (int k = 0; k < nb; ++k) {
        double d = b[k].x * axis.x + b[k].y * axis.y;
        bmin = std::min(bmin, d), bmax = std::max(bmax, d);
      }
      if (amax + pad < bmin || bmax + pad < amin) return true;
    }
  }
  return false;
}

bool quad_overlaps(const Quad& q, const Rect& r, double pad) {
  P b[4] = {{r.x, r.y}, {r.x + r.w, r.y}, {r.x + r.w, r.y + r.h}, {r.x, r.y + r.h}};
  return !separated(q.c, 4, b, 4, pad);
}

bool quads_overlap(const Quad& a, const Quad& b, double pad) { return !separated(a.c, 4, b.c, 4, pad); }

}  // namespace rsim::plots
