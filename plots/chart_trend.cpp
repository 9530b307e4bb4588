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

namespace {

// ---------------------------------------------------------------- trend

double x_of_row(const Row& row, const std::string& x, const RunResult& r, size_t point, bool& ok) {
  ok = true;
  auto dim = [&](size_t i) -> double {  // of the first output, e.g. 1x64x56x56
    ok = i < row.output_shape.size();
    return ok ? static_cast<double>(row.output_shape[i]) : NAN;
  };
  if (x == "output_size") return dim(2);
  if (x == "out_channels") return dim(1);
  for (const auto& [k, v] : r.points[point].bindings)
    if (k == x) {
      auto n = parse_double(v);
      ok = n.has_value();
      return n ? *n : NAN;
    }
  ok = false;
  return NAN;
}

}  // namespace

std::vector<P> thin_line(const std::vector<P>& pts, const Axis& x, double columns) {
  if (pts.size() <= static_cast<size_t>(4 * columns) || columns < 1) return pts;
  const bool log = x.scale == Scale::Log;
  auto pos = [&](double v) { return log ? std::log10(v) : v; };
  const double lo = pos(x.min), span = pos(x.max) - lo;
  for (size_t i = 1; i < pts.size(); ++i)
    if (!(pts[i].x >= pts[i - 1].x) || (log && !(pts[i - 1].x > 0))) return pts;
  if (!(span > 0) || !std::isfinite(span)) return pts;
  std::vector<P> out;
  size_t first = 0;
  while (first < pts.size()) {
    const double col = std::floor((pos(pts[first].x) - lo) / span * columns);
    size_t last = first, low = first, high = first;
    while (last + 1 < pts.size() && std::floor((pos(pts[last + 1].x) - lo) / span * columns) == col) {
      ++last;
      if (pts[last].y < pts[low].y) low = last;
      if (pts[last].y > pts[high].y) high = last;
    }
    std::vector<size_t> keep{first, low, high, last};
    std::sort(keep.begin(), keep.end());
    keep.erase(std::unique(keep.begin(), keep.end()), keep.end());
    for (size_t k : keep) out.push_back(pts[k]);
    first = last + 1;
  }
  return out;
}

bool trend_reads_rows(const PlotSpec& spec) {
  return spec.kind == Kind::Trend && spec.x != "layer" && (!spec.layer.empty() || spec.x == "output_size" || spec.x == "out_channels");
}

namespace {

// A line of the trend chart: its points (x, y) and where the network does not fit
struct TrendSeries {
  std::string name;
  std::vector<P> pts;
  std::vector<char> over;  // per point (summary totals): 1 where the network does not fit in memory
  std::string platform;    // the platform whose line it is, when the series are platforms (its colour)
};

// The precision whose roof the ridges are drawn for: the networks' own when they agree, else the settings'
DType ridge_dtype(const RunResult& r) {
  DType net_dtype = r.results.front().settings.dtype;
  bool first = true, one = true;
  for (const auto& pr : r.results)
    for (const SummaryRow& sm : pr.summary) {
      if (first) net_dtype = sm.dtype, first = false;
      else one = one && sm.dtype == net_dtype;
    }
  if (!one) net_dtype = r.results.front().settings.dtype;
  return net_dtype;
}

// Each series' points in order of x (its fit marks with them); whether any point does not fit
bool sort_series(std::vector<TrendSeries>& series) {
  bool any_over = false;
  for (auto& sr : series) {
    sr.over.resize(sr.pts.size(), 0);
    std::vector<size_t> order(sr.pts.size());
    for (size_t k = 0; k < order.size(); ++k) order[k] = k;
    std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return sr.pts[a].x < sr.pts[b].x; });
    std::vector<P> pts;
    std::vector<char> over;
    for (size_t k : order) pts.push_back(sr.pts[k]), over.push_back(sr.over[k]), any_over = any_over || sr.over[k];
    sr.pts = std::move(pts), sr.over = std::move(over);
  }

  return any_over;
}

