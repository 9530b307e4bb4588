// results.json read back by a real JSON parser (nlohmann-json, test-only): valid UTF-8 and JSON,
// and its numbers derived by hand.
#include <algorithm>
#include <catch2/catch.hpp>
#include <functional>
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

TEST_CASE("layers doing the same work print the same numbers, each under its own names", "[output][json]") {
  // three relus on 1×8×4×4 (the same work: the second and third are the first's twins) and a
  // fourth on the 1×8×4×2 a slice leaves: each row's own names, the numbers derived by hand
  Scenario s = parse_scenario("name: j\nplatforms: [rtx3080]\nnetworks:\n  - name: n\n    input: [1, 8, 4, 4]\n    layers:\n"
                              "      - {name: r1, op: relu}\n      - {name: r2, op: relu}\n      - {name: r3, op: relu}\n"
                              "      - {name: s, op: slice, axis: 3, start: 0, end: 2}\n      - {name: r4, op: relu}\n",
                              "j.yaml");
  RunResult r = run(s);
  REQUIRE(r.results.size() == 1);
  const std::vector<Row>& rows = r.results[0].rows;
  REQUIRE(rows.size() == 5);
  CHECK(rows[1].twin == 0);  // the hints the writers check
  CHECK(rows[2].twin == 0);
  CHECK(rows[4].twin == -1);
  nlohmann::json j = nlohmann::json::parse(results_json(r, RunInfo{RSIM_VERSION, &s}));
  const auto& ls = j["points"][0]["layers"];
  REQUIRE(ls.size() == 5);
  for (int i : {0, 1, 2}) {
    INFO("layer " << i);
    CHECK(ls[i]["layer"] == "r" + std::to_string(i + 1));
    CHECK(ls[i]["kernel"] == "r" + std::to_string(i + 1));
    CHECK(ls[i]["flops"] == 128);                 // one compare per element of 1·8·4·4
    CHECK(ls[i]["bytes"] == 128 * 4 + 128 * 4);   // input + output, 4 bytes each
    CHECK(ls[i]["theoretical"]["time_s"].get<double>() == Approx(1024 / 760.32e9));
  }
  CHECK(ls[4]["layer"] == "r4");
  CHECK(ls[4]["flops"] == 64);  // 1·8·4·2
  CHECK(ls[4]["bytes"] == 64 * 4 + 64 * 4);
  // results.csv: the twins' lines are the first's with the names changed (layer and kernel)
  std::string csv = results_csv(r, s);
  std::vector<std::string> lines;
  for (size_t a = 0, b; (b = csv.find('\n', a)) != std::string::npos; a = b + 1) lines.push_back(csv.substr(a, b - a));
  REQUIRE(lines.size() == 6);  // header + 5 rows
  auto renamed = [](std::string line, const std::string& from, const std::string& to) {
    for (size_t at; (at = line.find("," + from + ",")) != std::string::npos;) line.replace(at, from.size() + 2, "," + to + ",");
    return line;
  };
  CHECK(lines[2] == renamed(lines[1], "r1", "r2"));
  CHECK(lines[3] == renamed(lines[1], "r1", "r3"));
  CHECK(lines[1].find(",rtx3080,n,r1,relu,fp32,fp32,,,1x8x4x4,1x8x4x4,0,128,0,128,") != std::string::npos);
}

