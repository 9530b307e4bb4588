#include "measure/probe_output.hpp"

#include <cmath>
#include <cstdio>
#include <ctime>

#include "engine/model/units.hpp"

namespace rsim::measure {

namespace {

std::string num(double v) {
  if (!std::isfinite(v)) return "null";
  char b[64];
  std::snprintf(b, sizeof b, "%.6g", v);
  return b;
}

std::string q(const std::string& s) {
  std::string o = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') o += '\\';
    if (static_cast<unsigned char>(c) < 0x20) {
      o += ' ';
      continue;
    }
    o += c;
  }
  return o + "\"";
}

// A YAML quantity: "3.4873 GHz"; six significant digits of a scaled value.
std::string qty(double v, const char* unit) {
  static const char* prefix[] = {"", "k", "M", "G", "T", "P"};
  int i = 0;
  while (v >= 1000 && i < 5) v /= 1000, ++i;
  char b[64];
  std::snprintf(b, sizeof b, "%.6g %s%s", v, prefix[i], unit);
  return b;
}

std::string size_qty(double bytes) {
  char b[64];
  if (bytes >= 1024.0 * 1024 && std::fmod(bytes, 1024.0 * 1024) == 0) std::snprintf(b, sizeof b, "%.0f MiB", bytes / (1024.0 * 1024));
  else if (bytes >= 1024 && std::fmod(bytes, 1024.0) == 0) std::snprintf(b, sizeof b, "%.0f KiB", bytes / 1024);
  else if (bytes >= 1024.0 * 1024) std::snprintf(b, sizeof b, "%.4g MiB", bytes / (1024.0 * 1024));
  else if (bytes >= 1024) std::snprintf(b, sizeof b, "%.4g KiB", bytes / 1024);
  else std::snprintf(b, sizeof b, "%.0f B", bytes);
  return b;
}

double flops_per_lane(const PeakResult& p) { return p.precision == "bf16" ? 4 : p.precision == "int8" ? 8 : 2; }

const char* levels[] = {"L1", "L2", "L3", "DRAM"};

}  // namespace

int detected_pipes(double flops_per_s, double clock_hz, double lanes, double fpl) {
  if (!(clock_hz > 0) || !(lanes > 0) || !(fpl > 0)) return 1;
  long p = std::lround(flops_per_s / clock_hz / (lanes * fpl));
  return static_cast<int>(std::max(1L, p));
}

