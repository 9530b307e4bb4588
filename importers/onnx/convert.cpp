// The converters: each op type's layers (what the current node becomes when it is not folded), by
// op type in map_node. 2-D convolutions and pools with symmetric pads become the 2-D operators,
// anything else the N-d ones; elementwise operators map one to one.
#include <algorithm>
#include <cmath>

#include "importers/onnx/importer.hpp"

namespace rsim {

namespace onnx_detail {

std::vector<long long> Importer::spatial_pads(const Shape& x, const std::vector<long long>& k, const std::vector<long long>& s,
                                              const std::vector<long long>& d, bool transpose) {
  size_t n = k.size();
  for (size_t i = 0; i < n; ++i)  // keeps the window arithmetic below far from overflow
    if (k[i] < 1 || k[i] > 1000000000LL || s[i] < 1 || s[i] > 1000000000LL || d[i] < 1 || d[i] > 1000000000LL)
      node_fail("kernel " + std::to_string(k[i]) + ", stride " + std::to_string(s[i]) + " and dilation " + std::to_string(d[i]) +
                " must each be 1 to 1e9");
  std::string ap = attr_s("auto_pad", "NOTSET");
  std::vector<long long> pads(2 * n, 0);
  if (ap == "NOTSET") {
    if (auto p = attr_ints("pads")) {
      if (p->size() != 2 * n) node_fail("pads has " + std::to_string(p->size()) + " values for " + std::to_string(n) + " spatial dimensions");
      pads = *p;
      for (auto v : pads)
        if (v < -1000000000LL || v > 1000000000LL) node_fail("pad " + std::to_string(v) + " is out of range (at most 1e9)");
    }
    return pads;
  }
  if (ap == "VALID") return pads;
  if (ap != "SAME_UPPER" && ap != "SAME_LOWER") node_fail("auto_pad '" + ap + "' is not one of NOTSET, SAME_UPPER, SAME_LOWER, VALID");
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

bool Importer::symmetric(const std::vector<long long>& p) {
  size_t n = p.size() / 2;
  for (size_t i = 0; i < n; ++i)
    if (p[i] != p[i + n]) return false;
  return true;
}
std::vector<long long> Importer::first_half(const std::vector<long long>& p) { return std::vector<long long>(p.begin(), p.begin() + static_cast<long>(p.size() / 2)); }
bool Importer::all_one(const std::vector<long long>& v) {
  return std::all_of(v.begin(), v.end(), [](long long x) { return x == 1; });
}

void Importer::map_conv(bool transpose) {
  Val& x = in(0);
  Val& w = in(1);
  if (x.shape.size() < 3) node_fail("expects (N, C, D1, ...), got " + shape_text(x.shape));
  if (w.shape.size() != x.shape.size()) node_fail("weight " + shape_text(w.shape) + " does not match input " + shape_text(x.shape));
  size_t n = x.shape.size() - 2;
  std::vector<long long> k(w.shape.begin() + 2, w.shape.end());
  if (auto ks = attr_ints("kernel_shape")) k = *ks;
  std::vector<long long> s = attr_ints("strides").value_or(std::vector<long long>(n, 1));
  std::vector<long long> d = attr_ints("dilations").value_or(std::vector<long long>(n, 1));
  if (k.size() != n || s.size() != n || d.size() != n) node_fail("kernel_shape, strides and dilations need " + std::to_string(n) + " values each");
  long long g = attr_i("group", 1);
  if (g <= 0) node_fail("group must be positive");
  long long cout = transpose ? w.shape[1] * g : w.shape[0];
  std::vector<long long> pads = spatial_pads(x.shape, k, s, d, transpose);
  std::vector<long long> op = attr_ints("output_padding").value_or(std::vector<long long>(n, 0));
  if (op.size() != n) node_fail("output_padding needs " + std::to_string(n) + " values");
  for (auto v : op)
    if (v < 0 || v > 1000000000LL) node_fail("output_padding " + std::to_string(v) + " is out of range");
  if (transpose && attr_ints("output_shape")) {
    auto os = *attr_ints("output_shape");
    if (os.size() == n + 2) os.erase(os.begin(), os.begin() + 2);
    if (os.size() != n) node_fail("output_shape needs " + std::to_string(n) + " values");
    for (auto v : os)
      if (v < 1 || v > 1000000000LL) node_fail("output_shape " + std::to_string(v) + " is out of range");
    for (size_t i = 0; i < n; ++i) {
      long long total = s[i] * (x.shape[2 + i] - 1) + op[i] + (k[i] - 1) * d[i] + 1 - os[i];
      long long small = total / 2, big = total - small;
      bool upper = attr_s("auto_pad", "NOTSET") == "SAME_UPPER";
      pads[i] = upper ? small : big;
      pads[i + n] = upper ? big : small;
    }
  }
  bool bias = has_input(2);
  LayerSpec l;
  l.inputs = {ref(0)};
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
  emit(l);
}

void Importer::map_pool(const std::string& kind) {
  Val& x = in(0);
  if (x.shape.size() < 3) node_fail("expects (N, C, D1, ...), got " + shape_text(x.shape));
  size_t n = x.shape.size() - 2;
  auto k = attr_ints("kernel_shape");
  if (!k || k->size() != n) node_fail("needs kernel_shape with " + std::to_string(n) + " values");
  std::vector<long long> s = attr_ints("strides").value_or(std::vector<long long>(n, 1));
  std::vector<long long> d = attr_ints("dilations").value_or(std::vector<long long>(n, 1));
  if (s.size() != n || d.size() != n) node_fail("strides and dilations need " + std::to_string(n) + " values each");
  std::vector<long long> pads = spatial_pads(x.shape, *k, s, d);
  bool ceil = attr_i("ceil_mode", 0) != 0;
  LayerSpec l;
  l.inputs = {ref(0)};
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
  emit(l);
}

// Opset < 7 broadcasting (broadcast = 1, axis = k): B's dimensions line up with A's from axis k
// on; B gets trailing 1s, then numpy broadcasting applies. (ONNX 1.12's version converter pads B
// with rank(A) - rank(B) 1s whatever the axis; parse_onnx undoes that and keeps the axis.)
void Importer::legacy_broadcast(const std::string& op) {
  const Shape a = in(0).shape, b = in(1).shape;
  long long ax = attr_i(kLegacyAxis, 0);
  if (ax < 0) ax += static_cast<long long>(a.size());
  long long pad = static_cast<long long>(a.size()) - ax - static_cast<long long>(b.size());
  if (ax < 0 || pad < 0)
    node_fail("broadcast axis " + std::to_string(attr_i(kLegacyAxis, 0)) + " does not fit " + shape_text(a) + " and " + shape_text(b) + " (opset " +
              std::to_string(m_.opset_before) + " broadcasting)");
  LayerSpec l{op, {}, {ref(0)}};
  if (pad == 0) {
    l.inputs.push_back(ref(1));
  } else {
    Shape nb = b;
    nb.resize(b.size() + static_cast<size_t>(pad), 1);
    LayerSpec r{"reshape", {}, {ref(1)}};
    r.set("shape", ints_node(std::vector<long long>(nb.begin(), nb.end())));
    std::string name = cur_name_;
    cur_name_ += "_broadcast";
    emit(r);
    cur_name_ = name;
    l.inputs.push_back(vals_[cur_->output(0)].ref);
  }
  emit(l);
}

void Importer::map_node() {
  const std::string& t = cur_->op_type();
  static const std::map<std::string, std::string> unary = {
      {"Relu", "relu"}, {"Sigmoid", "sigmoid"}, {"Tanh", "tanh"}, {"HardSigmoid", "hardsigmoid"}, {"HardSwish", "hardswish"},
      {"Gelu", "gelu"}, {"Elu", "elu"}, {"Selu", "selu"}, {"Softplus", "softplus"}, {"Mish", "mish"}, {"Erf", "erf"},
      {"Exp", "exp"}, {"Log", "log"}, {"Sqrt", "sqrt"}, {"Reciprocal", "reciprocal"}, {"Neg", "neg"}, {"Abs", "abs"},
      {"Floor", "floor"}, {"Ceil", "ceil"}, {"Round", "round"}, {"Sign", "sign"}, {"Sin", "sin"}, {"Cos", "cos"},
      {"Not", "logical_not"}};
  static const std::map<std::string, std::string> binary = {
      {"Add", "add"}, {"Sub", "sub"}, {"Mul", "mul"}, {"Div", "div"}, {"Pow", "pow"}, {"Mod", "mod"}, {"Equal", "equal"},
      {"Less", "less"}, {"LessOrEqual", "less_equal"}, {"Greater", "greater"}, {"GreaterOrEqual", "greater_equal"},
      {"And", "logical_and"}, {"Or", "logical_or"}, {"Xor", "logical_xor"}};
  static const std::map<std::string, std::string> variadic = {{"Max", "max"}, {"Min", "min"}, {"Sum", "sum"}, {"Mean", "mean"}};
  static const std::map<std::string, std::string> reduce = {
      {"ReduceMean", "reduce_mean"}, {"ReduceSum", "reduce_sum"}, {"ReduceMax", "reduce_max"}, {"ReduceMin", "reduce_min"},
      {"ReduceProd", "reduce_prod"}, {"ReduceL1", "reduce_l1"}, {"ReduceL2", "reduce_l2"}, {"ReduceSumSquare", "reduce_sum_square"},
      {"ReduceLogSumExp", "reduce_log_sum_exp"}};
  if (auto u = unary.find(t); u != unary.end()) return simple(u->second, 1);
  if (auto b = binary.find(t); b != binary.end()) {
    if (attr(kLegacyAxis)) return legacy_broadcast(b->second);
    return simple(b->second, 2);
  }
  if (auto v = variadic.find(t); v != variadic.end()) return all_inputs(v->second);
  if (t == "Where") return simple("where", 3);
  if (t == "Conv") return map_conv(false);
  if (t == "ConvTranspose") return map_conv(true);
  if (t == "MaxPool") return map_pool("max");
  if (t == "AveragePool") return map_pool("avg");
  if (t == "LpPool") return map_pool("lp");
  if (t == "Identity" || t == "Dropout" || t == "Cast" || t == "CastLike" || t == "Trilu") return simple("identity", 1);
  if (t == "LeakyRelu") {
    LayerSpec l{"leaky_relu", {}, {ref(0)}};
    l.set("negative_slope", scalar(format_number(attr_f("alpha", 0.01))));
    emit(l);
    return;
  }
  if (t == "Clip") {
    double lo = -INFINITY, hi = INFINITY;
    if (attr("min")) lo = attr_f("min", lo);
    if (attr("max")) hi = attr_f("max", hi);
    if (has_input(1) && in(1).has_data) lo = in(1).data.at(0);
    if (has_input(2) && in(2).has_data) hi = in(2).data.at(0);
    return simple(lo == 0 && hi == 6 ? "relu6" : "clip", 1);
  }
  if (t == "PRelu") {
    LayerSpec l{"prelu", {}, {ref(0)}};
    std::vector<long long> slope(in(1).shape.begin(), in(1).shape.end());
    const Shape& x = in(0).shape;
    if (slope.size() == 1 && x.size() > 2 && slope[0] == x[1] && slope[0] != x.back()) slope.resize(x.size() - 1, 1);  // per channel (opset < 7)
    l.set("slope_shape", ints_node(slope));
    emit(l);
    return;
  }
  if (t == "Softmax" || t == "LogSoftmax") {
    long long def = m_.opset >= 13 ? -1 : 1;
    LayerSpec l{t == "Softmax" ? "softmax" : "log_softmax", {}, {ref(0)}};
    l.set("axis", int_node(axis_attr("axis", def, in(0).shape.size())));
    emit(l);
    return;
  }
  if (t == "CumSum") {
    LayerSpec l{"cumsum", {}, {ref(0)}};
    l.set("axis", int_node(const_ints(1, "axis").at(0)));
    emit(l);
    return;
  }
  if (t == "BatchNormalization") {
    if (in(0).shape.size() < 2) node_fail("expects (N, C, ...), got " + shape_text(in(0).shape));
    long long c = in(0).shape[1];
    simple("batchnorm", 1);
    for (int i = 1; i < cur_->output_size(); ++i) set_out(i, const_val({c}, {}, false));  // training mode: running mean and var
    return;
  }
  if (t == "InstanceNormalization") return simple("instance_norm", 1);
  if (t == "LRN") {
    LayerSpec l{"lrn", {}, {ref(0)}};
    l.set("size", int_node(attr_i("size", 1)));
    emit(l);
    return;
  }
  if (t == "LayerNormalization") {
    size_t r = in(0).shape.size();
    long long ax = axis_attr("axis", -1, r);
    if (ax < 0) ax += static_cast<long long>(r);
    LayerSpec l{"layernorm", {}, {ref(0)}};
    l.set("dims", int_node(static_cast<long long>(r) - ax));
    Shape stat = in(0).shape;
    for (size_t i = static_cast<size_t>(ax); i < r; ++i) stat[i] = 1;
    emit(l, 1);
    for (int i = 1; i < cur_->output_size(); ++i) set_out(i, const_val(stat, {}, false));  // Mean, InvStdDev
    return;
  }
  if (t == "MatMul") {
    Val& b = in(1);
    if (b.param && b.shape.size() == 2 && b.ref.empty()) {
      LayerSpec l{"linear", {}, {ref(0)}};
      if (in(0).shape.empty() || in(0).shape.back() != b.shape[0])
        node_fail("inner dimensions differ: " + shape_text(in(0).shape) + " × " + shape_text(b.shape));
      l.set("out_features", int_node(b.shape[1]));
      l.set("bias", bool_node(false));
      emit(l);
      return;
    }
    return simple("matmul", 2);
  }
  if (t == "Gemm") {
    Val& b = in(1);
    bool ta = attr_i("transA", 0) != 0, tb = attr_i("transB", 0) != 0;
    bool c_weight = !has_input(2) || (in(2).param && in(2).ref.empty());
    if (b.param && b.ref.empty() && !ta && b.shape.size() == 2 && c_weight && in(0).shape.size() == 2) {
      long long k = tb ? b.shape[1] : b.shape[0];
      if (in(0).shape[1] != k) node_fail("inner dimensions differ: " + shape_text(in(0).shape) + " × " + shape_text(b.shape) + (tb ? "ᵀ" : ""));
      LayerSpec l{"linear", {}, {ref(0)}};
      l.set("out_features", int_node(tb ? b.shape[0] : b.shape[1]));
      l.set("bias", bool_node(has_input(2)));
      emit(l);
      return;
    }
    LayerSpec l{"gemm", {}, {ref(0), ref(1)}};
    if (has_input(2)) l.inputs.push_back(ref(2));
    l.set("trans_a", bool_node(ta));
    l.set("trans_b", bool_node(tb));
    emit(l);
    return;
  }
  if (t == "GlobalAveragePool" || t == "GlobalMaxPool") {
    size_t r = in(0).shape.size();
    if (r < 3) node_fail("expects (N, C, D1, ...), got " + shape_text(in(0).shape));
    if (t == "GlobalAveragePool" && r == 4) return simple("global_avg_pool", 1);
    LayerSpec l{t == "GlobalAveragePool" ? "reduce_mean" : "reduce_max", {}, {ref(0)}};
    std::vector<long long> axes;
    for (size_t i = 2; i < r; ++i) axes.push_back(static_cast<long long>(i));
    l.set("axes", ints_node(axes));
    l.set("keepdims", bool_node(true));
    emit(l);
    return;
  }
  if (auto rd = reduce.find(t); rd != reduce.end()) {
    std::optional<std::vector<long long>> axes = attr_ints("axes");
    if (!axes && has_input(1)) axes = const_ints(1, "axes");
    if (axes && axes->empty() && attr_i("noop_with_empty_axes", 0)) return simple("identity", 1);
    LayerSpec l{rd->second, {}, {ref(0)}};
    if (axes && !axes->empty()) l.set("axes", ints_node(*axes));
    l.set("keepdims", bool_node(attr_i("keepdims", 1) != 0));
    emit(l);
    return;
  }
  if (t == "ArgMax" || t == "ArgMin") {
    LayerSpec l{t == "ArgMax" ? "argmax" : "argmin", {}, {ref(0)}};
    l.set("axis", int_node(attr_i("axis", 0)));
    l.set("keepdims", bool_node(attr_i("keepdims", 1) != 0));
    emit(l);
    return;
  }
  if (t == "Concat") {
    int n = 0;
    for (int i = 0; i < cur_->input_size(); ++i) n += has_input(i);
    if (n == 1) return simple("identity", 1);
    LayerSpec l{"concat", {}, {}};
    for (int i = 0; i < cur_->input_size(); ++i)
      if (has_input(i)) l.inputs.push_back(ref(i));
    l.set("axis", int_node(axis_attr("axis", 0, in(0).shape.size())));
    emit(l);
    return;
  }
  if (t == "Split") {
    const Shape& x = in(0).shape;
    long long ax = axis_attr("axis", 0, x.size());
    size_t a = static_cast<size_t>(ax < 0 ? ax + static_cast<long long>(x.size()) : ax);
    std::vector<long long> sizes;
    if (auto s = ints_arg("split", 1)) sizes = *s;
    else {
      long long parts = attr_i("num_outputs", cur_->output_size());
      if (parts <= 0) node_fail("has no outputs");
      long long each = (x[a] + parts - 1) / parts;
      for (long long p = 0, left = x[a]; p < parts; ++p, left -= each) sizes.push_back(std::min(each, left));
    }
    if (static_cast<int>(sizes.size()) != cur_->output_size())
      node_fail("splits into " + std::to_string(sizes.size()) + " parts but has " + std::to_string(cur_->output_size()) + " outputs");
    LayerSpec l{"split", {}, {ref(0)}};
    l.set("axis", int_node(ax));
    l.set("sizes", ints_node(sizes));
    emit(l);
    return;
  }
  if (t == "Slice") {
    const Shape& x = in(0).shape;
    auto sl = slice_params(x);
    for (const auto& s : sl)
      if (s.len <= 0) node_fail("the slice of axis " + std::to_string(s.axis) + " (size " + std::to_string(x[s.axis]) + ") is empty");
    if (sl.size() == 1 && sl[0].step > 0) {
      LayerSpec l{"slice", {}, {ref(0)}};
      l.set("axis", int_node(static_cast<long long>(sl[0].axis)));
      l.set("start", int_node(sl[0].start));
      l.set("end", int_node(sl[0].start + (sl[0].len - 1) * sl[0].step + 1));
      l.set("step", int_node(sl[0].step));
      emit(l);
      return;
    }
    std::vector<long long> starts, ends, axes, steps;
    for (const auto& s : sl) {
      long long n = x[s.axis];
      long long last = s.start + (s.len - 1) * s.step;
      starts.push_back(s.start);
      long long e = last + (s.step > 0 ? 1 : -1);
      if (e < 0) e = -(n + 1);  // before index 0 (a negative end would count from the end)
      ends.push_back(e);
      axes.push_back(static_cast<long long>(s.axis));
      steps.push_back(s.step);
    }
    LayerSpec l{"slice_nd", {}, {ref(0)}};
    l.set("starts", ints_node(starts));
    l.set("ends", ints_node(ends));
    l.set("axes", ints_node(axes));
    l.set("steps", ints_node(steps));
    emit(l);
    return;
  }
  if (t == "Gather") {
    Val& d = in(0);
    Val& idx = in(1);
    long long ax = axis_attr("axis", 0, d.shape.size());
    LayerSpec l{"gather", {}, {}};
    l.set("axis", int_node(ax));
    if (d.is_const && d.ref.empty()) l.set("data_shape", ints_node(std::vector<long long>(d.shape.begin(), d.shape.end())));
    else l.inputs.push_back(ref(0));
    if (idx.is_const && idx.ref.empty()) l.set("indices_shape", ints_node(std::vector<long long>(idx.shape.begin(), idx.shape.end())));
    else l.inputs.push_back(ref(1));
    if (d.is_const && d.ref.empty() && !d.param) {
      // a constant table that is not a weight (e.g. a folded buffer): read through a constant layer
      l.attrs.erase(l.attrs.end() - (idx.is_const && idx.ref.empty() ? 2 : 1));
      l.inputs.insert(l.inputs.begin(), ref(0));
    }
    emit(l);
    return;
  }
  if (t == "Reshape" || t == "Flatten" || t == "Squeeze" || t == "Unsqueeze") return reshape_to(view_shape(in(0).shape));
  if (t == "Transpose") {
    LayerSpec l{"permute", {}, {ref(0)}};
    l.set("dims", ints_node(transpose_perm(in(0).shape.size())));
    emit(l);
    return;
  }
  if (t == "DepthToSpace" || t == "SpaceToDepth") {
    const Shape& x = in(0).shape;
    long long b = attr_i("blocksize", 0);
    if (x.size() != 4 || b <= 0) node_fail("needs a rank-4 input and a positive blocksize");
    Shape y = x;
    if (t == "DepthToSpace") {
      if (x[1] % (b * b)) node_fail("channels " + std::to_string(x[1]) + " are not divisible by blocksize² " + std::to_string(b * b));
      y = {x[0], x[1] / (b * b), x[2] * b, x[3] * b};
    } else {
      if (x[2] % b || x[3] % b) node_fail("height and width must be divisible by the blocksize " + std::to_string(b));
      y = {x[0], x[1] * b * b, x[2] / b, x[3] / b};
    }
    return reshape_to(y, "reshape_copy");
  }
  if (t == "Expand") {
    auto s = const_ints(1, "shape");
    for (auto v : s)
      if (v <= 0) node_fail("target shape has dimension " + std::to_string(v));
    LayerSpec l{"expand", {}, {ref(0)}};
    l.set("shape", ints_node(s));
    emit(l);
    return;
  }
  if (t == "Tile") {
    LayerSpec l{"tile", {}, {ref(0)}};
    l.set("repeats", ints_node(const_ints(1, "repeats")));
    emit(l);
    return;
  }
  if (t == "Pad") {
    const Shape& x = in(0).shape;
    std::vector<long long> pads;
    if (auto p = attr_ints("pads")) pads = *p;
    else pads = const_ints(1, "pads");
    if (has_input(3)) {  // opset 18 axes
      auto axes = const_ints(3, "axes");
      std::vector<long long> full(2 * x.size(), 0);
      for (size_t i = 0; i < axes.size(); ++i) {
        long long a = axes[i] < 0 ? axes[i] + static_cast<long long>(x.size()) : axes[i];
        full[static_cast<size_t>(a)] = pads[i];
        full[static_cast<size_t>(a) + x.size()] = pads[i + axes.size()];
      }
      pads = full;
    }
    std::string mode = attr_s("mode", "constant");
    LayerSpec l{"pad", {}, {ref(0)}};
    l.set("pads", ints_node(pads));
    l.set("mode", scalar(mode));
    emit(l);
    return;
  }
  if (t == "Resize" || t == "Upsample") return map_resize();
  node_fail("is not supported");
}

void Importer::map_resize() {
  const Shape& x = in(0).shape;
  const std::string& t = cur_->op_type();
  Shape out = x;
  std::vector<long long> sizes;
  std::vector<double> scales;
  std::vector<long long> axes = attr_ints("axes").value_or(std::vector<long long>{});
  if (t == "Upsample") {
    if (auto s = attr_floats("scales")) scales = *s;
    else scales = const_floats(1, "scales");
  } else if (m_.opset < 11) {
    scales = const_floats(1, "scales");
  } else {
    if (has_input(3) && !in(3).shape.empty() && count(in(3).shape) > 0) sizes = const_ints(3, "sizes");
    else if (has_input(2) && count(in(2).shape) > 0) scales = const_floats(2, "scales");
    else node_fail("has neither scales nor sizes");
  }
  if (axes.empty())
    for (size_t i = 0; i < x.size(); ++i) axes.push_back(static_cast<long long>(i));
  size_t nvals = sizes.empty() ? scales.size() : sizes.size();
  if (nvals != axes.size()) node_fail("needs " + std::to_string(axes.size()) + " scales or sizes, got " + std::to_string(nvals));
  std::string policy = attr_s("keep_aspect_ratio_policy", "stretch");
  if (!sizes.empty() && policy != "stretch") {
    double scale = policy == "not_larger" ? INFINITY : 0;
    for (size_t i = 0; i < axes.size(); ++i) {
      double sc = static_cast<double>(sizes[i]) / static_cast<double>(x[static_cast<size_t>(axes[i])]);
      scale = policy == "not_larger" ? std::min(scale, sc) : std::max(scale, sc);
    }
    for (size_t i = 0; i < axes.size(); ++i)
      sizes[i] = static_cast<long long>(std::round(scale * static_cast<double>(x[static_cast<size_t>(axes[i])])));
  }
  for (size_t i = 0; i < axes.size(); ++i) {
    long long a = axes[i] < 0 ? axes[i] + static_cast<long long>(x.size()) : axes[i];
    if (a < 0 || a >= static_cast<long long>(x.size())) node_fail("axis " + std::to_string(axes[i]) + " is out of range");
    size_t ai = static_cast<size_t>(a);
    out[ai] = sizes.empty() ? static_cast<long long>(std::floor(static_cast<double>(x[ai]) * scales[i])) : sizes[i];
    if (out[ai] <= 0) node_fail("resizes dimension " + std::to_string(a) + " of " + shape_text(x) + " to " + std::to_string(out[ai]));
  }
  std::string mode = attr_s("mode", "nearest");
  if (mode == "bilinear") mode = "linear";
  if (mode != "nearest" && mode != "linear" && mode != "cubic") node_fail("mode '" + mode + "' is not nearest, linear or cubic");
  LayerSpec l;
  l.inputs = {ref(0)};
  if (x.size() == 4 && out[0] == x[0] && out[1] == x[1] && mode != "cubic") {
    l.op = "upsample";
    l.set("size", ints_node({out[2], out[3]}));
    l.set("mode", scalar(mode == "linear" ? "bilinear" : "nearest"));
  } else {
    l.op = "interpolate";
    l.set("size", ints_node(std::vector<long long>(out.begin(), out.end())));
    l.set("mode", scalar(mode));
  }
  emit(l);
}

}  // namespace onnx_detail

}  // namespace rsim
