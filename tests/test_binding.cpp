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

// The network totals of a one-network scenario at each of its `points`, summary only (as
// `--tables summary` runs: no layer rows).
std::vector<SummaryRow> totals(const std::string& yaml, int jobs, size_t points) {
  RunResult r = run_text(yaml, jobs, false);
  REQUIRE(r.results.size() == points);
  std::vector<SummaryRow> t;
  for (const PointResult& pr : r.results) {
    CHECK(pr.rows.empty());
    REQUIRE(pr.summary.size() == 1);
    t.push_back(pr.summary[0]);
  }
  return t;
}

// A network's totals on rtx3080 derived by hand, layer by layer (fp32, inputs + weights + outputs;
// each layer its own kernel): time = Σ max(FLOPs / 29.8e12, bytes / 760.32e9) + 5 µs of launch.
struct HandTotals {
  double layers = 0, flops = 0, macs = 0, bytes = 0, params = 0, time = 0, activation = 0;
  void layer(double f, double b, double act) {
    layers += 1, flops += f, bytes += b, activation = std::max(activation, act);
    time += std::max(f / 29.8e12, b / 760.32e9) + 5e-6;
  }
  // A 1×1 conv with bias, Cin → Cout, from H×H to H'×H' (H' = (H − 1) / stride + 1):
  // MACs Cin·Cout·H'², FLOPs 2 × MACs, bytes 4·(Cin·Cout + Cout + Cin·H² + Cout·H'²), params
  // Cin·Cout + Cout; its activations Cin·H² in and Cout·H'² out. Returns H'.
  double conv1x1(double cin, double cout, double h, double stride = 1) {
    const double ho = std::floor((h - 1) / stride) + 1;
    layer(2 * cin * cout * ho * ho, 4 * (cin * cout + cout + cin * h * h + cout * ho * ho), 4 * (cin * h * h + cout * ho * ho));
    macs += cin * cout * ho * ho, params += cin * cout + cout;
    return ho;
  }
  void check(const SummaryRow& sm) const {
    CHECK(sm.layers == layers);
    CHECK(sm.kernels == layers);
    CHECK(sm.flops == flops);
    CHECK(sm.macs == macs);
    CHECK(sm.bytes == bytes);
    CHECK(sm.params == params);
    CHECK(sm.time_s == Approx(time).epsilon(1e-12));
    CHECK(sm.weight_footprint_bytes == 4 * params);
    CHECK(sm.activation_bytes == activation);  // the largest of a layer's inputs and outputs
  }
};
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
  // "016" is the integer 16, "2.50" the number 2.5 and "-0" the integer 0: the text of `${x}` is the number's
  std::string y = R"(name: t
sweep: {zip: {c: ["016", "8", "8"], x: ["2.50", "3", "-0"]}}
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
  CHECK(layer_names(r, 2) == std::vector<std::string>{"l0"});
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

TEST_CASE("expr_names: the names an expression reads", "[binding]") {
  bool opaque = false;
  // fields after `.` and `:` and words inside strings are not names; `..` is concatenation
  CHECK(expr_names("x${a + b.c * floor(d)}y ${'e f' .. g}", opaque) == std::vector<std::string>{"a", "b", "floor", "d", "g"});
  CHECK_FALSE(opaque);
  // numbers with exponents and hex digits are not names; keywords are not names
  CHECK(expr_names("${1e5 + 0x1F + 2.5e-3 * k and not nil}", opaque) == std::vector<std::string>{"k"});
  CHECK_FALSE(opaque);
  CHECK(expr_names("no expression", opaque).empty());
  // a table constructor's braces stay inside the expression
  CHECK(expr_names("${ ({n = a}).n }", opaque) == std::vector<std::string>{"n", "a"});
  CHECK_FALSE(opaque);
  // math (math.random) and long strings make the value depend on more than the names
  expr_names("${math.floor(a)}", opaque);
  CHECK(opaque);
  opaque = false;
  expr_names("${[[text]] .. a}", opaque);
  CHECK(opaque);
}

