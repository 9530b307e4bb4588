// The ONNX importer's inside, shared by the files of importers/onnx/ (nothing outside importers/
// includes it): the parsed model, what the importer knows about each tensor (Val), the layer a
// node becomes (LayerSpec), the converter registry and the Importer that walks the graph.
//
//   load.cpp             parse, version conversion, tensors, ONNX's own shape inference
//   walker.cpp           the walk: initializers, inputs, nodes in order, dispatch by op type and opset
//   propagate.cpp        the shape and dtype propagation core: node inputs and attributes, constants, emit
//   fold.cpp             constant folding of shape computations
//   ops_*.cpp            one file per operator family, each a list of converters (OpConverter):
//                        conv and pooling, matmul/gemm/einsum, recurrent, normalization,
//                        elementwise, tensor and shape ops, reductions, quantization
//   yaml_export.cpp      `rsim import` (a zoo file with parameters) and `--summary`
//   network_importer.cpp the `onnx:` network source the engine uses
//   build_model.cpp      small ONNX models built in code (tests, benchmarks, fuzz seeds)
//
// Adding an operator: one OpConverter line and its function in the family file, and a test (when
// shape computations use the op, folding it is fold.cpp's).
#pragma once
#include <onnx/onnx_pb.h>

#include <functional>
#include <limits>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <stdexcept>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "importers/onnx_import.hpp"

