// The figure model: plain data describing a chart, free of any drawing state. Chart builders
// fill it from results; draw() lays it out and paints it through a Renderer.
#pragma once
#include <optional>
#include <string>
#include <vector>

namespace rsim::plots {

struct Color {
  double r = 0, g = 0, b = 0, a = 1;
};
Color rgb(unsigned hex, double alpha = 1);

enum class Marker { Circle, Square, TriangleUp, Diamond, TriangleDown, Pentagon, Hexagon, Cross };
enum class Dash { Solid, Dashed, Dotted, DashDot };

struct LineStyle {
  Color color;
  double width = 1.5;  // points
  Dash dash = Dash::Solid;
};

enum class Scale { Linear, Log };

struct P {
  double x = 0, y = 0;
};

// A line in data coordinates, optionally labelled along its length.
struct Line {
  std::vector<P> pts;
  LineStyle style;
  std::string legend;      // entry in the legend ("" = none)
  std::string label;       // text written along the line ("" = none)
  double label_at = 0.85;  // where along the visible part of the line the label sits (0…1)
  bool label_above = true;
  std::string label_short;  // what is written when `label` finds no room along the line ("" = nothing)
};

// A point with an optional label that the layout places without overlaps.
struct Point {
  P at;
  Marker marker = Marker::Circle;
  Color fill;
  double size = 7;  // points, marker diameter
  std::string label;
  bool on_top = false;  // drawn after the others (ridge points)
  bool connect = true;  // trend: joined to its neighbours by the series line
  bool hollow = false;  // an outline in `fill`'s colour on white (e.g. measured beside predicted)
  std::string tip;      // what report.html shows when a reader points at it ("": the label and the coordinates)
};

// A vertical or horizontal reference (e.g. a ridge point), labelled.
struct Reference {
  bool vertical = true;
  double value = 0;
  LineStyle style;
  std::string label;
};

// Horizontal bars: one category per row (top to bottom), one or more bars per category.
struct BarSeries {
  std::string legend;
  std::vector<double> values;  // one per category; <= 0 is not drawn
  std::vector<Color> colors;   // one per category (or empty: all `color`)
  Color color;
  Dash outline = Dash::Solid;
  bool hatched = false;  // for greyscale: the second series is hatched
  std::vector<std::string> tips;  // report.html's tooltip per category ("" or missing: category, legend and value)
};

struct Heatmap {
  std::vector<std::string> xcats, ycats;  // columns left→right, rows bottom→top
  std::vector<std::vector<double>> values;  // [row][column]
  std::string value_label;                  // colour-bar title
  bool log_colors = false;
  bool annotate = true;  // write values in cells when the grid is small
  std::string value_unit;
  std::vector<std::vector<char>> over;  // [row][column]: 1 where the network does not fit in memory (hatched)
  double range_lo = 0, range_hi = 0;    // the colour scale's range when fixed (range_hi > range_lo), else the values'
};

struct LegendEntry {
  std::string text;
  bool has_line = false;
  LineStyle line;
  bool has_marker = false;
  Marker marker = Marker::Circle;
  Color fill;
  bool hollow = false;  // an outline in `fill`'s colour (a point that does not fit in memory)
  bool bar = false;     // a bar sample in `fill` (bar charts), hatched like a derated bar when `hatched`
  bool hatched = false;
};

struct Axis {
  Scale scale = Scale::Linear;
  double min = 0, max = 1;
  std::string title;
  std::string unit;  // tick labels get SI prefixes with this unit ("" = plain numbers)
  std::vector<std::string> categories;  // categorical axis (bars): one per integer position
  std::vector<double> ticks;             // explicit major ticks (e.g. the swept values); [] = automatic
  // Set by the layout: tick labels are plain numbers in units of `divisor` (e.g. 1e12 with the
  // title "Performance [TFLOP/s]"), one format for the whole axis; 0 = an SI prefix per tick.
  double divisor = 0;
  // Set by the layout: the ticks are swept powers of two past 1024, labelled in binary multiples
  // ("4 Ki", "128 Ki") rather than as decimal fractions ("131.072 k").
  bool binary = false;
  // A byte axis read against memory sizes (GiB): its unit takes a binary prefix ("[GiB]") and its
  // ticks are decades of it (1, 10, 100 GiB), so the axis and the memory sizes beside it agree.
  bool iec = false;
};

struct Figure {
  double width = 648, height = 432;  // points (1/72 in)
  std::string title, subtitle;
  Axis x, y;
  std::vector<Line> lines;
  std::vector<Reference> refs;
  std::vector<Point> points;
  std::vector<BarSeries> bars;
  // Bars: the series end to end in one bar per category (the parts of a total), not side by side;
  // and a text after each category's bar end (its total, a speedup), one per category ("": none)
  bool stacked = false;
  std::vector<std::string> bar_labels;
  std::optional<Heatmap> heatmap;
  std::vector<LegendEntry> legend;
  bool grid = true;
  // When labels cannot all be placed: numbered markers and a key beside the chart.
  bool allow_key = true;
  // Style: the base text size in points (ticks; titles and labels relative to it, never under
  // 6 pt), factors on line widths and marker sizes, and whether width × height is a printed size
  // the layout must keep exactly (no widening for a key, no growing with the layer count).
  double font_size = 9;
  double line_scale = 1, marker_scale = 1;
  bool fixed_size = false;
};

}  // namespace rsim::plots
