// Text: measuring, fitting (wrap before shrink, shorten at the end), titles, units in axis titles.
#include "plots/draw_internal.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace rsim::plots::layout {

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
  if (e.bar) {  // drawn as paint_bars draws a bar
    const Rect b{at.x - half * 0.8, at.y - 3.5 * z.u, half * 1.6, 7 * z.u};
    if (e.hatched) {
      Color light = e.fill;
      light.a = 0.28;
      r.rect(b, light, nullptr);
      r.hatch(b, e.fill);
      LineStyle st{e.fill, 0.8};
      r.rect(b, Color{0, 0, 0, 0}, &st);
    } else {
      r.rect(b, e.fill, nullptr);
    }
  }
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

}  // namespace rsim::plots::layout
