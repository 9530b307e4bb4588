// Physical quantities written by users ("760.32 GB/s", "29.8 TFLOP/s", "1.5 GHz", "32 MiB").
// Parsed once into SI doubles; unknown units are rejected.
#pragma once
#include <optional>
#include <string>

namespace rsim {

enum class Dim {
  FlopRate,      // FLOP/s (also OP/s, TOPS, FLOPS)         -> FLOP/s
  ByteRate,      // B/s                                     -> byte/s
  Frequency,     // Hz                                      -> Hz
  TransferRate,  // T/s, MT/s, GT/s, bps (per pin)          -> transfers/s
  Bytes,         // B, KiB, MB ...                          -> bytes
  Bits,          // bit, B (x8)                             -> bits
  Time,          // s, ms, us, ns                           -> seconds
};

const char* dim_name(Dim d);
const char* dim_example(Dim d);  // e.g. "760.32 GB/s"

struct QuantityResult {
  std::optional<double> value;  // SI value when parsed
  std::string error;            // why not, when not
};

QuantityResult parse_quantity(const std::string& text, Dim dim);
// A regular expression (ECMA 262, for JSON Schema) matching exactly the texts parse_quantity reads
// for `dim`: a number, optional spaces, an optional prefix and a unit of the dimension.
std::string quantity_pattern(Dim dim);

// "29.8 T" style with an SI prefix and `unit` appended; 4 significant digits.
std::string si(double v, const std::string& unit = "", int digits = 4);

}  // namespace rsim