TEST_CASE("a slot is substituted again where a name it reads changed: variables, block arguments", "[binding]") {
  // l1 reads a; l2 reads d = 2b (a variable); the block's w = b + 1 (an argument) and its layer
  // reads w; l3 reads a through a table constructor. Every layer is a 1×1 conv on 6×6 (36 pixels):
  // MACs = out channels × in channels × 36.
  std::string y = R"(name: t
sweep: {grid: {a: [2, 4], b: [3, 5]}}
vars: {d: "${2 * b}"}
platforms: [rtx3080]
networks:
  - name: n
    input: [1, 4, 6, 6]
    blocks:
      widen:
        params: {w: ~}
        layers:
          - {name: c, op: conv2d, out_channels: "${w}", kernel: 1}
    layers:
      - {name: l1, op: conv2d, out_channels: "${a}", kernel: 1}
      - {name: l2, op: conv2d, out_channels: "${d}", kernel: 1}
      - {block: widen, name: q, args: {w: "${b + 1}"}}
      - {name: l3, op: conv2d, out_channels: "${ ({n = a}).n }", kernel: 1}
)";
  for (int jobs : {1, 2}) {
    RunResult r = run_text(y, jobs);
    REQUIRE(r.results.size() == 4);
    for (size_t pt = 0; pt < 4; ++pt) {
      double a = 0, b = 0;
      for (const auto& [k, v] : r.points[pt].bindings) (k == "a" ? a : b) = std::stod(v);
      auto rows = rows_of(r, pt, "rtx3080");
      REQUIRE(rows.size() == 4);
      CHECK(rows[0]->cost.macs == a * 4 * 36);                // 4 → a
      CHECK(rows[1]->cost.macs == (2 * b) * a * 36);          // a → 2b
      CHECK(rows[2]->cost.macs == (b + 1) * (2 * b) * 36);    // 2b → b + 1
      CHECK(rows[3]->cost.macs == a * (b + 1) * 36);          // b + 1 → a
    }
  }
}

TEST_CASE("layers doing the same work share their roofline, and stay exact", "[binding]") {
  // a chain of three identical 3×3 convs (c → c, padding 1, on 8×8) swept over c: at points 1 and 2
  // (re-bound) b and c take a's roofline. Every layer's numbers, derived here: FLOPs = 2 × c·c·9·64
  // (the bias add is folded into the accumulator); bytes = 4 × (c·c·9 + c weights and bias, c·64
  // in, c·64 out)
  std::string y = R"(name: t
sweep: {grid: {c: [16, 32, 16]}}
platforms: [rtx3080]
networks:
  - name: n
    input: [1, "${c}", 8, 8]
    layers:
      - {name: a, op: conv2d, out_channels: "${c}", kernel: 3, padding: 1}
      - {name: b, op: conv2d, out_channels: "${c}", kernel: 3, padding: 1}
      - {name: c, op: conv2d, out_channels: "${c}", kernel: 3, padding: 1}
)";
  RunResult r = run_text(y, 1);
  REQUIRE(r.results.size() == 3);
  for (size_t pt = 0; pt < 3; ++pt) {
    const double c = pt == 1 ? 32 : 16;
    const double flops = 2 * c * c * 9 * 64, bytes = 4 * (c * c * 9 + c + 2 * c * 64);
    const double t = std::max(flops / 29.8e12, bytes / 760.32e9);
    auto rows = rows_of(r, pt, "rtx3080");
    REQUIRE(rows.size() == 3);
    for (const Row* row : rows) {
      CHECK(row->cost.flops == flops);
      CHECK(row->bytes == bytes);
      CHECK(row->theoretical.time_s == Approx(t).epsilon(1e-12));
      CHECK(row->derated.time_s == Approx(t).epsilon(1e-12));
    }
    CHECK(r.results[pt].summary[0].time_s == Approx(3 * (t + 5e-6)).epsilon(1e-12));  // plus 5 µs launch overhead per kernel
  }
}

