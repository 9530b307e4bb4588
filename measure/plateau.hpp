// Plateau detection on a bandwidth-versus-working-set curve: a pure function, so that it can be
// tested on synthetic curves. The curve is split into runs of nearly equal bandwidth; each run is
// named after the memory level whose capacity (as the OS reports it) holds its working sets.
#pragma once
#include <string>
#include <vector>

namespace rsim::measure {

struct CurvePoint {
  double working_set_bytes = 0;
  double bytes_per_s = 0;
};

struct LevelSize {
  std::string name;         // "L1", "L2", "L3"
  double capacity_bytes = 0;  // what the working set may reach to stay in this level
  std::string source;       // where the size comes from (sysfs, cpuid, sysconf; "" in older callers)
};

struct Plateau {
  std::string level;        // "L1", "L2", "L3", "DRAM"
  double from_bytes = 0, to_bytes = 0;  // working sets of the points that make it
  double bytes_per_s = 0;   // median bandwidth of those points (detect_levels: see there)
  size_t points = 0;
  bool from_curve = true;   // false: no flat run there, the median of the points inside the level
  double edge_bytes = 0;    // where the curve falls off this plateau (0: not seen)
  double size_bytes = 0;    // detect_levels: the level's size (a confirmed hint's, else the curve's); 0 for DRAM
  std::string size_source;  // detect_levels: sysfs, cpuid, sysconf (a hint the curve confirms) or curve
};

// `curve` sorted by working set (any order is accepted), `levels` sorted by capacity. `tolerance`:
// relative deviation from a run's median that still counts as flat. Returns one plateau per level
// that has points, then DRAM (beyond the last capacity), in order.
std::vector<Plateau> detect_plateaus(std::vector<CurvePoint> curve, const std::vector<LevelSize>& levels, double tolerance = 0.12);

// The memory levels as the curve shows them, with the sizes the OS or CPUID report as hints only:
// - the flat runs of the curve (each point within the tolerance of the median of its run's first
//   three), in order of working set, are the levels;
// - a level's bandwidth: L1's and DRAM's the best point of their run, a middle level's the median
//   of its run (the probe's reference: L1 the best over ≤ 32 KiB, L2 the median over 160–640 KiB,
//   L3 the median over 3–12 MiB, DRAM the best over 256–512 MiB; bench/bench_probe.cpp);
// - DRAM is the curve at working sets of at least max(256 MiB, 4 × the largest cache the curve
//   shows): a run below that is a cache, whatever bandwidth it has (a VM's L3 is no DRAM);
// - the runs faster than DRAM below it are L1, L2, L3 … in order (more runs than names: of the two
//   adjacent ones of closest bandwidth, one less than half as long as the other is a slope and is
//   dropped, else they merge, keeping the first one's bandwidth);
// - a hint of a level is confirmed when the curve leaves that level's run between half the hint
//   and twice it: the level takes the hint's size and source; otherwise the curve's size (the
//   largest working set still on the run) and source "curve", with a warning naming both figures
//   ("cpuid says L3 = 508 MiB; the curve leaves its last cache plateau at 32 MiB").
// A curve that never reaches DRAM's working sets gives no DRAM plateau, and says so.
struct LevelDetection {
  std::vector<Plateau> plateaus;      // caches from the smallest, then DRAM
  std::vector<std::string> warnings;  // a hint the curve contradicts, a level it does not show, no DRAM
};
constexpr double kDramMinBytes = 256.0 * 1024 * 1024;
LevelDetection detect_levels(std::vector<CurvePoint> curve, const std::vector<LevelSize>& hints, double tolerance = 0.12);

}  // namespace rsim::measure
