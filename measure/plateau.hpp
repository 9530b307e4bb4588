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
};

struct Plateau {
  std::string level;        // "L1", "L2", "L3", "DRAM"
  double from_bytes = 0, to_bytes = 0;  // working sets of the points that make it
  double bytes_per_s = 0;   // median bandwidth of those points
  size_t points = 0;
  bool from_curve = true;   // false: no flat run there, the median of the points inside the level
  double edge_bytes = 0;    // where the curve falls off this plateau (0: not seen)
};

// `curve` sorted by working set (any order is accepted), `levels` sorted by capacity. `tolerance`:
// relative deviation from a run's median that still counts as flat. Returns one plateau per level
// that has points, then DRAM (beyond the last capacity), in order.
std::vector<Plateau> detect_plateaus(std::vector<CurvePoint> curve, const std::vector<LevelSize>& levels, double tolerance = 0.12);

}  // namespace rsim::measure
