// Shared by the chart builders (chart_roofline.cpp, chart_trend.cpp, chart_layers.cpp,
// chart_heatmap.cpp) and charts.cpp: result columns, a platform's identity and slot across the
// run, axis ranges, CSV lines. Internal to plots/.
#pragma once
#include <string>
#include <vector>

#include "engine/eval/evaluate.hpp"
#include "engine/scenario/scenario.hpp"
#include "plots/charts.hpp"
#include "plots/figure.hpp"

namespace rsim::plots::chart {

struct ColumnInfo {
  const char* name;
  const char* title;
  const char* unit;  // tick unit
  bool platform_free;  // same on every platform
};

const ColumnInfo* column(const std::string& n);
// A value of a layer row; NaN when the column is not a layer column.
double row_value(const Row& r, const std::string& c);
double summary_value(const SummaryRow& s, const std::string& c);
// (the execution mode when it is not the default: graph and eager network times are not sums of kernels)
std::string conventions(const Settings& s);
// What a network total holds beside its kernels' roofline times, for the subtitle: the launch
// overhead per kernel under `execution: fused` ("+5 µs launch per kernel"); graph and eager modes
// are named by conventions(). "" when no platform adds one.
std::string launch_note(const RunResult& r, const std::vector<std::string>& plats, const Settings& set);
std::vector<std::string> platform_names(const RunResult& r);
const Platform* find_platform(const RunResult& r, const std::string& name);
// Whether the plot entry gave `key` itself (not a default)
bool given(const PlotSpec& p, const std::string& key);
// `xlim` / `ylim` of a plot entry: the axes' ranges as given (ticks outside them dropped).
void apply_limits(Figure& f, const PlotSpec& spec);
// A platform's place among every platform of the run (first appearance over the points): its
// identity, so that it keeps one colour in every figure of the run, whichever others a figure draws.
size_t platform_identity(const RunResult& r, const std::string& name);
// An axis title for a sweep variable: its `label:` and `unit:` ("Vector clock [GHz]"), or its name.
std::string var_title(const Scenario& s, const std::string& name);
std::vector<std::string> network_names(const RunResult& r);
// A scenario's `platforms:` entry k resolves to one platform per point; what-if variants get a
// name per point ("x@2.2GHz", or any name of their own). The slot of a platform name: the entry
// whose platform has that name (or that prefix before '@') at some point; SIZE_MAX when none.
size_t platform_slot(const RunResult& r, const std::string& name);
// What a slot is called on a chart: its one name, the common part before '@' of its variants, or
// the `base:` of a what-if entry.
std::string slot_name(const RunResult& r, const Scenario& s, size_t k);
size_t slot_at(const PointResult& pr, const std::string& platform);
std::string first_network(const RunResult& r);
// "groups=32" / "k=3, p=1"
std::string point_text(const RunResult& r, size_t point);
// Decade-aligned log range containing [lo, hi] with some air.
void log_range(Axis& a, double lo, double hi);
void linear_range(Axis& a, double lo, double hi, bool from_zero);
// Auto: log when all values are positive and span more than a factor of 20.
void auto_range(Axis& a, const std::vector<double>& v, const std::string& mode, bool from_zero);
std::string csv_line(const std::vector<std::string>& cells);
// Roof colours for overlays: none of them is a bound colour (blue, orange) used by the points.
Color roof_color(size_t i);
// 1234567 → "1,234,567"
std::string grouped(size_t n);
bool close_to(double a, double b);
// Adds a line unless an identical one (same points and dash) is there already.
void add_line(Figure& f, Line L);
bool over_memory(const SummaryRow& sm);
// " · n1, n2" for a subtitle when the plot names its networks, else "".
std::string network_text(const PlotSpec& spec);

// The chart kinds, one file each.
BuiltFigure roofline(const PlotSpec& spec, const RunResult& r, const Scenario& s, const std::vector<std::string>& plats);
BuiltFigure trend(const PlotSpec& spec, const RunResult& r, const Scenario& s);
BuiltFigure layers(const PlotSpec& spec, const RunResult& r, const Scenario& s, const std::string& platform);
BuiltFigure heatmap(const PlotSpec& spec, const RunResult& r, const Scenario& s, const std::string& platform);
// A network's time per platform as stacked bars of its parts (work by bound, overhead,
// communication, bubble); with spec.baseline, over the baseline's time, speedups after the bars.
BuiltFigure compare(const PlotSpec& spec, const RunResult& r, const Scenario& s, const std::vector<std::string>& plats);

}  // namespace rsim::plots::chart
