// results.json read back by a real JSON parser (nlohmann-json, test-only): valid UTF-8 and JSON,
// and its numbers derived by hand.
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "helpers.hpp"

using namespace rsim;
using namespace rsim::test;

TEST_CASE("results.json parses and holds the numbers derived by hand", "[output][json]") {
  // relu over 1×8×4×4 = 128 fp32 elements on the RTX 3080 (29.8 TFLOP/s, 760.32 GB/s)
  Scenario s = parse_scenario("name: j\ndescription: \"ÿ 漢字 — a \\\"quoted\\\" \\\\ tab\\there\"\nsweep: {grid: {w: [4]}}\nplatforms: [rtx3080]\n"
                              "networks:\n  - name: n\n    input: [1, 8, \"${w}\", 4]\n    layers:\n      - {name: r, op: relu}\n",
                              "j.yaml");
  RunResult r = run(s);
  nlohmann::json j = nlohmann::json::parse(results_json(r, RunInfo{RSIM_VERSION, &s}));  // throws on invalid JSON or UTF-8
  CHECK(j["scenario"]["name"] == "j");
  CHECK(j["scenario"]["description"] == "ÿ 漢字 — a \"quoted\" \\ tab\there");
  REQUIRE(j["points"].size() == 1);
  const auto& p = j["points"][0];
  CHECK(p["bindings"]["w"] == "4");
  CHECK(p["settings"]["dtype"] == "fp32");
  CHECK(p["settings"]["memory_model"] == "inputs+weights+outputs");
  CHECK(p["settings"]["flops_per_mac"] == 2);
  REQUIRE(p["layers"].size() == 1);
  const auto& l = p["layers"][0];
  CHECK(l["platform"] == "rtx3080");
  CHECK(l["network"] == "n");
  CHECK(l["layer"] == "r");
  CHECK(l["op"] == "relu");
  CHECK(l["input_shape"] == "1x8x4x4");
  CHECK(l["output_shape"] == "1x8x4x4");
  CHECK(l["macs"] == 0);
  CHECK(l["flops"] == 128);                      // one compare per element
  CHECK(l["bytes"] == 128 * 4 + 128 * 4);         // input + output, 4 bytes each
  CHECK(l["intensity"].get<double>() == Approx(128.0 / 1024));
  CHECK(l["theoretical"]["time_s"].get<double>() == Approx(1024 / 760.32e9));  // memory: 1024 B at 760.32 GB/s
  CHECK(l["theoretical"]["bound"] == "memory");
  const auto& sm = p["summary"][0];
  CHECK(sm["layers"] == 1);
  CHECK(sm["flops"] == 128);
  CHECK(sm["time_s"].get<double>() == Approx(1024 / 760.32e9 + 5e-6));  // plus the RTX 3080's 5 µs launch overhead
}

TEST_CASE("results.json writes a platform in full once, then by reference", "[output][json]") {
  // three points; `slow` is the RTX 3080 with its compute scaled by f (1, 2, 1): its definition at
  // point 2 is the one of point 0, byte for byte. rtx3080 is the same at every point.
  Scenario s = parse_scenario("name: j\nsweep: {grid: {f: [1, 2, 1]}}\n"
                              "platforms: [rtx3080, {base: rtx3080, name: slow, scale: {compute: \"${f}\"}}]\n"
                              "networks:\n  - name: n\n    input: [1, 8, 4, 4]\n    layers:\n      - {name: r, op: relu}\n",
                              "j.yaml");
  RunResult r = run(s);
  nlohmann::json j = nlohmann::json::parse(results_json(r, RunInfo{RSIM_VERSION, &s}));
  REQUIRE(j["points"].size() == 3);
  const auto& p = j["points"];
  // point 0: both in full (a definition has its compute roofs)
  CHECK(p[0]["platforms"][0]["name"] == "rtx3080");
  CHECK(p[0]["platforms"][0].contains("compute"));
  CHECK(p[0]["platforms"][1]["name"] == "slow");
  CHECK(p[0]["platforms"][1].contains("compute"));
  // point 1: rtx3080 by reference; slow in full, with twice the peak: 2 × 29.8 TFLOP/s
  CHECK(p[1]["platforms"][0] == nlohmann::json({{"name", "rtx3080"}, {"as_in_point", 0}}));
  CHECK(p[1]["platforms"][1]["compute"][0]["peak_flops_per_s"].get<double>() == Approx(2 * 29.8e12));
  // point 2: both as in point 0
  CHECK(p[2]["platforms"][0] == nlohmann::json({{"name", "rtx3080"}, {"as_in_point", 0}}));
  CHECK(p[2]["platforms"][1] == nlohmann::json({{"name", "slow"}, {"as_in_point", 0}}));
}
