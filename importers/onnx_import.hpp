// ONNX models in: a parsed model becomes the same network node (name, inputs, layers) that a
// YAML scenario or a zoo model gives the engine, so everything a YAML network supports works on
// it. The only place in rsim that includes ONNX headers is importers/ (importers/onnx/: the graph
// walker, shape propagation and folding, one file per operator family; see onnx/importer.hpp).
//
// Shapes are propagated node by node by rsim itself (ONNX's own inference loses Reshape targets
// and Resize sizes computed at run time); shape-computing subgraphs (Shape → Gather → Concat →
// Reshape, ...) are evaluated and folded into attributes, not reported as layers. Weights are
// never read: only initializer shapes and element types (small integer tensors, the reshape
// targets and slice bounds, are read), so a model whose external data file is absent loads.
#pragma once
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "engine/model/config.hpp"
#include "engine/eval/evaluate.hpp"
#include "engine/ops/ops.hpp"

namespace rsim {

class OnnxModel;  // a parsed ModelProto (opaque outside importers/)

// Parses an ONNX model from its bytes; `path` names it in messages. Throws ConfigError
// ("PATH: error: ...") for a truncated, non-ONNX or unsupported-opset model. The fuzz entry point.
std::shared_ptr<const OnnxModel> parse_onnx(const std::string& bytes, const std::string& path);
// Reads and parses a file (a missing or unreadable file is a ConfigError naming it).
std::shared_ptr<const OnnxModel> load_onnx(const std::string& path);

// The most nodes a model's main graph may have (parse_onnx refuses more, before building anything).
constexpr int kMaxOnnxNodes = 250000;

struct OnnxImportOptions {
  std::string name;                                     // network name ("" = the graph's name or the file's stem)
  std::vector<std::pair<std::string, Shape>> inputs;    // fixed input shapes (replace the model's)
  std::vector<std::pair<std::string, long long>> dims;  // symbolic dimension bindings
  std::map<std::string, std::string> op_map;            // ONNX op type → rsim operator, or "ignore"
  std::map<std::string, std::vector<double>> input_values;  // known contents of small inputs (then constants, e.g. in tests)
  const OpRegistry* ops = nullptr;                      // default: builtin_ops()
  bool record_shapes = false;                           // fill OnnxImport::tensor_shapes (cross-checks)
  std::string dtype;                                    // network dtype ("" = the scenario's)
  bool recompose = true;                                // decomposed LayerNorm, GELU, SiLU, HardSwish, MatMul + bias as one layer each
  // rsim import only (onnx_to_model_yaml): input shapes that keep some symbols (`--input
  // x=batchx3x256x256`: a name keeps the model's symbol there, a size fixes it), and the symbols
  // to keep (`--dim batch` without a value: every other symbol must then be fixed)
  std::vector<std::pair<std::string, std::vector<std::string>>> input_dims;
  std::vector<std::string> keep;
  // `--check-dims NAME=1,8`: the imported model is checked at these sizes of its symbols (every
  // combination; a symbol not named takes its --dim default), and only at sizes the user names
  std::vector<std::pair<std::string, std::vector<long long>>> check_dims;
};

struct OnnxOutput {
  std::string name;  // the graph output's name
  Shape shape;
  std::string ref;   // the layer (or "layer:K") producing it; "" when it was folded to a constant
};

struct OnnxImport {
  CNode network;  // {name, inputs, layers[, dtype]}: what build_network reads
  std::vector<OnnxOutput> outputs;
  std::map<std::string, int> op_histogram;        // ONNX op type → nodes
  std::map<std::string, int> folded;              // ONNX op type → nodes folded into constants
  std::map<std::string, int> ignored;             // op types mapped to `ignore` → nodes
  std::map<std::string, int> recomposed;          // rsim operator → chains of nodes recomposed into one layer of it
  std::vector<std::string> symbols;               // symbolic input dimensions, in order of appearance
  long long opset = 0;
  size_t nodes = 0, initializers = 0;
  // parameters as `rsim run` counts them: the elements of the initializers the layers hold as
  // weights, each once (float, or integer weights a DequantizeLinear reads); BatchNorm statistics,
  // quantization scales and zero points, integer constants and initializers no layer reads left out
  double weight_elements = 0;
  std::map<std::string, Shape> tensor_shapes;  // with record_shapes: every node output's shape as rsim inferred it, by ONNX name
  std::map<std::string, int> tensor_elems;     // with record_shapes: every node output's ONNX element type, by name
};

// ONNX's own shape inference (onnx::shape_inference::InferShapes, with data propagation) on a copy
// of the model whose inputs are fixed as `opt` fixes them (inputs:, dims:) and whose recorded
// value_info and output shapes are cleared: every tensor whose shape it infers completely, by name.
// Never throws: a model ONNX cannot infer gives what it inferred before stopping (possibly nothing).
std::map<std::string, Shape> onnx_reference_shapes(const OnnxModel& m, const OnnxImportOptions& opt);

// One op type the importer does not support: its count and the first node's name.
struct OnnxUnsupported {
  std::string op_type;
  int count = 0;
  std::string first_node;
};
// The graph's inputs that are not initializers, in order.
std::vector<std::string> onnx_input_names(const OnnxModel& m);
// The symbolic dimensions (dim_param) of the graph's inputs, in order of appearance.
std::vector<std::string> onnx_symbols(const OnnxModel& m);
// Op types of a model that neither the importer nor `op_map` handles.
std::vector<OnnxUnsupported> onnx_unsupported_ops(const OnnxModel& m, const std::map<std::string, std::string>& op_map);
// The op types the importer maps, with the rsim operator (or "folded"/"identity") each becomes.
const std::vector<std::pair<std::string, std::string>>& onnx_supported_ops();

// Imports with concrete shapes. Throws ConfigError naming the file (and the node, the input or
// the symbol when one is at fault).
OnnxImport import_onnx(const OnnxModel& m, const OnnxImportOptions& opt);

// The model as a zoo file (`networks:` entry with `params:`): symbolic input dimensions become
// parameters with `defaults` (missing ones are required), used through `${...}` wherever a
// dimension depends on them. Throws ConfigError when a dimension cannot be written that way.
std::string onnx_to_model_yaml(const OnnxModel& m, const OnnxImportOptions& opt, const std::vector<std::pair<std::string, long long>>& defaults);

// `rsim import --summary`: op-type histogram, totals, unsupported ops.
std::string onnx_summary(const OnnxModel& m, const OnnxImportOptions& opt);

// The shape (and, for integer tensors, the values) of a serialized TensorProto, e.g. the
// recorded outputs in ONNX's test data. Throws ConfigError.
struct OnnxTensorInfo {
  std::string name;
  Shape shape;
  bool is_integer = false;
  std::vector<double> values;  // small tensors only (integers up to 65536 elements, floats up to 64)
};
OnnxTensorInfo read_onnx_tensor(const std::string& bytes, const std::string& path);

// The `onnx:` network source for the engine: parsed models and imports cached, thread-safe.
std::shared_ptr<NetworkImporter> make_onnx_importer();

}  // namespace rsim

