// Rendering every figure of a run to files, and the report page that embeds them.
#pragma once
#include <string>
#include <vector>

#include "plots/charts.hpp"

namespace rsim::serving {
struct ServingTables;
}

namespace rsim::plots {

struct OutputFile {
  std::string name;   // file name inside the output folder
  std::string bytes;  // content
};

struct RenderOptions {
  std::vector<Format> formats = {Format::PNG, Format::SVG};  // unless a plot sets its own
  double dpi = 0;  // 0: each plot's own (default 150)
};

// Builds, lays out and renders every figure: the image files plus one `<name>.csv` of plot data each.
// `figures` receives the file stems in order (for the report).
// With `failures`, a figure that cannot be built or drawn (a surface too large, a font missing) is
// left out and its plot's name and the reason are added to `failures`; without it, it throws.
// `serving`: the scenario's served runs, which its serving_curve plots draw (none drawn without).
// `svgs`: each drawn figure's name and an SVG of it whose points and bars carry tooltips (report.html).
std::vector<OutputFile> render_figures(const RunResult& r, const Scenario& s, const std::vector<PlotSpec>& specs, const RenderOptions& opt,
                                       std::vector<std::pair<std::string, std::vector<Format>>>& figures,
                                       std::vector<std::string>* failures = nullptr, const serving::ServingTables* serving = nullptr,
                                       std::vector<std::pair<std::string, std::string>>* svgs = nullptr);

// report.md: scenario, conventions, network totals per platform, every figure embedded.
std::string report_markdown(const RunResult& r, const Scenario& s, const std::vector<std::pair<std::string, std::vector<Format>>>& figures);

// report.html (report_html.cpp): one self-contained page — network totals and per-op tables that
// sort, the serving table when served, and every figure of `svgs` (render_figures') inline, each
// point and bar with its tooltip; no network access, a small script of our own.
std::string report_html(const RunResult& r, const Scenario& s, const std::vector<std::pair<std::string, std::string>>& svgs,
                        const serving::ServingTables* serving = nullptr);

}  // namespace rsim::plots
