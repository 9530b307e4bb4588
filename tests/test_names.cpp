// Names and numbers: anything that becomes a path or a JSON string is checked at load, and a NaN
// or an infinity anywhere in a result is a located error, never a `null` in results.json.
#include <catch2/catch.hpp>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "app/cli.hpp"

#include "engine/model/names.hpp"
#include "helpers.hpp"

using namespace rsim;
using namespace rsim::test;

namespace {

std::string first_line(const std::string& s) { return s.substr(0, s.find('\n')); }

// A one-layer scenario on an inline platform; `net` and `layer` are spliced in as written.
std::string scenario(const std::string& platform_lines, const std::string& net_name = "n", const std::string& layer = "{name: x, op: relu}",
                     const std::string& input = "[1, 8]") {
  return "name: t\nplatforms:\n" + platform_lines + "networks:\n  - name: " + net_name + "\n    input: " + input + "\n    layers:\n      - " + layer + "\n";
}
const std::string kPlatform = "  - name: p\n    compute: [{name: fp32, dtypes: [fp32], peak: 1 TFLOP/s}]\n    memory: [{name: DRAM, bandwidth: 100 GB/s}]\n";

std::string load_error(const std::string& yaml) {
  return first_line(error_of([&] { run_text(yaml); }));
}

}  // namespace

TEST_CASE("UTF-8: well-formed text passes, anything else is found", "[names]") {
  CHECK(valid_utf8("conv1 ÿ 漢字 😀"));
  CHECK_FALSE(valid_utf8("a\xff"));
  CHECK_FALSE(valid_utf8("\xc0\xaf"));          // an overlong '/'
  CHECK_FALSE(valid_utf8("\xed\xa0\x80"));      // a surrogate
  CHECK_FALSE(valid_utf8("\xf4\x90\x80\x80"));  // above U+10FFFF
  CHECK_FALSE(valid_utf8("\xe6\xbc"));          // cut short
  CHECK(printable("a\xff\x01") == "a\\xFF\\x01");
  CHECK(path_name_problem("..") == "is '..', which names a folder");
  CHECK(path_name_problem("a/b") == "contains a path separator");
  CHECK(path_name_problem(std::string("a\0b", 3)) == "contains a NUL byte");
  CHECK(path_name_problem("resnet-50_v1.5") == "");
}

TEST_CASE("names: invalid UTF-8 and control characters are located errors at load", "[names][errors]") {
  // line 5 is `  - name: ...` (name, platforms, 3 platform lines, networks, ...)
  CHECK(load_error(scenario(kPlatform, "n\xff")) == "t.yaml:7:11: error: this text is not valid UTF-8 (byte 2): YAML files are UTF-8 text");
  CHECK(load_error(scenario(kPlatform, "\"n\\x01\"")) == "t.yaml:7:11: error: this text contains a control character (byte 2)");
  CHECK(load_error(scenario(kPlatform, "n", "{name: \"x\\0y\", op: relu}")) == "t.yaml:10:16: error: this text contains a NUL byte");
  std::string sweep = "name: t\nsweep: {grid: {v: [a, \"b\xfe\"]}}\nplatforms: [rtx3080]\nnetworks: [{name: n, input: [1, 8], layers: [{op: relu}]}]\n";
  CHECK(first_line(error_of([&] { parse_scenario(sweep, "t.yaml"); })) == "t.yaml:2:23: error: this text is not valid UTF-8 (byte 2): YAML files are UTF-8 text");
}

TEST_CASE("names: a scenario name is a folder name, never '.' or '..'", "[names][errors]") {
  for (const char* n : {"'..'", "'.'", "a/b"}) {
    INFO(n);
    std::string yaml = std::string("name: ") + n + "\nplatforms: [rtx3080]\nnetworks: [{name: n, input: [1, 8], layers: [{op: relu}]}]\n";
    std::string shown = n[0] == '\'' ? std::string(n).substr(1, std::string(n).size() - 2) : n;
    CHECK(first_line(error_of([&] { parse_scenario(yaml, "t.yaml"); })) ==
          "t.yaml:1:7: error: scenario name '" + shown + "' is used as a folder name: use letters, digits, '-', '_' and '.' (not only dots)");
  }
}

TEST_CASE("names: --set values are text like the YAML's", "[names][errors]") {
  Scenario s = parse_scenario("name: t\nsweep: {grid: {v: [1, 2]}}\nplatforms: [rtx3080]\nnetworks: [{name: n, input: [1, 8], layers: [{op: relu}]}]\n", "t.yaml");
  CHECK(error_of([&] { apply_overrides(s, {{"v", "\xff"}}); }) == "rsim: error: --set v=\\xFF: the value is not valid UTF-8 (byte 1)\n");
}

