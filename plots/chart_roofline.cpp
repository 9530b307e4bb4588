#include "plots/chart_common.hpp"

#include <algorithm>
#include <cmath>
#include <deque>
#include <unordered_set>
#include <map>
#include <set>

#include "engine/model/names.hpp"
#include "engine/output/output.hpp"
#include "engine/model/units.hpp"
#include "plots/draw.hpp"

namespace rsim::plots {
using namespace chart;

namespace {

// ---------------------------------------------------------------- roofline

// A point of a roofline: a layer (or a network total) at one sweep point on one platform.
struct RoofPt {
  double x, y;
  std::string label, bound, op, network, platform;
  size_t point;
  bool over = false;  // a network point whose memory footprint exceeds the platform's memory
  double launch_share = -1;  // a network point under execution: fused: its kernels' launch overhead over its time (-1: none)
  std::string limit = "";    // a network point: the part of its time that limits it (SummaryRow's parts)
  std::string phase = "";    // an LLM network's phase (prefill, decode), when its name does not say it
  std::string tip = "";      // report.html's tooltip: what it is, its FLOPs, bytes, time, bound and limit
};

// A point's tooltip lines: "FLOPs …, bytes …, … FLOP/B" and its time with what it is made of
std::string cost_line(double flops, double bytes, double intensity) {
  char b[32];
  std::snprintf(b, sizeof b, "%.3g", intensity);
  return "FLOPs " + si(flops, "", 4) + ", bytes " + si(bytes, "B", 4) + ", " + b + " FLOP/B";
}
std::string layer_tip(const Row& row, const RoofPoint& rp, bool derated, const std::string& point) {
  std::string t = row.layer + " (" + row.op + ") · " + row.network + " · " + row.platform + (point.empty() ? "" : " · " + point) + "\n";
  t += cost_line(row.cost.flops, row.bytes, rp.intensity) + "\n";
  t += std::string(derated ? "derated " : "") + "time " + si(rp.time_s, "s", 4) + " (compute " + si(rp.compute_time_s, "s", 3) + ", memory " +
       si(rp.memory_time_s, "s", 3) + (rp.comm_time_s > 0 ? ", comm " + si(rp.comm_time_s, "s", 3) : "") + ")\n";
  const std::string bound = bound_name(rp.bound);
  t += bound + " bound; limit: " +
       (bound == "compute" ? row.compute_roof + " " + si(rp.peak_flops_per_s, "FLOP/s", 4)
        : bound == "memory" ? row.memory_level + " " + si(rp.bandwidth_bytes_per_s, "B/s", 4)
        : bound == "interconnect" ? (row.collective.empty() ? std::string("the interconnect") : row.collective)
                                  : std::string("none"));
  if (!row.kernel.empty() && row.kernel != row.layer) t += "\nin kernel " + row.kernel;
  return t;
}
std::string network_tip(const SummaryRow& sm, bool derated, const std::string& point) {
  std::string t = sm.network + (sm.phase.empty() ? "" : " · " + sm.phase) + " · " + sm.platform + (point.empty() ? "" : " · " + point) + "\n";
  t += cost_line(sm.flops, sm.bytes, sm.intensity) + "\n";
  const TimeParts& p = derated ? sm.dparts : sm.parts;
  t += std::string(derated ? "derated " : "") + "time " + si(derated ? sm.derated_time_s : sm.time_s, "s", 4) + ": work " + si(p.work(), "s", 3) +
       ", overhead " + si(p.overhead(), "s", 3) + ", comm " + si(p.comm, "s", 3) + (p.bubble > 0 ? ", bubble " + si(p.bubble, "s", 3) : "") + "\n";
  const auto [limit, share] = time_limit(p);
  char b[48];
  std::snprintf(b, sizeof b, " (%.0f %% of the time)", 100 * share);
  t += "limit: " + (limit[0] ? std::string(limit) + b : std::string("none")) + "; " + std::to_string(derated ? sm.derated_memory_bound : sm.memory_bound) +
       " memory- and " + std::to_string(derated ? sm.derated_compute_bound : sm.compute_bound) + " compute-bound layers";
  return t;
}


// A platform on the chart and its compute roofs for the precisions the points use.
struct RoofSet {
  const Platform* p;
  std::vector<const ComputeRoof*> roofs;
  size_t identity = 0;  // platform_identity: its colour in every figure of the run
};

// A network as a key entry names it: "llama3_8b · decode" when its phase is not in its name
std::string network_key(const RoofPt& p) { return p.phase.empty() ? p.network : p.network + " · " + p.phase; }
std::string phase_unless_named(const std::string& network, const std::string& phase) {
  return phase.empty() || network.find(phase) != std::string::npos ? std::string() : phase;
}

std::set<DType> dtypes_on(const RunResult& r, const std::vector<std::string>& plats) {
  std::set<DType> used;
  for (const auto& pr : r.results)
    for (const auto& row : pr.rows)
      if (std::find(plats.begin(), plats.end(), row.platform) != plats.end()) used.insert(row.dtype);
  return used;
}

// The points: each layer (or network total) of every sweep point on the chart's platforms, on
// the derated roofs or the theoretical ones. Log axes cannot show 0 or ∞: such points are
// counted in `hidden` (the subtitle says how many) instead.
std::vector<RoofPt> roofline_points(const PlotSpec& spec, const RunResult& r, const std::vector<std::string>& plats, bool on_derated, int& hidden) {
  const bool networks = spec.points == "networks";
  const bool link = spec.intensity == "interconnect";  // x: FLOPs per byte over the links (what communicates only)
  std::vector<RoofPt> pts;
  size_t npoints = r.points.size();
  std::set<std::string> layer_names;
  for (const auto& pr : r.results)
    for (const auto& row : pr.rows)
      if (shows_network(spec, row.network)) layer_names.insert(row.network + "/" + row.layer);
  auto drawable = [&](double x, double y) {
    if (!(x > 0) || !(y > 0) || !std::isfinite(x)) return ++hidden, false;
    return true;
  };
  for (size_t pi = 0; pi < r.results.size(); ++pi) {
    const PointResult& pr = r.results[pi];
    if (networks) {
      for (const auto& sm : pr.summary) {
        if (std::find(plats.begin(), plats.end(), sm.platform) == plats.end()) continue;
        if (!shows_network(spec, sm.network)) continue;
        if (link && !(sm.comm_bytes > 0)) continue;  // (nothing over the links)
        double x = link ? sm.flops / sm.comm_bytes : sm.intensity, y = on_derated ? sm.derated_achieved_flops_per_s : sm.achieved_flops_per_s;
        if (!drawable(x, y)) continue;
        const std::string phase = phase_unless_named(sm.network, sm.phase);
        std::string label = sm.network + (phase.empty() ? "" : " · " + phase) + (npoints > 1 ? " · " + point_text(r, pi) : "");
        // a network whose time is mostly not the roofs' (launches, the host, communication, a
        // bubble) says so on its label: it sits under every roof for that reason
        const auto [limit, limit_share] = time_limit(on_derated ? sm.dparts : sm.parts);
        const std::string lim = limit;
        if (!lim.empty() && lim != "compute" && lim != "memory") {
          char b[48];
          std::snprintf(b, sizeof b, " (%s %.0f %%)", limit, 100 * limit_share);
          label += b;
        }
        // a network is memory bound when its intensity is under the platform's ridge
        // (with the links as roofs: interconnect-bound under the ridge of the link its all-reduces
        // run on, else as on the memory roofline)
        std::string bound = "memory";
        for (const auto& pl : pr.platforms)
          if (const ComputeRoof* roof = pl->name == sm.platform ? pl->roof_for(sm.dtype) : nullptr) {
            double peak = on_derated ? roof->derated_flops_per_s : roof->peak_flops_per_s;
            double bw = on_derated ? pl->memory.front().derated_bandwidth_bytes_per_s : pl->memory.front().bandwidth_bytes_per_s;
            if (sm.intensity > peak / bw) bound = "compute";
            const InterconnectLevel* l = link ? pl->link_for(static_cast<long long>(sm.tensor_parallel)) : nullptr;
            if (l && x < peak / l->bandwidth_bytes_per_s) bound = "interconnect";
          }
        pts.push_back({x, y, label, bound, "network", sm.network, sm.platform, pi, over_memory(sm)});
        pts.back().limit = lim;
        pts.back().phase = phase;
        pts.back().tip = network_tip(sm, on_derated, npoints > 1 ? point_text(r, pi) : std::string());
        // what of its time the launches are (why a network sits under every roof at small batch)
        for (const auto& pl : pr.platforms)
          if (pl->name == sm.platform && pr.settings.execution == Execution::Fused && pl->runtime.launch_overhead_s > 0) {
            const double t = on_derated ? sm.derated_time_s : sm.time_s;
            if (t > 0) pts.back().launch_share = std::min(1.0, sm.kernels * pl->runtime.launch_overhead_s / t);
          }
      }
      continue;
    }
    for (const auto& row : pr.rows) {
      if (std::find(plats.begin(), plats.end(), row.platform) == plats.end()) continue;
      if (!shows_network(spec, row.network)) continue;
      const RoofPoint& rp = on_derated ? row.derated : row.theoretical;
      double x = rp.intensity, y = rp.attainable_flops_per_s;
      std::string bound = bound_name(rp.bound);
      if (link) {  // FLOPs per byte over the links; the rate its compute and its collective allow
        if (!(row.cost.comm_bytes > 0)) continue;
        x = row.cost.flops / row.cost.comm_bytes;
        const double t = std::max(rp.compute_time_s, rp.comm_time_s);
        y = t > 0 ? row.cost.flops / t : 0;
      }
      if (!drawable(x, y)) continue;
      std::string label;
      bool one_layer = layer_names.size() == 1;
      if (!one_layer) label = row.layer;
      // on an overlay the roof a point sits on tells its platform (and so its sweep point)
      if (npoints > 1 && !(plats.size() > 1 && !label.empty())) label += (label.empty() ? "" : " · ") + point_text(r, pi);
      if (plats.size() > 1 && label.empty()) label = row.platform;
      pts.push_back({x, y, label, bound, row.op, row.network, row.platform, pi});
      pts.back().tip = layer_tip(row, rp, on_derated, npoints > 1 ? point_text(r, pi) : std::string());
      for (const auto& sm : pr.summary)  // (the network's phase: its summary row's)
        if (sm.network == row.network) {
          pts.back().phase = phase_unless_named(sm.network, sm.phase);
          break;
        }
    }
  }
  return pts;
}

std::vector<RoofSet> roof_sets(const RunResult& r, const std::vector<std::string>& plats, const std::set<DType>& dtypes_used) {
  std::vector<RoofSet> sets;
  for (const auto& name : plats) {
    const Platform* p = find_platform(r, name);
    if (!p) continue;
    RoofSet rs{p, {}, platform_identity(r, name)};
    for (DType t : dtypes_used)
      if (const ComputeRoof* cr = p->roof_for(t); cr && std::find(rs.roofs.begin(), rs.roofs.end(), cr) == rs.roofs.end()) rs.roofs.push_back(cr);
    sets.push_back(rs);
  }
  return sets;
}

// Log–log axes wide enough for every point (a factor 4 beside it) and every ridge (50× left,
// 10× right), from the lowest roof's 1/50 to the highest peak.
void roofline_axes(Figure& f, const std::vector<RoofPt>& pts, const std::vector<RoofSet>& sets) {
  double xmin = 1e300, xmax = 0, ymin = 1e300, ymax = 0;
  for (const auto& p : pts) xmin = std::min(xmin, p.x / 4), xmax = std::max(xmax, p.x * 4), ymin = std::min(ymin, p.y), ymax = std::max(ymax, p.y);
  for (const RoofSet& rs : sets)
    for (const ComputeRoof* cr : rs.roofs)
      for (const auto& m : rs.p->memory) {
        double ridge = cr->peak_flops_per_s / m.bandwidth_bytes_per_s;
        double dridge = cr->derated_flops_per_s / m.derated_bandwidth_bytes_per_s;
        xmin = std::min({xmin, ridge / 50, dridge / 50});
        xmax = std::max({xmax, ridge * 10, dridge * 10});
        ymax = std::max(ymax, cr->peak_flops_per_s);
        ymin = std::min(ymin, std::min(cr->peak_flops_per_s, cr->derated_flops_per_s) / 50);
      }
  log_range(f.x, xmin, xmax);
  log_range(f.y, ymin, ymax);
  f.x.title = "Arithmetic intensity [FLOP/byte]";  // ([OP/byte] for integer roofs: below)
  // integer roofs only (int8 points): operations, not floating-point ones
  bool integer = !sets.empty();
  for (const RoofSet& rs : sets)
    for (const ComputeRoof* cr : rs.roofs) integer = integer && dtype_name(cr->dtypes.front())[0] == 'i';
  f.y.title = integer ? "Performance [OP/s]" : "Performance [FLOP/s]";
  if (integer) f.x.title = "Arithmetic intensity [OP/byte]";
  f.y.unit = integer ? "OP/s" : "FLOP/s";
}

// One compute roof over one memory level, theoretical or derated: the slanted memory roof up to
// the ridge, the flat compute roof from it (main memory only), each labelled with its value, and
// the ridge point.
void add_roof(Figure& f, const RoofSet& rs, const std::string& short_name, size_t ri, size_t mi, bool derated, bool overlay, bool theo_shared) {
  const Platform& p = *rs.p;
  const ComputeRoof& cr = *rs.roofs[ri];
  const MemoryLevel& m = p.memory[mi];
  bool mem_same = m.derated_bandwidth_bytes_per_s == m.bandwidth_bytes_per_s;
  bool comp_same = cr.derated_flops_per_s == cr.peak_flops_per_s;
  const char* unit = dtype_name(cr.dtypes.front())[0] == 'i' ? "OP/s" : "FLOP/s";
  Color c = overlay ? roof_color(rs.identity) : rgb(0x333333);
  double peak = derated ? cr.derated_flops_per_s : cr.peak_flops_per_s;
  double bw = derated ? m.derated_bandwidth_bytes_per_s : m.bandwidth_bytes_per_s;
  double ridge = peak / bw;
  // on an overlay each platform's theoretical roof is its colour, lighter and dashed; one that
  // every platform shares (what-if variants of one machine) is neutral grey
  Color theo = c;
  theo.a = 0.55;
  LineStyle st{derated || !overlay ? c : theo_shared ? rgb(0x555555) : theo, derated ? 1.6 : 1.1, derated ? Dash::Solid : Dash::Dashed};
  // (derated roofs are solid on an overlay too, as the legend says: the platform's colour tells them apart)
  if (mi > 0) st.width *= 0.8;
  Line mem;  // slanted, up to the ridge
  mem.pts = {{f.x.min, bw * f.x.min}, {ridge, peak}};
  mem.style = st;
  bool label_mem = ri == 0 && (derated ? true : !mem_same);
  if (label_mem) mem.label = (derated && !mem_same ? "derated " : m.name + " ") + si(bw, "B/s", 4), mem.label_short = si(bw, "B/s", 3);
  mem.label_at = 0.55;
  add_line(f, mem);
  if (mi > 0) return;  // caches only add their slanted roof
  Line comp;  // flat, from the ridge
  comp.pts = {{ridge, peak}, {f.x.max, peak}};
  comp.style = st;
  // on an overlay the legend gives each variant's peak; the lines would be too close to label
  if ((derated || !comp_same) && !(overlay && derated)) comp.label = (derated && !comp_same ? "derated " : cr.name + " ") + si(peak, unit, 4), comp.label_short = si(peak, unit, 3);
  comp.label_at = 0.78;
  comp.label_above = !(derated && !comp_same);  // a derated roof under its theoretical one: label below
  add_line(f, comp);
  Point rp;
  rp.at = {ridge, peak};
  rp.marker = Marker::Diamond;
  rp.size = 6;
  rp.fill = rgb(0xFFFFFF);
  char buf[64];
  std::snprintf(buf, sizeof buf, "ridge %.3g", ridge);
  // on an overlay a ridge says whose it is (unless every platform shares it)
  rp.label = overlay && (derated || !theo_shared) ? short_name + " " + buf : std::string(buf);
  rp.on_top = true;
  bool dup = std::any_of(f.points.begin(), f.points.end(), [&](const Point& o) { return close_to(o.at.x, ridge) && close_to(o.at.y, peak); });
  if (!dup) f.points.push_back(rp);
}

// Every platform's roofs: theoretical first (dashed, under), then derated (solid); a roof that
// derating leaves alone is drawn and labelled once. Returns whether any roof is derated.
bool add_roofs(Figure& f, const std::vector<RoofSet>& sets, bool show_theo, bool show_der, bool print) {
  bool overlay = sets.size() > 1, any_derating = false;
  // what-if variants of one platform share most of their names: their ridges say what differs
  // ("@2.2GHz ridge 18.3"), from the last separator before it
  std::vector<std::string> short_names;
  std::string common = sets.empty() ? "" : sets.front().p->name;
  for (const RoofSet& o : sets) {
    size_t k = 0;
    while (k < common.size() && k < o.p->name.size() && common[k] == o.p->name[k]) ++k;
    common.resize(k);
  }
  size_t cut = 0;
  for (size_t k = 0; k < common.size(); ++k)
    if (common[k] == '@') cut = k;
    else if (common[k] == '_' || common[k] == '-' || common[k] == ' ') cut = k + 1;
  for (const RoofSet& o : sets) short_names.push_back(common.size() >= 5 && cut > 0 && cut < o.p->name.size() ? o.p->name.substr(cut) : o.p->name);
  // the theoretical roofs are shared when every platform has the same peaks and bandwidths
  bool theo_shared = true;
  for (const RoofSet& o : sets) {
    const RoofSet& a = sets.front();
    theo_shared = theo_shared && o.roofs.size() == a.roofs.size() && o.p->memory.size() == a.p->memory.size();
    for (size_t i = 0; theo_shared && i < o.roofs.size(); ++i) theo_shared = close_to(o.roofs[i]->peak_flops_per_s, a.roofs[i]->peak_flops_per_s);
    for (size_t i = 0; theo_shared && i < o.p->memory.size(); ++i) theo_shared = close_to(o.p->memory[i].bandwidth_bytes_per_s, a.p->memory[i].bandwidth_bytes_per_s);
  }
  for (size_t set_i = 0; set_i < sets.size(); ++set_i) {
    const Platform& p = *sets[set_i].p;
    for (size_t ri = 0; ri < sets[set_i].roofs.size(); ++ri) {
      const ComputeRoof& cr = *sets[set_i].roofs[ri];
      for (size_t mi = 0; mi < p.memory.size(); ++mi) {
        const MemoryLevel& m = p.memory[mi];
        bool all_same = m.derated_bandwidth_bytes_per_s == m.bandwidth_bytes_per_s && cr.derated_flops_per_s == cr.peak_flops_per_s;
        if (!all_same) any_derating = true;
        for (int derated = 0; derated < 2; ++derated) {
          if (!derated && all_same) continue;
          if ((derated && !show_der && !all_same) || (!derated && !show_theo)) continue;
          add_roof(f, sets[set_i], short_names[set_i], ri, mi, derated != 0, overlay, theo_shared);
        }
      }
    }
  }
  // each platform's legend entry gives its derated peak and bandwidth; at a printed size, where
  // the legend shares the page with the plot, its name only (the values: plot data, report.md)
  if (overlay)
    for (size_t set_i = 0; set_i < sets.size(); ++set_i)
      f.legend.push_back(LegendEntry{sets[set_i].p->name + (print ? "" : (sets[set_i].roofs.empty() ? "" : ": " + si(sets[set_i].roofs.front()->derated_flops_per_s,
                                                                                                    dtype_name(sets[set_i].roofs.front()->dtypes.front())[0] == 'i' ? "OP/s" : "FLOP/s", 4)) +
                                                                    ", " + si(sets[set_i].p->memory.front().derated_bandwidth_bytes_per_s, "B/s", 4)),
                                     true, LineStyle{roof_color(sets[set_i].identity), 1.6, Dash::Solid}, false, {}, {}});
  return any_derating;
}

// Roofs of a script's efficiency model: layers whose derated peak or bandwidth differs from
// every platform roof (an efficiency_compute or efficiency_bandwidth under 1) sit on roofs of
// their own. Each distinct one (the four highest) is drawn dotted and labelled with its share of
// the platform's derated roof ("efficiency 30 %: 8.94 TFLOP/s"). Returns whether any was drawn.
bool add_efficiency_roofs(Figure& f, const std::vector<RoofSet>& sets, const RunResult& r, const PlotSpec& spec) {
  bool any = false;
  const bool overlay = sets.size() > 1;
  for (size_t set_i = 0; set_i < sets.size(); ++set_i) {
    const RoofSet& rs = sets[set_i];
    if (rs.roofs.empty() || rs.p->memory.empty()) continue;
    auto is_platform_roof = [&](double peak, double bw) {
      for (const ComputeRoof* cr : rs.roofs)
        for (const auto& m : rs.p->memory)
          if (close_to(peak, cr->derated_flops_per_s) && close_to(bw, m.derated_bandwidth_bytes_per_s)) return true;
      return false;
    };
    std::vector<std::pair<double, double>> own;  // (peak, bandwidth)
    for (const auto& pr : r.results)
      for (const auto& row : pr.rows) {
        if (row.platform != rs.p->name || !shows_network(spec, row.network)) continue;
        double peak = row.derated.peak_flops_per_s, bw = row.derated.bandwidth_bytes_per_s;
        if (!(peak > 0) || !(bw > 0) || is_platform_roof(peak, bw)) continue;
        if (std::none_of(own.begin(), own.end(), [&](const auto& o) { return close_to(o.first, peak) && close_to(o.second, bw); })) own.emplace_back(peak, bw);
      }
    std::sort(own.begin(), own.end(), [](const auto& a, const auto& b) { return a.first > b.first; });
    if (own.size() > 4) own.resize(4);
    const double base_peak = rs.roofs.front()->derated_flops_per_s, base_bw = rs.p->memory.front().derated_bandwidth_bytes_per_s;
    for (const auto& [peak, bw] : own) {
      LineStyle st{overlay ? roof_color(rs.identity) : rgb(0x777777), 0.9, Dash::Dotted};
      double ridge = peak / bw;
      char pct[64];
      Line mem;
      mem.pts = {{f.x.min, bw * f.x.min}, {ridge, peak}};
      mem.style = st;
      if (!close_to(bw, base_bw)) {
        std::snprintf(pct, sizeof pct, "efficiency %.0f %%: ", 100 * bw / base_bw);
        mem.label = pct + si(bw, "B/s", 3);
      }
      mem.label_at = 0.4;
      mem.label_above = false;
      add_line(f, mem);
      Line comp;
      comp.pts = {{ridge, peak}, {f.x.max, peak}};
      comp.style = st;
      if (!close_to(peak, base_peak)) {
        std::snprintf(pct, sizeof pct, "efficiency %.0f %%: ", 100 * peak / base_peak);
        comp.label = pct + si(peak, "FLOP/s", 3);
      }
      comp.label_at = 0.7;
      comp.label_above = false;
      add_line(f, comp);
      any = true;
    }
  }
  if (any) f.legend.push_back(LegendEntry{"efficiency-model roof", true, LineStyle{rgb(0x777777), 0.9, Dash::Dotted}, false, {}, {}});
  return any;
}

// Points that coincide (the same layer at several sweep points, or on what-if variants that
// leave it alone) become one marker, labelled with the first and how many more it stands for.
// Each point joins the first earlier marker it coincides with. Markers are indexed by (bound,
// op) and then by x, so a point looks only at the markers within x's tolerance: linear in
// points (40k points would take seconds with a scan of every marker).
std::vector<RoofPt> merge_coincident(const std::vector<RoofPt>& pts) {
  std::vector<RoofPt> merged;
  std::vector<int> extra;
  std::map<std::pair<std::string, std::string>, std::multimap<double, size_t>> index;
  for (const auto& p : pts) {
    size_t found = SIZE_MAX;
    std::multimap<double, size_t>* by_x = nullptr;
    if (std::isfinite(p.x) && std::isfinite(p.y)) {  // close_to never holds for inf or NaN
      by_x = &index[{p.bound, p.op}];
      double tol = 2e-9 * std::fabs(p.x);  // covers close_to's 1e-9 × max(|a|, |b|)
      for (auto it = by_x->lower_bound(p.x - tol); it != by_x->end() && it->first <= p.x + tol; ++it) {
        const RoofPt& m = merged[it->second];
        if (it->second < found && close_to(m.x, p.x) && close_to(m.y, p.y)) found = it->second;
      }
    }
    if (found != SIZE_MAX) {
      if (p.label != merged[found].label) ++extra[found];
      continue;
    }
    if (by_x) by_x->emplace(p.x, merged.size());
    merged.push_back(p);
    extra.push_back(0);
  }
  for (size_t k = 0; k < merged.size(); ++k)
    if (extra[k] > 0) {
      merged[k].label += " (+" + std::to_string(extra[k]) + ")";
      merged[k].tip += "\n(and " + std::to_string(extra[k]) + " more at this place)";
    }
  return merged;
}

// The markers: shape by op (or network, point, platform), colour by bound (or a series), a label
// per column of equal points; and their legend entries.
// `more`: points left out of `pts` because they coincide with drawn markers (they count towards
// the density that makes markers small).
void add_roofline_markers(Figure& f, const PlotSpec& spec, const RunResult& r, const std::vector<RoofPt>& pts, size_t more, bool overlay_legend) {
  const bool networks = spec.points == "networks";
  std::vector<std::string> marker_keys, color_keys;
  // network points have no op: their shape tells the network apart
  auto key_of = [&](const RoofPt& p, const std::string& by) {
    if (by == "op") return networks ? network_key(p) : p.op;
    if (by == "network") return network_key(p);
    if (by == "point") return point_text(r, p.point);
    if (by == "platform") return p.platform;
    return p.bound;
  };
  for (const auto& p : pts) {
    std::string mk = key_of(p, spec.marker), ck = key_of(p, spec.color);
    if (std::find(marker_keys.begin(), marker_keys.end(), mk) == marker_keys.end()) marker_keys.push_back(mk);
    if (std::find(color_keys.begin(), color_keys.end(), ck) == color_keys.end()) color_keys.push_back(ck);
  }
  const size_t max_shapes = style_preset(spec.style).fixed || spec.physical ? 4 : 8;
  bool label_points = spec.labels == "all" || (spec.labels == "auto" && pts.size() <= 60);
  std::vector<std::pair<std::string, double>> labelled_at;  // (label, x): one label per column of equal points
  // Thousands of unlabelled markers: one per pixel of the canvas (the whole figure at its dpi, so
  // finer than the plot's pixels) and shape and colour; the others would paint the same pixels.
  const bool per_pixel = !label_points && pts.size() > 2000 && f.x.min > 0 && f.y.min > 0 && f.x.max > f.x.min && f.y.max > f.y.min;
  const double px_w = f.width * spec.dpi / 72, px_h = f.height * spec.dpi / 72;
  const double lx = std::log10(f.x.min), ly = std::log10(f.y.min), sx = std::log10(f.x.max) - lx, sy = std::log10(f.y.max) - ly;
  std::unordered_set<uint64_t> painted;
  for (const auto& p : pts) {
    Point q;
    q.at = {p.x, p.y};
    size_t mi = static_cast<size_t>(std::find(marker_keys.begin(), marker_keys.end(), key_of(p, spec.marker)) - marker_keys.begin());
    size_t ci = static_cast<size_t>(std::find(color_keys.begin(), color_keys.end(), key_of(p, spec.color)) - color_keys.begin());
    if (per_pixel) {
      const double col = std::floor((std::log10(p.x) - lx) / sx * px_w), row = std::floor((std::log10(p.y) - ly) / sy * px_h);
      if (col >= 0 && row >= 0 && col < px_w && row < px_h) {  // outside the axes: drawn (and clipped) as before
        const uint64_t cell = static_cast<uint64_t>(col) | static_cast<uint64_t>(row) << 20 | static_cast<uint64_t>(mi & 0xFFF) << 40 | static_cast<uint64_t>(ci & 0xFFF) << 52;
        if (!painted.insert(cell).second) continue;
      }
    }
    q.marker = marker_keys.size() <= max_shapes ? marker_cycle(mi) : Marker::Circle;  // past 8 shapes repeat (4 in print, where the legend is small): use one
    q.fill = spec.color == "bound" ? bound_color(p.bound) : spec.color == "platform" ? roof_color(platform_identity(r, p.platform)) : palette(ci);
    q.fill.a = 0.9;
    q.size = pts.size() + more > 500 ? 4 : 7;
    q.hollow = p.over;
    q.tip = p.tip;
    bool repeat = std::any_of(labelled_at.begin(), labelled_at.end(), [&](const auto& l) { return l.first == p.label && close_to(l.second, p.x); });
    if (label_points && !repeat) {
      q.label = p.label;
      labelled_at.emplace_back(p.label, p.x);
    }
    f.points.push_back(q);
  }
  if (spec.labels == "auto" && pts.size() > 60) f.allow_key = false;
  if (std::any_of(pts.begin(), pts.end(), [](const RoofPt& p) { return p.over; })) {
    LegendEntry e{"does not fit in memory", false, {}, true, Marker::Circle, rgb(0x444444)};
    e.hollow = true;
    f.legend.push_back(e);
  }
  if (spec.color == "bound") {
    for (const char* b : {"memory", "compute", "interconnect"}) {
      bool present = std::any_of(pts.begin(), pts.end(), [&](const RoofPt& p) { return p.bound == b; });
      if (present) f.legend.push_back(LegendEntry{std::string(b) + " bound", false, {}, true, Marker::Circle, bound_color(b)});
    }
  } else if (spec.color == "platform") {
    // an overlay's legend names each platform beside its roof, in its colour: the points need no
    // entries of their own (one platform: one colour, nothing to tell apart)
    if (!overlay_legend)
      for (size_t i = 0; i < color_keys.size() && i < 8; ++i)
        f.legend.push_back(LegendEntry{color_keys[i], false, {}, true, Marker::Square, roof_color(platform_identity(r, color_keys[i]))});
  } else {
    for (size_t i = 0; i < color_keys.size() && i < 8; ++i) f.legend.push_back(LegendEntry{color_keys[i], false, {}, true, Marker::Square, palette(i)});
  }
  if (marker_keys.size() <= max_shapes && (marker_keys.size() > 1 || spec.marker != "op"))
    for (size_t i = 0; i < marker_keys.size(); ++i) f.legend.push_back(LegendEntry{marker_keys[i], false, {}, true, marker_cycle(i), rgb(0xBBBBBB)});
}

}  // namespace

BuiltFigure chart::roofline(const PlotSpec& spec, const RunResult& r, const Scenario& s, const std::vector<std::string>& plats) {
  BuiltFigure out;
  Figure& f = out.figure;
  f.width = spec.width, f.height = spec.height;
  const Settings& set = r.results.front().settings;
  const bool networks = spec.points == "networks";
  const bool show_theo = spec.roofs != "derated", show_der = spec.roofs != "theoretical";
  const bool on_derated = show_der;  // points sit on the derated roofs when those are drawn
  const std::set<DType> dtypes_used = dtypes_on(r, plats);
  std::string dtypes_text;
  for (DType t : dtypes_used) dtypes_text += (dtypes_text.empty() ? "" : "/") + std::string(dtype_name(t));

  int hidden = 0;
  const std::vector<RoofPt> all_pts = roofline_points(spec, r, plats, on_derated, hidden);  // the plot data keeps every point
  // rows the run's figure collector left out (they coincide with drawn markers)
  size_t coinciding = 0;
  if (!networks)
    for (const auto& t : r.thinned)
      if (std::find(plats.begin(), plats.end(), t.platform) != plats.end() && shows_network(spec, t.network)) {
        hidden += static_cast<int>(on_derated ? t.hidden_derated : t.hidden);
        coinciding += t.rows - (on_derated ? t.hidden_derated : t.hidden);
      }
  std::vector<RoofSet> sets = roof_sets(r, plats, dtypes_used);
  // the interconnect as the roof: each platform's links in place of its memory levels (the same
  // drawing: a slanted roof per link, bandwidth × FLOPs per byte over it, under the compute roof)
  const bool link = spec.intensity == "interconnect";
  std::deque<Platform> linked;
  if (link) {
    std::vector<RoofSet> kept;
    for (RoofSet rs : sets) {
      if (rs.p->interconnect.empty()) continue;  // (a platform without links: nothing to draw)
      Platform q = *rs.p;
      q.memory.clear();
      for (const InterconnectLevel& l : rs.p->interconnect) {
        MemoryLevel m;
        m.name = l.name;
        m.bandwidth_bytes_per_s = m.derated_bandwidth_bytes_per_s = l.bandwidth_bytes_per_s;
        q.memory.push_back(m);
      }
      linked.push_back(std::move(q));
      rs.p = &linked.back();
      kept.push_back(rs);
    }
    sets = std::move(kept);
    if (sets.empty()) {
      std::string names;
      for (const auto& n : plats) names += (names.empty() ? "" : ", ") + n;
      throw ConfigError(spec.loc, "a roofline with intensity: interconnect needs a platform with interconnect: levels; " + names + " states none",
                        {Note{{}, "give the platform its links (interconnect: [{name, bandwidth, latency, gpus}]) or draw intensity: memory"}});
    }
  }
  roofline_axes(f, all_pts, sets);
  if (link) f.x.title = "Communication intensity [FLOP/link byte]";
  apply_limits(f, spec);
  const bool overlay = sets.size() > 1;
  const bool any_derating = add_roofs(f, sets, show_theo, show_der, style_preset(spec.style).fixed || spec.physical);
  const bool efficiency = !link && show_der && add_efficiency_roofs(f, sets, r, spec);
  // network points on several platforms' roofs: colour = platform (its roofs' colour), marker =
  // network, unless the plot says `color:`; bound is in the plot data CSV
  PlotSpec mspec = spec;
  if (networks && overlay && !given(spec, "color")) mspec.color = "platform";
  // layers of several networks (or phases): marker = network, so that the key tells them apart
  // (each layer's op is in its label and the plot data), unless the plot says `marker:`
  if (!networks && !given(spec, "marker")) {
    std::set<std::string> nets;
    for (const RoofPt& p : all_pts) nets.insert(network_key(p));
    if (nets.size() > 1) mspec.marker = "network";
  }
  add_roofline_markers(f, mspec, r, merge_coincident(all_pts), coinciding, overlay);
  if (any_derating && show_theo && show_der) {
    f.legend.push_back(LegendEntry{"theoretical roof", true, LineStyle{rgb(0x333333), 1.1, Dash::Dashed}, false, {}, {}});
    f.legend.push_back(LegendEntry{"derated roof", true, LineStyle{rgb(0x333333), 1.6, Dash::Solid}, false, {}, {}});
  }

  std::string plat_text;
  for (const auto& n : plats) plat_text += (plat_text.empty() ? "" : ", ") + n;
  if (plats.size() > 2) plat_text = std::to_string(plats.size()) + " platforms (see legend)";
  f.title = spec.title.empty() ? std::string(link ? "Interconnect roofline — " : "Roofline — ") + (overlay ? s.name : (sets.empty() ? plat_text : sets[0].p->title.empty() ? plat_text : sets[0].p->title)) : spec.title;
  f.subtitle = plat_text + network_text(spec) + " · " + dtypes_text + " · " + conventions(set) + " · " + (networks ? "networks" : "layers") +
               (on_derated && (any_derating || efficiency) ? " on derated roofs" : "") + (efficiency ? " (efficiency model: dotted)" : "");
  if (networks)
    if (const std::string ln = launch_note(r, plats, set); !ln.empty()) f.subtitle += " · " + ln;
  if (link) f.subtitle += " · what communicates";
  if (hidden > 0) f.subtitle += " · " + std::to_string(hidden) + " not drawn (0 FLOPs or 0 bytes)";
  if (coinciding > 0) f.subtitle += " · " + grouped(coinciding) + " more points on drawn markers";

  std::vector<std::string> head = {"platform", "network", "label", "point", "op", link ? "comm_intensity" : "intensity", "performance_flops_per_s", "bound"};
  if (networks) head.push_back("launch_share"), head.push_back("limit");  // the share of a network's time that is kernel launches; its limit
  out.data_csv = csv_line(head);
  for (const auto& p : all_pts) {
    std::vector<std::string> cells = {p.platform, p.network, p.label, std::to_string(p.point), p.op, format_number(p.x), format_number(p.y), p.bound};
    if (networks) cells.push_back(p.launch_share >= 0 ? format_number(p.launch_share) : ""), cells.push_back(p.limit);
    out.data_csv += csv_line(cells);
  }
  return out;
}

}  // namespace rsim::plots
