// The timing backend when rsim is built without oneDNN.
#include "measure/layer_timing.hpp"

namespace rsim::measure {

bool timing_available() { return false; }
std::string timing_backend() {
  return "none: rsim was built without oneDNN; install it (Debian: apt-get install libdnnl-dev, or scripts/install-deps.sh) and "
         "reconfigure with cmake";
}
LayerTiming time_layer(const Layer&, const TimingOptions&) {
  LayerTiming t;
  t.why_not = "built without oneDNN";
  return t;
}

}  // namespace rsim::measure

