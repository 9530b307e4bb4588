// What user scripts may add to an evaluation, as the engine sees it: an efficiency model and
// derived metrics per layer row. scripting/ implements this with Lua; the engine never includes Lua.
#pragma once
#include <string>
#include <vector>

namespace rsim {

struct Layer;
struct Platform;
struct Row;

struct Efficiency {
  double compute = 1;    // fraction of the (derated) peak this layer reaches
  double bandwidth = 1;  // fraction of the (derated) bandwidth
};

class ScriptHooks {
 public:
  virtual ~ScriptHooks() = default;
  virtual bool has_efficiency() const = 0;
  // Called with the row filled up to its theoretical roofline. Throws ConfigError.
  virtual Efficiency efficiency(const Row& row, const Layer& layer, const Platform& platform) = 0;
  // Names of the derived metrics, in column order (the same for every row).
  virtual const std::vector<std::string>& metric_names() const = 0;
  // One value per metric name for a finished row. Throws ConfigError.
  virtual std::vector<double> metrics(const Row& row, const Layer& layer) = 0;
};

}  // namespace rsim