TEST_CASE("layers that did the same work and stop, or start again, are evaluated as themselves", "[binding]") {
  // a: 16 → c channels, b: c → d (1×1 convs with bias on 8×8). At c = d = 16, b does a's work (its
  // twin); the points make b part from a through another group (d), follow it through the same
  // group and different input shapes, and rejoin it. Each layer's numbers, derived here:
  // FLOPs = 2 × Cin·Cout·64; bytes = 4 × (Cin·Cout + Cout weights and bias, Cin·64 in, Cout·64 out)
  std::string y = R"(name: t
sweep: {zip: {c: [16, 16, 32, 16, 16, 32], d: [16, 32, 32, 16, 16, 16]}}
platforms: [rtx3080]
networks:
  - name: n
    input: [1, 16, 8, 8]
    layers:
      - {name: a, op: conv2d, out_channels: "${c}", kernel: 1}
      - {name: b, op: conv2d, out_channels: "${d}", kernel: 1}
)";
  const double cs[] = {16, 16, 32, 16, 16, 32}, ds[] = {16, 32, 32, 16, 16, 16};
  for (int jobs : {1, 2}) {
    RunResult r = run_text(y, jobs);
    REQUIRE(r.results.size() == 6);
    for (size_t pt = 0; pt < 6; ++pt) {
      INFO("point " << pt << ", jobs " << jobs);
      auto rows = rows_of(r, pt, "rtx3080");
      REQUIRE(rows.size() == 2);
      const double c = cs[pt], d = ds[pt];
      CHECK(rows[0]->cost.flops == 2 * 16 * c * 64);
      CHECK(rows[0]->bytes == 4 * (16 * c + c + 16 * 64 + c * 64));
      CHECK(rows[1]->cost.flops == 2 * c * d * 64);
      CHECK(rows[1]->bytes == 4 * (c * d + d + c * 64 + d * 64));
      CHECK(rows[1]->theoretical.time_s == Approx(std::max(2 * c * d * 64 / 29.8e12, 4 * (c * d + d + c * 64 + d * 64) / 760.32e9)).epsilon(1e-12));
      CHECK(rows[1]->input_shapes == "1x" + std::to_string(static_cast<int>(c)) + "x8x8");
    }
  }
}

TEST_CASE("network totals only: repeated layers that part and rejoin are counted as themselves", "[binding]") {
  // A summary-only run keeps no layer rows: a layer doing an earlier one's work is read through
  // that layer (it keeps no shapes or cost of its own while it does). Four 1×1 convs with bias on
  // 8×8: a (16 → c), b (c → d), e (d → c), f (c → d). The points make b, e and f all do a's work
  // (c = d = 16), part (b and f through d, e through its input shapes), rejoin and part again.
  // Totals derived by hand, layer by layer (HandTotals).
  std::string y = R"(name: t
sweep: {zip: {c: [16, 16, 32, 16, 16, 32, 16], d: [16, 32, 32, 16, 16, 16, 16]}}
platforms: [rtx3080]
networks:
  - name: n
    input: [1, 16, 8, 8]
    layers:
      - {name: a, op: conv2d, out_channels: "${c}", kernel: 1}
      - {name: b, op: conv2d, out_channels: "${d}", kernel: 1}
      - {name: e, op: conv2d, out_channels: "${c}", kernel: 1}
      - {name: f, op: conv2d, out_channels: "${d}", kernel: 1}
)";
  const double cs[] = {16, 16, 32, 16, 16, 32, 16}, ds[] = {16, 32, 32, 16, 16, 16, 16};
  for (int jobs : {1, 2}) {
    const std::vector<SummaryRow> got = totals(y, jobs, 7);
    for (size_t pt = 0; pt < 7; ++pt) {
      INFO("point " << pt << ", jobs " << jobs);
      const SummaryRow& sm = got[pt];
      const double c = cs[pt], d = ds[pt];
      const double io[4][2] = {{16, c}, {c, d}, {d, c}, {c, d}};  // each layer's Cin, Cout
      HandTotals want;
      for (const auto& [ci, co] : io) want.conv1x1(ci, co, 8);
      want.check(sm);
      CHECK(sm.memory_bound == 4);  // at most 2·32·32·64 FLOPs against ≥ 4·(16·16 + 16 + 2·16·64) bytes: far below the ridge (39 FLOP/byte)
    }
  }
}

