// The unit parser: any text in any dimension gives a finite value or a message; values print back.
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>

#include "engine/model/config.hpp"
#include "engine/model/units.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  std::string text(reinterpret_cast<const char*>(data) + 1, size - 1);
  static const rsim::Dim dims[] = {rsim::Dim::FlopRate, rsim::Dim::ByteRate, rsim::Dim::Frequency, rsim::Dim::TransferRate,
                                   rsim::Dim::Bytes,    rsim::Dim::Bits,     rsim::Dim::Time};
  rsim::Dim dim = dims[data[0] % (sizeof dims / sizeof dims[0])];
  rsim::QuantityResult q = rsim::parse_quantity(text, dim);
  if (q.value) {
    if (!std::isfinite(*q.value)) std::abort();  // parsed quantities are always finite
    (void)rsim::si(*q.value, "B/s");
    (void)rsim::format_number(*q.value);
  } else if (q.error.empty()) {
    std::abort();  // a failure always says why
  }
  (void)rsim::parse_double(text);
  (void)rsim::parse_integer(text);
  return 0;
}
