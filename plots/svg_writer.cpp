#include "plots/svg_writer.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace rsim::plots {

std::string xml_escape(const std::string& s) {
  std::string o;
  for (char c : s) {
    if (c == '&') o += "&amp;";
    else if (c == '<') o += "&lt;";
    else if (c == '>') o += "&gt;";
    else if (c == '"') o += "&quot;";
    else o += c;
  }
  return o;
}

namespace {

// Two decimals, trailing zeros dropped: deterministic and compact.
std::string n(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.2f", std::fabs(v) < 0.005 ? 0.0 : v);
  std::string s = buf;
  while (s.back() == '0') s.pop_back();
  if (s.back() == '.') s.pop_back();
  return s;
}

std::string hex(const Color& c) {
  auto byte = [](double v) { return static_cast<int>(std::lround(std::clamp(v, 0.0, 1.0) * 255)); };
  char buf[8];
  std::snprintf(buf, sizeof buf, "#%02x%02x%02x", byte(c.r), byte(c.g), byte(c.b));
  return buf;
}

std::string esc(const std::string& s) { return xml_escape(s); }


std::string fill_attr(const Color& c) {
  if (c.a <= 0) return " fill=\"none\"";
  return " fill=\"" + hex(c) + "\"" + (c.a < 1 ? " fill-opacity=\"" + n(c.a) + "\"" : "");
}

// The same dash patterns as the cairo renderer.
std::string stroke_attr(const LineStyle& s) {
  std::string a = " stroke=\"" + hex(s.color) + "\"" + (s.color.a < 1 ? " stroke-opacity=\"" + n(s.color.a) + "\"" : "") + " stroke-width=\"" + n(s.width) + "\"";
  double w = s.width;
  switch (s.dash) {
    case Dash::Solid: break;
    case Dash::Dashed: a += " stroke-dasharray=\"" + n(5 * std::max(1.0, w * 0.8)) + " " + n(3 * std::max(1.0, w * 0.8)) + "\""; break;
    case Dash::Dotted: a += " stroke-dasharray=\"" + n(1.2 * w) + " " + n(2.2 * w) + "\" stroke-linecap=\"round\""; break;
    case Dash::DashDot: a += " stroke-dasharray=\"" + n(6 * w) + " " + n(2 * w) + " " + n(1.2 * w) + " " + n(2 * w) + "\""; break;
  }
  return a;
}

}  // namespace

void SvgWriter::begin(double width, double height) {
  clips_ = 0, next_id_ = 0;
  out_ = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<svg xmlns=\"http://www.w3.org/2000/svg\" version=\"1.1\" width=\"" + n(width) + "pt\" height=\"" +
         n(height) + "pt\" viewBox=\"0 0 " + n(width) + " " + n(height) + "\">\n" +
         "<g font-family=\"DejaVu Sans, Verdana, sans-serif\" stroke-linejoin=\"round\">\n";
}

std::string SvgWriter::tip_attr() {
  if (tip_.empty()) return {};
  std::string a = " class=\"tip\" data-tip=\"";
  for (char c : esc(tip_)) a += c == '\n' ? std::string("&#10;") : std::string(1, c);
  a += "\"";
  tip_.clear();
  return a;
}

std::string SvgWriter::end() {
  while (clips_ > 0) unclip();
  out_ += "</g>\n</svg>\n";
  return std::move(out_);
}

void SvgWriter::polyline(const std::vector<P>& pts, const LineStyle& style) {
  if (pts.size() < 2) return;
  std::string d;
  for (size_t i = 0; i < pts.size(); ++i) d += (i ? " L" : "M") + n(pts[i].x) + " " + n(pts[i].y);
  out_ += "<path d=\"" + d + "\" fill=\"none\"" + stroke_attr(style) + "/>\n";
}

void SvgWriter::rect(const Rect& r, const Color& fill, const LineStyle* stroke) {
  out_ += "<rect x=\"" + n(r.x) + "\" y=\"" + n(r.y) + "\" width=\"" + n(r.w) + "\" height=\"" + n(r.h) + "\"" + fill_attr(fill) +
          (stroke ? stroke_attr(*stroke) : std::string()) + tip_attr() + "/>\n";
}

