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

}  // namespace rsim::measure