TEST_CASE("network totals only: a repeated block's copies count as themselves whether or not they repeat its work", "[binding]") {
  // A block of a 1×1 conv (bias, `w` output channels, stride s) and a relu, repeated 4 times on
  // 16 × 8×8 inputs, then a 1×1 conv to 8 channels. The first copy reads the network input; from
  // the second on, each reads the one before. With s = 1 every later copy does the second one's
  // work and is read through it (its attributes are not even substituted); with s = 2 each copy
  // halves the image and is evaluated as itself, with the attributes of its point. The points go through both, with c changing while the copies repeat
  // (points 1 → 2) and staying when they stop (2 → 3): a copy whose attribute was left
  // unsubstituted must get its point's value back.
  // Totals derived by hand, layer by layer (HandTotals); a relu on C × H² has FLOPs C·H² and
  // bytes 4·2·C·H².
  std::string y = R"(name: t
sweep: {zip: {c: [16, 32, 16, 16, 24, 24, 16], s: [1, 1, 1, 2, 2, 1, 1]}}
platforms: [rtx3080]
networks:
  - name: n
    input: [1, 16, 8, 8]
    blocks:
      unit:
        params: {w: ~}
        layers:
          - {name: conv, op: conv2d, out_channels: "${w}", kernel: 1, stride: "${s}"}
          - {name: r, op: relu}
    layers:
      - {name: u, block: unit, args: {w: "${c}"}, repeat: 4}
      - {name: head, op: conv2d, out_channels: 8, kernel: 1}
)";
  const double cs[] = {16, 32, 16, 16, 24, 24, 16}, ss[] = {1, 1, 1, 2, 2, 1, 1};
  for (int jobs : {1, 2}) {
    const std::vector<SummaryRow> got = totals(y, jobs, 7);
    for (size_t pt = 0; pt < 7; ++pt) {
      INFO("point " << pt << ", jobs " << jobs);
      const SummaryRow& sm = got[pt];
      const double c = cs[pt], st = ss[pt];
      HandTotals want;
      double h = 8, ci = 16;
      for (int copy = 0; copy < 4; ++copy) {  // s = 2: 8×8 → 4, 2, 1, 1
        h = want.conv1x1(ci, c, h, st), ci = c;
        want.layer(c * h * h, 4 * 2 * c * h * h, 4 * 2 * c * h * h);  // the relu
      }
      want.conv1x1(c, 8, h);
      REQUIRE(want.layers == 9);
      want.check(sm);
      CHECK(sm.memory_bound == 9);  // a 1×1 conv does 2·Cin·Cout FLOPs per pixel against ≥ 4·Cin bytes: at most 2·32/4 = 16 FLOP/byte, below the ridge (39)
      CHECK(sm.compute_bound == 0);
    }
  }
}

TEST_CASE("a repeat's copies left unsubstituted while borrowing are whole again when re-bound without", "[binding]") {
  // Four 1×1 convs 16 → c → c → c → c on 8×8 (the last three a repeat). Re-bound with borrowing,
  // the copies' attributes are left as they were (their layers read the first copy's work);
  // re-bound without it, at the same bindings, every layer holds its own attributes, shapes and
  // cost again. MACs of a 1×1 conv Cin → Cout on 8×8: Cin·Cout·64.
  std::unique_ptr<ExprEvaluator> ev = make_lua_evaluator();
  BuildOptions bo{builtin_ops(), *ev, DType::fp32, 2.0};
  CNode node = parse_yaml(R"(name: n
input: [1, 16, 8, 8]
layers:
  - {name: a, op: conv2d, out_channels: "${c}", kernel: 1}
  - {name: b, op: conv2d, out_channels: "${c}", kernel: 1}
  - {name: e, op: conv2d, out_channels: "${c}", kernel: 1}
  - {name: f, op: conv2d, out_channels: "${c}", kernel: 1}
)",
                          "n.yaml");
  NetworkPlan plan;
  Diags d;
  Network net = build_network(node, Env{{"c", "16"}}, bo, d, &plan);
  REQUIRE(d.empty());
  mark_same_work(net);
  bool changed = false;
  REQUIRE(rebind_network(plan, Env{{"c", "32"}}, bo, net, changed, true));  // (the plan's graph and repeats are made here)
  REQUIRE(rebind_network(plan, Env{{"c", "24"}}, bo, net, changed, true));
  CHECK(net.layers[3].borrowed);
  REQUIRE(rebind_network(plan, Env{{"c", "24"}}, bo, net, changed, false));
  for (size_t i = 0; i < 4; ++i) {
    INFO("layer " << i);
    const Layer& L = net.layers[i];
    CHECK_FALSE(L.borrowed);
    CHECK(L.attrs.i("out_channels") == 24);
    CHECK(L.out_shapes.at(0) == Shape{1, 24, 8, 8});
    CHECK(L.cost.macs == (i == 0 ? 16.0 : 24.0) * 24 * 64);
  }
}