namespace rsim {

// Building small ONNX models in code (tests, benchmarks, fuzz seeds) without ONNX headers.
struct OnnxModelSpec;
struct OnnxSpecAttr {
  std::string name;
  enum class Kind { Int, Float, String, Ints, Floats, Graph } kind = Kind::Int;
  long long i = 0;
  double f = 0;
  std::string s;
  std::vector<long long> ints;
  std::vector<double> floats;
  std::shared_ptr<const OnnxModelSpec> graph;  // Graph: a subgraph (an If's branch): its initializers, outputs and nodes
  // an attribute of each kind (tests, benchmarks)
  static OnnxSpecAttr integer(const std::string& n, long long v);
  static OnnxSpecAttr integers(const std::string& n, std::vector<long long> v);
  static OnnxSpecAttr text(const std::string& n, const std::string& v);
  static OnnxSpecAttr subgraph(const std::string& n, OnnxModelSpec g);
};
struct OnnxSpecNode {
  std::string op_type, name;
  std::vector<std::string> inputs, outputs;
  std::vector<OnnxSpecAttr> attrs;
};
struct OnnxSpecTensor {
  std::string name;
  std::vector<std::string> dims;  // "224" or a symbol ("batch")
  int elem_type = 1;              // TensorProto: 1 float, 7 int64
  std::vector<double> values;     // initializers: stored data (else marked external, data absent)
};
struct OnnxModelSpec {
  long long opset = 13;
  std::string graph_name = "g";
  std::vector<OnnxSpecTensor> inputs, initializers, outputs;
  std::vector<OnnxSpecNode> nodes;
};
// The serialized ModelProto. Initializers without values point at an external data file
// ("weights.bin") that does not exist, as a graph-only export does.
std::string build_onnx_model(const OnnxModelSpec& spec);

}  // namespace rsim
