// Built-in operators: shapes and costs derived by hand, one section per operator, plus a few
// networks built through build_network. Every expected value is written as the arithmetic that
// produces it (never a number printed by rsim); comments give the rule being applied.
#include <catch2/catch.hpp>

#include <algorithm>
#include <memory>
#include <string>
#include <vector>

#include "engine/model/diagnostics.hpp"
#include "engine/graph/graph.hpp"
#include "engine/ops/ops.hpp"
#include "scripting/lua_expr.hpp"

using namespace rsim;

namespace {

using Bytes = std::vector<double>;

struct OpRun {
  std::vector<Shape> out;
  OpCost c;
};

// Every collected error, formatted (for INFO on failure).
std::string all_diagnostics(const Diags& d) {
  std::string s;
  for (const auto& diag : d.list()) s += format_diagnostic(diag);
  return s;
}

const OpDef& op_named(const std::string& name) {
  const OpDef* op = builtin_ops().find(name);
  INFO("operator " << name);
  REQUIRE(op != nullptr);
  return *op;
}

Attrs attrs_of(const OpDef& op, const std::string& yaml) {
  Diags d;
  CNode layer = parse_yaml(yaml, "t.yaml");
  Attrs a = read_attrs(op, layer, d, "layer");
  INFO(all_diagnostics(d));
  REQUIRE(d.empty());
  return a;
}

// Shape inference and cost of one operator on the given inputs.
OpRun run(const std::string& name, const std::string& yaml, const std::vector<Shape>& in, DType dt = DType::fp32,
          double flops_per_mac = 2.0) {
  const OpDef& op = op_named(name);
  Attrs a = attrs_of(op, yaml);
  OpArgs args{a, in, dt};
  OpRun r;
  r.out = op.infer(args);
  r.c = layer_cost(op, args, r.out, flops_per_mac);
  return r;
}

// The ShapeError text an operator raises for these inputs ("<no error>" if it accepts them).
std::string shape_error(const std::string& name, const std::string& yaml, const std::vector<Shape>& in) {
  const OpDef& op = op_named(name);
  Attrs a = attrs_of(op, yaml);
  OpArgs args{a, in, DType::fp32};
  try {
    op.infer(args);
  } catch (const ShapeError& e) {
    return e.what();
  }
  return "<no error>";
}

// An operator that does no arithmetic and has no weights.
void check_no_work(const OpCost& c) {
  CHECK(c.macs == 0);
  CHECK(c.flops == 0);
  CHECK(c.params == 0);
  CHECK(c.weight_bytes == 0);
}

}  // namespace

// ============================================================== registry

TEST_CASE("the registry holds exactly the operators tested here", "[ops]") {
  // A new built-in operator must get hand-derived tests in this file; this list is the reminder.
  std::vector<std::string> expected = {
      "adaptive_avg_pool2d", "add",          "avg_pool2d", "batchnorm",   "concat",     "conv2d",
      "conv_transpose2d",    "depthwise_conv2d", "div",    "flatten",     "gelu",       "global_avg_pool",
      "hardsigmoid",         "hardswish",    "identity",   "layernorm",   "leaky_relu", "linear",
      "matmul",              "max_pool2d",   "mul",        "permute",     "relu",       "relu6",
      "reshape",             "reshape_copy", "sigmoid",    "silu",        "slice",      "softmax",
      "split",               "sub",          "tanh",       "transpose",   "upsample"};
  // the general tensor operators of engine/ops/ops_tensor.cpp and ops_sequence.cpp, tested in test_ops_tensor.cpp
  for (const char* n : {"abs", "argmax", "argmin", "ceil", "clip", "constant", "conv_nd", "conv_transpose_nd", "cos", "cumsum", "elu",
                        "equal", "erf", "exp", "expand", "floor", "gather", "gemm", "greater", "greater_equal", "instance_norm",
                        "interpolate", "less", "less_equal", "log", "log_softmax", "logical_and", "logical_not", "logical_or",
                        "logical_xor", "lrn", "max", "mean", "min", "mish", "mod", "neg", "pad", "pool_nd", "pow", "prelu",
                        "reciprocal", "reduce_l1", "reduce_l2", "reduce_log_sum_exp", "reduce_max", "reduce_mean", "reduce_min",
                        "reduce_prod", "reduce_sum", "reduce_sum_square", "round", "selu", "sign", "sin", "slice_nd", "softplus",
                        "sqrt", "sum", "tile", "where", "scatter", "recurrent", "einsum", "topk", "grid_sample", "nonzero"})
    expected.push_back(n);
  // transformer operators: tested in test_transformer.cpp
  for (const char* t : {"attention", "embedding", "geglu", "kv_cache", "mla_attention", "moe", "rmsnorm", "rope", "swiglu"}) expected.push_back(t);
  std::sort(expected.begin(), expected.end());
  CHECK(builtin_ops().names() == expected);
  for (const auto& n : builtin_ops().names()) {
    INFO(n);
    CHECK_FALSE(op_named(n).formula.empty());
    CHECK_FALSE(op_named(n).summary.empty());
  }
  // aliases resolve to their operator
  CHECK(builtin_ops().find("bn") == builtin_ops().find("batchnorm"));
  CHECK(builtin_ops().find("swish") == builtin_ops().find("silu"));
  CHECK(builtin_ops().find("cat") == builtin_ops().find("concat"));
  CHECK(builtin_ops().find("view") == builtin_ops().find("reshape"));
  CHECK(builtin_ops().find("fc") == builtin_ops().find("linear"));
  CHECK(builtin_ops().find("bmm") == builtin_ops().find("matmul"));
  CHECK(builtin_ops().find("maxpool") == builtin_ops().find("max_pool2d"));
  CHECK(builtin_ops().find("avgpool") == builtin_ops().find("avg_pool2d"));
  CHECK(builtin_ops().find("resize") == builtin_ops().find("upsample"));
  CHECK(builtin_ops().find("dropout") == builtin_ops().find("identity"));
  CHECK(builtin_ops().find("no_such_op") == nullptr);
}

// ============================================================== conv2d

TEST_CASE("conv2d: 3x3, padding 1, stride 1, with bias", "[ops]") {
  auto r = run("conv2d", "{out_channels: 64, kernel: 3, padding: 1}", {{1, 64, 56, 56}});
  // Hout = floor((56 + 2·1 − 1·(3−1) − 1)/1) + 1 = 56
  REQUIRE(r.out == std::vector<Shape>{{1, 64, 56, 56}});
  // 1·64·56·56 outputs × (64/1)·3·3 MACs each
  CHECK(r.c.macs == 1.0 * 64 * 56 * 56 * 64 * 3 * 3);
  CHECK(r.c.flops == 2.0 * (1.0 * 64 * 56 * 56 * 64 * 3 * 3));
  // kh·kw·(Cin/groups)·Cout weights + Cout biases
  CHECK(r.c.params == 3.0 * 3 * 64 * 64 + 64);
  CHECK(r.c.weight_bytes == (3.0 * 3 * 64 * 64 + 64) * 4);
  CHECK(r.c.input_bytes == Bytes{1.0 * 64 * 56 * 56 * 4});
  CHECK(r.c.output_bytes == Bytes{1.0 * 64 * 56 * 56 * 4});
  CHECK(r.c.input_total() == 1.0 * 64 * 56 * 56 * 4);
  CHECK(r.c.output_total() == 1.0 * 64 * 56 * 56 * 4);

  // padding 'same' at stride 1 is the same layer
  auto same = run("conv2d", "{out_channels: 64, kernel: 3, padding: same}", {{1, 64, 56, 56}});
  CHECK(same.out == r.out);
  CHECK(same.c.macs == r.c.macs);
  CHECK(same.c.params == r.c.params);
}