TEST_CASE("numbers: what would be infinite or NaN is a located error", "[names][numbers][errors]") {
  // bandwidth 1e300 GB/s = 1e309 B/s: beyond a double
  CHECK(load_error(scenario("  - name: p\n    compute: [{name: fp32, dtypes: [fp32], peak: 1 TFLOP/s}]\n    memory: [{name: DRAM, bandwidth: 1e300 GB/s}]\n")) ==
        "t.yaml:5:38: error: bandwidth: '1e300 GB/s' is beyond the range of a number (about 1.8e308 in base units)");
  // a subnormal peak: any FLOP count over it is infinite
  CHECK(load_error(scenario("  - name: p\n    compute: [{name: fp32, dtypes: [fp32], peak: 1e-320 FLOP/s}]\n    memory: [{name: DRAM, bandwidth: 1 GB/s}]\n")) ==
        "t.yaml:4:50: error: peak: '1e-320 FLOP/s' is too small to compute with (below 2.2e-308 in base units)");
  // a clock of 1e300 GHz = 1e309 Hz: beyond a double
  CHECK(load_error(scenario("  - name: p\n    compute: [{name: fp32, dtypes: [fp32], derive: {units: 1e300, clock: 1e300 GHz, flops_per_cycle: 1}}]\n"
                            "    memory: [{name: DRAM, bandwidth: 1 GB/s}]\n")) ==
        "t.yaml:4:74: error: clock: '1e300 GHz' is beyond the range of a number (about 1.8e308 in base units)");
  // a derived peak of 1e300 units × 1e300 Hz × 1 FLOP/cycle = 1e600 FLOP/s
  CHECK(load_error(scenario("  - name: p\n    compute: [{name: fp32, dtypes: [fp32], derive: {units: 1e300, clock: 1e300 Hz, flops_per_cycle: 1}}]\n"
                            "    memory: [{name: DRAM, bandwidth: 1 GB/s}]\n")) == "t.yaml:10:9: error: layer 'x' on 'p': peak is infinite");
  // a derating of 5e-324 (the smallest subnormal): 1e12 × 5e-324 ≈ 5e-312 FLOP/s, so 8 FLOPs take 1.6e312 s
  // the whole message: the layer, the platform, the inputs and roofs that produced it, the point
  std::string derated = "name: t\nsweep: {grid: {c: [5e-324]}}\nplatforms:\n  - name: p\n    derate: {compute_efficiency: \"${c}\"}\n"
                        "    compute: [{name: fp32, dtypes: [fp32], peak: 1 TFLOP/s}]\n    memory: [{name: DRAM, bandwidth: 1 GB/s}]\n"
                        "networks:\n  - name: n\n    input: [1, 8]\n    layers:\n      - {name: x, op: relu}\n";
  CHECK(error_of([&] { run_text(derated); }) ==
        "t.yaml:12:9: error: layer 'x' on 'p': derated compute time is infinite\n"
        "      - {name: x, op: relu}\n"
        "        ^\n"
        // 5e-324 reads as the smallest subnormal, 2^-1074 = 4.9406564584e-324; × 1e12 = 4.94065645841e-312
        "note: inputs 1x8 (fp32); FLOPs 8, bytes 64; peak 1000000000000 FLOP/s (derated 4.94065645841e-312), "
        "bandwidth 1000000000 B/s (derated 1000000000)\n"
        "t.yaml:4:5: note: platform used here\n"
        "note: at sweep point 0: c=5e-324\n");
  // 36 dimensions of 10^9: 10^324 elements
  CHECK(load_error(scenario(kPlatform, "n", "{name: x, op: relu}",
                            "[1000000000, 1000000000, 1000000000, 1000000000, 1000000000, 1000000000, 1000000000, 1000000000, 1000000000, "
                            "1000000000, 1000000000, 1000000000, 1000000000, 1000000000, 1000000000, 1000000000, 1000000000, 1000000000, "
                            "1000000000, 1000000000, 1000000000, 1000000000, 1000000000, 1000000000, 1000000000, 1000000000, 1000000000, "
                            "1000000000, 1000000000, 1000000000, 1000000000, 1000000000, 1000000000, 1000000000, 1000000000, 1000000000]")) ==
        "t.yaml:10:9: error: layer 'x' on 'p': FLOPs is infinite");
}

TEST_CASE("numbers: a script's efficiency must be a usable fraction", "[names][numbers][errors]") {
  std::string yaml = scenario(kPlatform) + "lua: |\n  rsim.efficiency(function(layer, platform) return {compute = 5e-324} end)\n";
  CHECK(load_error(yaml) ==
        "t.yaml:10:9: error: t.yaml:12: efficiency model for layer 'x' on 'p': 'compute' must be a fraction in [1e-12, 1], got 5e-324");
}

TEST_CASE("names: a plot's name is its files' name: no collision with a table or another plot", "[names][errors][plots]") {
  namespace fs = std::filesystem;
  fs::path y = fs::temp_directory_path() / ("rsim_plotnames_" + std::to_string(::getpid()) + ".yaml");
  auto validate = [&](const std::string& plots) {
    std::ofstream(y) << "name: p\nplatforms: [rtx3080]\nnetworks:\n  - {name: n, input: [1, 8], layers: [{op: relu}]}\nplots:\n" << plots;
    std::ostringstream o, e;
    int code = rsim_main({"validate", y.string()}, o, e);
    std::string err = e.str();
    return std::to_string(code) + " " + err.substr(0, err.find('\n'));
  };
  std::string f = y.string();
  CHECK(validate("  - {kind: roofline, name: results}\n") ==
        "1 " + f + ":6:28: error: plot name 'results' would overwrite the run's results.csv; pick another");
  CHECK(validate("  - {kind: roofline, name: report}\n") == "1 " + f + ":6:28: error: plot name 'report' would overwrite the run's report.md; pick another");
  CHECK(validate("  - {kind: roofline, name: a}\n  - {kind: layers, name: a}\n") ==
        "1 " + f + ":7:26: error: two plots are named 'a': their files would overwrite each other");
  CHECK(validate("  - {kind: roofline, name: ../x}\n") ==
        "1 " + f + ":6:28: error: plot name '../x' names the figure's files: use letters, digits, '-', '_' and '.'");
  CHECK(validate("  - {kind: roofline, name: roof}\n  - {kind: layers, name: lay}\n") == "0 ");
  fs::remove(y);
}
