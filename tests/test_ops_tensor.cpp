// The general tensor operators (engine/ops/ops_tensor.cpp): shapes and costs derived by hand, one
// section per operator. Expected values are written as the arithmetic that gives them.
#include <catch2/catch.hpp>

#include "engine/ops/ops.hpp"

using namespace rsim;

namespace {

struct OpRun {
  std::vector<Shape> out;
  OpCost c;
};

OpRun run(const std::string& name, const std::string& yaml, const std::vector<Shape>& in) {
  const OpDef* op = builtin_ops().find(name);
  INFO("operator " << name);
  REQUIRE(op != nullptr);
  Diags d;
  Attrs a = read_attrs(*op, parse_yaml(yaml, "t.yaml"), d, "layer");
  REQUIRE(d.empty());
  OpArgs args{a, in, DType::fp32};
  OpRun r;
  r.out = op->infer(args);
  r.c = layer_cost(*op, args, r.out, 2.0);
  return r;
}

std::string shape_error(const std::string& name, const std::string& yaml, const std::vector<Shape>& in) {
  try {
    run(name, yaml, in);
  } catch (const ShapeError& e) {
    return e.what();
  }
  return "<no error>";
}

}  // namespace

TEST_CASE("conv_nd: N-d convolution with per-side pads, dilation and groups", "[ops][tensor]") {
  // 1×8×10×10, 16 out, 3×3 kernel, stride 2, pads top/left 1 bottom/right 0, groups 2
  OpRun r = run("conv_nd", "{out_channels: 16, kernel: [3, 3], stride: [2, 2], pads: [1, 1, 0, 0], groups: 2}", {{1, 8, 10, 10}});
  // Hout = floor((10 + 1 + 0 − 3)/2) + 1 = 5
  REQUIRE(r.out == std::vector<Shape>{{1, 16, 5, 5}});
  CHECK(r.c.macs == 16.0 * 5 * 5 * (8 / 2) * 9);          // Cout · Hout · Wout · Cin/g · kh·kw
  CHECK(r.c.params == 9.0 * (8 / 2) * 16 + 16);           // kernel · Cin/g · Cout + bias
  CHECK(r.c.flops == 2 * r.c.macs);
  CHECK(r.c.weight_bytes == r.c.params * 4);
  // 1-D, dilation 2: Lout = (20 − 2·(5 − 1) − 1)/1 + 1 = 12
  OpRun d = run("conv_nd", "{out_channels: 4, kernel: [5], dilation: [2], bias: false}", {{2, 3, 20}});
  REQUIRE(d.out == std::vector<Shape>{{2, 4, 12}});
  CHECK(d.c.macs == 2.0 * 4 * 12 * 3 * 5);
  CHECK(d.c.params == 5.0 * 3 * 4);
  // 3-D
  OpRun t = run("conv_nd", "{out_channels: 2, kernel: [3, 3, 3], pads: [1, 1, 1, 1, 1, 1]}", {{1, 1, 4, 4, 4}});
  REQUIRE(t.out == std::vector<Shape>{{1, 2, 4, 4, 4}});
  CHECK(t.c.macs == 2.0 * 64 * 27);
  CHECK(shape_error("conv_nd", "{out_channels: 4, kernel: [3, 3]}", {{1, 3, 8}}) == "a 2-d kernel needs a rank-4 input (N, C, ...), got 1x3x8");
}

TEST_CASE("conv_transpose_nd: N-d transposed convolution", "[ops][tensor]") {
  // 1×4×5×5 → 2 out, 3×3, stride 2, pads 1 each side, output_padding 1: (5−1)·2 + 1 + 2 + 1 − 2 = 10
  OpRun r = run("conv_transpose_nd", "{out_channels: 2, kernel: [3, 3], stride: [2, 2], pads: [1, 1, 1, 1], output_padding: [1, 1]}", {{1, 4, 5, 5}});
  REQUIRE(r.out == std::vector<Shape>{{1, 2, 10, 10}});
  CHECK(r.c.macs == 4.0 * 5 * 5 * 2 * 9);  // every input element scatters Cout · kh·kw
  CHECK(r.c.params == 4.0 * 2 * 9 + 2);
}

