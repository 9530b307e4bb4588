// The roofline model for one layer on one roof pair.
#pragma once

namespace rsim {

enum class Bound { Memory, Compute, None };
const char* bound_name(Bound b);

struct RoofPoint {
  double peak_flops_per_s = 0;
  double bandwidth_bytes_per_s = 0;
  double intensity = 0;   // FLOP/byte; +inf when bytes == 0 and flops > 0; 0 when flops == 0
  double attainable_flops_per_s = 0;  // min(peak, bandwidth · intensity)
  double compute_time_s = 0;          // flops / peak
  double memory_time_s = 0;           // bytes / bandwidth
  double time_s = 0;                  // max of the two
  Bound bound = Bound::None;          // None: neither flops nor bytes
};

// I = F/B, P = min(π, β·I), t = max(F/π, B/β). Never NaN for F, B ≥ 0 and π, β > 0.
RoofPoint roofline(double flops, double bytes, double peak_flops_per_s, double bandwidth_bytes_per_s);

}  // namespace rsim
