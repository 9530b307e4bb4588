#include "plots/draw.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <functional>

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

// ---------------------------------------------------------------- ticks

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

// ---------------------------------------------------------------- geometry

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

// ---------------------------------------------------------------- layout helpers

namespace {

const Color kText = rgb(0x222222);
const Color kMuted = rgb(0x555555);
const Color kGrid = rgb(0xDDDDDD);
const Color kGridMinor = rgb(0xEEEEEE);
// Text sizes in points, from the figure's base size (9 pt on screen: ticks 9, axis titles 10.5,
// title 13, labels 8); never under 6 pt. `row` is the legend's line pitch, `u` scales paddings.
struct Sizes {
  double tick, axis_title, title, subtitle, label, legend, row, u, line;
};
Sizes sizes_for(const Figure& f) {
  double b = f.font_size;
  auto at_least6 = [](double v) { return std::max(6.0, v); };
  Sizes z;
  z.tick = at_least6(b);
  z.axis_title = at_least6(b * 10.5 / 9);
  z.title = at_least6(b * 13 / 9);
  z.subtitle = at_least6(f.fixed_size ? b * 0.8 : b);  // in print the caption carries the details
  z.label = at_least6(b * 8 / 9);
  z.legend = at_least6(b * 8.5 / 9);
  z.row = f.fixed_size ? z.legend * 1.4 : z.legend * 14 / 8.5;
  z.u = b / 9;
  z.line = f.line_scale;
  return z;
}

struct Transform {
  Rect plot;
  const Axis* x;
  const Axis* y;
  double tx(double v) const { return plot.x + frac(*x, v) * plot.w; }
  double ty(double v) const { return plot.y + plot.h - frac(*y, v) * plot.h; }
  P to(P p) const { return {tx(p.x), ty(p.y)}; }
  static double frac(const Axis& a, double v) {
    if (!a.categories.empty()) return (v - a.min) / (a.max - a.min);
    if (a.scale == Scale::Log) {
      double lv = std::log10(std::max(v, 1e-300));
      return (lv - std::log10(a.min)) / (std::log10(a.max) - std::log10(a.min));
    }
    return (v - a.min) / (a.max - a.min);
  }
};

Quad text_quad(Renderer& r, P at, const std::string& s, double size, double angle, Anchor anchor, bool bold) {
  TextBox b = r.measure(s, size, bold);
  double x0 = anchor == Anchor::Left ? 0 : anchor == Anchor::Center ? -b.width / 2 : -b.width;
  double cs = std::cos(angle), sn = std::sin(angle);
  double xs[4] = {x0, x0 + b.width, x0 + b.width, x0};
  double ys[4] = {-b.ascent, -b.ascent, b.descent, b.descent};
  Quad q;
  for (int i = 0; i < 4; ++i) q.c[i] = P{at.x + xs[i] * cs + ys[i] * sn, at.y - xs[i] * sn + ys[i] * cs};
  return q;
}

Rect text_rect(Renderer& r, P at, const std::string& s, double size, double angle, Anchor anchor, bool bold) {
  TextBox b = r.measure(s, size, bold);
  double x0 = anchor == Anchor::Left ? 0 : anchor == Anchor::Center ? -b.width / 2 : -b.width;
  // corners in text space (y down), rotated counter-clockwise by angle
  double cs = std::cos(angle), sn = std::sin(angle);
  double xs[4] = {x0, x0 + b.width, x0, x0 + b.width};
  double ys[4] = {-b.ascent, -b.ascent, b.descent, b.descent};
  double minx = 1e300, maxx = -1e300, miny = 1e300, maxy = -1e300;
  for (int i = 0; i < 4; ++i) {
    double X = at.x + xs[i] * cs + ys[i] * sn;
    double Y = at.y - xs[i] * sn + ys[i] * cs;
    minx = std::min(minx, X), maxx = std::max(maxx, X), miny = std::min(miny, Y), maxy = std::max(maxy, Y);
  }
  return Rect{minx, miny, maxx - minx, maxy - miny};
}

// Does segment a-b cross rectangle r?
bool segment_hits(P a, P b, const Rect& r) {
  auto inside = [&](P p) { return p.x >= r.x && p.x <= r.x + r.w && p.y >= r.y && p.y <= r.y + r.h; };
  if (inside(a) || inside(b)) return true;
  auto cross = [](P p, P q, P s, P t) {
    auto orient = [](P o, P u, P v) { return (u.x - o.x) * (v.y - o.y) - (u.y - o.y) * (v.x - o.x); };
    double d1 = orient(p, q, s), d2 = orient(p, q, t), d3 = orient(s, t, p), d4 = orient(s, t, q);
    return ((d1 > 0) != (d2 > 0)) && ((d3 > 0) != (d4 > 0));
  };
  P c[4] = {{r.x, r.y}, {r.x + r.w, r.y}, {r.x + r.w, r.y + r.h}, {r.x, r.y + r.h}};
  for (int i = 0; i < 4; ++i)
    if (cross(a, b, c[i], c[(i + 1) % 4])) return true;
  return false;
}

struct Obstacles {
  std::vector<Rect> boxes;
  std::vector<Quad> quads;
  std::vector<std::pair<P, P>> segments;
  bool hit(const Rect& r, double pad = 1.5) const {
    for (const auto& b : boxes)
      if (r.overlaps(b, pad)) return true;
    for (const auto& q : quads)
      if (quad_overlaps(q, r, pad)) return true;
    Rect grown{r.x - pad, r.y - pad, r.w + 2 * pad, r.h + 2 * pad};
    for (const auto& [a, b] : segments)
      if (segment_hits(a, b, grown)) return true;
    return false;
  }
};

std::string truncate(const std::string& s, size_t max_chars) {
  size_t n = 0, i = 0;
  for (; i < s.size(); ++i) {
    if ((static_cast<unsigned char>(s[i]) & 0xC0) != 0x80) {
      if (n == max_chars) return s.substr(0, i) + "…";
      ++n;
    }
  }
  return s;
}

// The text one code point or ~15 % shorter, ending in an ellipsis (always strictly shorter, so
// loops that shorten until a text fits end).
std::string shorten(const std::string& s) {
  size_t n = 0;
  for (unsigned char c : s) n += (c & 0xC0) != 0x80;
  if (n <= 2) return "…";
  size_t keep = std::min(n - 2, static_cast<size_t>(static_cast<double>(n) * 0.85));
  std::string t = s;
  if (t.size() >= 3 && t.compare(t.size() - 3, 3, "…") == 0) t.resize(t.size() - 3);  // drop an earlier ellipsis
  return truncate(t, keep);
}

void draw_marker_outline_legend(Renderer& r, P at, const LegendEntry& e, const Sizes& z, double marker_scale) {
  double half = z.row > z.legend * 1.5 ? 11 * z.u : 6.5 * z.u;  // compact legends (print) draw shorter line samples
  if (e.has_line) r.polyline({{at.x - half, at.y}, {at.x + half, at.y}}, e.line);
  if (e.has_marker) {
    if (e.hollow) r.marker(at, e.marker, 7 * marker_scale, rgb(0xFFFFFF), e.fill);
    else r.marker(at, e.marker, 7 * marker_scale, e.fill, rgb(0x222222));
  }
}

// One unit for a whole axis: the SI prefix of its largest tick goes into the title
// ("Performance [TFLOP/s]", "Time [µs]") and the ticks are plain numbers in it (0.1, 1, 10), so
// the title's unit is the ticks' unit. Kept per tick when that would need numbers under 1e-4.
void unit_in_title(Axis& a) {
  if (!a.categories.empty()) return;
  std::vector<double> t = major_ticks(a);
  double hi = 0, lo = 1e300;
  for (double v : t)
    if (v != 0) hi = std::max(hi, std::fabs(v)), lo = std::min(lo, std::fabs(v));
  if (hi == 0) return;
  if (a.iec && !a.unit.empty()) {  // binary prefixes: the ticks are decades of the largest one that fits
    static const struct {
      double f;
      const char* p;
    } bin[] = {{1099511627776.0, "Ti"}, {1073741824.0, "Gi"}, {1048576.0, "Mi"}, {1024.0, "Ki"}, {1, ""}};
    for (const auto& st : bin)
      if (lo >= st.f * 0.9999 || st.f == 1) {
        const std::string unit = std::string(st.p) + a.unit, bracket = "[" + a.unit + "]";
        const size_t k = a.title.find(bracket);
        if (k != std::string::npos) a.title.replace(k, bracket.size(), "[" + unit + "]");
        else a.title += " [" + unit + "]";
        a.divisor = st.f;
        return;
      }
  }
  if (a.unit.empty()) {  // plain numbers when they stay short, never "1000" beside "10 k"
    if (hi < 1e5 && lo >= 1e-3) a.divisor = 1;
    // ticks at the swept values are round as the user wrote them: whole numbers stay whole
    // ("12288", never "12.288 k"), powers of two past 1024 read in binary multiples ("128 Ki")
    bool whole = !a.ticks.empty(), all_binary = whole, all_decimal = whole;
    for (double v : a.ticks) {
      whole = whole && v == std::floor(v) && std::fabs(v) < 9e15;
      if (!whole) break;
      all_binary = all_binary && (std::fmod(std::fabs(v), 1024) == 0 || std::fabs(v) < 1024);
      all_decimal = all_decimal && (std::fmod(std::fabs(v), 1000) == 0 || std::fabs(v) < 1000);
    }
    if (whole && hi >= 1e4 && all_binary && !all_decimal) a.binary = true;
    else if (whole && hi < 1e7 && !all_decimal) a.divisor = 1;
    return;
  }
  static const struct {
    double f;
    const char* p;
  } steps[] = {{1e18, "E"}, {1e15, "P"}, {1e12, "T"}, {1e9, "G"}, {1e6, "M"}, {1e3, "k"}, {1, ""}, {1e-3, "m"}, {1e-6, "µ"}, {1e-9, "n"}, {1e-12, "p"}};
  for (const auto& st : steps)
    if (hi >= st.f * 0.9999) {
      if (lo / st.f < 1e-4 * 0.9999) {
        // too wide for one prefix: each tick keeps its own ("10 MFLOP/s" … "1 TFLOP/s"), and the
        // title does not repeat a bare unit beside them
        std::string bracket = " [" + a.unit + "]";
        size_t k = a.title.find(bracket);
        if (k != std::string::npos) a.title.erase(k, bracket.size());
        return;
      }
      std::string unit = std::string(st.p) + a.unit;
      std::string bracket = "[" + a.unit + "]";
      size_t k = a.title.find(bracket);
      if (k != std::string::npos) a.title.replace(k, bracket.size(), "[" + unit + "]");
      else a.title += " [" + unit + "]";
      a.divisor = st.f;
      return;
    }
}

// The size at which `text` fits `avail`: scaled down, then stepped down while it still does not
// (widths do not scale exactly with the size), never under `floor`.
double shrunk_size(Renderer& r, const std::string& text, double size, double avail, double floor, bool bold) {
  const double w = r.measure(text, size, bold).width;
  if (w <= avail) return size;
  size = std::max(floor, size * avail / w);
  while (r.measure(text, size, bold).width > avail && size * 0.98 >= floor) size *= 0.98;
  return size;
}

double Z_title_fit(Renderer& r, std::string& title, double size, double avail) {
  if (title.empty()) return size;
  size = shrunk_size(r, title, size, avail, 6, true);
  while (r.measure(title, size, true).width > avail && title.size() > 4) title = shorten(title);
  return size;
}

// A title in one line (shrunk to no less than `one_line` of its size, and not under 6 pt), else
// wrapped at a space into two before it shrinks further (the user's own title is never cut while
// two lines can hold it): the lines and their size. Only past two lines at 6 pt does the last
// line shorten.
std::vector<std::string> title_lines(Renderer& r, const std::string& title, double& size, double avail, double one_line) {
  if (title.empty()) return {};
  if (r.measure(title, size, true).width <= avail) return {title};
  const double one = shrunk_size(r, title, size, avail, std::max(6.0, one_line * size), true);
  if (r.measure(title, one, true).width <= avail) {
    size = one;
    return {title};
  }  // (not even at the floor: two lines at the full size, below)
  // the split at a space that makes the wider line narrowest
  auto split_at = [&](double sz, std::vector<std::string>& out) {
    double best = 1e300;
    for (size_t k = title.find(' '); k != std::string::npos; k = title.find(' ', k + 1)) {
      const std::string a = title.substr(0, k), b = title.substr(k + 1);
      const double wmax = std::max(r.measure(a, sz, true).width, r.measure(b, sz, true).width);
      if (wmax < best) best = wmax, out = {a, b};
    }
    return best;
  };
  std::vector<std::string> two;
  double w = split_at(size, two);
  if (two.empty()) {  // one word: shrink, then shorten
    std::string t = title;
    size = Z_title_fit(r, t, size, avail);
    return {t};
  }
  if (w > avail) {
    size = std::max(6.0, size * avail / w);
    w = split_at(size, two);
  }
  if (w > avail) size = Z_title_fit(r, two[1], size, avail);
  return two;
}

// The figure with its style applied: line widths and marker sizes scaled, units in axis titles.
Figure styled(const Figure& in) {
  Figure f = in;
  unit_in_title(f.x);
  unit_in_title(f.y);
  for (auto& l : f.lines) l.style.width *= f.line_scale;
  for (auto& r : f.refs) r.style.width *= f.line_scale;
  for (auto& e : f.legend) e.line.width *= f.line_scale;
  for (auto& p : f.points) p.size *= f.marker_scale;
  return f;
}

// A text drawn and its box recorded in the report.
void put_text(Renderer& r, DrawReport& rep, P at, const std::string& s, double size, const Color& c, double angle, Anchor a, bool bold) {
  r.text(at, s, size, c, angle, a, bold);
  rep.texts.push_back(text_rect(r, at, s, size, angle, a, bold));
}

// An axis title longer than its side shrinks (not under 6 pt), then loses words before its unit
// ("Memory footprint: weights + KV… [GB]"): the unit always stays.
double fit_axis_title(Renderer& r, std::string& t, double size, double avail) {
  size = shrunk_size(r, t, size, avail, 6, false);
  size_t k = t.rfind(" [");
  std::string head = k == std::string::npos ? t : t.substr(0, k), unit = k == std::string::npos ? "" : t.substr(k);
  while (r.measure(head + unit, size, false).width > avail && head.size() > 4) head = shorten(head);
  t = head + unit;
  return size;
}

// One number format for every value of a heatmap (cells and colour bar): three significant
// digits, a k/M/G letter from a thousand on ("237", "1.03k", "12.4"), never an exponent.
std::string heat_number(double x, int digits = 3) {
  if (!std::isfinite(x)) return "–";
  char b[32];
  double ax = std::fabs(x);
  if (ax == 0) return "0";
  static const struct {
    double f;
    const char* p;
  } steps[] = {{1e15, "P"}, {1e12, "T"}, {1e9, "G"}, {1e6, "M"}, {1e3, "k"}};
  for (const auto& st : steps)
    if (ax >= st.f * 0.9995) {
      std::snprintf(b, sizeof b, "%.*g%s", digits, x / st.f, st.p);
      return b;
    }
  std::snprintf(b, sizeof b, "%.*g", ax >= 0.01 ? digits : 2, x);
  return b;
}

// A heatmap's colour scale: the value range, its axis (log or linear), one SI prefix for the
// unit in the colour bar's title ("Time [ms]") so that bar ticks and cells are plain numbers
// in it, and the tick and cell texts.
struct HeatScale {
  double lo = 1e300, hi = -1e300, divisor = 1;
  Axis axis;
  std::string title;
  std::vector<double> ticks;
  std::vector<std::string> tick_text;
  double tick_w = 0;
  double norm(double v) const {
    if (!(hi > lo)) return 0.5;
    if (axis.scale == Scale::Log) return std::clamp((std::log10(std::max(v, lo)) - std::log10(lo)) / (std::log10(hi) - std::log10(lo)), 0.0, 1.0);
    return std::clamp((v - lo) / (hi - lo), 0.0, 1.0);
  }
};

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

}  // namespace

