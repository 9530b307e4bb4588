// Units, diagnostics and the YAML reader.
#include <catch2/catch.hpp>

#include "engine/model/config.hpp"
#include "engine/model/diagnostics.hpp"
#include "engine/model/tensor.hpp"
#include "engine/model/units.hpp"

using namespace rsim;

TEST_CASE("quantities parse with SI and binary prefixes", "[units]") {
  CHECK(*parse_quantity("760.32 GB/s", Dim::ByteRate).value == Approx(760.32e9));
  CHECK(*parse_quantity("29.8 TFLOP/s", Dim::FlopRate).value == Approx(29.8e12));
  CHECK(*parse_quantity("238 TOPS", Dim::FlopRate).value == Approx(238e12));
  CHECK(*parse_quantity("1.5 GHz", Dim::Frequency).value == Approx(1.5e9));
  // 32 MiB = 32 · 2^20 = 33,554,432 bytes
  CHECK(*parse_quantity("32 MiB", Dim::Bytes).value == 33554432.0);
  CHECK(*parse_quantity("5 us", Dim::Time).value == Approx(5e-6));
  CHECK(*parse_quantity("384 bit", Dim::Bits).value == 384.0);
  CHECK(*parse_quantity("48 B", Dim::Bits).value == 384.0);  // 48 bytes = 384 bits
  CHECK(*parse_quantity("6255 MiB/s", Dim::ByteRate).value == Approx(6255.0 * 1048576.0));
}

TEST_CASE("quantities without a unit or with an unknown one are rejected", "[units]") {
  auto none = parse_quantity("760", Dim::ByteRate);
  CHECK_FALSE(none.value);
  CHECK(none.error == "'760' has no unit; write a bandwidth with its unit, e.g. '760.32 GB/s'");
  auto bad = parse_quantity("760 GB/sec", Dim::ByteRate);
  CHECK_FALSE(bad.value);
  CHECK(bad.error == "unknown unit 'GB/sec' for a bandwidth; write e.g. '760.32 GB/s'");
  CHECK_FALSE(parse_quantity("1.5 GHz", Dim::ByteRate).value);  // wrong dimension
}

TEST_CASE("SI formatting picks the prefix", "[units]") {
  CHECK(si(29.8e12, "FLOP/s") == "29.8 TFLOP/s");
  CHECK(si(1.0574e-6, "s") == "1.057 µs");
  CHECK(si(0, "B") == "0 B");
  CHECK(si(999.96e3, "B") == "1 MB");
}

TEST_CASE("a diagnostic quotes the line and puts a caret under the column", "[diagnostics]") {
  auto file = SourceFile::from_text("s.yaml", "name: x\nplatforms: [rtx308]\n");
  Diagnostic d{SourceLoc{file, 2, 13}, "unknown platform 'rtx308'", {Note{{}, "did you mean 'rtx3080'?"}}};
  CHECK(format_diagnostic(d) ==
        "s.yaml:2:13: error: unknown platform 'rtx308'\n"
        "platforms: [rtx308]\n"
        "            ^\n"
        "note: did you mean 'rtx3080'?\n");
}

TEST_CASE("did-you-mean suggests only likely typos", "[diagnostics]") {
  CHECK(nearest("bandwith", {"bandwidth", "name", "size"}) == "bandwidth");
  CHECK(nearest("rn", {"run", "validate", "hw", "ops"}) == "run");
  CHECK(nearest("completely_different", {"run", "validate"}).empty());
  CHECK(edit_distance("kitten", "sitting") == 3);
}

TEST_CASE("YAML positions are 1-based and unknown keys get a suggestion", "[config]") {
  CNode n = parse_yaml("a: 1\nbandwith: 2\n", "t.yaml");
  Diags d;
  MapReader m(n, "memory level", d);
  m.get("a");
  m.get("bandwidth");
  m.finish();
  REQUIRE(d.size() == 1);
  CHECK(format_diagnostic(d.list()[0]) ==
        "t.yaml:2:1: error: unknown key 'bandwith' in memory level\n"
        "bandwith: 2\n"
        "^\n"
        "note: did you mean 'bandwidth'?\n");
}

