// Shapes and element types: the vocabulary of operators.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace rsim {

enum class DType { fp64, fp32, tf32, bf16, fp16, fp8, int8, int4 };

// Bytes per element as stored in memory (tf32 is stored as fp32; int4 packs two per byte).
double dtype_bytes(DType t);
const char* dtype_name(DType t);
std::optional<DType> parse_dtype(const std::string& s);
const std::vector<std::string>& dtype_names();

using Shape = std::vector<int64_t>;

double elements(const Shape& s);
std::string shape_str(const Shape& s);  // "1x32x56x56"
void append_shape(std::string& out, const Shape& s);  // appends shape_str(s)

}  // namespace rsim
