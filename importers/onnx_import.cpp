#include <algorithm>
#include <cmath>
#include <filesystem>
#include <functional>
#include <set>
#include <unordered_map>

#include "importers/onnx/importer.hpp"

namespace rsim {

using namespace onnx_detail;

namespace {

// Row-major strides of a shape.
std::vector<double> strides_of(const Shape& s) {
  std::vector<double> st(s.size(), 1);
  for (size_t i = s.size(); i-- > 1;) st[i - 1] = st[i] * static_cast<double>(s[i]);
  return st;
}

// The flat index into `in` (broadcast against `out`) of output element `o`.
size_t bcast_index(size_t o, const Shape& out, const Shape& in) {
  size_t idx = 0, mul = 1;
  for (size_t k = 0; k < out.size(); ++k) {
    size_t i = out.size() - 1 - k;
    size_t coord = o % static_cast<size_t>(out[i]);
    o /= static_cast<size_t>(out[i]);
    if (k < in.size()) {
      size_t j = in.size() - 1 - k;
      if (in[j] != 1) idx += coord * mul;
      mul *= static_cast<size_t>(in[j]);
    }
  }
  return idx;
}

const std::set<std::string>& folded_only() {
  static const std::set<std::string> s = {"Shape", "Size", "Constant", "ConstantOfShape", "Range"};
  return s;
}

// op type → the rsim operator it becomes (for the README table and `rsim import --summary`)
const std::vector<std::pair<std::string, std::string>>& mapping_table() {
  static const std::vector<std::pair<std::string, std::string>> t = {
      {"Conv", "conv2d (2-D, symmetric pads) or conv_nd"},
      {"ConvTranspose", "conv_transpose2d (2-D, symmetric pads) or conv_transpose_nd"},
      {"Gemm", "linear (constant B) or gemm"},
      {"MatMul", "linear (constant 2-D B) or matmul"},
      {"BatchNormalization", "batchnorm"},
      {"InstanceNormalization", "instance_norm"},
      {"LayerNormalization", "layernorm"},
      {"LRN", "lrn"},
      {"Relu", "relu"},
      {"LeakyRelu", "leaky_relu"},
      {"PRelu", "prelu"},
      {"Clip", "relu6 (0..6) or clip"},
      {"Sigmoid", "sigmoid"},
      {"HardSigmoid", "hardsigmoid"},
      {"HardSwish", "hardswish"},
      {"Tanh", "tanh"},
      {"Gelu", "gelu"},
      {"Elu", "elu"},
      {"Selu", "selu"},
      {"Softplus", "softplus"},
      {"Mish", "mish"},
      {"Erf", "erf"},
      {"Exp", "exp"},
      {"Log", "log"},
      {"Sqrt", "sqrt"},
      {"Reciprocal", "reciprocal"},
      {"Neg", "neg"},
      {"Abs", "abs"},
      {"Floor", "floor"},
      {"Ceil", "ceil"},
      {"Round", "round"},
      {"Sign", "sign"},
      {"Sin", "sin"},
      {"Cos", "cos"},
      {"Not", "logical_not"},
      {"CumSum", "cumsum"},
      {"Softmax", "softmax"},
      {"LogSoftmax", "log_softmax"},
      {"Add", "add"},
      {"Sub", "sub"},
      {"Mul", "mul"},
      {"Div", "div"},
      {"Pow", "pow"},
      {"Mod", "mod"},
      {"Equal", "equal"},
      {"Less", "less"},
      {"LessOrEqual", "less_equal"},
      {"Greater", "greater"},
      {"GreaterOrEqual", "greater_equal"},
      {"And", "logical_and"},
      {"Or", "logical_or"},
      {"Xor", "logical_xor"},
      {"Max", "max"},
      {"Min", "min"},
      {"Sum", "sum"},
      {"Mean", "mean"},
      {"Where", "where"},
      {"MaxPool", "max_pool2d (2-D, symmetric pads) or pool_nd"},
      {"AveragePool", "avg_pool2d (2-D, symmetric pads) or pool_nd"},
      {"LpPool", "pool_nd"},
      {"GlobalAveragePool", "global_avg_pool (2-D) or reduce_mean"},
      {"GlobalMaxPool", "reduce_max"},
      {"Concat", "concat"},
      {"Split", "split"},
      {"Slice", "slice (one axis, positive step) or slice_nd"},
      {"Gather", "gather"},
      {"Reshape", "reshape"},
      {"Flatten", "reshape"},
      {"Squeeze", "reshape"},
      {"Unsqueeze", "reshape"},
      {"Transpose", "permute"},
      {"DepthToSpace", "reshape_copy"},
      {"SpaceToDepth", "reshape_copy"},
      {"Expand", "expand"},
      {"Tile", "tile"},
      {"Resize", "upsample (2-D nearest/linear) or interpolate"},
      {"Upsample", "upsample (2-D nearest/linear) or interpolate"},
      {"Pad", "pad"},
      {"ReduceMean", "reduce_mean"},
      {"ReduceSum", "reduce_sum"},
      {"ReduceMax", "reduce_max"},
      {"ReduceMin", "reduce_min"},
      {"ReduceProd", "reduce_prod"},
      {"ReduceL1", "reduce_l1"},
      {"ReduceL2", "reduce_l2"},
      {"ReduceSumSquare", "reduce_sum_square"},
      {"ReduceLogSumExp", "reduce_log_sum_exp"},
      {"ArgMax", "argmax"},
      {"ArgMin", "argmin"},
      {"Shape", "folded"},
      {"Size", "folded"},
      {"Constant", "folded (or constant)"},
      {"ConstantOfShape", "folded (or constant)"},
      {"Range", "folded"},
      {"Trilu", "identity"},
      {"Cast", "identity"},
      {"CastLike", "identity"},
      {"Identity", "identity"},
      {"Dropout", "identity"},
  };
  return t;
}

bool supported(const std::string& op) {
  static const std::set<std::string> s = [] {
    std::set<std::string> r;
    for (const auto& [k, v] : mapping_table()) r.insert(k);
    return r;
  }();
  return s.count(op) > 0;
}

class Importer {
 public:
  Importer(const OnnxModel& m, const OnnxImportOptions& opt) : m_(m), opt_(opt), ops_(opt.ops ? *opt.ops : builtin_ops()) {}

