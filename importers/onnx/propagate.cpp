// The shape and dtype propagation core: what a converter reads of the current node (attributes,
// inputs, constant inputs), constants and their materialisation as `constant` layers, emit() (the
// rsim operator's own shape inference gives each layer's output shapes; the node's element types
// its file_dtype), and ONNX's shape rules for views, transposes and slices.
#include <algorithm>
#include <cmath>

#include "importers/onnx/importer.hpp"

namespace rsim {

namespace onnx_detail {

// ---------------------------------------------------------------- attribute access

const onnx::AttributeProto* Importer::attr(const std::string& n) const {
  for (const auto& a : cur_->attribute())
    if (a.name() == n) return &a;
  return nullptr;
}
long long Importer::attr_i(const std::string& n, long long def) const {
  const auto* a = attr(n);
  return a ? a->i() : def;
}
double Importer::attr_f(const std::string& n, double def) const {
  const auto* a = attr(n);
  return a ? a->f() : def;
}
std::string Importer::attr_s(const std::string& n, const std::string& def) const {
  const auto* a = attr(n);
  return a ? a->s() : def;
}
std::optional<std::vector<long long>> Importer::attr_ints(const std::string& n) const {
  const auto* a = attr(n);
  if (!a) return std::nullopt;
  return std::vector<long long>(a->ints().begin(), a->ints().end());
}
std::optional<std::vector<double>> Importer::attr_floats(const std::string& n) const {
  const auto* a = attr(n);
  if (!a) return std::nullopt;
  return std::vector<double>(a->floats().begin(), a->floats().end());
}

Val& Importer::in(int i) {
  if (!has_input(i)) node_fail("input " + std::to_string(i) + " is missing");
  auto it = vals_.find(cur_->input(i));
  if (it == vals_.end() || !it->second.known)
    node_fail("input '" + cur_->input(i) + "' is not produced by an earlier node, an initializer or a graph input");
  return it->second;
}
std::vector<long long> Importer::const_ints(int i, const std::string& what) {
  Val& v = in(i);
  if (!v.has_data)
    node_fail("its " + what + " (input " + std::to_string(i) + ", '" + cur_->input(i) + "') is computed from data at run time; rsim needs it constant",
              {Note{{}, "shapes that depend on tensor values cannot be inferred; fix the input shapes with `inputs:`"}});
  std::vector<long long> r;
  for (double d : v.data) r.push_back(d >= 9.2e18 ? INT64_MAX : d <= -9.2e18 ? INT64_MIN : static_cast<long long>(d));
  return r;
}
std::vector<double> Importer::const_floats(int i, const std::string& what) {
  Val& v = in(i);
  if (!v.has_data) node_fail("its " + what + " (input " + std::to_string(i) + ") is computed at run time; rsim needs it constant");
  return v.data;
}
std::optional<std::vector<long long>> Importer::ints_arg(const std::string& name, int input) {
  if (auto a = attr_ints(name)) return a;
  if (has_input(input)) return const_ints(input, name);
  return std::nullopt;
}

// ---------------------------------------------------------------- outputs

Val Importer::const_val(Shape s, std::vector<double> data, bool is_int) {
  Val v;
  v.known = true;
  v.is_const = true;
  v.shape = std::move(s);
  v.elem = is_int ? onnx::TensorProto::INT64 : onnx::TensorProto::FLOAT;
  v.has_data = static_cast<double>(data.size()) == count(v.shape);
  if (v.has_data) v.data = std::move(data);
  v.const_name = cur_name_;
  return v;
}

std::string Importer::ref(int i) {
  Val& v = in(i);
  if (!v.ref.empty()) return v.ref;
  for (auto d : v.shape)
    if (d <= 0) node_fail("input '" + cur_->input(i) + "' is an empty tensor (" + shape_text(v.shape) + "); rsim layers need at least one element");
  std::string name = unique(v.const_name.empty() ? cur_->input(i) : v.const_name);
  CNode layer;
  layer.kind = CNode::Kind::Map;
  layer.entries.push_back(CEntry{"name", {}, scalar(name)});
  layer.entries.push_back(CEntry{"op", {}, scalar("constant")});
  CNode no_inputs;
  no_inputs.kind = CNode::Kind::Seq;
  layer.entries.push_back(CEntry{"inputs", {}, no_inputs});
  layer.entries.push_back(CEntry{"shape", {}, ints_node(std::vector<long long>(v.shape.begin(), v.shape.end()))});
  if (const std::string ft = float_dtype(v.elem); !ft.empty()) layer.entries.push_back(CEntry{"file_dtype", {}, scalar(ft)});
  if (v.param && counted_.emplace(v.const_name, count(v.shape)).second) layer.entries.push_back(CEntry{"params", {}, bool_node(true)});
  layers_.push_back(std::move(layer));
  v.ref = name;
  return v.ref;
}

// The rsim dtype of an ONNX float element type ("" for the others: integer tensors, bool).
std::string Importer::float_dtype(int elem) {
  switch (elem) {
    case onnx::TensorProto::INT8:
    case onnx::TensorProto::UINT8: return "int8";  // (a QDQ layer's: uint8 costed and labelled as int8)
    case onnx::TensorProto::FLOAT: return "fp32";
    case onnx::TensorProto::FLOAT16: return "fp16";
    case onnx::TensorProto::BFLOAT16: return "bf16";
    case onnx::TensorProto::DOUBLE: return "fp64";
    default: return "";
  }
}
// The element type of the current node's layer: a Cast's target, else its first floating-point
// input's (an activation's or a weight's); fp32 when it has none
int Importer::node_elem() {
  if (cur_->op_type() == "Cast") return static_cast<int>(attr_i("to", onnx::TensorProto::FLOAT));
  if (cur_->op_type() == "CastLike" && has_input(1)) return in(1).elem;
  // the integer operators, and a QDQ layer: its first input behind a DequantizeLinear is stored
  // in int8 (or uint8)
  if (const std::string& t = cur_->op_type(); t == "QLinearConv" || t == "QLinearMatMul" || t == "ConvInteger" || t == "MatMulInteger")
    return has_input(0) && in(0).elem == onnx::TensorProto::UINT8 ? onnx::TensorProto::UINT8 : onnx::TensorProto::INT8;
  if (has_input(0))
    if (auto it = vals_.find(cur_->input(0)); it != vals_.end() && it->second.quantized)
      return it->second.elem == onnx::TensorProto::UINT8 ? onnx::TensorProto::UINT8 : onnx::TensorProto::INT8;
  for (int i = 0; i < cur_->input_size(); ++i)
    if (has_input(i))
      if (auto it = vals_.find(cur_->input(i)); it != vals_.end() && is_float_type(it->second.elem)) return it->second.elem;
  return onnx::TensorProto::FLOAT;
}

std::vector<Shape> Importer::emit(LayerSpec spec, int n_outputs) {
  const OpDef* op = ops_.find(spec.op);
  if (!op) node_fail("maps to operator '" + spec.op + "', which is not defined", {Note{{}, "`rsim ops` lists the operators"}});
  std::string lname = unique(cur_name_);
  CNode layer;
  layer.kind = CNode::Kind::Map;
  layer.entries.push_back(CEntry{"name", {}, scalar(lname)});
  layer.entries.push_back(CEntry{"op", {}, scalar(spec.op)});
  CNode ins;
  ins.kind = CNode::Kind::Seq;
  for (const auto& r : spec.inputs) ins.items.push_back(scalar(r));
  layer.entries.push_back(CEntry{"inputs", {}, ins});
  for (auto& e : spec.attrs) layer.entries.push_back(e);
  const int elem = node_elem();
  if (const std::string ft = float_dtype(elem); !ft.empty()) layer.entries.push_back(CEntry{"file_dtype", {}, scalar(ft)});
  std::vector<Shape> in_shapes;
  for (const auto& r : spec.inputs) in_shapes.push_back(shape_of_ref(r));
  Diags d;
  Attrs attrs = read_attrs(*op, layer, d, "node '" + cur_name_ + "'");
  std::vector<Shape> out;
  std::string shapes;
  for (const auto& s : in_shapes) shapes += (shapes.empty() ? "" : ", ") + shape_text(s);
  if (!d.empty()) node_fail(d.list().front().message);
  // the weights the operator counts itself (initializers it takes as attributes, not as inputs):
  // those an earlier layer already counts are marked shared, so the network counts each once
  double shared = 0;
  bool any_new = false;
  std::set<std::string> here;
  for (int i = 0; i < cur_->input_size(); ++i) {
    if (!has_input(i)) continue;
    auto it = vals_.find(cur_->input(i));
    if (it == vals_.end() || !it->second.param || bn_stats_.count(it->second.const_name)) continue;
    const Val& v = it->second;
    if (!v.ref.empty() && std::find(spec.inputs.begin(), spec.inputs.end(), v.ref) != spec.inputs.end()) continue;  // a constant layer counts it
    if (!here.insert(v.const_name).second) continue;
    if (counted_.emplace(v.const_name, count(v.shape)).second) any_new = true;
    else shared += count(v.shape);
  }
  if (shared > 0) {
    if (any_new) layer.entries.push_back(CEntry{"shared_params", {}, scalar(std::to_string(static_cast<long long>(shared)))});
    else layer.entries.push_back(CEntry{"tied_weights", {}, bool_node(true)});
  }
  int n_in = static_cast<int>(in_shapes.size());
  if (n_in < op->min_inputs || (op->max_inputs >= 0 && n_in > op->max_inputs))
    node_fail("operator '" + spec.op + "' cannot take " + std::to_string(n_in) + " inputs");
  try {
    out = op->infer(OpArgs{attrs, in_shapes, DType::fp32});
  } catch (const ShapeError& e) {
    node_fail(std::string("cannot infer its output shape: ") + e.what(), {Note{{}, "input shapes: " + (shapes.empty() ? "none" : shapes)}});
  }
  for (const auto& s : out)
    for (auto dim : s)
      if (dim <= 0 || dim > 1000000000000LL)
        node_fail("output shape " + shape_text(s) + " has a dimension out of range", {Note{{}, "input shapes: " + shapes}});
  layers_.push_back(std::move(layer));
  int n = n_outputs < 0 ? cur_->output_size() : n_outputs;
  for (int i = 0; i < cur_->output_size(); ++i) {
    Val v;
    v.known = true;
    size_t k = static_cast<size_t>(std::min(i, static_cast<int>(out.size()) - 1));
    if (i >= n || out.empty()) k = 0;
    v.shape = out.empty() ? Shape{} : out[k];
    v.ref = k == 0 ? lname : lname + ":" + std::to_string(k);
    v.elem = is_float_type(elem) ? elem : onnx::TensorProto::FLOAT;
    if (!float_dtype(elem).empty() && !is_float_type(elem)) v.elem = elem, v.quantized = true;  // an int8 layer's output stays int8
    ref_shapes_[v.ref] = v.shape;
    set_out(i, std::move(v));
  }
  ref_shapes_[lname] = out.empty() ? Shape{} : out[0];
  return out;
}

Shape Importer::shape_of_ref(const std::string& r) {
  auto it = ref_shapes_.find(r);
  if (it != ref_shapes_.end()) return it->second;
  for (const auto& [n, s] : net_inputs_)
    if (n == r) return s;
  for (const auto& [name, v] : vals_)
    if (v.ref == r) return v.shape;
  node_fail("internal: unknown tensor '" + r + "'");
}

// ---------------------------------------------------------------- layers the families share

void Importer::simple(const std::string& op, int n_inputs) {
  LayerSpec l;
  l.op = op;
  for (int i = 0; i < n_inputs; ++i) l.inputs.push_back(ref(i));
  emit(l);
}
void Importer::all_inputs(const std::string& op) {
  LayerSpec l;
  l.op = op;
  for (int i = 0; i < cur_->input_size(); ++i)
    if (has_input(i)) l.inputs.push_back(ref(i));
  emit(l);
}
void Importer::reshape_to(const Shape& out, const std::string& op) {
  LayerSpec l;
  l.op = op;
  l.inputs = {ref(0)};
  if (out.empty()) node_fail("the result is a scalar; rsim's reshape needs at least one dimension");
  l.set("shape", ints_node(std::vector<long long>(out.begin(), out.end())));
  emit(l);
}
long long Importer::axis_attr(const std::string& name, long long def, size_t rank) {
  long long a = attr_i(name, def);
  long long r = static_cast<long long>(rank);
  if (a < -r || a >= r) node_fail(name + " " + std::to_string(a) + " is out of range for rank " + std::to_string(rank));
  return a;
}

// ---------------------------------------------------------------- ONNX shape rules

std::vector<long long> Importer::transpose_perm(size_t r) {
  auto p = attr_ints("perm");
  std::vector<long long> perm;
  if (p) perm = *p;
  else
    for (size_t k = r; k-- > 0;) perm.push_back(static_cast<long long>(k));
  if (perm.size() != r) node_fail("perm has " + std::to_string(perm.size()) + " entries for a rank-" + std::to_string(r) + " input");
  std::vector<bool> seen(r, false);
  for (auto& v : perm) {
    if (v < 0) v += static_cast<long long>(r);
    if (v < 0 || v >= static_cast<long long>(r) || seen[static_cast<size_t>(v)]) node_fail("perm is not a permutation");
    seen[static_cast<size_t>(v)] = true;
  }
  return perm;
}

// Output shape of Reshape / Flatten / Squeeze / Unsqueeze (ONNX semantics).
Shape Importer::view_shape(const Shape& x) {
  const std::string& t = cur_->op_type();
  long long r = static_cast<long long>(x.size());
  if (t == "Reshape") {
    std::vector<long long> want = attr_ints("shape") ? *attr_ints("shape") : const_ints(1, "target shape");
    bool allowzero = attr_i("allowzero", 0) != 0;
    Shape y;
    int infer_at = -1;
    double known = 1;
    for (size_t i = 0; i < want.size(); ++i) {
      long long v = want[i];
      if (v == 0 && !allowzero) {
        if (i >= x.size()) node_fail("target shape copies dimension " + std::to_string(i) + " of a rank-" + std::to_string(r) + " input");
        v = x[i];
      }
      if (v == -1) {
        if (infer_at >= 0) node_fail("target shape has more than one -1");
        infer_at = static_cast<int>(i);
        y.push_back(1);
        continue;
      }
      if (v < 0) node_fail("target shape has dimension " + std::to_string(v));
      known *= static_cast<double>(v);
      y.push_back(v);
    }
    double total = count(x);
    if (infer_at >= 0) {
      double rest = known > 0 ? total / known : -1;
      if (rest < 0 || rest != std::floor(rest)) node_fail("cannot reshape " + shape_text(x) + " (" + format_number(total) + " elements) with a -1 dimension");
      y[static_cast<size_t>(infer_at)] = static_cast<long long>(rest);
    }
    if (count(y) != total)
      node_fail("cannot reshape " + shape_text(x) + " (" + format_number(total) + " elements) to " + shape_text(y) + " (" + format_number(count(y)) + ")");
    return y;
  }
  if (t == "Flatten") {
    long long ax = attr_i("axis", 1);
    if (ax < 0) ax += r;
    if (ax < 0 || ax > r) node_fail("axis " + std::to_string(attr_i("axis", 1)) + " is out of range for rank " + std::to_string(r));
    double a = 1, b = 1;
    for (long long i = 0; i < r; ++i) (i < ax ? a : b) *= static_cast<double>(x[static_cast<size_t>(i)]);
    return {static_cast<long long>(a), static_cast<long long>(b)};
  }
  if (t == "Squeeze") {
    auto axes = ints_arg("axes", 1);
    Shape y;
    std::vector<bool> drop(x.size(), false);
    if (axes) {
      for (auto a : *axes) {
        long long k = a < 0 ? a + r : a;
        if (k < 0 || k >= r) node_fail("axis " + std::to_string(a) + " is out of range for rank " + std::to_string(r));
        if (x[static_cast<size_t>(k)] != 1) node_fail("cannot squeeze dimension " + std::to_string(k) + " of size " + std::to_string(x[static_cast<size_t>(k)]));
        drop[static_cast<size_t>(k)] = true;
      }
    } else {
      for (size_t k = 0; k < x.size(); ++k) drop[k] = x[k] == 1;
    }
    for (size_t k = 0; k < x.size(); ++k)
      if (!drop[k]) y.push_back(x[k]);
    return y;
  }
  // Unsqueeze
  auto axes = ints_arg("axes", 1);
  if (!axes) node_fail("has no axes");
  long long out_r = r + static_cast<long long>(axes->size());
  std::vector<bool> ins(static_cast<size_t>(out_r), false);
  for (auto a : *axes) {
    long long k = a < 0 ? a + out_r : a;
    if (k < 0 || k >= out_r || ins[static_cast<size_t>(k)]) node_fail("axis " + std::to_string(a) + " is out of range or repeated");
    ins[static_cast<size_t>(k)] = true;
  }
  Shape y;
  size_t j = 0;
  for (long long k = 0; k < out_r; ++k) y.push_back(ins[static_cast<size_t>(k)] ? 1 : x[j++]);
  return y;
}

std::vector<Importer::SliceAxis> Importer::slice_params(const Shape& x) {
  std::vector<long long> starts, ends, axes, steps;
  if (attr_ints("starts")) {  // opset < 10
    starts = *attr_ints("starts");
    const auto e = attr_ints("ends");  // (required by the opset; a file may lack it)
    if (!e) node_fail("a Slice of opset below 10 needs the attribute 'ends' beside 'starts'");
    ends = *e;
    if (auto a = attr_ints("axes")) axes = *a;
  } else {
    starts = const_ints(1, "starts");
    ends = const_ints(2, "ends");
    if (has_input(3)) axes = const_ints(3, "axes");
    if (has_input(4)) steps = const_ints(4, "steps");
  }
  if (axes.empty())
    for (size_t i = 0; i < starts.size(); ++i) axes.push_back(static_cast<long long>(i));
  if (steps.empty()) steps.assign(starts.size(), 1);
  if (ends.size() != starts.size() || axes.size() != starts.size() || steps.size() != starts.size())
    node_fail("starts, ends, axes and steps differ in length");
  std::vector<SliceAxis> out;
  long long r = static_cast<long long>(x.size());
  for (size_t i = 0; i < starts.size(); ++i) {
    long long a = axes[i] < 0 ? axes[i] + r : axes[i];
    if (a < 0 || a >= r) node_fail("axis " + std::to_string(axes[i]) + " is out of range for rank " + std::to_string(r));
    long long n = x[static_cast<size_t>(a)], st = steps[i];
    if (st == 0) node_fail("step is 0");
    if (st > 1000000000000LL || st < -1000000000000LL) st = st > 0 ? n : -n - 1;  // one element either way, no overflow
    long long b = starts[i], e = ends[i];
    if (b < 0) b = b < -n ? 0 - (st < 0) : b + n;
    if (e < 0) e = e < -n ? -1 : e + n;
    long long len;
    if (st > 0) {
      b = std::clamp(b, 0LL, n);
      e = std::clamp(e, 0LL, n);
      len = e > b ? (e - b + st - 1) / st : 0;
    } else {
      b = std::clamp(b, -1LL, n - 1);
      e = std::clamp(e, -1LL, n - 1);
      len = b > e ? (b - e + (-st) - 1) / (-st) : 0;
    }
    out.push_back(SliceAxis{static_cast<size_t>(a), b, st, len});
  }
  return out;
}

}  // namespace onnx_detail

}  // namespace rsim
