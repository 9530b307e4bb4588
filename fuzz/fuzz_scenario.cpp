// The scenario loader: any bytes give a Scenario or a ConfigError, and small sweeps expand.
#include <cstddef>
#include <cstdint>
#include <string>

#include "engine/scenario/scenario.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string text(reinterpret_cast<const char*>(data), size);
  try {
    rsim::Scenario s = rsim::parse_scenario(text, "fuzz.yaml");
    if (rsim::point_count(s.sweep) <= 1000) (void)rsim::expand_sweep(s.sweep);
    rsim::Diags d;
    (void)rsim::read_settings(s.settings, d);
  } catch (const rsim::ConfigError&) {
  }
  return 0;
}
