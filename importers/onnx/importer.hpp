// The ONNX importer's inside, shared by the files of importers/ (nothing outside importers/ includes
// it): the parsed model, what the importer knows about each tensor (Val), the layer a node becomes
// (LayerSpec) and the helpers they share.
//
//   load.cpp             parse, version conversion, tensors, ONNX's own shape inference
//   yaml_export.cpp      `rsim import` (a zoo file with parameters) and `--summary`
//   network_importer.cpp the `onnx:` network source the engine uses
//   build_model.cpp      small ONNX models built in code (tests, benchmarks, fuzz seeds)
//   ../onnx_import.cpp   the importer: the graph walk, shape propagation, folding, the converters
#pragma once
#include <onnx/onnx_pb.h>

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

}  // namespace onnx_detail

}  // namespace rsim
