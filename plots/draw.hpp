// Lays a Figure out (margins, ticks, legend, label placement) and paints it through a Renderer.
#pragma once
#include <string>
#include <vector>

#include "plots/renderer.hpp"

namespace rsim::plots {

// A rotated text box: its four corners in screen space.
struct Quad {
  P c[4];
  Rect bounds() const;
};
// Separating-axis test between a (rotated) quad and an axis-aligned rectangle grown by `pad`.
bool quad_overlaps(const Quad& q, const Rect& r, double pad = 0);
bool quads_overlap(const Quad& a, const Quad& b, double pad = 0);

// What the layout decided, for tests and for the plot-data files.
struct DrawReport {
  Rect canvas, plot;
  std::vector<double> xticks, yticks;  // major tick values (data units)
  std::vector<Rect> texts;             // every text box drawn (screen), rotated ones by their bounds
  std::vector<Rect> point_labels;      // boxes of the point labels placed beside their points
  std::vector<P> point_label_at;       // each one's point (screen)
  std::vector<bool> point_label_leader;  // whether a leader line joins it to its point
  std::vector<Quad> line_labels;       // rotated boxes of the labels written along lines
  Rect legend;                         // w = 0 when there is none
  int numbered = 0;                    // point labels moved to the numbered key
};

DrawReport draw(const Figure& f, Renderer& r);

// A subtitle's " · " parts a reader needs to read the numbers: the first (what is drawn), the
// execution mode and launch overheads, what dashes, hatching and hollow marks mean, and points not
// drawn (`subtitle: short`, and what a printed figure short of room keeps).
std::string short_subtitle(const std::string& full);

// Tick values for an axis (major, and minor for log axes).
std::vector<double> major_ticks(const Axis& a);
std::vector<double> minor_ticks(const Axis& a);
// Tick label text: SI prefix and unit ("10 T"), or a plain number.
std::string tick_label(double v, const Axis& a);

// The palette: colour-blind safe (Okabe–Ito) and distinct in greyscale together with markers.
Color palette(size_t i);
Marker marker_cycle(size_t i);
Dash dash_cycle(size_t i);
Color bound_color(const std::string& bound);  // memory, compute, none
Color viridis(double t);                      // t in [0, 1]

}  // namespace rsim::plots