// ---------------------------------------------------------------- draw

namespace {

// What carries over from one layout pass to the next: a pass that finds the chart too crowded
// changes one of these and lays it out again (at most four passes).
struct Plan {
  std::vector<std::string> title;  // one line, or two (wrapped before it shrinks)
  double title_size = 0;
  std::vector<std::string> sub_lines;
  double sub_step = 0;
  double W = 0;                  // canvas width: on screen it widens for a key or a legend beside the plot
  std::vector<size_t> labelled;  // points that carry a label
  std::vector<int> number;       // > 0: the point's label is this number, listed in the key
  bool legend_outside = false;   // no inside corner was free
  bool no_key = false;           // a printed size with no room for a key: labels only where they fit
  bool refs_in_legend = false;   // reference lines too close to label apart: named in the legend instead
};

// One pass: the layout it chose and what the painting steps share.
struct Pass {
  Renderer& r;
  Figure& f;  // styled; its legend may be shortened for this pass
  const Sizes& Z;
  DrawReport& rep;
  const HeatScale& heat;
  bool has_heat;
  std::vector<double> xt, yt;  // labelled ticks
  bool rotate_x = false;
  bool y_title_two = false;  // the y axis title takes two lines (it would shrink past 0.85 of its size on one)
  double top = 0, bottom = 0, left = 0, right = 0, below_h = 0, cbar_w = 0;
  std::vector<std::string> key_lines;
  size_t key_rows = 0;  // lines per column of the key (columns side by side when it is taller than the canvas)
  double key_col_w = 0;
  double key_gap = 0;  // room for the last x tick label's overhang before the key
  double legend_w = 0, legend_h = 0, lg_marker = 0, lg_text = 0;
  bool legend_below = false;
  size_t legend_cols = 1;
  Rect plot, inner;
  Axis hx, hy;  // heatmap axes: categorical
  Transform T{};
  Obstacles obs;

