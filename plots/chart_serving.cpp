#include "plots/chart_serving.hpp"

#include <algorithm>
#include <cmath>
#include <map>
#include <set>

#include "engine/model/units.hpp"
#include "plots/chart_common.hpp"
#include "plots/draw.hpp"

namespace rsim::plots {
using namespace chart;

namespace {

// "ttft_p99_s" → "TTFT p99 [s]", "goodput_requests_per_s" → "Goodput [requests/s]"
std::string column_title(const std::string& c, std::string& unit) {
  unit = "";
  for (const char* m : {"ttft", "tpot", "itl", "e2e"})
    if (c.rfind(std::string(m) + "_", 0) == 0) {
      std::string up = m;
      for (char& ch : up) ch = static_cast<char>(std::toupper(static_cast<unsigned char>(ch)));
      unit = "s";
      return up + " " + c.substr(up.size() + 1, c.size() - up.size() - 3) + " [s]";
    }
  if (c == "goodput_requests_per_s") return "Goodput [requests/s]";
  if (c == "requests_per_s") return "Throughput [requests/s]";
  if (c == "input_tokens_per_s") return "Prompt tokens [tokens/s]";
  if (c == "output_tokens_per_s") return "Output tokens [tokens/s]";
  if (c == "slo_attainment") return "Requests meeting the SLOs [share]";
  if (c == "mean_kv_usage") return "KV cache in use [share, mean]";
  if (c == "mean_running") return "Running requests [mean]";
  if (c == "max_running") return "Running requests [max]";
  if (c == "prefix_hit_rate") return "Prompt tokens from the prefix cache [share]";
  return c;
}

}  // namespace

namespace {

// A served run second by second: a figure per platform × network at the plot's point
std::vector<BuiltFigure> timeline_figures(const PlotSpec& spec, const serving::ServingTables& t, const Scenario& s) {
  std::vector<BuiltFigure> figs;
  for (const auto& r : t.runs) {
    if (r.point != static_cast<size_t>(spec.point) || !shows_network(spec, r.network)) continue;
    if (!spec.platforms.empty() && std::find(spec.platforms.begin(), spec.platforms.end(), r.platform) == spec.platforms.end()) continue;
    BuiltFigure out;
    Figure& f = out.figure;
    f.width = spec.width, f.height = spec.height;
    struct Curve {
      const char* name;
      std::vector<P> pts;
    };
    std::vector<Curve> curves;
    if (spec.y == "kv_usage") curves = {{"KV cache in use", {}}};
    else if (spec.y == "tokens") curves = {{"prompt tokens", {}}, {"output tokens", {}}};
    else curves = {{"running", {}}, {"waiting", {}}};
    out.data_csv = csv_line({"t", "running", "waiting", "kv_usage", "prompt_tokens_per_s", "output_tokens_per_s"});
    std::vector<double> ts, ys;
    for (const serving::Sample& x : r.sim.timeline) {
      if (x.t == 0) continue;
      out.data_csv += csv_line({format_number(x.t), std::to_string(x.running), std::to_string(x.waiting), format_number(x.kv_usage), format_number(x.prompt_tokens),
                                format_number(x.output_tokens)});
      const double v[2] = {spec.y == "kv_usage" ? 100 * x.kv_usage : spec.y == "tokens" ? x.prompt_tokens : static_cast<double>(x.running),
                           spec.y == "tokens" ? x.output_tokens : static_cast<double>(x.waiting)};
      for (size_t c = 0; c < curves.size(); ++c) curves[c].pts.push_back({x.t, v[c]}), ys.push_back(v[c]);
      ts.push_back(x.t);
    }
    auto_range(f.x, ts, "linear", true);
    auto_range(f.y, ys, "linear", true);
    f.x.title = "Time since the first arrival [s]";
    f.y.title = spec.y == "kv_usage" ? "KV cache in use [%]" : spec.y == "tokens" ? "Tokens [tokens/s]" : "Requests";
    for (size_t c = 0; c < curves.size(); ++c) {
      Line L;
      L.pts = thin_line(curves[c].pts, f.x, f.width);
      L.style = LineStyle{palette(c), 1.4, c ? Dash::Dashed : Dash::Solid};
      f.lines.push_back(L);
      f.legend.push_back(LegendEntry{curves[c].name, true, L.style, false, {}, {}});
    }
    f.title = spec.title.empty() ? std::string(spec.y == "kv_usage" ? "KV cache in use" : spec.y == "tokens" ? "Tokens a second" : "Running and waiting requests") + " — " +
                                       r.network + " on " + r.platform
                                 : spec.title;
    f.subtitle = s.name + (r.bindings.empty() ? "" : " · " + bindings_text(r.bindings)) + " · served under load (docs/serving.md) · " + std::to_string(r.kv_blocks) +
                 " KV blocks, mean use " + std::to_string(static_cast<int>(std::lround(100 * r.summary.mean_kv_usage))) + " %";
    const bool several = std::count_if(t.runs.begin(), t.runs.end(), [&](const serving::ServedRun& o) { return o.point == r.point; }) > 1;
    out.name = (spec.name.empty() ? "timeline_" + spec.y : spec.name) + (several ? "_" + r.platform + "_" + r.network : "");
    out.spec = &spec;
    figs.push_back(std::move(out));
  }
  return figs;
}

// A served latency's distribution: the share of requests (gaps, for itl) at or below each time, a
// line per run (point × platform × network), the SLO dashed, p50/p90/p99 dotted
std::vector<BuiltFigure> cdf_figure(const PlotSpec& spec, const serving::ServingTables& t, const Scenario& s) {
  BuiltFigure out;
  Figure& f = out.figure;
  f.width = spec.width, f.height = spec.height;
  std::set<std::string> nets, plats;
  std::set<size_t> points;
  for (const auto& r : t.runs) nets.insert(r.network), plats.insert(r.platform), points.insert(r.point);
  const std::string metric = spec.y;
  std::string upper = metric;
  for (char& ch : upper) ch = static_cast<char>(std::toupper(static_cast<unsigned char>(ch)));
  out.data_csv = csv_line({"point", "platform", "network", "share", metric + "_s"});
  std::vector<double> xs;
  double slo = 0;
  size_t shown = 0;
  for (const auto& r : t.runs) {
    if (spec.point >= 0 && r.point != static_cast<size_t>(spec.point)) continue;
    if (!shows_network(spec, r.network)) continue;
    if (!spec.platforms.empty() && std::find(spec.platforms.begin(), spec.platforms.end(), r.platform) == spec.platforms.end()) continue;
    std::vector<double> v;  // the sorted values (itl: from the pooled counts, at most ~4,000 kept evenly by rank)
    if (metric == "itl") {
      const std::vector<std::pair<double, long long>> pooled = serving::pooled_itl(r.sim);
      const long long total = r.sim.itl_count(), every = std::max<long long>(1, total / 4000);
      long long seen = 0, next = 0;
      for (const auto& [x, c] : pooled) {
        for (; next < seen + c; next += every) v.push_back(x);
        seen += c;
      }
      if (!pooled.empty() && v.back() != pooled.back().first) v.push_back(pooled.back().first);
    } else {
      for (const serving::Outcome& o : r.sim.requests) {
        if (!o.done()) continue;
        const double x = metric == "ttft" ? o.first_token_s - o.arrival_s : metric == "e2e" ? o.finish_s - o.arrival_s : serving::tpot_of(o);
        if (std::isfinite(x)) v.push_back(x);
      }
    }
    if (v.empty()) continue;
    std::sort(v.begin(), v.end());
    // the empirical distribution as steps, at most ~2,000 order statistics (the ends kept)
    const size_t n = v.size(), stride = std::max<size_t>(1, n / 2000);
    std::vector<P> pts;
    for (size_t i = 0; i < n; i += stride) {
      const size_t j = std::min(n - 1, i + stride - 1);
      pts.push_back({v[i], static_cast<double>(i) / static_cast<double>(n)});
      pts.push_back({v[j], static_cast<double>(j + 1) / static_cast<double>(n)});
    }
    for (const P& q : pts) out.data_csv += csv_line({std::to_string(r.point), r.platform, r.network, format_number(q.y), format_number(q.x)});
    xs.push_back(v.front()), xs.push_back(v.back());
    std::string name;
    if (points.size() > 1 && spec.point < 0) name = r.bindings.empty() ? "point " + std::to_string(r.point) : bindings_text(r.bindings);
    if (plats.size() > 1) name += (name.empty() ? "" : " · ") + r.platform;
    if (nets.size() > 1) name += (name.empty() ? "" : " · ") + r.network;
    if (name.empty()) name = r.network + " on " + r.platform;
    Line L;
    L.pts = pts;
    L.style = LineStyle{palette(shown), 1.5, dash_cycle(shown)};
    f.lines.push_back(L);
    f.legend.push_back(LegendEntry{name, true, L.style, false, {}, {}});
    ++shown;
    if (metric == "ttft") slo = std::max(slo, r.slo.ttft_s);
    if (metric == "tpot" || metric == "itl") slo = std::max(slo, r.slo.tpot_s);
  }
  if (slo > 0) xs.push_back(slo);
  auto_range(f.x, xs, spec.xscale == "auto" ? "auto" : spec.xscale, false);
  linear_range(f.y, 0, 1, true);
  f.x.title = upper + " [s]";
  f.x.unit = "s";
  f.y.title = metric == "itl" ? "Share of token gaps at or below" : "Share of requests at or below";
  // the percentiles' levels, unlabelled (labels of lines 0.09 apart collide at paper size): the subtitle names them
  for (double q : {0.5, 0.9, 0.99}) f.refs.push_back(Reference{false, q, LineStyle{rgb(0x999999), 0.6, Dash::Dotted}, ""});
  if (slo > 0) f.refs.push_back(Reference{true, slo, LineStyle{rgb(0x222222), 1.0, Dash::Dashed}, "SLO " + si(slo, "s", 3)});
  const char* what = metric == "ttft" ? "Time to first token" : metric == "tpot" ? "Time per output token" : metric == "e2e" ? "End-to-end latency" : "Inter-token latency";
  f.title = spec.title.empty() ? std::string(what) + " distribution" + (nets.size() == 1 ? " — " + *nets.begin() : "") : spec.title;
  f.subtitle = s.name + (spec.point >= 0 && !t.runs.empty() ? " · point " + std::to_string(spec.point) : "") + " · served under load (docs/serving.md)" +
               (metric == "itl" ? " · every gap between tokens, pooled" : " · finished requests") + " · dotted: p50, p90, p99" +
               (slo > 0 ? " · dashed: the SLO" : "");
  out.name = spec.name.empty() ? "cdf_" + metric : spec.name;
  out.spec = &spec;
  return {out};
}

}  // namespace

std::vector<BuiltFigure> serving_figures(const PlotSpec& spec, const serving::ServingTables& t, const Scenario& s) {
  if (spec.kind == Kind::Timeline) return timeline_figures(spec, t, s);
  if (spec.kind == Kind::LatencyCdf) return cdf_figure(spec, t, s);
  BuiltFigure out;
  Figure& f = out.figure;
  f.width = spec.width, f.height = spec.height;
  // one line per platform × network (the plot's `platforms:` and `network:` pick them)
  struct Series {
    std::string name;
    std::vector<P> pts;
  };
  std::vector<Series> series;
  std::set<std::string> nets;
  for (const auto& r : t.runs) nets.insert(r.network);
  std::vector<double> xs, ys;
  out.data_csv = csv_line({"platform", "network", spec.x, spec.y});
  double slo = 0;
  for (const auto& r : t.runs) {
    if (!shows_network(spec, r.network)) continue;
    if (!spec.platforms.empty() && std::find(spec.platforms.begin(), spec.platforms.end(), r.platform) == spec.platforms.end()) continue;
    double x = NAN;
    for (const auto& [k, v] : r.bindings)
      if (k == spec.x) x = std::strtod(v.c_str(), nullptr);
    const double y = serving::serving_value(r, spec.y);
    out.data_csv += csv_line({r.platform, r.network, format_number(x), std::isfinite(y) ? format_number(y) : ""});
    if (!std::isfinite(x) || !std::isfinite(y)) continue;
    const std::string name = nets.size() > 1 ? r.network + " · " + r.platform : r.platform;
    auto it = std::find_if(series.begin(), series.end(), [&](const Series& q) { return q.name == name; });
    if (it == series.end()) series.push_back({name, {}}), it = series.end() - 1;
    it->pts.push_back({x, y});
    xs.push_back(x), ys.push_back(y);
    if (spec.y.rfind("ttft_", 0) == 0) slo = std::max(slo, r.slo.ttft_s);
    if (spec.y.rfind("tpot_", 0) == 0 || spec.y.rfind("itl_", 0) == 0) slo = std::max(slo, r.slo.tpot_s);
  }
  if (slo > 0) ys.push_back(slo);
  auto_range(f.x, xs, spec.xscale == "auto" ? "auto" : spec.xscale, false);
  {  // the swept values as the ticks
    std::vector<double> ticks = xs;
    std::sort(ticks.begin(), ticks.end());
    ticks.erase(std::unique(ticks.begin(), ticks.end()), ticks.end());
    if (ticks.size() <= 12) f.x.ticks = ticks;
  }
  auto_range(f.y, ys, spec.yscale == "auto" ? "auto" : spec.yscale, true);
  std::string unit;
  f.y.title = column_title(spec.y, unit);
  f.y.unit = unit;
  f.x.title = spec.x;  // the sweep variable's label and unit, when it gives them
  for (const auto* list : {&s.sweep.zip, &s.sweep.grid})
    for (const SweepVar& v : *list)
      if (v.name == spec.x && !v.label.empty()) f.x.title = v.label + (v.unit.empty() ? "" : " [" + v.unit + "]");
  for (size_t i = 0; i < series.size(); ++i) {
    std::sort(series[i].pts.begin(), series[i].pts.end(), [](const P& a, const P& b) { return a.x < b.x; });
    Line L;
    L.pts = series[i].pts;
    L.style = LineStyle{palette(i), 1.6, dash_cycle(i)};
    f.lines.push_back(L);
    for (const P& p : series[i].pts) {
      Point q;
      q.at = p, q.marker = marker_cycle(i), q.fill = palette(i), q.size = 6.5;
      f.points.push_back(q);
    }
    f.legend.push_back(LegendEntry{series[i].name, true, L.style, true, marker_cycle(i), palette(i)});
  }
  if (slo > 0) {
    f.refs.push_back(Reference{false, slo, LineStyle{rgb(0xD55E00), 1.0, Dash::Dashed}, "SLO " + si(slo, "s", 3)});
  }
  const std::string what = f.y.title.substr(0, f.y.title.find(" ["));
  f.title = spec.title.empty() ? what + " vs " + f.x.title.substr(0, f.x.title.find(" [")) : spec.title;
  f.subtitle = s.name + " · served under load (docs/serving.md)" + (slo > 0 ? " · dashed: the SLO" : "");
  out.name = spec.name.empty() ? "serving_" + spec.y + "_vs_" + spec.x : spec.name;
  out.spec = &spec;
  return {out};
}

}  // namespace rsim::plots
