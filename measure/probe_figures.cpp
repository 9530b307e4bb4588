#include "measure/probe_figures.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "engine/model/units.hpp"
#include "plots/draw.hpp"

namespace rsim::measure {

namespace {

std::string size_text(double b) {
  char buf[32];
  if (b >= 1024.0 * 1024) std::snprintf(buf, sizeof buf, "%g MiB", b / (1024.0 * 1024));
  else std::snprintf(buf, sizeof buf, "%g KiB", b / 1024);
  return buf;
}

double pow2_floor(double v) { return std::pow(2.0, std::floor(std::log2(v))); }
double pow2_ceil(double v) { return std::pow(2.0, std::ceil(std::log2(v))); }

plots::Figure roofline_figure(const ProbeResult& r) {
  plots::Figure f;
  f.title = "Measured roofline: " + r.cpu;
  f.subtitle = std::to_string(r.threads) + " pinned thread" + (r.threads == 1 ? "" : "s") + ", clock " + si(r.clock_all_hz, "Hz") +
               "; ceilings = best FMA rate per ISA, diagonals = read-bandwidth plateaus";
  f.x = plots::Axis{plots::Scale::Log, 1.0 / 64, 256, "Arithmetic intensity [FLOP/byte]", "", {}, {}};
  f.y.scale = plots::Scale::Log;
  f.y.title = "Performance [FLOP/s]";
  f.y.unit = "FLOP/s";
  // the best ISA of each precision, and scalar fp64 as the floor
  std::vector<std::pair<std::string, double>> ceilings;
  for (const char* prec : {"fp32", "fp64", "bf16", "int8"})
    if (const PeakResult* p = best_peak(r, prec, r.threads)) ceilings.emplace_back(p->precision + " " + p->isa + (p->fma ? "" : " mul+add"), p->flops_per_s);
  for (const auto& p : r.peaks)
    if (p.threads == r.threads && p.isa == "scalar" && p.precision == "fp64") ceilings.emplace_back("fp64 scalar" + std::string(p.fma ? "" : " mul+add"), p.flops_per_s);
  std::sort(ceilings.begin(), ceilings.end(), [](const auto& a, const auto& b) { return a.second > b.second; });
  std::vector<std::pair<std::string, double>> diagonals;
  for (const char* lv : {"L1", "L2", "L3", "DRAM"})
    if (const Plateau* p = find_plateau(r, "read", r.threads, lv)) diagonals.emplace_back(lv, p->bytes_per_s);
  double top = ceilings.empty() ? 1e9 : ceilings.front().second;
  double low = ceilings.empty() ? 1e6 : ceilings.back().second;
  double bw_low = diagonals.empty() ? 1e9 : diagonals.back().second;
  f.y.min = pow2_floor(std::min(low / 4, bw_low * f.x.min));
  f.y.min = std::pow(10.0, std::floor(std::log10(std::min(low / 4, bw_low * f.x.min))));
  f.y.max = std::pow(10.0, std::ceil(std::log10(top * 1.5)));
  double top_bw = diagonals.empty() ? 0 : diagonals.front().second;
  for (size_t i = 0; i < ceilings.size(); ++i) {
    const auto& [name, v] = ceilings[i];
    plots::Line l;
    double from = top_bw > 0 ? std::max(f.x.min, v / top_bw) : f.x.min;
    l.pts = {{from, v}, {f.x.max, v}};
    l.style = plots::LineStyle{plots::rgb(0xD55E00), i == 0 ? 2.2 : 1.2, i == 0 ? plots::Dash::Solid : plots::dash_cycle(i)};
    l.label = name + " " + si(v, "FLOP/s", 3);
    l.label_at = 0.97;
    f.lines.push_back(l);
  }
  std::vector<std::string> labels = diagonal_labels(diagonals);
  size_t labelled = 0;
  for (size_t i = 0; i < diagonals.size(); ++i) {
    const auto& [name, bw] = diagonals[i];
    plots::Line l;
    double ridge = top / bw;
    l.pts = {{f.x.min, bw * f.x.min}, {std::min(ridge, f.x.max), std::min(top, bw * f.x.max)}};
    l.style = plots::LineStyle{plots::palette(i == 0 ? 0 : i == 1 ? 2 : i == 2 ? 3 : 6), 1.8, plots::Dash::Solid};
    l.label = labels[i];
    l.label_at = 0.35 + 0.12 * static_cast<double>(labelled);
    if (!l.label.empty()) ++labelled;
    f.lines.push_back(l);
  }
  return f;
}

plots::Figure bandwidth_figure(const ProbeResult& r) {
  plots::Figure f;
  f.title = "Bandwidth versus working set: " + r.cpu;
  f.subtitle = "STREAM counting (no write-allocate traffic); " +
               (r.threads > 1 ? "solid 1 thread, dashed " + std::to_string(r.threads) + " threads" : std::string("1 thread")) +
               "; bars: read plateaus";
  double lo = INFINITY, hi = 0, bmin = INFINITY, bmax = 0;
  for (const auto& b : r.bandwidth) {
    lo = std::min(lo, b.working_set_bytes);
    hi = std::max(hi, b.working_set_bytes);
    if (b.bytes_per_s > 0) bmin = std::min(bmin, b.bytes_per_s), bmax = std::max(bmax, b.bytes_per_s);
  }
  if (!(hi > 0)) lo = 1e4, hi = 1e9, bmin = 1e9, bmax = 1e12;
  // The axis reaches 10 × below the lowest plateau, not to a stray sample far below every plateau
  // (a sample the machine's other work slowed): such samples are counted in the subtitle.
  double plateau_min = INFINITY;
  for (const auto& lp : r.plateaus)
    for (const auto& p : lp.plateaus) plateau_min = std::min(plateau_min, p.bytes_per_s);
  double floor_bw = std::isfinite(plateau_min) ? std::max(bmin, plateau_min / 10) : bmin;
  f.x = plots::Axis{plots::Scale::Log, pow2_floor(lo), pow2_ceil(hi), "Working set, all threads together [B]", "B", {}, {}};
  f.y = plots::Axis{plots::Scale::Log, std::pow(10.0, std::floor(std::log10(floor_bw / 1.5))), std::pow(10.0, std::ceil(std::log10(bmax * 1.5))),
                    "Bandwidth [B/s]", "B/s", {}, {}};
  size_t below = 0;
  for (const auto& b : r.bandwidth) below += b.bytes_per_s > 0 && b.bytes_per_s < f.y.min;
  if (below) f.subtitle += "; " + std::to_string(below) + " sample" + (below == 1 ? "" : "s") + " below " + si(f.y.min, "B/s", 3) + " not shown";
  const char* kernels[] = {"read", "write", "copy", "triad"};
  std::vector<int> tcs = {1};
  if (r.threads > 1) tcs.push_back(r.threads);
  for (size_t k = 0; k < 4; ++k)
    for (int T : tcs) {
      plots::Line l;
      for (const auto& b : r.bandwidth)
        if (b.kernel == kernels[k] && b.threads == T) l.pts.push_back({b.working_set_bytes, b.bytes_per_s});
      if (l.pts.empty()) continue;
      l.style = plots::LineStyle{plots::palette(k), k == 0 ? 2.0 : 1.4, T == 1 ? plots::Dash::Solid : plots::Dash::Dashed};
      l.legend = std::string(kernels[k]) + (T == 1 ? ", 1 thread" : ", " + std::to_string(T) + " threads");
      plots::LegendEntry e;
      e.text = l.legend;
      e.has_line = true;
      e.line = l.style;
      f.legend.push_back(e);
      f.lines.push_back(l);
    }
  // OS cache sizes (one thread's view), as vertical references
  for (const auto& c : r.caches) {
    plots::Reference ref;
    ref.vertical = true;
    ref.value = c.size_bytes;
    ref.style = plots::LineStyle{plots::rgb(0x777777), 1, plots::Dash::Dotted};
    ref.label = "L" + std::to_string(c.level) + " " + size_text(c.size_bytes) + " (OS)";
    if (ref.value > f.x.min && ref.value < f.x.max) f.refs.push_back(ref);
  }
  // detected read plateaus, 1 thread: a thick bar over the working sets that make each, and
  // their values in the legend
  for (const auto& lp : r.plateaus) {
    if (lp.kernel != "read" || lp.threads != 1) continue;
    plots::LegendEntry e;
    e.text = "read plateaus:";
    e.has_line = true;
    e.line = plots::LineStyle{plots::rgb(0x000000, 0.45), 5, plots::Dash::Solid};
    for (const auto& p : lp.plateaus) {
      plots::Line l;
      double a = p.from_bytes, b = std::max(p.to_bytes, p.from_bytes * 1.2);
      l.pts = {{a, p.bytes_per_s}, {b, p.bytes_per_s}};
      l.style = e.line;
      f.lines.push_back(l);
      e.text += " " + p.level + " " + si(p.bytes_per_s, "B/s", 3) + (p.from_curve ? "" : "*");
    }
    if (!lp.plateaus.empty()) f.legend.push_back(e);
  }
  return f;
}

}  // namespace

std::vector<std::string> diagonal_labels(const std::vector<std::pair<std::string, double>>& levels) {
  std::vector<std::string> out(levels.size());
  std::vector<bool> taken(levels.size(), false);
  for (size_t i = 0; i < levels.size(); ++i) {
    if (taken[i]) continue;
    std::string text = levels[i].first + " " + si(levels[i].second, "B/s", 3);
    for (size_t j = i + 1; j < levels.size(); ++j) {
      double a = levels[i].second, b = levels[j].second;
      if (!taken[j] && a > 0 && b > 0 && std::max(a, b) / std::min(a, b) <= 1.15) {
        text += ", " + levels[j].first + " " + si(b, "B/s", 3);
        taken[j] = true;
      }
    }
    out[i] = text;
  }
  return out;
}

std::vector<std::pair<std::string, plots::Figure>> probe_figures(const ProbeResult& r) {
  std::vector<std::pair<std::string, plots::Figure>> out;
  if (!r.peaks.empty()) out.emplace_back("probe_roofline", roofline_figure(r));
  if (!r.bandwidth.empty()) out.emplace_back("probe_bandwidth", bandwidth_figure(r));
  return out;
}

}  // namespace rsim::measure
