#include "plots/chart_common.hpp"

#include <algorithm>
#include <cmath>
#include <map>
#include <set>

#include "engine/model/names.hpp"
#include "engine/output/output.hpp"
#include "engine/model/units.hpp"
#include "plots/draw.hpp"

namespace rsim::plots {
using namespace chart;

// ---------------------------------------------------------------- heatmap

BuiltFigure chart::heatmap(const PlotSpec& spec, const RunResult& r, const Scenario& s, const std::string& platform) {
  BuiltFigure out;
  Figure& f = out.figure;
  f.width = spec.width, f.height = spec.height;
  Heatmap h;
  std::string xv = spec.x, yv = spec.layer;  // heatmap: x and y are sweep variables (y stored in `layer`)
  std::string net = spec.networks.empty() ? first_network(r) : spec.networks.front();
  size_t slot = platform_slot(r, platform);
  std::map<std::pair<std::string, std::string>, double> cell;
  std::set<std::pair<std::string, std::string>> over;  // cells whose network does not fit in memory
  for (size_t pi = 0; pi < r.results.size(); ++pi) {
    const std::string* a = env_find(r.points[pi].bindings, xv);
    const std::string* b = env_find(r.points[pi].bindings, yv);
    if (!a || !b) continue;
    if (std::find(h.xcats.begin(), h.xcats.end(), *a) == h.xcats.end()) h.xcats.push_back(*a);
    if (std::find(h.ycats.begin(), h.ycats.end(), *b) == h.ycats.end()) h.ycats.push_back(*b);
    // what-if platforms get a name per point: take the one in the same `platforms:` entry
    const PointResult& pr = r.results[pi];
    if (slot >= pr.platforms.size()) continue;
    for (const auto& sm : pr.summary)
      if (sm.platform == pr.platforms[slot]->name && sm.network == net) {
        cell[{*a, *b}] = summary_value(sm, spec.value);
        if (over_memory(sm)) over.insert({*a, *b});
      }
  }
  auto numeric_sort = [](std::vector<std::string>& v) {
    if (std::all_of(v.begin(), v.end(), [](const std::string& x) { return parse_double(x).has_value(); }))
      std::stable_sort(v.begin(), v.end(), [](const std::string& a, const std::string& b) { return *parse_double(a) < *parse_double(b); });
  };
  numeric_sort(h.xcats);
  numeric_sort(h.ycats);
  for (const auto& yc : h.ycats) {
    std::vector<double> row;
    std::vector<char> row_over;
    for (const auto& xc : h.xcats) {
      auto it = cell.find({xc, yc});
      row.push_back(it == cell.end() ? NAN : it->second);
      row_over.push_back(over.count({xc, yc}) ? 1 : 0);
    }
    h.values.push_back(row);
    h.over.push_back(row_over);
  }
  const ColumnInfo* c = column(spec.value);
  h.value_label = c ? c->title : spec.value;
  h.value_unit = c ? c->unit : "";
  double lo = 1e300, hi = 0;
  for (const auto& row : h.values)
    for (double v : row)
      if (v > 0 && std::isfinite(v)) lo = std::min(lo, v), hi = std::max(hi, v);
  h.log_colors = hi / lo > 30;
  if (spec.color_scale == "range" && spec.color_range.size() == 2) {  // [lo, hi] given
    h.range_lo = spec.color_range[0], h.range_hi = spec.color_range[1];
    h.log_colors = h.range_lo > 0 && h.range_hi / h.range_lo > 30;
  }
  f.heatmap = h;
  f.grid = false;
  f.x.title = var_title(s, xv);
  f.y.title = var_title(s, yv);
  f.title = spec.title.empty() ? std::string(c ? c->title : spec.value).substr(0, std::string(c ? c->title : spec.value).find(" [")) + " — " + platform : spec.title;
  f.subtitle = s.name + " · " + net + " network totals · " + run_dtype_label(r) + " · " + conventions(r.results.front().settings);
  if (spec.value.find("time") != std::string::npos || spec.value.find("tokens") != std::string::npos || spec.value.find("achieved") != std::string::npos)
    if (const std::string ln = launch_note(r, {}, r.results.front().settings); !ln.empty()) f.subtitle += " · " + ln;
  if (!over.empty()) f.subtitle += " · hatched: does not fit in memory";
  out.data_csv = csv_line({xv, yv, spec.value, "fits_in_memory"});
  for (size_t yi = 0; yi < h.ycats.size(); ++yi)
    for (size_t xi = 0; xi < h.xcats.size(); ++xi)
      out.data_csv += csv_line({h.xcats[xi], h.ycats[yi], format_number(h.values[yi][xi]), h.over[yi][xi] ? "false" : "true"});
  return out;
}

}  // namespace rsim::plots
