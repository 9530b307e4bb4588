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

// ---------------------------------------------------------------- per-layer bars

namespace {
// A long layer name shortened in the middle, keeping where it starts and what it is:
// "/features/features.2/features.2.0/block/block.0/Conv" → "/features/…/block.0/Conv"
std::string middle_short(const std::string& name, size_t most = 36) {
  if (name.size() <= most) return name;
  std::vector<std::string> parts;
  for (size_t at = 0;;) {
    const size_t sep = name.find('/', at);
    parts.push_back(name.substr(at, sep == std::string::npos ? std::string::npos : sep - at));
    if (sep == std::string::npos) break;
    at = sep + 1;
  }
  {  // an exporter's scope names repeat their prefix ("features/features.2/features.2.0"): keep the last of each run
    std::vector<std::string> kept;
    for (size_t i = 0; i < parts.size(); ++i)
      if (parts[i].empty() || i + 1 >= parts.size() || parts[i + 1].rfind(parts[i] + ".", 0) != 0) kept.push_back(parts[i]);
    if (kept.size() < parts.size()) {
      std::string joined;
      for (size_t i = 0; i < kept.size(); ++i) joined += (i ? "/" : "") + kept[i];
      if (joined.size() <= most) return joined;
      parts = kept;
    }
  }
  if (parts.size() >= 4) {  // the first component (after a leading '/'), then as many last ones as fit
    const size_t head = parts[0].empty() ? 2 : 1;
    std::string start;
    for (size_t i = 0; i < head; ++i) start += parts[i] + "/";
    std::string tail = parts.back();
    for (size_t i = parts.size() - 1; i-- > head;) {
      if (start.size() + 4 + parts[i].size() + 1 + tail.size() > most) break;
      tail = parts[i] + "/" + tail;
    }
    const std::string out = start + "…/" + tail;
    if (out.size() < name.size() && out.size() <= most + 8) return out;
  }
  // no path, or its parts too long: its first and last characters (whole UTF-8 sequences)
  size_t a = most / 2, b = name.size() - (most - most / 2 - 1);
  while (a > 0 && (static_cast<unsigned char>(name[a]) & 0xC0) == 0x80) --a;
  while (b < name.size() && (static_cast<unsigned char>(name[b]) & 0xC0) == 0x80) ++b;
  return name.substr(0, a) + "…" + name.substr(b);
}
}  // namespace

