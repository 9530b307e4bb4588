#include "measure/plateau.hpp"

#include <algorithm>
#include <cmath>

namespace rsim::measure {

namespace {

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

struct Run {
  size_t first = 0, last = 0;  // inclusive indices into the curve
};

}  // namespace

std::vector<Plateau> detect_plateaus(std::vector<CurvePoint> curve, const std::vector<LevelSize>& levels, double tolerance) {
  std::vector<Plateau> out;
  curve.erase(std::remove_if(curve.begin(), curve.end(), [](const CurvePoint& p) { return !(p.bytes_per_s > 0) || !(p.working_set_bytes > 0); }),
              curve.end());
  if (curve.empty()) return out;
  std::sort(curve.begin(), curve.end(), [](const CurvePoint& a, const CurvePoint& b) { return a.working_set_bytes < b.working_set_bytes; });

  // 1. Runs of nearly equal bandwidth: a point joins the current run while it stays within
  //    `tolerance` of the run's median; a run of one point is a transition, not a plateau.
  std::vector<Run> runs;
  Run cur{0, 0};
  std::vector<double> vals = {curve[0].bytes_per_s};
  for (size_t i = 1; i < curve.size(); ++i) {
    double m = median(vals);
    if (std::fabs(curve[i].bytes_per_s / m - 1) <= tolerance) {
      cur.last = i;
      vals.push_back(curve[i].bytes_per_s);
    } else {
      runs.push_back(cur);
      cur = Run{i, i};
      vals = {curve[i].bytes_per_s};
    }
  }
  runs.push_back(cur);

  // 2. Each level owns the working sets in (previous capacity, its capacity]; DRAM owns the rest.
  std::vector<LevelSize> lv = levels;
  std::sort(lv.begin(), lv.end(), [](const LevelSize& a, const LevelSize& b) { return a.capacity_bytes < b.capacity_bytes; });
  lv.push_back(LevelSize{"DRAM", INFINITY});
  double lo = 0;
  for (const LevelSize& L : lv) {
    double hi = L.capacity_bytes;
    // DRAM: beyond 4 × the last cache when the curve reaches that far (a victim or non-inclusive
    // last-level cache still serves part of a working set a little larger than itself)
    if (std::isinf(hi) && lo > 0 && curve.back().working_set_bytes >= 4 * lo) lo = 4 * lo;
    auto inside = [&](size_t i) { return curve[i].working_set_bytes > lo && curve[i].working_set_bytes <= hi; };
    // the flat run (two points or more) with the most points inside the level
    const Run* best = nullptr;
    size_t best_n = 0;
    for (const Run& r : runs) {
      if (r.last == r.first) continue;
      size_t n = 0;
      for (size_t i = r.first; i <= r.last; ++i) n += inside(i);
      if (n > best_n) best = &r, best_n = n;
    }
    Plateau p;
    p.level = L.name;
    std::vector<double> v;
    if (best) {
      for (size_t i = best->first; i <= best->last; ++i)
        if (inside(i)) {
          if (v.empty()) p.from_bytes = curve[i].working_set_bytes;
          p.to_bytes = curve[i].working_set_bytes;
          v.push_back(curve[i].bytes_per_s);
        }
      if (best->last + 1 < curve.size()) p.edge_bytes = curve[best->last].working_set_bytes;
    } else {
      p.from_curve = false;
      for (size_t i = 0; i < curve.size(); ++i)
        if (inside(i)) {
          if (v.empty()) p.from_bytes = curve[i].working_set_bytes;
          p.to_bytes = curve[i].working_set_bytes;
          v.push_back(curve[i].bytes_per_s);
        }
    }
    lo = hi;
    if (v.empty()) continue;
    p.points = v.size();
    p.bytes_per_s = median(v);
    out.push_back(p);
  }
  return out;
}

}  // namespace rsim::measure