// The reference lines: ridge points when y is intensity (a what-if varied per point: a line through
// its points), memory sizes when y is a footprint; their values into ys (the axis holds them)
void trend_references(const PlotSpec& spec, const RunResult& r, const Scenario& s, DType net_dtype, bool categorical, std::vector<Reference>& refs,
                      std::vector<Line>& ridge_lines, std::vector<double>& ys) {
  // what-if variants (a platform per sweep point in one `platforms:` entry) each apply at their
  // own points: their ridge is a line through those points, not a reference across every x
  std::set<std::string> varying;
  if (spec.y == "intensity" && !categorical) {
    size_t slots = 0;
    for (const auto& pr : r.results) slots = std::max(slots, pr.platforms.size());
    for (size_t k = 0; k < slots; ++k) {
      std::set<std::string> names;
      Line L;
      for (size_t pi = 0; pi < r.results.size(); ++pi) {
        const PointResult& pr = r.results[pi];
        if (k >= pr.platforms.size()) continue;
        const Platform& pl = *pr.platforms[k];
        names.insert(pl.name);
        const ComputeRoof* roof = pl.roof_for(net_dtype);
        const std::string* v = env_find(r.points[pi].bindings, spec.x);
        auto xv = v ? parse_double(*v) : std::nullopt;
        if (roof && xv && !pl.memory.empty()) L.pts.push_back({*xv, roof->derated_flops_per_s / pl.memory.front().derated_bandwidth_bytes_per_s});
      }
      if (names.size() < 2 || L.pts.size() < 2) continue;
      varying.insert(names.begin(), names.end());
      std::stable_sort(L.pts.begin(), L.pts.end(), [](const P& a, const P& b) { return a.x < b.x; });
      L.pts.erase(std::unique(L.pts.begin(), L.pts.end(), [](const P& a, const P& b) { return close_to(a.x, b.x) && close_to(a.y, b.y); }), L.pts.end());
      L.style = LineStyle{rgb(ridge_lines.size() % 2 ? 0x666666 : 0x333333), 1.0, ridge_lines.size() % 2 ? Dash::Dotted : Dash::Dashed};
      L.label = slot_name(r, s, k) + " ridge";
      L.label_at = 0.5;
      for (const P& q : L.pts) ys.push_back(q.y);
      ridge_lines.push_back(L);
    }
  }
  if (spec.y == "intensity") {
    size_t ci = 0;
    for (const auto& name : platform_names(r)) {
      if (varying.count(name)) continue;
      const Platform* p = find_platform(r, name);
      if (!p) continue;
      const ComputeRoof* roof = p->roof_for(net_dtype);
      if (!roof) continue;
      const MemoryLevel& m = p->memory.front();
      double ridge = roof->derated_flops_per_s / m.derated_bandwidth_bytes_per_s;
      char buf[160];
      std::snprintf(buf, sizeof buf, "%s ridge %.3g", name.c_str(), ridge);
      refs.push_back(Reference{false, ridge, LineStyle{rgb(ci % 2 ? 0x666666 : 0x333333), 1.0, ci % 2 ? Dash::Dotted : Dash::Dashed}, buf});
      ys.push_back(ridge);
      ++ci;
    }
  }
  // memory size references when y is a memory footprint: one line per platform that states it
  if (spec.y == "memory_footprint_bytes" || spec.y == "weight_footprint_bytes" || spec.y == "kv_cache_bytes") {
    size_t ci = 0;
    for (const auto& name : platform_names(r)) {
      const Platform* p = find_platform(r, name);
      if (!p) continue;
      const MemoryLevel* big = nullptr;
      for (const auto& m : p->memory)
        if (m.size_bytes > 0 && (!big || m.size_bytes > big->size_bytes)) big = &m;
      if (!big) continue;
      char buf[160];
      std::snprintf(buf, sizeof buf, "%s %.0f GiB", name.c_str(), big->size_bytes / 1073741824.0);  // (the level: in the platform)
      refs.push_back(Reference{false, big->size_bytes, LineStyle{rgb(ci % 2 ? 0x666666 : 0x333333), 1.0, ci % 2 ? Dash::Dotted : Dash::Dashed}, buf});
      ys.push_back(big->size_bytes);
      ++ci;
    }
  }
}

