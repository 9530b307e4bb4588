#include "plots/collect.hpp"

#include <climits>
#include <cmath>
#include <functional>

namespace rsim::plots {

namespace {
// ⌊1000 · log10 v⌋, INT32_MIN where a roofline cannot draw the value (≤ 0, not finite)
int32_t cell_of(double v) {
  if (!(v > 0) || !std::isfinite(v)) return INT32_MIN;
  return static_cast<int32_t>(std::floor(std::log10(v) * 1000));
}
bool drawable(const RoofPoint& rp) { return rp.intensity > 0 && std::isfinite(rp.intensity) && rp.attainable_flops_per_s > 0; }
}  // namespace

size_t FigureCollector::CellHash::operator()(const Cell& c) const {
  uint64_t h = 1469598103934665603ull;
  auto mix = [&](uint64_t v) { h = (h ^ v) * 1099511628211ull; };
  mix(c.platform), mix(c.network), mix(c.op);
  mix(static_cast<uint64_t>(c.dtype) | static_cast<uint64_t>(c.compute_dtype) << 8 | static_cast<uint64_t>(c.bound) << 16 |
      static_cast<uint64_t>(c.derated_bound) << 24);
  mix(static_cast<uint32_t>(c.x)), mix(static_cast<uint32_t>(c.y)), mix(static_cast<uint32_t>(c.dx)), mix(static_cast<uint32_t>(c.dy));
  mix(std::hash<double>{}(c.derated_peak)), mix(std::hash<double>{}(c.derated_bandwidth));
  return static_cast<size_t>(h);
}

FigureCollector::FigureCollector(RunResult& r, const std::vector<PlotSpec>& specs, size_t thin_after) : r_(r), thin_after_(thin_after) {
  layer_roofline_ = specs.empty();  // the defaults draw a roofline of layers
  for (const PlotSpec& s : specs) {
    if (s.kind == Kind::Roofline && s.points != "networks") layer_roofline_ = true;
    if (s.kind == Kind::Roofline && s.points != "networks" && (s.labels == "all" || s.color == "point" || s.marker == "point")) keep_all_ = true;
    if (trend_reads_rows(s)) row_trends_.push_back(s);
    if (s.kind == Kind::Layers || (s.kind == Kind::Trend && s.x == "layer")) whole_points_.insert(static_cast<size_t>(std::max(0LL, s.point)));
  }
}

void FigureCollector::start(const RunHeader& h) {
  r_.var_names = h.var_names;
  r_.metric_names = h.metric_names;
}

uint32_t FigureCollector::intern(const std::string& s) {
  return names_.try_emplace(s, static_cast<uint32_t>(names_.size())).first->second;
}

bool FigureCollector::needs_row(const Row& row) const {
  for (const PlotSpec& s : row_trends_)
    if ((s.layer.empty() || s.layer == row.layer) && shows_network(s, row.network) && (s.op.empty() || s.op == row.op)) return true;
  return false;
}

void FigureCollector::consume(PointResult&& pr, const rsim::Point& p) {
  total_rows_ += pr.rows.size();
  total_summary_ += pr.summary.size();
  pr.text.clear();
  pr.text.shrink_to_fit();
  std::vector<Diagnostic>().swap(pr.warnings);  // printed by the run; no chart reads them
  std::vector<FootprintExcess>().swap(pr.footprint_excess);
  const bool whole = keep_all_ || r_.results.empty() || whole_points_.count(r_.results.size()) > 0;
  size_t at = 0;
  for (Row& row : pr.rows) {
    if (!whole && !layer_roofline_) {  // no roofline of layers: only the trends of layer rows read it
      if (needs_row(row)) {
        if (at != static_cast<size_t>(&row - pr.rows.data())) pr.rows[at] = std::move(row);
        ++at;
        ++kept_;
      }
      continue;
    }
    Cell c{intern(row.platform), intern(row.network), intern(row.op),
           static_cast<uint8_t>(row.dtype), static_cast<uint8_t>(row.compute_dtype),
           static_cast<uint8_t>(row.theoretical.bound), static_cast<uint8_t>(row.derated.bound),
           drawable(row.theoretical) ? cell_of(row.theoretical.intensity) : INT32_MIN,
           drawable(row.theoretical) ? cell_of(row.theoretical.attainable_flops_per_s) : INT32_MIN,
           drawable(row.derated) ? cell_of(row.derated.intensity) : INT32_MIN,
           drawable(row.derated) ? cell_of(row.derated.attainable_flops_per_s) : INT32_MIN,
           row.derated.peak_flops_per_s, row.derated.bandwidth_bytes_per_s};
    const bool fresh = cells_.insert(c).second;
    if (whole || fresh || kept_ < thin_after_ || needs_row(row)) {
      if (at != static_cast<size_t>(&row - pr.rows.data())) pr.rows[at] = std::move(row);
      ++at;
      ++kept_;
      continue;
    }
    auto [it, added] = thinned_at_.try_emplace({row.platform, row.network}, r_.thinned.size());
    if (added) r_.thinned.push_back(RunResult::Thinned{row.platform, row.network});
    RunResult::Thinned& t = r_.thinned[it->second];
    ++t.rows;
    t.hidden += !drawable(row.theoretical);
    t.hidden_derated += !drawable(row.derated);
  }
  if (at < pr.rows.size()) {
    pr.rows.erase(pr.rows.begin() + static_cast<std::ptrdiff_t>(at), pr.rows.end());
    pr.rows.shrink_to_fit();
  }
  r_.points.push_back(p);
  r_.results.push_back(std::move(pr));
}

}  // namespace rsim::plots
