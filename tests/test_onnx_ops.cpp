// ONNX operators of the second round (issue 28): LSTM, GRU, RNN and Einsum from models built in
// test code, their costs derived by hand from the shapes (the file's own weight count beside).
#include <catch2/catch.hpp>

#include <array>
#include <filesystem>
#include <fstream>
#include <map>

#include "cli_helpers.hpp"
#include "helpers.hpp"
#include "importers/onnx_import.hpp"

using namespace rsim;
using namespace rsim::test;
namespace fs = std::filesystem;

namespace {

const auto attr_i = OnnxSpecAttr::integer;
const auto attr_is = OnnxSpecAttr::integers;
const auto attr_s = OnnxSpecAttr::text;

const char* kPlatform = R"(
platforms:
  - {name: box, compute: [{name: vec, dtypes: [fp32], peak: 1 TFLOP/s}, {name: dot, dtypes: [int8], peak: 4 TFLOP/s}], memory: [{name: dram, bandwidth: 100 GB/s}]}
)";

// The model written to a scratch folder and run as the network {name: m, onnx: m.onnx`extra`}
RunResult run_model(const std::string& name, const OnnxModelSpec& spec, const std::string& extra = "") {
  struct Scratch {  // removed however the run ends (an error is what some tests expect)
    fs::path dir;
    ~Scratch() { fs::remove_all(dir); }
  } f{scratch_dir(name)};
  std::ofstream(f.dir / "m.onnx", std::ios::binary) << build_onnx_model(spec);
  std::string yaml = std::string("name: t\n") + kPlatform + "networks:\n  - {name: m, onnx: m.onnx" + extra + "}\n";
  return run(parse_scenario(yaml, (f.dir / "t.yaml").string()));
}

}  // namespace

TEST_CASE("ONNX Loop: a constant trip count unrolls the body, carried values chained and scan outputs stacked", "[onnx]") {
  // x (1, 4); Loop M = 3, cond = true; body: s = s_in + w (w the outer graph's (1, 4) weight),
  // the condition passed through, and relu(s) scanned. Unrolled: 3 adds and 3 relus (4 FLOPs each:
  // one per element), each relu's output reshaped to (1, 1, 4) and the three concatenated to (3, 1, 4).
  const auto graph_attr = OnnxSpecAttr::subgraph;
  OnnxModelSpec body;
  body.graph_name = "body";
  body.inputs = {{"i", {}, 7, {}}, {"c_in", {}, 9, {}}, {"s_in", {"1", "4"}, 1, {}}};
  body.outputs = {{"c_out", {}, 9, {}}, {"s_out", {"1", "4"}, 1, {}}, {"r", {"1", "4"}, 1, {}}};
  body.nodes = {{"Add", "step", {"s_in", "w"}, {"s_out"}, {}}, {"Identity", "keep", {"c_in"}, {"c_out"}, {}}, {"Relu", "act", {"s_out"}, {"r"}, {}}};
  OnnxModelSpec s;
  s.opset = 13;
  s.inputs = {{"x", {"1", "4"}, 1, {}}};
  s.outputs = {{"y", {"1", "4"}, 1, {}}, {"ys", {"3", "1", "4"}, 1, {}}};
  s.initializers = {{"w", {"1", "4"}, 1, {0.5, 0.5, 0.5, 0.5}}, {"m", {}, 7, {3}}, {"yes", {}, 9, {1}}};
  s.nodes = {{"Loop", "loop", {"m", "yes", "x"}, {"y", "ys"}, {graph_attr("body", body)}}};
  RunResult r = run_model("loop", s);
  auto rows = rows_of(r, 0, "box");
  size_t adds = 0, relus = 0, reshapes = 0, concats = 0;
  for (const Row* row : rows) {
    INFO(row->layer << " " << row->op);
    if (row->op == "add") {
      ++adds;
      CHECK(row->cost.flops == 4);
    } else if (row->op == "relu") {
      ++relus;
      CHECK(row->cost.flops == 4);
    } else if (row->op == "reshape") {
      ++reshapes;
      CHECK(row->output_shapes == "1x1x4");
    } else if (row->op == "concat") {
      ++concats;
      CHECK(row->output_shapes == "3x1x4");
    }
  }
  CHECK(adds == 3);
  CHECK(relus == 3);
  CHECK(reshapes == 3);
  CHECK(concats == 1);
  CHECK(r.results[0].summary.at(0).params == 4);  // w, once, though three adds read it
  // the condition turning false ends the loop early: the body's condition is i < 1 (a Less of the
  // iteration number against a constant 1): one iteration, so one add and a scan of (1, 1, 4)
  OnnxModelSpec early_body = body;
  early_body.initializers = {{"one", {}, 7, {1}}};
  early_body.nodes = {{"Add", "step", {"s_in", "w"}, {"s_out"}, {}}, {"Add", "next", {"i", "one"}, {"i1"}, {}},
                      {"Less", "more", {"i1", "one"}, {"c_out"}, {}}, {"Relu", "act", {"s_out"}, {"r"}, {}}};
  OnnxModelSpec e = s;
  e.outputs = {{"y", {"1", "4"}, 1, {}}, {"ys", {"1", "1", "4"}, 1, {}}};
  e.nodes = {{"Loop", "loop", {"m", "yes", "x"}, {"y", "ys"}, {graph_attr("body", early_body)}}};
  RunResult re = run_model("loop_early", e);
  size_t early_adds = 0;
  for (const Row* row : rows_of(re, 0, "box")) early_adds += row->op == "add";
  CHECK(early_adds == 1);
  // a trip count from the input's values: refused, naming the Loop; past 1024 iterations: refused
  OnnxModelSpec d = s;
  d.inputs.push_back({"n", {}, 7, {}});
  d.nodes = {{"Loop", "loop", {"n", "yes", "x"}, {"y", "ys"}, {graph_attr("body", body)}}};
  CHECK_THROWS_WITH(run_model("loop_data", d), Catch::Contains("node 'loop' (Loop): its trip count is computed from data at run time"));
  OnnxModelSpec big = s;
  big.initializers[1].values = {5000};
  CHECK_THROWS_WITH(run_model("loop_big", big), Catch::Contains("node 'loop' (Loop): runs more than 1024 iterations"));
}

