// ONNX operators of the second round (issue 28): LSTM, GRU, RNN and Einsum from models built in
// test code, their costs derived by hand from the shapes (the file's own weight count beside).
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>

#include "cli_helpers.hpp"
#include "helpers.hpp"
#include "importers/onnx_import.hpp"

using namespace rsim;
using namespace rsim::test;
namespace fs = std::filesystem;

namespace {

OnnxSpecAttr attr_i(const std::string& n, long long v) {
  OnnxSpecAttr a;
  a.name = n;
  a.i = v;
  return a;
}
OnnxSpecAttr attr_s(const std::string& n, const std::string& v) {
  OnnxSpecAttr a;
  a.name = n;
  a.kind = OnnxSpecAttr::Kind::String;
  a.s = v;
  return a;
}

const char* kPlatform = R"(
platforms:
  - {name: box, compute: [{name: vec, dtypes: [fp32], peak: 1 TFLOP/s}], memory: [{name: dram, bandwidth: 100 GB/s}]}
)";

RunResult run_model(const std::string& name, const OnnxModelSpec& spec) {
  fs::path dir = scratch_dir(name);
  std::ofstream(dir / "m.onnx", std::ios::binary) << build_onnx_model(spec);
  std::string yaml = std::string("name: t\n") + kPlatform + "networks:\n  - {name: m, onnx: m.onnx}\n";
  RunResult r = run(parse_scenario(yaml, (dir / "t.yaml").string()));
  fs::remove_all(dir);
  return r;
}

}  // namespace

TEST_CASE("ONNX LSTM and GRU: every direction and layout, MACs T·B·D·G·H·(I+H), the file's weights as parameters", "[onnx]") {
  // a bidirectional LSTM over x (T 5, B 3, I 10), hidden 20, with biases: W (2, 80, 10), R (2, 80, 20),
  // B (2, 160) — 1,600 + 3,200 + 320 = 5,120 weights in the file
  OnnxModelSpec s;
  s.opset = 14;
  s.inputs = {{"x", {"5", "3", "10"}, 1, {}}};
  s.outputs = {{"y", {"5", "2", "3", "20"}, 1, {}}};
  s.initializers = {{"W", {"2", "80", "10"}, 1, {}}, {"R", {"2", "80", "20"}, 1, {}}, {"B", {"2", "160"}, 1, {}}};
  s.nodes = {{"LSTM", "lstm", {"x", "W", "R", "B"}, {"y", "h", "c"}, {attr_i("hidden_size", 20), attr_s("direction", "bidirectional")}}};
  RunResult r = run_model("lstm", s);
  auto rows = rows_of(r, 0, "box");
  REQUIRE(rows.size() == 1);
  CHECK(rows[0]->op == "recurrent");
  CHECK(rows[0]->output_shapes == "5x2x3x20;2x3x20;2x3x20");
  // 5 steps · 3 sequences · 2 directions · 4 gates · 20 · (10 + 20) = 72,000 MACs
  CHECK(rows[0]->cost.macs == 5.0 * 3 * 2 * 4 * 20 * 30);
  // FLOPs: 2 · MACs + 5 · 3 · 2 · 20 · (2 · 4 bias adds + 24 for the cell) = 144,000 + 19,200
  CHECK(rows[0]->cost.flops == 2 * 72000.0 + 5 * 3 * 2 * 20 * (8 + 24.0));
  CHECK(rows[0]->cost.params == 2 * 80 * 10 + 2 * 80 * 20 + 2 * 160.0);
  CHECK(summary_of(r, 0, "box").params == 5120);
  // the weights are read once (4 B each); x in, and Y, Y_h, Y_c out
  CHECK(rows[0]->cost.weight_bytes == 5120 * 4.0);
  CHECK(rows[0]->cost.input_total() == 5 * 3 * 10 * 4.0);
  CHECK(rows[0]->cost.output_total() == (5 * 2 * 3 * 20 + 2 * 2 * 3 * 20) * 4.0);

  // a forward GRU, batch-first (layout 1): x (B 3, T 5, I 10), hidden 20, no bias: W (1, 60, 10), R (1, 60, 20)
  OnnxModelSpec g;
  g.opset = 14;
  g.inputs = {{"x", {"3", "5", "10"}, 1, {}}};
  g.outputs = {{"h", {"3", "1", "20"}, 1, {}}};
  g.initializers = {{"W", {"1", "60", "10"}, 1, {}}, {"R", {"1", "60", "20"}, 1, {}}};
  g.nodes = {{"GRU", "gru", {"x", "W", "R"}, {"y", "h"}, {attr_i("hidden_size", 20), attr_i("layout", 1)}}};
  RunResult rg = run_model("gru", g);
  auto gr = rows_of(rg, 0, "box");
  REQUIRE(gr.size() == 1);
  CHECK(gr[0]->output_shapes == "3x5x1x20;3x1x20");
  CHECK(gr[0]->cost.macs == 5.0 * 3 * 1 * 3 * 20 * 30);  // 27,000
  CHECK(gr[0]->cost.flops == 2 * 27000.0 + 5 * 3 * 20 * 16.0);
  CHECK(gr[0]->cost.params == 60 * 10 + 60 * 20.0);
  // a W that does not fit X is refused at the node
  g.initializers[0].dims = {"1", "60", "12"};
  fs::path dir = scratch_dir("gru_bad");
  std::ofstream(dir / "m.onnx", std::ios::binary) << build_onnx_model(g);
  const std::string e = error_of([&] {
    run(parse_scenario(std::string("name: t\n") + kPlatform + "networks:\n  - {name: m, onnx: m.onnx}\n", (dir / "t.yaml").string()));
  });
  CHECK(e.find("node 'gru' (GRU): W is 1x60x12, expected 1x60x10") != std::string::npos);
  fs::remove_all(dir);
}