TEST_CASE("conv2d: executed MACs skip the taps on padding", "[ops]") {
  // 3×3, padding 1, stride 1 on 56×56: along each axis the first and last output positions lose
  // one tap each, so 56·3 − 2 = 166 taps land inside; MACs executed = N·Cout·Cin·166·166
  auto r = run("conv2d", "{out_channels: 64, kernel: 3, padding: 1}", {{1, 64, 56, 56}});
  CHECK(r.c.macs_executed == 1.0 * 64 * 64 * 166 * 166);
  CHECK(r.c.flops_executed == 2.0 * 64 * 64 * 166 * 166);
  // ResNet stem, 7×7 stride 2 padding 3 on 224: output o reads inputs 2o − 3 … 2o + 3. Outside:
  // o = 0 loses 3 taps, o = 1 loses 1; at the far end 2o + 3 ≤ 223 holds up to o = 110, and
  // o = 111 reads 225 and 224 (2 lost). 112·7 − 3 − 1 − 2 = 778 per axis.
  auto stem = run("conv2d", "{out_channels: 64, kernel: 7, stride: 2, padding: 3, bias: false}", {{1, 3, 224, 224}});
  CHECK(stem.c.macs_executed == 1.0 * 64 * 3 * 778 * 778);
  // 'valid' pads nothing: every tap is inside (the conventional count)
  auto valid = run("conv2d", "{out_channels: 8, kernel: [3, 5], padding: valid, stride: [2, 1], dilation: [2, 1]}", {{1, 4, 20, 17}});
  CHECK(valid.c.macs_executed == valid.c.macs);
  // Against a count of every (output position, tap) pair along each axis, written here, over
  // strides, dilations, paddings and sizes, including 'same' with an odd total padding (the
  // extra row goes after: begin = floor(total / 2))
  auto count = [](long long in, long long out, long long k, long long st, long long d, long long begin) {
    long long n = 0;
    for (long long o = 0; o < out; ++o)
      for (long long j = 0; j < k; ++j) n += (o * st - begin + j * d >= 0 && o * st - begin + j * d < in);
    return static_cast<double>(n);
  };
  for (long long in : {1, 2, 5, 9, 16})
    for (long long k : {1, 2, 3, 5})
      for (long long st : {1, 2, 3})
        for (long long d : {1, 2})
          for (long long pad : {0, 1, 2, 4}) {
            const long long out = (in + 2 * pad - d * (k - 1) - 1) / st + 1;
            if (in + 2 * pad - d * (k - 1) - 1 < 0) continue;
            INFO("in " << in << " k " << k << " stride " << st << " dilation " << d << " padding " << pad);
            auto e = run("conv2d", "{out_channels: 1, kernel: [" + std::to_string(k) + ", 1], stride: [" + std::to_string(st) + ", 1], dilation: [" +
                                       std::to_string(d) + ", 1], padding: [" + std::to_string(pad) + ", 0]}",
                         {{1, 1, in, 1}});
            REQUIRE(e.out[0][2] == out);
            CHECK(e.c.macs_executed == count(in, out, k, st, d, pad));
            auto sm = run("conv2d", "{out_channels: 1, kernel: [" + std::to_string(k) + ", 1], stride: [" + std::to_string(st) + ", 1], dilation: [" +
                                        std::to_string(d) + ", 1], padding: same}",
                          {{1, 1, in, 1}});
            const long long so = (in + st - 1) / st, total = std::max<long long>(0, (so - 1) * st + d * (k - 1) + 1 - in);
            REQUIRE(sm.out[0][2] == so);
            CHECK(sm.c.macs_executed == count(in, so, k, st, d, total / 2));
          }
}

TEST_CASE("conv2d: 7x7 stride 2 padding 3 (ResNet stem), no bias", "[ops]") {
  auto r = run("conv2d", "{out_channels: 64, kernel: 7, stride: 2, padding: 3, bias: false}", {{1, 3, 224, 224}});
  // Hout = floor((224 + 2·3 − 1·(7−1) − 1)/2) + 1 = floor(223/2) + 1 = 112
  REQUIRE(r.out == std::vector<Shape>{{1, 64, 112, 112}});
  CHECK(r.c.macs == 1.0 * 64 * 112 * 112 * 3 * 7 * 7);
  CHECK(r.c.flops == 2.0 * 64 * 112 * 112 * 3 * 7 * 7);
  CHECK(r.c.params == 7.0 * 7 * 3 * 64);
  CHECK(r.c.weight_bytes == 7.0 * 7 * 3 * 64 * 4);
  CHECK(r.c.input_bytes == Bytes{1.0 * 3 * 224 * 224 * 4});
  CHECK(r.c.output_bytes == Bytes{1.0 * 64 * 112 * 112 * 4});
}

TEST_CASE("conv2d: rectangular kernel with per-axis padding, batch 2", "[ops]") {
  auto r = run("conv2d", "{out_channels: 16, kernel: [3, 5], padding: [1, 2]}", {{2, 8, 10, 12}});
  // H: 10 + 2·1 − 3 + 1 = 10;  W: 12 + 2·2 − 5 + 1 = 12
  REQUIRE(r.out == std::vector<Shape>{{2, 16, 10, 12}});
  CHECK(r.c.macs == 2.0 * 16 * 10 * 12 * 8 * 3 * 5);
  CHECK(r.c.flops == 2.0 * (2.0 * 16 * 10 * 12 * 8 * 3 * 5));
  CHECK(r.c.params == 3.0 * 5 * 8 * 16 + 16);
  CHECK(r.c.weight_bytes == (3.0 * 5 * 8 * 16 + 16) * 4);
  CHECK(r.c.input_bytes == Bytes{2.0 * 8 * 10 * 12 * 4});
  CHECK(r.c.output_bytes == Bytes{2.0 * 16 * 10 * 12 * 4});

  // stride [2, 1]: H = floor((10 + 2 − 3)/2) + 1 = 5, W = 12
  auto s = run("conv2d", "{out_channels: 16, kernel: [3, 5], padding: [1, 2], stride: [2, 1]}", {{2, 8, 10, 12}});
  CHECK(s.out == std::vector<Shape>{{2, 16, 5, 12}});
  CHECK(s.c.macs == 2.0 * 16 * 5 * 12 * 8 * 3 * 5);
}

TEST_CASE("conv2d: dilation enlarges the kernel's reach, not its MACs", "[ops]") {
  // effective kernel = 2·(3−1) + 1 = 5; Hout = 32 − 5 + 1 = 28
  auto r = run("conv2d", "{out_channels: 16, kernel: 3, dilation: 2, bias: false}", {{1, 16, 32, 32}});
  REQUIRE(r.out == std::vector<Shape>{{1, 16, 28, 28}});
  CHECK(r.c.macs == 1.0 * 16 * 28 * 28 * 16 * 3 * 3);
  CHECK(r.c.params == 3.0 * 3 * 16 * 16);
  CHECK(r.c.output_bytes == Bytes{1.0 * 16 * 28 * 28 * 4});

  // padding 2 restores the size: 32 + 2·2 − 5 + 1 = 32
  auto p = run("conv2d", "{out_channels: 16, kernel: 3, dilation: 2, padding: 2, bias: false}", {{1, 16, 32, 32}});
  CHECK(p.out == std::vector<Shape>{{1, 16, 32, 32}});
  CHECK(p.c.macs == 1.0 * 16 * 32 * 32 * 16 * 3 * 3);

  // dilation [1, 3]: H = 32 − 3 + 1 = 30; W: effective 3·2 + 1 = 7, 32 − 7 + 1 = 26
  auto pair = run("conv2d", "{out_channels: 16, kernel: 3, dilation: [1, 3], bias: false}", {{1, 16, 32, 32}});
  CHECK(pair.out == std::vector<Shape>{{1, 16, 30, 26}});

  // 'same' with dilation keeps the size at stride 1
  auto same = run("conv2d", "{out_channels: 16, kernel: 3, dilation: 2, padding: same, bias: false}", {{1, 16, 32, 32}});
  CHECK(same.out == std::vector<Shape>{{1, 16, 32, 32}});
}

TEST_CASE("conv2d: grouped convolution divides MACs and weights by the group count", "[ops]") {
  auto r = run("conv2d", "{out_channels: 64, kernel: 3, padding: 1, groups: 4}", {{1, 32, 56, 56}});
  REQUIRE(r.out == std::vector<Shape>{{1, 64, 56, 56}});
  // each output sees Cin/groups = 32/4 input channels
  CHECK(r.c.macs == 1.0 * 64 * 56 * 56 * (32 / 4) * 3 * 3);
  CHECK(r.c.flops == 2.0 * 64 * 56 * 56 * (32 / 4) * 3 * 3);
  CHECK(r.c.params == 3.0 * 3 * (32 / 4) * 64 + 64);
  CHECK(r.c.weight_bytes == (3.0 * 3 * (32 / 4) * 64 + 64) * 4);
  CHECK(r.c.input_bytes == Bytes{1.0 * 32 * 56 * 56 * 4});
  CHECK(r.c.output_bytes == Bytes{1.0 * 64 * 56 * 56 * 4});
}

TEST_CASE("conv2d: depthwise through groups = Cin", "[ops]") {
  // seed 000 experiment 4: 32→32 3×3 on 56×56, groups 32, 'same', no bias
  auto r = run("conv2d", "{out_channels: 32, kernel: 3, padding: same, groups: 32, bias: false}", {{1, 32, 56, 56}});
  REQUIRE(r.out == std::vector<Shape>{{1, 32, 56, 56}});
  CHECK(r.c.macs == 1.0 * 32 * 56 * 56 * (32 / 32) * 3 * 3);
  CHECK(r.c.params == 3.0 * 3 * (32 / 32) * 32);
  CHECK(r.c.weight_bytes == 3.0 * 3 * 32 * 4);
  // Seed 000 writes Kh·Kw·Cin·Cout·Hout·Wout without /groups: that overstates by the group count.
  CHECK(r.c.macs * 32 == 3.0 * 3 * 32 * 32 * 56 * 56);

  // The group sweep: MACs fall as 1/groups.
  for (int g : {1, 2, 4, 8, 16, 32}) {
    INFO("groups " << g);
    auto s = run("conv2d", "{out_channels: 32, kernel: 3, padding: same, bias: false, groups: " + std::to_string(g) + "}",
                 {{1, 32, 56, 56}});
    CHECK(s.c.macs == 1.0 * 32 * 56 * 56 * (32.0 / g) * 3 * 3);
    CHECK(s.c.params == 3.0 * 3 * (32.0 / g) * 32);
  }
}