TEST_CASE("pool_nd: N-d pooling with ceil_mode and dilation", "[ops][tensor]") {
  // 1×2×7×7, 3×3, stride 2, ceil: ceil((7 − 3)/2) + 1 = 3
  OpRun r = run("pool_nd", "{mode: avg, kernel: [3, 3], stride: [2, 2], ceil_mode: true}", {{1, 2, 7, 7}});
  REQUIRE(r.out == std::vector<Shape>{{1, 2, 3, 3}});
  CHECK(r.c.flops == 2.0 * 3 * 3 * 9);  // kh·kw per output
  // ceil_mode drops a window that would start in the end padding: 1×1×4×4, k2 s2 pads end 1: ceil(3/2)+1 = 3, (3−1)·2 = 4 ≥ 4 → 2
  OpRun c = run("pool_nd", "{kernel: [2, 2], stride: [2, 2], pads: [0, 0, 1, 1], ceil_mode: true}", {{1, 1, 4, 4}});
  CHECK(c.out == std::vector<Shape>{{1, 1, 2, 2}});
  // 1-D max with dilation 2: window spans 2·(3−1)+1 = 5; (10 − 5)/1 + 1 = 6
  OpRun d = run("pool_nd", "{kernel: [3], dilation: [2]}", {{1, 1, 10}});
  CHECK(d.out == std::vector<Shape>{{1, 1, 6}});
  CHECK(d.c.flops == 6.0 * 3);
}

TEST_CASE("gemm: transposes and the C input", "[ops][tensor]") {
  // A given as (K, M) = 8×3, B as (N, K) = 5×8: Y is 3×5
  OpRun r = run("gemm", "{trans_a: true, trans_b: true}", {{8, 3}, {5, 8}, {5}});
  REQUIRE(r.out == std::vector<Shape>{{3, 5}});
  CHECK(r.c.macs == 3.0 * 8 * 5);
  CHECK(r.c.flops == 2.0 * 3 * 8 * 5 + 3 * 5);  // + one add of C per output
  CHECK(r.c.params == 0);
  CHECK(shape_error("gemm", "{}", {{3, 8}, {7, 5}}) == "gemm inner dimensions differ: 8 vs 7");
}

TEST_CASE("matmul: 1-D operands follow NumPy", "[ops][tensor]") {
  OpRun v = run("matmul", "{}", {{8}, {2, 8, 5}});  // (8) × (2, 8, 5) → (2, 5)
  REQUIRE(v.out == std::vector<Shape>{{2, 5}});
  CHECK(v.c.macs == 2.0 * 5 * 8);
  OpRun w = run("matmul", "{}", {{3, 8}, {8}});  // → (3)
  REQUIRE(w.out == std::vector<Shape>{{3}});
  CHECK(w.c.macs == 3.0 * 8);
  OpRun dot = run("matmul", "{}", {{8}, {8}});  // → scalar
  REQUIRE(dot.out == std::vector<Shape>{Shape{}});
  CHECK(dot.c.macs == 8);
}

TEST_CASE("instance_norm, lrn, prelu, log_softmax", "[ops][tensor]") {
  OpRun in = run("instance_norm", "{}", {{2, 3, 4, 4}});
  CHECK(in.c.flops == 8.0 * 2 * 3 * 16);
  CHECK(in.c.params == 2.0 * 3);
  OpRun l = run("lrn", "{size: 5}", {{1, 8, 2, 2}});
  CHECK(l.c.flops == (2.0 * 5 + 3) * 32);
  OpRun p = run("prelu", "{slope_shape: [3, 1, 1]}", {{2, 3, 4, 4}});
  CHECK(p.c.flops == 2.0 * 96);
  CHECK(p.c.params == 3);
  CHECK(shape_error("prelu", "{slope_shape: [5]}", {{2, 3}}) == "cannot broadcast 2x3 with 5: dimension 1 is 3 vs 5");
  OpRun ls = run("log_softmax", "{axis: 1}", {{4, 10}});
  CHECK(ls.c.flops == 5.0 * 40);
}

