// The serving figures (kind: serving_curve): drawn from the request-level simulation's runs
// (serving/), after they are served, not from the run's tables.
#pragma once
#include <vector>

#include "plots/charts.hpp"
#include "serving/serve.hpp"

namespace rsim::plots {

// A serving.csv column against a sweep variable, a line per platform (× network), the SLO as a
// dashed reference when the column is a TTFT, TPOT or ITL one
std::vector<BuiltFigure> serving_figures(const PlotSpec& spec, const serving::ServingTables& t, const Scenario& s);

}  // namespace rsim::plots