TEST_CASE("conv2d: padding 'same' with stride 2 gives ceil(H / 2)", "[ops]") {
  auto r = run("conv2d", "{out_channels: 8, kernel: 3, stride: 2, padding: same, bias: false}", {{1, 8, 15, 16}});
  // ceil(15/2) = 8, ceil(16/2) = 8
  REQUIRE(r.out == std::vector<Shape>{{1, 8, 8, 8}});
  CHECK(r.c.macs == 1.0 * 8 * 8 * 8 * 8 * 3 * 3);
  CHECK(r.c.input_bytes == Bytes{1.0 * 8 * 15 * 16 * 4});
  CHECK(r.c.output_bytes == Bytes{1.0 * 8 * 8 * 8 * 4});

  // 224 at stride 2 → 112 (with a 7×7 kernel)
  auto big = run("conv2d", "{out_channels: 64, kernel: 7, stride: 2, padding: same}", {{1, 3, 224, 224}});
  CHECK(big.out == std::vector<Shape>{{1, 64, 224 / 2, 224 / 2}});
}

TEST_CASE("conv2d: padding 'valid' means no padding", "[ops]") {
  auto r = run("conv2d", "{out_channels: 4, kernel: 3, padding: valid}", {{1, 8, 10, 10}});
  // 10 − 3 + 1 = 8
  REQUIRE(r.out == std::vector<Shape>{{1, 4, 8, 8}});
  CHECK(r.c.macs == 1.0 * 4 * 8 * 8 * 8 * 3 * 3);
  CHECK(r.c.params == 3.0 * 3 * 8 * 4 + 4);

  // stride 2: floor((10 − 3)/2) + 1 = 4
  auto s = run("conv2d", "{out_channels: 4, kernel: 3, stride: 2, padding: valid}", {{1, 8, 10, 10}});
  CHECK(s.out == std::vector<Shape>{{1, 4, 4, 4}});
  CHECK(s.c.macs == 1.0 * 4 * 4 * 4 * 8 * 3 * 3);

  // the default padding is 0, i.e. 'valid'
  auto def = run("conv2d", "{out_channels: 4, kernel: 3}", {{1, 8, 10, 10}});
  CHECK(def.out == r.out);
}

TEST_CASE("conv2d: the bias adds Cout parameters and no FLOPs", "[ops]") {
  auto with = run("conv2d", "{out_channels: 32, kernel: 1, bias: true}", {{1, 16, 7, 7}});
  auto without = run("conv2d", "{out_channels: 32, kernel: 1, bias: false}", {{1, 16, 7, 7}});
  CHECK(with.c.params == 1.0 * 1 * 16 * 32 + 32);
  CHECK(without.c.params == 1.0 * 1 * 16 * 32);
  CHECK(with.c.weight_bytes - without.c.weight_bytes == 32.0 * 4);
  CHECK(with.c.macs == 1.0 * 32 * 7 * 7 * 16);
  CHECK(with.c.flops == without.c.flops);
  CHECK(with.c.flops == 2.0 * 32 * 7 * 7 * 16);
}

TEST_CASE("conv2d: seed-000 bytes formula for a bias-free conv", "[ops]") {
  // (N·IC·IH·IW + OC·IC·KH·KW + N·OC·OH·OW)·sizeof(fp32) = inputs + weights + outputs
  auto r = run("conv2d", "{out_channels: 256, kernel: 3, padding: same, bias: false}", {{1, 256, 56, 56}});
  double seed = (1.0 * 256 * 56 * 56 + 256.0 * 256 * 3 * 3 + 1.0 * 256 * 56 * 56) * 4;
  CHECK(r.c.input_total() + r.c.weight_bytes + r.c.output_total() == seed);

  // a strided one with different channel counts: N=2, IC=3, 32×32, OC=16, 5×5, stride 2, pad 2 → 16×16
  auto s = run("conv2d", "{out_channels: 16, kernel: 5, stride: 2, padding: 2, bias: false}", {{2, 3, 32, 32}});
  REQUIRE(s.out == std::vector<Shape>{{2, 16, 16, 16}});
  CHECK(s.c.input_total() + s.c.weight_bytes + s.c.output_total() ==
        (2.0 * 3 * 32 * 32 + 16.0 * 3 * 5 * 5 + 2.0 * 16 * 16 * 16) * 4);
}

TEST_CASE("conv2d: shape errors", "[ops]") {
  CHECK(shape_error("conv2d", "{out_channels: 32, kernel: 3, groups: 4}", {{1, 30, 8, 8}}) ==
        "groups (4) must divide the input channels (30) of 1x30x8x8");
  CHECK(shape_error("conv2d", "{out_channels: 30, kernel: 3, groups: 4}", {{1, 32, 8, 8}}) ==
        "groups (4) must divide out_channels (30)");
  // padded height 4 + 2·1 = 6 < 7
  CHECK(shape_error("conv2d", "{out_channels: 8, kernel: 7, padding: 1}", {{1, 3, 4, 4}}) ==
        "kernel height 7 is larger than the padded input height 6 (4 plus padding 1 on each side)");
  // dilation 3 turns a 3-wide kernel into 3·2 + 1 = 7
  CHECK(shape_error("conv2d", "{out_channels: 8, kernel: 3, dilation: 3, padding: 1}", {{1, 3, 4, 4}}) ==
        "kernel height 3 (dilated to 7) is larger than the padded input height 6 (4 plus padding 1 on each side)");
  CHECK(shape_error("conv2d", "{out_channels: 8, kernel: [1, 7]}", {{1, 3, 4, 4}}) ==
        "kernel width 7 is larger than the padded input width 4 (4 plus padding 0 on each side)");
  CHECK(shape_error("conv2d", "{out_channels: 8, kernel: 3}", {{3, 8, 8}}) ==
        "conv2d expects a rank-4 input (N, C, H, W), got 3x8x8");
  CHECK(shape_error("conv2d", "{out_channels: 8, kernel: 3, stride: 0}", {{1, 3, 8, 8}}) == "stride must be positive, got 0");
  CHECK(shape_error("conv2d", "{out_channels: 8, kernel: 3, padding: -1}", {{1, 3, 8, 8}}) ==
        "padding must not be negative, got -1");
  // a kernel exactly as large as the padded input is fine: one output
  CHECK(run("conv2d", "{out_channels: 8, kernel: 6, padding: 1}", {{1, 3, 4, 4}}).out == std::vector<Shape>{{1, 8, 1, 1}});
}

// ============================================================== depthwise_conv2d

TEST_CASE("depthwise_conv2d: groups = Cin, multiplier 1 and 2", "[ops]") {
  auto r = run("depthwise_conv2d", "{kernel: 3, padding: 1}", {{1, 32, 56, 56}});
  REQUIRE(r.out == std::vector<Shape>{{1, 32, 56, 56}});
  // one input channel per output: Cout·H·W·kh·kw
  CHECK(r.c.macs == 1.0 * 32 * 56 * 56 * 3 * 3);
  CHECK(r.c.flops == 2.0 * 32 * 56 * 56 * 3 * 3);
  CHECK(r.c.params == 3.0 * 3 * 32 + 32);
  CHECK(r.c.weight_bytes == (3.0 * 3 * 32 + 32) * 4);
  CHECK(r.c.input_bytes == Bytes{1.0 * 32 * 56 * 56 * 4});
  CHECK(r.c.output_bytes == Bytes{1.0 * 32 * 56 * 56 * 4});

  // multiplier 2: Cout = 2·32, stride 2 with 'same': ceil(56/2) = 28
  auto m = run("depthwise_conv2d", "{kernel: 3, multiplier: 2, stride: 2, padding: same, bias: false}", {{1, 32, 56, 56}});
  REQUIRE(m.out == std::vector<Shape>{{1, 2 * 32, 28, 28}});
  CHECK(m.c.macs == 1.0 * (2 * 32) * 28 * 28 * 3 * 3);
  CHECK(m.c.params == 3.0 * 3 * (2 * 32));
  CHECK(m.c.output_bytes == Bytes{1.0 * 64 * 28 * 28 * 4});

  // equal to conv2d with groups = Cin and out_channels = multiplier·Cin
  auto c = run("conv2d", "{out_channels: 64, kernel: 3, groups: 32, stride: 2, padding: same, bias: false}", {{1, 32, 56, 56}});
  CHECK(c.out == m.out);
  CHECK(c.c.macs == m.c.macs);
  CHECK(c.c.params == m.c.params);
  CHECK(c.c.weight_bytes == m.c.weight_bytes);

  CHECK(shape_error("depthwise_conv2d", "{kernel: 3}", {{1, 32, 56}}) ==
        "depthwise_conv2d expects a rank-4 input (N, C, H, W), got 1x32x56");
}

// ============================================================== conv_transpose2d

