// What platform.cpp and platform_read.cpp share (not for other rooms): how platform figures are written.
#pragma once
#include <cstdio>
#include <string>

#include "engine/hardware/platform.hpp"
#include "engine/model/units.hpp"

namespace rsim::platform_detail {

inline // Platform figures keep 6 significant digits: "760.32 GB/s", not "760.3 GB/s".
std::string si6(double v, const std::string& unit) { return si(v, unit, 6); }

// Integer roofs count operations, not floating-point ones.
inline const char* rate_unit(const ComputeRoof& r) {
  for (DType t : r.dtypes)
    if (t != DType::int8 && t != DType::int4) return "FLOP/s";
  return "OP/s";
}

inline std::string num(double v) {
  // compact but exact enough for derivations: up to 6 significant digits
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.6g", v);
  return buf;
}

}  // namespace rsim::platform_detail