std::string probe_json(const ProbeResult& r) {
  std::string s = "{\n  \"clock_hz\": " + num(r.clock_hz) + ",\n  \"peak_flops_per_s\": {";
  bool first = true;
  for (const char* prec : {"fp64", "fp32", "bf16", "int8"}) {
    const PeakResult* one = best_peak(r, prec, 1);
    if (!one) continue;
    const PeakResult* all = best_peak(r, prec, r.threads);
    s += std::string(first ? "" : ",") + "\n    \"" + prec + "\": {\"1\": " + num(one->flops_per_s) + ", \"all\": " + num(all ? all->flops_per_s : one->flops_per_s) + "}";
    first = false;
  }
  s += "\n  },\n  \"bandwidth_bytes_per_s\": {";
  first = true;
  for (const char* lv : levels) {
    const Plateau* one = find_plateau(r, "read", 1, lv);
    if (!one) continue;
    const Plateau* all = find_plateau(r, "read", r.threads, lv);
    s += std::string(first ? "" : ",") + "\n    \"" + lv + "\": {\"1\": " + num(one->bytes_per_s) + ", \"all\": " + num(all ? all->bytes_per_s : one->bytes_per_s) + "}";
    first = false;
  }
  s += "\n  },\n  \"cpu\": " + q(r.cpu) + ",\n  \"threads\": " + std::to_string(r.threads) + ",\n  \"clock_all_threads_hz\": " + num(r.clock_all_hz) +
       ",\n  \"features\": " + q(features_text(r.features)) + ",\n  \"quick\": " + (r.quick ? "true" : "false") + ",\n  \"seconds\": " + num(r.seconds);
  s += ",\n  \"caches\": [";
  for (size_t i = 0; i < r.caches.size(); ++i)
    s += std::string(i ? ", " : "") + "{\"level\": " + std::to_string(r.caches[i].level) + ", \"type\": " + q(r.caches[i].type) +
         ", \"size_bytes\": " + num(r.caches[i].size_bytes) + ", \"shared_by\": " + std::to_string(r.caches[i].shared_by) +
         ", \"source\": " + q(r.caches[i].source) + "}";
  s += "],\n  \"skipped\": [";
  for (size_t i = 0; i < r.skipped.size(); ++i) s += std::string(i ? ", " : "") + q(r.skipped[i]);
  s += "],\n  \"warnings\": [";
  for (size_t i = 0; i < r.warnings.size(); ++i) s += std::string(i ? ", " : "") + q(r.warnings[i]);
  s += "],\n  \"peaks\": [";
  for (size_t i = 0; i < r.peaks.size(); ++i) {
    const PeakResult& p = r.peaks[i];
    s += std::string(i ? "," : "") + "\n    {\"isa\": " + q(p.isa) + ", \"precision\": " + q(p.precision) + ", \"threads\": " + std::to_string(p.threads) +
         ", \"chains\": " + std::to_string(p.chains) + ", \"lanes\": " + num(p.lanes) + ", \"fma\": " + (p.fma ? "true" : "false") +
         ", \"flops_per_s\": " + num(p.flops_per_s);
    if (!p.chain_sweep.empty()) {
      s += ", \"chain_sweep\": {";
      for (size_t j = 0; j < p.chain_sweep.size(); ++j) s += std::string(j ? ", " : "") + "\"" + std::to_string(p.chain_sweep[j].first) + "\": " + num(p.chain_sweep[j].second);
      s += "}";
    }
    s += "}";
  }
  s += "\n  ],\n  \"plateaus\": [";
  first = true;
  for (const auto& lp : r.plateaus)
    for (const auto& p : lp.plateaus) {
      s += std::string(first ? "" : ",") + "\n    {\"kernel\": " + q(lp.kernel) + ", \"threads\": " + std::to_string(lp.threads) + ", \"level\": " + q(p.level) +
           ", \"bytes_per_s\": " + num(p.bytes_per_s) + ", \"from_bytes\": " + num(p.from_bytes) + ", \"to_bytes\": " + num(p.to_bytes) +
           ", \"points\": " + std::to_string(p.points) + ", \"from_curve\": " + (p.from_curve ? "true" : "false") + ", \"edge_bytes\": " + num(p.edge_bytes) +
           (p.size_bytes > 0 ? ", \"size_bytes\": " + num(p.size_bytes) + ", \"size_source\": " + q(p.size_source) : std::string()) + "}";
      first = false;
    }
  s += "\n  ],\n  \"bandwidth\": [";
  for (size_t i = 0; i < r.bandwidth.size(); ++i) {
    const auto& b = r.bandwidth[i];
    s += std::string(i ? "," : "") + "\n    {\"kernel\": " + q(b.kernel) + ", \"threads\": " + std::to_string(b.threads) + ", \"working_set_bytes\": " +
         num(b.working_set_bytes) + ", \"bytes_per_s\": " + num(b.bytes_per_s) + "}";
  }
  s += "\n  ]\n}\n";
  return s;
}