TEST_CASE("elementwise unary operators: FLOPs per element", "[ops][tensor]") {
  const std::pair<const char*, double> table[] = {{"erf", 1}, {"exp", 1}, {"log", 1}, {"sqrt", 1}, {"reciprocal", 1}, {"neg", 1},
                                                  {"abs", 1}, {"floor", 1}, {"ceil", 1}, {"round", 1}, {"sign", 1}, {"sin", 1},
                                                  {"cos", 1}, {"logical_not", 1}, {"clip", 2}, {"softplus", 3}, {"elu", 4},
                                                  {"selu", 5}, {"mish", 9}, {"cumsum", 1}};
  for (const auto& [name, f] : table) {
    INFO(name);
    OpRun r = run(name, "{}", {{2, 3, 5}});
    CHECK(r.out == std::vector<Shape>{{2, 3, 5}});
    CHECK(r.c.flops == f * 30);
    CHECK(r.c.input_bytes == std::vector<double>{30.0 * 4});
    CHECK(r.c.output_bytes == std::vector<double>{30.0 * 4});
  }
}

TEST_CASE("broadcasting binary, variadic and where", "[ops][tensor]") {
  for (const char* name : {"pow", "mod", "equal", "less", "less_equal", "greater", "greater_equal", "logical_and", "logical_or", "logical_xor"}) {
    INFO(name);
    OpRun r = run(name, "{}", {{4, 1, 3}, {5, 1}});  // → 4×5×3
    REQUIRE(r.out == std::vector<Shape>{{4, 5, 3}});
    CHECK(r.c.flops == 60);
  }
  OpRun mx = run("max", "{}", {{2, 3}, {3}, {1, 3}});
  CHECK(mx.out == std::vector<Shape>{{2, 3}});
  CHECK(mx.c.flops == (3 - 1) * 6.0);
  OpRun mean = run("mean", "{}", {{2, 3}, {2, 3}});
  CHECK(mean.c.flops == 2 * 6.0);  // one add and one scale per output
  OpRun w = run("where", "{}", {{1, 4}, {3, 1}, {1}});
  CHECK(w.out == std::vector<Shape>{{3, 4}});
  CHECK(w.c.flops == 12);
  CHECK(shape_error("equal", "{}", {{3}, {4}}) == "cannot broadcast 3 with 4: dimension 0 is 3 vs 4");
}

TEST_CASE("reductions and arg-reductions", "[ops][tensor]") {
  OpRun m = run("reduce_mean", "{axes: [-1], keepdims: true}", {{2, 3, 8}});
  REQUIRE(m.out == std::vector<Shape>{{2, 3, 1}});
  CHECK(m.c.flops == 48 + 6);  // an add per input element, a divide per output
  OpRun s = run("reduce_sum", "{axes: [0, 2], keepdims: false}", {{2, 3, 8}});
  REQUIRE(s.out == std::vector<Shape>{{3}});
  CHECK(s.c.flops == 48);
  OpRun all = run("reduce_max", "{keepdims: false}", {{2, 3}});
  CHECK(all.out == std::vector<Shape>{Shape{}});
  OpRun l2 = run("reduce_l2", "{axes: [1]}", {{4, 5}});
  CHECK(l2.c.flops == 2.0 * 20 + 4);
  OpRun a = run("argmax", "{axis: 1, keepdims: false}", {{4, 5}});
  CHECK(a.out == std::vector<Shape>{{4}});
  CHECK(a.c.flops == 20);
  CHECK(shape_error("reduce_sum", "{axes: [1, -1]}", {{2, 3}}) == "reduce_sum lists axis -1 twice");
}

