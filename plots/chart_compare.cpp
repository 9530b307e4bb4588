#include "plots/chart_common.hpp"

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "engine/model/names.hpp"
#include "engine/output/output.hpp"
#include "engine/model/units.hpp"
#include "plots/draw.hpp"

namespace rsim::plots {
using namespace chart;

// ---------------------------------------------------------------- compare: each network's time per platform, in its parts

namespace {

// The parts of a network's time (SummaryRow::parts), in the order they are stacked, with their
// legend text and colour: work by bound in the roofline's bound colours, overhead in greys,
// communication and the bubble in hues of their own.
struct Part {
  const char* key;
  const char* legend;
  Color color;
  double TimeParts::*field;
};
const std::vector<Part>& parts() {
  static const std::vector<Part> p = {
      {"compute", "work: compute-bound kernels", bound_color("compute"), &TimeParts::compute},
      {"memory", "work: memory-bound kernels", bound_color("memory"), &TimeParts::memory},
      {"launch", "overhead: kernel launches", rgb(0x777777), &TimeParts::launch},
      {"host", "overhead: the host", rgb(0xBBBBBB), &TimeParts::host},
      {"comm", "exposed communication", bound_color("interconnect"), &TimeParts::comm},
      {"bubble", "pipeline bubble", rgb(0xCC79A7), &TimeParts::bubble},
  };
  return p;
}

size_t utf8_length(const std::string& s) {
  size_t n = 0;
  for (unsigned char c : s) n += (c & 0xC0) != 0x80;
  return n;
}

std::string speedup_text(double x) {
  char b[32];
  std::snprintf(b, sizeof b, x >= 9.995 ? "%.1f×" : "%.2f×", x);
  return b;
}

}  // namespace

// One network (spec.networks' first, else the run's first) on the platforms `plats`.
BuiltFigure chart::compare(const PlotSpec& spec, const RunResult& r, const Scenario& s, const std::vector<std::string>& plats) {
  BuiltFigure out;
  Figure& f = out.figure;
  const size_t pi = static_cast<size_t>(spec.point);
  const PointResult& pr = r.results[pi];
  const bool derated = spec.roofs != "theoretical";
  if (!spec.baseline.empty() && std::find(plats.begin(), plats.end(), spec.baseline) == plats.end()) {
    std::string list;
    for (const auto& p : plats) list += (list.empty() ? "" : ", ") + p;
    const std::string hint = did_you_mean(spec.baseline, plats);
    throw ConfigError(spec.baseline_loc.known() ? spec.baseline_loc : spec.loc, "baseline '" + spec.baseline + "' is not a platform of this figure",
                      {Note{{}, hint.empty() ? "its platforms: " + list : hint}});
  }
  // the networks, in the run's order (the plot's `network:` picks some)
  std::vector<std::string> nets;
  for (const SummaryRow& sm : pr.summary)
    if (shows_network(spec, sm.network) && std::find(nets.begin(), nets.end(), sm.network) == nets.end()) nets.push_back(sm.network);
  auto row_of = [&](const std::string& net, const std::string& plat) -> const SummaryRow* {
    for (const SummaryRow& sm : pr.summary)
      if (sm.network == net && sm.platform == plat) return &sm;
    return nullptr;
  };
  // one bar per platform; with a baseline the times over the baseline's time (1 for the baseline
  // itself) and the speedup written after each bar
  std::vector<BarSeries> series(parts().size());
  for (size_t k = 0; k < parts().size(); ++k) series[k].legend = parts()[k].legend, series[k].color = parts()[k].color;
  std::vector<double> totals;
  std::vector<bool> present(parts().size(), false);
  out.data_csv = csv_line({"network", "platform", "time_s", "compute_s", "memory_s", "launch_s", "host_s", "comm_s", "bubble_s", "limit",
                           spec.baseline.empty() ? "" : "speedup_vs_" + spec.baseline});
  const std::string net = nets.empty() ? "" : nets.front();
  const SummaryRow* base = spec.baseline.empty() ? nullptr : row_of(net, spec.baseline);
  const double tb = base ? (derated ? base->dparts : base->parts).total() : 0;
  for (const std::string& plat : plats) {
    const SummaryRow* sm = row_of(net, plat);
    if (!sm) continue;
    const TimeParts& tp = derated ? sm->dparts : sm->parts;
    const double t = tp.total();
    const double scale = base ? (tb > 0 ? 1 / tb : 0) : 1;
    f.y.categories.push_back(plat);
    for (size_t k = 0; k < parts().size(); ++k) {
      const double v = tp.*(parts()[k].field) * scale;
      series[k].values.push_back(v);
      if (v > 0) present[k] = true;
    }
    totals.push_back(t * scale);
    const double speedup = base && t > 0 && tb > 0 ? tb / t : 0;
    f.bar_labels.push_back(base ? (speedup > 0 ? speedup_text(speedup) + (plat == spec.baseline ? " (baseline)" : "") : "") : t > 0 ? si(t, "s", 3) : "");
    std::vector<std::string> cells = {net, plat, format_number(t)};
    for (const Part& p : parts()) cells.push_back(format_number(tp.*(p.field)));
    cells.push_back(time_limit(tp).first);
    cells.push_back(base ? format_number(speedup) : "");
    out.data_csv += csv_line(cells);
  }
  for (size_t k = 0; k < parts().size(); ++k)
    if (present[k]) f.bars.push_back(series[k]);
  f.stacked = true;
  const size_t n = f.y.categories.size();
  const bool fixed = style_preset(spec.style).fixed || spec.physical;
  f.width = spec.width;
  f.height = fixed ? spec.height : std::max(260.0, 140.0 + static_cast<double>(n) * 34.0);
  f.y.min = -0.5;
  f.y.max = static_cast<double>(n) - 0.5;
  // the first bar on top: reverse the categories (the axis runs bottom to top)
  std::reverse(f.y.categories.begin(), f.y.categories.end());
  std::reverse(f.bar_labels.begin(), f.bar_labels.end());
  for (auto& b : f.bars) std::reverse(b.values.begin(), b.values.end());
  // a linear axis from 0 (parts end to end), with room after the longest bar for its label: its
  // width estimated from the text (0.56 em a character) against the plot's (the canvas less the
  // category labels and margins)
  size_t cat_chars = 0;
  for (const auto& c : f.y.categories) cat_chars = std::max(cat_chars, utf8_length(c));
  const double em = 0.56 * spec.font_size, plot_w = std::max(80.0, f.width - em * static_cast<double>(cat_chars) - 5 * spec.font_size);
  double xmax = 0;  // each bar's end and its label inside the plot: t / xmax · w + label ≤ w
  for (size_t i = 0; i < totals.size(); ++i) {
    const double label_w = std::min(0.6 * plot_w, em * static_cast<double>(utf8_length(f.bar_labels[i])) + 8);
    xmax = std::max(xmax, totals[i] * plot_w / (plot_w - label_w));
  }
  auto_range(f.x, {0.0, xmax > 0 ? xmax : 1.0}, "linear", true);
  f.x.min = 0;
  f.x.title = spec.baseline.empty() ? std::string(derated ? "Time per step on the derated roofs [s]" : "Time per step on the theoretical roofs [s]")
                                    : "Time relative to " + spec.baseline + " (= 1)";
  f.x.unit = spec.baseline.empty() ? "s" : "";
  if (!spec.baseline.empty()) {  // where the baseline's bars end
    Reference one;
    one.vertical = true, one.value = 1;
    one.style = LineStyle{rgb(0x555555), 0.9, Dash::Dashed};
    f.refs.push_back(one);
  }
  f.y.title = "";
  for (size_t k = 0; k < parts().size(); ++k)
    if (present[k]) {
      LegendEntry e{parts()[k].legend, false, {}, false, {}, parts()[k].color};
      e.bar = true;
      f.legend.push_back(e);
    }
  f.title = spec.title.empty() ? (spec.baseline.empty() ? "Time per platform — " : "Speedup over " + spec.baseline + " — ") + net : spec.title;
  f.subtitle = s.name + (r.points.size() > 1 ? " · " + point_text(r, pi) : "") + " · " + conventions(pr.settings) + " · " +
               (derated ? "derated roofs" : "theoretical roofs") + (spec.baseline.empty() ? "" : " · speedup = baseline time / time");
  return out;
}

}  // namespace rsim::plots
