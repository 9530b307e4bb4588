// What `rsim probe` writes: the platform file (catalog format), the JSON summary and the text
// report. Pure functions of a ProbeResult.
#pragma once
#include <string>

#include "measure/probe.hpp"

namespace rsim::measure {

// {"clock_hz", "peak_flops_per_s": {"fp32": {"1": …, "all": …}, "fp64": …},
//  "bandwidth_bytes_per_s": {"L1": {"1": …, "all": …}, "L2": …, "L3": …, "DRAM": …}} (read
// bandwidth, SI units), then the details: every peak, every bandwidth sample, the plateaus.
std::string probe_json(const ProbeResult& r);

// A platform file in the catalog's format. Compute roofs: theoretical = cores × measured clock ×
// lanes × FMA pipes (the pipes are the measured FLOP per cycle over lanes × 2, rounded), derated =
// the measured all-thread rate. Memory levels: the measured read plateaus (DRAM first, as
// memory[0]), with the capacities the OS reports. `name` must be the file's stem.
std::string probe_platform_yaml(const ProbeResult& r, const std::string& name);

// The terminal report: clock, peaks (with the chain sweep), skipped ISAs, plateaus.
std::string probe_report(const ProbeResult& r);

// FMA (or multiply+add) pipes per core: measured FLOP per cycle / (lanes × FLOP per lane), rounded
// to the nearest integer and at least 1.
int detected_pipes(double flops_per_s, double clock_hz, double lanes, double flops_per_lane);

}  // namespace rsim::measure
