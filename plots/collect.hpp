// What the figures of a run keep while the run streams: every point's settings, platforms and
// network totals, but per-layer rows only where a chart reads them. A roofline of many layer
// points keeps one row per marker cell (its place to a thousandth of a decade on both axes of
// both roofs, with its platform, network, operator, precisions and bounds): a chart has fewer
// pixels than a 10^6-row sweep has rows, and the rows it leaves out would land on a drawn marker.
#pragma once
#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <unordered_set>
#include <vector>

#include "engine/eval/evaluate.hpp"
#include "plots/charts.hpp"

namespace rsim::plots {

class FigureCollector : public ResultSink {
 public:
  // `specs`: the scenario's plots (empty: the defaults, which read layer rows only in the roofline
  // and at the first point). Up to `thin_after` rows are kept as they come; past that a row is
  // kept only when a chart needs it.
  FigureCollector(RunResult& r, const std::vector<PlotSpec>& specs, size_t thin_after = 20000);
  void start(const RunHeader& h) override;
  void consume(PointResult&& pr, const rsim::Point& p) override;
  size_t total_rows() const { return total_rows_; }
  size_t total_summary() const { return total_summary_; }
  size_t kept_rows() const { return kept_; }

  struct Cell {
    uint32_t platform, network, op;
    uint8_t dtype, compute_dtype, bound, derated_bound;
    int32_t x, y, dx, dy;  // ⌊1000 · log10⌋ of intensity and FLOP/s on each roof; INT32_MIN: not drawable
    double derated_peak, derated_bandwidth;  // an efficiency model's own roofs
    bool operator==(const Cell&) const = default;
  };
  struct CellHash {
    size_t operator()(const Cell& c) const;
  };

 private:
  bool needs_row(const Row& row) const;  // a trend of layer rows reads it
  uint32_t intern(const std::string& s);

  RunResult& r_;
  size_t thin_after_;
  bool keep_all_ = false;                // a chart needs every row (labels: all; colour or marker by point)
  bool layer_roofline_ = false;          // a roofline draws layer points (else past the first point only row trends read rows)
  std::vector<PlotSpec> row_trends_;     // trends of layer rows at every point (layer, output_size, out_channels)
  std::set<size_t> whole_points_;        // points a layers chart or a trend over layers reads whole
  std::unordered_set<Cell, CellHash> cells_;
  std::map<std::string, uint32_t> names_;
  std::map<std::pair<std::string, std::string>, size_t> thinned_at_;  // (platform, network) → index in r_.thinned
  size_t kept_ = 0, total_rows_ = 0, total_summary_ = 0;
};

}  // namespace rsim::plots
