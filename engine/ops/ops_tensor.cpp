#include "engine/ops/ops_tensor.hpp"

#include <algorithm>
#include <cmath>

namespace rsim {

namespace {

[[noreturn]] void fail(const std::string& msg) { throw ShapeError(msg); }

long long positive(long long v, const std::string& what) {
  if (v <= 0) fail(what + " must be positive, got " + std::to_string(v));
  return v;
}

size_t axis_in(long long axis, size_t rank, const std::string& what) {
  long long r = static_cast<long long>(rank);
  long long a = axis < 0 ? axis + r : axis;
  if (a < 0 || a >= r) fail(what + " axis " + std::to_string(axis) + " is out of range for rank " + std::to_string(rank));
  return static_cast<size_t>(a);
}

Shape broadcast2(const Shape& a, const Shape& b) {
  size_t r = std::max(a.size(), b.size());
  Shape out(r);
  for (size_t i = 0; i < r; ++i) {
    long long da = i < r - a.size() ? 1 : a[i - (r - a.size())];
    long long db = i < r - b.size() ? 1 : b[i - (r - b.size())];
    if (da != db && da != 1 && db != 1)
      fail("cannot broadcast " + shape_str(a) + " with " + shape_str(b) + ": dimension " + std::to_string(i) + " is " +
           std::to_string(da) + " vs " + std::to_string(db));
    out[i] = da == 1 ? db : da;
  }
  return out;
}

Shape broadcast_all(const std::vector<Shape>& in) {
  Shape out = in.at(0);
  for (size_t i = 1; i < in.size(); ++i) out = broadcast2(out, in[i]);
  return out;
}

OpWork per_out(const std::vector<Shape>& out, double f) {
  OpWork w;
  w.other_flops = elements(out[0]) * f;
  return w;
}

double product(const std::vector<long long>& v) {
  double p = 1;
  for (auto x : v) p *= static_cast<double>(x);
  return p;
}

// An optional Ints attribute with one value per spatial axis (default `def`), checked for length.
std::vector<long long> per_axis(const Attrs& a, const char* name, size_t k, long long def) {
  if (!a.has(name)) return std::vector<long long>(k, def);
  const auto& v = a.ints(name);
  if (v.size() != k) fail(std::string(name) + " has " + std::to_string(v.size()) + " values, the kernel has " + std::to_string(k) + " dimensions");
  return v;
}

std::vector<long long> pads_of(const Attrs& a, size_t k) {
  if (!a.has("pads")) return std::vector<long long>(2 * k, 0);
  const auto& v = a.ints("pads");
  if (v.size() != 2 * k)
    fail("pads has " + std::to_string(v.size()) + " values; " + std::to_string(k) + " spatial dimensions need " + std::to_string(2 * k) +
         " (all begins, then all ends)");
  return v;
}

const AttrSpec kKernelN{"kernel", AttrType::Ints, "", "kernel size per spatial dimension", {}};
const AttrSpec kStrideN{"stride", AttrType::Ints, "~", "stride per spatial dimension (default 1)", {}};
const AttrSpec kPadsN{"pads", AttrType::Ints, "~", "padding: the begins of every spatial dimension, then the ends (default 0)", {}};
const AttrSpec kDilationN{"dilation", AttrType::Ints, "~", "dilation per spatial dimension (default 1)", {}};

void add_conv_nd(OpRegistry& r) {
  OpDef c;
  c.name = "conv_nd";
  c.summary = "N-d convolution over (N, C, D1, ..., Dk) with per-side padding (ONNX Conv)";
  c.formula =
      "Dout = floor((D + pad_begin + pad_end − dilation·(k − 1) − 1)/stride) + 1 per spatial dimension\n"
      "MACs   = N · Cout · ΠDout · (Cin/groups) · Πk\n"
      "FLOPs  = 2 · MACs (bias add folded into the accumulator)\n"
      "params = Πk · (Cin/groups) · Cout (+ Cout with bias); weights read = params";
  c.attrs = {{"out_channels", AttrType::Int, "", "output channels Cout", {}}, kKernelN, kStrideN, kPadsN, kDilationN,
             {"groups", AttrType::Int, "1", "channel groups", {}},
             {"bias", AttrType::Bool, "true", "a learnable bias per output channel", {}}};
  c.infer = [](const OpArgs& a) -> std::vector<Shape> {
    const Shape& x = a.in[0];
    const auto& k = a.attrs.ints("kernel");
    if (k.empty()) fail("conv_nd needs a kernel size per spatial dimension");
    if (x.size() != k.size() + 2)
      fail("a " + std::to_string(k.size()) + "-d kernel needs a rank-" + std::to_string(k.size() + 2) + " input (N, C, ...), got " + shape_str(x));
    long long cout = positive(a.attrs.i("out_channels"), "out_channels");
    long long g = positive(a.attrs.i("groups"), "groups");
    if (x[1] % g != 0) fail("groups (" + std::to_string(g) + ") must divide the input channels (" + std::to_string(x[1]) + ")");
    if (cout % g != 0) fail("groups (" + std::to_string(g) + ") must divide out_channels (" + std::to_string(cout) + ")");
    auto s = per_axis(a.attrs, "stride", k.size(), 1);
    auto d = per_axis(a.attrs, "dilation", k.size(), 1);
    auto p = pads_of(a.attrs, k.size());
    Shape y = {x[0], cout};
    for (size_t i = 0; i < k.size(); ++i) {
      long long eff = positive(d[i], "dilation") * (positive(k[i], "kernel") - 1) + 1;
      long long padded = x[2 + i] + p[i] + p[i + k.size()];
      if (eff > padded)
        fail("kernel " + std::to_string(k[i]) + " (dilated to " + std::to_string(eff) + ") is larger than the padded input " + std::to_string(padded));
      y.push_back((padded - eff) / positive(s[i], "stride") + 1);
    }
    return {y};
  };
  c.work = [](const OpArgs& a, const std::vector<Shape>& out) {
    double kk = product(a.attrs.ints("kernel"));
    double cin_g = static_cast<double>(a.in[0][1] / a.attrs.i("groups"));
    OpWork w;
    w.macs = elements(out[0]) * cin_g * kk;
    w.params = kk * cin_g * static_cast<double>(out[0][1]) + (a.attrs.b("bias") ? static_cast<double>(out[0][1]) : 0.0);
    w.weight_elems = w.params;
    return w;
  };
  r.add(c);

  OpDef t;
  t.name = "conv_transpose_nd";
  t.summary = "N-d transposed convolution with per-side padding (ONNX ConvTranspose)";
  t.formula =
      "Dout = stride·(D − 1) + output_padding + dilation·(k − 1) + 1 − pad_begin − pad_end per spatial dimension\n"
      "MACs   = N · Cin · ΠD · (Cout/groups) · Πk (every input element scatters into a kernel window)\n"
      "FLOPs  = 2 · MACs\n"
      "params = Cin · (Cout/groups) · Πk (+ Cout with bias)";
  t.attrs = {{"out_channels", AttrType::Int, "", "output channels Cout", {}}, kKernelN, kStrideN, kPadsN,
             {"output_padding", AttrType::Ints, "~", "extra size at the end of each spatial dimension (default 0)", {}},
             kDilationN,
             {"groups", AttrType::Int, "1", "channel groups", {}},
             {"bias", AttrType::Bool, "true", "a learnable bias per output channel", {}}};
  t.infer = [](const OpArgs& a) -> std::vector<Shape> {
    const Shape& x = a.in[0];
    const auto& k = a.attrs.ints("kernel");
    if (k.empty()) fail("conv_transpose_nd needs a kernel size per spatial dimension");
    if (x.size() != k.size() + 2)
      fail("a " + std::to_string(k.size()) + "-d kernel needs a rank-" + std::to_string(k.size() + 2) + " input (N, C, ...), got " + shape_str(x));
    long long cout = positive(a.attrs.i("out_channels"), "out_channels");
    long long g = positive(a.attrs.i("groups"), "groups");
    if (x[1] % g != 0) fail("groups (" + std::to_string(g) + ") must divide the input channels (" + std::to_string(x[1]) + ")");
    if (cout % g != 0) fail("groups (" + std::to_string(g) + ") must divide out_channels (" + std::to_string(cout) + ")");
    auto s = per_axis(a.attrs, "stride", k.size(), 1);
    auto d = per_axis(a.attrs, "dilation", k.size(), 1);
    auto op = per_axis(a.attrs, "output_padding", k.size(), 0);
    auto p = pads_of(a.attrs, k.size());
    Shape y = {x[0], cout};
    for (size_t i = 0; i < k.size(); ++i) {
      long long o = positive(s[i], "stride") * (x[2 + i] - 1) + op[i] + positive(d[i], "dilation") * (positive(k[i], "kernel") - 1) + 1 -
                    p[i] - p[i + k.size()];
      if (o <= 0) fail("output size would be " + std::to_string(o) + " for input " + shape_str(x));
      y.push_back(o);
    }
    return {y};
  };
  t.work = [](const OpArgs& a, const std::vector<Shape>& out) {
    double kk = product(a.attrs.ints("kernel"));
    double cout_g = static_cast<double>(out[0][1] / a.attrs.i("groups"));
    OpWork w;
    w.macs = elements(a.in[0]) * cout_g * kk;
    w.params = static_cast<double>(a.in[0][1]) * cout_g * kk + (a.attrs.b("bias") ? static_cast<double>(out[0][1]) : 0.0);
    w.weight_elems = w.params;
    return w;
  };
  r.add(t);

  OpDef p;
  p.name = "pool_nd";
  p.summary = "N-d max, average or Lp pooling with per-side padding, dilation and ceil_mode (ONNX pools)";
  p.formula =
      "Dout = floor_or_ceil((D + pad_begin + pad_end − dilation·(k − 1) − 1)/stride) + 1; with ceil_mode a window\n"
      "that would start in the end padding is dropped (as PyTorch and ONNX Runtime)\n"
      "FLOPs = Πk per output element (a compare or an add per window element; Lp: 2·Πk); MACs = 0; params = 0";
  p.attrs = {{"mode", AttrType::Choice, "max", "max, avg or lp", {"max", "avg", "lp"}}, kKernelN, kStrideN, kPadsN, kDilationN,
             {"ceil_mode", AttrType::Bool, "false", "round the output size up", {}}};
  p.infer = [](const OpArgs& a) -> std::vector<Shape> {
    const Shape& x = a.in[0];
    const auto& k = a.attrs.ints("kernel");
    if (k.empty() || x.size() != k.size() + 2)
      fail("a " + std::to_string(k.size()) + "-d pooling window needs a rank-" + std::to_string(k.size() + 2) + " input, got " + shape_str(x));
    auto s = per_axis(a.attrs, "stride", k.size(), 1);
    auto d = per_axis(a.attrs, "dilation", k.size(), 1);
    auto pd = pads_of(a.attrs, k.size());
    Shape y = {x[0], x[1]};
    for (size_t i = 0; i < k.size(); ++i) {
      long long eff = positive(d[i], "dilation") * (positive(k[i], "kernel") - 1) + 1;
      long long st = positive(s[i], "stride");
      long long padded = x[2 + i] + pd[i] + pd[i + k.size()];
      if (eff > padded) fail("pooling window " + std::to_string(eff) + " is larger than the padded input " + std::to_string(padded));
      long long o;
      if (a.attrs.b("ceil_mode")) {
        o = (padded - eff + st - 1) / st + 1;
        if ((o - 1) * st >= x[2 + i] + pd[i]) --o;
      } else {
        o = (padded - eff) / st + 1;
      }
      y.push_back(o);
    }
    return {y};
  };
  p.work = [](const OpArgs& a, const std::vector<Shape>& out) {
    return per_out(out, product(a.attrs.ints("kernel")) * (a.attrs.s("mode") == "lp" ? 2.0 : 1.0));
  };
  r.add(p);
}

void add_gemm(OpRegistry& r) {
  OpDef g;
  g.name = "gemm";
  g.summary = "general matrix product of two activations, Y = α·op(A)·op(B) + β·C (ONNX Gemm)";
  g.formula =
      "op(A) (M, K) × op(B) (K, N) → (M, N); op = transpose when trans_a / trans_b\n"
      "MACs  = M · K · N; FLOPs = 2 · MACs (+ M · N with a third input C); params = 0 (activations)";
  g.attrs = {{"trans_a", AttrType::Bool, "false", "A is given as (K, M)", {}}, {"trans_b", AttrType::Bool, "false", "B is given as (N, K)", {}}};
  g.min_inputs = 2;
  g.max_inputs = 3;
  g.infer = [](const OpArgs& a) -> std::vector<Shape> {
    const Shape& A = a.in[0];
    const Shape& B = a.in[1];
    if (A.size() != 2 || B.size() != 2) fail("gemm takes rank-2 operands, got " + shape_str(A) + " and " + shape_str(B));
    long long m = a.attrs.b("trans_a") ? A[1] : A[0], ka = a.attrs.b("trans_a") ? A[0] : A[1];
    long long kb = a.attrs.b("trans_b") ? B[1] : B[0], n = a.attrs.b("trans_b") ? B[0] : B[1];
    if (ka != kb) fail("gemm inner dimensions differ: " + std::to_string(ka) + " vs " + std::to_string(kb));
    Shape y = {m, n};
    if (a.in.size() == 3 && broadcast2(y, a.in[2]) != y) fail("gemm: C " + shape_str(a.in[2]) + " does not broadcast to " + shape_str(y));
    return {y};
  };
  g.work = [](const OpArgs& a, const std::vector<Shape>& out) {
    OpWork w;
    double k = static_cast<double>(a.attrs.b("trans_a") ? a.in[0][0] : a.in[0][1]);
    w.macs = elements(out[0]) * k;
    if (a.in.size() == 3) w.other_flops = elements(out[0]);
    return w;
  };
  r.add(g);
}

void add_norms(OpRegistry& r) {
  OpDef in;
  in.name = "instance_norm";
  in.summary = "instance normalisation over the spatial dims of (N, C, ...), affine per channel";
  in.formula =
      "FLOPs  = 8 per element (mean 1, variance 3, normalise 2, affine 2)\n"
      "params = 2 · C (γ, β); weights read = params";
  in.infer = [](const OpArgs& a) -> std::vector<Shape> {
    if (a.in[0].size() < 3) fail("instance_norm expects (N, C, D1, ...), got " + shape_str(a.in[0]));
    return one_shape(a.in[0]);
  };
  in.work = [](const OpArgs& a, const std::vector<Shape>& out) {
    OpWork w = per_out(out, 8);
    w.params = 2.0 * static_cast<double>(a.in[0][1]);
    w.weight_elems = w.params;
    return w;
  };
  r.add(in);

  OpDef lrn;
  lrn.name = "lrn";
  lrn.summary = "local response normalisation across `size` neighbouring channels";
  lrn.formula = "FLOPs = 2·size + 3 per element (square and add per neighbour; scale, power, divide); params = 0";
  lrn.attrs = {{"size", AttrType::Int, "", "channels in the window", {}}};
  lrn.infer = [](const OpArgs& a) -> std::vector<Shape> {
    if (a.in[0].size() < 3) fail("lrn expects (N, C, D1, ...), got " + shape_str(a.in[0]));
    positive(a.attrs.i("size"), "size");
    return one_shape(a.in[0]);
  };
  lrn.work = [](const OpArgs& a, const std::vector<Shape>& out) { return per_out(out, 2.0 * static_cast<double>(a.attrs.i("size")) + 3); };
  r.add(lrn);
}

struct Elementwise {
  const char* name;
  double flops;
  const char* rule;
};

void add_unary(OpRegistry& r) {
  const Elementwise table[] = {
      {"erf", 1, "erf(x): 1 FLOP per element (a transcendental counted as 1, as exp)"},
      {"exp", 1, "exp(x): 1 FLOP per element"},
      {"log", 1, "log(x): 1 FLOP per element"},
      {"sqrt", 1, "√x: 1 FLOP per element"},
      {"reciprocal", 1, "1/x: 1 FLOP per element"},
      {"neg", 1, "−x: 1 FLOP per element"},
      {"abs", 1, "|x|: 1 FLOP per element"},
      {"floor", 1, "floor(x): 1 FLOP per element"},
      {"ceil", 1, "ceil(x): 1 FLOP per element"},
      {"round", 1, "round(x): 1 FLOP per element"},
      {"sign", 1, "sign(x): 1 FLOP per element"},
      {"sin", 1, "sin(x): 1 FLOP per element"},
      {"cos", 1, "cos(x): 1 FLOP per element"},
      {"logical_not", 1, "not x: 1 FLOP per element"},
      {"clip", 2, "min(max(x, lo), hi): 2 FLOPs per element"},
      {"softplus", 3, "log(1 + exp(x)): 3 FLOPs per element"},
      {"elu", 4, "x > 0 ? x : α(exp(x) − 1): 4 FLOPs per element (compare, exp, subtract, multiply)"},
      {"selu", 5, "γ·(x > 0 ? x : α(exp(x) − 1)): 5 FLOPs per element"},
      {"mish", 9, "x·tanh(softplus(x)): 9 FLOPs per element (softplus 3, tanh 5, multiply 1)"},
      {"cumsum", 1, "running sum along an axis: 1 FLOP per element"},
  };
  for (const auto& e : table) {
    OpDef d;
    d.name = e.name;
    d.summary = std::string("elementwise ") + e.name;
    d.formula = std::string(e.rule) + "\nMACs = 0; params = 0";
    if (d.name == "cumsum") d.attrs = {{"axis", AttrType::Int, "0", "axis to accumulate along", {}}};
    d.infer = [](const OpArgs& a) -> std::vector<Shape> { return one_shape(a.in[0]); };
    double f = e.flops;
    d.work = [f](const OpArgs&, const std::vector<Shape>& out) { return per_out(out, f); };
    r.add(d);
  }

  OpDef pr;
  pr.name = "prelu";
  pr.summary = "parametric ReLU: x > 0 ? x : slope·x, slope a learnable tensor broadcast to x";
  pr.formula = "FLOPs = 2 per element (compare, multiply)\nparams = elements of slope_shape; weights read = params";
  pr.attrs = {{"slope_shape", AttrType::Ints, "[1]", "shape of the learnable slope (broadcast to the input)", {}}};
  pr.infer = [](const OpArgs& a) -> std::vector<Shape> {
    Shape slope(a.attrs.ints("slope_shape").begin(), a.attrs.ints("slope_shape").end());
    if (broadcast2(a.in[0], slope) != a.in[0]) fail("prelu slope " + shape_str(slope) + " does not broadcast to " + shape_str(a.in[0]));
    return one_shape(a.in[0]);
  };
  pr.work = [](const OpArgs& a, const std::vector<Shape>& out) {
    OpWork w = per_out(out, 2);
    w.params = product(a.attrs.ints("slope_shape"));
    w.weight_elems = w.params;
    return w;
  };
  r.add(pr);

  OpDef ls;
  ls.name = "log_softmax";
  ls.summary = "log of the softmax along an axis";
  ls.formula = "FLOPs = 5 per element (max, subtract, exp, sum, subtract the log-sum; the log per row not counted); MACs = 0";
  ls.attrs = {{"axis", AttrType::Int, "-1", "axis to normalise", {}}};
  ls.infer = [](const OpArgs& a) -> std::vector<Shape> {
    axis_in(a.attrs.i("axis"), a.in[0].size(), "log_softmax");
    return one_shape(a.in[0]);
  };
  ls.work = [](const OpArgs&, const std::vector<Shape>& out) { return per_out(out, 5); };
  r.add(ls);
}

void add_broadcasting(OpRegistry& r) {
  const Elementwise binary[] = {
      {"pow", 1, "x^y: 1 FLOP per output element"},
      {"mod", 1, "x mod y: 1 FLOP per output element"},
      {"equal", 1, "x == y: 1 FLOP per output element"},
      {"less", 1, "x < y: 1 FLOP per output element"},
      {"less_equal", 1, "x <= y: 1 FLOP per output element"},
      {"greater", 1, "x > y: 1 FLOP per output element"},
      {"greater_equal", 1, "x >= y: 1 FLOP per output element"},
      {"logical_and", 1, "x and y: 1 FLOP per output element"},
      {"logical_or", 1, "x or y: 1 FLOP per output element"},
      {"logical_xor", 1, "x xor y: 1 FLOP per output element"},
  };
  for (const auto& e : binary) {
    OpDef d;
    d.name = e.name;
    d.summary = std::string("elementwise ") + e.name + " of two tensors with NumPy broadcasting";
    d.formula = std::string("output shape = broadcast of the inputs\n") + e.rule + "; MACs = 0; params = 0";
    d.min_inputs = d.max_inputs = 2;
    d.infer = [](const OpArgs& a) -> std::vector<Shape> { return one_shape(broadcast_all(a.in)); };
    double f = e.flops;
    d.work = [f](const OpArgs&, const std::vector<Shape>& out) { return per_out(out, f); };
    r.add(d);
  }
  const Elementwise variadic[] = {
      {"max", 0, "FLOPs = (inputs − 1) per output element (compares)"},
      {"min", 0, "FLOPs = (inputs − 1) per output element (compares)"},
      {"sum", 0, "FLOPs = (inputs − 1) per output element (adds)"},
      {"mean", 1, "FLOPs = inputs per output element (adds and one scale)"},
  };
  for (const auto& e : variadic) {
    OpDef d;
    d.name = e.name;
    d.summary = std::string("elementwise ") + e.name + " of one or more tensors with NumPy broadcasting";
    d.formula = std::string("output shape = broadcast of the inputs\n") + e.rule + "; MACs = 0; params = 0";
    d.min_inputs = 1;
    d.max_inputs = -1;
    d.infer = [](const OpArgs& a) -> std::vector<Shape> { return one_shape(broadcast_all(a.in)); };
    double extra = e.flops;
    d.work = [extra](const OpArgs& a, const std::vector<Shape>& out) {
      return per_out(out, static_cast<double>(a.in.size()) - 1 + extra);
    };
    r.add(d);
  }

  OpDef w;
  w.name = "where";
  w.summary = "select x where the condition holds, else y (three tensors, broadcast)";
  w.formula = "inputs: condition, x, y; output shape = broadcast of the three\nFLOPs = 1 per output element (a select); MACs = 0; params = 0";
  w.min_inputs = w.max_inputs = 3;
  w.infer = [](const OpArgs& a) -> std::vector<Shape> { return one_shape(broadcast_all(a.in)); };
  w.work = [](const OpArgs&, const std::vector<Shape>& out) { return per_out(out, 1); };
  r.add(w);
}

// The axes a reduction runs over (all when none are given), normalised and sorted.
std::vector<size_t> reduce_axes(const Attrs& a, size_t rank, const char* what) {
  std::vector<size_t> ax;
  if (!a.has("axes") || a.ints("axes").empty()) {
    for (size_t i = 0; i < rank; ++i) ax.push_back(i);
    return ax;
  }
  for (auto v : a.ints("axes")) {
    size_t i = axis_in(v, rank, what);
    if (std::find(ax.begin(), ax.end(), i) != ax.end()) fail(std::string(what) + " lists axis " + std::to_string(v) + " twice");
    ax.push_back(i);
  }
  std::sort(ax.begin(), ax.end());
  return ax;
}

void add_reductions(OpRegistry& r) {
  struct Red {
    const char* name;
    double per_in, per_out;
    const char* rule;
  };
  const Red table[] = {
      {"reduce_sum", 1, 0, "FLOPs = 1 per input element (adds)"},
      {"reduce_mean", 1, 1, "FLOPs = 1 per input element (adds) + 1 per output element (divide)"},
      {"reduce_max", 1, 0, "FLOPs = 1 per input element (compares)"},
      {"reduce_min", 1, 0, "FLOPs = 1 per input element (compares)"},
      {"reduce_prod", 1, 0, "FLOPs = 1 per input element (multiplies)"},
      {"reduce_l1", 2, 0, "FLOPs = 2 per input element (abs, add)"},
      {"reduce_l2", 2, 1, "FLOPs = 2 per input element (square, add) + 1 per output element (sqrt)"},
      {"reduce_sum_square", 2, 0, "FLOPs = 2 per input element (square, add)"},
      {"reduce_log_sum_exp", 2, 1, "FLOPs = 2 per input element (exp, add) + 1 per output element (log)"},
  };
  for (const auto& e : table) {
    OpDef d;
    d.name = e.name;
    d.summary = std::string("reduction over axes (") + (e.name + 7) + ")";
    d.formula = std::string(e.rule) + "; MACs = 0; params = 0";
    d.attrs = {{"axes", AttrType::Ints, "~", "axes to reduce (default: all)", {}},
               {"keepdims", AttrType::Bool, "true", "keep reduced axes as size 1", {}}};
    std::string nm = e.name;
    d.infer = [nm](const OpArgs& a) -> std::vector<Shape> {
      const Shape& x = a.in[0];
      auto ax = reduce_axes(a.attrs, x.size(), nm.c_str());
      Shape y;
      for (size_t i = 0; i < x.size(); ++i) {
        bool red = std::find(ax.begin(), ax.end(), i) != ax.end();
        if (!red) y.push_back(x[i]);
        else if (a.attrs.b("keepdims")) y.push_back(1);
      }
      return {y};
    };
    double pi = e.per_in, po = e.per_out;
    d.work = [pi, po](const OpArgs& a, const std::vector<Shape>& out) {
      OpWork w;
      w.other_flops = pi * elements(a.in[0]) + po * elements(out[0]);
      return w;
    };
    r.add(d);
  }
  for (const char* name : {"argmax", "argmin"}) {
    OpDef d;
    d.name = name;
    d.summary = std::string("index of the ") + (name + 3) + " along an axis";
    d.formula = "FLOPs = 1 per input element (compares); MACs = 0; params = 0";
    d.attrs = {{"axis", AttrType::Int, "0", "axis to search", {}}, {"keepdims", AttrType::Bool, "true", "keep the axis as size 1", {}}};
    d.infer = [](const OpArgs& a) -> std::vector<Shape> {
      Shape y = a.in[0];
      size_t ax = axis_in(a.attrs.i("axis"), y.size(), "argmax");
      if (a.attrs.b("keepdims")) y[ax] = 1;
      else y.erase(y.begin() + static_cast<long>(ax));
      return {y};
    };
    d.work = [](const OpArgs& a, const std::vector<Shape>&) {
      OpWork w;
      w.other_flops = elements(a.in[0]);
      return w;
    };
    r.add(d);
  }
}

// Data looked up or placed: constant, gather, scatter, topk, nonzero
void add_data_movement(OpRegistry& r) {
  OpDef c;
  c.name = "constant";
  c.summary = "a constant tensor (a weight or a literal) that other layers read: no work, no data moved by itself";
  c.formula =
      "FLOPs = 0; bytes = 0 (its readers count the bytes as inputs)\n"
      "params = elements of `shape` when `params` is true (a learnable tensor), else 0";
  c.attrs = {{"shape", AttrType::Ints, "", "the tensor's shape ([] for a scalar)", {}},
             {"params", AttrType::Bool, "false", "count its elements as learnable parameters", {}}};
  c.min_inputs = 0;
  c.max_inputs = 0;
  c.view = true;
  c.infer = [](const OpArgs& a) -> std::vector<Shape> {
    Shape s(a.attrs.ints("shape").begin(), a.attrs.ints("shape").end());
    for (auto d : s) positive(d, "constant dimension");
    return {s};
  };
  c.work = [](const OpArgs& a, const std::vector<Shape>& out) {
    OpWork w;
    if (a.attrs.b("params")) w.params = elements(out[0]);
    return w;
  };
  r.add(c);

  OpDef g;
  g.name = "gather";
  g.summary = "take entries of `data` along an axis at the given indices (embedding lookups, ONNX Gather)";
  g.formula =
      "output = data.shape[:axis] + indices.shape + data.shape[axis+1:]\n"
      "FLOPs = 0; reads the indices and one slice of data per index (not the whole table), writes the output\n"
      "with data_shape (the table is a weight): params = elements of data_shape, weights read = output elements";
  g.attrs = {{"axis", AttrType::Int, "0", "axis of data to index", {}},
             {"data_shape", AttrType::Ints, "~", "shape of a weight table (then data is not an input)", {}},
             {"indices_shape", AttrType::Ints, "~", "shape of constant indices (then indices are not an input)", {}}};
  g.min_inputs = 0;
  g.max_inputs = 2;
  g.infer = [](const OpArgs& a) -> std::vector<Shape> {
    size_t want = 2 - (a.attrs.has("data_shape") ? 1 : 0) - (a.attrs.has("indices_shape") ? 1 : 0);
    if (a.in.size() != want)
      fail("gather takes " + std::to_string(want) + " input" + (want == 1 ? "" : "s") + " here (data, indices; minus those given as data_shape / indices_shape), got " +
           std::to_string(a.in.size()));
    size_t k = 0;
    Shape data = a.attrs.has("data_shape") ? Shape(a.attrs.ints("data_shape").begin(), a.attrs.ints("data_shape").end()) : a.in[k++];
    Shape idx = a.attrs.has("indices_shape") ? Shape(a.attrs.ints("indices_shape").begin(), a.attrs.ints("indices_shape").end()) : a.in[k++];
    if (data.empty()) fail("gather needs data of rank 1 or more");
    size_t ax = axis_in(a.attrs.i("axis"), data.size(), "gather");
    Shape y(data.begin(), data.begin() + static_cast<long>(ax));
    y.insert(y.end(), idx.begin(), idx.end());
    y.insert(y.end(), data.begin() + static_cast<long>(ax) + 1, data.end());
    return {y};
  };
  g.work = [](const OpArgs& a, const std::vector<Shape>& out) {
    OpWork w;
    double size = dtype_bytes(a.dtype);
    double rows = elements(out[0]) * size;
    size_t k = 0;
    if (a.attrs.has("data_shape")) {
      w.params = product(a.attrs.ints("data_shape"));
      w.weight_bytes = rows;
    } else {
      w.weight_bytes = 0;
      w.input_bytes.push_back(rows);
      ++k;
    }
    if (!a.attrs.has("indices_shape")) w.input_bytes.push_back(elements(a.in[k]) * size);
    w.output_bytes = {rows};
    return w;
  };
  r.add(g);

  OpDef sc;
  sc.name = "scatter";
  sc.summary = "a copy of data with entries replaced (or reduced into) at the given indices (ONNX ScatterND, ScatterElements)";
  sc.formula =
      "output shape = data's; reads data, the indices (int64, 8 B each) and the updates, writes the output (a copy:\n"
      "ONNX's semantics); FLOPs = 0 (reduction add, mul, max or min: one per update element)";
  sc.attrs = {{"reduction", AttrType::Choice, "none", "how an update meets the entry", {"none", "add", "mul", "max", "min"}}};
  sc.min_inputs = 3;
  sc.max_inputs = 3;
  sc.infer = [](const OpArgs& a) -> std::vector<Shape> { return one_shape(a.in[0]); };
  sc.work = [](const OpArgs& a, const std::vector<Shape>&) {
    OpWork w;
    if (a.attrs.s("reduction") != "none") w.other_flops = elements(a.in[2]);
    const double size = dtype_bytes(a.dtype);
    w.input_bytes = {elements(a.in[0]) * size, elements(a.in[1]) * 8, elements(a.in[2]) * size};
    return w;
  };
  r.add(sc);

  OpDef tk;
  tk.name = "topk";
  tk.summary = "the k largest (or smallest) entries along an axis and their indices (ONNX TopK)";
  tk.formula =
      "outputs: values and indices (int64, 8 B each), the input's shape with k along the axis\n"
      "FLOPs = n · ⌈log2(k + 1)⌉ compares (a heap of k over the n entries of each slice); reads the input";
  tk.attrs = {{"k", AttrType::Int, "", "how many entries to keep", {}}, {"axis", AttrType::Int, "-1", "the axis", {}}};
  tk.infer = [](const OpArgs& a) -> std::vector<Shape> {
    if (a.in[0].empty()) fail("topk needs an input of rank 1 or more");
    const size_t ax = axis_in(a.attrs.i("axis"), a.in[0].size(), "topk");
    const long long k = a.attrs.i("k");
    if (k < 1 || k > a.in[0][ax]) fail("topk k = " + std::to_string(k) + " must be 1 to the axis's " + std::to_string(a.in[0][ax]));
    Shape y = a.in[0];
    y[ax] = k;
    return {y, y};
  };
  tk.work = [](const OpArgs& a, const std::vector<Shape>& out) {
    OpWork w;
    w.other_flops = elements(a.in[0]) * std::ceil(std::log2(static_cast<double>(a.attrs.i("k")) + 1));
    w.output_bytes = {elements(out[0]) * dtype_bytes(a.dtype), elements(out[1]) * 8};
    return w;
  };
  r.add(tk);

  OpDef nz;
  nz.name = "nonzero";
  nz.summary = "the indices of the nonzero elements (ONNX NonZero): their count given, as the data decides it";
  nz.formula = "output (rank, count) int64 (8 B each); FLOPs = one compare per input element; reads the input";
  nz.attrs = {{"count", AttrType::Int, "", "nonzero elements (the data's)", {}}};
  nz.infer = [](const OpArgs& a) -> std::vector<Shape> {
    if (a.in[0].empty()) fail("nonzero needs an input of rank 1 or more");
    const long long c = a.attrs.i("count");
    if (c < 1 || static_cast<double>(c) > elements(a.in[0])) fail("nonzero count " + std::to_string(c) + " must be 1 to the input's elements");
    return {Shape{static_cast<long long>(a.in[0].size()), c}};
  };
  nz.work = [](const OpArgs& a, const std::vector<Shape>& out) {
    OpWork w;
    w.other_flops = elements(a.in[0]);
    w.output_bytes = {elements(out[0]) * 8};
    return w;
  };
  r.add(nz);
}

// Data sampled or moved to a new shape, materialised: grid_sample, expand, tile, pad, slice_nd, interpolate
void add_reshaping_copies(OpRegistry& r) {
  OpDef gs;
  gs.name = "grid_sample";
  gs.summary = "sample (N, C, H, W) at the (x, y) positions of a grid (N, Hg, Wg, 2) (ONNX GridSample, torch grid_sample)";
  gs.formula =
      "output (N, C, Hg, Wg); per output element: bilinear 4 taps (nearest 1, bicubic 16), 2 FLOPs a tap;\n"
      "reads the grid once and the taps of the input (at most the whole input), writes the output";
  gs.attrs = {{"mode", AttrType::Choice, "bilinear", "interpolation", {"bilinear", "nearest", "bicubic"}}};
  gs.min_inputs = 2;
  gs.max_inputs = 2;
  gs.infer = [](const OpArgs& a) -> std::vector<Shape> {
    const Shape &x = a.in[0], &g = a.in[1];
    if (x.size() != 4 || g.size() != 4 || g[3] != 2 || g[0] != x[0])
      fail("grid_sample takes x (N, C, H, W) and a grid (N, Hg, Wg, 2), got " + shape_str(x) + " and " + shape_str(g));
    return {Shape{x[0], x[1], g[1], g[2]}};
  };
  gs.work = [](const OpArgs& a, const std::vector<Shape>& out) {
    OpWork w;
    const std::string& m = a.attrs.s("mode");
    const double taps = m == "nearest" ? 1 : m == "bicubic" ? 16 : 4;
    w.other_flops = elements(out[0]) * taps * 2;
    const double size = dtype_bytes(a.dtype);
    w.input_bytes = {std::min(elements(out[0]) * taps, elements(a.in[0])) * size, elements(a.in[1]) * size};
    return w;
  };
  r.add(gs);

  OpDef e;
  e.name = "expand";
  e.summary = "broadcast a tensor to a larger shape, materialised (ONNX Expand)";
  e.formula = "output shape = broadcast(input, shape); FLOPs = 0; reads the input, writes the output";
  e.attrs = {{"shape", AttrType::Ints, "", "target shape (broadcast with the input's)", {}}};
  e.infer = [](const OpArgs& a) -> std::vector<Shape> {
    Shape s(a.attrs.ints("shape").begin(), a.attrs.ints("shape").end());
    for (auto d : s) positive(d, "expand dimension");
    return one_shape(broadcast2(a.in[0], s));
  };
  r.add(e);

  OpDef t;
  t.name = "tile";
  t.summary = "repeat a tensor along each axis, materialised";
  t.formula = "output dim i = input dim i · repeats[i]; FLOPs = 0; reads the input, writes the output";
  t.attrs = {{"repeats", AttrType::Ints, "", "repeat count per axis", {}}};
  t.infer = [](const OpArgs& a) -> std::vector<Shape> {
    const auto& rp = a.attrs.ints("repeats");
    if (rp.size() != a.in[0].size()) fail("tile needs one repeat count per axis of " + shape_str(a.in[0]));
    Shape y = a.in[0];
    for (size_t i = 0; i < y.size(); ++i) y[i] *= positive(rp[i], "repeats");
    return {y};
  };
  r.add(t);

  OpDef p;
  p.name = "pad";
  p.summary = "pad (or crop, with negative pads) every axis, materialised";
  p.formula = "output dim i = input dim i + pads[i] + pads[rank + i]; FLOPs = 0; reads the input, writes the output";
  p.attrs = {{"pads", AttrType::Ints, "", "the begins of every axis, then the ends", {}},
             {"mode", AttrType::Choice, "constant", "fill mode", {"constant", "reflect", "edge", "wrap"}}};
  p.infer = [](const OpArgs& a) -> std::vector<Shape> {
    const auto& pd = a.attrs.ints("pads");
    const Shape& x = a.in[0];
    if (pd.size() != 2 * x.size()) fail("pad needs " + std::to_string(2 * x.size()) + " values for " + shape_str(x));
    Shape y = x;
    for (size_t i = 0; i < x.size(); ++i) {
      y[i] = x[i] + pd[i] + pd[i + x.size()];
      if (y[i] <= 0) fail("padding axis " + std::to_string(i) + " of " + shape_str(x) + " leaves " + std::to_string(y[i]) + " elements");
    }
    return {y};
  };
  r.add(p);

  OpDef s;
  s.name = "slice_nd";
  s.summary = "take [start:end:step] along several axes (negative steps too), a copy (ONNX Slice)";
  s.formula =
      "per axis: indices clamped as in ONNX/NumPy, size = ceil((end − start)/step) (0 is an error)\n"
      "FLOPs = 0; reads the whole input, writes the slice";
  s.attrs = {{"starts", AttrType::Ints, "", "first index per axis", {}},
             {"ends", AttrType::Ints, "", "end index per axis (exclusive)", {}},
             {"axes", AttrType::Ints, "~", "axes sliced (default 0, 1, ...)", {}},
             {"steps", AttrType::Ints, "~", "step per axis (default 1)", {}}};
  s.infer = [](const OpArgs& a) -> std::vector<Shape> {
    Shape y = a.in[0];
    const auto& st = a.attrs.ints("starts");
    const auto& en = a.attrs.ints("ends");
    if (st.size() != en.size()) fail("slice_nd: starts and ends differ in length");
    std::vector<long long> axes, steps;
    for (size_t i = 0; i < st.size(); ++i) axes.push_back(static_cast<long long>(i));
    if (a.attrs.has("axes")) axes = a.attrs.ints("axes");
    steps.assign(st.size(), 1);
    if (a.attrs.has("steps")) steps = a.attrs.ints("steps");
    if (axes.size() != st.size() || steps.size() != st.size()) fail("slice_nd: axes and steps need one value per start");
    for (size_t i = 0; i < st.size(); ++i) {
      size_t ax = axis_in(axes[i], y.size(), "slice_nd");
      long long n = y[ax], step = steps[i];
      if (step == 0) fail("slice_nd: step must not be 0");
      long long b = st[i] < 0 ? st[i] + n : st[i];
      long long e = en[i] < 0 ? en[i] + n : en[i];
      long long len;
      if (step > 0) {
        b = std::clamp(b, 0LL, n);
        e = std::clamp(e, 0LL, n);
        len = e > b ? (e - b + step - 1) / step : 0;
      } else {
        b = std::clamp(b, 0LL, n - 1);
        e = std::clamp(e, -1LL, n - 1);
        len = b > e ? (b - e + (-step) - 1) / (-step) : 0;
      }
      if (len <= 0) fail("slice_nd: the slice of axis " + std::to_string(ax) + " (size " + std::to_string(n) + ") is empty");
      y[ax] = len;
    }
    return {y};
  };
  r.add(s);

  OpDef in;
  in.name = "interpolate";
  in.summary = "resize any axes to a given size: nearest, (multi)linear or cubic (ONNX Resize)";
  in.formula =
      "k = number of axes whose size changes\n"
      "FLOPs per output element: nearest 0; linear 3·(2^k − 1) (one 3-FLOP lerp per pair); cubic 2·4^k (a multiply-add per tap)\n"
      "reads the input, writes the output; MACs = 0; params = 0";
  in.attrs = {{"size", AttrType::Ints, "", "output shape (every axis)", {}},
              {"mode", AttrType::Choice, "nearest", "interpolation", {"nearest", "linear", "cubic"}}};
  in.infer = [](const OpArgs& a) -> std::vector<Shape> {
    const auto& sz = a.attrs.ints("size");
    if (sz.size() != a.in[0].size()) fail("interpolate needs one size per axis of " + shape_str(a.in[0]));
    Shape y(sz.begin(), sz.end());
    for (auto d : y) positive(d, "size");
    return {y};
  };
  in.work = [](const OpArgs& a, const std::vector<Shape>& out) {
    double k = 0;
    for (size_t i = 0; i < out[0].size(); ++i) k += out[0][i] != a.in[0][i];
    const std::string& m = a.attrs.s("mode");
    double f = m == "nearest" ? 0 : m == "linear" ? 3 * (std::pow(2.0, k) - 1) : 2 * std::pow(4.0, k);
    return per_out(out, f);
  };
  r.add(in);
}

}  // namespace

void add_tensor_ops(OpRegistry& r) {
  add_conv_nd(r);
  add_gemm(r);
  add_norms(r);
  add_unary(r);
  add_broadcasting(r);
  add_reductions(r);
  add_data_movement(r);
  add_reshaping_copies(r);
}

}  // namespace rsim
