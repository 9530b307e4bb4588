// The timing backend when rsim is built without oneDNN.
#include "measure/layer_timing.hpp"

namespace rsim::measure {

bool timing_available() { return false; }
std::string timing_backend() {
  return "rsim was built without oneDNN (configured with -DRSIM_DNNL=OFF, or libdnnl-dev was not found); install it (Debian: "
         "apt-get install libdnnl-dev, or scripts/install-deps.sh) and reconfigure with cmake -DRSIM_DNNL=ON";
}
LayerTiming time_layer(const Layer&, const TimingOptions&) {
  LayerTiming t;
  t.why_not = "built without oneDNN";
  return t;
}

}  // namespace rsim::measure

