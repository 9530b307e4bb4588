#include "engine/model/units.hpp"

#include <cmath>
#include <cstdio>
#include <vector>

#include "engine/model/config.hpp"

namespace rsim {

const char* dim_name(Dim d) {
  switch (d) {
    case Dim::FlopRate: return "a compute rate";
    case Dim::ByteRate: return "a bandwidth";
    case Dim::Frequency: return "a frequency";
    case Dim::TransferRate: return "a transfer rate";
    case Dim::Bytes: return "a size";
    case Dim::Bits: return "a bus width";
    case Dim::Time: return "a time";
  }
  return "?";
}

const char* dim_example(Dim d) {
  switch (d) {
    case Dim::FlopRate: return "29.8 TFLOP/s";
    case Dim::ByteRate: return "760.32 GB/s";
    case Dim::Frequency: return "1.5 GHz";
    case Dim::TransferRate: return "2400 MT/s";
    case Dim::Bytes: return "32 MiB";
    case Dim::Bits: return "384 bit";
    case Dim::Time: return "5 us";
  }
  return "?";
}

namespace {

struct Unit {
  const char* name;
  double factor;
};

// Base units per dimension; prefixes are applied separately.
std::vector<Unit> base_units(Dim d) {
  switch (d) {
    case Dim::FlopRate:
      return {{"FLOP/s", 1}, {"FLOPS", 1}, {"OP/s", 1}, {"OPS", 1}, {"IOP/s", 1}, {"IOPS", 1}};
    case Dim::ByteRate: return {{"B/s", 1}, {"bit/s", 0.125}};
    case Dim::Frequency: return {{"Hz", 1}};
    case Dim::TransferRate: return {{"T/s", 1}, {"bps", 1}, {"bit/s", 1}};
    case Dim::Bytes: return {{"B", 1}};
    case Dim::Bits: return {{"bit", 1}, {"bits", 1}, {"B", 8}};
    case Dim::Time: return {{"s", 1}};
  }
  return {};
}

struct Prefix {
  const char* p;
  double f;
};
const Prefix kPrefixes[] = {{"Ki", 1024.0},        {"Mi", 1048576.0},      {"Gi", 1073741824.0},
                            {"Ti", 1099511627776.0}, {"Pi", 1125899906842624.0},
                            {"k", 1e3},  {"K", 1e3},  {"M", 1e6},   {"G", 1e9},   {"T", 1e12},
                            {"P", 1e15}, {"E", 1e18}, {"m", 1e-3},  {"u", 1e-6},  {"\xC2\xB5", 1e-6},
                            {"n", 1e-9}, {"p", 1e-12}, {"", 1}};

std::string trim(const std::string& s) {
  size_t b = s.find_first_not_of(" \t");
  if (b == std::string::npos) return "";
  size_t e = s.find_last_not_of(" \t");
  return s.substr(b, e - b + 1);
}

}  // namespace

QuantityResult parse_quantity(const std::string& text, Dim dim) {
  std::string t = trim(text);
  // split number and unit: the number is the longest prefix that parses
  size_t i = 0;
  while (i < t.size() && (std::isdigit(static_cast<unsigned char>(t[i])) || t[i] == '.' || t[i] == '-' ||
                          t[i] == '+' || ((t[i] == 'e' || t[i] == 'E') && i > 0 && i + 1 < t.size() &&
                                          (std::isdigit(static_cast<unsigned char>(t[i + 1])) || t[i + 1] == '-' || t[i + 1] == '+'))))
    ++i;
  std::string num = t.substr(0, i);
  std::string unit = trim(t.substr(i));
  auto v = parse_double(num);
  if (num.empty() || !v || !std::isfinite(*v)) {
    return {std::nullopt, "expected " + std::string(dim_name(dim)) + " such as '" + dim_example(dim) + "', not '" + text + "'"};
  }
  if (unit.empty()) {
    return {std::nullopt, "'" + text + "' has no unit; write " + dim_name(dim) + " with its unit, e.g. '" + dim_example(dim) + "'"};
  }
  for (const Unit& u : base_units(dim)) {
    for (const Prefix& p : kPrefixes) {
      std::string full = std::string(p.p) + u.name;
      if (unit == full) {
        double q = *v * p.f * u.factor;
        if (!std::isfinite(q)) return {std::nullopt, "'" + text + "' is beyond the range of a number (about 1.8e308 in base units)"};
        if (q != 0 && std::fabs(q) < 2.2250738585072014e-308)  // subnormal: a quotient by it is infinite
          return {std::nullopt, "'" + text + "' is too small to compute with (below 2.2e-308 in base units)"};
        return {q, ""};
      }
    }
  }
  return {std::nullopt, "unknown unit '" + unit + "' for " + dim_name(dim) + "; write e.g. '" + dim_example(dim) + "'"};
}

std::string quantity_pattern(Dim dim) {
  auto escape = [](const std::string& t) {
    std::string o;
    for (char c : t) {
      if (std::string("\\^$.|?*+()[]{}/").find(c) != std::string::npos) o += '\\';
      o += c;
    }
    return o;
  };
  // appended piece by piece: GCC 12 at -O3 misreports `"|" + std::string` as an overlapping memcpy
  std::string prefixes, units;
  for (const Prefix& p : kPrefixes)
    if (*p.p) {
      if (!prefixes.empty()) prefixes.push_back('|');
      prefixes.append(escape(p.p));
    }
  for (const Unit& u : base_units(dim)) {
    if (!units.empty()) units.push_back('|');
    units.append(escape(u.name));
  }
  std::string re = "^[ \\t]*[-+]?([0-9]+\\.?[0-9]*|\\.[0-9]+)([eE][-+]?[0-9]+)?[ \\t]*(";
  re.append(prefixes).append(")?(").append(units).append(")[ \\t]*$");
  return re;
}

std::string si(double v, const std::string& unit, int digits) {
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  static const struct {
    double f;
    const char* p;
  } kSteps[] = {{1e18, "E"}, {1e15, "P"}, {1e12, "T"}, {1e9, "G"}, {1e6, "M"}, {1e3, "k"},
                {1, ""},     {1e-3, "m"}, {1e-6, "µ"}, {1e-9, "n"}, {1e-12, "p"}};
  double a = std::fabs(v);
  const char* prefix = "";
  double scaled = v;
  if (a != 0) {
    for (const auto& s : kSteps) {
      if (a >= s.f * 0.99995) {
        prefix = s.p;
        scaled = v / s.f;
        break;
      }
      prefix = s.p;
      scaled = v / s.f;
    }
  }
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*g", digits, scaled);
  std::string out = buf;
  std::string suffix = std::string(prefix) + unit;
  if (!suffix.empty()) out += " " + suffix;
  return out;
}

}  // namespace rsim