  Pass(Renderer& r_, Figure& f_, const Sizes& z, DrawReport& rep_, const HeatScale& h)
      : r(r_), f(f_), Z(z), rep(rep_), heat(h), has_heat(f_.heatmap.has_value()) {}
  void text(P at, const std::string& s, double size, const Color& c, double angle, Anchor a, bool bold) {
    put_text(r, rep, at, s, size, c, angle, a, bold);
  }
  std::string xlabel(double v) const { return has_heat ? f.heatmap->xcats[static_cast<size_t>(v)] : tick_label(v, f.x); }
  std::string ylabel(double v) const {
    if (has_heat) return f.heatmap->ycats[static_cast<size_t>(v)];
    return f.y.categories.empty() ? tick_label(v, f.y) : truncate(tick_label(v, f.y), 34);
  }
};

// The subtitle wraps at " · " to the canvas width; a part wider than the canvas shortens.
std::vector<std::string> wrap_subtitle(Renderer& r, const std::string& subtitle, double size, double avail) {
  std::vector<std::string> lines;
  if (subtitle.empty()) return lines;
  std::vector<std::string> parts;
  size_t start = 0;
  const std::string sep = " · ";
  while (true) {
    size_t k = subtitle.find(sep, start);
    parts.push_back(subtitle.substr(start, k == std::string::npos ? std::string::npos : k - start));
    if (k == std::string::npos) break;
    start = k + sep.size();
  }
  std::string line;
  for (const auto& part : parts) {
    std::string cand = line.empty() ? part : line + sep + part;
    if (!line.empty() && r.measure(cand, size, false).width > avail) {
      lines.push_back(line);
      line = part;
    } else {
      line = cand;
    }
  }
  if (!line.empty()) lines.push_back(line);
  for (auto& l : lines)
    while (r.measure(l, size, false).width > avail && l.size() > 4) l = shorten(l);
  return lines;
}

// Margins for the title and subtitle above, the tick labels and axis titles left and below; x
// tick labels turn 45° when they would not fit side by side (numbers first try every other one).
void layout_axes(Pass& p, const Plan& plan) {
  Renderer& r = p.r;
  const Figure& f = p.f;
  p.top = 10;
  for (const auto& line : plan.title) p.top += r.measure(line, plan.title_size, true).ascent + 6;
  if (!plan.sub_lines.empty()) p.top += plan.sub_step * static_cast<double>(plan.sub_lines.size()) + 3;
  p.top += 6;
  p.yt = major_ticks(f.y);
  p.xt = major_ticks(f.x);
  if (p.has_heat) {
    p.yt.clear();
    p.xt.clear();
    for (size_t i = 0; i < f.heatmap->ycats.size(); ++i) p.yt.push_back(static_cast<double>(i));
    for (size_t i = 0; i < f.heatmap->xcats.size(); ++i) p.xt.push_back(static_cast<double>(i));
  }
  double ytick_w = 0;
  for (double v : p.yt) ytick_w = std::max(ytick_w, r.measure(p.ylabel(v), p.Z.tick, false).width);
  p.left = 10 + (f.y.title.empty() ? 0 : r.measure(f.y.title, p.Z.axis_title, false).ascent + 8) + ytick_w + 8;
  if (!f.y.title.empty()) {
    // the side it runs along: the canvas below the titles, less the x tick labels and x title
    const double side = f.height - p.top - 10 - (r.measure("0", p.Z.axis_title, false).ascent + 8) - (r.measure("0", p.Z.tick, false).ascent + 12);
    p.y_title_two = f.y.title.find(' ') != std::string::npos && r.measure(f.y.title, p.Z.axis_title, false).width * std::max(0.85, 6.0 / p.Z.axis_title) > side;
    if (p.y_title_two) p.left += 1.3 * r.measure(f.y.title, p.Z.axis_title, false).ascent + 1;
  }
  double xlabel_w = 0;
  for (double v : p.xt) xlabel_w = std::max(xlabel_w, r.measure(p.xlabel(v), p.Z.tick, false).width);
  double approx_plot_w = plan.W - p.left - 16;
  p.rotate_x = !p.xt.empty() && (xlabel_w + 6) * static_cast<double>(p.xt.size()) > approx_plot_w;
  if (p.rotate_x && f.x.categories.empty() && !p.has_heat && p.xt.size() > 3) {
    // numbers read better level than turned: label every other tick instead
    std::vector<double> half;
    for (size_t i = 0; i < p.xt.size(); i += 2) half.push_back(p.xt[i]);
    if ((xlabel_w + 6) * static_cast<double>(half.size()) <= approx_plot_w) {
      p.xt = half;
      p.rotate_x = false;
    }
  }
  double xlabels_h = p.rotate_x ? xlabel_w * std::sin(M_PI / 4) + 8 : r.measure("0", p.Z.tick, false).ascent;
  p.bottom = 10 + xlabels_h + 8 + (f.x.title.empty() ? 0 : r.measure(f.x.title, p.Z.axis_title, false).ascent + 10);
  if (p.rotate_x) p.left = std::max(p.left, xlabel_w * std::cos(M_PI / 4) + 12);
  p.right = 16;
  // a level label of the last tick at the axis's right end reaches half its width past the plot:
  // the margin makes room for it (the slides roofline's "10000" read "1000", clipped)
  if (!p.rotate_x && !p.has_heat && f.x.categories.empty() && !p.xt.empty() && f.x.max > f.x.min) {
    const double last = p.xt.back();
    const bool log = f.x.scale == Scale::Log && last > 0 && f.x.min > 0;
    const double frac = log ? (std::log(last) - std::log(f.x.min)) / (std::log(f.x.max) - std::log(f.x.min)) : (last - f.x.min) / (f.x.max - f.x.min);
    if (frac > 0.9) p.right = std::max(p.right, r.measure(p.xlabel(last), p.Z.tick, false).width / 2 + 6);
  }
}

// The numbered key beside the plot. At a printed size without room for every line of it, the
// key is given up (labels only where they fit) and the pass starts over: returns false.
bool layout_key(Pass& p, Plan& plan, int pass) {
  if (std::none_of(plan.number.begin(), plan.number.end(), [](int n) { return n > 0; })) return true;
  const Figure& f = p.f;
  double key_w = 0;
  for (size_t i = 0; i < f.points.size(); ++i)
    if (plan.number[i] > 0) p.key_lines.push_back(std::to_string(plan.number[i]) + "  " + truncate(f.points[i].label, 40));
  for (const auto& k : p.key_lines) key_w = std::max(key_w, p.r.measure(k, p.Z.label, false).width);
  // lines below the "key" heading, from the plot's top to the canvas's bottom; more go to further columns
  const double step = p.Z.label * 1.375;
  const size_t rows = static_cast<size_t>(std::max(1.0, std::floor((f.height - 8 - (p.top + 8) - step) / step)));
  const size_t cols = (p.key_lines.size() + rows - 1) / rows;
  // the last x tick's label reaches past the plot's right edge by half its width: the key starts beyond it
  p.key_gap = p.xt.empty() || p.rotate_x ? 0 : p.r.measure(p.xlabel(p.xt.back()), p.Z.tick, false).width / 2;
  const double need_w = static_cast<double>(cols) * (key_w + 14) + p.key_gap;
  if ((plan.W - p.left - p.right - need_w < 0.5 * plan.W || (f.fixed_size && cols > 1)) && pass < 3) {
    plan.no_key = true;
    std::fill(plan.number.begin(), plan.number.end(), 0);
    plan.sub_lines.push_back("labels that do not fit: in the plot data CSV");
    return false;
  }
  p.key_rows = rows;
  p.key_col_w = key_w + 14;
  p.right += need_w;
  return true;
}

// The legend's size; one that fits no inside corner goes to the right or, at a printed size
// without room there, under the plot in as many columns as fit and at most a quarter of the
// height: two columns of shortened entries, then the first rows and a last entry that says
// where the rest is.
void layout_legend(Pass& p, const Plan& plan) {
  Renderer& r = p.r;
  Figure& f = p.f;
  const Sizes& Z = p.Z;
  const double W = plan.W;
  for (const auto& e : f.legend) p.legend_w = std::max(p.legend_w, r.measure(e.text, Z.legend, false).width);
  p.lg_marker = f.fixed_size ? 9 * Z.u : 17 * Z.u;
  p.lg_text = f.fixed_size ? 18 * Z.u : 32 * Z.u;
  if (!f.legend.empty()) {
    p.legend_w += p.lg_text + 6 * Z.u;
    p.legend_h = 8 * Z.u + Z.row * static_cast<double>(f.legend.size());
  }
  p.legend_below = plan.legend_outside && f.fixed_size && W - p.left - p.right - p.legend_w - 12 < 0.55 * W;
  if (!p.legend_below) {
    if (plan.legend_outside) p.right += p.legend_w + 12;
    return;
  }
  p.legend_cols = std::max<size_t>(1, std::min(f.legend.size(), static_cast<size_t>((W - 20) / p.legend_w)));
  size_t rows = (f.legend.size() + p.legend_cols - 1) / p.legend_cols;
  double max_h = f.height / 4;
  size_t max_rows = std::max<size_t>(1, static_cast<size_t>(max_h / Z.row));
  // more columns of shortened entries (at most three) before any entry is left out
  const size_t natural_cols = p.legend_cols;
  while (rows > max_rows && p.legend_cols < 3 && f.legend.size() > p.legend_cols) {
    ++p.legend_cols;
    rows = (f.legend.size() + p.legend_cols - 1) / p.legend_cols;
  }
  if (p.legend_cols > natural_cols) {
    p.legend_w = (W - 20) / static_cast<double>(p.legend_cols);
    // what-if variants share a long name: drop the common part first ("…@2.2GHz: …"), so
    // what tells the entries apart stays; the common start is the one two or more line entries
    // share (entries of another kind, like "derated roof", share nothing and are left out)
    auto shared = [](const std::string& a, const std::string& b) {
      size_t k = 0;
      while (k < a.size() && k < b.size() && a[k] == b[k]) ++k;
      return k;
    };
    std::string common;
    size_t with_line = 0;
    for (size_t i = 0; i < f.legend.size(); ++i) {
      if (!f.legend[i].has_line) continue;
      ++with_line;
      for (size_t j = i + 1; j < f.legend.size() && common.empty(); ++j)
        if (f.legend[j].has_line && shared(f.legend[i].text, f.legend[j].text) > 4) common = f.legend[i].text.substr(0, shared(f.legend[i].text, f.legend[j].text));
    }
    for (const auto& e : f.legend)
      if (e.has_line && shared(common, e.text) > 4) common.resize(shared(common, e.text));
    while (!common.empty() && (static_cast<unsigned char>(common.back()) & 0xC0) == 0x80) common.pop_back();
    const double room = p.legend_w - p.lg_text - 4;
    for (auto& e : f.legend) {
      if (with_line > 1 && e.has_line && common.size() > 4 && e.text.compare(0, common.size(), common) == 0 && r.measure(e.text, Z.legend, false).width > room)
        e.text = "…" + e.text.substr(common.size());
      // whole words first ("h100_sxm 80…" from "h100_sxm 80 GiB"), letters only when one word is left
      while (r.measure(e.text, Z.legend, false).width > room) {
        std::string t = e.text;
        if (t.size() >= 3 && t.compare(t.size() - 3, 3, "…") == 0) t.resize(t.size() - 3);
        const size_t sp = t.find_last_of(' ');
        if (sp == std::string::npos || sp == 0) break;
        t.resize(sp);
        for (bool cut = true; cut;) {  // no dangling separator: " ·", ",", ":"
          cut = false;
          if (t.size() >= 2 && t.compare(t.size() - 2, 2, "\xC2\xB7") == 0) t.resize(t.size() - 2), cut = true;
          while (!t.empty() && (t.back() == ' ' || t.back() == ',' || t.back() == ':')) t.pop_back(), cut = true;
        }
        if (t.empty()) break;
        e.text = t + "…";
      }
      while (r.measure(e.text, Z.legend, false).width > room && e.text.size() > 4) e.text = shorten(e.text);
    }
  }
  if (rows > max_rows) {
    size_t keep = max_rows * p.legend_cols - 1;
    size_t more = f.legend.size() - keep;
    f.legend.resize(keep);
    f.legend.push_back(LegendEntry{"+" + std::to_string(more) + " more (plot data)", false, {}, false, {}, {}});
    rows = max_rows;
  }
  p.legend_h = 4 * Z.u + Z.row * static_cast<double>(rows);
  p.below_h = p.legend_h + 4;
  p.bottom += p.below_h;
}

// The plot rectangle, its transform, the x ticks thinned to what fits level, and the obstacles
// that label placement must avoid (markers, lines, references).
void place_plot(Pass& p, Plan& plan) {
  Renderer& r = p.r;
  const Figure& f = p.f;
  p.cbar_w = p.has_heat ? 18 + 12 + 5 + p.heat.tick_w + 8 + r.measure("0", p.Z.tick, false).ascent + 8 : 0;
  p.right += p.cbar_w;
  if (!f.fixed_size && plan.W - p.left - p.right < 0.62 * f.width) plan.W = p.left + p.right + 0.62 * f.width;
  // at a printed size the plot keeps at least half the height: the subtitle's details (a caption
  // carries them; the plot data and report.md keep them) give way first, then its lines, the last first
  if (f.fixed_size && !plan.sub_lines.empty() && f.height - p.top - p.bottom < 0.5 * f.height) {
    std::vector<std::string> kept = wrap_subtitle(r, short_subtitle(f.subtitle), p.Z.subtitle, plan.W - 20);
    if (kept.size() < plan.sub_lines.size()) {
      p.top -= plan.sub_step * static_cast<double>(plan.sub_lines.size() - kept.size()) + (kept.empty() ? 3 : 0);
      plan.sub_lines = std::move(kept);
    }
  }
  while (f.fixed_size && !plan.sub_lines.empty() && f.height - p.top - p.bottom < 0.5 * f.height) {
    plan.sub_lines.pop_back();
    p.top -= plan.sub_step + (plan.sub_lines.empty() ? 3 : 0);
  }
  // the y title's side is known now (a legend under the plot shortens it): two lines if one would
  // shrink past 0.85 of its size
  if (!f.y.title.empty() && !p.y_title_two && f.y.title.find(' ') != std::string::npos) {
    const double side = f.height - 10 - p.below_h - (p.top - 4);
    if (r.measure(f.y.title, p.Z.axis_title, false).width * std::max(0.85, 6.0 / p.Z.axis_title) > side) {
      p.y_title_two = true;
      p.left += 1.3 * r.measure(f.y.title, p.Z.axis_title, false).ascent + 1;
    }
  }
  p.rep.canvas = Rect{0, 0, plan.W, f.height};
  p.plot = Rect{p.left, p.top, plan.W - p.left - p.right, f.height - p.top - p.bottom};
  p.rep.plot = p.plot;
  p.T = Transform{p.plot, &f.x, &f.y};
  // level tick labels that would touch their neighbour (a log axis crowds its right end) are
  // thinned from the right, so the largest value keeps its label
  if (!p.rotate_x && !p.has_heat && f.x.categories.empty() && p.xt.size() > 2) {
    std::vector<double> kept;
    double left_edge = 1e300;
    for (size_t i = p.xt.size(); i-- > 0;) {
      double w = r.measure(p.xlabel(p.xt[i]), p.Z.tick, false).width, x = p.T.tx(p.xt[i]);
      if (x + w / 2 + 6 <= left_edge) {
        kept.insert(kept.begin(), p.xt[i]);
        left_edge = x - w / 2;
      }
    }
    p.xt = kept;
  }
  if (p.has_heat) {
    p.hx.categories = f.heatmap->xcats;
    p.hx.min = -0.5, p.hx.max = static_cast<double>(p.hx.categories.size()) - 0.5;
    p.hy.categories = f.heatmap->ycats;
    p.hy.min = -0.5, p.hy.max = static_cast<double>(p.hy.categories.size()) - 0.5;
    p.T = Transform{p.plot, &p.hx, &p.hy};
  }
  const Transform& T = p.T;
  for (const auto& L : f.lines)
    for (size_t i = 0; i + 1 < L.pts.size(); ++i) p.obs.segments.push_back({T.to(L.pts[i]), T.to(L.pts[i + 1])});
  for (const auto& ref : f.refs) {
    if (ref.vertical) p.obs.segments.push_back({{T.tx(ref.value), p.plot.y}, {T.tx(ref.value), p.plot.y + p.plot.h}});
    else p.obs.segments.push_back({{p.plot.x, T.ty(ref.value)}, {p.plot.x + p.plot.w, T.ty(ref.value)}});
  }
  for (const auto& pt : f.points) {
    P s = T.to(pt.at);
    p.obs.boxes.push_back(Rect{s.x - pt.size / 2, s.y - pt.size / 2, pt.size, pt.size});
  }
  // labels stay inside the plot, away from its edges
  p.inner = Rect{p.plot.x + 2, p.plot.y + 2, p.plot.w - 4, p.plot.h - 4};
}

void paint_titles(Pass& p, const Plan& plan) {
  Renderer& r = p.r;
  const double W = plan.W;
  double ty = 10;
  if (!p.f.title.empty()) {
    double x = p.plot.x;  // both lines start together, left on the plot (or further left to fit)
    for (const auto& line : plan.title) x = std::min(x, W - 10 - r.measure(line, plan.title_size, true).width);
    x = std::max(10.0, x);
    for (const auto& line : plan.title) {
      ty += r.measure(line, plan.title_size, true).ascent;
      p.text({x, ty}, line, plan.title_size, kText, 0, Anchor::Left, true);
      ty += 6;
    }
  }
  double sub_x = p.plot.x;
  for (const auto& l : plan.sub_lines) sub_x = std::min(sub_x, 10.0 + (W - 20 - r.measure(l, p.Z.subtitle, false).width));
  for (const auto& l : plan.sub_lines) {
    ty += plan.sub_step;
    p.text({sub_x, ty}, l, p.Z.subtitle, kMuted, 0, Anchor::Left, false);
  }
}

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

// Horizontal bars, one slot per category, series side by side; hatched bars are the derated ones.
void paint_bars(Pass& p) {
  const Figure& f = p.f;
  if (f.bars.empty()) return;
  Renderer& r = p.r;
  const Transform& T = p.T;
  const Rect& plot = p.plot;
  size_t ncat = f.y.categories.size();
  double slot = plot.h / static_cast<double>(std::max<size_t>(ncat, 1));
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
  if (!f.x.title.empty()) p.text({plot.x + plot.w / 2, f.height - 10 - p.below_h}, f.x.title, kAxisTitle, kText, 0, Anchor::Center, false);
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

// Whether a text's box crosses any of the segments (sampled every 2.5 pt).
bool crosses_lines(const Quad& q, const std::vector<std::pair<P, P>>& segs) {
  for (const auto& [sa, sb] : segs) {
    int n = std::max(8, static_cast<int>(std::hypot(sb.x - sa.x, sb.y - sa.y) / 2.5));
    for (int k = 0; k <= n; ++k)
      if (quad_overlaps(q, Rect{sa.x + (sb.x - sa.x) * k / n - 0.5, sa.y + (sb.y - sa.y) * k / n - 0.5, 1, 1}, 1)) return true;
  }
  return false;
}

// Labels written along their lines (roof values), at the preferred place or the nearest one
// clear of the other lines, markers and labels.
void place_line_labels(Pass& p) {
  Renderer& r = p.r;
  const Figure& f = p.f;
  const Transform& T = p.T;
  const Rect& plot = p.plot;
  const double kLabel = p.Z.label;
  for (size_t li = 0; li < f.lines.size(); ++li) {
    const Line& L = f.lines[li];
    if (L.label.empty() || L.pts.size() < 2) continue;
    std::vector<std::pair<P, P>> others;
    for (size_t lj = 0; lj < f.lines.size(); ++lj) {
      if (lj == li) continue;
      const Line& O = f.lines[lj];
      for (size_t i = 0; i + 1 < O.pts.size(); ++i) others.push_back({T.to(O.pts[i]), T.to(O.pts[i + 1])});
    }
    // the visible part: sample the polyline in screen space, keep points inside the plot
    std::vector<P> vis;
    for (size_t i = 0; i + 1 < L.pts.size(); ++i) {
      P a = T.to(L.pts[i]), b = T.to(L.pts[i + 1]);
      for (int k = 0; k <= 40; ++k) {
        P q{a.x + (b.x - a.x) * k / 40.0, a.y + (b.y - a.y) * k / 40.0};
        if (q.x >= plot.x && q.x <= plot.x + plot.w && q.y >= plot.y && q.y <= plot.y + plot.h) vis.push_back(q);
      }
    }
    if (vis.size() < 2) continue;
    bool placed = false;
    // positions along the line, nearest to the preferred one first
    std::vector<double> fracs;
    for (int k = 1; k < 40; ++k) fracs.push_back(k / 40.0);
    std::stable_sort(fracs.begin(), fracs.end(), [&](double u, double v) { return std::fabs(u - L.label_at) < std::fabs(v - L.label_at); });
    for (double frac : fracs) {
      size_t i = std::min(vis.size() - 2, static_cast<size_t>(frac * static_cast<double>(vis.size() - 1)));
      P a = vis[i], b = vis[i + 1];
      double ang = -std::atan2(b.y - a.y, b.x - a.x);
      P up{-std::sin(ang), -std::cos(ang)};  // unit normal pointing up the screen
      double asc = r.measure("0", kLabel, false).ascent;
      // signed baseline distances from the line: preferred side first, then the other, then farther out
      double above1 = 5, below1 = -(5 + asc), above2 = 12, below2 = -(12 + asc);
      std::vector<double> offsets = L.label_above ? std::vector<double>{above1, below1, above2, below2}
                                                  : std::vector<double>{below1, above1, below2, above2};
      for (double sd : offsets) {
        if (placed) break;
        P at{a.x + up.x * sd, a.y + up.y * sd};
        Quad q = text_quad(r, at, L.label, kLabel, ang, Anchor::Center, false);
        bool clash = false;
        for (const auto& pl : p.rep.line_labels) clash = clash || quads_overlap(q, pl, 2);
        for (const auto& b2 : p.obs.boxes) clash = clash || quad_overlaps(q, b2, 1);
        for (const auto& [sa, sb] : others) {
          if (clash) break;
          // sample the segment: a point inside the quad (grown by 1) is a crossing
          int n = std::max(8, static_cast<int>(std::hypot(sb.x - sa.x, sb.y - sa.y) / 2.5));
          for (int k = 0; k <= n && !clash; ++k) {
            P pt{sa.x + (sb.x - sa.x) * k / n, sa.y + (sb.y - sa.y) * k / n};
            clash = quad_overlaps(q, Rect{pt.x - 0.5, pt.y - 0.5, 1, 1}, 1);
          }
        }
        if (!clash && q.bounds().inside(p.inner)) {
          p.text(at, L.label, kLabel, L.style.color, ang, Anchor::Center, false);
          p.rep.line_labels.push_back(q);
          placed = true;
        }
      }
      if (placed) break;
    }
  }
}

// Reference labels (ridges, memory sizes): at an end of their line, on a side free of other
// lines and labels; when no spot is free, the least bad one on a light backing.
// Returns false when a label found no place clear of the other labels (the chart is laid out
// again with the references named in the legend).
bool place_reference_labels(Pass& p, const Plan& plan) {
  Renderer& r = p.r;
  const Figure& f = p.f;
  const Transform& T = p.T;
  const Rect& plot = p.plot;
  const double kLabel = p.Z.label;
  if (plan.refs_in_legend) return true;
  for (size_t ri = 0; ri < f.refs.size(); ++ri) {
    const Reference& ref = f.refs[ri];
    if (ref.label.empty()) continue;
    std::vector<std::pair<P, P>> segs;
    for (const auto& L : f.lines)
      for (size_t i = 0; i + 1 < L.pts.size(); ++i) segs.push_back({T.to(L.pts[i]), T.to(L.pts[i + 1])});
    for (size_t rj = 0; rj < f.refs.size(); ++rj) {
      if (rj == ri) continue;
      const Reference& o = f.refs[rj];
      if (o.vertical) segs.push_back({{T.tx(o.value), plot.y}, {T.tx(o.value), plot.y + plot.h}});
      else segs.push_back({{plot.x, T.ty(o.value)}, {plot.x + plot.w, T.ty(o.value)}});
    }
    double asc = r.measure("0", kLabel, false).ascent;
    struct Cand {
      P at;
      Anchor anchor;
    };
    std::vector<Cand> cands;
    double ang = ref.vertical ? M_PI / 2 : 0;
    if (ref.vertical) {
      double x = T.tx(ref.value);
      cands = {{{x - 3, plot.y + 6}, Anchor::Right}, {{x + 3 + asc, plot.y + 6}, Anchor::Right},
               {{x - 3, plot.y + plot.h - 6}, Anchor::Left}, {{x + 3 + asc, plot.y + plot.h - 6}, Anchor::Left}};
    } else {
      double y = T.ty(ref.value);
      for (double fx : {1.0, 0.0, 0.75, 0.25, 0.5, 0.875, 0.125, 0.625, 0.375}) {
        double x = plot.x + 4 + (plot.w - 8) * fx;
        Anchor an = fx == 1.0 ? Anchor::Right : fx == 0.0 ? Anchor::Left : Anchor::Center;
        cands.push_back({{x, y - 3}, an});
        cands.push_back({{x, y + 3 + asc}, an});
      }
    }
    // the first free spot; when none is, the least bad: over lines rather than over markers,
    // over markers rather than over another label, never outside the plot
    size_t pick = 0;
    int best = 1 << 30;
    for (size_t c = 0; c < cands.size() && best > 0; ++c) {
      Quad q = text_quad(r, cands[c].at, ref.label, kLabel, ang, cands[c].anchor, false);
      int bad = q.bounds().inside(p.inner) ? 0 : 1000;
      for (const auto& pl : p.rep.line_labels) bad += quads_overlap(q, pl, 2) ? 100 : 0;
      for (const auto& b2 : p.obs.boxes) bad += quad_overlaps(q, b2, 1) ? 10 : 0;
      if (bad < best && crosses_lines(q, segs)) bad += 1;
      if (bad < best) best = bad, pick = c;
    }
    if (best >= 100) return false;  // over another label (or off the plot): no place for it
    Quad q = text_quad(r, cands[pick].at, ref.label, kLabel, ang, cands[pick].anchor, false);
    if (best > 0) {  // over lines or markers: on a light backing so it stays readable
      Rect hb = q.bounds();
      r.rect(Rect{hb.x - 1, hb.y - 0.5, hb.w + 2, hb.h + 1}, rgb(0xFFFFFF, 0.8), nullptr);
    }
    p.text(cands[pick].at, ref.label, kLabel, ref.style.color, ang, cands[pick].anchor, false);
    p.rep.line_labels.push_back(q);
  }
  return true;
}

// The legend: an inside corner that covers nothing, else beside or under the plot. Returns
// false when no corner was free and the chart must be laid out again with room outside.
bool place_legend(Pass& p, Plan& plan, int pass) {
  const Figure& f = p.f;
  if (f.legend.empty()) return true;
  Renderer& r = p.r;
  const Rect& plot = p.plot;
  const double legend_w = p.legend_w, legend_h = p.legend_h;
  Rect legend_box{0, 0, 0, 0};
  std::vector<Rect> corners = {{plot.x + 6, plot.y + 6, legend_w, legend_h},
                               {plot.x + plot.w - legend_w - 6, plot.y + 6, legend_w, legend_h},
                               {plot.x + plot.w - legend_w - 6, plot.y + plot.h - legend_h - 6, legend_w, legend_h},
                               {plot.x + 6, plot.y + plot.h - legend_h - 6, legend_w, legend_h}};
  if (p.legend_below) {
    double w = legend_w * static_cast<double>(p.legend_cols);
    legend_box = Rect{std::max(4.0, std::min(plot.x + plot.w / 2 - w / 2, plan.W - 4 - w)), f.height - legend_h - 4, w, legend_h};
  } else if (plan.legend_outside) {
    legend_box = Rect{plot.x + plot.w + 12 + p.cbar_w, plot.y, legend_w, legend_h};
  } else {
    for (const auto& c : corners) {
      bool on_label = std::any_of(p.rep.line_labels.begin(), p.rep.line_labels.end(), [&](const Quad& q) { return quad_overlaps(q, c, 2); });
      if (!on_label && !p.obs.hit(c, 2)) {
        legend_box = c;
        break;
      }
    }
    if (legend_box.w == 0) {
      if (pass < 3) {
        plan.legend_outside = true;
        return false;
      }
      legend_box = corners[1];
    }
  }
  const Sizes& Z = p.Z;
  LineStyle edge{rgb(0xBBBBBB), 0.6};
  r.rect(legend_box, rgb(0xFFFFFF, 0.92), &edge);
  for (size_t i = 0; i < f.legend.size(); ++i) {
    double col = static_cast<double>(i % p.legend_cols), row = static_cast<double>(i / p.legend_cols);
    double x0 = legend_box.x + col * legend_w;
    double yy = legend_box.y + 2 * Z.u + Z.row * 0.5 + Z.legend * 0.35 + Z.row * row;
    draw_marker_outline_legend(r, {x0 + p.lg_marker, yy - Z.legend * 0.35}, f.legend[i], Z, f.marker_scale);
    p.text({x0 + p.lg_text, yy}, f.legend[i].text, Z.legend, kText, 0, Anchor::Left, false);
  }
  p.rep.legend = legend_box;
  p.obs.boxes.push_back(legend_box);
  return true;
}

// Markers; those marked `on_top` (ridge points) last, so data never hides them.
void paint_points(Pass& p) {
  auto paint = [&](const Point& pt) {
    if (pt.hollow) p.r.marker(p.T.to(pt.at), pt.marker, pt.size, rgb(0xFFFFFF), pt.fill);
    else p.r.marker(p.T.to(pt.at), pt.marker, pt.size, pt.fill, rgb(0x222222));
  };
  for (const auto& pt : p.f.points)
    if (!pt.on_top) paint(pt);
  for (const auto& pt : p.f.points)
    if (pt.on_top) paint(pt);
}

// Point labels, greedy: the nearest free spot around the point, farther out with a leader line.
// A number in the key must be drawn: then over lines and markers (never over another label).
// Returns whether a label found no spot (and a numbered key would hold it).
bool place_point_labels(Pass& p, const Plan& plan) {
  Renderer& r = p.r;
  const Figure& f = p.f;
  const double kLabel = p.Z.label;
  bool need_key = false;
  for (size_t idx : plan.labelled) {
    const Point& pt = f.points[idx];
    P s = p.T.to(pt.at);
    std::string label = plan.number[idx] > 0 ? std::to_string(plan.number[idx]) : pt.label;
    TextBox tb = r.measure(label, kLabel, false);
    bool placed = false;
    double base = pt.size / 2 + 2;
    const bool must = plan.number[idx] > 0;
    // A number that must be drawn tries, after the near and far spots clear of everything: spots
    // up to 150 pt away clear of markers and labels (over lines, its leader crossing what it
    // must); only then, nearest first, any spot clear of labels (over markers too).
    for (int attempt = 0; attempt < (must ? 4 : 1) && !placed; ++attempt) {
      const bool over_lines = attempt == 2, relaxed = attempt == 3;
      std::vector<double> dists = attempt == 1   ? std::vector<double>{base + 45, base + 65, base + 90}
                                  : over_lines ? std::vector<double>{base, base + 8, base + 18, base + 30, base + 45, base + 65, base + 90, base + 120, base + 150}
                                               : std::vector<double>{base, base + 8, base + 18, base + 30};
      for (double dist : dists) {
        for (int k = 0; k < 8 && !placed; ++k) {
          static const double dirs[8][2] = {{1, 0}, {-1, 0}, {0, -1}, {0, 1}, {1, -1}, {-1, -1}, {1, 1}, {-1, 1}};
          double dx = dirs[k][0], dy = dirs[k][1];
          double bx = dx > 0 ? s.x + dist : dx < 0 ? s.x - dist - tb.width : s.x - tb.width / 2;
          double by = dy < 0 ? s.y - dist - tb.ascent - tb.descent : dy > 0 ? s.y + dist : s.y - (tb.ascent + tb.descent) / 2;
          Rect box{bx, by, tb.width, tb.ascent + tb.descent};
          // a point's own marker is not an obstacle to its label
          Obstacles o;
          o.segments = p.obs.segments;
          o.quads = p.obs.quads;
          for (const auto& b : p.obs.boxes)
            if (!(std::fabs(b.x + b.w / 2 - s.x) < 1e-9 && std::fabs(b.y + b.h / 2 - s.y) < 1e-9)) o.boxes.push_back(b);
          o.boxes.insert(o.boxes.end(), p.rep.point_labels.begin(), p.rep.point_labels.end());
          if (over_lines) o.segments.clear();
          if (relaxed) {
            o = Obstacles{};
            o.boxes = p.rep.point_labels;
            if (p.rep.legend.w > 0) o.boxes.push_back(p.rep.legend);
            o.quads = p.rep.line_labels;
          }
          if (!box.inside(p.inner) || o.hit(box, relaxed || over_lines ? 0.5 : 2.5)) continue;
          if (dist > base) {  // leader line from the marker's edge to the label, crossing no other label (but for a number that must be drawn)
            P to{std::clamp(s.x, box.x, box.x + box.w), std::clamp(s.y, box.y, box.y + box.h)};
            double len = std::hypot(to.x - s.x, to.y - s.y);
            bool leader_clear = true;
            for (const auto& pl : p.rep.point_labels) leader_clear = leader_clear && !segment_hits(s, to, pl);
            for (const auto& q : p.rep.line_labels) leader_clear = leader_clear && !segment_hits(s, to, q.bounds());
            if (!leader_clear && !relaxed && !over_lines) continue;
            if (len > 0) {
              P from{s.x + (to.x - s.x) / len * pt.size / 2, s.y + (to.y - s.y) / len * pt.size / 2};
              r.polyline({from, to}, LineStyle{rgb(0x888888), 0.6});
              p.obs.segments.push_back({from, to});
            }
          }
          p.text({box.x, box.y + tb.ascent}, label, kLabel, kText, 0, Anchor::Left, false);
          p.rep.point_labels.push_back(box);
          placed = true;
        }
        if (placed) break;
      }
    }
    if (!placed && f.allow_key && plan.number[idx] == 0) need_key = true;
  }
  return need_key;
}

// The numbered key beside the chart.
void paint_key(Pass& p, const Plan& plan) {
  if (p.key_lines.empty()) return;
  const double kLabel = p.Z.label;
  // (a legend under the plot takes no room beside it)
  double kx = p.plot.x + p.plot.w + 14 + p.key_gap + p.cbar_w + (plan.legend_outside && !p.legend_below ? p.legend_w + 12 : 0);
  const double ky = p.plot.y + 8;
  p.text({kx, ky}, "key", kLabel, kMuted, 0, Anchor::Left, true);
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

}  // namespace

// Up to four layout passes: each lays the chart out and paints it; a pass that finds a legend
// with no free corner, a key with no room, or labels that need a key changes the plan and
// starts over (the renderer's begin() discards what an earlier pass drew).
std::string short_subtitle(const std::string& full) {
  std::string out;
  size_t pos = 0, i = 0;
  const std::string sep = " · ";
  while (pos <= full.size()) {
    const size_t next = full.find(sep, pos);
    const std::string part = full.substr(pos, next == std::string::npos ? std::string::npos : next - pos);
    bool keep = i == 0;
    for (const char* k : {"execution:", "launch", "hatched", "dashed", "dotted", "hollow", "not drawn"}) keep = keep || part.find(k) != std::string::npos;
    if (keep && !part.empty()) out += (out.empty() ? "" : sep) + part;
    if (next == std::string::npos) break;
    pos = next + sep.size();
    ++i;
  }
  return out;
}

DrawReport draw(const Figure& figure, Renderer& r) {
  Figure f = styled(figure);
  const std::vector<LegendEntry> legend0 = f.legend;
  const Sizes Z = sizes_for(f);
  Plan plan;
  // a title wider than the canvas shrinks (not under 6 pt), then ends in an ellipsis
  plan.title_size = Z.title;
  // a printed figure has little height to give: a title shrinks further before it takes two lines
  plan.title = title_lines(r, f.title, plan.title_size, f.width - 20, f.fixed_size ? 0.6 : 0.85);
  plan.W = f.width;
  for (size_t i = 0; i < f.points.size(); ++i)
    if (!f.points[i].label.empty()) plan.labelled.push_back(i);
  plan.number.assign(f.points.size(), 0);
  if (f.allow_key && plan.labelled.size() > 24)
    for (size_t k = 0; k < plan.labelled.size(); ++k) plan.number[plan.labelled[k]] = static_cast<int>(k + 1);
  plan.sub_lines = wrap_subtitle(r, f.subtitle, Z.subtitle, plan.W - 20);
  plan.sub_step = r.measure("0", Z.subtitle, false).ascent + 5;
  const HeatScale heat = f.heatmap ? heat_scale(*f.heatmap, r, Z.tick - 1) : HeatScale{};

  DrawReport rep;
  rep.canvas = Rect{0, 0, plan.W, f.height};
  for (int pass = 0; pass < 4; ++pass) {
    rep = DrawReport{};
    f.legend = legend0;
    if (plan.refs_in_legend)  // each labelled reference line as a legend entry: its line and its text
      for (const auto& ref : f.refs)
        if (!ref.label.empty()) f.legend.push_back(LegendEntry{ref.label, true, ref.style, false, {}, {}});
    rep.canvas = Rect{0, 0, plan.W, f.height};
    Pass p(r, f, Z, rep, heat);
    layout_axes(p, plan);
    if (!layout_key(p, plan, pass)) continue;
    layout_legend(p, plan);
    place_plot(p, plan);

    r.begin(plan.W, f.height);
    r.rect(rep.canvas, rgb(0xFFFFFF), nullptr);
    paint_titles(p, plan);
    paint_grid(p);
    if (p.has_heat) paint_heatmap(r, rep, *f.heatmap, heat, p.plot, f.height, Z);
    paint_bars(p);
    paint_lines(p);
    paint_axes(p);
    place_line_labels(p);
    if (!place_reference_labels(p, plan) && pass < 3) {
      plan.refs_in_legend = true;
      continue;
    }
    if (!place_legend(p, plan, pass)) continue;
    p.obs.quads = rep.line_labels;
    paint_points(p);
    if (place_point_labels(p, plan) && pass < 3 && !plan.no_key) {
      // number every labelled point so the key reads in order, and lay out again with the key
      for (size_t k = 0; k < plan.labelled.size(); ++k) plan.number[plan.labelled[k]] = static_cast<int>(k + 1);
      continue;
    }
    paint_key(p, plan);
    r.end();
    return rep;
  }
  return rep;
}

}  // namespace rsim::plots