namespace rsim {

class OnnxModel {
 public:
  std::string path;
  onnx::ModelProto proto;
  long long opset = 0;
  long long opset_before = 0;  // the file's opset when the version converter brought it to 7 (else 0)
  std::shared_ptr<const SourceFile> file;  // for messages: "PATH: error: ..."
};

namespace onnx_detail {

constexpr long long kMinOpset = 7, kMaxOpset = 17;
inline constexpr const char* kLegacyAxis = "rsim.broadcast_axis";  // opset < 7 binary operators' broadcast axis (see parse_onnx)
constexpr double kMaxFold = 65536;     // integer tensors up to this many elements are read and folded
constexpr double kMaxFloatRead = 64;   // float tensors are read only when this small (scales, scalars)

inline SourceLoc file_loc(const std::shared_ptr<const SourceFile>& f) { return SourceLoc{f, 0, 0}; }

[[noreturn]] inline void fail_file(const std::shared_ptr<const SourceFile>& f, const std::string& msg, std::vector<Note> notes = {}) {
  throw ConfigError(file_loc(f), msg, std::move(notes));
}

inline bool is_float_type(int t) {
  return t == onnx::TensorProto::FLOAT || t == onnx::TensorProto::DOUBLE || t == onnx::TensorProto::FLOAT16 ||
         t == onnx::TensorProto::BFLOAT16;
}
inline bool is_int_type(int t) {
  return t == onnx::TensorProto::INT64 || t == onnx::TensorProto::INT32 || t == onnx::TensorProto::INT16 || t == onnx::TensorProto::INT8 ||
         t == onnx::TensorProto::UINT8 || t == onnx::TensorProto::UINT16 || t == onnx::TensorProto::UINT32 ||
         t == onnx::TensorProto::UINT64 || t == onnx::TensorProto::BOOL;
}

// What rsim knows about one ONNX tensor while importing.
struct Val {
  bool known = false;  // shape known
  Shape shape;
  int elem = onnx::TensorProto::FLOAT;
  bool is_const = false;  // value fixed at import time (an initializer, a Constant, a folded result)
  bool has_data = false;  // ... and its elements are known
  std::vector<double> data;
  std::string ref;         // the layer (or network input) holding it as an activation
  bool param = false;      // a float initializer: a learnable tensor when materialised
  std::string const_name;  // name for a materialised constant
  // int8 storage behind a QuantizeLinear / DequantizeLinear (a QDQ model): `elem` is the stored
  // type (int8, uint8, int32 biases) and a layer reading it runs in int8 (see node_elem)
  bool quantized = false;
};

inline double count(const Shape& s) { return elements(s); }

inline std::string shape_text(const Shape& s) { return s.empty() ? "scalar" : shape_str(s); }

// Shape, element type and (when small enough, not external and integer or a tiny float) the data. (load.cpp)
Val tensor_val(const onnx::TensorProto& t);

inline CNode scalar(const std::string& s) { return CNode::make_scalar(s); }
inline CNode int_node(long long v) { return scalar(std::to_string(v)); }
inline CNode ints_node(const std::vector<long long>& v) {
  CNode n;
  n.kind = CNode::Kind::Seq;
  for (auto x : v) n.items.push_back(int_node(x));
  return n;
}
inline CNode bool_node(bool b) { return scalar(b ? "true" : "false"); }

class ImportError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

struct LayerSpec {
  std::string op;
  std::vector<CEntry> attrs;
  std::vector<std::string> inputs;  // refs
  void set(const std::string& k, CNode v) { attrs.push_back(CEntry{k, {}, std::move(v)}); }
};

class Importer;

// One ONNX op type (default domain) the importer converts, at the model opsets since..until (an op
// whose meaning changed has one entry per range): what the op becomes (the supported-ops table:
// the README's, `rsim import --summary`), the function that turns the current node into layers
// (nullptr: the op is only ever folded into a constant), and what a converter that several op
// types share needs to tell them apart (the rsim operator of a unary or binary op, a pool's mode).
struct OpConverter {
  std::string op_type;
  std::string becomes;
  void (*convert)(Importer&, const OpConverter&) = nullptr;
  std::string op = {};
  long long since = 0, until = std::numeric_limits<long long>::max();
};

// Each family file's converters, in the order of the supported-ops table.
const std::vector<OpConverter>& conv_converters();         // ops_conv.cpp
const std::vector<OpConverter>& matmul_converters();       // ops_matmul.cpp
const std::vector<OpConverter>& recurrent_converters();    // ops_recurrent.cpp
const std::vector<OpConverter>& quant_converters();        // ops_quant.cpp
const std::vector<OpConverter>& norm_converters();         // ops_norm.cpp
const std::vector<OpConverter>& elementwise_converters();  // ops_elementwise.cpp
const std::vector<OpConverter>& pool_converters();         // ops_conv.cpp
const std::vector<OpConverter>& tensor_converters();       // ops_tensor.cpp
const std::vector<OpConverter>& reduce_converters();       // ops_reduce.cpp
const std::vector<OpConverter>& folded_converters();       // fold.cpp
const std::vector<OpConverter>& identity_converters();     // ops_elementwise.cpp
const std::vector<OpConverter>& control_converters();      // ops_control.cpp

// Converters other families reuse: a convolution whose weight and bias are inputs w_index and
// b_index (-1: none; ops_conv.cpp), a matrix product of inputs a_index × b_index (ops_matmul.cpp)
void map_conv(Importer& im, bool transpose, int w_index, int b_index);
void map_matmul(Importer& im, int a_index, int b_index);

// A chain of nodes recomposed into one layer (recompose.cpp): the rsim operator, the nodes (the
// first names the layer), the tensor it reads and the one it produces, the initializers it holds
// as weights (γ and β, a bias)
struct Chain {
  std::string kind;
  std::vector<int> nodes;
  std::string input, output;
  std::vector<std::string> weights;
};
std::vector<Chain> find_chains(const onnx::GraphProto& g);

// (walker.cpp) Every family's, in that order; the converter of an op type at an opset (nullptr:
// none); op type → the rsim operator it becomes, derived from the registry; whether the importer
// converts an op type at some opset.
const std::vector<OpConverter>& converters();
const OpConverter* find_converter(const std::string& op_type, long long opset);
const std::vector<std::pair<std::string, std::string>>& mapping_table();
bool supported(const std::string& op);
// The op types of a graph, and of its nodes' subgraphs (an If's branches), that neither the
// importer nor op_map handles, with counts and first nodes.
void collect_unsupported(const onnx::GraphProto& g, const std::map<std::string, std::string>& op_map, std::vector<OnnxUnsupported>& bad);

// Imports one model: walks the graph node by node (walker.cpp), propagating shapes and dtypes
// (propagate.cpp) and folding shape computations (fold.cpp); the converters (ops_*.cpp) read the
// current node through the public members and add its layers with emit().
class Importer {
 public:
  Importer(const OnnxModel& m, const OnnxImportOptions& opt) : m_(m), opt_(opt), ops_(opt.ops ? *opt.ops : builtin_ops()) {}

  OnnxImport run();

  // ---------------------------------------------------------------- the current node

  const OnnxModel& model() const { return m_; }
  const onnx::NodeProto& cur() const { return *cur_; }
  std::string& node_name() { return cur_name_; }  // the layer name emit() gives (unique()d)
  Val& val(const std::string& tensor) { return vals_[tensor]; }  // (an unknown name gets an empty Val)

  [[noreturn]] void fail(const std::string& msg, std::vector<Note> notes = {}) const { fail_file(m_.file, msg, std::move(notes)); }

  [[noreturn]] void node_fail(const std::string& msg, std::vector<Note> notes = {}) const {
    fail("node '" + cur_name_ + "' (" + cur_->op_type() + "): " + msg, std::move(notes));
  }

  // ---------------------------------------------------------------- attribute access