  OnnxImport run() {
    const onnx::GraphProto& g = m_.proto.graph();
    res_.opset = m_.opset;
    res_.nodes = static_cast<size_t>(g.node_size());
    res_.initializers = static_cast<size_t>(g.initializer_size());
    check_unsupported(g);
    std::set<std::string>& bn_stats = bn_stats_;
    for (const auto& n : g.node())
      if (n.op_type() == "BatchNormalization")
        for (int i = 3; i < n.input_size() && i < 5; ++i) bn_stats.insert(n.input(i));
    for (const auto& t : g.initializer()) {
      Val v = tensor_val(t);
      v.param = is_float_type(t.data_type());
      v.const_name = t.name();
      if (v.param && !bn_stats.count(t.name())) res_.weight_elements += count(v.shape);
      vals_[t.name()] = std::move(v);
    }
    read_inputs(g);
    for (int i = 0; i < g.node_size(); ++i) node(g.node(i), i);
    for (const auto& o : g.output()) {
      auto it = vals_.find(o.name());
      if (it == vals_.end() || !it->second.known) fail("graph output '" + o.name() + "' is not produced by any node");
      res_.outputs.push_back(OnnxOutput{o.name(), it->second.shape, it->second.ref});
    }
    if (opt_.record_shapes)  // every node output (not the inputs and initializers: nothing to infer there)
      for (const auto& n : g.node())
        for (const auto& o : n.output())
          if (auto it = vals_.find(o); !o.empty() && it != vals_.end() && it->second.known) res_.tensor_shapes[o] = it->second.shape;
    // the network node
    CNode net;
    net.kind = CNode::Kind::Map;
    net.loc = file_loc(m_.file);
    std::string name = opt_.name;
    if (name.empty()) name = std::filesystem::path(m_.path).stem().string();
    net.entries.push_back(CEntry{"name", {}, scalar(name)});
    if (!opt_.dtype.empty()) net.entries.push_back(CEntry{"dtype", {}, scalar(opt_.dtype)});
    CNode ins;
    ins.kind = CNode::Kind::Map;
    for (const auto& [n, s] : net_inputs_) ins.entries.push_back(CEntry{n, {}, ints_node(std::vector<long long>(s.begin(), s.end()))});
    if (ins.entries.empty()) fail("the model has no inputs with a shape (every input is a constant); rsim needs at least one");
    net.entries.push_back(CEntry{"inputs", {}, ins});
    CNode layers;
    layers.kind = CNode::Kind::Seq;
    layers.items = std::move(layers_);
    for (auto& l : layers.items) l.loc = file_loc(m_.file);
    net.entries.push_back(CEntry{"layers", {}, layers});
    if (!res_.ignored.empty()) {  // listed in the run's summary and report
      CNode ig;
      ig.kind = CNode::Kind::Map;
      for (const auto& [op, n] : res_.ignored) ig.entries.push_back(CEntry{op, {}, int_node(n)});
      net.entries.push_back(CEntry{"ignored", {}, ig});
    }
    res_.network = std::move(net);
    return std::move(res_);
  }

 private:
  const OnnxModel& m_;
  const OnnxImportOptions& opt_;
  const OpRegistry& ops_;
  OnnxImport res_;
  std::unordered_map<std::string, Val> vals_;
  std::vector<std::pair<std::string, Shape>> net_inputs_;
  std::vector<CNode> layers_;
  std::set<std::string> used_names_;
  std::map<std::string, int> unnamed_;
  const onnx::NodeProto* cur_ = nullptr;
  std::string cur_name_;
  std::set<std::string> bn_stats_;  // BatchNorm running statistics: not parameters
  // Float initializers whose elements a layer already counts as parameters: a weight that feeds
  // two nodes (tied or shared) is counted once.
  std::set<std::string> counted_;

  [[noreturn]] void fail(const std::string& msg, std::vector<Note> notes = {}) const { fail_file(m_.file, msg, std::move(notes)); }

  [[noreturn]] void node_fail(const std::string& msg, std::vector<Note> notes = {}) const {
    fail("node '" + cur_name_ + "' (" + cur_->op_type() + "): " + msg, std::move(notes));
  }

  void check_unsupported(const onnx::GraphProto& g) {
    std::vector<OnnxUnsupported> bad;
    for (const auto& n : g.node()) {
      if (!n.domain().empty() && n.domain() != "ai.onnx" && !opt_.op_map.count(n.op_type())) {
        // other domains (com.microsoft, ...) are unsupported unless mapped
      } else if (supported(n.op_type()) || opt_.op_map.count(n.op_type())) {
        continue;
      }
      auto it = std::find_if(bad.begin(), bad.end(), [&](const auto& b) { return b.op_type == n.op_type(); });
      if (it == bad.end()) bad.push_back(OnnxUnsupported{n.op_type(), 1, n.name()});
      else ++it->count;
    }
    if (bad.empty()) return;
    std::string list;
    for (const auto& b : bad)
      list += (list.empty() ? "" : ", ") + b.op_type + " (" + std::to_string(b.count) + " node" + (b.count == 1 ? "" : "s") +
              (b.first_node.empty() ? "" : ", first '" + b.first_node + "'") + ")";
    fail(std::to_string(bad.size()) + " unsupported ONNX operator" + (bad.size() == 1 ? "" : "s") + ": " + list,
         {Note{{}, "map each to a Lua operator or skip it in the network entry: onnx_ops: {" + bad[0].op_type + ": my_lua_op} or {" +
                       bad[0].op_type + ": ignore}"}});
  }

  std::string sanitize(const std::string& raw) {
    std::string s;
    for (char c : raw) s += (c == ':' || c == '\n' || c == '\r') ? '_' : c;
    if (s.empty() || s == "input") s += "_";
    return s;
  }

