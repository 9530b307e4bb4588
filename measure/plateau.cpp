#include "measure/plateau.hpp"

#include <algorithm>
#include <cstdint>
#include <cmath>
#include <cstdio>

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

// The curve without unmeasured points, sorted by working set.
void clean_curve(std::vector<CurvePoint>& curve) {
  curve.erase(std::remove_if(curve.begin(), curve.end(), [](const CurvePoint& p) { return !(p.bytes_per_s > 0) || !(p.working_set_bytes > 0); }),
              curve.end());
  std::sort(curve.begin(), curve.end(), [](const CurvePoint& a, const CurvePoint& b) { return a.working_set_bytes < b.working_set_bytes; });
}

// Runs of nearly equal bandwidth over a cleaned, non-empty curve: a point joins the current run
// while it stays within `tolerance` of the median of the run's first `anchor` points (SIZE_MAX:
// of all its points so far, a running median).
std::vector<Run> split_runs(const std::vector<CurvePoint>& curve, double tolerance, size_t anchor) {
  std::vector<Run> runs;
  Run cur{0, 0};
  std::vector<double> vals = {curve[0].bytes_per_s};
  for (size_t i = 1; i < curve.size(); ++i) {
    if (std::fabs(curve[i].bytes_per_s / median(vals) - 1) <= tolerance) {
      cur.last = i;
      if (vals.size() < anchor) vals.push_back(curve[i].bytes_per_s);
    } else {
      runs.push_back(cur);
      cur = Run{i, i};
      vals = {curve[i].bytes_per_s};
    }
  }
  runs.push_back(cur);
  return runs;
}

}  // namespace