std::string probe_platform_yaml(const ProbeResult& r, const std::string& name) {
  std::string s;
  char date[32] = "";
  std::time_t now = std::time(nullptr);
  std::strftime(date, sizeof date, "%Y-%m-%d", std::gmtime(&now));
  s += "# " + r.cpu + ", measured by `rsim probe" + std::string(r.quick ? " --quick" : "") + "` on " + date + " (" + std::to_string(r.threads) +
       " thread" + (r.threads == 1 ? "" : "s") + ", pinned).\n";
  s += "# Features (CPUID): " + features_text(r.features) + ".\n";
  for (const auto& sk : r.skipped) s += "# Skipped: " + sk + ".\n";
  for (const auto& w : r.warnings) s += "# Warning: " + w + ".\n";
  s += "# Clock: a chain of dependent one-cycle adds runs at " + si(r.clock_hz, "Hz") + " on one thread (" + si(r.clock_all_hz, "Hz") +
       " per thread with all running); the theoretical roofs use the all-thread clock.\n";
  s += "# Compute: theoretical = cores × clock × lanes × FMA pipes × 2, where the pipes are the measured FLOP per cycle of one core\n";
  s += "#   divided by lanes × 2 and rounded (detected, not assumed); derated = the measured all-thread rate.\n";
  s += "# Memory: read bandwidth plateaus of a working-set sweep (all threads); the CPU reports no theoretical cache or DRAM\n";
  s += "#   bandwidth, so each level's bandwidth is the measurement itself. Sizes: a cache's size as sysfs, CPUID or sysconf reports it\n";
  s += "#   when the bandwidth curve leaves that level's plateau near it (size_source names the source), else the curve's own.\n";
  s += "name: " + name + "\n";
  s += "title: " + q(r.cpu + " (probed)") + "\n";
  s += "kind: cpu\n";
  s += "source: " + q(std::string("rsim probe") + (r.quick ? " --quick" : "") + " on " + date) + "\n";
  s += "compute:\n";
  int roofs = 0;
  double clock = r.clock_all_hz > 0 ? r.clock_all_hz : r.clock_hz;
  for (const char* prec : {"fp32", "fp64", "bf16", "int8"}) {
    const PeakResult* one = best_peak(r, prec, 1);
    if (!one) continue;
    const PeakResult* all = best_peak(r, prec, r.threads);
    if (!all) all = one;
    int pipes = detected_pipes(one->flops_per_s, r.clock_hz, one->lanes, flops_per_lane(*one));
    double fpl = flops_per_lane(*one);
    // The clock chain and the FMA kernels run at different moments; on a busy machine the chain may
    // have caught a slower moment than the FMAs. A measured rate cannot beat cores × clock × lanes
    // × pipes × FLOP, so when it does, the clock it implies is the better estimate.
    double roof_clock = std::max(clock, all->flops_per_s / (r.threads * one->lanes * pipes * fpl));
    roof_clock = std::max(roof_clock, one->flops_per_s / (one->lanes * pipes * fpl));
    double theoretical = r.threads * roof_clock * one->lanes * pipes * fpl;
    // 1e-4 below: the file's 6-digit numbers must keep measured ≤ theoretical after rounding
    double measured = std::min(all->flops_per_s, theoretical * 0.9999);
    std::string dt = prec;
    s += "  - name: " + q(dt + " " + one->isa + (one->fma ? " FMA" : " mul+add") + " (probed)") + "\n";
    s += "    dtypes: [" + dt + "]\n";
    s += "    # 1 thread: " + si(one->flops_per_s, "FLOP/s") + " = " + num(one->flops_per_s / r.clock_hz) + " FLOP/cycle with " +
         std::to_string(one->chains) + " independent chains (the fewest that saturate) → " + std::to_string(pipes) + " pipe" +
         (pipes == 1 ? "" : "s") + " of " + num(one->lanes) + " lanes\n";
    s += "    derive:\n";
    s += "      units: " + std::to_string(r.threads) + "        # cores probed\n";
    s += "      clock: " + qty(roof_clock, "Hz") + (roof_clock > clock * 1.0001 ? "   # the FMA rate's clock: the add chain measured " + qty(clock, "Hz") : std::string()) + "\n";
    if (fpl == 2) {
      s += "      lanes: " + num(one->lanes) + "\n";
      s += std::string("      ") + (one->fma ? "fma_pipes: " : "flops_per_cycle: ") + (one->fma ? std::to_string(pipes) : num(one->lanes * pipes * 2)) + "\n";
    } else {
      s += "      flops_per_cycle: " + num(one->lanes * pipes * fpl) + "   # " + num(one->lanes) + " lanes × " + std::to_string(pipes) + " pipes × " + num(fpl) + "\n";
    }
    s += "    measured: " + qty(measured, dt == "int8" ? "OP/s" : "FLOP/s") + "\n";
    s += "    measured_by: " + q("rsim probe, " + std::to_string(r.threads) + " pinned threads × " + std::to_string(one->chains) + " chains") + "\n";
    s += "    basis: measured\n";
    ++roofs;
  }
  if (!roofs) s += "  []  # no ISA could be probed\n";
  s += "memory:\n";
  // DRAM first (memory[0] is the default level), then the caches from the smallest
  for (const char* lv : {"DRAM", "L1", "L2", "L3", "L4"}) {
    const Plateau* p = find_plateau(r, "read", r.threads, lv);
    if (!p) p = find_plateau(r, "read", 1, lv);
    if (!p) continue;
    s += "  - name: " + std::string(lv) + "\n";
    s += "    bandwidth: " + qty(p->bytes_per_s, "B/s") + "\n";
    s += "    measured_by: " + q("rsim probe: read, " + std::to_string(p->points) + " working sets from " + size_qty(std::round(p->from_bytes)) + " to " +
                                 size_qty(std::round(p->to_bytes)) + (p->from_curve ? ", a flat run" : ", no flat run: median")) + "\n";
    if (p->size_bytes > 0) {
      s += "    size: " + size_qty(std::round(p->size_bytes)) + "\n";
      s += "    size_source: " + p->size_source + "\n";
    }
    s += "    basis: measured\n";
  }
  return s;
}

