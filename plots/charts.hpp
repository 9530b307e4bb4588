// Chart builders: from evaluation results to figures, as declared in a scenario's `plots:`
// section (or the defaults: a roofline per platform and a trend per swept variable).
#pragma once
#include <string>
#include <vector>

#include "engine/model/config.hpp"
#include "engine/eval/evaluate.hpp"
#include "plots/cairo_renderer.hpp"
#include "plots/figure.hpp"

namespace rsim::plots {

enum class Kind { Roofline, Trend, Layers, Heatmap, Compare, ServingCurve, Timeline, LatencyCdf };

struct PlotSpec {
  Kind kind = Kind::Roofline;
  std::string name;   // file stem; default from the kind and its subject
  std::string title;  // default from the kind
  std::vector<std::string> platforms;  // roofline/layers/heatmap: which platforms ([] = each, or all overlaid for what-ifs)
  bool overlay = false;                // roofline: every selected platform on one chart
  std::string points = "layers";       // roofline: layers | networks
  std::string color = "bound";         // roofline: bound | network | point | op
  std::string marker = "op";           // roofline: op | network | point
  std::string labels = "auto";         // roofline: auto | all | none
  std::string roofs = "both";          // roofline: theoretical | derated | both; compare: theoretical | derated (the default, "both" read so)
  std::string intensity = "memory";    // roofline: memory (FLOPs per byte of memory) | interconnect (FLOPs per byte over the GPUs' links)
  std::string x;                       // trend: a sweep variable, or layer | output_size | out_channels | in_channels
  std::string y = "intensity";         // trend: a result column
  std::string series = "auto";         // trend: auto | platform | network | layer
  std::string layer;                   // trend: one layer's rows instead of network totals
  std::string op;                      // trend with x = layer: only layers of this op
  std::string xscale = "auto", yscale = "auto";  // auto | linear | log
  std::string metric = "time_s";       // layers: time_s | flops | bytes | intensity
  long long point = 0;                 // layers, compare, timeline: which sweep point (latency_cdf: −1, every point)
  std::string baseline;                // compare: the platform the times are divided by (speedups on the bars); "": times
  SourceLoc baseline_loc;
  std::string value = "derated_time_s";  // heatmap: a summary column
  std::vector<std::string> networks;   // which networks ([] = the first for layers/heatmap, every one for roofline/trend); layers/heatmap: a figure each
  std::string subtitle = "full";       // full | short | none
  std::vector<double> xlim, ylim;      // roofline, trend: [lo, hi] in base units (empty: automatic)
  std::string color_scale = "auto";    // heatmap: auto | shared | range (color_range)
  std::vector<double> color_range;     // heatmap: [lo, hi] when color_scale is "range"
  std::vector<Format> formats;         // [] = the run's --format
  // Print style: screen (today's 9 × 6 in canvas), paper (one column of a two-column paper,
  // 88 × 66 mm), paper-wide (across both columns, 180 × 80 mm), slides (16:9, 254 × 143 mm).
  // width/height/font_size/dpi given explicitly (or by `settings.figures`) win over the style's.
  std::string style = "screen";
  double width = 648, height = 432;    // points (1/72 in); screen layers charts grow with the layer count
  double font_size = 9;                // points: tick labels; titles and labels relative to it
  double dpi = 150;
  std::vector<std::string> given;      // the style keys set explicitly (style, width, height, font_size, dpi)
  bool physical = false;               // width/height given in mm/cm/in/pt: kept exactly
  SourceLoc loc;
  std::vector<SourceLoc> network_locs;  // of each name in `networks`
  std::vector<SourceLoc> platform_locs;  // of each name in `platforms`
};

// Reads `plots:` (a list). Errors are collected in `d`.
std::vector<PlotSpec> parse_plot_specs(const CNode& node, const std::vector<std::string>& sweep_vars, Diags& d);
// `settings.figures` (style, width, height, font_size, dpi): defaults for every plot that does not
// set the key itself. `settings` is the scenario's settings node (may be null).
void apply_figure_defaults(std::vector<PlotSpec>& specs, const CNode& settings, Diags& d);
// A style's size, font, line and marker factors, and PNG resolution (throws nothing; unknown = screen).
struct StylePreset {
  double width, height, font_size, line_scale, marker_scale, dpi;
  bool fixed, title;
};
StylePreset style_preset(const std::string& style);
// The spec with its style resolved: every key not given takes the style's value.
PlotSpec resolved(const PlotSpec& spec);
// What `run` draws when a scenario declares no plots.
std::vector<PlotSpec> default_plot_specs(const RunResult& r, const Scenario& s);

struct BuiltFigure {
  std::string name;  // file stem
  Figure figure;
  std::string data_csv;  // the plotted values, to re-plot elsewhere
  const PlotSpec* spec = nullptr;
  size_t series = 0;  // a trend's lines
};

// One spec can give several figures (a roofline per platform). Throws ConfigError for a spec that
// names something the results lack (an unknown column, platform or variable).
std::vector<BuiltFigure> build_figures(const PlotSpec& spec, const RunResult& r, const Scenario& s);
// The spec's style on figures built from resolved(spec): fonts, line and marker scales, a printed
// size kept, a paper figure's title left to its caption, the subtitle as asked
void apply_style(const PlotSpec& spec, std::vector<BuiltFigure>& figures);

// A line of more points than the plot has pixel columns, in x order: per column (of `columns`
// across the x axis, on its scale) the first, lowest, highest and last point, which draw the same
// pixels as all of them. A line not in x order, or of at most 4 points per column, is kept whole.
std::vector<P> thin_line(const std::vector<P>& pts, const Axis& x, double columns);

// Whether a trend plots layer rows at every point (one layer, or x = output_size / out_channels)
// rather than network totals.
bool trend_reads_rows(const PlotSpec& spec);

// Whether a plot draws network `name` (its `network:` list, or every network when it gives none).
bool shows_network(const PlotSpec& spec, const std::string& name);

// Every numeric column a trend or heatmap can plot.
const std::vector<std::string>& plottable_columns();

}  // namespace rsim::plots