TEST_CASE("ONNX If: a constant condition takes its branch in place of the If, a condition on data is refused", "[onnx]") {
  // x (1, 4, 8, 8); the condition: Shape(x)[1] = 4 > 2, folded to true. then: Conv 4→6 1×1 with a
  // weight of the branch's own (24 parameters) reading the outer x, then Relu; else: Sigmoid of x.
  const auto graph_attr = OnnxSpecAttr::subgraph;
  OnnxModelSpec then_g, else_g;
  then_g.graph_name = "then";
  then_g.initializers = {{"wb", {"6", "4", "1", "1"}, 1, {}}};
  then_g.outputs = {{"t", {"1", "6", "8", "8"}, 1, {}}};
  then_g.nodes = {{"Conv", "branch_conv", {"x", "wb"}, {"tc"}, {attr_is("kernel_shape", {1, 1})}}, {"Relu", "branch_relu", {"tc"}, {"t"}, {}}};
  else_g.graph_name = "else";
  else_g.outputs = {{"e", {"1", "4", "8", "8"}, 1, {}}};
  else_g.nodes = {{"Sigmoid", "branch_sigmoid", {"x"}, {"e"}, {}}};
  OnnxModelSpec s;
  s.opset = 13;
  s.inputs = {{"x", {"1", "4", "8", "8"}, 1, {}}};
  s.outputs = {{"y", {"?", "?", "8", "8"}, 1, {}}};
  s.initializers = {{"i1", {}, 7, {1}}, {"two", {}, 7, {2}}};
  s.nodes = {{"Shape", "shape", {"x"}, {"sh"}, {}},
             {"Gather", "c", {"sh", "i1"}, {"ch"}, {}},
             {"Greater", "wide", {"ch", "two"}, {"cond"}, {}},
             {"If", "choose", {"cond"}, {"y"}, {graph_attr("then_branch", then_g), graph_attr("else_branch", else_g)}}};
  RunResult r = run_model("if_then", s);
  auto rows = rows_of(r, 0, "box");
  REQUIRE(rows.size() == 2);
  CHECK(rows[0]->layer == "branch_conv");
  CHECK(rows[0]->cost.macs == 6.0 * 64 * 4);  // 6 × 8 × 8 outputs, 4 taps each
  CHECK(rows[0]->cost.params == 24);
  CHECK(rows[1]->layer == "branch_relu");
  CHECK(rows[1]->output_shapes == "1x6x8x8");
  // a false constant (a bool initializer) takes the else branch: the sigmoid alone
  OnnxModelSpec f = s;
  f.initializers.push_back({"no", {}, 9, {0}});
  f.nodes = {{"If", "choose", {"no"}, {"y"}, {graph_attr("then_branch", then_g), graph_attr("else_branch", else_g)}}};
  RunResult rf = run_model("if_else", f);
  auto fr = rows_of(rf, 0, "box");
  REQUIRE(fr.size() == 1);
  CHECK(fr[0]->layer == "branch_sigmoid");
  CHECK(fr[0]->op == "sigmoid");
  // a condition on the input's values: refused, naming the If
  OnnxModelSpec d = s;
  d.inputs.push_back({"flag", {}, 9, {}});
  d.nodes = {{"If", "choose", {"flag"}, {"y"}, {graph_attr("then_branch", then_g), graph_attr("else_branch", else_g)}}};
  CHECK_THROWS_WITH(run_model("if_data", d), Catch::Contains("node 'choose' (If): its condition is computed from data at run time"));
  // Ifs nested 60 deep (each then-branch holds the next If; each else-branch the sigmoid): past
  // protobuf's 100 nested messages (3 per level), named as such (the parser itself says only
  // "truncated or corrupt"); 20 deep reads and folds (20 Relus)
  auto nested = [&](int depth) {
    OnnxModelSpec inner;
    inner.graph_name = "b0";
    inner.outputs = {{"o0", {"1", "4", "8", "8"}, 1, {}}};
    inner.nodes = {{"Relu", "r0", {"x"}, {"o0"}, {}}};
    for (int k = 1; k < depth; ++k) {
      OnnxModelSpec outer;
      outer.graph_name = "b" + std::to_string(k);
      outer.outputs = {{"o" + std::to_string(k), {"1", "4", "8", "8"}, 1, {}}};
      outer.nodes = {{"If", "if" + std::to_string(k), {"yes"}, {"i" + std::to_string(k)}, {graph_attr("then_branch", inner), graph_attr("else_branch", else_g)}},
                     {"Relu", "r" + std::to_string(k), {"i" + std::to_string(k)}, {"o" + std::to_string(k)}, {}}};
      inner = outer;
    }
    OnnxModelSpec m = s;
    m.initializers.push_back({"yes", {}, 9, {1}});
    m.nodes = {{"If", "top", {"yes"}, {"y"}, {graph_attr("then_branch", inner), graph_attr("else_branch", else_g)}}};
    return m;
  };
  RunResult r20 = run_model("if_20", nested(20));
  CHECK(rows_of(r20, 0, "box").size() == 20);
  CHECK_THROWS_WITH(run_model("if_60", nested(60)), Catch::Contains("nests subgraphs (If or Loop bodies inside each other) 60 deep"));
}

TEST_CASE("ONNX: a model of more than 250,000 nodes is refused after parsing, before anything is built", "[onnx]") {
  // a chain of kMaxOnnxNodes + 1 Relus (a 10^6-node chain took 28 s and 2.9 GB to import as layers)
  OnnxModelSpec s;
  s.inputs = {{"t0", {"1", "8"}, 1, {}}};
  const int n = kMaxOnnxNodes + 1;
  s.outputs = {{"t" + std::to_string(n), {"1", "8"}, 1, {}}};
  s.nodes.reserve(static_cast<size_t>(n));
  for (int i = 0; i < n; ++i) s.nodes.push_back({"Relu", "n" + std::to_string(i), {"t" + std::to_string(i)}, {"t" + std::to_string(i + 1)}, {}});
  CHECK_THROWS_WITH(parse_onnx(build_onnx_model(s), "chain.onnx"), Catch::Contains("has 250001 nodes; rsim imports models of at most 250000 nodes"));
}

