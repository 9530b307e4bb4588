// Convolution and pooling: Conv, ConvTranspose, MaxPool, AveragePool, LpPool and the global pools.
// 2-D with symmetric pads become conv2d / conv_transpose2d / max_pool2d / avg_pool2d, anything
// else the N-d operators with per-side pads.
#include <algorithm>

#include "importers/onnx/importer.hpp"

namespace rsim {

namespace onnx_detail {

namespace {

std::vector<long long> spatial_pads(Importer& im, const Shape& x, const std::vector<long long>& k, const std::vector<long long>& s,
                                    const std::vector<long long>& d, bool transpose = false) {
  size_t n = k.size();
  for (size_t i = 0; i < n; ++i)  // keeps the window arithmetic below far from overflow
    if (k[i] < 1 || k[i] > 1000000000LL || s[i] < 1 || s[i] > 1000000000LL || d[i] < 1 || d[i] > 1000000000LL)
      im.node_fail("kernel " + std::to_string(k[i]) + ", stride " + std::to_string(s[i]) + " and dilation " + std::to_string(d[i]) +
                   " must each be 1 to 1e9");
  std::string ap = im.attr_s("auto_pad", "NOTSET");
  std::vector<long long> pads(2 * n, 0);
  if (ap == "NOTSET") {
    if (auto p = im.attr_ints("pads")) {
      if (p->size() != 2 * n) im.node_fail("pads has " + std::to_string(p->size()) + " values for " + std::to_string(n) + " spatial dimensions");
      pads = *p;
      for (auto v : pads)
        if (v < -1000000000LL || v > 1000000000LL) im.node_fail("pad " + std::to_string(v) + " is out of range (at most 1e9)");
    }
    return pads;
  }
  if (ap == "VALID") return pads;
  if (ap != "SAME_UPPER" && ap != "SAME_LOWER") im.node_fail("auto_pad '" + ap + "' is not one of NOTSET, SAME_UPPER, SAME_LOWER, VALID");
  for (size_t i = 0; i < n; ++i) {
    long long in = x[2 + i], eff = d[i] * (k[i] - 1) + 1, total;
    if (transpose) total = std::max(0LL, s[i] * (in - 1) + eff - in * s[i]);
    else total = std::max(0LL, ((in + s[i] - 1) / s[i] - 1) * s[i] + eff - in);
    long long small = total / 2, big = total - small;
    pads[i] = ap == "SAME_UPPER" ? small : big;
    pads[i + n] = ap == "SAME_UPPER" ? big : small;
  }
  return pads;
}

bool symmetric(const std::vector<long long>& p) {
  size_t n = p.size() / 2;
  for (size_t i = 0; i < n; ++i)
    if (p[i] != p[i + n]) return false;
  return true;
}
std::vector<long long> first_half(const std::vector<long long>& p) { return std::vector<long long>(p.begin(), p.begin() + static_cast<long>(p.size() / 2)); }
bool all_one(const std::vector<long long>& v) {
  return std::all_of(v.begin(), v.end(), [](long long x) { return x == 1; });
}

}  // namespace

void map_conv(Importer& im, bool transpose, int w_index, int b_index) {
  Val& x = im.in(0);
  Val& w = im.in(w_index);
  if (x.shape.size() < 3) im.node_fail("expects (N, C, D1, ...), got " + shape_text(x.shape));
  if (w.shape.size() != x.shape.size()) im.node_fail("weight " + shape_text(w.shape) + " does not match input " + shape_text(x.shape));
  size_t n = x.shape.size() - 2;
  std::vector<long long> k(w.shape.begin() + 2, w.shape.end());
  if (auto ks = im.attr_ints("kernel_shape")) k = *ks;
  std::vector<long long> s = im.attr_ints("strides").value_or(std::vector<long long>(n, 1));
  std::vector<long long> d = im.attr_ints("dilations").value_or(std::vector<long long>(n, 1));
  if (k.size() != n || s.size() != n || d.size() != n) im.node_fail("kernel_shape, strides and dilations need " + std::to_string(n) + " values each");
  long long g = im.attr_i("group", 1);
  if (g <= 0) im.node_fail("group must be positive");
  long long cout = transpose ? w.shape[1] * g : w.shape[0];
  std::vector<long long> pads = spatial_pads(im, x.shape, k, s, d, transpose);
  std::vector<long long> op = im.attr_ints("output_padding").value_or(std::vector<long long>(n, 0));
  if (op.size() != n) im.node_fail("output_padding needs " + std::to_string(n) + " values");
  for (auto v : op)
    if (v < 0 || v > 1000000000LL) im.node_fail("output_padding " + std::to_string(v) + " is out of range");
  if (transpose && im.attr_ints("output_shape")) {
    auto os = *im.attr_ints("output_shape");
    if (os.size() == n + 2) os.erase(os.begin(), os.begin() + 2);
    if (os.size() != n) im.node_fail("output_shape needs " + std::to_string(n) + " values");
    for (auto v : os)
      if (v < 1 || v > 1000000000LL) im.node_fail("output_shape " + std::to_string(v) + " is out of range");
    for (size_t i = 0; i < n; ++i) {
      long long total = s[i] * (x.shape[2 + i] - 1) + op[i] + (k[i] - 1) * d[i] + 1 - os[i];
      long long small = total / 2, big = total - small;
      bool upper = im.attr_s("auto_pad", "NOTSET") == "SAME_UPPER";
      pads[i] = upper ? small : big;
      pads[i + n] = upper ? big : small;
    }
  }
  bool bias = b_index >= 0 && im.has_input(b_index);
  LayerSpec l;
  l.inputs = {im.ref(0)};
  l.set("out_channels", int_node(cout));
  bool simple = n == 2 && symmetric(pads) && *std::min_element(pads.begin(), pads.end()) >= 0;
  if (transpose) simple = simple && op.size() == 2;
  if (simple) {
    l.op = transpose ? "conv_transpose2d" : "conv2d";
    l.set("kernel", ints_node(k));
    l.set("stride", ints_node(s));
    l.set("padding", ints_node(first_half(pads)));
    if (transpose) l.set("output_padding", ints_node(op));
    l.set("dilation", ints_node(d));
  } else {
    l.op = transpose ? "conv_transpose_nd" : "conv_nd";
    l.set("kernel", ints_node(k));
    l.set("stride", ints_node(s));
    l.set("pads", ints_node(pads));
    if (transpose) l.set("output_padding", ints_node(op));
    l.set("dilation", ints_node(d));
  }
  l.set("groups", int_node(g));
  l.set("bias", bool_node(bias));
  im.emit(l);
}

namespace {

void conv(Importer& im, const OpConverter&) { map_conv(im, false, 1, 2); }
void conv_transpose(Importer& im, const OpConverter&) { map_conv(im, true, 1, 2); }

// MaxPool, AveragePool, LpPool: the entry's `op` is the mode (max, avg, lp)
void pool(Importer& im, const OpConverter& c) {
  const std::string& kind = c.op;
  Val& x = im.in(0);
  if (x.shape.size() < 3) im.node_fail("expects (N, C, D1, ...), got " + shape_text(x.shape));
  size_t n = x.shape.size() - 2;
  auto k = im.attr_ints("kernel_shape");
  if (!k || k->size() != n) im.node_fail("needs kernel_shape with " + std::to_string(n) + " values");
  std::vector<long long> s = im.attr_ints("strides").value_or(std::vector<long long>(n, 1));
  std::vector<long long> d = im.attr_ints("dilations").value_or(std::vector<long long>(n, 1));
  if (s.size() != n || d.size() != n) im.node_fail("strides and dilations need " + std::to_string(n) + " values each");
  std::vector<long long> pads = spatial_pads(im, x.shape, *k, s, d);
  bool ceil = im.attr_i("ceil_mode", 0) != 0;
  LayerSpec l;
  l.inputs = {im.ref(0)};
  bool small_pads = true;
  for (size_t i = 0; i < n && n == 2; ++i) small_pads = small_pads && 2 * pads[i] <= (*k)[i] && pads[i] >= 0;
  if (kind != "lp" && n == 2 && symmetric(pads) && all_one(d) && small_pads) {
    l.op = kind == "max" ? "max_pool2d" : "avg_pool2d";
    l.set("kernel", ints_node(*k));
    l.set("stride", ints_node(s));
    l.set("padding", ints_node(first_half(pads)));
    l.set("ceil_mode", bool_node(ceil));
  } else {
    l.op = "pool_nd";
    l.set("mode", scalar(kind));
    l.set("kernel", ints_node(*k));
    l.set("stride", ints_node(s));
    l.set("pads", ints_node(pads));
    l.set("dilation", ints_node(d));
    l.set("ceil_mode", bool_node(ceil));
  }
  im.emit(l);
}

void global_pool(Importer& im, const OpConverter&) {
  const std::string& t = im.cur().op_type();
  size_t r = im.in(0).shape.size();
  if (r < 3) im.node_fail("expects (N, C, D1, ...), got " + shape_text(im.in(0).shape));
  if (t == "GlobalAveragePool" && r == 4) return im.simple("global_avg_pool", 1);
  LayerSpec l{t == "GlobalAveragePool" ? "reduce_mean" : "reduce_max", {}, {im.ref(0)}};
  std::vector<long long> axes;
  for (size_t i = 2; i < r; ++i) axes.push_back(static_cast<long long>(i));
  l.set("axes", ints_node(axes));
  l.set("keepdims", bool_node(true));
  im.emit(l);
}

}  // namespace

const std::vector<OpConverter>& conv_converters() {
  static const std::vector<OpConverter> v = {
      {"Conv", "conv2d (2-D, symmetric pads) or conv_nd", conv},
      {"ConvTranspose", "conv_transpose2d (2-D, symmetric pads) or conv_transpose_nd", conv_transpose},
  };
  return v;
}

const std::vector<OpConverter>& pool_converters() {
  static const std::vector<OpConverter> v = {
      {"MaxPool", "max_pool2d (2-D, symmetric pads) or pool_nd", pool, "max"},
      {"AveragePool", "avg_pool2d (2-D, symmetric pads) or pool_nd", pool, "avg"},
      {"LpPool", "pool_nd", pool, "lp"},
      {"GlobalAveragePool", "global_avg_pool (2-D) or reduce_mean", global_pool},
      {"GlobalMaxPool", "reduce_max", global_pool},
  };
  return v;
}

}  // namespace onnx_detail

}  // namespace rsim