TEST_CASE("rows of two platforms and two networks in one point each print their own names and numbers", "[output][json]") {
  // platforms: the RTX 3080 (760.32 GB/s) and `half`, the same with half its bandwidth; networks a
  // (two relus on 1×8×4×4: the second the first's twin) and b (one relu). Rows come platform by
  // platform, each platform's networks in order. Every relu moves 128 × 4 B in + 128 × 4 B out =
  // 1024 B: memory-bound, 1024 / 760.32e9 s on the RTX 3080, twice that on `half`.
  Scenario s = parse_scenario("name: j\nplatforms: [rtx3080, {base: rtx3080, name: half, scale: {bandwidth: 0.5}}]\nnetworks:\n"
                              "  - name: a\n    input: [1, 8, 4, 4]\n    layers:\n      - {name: a1, op: relu}\n      - {name: a2, op: relu}\n"
                              "  - name: b\n    input: [1, 8, 4, 4]\n    layers:\n      - {name: b1, op: relu}\n",
                              "j.yaml");
  RunResult r = run(s);
  const double t = 1024 / 760.32e9;
  struct Expect {
    const char *platform, *network, *layer;
    double time;
  };
  const Expect rows[] = {{"rtx3080", "a", "a1", t}, {"rtx3080", "a", "a2", t}, {"rtx3080", "b", "b1", t},
                         {"half", "a", "a1", 2 * t},   {"half", "a", "a2", 2 * t},   {"half", "b", "b1", 2 * t}};
  nlohmann::json j = nlohmann::json::parse(results_json(r, RunInfo{RSIM_VERSION, &s}));
  const auto& layers = j["points"][0]["layers"];
  REQUIRE(layers.size() == 6);
  // results.csv: point, platform, network, layer, … (the header names the columns)
  std::string csv = results_csv(r, s);
  std::vector<std::vector<std::string>> cells;
  for (size_t at = 0; at < csv.size();) {
    size_t end = csv.find('\n', at);
    std::vector<std::string> row;
    for (size_t c = at; c <= end;) {
      size_t comma = std::min(csv.find(',', c), end);
      row.push_back(csv.substr(c, comma - c));
      c = comma + 1;
    }
    cells.push_back(row);
    at = end + 1;
  }
  REQUIRE(cells.size() == 7);
  const auto& head = cells[0];
  auto col = [&](const std::string& name) { return static_cast<size_t>(std::find(head.begin(), head.end(), name) - head.begin()); };
  for (size_t i = 0; i < 6; ++i) {
    INFO("row " << i);
    CHECK(layers[i]["platform"] == rows[i].platform);
    CHECK(layers[i]["network"] == rows[i].network);
    CHECK(layers[i]["layer"] == rows[i].layer);
    CHECK(layers[i]["theoretical"]["time_s"].get<double>() == Approx(rows[i].time));
    CHECK(cells[i + 1][col("platform")] == rows[i].platform);
    CHECK(cells[i + 1][col("network")] == rows[i].network);
    CHECK(cells[i + 1][col("layer")] == rows[i].layer);
    CHECK(std::stod(cells[i + 1][col("time_s")]) == Approx(rows[i].time));
  }
}