TEST_CASE("ONNX 3-D: Conv, MaxPool and ConvTranspose over (D, H, W), costed by hand", "[onnx]") {
  // x (2, 4, 6, 8, 10) → Conv 4→6, groups 2, 3×3×3, pads 1, strides (1, 2, 2), bias: out D 6,
  // H (8 + 2 − 3) / 2 + 1 = 4, W (10 + 2 − 3) / 2 + 1 = 5; 2·6·6·4·5 = 1,440 outputs of (4/2)·27 = 54
  // taps: 77,760 MACs; params 6·2·27 + 6 = 330. → MaxPool 2×2×2 stride 2: (2, 6, 3, 2, 2).
  // A ConvTranspose 2→4 2×2×2 stride 2 on y (1, 2, 3, 3, 3): (1, 4, 6, 6, 6); each of the 2·27 input
  // voxels to a 2×2×2 block of 4 channels: 54 · 4 · 8 = 1,728 MACs, 2·4·8 = 64 params.
  OnnxModelSpec s;
  s.opset = 13;
  s.inputs = {{"x", {"2", "4", "6", "8", "10"}, 1, {}}, {"y", {"1", "2", "3", "3", "3"}, 1, {}}};
  s.outputs = {{"p", {"2", "6", "3", "2", "2"}, 1, {}}, {"u", {"1", "4", "6", "6", "6"}, 1, {}}};
  s.initializers = {{"w", {"6", "2", "3", "3", "3"}, 1, {}}, {"b", {"6"}, 1, {}}, {"wt", {"2", "4", "2", "2", "2"}, 1, {}}};
  s.nodes = {{"Conv", "c3", {"x", "w", "b"}, {"c"}, {attr_is("kernel_shape", {3, 3, 3}), attr_is("pads", {1, 1, 1, 1, 1, 1}), attr_is("strides", {1, 2, 2}), attr_i("group", 2)}},
             {"MaxPool", "mp", {"c"}, {"p"}, {attr_is("kernel_shape", {2, 2, 2}), attr_is("strides", {2, 2, 2})}},
             {"ConvTranspose", "up", {"y", "wt"}, {"u"}, {attr_is("kernel_shape", {2, 2, 2}), attr_is("strides", {2, 2, 2})}}};
  RunResult r = run_model("conv3d", s);
  std::map<std::string, const Row*> by;
  for (const Row* row : rows_of(r, 0, "box")) by[row->layer] = row;
  REQUIRE(by.count("c3"));
  CHECK(by["c3"]->output_shapes == "2x6x6x4x5");
  CHECK(by["c3"]->cost.macs == 1440.0 * 54);
  CHECK(by["c3"]->cost.params == 330);
  REQUIRE(by.count("mp"));
  CHECK(by["mp"]->output_shapes == "2x6x3x2x2");
  REQUIRE(by.count("up"));
  CHECK(by["up"]->output_shapes == "1x4x6x6x6");
  CHECK(by["up"]->cost.macs == 54.0 * 4 * 8);
  CHECK(by["up"]->cost.params == 64);
}

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
  const std::string e = error_of([&] { run_model("gru_bad", g); });
  CHECK(e.find("node 'gru' (GRU): W is 1x60x12, expected 1x60x10") != std::string::npos);
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

TEST_CASE("ONNX ScatterND and ScatterElements: folded when every input is constant, a copy when not", "[onnx]") {
  // a shape computed by scatter: data [2, 3] (int64), ScatterND at index [1] of 6 → [2, 6]; then
  // ScatterElements at axis 0 puts 1 at index 0 → [1, 6]: the Reshape of x (2, 3) to (1, 6) folds
  OnnxModelSpec s;
  s.opset = 16;
  s.inputs = {{"x", {"2", "3"}, 1, {}}};
  s.outputs = {{"y", {"1", "6"}, 1, {}}};
  s.initializers = {{"shape0", {"2"}, 7, {2, 3}}, {"idx", {"1", "1"}, 7, {1}},  {"upd", {"1"}, 7, {6}},
                    {"idx2", {"1"}, 7, {0}},     {"upd2", {"1"}, 7, {1}}};
  s.nodes = {{"ScatterND", "nd", {"shape0", "idx", "upd"}, {"shape1"}, {}},
             {"ScatterElements", "el", {"shape1", "idx2", "upd2"}, {"shape2"}, {}},
             {"Reshape", "r", {"x", "shape2"}, {"y"}, {}}};
  RunResult r = run_model("scatter_fold", s);
  auto rows = rows_of(r, 0, "box");
  REQUIRE(rows.size() == 1);  // the reshape alone: both scatters folded
  CHECK(rows[0]->op == "reshape");
  CHECK(rows[0]->output_shapes == "1x6");
  // a scatter into an activation: x (4, 5) with rows 0 and 2 replaced by updates (2, 5), a copy
  // reading x (20), the indices (2 int64) and the updates (10), writing 20 elements
  OnnxModelSpec a;
  a.opset = 16;
  a.inputs = {{"x", {"4", "5"}, 1, {}}, {"u", {"2", "5"}, 1, {}}};
  a.outputs = {{"y", {"4", "5"}, 1, {}}};
  a.initializers = {{"i", {"2", "1"}, 7, {0, 2}}};
  a.nodes = {{"ScatterND", "put", {"x", "i", "u"}, {"y"}, {}}};
  RunResult ra = run_model("scatter_copy", a);
  const Row* put = nullptr;
  for (const Row* row : rows_of(ra, 0, "box"))
    if (row->op == "scatter") put = row;
  REQUIRE(put);
  CHECK(put->output_shapes == "4x5");
  CHECK(put->cost.flops == 0);
  CHECK(put->cost.output_total() == 20 * 4.0);
  CHECK(put->cost.input_total() == 20 * 4.0 + 2 * 8.0 + 10 * 4.0);
  // a mask too large to fold by value (300 · 300 floats, no data read): the scatter of constants
  // stays a constant (its shape known), read by the add like any constant
  OnnxModelSpec m;
  m.opset = 16;
  m.inputs = {{"x", {"1", "300", "300"}, 1, {}}};
  m.outputs = {{"y", {"1", "300", "300"}, 1, {}}};
  m.initializers = {{"zeros", {"1", "300", "300"}, 1, {}}, {"mi", {"1", "2"}, 7, {0, 5}}, {"mu", {"1", "300"}, 1, {}}};
  m.nodes = {{"ScatterND", "mask", {"zeros", "mi", "mu"}, {"mk"}, {}}, {"Add", "add", {"x", "mk"}, {"y"}, {}}};
  RunResult rm = run_model("scatter_mask", m);
  int scatters = 0, adds = 0;
  for (const Row* row : rows_of(rm, 0, "box")) scatters += row->op == "scatter", adds += row->op == "add";
  CHECK(scatters == 0);
  CHECK(adds == 1);
  // an index past its dimension is an error at the node, when folding
  s.initializers[1].values = {5};
  const std::string e = error_of([&] { run_model("scatter_bad", s); });
  CHECK(e.find("node 'nd' (ScatterND): index 5 is out of range for dimension 2") != std::string::npos);
}