TEST_CASE("conv_transpose2d: stride 2 upsampling, padding, output_padding, groups", "[ops]") {
  auto r = run("conv_transpose2d", "{out_channels: 32, kernel: 4, stride: 2, padding: 1}", {{1, 64, 14, 14}});
  // Hout = (14 − 1)·2 − 2·1 + 1·(4 − 1) + 0 + 1 = 28
  REQUIRE(r.out == std::vector<Shape>{{1, 32, 28, 28}});
  // every input element scatters into Cout/groups · kh·kw outputs
  CHECK(r.c.macs == 1.0 * 64 * 14 * 14 * 32 * 4 * 4);
  CHECK(r.c.flops == 2.0 * 64 * 14 * 14 * 32 * 4 * 4);
  CHECK(r.c.params == 64.0 * 32 * 4 * 4 + 32);
  CHECK(r.c.weight_bytes == (64.0 * 32 * 4 * 4 + 32) * 4);
  CHECK(r.c.input_bytes == Bytes{1.0 * 64 * 14 * 14 * 4});
  CHECK(r.c.output_bytes == Bytes{1.0 * 32 * 28 * 28 * 4});

  // output_padding 1: (7 − 1)·2 − 2·1 + (3 − 1) + 1 + 1 = 14
  auto op = run("conv_transpose2d", "{out_channels: 8, kernel: 3, stride: 2, padding: 1, output_padding: 1}", {{1, 16, 7, 7}});
  REQUIRE(op.out == std::vector<Shape>{{1, 8, 14, 14}});
  CHECK(op.c.macs == 1.0 * 16 * 7 * 7 * 8 * 3 * 3);
  CHECK(op.c.params == 16.0 * 8 * 3 * 3 + 8);
  // without it: 13
  auto no = run("conv_transpose2d", "{out_channels: 8, kernel: 3, stride: 2, padding: 1}", {{1, 16, 7, 7}});
  CHECK(no.out == std::vector<Shape>{{1, 8, 13, 13}});

  // groups 4: (8 − 1)·2 + (2 − 1) + 1 = 16; each input channel feeds 32/4 outputs
  auto g = run("conv_transpose2d", "{out_channels: 32, kernel: 2, stride: 2, groups: 4, bias: false}", {{2, 16, 8, 8}});
  REQUIRE(g.out == std::vector<Shape>{{2, 32, 16, 16}});
  CHECK(g.c.macs == 2.0 * 16 * 8 * 8 * (32 / 4) * 2 * 2);
  CHECK(g.c.params == 16.0 * (32 / 4) * 2 * 2);
  CHECK(g.c.weight_bytes == 16.0 * (32 / 4) * 2 * 2 * 4);
  CHECK(g.c.input_bytes == Bytes{2.0 * 16 * 8 * 8 * 4});
  CHECK(g.c.output_bytes == Bytes{2.0 * 32 * 16 * 16 * 4});

  // PyTorch: output_padding must be smaller than either stride or dilation
  CHECK(shape_error("conv_transpose2d", "{out_channels: 8, kernel: 3, stride: 2, output_padding: 2}", {{1, 16, 7, 7}}) ==
        "output_padding must be smaller than stride or dilation");
  CHECK(shape_error("conv_transpose2d", "{out_channels: 8, kernel: 3, groups: 3}", {{1, 16, 7, 7}}) ==
        "groups (3) must divide the input channels (16)");
}

// ============================================================== linear and matmul

TEST_CASE("linear: batch and a 3-D input", "[ops]") {
  auto r = run("linear", "{out_features: 1000}", {{8, 512}});
  REQUIRE(r.out == std::vector<Shape>{{8, 1000}});
  CHECK(r.c.macs == 8.0 * 512 * 1000);
  CHECK(r.c.flops == 2.0 * 8 * 512 * 1000);
  CHECK(r.c.params == 512.0 * 1000 + 1000);
  CHECK(r.c.weight_bytes == (512.0 * 1000 + 1000) * 4);
  CHECK(r.c.input_bytes == Bytes{8.0 * 512 * 4});
  CHECK(r.c.output_bytes == Bytes{8.0 * 1000 * 4});

  // (2, 10, 64) → (2, 10, 32): B = 2·10 rows
  auto t = run("fc", "{out_features: 32, bias: false}", {{2, 10, 64}});
  REQUIRE(t.out == std::vector<Shape>{{2, 10, 32}});
  CHECK(t.c.macs == 2.0 * 10 * 64 * 32);
  CHECK(t.c.flops == 2.0 * (2.0 * 10 * 64 * 32));
  CHECK(t.c.params == 64.0 * 32);
  CHECK(t.c.weight_bytes == 64.0 * 32 * 4);
  CHECK(t.c.input_bytes == Bytes{2.0 * 10 * 64 * 4});
  CHECK(t.c.output_bytes == Bytes{2.0 * 10 * 32 * 4});
}

TEST_CASE("linear: seed-000 FC at batch 1 is about 0.25 MAC per byte", "[ops]") {
  auto r = run("linear", "{out_features: 4096, bias: false}", {{1, 4096}});
  CHECK(r.c.macs == 4096.0 * 4096);
  double bytes = r.c.weight_bytes + r.c.input_total() + r.c.output_total();
  // weights 4096·4096, input 4096, output 4096, all fp32
  CHECK(bytes == (4096.0 * 4096 + 4096 + 4096) * 4);
  // 4096² / ((4096² + 2·4096)·4) = 4096 / (4·4098)
  CHECK(r.c.macs / bytes == Approx(4096.0 / (4.0 * 4098)));
  CHECK(r.c.macs / bytes == Approx(0.25).epsilon(0.001));
  CHECK(r.c.macs / bytes < 0.25);
}

TEST_CASE("matmul: 2-D and batched with broadcasting", "[ops]") {
  auto r = run("matmul", "{}", {{4, 8}, {8, 5}});
  REQUIRE(r.out == std::vector<Shape>{{4, 5}});
  CHECK(r.c.macs == 4.0 * 8 * 5);
  CHECK(r.c.flops == 2.0 * 4 * 8 * 5);
  CHECK(r.c.params == 0);  // both operands are activations
  CHECK(r.c.weight_bytes == 0);
  CHECK(r.c.input_bytes == Bytes{4.0 * 8 * 4, 8.0 * 5 * 4});
  CHECK(r.c.output_bytes == Bytes{4.0 * 5 * 4});

  // batch dims (2, 1) and (3) broadcast to (2, 3)
  auto b = run("bmm", "{}", {{2, 1, 4, 8}, {3, 8, 5}});
  REQUIRE(b.out == std::vector<Shape>{{2, 3, 4, 5}});
  CHECK(b.c.macs == 2.0 * 3 * 4 * 8 * 5);
  CHECK(b.c.input_bytes == Bytes{2.0 * 1 * 4 * 8 * 4, 3.0 * 8 * 5 * 4});
  CHECK(b.c.output_bytes == Bytes{2.0 * 3 * 4 * 5 * 4});

  // attention scores: (12, 64, 128) × (12, 128, 64)
  auto att = run("matmul", "{}", {{12, 64, 128}, {12, 128, 64}});
  CHECK(att.out == std::vector<Shape>{{12, 64, 64}});
  CHECK(att.c.macs == 12.0 * 64 * 128 * 64);

  // a rank-2 right operand is shared by every batch
  auto shared = run("matmul", "{}", {{3, 4, 8}, {8, 5}});
  CHECK(shared.out == std::vector<Shape>{{3, 4, 5}});
  CHECK(shared.c.macs == 3.0 * 4 * 8 * 5);

  CHECK(shape_error("matmul", "{}", {{4, 8}, {7, 5}}) == "matmul inner dimensions differ: 4x8 × 7x5 (8 vs 7)");
  CHECK(shape_error("matmul", "{}", {{2, 4, 8}, {3, 8, 5}}) == "cannot broadcast 2 with 3: dimension 0 is 2 vs 3");
  CHECK(shape_error("matmul", "{}", {Shape{}, {8, 5}}) == "matmul expects an input of rank 1 or more, got scalar");
}

// ============================================================== pooling

TEST_CASE("max_pool2d: ResNet stem pool and the stride default", "[ops]") {
  auto r = run("max_pool2d", "{kernel: 3, stride: 2, padding: 1}", {{1, 64, 112, 112}});
  // floor((112 + 2·1 − 3)/2) + 1 = floor(111/2) + 1 = 56
  REQUIRE(r.out == std::vector<Shape>{{1, 64, 56, 56}});
  CHECK(r.c.macs == 0);
  // one compare per window element
  CHECK(r.c.flops == 1.0 * 64 * 56 * 56 * 3 * 3);
  CHECK(r.c.params == 0);
  CHECK(r.c.weight_bytes == 0);
  CHECK(r.c.input_bytes == Bytes{1.0 * 64 * 112 * 112 * 4});
  CHECK(r.c.output_bytes == Bytes{1.0 * 64 * 56 * 56 * 4});

  // stride defaults to the kernel: 8/2 = 4
  auto d = run("maxpool", "{kernel: 2}", {{1, 8, 8, 8}});
  REQUIRE(d.out == std::vector<Shape>{{1, 8, 4, 4}});
  CHECK(d.c.flops == 1.0 * 8 * 4 * 4 * 2 * 2);
  CHECK(d.c.output_bytes == Bytes{1.0 * 8 * 4 * 4 * 4});
}

TEST_CASE("avg_pool2d: floor and ceil modes", "[ops]") {
  auto f = run("avg_pool2d", "{kernel: 2}", {{1, 8, 7, 7}});
  // floor((7 − 2)/2) + 1 = 3
  REQUIRE(f.out == std::vector<Shape>{{1, 8, 3, 3}});
  // kh·kw − 1 adds and one scale per output = kh·kw
  CHECK(f.c.flops == 1.0 * 8 * 3 * 3 * 2 * 2);
  CHECK(f.c.macs == 0);
  CHECK(f.c.params == 0);
  CHECK(f.c.input_bytes == Bytes{1.0 * 8 * 7 * 7 * 4});
  CHECK(f.c.output_bytes == Bytes{1.0 * 8 * 3 * 3 * 4});

  // ceil((7 − 2)/2) + 1 = 4; the last window starts at 3·2 = 6 < 7 + 0, inside the input: kept
  auto c = run("avgpool", "{kernel: 2, ceil_mode: true}", {{1, 8, 7, 7}});
  REQUIRE(c.out == std::vector<Shape>{{1, 8, 4, 4}});
  CHECK(c.c.flops == 1.0 * 8 * 4 * 4 * 2 * 2);
}