std::vector<Plateau> detect_plateaus(std::vector<CurvePoint> curve, const std::vector<LevelSize>& levels, double tolerance) {
  std::vector<Plateau> out;
  clean_curve(curve);
  if (curve.empty()) return out;
  // 1. Runs of nearly equal bandwidth (within `tolerance` of the run's running median); a run of
  //    one point is a transition, not a plateau.
  const std::vector<Run> runs = split_runs(curve, tolerance, SIZE_MAX);

  // 2. Each level owns the working sets in (previous capacity, its capacity]; DRAM owns the rest.
  std::vector<LevelSize> lv = levels;
  std::sort(lv.begin(), lv.end(), [](const LevelSize& a, const LevelSize& b) { return a.capacity_bytes < b.capacity_bytes; });
  lv.push_back(LevelSize{"DRAM", INFINITY, ""});
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

namespace {

std::string mib_text(double b) {
  char buf[64];
  if (b >= 1024.0 * 1024) std::snprintf(buf, sizeof buf, "%.3g MiB", b / (1024.0 * 1024));
  else std::snprintf(buf, sizeof buf, "%.3g KiB", b / 1024.0);
  return buf;
}

}  // namespace

LevelDetection detect_levels(std::vector<CurvePoint> curve, const std::vector<LevelSize>& hints, double tolerance) {
  LevelDetection out;
  clean_curve(curve);
  if (curve.empty()) return out;
  // 1. flat runs (two points or more): each point within `tolerance` of the median of its run's
  // first three, an anchor that does not drift (a running median let a VM's L3 slide from 48 to
  // 37 GB/s over 6–128 MiB in one run)
  const std::vector<Run> runs = split_runs(curve, tolerance, 3);
  auto run_median = [&](const Run& r) {
    std::vector<double> v;
    for (size_t i = r.first; i <= r.last; ++i) v.push_back(curve[i].bytes_per_s);
    return median(v);
  };
  std::vector<Run> flat;
  for (const Run& r : runs)
    if (r.last > r.first) flat.push_back(r);
  // 2. what the curve does beyond 256 MiB, where no cache of today's CPUs holds the working set
  std::vector<double> far;
  for (const auto& p : curve)
    if (p.working_set_bytes >= kDramMinBytes) far.push_back(p.bytes_per_s);
  const double far_bw = median(far);
  // 3. the caches: flat runs ending below 256 MiB, faster than what the curve does there;
  // adjacent runs of nearly the same bandwidth are one level. Beyond as many names as the hints
  // give (three without hints), the two closest in bandwidth become one: a run less than half as
  // long as its neighbour is the slope between two plateaus and is dropped, else they merge
  // fig[k]: the run whose points give cache k's bandwidth (the first of those merged into it: a
  // level's bandwidth is that of working sets well inside it, not of the slope at its end)
  std::vector<Run> caches, fig;
  for (const Run& r : flat) {
    if (curve[r.last].working_set_bytes >= kDramMinBytes) continue;
    if (!far.empty() && run_median(r) <= far_bw * (1 + tolerance)) continue;  // as slow as DRAM: not a cache
    if (!caches.empty() && std::fabs(run_median(r) / run_median(caches.back()) - 1) <= tolerance) caches.back().last = r.last;
    else caches.push_back(r), fig.push_back(r);
  }
  // as many levels as the hints name, and at least the three of today's CPUs (a VM may give one
  // hint alone, sysconf's L3, and still have an L1 and an L2 on its curve)
  const size_t names = std::max<size_t>(hints.size(), 3);
  while (caches.size() > names) {
    size_t k = 0;
    double closest = INFINITY;
    for (size_t i = 0; i + 1 < caches.size(); ++i) {
      const double d = std::fabs(std::log(run_median(caches[i]) / run_median(caches[i + 1])));
      if (d < closest) closest = d, k = i;
    }
    const size_t na = caches[k].last - caches[k].first + 1, nb = caches[k + 1].last - caches[k + 1].first + 1;
    if (2 * na < nb) caches.erase(caches.begin() + static_cast<long>(k)), fig.erase(fig.begin() + static_cast<long>(k));
    else if (2 * nb < na) caches.erase(caches.begin() + static_cast<long>(k) + 1), fig.erase(fig.begin() + static_cast<long>(k) + 1);
    else {
      caches[k].last = caches[k + 1].last;
      caches.erase(caches.begin() + static_cast<long>(k) + 1), fig.erase(fig.begin() + static_cast<long>(k) + 1);
    }
  }
  std::vector<LevelSize> hs = hints;
  std::sort(hs.begin(), hs.end(), [](const LevelSize& a, const LevelSize& b) { return a.capacity_bytes < b.capacity_bytes; });
  for (size_t k = 0; k < caches.size(); ++k) {
    const Run& r = caches[k];
    Plateau p;
    p.level = "L" + std::to_string(k + 1);
    // the bandwidth: L1's the best of its run's points (nothing faster can inflate it), a
    // deeper level's the median (its first points may still hit the level above)
    std::vector<double> v;
    for (size_t i = fig[k].first; i <= fig[k].last; ++i) v.push_back(curve[i].bytes_per_s);
    p.from_bytes = curve[r.first].working_set_bytes;
    p.to_bytes = curve[r.last].working_set_bytes;
    p.points = r.last - r.first + 1;
    p.bytes_per_s = k == 0 ? *std::max_element(v.begin(), v.end()) : median(v);
    if (r.last + 1 < curve.size()) p.edge_bytes = p.to_bytes;
    p.size_bytes = p.to_bytes;
    p.size_source = "curve";
    // its hint: the one named like it (L1, L2, L3), else the k-th by size when the hints are unnamed
    const LevelSize* h = nullptr;
    for (const auto& x : hs)
      if (x.name == p.level) h = &x;
    if (!h && k < hs.size() && hs[k].name.empty()) h = &hs[k];
    // a hint is the level's size when half of it still runs at the plateau's bandwidth and twice
    // it no longer does (or the curve ends before)
    auto bw_at = [&](double ws) {  // log-linear between the curve's points
      if (ws <= curve.front().working_set_bytes) return curve.front().bytes_per_s;
      for (size_t i = 1; i < curve.size(); ++i)
        if (ws <= curve[i].working_set_bytes) {
          const double t = std::log(ws / curve[i - 1].working_set_bytes) / std::log(curve[i].working_set_bytes / curve[i - 1].working_set_bytes);
          return curve[i - 1].bytes_per_s + t * (curve[i].bytes_per_s - curve[i - 1].bytes_per_s);
        }
      return curve.back().bytes_per_s;
    };
    const bool confirmed = h && std::fabs(bw_at(h->capacity_bytes / 2) / p.bytes_per_s - 1) <= tolerance &&
                           (2 * h->capacity_bytes > curve.back().working_set_bytes || bw_at(2 * h->capacity_bytes) < p.bytes_per_s * (1 - tolerance));
    if (confirmed) {
      p.size_bytes = h->capacity_bytes;
      p.size_source = h->source.empty() ? "os" : h->source;
    } else if (h) {
      out.warnings.push_back((h->source.empty() ? std::string("the OS") : h->source) + " says " + h->name + " = " + mib_text(h->capacity_bytes) +
                             "; the curve leaves its " + (k + 1 == caches.size() ? "last cache" : p.level) + " plateau at " +
                             mib_text(p.to_bytes) + ": the curve's size is used");
    }
    out.plateaus.push_back(p);
  }
  // 4. DRAM: the curve from 4 × the largest cache (its size as found above) and at least 256 MiB
  double largest_size = 0;
  for (const auto& p : out.plateaus) largest_size = std::max(largest_size, p.size_bytes);
  const double dram_at = std::max(kDramMinBytes, 4 * largest_size);
  Plateau dram;
  dram.level = "DRAM";
  {
    std::vector<double> v;
    const Run* best = nullptr;
    size_t best_n = 0;
    for (const Run& r : flat) {
      size_t n = 0;
      for (size_t i = r.first; i <= r.last; ++i) n += curve[i].working_set_bytes >= dram_at;
      if (n > best_n) best = &r, best_n = n;
    }
    dram.from_curve = best && best_n >= 2;
    for (size_t i = 0; i < curve.size(); ++i)
      if (curve[i].working_set_bytes >= dram_at && (!dram.from_curve || (i >= best->first && i <= best->last))) {
        if (v.empty()) dram.from_bytes = curve[i].working_set_bytes;
        dram.to_bytes = curve[i].working_set_bytes;
        v.push_back(curve[i].bytes_per_s);
      }
    // DRAM's: the best of its points (no cache can inflate working sets this far beyond them)
    dram.points = v.size();
    dram.bytes_per_s = v.empty() ? 0 : *std::max_element(v.begin(), v.end());
  }
  for (size_t k = caches.size(); k < hs.size(); ++k)
    out.warnings.push_back((hs[k].source.empty() ? std::string("the OS") : hs[k].source) + " says " + hs[k].name + " = " +
                           mib_text(hs[k].capacity_bytes) + ", but the curve shows no plateau for it (its bandwidth is another level's)");
  if (dram.points) out.plateaus.push_back(dram);
  else
    out.warnings.push_back("the sweep never reached DRAM's working sets (" + mib_text(dram_at) + " and beyond; the largest was " +
                           mib_text(curve.back().working_set_bytes) + "): no DRAM plateau");
  return out;
}

}  // namespace rsim::measure