TEST_CASE("YAML syntax errors carry the file position", "[config]") {
  try {
    parse_yaml("a: [1, 2\nb: 3\n", "bad.yaml");
    FAIL("expected an error");
  } catch (const ConfigError& e) {
    std::string msg = e.what();
    CHECK(msg.rfind("bad.yaml:", 0) == 0);
    CHECK(msg.find("error: ") != std::string::npos);
  }
}

TEST_CASE("integers and shapes are written as plain decimal digits", "[config]") {
  auto text = [](long long v) {
    char buf[20];
    return std::string(buf, write_integer(buf, v));
  };
  CHECK(text(0) == "0");
  CHECK(text(9) == "9");
  CHECK(text(10) == "10");
  CHECK(text(-7) == "-7");
  CHECK(text(99999999) == "99999999");                      // 10^8 - 1
  CHECK(text(100000000) == "100000000");                    // 10^8: a 1, then 8 zeros
  CHECK(text(9999999999999999) == "9999999999999999");      // 10^16 - 1: the largest of the digit pairs
  CHECK(text(10000000000000000) == "10000000000000000");    // 10^16: past them
  CHECK(text(-9223372036854775807 - 1) == "-9223372036854775808");  // -2^63: 20 characters
  CHECK(text(9223372036854775807) == "9223372036854775807");        // 2^63 - 1
  CHECK(shape_str({1, 8, 14, 14}) == "1x8x14x14");
  CHECK(shape_str({}) == "scalar");
  CHECK(shape_str({0}) == "0");
  // nine dimensions of 19 digits: more than the 8 × 21 characters written before one append
  CHECK(shape_str(Shape(9, 1000000000000000000)) == "1000000000000000000x1000000000000000000x1000000000000000000x1000000000000000000x"
                                                    "1000000000000000000x1000000000000000000x1000000000000000000x1000000000000000000x"
                                                    "1000000000000000000");
}

TEST_CASE("numbers format shortest and integers without a decimal point", "[config]") {
  CHECK(format_number(28.0) == "28");
  CHECK(format_number(0.1) == "0.1");
  CHECK(format_number(1e20) == "1e+20");
  // integers below 10^15 as plain digits, at each change of digit count (written two at a time,
  // so odd and even counts and a leading single digit each take their own path)
  CHECK(format_number(0.0) == "0");
  CHECK(format_number(-0.0) == "0");
  CHECK(format_number(7.0) == "7");
  CHECK(format_number(9.0) == "9");
  CHECK(format_number(10.0) == "10");
  CHECK(format_number(99.0) == "99");
  CHECK(format_number(100.0) == "100");
  CHECK(format_number(-305.0) == "-305");
  CHECK(format_number(1024.0) == "1024");
  CHECK(format_number(65535.0) == "65535");
  CHECK(format_number(99999999.0) == "99999999");                         // 10^8 - 1: the last of 8 digits
  CHECK(format_number(100000000.0) == "100000000");                       // 10^8: a 1, then 8 zeros
  CHECK(format_number(100000007.0) == "100000007");
  CHECK(format_number(123400005678.0) == "123400005678");                 // zeros inside the last 8 digits
  CHECK(format_number(-10000000000000.0) == "-10000000000000");           // -10^13
  CHECK(format_number(8589934592.0) == "8589934592");                     // 2^33
  CHECK(format_number(999999999999999.0) == "999999999999999");           // 10^15 - 1: the largest
  CHECK(format_number(-999999999999999.0) == "-999999999999999");
  CHECK(format_number(1e15) == "1e+15");                                  // 10^15: shortest form
  CHECK(format_number(123456789012345.5) == "123456789012345.5");         // not an integer
  CHECK(format_number(-2.5) == "-2.5");
  CHECK(format_number(-1.2345678901234567e-308) == "-1.2345678901234567e-308");  // the longest: 24 characters
  CHECK(*parse_integer("28.0") == 28);
  CHECK_FALSE(parse_integer("28.5"));
}
