// The hand-written layer set: convolutions, dense layers, pooling, norms, activations,
// elementwise and layout operators (each with its shape and cost rule). Registered into the
// built-in registry by ops.cpp with one call.
#include "engine/ops/ops.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <numeric>

namespace rsim {

// ---------------------------------------------------------------- helpers for the rules

namespace {

[[noreturn]] void fail(const std::string& msg) { throw ShapeError(msg); }

void need_rank(const Shape& s, size_t rank, const char* what) {
  if (s.size() != rank)
    fail(std::string(what) + " expects a rank-" + std::to_string(rank) + " input (N, C, H, W), got " + shape_str(s));
}

void need_min_rank(const Shape& s, size_t rank, const char* what) {
  if (s.size() < rank) fail(std::string(what) + " expects an input of rank " + std::to_string(rank) + " or more, got " + shape_str(s));
}

long long positive(long long v, const char* what) {
  if (v <= 0) fail(std::string(what) + " must be positive, got " + std::to_string(v));
  return v;
}

// Normalise a possibly negative axis against rank.
size_t axis_of(long long axis, size_t rank, const char* what) {
  long long r = static_cast<long long>(rank);
  long long a = axis < 0 ? axis + r : axis;
  if (a < 0 || a >= r) fail(std::string(what) + " axis " + std::to_string(axis) + " is out of range for rank " + std::to_string(rank));
  return static_cast<size_t>(a);
}

struct Window {
  long long out;
  long long pad_total;
};

// One spatial dimension of a convolution: output size and total padding.
Window conv_dim(long long in, long long k, long long s, long long d, const AttrValue& padding, int axis,
                const char* dim_name) {
  long long eff = d * (k - 1) + 1;
  if (padding.s == "same") {
    long long out = (in + s - 1) / s;
    long long pad = std::max<long long>(0, (out - 1) * s + eff - in);
    return {out, pad};
  }
  long long p = padding.s == "valid" ? 0 : padding.ints[static_cast<size_t>(axis)];
  if (p < 0) fail("padding must not be negative, got " + std::to_string(p));
  long long padded = in + 2 * p;
  if (eff > padded)
    fail("kernel " + std::string(dim_name) + " " + std::to_string(k) + (d > 1 ? " (dilated to " + std::to_string(eff) + ")" : "") +
         " is larger than the padded input " + dim_name + " " + std::to_string(padded) + " (" + std::to_string(in) +
         " plus padding " + std::to_string(p) + " on each side)");
  return {(padded - eff) / s + 1, 2 * p};
}

std::vector<Shape> same_shape(const OpArgs& a) { return one_shape(a.in[0]); }

OpWork per_element(const std::vector<Shape>& out, double flops_per_element) {
  OpWork w;
  w.other_flops = elements(out[0]) * flops_per_element;
  return w;
}

Shape broadcast(const Shape& a, const Shape& b) {
  size_t r = std::max(a.size(), b.size());
  Shape out(r);
  for (size_t i = 0; i < r; ++i) {
    long long da = i < r - a.size() ? 1 : a[i - (r - a.size())];
    long long db = i < r - b.size() ? 1 : b[i - (r - b.size())];
    if (da != db && da != 1 && db != 1)
      fail("cannot broadcast " + shape_str(a) + " with " + shape_str(b) + ": dimension " + std::to_string(i) + " is " +
           std::to_string(da) + " vs " + std::to_string(db));
    out[i] = std::max(da, db);
  }
  return out;
}

const AttrSpec kKernel{"kernel", AttrType::Pair, "", "kernel size (kh, kw)", {}};
const AttrSpec kStride{"stride", AttrType::Pair, "1", "stride (sh, sw)", {}};
const AttrSpec kPadding{"padding", AttrType::Padding, "0", "zero padding per side; 'same' keeps ceil(H/stride)", {}};
const AttrSpec kDilation{"dilation", AttrType::Pair, "1", "kernel dilation", {}};
const AttrSpec kGroups{"groups", AttrType::Int, "1", "channel groups; must divide in and out channels", {}};
const AttrSpec kBias{"bias", AttrType::Bool, "true", "add a learnable bias per output channel", {}};

// Kernel taps that land inside the input along one axis, summed over the output positions: a
// direct convolution skips the others (they multiply padding zeros). Tap j of output position o
// reads input o·s − begin + j·d; per tap, the positions that land inside form one range of o,
// counted in closed form (O(k) per axis, not O(out · k)).
long long floor_div(long long a, long long b) { return a >= 0 ? a / b : -((-a + b - 1) / b); }  // b > 0

double taps_inside(long long in, long long out, long long k, long long s, long long d, const AttrValue& padding, int axis) {
  long long begin;
  if (padding.s == "same") begin = std::max<long long>(0, (out - 1) * s + d * (k - 1) + 1 - in) / 2;
  else if (padding.s == "valid") begin = 0;
  else begin = padding.ints[static_cast<size_t>(axis)];
  long long n = 0;
  for (long long j = 0; j < k; ++j) {
    const long long c = j * d - begin;  // the input tap j of position 0 reads
    // 0 ≤ o·s + c ≤ in − 1  ⇔  ceil(−c / s) ≤ o ≤ floor((in − 1 − c) / s)
    const long long lo = std::max<long long>(0, -floor_div(c, s));
    const long long hi = std::min<long long>(out - 1, floor_div(in - 1 - c, s));
    if (hi >= lo) n += hi - lo + 1;
  }
  return static_cast<double>(n);
}

double conv_macs_executed(const OpArgs& a, const Shape& y, double per_tap) {
  const Shape& x = a.in[0];
  const auto& k = a.attrs.ints("kernel");
  const auto& s = a.attrs.ints("stride");
  const auto& dl = a.attrs.ints("dilation");
  const AttrValue& pad = a.attrs.at("padding");
  return static_cast<double>(y[0] * y[1]) * per_tap * taps_inside(x[2], y[2], k[0], s[0], dl[0], pad, 0) *
         taps_inside(x[3], y[3], k[1], s[1], dl[1], pad, 1);
}

void add_conv(OpRegistry& r) {
  OpDef conv;
  conv.name = "conv2d";
  conv.summary = "2-D convolution over (N, C, H, W)";
  conv.formula =
      "Hout = floor((H + 2·ph − dh·(kh−1) − 1)/sh) + 1 (same for W); padding 'same' gives ceil(H/sh)\n"
      "MACs   = N · Cout · Hout · Wout · (Cin/groups) · kh · kw\n"
      "MACs executed = N · Cout · (Cin/groups) · Σ taps inside the input along H · along W (taps on padding skipped)\n"
      "FLOPs  = 2 · MACs (bias add folded into the accumulator, not counted)\n"
      "params = kh · kw · (Cin/groups) · Cout  (+ Cout with bias); weights read = params";
  conv.attrs = {{"out_channels", AttrType::Int, "", "output channels Cout", {}}, kKernel, kStride, kPadding, kDilation, kGroups, kBias};
  conv.infer = [](const OpArgs& a) -> std::vector<Shape> {
    const Shape& x = a.in[0];
    need_rank(x, 4, "conv2d");
    long long cout = positive(a.attrs.i("out_channels"), "out_channels");
    long long g = positive(a.attrs.i("groups"), "groups");
    const auto& k = a.attrs.ints("kernel");
    const auto& s = a.attrs.ints("stride");
    const auto& dl = a.attrs.ints("dilation");
    for (int i = 0; i < 2; ++i) {
      positive(k[static_cast<size_t>(i)], "kernel");
      positive(s[static_cast<size_t>(i)], "stride");
      positive(dl[static_cast<size_t>(i)], "dilation");
    }
    if (x[1] % g != 0)
      fail("groups (" + std::to_string(g) + ") must divide the input channels (" + std::to_string(x[1]) + ") of " + shape_str(x));
    if (cout % g != 0)
      fail("groups (" + std::to_string(g) + ") must divide out_channels (" + std::to_string(cout) + ")");
    const AttrValue& pad = a.attrs.at("padding");
    Window h = conv_dim(x[2], k[0], s[0], dl[0], pad, 0, "height");
    Window w = conv_dim(x[3], k[1], s[1], dl[1], pad, 1, "width");
    return one_shape({x[0], cout, h.out, w.out});
  };
  conv.work = [](const OpArgs& a, const std::vector<Shape>& out) {
    const Shape& x = a.in[0];
    const Shape& y = out[0];
    const auto& k = a.attrs.ints("kernel");
    double cin_g = static_cast<double>(x[1] / a.attrs.i("groups"));
    OpWork w;
    w.macs = elements(y) * cin_g * static_cast<double>(k[0] * k[1]);
    w.macs_executed = conv_macs_executed(a, y, cin_g);
    w.params = static_cast<double>(k[0] * k[1]) * cin_g * static_cast<double>(y[1]) + (a.attrs.b("bias") ? static_cast<double>(y[1]) : 0.0);
    w.weight_elems = w.params;
    w.quantized_elems = static_cast<double>(k[0] * k[1]) * cin_g * static_cast<double>(y[1]);
    return w;
  };
  r.add(conv);

  OpDef dw = conv;
  dw.name = "depthwise_conv2d";
  dw.summary = "depthwise 2-D convolution: conv2d with groups = Cin and Cout = multiplier · Cin";
  dw.formula =
      "as conv2d with groups = Cin, Cout = multiplier · Cin:\n"
      "MACs   = N · Cout · Hout · Wout · kh · kw\n"
      "FLOPs  = 2 · MACs\n"
      "params = kh · kw · Cout (+ Cout with bias)";
  dw.attrs = {{"multiplier", AttrType::Int, "1", "output channels per input channel", {}}, kKernel, kStride, kPadding, kDilation, kBias};
  dw.infer = [conv](const OpArgs& a) {
    need_rank(a.in[0], 4, "depthwise_conv2d");
    Attrs full = a.attrs;
    AttrValue g;
    g.set = true;
    g.i = a.in[0][1];
    full.put("groups", g);
    AttrValue oc;
    oc.set = true;
    oc.i = a.in[0][1] * positive(a.attrs.i("multiplier"), "multiplier");
    full.put("out_channels", oc);
    return conv.infer(OpArgs{full, a.in, a.dtype});
  };
  dw.work = [](const OpArgs& a, const std::vector<Shape>& out) {
    const auto& k = a.attrs.ints("kernel");
    OpWork w;
    w.macs = elements(out[0]) * static_cast<double>(k[0] * k[1]);
    w.macs_executed = conv_macs_executed(a, out[0], 1);
    w.params = static_cast<double>(k[0] * k[1] * out[0][1]) + (a.attrs.b("bias") ? static_cast<double>(out[0][1]) : 0.0);
    w.weight_elems = w.params;
    w.quantized_elems = static_cast<double>(k[0] * k[1] * out[0][1]);
    return w;
  };
  r.add(dw);

  OpDef tr;
  tr.name = "conv_transpose2d";
  tr.summary = "transposed 2-D convolution (deconvolution) over (N, C, H, W)";
  tr.formula =
      "Hout = (H − 1)·sh − 2·ph + dh·(kh − 1) + output_padding_h + 1 (same for W)\n"
      "MACs   = N · Cin · H · W · (Cout/groups) · kh · kw  (every input element scatters into a kernel window)\n"
      "FLOPs  = 2 · MACs\n"
      "params = Cin · (Cout/groups) · kh · kw (+ Cout with bias)";
  tr.attrs = {{"out_channels", AttrType::Int, "", "output channels Cout", {}},
              kKernel,
              kStride,
              {"padding", AttrType::Pair, "0", "implicit padding removed from each side of the output", {}},
              {"output_padding", AttrType::Pair, "0", "extra size added to one side of the output", {}},
              kDilation,
              kGroups,
              kBias};
  tr.infer = [](const OpArgs& a) -> std::vector<Shape> {
    const Shape& x = a.in[0];
    need_rank(x, 4, "conv_transpose2d");
    long long cout = positive(a.attrs.i("out_channels"), "out_channels");
    long long g = positive(a.attrs.i("groups"), "groups");
    if (x[1] % g != 0) fail("groups (" + std::to_string(g) + ") must divide the input channels (" + std::to_string(x[1]) + ")");
    if (cout % g != 0) fail("groups (" + std::to_string(g) + ") must divide out_channels (" + std::to_string(cout) + ")");
    Shape y = {x[0], cout, 0, 0};
    for (size_t i = 0; i < 2; ++i) {
      long long k = positive(a.attrs.ints("kernel")[i], "kernel");
      long long s = positive(a.attrs.ints("stride")[i], "stride");
      long long d = positive(a.attrs.ints("dilation")[i], "dilation");
      long long p = a.attrs.ints("padding")[i];
      long long op = a.attrs.ints("output_padding")[i];
      if (p < 0 || op < 0) fail("padding and output_padding must not be negative");
      if (op >= s && op >= d) fail("output_padding must be smaller than stride or dilation");
      long long o = (x[2 + i] - 1) * s - 2 * p + d * (k - 1) + op + 1;
      if (o <= 0) fail("output size would be " + std::to_string(o) + " for input " + shape_str(x));
      y[2 + i] = o;
    }
    return {y};
  };
  tr.work = [](const OpArgs& a, const std::vector<Shape>& out) {
    const Shape& x = a.in[0];
    const auto& k = a.attrs.ints("kernel");
    double cout_g = static_cast<double>(out[0][1] / a.attrs.i("groups"));
    OpWork w;
    w.macs = elements(x) * cout_g * static_cast<double>(k[0] * k[1]);
    w.params = static_cast<double>(x[1]) * cout_g * static_cast<double>(k[0] * k[1]) + (a.attrs.b("bias") ? static_cast<double>(out[0][1]) : 0.0);
    w.weight_elems = w.params;
    w.quantized_elems = static_cast<double>(x[1]) * cout_g * static_cast<double>(k[0] * k[1]);
    return w;
  };
  r.add(tr);
}

void add_dense(OpRegistry& r) {
  OpDef fc;
  fc.name = "linear";
  fc.summary = "fully connected layer over the last dimension (any leading dims, e.g. batch)";
  fc.formula =
      "input (..., in_features) → (..., out_features); B = product of the leading dims\n"
      "MACs   = B · in_features · out_features\n"
      "FLOPs  = 2 · MACs\n"
      "params = in_features · out_features (+ out_features with bias)";
  fc.attrs = {{"out_features", AttrType::Int, "", "output features", {}}, kBias};
  fc.infer = [](const OpArgs& a) -> std::vector<Shape> {
    need_min_rank(a.in[0], 1, "linear");
    Shape y = a.in[0];
    y.back() = positive(a.attrs.i("out_features"), "out_features");
    return {y};
  };
  fc.work = [](const OpArgs& a, const std::vector<Shape>& out) {
    double in_f = static_cast<double>(a.in[0].back());
    double out_f = static_cast<double>(out[0].back());
    OpWork w;
    w.macs = elements(a.in[0]) * out_f;
    w.params = in_f * out_f + (a.attrs.b("bias") ? out_f : 0.0);
    w.weight_elems = w.params;
    w.quantized_elems = in_f * out_f;
    return w;
  };
  r.add(fc);
  r.alias("fc", "linear");

  OpDef mm;
  mm.name = "matmul";
  mm.summary = "matrix product of two activations, batched with broadcasting over leading dims";
  mm.formula =
      "A (..., M, K) × B (..., K, N) → (..., M, N); batch dims broadcast, b = their product\n"
      "a 1-D A is (1, K) and a 1-D B is (K, 1), that dimension dropped from the output (NumPy)\n"
      "MACs   = b · M · K · N\n"
      "FLOPs  = 2 · MACs; params = 0 (both operands are activations)";
  mm.min_inputs = mm.max_inputs = 2;
  mm.infer = [](const OpArgs& a) -> std::vector<Shape> {
    Shape x = a.in[0];
    Shape y = a.in[1];
    need_min_rank(x, 1, "matmul");
    need_min_rank(y, 1, "matmul");
    bool vec_x = x.size() == 1, vec_y = y.size() == 1;
    if (vec_x) x.insert(x.begin(), 1);
    if (vec_y) y.push_back(1);
    if (x.back() != y[y.size() - 2])
      fail("matmul inner dimensions differ: " + shape_str(a.in[0]) + " × " + shape_str(a.in[1]) + " (" + std::to_string(x.back()) + " vs " +
           std::to_string(y[y.size() - 2]) + ")");
    Shape bx(x.begin(), x.end() - 2), by(y.begin(), y.end() - 2);
    Shape out = broadcast(bx, by);
    if (!vec_x) out.push_back(x[x.size() - 2]);
    if (!vec_y) out.push_back(y.back());
    return {out};
  };
  mm.work = [](const OpArgs& a, const std::vector<Shape>& out) {
    OpWork w;
    w.macs = elements(out[0]) * static_cast<double>(a.in[0].back());
    return w;
  };
  r.add(mm);
  r.alias("bmm", "matmul");
}

void add_pool(OpRegistry& r) {
  for (const char* kind : {"max", "avg"}) {
    OpDef p;
    p.name = std::string(kind) + "_pool2d";
    bool is_max = std::string(kind) == "max";
    p.summary = is_max ? "max pooling over (N, C, H, W)" : "average pooling over (N, C, H, W)";
    p.formula = std::string(
                    "Hout = floor_or_ceil((H + 2·ph − kh)/sh) + 1; with ceil_mode a window that starts in the padding is dropped\n") +
                (is_max ? "FLOPs = N · C · Hout · Wout · kh · kw (one compare per window element)\n"
                        : "FLOPs = N · C · Hout · Wout · kh · kw (kh·kw − 1 adds and one scale per output)\n") +
                "MACs = 0; params = 0";
    p.attrs = {kKernel,
               {"stride", AttrType::Pair, "~", "stride (sh, sw); default: the kernel size", {}},
               {"padding", AttrType::Pair, "0", "padding per side (at most half the kernel)", {}},
               {"ceil_mode", AttrType::Bool, "false", "round the output size up", {}}};
    p.infer = [](const OpArgs& a) -> std::vector<Shape> {
      const Shape& x = a.in[0];
      need_rank(x, 4, "pooling");
      Shape y = {x[0], x[1], 0, 0};
      for (size_t i = 0; i < 2; ++i) {
        long long k = positive(a.attrs.ints("kernel")[i], "kernel");
        long long s = a.attrs.has("stride") ? positive(a.attrs.ints("stride")[i], "stride") : k;
        long long p = a.attrs.ints("padding")[i];
        if (p < 0 || 2 * p > k) fail("pool padding " + std::to_string(p) + " must be between 0 and half the kernel (" + std::to_string(k) + ")");
        long long padded = x[2 + i] + 2 * p;
        if (k > padded)
          fail("pool kernel " + std::to_string(k) + " is larger than the padded input " + std::to_string(padded) + " of " + shape_str(x));
        long long o;
        if (a.attrs.b("ceil_mode")) {
          o = (padded - k + s - 1) / s + 1;
          if ((o - 1) * s >= x[2 + i] + p) --o;
        } else {
          o = (padded - k) / s + 1;
        }
        y[2 + i] = o;
      }
      return {y};
    };
    p.work = [](const OpArgs& a, const std::vector<Shape>& out) {
      const auto& k = a.attrs.ints("kernel");
      return per_element(out, static_cast<double>(k[0] * k[1]));
    };
    r.add(p);
  }
  r.alias("maxpool", "max_pool2d");
  r.alias("avgpool", "avg_pool2d");

  OpDef g;
  g.name = "global_avg_pool";
  g.summary = "global average pooling: (N, C, H, W) → (N, C, 1, 1)";
  g.formula = "FLOPs = N · C · H · W (H·W − 1 adds and one scale per channel)\nMACs = 0; params = 0";
  g.infer = [](const OpArgs& a) -> std::vector<Shape> {
    need_rank(a.in[0], 4, "global_avg_pool");
    return one_shape({a.in[0][0], a.in[0][1], 1, 1});
  };
  g.work = [](const OpArgs& a, const std::vector<Shape>&) {
    OpWork w;
    w.other_flops = elements(a.in[0]);
    return w;
  };
  r.add(g);

  OpDef ad;
  ad.name = "adaptive_avg_pool2d";
  ad.summary = "adaptive average pooling to a fixed output size (PyTorch windows)";
  ad.formula =
      "output bin i of n over size H spans [floor(i·H/n), ceil((i+1)·H/n))\n"
      "FLOPs = N · C · (sum of bin heights) · (sum of bin widths); MACs = 0; params = 0";
  ad.attrs = {{"output_size", AttrType::Pair, "", "output (h, w)", {}}};
  ad.infer = [](const OpArgs& a) -> std::vector<Shape> {
    need_rank(a.in[0], 4, "adaptive_avg_pool2d");
    const auto& o = a.attrs.ints("output_size");
    return one_shape({a.in[0][0], a.in[0][1], positive(o[0], "output_size"), positive(o[1], "output_size")});
  };
  ad.work = [](const OpArgs& a, const std::vector<Shape>& out) {
    auto span_sum = [](long long in, long long n) {
      double sum = 0;
      for (long long i = 0; i < n; ++i) {
        long long start = (i * in) / n;
        long long end = ((i + 1) * in + n - 1) / n;
        sum += static_cast<double>(end - start);
      }
      return sum;
    };
    OpWork w;
    w.other_flops = static_cast<double>(a.in[0][0] * a.in[0][1]) * span_sum(a.in[0][2], out[0][2]) * span_sum(a.in[0][3], out[0][3]);
    return w;
  };
  r.add(ad);
}

void add_norm(OpRegistry& r) {
  OpDef bn;
  bn.name = "batchnorm";
  bn.summary = "batch normalisation at inference over channel dim 1";
  bn.formula =
      "FLOPs  = 2 per element (y = x·scale + shift with scale, shift folded from γ, β, mean, var)\n"
      "params = 2 · C (γ, β; running mean and var are buffers, as frameworks count)\n"
      "weights read = 4 · C (γ, β, mean, var)";
  bn.infer = [](const OpArgs& a) -> std::vector<Shape> {
    need_min_rank(a.in[0], 2, "batchnorm");
    return one_shape(a.in[0]);
  };
  bn.work = [](const OpArgs& a, const std::vector<Shape>& out) {
    OpWork w = per_element(out, 2);
    w.params = 2.0 * static_cast<double>(a.in[0][1]);
    w.weight_elems = 4.0 * static_cast<double>(a.in[0][1]);
    return w;
  };
  r.add(bn);
  r.alias("bn", "batchnorm");

  OpDef ln;
  ln.name = "layernorm";
  ln.summary = "layer normalisation over the last `dims` dimensions";
  ln.formula =
      "D = product of the normalised (last `dims`) dimensions\n"
      "FLOPs  = 8 per element with affine (mean 1, variance 3, normalise 2, affine 2), 6 without\n"
      "params = 2 · D with affine, else 0; weights read = params";
  ln.attrs = {{"dims", AttrType::Int, "1", "how many trailing dimensions are normalised", {}},
              {"affine", AttrType::Bool, "true", "learnable γ and β", {}}};
  ln.infer = [](const OpArgs& a) -> std::vector<Shape> {
    long long d = positive(a.attrs.i("dims"), "dims");
    if (static_cast<size_t>(d) > a.in[0].size()) fail("layernorm dims " + std::to_string(d) + " exceeds the rank of " + shape_str(a.in[0]));
    return one_shape(a.in[0]);
  };
  ln.work = [](const OpArgs& a, const std::vector<Shape>& out) {
    bool affine = a.attrs.b("affine");
    OpWork w = per_element(out, affine ? 8 : 6);
    double dsz = 1;
    const Shape& x = a.in[0];
    for (size_t i = x.size() - static_cast<size_t>(a.attrs.i("dims")); i < x.size(); ++i) dsz *= static_cast<double>(x[i]);
    w.params = affine ? 2 * dsz : 0;
    w.weight_elems = w.params;
    return w;
  };
  r.add(ln);
}

void add_activations(OpRegistry& r) {
  struct Act {
    const char* name;
    double flops;
    const char* formula;
  };
  const Act acts[] = {
      {"relu", 1, "max(x, 0): 1 FLOP per element"},
      {"relu6", 2, "min(max(x, 0), 6): 2 FLOPs per element"},
      {"leaky_relu", 2, "x > 0 ? x : a·x: 2 FLOPs per element (compare, multiply)"},
      {"sigmoid", 4, "1/(1 + exp(−x)): 4 FLOPs per element (negate, exp, add, divide; exp counted as 1)"},
      {"tanh", 5, "(exp(2x) − 1)/(exp(2x) + 1): 5 FLOPs per element (multiply, exp, subtract, add, divide)"},
      {"gelu", 8,
       "tanh approximation 0.5·x·(1 + tanh(√(2/π)(x + 0.044715x³))), computed with the constants folded as "
       "0.5·x·(1 + tanh(x·(a + b·x²))), a = √(2/π), b = 0.044715·√(2/π): x², ·b, +a, ·x, tanh (as 1), +1, ·x, ·0.5 = "
       "8 FLOPs per element (written out unfolded it is 9: x³ takes two multiplies)"},
      {"silu", 5, "x·sigmoid(x): 5 FLOPs per element (sigmoid 4, multiply 1)"},
      {"hardswish", 5, "x·relu6(x + 3)/6: 5 FLOPs per element (add, 2 clamps, multiply, divide)"},
      {"hardsigmoid", 4, "relu6(x + 3)/6: 4 FLOPs per element (add, 2 clamps, divide)"},
  };
  for (const Act& act : acts) {
    OpDef d;
    d.name = act.name;
    d.summary = std::string("activation ") + act.name + ", elementwise";
    d.formula = std::string(act.formula) + "\nMACs = 0; params = 0";
    if (d.name == "leaky_relu") d.attrs = {{"negative_slope", AttrType::Float, "0.01", "slope for x < 0", {}}};
    d.infer = same_shape;
    double f = act.flops;
    d.work = [f](const OpArgs&, const std::vector<Shape>& out) { return per_element(out, f); };
    r.add(d);
  }
  r.alias("swish", "silu");
}

void add_elementwise(OpRegistry& r) {
  for (const char* name : {"add", "sub", "mul", "div"}) {
    OpDef d;
    d.name = name;
    d.summary = std::string("elementwise ") + name + " of two tensors with NumPy broadcasting";
    d.formula = "output shape = broadcast of the inputs\nFLOPs = 1 per output element; MACs = 0; params = 0";
    d.min_inputs = d.max_inputs = 2;
    d.infer = [](const OpArgs& a) -> std::vector<Shape> { return one_shape(broadcast(a.in[0], a.in[1])); };
    d.work = [](const OpArgs&, const std::vector<Shape>& out) { return per_element(out, 1); };
    r.add(d);
  }
}

// Tensors joined and cut: concat, split, slice
void add_layout(OpRegistry& r) {
  OpDef cat;
  cat.name = "concat";
  cat.summary = "concatenate tensors along an axis (copies every input)";
  cat.formula = "FLOPs = 0; reads every input, writes the output";
  cat.attrs = {{"axis", AttrType::Int, "1", "axis to join along (negative counts from the end)", {}}};
  cat.min_inputs = 2;
  cat.max_inputs = -1;
  cat.infer = [](const OpArgs& a) -> std::vector<Shape> {
    Shape y = a.in[0];
    size_t ax = axis_of(a.attrs.i("axis"), y.size(), "concat");
    for (size_t t = 1; t < a.in.size(); ++t) {
      const Shape& s = a.in[t];
      bool ok = s.size() == y.size();
      for (size_t i = 0; ok && i < s.size(); ++i)
        if (i != ax && s[i] != y[i]) ok = false;
      if (!ok)
        fail("concat along axis " + std::to_string(ax) + " needs equal other dimensions: " + shape_str(a.in[0]) + " vs " + shape_str(s));
      y[ax] += s[ax];
    }
    return {y};
  };
  r.add(cat);
  r.alias("cat", "concat");

  OpDef sp;
  sp.name = "split";
  sp.summary = "split a tensor along an axis into several outputs (name:0, name:1, ...)";
  sp.formula = "FLOPs = 0; reads the input, writes every output (a copy)";
  sp.attrs = {{"axis", AttrType::Int, "1", "axis to split", {}},
              {"sections", AttrType::Int, "~", "number of equal parts", {}},
              {"sizes", AttrType::Ints, "~", "explicit part sizes (sum = the axis size)", {}}};
  sp.infer = [](const OpArgs& a) -> std::vector<Shape> {
    const Shape& x = a.in[0];
    size_t ax = axis_of(a.attrs.i("axis"), x.size(), "split");
    std::vector<long long> sizes;
    if (a.attrs.has("sizes") == a.attrs.has("sections")) fail("split needs exactly one of 'sections' or 'sizes'");
    if (a.attrs.has("sections")) {
      long long n = positive(a.attrs.i("sections"), "sections");
      if (x[ax] % n != 0) fail("split: " + std::to_string(n) + " sections do not divide dimension " + std::to_string(x[ax]));
      sizes.assign(static_cast<size_t>(n), x[ax] / n);
    } else {
      sizes = a.attrs.ints("sizes");
      long long sum = 0;
      for (auto s : sizes) sum += positive(s, "split size");
      if (sum != x[ax]) fail("split sizes add up to " + std::to_string(sum) + ", but the axis has " + std::to_string(x[ax]));
    }
    std::vector<Shape> out;
    for (auto s : sizes) {
      Shape y = x;
      y[ax] = s;
      out.push_back(y);
    }
    return out;
  };
  r.add(sp);

  OpDef sl;
  sl.name = "slice";
  sl.summary = "take [start:end:step] along an axis (a copy)";
  sl.formula = "FLOPs = 0; reads the whole input, writes the slice";
  sl.attrs = {{"axis", AttrType::Int, "1", "axis to slice", {}},
              {"start", AttrType::Int, "0", "first index (negative counts from the end)", {}},
              {"end", AttrType::Int, "~", "one past the last index; default: the end", {}},
              {"step", AttrType::Int, "1", "stride", {}}};
  sl.infer = [](const OpArgs& a) -> std::vector<Shape> {
    Shape y = a.in[0];
    size_t ax = axis_of(a.attrs.i("axis"), y.size(), "slice");
    long long n = y[ax];
    auto clamp_idx = [n](long long i) { return std::clamp(i < 0 ? i + n : i, 0LL, n); };
    long long b = clamp_idx(a.attrs.i("start"));
    long long e = a.attrs.has("end") ? clamp_idx(a.attrs.i("end")) : n;
    long long step = positive(a.attrs.i("step"), "step");
    if (e <= b) fail("slice [" + std::to_string(b) + ":" + std::to_string(e) + "] of dimension " + std::to_string(n) + " is empty");
    y[ax] = (e - b + step - 1) / step;
    return {y};
  };
  r.add(sl);
}

// Views and copies to a new shape or order: reshape, reshape_copy, flatten, transpose, permute
void add_reshapes(OpRegistry& r) {
  auto reshape_infer = [](const OpArgs& a) -> std::vector<Shape> {
    const Shape& x = a.in[0];
    const auto& want = a.attrs.ints("shape");
    Shape y;
    int infer_at = -1;
    double known = 1;
    for (size_t i = 0; i < want.size(); ++i) {
      long long v = want[i];
      if (v == 0) v = i < x.size() ? x[i] : 0;  // 0 copies the input dimension (ONNX)
      if (v == -1) {
        if (infer_at >= 0) fail("reshape: only one dimension may be -1");
        infer_at = static_cast<int>(i);
        y.push_back(1);
        continue;
      }
      if (v <= 0) fail("reshape: dimension " + std::to_string(want[i]) + " is not allowed");
      known *= static_cast<double>(v);
      y.push_back(v);
    }
    double total = elements(x);
    if (infer_at >= 0) {
      double rest = total / known;
      if (rest != std::floor(rest) || rest < 1) fail("reshape: cannot infer -1 to turn " + shape_str(x) + " into the requested shape");
      y[static_cast<size_t>(infer_at)] = static_cast<long long>(rest);
    }
    if (elements(y) != total) fail("reshape: " + shape_str(x) + " has " + format_number(total) + " elements, " + shape_str(y) + " has " + format_number(elements(y)));
    return {y};
  };
  const AttrSpec shape_attr{"shape", AttrType::Ints, "", "new shape; -1 infers one dimension, 0 copies the input's", {}};

  OpDef rv;
  rv.name = "reshape";
  rv.summary = "view-style reshape: same data, new shape (no data moved)";
  rv.formula = "FLOPs = 0; bytes = 0 (a view of the input)";
  rv.attrs = {shape_attr};
  rv.view = true;
  rv.infer = reshape_infer;
  r.add(rv);
  r.alias("view", "reshape");

  OpDef rc = rv;
  rc.name = "reshape_copy";
  rc.summary = "reshape that materialises a new tensor (e.g. a non-contiguous input): reads and writes";
  rc.formula = "FLOPs = 0; reads the input, writes the output";
  rc.view = false;
  r.add(rc);

  OpDef fl;
  fl.name = "flatten";
  fl.summary = "view-style flatten of dims start_dim..end_dim (no data moved)";
  fl.formula = "FLOPs = 0; bytes = 0 (a view of the input)";
  fl.view = true;
  fl.attrs = {{"start_dim", AttrType::Int, "1", "first dimension merged", {}}, {"end_dim", AttrType::Int, "-1", "last dimension merged", {}}};
  fl.infer = [](const OpArgs& a) -> std::vector<Shape> {
    const Shape& x = a.in[0];
    size_t b = axis_of(a.attrs.i("start_dim"), x.size(), "flatten start_dim");
    size_t e = axis_of(a.attrs.i("end_dim"), x.size(), "flatten end_dim");
    if (e < b) fail("flatten: end_dim comes before start_dim");
    Shape y(x.begin(), x.begin() + static_cast<long>(b));
    double md = 1;
    for (size_t i = b; i <= e; ++i) md *= static_cast<double>(x[i]);
    if (md > 1e15) fail("flatten: the merged dimension " + format_number(md) + " is too large");
    long long m = static_cast<long long>(md);
    y.push_back(m);
    y.insert(y.end(), x.begin() + static_cast<long>(e) + 1, x.end());
    return {y};
  };
  r.add(fl);

  OpDef tp;
  tp.name = "transpose";
  tp.summary = "swap two dimensions, materialised (reads and writes)";
  tp.formula = "FLOPs = 0; reads the input, writes the output";
  tp.attrs = {{"dims", AttrType::Ints, "[-2, -1]", "the two dimensions to swap", {}}};
  tp.infer = [](const OpArgs& a) -> std::vector<Shape> {
    Shape y = a.in[0];
    const auto& d = a.attrs.ints("dims");
    if (d.size() != 2) fail("transpose needs exactly two dims");
    std::swap(y[axis_of(d[0], y.size(), "transpose")], y[axis_of(d[1], y.size(), "transpose")]);
    return {y};
  };
  r.add(tp);

  OpDef pm;
  pm.name = "permute";
  pm.summary = "reorder all dimensions, materialised (reads and writes)";
  pm.formula = "FLOPs = 0; reads the input, writes the output";
  pm.attrs = {{"dims", AttrType::Ints, "", "new order of the input dimensions", {}}};
  pm.infer = [](const OpArgs& a) -> std::vector<Shape> {
    const Shape& x = a.in[0];
    const auto& d = a.attrs.ints("dims");
    if (d.size() != x.size()) fail("permute needs " + std::to_string(x.size()) + " dims for " + shape_str(x));
    Shape y;
    std::vector<bool> seen(x.size(), false);
    for (auto v : d) {
      size_t ax = axis_of(v, x.size(), "permute");
      if (seen[ax]) fail("permute lists dimension " + std::to_string(ax) + " twice");
      seen[ax] = true;
      y.push_back(x[ax]);
    }
    return {y};
  };
  r.add(pm);
}

// upsample, softmax and identity
void add_resample_softmax_identity(OpRegistry& r) {
  OpDef up;
  up.name = "upsample";
  up.summary = "spatial upsampling of (N, C, H, W) by a scale or to a size";
  up.formula =
      "nearest: FLOPs = 0 (a gather); bilinear: FLOPs = 9 per output element (3 lerps of 3 FLOPs)\n"
      "reads the input, writes the output; MACs = 0; params = 0";
  up.attrs = {{"scale", AttrType::Pair, "~", "integer scale factor (sh, sw)", {}},
              {"size", AttrType::Pair, "~", "output size (h, w)", {}},
              {"mode", AttrType::Choice, "nearest", "interpolation", {"nearest", "bilinear"}}};
  up.infer = [](const OpArgs& a) -> std::vector<Shape> {
    const Shape& x = a.in[0];
    need_rank(x, 4, "upsample");
    if (a.attrs.has("scale") == a.attrs.has("size")) fail("upsample needs exactly one of 'scale' or 'size'");
    if (a.attrs.has("size")) {
      const auto& s = a.attrs.ints("size");
      return one_shape({x[0], x[1], positive(s[0], "size"), positive(s[1], "size")});
    }
    const auto& s = a.attrs.ints("scale");
    return one_shape({x[0], x[1], x[2] * positive(s[0], "scale"), x[3] * positive(s[1], "scale")});
  };
  up.work = [](const OpArgs& a, const std::vector<Shape>& out) {
    return per_element(out, a.attrs.s("mode") == "bilinear" ? 9 : 0);
  };
  r.add(up);
  r.alias("resize", "upsample");

  OpDef sm;
  sm.name = "softmax";
  sm.summary = "softmax along an axis; with a second input, an additive mask (scores + mask) in the same kernel";
  sm.formula = "FLOPs = 5 per element (max, subtract, exp, sum, divide), 6 with a mask (its add); MACs = 0; params = 0";
  sm.attrs = {{"axis", AttrType::Int, "-1", "axis to normalise", {}}};
  sm.max_inputs = 2;
  sm.infer = [](const OpArgs& a) -> std::vector<Shape> {
    axis_of(a.attrs.i("axis"), a.in[0].size(), "softmax");
    // the mask broadcasts to the scores (e.g. [B, 1, 1, S] onto [B, H, S, S]), never the reverse
    if (a.in.size() == 2 && broadcast(a.in[0], a.in[1]) != a.in[0])
      fail("softmax's mask " + shape_str(a.in[1]) + " does not broadcast to its scores " + shape_str(a.in[0]));
    return one_shape(a.in[0]);
  };
  sm.work = [](const OpArgs& a, const std::vector<Shape>& out) { return per_element(out, a.in.size() == 2 ? 6 : 5); };
  r.add(sm);

  OpDef id;
  id.name = "identity";
  id.summary = "passes its input through (also dropout at inference): no work, no data moved";
  id.formula = "FLOPs = 0; bytes = 0";
  id.view = true;
  id.attrs = {{"p", AttrType::Float, "0", "dropout probability (no effect at inference)", {}}};
  id.infer = same_shape;
  r.add(id);
  r.alias("dropout", "identity");
}

}  // namespace

void add_layer_ops(OpRegistry& r) {
  add_conv(r);
  add_dense(r);
  add_pool(r);
  add_norm(r);
  add_activations(r);
  add_elementwise(r);
  add_layout(r);
  add_reshapes(r);
  add_resample_softmax_identity(r);
}

}  // namespace rsim