TEST_CASE("gather: one row per index, the table as a weight", "[ops][tensor]") {
  // token embedding: table 1000×64 (a weight), indices 2×7
  OpRun e = run("gather", "{axis: 0, data_shape: [1000, 64]}", {{2, 7}});
  REQUIRE(e.out == std::vector<Shape>{{2, 7, 64}});
  CHECK(e.c.params == 1000.0 * 64);
  CHECK(e.c.weight_bytes == 2.0 * 7 * 64 * 4);      // rows read, not the table
  CHECK(e.c.input_bytes == std::vector<double>{14.0 * 4});  // the indices
  CHECK(e.c.output_bytes == std::vector<double>{2.0 * 7 * 64 * 4});
  // x[:, 0] on an activation: constant scalar index, axis 1
  OpRun c = run("gather", "{axis: 1, indices_shape: []}", {{2, 5, 8}});
  REQUIRE(c.out == std::vector<Shape>{{2, 8}});
  CHECK(c.c.params == 0);
  CHECK(c.c.input_bytes == std::vector<double>{16.0 * 4});
  CHECK(shape_error("gather", "{data_shape: [4, 4]}", {{2}, {3}}) ==
        "gather takes 1 input here (data, indices; minus those given as data_shape / indices_shape), got 2");
}

TEST_CASE("constant, expand, tile, pad, slice_nd, interpolate", "[ops][tensor]") {
  OpRun k = run("constant", "{shape: [3, 4], params: true}", {});
  CHECK(k.out == std::vector<Shape>{{3, 4}});
  CHECK(k.c.params == 12);
  CHECK(k.c.output_bytes == std::vector<double>{0});
  OpRun s = run("constant", "{shape: []}", {});
  CHECK(s.out == std::vector<Shape>{Shape{}});
  CHECK(s.c.params == 0);
  OpRun e = run("expand", "{shape: [2, 1, 6]}", {{3, 1}});
  REQUIRE(e.out == std::vector<Shape>{{2, 3, 6}});
  CHECK(e.c.flops == 0);
  CHECK(e.c.output_bytes == std::vector<double>{36.0 * 4});
  OpRun t = run("tile", "{repeats: [2, 3]}", {{4, 5}});
  CHECK(t.out == std::vector<Shape>{{8, 15}});
  OpRun p = run("pad", "{pads: [0, 1, 0, 2]}", {{4, 5}});
  CHECK(p.out == std::vector<Shape>{{4, 8}});
  CHECK(shape_error("pad", "{pads: [0, -5, 0, 0]}", {{4, 5}}) == "padding axis 1 of 4x5 leaves 0 elements");
  // axis 1 reversed: start 9, end before 0 (−11 + 10 = −1), step −2: 9, 7, 5, 3, 1 → 5
  OpRun sl = run("slice_nd", "{starts: [9, 1], ends: [-11, 3], axes: [1, 0], steps: [-2, 1]}", {{4, 10}});
  CHECK(sl.out == std::vector<Shape>{{2, 5}});
  OpRun i = run("interpolate", "{size: [1, 3, 8, 8], mode: linear}", {{1, 3, 4, 4}});
  REQUIRE(i.out == std::vector<Shape>{{1, 3, 8, 8}});
  CHECK(i.c.flops == 3.0 * (4 - 1) * 192);  // two axes resized: 3 lerps of 3 FLOPs per output
  OpRun cu = run("interpolate", "{size: [1, 3, 8, 4], mode: cubic}", {{1, 3, 4, 4}});
  CHECK(cu.c.flops == 2.0 * 4 * 96);  // one axis: 4 taps, a multiply-add each
}

// ============================================================== recurrent, einsum, scatter

TEST_CASE("recurrent: a GRU and a plain RNN, MACs T·B·D·G·H·(I+H), parameters W + R (+ biases)", "[ops]") {
  // a bidirectional GRU over x (T 7, B 2, I 5), hidden 4, biases: G = 3
  OpRun g = run("recurrent", "{cell: gru, hidden: 4, bidirectional: true}", {{7, 2, 5}});
  REQUIRE(g.out.size() == 2);
  CHECK(g.out[0] == Shape{7, 2, 2, 4});
  CHECK(g.out[1] == Shape{2, 2, 4});
  CHECK(g.c.macs == 7.0 * 2 * 2 * 3 * 4 * (5 + 4));
  CHECK(g.c.params == 2 * 3 * 4 * (5 + 4) + 2 * 2 * 3 * 4.0);
  CHECK(g.c.flops == 2 * g.c.macs + 7 * 2 * 2 * 4 * (2 * 3 + 16.0));
  // a plain RNN, batch first, no bias: x (B 3, T 6, I 2), hidden 8
  OpRun r = run("recurrent", "{cell: rnn, hidden: 8, batch_first: true, bias: false}", {{3, 6, 2}});
  CHECK(r.out[0] == Shape{3, 6, 1, 8});
  CHECK(r.out[1] == Shape{3, 1, 8});
  CHECK(r.c.macs == 6.0 * 3 * 1 * 1 * 8 * (2 + 8));
  CHECK(r.c.params == 8 * (2 + 8.0));
  CHECK(r.c.weight_bytes == 80 * 4.0);
  CHECK(shape_error("recurrent", "{cell: gru, hidden: 4, peepholes: true}", {{7, 2, 5}}) == "peepholes are an LSTM's");
}