  std::string unique(const std::string& raw) {
    std::string base = sanitize(raw), s = base;
    for (int k = 2; used_names_.count(s); ++k) s = base + "_" + std::to_string(k);
    used_names_.insert(s);
    return s;
  }

  void read_inputs(const onnx::GraphProto& g) {
    for (const auto& [n, s] : opt_.inputs) {
      bool found = false;
      for (const auto& in : g.input()) found = found || in.name() == n;
      if (!found || vals_.count(n)) {
        std::vector<std::string> names;
        for (const auto& in : g.input())
          if (!vals_.count(in.name())) names.push_back(in.name());
        std::string hint = did_you_mean(n, names), list;
        for (const auto& x : names) list += (list.empty() ? "" : ", ") + x;
        fail("the model has no input '" + n + "'", {Note{{}, hint.empty() ? "its inputs: " + list : hint}});
      }
    }
    for (const auto& [n, v] : opt_.dims) {
      (void)v;
      bool found = false;
      for (const auto& in : g.input())
        for (const auto& d : in.type().tensor_type().shape().dim()) found = found || d.dim_param() == n;
      if (!found) {
        std::vector<std::string> syms;
        for (const auto& in : g.input())
          for (const auto& d : in.type().tensor_type().shape().dim())
            if (!d.dim_param().empty() && std::find(syms.begin(), syms.end(), d.dim_param()) == syms.end()) syms.push_back(d.dim_param());
        std::string hint = did_you_mean(n, syms), list;
        for (const auto& x : syms) list += (list.empty() ? "" : ", ") + x;
        fail("the model has no symbolic dimension '" + n + "'",
             {Note{{}, !hint.empty() ? hint : list.empty() ? "its inputs have fixed shapes" : "its symbolic dimensions: " + list}});
      }
    }
    for (const auto& in : g.input()) {
      if (vals_.count(in.name())) continue;  // an initializer listed as an input (IR < 4)
      Val v;
      v.known = true;
      v.elem = in.type().tensor_type().elem_type();
      auto ov = std::find_if(opt_.inputs.begin(), opt_.inputs.end(), [&](const auto& p) { return p.first == in.name(); });
      const auto& tt = in.type().tensor_type();
      for (const auto& d : tt.shape().dim())
        if (!d.dim_param().empty() && std::find(res_.symbols.begin(), res_.symbols.end(), d.dim_param()) == res_.symbols.end())
          res_.symbols.push_back(d.dim_param());
      if (!in.type().has_tensor_type()) fail("input '" + in.name() + "' is not a tensor (a sequence, map or optional); rsim reads tensor inputs only");
      if (ov != opt_.inputs.end()) {
        v.shape = ov->second;
      } else {
        if (!tt.has_shape())
          fail("input '" + in.name() + "' has no shape in the model",
               {Note{{}, "give it one in the network entry: inputs: {" + in.name() + ": [1, 3, 224, 224]}"}});
        for (int i = 0; i < tt.shape().dim_size(); ++i) {
          const auto& d = tt.shape().dim(i);
          if (d.has_dim_value() && d.dim_value() > 0) {
            v.shape.push_back(d.dim_value());
          } else if (!d.dim_param().empty()) {
            auto b = std::find_if(opt_.dims.begin(), opt_.dims.end(), [&](const auto& p) { return p.first == d.dim_param(); });
            if (b == opt_.dims.end())
              fail("input '" + in.name() + "' has the symbolic dimension '" + d.dim_param() + "' (dimension " + std::to_string(i) +
                       "), which is not bound",
                   {Note{{}, "bind it in the network entry: dims: {" + d.dim_param() + ": 1}"}});
            v.shape.push_back(b->second);
          } else {
            fail("dimension " + std::to_string(i) + " of input '" + in.name() + "' is unknown (neither a size nor a name)",
                 {Note{{}, "give the input's shape in the network entry: inputs: {" + in.name() + ": [...]}"}});
          }
        }
      }
      auto iv = opt_.input_values.find(in.name());
      if (iv != opt_.input_values.end() && static_cast<double>(iv->second.size()) == count(v.shape)) {
        // known contents: shape arguments read them; an empty or scalar one is a constant, not an input
        v.has_data = true;
        v.data = iv->second;
        v.const_name = in.name();
        if (v.shape.empty() || count(v.shape) == 0) {
          v.is_const = true;
          vals_[in.name()] = std::move(v);
          continue;
        }
      }
      for (auto d : v.shape)
        if (d <= 0 || d > 1000000000LL) fail("input '" + in.name() + "' has dimension " + std::to_string(d) + " (each must be 1 to 1e9)");
      if (v.shape.empty()) {  // a scalar input: rsim networks take tensors, so it becomes a constant
        v.is_const = true;
        v.const_name = in.name();
      } else {
        v.ref = unique(in.name());
        net_inputs_.emplace_back(v.ref, v.shape);
      }
      vals_[in.name()] = std::move(v);
    }
  }

  // ---------------------------------------------------------------- attribute access

  const onnx::AttributeProto* attr(const std::string& n) const {
    for (const auto& a : cur_->attribute())
      if (a.name() == n) return &a;
    return nullptr;
  }
  long long attr_i(const std::string& n, long long def) const {
    const auto* a = attr(n);
    return a ? a->i() : def;
  }
  double attr_f(const std::string& n, double def) const {
    const auto* a = attr(n);
    return a ? a->f() : def;
  }
  std::string attr_s(const std::string& n, const std::string& def) const {
    const auto* a = attr(n);
    return a ? a->s() : def;
  }
  std::optional<std::vector<long long>> attr_ints(const std::string& n) const {
    const auto* a = attr(n);
    if (!a) return std::nullopt;
    return std::vector<long long>(a->ints().begin(), a->ints().end());
  }
  std::optional<std::vector<double>> attr_floats(const std::string& n) const {
    const auto* a = attr(n);
    if (!a) return std::nullopt;
    return std::vector<double>(a->floats().begin(), a->floats().end());
  }

