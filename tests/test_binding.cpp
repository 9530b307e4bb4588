// Per-point binding: a network built once per worker and re-bound at each point (its `${…}`
// substituted again, shapes and costs re-inferred where they change) gives what a fresh build
// gives, including when a bound value changes the structure or is invalid.
#include <catch2/catch.hpp>

#include "helpers.hpp"

using namespace rsim;
using namespace rsim::test;

namespace {
std::vector<std::string> layer_names(const RunResult& r, size_t point) {
  std::vector<std::string> n;
  for (const Row* row : rows_of(r, point, "rtx3080")) n.push_back(row->layer);
  return n;
}
}  // namespace

TEST_CASE("a block's arguments and a repeat re-bound per point, back and forth", "[binding]") {
  std::string y = R"(name: t
sweep: {grid: {c: [8, 16, 8]}}
platforms: [rtx3080]
networks:
  - name: n
    input: [1, "${c}", 10, 10]
    blocks:
      pair:
        params: {w: ~}
        layers:
          - {name: a, op: conv2d, out_channels: "${w}", kernel: 3, padding: 1}
          - {name: b, op: conv2d, out_channels: "${w * 2}", kernel: 1}
    layers:
      - {block: pair, name: p, repeat: 2, args: {w: "${c}"}}
)";
  for (int jobs : {1, 2}) {
    RunResult r = run_text(y, jobs);
    REQUIRE(r.results.size() == 3);
    for (size_t pt : {0, 1, 2}) {
      double c = pt == 1 ? 16 : 8;
      auto rows = rows_of(r, pt, "rtx3080");
      REQUIRE(rows.size() == 4);
      CHECK(layer_names(r, pt) == std::vector<std::string>{"p.0.a", "p.0.b", "p.1.a", "p.1.b"});
      // 10x10 outputs (3x3 with padding 1, or 1x1): MACs = out channels x in channels x taps x 100
      CHECK(rows[0]->cost.macs == c * c * 9 * 100);          // c -> c
      CHECK(rows[1]->cost.macs == (2 * c) * c * 1 * 100);    // c -> 2c
      CHECK(rows[2]->cost.macs == c * (2 * c) * 9 * 100);    // 2c -> c
      CHECK(rows[3]->cost.macs == (2 * c) * c * 1 * 100);    // c -> 2c: the same work as p.0.b
      CHECK(rows[2]->input_shapes == "1x" + std::to_string(static_cast<int>(2 * c)) + "x10x10");
      CHECK(rows[3]->cost.params == (2 * c) * c + 2 * c);    // weights + bias
    }
  }
}

TEST_CASE("a `when` that changes with the point adds and removes a layer", "[binding]") {
  std::string y = R"(name: t
sweep: {grid: {c: [8, 16, 8]}}
platforms: [rtx3080]
networks:
  - name: n
    input: [1, "${c}", 10, 10]
    layers:
      - {name: a, op: conv2d, out_channels: 8, kernel: 1}
      - {name: b, op: conv2d, out_channels: 4, kernel: 1, when: "${c > 8}"}
)";
  RunResult r = run_text(y);
  CHECK(layer_names(r, 0) == std::vector<std::string>{"a"});
  CHECK(layer_names(r, 1) == std::vector<std::string>{"a", "b"});
  CHECK(layer_names(r, 2) == std::vector<std::string>{"a"});
  CHECK(rows_of(r, 1, "rtx3080")[0]->cost.macs == 8 * 16 * 100);  // 16 -> 8 channels, 10x10
  CHECK(rows_of(r, 1, "rtx3080")[1]->cost.macs == 4 * 8 * 100);   // 8 -> 4
  CHECK(rows_of(r, 2, "rtx3080")[0]->cost.macs == 8 * 8 * 100);   // 8 -> 8
}

TEST_CASE("numbers are substituted as the expression language prints them", "[binding]") {
  // "016" is the integer 16 and "2.50" the number 2.5: the text of `${x}` is the number's
  std::string y = R"(name: t
sweep: {zip: {c: ["016", "8"], x: ["2.50", "3"]}}
platforms: [rtx3080]
networks:
  - name: n
    input: [1, "${c}", 10, 10]
    layers:
      - {name: "l${x}", op: relu}
)";
  RunResult r = run_text(y);
  CHECK(layer_names(r, 0) == std::vector<std::string>{"l2.5"});
  CHECK(layer_names(r, 1) == std::vector<std::string>{"l3"});
  CHECK(rows_of(r, 0, "rtx3080")[0]->input_shapes == "1x16x10x10");
  CHECK(rows_of(r, 1, "rtx3080")[0]->input_shapes == "1x8x10x10");
}

TEST_CASE("an invalid value at a later point is reported as a fresh build reports it", "[binding][errors]") {
  std::string y = R"(name: t
sweep: {grid: {c: [8, 0]}}
platforms: [rtx3080]
networks:
  - name: n
    input: [1, "${c}", 10, 10]
    layers:
      - {name: a, op: conv2d, out_channels: 8, kernel: 1}
)";
  CHECK(error_of([&] { run_text(y); }) ==
        "t.yaml:6:16: error: input dimensions must be positive, got 0\n"
        "    input: [1, \"${c}\", 10, 10]\n"
        "               ^\n"
        "note: at sweep point 1: c=0\n");
}