TEST_CASE("a wrong twin hint costs a compare, never a wrong number", "[output][json]") {
  // Row::twin is a hint: rows whose printed fields differ in any one field print their own text
  // whatever the hint says. Each case changes one field of a copy of row 0 hinted as its twin;
  // the three writers must print exactly what they print without the hint.
  Row base;
  base.platform = "p";
  base.network = "n";
  base.layer = base.kernel = "a";
  base.op = "conv2d";
  base.has_weights = true;
  base.input_shapes = base.output_shapes = "1x8x4x4";
  base.cost.macs = 100, base.cost.flops = 200, base.cost.macs_executed = 90, base.cost.flops_executed = 180, base.cost.params = 10;
  base.cost.weight_bytes = 40, base.cost.input_bytes = {512}, base.cost.output_bytes = {512};
  base.bytes = 1064;
  base.compute_roof = "c";
  base.memory_level = "m";
  base.theoretical = base.derated = roofline(200, 1064, 1e12, 1e11);
  std::vector<std::pair<const char*, std::function<void(Row&)>>> changes = {
      {"none", [](Row&) {}},
      {"platform", [](Row& x) { x.platform = "q"; }},
      {"network", [](Row& x) { x.network = "o"; }},
      {"op", [](Row& x) { x.op = "linear"; }},
      {"dtype", [](Row& x) { x.dtype = DType::fp16; }},
      {"compute_dtype", [](Row& x) { x.compute_dtype = DType::fp16; }},
      {"weights_dtype", [](Row& x) { x.weights_dtype = DType::int8; }},
      {"touches_kv", [](Row& x) { x.touches_kv = true; }},
      {"input_shapes", [](Row& x) { x.input_shapes = "1x8x4x5"; }},
      {"output_shapes", [](Row& x) { x.output_shapes = "1x8x4x5"; }},
      {"macs", [](Row& x) { x.cost.macs = 101; }},
      {"flops", [](Row& x) { x.cost.flops = 201; }},
      {"macs_executed", [](Row& x) { x.cost.macs_executed = 91; }},
      {"flops_executed", [](Row& x) { x.cost.flops_executed = 181; }},
      {"params", [](Row& x) { x.cost.params = 11; }},
      {"weight_bytes", [](Row& x) { x.cost.weight_bytes = 41; }},
      {"input_bytes", [](Row& x) { x.cost.input_bytes = {513}; }},
      {"output_bytes", [](Row& x) { x.cost.output_bytes = {512, 1}; }},
      {"scale_bytes", [](Row& x) { x.cost.scale_bytes = 1; }},
      {"kv_read_bytes", [](Row& x) { x.cost.kv_read_bytes = 1; }},
      {"kv_write_bytes", [](Row& x) { x.cost.kv_write_bytes = 1; }},
      {"scratch_bytes", [](Row& x) { x.cost.scratch_bytes = 1; }},
      {"resident_weight_bytes", [](Row& x) { x.cost.resident_weight_bytes = 1; }},
      {"kv_cache_bytes", [](Row& x) { x.cost.kv_cache_bytes = 1; }},
      {"bytes", [](Row& x) { x.bytes = 1065; }},
      {"negative zero", [](Row& x) { x.cost.scratch_bytes = -0.0; }},
      {"compute_roof", [](Row& x) { x.compute_roof = "d"; }},
      {"memory_level", [](Row& x) { x.memory_level = "l"; }},
      {"theoretical", [](Row& x) { x.theoretical = roofline(200, 1064, 2e12, 1e11); }},
      {"derated", [](Row& x) { x.derated = roofline(200, 1064, 1e12, 5e10); }},
      {"derated bound", [](Row& x) { x.derated.bound = Bound::Compute; }},
      {"efficiency", [](Row& x) { x.efficiency.bandwidth = 0.5; }},
      {"metrics", [](Row& x) { x.metrics = {1}; }},
  };
  for (const auto& [what, change] : changes) {
    INFO(what);
    PointResult hinted;
    hinted.rows = {base, base};
    hinted.rows[1].layer = hinted.rows[1].kernel = "b";
    change(hinted.rows[1]);
    hinted.rows[1].twin = 0;
    PointResult plain = hinted;
    plain.rows[1].twin = -1;
    Point p;
    RunHeader h{{}, {"m"}, 1};
    for (auto* f : {&append_results_csv, &append_kernels_csv}) {
      std::string a, b;
      f(a, hinted, p);
      f(b, plain, p);
      CHECK(a == b);
    }
    std::string a, b;
    append_point_json_tail(a, hinted, h, true);
    append_point_json_tail(b, plain, h, true);
    CHECK(a == b);
  }
  // and the hint is taken where it holds: the second row is the first's text renamed
  PointResult same;
  same.rows = {base, base};
  same.rows[1].layer = same.rows[1].kernel = "b";
  same.rows[1].twin = 0;
  std::string csv;
  append_results_csv(csv, same, Point{});
  size_t nl = csv.find('\n');
  std::string first = csv.substr(0, nl + 1), second = csv.substr(nl + 1);
  const size_t k = first.find(",a,", 8);  // the kernel's column ("0,p,n,a," holds the layer's)
  CHECK(second == "0,p,n,b" + first.substr(7, k - 7) + ",b," + first.substr(k + 3));
}

// results.json of a one-layer network (a relu on [1, 8]) named as given in YAML, its layer too
static std::string named_json(const std::string& network_yaml, const std::string& layer_yaml) {
  Scenario s = parse_scenario("name: j\nplatforms: [rtx3080]\nnetworks:\n  - name: " + network_yaml + "\n    input: [1, 8]\n    layers:\n" +
                                  "      - {name: " + layer_yaml + ", op: relu}\n",
                              "j.yaml");
  return results_json(run(s), RunInfo{RSIM_VERSION, &s});
}

TEST_CASE("results.json escapes a tab in a network's and a layer's name", "[output][json]") {
  // JSON strings hold no raw control characters: a tab is written as the two characters \t (in the
  // summary objects and the layer rows alike), and a parser reads the names back whole
  const std::string text = named_json("\"n\\tm\"", "\"r\\tx\"");
  CHECK(text.find("\"network\":\"n\\tm\"") != std::string::npos);
  CHECK(text.find('\t') == std::string::npos);
  nlohmann::json j = nlohmann::json::parse(text);
  const auto& p = j["points"][0];
  CHECK(p["summary"][0]["network"] == "n\tm");
  CHECK(p["layers"][0]["layer"] == "r\tx");
  CHECK(p["layers"][0]["network"] == "n\tm");
}

TEST_CASE("results.json escapes a quote and a backslash at either end of a name", "[output][json]") {
  // the network is named "a\ (a quote first, a backslash last): written as \"a\\ between quotes
  const std::string text = named_json("'\"a\\'", "r");
  CHECK(text.find("\"network\":\"\\\"a\\\\\"") != std::string::npos);
  nlohmann::json j = nlohmann::json::parse(text);
  CHECK(j["points"][0]["summary"][0]["network"] == "\"a\\");
}