TEST_CASE("einsum: shapes and MACs from the equation, an ellipsis for leading dimensions", "[ops]") {
  // '...ij,...jk->...ik' over (3, 2, 4) and (4, 5) (broadcast): 3 · 2 · 4 · 5 = 120 MACs, (3, 2, 5)
  OpRun m = run("einsum", "{equation: '...ij,...jk->...ik'}", {{3, 2, 4}, {4, 5}});
  CHECK(m.out[0] == Shape{3, 2, 5});
  CHECK(m.c.macs == 120);
  // a transpose moves data, computes nothing; a trace-like sum adds each input element once
  CHECK(run("einsum", "{equation: 'ij->ji'}", {{3, 4}}).c.flops == 0);
  CHECK(run("einsum", "{equation: 'ij->i'}", {{3, 4}}).c.flops == 12);
  CHECK(shape_error("einsum", "{equation: 'ij,jk->ik'}", {{3, 4}, {5, 6}}) == "einsum: a label is 4 in one operand and 5 in another (5x6)");
}

TEST_CASE("scatter: a copy of data, the indices read as int64", "[ops]") {
  // data (6, 4), indices (2, 1), updates (2, 4): reads 24 · 4 + 2 · 8 + 8 · 4 B, writes 24 · 4 B
  OpRun s = run("scatter", "{}", {{6, 4}, {2, 1}, {2, 4}});
  CHECK(s.out[0] == Shape{6, 4});
  CHECK(s.c.flops == 0);
  CHECK(s.c.input_total() == 24 * 4.0 + 2 * 8.0 + 8 * 4.0);
  CHECK(s.c.output_total() == 24 * 4.0);
  CHECK(run("scatter", "{reduction: add}", {{6, 4}, {2, 1}, {2, 4}}).c.flops == 8);
}

TEST_CASE("topk and grid_sample: shapes and costs by hand", "[ops]") {
  // top 3 of 10 along the last axis of (4, 10): values and int64 indices (4, 3); a heap of 3:
  // ⌈log2 4⌉ = 2 compares per entry, 40 · 2 = 80; writes 12 · 4 + 12 · 8 B
  OpRun t = run("topk", "{k: 3}", {{4, 10}});
  REQUIRE(t.out.size() == 2);
  CHECK(t.out[0] == Shape{4, 3});
  CHECK(t.out[1] == Shape{4, 3});
  CHECK(t.c.flops == 80);
  CHECK(t.c.output_total() == 12 * 4.0 + 12 * 8.0);
  CHECK(shape_error("topk", "{k: 11}", {{4, 10}}) == "topk k = 11 must be 1 to the axis's 10");
  // x (1, 3, 8, 8) sampled at a (1, 4, 5, 2) grid: (1, 3, 4, 5), 60 outputs of 4 bilinear taps at
  // 2 FLOPs each = 480; reads min(60 · 4, 192) = 192 input elements and the grid's 40, at 4 B
  OpRun g = run("grid_sample", "{}", {{1, 3, 8, 8}, {1, 4, 5, 2}});
  CHECK(g.out[0] == Shape{1, 3, 4, 5});
  CHECK(g.c.flops == 480);
  CHECK(g.c.input_total() == (192 + 40) * 4.0);
  CHECK(run("grid_sample", "{mode: nearest}", {{1, 3, 8, 8}, {1, 4, 5, 2}}).c.flops == 120);
}