  const onnx::AttributeProto* attr(const std::string& n) const;
  long long attr_i(const std::string& n, long long def) const;
  double attr_f(const std::string& n, double def) const;
  std::string attr_s(const std::string& n, const std::string& def) const;
  std::optional<std::vector<long long>> attr_ints(const std::string& n) const;
  std::optional<std::vector<double>> attr_floats(const std::string& n) const;

  bool has_input(int i) const { return i < cur_->input_size() && !cur_->input(i).empty(); }
  // a size the options bind (dims:), e.g. a NonZero node's NODE.count
  std::optional<long long> bound(const std::string& name) const {
    for (const auto& [n, v] : opt_.dims)
      if (n == name) return v;
    return std::nullopt;
  }
  Val& in(int i);
  // Integer values of a constant input (shape targets, axes, pads...).
  std::vector<long long> const_ints(int i, const std::string& what);
  std::vector<double> const_floats(int i, const std::string& what);
  // An integer list given as an attribute (older opsets) or as a constant input (newer ones).
  std::optional<std::vector<long long>> ints_arg(const std::string& name, int input);

  // ---------------------------------------------------------------- outputs

  void set_out(int i, Val v) {
    if (i < cur_->output_size() && !cur_->output(i).empty()) vals_[cur_->output(i)] = std::move(v);
  }
  Val const_val(Shape s, std::vector<double> data, bool is_int);

  // The activation reference of an input, materialising a constant as a `constant` layer once.
  std::string ref(int i);

  // An If's branch walked in place of the If (ops_control.cpp): its initializers and nodes in this
  // graph's scope (a branch reads the outer graph's tensors by name), then the If's outputs bound
  // to the branch's outputs.
  void inline_graph(const onnx::GraphProto& branch);
  // A Loop's body walked once per iteration in place of the Loop (ops_control.cpp): at most
  // `trips` iterations (< 0: no limit but the condition), while the body's condition, which must
  // fold to a constant, holds; loop-carried values chained, scan outputs stacked along a new first
  // axis (a reshape per iteration, one concat). At most kMaxLoopIterations.
  void unroll_loop(const onnx::GraphProto& body, long long trips, bool cond);
  static constexpr long long kMaxLoopIterations = 1024;

  // Adds one rsim layer for the current node and records its outputs. Returns the output shapes.
  std::vector<Shape> emit(LayerSpec spec, int n_outputs = -1);

  // ---------------------------------------------------------------- layers the families share

  void simple(const std::string& op, int n_inputs);
  void all_inputs(const std::string& op);
  void reshape_to(const Shape& out, const std::string& op = "reshape");
  long long axis_attr(const std::string& name, long long def, size_t rank);

  // ---------------------------------------------------------------- ONNX shape rules (converters and folding)

  std::vector<long long> transpose_perm(size_t r);
  // Output shape of Reshape / Flatten / Squeeze / Unsqueeze (ONNX semantics).
  Shape view_shape(const Shape& x);
  struct SliceAxis {
    size_t axis;
    long long start, step, len;
  };
  std::vector<SliceAxis> slice_params(const Shape& x);

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
  // Initializers whose elements a layer already counts as parameters, with their elements: a
  // weight that feeds two nodes (tied or shared) is counted once. Their sum is weight_elements.
  std::map<std::string, double> counted_;
  std::unordered_map<std::string, Shape> ref_shapes_;
  int inline_depth_ = 0;  // Ifs inlined inside each other

  // walker.cpp
  void check_unsupported(const onnx::GraphProto& g);
  std::string sanitize(const std::string& raw);
  std::string unique(const std::string& raw);
  void read_inputs(const onnx::GraphProto& g);
  void node(const onnx::NodeProto& n, int index);

  // recompose.cpp: the chain's layer, at its first node
  void recompose(const Chain& c);

  // propagate.cpp
  static std::string float_dtype(int elem);
  int node_elem();
  Shape shape_of_ref(const std::string& r);

  // fold.cpp
  bool all_const_data();
  bool fold_elementwise(const std::function<double(const std::vector<double>&)>& f, bool out_int, int arity);
  Val reshaped(const Val& v, Shape s);
  bool try_fold();
  // try_fold's families
  bool fold_constant();
  bool fold_shape(const std::string& t);
  bool fold_constant_of_shape();
  bool fold_range();
  bool fold_shape_only(const std::string& t);
  bool fold_cast(const std::string& t);
  std::optional<bool> fold_math(const std::string& t, bool iout);
  bool fold_concat(bool iout);
  bool fold_gather();
  bool fold_slice(bool iout);
  bool fold_transpose(bool iout);
  bool fold_expand(bool iout);
  bool fold_tile(bool iout);
  bool fold_reduce(const std::string& t, bool iout);
  bool fold_scatter(const std::string& t);
  Shape bcast(const Shape& a, const Shape& b);
};

}  // namespace onnx_detail

}  // namespace rsim
