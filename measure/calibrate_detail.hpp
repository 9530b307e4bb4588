// What the files of rsim calibrate share (measure/calibrate*.cpp; not an API): the op classes, a
// number read from a CSV cell, a quantile, and the fit of one rule per class and roof.
#pragma once
#include <string>
#include <utility>
#include <vector>

#include "measure/calibrate.hpp"

namespace rsim::measure::detail {

// The op classes a calibration fits, each with its operators (calibrate.cpp)
const std::vector<std::pair<std::string, std::vector<std::string>>>& classes();
// A CSV cell as a number (0 when empty or not a number)
double to_d(const std::string& s);
// The q-quantile of v as the order statistic at ⌊q · n⌋ (0 when empty)
double quantile(std::vector<double> v, double q);

// One rule per class and compute roof fitted on its samples (calibrate_fit.cpp; gpu: laws that
// never lose efficiency with size, and the compute law's occupancy factor)
CalibrationRule fit_rule(const std::string& cls, const std::string& roof, const std::vector<const Sample*>& samples, bool gpu = false);
// The samples by class and compute roof, in order of first appearance
std::vector<std::pair<std::pair<std::string, std::string>, std::vector<const Sample*>>> by_class_and_roof(const std::vector<Sample>& samples);
// The rule of an op's class on a roof (a roofless rule of its class else); nullptr when none
const CalibrationRule* rule_for(const std::vector<CalibrationRule>& rules, const std::string& op, const std::string& roof);

}  // namespace rsim::measure::detail