TEST_CASE("network totals only: a repeat whose first copy starts or stops doing an earlier layer's work", "[binding]") {
  // Five 1×1 convs with bias on 8×8, 16 → c → c → c → c: the last four a repeat of one layer.
  // At c = 16 the first copy does the first conv's work (16 → 16) and every copy is read through
  // that conv; at c ≠ 16 through the first copy. Totals derived by hand (HandTotals).
  std::string y = R"(name: t
sweep: {grid: {c: [16, 24, 16, 16, 32, 24, 16]}}
platforms: [rtx3080]
networks:
  - name: n
    input: [1, 16, 8, 8]
    layers:
      - {name: a, op: conv2d, out_channels: "${c}", kernel: 1}
      - {name: b, op: conv2d, out_channels: "${c}", kernel: 1}
      - {name: e, op: conv2d, out_channels: "${c}", kernel: 1}
      - {name: f, op: conv2d, out_channels: "${c}", kernel: 1}
      - {name: g, op: conv2d, out_channels: "${c}", kernel: 1}
)";
  const double cs[] = {16, 24, 16, 16, 32, 24, 16};
  const std::vector<SummaryRow> got = totals(y, 1, 7);
  for (size_t pt = 0; pt < 7; ++pt) {
    INFO("point " << pt);
    const SummaryRow& sm = got[pt];
    const double c = cs[pt];
    HandTotals want;
    for (int k = 0; k < 5; ++k) want.conv1x1(k == 0 ? 16 : c, c, 8);
    want.check(sm);
  }
}

TEST_CASE("network totals only: repeated layers with fractional bytes are added one by one", "[binding]") {
  // int4 weights (half a byte each, plus one 2-byte scale per 3 weights) give a conv an odd
  // number of half bytes: a repeat's totals are then not added as copies × one copy's sum (which
  // is exact only for integers) but layer by layer, as without repeats. Three 1×1 convs c → c on
  // 8×8 without bias (the second and third a repeat), c odd: weights c² · 0.5 + ceil(c²/3) · 2
  // bytes; activations fp32.
  std::string y = R"(name: t
settings: {weights_dtype: int4, quant_group: 3}
sweep: {grid: {c: [7, 9, 7]}}
platforms: [rtx3080]
networks:
  - name: n
    input: [1, "${c}", 8, 8]
    layers:
      - {name: a, op: conv2d, out_channels: "${c}", kernel: 1, bias: false}
      - {name: b, op: conv2d, out_channels: "${c}", kernel: 1, bias: false}
      - {name: e, op: conv2d, out_channels: "${c}", kernel: 1, bias: false}
)";
  const double cs[] = {7, 9, 7};
  const std::vector<SummaryRow> got = totals(y, 1, 3);
  for (size_t pt = 0; pt < 3; ++pt) {
    INFO("point " << pt);
    const SummaryRow& sm = got[pt];
    const double c = cs[pt];
    const double weights = c * c * 0.5 + std::ceil(c * c / 3) * 2;  // 7: 24.5 + 17·2 = 58.5; 9: 40.5 + 27·2 = 94.5
    const double one = weights + 4 * (c * 64 + c * 64);
    double bytes = 0;
    for (int k = 0; k < 3; ++k) bytes += one;
    CHECK(sm.bytes == bytes);
    CHECK(sm.bytes != std::trunc(sm.bytes));  // (the case it is for: 3 × (58.5 + 3,584) has a half)
    CHECK(sm.flops == 3 * 2 * c * c * 64);
    CHECK(sm.layers == 3);
  }
}

TEST_CASE("a list with `${…}` (an [h, w] kernel, a layer's inputs) is substituted when a name it reads changes", "[binding]") {
  // conv k: a [k, 1] kernel on 1×2×8×8 (padding 0): out 8−k+1 rows × 8 columns; MACs = 3 (out) ×
  // 2 (in) × k taps × rows × 8. The add's inputs switch with `pick` between the conv and a 1×1 conv
  // of the same 3 channels whose output is 8×8: the add needs equal shapes, so only k = 1 pairs with
  // pick = 1. From point 1 to point 2 only k changes: the inputs list is not substituted again.
  std::string y = R"(name: t
sweep: {zip: {k: [1, 3, 1], pick: [1, 0, 0]}}
platforms: [rtx3080]
networks:
  - name: n
    input: [1, 2, 8, 8]
    layers:
      - {name: a, op: conv2d, out_channels: 3, kernel: ["${k}", 1]}
      - {name: b, op: conv2d, inputs: [input], out_channels: 3, kernel: 1}
      - {name: s, op: add, inputs: ["${pick == 1 and 'a' or 'b'}", b]}
)";
  for (int jobs : {1, 2}) {
    RunResult r = run_text(y, jobs);
    REQUIRE(r.results.size() == 3);
    const double ks[] = {1, 3, 1};
    for (size_t pt = 0; pt < 3; ++pt) {
      const double k = ks[pt], rows = 8 - k + 1;
      auto rs = rows_of(r, pt, "rtx3080");
      REQUIRE(rs.size() == 3);
      CHECK(rs[0]->cost.macs == 3 * 2 * k * rows * 8);
      CHECK(rs[0]->output_shapes == "1x3x" + std::to_string(static_cast<int>(rows)) + "x8");
      CHECK(rs[1]->cost.macs == 3 * 2 * 1 * 64);
      // the add reads a (pick 1) or b (pick 0): 1×3×8×8 either way, one add per element
      CHECK(rs[2]->cost.flops == 3 * 64);
      CHECK(rs[2]->input_shapes == "1x3x8x8;1x3x8x8");
    }
  }
}