TEST_CASE("ONNX QDQ: QuantizeLinear / DequantizeLinear around a Conv make one int8 layer, its int8 weights and int32 bias parameters", "[onnx]") {
  // x (1, 3, 8, 8) float → Q → DQ → Conv (4 × 3 × 3 × 3 int8 weights behind a DQ, pads 1; an int32
  // bias of 4 behind a DQ) → Q → DQ → y, as ONNX Runtime's quantizer writes it
  OnnxModelSpec s;
  s.opset = 13;
  s.inputs = {{"x", {"1", "3", "8", "8"}, 1, {}}};
  s.outputs = {{"y", {"1", "4", "8", "8"}, 1, {}}};
  s.initializers = {{"xs", {}, 1, {0.02}},     {"xz", {}, 3, {0}},  {"w", {"4", "3", "3", "3"}, 3, {}}, {"ws", {}, 1, {0.01}},
                    {"wz", {}, 3, {0}},        {"b", {"4"}, 6, {}}, {"bs", {}, 1, {0.0002}},            {"bz", {}, 6, {0}},
                    {"ys", {}, 1, {0.05}},     {"yz", {}, 3, {0}}};
  s.nodes = {{"QuantizeLinear", "xq", {"x", "xs", "xz"}, {"x_q"}, {}},
             {"DequantizeLinear", "xdq", {"x_q", "xs", "xz"}, {"x_dq"}, {}},
             {"DequantizeLinear", "wdq", {"w", "ws", "wz"}, {"w_dq"}, {}},
             {"DequantizeLinear", "bdq", {"b", "bs", "bz"}, {"b_dq"}, {}},
             {"Conv", "conv", {"x_dq", "w_dq", "b_dq"}, {"c"}, {attr_is("kernel_shape", {3, 3}), attr_is("pads", {1, 1, 1, 1})}},
             {"QuantizeLinear", "cq", {"c", "ys", "yz"}, {"c_q"}, {}},
             {"DequantizeLinear", "cdq", {"c_q", "ys", "yz"}, {"y"}, {}}};
  RunResult r = run_model("qdq", s);
  auto rows = rows_of(r, 0, "box");
  REQUIRE(rows.size() == 1);
  CHECK(rows[0]->layer == "conv");
  CHECK(rows[0]->dtype == DType::int8);
  CHECK(rows[0]->compute_roof == "dot");
  CHECK(rows[0]->cost.macs == 4.0 * 8 * 8 * 27);
  // parameters: the int8 weights and the int32 bias, not the scales and zero points
  CHECK(rows[0]->cost.params == 4 * 27 + 4.0);
  CHECK(summary_of(r, 0, "box").params == 112);
  CHECK(summary_of(r, 0, "box").dtype == DType::int8);
  // bytes at 1 B an element: x in (3 · 64), the weights (108; the bias, 4, in the layer's dtype), y out (4 · 64)
  CHECK(rows[0]->cost.input_total() == 3 * 64.0);
  CHECK(rows[0]->cost.weight_bytes == 108 + 4.0);
  CHECK(rows[0]->cost.output_total() == 4 * 64.0);
  // rsim import --summary: the element types per class of tensor. Initializers: the weights w (int8,
  // 4 · 3 · 3 · 3 = 108 elements) and b (int32, 4); the scales xs, ws, bs, ys (fp32) and zero points
  // xz, wz, yz (int8) and bz (int32): 108 + 4 = 112 weight elements (the parameters). Node outputs
  // as rsim costs them: x_q int8; a DequantizeLinear's output is the tensor it reads (x_dq and w_dq
  // int8, b_dq the int32 bias); the int8 conv's output c, and c_q and y behind it, int8: 6 int8, 1 int32.
  fs::path dir = scratch_dir("qdq_summary");
  std::ofstream(dir / "qdq.onnx", std::ios::binary) << build_onnx_model(s);
  CliOut o = cli({"import", (dir / "qdq.onnx").string(), "--summary"});
  INFO(o.out << o.err);
  CHECK(o.code == 0);
  CHECK(o.out.find("  dtypes: inputs fp32 × 1; weights int32 4 elements, int8 108 elements; quantization scales and zero points fp32 × 4, "
                   "int32 × 1, int8 × 3; outputs fp32 × 1\n") != std::string::npos);
  CHECK(o.out.find("7 nodes, 10 initializers (2 in external data), 112 weight elements\n") != std::string::npos);
  CHECK(o.out.find("  dtypes: activations (node outputs, as rsim costs them) int32 × 1, int8 × 6\n") != std::string::npos);
  fs::remove_all(dir);
}

