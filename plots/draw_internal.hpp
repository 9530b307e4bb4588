// The layout and painting steps of draw(), shared by draw_*.cpp: text measuring and fitting,
// the layout passes (margins, legend, key), label placement, the painters. Internal to plots/.
#pragma once
#include <algorithm>
#include <cmath>
#include <string>
#include <utility>
#include <vector>

#include "plots/draw.hpp"
#include "plots/figure.hpp"

namespace rsim::plots::layout {

inline const Color kText = rgb(0x222222);
inline const Color kMuted = rgb(0x555555);
inline const Color kGrid = rgb(0xDDDDDD);
inline const Color kGridMinor = rgb(0xEEEEEE);

// Text sizes in points, from the figure's base size (9 pt on screen: ticks 9, axis titles 10.5,
// title 13, labels 8); never under 6 pt. `row` is the legend's line pitch, `u` scales paddings.
struct Sizes {
  double tick, axis_title, title, subtitle, label, legend, row, u, line;
};

// Does segment a-b cross rectangle r?
bool segment_hits(P a, P b, const Rect& r);

std::string truncate(const std::string& s, size_t max_chars);

// A text drawn and its box recorded in the report.
void put_text(Renderer& r, DrawReport& rep, P at, const std::string& s, double size, const Color& c, double angle, Anchor a, bool bold);

Sizes sizes_for(const Figure& f);

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

Quad text_quad(Renderer& r, P at, const std::string& s, double size, double angle, Anchor anchor, bool bold);

Rect text_rect(Renderer& r, P at, const std::string& s, double size, double angle, Anchor anchor, bool bold);

// The text one code point or ~15 % shorter, ending in an ellipsis (always strictly shorter, so
// loops that shorten until a text fits end).
std::string shorten(const std::string& s);

void draw_marker_outline_legend(Renderer& r, P at, const LegendEntry& e, const Sizes& z, double marker_scale);

// One unit for a whole axis: the SI prefix of its largest tick goes into the title
// ("Performance [TFLOP/s]", "Time [µs]") and the ticks are plain numbers in it (0.1, 1, 10), so
// the title's unit is the ticks' unit. Kept per tick when that would need numbers under 1e-4.
void unit_in_title(Axis& a);

// The size at which `text` fits `avail`: scaled down, then stepped down while it still does not
// (widths do not scale exactly with the size), never under `floor`.
double shrunk_size(Renderer& r, const std::string& text, double size, double avail, double floor, bool bold);

double Z_title_fit(Renderer& r, std::string& title, double size, double avail);

// A title in one line (shrunk to no less than `one_line` of its size, and not under 6 pt), else
// wrapped at a space into two before it shrinks further (the user's own title is never cut while
// two lines can hold it): the lines and their size. Only past two lines at 6 pt does the last
// line shorten.
std::vector<std::string> title_lines(Renderer& r, const std::string& title, double& size, double avail, double one_line);

// The figure with its style applied: line widths and marker sizes scaled, units in axis titles.
Figure styled(const Figure& in);

// An axis title longer than its side shrinks (not under 6 pt), then loses words before its unit
// ("Memory footprint: weights + KV… [GB]"): the unit always stays.
double fit_axis_title(Renderer& r, std::string& t, double size, double avail);

// The subtitle wraps at " · " to the canvas width; a part wider than the canvas shortens.
std::vector<std::string> wrap_subtitle(Renderer& r, const std::string& subtitle, double size, double avail);

// One number format for every value of a heatmap (cells and colour bar): three significant
// digits, a k/M/G letter from a thousand on ("237", "1.03k", "12.4"), never an exponent.
std::string heat_number(double x, int digits = 3);

HeatScale heat_scale(const Heatmap& h, Renderer& r, double tick_size);

double lum_of(const Color& c);

void paint_heatmap(Renderer& r, DrawReport& rep, const Heatmap& h, const HeatScale& hs, const Rect& plot, double canvas_h, const Sizes& Z);

// Margins for the title and subtitle above, the tick labels and axis titles left and below; x
// tick labels turn 45° when they would not fit side by side (numbers first try every other one).
void layout_axes(Pass& p, const Plan& plan);

// The numbered key beside the plot. At a printed size without room for every line of it, the
// key is given up (labels only where they fit) and the pass starts over: returns false.
bool layout_key(Pass& p, Plan& plan, int pass);

// The legend's size; one that fits no inside corner goes to the right or, at a printed size
// without room there, under the plot in as many columns as fit and at most a quarter of the
// height: two columns of shortened entries, then the first rows and a last entry that says
// where the rest is.
void layout_legend(Pass& p, const Plan& plan);

// The plot rectangle, its transform, the x ticks thinned to what fits level, and the obstacles
// that label placement must avoid (markers, lines, references).
void place_plot(Pass& p, Plan& plan);

void paint_titles(Pass& p, const Plan& plan);

void paint_grid(Pass& p);

// Horizontal bars, one slot per category, series side by side; hatched bars are the derated ones.
void paint_bars(Pass& p);
void paint_bar_labels(Pass& p);  // the texts after stacked bars (Figure::bar_labels), over the lines

// Reference lines and data lines, clipped to the plot.
void paint_lines(Pass& p);

// The frame, major and minor ticks with their labels, and the axis titles.
void paint_axes(Pass& p);

// Markers; those marked `on_top` (ridge points) last, so data never hides them.
void paint_points(Pass& p);

// The numbered key beside the chart.
void paint_key(Pass& p, const Plan& plan);

// Whether a text's box crosses any of the segments (sampled every 2.5 pt).
bool crosses_lines(const Quad& q, const std::vector<std::pair<P, P>>& segs);

// Labels written along their lines (roof values), at the preferred place or the nearest one
// clear of the other lines, markers and labels.
void place_line_labels(Pass& p);

// Reference labels (ridges, memory sizes): at an end of their line, on a side free of other
// lines and labels; when no spot is free, the least bad one on a light backing.
// Returns false when a label found no place clear of the other labels (the chart is laid out
// again with the references named in the legend).
bool place_reference_labels(Pass& p, const Plan& plan);

// The legend: an inside corner that covers nothing, else beside or under the plot. Returns
// false when no corner was free and the chart must be laid out again with room outside.
bool place_legend(Pass& p, Plan& plan, int pass);

// Point labels, greedy: the nearest free spot around the point, farther out with a leader line.
// A number in the key must be drawn: then over lines and markers (never over another label).
// Returns whether a label found no spot (and a numbered key would hold it).
bool place_point_labels(Pass& p, const Plan& plan);

// The numbered key's heading: "key", and what a "(+N)" after a label means when one has it
inline std::string key_title(const std::vector<std::string>& lines) {
  for (const auto& l : lines)
    if (l.find(" (+") != std::string::npos) return "key · (+N): N more here";
  return "key";
}

}  // namespace rsim::plots::layout
