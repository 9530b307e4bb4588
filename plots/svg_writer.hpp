// SVG written from the figure model, element by element: text stays text (`<text>`, selectable,
// searchable, editable in Inkscape), sizes in points (the viewBox is the canvas in points).
// cairo's SVG surface draws every glyph as an outline, so the cairo renderer hands SVG to this.
#pragma once
#include <string>
#include <vector>

#include "plots/renderer.hpp"

namespace rsim::plots {

// & < > " as entities: text and attribute values of SVG and HTML
std::string xml_escape(const std::string& s);

class SvgWriter {
 public:
  void begin(double width, double height);
  std::string end();  // the finished document
  void polyline(const std::vector<P>& pts, const LineStyle& style);
  void rect(const Rect& r, const Color& fill, const LineStyle* stroke);
  void hatch(const Rect& r, const Color& color);
  void marker(P at, Marker m, double size, const Color& fill, const Color& edge);
  void text(P at, const std::string& s, double size, const Color& c, double angle, Anchor anchor, bool bold);
  void clip(const Rect& r);
  void unclip();
  // Interactive (report.html): the next marker or rect carries `text` as its data-tip attribute.
  void tip(const std::string& text) { tip_ = text; }

 private:
  std::string tip_attr();  // the pending tooltip as an attribute ("" without one), then none pending
  std::string out_, tip_;
  int clips_ = 0, next_id_ = 0;
};

}  // namespace rsim::plots