TEST_CASE("ONNX recomposition: scores + mask then Softmax is one softmax layer reading both", "[onnx]") {
  // scores (1, 2, 4, 4) + mask (1, 1, 1, 4) → Softmax(axis -1): one layer named after the Add, 32
  // elements at 6 FLOPs (the add, then max, subtract, exp, sum, divide) = 192; it reads the scores
  // (32 · 4 B = 128) and the mask (4 · 4 B = 16) and writes 128 B — the Add's 128-B sum is never
  // written or read again. The mask may come first.
  for (bool mask_first : {false, true}) {
    OnnxModelSpec s;
    s.opset = 13;
    s.inputs = {{"scores", {"1", "2", "4", "4"}, 1, {}}, {"mask", {"1", "1", "1", "4"}, 1, {}}};
    s.outputs = {{"p", {"1", "2", "4", "4"}, 1, {}}};
    s.nodes = {{"Add", "masked", mask_first ? std::vector<std::string>{"mask", "scores"} : std::vector<std::string>{"scores", "mask"}, {"sum"}, {}},
               {"Softmax", "probs", {"sum"}, {"p"}, {attr_i("axis", -1)}}};
    RunResult r = run_model("masked_softmax", s);
    auto rows = rows_of(r, 0, "box");
    REQUIRE(rows.size() == 1);
    CHECK(rows[0]->layer == "masked");
    CHECK(rows[0]->op == "softmax");
    CHECK(rows[0]->cost.flops == 6 * 32.0);
    CHECK(rows[0]->cost.input_total() == 128 + 16.0);
    CHECK(rows[0]->cost.output_total() == 128.0);
    // onnx_recompose: false: the add (32 FLOPs, 144 B in, 128 out) and the softmax (5 · 32 FLOPs) apart
    RunResult off = run_model("masked_softmax_off", s, ", onnx_recompose: false");
    auto ro = rows_of(off, 0, "box");
    REQUIRE(ro.size() == 2);
    CHECK(ro[0]->cost.flops == 32.0);
    CHECK(ro[1]->cost.flops == 5 * 32.0);
  }
}

TEST_CASE("ONNX QLinearMatMul and ConvInteger: int8 layers with their stored weights as parameters", "[onnx]") {
  // a (2, 8) uint8 × b (8, 4) int8 stored weight: a linear layer in int8, 2 · 8 · 4 = 64 MACs, 32 parameters
  OnnxModelSpec s;
  s.opset = 13;
  s.inputs = {{"a", {"2", "8"}, 2, {}}};
  s.outputs = {{"y", {"2", "4"}, 2, {}}};
  s.initializers = {{"as", {}, 1, {0.1}}, {"az", {}, 2, {128}}, {"b", {"8", "4"}, 3, {}}, {"bs", {}, 1, {0.1}},
                    {"bz", {}, 3, {0}},   {"ys", {}, 1, {0.1}}, {"yz", {}, 2, {128}}};
  s.nodes = {{"QLinearMatMul", "qmm", {"a", "as", "az", "b", "bs", "bz", "ys", "yz"}, {"y"}, {}}};
  RunResult rq = run_model("qlinear_mm", s);  // (rows_of points into it: keep it)
  auto rows = rows_of(rq, 0, "box");
  REQUIRE(rows.size() == 1);
  CHECK(rows[0]->op == "linear");
  CHECK(rows[0]->dtype == DType::int8);
  CHECK(rows[0]->cost.macs == 2 * 8 * 4.0);
  CHECK(rows[0]->cost.params == 32);
  // ConvInteger: x (1, 2, 5, 5) uint8, w (3, 2, 3, 3) int8, no bias: 3 · 3 · 3 outputs · 18 MACs each
  OnnxModelSpec c;
  c.opset = 13;
  c.inputs = {{"x", {"1", "2", "5", "5"}, 2, {}}};
  c.outputs = {{"y", {"1", "3", "3", "3"}, 6, {}}};
  c.initializers = {{"w", {"3", "2", "3", "3"}, 3, {}}};
  c.nodes = {{"ConvInteger", "ci", {"x", "w"}, {"y"}, {}}};
  RunResult rc = run_model("conv_integer", c);
  auto cr = rows_of(rc, 0, "box");
  REQUIRE(cr.size() == 1);
  CHECK(cr[0]->dtype == DType::int8);
  CHECK(cr[0]->output_shapes == "1x3x3x3");
  CHECK(cr[0]->cost.macs == 27 * 18.0);
  CHECK(cr[0]->cost.params == 3 * 2 * 9.0);
}

TEST_CASE("ONNX recomposition: a decomposed LayerNorm and an Erf GELU are one layer each, with their real bytes", "[onnx]") {
  // x (2, 4, 16) → ReduceMean(-1) → Sub → Pow 2 → ReduceMean(-1) → Add eps → Sqrt → Div → Mul γ → Add β
  //             → Div √2 → Erf → Add 1 → Mul x → Mul 0.5 → y   (what PyTorch exports before opset 17)
  OnnxModelSpec s;
  s.opset = 13;
  s.inputs = {{"x", {"2", "4", "16"}, 1, {}}};
  s.outputs = {{"y", {"2", "4", "16"}, 1, {}}};
  s.initializers = {{"two", {}, 1, {2}},         {"eps", {}, 1, {1e-5}}, {"gamma", {"16"}, 1, {}}, {"beta", {"16"}, 1, {}},
                    {"sqrt2", {}, 1, {1.4142135}}, {"one", {}, 1, {1}},    {"half", {}, 1, {0.5}}};
  s.nodes = {{"ReduceMean", "ln_mean", {"x"}, {"m"}, {attr_is("axes", {-1})}},
             {"Sub", "ln_sub", {"x", "m"}, {"d"}, {}},
             {"Pow", "ln_pow", {"d", "two"}, {"p"}, {}},
             {"ReduceMean", "ln_var", {"p"}, {"v"}, {attr_is("axes", {-1})}},
             {"Add", "ln_eps", {"v", "eps"}, {"e"}, {}},
             {"Sqrt", "ln_sqrt", {"e"}, {"sd"}, {}},
             {"Div", "ln_div", {"d", "sd"}, {"n"}, {}},
             {"Mul", "ln_gamma", {"n", "gamma"}, {"ng"}, {}},
             {"Add", "ln_beta", {"ng", "beta"}, {"h"}, {}},
             {"Div", "g_div", {"h", "sqrt2"}, {"a"}, {}},
             {"Erf", "g_erf", {"a"}, {"b"}, {}},
             {"Add", "g_one", {"b", "one"}, {"c"}, {}},
             {"Mul", "g_x", {"h", "c"}, {"gx"}, {}},
             {"Mul", "g_half", {"gx", "half"}, {"y"}, {}}};
  RunResult r = run_model("recompose", s);
  auto rows = rows_of(r, 0, "box");
  REQUIRE(rows.size() == 2);
  CHECK(rows[0]->layer == "ln_mean");
  CHECK(rows[0]->op == "layernorm");
  CHECK(rows[1]->layer == "g_div");
  CHECK(rows[1]->op == "gelu");
  // one pass each over 2 · 4 · 16 = 128 fp32 elements in and out (512 B each); γ and β: 2 · 16 parameters, 128 B
  CHECK(rows[0]->cost.input_total() == 128 * 4.0);
  CHECK(rows[0]->cost.output_total() == 128 * 4.0);
  CHECK(rows[0]->cost.params == 32);
  CHECK(rows[0]->cost.weight_bytes == 32 * 4.0);
  CHECK(rows[1]->cost.input_total() == 128 * 4.0);
  CHECK(rows[1]->cost.output_total() == 128 * 4.0);
  CHECK(summary_of(r, 0, "box").params == 32);
  // with onnx_recompose: false every node is a layer of its own (14, and constants for the scalars)
  fs::path dir = scratch_dir("recompose_off");
  std::ofstream(dir / "m.onnx", std::ios::binary) << build_onnx_model(s);
  RunResult off = run(parse_scenario(std::string("name: t\n") + kPlatform + "networks:\n  - {name: m, onnx: m.onnx, onnx_recompose: false}\n",
                                     (dir / "t.yaml").string()));
  int nodes = 0;
  for (const Row* row : rows_of(off, 0, "box")) nodes += row->op != "constant";
  CHECK(nodes == 14);
  // (node by node, the five scalar initializers are constants read as float initializers: parameters, as every one)
  CHECK(summary_of(off, 0, "box").params == 32 + 5);
  // rsim import --summary says what it recomposed
  CliOut o = cli({"import", (dir / "m.onnx").string(), "--summary"});
  CHECK(o.out.find("recomposed: gelu × 1 layernorm × 1") != std::string::npos);
  fs::remove_all(dir);
}