void SvgWriter::hatch(const Rect& r, const Color& color) {
  clip(r);
  std::string d;
  for (double x = r.x - r.h; x < r.x + r.w; x += 4) d += "M" + n(x) + " " + n(r.y + r.h) + " L" + n(x + r.h) + " " + n(r.y) + " ";
  if (!d.empty()) d.pop_back();
  out_ += "<path d=\"" + d + "\" fill=\"none\"" + stroke_attr(LineStyle{color, 0.7}) + "/>\n";
  unclip();
}

void SvgWriter::marker(P at, Marker m, double size, const Color& fill, const Color& edge) {
  double h = size / 2;
  std::string style = fill_attr(fill) + stroke_attr(LineStyle{edge, 0.7}) + tip_attr();
  if (m == Marker::Circle) {
    out_ += "<circle cx=\"" + n(at.x) + "\" cy=\"" + n(at.y) + "\" r=\"" + n(h) + "\"" + style + "/>\n";
    return;
  }
  std::vector<P> pts;
  auto poly = [&](int k, double rot, double radius) {
    for (int i = 0; i < k; ++i) {
      double a = rot + 2 * M_PI * i / k;
      pts.push_back({at.x + radius * std::cos(a), at.y - radius * std::sin(a)});
    }
  };
  switch (m) {
    case Marker::Square: pts = {{at.x - h * 0.88, at.y - h * 0.88}, {at.x + h * 0.88, at.y - h * 0.88}, {at.x + h * 0.88, at.y + h * 0.88}, {at.x - h * 0.88, at.y + h * 0.88}}; break;
    case Marker::TriangleUp: poly(3, M_PI / 2, h * 1.2); break;
    case Marker::TriangleDown: poly(3, -M_PI / 2, h * 1.2); break;
    case Marker::Diamond: poly(4, M_PI / 2, h * 1.15); break;
    case Marker::Pentagon: poly(5, M_PI / 2, h * 1.05); break;
    case Marker::Hexagon: poly(6, 0, h * 1.05); break;
    case Marker::Cross: {
      double t = h * 0.38;
      for (auto [dx, dy] : std::initializer_list<std::pair<double, double>>{{-t, -h}, {t, -h}, {t, -t}, {h, -t}, {h, t}, {t, t}, {t, h}, {-t, h}, {-t, t}, {-h, t}, {-h, -t}, {-t, -t}})
        pts.push_back({at.x + dx, at.y + dy});
      break;
    }
    case Marker::Circle: break;
  }
  std::string d;
  for (size_t i = 0; i < pts.size(); ++i) d += (i ? " L" : "M") + n(pts[i].x) + " " + n(pts[i].y);
  out_ += "<path d=\"" + d + " Z\"" + style + "/>\n";
}

void SvgWriter::text(P at, const std::string& s, double size, const Color& c, double angle, Anchor anchor, bool bold) {
  out_ += "<text x=\"" + n(at.x) + "\" y=\"" + n(at.y) + "\" font-size=\"" + n(size) + "\"" + fill_attr(c);
  if (bold) out_ += " font-weight=\"bold\"";
  if (anchor == Anchor::Center) out_ += " text-anchor=\"middle\"";
  if (anchor == Anchor::Right) out_ += " text-anchor=\"end\"";
  if (angle != 0) out_ += " transform=\"rotate(" + n(-angle * 180 / M_PI) + " " + n(at.x) + " " + n(at.y) + ")\"";
  out_ += ">" + esc(s) + "</text>\n";
}

void SvgWriter::clip(const Rect& r) {
  ++clips_;
  std::string id = "clip" + std::to_string(++next_id_);
  out_ += "<clipPath id=\"" + id + "\"><rect x=\"" + n(r.x) + "\" y=\"" + n(r.y) + "\" width=\"" + n(r.w) + "\" height=\"" + n(r.h) + "\"/></clipPath>\n";
  out_ += "<g clip-path=\"url(#" + id + ")\">\n";
}

void SvgWriter::unclip() {
  if (clips_ == 0) return;
  --clips_;
  out_ += "</g>\n";
}

}  // namespace rsim::plots