TEST_CASE("the expression evaluator binds whole names: one with a NUL byte is not a shorter one", "[binding]") {
  // "a\0b" bound after "a" used to be bound as "a" (lua_setfield stops at the NUL), shadowing it:
  // re-binding skips a `${a}` when only "a\0b" changed (expr_names reads "a"), so this matters.
  auto ev = make_lua_evaluator();
  Env env{{"a", "2"}, {std::string("a\0b", 3), "5"}};
  CHECK(ev->eval("a * 10", env) == "20");  // 2 × 10, not 5 × 10
}

TEST_CASE("every shipped sweep gives the same tables re-bound as built afresh at each point", "[binding]") {
  // An equivalence, not a number: re-binding (slots substituted only where a name they read
  // changed, layers taking a same-work layer's cost and roofline) against the path that builds
  // every network from its YAML at every point, which a scenario with scripts takes. An empty
  // script adds nothing else: no operator, efficiency model or metric.
  int multi = 0;  // scenarios of more than one point (the others build once either way)
  for (const char* f : {"scenarios/channel_sweep.yaml", "scenarios/group_conv_sweep.yaml", "scenarios/kernel_size_sweep.yaml",
                        "scenarios/output_size_sweep.yaml", "scenarios/fc_sweep.yaml", "scenarios/reshape_sweep.yaml",
                        "scenarios/avx512_clock_whatif.yaml", "scenarios/bandwidth_fraction_whatif.yaml", "scenarios/llm_decode.yaml",
                        "scenarios/llm_footprint.yaml", "scenarios/llm_prefill_decode.yaml", "scenarios/study_batch.yaml",
                        "scenarios/study_fusion.yaml", "scenarios/study_platforms.yaml", "scenarios/study_avx512_resnet50.yaml",
                        "scenarios/study_avx512_16core_grid.yaml", "scenarios/study_bandwidth_upgrade.yaml"}) {
    INFO(f);
    Scenario s = load_scenario(src(f));
    REQUIRE(s.scripts.empty());
    RunResult rebound = run(s);
    Scenario fresh = s;
    fresh.scripts.push_back(Script{"none.lua", "", {}});
    RunResult built = run(fresh);
    multi += rebound.results.size() > 1;
    CHECK(summary_csv(rebound, s) == summary_csv(built, fresh));
    CHECK(results_csv(rebound, s) == results_csv(built, fresh));
    // network totals only: repeated layers and repeated blocks read through the first of their kind
    CHECK(summary_csv(run(s, 1, false), s) == summary_csv(built, fresh));
  }
  CHECK(multi >= 8);
}

TEST_CASE("zoo models swept: network totals re-bound with repeats as built afresh at each point", "[binding]") {
  // An equivalence, as above, on models with repeated blocks (their copies found as repeats and
  // read through the first copy where their inputs agree): ResNet-50 and MobileNet-V2, whose
  // stages start with a projection or a stride (the copies after the first repeat), across image
  // sizes and batches; Llama-3-8B decode and GPT-2 prefill across batches and context lengths.
  std::string y = R"(name: t
sweep: {grid: {b: [1, 3], s: [160, 224], ctx: [128, 1000]}}
platforms: [rtx3080, h100_sxm]
networks:
  - {model: resnet50, args: {batch: "${b}", size: "${s}"}}
  - {model: mobilenet_v2, args: {batch: "${b}", size: "${s}"}}
  - {model: llama3_8b, name: d, args: {phase: decode, batch: "${b}", context: "${ctx}", file_dtype: fp16}}
  - {model: gpt2, name: g, args: {phase: prefill, batch: "${b}", seq: "${ctx // 4}"}}
)";
  Scenario s = parse_scenario(y, src("scenarios/t.yaml"));
  Scenario fresh = s;
  fresh.scripts.push_back(Script{"none.lua", "", {}});
  RunResult built = run(fresh, 1, false);
  REQUIRE(built.results.size() == 8);
  for (int jobs : {1, 2}) CHECK(summary_csv(run(s, jobs, false), s) == summary_csv(built, fresh));
}
