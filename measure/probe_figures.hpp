// The probe's two figures, in the plots/ figure model: the measured roofline (ERT style: one
// ceiling per ISA × precision, one diagonal per memory level) and bandwidth versus working set
// with the OS cache sizes and the detected plateaus.
#pragma once
#include <string>
#include <utility>
#include <vector>

#include "measure/probe.hpp"
#include "plots/figure.hpp"

namespace rsim::measure {

// {"probe_roofline", figure}, {"probe_bandwidth", figure}
std::vector<std::pair<std::string, plots::Figure>> probe_figures(const ProbeResult& r);

// Labels for bandwidth diagonals drawn on one roofline: levels within 15 % of one another would
// draw labels on top of each other, so they share one label ("L1 195 GB/s, L2 197 GB/s") on the
// first of them and the others get none. `levels`: (name, bytes/s) in drawing order.
std::vector<std::string> diagonal_labels(const std::vector<std::pair<std::string, double>>& levels);

}  // namespace rsim::measure
