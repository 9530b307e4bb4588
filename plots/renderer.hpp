// The small interface a figure draws itself through. Coordinates are points from the top left.
#pragma once
#include <string>
#include <vector>

#include "plots/figure.hpp"

namespace rsim::plots {

enum class Anchor { Left, Center, Right };

struct TextBox {
  double width = 0, ascent = 0, descent = 0;
};

struct Rect {
  double x = 0, y = 0, w = 0, h = 0;
  bool overlaps(const Rect& o, double pad = 0) const {
    return x < o.x + o.w + pad && o.x < x + w + pad && y < o.y + o.h + pad && o.y < y + h + pad;
  }
  bool inside(const Rect& o) const { return x >= o.x - 1e-6 && y >= o.y - 1e-6 && x + w <= o.x + o.w + 1e-6 && y + h <= o.y + o.h + 1e-6; }
};

class Renderer {
 public:
  virtual ~Renderer() = default;
  virtual void begin(double width, double height) = 0;
  virtual void end() = 0;
  virtual void polyline(const std::vector<P>& pts, const LineStyle& style) = 0;
  virtual void rect(const Rect& r, const Color& fill, const LineStyle* stroke) = 0;
  virtual void hatch(const Rect& r, const Color& color) = 0;  // diagonal lines inside r
  virtual void marker(P at, Marker m, double size, const Color& fill, const Color& edge) = 0;
  // Text with its baseline at `at`, rotated by `angle` radians (counter-clockwise), anchored.
  virtual void text(P at, const std::string& s, double size, const Color& c, double angle, Anchor anchor, bool bold) = 0;
  virtual TextBox measure(const std::string& s, double size, bool bold) = 0;
  // The next marker or rect is a data point a reader can point at: an interactive SVG
  // (report.html) gives it this tooltip; files ignore it.
  virtual void tip(const std::string& text) { (void)text; }
  virtual void clip(const Rect& r) = 0;
  virtual void unclip() = 0;
};

}  // namespace rsim::plots