std::string probe_report(const ProbeResult& r) {
  std::string s;
  s += r.cpu + ": " + std::to_string(r.threads) + " thread" + (r.threads == 1 ? "" : "s") + ", features " + features_text(r.features) + "\n";
  s += "caches (" + (r.caches.empty() ? std::string("no source names any: the curve decides") : r.caches.front().source) + "):";
  for (const auto& c : r.caches) s += " L" + std::to_string(c.level) + " " + size_qty(c.size_bytes) + (c.shared_by > 1 ? " (shared by " + std::to_string(c.shared_by) + ")" : "");
  s += "\nclock (dependent add chain): " + si(r.clock_hz, "Hz") + " on 1 thread, " + si(r.clock_all_hz, "Hz") + " per thread with all\n";
  for (const auto& sk : r.skipped) s += "skipped: " + sk + "\n";
  for (const auto& w : r.warnings) s += "warning: " + w + "\n";
  s += "\npeaks (best of samples):\n";
  std::vector<std::vector<std::string>> rows = {{"isa", "precision", "chains", "1 thread", "all threads", "FLOP/cycle/core", "chain sweep (1 thread)"}};
  for (const auto& p : r.peaks) {
    if (p.threads != 1) continue;
    const PeakResult* all = nullptr;
    for (const auto& q2 : r.peaks)
      if (q2.isa == p.isa && q2.precision == p.precision && q2.threads == r.threads && q2.fma == p.fma) all = &q2;
    std::string sweep;
    for (const auto& [c, v] : p.chain_sweep) sweep += (sweep.empty() ? "" : " ") + std::to_string(c) + ":" + si(v, "", 3);
    const char* unit = p.precision == "int8" ? "OP/s" : "FLOP/s";
    rows.push_back({p.isa + (p.fma ? "" : " (mul+add)"), p.precision, std::to_string(p.chains), si(p.flops_per_s, unit), all ? si(all->flops_per_s, unit) : "-",
                    num(p.flops_per_s / r.clock_hz), sweep});
  }
  // aligned columns
  std::vector<size_t> w(rows[0].size(), 0);
  for (const auto& row : rows)
    for (size_t i = 0; i < row.size(); ++i) {
      size_t n = 0;
      for (unsigned char c : row[i]) n += (c & 0xC0) != 0x80;
      w[i] = std::max(w[i], n);
    }
  for (const auto& row : rows) {
    std::string line = " ";
    for (size_t i = 0; i < row.size(); ++i) {
      size_t n = 0;
      for (unsigned char c : row[i]) n += (c & 0xC0) != 0x80;
      line += " " + row[i] + (i + 1 < row.size() ? std::string(w[i] - n + 1, ' ') : "");
    }
    s += line + "\n";
  }
  if (!r.plateaus.empty()) {
    s += "\nbandwidth plateaus (a flat run: L1 and DRAM its best point, the levels between its median; * = no flat run, median of the points inside the level):\n";
    for (const auto& lp : r.plateaus) {
      s += "  " + lp.kernel + std::string(6 - std::min<size_t>(6, lp.kernel.size()), ' ') + std::to_string(lp.threads) + " thread" + (lp.threads == 1 ? " " : "s") + ":";
      for (const auto& p : lp.plateaus)
        s += "  " + p.level + " " + si(p.bytes_per_s, "B/s", 3) + (p.from_curve ? "" : "*") +
             (p.size_bytes > 0 ? " (" + size_qty(std::round(p.size_bytes)) + ", " + p.size_source + ")" : "");
      s += "\n";
    }
  }
  char b[64];
  std::snprintf(b, sizeof b, "%.1f s", r.seconds);
  s += std::string("\nprobed in ") + b + (r.quick ? " (--quick)" : "");
  std::string stages;
  for (const auto& [name, secs] : r.stage_seconds) {
    std::snprintf(b, sizeof b, "%s %.1f s", name.c_str(), secs);
    stages += (stages.empty() ? "" : ", ") + std::string(b);
  }
  if (!stages.empty()) s += ": " + stages;
  s += "\n";
  return s;
}

}  // namespace rsim::measure