  bool has_input(int i) const { return i < cur_->input_size() && !cur_->input(i).empty(); }
  Val& in(int i) {
    if (!has_input(i)) node_fail("input " + std::to_string(i) + " is missing");
    auto it = vals_.find(cur_->input(i));
    if (it == vals_.end() || !it->second.known)
      node_fail("input '" + cur_->input(i) + "' is not produced by an earlier node, an initializer or a graph input");
    return it->second;
  }
  // Integer values of a constant input (shape targets, axes, pads...).
  std::vector<long long> const_ints(int i, const std::string& what) {
    Val& v = in(i);
    if (!v.has_data)
      node_fail("its " + what + " (input " + std::to_string(i) + ", '" + cur_->input(i) + "') is computed from data at run time; rsim needs it constant",
                {Note{{}, "shapes that depend on tensor values cannot be inferred; fix the input shapes with `inputs:`"}});
    std::vector<long long> r;
    for (double d : v.data) r.push_back(d >= 9.2e18 ? INT64_MAX : d <= -9.2e18 ? INT64_MIN : static_cast<long long>(d));
    return r;
  }
  std::vector<double> const_floats(int i, const std::string& what) {
    Val& v = in(i);
    if (!v.has_data) node_fail("its " + what + " (input " + std::to_string(i) + ") is computed at run time; rsim needs it constant");
    return v.data;
  }
  // An integer list given as an attribute (older opsets) or as a constant input (newer ones).
  std::optional<std::vector<long long>> ints_arg(const std::string& name, int input) {
    if (auto a = attr_ints(name)) return a;
    if (has_input(input)) return const_ints(input, name);
    return std::nullopt;
  }

  // ---------------------------------------------------------------- outputs

  void set_out(int i, Val v) {
    if (i < cur_->output_size() && !cur_->output(i).empty()) vals_[cur_->output(i)] = std::move(v);
  }
  Val const_val(Shape s, std::vector<double> data, bool is_int) {
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

  // The activation reference of an input, materialising a constant as a `constant` layer once.
  std::string ref(int i) {
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
    if (v.param && counted_.insert(v.const_name).second) layer.entries.push_back(CEntry{"params", {}, bool_node(true)});
    layers_.push_back(std::move(layer));
    v.ref = name;
    return v.ref;
  }

  // The rsim dtype of an ONNX float element type ("" for the others: integer tensors, bool).
  static std::string float_dtype(int elem) {
    switch (elem) {
      case onnx::TensorProto::FLOAT: return "fp32";
      case onnx::TensorProto::FLOAT16: return "fp16";
      case onnx::TensorProto::BFLOAT16: return "bf16";
      case onnx::TensorProto::DOUBLE: return "fp64";
      default: return "";
    }
  }
  // The element type of the current node's layer: a Cast's target, else its first floating-point
  // input's (an activation's or a weight's); fp32 when it has none
  int node_elem() {
    if (cur_->op_type() == "Cast") return static_cast<int>(attr_i("to", onnx::TensorProto::FLOAT));
    if (cur_->op_type() == "CastLike" && has_input(1)) return in(1).elem;
    for (int i = 0; i < cur_->input_size(); ++i)
      if (has_input(i))
        if (auto it = vals_.find(cur_->input(i)); it != vals_.end() && is_float_type(it->second.elem)) return it->second.elem;
    return onnx::TensorProto::FLOAT;
  }

  // Adds one rsim layer for the current node and records its outputs. Returns the output shapes.
  std::vector<Shape> emit(LayerSpec spec, int n_outputs = -1) {
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
      if (counted_.insert(v.const_name).second) any_new = true;
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
      ref_shapes_[v.ref] = v.shape;
      set_out(i, std::move(v));
    }
    ref_shapes_[lname] = out.empty() ? Shape{} : out[0];
    return out;
  }

  std::unordered_map<std::string, Shape> ref_shapes_;
  Shape shape_of_ref(const std::string& r) {
    auto it = ref_shapes_.find(r);
    if (it != ref_shapes_.end()) return it->second;
    for (const auto& [n, s] : net_inputs_)
      if (n == r) return s;
    for (const auto& [name, v] : vals_)
      if (v.ref == r) return v.shape;
    node_fail("internal: unknown tensor '" + r + "'");
  }

  // ---------------------------------------------------------------- nodes

  void node(const onnx::NodeProto& n, int index) {
    (void)index;
    cur_ = &n;
    if (n.name().empty()) cur_name_ = n.op_type() + "_" + std::to_string(++unnamed_[n.op_type()]);
    else cur_name_ = n.name();
    ++res_.op_histogram[n.op_type()];
    const std::string& t = n.op_type();
    auto mapped = opt_.op_map.find(t);
    if (mapped != opt_.op_map.end()) {
      if (mapped->second == "ignore") {
        ++res_.ignored[t];
        if (!has_input(0)) node_fail("is ignored (onnx_ops), but has no input to pass through");
        Val v = in(0);
        for (int i = 0; i < n.output_size(); ++i) set_out(i, v);
        return;
      }
      LayerSpec s;
      s.op = mapped->second;
      if (const OpDef* op = ops_.find(s.op)) {  // every attribute of the node must be one the operator takes
        std::vector<std::string> takes;
        for (const auto& a : op->attrs) takes.push_back(a.name);
        std::string all;
        for (const auto& a : n.attribute()) all += (all.empty() ? "" : ", ") + a.name();
        for (const auto& a : n.attribute())
          if (std::find(takes.begin(), takes.end(), a.name()) == takes.end()) {
            std::string hint = did_you_mean(a.name(), takes);
            node_fail("has the attribute '" + a.name() + "', which operator '" + s.op + "' does not take",
                      {Note{{}, hint.empty() ? "declare it in the operator's attrs (the node's attributes: " + all + ")" : hint}});
          }
      }
      for (int i = 0; i < n.input_size(); ++i)
        if (has_input(i)) s.inputs.push_back(ref(i));
      for (const auto& a : n.attribute()) {
        switch (a.type()) {
          case onnx::AttributeProto::INT: s.set(a.name(), int_node(a.i())); break;
          case onnx::AttributeProto::FLOAT: s.set(a.name(), scalar(format_number(a.f()))); break;
          case onnx::AttributeProto::STRING: s.set(a.name(), scalar(a.s())); break;
          case onnx::AttributeProto::INTS: s.set(a.name(), ints_node(std::vector<long long>(a.ints().begin(), a.ints().end()))); break;
          case onnx::AttributeProto::FLOATS: {
            CNode l;
            l.kind = CNode::Kind::Seq;
            for (float f : a.floats()) l.items.push_back(scalar(format_number(f)));
            s.set(a.name(), l);
            break;
          }
          default: break;  // tensors and graphs are not passed to scripted operators
        }
      }
      emit(s);
      return;
    }
    if (try_fold()) {
      ++res_.folded[t];
      return;
    }
    if (folded_only().count(t)) node_fail("its inputs are computed from data at run time, so its result cannot be folded to a constant");
    map_node();
  }

