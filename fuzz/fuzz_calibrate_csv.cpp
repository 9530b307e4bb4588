// calibrate's CSV readers: any bytes give rows (a measured.csv, a measured_networks.csv) or a
// std::runtime_error naming the file, its line and the value; a handful of rows are also fitted.
#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>

#include "measure/calibrate.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string text(reinterpret_cast<const char*>(data), size);
  try {
    switch (rsim::measure::measured_kind(text)) {
      case rsim::measure::CsvKind::Layers: {
        size_t dropped = 0;
        auto rows = rsim::measure::read_measured_rows(text, "measured.csv", &dropped);
        (void)rsim::measure::read_measured_rows(text, "measured.csv");
        if (rows.size() <= 64) (void)rsim::measure::fit_calibration(rows);
        break;
      }
      case rsim::measure::CsvKind::Networks: {
        size_t dropped = 0;
        (void)rsim::measure::read_measured_networks_csv(text, "measured_networks.csv", &dropped);
        (void)rsim::measure::read_measured_networks_csv(text, "measured_networks.csv");
        break;
      }
      case rsim::measure::CsvKind::Unknown:
        break;
    }
  } catch (const std::runtime_error&) {
  }
  return 0;
}
