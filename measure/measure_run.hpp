// `rsim measure`: every layer of every network of a scenario, evaluated on one platform and run
// for real (layer_timing), side by side. Free of oneDNN.
#pragma once
#include <string>
#include <utility>
#include <vector>

#include "engine/eval/evaluate.hpp"
#include "measure/layer_timing.hpp"
#include "plots/figure.hpp"

namespace rsim::measure {

struct MeasuredRow {
  LayerTiming timing;
  double measured_time_s = 0;       // median; 0 when not run
  double measured_flops_per_s = 0;  // row flops / measured time
  double measured_bytes_per_s = 0;  // row bytes / measured time
  double measured_over_bound = 0;   // measured time / theoretical bound time_s
  double bound_s = 0;               // the theoretical bound time_s (beats_bound: the fastest run below it)
  double channels_per_group = 0;    // of the layer (0: no channel groups); a variable of calibration
};

struct MeasureResult {
  RunResult run;                   // the evaluation on the one platform
  std::vector<MeasuredRow> rows;   // one per row of `run`, in the order results.csv lists them
  std::vector<std::string> findings;  // layers measured below their bound, shapes oneDNN disagrees with
  std::string backend;
  size_t ran = 0, skipped = 0;
};

// Replaces the scenario's platforms by `platform` (a catalog name, or a platform file's path: its
// map is used as an inline platform).
void use_platform(Scenario& s, const std::string& platform);
// Sets the scenario's `settings.memory_level` ("auto": the cache-aware roofline, for warm caches;
// "": memory[0], DRAM in a probed platform, for cold caches).
void set_memory_level(Scenario& s, const std::string& level);

// Evaluates, then times every layer of every point's networks (the networks as written: graph
// passes are not applied). `progress(done, total)` may be empty.
MeasureResult measure_scenario(const Scenario& s, const Catalog& catalog, const RunOptions& opt, const TimingOptions& topt,
                               const std::function<void(size_t, size_t)>& progress);

// "the platform's memory roof looks wrong; probe again: …" when more than a quarter (and at least
// two) of the memory-bound streaming layers that ran took kMemoryRoofSlowdown × their theoretical
// bound or more: a memory level far faster than the machine's, as a mislabelled probe writes; ""
// otherwise. Streaming layers are those of the elementwise, normalization and copy classes with a
// bound of kMemoryRoofMinBound or more: shorter layers are their dispatch's time (measured on a
// 2-vCPU VM with a sound probe: half the memory-bound layers under 5 µs ran 6–7× their L2 bound),
// and pooling runs at a small share of the bandwidth whatever the roof (calibrate.cpp).
// measure_scenario puts it first among the findings.
std::string memory_roof_finding(const MeasureResult& m);
constexpr double kMemoryRoofSlowdown = 3;
constexpr double kMemoryRoofMinBound = 20e-6;

// results.csv's text with the measured columns appended to every line.
std::string measured_csv(const MeasureResult& m, const std::string& results_csv_text);
const std::vector<std::string>& measured_columns();

// The platform's roofline with each layer twice: predicted (filled, at its theoretical attainable
// performance) and measured (hollow, at its measured FLOP/s), same colour, joined by a line.
plots::Figure measured_roofline(const MeasureResult& m, const std::string& title);

// Bound relative slack: measured ≥ bound × (1 − slack) counts as "at or above the bound".
constexpr double kBoundSlack = 0.05;

}  // namespace rsim::measure