  // ---------------------------------------------------------------- folding

  bool all_const_data() {
    for (int i = 0; i < cur_->input_size(); ++i) {
      if (!has_input(i)) continue;
      Val& v = in(i);
      if (!v.is_const || !v.has_data) return false;
    }
    return true;
  }

  static bool int_elem(const Val& v) { return is_int_type(v.elem); }

  bool fold_elementwise(const std::function<double(const std::vector<double>&)>& f, bool out_int, int arity) {
    // f reads `arity` arguments: a node with fewer inputs (fuzz_onnx: a one-input Add) is an error
    // (a Max or Min of no inputs, too); in(i) reports an empty input
    if (cur_->input_size() < std::max(arity, 1))
      node_fail("has " + std::to_string(cur_->input_size()) + " input" + (cur_->input_size() == 1 ? "" : "s") + "; " + cur_->op_type() + " takes " +
                std::to_string(std::max(arity, 1)));
    std::vector<Val*> ins;
    for (int i = 0; i < arity; ++i) ins.push_back(&in(i));
    Shape out = ins[0]->shape;
    for (size_t i = 1; i < ins.size(); ++i) {
      const Shape& b = ins[i]->shape;
      size_t r = std::max(out.size(), b.size());
      Shape o(r);
      for (size_t k = 0; k < r; ++k) {
        long long da = k < r - out.size() ? 1 : out[k - (r - out.size())];
        long long db = k < r - b.size() ? 1 : b[k - (r - b.size())];
        if (da != db && da != 1 && db != 1) node_fail("cannot broadcast " + shape_text(out) + " with " + shape_text(b));
        o[k] = da == 1 ? db : da;
      }
      out = o;
    }
    if (count(out) > kMaxFold) return false;
    size_t n = static_cast<size_t>(count(out));
    std::vector<double> data(n);
    std::vector<double> args(ins.size());
    for (size_t o = 0; o < n; ++o) {
      for (size_t i = 0; i < ins.size(); ++i) args[i] = ins[i]->data[bcast_index(o, out, ins[i]->shape)];
      data[o] = f(args);
    }
    set_out(0, const_val(out, std::move(data), out_int));
    return true;
  }

  Val reshaped(const Val& v, Shape s) {
    Val o = const_val(std::move(s), v.data, int_elem(v));
    o.elem = v.elem;
    if (!v.has_data) o.has_data = false, o.data.clear();
    return o;
  }