BuiltFigure chart::layers(const PlotSpec& spec, const RunResult& r, const Scenario& s, const std::string& platform) {
  BuiltFigure out;
  Figure& f = out.figure;
  size_t pi = static_cast<size_t>(spec.point);
  const PointResult& pr = r.results[pi];
  std::string net = spec.networks.empty() ? first_network(r) : spec.networks.front();
  std::vector<const Row*> rows;
  for (const auto& row : pr.rows)
    if (row.platform == platform && row.network == net) rows.push_back(&row);
  bool time = spec.metric == "time_s";
  // hundreds of layers: the largest ones and an "others" bar, so the chart fits a page
  size_t keep = rows.size();
  {
    bool derated_bars = time && std::any_of(rows.begin(), rows.end(), [](const Row* row) { return row->derated.time_s != row->theoretical.time_s; });
    double pitch = spec.font_size * 1.45 * (derated_bars ? 1.5 : 1);
    if (style_preset(spec.style).fixed || spec.physical) keep = std::max<size_t>(4, static_cast<size_t>((spec.height - 8 * spec.font_size) / pitch));
    else if (rows.size() > 60) keep = 40;
  }
  double others_theo = 0, others_der = 0;
  size_t others = 0;
  const std::vector<const Row*> all_rows = rows;  // the plot data keeps every layer
  if (rows.size() > keep) {
    auto value = [&](const Row* row) { return time ? row->theoretical.time_s : row_value(*row, spec.metric); };
    std::vector<const Row*> sorted = rows;
    std::stable_sort(sorted.begin(), sorted.end(), [&](const Row* a, const Row* b) { return value(a) > value(b); });
    for (size_t i = keep - 1; i < sorted.size(); ++i) {
      others_theo += value(sorted[i]);
      others_der += time ? sorted[i]->derated.time_s : 0;
      ++others;
    }
    sorted.resize(keep - 1);
    rows = sorted;  // largest first
  }
  BarSeries theo, der;
  theo.legend = time ? "theoretical roofs" : spec.metric;
  der.legend = "derated roofs";
  der.hatched = true;
  for (const Row* row : rows) {
    f.y.categories.push_back(middle_short(row->layer));  // (the plot data keeps whole names)
    if (time) {
      theo.values.push_back(row->theoretical.time_s);
      theo.colors.push_back(bound_color(bound_name(row->theoretical.bound)));
      der.values.push_back(row->derated.time_s);
      der.colors.push_back(bound_color(bound_name(row->derated.bound)));
    } else {
      theo.values.push_back(row_value(*row, spec.metric));
      theo.colors.push_back(bound_color(bound_name(row->theoretical.bound)));
    }
  }
  if (others > 0) {
    // the sum of the rest can dwarf the largest layers: its value is written in its label, and
    // the axis is scaled to the layers shown (the bar runs to the edge when longer)
    f.y.categories.push_back("others (" + std::to_string(others) + " layers" + (time ? ", " + si(others_theo, "s", 3) : "") + ")");
    theo.values.push_back(others_theo);
    theo.colors.push_back(bound_color("none"));
    der.values.push_back(others_der);
    der.colors.push_back(bound_color("none"));
  }
  f.bars.push_back(theo);
  bool any_derated = time && std::any_of(rows.begin(), rows.end(), [](const Row* row) { return row->derated.time_s != row->theoretical.time_s; });
  if (any_derated) f.bars.push_back(der);
  size_t n = f.y.categories.size();
  f.width = spec.width;
  bool fixed = style_preset(spec.style).fixed || spec.physical;
  f.height = fixed ? spec.height : std::max(spec.height, 110.0 + static_cast<double>(n) * (any_derated ? 17.0 : 12.0));
  f.y.min = -0.5;
  f.y.max = static_cast<double>(n) - 0.5;
  // categories top to bottom: flip by reversing the axis direction
  std::reverse(f.y.categories.begin(), f.y.categories.end());
  for (auto& b : f.bars) {
    std::reverse(b.values.begin(), b.values.end());
    std::reverse(b.colors.begin(), b.colors.end());
  }
  std::vector<double> vals;
  for (const auto& b : f.bars)
    for (size_t i = others > 0 ? 1 : 0; i < b.values.size(); ++i)  // after the flip, "others" is first
      if (b.values[i] > 0) vals.push_back(b.values[i]);
  // bars start at zero: linear unless asked for log (a log axis has no zero to start from)
  // linear unless the values span more than 100× (then small bars would vanish): log
  double vlo = vals.empty() ? 1 : *std::min_element(vals.begin(), vals.end()), vhi = vals.empty() ? 1 : *std::max_element(vals.begin(), vals.end());
  auto_range(f.x, vals, spec.xscale == "auto" ? (vhi > 100 * vlo ? "log" : "linear") : spec.xscale, true);
  if (f.x.scale == Scale::Linear) f.x.min = 0;
  const ColumnInfo* c = column(spec.metric);
  f.x.title = c ? c->title : spec.metric;
  if (time) f.x.title = "Time per layer [s]";
  f.x.unit = c ? c->unit : "";
  f.y.title = "";
  for (const char* b : {"memory", "compute"})  // only the bounds that occur
    if (std::any_of(rows.begin(), rows.end(), [&](const Row* row) { return bound_name(row->theoretical.bound) == std::string(b) || bound_name(row->derated.bound) == std::string(b); }))
      f.legend.push_back(LegendEntry{std::string(b) + " bound", false, {}, true, Marker::Square, bound_color(b)});
  if (any_derated) {
    LegendEntry upper{"upper bar: theoretical", false, {}, false, {}, rgb(0x999999)};
    upper.bar = true;
    LegendEntry lower = upper;
    lower.text = "lower bar (hatched): derated", lower.hatched = true;
    f.legend.push_back(upper);
    f.legend.push_back(lower);
  }
  const Platform* p = find_platform(r, platform);
  f.title = spec.title.empty() ? (time ? "Time per layer — " : "Per layer — ") + (p && !p->title.empty() ? p->title : platform) : spec.title;
  f.subtitle = s.name + " · " + net + (r.points.size() > 1 ? " · " + point_text(r, pi) : "") + " · " + [&] {  // the dtype the network's layers ran in
                 for (const SummaryRow& sm : pr.summary)
                   if (sm.network == net) return std::string(dtype_name(sm.dtype));
                 return std::string(dtype_name(pr.settings.dtype));
               }() + " · " + conventions(pr.settings);
  {  // what the run holds that this figure does not draw, so that nothing is left out unsaid
    std::vector<std::string> nets, plats;
    for (const SummaryRow& sm : pr.summary) {
      if (spec.networks.empty() && sm.network != net && std::find(nets.begin(), nets.end(), sm.network) == nets.end()) nets.push_back(sm.network);
      if (spec.platforms.empty() && sm.platform != platform && std::find(plats.begin(), plats.end(), sm.platform) == plats.end()) plats.push_back(sm.platform);
    }
    auto list = [](const std::vector<std::string>& v) {
      std::string t;
      for (size_t i = 0; i < v.size() && i < 3; ++i) t += (i ? ", " : "") + v[i];
      return v.size() > 3 ? t + " and " + std::to_string(v.size() - 3) + " more" : t;
    };
    std::string left;
    if (!nets.empty()) left += (nets.size() == 1 ? "network " : "networks ") + list(nets) + " (network: picks one)";
    if (!plats.empty()) left += (left.empty() ? "" : "; ") + std::string(plats.size() == 1 ? "platform " : "platforms ") + list(plats) + " (platforms: picks them)";
    if (!left.empty()) f.subtitle += " · not drawn: " + left;
  }
  out.data_csv = csv_line({"layer", "op", spec.metric, "bound", time ? "derated_time_s" : "", time ? "derated_bound" : ""});
  for (const Row* row : all_rows)
    out.data_csv += csv_line({row->layer, row->op, format_number(time ? row->theoretical.time_s : row_value(*row, spec.metric)), bound_name(row->theoretical.bound),
                              time ? format_number(row->derated.time_s) : "", time ? bound_name(row->derated.bound) : ""});
  return out;
}

}  // namespace rsim::plots