TEST_CASE("pooling with ceil_mode follows PyTorch, dropping a window that starts in the padding", "[ops]") {
  // PyTorch: out = ceil((H + 2p − k)/s) + 1, then out −= 1 if (out − 1)·s ≥ H + p.
  // H=6, k=3, s=2, p=1: ceil(5/2) + 1 = 4; last start (4 − 1)·2 = 6 < 6 + 1 → kept: 4 (floor mode: 3)
  auto h6 = run("max_pool2d", "{kernel: 3, stride: 2, padding: 1, ceil_mode: true}", {{1, 4, 6, 6}});
  CHECK(h6.out == std::vector<Shape>{{1, 4, 4, 4}});
  CHECK(h6.c.flops == 1.0 * 4 * 4 * 4 * 3 * 3);
  auto h6f = run("max_pool2d", "{kernel: 3, stride: 2, padding: 1}", {{1, 4, 6, 6}});
  CHECK(h6f.out == std::vector<Shape>{{1, 4, 3, 3}});

  // H=5, k=2, s=2, p=1: ceil(5/2) + 1 = 4; last start (4 − 1)·2 = 6 ≥ 5 + 1 → it lies entirely in
  // the right padding and is dropped: 3
  auto h5 = run("max_pool2d", "{kernel: 2, stride: 2, padding: 1, ceil_mode: true}", {{1, 4, 5, 5}});
  CHECK(h5.out == std::vector<Shape>{{1, 4, 3, 3}});
  CHECK(h5.c.flops == 1.0 * 4 * 3 * 3 * 2 * 2);

  // both at once, per axis: kernel [3, 2], H=6 → 4, W=5 → 3
  auto mix = run("avg_pool2d", "{kernel: [3, 2], stride: 2, padding: 1, ceil_mode: true}", {{1, 4, 6, 5}});
  REQUIRE(mix.out == std::vector<Shape>{{1, 4, 4, 3}});
  CHECK(mix.c.flops == 1.0 * 4 * 4 * 3 * 3 * 2);
  CHECK(mix.c.input_bytes == Bytes{1.0 * 4 * 6 * 5 * 4});
  CHECK(mix.c.output_bytes == Bytes{1.0 * 4 * 4 * 3 * 4});

  // H=4, k=3, s=2, p=1: ceil(3/2) + 1 = 3 (1 + 2 = 3 starts 0, 2, 4; 4 < 4 + 1 kept); floor: 2
  CHECK(run("max_pool2d", "{kernel: 3, stride: 2, padding: 1, ceil_mode: true}", {{1, 1, 4, 4}}).out ==
        std::vector<Shape>{{1, 1, 3, 3}});
  CHECK(run("max_pool2d", "{kernel: 3, stride: 2, padding: 1}", {{1, 1, 4, 4}}).out == std::vector<Shape>{{1, 1, 2, 2}});

  // PyTorch: padding at most half the kernel
  CHECK(shape_error("max_pool2d", "{kernel: 3, padding: 2}", {{1, 1, 8, 8}}) ==
        "pool padding 2 must be between 0 and half the kernel (3)");
  CHECK(shape_error("max_pool2d", "{kernel: 5}", {{1, 1, 4, 4}}) == "pool kernel 5 is larger than the padded input 4 of 1x1x4x4");
}

TEST_CASE("global_avg_pool and adaptive_avg_pool2d", "[ops]") {
  auto g = run("global_avg_pool", "{}", {{2, 512, 7, 7}});
  REQUIRE(g.out == std::vector<Shape>{{2, 512, 1, 1}});
  // H·W − 1 adds and one scale per channel: one FLOP per input element
  CHECK(g.c.flops == 2.0 * 512 * 7 * 7);
  CHECK(g.c.macs == 0);
  CHECK(g.c.params == 0);
  CHECK(g.c.input_bytes == Bytes{2.0 * 512 * 7 * 7 * 4});
  CHECK(g.c.output_bytes == Bytes{2.0 * 512 * 4});

  // 7 → 3 bins: [floor(i·7/3), ceil((i+1)·7/3)) = [0,3), [2,5), [4,7): they overlap, widths 3+3+3 = 9
  auto a = run("adaptive_avg_pool2d", "{output_size: 3}", {{1, 256, 7, 7}});
  REQUIRE(a.out == std::vector<Shape>{{1, 256, 3, 3}});
  CHECK(a.c.flops == 1.0 * 256 * (3 + 3 + 3) * (3 + 3 + 3));
  CHECK(a.c.macs == 0);
  CHECK(a.c.params == 0);
  CHECK(a.c.input_bytes == Bytes{1.0 * 256 * 7 * 7 * 4});
  CHECK(a.c.output_bytes == Bytes{1.0 * 256 * 3 * 3 * 4});

  // 6 → 3 tiles exactly ([0,2),[2,4),[4,6): 6); 7 → 1 is the whole axis (7)
  auto r = run("adaptive_avg_pool2d", "{output_size: [3, 1]}", {{2, 4, 6, 7}});
  REQUIRE(r.out == std::vector<Shape>{{2, 4, 3, 1}});
  CHECK(r.c.flops == 2.0 * 4 * 6 * 7);

  // output 1×1 equals global average pooling
  auto one = run("adaptive_avg_pool2d", "{output_size: 1}", {{2, 512, 7, 7}});
  CHECK(one.out == g.out);
  CHECK(one.c.flops == g.c.flops);
}

// ============================================================== normalisation

TEST_CASE("batchnorm: 2 FLOPs per element, 2C params, 4C weights read", "[ops]") {
  auto r = run("batchnorm", "{}", {{1, 64, 56, 56}});
  REQUIRE(r.out == std::vector<Shape>{{1, 64, 56, 56}});
  CHECK(r.c.macs == 0);
  CHECK(r.c.flops == 2.0 * 64 * 56 * 56);
  CHECK(r.c.params == 2.0 * 64);                // γ, β
  CHECK(r.c.weight_bytes == 4.0 * 64 * 4);      // γ, β, running mean and variance
  CHECK(r.c.input_bytes == Bytes{1.0 * 64 * 56 * 56 * 4});
  CHECK(r.c.output_bytes == Bytes{1.0 * 64 * 56 * 56 * 4});

  // rank 2 (after a linear layer): C is dim 1
  auto bn = run("bn", "{}", {{8, 256}});
  CHECK(bn.c.flops == 2.0 * 8 * 256);
  CHECK(bn.c.params == 2.0 * 256);
  CHECK(shape_error("batchnorm", "{}", {{8}}) == "batchnorm expects an input of rank 2 or more, got 8");
}

TEST_CASE("layernorm: 8 FLOPs per element with affine, 6 without", "[ops]") {
  auto r = run("layernorm", "{}", {{2, 10, 64}});
  REQUIRE(r.out == std::vector<Shape>{{2, 10, 64}});
  CHECK(r.c.macs == 0);
  CHECK(r.c.flops == 8.0 * 2 * 10 * 64);
  CHECK(r.c.params == 2.0 * 64);
  CHECK(r.c.weight_bytes == 2.0 * 64 * 4);
  CHECK(r.c.input_bytes == Bytes{2.0 * 10 * 64 * 4});
  CHECK(r.c.output_bytes == Bytes{2.0 * 10 * 64 * 4});

  // normalising the last two dims: D = 10·64
  auto two = run("layernorm", "{dims: 2}", {{2, 10, 64}});
  CHECK(two.c.params == 2.0 * 10 * 64);
  CHECK(two.c.weight_bytes == 2.0 * 10 * 64 * 4);

  auto plain = run("layernorm", "{affine: false}", {{2, 10, 64}});
  CHECK(plain.c.flops == 6.0 * 2 * 10 * 64);
  CHECK(plain.c.params == 0);
  CHECK(plain.c.weight_bytes == 0);

  CHECK(shape_error("layernorm", "{dims: 4}", {{2, 10, 64}}) == "layernorm dims 4 exceeds the rank of 2x10x64");
}

// ============================================================== activations

TEST_CASE("activations: FLOPs per element from each formula", "[ops]") {
  struct Case {
    const char* op;
    double per_element;
  };
  const Case cases[] = {
      {"relu", 1},         // max(x, 0)
      {"relu6", 2},        // min(max(x, 0), 6)
      {"leaky_relu", 2},   // compare, multiply
      {"sigmoid", 4},      // negate, exp, add, divide
      {"tanh", 5},         // multiply, exp, subtract, add, divide
      {"gelu", 8},         // 0.5·x·(1 + tanh(x·(a + b·x²))): x², ·b, +a, ·x, tanh, +1, ·x, ·0.5 (constants folded)
      {"silu", 5},         // sigmoid 4 + multiply
      {"swish", 5},        // alias of silu
      {"hardswish", 5},    // add, 2 clamps, multiply, divide
      {"hardsigmoid", 4},  // add, 2 clamps, divide
  };
  for (const Case& k : cases) {
    INFO(k.op);
    auto r = run(k.op, "{}", {{2, 16, 8, 8}});
    REQUIRE(r.out == std::vector<Shape>{{2, 16, 8, 8}});
    CHECK(r.c.macs == 0);
    CHECK(r.c.flops == k.per_element * 2 * 16 * 8 * 8);
    CHECK(r.c.params == 0);
    CHECK(r.c.weight_bytes == 0);
    CHECK(r.c.input_bytes == Bytes{2.0 * 16 * 8 * 8 * 4});
    CHECK(r.c.output_bytes == Bytes{2.0 * 16 * 8 * 8 * 4});
  }
  // leaky_relu's slope changes nothing in the cost
  auto l = run("leaky_relu", "{negative_slope: 0.2}", {{2, 16, 8, 8}});
  CHECK(l.c.flops == 2.0 * 2 * 16 * 8 * 8);
}