TEST_CASE("ONNX Einsum: MACs the product of every label's size, a constant operand's elements parameters", "[onnx]") {
  // x (2, 4, 8) with a weight (8, 6): 'bij,jk->bik', 2 · 4 · 8 · 6 = 384 MACs, 48 parameters
  OnnxModelSpec s;
  s.opset = 13;
  s.inputs = {{"x", {"2", "4", "8"}, 1, {}}};
  s.outputs = {{"y", {"2", "4", "6"}, 1, {}}};
  s.initializers = {{"w", {"8", "6"}, 1, {}}};
  s.nodes = {{"Einsum", "proj", {"x", "w"}, {"y"}, {attr_s("equation", "bij,jk->bik")}}};
  RunResult r = run_model("einsum", s);
  double macs = 0;
  std::string shape;
  for (const Row* row : rows_of(r, 0, "box"))
    if (row->op == "einsum") macs = row->cost.macs, shape = row->output_shapes;
  CHECK(macs == 2 * 4 * 8 * 6.0);
  CHECK(shape == "2x4x6");
  CHECK(summary_of(r, 0, "box").params == 48);
  // implicit output: 'bhqd,bhkd' keeps the labels seen once, sorted (k q), and sums over b, h and d
  OnnxModelSpec a;
  a.opset = 13;
  a.inputs = {{"q", {"2", "3", "5", "16"}, 1, {}}, {"k", {"2", "3", "7", "16"}, 1, {}}};
  a.outputs = {{"s", {"7", "5"}, 1, {}}};
  a.nodes = {{"Einsum", "scores", {"q", "k"}, {"s"}, {attr_s("equation", "bhqd,bhkd")}}};
  RunResult ra = run_model("einsum2", a);
  auto rows = rows_of(ra, 0, "box");
  REQUIRE(rows.size() == 1);
  CHECK(rows[0]->output_shapes == "7x5");
  CHECK(rows[0]->cost.macs == 2 * 3 * 5 * 7 * 16.0);
  // three operands contracted in order: 'ij,jk,kl->il' with (4, 5), (5, 6), (6, 7): first i j k
  // (4 · 5 · 6 = 120 MACs, keeping i k), then i k l (4 · 6 · 7 = 168)
  OnnxModelSpec c;
  c.opset = 13;
  c.inputs = {{"a", {"4", "5"}, 1, {}}, {"b", {"5", "6"}, 1, {}}, {"c", {"6", "7"}, 1, {}}};
  c.outputs = {{"y", {"4", "7"}, 1, {}}};
  c.nodes = {{"Einsum", "chain", {"a", "b", "c"}, {"y"}, {attr_s("equation", "ij,jk,kl->il")}}};
  CHECK(rows_of(run_model("einsum3", c), 0, "box")[0]->cost.macs == 120 + 168);
}