TEST_CASE("ONNX recomposition: SiLU, HardSwish, the tanh GELU and MatMul + bias", "[onnx]") {
  // x (3, 8) → Sigmoid → Mul x → HardSigmoid → Mul → Pow 3 → Mul 0.044715 → Add x → Mul √(2/π) → Tanh → Add 1
  //         → Mul x → Mul 0.5 → MatMul W (8, 5) → Add b (5)
  OnnxModelSpec s;
  s.opset = 13;
  s.inputs = {{"x", {"3", "8"}, 1, {}}};
  s.outputs = {{"y", {"3", "5"}, 1, {}}};
  s.initializers = {{"three", {}, 1, {3}}, {"k", {}, 1, {0.044715}}, {"c", {}, 1, {0.7978845608}}, {"one", {}, 1, {1}},
                    {"half", {}, 1, {0.5}}, {"W", {"8", "5"}, 1, {}},    {"b", {"5"}, 1, {}}};
  s.nodes = {{"Sigmoid", "silu", {"x"}, {"s"}, {}},
             {"Mul", "silu_mul", {"x", "s"}, {"a"}, {}},
             {"HardSigmoid", "hswish", {"a"}, {"hs"}, {}},
             {"Mul", "hswish_mul", {"a", "hs"}, {"h"}, {}},
             {"Pow", "gelu", {"h", "three"}, {"p"}, {}},
             {"Mul", "g1", {"p", "k"}, {"q"}, {}},
             {"Add", "g2", {"h", "q"}, {"r"}, {}},
             {"Mul", "g3", {"r", "c"}, {"t"}, {}},
             {"Tanh", "g4", {"t"}, {"u"}, {}},
             {"Add", "g5", {"u", "one"}, {"v"}, {}},
             {"Mul", "g6", {"h", "v"}, {"w"}, {}},
             {"Mul", "g7", {"w", "half"}, {"g"}, {}},
             {"MatMul", "fc", {"g", "W"}, {"z"}, {}},
             {"Add", "fc_bias", {"z", "b"}, {"y"}, {}}};
  RunResult r = run_model("recompose2", s);
  auto rows = rows_of(r, 0, "box");
  REQUIRE(rows.size() == 4);
  CHECK(rows[0]->op == "silu");
  CHECK(rows[1]->op == "hardswish");
  CHECK(rows[2]->op == "gelu");
  CHECK(rows[3]->op == "linear");
  CHECK(rows[3]->layer == "fc");
  CHECK(rows[3]->cost.macs == 3 * 8 * 5.0);
  CHECK(rows[3]->cost.params == 8 * 5 + 5.0);
  CHECK(summary_of(r, 0, "box").params == 45);
}