// ============================================================== elementwise

TEST_CASE("add/sub/mul/div: seed-002 NCHW FLOPs and 3·NCHW·sizeof bytes", "[ops]") {
  for (const char* name : {"add", "sub", "mul", "div"}) {
    INFO(name);
    auto r = run(name, "{}", {{2, 32, 28, 28}, {2, 32, 28, 28}});
    REQUIRE(r.out == std::vector<Shape>{{2, 32, 28, 28}});
    CHECK(r.c.macs == 0);
    CHECK(r.c.flops == 2.0 * 32 * 28 * 28);
    CHECK(r.c.params == 0);
    CHECK(r.c.weight_bytes == 0);
    CHECK(r.c.input_total() + r.c.output_total() == 3.0 * 2 * 32 * 28 * 28 * 4);
  }
}

TEST_CASE("add/mul broadcast like NumPy", "[ops]") {
  // per-channel scale: (1, 64, 56, 56) · (1, 64, 1, 1)
  auto r = run("mul", "{}", {{1, 64, 56, 56}, {1, 64, 1, 1}});
  REQUIRE(r.out == std::vector<Shape>{{1, 64, 56, 56}});
  CHECK(r.c.flops == 1.0 * 64 * 56 * 56);
  // each input is read as stored, not as broadcast
  CHECK(r.c.input_bytes == Bytes{1.0 * 64 * 56 * 56 * 4, 1.0 * 64 * 4});
  CHECK(r.c.output_bytes == Bytes{1.0 * 64 * 56 * 56 * 4});

  // ranks differ and both sides stretch: (8, 1, 5) + (3, 1) → (8, 3, 5)
  auto b = run("add", "{}", {{8, 1, 5}, {3, 1}});
  REQUIRE(b.out == std::vector<Shape>{{8, 3, 5}});
  CHECK(b.c.flops == 8.0 * 3 * 5);
  CHECK(b.c.input_bytes == Bytes{8.0 * 1 * 5 * 4, 3.0 * 1 * 4});
  CHECK(b.c.output_bytes == Bytes{8.0 * 3 * 5 * 4});

  CHECK(shape_error("add", "{}", {{1, 64, 56, 56}, {1, 32, 56, 56}}) ==
        "cannot broadcast 1x64x56x56 with 1x32x56x56: dimension 1 is 64 vs 32");
  CHECK(shape_error("sub", "{}", {{4, 5}, {4}}) == "cannot broadcast 4x5 with 4: dimension 1 is 5 vs 4");
}

// ============================================================== layout

TEST_CASE("concat: reads every input and writes the joined tensor", "[ops]") {
  auto r = run("concat", "{}", {{1, 32, 28, 28}, {1, 64, 28, 28}});
  REQUIRE(r.out == std::vector<Shape>{{1, 32 + 64, 28, 28}});
  check_no_work(r.c);
  CHECK(r.c.input_bytes == Bytes{1.0 * 32 * 28 * 28 * 4, 1.0 * 64 * 28 * 28 * 4});
  CHECK(r.c.output_bytes == Bytes{1.0 * 96 * 28 * 28 * 4});

  auto three = run("cat", "{axis: -1}", {{2, 3}, {2, 5}, {2, 1}});
  REQUIRE(three.out == std::vector<Shape>{{2, 3 + 5 + 1}});
  CHECK(three.c.input_bytes == Bytes{2.0 * 3 * 4, 2.0 * 5 * 4, 2.0 * 1 * 4});
  CHECK(three.c.output_bytes == Bytes{2.0 * 9 * 4});

  CHECK(shape_error("concat", "{}", {{1, 32, 28, 28}, {1, 64, 14, 14}}) ==
        "concat along axis 1 needs equal other dimensions: 1x32x28x28 vs 1x64x14x14");
  CHECK(shape_error("concat", "{axis: 4}", {{1, 2, 3, 4}, {1, 2, 3, 4}}) == "concat axis 4 is out of range for rank 4");
}

TEST_CASE("split: equal sections or explicit sizes, one output per part", "[ops]") {
  auto r = run("split", "{sections: 2}", {{1, 64, 8, 8}});
  REQUIRE(r.out == std::vector<Shape>{{1, 32, 8, 8}, {1, 32, 8, 8}});
  check_no_work(r.c);
  CHECK(r.c.input_bytes == Bytes{1.0 * 64 * 8 * 8 * 4});
  CHECK(r.c.output_bytes == Bytes{1.0 * 32 * 8 * 8 * 4, 1.0 * 32 * 8 * 8 * 4});

  auto s = run("split", "{sizes: [16, 48]}", {{1, 64, 8, 8}});
  REQUIRE(s.out == std::vector<Shape>{{1, 16, 8, 8}, {1, 48, 8, 8}});
  CHECK(s.c.output_bytes == Bytes{1.0 * 16 * 8 * 8 * 4, 1.0 * 48 * 8 * 8 * 4});

  // last axis, three parts: 12 = 2 + 4 + 6
  auto last = run("split", "{axis: -1, sizes: [2, 4, 6]}", {{3, 12}});
  REQUIRE(last.out == std::vector<Shape>{{3, 2}, {3, 4}, {3, 6}});
  CHECK(last.c.input_bytes == Bytes{3.0 * 12 * 4});
  CHECK(last.c.output_total() == 3.0 * 12 * 4);

  CHECK(shape_error("split", "{sections: 3}", {{1, 64, 8, 8}}) == "split: 3 sections do not divide dimension 64");
  CHECK(shape_error("split", "{sizes: [16, 32]}", {{1, 64, 8, 8}}) == "split sizes add up to 48, but the axis has 64");
  CHECK(shape_error("split", "{}", {{1, 64, 8, 8}}) == "split needs exactly one of 'sections' or 'sizes'");
  CHECK(shape_error("split", "{sections: 2, sizes: [32, 32]}", {{1, 64, 8, 8}}) ==
        "split needs exactly one of 'sections' or 'sizes'");
}

TEST_CASE("slice: negative start, end and step (Python semantics)", "[ops]") {
  // [-3:] of 10 → indices 7, 8, 9
  auto r = run("slice", "{axis: 1, start: -3}", {{1, 10, 4}});
  REQUIRE(r.out == std::vector<Shape>{{1, 3, 4}});
  check_no_work(r.c);
  // reads the whole input, writes the slice
  CHECK(r.c.input_bytes == Bytes{1.0 * 10 * 4 * 4});
  CHECK(r.c.output_bytes == Bytes{1.0 * 3 * 4 * 4});

  // [-3::2] → 7, 9
  CHECK(run("slice", "{axis: 1, start: -3, step: 2}", {{1, 10, 4}}).out == std::vector<Shape>{{1, 2, 4}});
  // [1:9:3] → 1, 4, 7
  CHECK(run("slice", "{axis: 1, start: 1, end: 9, step: 3}", {{1, 10, 4}}).out == std::vector<Shape>{{1, 3, 4}});
  // [:-1] → 0..8
  CHECK(run("slice", "{axis: 1, end: -1}", {{1, 10, 4}}).out == std::vector<Shape>{{1, 9, 4}});
  // end past the axis is clamped: [2:100] on the last axis of 4 → 2
  CHECK(run("slice", "{axis: -1, start: 2, end: 100}", {{1, 10, 4}}).out == std::vector<Shape>{{1, 10, 2}});

  CHECK(shape_error("slice", "{axis: 1, start: 5, end: 5}", {{1, 10, 4}}) == "slice [5:5] of dimension 10 is empty");
  CHECK(shape_error("slice", "{axis: 1, step: 0}", {{1, 10, 4}}) == "step must be positive, got 0");
}

TEST_CASE("reshape is a view (0 bytes), reshape_copy moves the data", "[ops]") {
  // -1 infers 64·7·7 = 3136
  auto r = run("reshape", "{shape: [1, -1]}", {{1, 64, 7, 7}});
  REQUIRE(r.out == std::vector<Shape>{{1, 64 * 7 * 7}});
  check_no_work(r.c);
  CHECK(r.c.input_bytes == Bytes{0.0});
  CHECK(r.c.output_bytes == Bytes{0.0});

  // 0 copies the input dimension (ONNX): (1, 64, 49)
  CHECK(run("view", "{shape: [0, 64, -1]}", {{1, 64, 7, 7}}).out == std::vector<Shape>{{1, 64, 7 * 7}});
  CHECK(run("reshape", "{shape: [2, 32, 49]}", {{1, 64, 7, 7}}).out == std::vector<Shape>{{2, 32, 49}});

  auto c = run("reshape_copy", "{shape: [1, -1]}", {{1, 64, 7, 7}});
  REQUIRE(c.out == std::vector<Shape>{{1, 64 * 7 * 7}});
  check_no_work(c.c);
  CHECK(c.c.input_bytes == Bytes{1.0 * 64 * 7 * 7 * 4});
  CHECK(c.c.output_bytes == Bytes{1.0 * 64 * 7 * 7 * 4});

  // 3136 / 5 is not whole
  CHECK(shape_error("reshape", "{shape: [1, -1, 5]}", {{1, 64, 7, 7}}) ==
        "reshape: cannot infer -1 to turn 1x64x7x7 into the requested shape");
  CHECK(shape_error("reshape", "{shape: [-1, -1]}", {{1, 64, 7, 7}}) == "reshape: only one dimension may be -1");
  CHECK(shape_error("reshape", "{shape: [1, 3000]}", {{1, 64, 7, 7}}) ==
        "reshape: 1x64x7x7 has 3136 elements, 1x3000 has 3000");
}