// The axes' ranges and ticks: categories, the swept values themselves (12 or fewer), a footprint in GiB
void trend_axes(Figure& f, const PlotSpec& spec, const std::vector<double>& xs, const std::vector<double>& ys, bool categorical, const std::vector<std::string>& cats) {
  if (categorical) {
    f.x.categories = cats;
    f.x.min = -0.5;
    f.x.max = static_cast<double>(cats.size()) - 0.5;
  } else {
    auto_range(f.x, xs, spec.xscale, false);
    std::vector<double> distinct = xs;
    std::sort(distinct.begin(), distinct.end());
    distinct.erase(std::unique(distinct.begin(), distinct.end()), distinct.end());
    if (distinct.size() <= 12) f.x.ticks = distinct;  // label the swept values themselves
  }
  auto_range(f.y, ys, spec.yscale, true);
  // a footprint against memory sizes in GiB: the axis in GiB too (decades of a binary prefix)
  if ((spec.y == "memory_footprint_bytes" || spec.y == "weight_footprint_bytes" || spec.y == "kv_cache_bytes") && f.y.scale == Scale::Log &&
      f.y.min > 0) {
    double unit = 1;
    for (double u : {1099511627776.0, 1073741824.0, 1048576.0, 1024.0})  // the largest the lowest value reaches: ticks of 1 and up
      if (f.y.min >= u) {
        unit = u;
        break;
      }
    std::vector<double> ticks;
    for (double v = unit * std::pow(10.0, std::floor(std::log10(f.y.min / unit))); v <= f.y.max * 1.0001; v *= 10)
      if (v >= f.y.min * 0.9999) ticks.push_back(v);
    if (ticks.size() >= 2) {
      f.y.iec = true;
      f.y.ticks = ticks;
    }
  }
}

// The series drawn: lines (thinned to the pixel columns), markers (hollow where the network does not
// fit), the legend
void draw_series(Figure& f, const PlotSpec& spec, const RunResult& r, const Scenario& s, const std::vector<TrendSeries>& series, bool categorical, bool any_over,
                 bool platform_free) {
  // A series of more points than the chart has room for markers is a line alone (markers would
  // merge into a band), and a line of more points than pixel columns keeps per column what draws
  // its pixels (thin_line).
  const size_t max_marked = 60;
  const double columns = spec.width * spec.dpi / 72;
  // series that are platforms take each platform's colour of the run (its roofs' in a roofline),
  // when no two of them share one; else the series palette
  std::set<size_t> identities;
  bool by_platform = !series.empty() && series.size() <= 6;
  for (const auto& sr : series) by_platform = by_platform && !sr.platform.empty() && identities.insert(platform_identity(r, sr.platform) % 6).second;
  auto series_color = [&](size_t i) { return by_platform ? roof_color(platform_identity(r, series[i].platform)) : palette(i); };
  for (size_t i = 0; i < series.size(); ++i) {
    const bool marked = categorical || series[i].pts.size() <= max_marked;
    Line L;
    L.pts = categorical ? series[i].pts : thin_line(series[i].pts, f.x, columns);
    L.style = LineStyle{series_color(i), 1.6, dash_cycle(i)};
    // past the 8 colours and shapes a style repeats: the line carries its name too
    if (series.size() > 8) {
      L.label = series[i].name;
      L.label_at = 0.9 - 0.6 * static_cast<double>(i % 8) / 8;
    }
    if (!categorical) f.lines.push_back(L);  // layers are not a continuum: markers only
    for (size_t k = 0; k < series[i].pts.size(); ++k) {
      const bool over = series[i].over[k];
      if (!marked && !over) continue;  // (a point that does not fit is always marked)
      Point q;
      q.at = series[i].pts[k];
      q.marker = marker_cycle(i);
      q.fill = series_color(i);
      q.size = 6.5;
      q.hollow = over;
      f.points.push_back(q);
    }
    f.legend.push_back(LegendEntry{series[i].name, !categorical, L.style, marked, marker_cycle(i), series_color(i)});
  }
  if (any_over) {
    // a value the same on every platform (a footprint) is drawn once, from the first platform: its memory is the one
    const bool several = r.results.front().platforms.size() > 1 && platform_free;
    LegendEntry e{several ? "over " + slot_name(r, s, 0) + "'s memory" : "does not fit in memory", false, {}, true, Marker::Circle, rgb(0x444444)};
    e.hollow = true;
    f.legend.push_back(e);
  }
}

}  // namespace