  bool try_fold() {
    const std::string& t = cur_->op_type();
    if (t == "Constant") {
      Val v;
      if (const auto* a = attr("value")) v = tensor_val(a->t());
      else if (const auto* f = attr("value_float")) v = const_val({}, {static_cast<double>(f->f())}, false);
      else if (const auto* fs = attr("value_floats")) v = const_val({static_cast<long long>(fs->floats_size())}, std::vector<double>(fs->floats().begin(), fs->floats().end()), false);
      else if (const auto* i = attr("value_int")) v = const_val({}, {static_cast<double>(i->i())}, true);
      else if (const auto* is = attr("value_ints")) {
        std::vector<double> d;
        for (auto x : is->ints()) d.push_back(static_cast<double>(x));
        v = const_val({static_cast<long long>(is->ints_size())}, d, true);
      } else node_fail("has no value rsim can read (sparse or string constants are not supported)");
      v.const_name = cur_name_;
      v.param = false;
      set_out(0, v);
      return true;
    }
    if (t == "Shape" || t == "Size") {
      Val& x = in(0);
      if (t == "Size") {
        set_out(0, const_val({}, {count(x.shape)}, true));
        return true;
      }
      long long r = static_cast<long long>(x.shape.size());
      long long b = attr_i("start", 0), e = attr_i("end", r);
      if (b < 0) b += r;
      if (e < 0) e += r;
      b = std::clamp(b, 0LL, r);
      e = std::clamp(e, 0LL, r);
      std::vector<double> d;
      for (long long i = b; i < e; ++i) d.push_back(static_cast<double>(x.shape[static_cast<size_t>(i)]));
      set_out(0, const_val({static_cast<long long>(d.size())}, d, true));
      return true;
    }
    if (t == "ConstantOfShape") {
      auto s = const_ints(0, "shape");
      Shape sh(s.begin(), s.end());
      for (auto d : sh)
        if (d < 0) node_fail("shape has a negative dimension");
      double value = 0;
      bool is_int = false;
      if (const auto* a = attr("value")) {
        Val tv = tensor_val(a->t());
        if (tv.has_data && !tv.data.empty()) value = tv.data[0];
        is_int = int_elem(tv);
      }
      Val v = const_val(sh, count(sh) <= kMaxFold ? std::vector<double>(static_cast<size_t>(count(sh)), value) : std::vector<double>{}, is_int);
      set_out(0, v);
      return true;
    }
    if (t == "Range") {
      if (!all_const_data()) return false;
      double s = const_floats(0, "start")[0], l = const_floats(1, "limit")[0], d = const_floats(2, "delta")[0];
      if (d == 0) node_fail("delta is 0");
      double n = std::max(std::ceil((l - s) / d), 0.0);
      if (n > 1e9) node_fail("would have " + format_number(n) + " elements");
      std::vector<double> data;
      if (n <= kMaxFold)
        for (double i = 0; i < n; ++i) data.push_back(s + i * d);
      set_out(0, const_val({static_cast<long long>(n)}, data, int_elem(in(0))));
      return true;
    }
    // everything else folds only when every input is a known constant
    if (cur_->input_size() == 0 || !all_const_data()) {
      // shape-only constants: results whose values nobody needs (masks) stay constant without data
      if (cur_->input_size() > 0 && (t == "Trilu" || t == "Cast" || t == "Identity" || t == "Expand" || t == "Where")) {
        bool consts = true;
        for (int i = 0; i < cur_->input_size(); ++i)
          if (has_input(i) && !in(i).is_const) consts = false;
        if (consts && (t == "Trilu" || t == "Cast" || t == "Identity")) {
          Val v = in(0);
          v.ref.clear();
          v.has_data = false;
          v.data.clear();
          v.param = false;
          v.const_name = cur_name_;
          set_out(0, v);
          return true;
        }
      }
      return false;
    }
    auto I = [](double x) { return std::trunc(x); };
    bool iout = int_elem(in(0));
    if (t == "Identity" || t == "Dropout" || t == "Trilu") {
      Val v = in(0);
      v.ref.clear();
      v.const_name = cur_name_;
      if (t == "Trilu") v.has_data = false, v.data.clear();
      set_out(0, v);
      return true;
    }
    if (t == "Cast" || t == "CastLike") {
      int to = t == "Cast" ? static_cast<int>(attr_i("to", 1)) : in(1).elem;
      Val v = in(0);
      v.ref.clear();
      v.elem = to;
      v.param = false;
      v.const_name = cur_name_;
      for (auto& x : v.data) {
        if (to == onnx::TensorProto::BOOL) x = x != 0;
        else if (is_int_type(to)) x = I(x);
      }
      set_out(0, v);
      return true;
    }
    if (t == "Add") return fold_elementwise([](const auto& a) { return a[0] + a[1]; }, iout, 2);
    if (t == "Sub") return fold_elementwise([](const auto& a) { return a[0] - a[1]; }, iout, 2);
    if (t == "Mul") return fold_elementwise([](const auto& a) { return a[0] * a[1]; }, iout, 2);
    if (t == "Div")
      return fold_elementwise(
          [&](const auto& a) {
            if (iout && a[1] == 0) node_fail("divides by zero");
            return iout ? std::trunc(a[0] / a[1]) : a[0] / a[1];
          },
          iout, 2);
    if (t == "Mod")
      return fold_elementwise(
          [&](const auto& a) {
            if (a[1] == 0) node_fail("takes a remainder by zero");
            double r = std::fmod(a[0], a[1]);
            if (attr_i("fmod", 0) == 0 && r != 0 && ((r < 0) != (a[1] < 0))) r += a[1];
            return r;
          },
          iout, 2);
    if (t == "Pow") return fold_elementwise([](const auto& a) { return std::pow(a[0], a[1]); }, iout, 2);
    if (t == "Equal") return fold_elementwise([](const auto& a) { return double(a[0] == a[1]); }, true, 2);
    if (t == "Less") return fold_elementwise([](const auto& a) { return double(a[0] < a[1]); }, true, 2);
    if (t == "Greater") return fold_elementwise([](const auto& a) { return double(a[0] > a[1]); }, true, 2);
    if (t == "LessOrEqual") return fold_elementwise([](const auto& a) { return double(a[0] <= a[1]); }, true, 2);
    if (t == "GreaterOrEqual") return fold_elementwise([](const auto& a) { return double(a[0] >= a[1]); }, true, 2);
    if (t == "And") return fold_elementwise([](const auto& a) { return double(a[0] != 0 && a[1] != 0); }, true, 2);
    if (t == "Or") return fold_elementwise([](const auto& a) { return double(a[0] != 0 || a[1] != 0); }, true, 2);
    if (t == "Not") return fold_elementwise([](const auto& a) { return double(a[0] == 0); }, true, 1);
    if (t == "Neg") return fold_elementwise([](const auto& a) { return -a[0]; }, iout, 1);
    if (t == "Abs") return fold_elementwise([](const auto& a) { return std::fabs(a[0]); }, iout, 1);
    if (t == "Floor") return fold_elementwise([](const auto& a) { return std::floor(a[0]); }, iout, 1);
    if (t == "Ceil") return fold_elementwise([](const auto& a) { return std::ceil(a[0]); }, iout, 1);
    if (t == "Sqrt") return fold_elementwise([](const auto& a) { return std::sqrt(a[0]); }, iout, 1);
    if (t == "Sign") return fold_elementwise([](const auto& a) { return double((a[0] > 0) - (a[0] < 0)); }, iout, 1);
    if (t == "Reciprocal") return fold_elementwise([](const auto& a) { return 1 / a[0]; }, iout, 1);
    if (t == "Where") return fold_elementwise([](const auto& a) { return a[0] != 0 ? a[1] : a[2]; }, int_elem(in(1)), 3);
    if (t == "Max" || t == "Min") {
      bool mx = t == "Max";
      return fold_elementwise(
          [mx](const auto& a) {
            double r = a[0];
            for (double x : a) r = mx ? std::max(r, x) : std::min(r, x);
            return r;
          },
          iout, cur_->input_size());
    }
    if (t == "Unsqueeze" || t == "Squeeze" || t == "Reshape" || t == "Flatten") {
      Shape s = view_shape(in(0).shape);
      set_out(0, reshaped(in(0), s));
      return true;
    }
    if (t == "Concat") {
      Val& a = in(0);
      size_t r = a.shape.size();
      long long ax = attr_i("axis", 0);
      if (ax < 0) ax += static_cast<long long>(r);
      if (ax < 0 || ax >= static_cast<long long>(r)) node_fail("axis out of range");
      size_t axis = static_cast<size_t>(ax);
      Shape out = a.shape;
      out[axis] = 0;
      for (int i = 0; i < cur_->input_size(); ++i) {
        Val& v = in(i);
        if (v.shape.size() != r) node_fail("inputs differ in rank");
        out[axis] += v.shape[axis];
      }
      if (count(out) > kMaxFold) return false;
      double outer = 1;
      for (size_t k = 0; k < axis; ++k) outer *= static_cast<double>(out[k]);
      std::vector<double> data;
      for (double o = 0; o < outer; ++o)
        for (int i = 0; i < cur_->input_size(); ++i) {
          Val& v = in(i);
          double inner = 1;
          for (size_t k = axis; k < r; ++k) inner *= static_cast<double>(v.shape[k]);
          size_t base = static_cast<size_t>(o * inner);
          for (size_t k = 0; k < static_cast<size_t>(inner); ++k) data.push_back(v.data[base + k]);
        }
      set_out(0, const_val(out, data, iout));
      return true;
    }
    if (t == "Gather") {
      Val& d = in(0);
      Val& idx = in(1);
      if (d.shape.empty()) node_fail("gathers from a scalar");
      long long ax = attr_i("axis", 0);
      if (ax < 0) ax += static_cast<long long>(d.shape.size());
      if (ax < 0 || ax >= static_cast<long long>(d.shape.size())) node_fail("axis out of range");
      size_t axis = static_cast<size_t>(ax);
      Shape out(d.shape.begin(), d.shape.begin() + static_cast<long>(axis));
      out.insert(out.end(), idx.shape.begin(), idx.shape.end());
      out.insert(out.end(), d.shape.begin() + static_cast<long>(axis) + 1, d.shape.end());
      if (count(out) > kMaxFold) return false;
      double outer = 1, inner = 1;
      for (size_t k = 0; k < axis; ++k) outer *= static_cast<double>(d.shape[k]);
      for (size_t k = axis + 1; k < d.shape.size(); ++k) inner *= static_cast<double>(d.shape[k]);
      long long n = d.shape[axis];
      std::vector<double> data;
      for (double o = 0; o < outer; ++o)
        for (double id : idx.data) {
          // range-checked as a double first: a huge or NaN index must not reach the integer cast
          if (!(id >= -static_cast<double>(n) && id < static_cast<double>(n)))
            node_fail("index " + format_number(id) + " is out of range for dimension " + std::to_string(n));
          long long j = static_cast<long long>(id);
          if (j < 0) j += n;
          for (double k = 0; k < inner; ++k) data.push_back(d.data[static_cast<size_t>((o * static_cast<double>(n) + static_cast<double>(j)) * inner + k)]);
        }
      set_out(0, const_val(out, data, int_elem(d)));
      return true;
    }
    if (t == "Slice") {
      Val& x = in(0);
      auto sl = slice_params(x.shape);
      Shape out = x.shape;
      for (const auto& s : sl) out[s.axis] = s.len;
      if (count(out) > kMaxFold) return false;
      size_t n = static_cast<size_t>(count(out));
      std::vector<double> data(n);
      auto st_in = strides_of(x.shape);
      for (size_t o = 0; o < n; ++o) {
        size_t rem = o;
        double src = 0;
        std::vector<long long> coord(out.size());
        for (size_t k = out.size(); k-- > 0;) {
          coord[k] = static_cast<long long>(rem % static_cast<size_t>(out[k]));
          rem /= static_cast<size_t>(out[k]);
        }
        for (size_t k = 0; k < out.size(); ++k) {
          long long c = coord[k];
          for (const auto& s : sl)
            if (s.axis == k) c = s.start + c * s.step;
          src += static_cast<double>(c) * st_in[k];
        }
        data[o] = x.data[static_cast<size_t>(src)];
      }
      set_out(0, const_val(out, data, iout));
      return true;
    }
    if (t == "Transpose") {
      Val& x = in(0);
      auto perm = transpose_perm(x.shape.size());
      Shape out;
      for (auto p : perm) out.push_back(x.shape[static_cast<size_t>(p)]);
      size_t n = static_cast<size_t>(count(out));
      auto st_in = strides_of(x.shape);
      std::vector<double> data(n);
      for (size_t o = 0; o < n; ++o) {
        size_t rem = o;
        double src = 0;
        for (size_t k = out.size(); k-- > 0;) {
          src += static_cast<double>(rem % static_cast<size_t>(out[k])) * st_in[static_cast<size_t>(perm[k])];
          rem /= static_cast<size_t>(out[k]);
        }
        data[o] = x.data[static_cast<size_t>(src)];
      }
      set_out(0, const_val(out, data, iout));
      return true;
    }
    if (t == "Expand") {
      auto s = const_ints(1, "shape");
      Shape target(s.begin(), s.end());
      Val& x = in(0);
      Shape out = bcast(x.shape, target);
      if (count(out) > kMaxFold) {
        Val v = const_val(out, {}, iout);
        set_out(0, v);
        return true;
      }
      size_t n = static_cast<size_t>(count(out));
      std::vector<double> data(n);
      for (size_t o = 0; o < n; ++o) data[o] = x.data[bcast_index(o, out, x.shape)];
      set_out(0, const_val(out, data, iout));
      return true;
    }
    if (t == "ReduceProd" || t == "ReduceSum" || t == "ReduceMax" || t == "ReduceMin") {
      Val& x = in(0);
      std::optional<std::vector<long long>> axes = attr_ints("axes");
      if (!axes && has_input(1)) axes = const_ints(1, "axes");
      bool keep = attr_i("keepdims", 1) != 0;
      size_t r = x.shape.size();
      std::vector<bool> red(r, !axes || axes->empty());
      if (axes)
        for (auto a : *axes) red[static_cast<size_t>(a < 0 ? a + static_cast<long long>(r) : a)] = true;
      if (axes && axes->empty() && attr_i("noop_with_empty_axes", 0)) red.assign(r, false);
      Shape out, kept;
      for (size_t k = 0; k < r; ++k) {
        if (!red[k]) out.push_back(x.shape[k]);
        else if (keep) out.push_back(1);
        kept.push_back(red[k] ? 1 : x.shape[k]);
      }
      size_t n = static_cast<size_t>(count(kept));
      double init = t == "ReduceProd" ? 1 : t == "ReduceSum" ? 0 : t == "ReduceMax" ? -INFINITY : INFINITY;
      std::vector<double> data(n, init);
      auto st_k = strides_of(kept);
      for (size_t i = 0; i < x.data.size(); ++i) {
        size_t rem = i;
        double dst = 0;
        for (size_t k = r; k-- > 0;) {
          size_t c = rem % static_cast<size_t>(x.shape[k]);
          rem /= static_cast<size_t>(x.shape[k]);
          if (!red[k]) dst += static_cast<double>(c) * st_k[k];
        }
        double& acc = data[static_cast<size_t>(dst)];
        double v = x.data[i];
        acc = t == "ReduceProd" ? acc * v : t == "ReduceSum" ? acc + v : t == "ReduceMax" ? std::max(acc, v) : std::min(acc, v);
      }
      set_out(0, const_val(out, data, iout));
      return true;
    }
    if (t == "Tile") {
      auto rp = const_ints(1, "repeats");
      Val& x = in(0);
      if (rp.size() != x.shape.size()) node_fail("needs one repeat count per axis");
      for (auto v : rp)
        if (v < 1 || v > 1000000000LL) node_fail("repeat count " + std::to_string(v) + " is out of range (1 to 1e9)");
      Shape out = x.shape;
      for (size_t k = 0; k < out.size(); ++k) out[k] *= rp[k];
      if (count(out) > kMaxFold) return false;
      size_t n = static_cast<size_t>(count(out));
      auto st_in = strides_of(x.shape);
      std::vector<double> data(n);
      for (size_t o = 0; o < n; ++o) {
        size_t rem = o;
        double src = 0;
        for (size_t k = out.size(); k-- > 0;) {
          src += static_cast<double>((rem % static_cast<size_t>(out[k])) % static_cast<size_t>(x.shape[k])) * st_in[k];
          rem /= static_cast<size_t>(out[k]);
        }
        data[o] = x.data[static_cast<size_t>(src)];
      }
      set_out(0, const_val(out, data, iout));
      return true;
    }
    return false;
  }