TEST_CASE("flatten is a view, transpose and permute are copies", "[ops]") {
  auto f = run("flatten", "{}", {{2, 64, 7, 7}});
  REQUIRE(f.out == std::vector<Shape>{{2, 64 * 7 * 7}});
  check_no_work(f.c);
  CHECK(f.c.input_bytes == Bytes{0.0});
  CHECK(f.c.output_bytes == Bytes{0.0});
  CHECK(run("flatten", "{start_dim: 2}", {{2, 64, 7, 7}}).out == std::vector<Shape>{{2, 64, 7 * 7}});
  CHECK(run("flatten", "{start_dim: 0, end_dim: 1}", {{2, 64, 7, 7}}).out == std::vector<Shape>{{2 * 64, 7, 7}});
  CHECK(shape_error("flatten", "{start_dim: 2, end_dim: 1}", {{2, 64, 7, 7}}) == "flatten: end_dim comes before start_dim");

  // default dims [-2, -1]
  auto t = run("transpose", "{}", {{2, 3, 4}});
  REQUIRE(t.out == std::vector<Shape>{{2, 4, 3}});
  check_no_work(t.c);
  CHECK(t.c.input_bytes == Bytes{2.0 * 3 * 4 * 4});
  CHECK(t.c.output_bytes == Bytes{2.0 * 3 * 4 * 4});
  CHECK(run("transpose", "{dims: [0, 2]}", {{2, 3, 4}}).out == std::vector<Shape>{{4, 3, 2}});

  // NCHW → NHWC
  auto p = run("permute", "{dims: [0, 2, 3, 1]}", {{1, 3, 224, 224}});
  REQUIRE(p.out == std::vector<Shape>{{1, 224, 224, 3}});
  check_no_work(p.c);
  CHECK(p.c.input_bytes == Bytes{1.0 * 3 * 224 * 224 * 4});
  CHECK(p.c.output_bytes == Bytes{1.0 * 3 * 224 * 224 * 4});
  CHECK(shape_error("permute", "{dims: [0, 2, 1]}", {{1, 3, 224, 224}}) == "permute needs 4 dims for 1x3x224x224");
  CHECK(shape_error("permute", "{dims: [0, 1, 1, 2]}", {{1, 3, 224, 224}}) == "permute lists dimension 1 twice");
}

TEST_CASE("upsample: nearest is free, bilinear costs 9 FLOPs per output", "[ops]") {
  auto n = run("upsample", "{scale: 2}", {{1, 256, 7, 7}});
  REQUIRE(n.out == std::vector<Shape>{{1, 256, 7 * 2, 7 * 2}});
  check_no_work(n.c);
  CHECK(n.c.input_bytes == Bytes{1.0 * 256 * 7 * 7 * 4});
  CHECK(n.c.output_bytes == Bytes{1.0 * 256 * 14 * 14 * 4});

  auto b = run("resize", "{size: [20, 30], mode: bilinear}", {{1, 3, 10, 10}});
  REQUIRE(b.out == std::vector<Shape>{{1, 3, 20, 30}});
  CHECK(b.c.macs == 0);
  CHECK(b.c.flops == 9.0 * 3 * 20 * 30);  // 3 lerps of 3 FLOPs per output element
  CHECK(b.c.params == 0);
  CHECK(b.c.output_bytes == Bytes{1.0 * 3 * 20 * 30 * 4});

  CHECK(run("upsample", "{scale: [2, 3], mode: bilinear}", {{1, 3, 10, 10}}).out == std::vector<Shape>{{1, 3, 20, 30}});
  CHECK(shape_error("upsample", "{}", {{1, 3, 10, 10}}) == "upsample needs exactly one of 'scale' or 'size'");
}

TEST_CASE("softmax and identity/dropout", "[ops]") {
  auto s = run("softmax", "{}", {{2, 10, 100}});
  REQUIRE(s.out == std::vector<Shape>{{2, 10, 100}});
  CHECK(s.c.macs == 0);
  CHECK(s.c.flops == 5.0 * 2 * 10 * 100);  // max, subtract, exp, sum, divide
  CHECK(s.c.params == 0);
  CHECK(s.c.input_bytes == Bytes{2.0 * 10 * 100 * 4});
  CHECK(s.c.output_bytes == Bytes{2.0 * 10 * 100 * 4});
  CHECK(shape_error("softmax", "{axis: 3}", {{2, 10, 100}}) == "softmax axis 3 is out of range for rank 3");

  for (const char* name : {"identity", "dropout"}) {
    INFO(name);
    auto i = run(name, "{}", {{1, 64, 56, 56}});
    REQUIRE(i.out == std::vector<Shape>{{1, 64, 56, 56}});
    check_no_work(i.c);
    CHECK(i.c.input_bytes == Bytes{0.0});
    CHECK(i.c.output_bytes == Bytes{0.0});
  }
}

// ============================================================== dtypes and flops_per_mac

TEST_CASE("dtype sizes scale every byte count", "[ops]") {
  const std::string conv = "{out_channels: 64, kernel: 3, padding: 1}";
  const Shape in{1, 32, 28, 28};
  auto f32 = run("conv2d", conv, {in}, DType::fp32);
  auto f16 = run("conv2d", conv, {in}, DType::fp16);
  auto i8 = run("conv2d", conv, {in}, DType::int8);
  auto i4 = run("conv2d", conv, {in}, DType::int4);
  auto f64 = run("conv2d", conv, {in}, DType::fp64);
  double w = 3.0 * 3 * 32 * 64 + 64, x = 1.0 * 32 * 28 * 28, y = 1.0 * 64 * 28 * 28;
  CHECK(f32.c.weight_bytes == w * 4);
  CHECK(f16.c.weight_bytes == w * 2);
  CHECK(f16.c.weight_bytes == f32.c.weight_bytes / 2);
  CHECK(f16.c.input_bytes == Bytes{x * 2});
  CHECK(f16.c.output_bytes == Bytes{y * 2});
  CHECK(i8.c.weight_bytes == w * 1);
  CHECK(i8.c.output_bytes == Bytes{y * 1});
  // int4 packs two elements per byte
  CHECK(i4.c.weight_bytes == w * 0.5);
  CHECK(i4.c.input_bytes == Bytes{x * 0.5});
  CHECK(i4.c.output_bytes == Bytes{y * 0.5});
  CHECK(f64.c.output_bytes == Bytes{y * 8});
  // arithmetic does not depend on the dtype
  CHECK(f16.c.macs == f32.c.macs);
  CHECK(i4.c.flops == f32.c.flops);
  CHECK(i4.c.params == f32.c.params);

  CHECK(dtype_bytes(DType::bf16) == 2);
  CHECK(dtype_bytes(DType::tf32) == 4);  // stored as fp32
  CHECK(dtype_bytes(DType::fp8) == 1);

  // views stay at zero whatever the dtype
  auto v = run("reshape", "{shape: [-1]}", {{2, 3}}, DType::fp16);
  CHECK(v.c.input_bytes == Bytes{0.0});
}

TEST_CASE("flops_per_mac = 1 counts MACs as FLOPs", "[ops]") {
  auto c = run("conv2d", "{out_channels: 64, kernel: 3, padding: 1}", {{1, 64, 56, 56}}, DType::fp32, 1.0);
  CHECK(c.c.macs == 1.0 * 64 * 56 * 56 * 64 * 3 * 3);
  CHECK(c.c.flops == c.c.macs);
  auto l = run("linear", "{out_features: 10}", {{4, 20}}, DType::fp32, 1.0);
  CHECK(l.c.flops == 4.0 * 20 * 10);
  // FLOPs that are not MACs are unaffected
  auto bn = run("batchnorm", "{}", {{1, 64, 56, 56}}, DType::fp32, 1.0);
  CHECK(bn.c.flops == 2.0 * 64 * 56 * 56);
  auto p = run("max_pool2d", "{kernel: 2}", {{1, 8, 8, 8}}, DType::fp32, 1.0);
  CHECK(p.c.flops == 1.0 * 8 * 4 * 4 * 2 * 2);
}

// ============================================================== networks

namespace {

struct Built {
  Network net;
  Diags d;
};

Built build(const std::string& yaml, DType dt = DType::fp32) {
  static thread_local std::unique_ptr<ExprEvaluator> ev = make_lua_evaluator();
  BuildOptions bo{builtin_ops(), *ev, dt, 2.0};
  Built b;
  CNode node = parse_yaml(yaml, "net.yaml");
  b.net = build_network(node, Env{}, bo, b.d);
  return b;
}

const Layer& layer_named(const Network& net, const std::string& name) {
  for (const auto& l : net.layers)
    if (l.name == name) return l;
  FAIL("no layer named " << name);
  throw std::logic_error("unreachable");
}

}  // namespace