BuiltFigure chart::trend(const PlotSpec& spec, const RunResult& r, const Scenario& s) {
  BuiltFigure out;
  Figure& f = out.figure;
  f.width = spec.width, f.height = spec.height;
  const ColumnInfo* yc = column(spec.y);
  const Settings& set = r.results.front().settings;
  const DType net_dtype = ridge_dtype(r);
  bool platform_free = yc->platform_free;
  std::string series_by = spec.series == "auto" ? (platform_free ? "network" : "platform") : spec.series;
  bool categorical = spec.x == "layer";
  // series → (x, y, x label)
  using S = TrendSeries;
  auto shown = [&](const std::string& platform, const std::string& slot) {
    return spec.platforms.empty() || std::find(spec.platforms.begin(), spec.platforms.end(), platform) != spec.platforms.end() ||
           std::find(spec.platforms.begin(), spec.platforms.end(), slot) != spec.platforms.end();
  };
  std::vector<S> series;
  std::vector<std::string> cats;
  auto series_of = [&](const std::string& key) -> S& {
    for (auto& sr : series)
      if (sr.name == key) return sr;
    series.push_back(S{key, {}, {}, series_by == "platform" ? key : std::string()});
    return series.back();
  };
  std::string net = spec.networks.empty() ? first_network(r) : spec.networks.front();
  const size_t nets_shown = network_names(r).size();
  int skipped_zero = 0;
  bool x_non_numeric = false;
  std::map<size_t, std::string> slot_names;
  for (size_t pi = 0; pi < r.results.size(); ++pi) {
    const PointResult& pr = r.results[pi];
    if (categorical) {
      if (pi != static_cast<size_t>(spec.point)) continue;
      for (const auto& row : pr.rows) {
        if (row.network != net || (!spec.op.empty() && row.op != spec.op)) continue;
        if (row.cost.flops == 0 && spec.y.find("intensity") != std::string::npos) {
          if (row.platform == pr.platforms.front()->name) ++skipped_zero;  // counted once, not per platform
          continue;
        }
        std::string key = series_by == "platform" ? row.platform : row.network;
        if (platform_free && row.platform != pr.platforms.front()->name) continue;
        if (std::find(cats.begin(), cats.end(), row.layer) == cats.end()) cats.push_back(row.layer);
        double xi = static_cast<double>(std::find(cats.begin(), cats.end(), row.layer) - cats.begin());
        series_of(key).pts.push_back({xi, row_value(row, spec.y)});
      }
      continue;
    }
    if (trend_reads_rows(spec)) {
      for (const auto& row : pr.rows) {
        if (!spec.layer.empty() && row.layer != spec.layer) continue;
        if (!shows_network(spec, row.network)) continue;
        if (!spec.op.empty() && row.op != spec.op) continue;
        if (platform_free && row.platform != pr.platforms.front()->name) continue;
        if (!shown(row.platform, row.platform)) continue;
        bool ok;
        double xv = x_of_row(row, spec.x, r, pi, ok);
        if (!ok) {
          x_non_numeric = true;
          continue;
        }
        std::string key = series_by == "platform" ? row.platform : series_by == "layer" ? row.layer : row.network;
        series_of(key).pts.push_back({xv, row_value(row, spec.y)});
      }
      continue;
    }
    for (const auto& sm : pr.summary) {
      if (platform_free && sm.platform != pr.platforms.front()->name) continue;
      if (!shows_network(spec, sm.network)) continue;
      // what-if variants (one `platforms:` entry, a name per point) are one platform swept: one series
      const size_t slot = slot_at(pr, sm.platform);
      auto [named, fresh] = slot_names.try_emplace(slot);
      if (fresh) named->second = slot_name(r, s, slot);  // a scan of every point: once per slot
      const std::string& plat = named->second;
      if (!shown(sm.platform, plat)) continue;
      std::string key = series_by == "platform" ? plat : series_by == "network" ? sm.network : series_by + "=" + (env_find(r.points[pi].bindings, series_by) ? *env_find(r.points[pi].bindings, series_by) : "?");
      // a platform-dependent value split by something else needs one line per platform too
      if (!platform_free && series_by != "platform" && pr.platforms.size() > 1) key += " · " + plat;
      // and totals of several networks are never joined into one line
      if (series_by != "network" && spec.networks.size() != 1 && nets_shown > 1) key += " · " + sm.network;
      const std::string* v = env_find(r.points[pi].bindings, spec.x);
      auto xv = v ? parse_double(*v) : std::nullopt;
      if (!xv) {
        x_non_numeric = true;
        // categorical sweep values
        std::string label = v ? *v : "?";
        if (std::find(cats.begin(), cats.end(), label) == cats.end()) cats.push_back(label);
        xv = static_cast<double>(std::find(cats.begin(), cats.end(), label) - cats.begin());
      }
      S& sr = series_of(key);
      sr.pts.push_back({*xv, summary_value(sm, spec.y)});
      sr.over.resize(sr.pts.size() - 1, 0);
      sr.over.push_back(over_memory(sm));
    }
  }
  if (x_non_numeric && !cats.empty()) categorical = true;
  const bool any_over = sort_series(series);
  std::vector<double> xs, ys;
  for (const auto& sr : series)
    for (const auto& p : sr.pts) xs.push_back(p.x), ys.push_back(p.y);
  std::vector<Reference> refs;  // ridge references when y is intensity
  std::vector<Line> ridge_lines;
  trend_references(spec, r, s, net_dtype, categorical, refs, ridge_lines, ys);
  trend_axes(f, spec, xs, ys, categorical, cats);
  apply_limits(f, spec);
  f.x.title = spec.x == "layer" ? "Layer" : spec.x == "output_size" ? "Output size [H]" : spec.x == "out_channels" ? "Output channels" : var_title(s, spec.x);
  f.y.title = yc->title;
  f.y.unit = yc->unit;
  draw_series(f, spec, r, s, series, categorical, any_over, platform_free);
  out.series = series.size();
  for (auto& ref : refs) f.refs.push_back(ref);
  for (auto& l : ridge_lines) f.lines.push_back(l);
  f.title = spec.title.empty() ? std::string(yc->title).substr(0, std::string(yc->title).find(" [")) + " vs " + f.x.title : spec.title;
  f.subtitle = s.name + " · " + (spec.layer.empty() ? (spec.x == "layer" ? "per layer" : "network totals") : "layer " + spec.layer) + " · " +
               run_dtype_label(r) + " · " + conventions(set);
  // a network total's time holds the launches (a layer's row does not)
  if (!trend_reads_rows(spec) && !categorical && (spec.y.find("time") != std::string::npos || spec.y.find("tokens") != std::string::npos || spec.y.find("achieved") != std::string::npos))
    if (const std::string ln = launch_note(r, spec.platforms, set); !ln.empty()) f.subtitle += " · " + ln;
  if (!refs.empty() || !ridge_lines.empty()) f.subtitle += spec.y == "intensity" ? " · dashed/dotted: ridge points (derated)" : " · dashed/dotted: memory sizes";
  if (skipped_zero > 0) f.subtitle += " · " + std::to_string(skipped_zero) + " layers with 0 FLOPs left out";
  // x axis of a categorical layer chart: many names need rotated labels — use indices beyond 12
  if (categorical && cats.size() > 12) {
    for (size_t i = 0; i < cats.size(); ++i) f.x.categories[i] = (i % ((cats.size() + 11) / 12) == 0) ? std::to_string(i) : "";
    f.x.title = "Layer index (names in the plot data CSV)";
  }
  out.data_csv = csv_line({"series", spec.x, spec.y, "fits_in_memory"});
  for (const auto& sr : series)
    for (size_t k = 0; k < sr.pts.size(); ++k) {
      const P& p = sr.pts[k];
      out.data_csv += csv_line({sr.name, categorical && static_cast<size_t>(p.x) < cats.size() ? cats[static_cast<size_t>(p.x)] : format_number(p.x),
                                format_number(p.y), k < sr.over.size() && sr.over[k] ? "false" : "true"});
    }
  return out;
}

}  // namespace rsim::plots
