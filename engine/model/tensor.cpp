#include "engine/model/tensor.hpp"

#include "engine/model/config.hpp"

#include <charconv>

namespace rsim {

double dtype_bytes(DType t) {
  switch (t) {
    case DType::fp64: return 8;
    case DType::fp32: return 4;
    case DType::tf32: return 4;
    case DType::bf16: return 2;
    case DType::fp16: return 2;
    case DType::fp8: return 1;
    case DType::int8: return 1;
    case DType::int4: return 0.5;
  }
  return 4;
}

const char* dtype_name(DType t) {
  switch (t) {
    case DType::fp64: return "fp64";
    case DType::fp32: return "fp32";
    case DType::tf32: return "tf32";
    case DType::bf16: return "bf16";
    case DType::fp16: return "fp16";
    case DType::fp8: return "fp8";
    case DType::int8: return "int8";
    case DType::int4: return "int4";
  }
  return "?";
}

const std::vector<std::string>& dtype_names() {
  static const std::vector<std::string> names = {"fp64", "fp32", "tf32", "bf16", "fp16", "fp8", "int8", "int4"};
  return names;
}

std::optional<DType> parse_dtype(const std::string& s) {
  static const DType all[] = {DType::fp64, DType::fp32, DType::tf32, DType::bf16,
                              DType::fp16, DType::fp8,  DType::int8, DType::int4};
  for (DType t : all)
    if (s == dtype_name(t)) return t;
  // PyTorch's spellings (torch.float16, a config's torch_dtype), read as ours
  static const std::pair<const char*, DType> torch[] = {{"float64", DType::fp64}, {"float32", DType::fp32}, {"float16", DType::fp16},
                                                        {"half", DType::fp16},   {"bfloat16", DType::bf16}, {"float", DType::fp32},
                                                        {"float8_e4m3fn", DType::fp8}, {"int8", DType::int8}};
  for (const auto& [name, t] : torch)
    if (s == name) return t;
  return std::nullopt;
}

bool dtype_needs_scales(DType t) { return t == DType::int8 || t == DType::int4 || t == DType::fp8; }

double elements(const Shape& s) {
  double n = 1;
  for (auto d : s) n *= static_cast<double>(d);
  return n;
}

void append_shape(std::string& out, const Shape& s) {
  if (s.empty()) {
    out += "scalar";
    return;
  }
  // the text in a buffer, then one append (a shape is written for every layer row)
  char buf[8 * 21];
  size_t i = 0;
  while (i < s.size()) {
    char* p = buf;
    for (; i < s.size() && p + 21 <= buf + sizeof buf; ++i) {
      if (i) *p++ = 'x';
      p = write_integer(p, s[i]);
    }
    out.append(buf, p);
  }
}

void append_shapes(std::string& out, const std::vector<Shape>& shapes) {
  for (size_t k = 0; k < shapes.size(); ++k) {
    if (k) out += ';';
    append_shape(out, shapes[k]);
  }
}

std::string shape_str(const Shape& s) {
  if (s.empty()) return "scalar";
  std::string out;
  append_shape(out, s);
  return out;
}

}  // namespace rsim