TEST_CASE("network: a residual block repeated twice", "[ops][graph]") {
  auto b = build(R"(name: stage
input: [1, 64, 56, 56]
blocks:
  basic:
    params: {c: ~}
    layers:
      - {name: conv1, op: conv2d, out_channels: "${c}", kernel: 3, padding: 1, bias: false}
      - {name: bn1, op: bn}
      - {name: relu1, op: relu}
      - {name: conv2, op: conv2d, out_channels: "${c}", kernel: 3, padding: 1, bias: false}
      - {name: add, op: add, inputs: [input, conv2]}
layers:
  - {name: b, block: basic, args: {c: 64}, repeat: 2}
  - {name: pool, op: global_avg_pool, inputs: b}
)");
  INFO(all_diagnostics(b.d));
  REQUIRE(b.d.empty());
  const Network& net = b.net;
  std::vector<std::string> names;
  for (const auto& l : net.layers) names.push_back(l.name);
  CHECK(names == std::vector<std::string>{"b.0.conv1", "b.0.bn1", "b.0.relu1", "b.0.conv2", "b.0.add",
                                          "b.1.conv1", "b.1.bn1", "b.1.relu1", "b.1.conv2", "b.1.add", "pool"});
  REQUIRE(net.layers.size() == 11);

  // inside the block 'input' is the block's input: the network input, then b.0.add
  const Layer& add0 = layer_named(net, "b.0.add");
  REQUIRE(add0.inputs.size() == 2);
  CHECK(add0.inputs[0].layer == -1);
  CHECK(add0.inputs[1].layer == 3);  // b.0.conv2
  const Layer& add1 = layer_named(net, "b.1.add");
  CHECK(add1.inputs[0].layer == 4);  // b.0.add
  CHECK(add1.inputs[1].layer == 8);  // b.1.conv2
  CHECK(layer_named(net, "b.1.conv1").inputs[0].layer == 4);
  CHECK(layer_named(net, "pool").inputs[0].layer == 9);  // the block's name refers to its output
  CHECK(layer_named(net, "pool").out_shapes == std::vector<Shape>{{1, 64, 1, 1}});

  // ${c} reached the convolutions
  const Layer& conv = layer_named(net, "b.1.conv2");
  CHECK(conv.out_shapes == std::vector<Shape>{{1, 64, 56, 56}});
  CHECK(conv.cost.macs == 1.0 * 64 * 56 * 56 * 64 * 3 * 3);
  CHECK(conv.cost.params == 3.0 * 3 * 64 * 64);

  double macs = 0, flops = 0, params = 0, weights = 0;
  for (const auto& l : net.layers) {
    macs += l.cost.macs;
    flops += l.cost.flops;
    params += l.cost.params;
    weights += l.cost.weight_bytes;
  }
  const double e = 64.0 * 56 * 56;  // elements of one activation
  CHECK(macs == 4 * (e * 64 * 3 * 3));
  // 4 convs (2 FLOPs/MAC), 2 BNs (2/elem), 2 ReLUs (1), 2 adds (1), the global pool (1)
  CHECK(flops == 4 * 2 * (e * 64 * 3 * 3) + 2 * 2 * e + 2 * e + 2 * e + e);
  CHECK(params == 4 * (3.0 * 3 * 64 * 64) + 2 * (2.0 * 64));
  CHECK(weights == (4 * (3.0 * 3 * 64 * 64) + 2 * (4.0 * 64)) * 4);
  const Layer& a = layer_named(net, "b.0.add");
  CHECK(a.cost.input_total() + a.cost.output_total() == 3 * e * 4);
}

TEST_CASE("network: a block used once has no repeat index, fp16 halves bytes", "[ops][graph]") {
  auto b = build(R"(name: once
input: [1, 16, 8, 8]
blocks:
  proj:
    params: {c: 32, k: 1}
    layers:
      - {name: conv, op: conv2d, out_channels: "${c * 2}", kernel: "${k}"}
layers:
  - {name: p, block: proj, args: {k: 3}}
)",
                 DType::fp16);
  INFO(all_diagnostics(b.d));
  REQUIRE(b.d.empty());
  REQUIRE(b.net.layers.size() == 1);
  const Layer& l = b.net.layers[0];
  CHECK(l.name == "p.conv");
  // c defaults to 32 → 64 channels; k = 3 → 8 − 3 + 1 = 6
  CHECK(l.out_shapes == std::vector<Shape>{{1, 64, 6, 6}});
  CHECK(l.cost.macs == 1.0 * 64 * 6 * 6 * 16 * 3 * 3);
  CHECK(l.cost.weight_bytes == (3.0 * 3 * 16 * 64 + 64) * 2);
  CHECK(l.cost.input_bytes == Bytes{1.0 * 16 * 8 * 8 * 2});
  CHECK(l.cost.output_bytes == Bytes{1.0 * 64 * 6 * 6 * 2});
}

TEST_CASE("network: a split output consumed as NAME:K", "[ops][graph]") {
  auto b = build(R"(name: halves
input: [1, 64, 8, 8]
layers:
  - {name: s, op: split, sections: 2}
  - {name: r, op: relu, inputs: "s:1"}
  - {name: cat, op: concat, inputs: ["s:0", r]}
)");
  INFO(all_diagnostics(b.d));
  REQUIRE(b.d.empty());
  REQUIRE(b.net.layers.size() == 3);
  const Layer& r = b.net.layers[1];
  REQUIRE(r.inputs.size() == 1);
  CHECK(r.inputs[0].layer == 0);
  CHECK(r.inputs[0].output == 1);
  CHECK(r.in_shapes == std::vector<Shape>{{1, 32, 8, 8}});
  CHECK(r.cost.flops == 1.0 * 32 * 8 * 8);
  const Layer& cat = b.net.layers[2];
  CHECK(cat.inputs[0].output == 0);
  CHECK(cat.inputs[1].layer == 1);
  CHECK(cat.out_shapes == std::vector<Shape>{{1, 32 + 32, 8, 8}});
  CHECK(cat.cost.input_bytes == Bytes{1.0 * 32 * 8 * 8 * 4, 1.0 * 32 * 8 * 8 * 4});

  auto bad = build(R"(name: halves
input: [1, 64, 8, 8]
layers:
  - {name: s, op: split, sections: 2}
  - {name: r, op: relu, inputs: "s:2"}
)");
  REQUIRE(bad.d.size() == 1);
  CHECK(format_diagnostic(bad.d.list()[0]) ==
        "net.yaml:5:33: error: 's' has 2 outputs; index 2 is out of range\n"
        "  - {name: r, op: relu, inputs: \"s:2\"}\n" +
            std::string(32, ' ') + "^\n");
}

TEST_CASE("network: an unknown input name gets a did-you-mean note", "[ops][graph]") {
  auto b = build(R"(name: typo
input: [1, 8, 4, 4]
layers:
  - {name: conv1, op: conv2d, out_channels: 8, kernel: 1}
  - {name: act, op: relu}
  - name: sum
    op: add
    inputs:
      - act
      - conv_1
)");
  REQUIRE(b.d.size() == 1);
  CHECK(format_diagnostic(b.d.list()[0]) ==
        "net.yaml:10:9: error: unknown input 'conv_1'\n"
        "      - conv_1\n"
        "        ^\n"
        "note: did you mean 'conv1'?\n"
        "note: inputs name an earlier layer, a block output, 'input', or NAME:K for output K\n");
  CHECK(b.net.layers.size() == 2);  // building stopped at 'sum'
}

TEST_CASE("network: a shape error is reported at the layer with its input shapes", "[ops][graph]") {
  auto b = build(R"(name: mismatch
input: [1, 64, 56, 56]
layers:
  - name: proj
    op: conv2d
    out_channels: 32
    kernel: 1
  - name: sum
    op: add
    inputs: [input, proj]
  - {name: after, op: relu}
)");
  REQUIRE(b.d.size() == 1);
  CHECK(format_diagnostic(b.d.list()[0]) ==
        "net.yaml:8:5: error: layer 'sum' (add): cannot broadcast 1x64x56x56 with 1x32x56x56: dimension 1 is 64 vs 32\n"
        "  - name: sum\n"
        "    ^\n"
        "note: input shapes: 1x64x56x56, 1x32x56x56\n");
  CHECK(b.net.layers.size() == 1);  // later layers are not built

  // inside a block the layer carries its full name; one input → "input shape"
  auto g = build(R"(name: grouped
input: [1, 30, 8, 8]
blocks:
  dw:
    params: {g: ~}
    layers:
      - {name: conv, op: conv2d, out_channels: 32, kernel: 3, groups: "${g}"}
layers:
  - {name: s1, block: dw, args: {g: 4}}
)");
  REQUIRE(g.d.size() == 1);
  // the value of groups: 6 spaces, "- " 7-8, "{" 9, "name: conv, " 10-21, "op: conv2d, " 22-33, "out_channels: 32, " 34-51, "kernel: 3, " 52-62, "groups: " 63-70
  CHECK(format_diagnostic(g.d.list()[0]) ==
        "net.yaml:7:71: error: layer 's1.conv' (conv2d): groups (4) must divide the input channels (30) of 1x30x8x8\n"
        "      - {name: conv, op: conv2d, out_channels: 32, kernel: 3, groups: \"${g}\"}\n"
        "                                                                      ^\n"
        "note: input shape: 1x30x8x8\n");
}