  Shape bcast(const Shape& a, const Shape& b) {
    size_t r = std::max(a.size(), b.size());
    Shape o(r);
    for (size_t k = 0; k < r; ++k) {
      long long da = k < r - a.size() ? 1 : a[k - (r - a.size())];
      long long db = k < r - b.size() ? 1 : b[k - (r - b.size())];
      if (da != db && da != 1 && db != 1) node_fail("cannot broadcast " + shape_text(a) + " with " + shape_text(b));
      o[k] = da == 1 ? db : da;
    }
    return o;
  }

  std::vector<long long> transpose_perm(size_t r) {
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
  Shape view_shape(const Shape& x) {
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

  struct SliceAxis {
    size_t axis;
    long long start, step, len;
  };
  std::vector<SliceAxis> slice_params(const Shape& x) {
    std::vector<long long> starts, ends, axes, steps;
    if (attr_ints("starts")) {  // opset < 10
      starts = *attr_ints("starts");
      ends = *attr_ints("ends");
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

  // ---------------------------------------------------------------- layers

  std::vector<long long> spatial_pads(const Shape& x, const std::vector<long long>& k, const std::vector<long long>& s,
                                      const std::vector<long long>& d, bool transpose = false) {
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

  static bool symmetric(const std::vector<long long>& p) {
    size_t n = p.size() / 2;
    for (size_t i = 0; i < n; ++i)
      if (p[i] != p[i + n]) return false;
    return true;
  }
  static std::vector<long long> first_half(const std::vector<long long>& p) { return std::vector<long long>(p.begin(), p.begin() + static_cast<long>(p.size() / 2)); }
  static bool all_one(const std::vector<long long>& v) {
    return std::all_of(v.begin(), v.end(), [](long long x) { return x == 1; });
  }

  void map_conv(bool transpose) {
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

  void map_pool(const std::string& kind) {
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
  void legacy_broadcast(const std::string& op) {
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

  void simple(const std::string& op, int n_inputs) {
    LayerSpec l;
    l.op = op;
    for (int i = 0; i < n_inputs; ++i) l.inputs.push_back(ref(i));
    emit(l);
  }
  void all_inputs(const std::string& op) {
    LayerSpec l;
    l.op = op;
    for (int i = 0; i < cur_->input_size(); ++i)
      if (has_input(i)) l.inputs.push_back(ref(i));
    emit(l);
  }
  void reshape_to(const Shape& out, const std::string& op = "reshape") {
    LayerSpec l;
    l.op = op;
    l.inputs = {ref(0)};
    if (out.empty()) node_fail("the result is a scalar; rsim's reshape needs at least one dimension");
    l.set("shape", ints_node(std::vector<long long>(out.begin(), out.end())));
    emit(l);
  }
  long long axis_attr(const std::string& name, long long def, size_t rank) {
    long long a = attr_i(name, def);
    long long r = static_cast<long long>(rank);
    if (a < -r || a >= r) node_fail(name + " " + std::to_string(a) + " is out of range for rank " + std::to_string(rank));
    return a;
  }

  void map_node() {
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

  void map_resize() {
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
};

// ONNX 1.12's opset 1-6 → 7 adapters index node inputs and read attributes without checking them
}  // namespace

std::vector<OnnxUnsupported> onnx_unsupported_ops(const OnnxModel& m, const std::map<std::string, std::string>& op_map) {
  std::vector<OnnxUnsupported> bad;
  for (const auto& n : m.proto.graph().node()) {
    bool ok = (n.domain().empty() || n.domain() == "ai.onnx") && supported(n.op_type());
    if (ok || op_map.count(n.op_type())) continue;
    auto it = std::find_if(bad.begin(), bad.end(), [&](const auto& b) { return b.op_type == n.op_type(); });
    if (it == bad.end()) bad.push_back(OnnxUnsupported{n.op_type(), 1, n.name()});
    else ++it->count;
  }
  return bad;
}

const std::vector<std::pair<std::string, std::string>>& onnx_supported_ops() { return mapping_table(); }

OnnxImport import_onnx(const OnnxModel& m, const OnnxImportOptions& opt) { return Importer(m, opt).run(); }

}  // namespace rsim