TEST_CASE("rsim import of a UNet without flags: its symbols stay parameters though odd sizes do not fit it", "[onnx][cli]") {
  // x (N, 3, H, W) → Conv 3→8 3×3 pad 1 → MaxPool 2 → Conv 8→8 3×3 pad 1 → ConvTranspose 8→8 2×2 stride 2
  // → Concat with the first conv (16 channels) → Conv 16→2 1×1 → y; and the top half of the first
  // conv's rows, sliced at Shape(x)[2] / 2 → top. At H = 101 the pooled 50 comes back as 100 and the
  // concat fails: rsim's first probes; at multiples of 32 it fits, and the slice's end is H // 2.
  OnnxModelSpec s;
  s.opset = 13;
  s.inputs = {{"x", {"N", "3", "H", "W"}, 1, {}}};
  s.outputs = {{"y", {"N", "2", "H", "W"}, 1, {}}, {"top", {"N", "8", "?", "W"}, 1, {}}};
  s.initializers = {{"w1", {"8", "3", "3", "3"}, 1, {}}, {"w2", {"8", "8", "3", "3"}, 1, {}}, {"wt", {"8", "8", "2", "2"}, 1, {}},
                    {"w3", {"2", "16", "1", "1"}, 1, {}}, {"two", {}, 7, {2}},     {"ax0", {"1"}, 7, {0}},
                    {"i2", {}, 7, {2}},                   {"zero", {"1"}, 7, {0}}, {"axis2", {"1"}, 7, {2}}};
  s.nodes = {{"Conv", "c1", {"x", "w1"}, {"a"}, {attr_is("kernel_shape", {3, 3}), attr_is("pads", {1, 1, 1, 1})}},
             {"MaxPool", "pool", {"a"}, {"p"}, {attr_is("kernel_shape", {2, 2}), attr_is("strides", {2, 2})}},
             {"Conv", "c2", {"p", "w2"}, {"b"}, {attr_is("kernel_shape", {3, 3}), attr_is("pads", {1, 1, 1, 1})}},
             {"ConvTranspose", "up", {"b", "wt"}, {"u"}, {attr_is("kernel_shape", {2, 2}), attr_is("strides", {2, 2})}},
             {"Concat", "cat", {"a", "u"}, {"c"}, {attr_i("axis", 1)}},
             {"Conv", "c3", {"c", "w3"}, {"y"}, {attr_is("kernel_shape", {1, 1})}},
             {"Shape", "shape", {"x"}, {"sh"}, {}},
             {"Gather", "h", {"sh", "i2"}, {"hh"}, {}},
             {"Div", "half", {"hh", "two"}, {"hh2"}, {}},
             {"Unsqueeze", "end", {"hh2", "ax0"}, {"e"}, {}},
             {"Slice", "top", {"a", "zero", "e", "axis2"}, {"top"}, {}}};
  fs::path dir = scratch_dir("unet");
  std::ofstream(dir / "unet.onnx", std::ios::binary) << build_onnx_model(s);
  fs::create_directories(dir / "models");
  CliOut o = cli({"import", (dir / "unet.onnx").string(), "-o", (dir / "models" / "unet.yaml").string()});
  INFO(o.err);
  REQUIRE(o.code == 0);
  std::ifstream in(dir / "models" / "unet.yaml");
  const std::string yaml((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  CHECK(yaml.find("H // 2") != std::string::npos);  // the slice's end
  // it runs at sizes the user names: N 1, H 128, W 160 (and N 2, H 64, W 96)
  for (auto [n, h, w] : {std::array<long long, 3>{1, 128, 160}, std::array<long long, 3>{2, 64, 96}}) {
    RunResult r = run(parse_scenario(std::string("name: t\n") + kPlatform + "networks:\n  - {model: unet, args: {N: " + std::to_string(n) +
                                         ", H: " + std::to_string(h) + ", W: " + std::to_string(w) + "}}\n",
                                     (dir / "t.yaml").string()));
    std::map<std::string, const Row*> by;
    for (const Row* row : rows_of(r, 0, "box")) by[row->layer] = row;
    const double hw = static_cast<double>(h * w);
    CHECK(by["c1"]->cost.macs == n * 8 * hw * 27);                    // 3 × 3 × 3 taps per output
    CHECK(by["c2"]->cost.macs == n * 8 * (hw / 4) * 72);              // at half size, 8 × 3 × 3 taps
    CHECK(by["up"]->cost.macs == n * 8 * (hw / 4) * 8 * 4);           // each input pixel to a 2 × 2 block of 8 channels
    CHECK(by["c3"]->cost.macs == n * 2 * hw * 16);
    CHECK(by["top"]->output_shapes == std::to_string(n) + "x8x" + std::to_string(h / 2) + "x" + std::to_string(w));
  }
  // --dim N keeps just N; --input x=Nx3x128x160 fixes H and W: a model of one parameter, run at two batches
  CliOut k = cli({"import", (dir / "unet.onnx").string(), "--dim", "N", "--input", "x=Nx3x128x160", "-o", (dir / "models" / "unet_n.yaml").string()});
  INFO(k.err);
  REQUIRE(k.code == 0);
  for (long long n : {1LL, 4LL}) {
    RunResult r = run(parse_scenario(std::string("name: t\n") + kPlatform + "networks:\n  - {model: unet_n, args: {N: " + std::to_string(n) + "}}\n",
                                     (dir / "t.yaml").string()));
    for (const Row* row : rows_of(r, 0, "box"))
      if (row->layer == "c1") CHECK(row->cost.macs == n * 8 * 128.0 * 160 * 27);
  }
  // --check-dims: sizes the user names, every combination (2 × 2 × 1 here), and an impossible one
  // named with the node that rejects it: at H = 100 the pooled 50 comes back as 100 and fits, at
  // H = 102 the pooled 51 comes back as 102 too; at H = 101, pooled to 50 and upsampled to 100, the
  // concat of 101 and 100 rows fails
  CliOut checked = cli({"import", (dir / "unet.onnx").string(), "--check-dims", "N=1,8", "--check-dims", "H=100,102", "--check-dims", "W=96"});
  INFO(checked.err);
  CHECK(checked.code == 0);
  CliOut odd = cli({"import", (dir / "unet.onnx").string(), "--check-dims", "N=1", "--check-dims", "H=128,101", "--dim", "W=160", "-o",
                    (dir / "odd.yaml").string()});
  INFO(odd.err);
  CHECK(odd.code == 1);
  CHECK(odd.err.find("the model does not take N = 1, H = 101, W = 160 (--check-dims)") != std::string::npos);
  CHECK(odd.err.find("'cat'") != std::string::npos);
  CHECK_FALSE(fs::exists(dir / "odd.yaml"));
  CliOut unnamed = cli({"import", (dir / "unet.onnx").string(), "--check-dims", "N=1"});
  CHECK(unnamed.code == 1);
  CHECK(unnamed.err.find("--check-dims needs a size for every symbol the model keeps; 'H' has none") != std::string::npos);
  CliOut typo = cli({"import", (dir / "unet.onnx").string(), "--check-dims", "batch=1", "--dim", "H=64", "--dim", "W=64"});
  CHECK(typo.code == 1);
  CHECK(typo.err.find("--check-dims names 'batch', which is not a symbolic dimension the imported model keeps") != std::string::npos);
  CHECK(cli({"import", (dir / "unet.onnx").string(), "--check-dims", "N=1,x"}).code == 2);
  CliOut loose = cli({"import", (dir / "unet.onnx").string(), "--dim", "N"});
  CHECK(loose.code == 1);
  CHECK(loose.err.find("--dim keeps only the symbols it names, but H, W are neither kept nor fixed") != std::string::npos);
  CliOut wrong = cli({"import", (dir / "unet.onnx").string(), "--input", "x=batchx3x128x160"});
  CHECK(wrong.code == 1);
  CHECK(wrong.err.find("--input names dimension 0 of 'x' 'batch'; the model's is the symbol 'N'") != std::string::npos);
  // a model that takes no size rsim tries says so, naming its symbols and how to give sizes
  s.initializers.push_back({"fixed", {"1", "8", "16", "16"}, 1, {}});  // (a concat with a fixed 16 × 16 map: fits no probe)
  s.nodes[4].inputs = {"a", "fixed"};
  std::ofstream(dir / "bad.onnx", std::ios::binary) << build_onnx_model(s);
  CliOut bad = cli({"import", (dir / "bad.onnx").string()});
  INFO(bad.err);
  CHECK(bad.code == 1);
  CHECK(bad.err.find("cannot be derived for its symbolic dimensions (N, H, W) at rsim's probe sizes") != std::string::npos);
  CHECK(bad.err.find("--dim NAME=VALUE") != std::string::npos);
  fs::remove_all(dir);
}

TEST_CASE("ONNX Gather: indices known at import beyond the table are an error at the node", "[onnx]") {
  // token ids x (1, S) → embedding (100, 8); positions Range(0, S) → a position table of 16 rows
  OnnxModelSpec s;
  s.opset = 13;
  s.inputs = {{"x", {"1", "S"}, 7, {}}};
  s.outputs = {{"y", {"1", "S", "8"}, 1, {}}};
  s.initializers = {{"emb", {"100", "8"}, 1, {}}, {"pos", {"16", "8"}, 1, {}}, {"one", {}, 7, {1}}, {"zero", {}, 7, {0}}};
  s.nodes = {{"Gather", "tok", {"emb", "x"}, {"t"}, {}},
             {"Shape", "shape", {"x"}, {"sh"}, {}},
             {"Gather", "len", {"sh", "one"}, {"n"}, {}},
             {"Range", "ids", {"zero", "n", "one"}, {"r"}, {}},
             {"Gather", "positions", {"pos", "r"}, {"p"}, {}},
             {"Add", "sum", {"t", "p"}, {"y"}, {}}};
  auto with = [&](int len) { return run_model("gather_bounds", s, ", dims: {S: " + std::to_string(len) + "}"); };
  // S = 16 reads rows 0 … 15: every one there; the model's parameters are its two tables
  CHECK(summary_of(with(16), 0, "box").params == 100 * 8 + 16 * 8.0);
  // S = 20 reads rows 16 … 19 of 16
  const std::string e = error_of([&] { with(20); });
  CHECK(e.find("node 'positions' (Gather): index 16 is beyond the 16 entries of 16x8 along axis 0") != std::string::npos);
}

TEST_CASE("ONNX NonZero: refused as data-dependent unless dims binds NODE.count", "[onnx]") {
  // x (4, 6) → NonZero → (2, count) int64 indices
  OnnxModelSpec s;
  s.opset = 13;
  s.inputs = {{"x", {"4", "6"}, 1, {}}};
  s.outputs = {{"i", {"2", "?"}, 7, {}}};
  s.nodes = {{"NonZero", "nz", {"x"}, {"i"}, {}}};
  auto with = [&](const std::string& dims) { return run_model("nonzero", s, dims); };
  const std::string e = error_of([&] { with(""); });
  CHECK(e.find("node 'nz' (NonZero): has a data-dependent shape") != std::string::npos);
  CHECK(e.find("bind the count with dims: {nz.count: N} (N at most the input's 24 elements)") != std::string::npos);
  // 10 of the 24 nonzero: (2, 10) indices, 8 B each; one compare per input element
  RunResult r = with(", dims: {nz.count: 10}");
  auto rows = rows_of(r, 0, "box");
  REQUIRE(rows.size() == 1);
  CHECK(rows[0]->output_shapes == "2x10");
  CHECK(rows[0]->cost.output_total() == 2 * 10 * 8.0);
  CHECK(rows[0]->cost.flops == 24);
  CHECK(error_of([&] { with(", dims: {nz.count: 30}"); }).find("nz.count = 30 must be 1 to the input's 24 elements") != std::string::npos);
}

TEST_CASE("rsim import --summary and rsim run count a file's parameters alike", "[onnx][newcomer]") {
  // x [2, 8] → MatMul(W) → MatMul(DequantizeLinear(Wq, sc, zp)) → Mul(half) → y, and an initializer
  // U [5] no node reads. The file's weight initializers hold W 64 + U 5 + half 1 (fp32) + Wq 64
  // (int8) = 134 elements. The parameters, as the layers hold them: W 64 + Wq 64 + half 1 = 129
  // (U is read by no layer; sc and zp are a quantization scale and zero point). Before, the
  // summary said 134 and the YAML header 71 (the float initializers, sc included, Wq not).
  OnnxModelSpec s;
  s.inputs = {{"x", {"2", "8"}, 1, {}}};
  s.outputs = {{"y", {"2", "8"}, 1, {}}};
  s.initializers = {{"W", {"8", "8"}, 1, {}}, {"U", {"5"}, 1, {}}, {"Wq", {"8", "8"}, 3, {}}, {"sc", {}, 1, {}}, {"zp", {}, 3, {}}, {"half", {}, 1, {}}};
  s.nodes = {{"MatMul", "m1", {"x", "W"}, {"a"}, {}},
             {"DequantizeLinear", "dq", {"Wq", "sc", "zp"}, {"Wd"}, {}},
             {"MatMul", "m2", {"a", "Wd"}, {"b"}, {}},
             {"Mul", "mul", {"b", "half"}, {"y"}, {}}};
  CHECK(64 + 5 + 1 + 64 == 134);
  CHECK(64 + 64 + 1 == 129);
  RunResult r = run_model("params_agree", s);
  CHECK(summary_of(r, 0, "box").params == 129);
  fs::path dir = scratch_dir("params_agree_summary");
  std::ofstream(dir / "m.onnx", std::ios::binary) << build_onnx_model(s);
  CliOut o = cli({"import", (dir / "m.onnx").string(), "--summary"});
  INFO(o.out << o.err);
  CHECK(o.code == 0);
  CHECK(o.out.find("134 weight elements\n") != std::string::npos);  // the file's initializers
  CHECK(o.out.find("  parameters: 129, as rsim run counts them (") != std::string::npos);
  CliOut y = cli({"import", (dir / "m.onnx").string(), "-o", (dir / "m.yaml").string()});
  CHECK(y.code == 0);
  std::ifstream in(dir / "m.yaml");
  std::string head;
  std::getline(in, head);
  CHECK(head.find("; 129 parameters, as rsim run counts them).") != std::string::npos);
  fs::remove_all(dir);
}
