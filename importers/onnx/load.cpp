// Loading: the file's bytes, the parsed and checked ModelProto, ONNX's version converter for opsets
// before 7, initializer tensors, and the model-level queries (inputs, symbols, ONNX's own shape
// inference) that need no import.
#include <onnx/shape_inference/implementation.h>
#include <onnx/version_converter/convert.h>

#include <algorithm>
#include <cstring>
#include <map>
#include <set>

#include "importers/onnx/importer.hpp"

namespace rsim {

namespace onnx_detail {

namespace {

template <class T>
void read_raw(const std::string& raw, size_t n, std::vector<double>& out) {
  out.resize(n);
  for (size_t i = 0; i < n; ++i) {
    T v;
    std::memcpy(&v, raw.data() + i * sizeof(T), sizeof(T));
    out[i] = static_cast<double>(v);
  }
}

}  // namespace

// Shape, element type and (when small enough, not external and integer or a tiny float) the data.
Val tensor_val(const onnx::TensorProto& t) {
  Val v;
  v.known = true;
  v.is_const = true;
  v.elem = t.data_type();
  for (auto d : t.dims()) v.shape.push_back(d);
  double n = count(v.shape);
  bool external = t.data_location() == onnx::TensorProto::EXTERNAL;
  bool want = !external && ((is_int_type(v.elem) && n <= kMaxFold) || (is_float_type(v.elem) && n <= kMaxFloatRead));
  if (!want) return v;
  size_t k = static_cast<size_t>(n);
  const std::string& raw = t.raw_data();
  bool ok = true;
  switch (t.data_type()) {
    case onnx::TensorProto::FLOAT:
      if (!raw.empty()) ok = raw.size() == k * 4, ok ? read_raw<float>(raw, k, v.data) : void();
      else if (static_cast<size_t>(t.float_data_size()) == k) v.data.assign(t.float_data().begin(), t.float_data().end());
      else ok = false;
      break;
    case onnx::TensorProto::DOUBLE:
      if (!raw.empty()) ok = raw.size() == k * 8, ok ? read_raw<double>(raw, k, v.data) : void();
      else if (static_cast<size_t>(t.double_data_size()) == k) v.data.assign(t.double_data().begin(), t.double_data().end());
      else ok = false;
      break;
    case onnx::TensorProto::INT64:
      if (!raw.empty()) ok = raw.size() == k * 8, ok ? read_raw<int64_t>(raw, k, v.data) : void();
      else if (static_cast<size_t>(t.int64_data_size()) == k)
        for (auto x : t.int64_data()) v.data.push_back(static_cast<double>(x));
      else ok = false;
      break;
    case onnx::TensorProto::UINT64:
    case onnx::TensorProto::UINT32:
      if (!raw.empty() && t.data_type() == onnx::TensorProto::UINT64) ok = raw.size() == k * 8, ok ? read_raw<uint64_t>(raw, k, v.data) : void();
      else if (!raw.empty()) ok = raw.size() == k * 4, ok ? read_raw<uint32_t>(raw, k, v.data) : void();
      else if (static_cast<size_t>(t.uint64_data_size()) == k)
        for (auto x : t.uint64_data()) v.data.push_back(static_cast<double>(x));
      else ok = false;
      break;
    case onnx::TensorProto::INT32:
    case onnx::TensorProto::INT16:
    case onnx::TensorProto::INT8:
    case onnx::TensorProto::UINT16:
    case onnx::TensorProto::UINT8:
    case onnx::TensorProto::BOOL:
      if (!raw.empty()) {
        switch (t.data_type()) {
          case onnx::TensorProto::INT32: ok = raw.size() == k * 4, ok ? read_raw<int32_t>(raw, k, v.data) : void(); break;
          case onnx::TensorProto::INT16: ok = raw.size() == k * 2, ok ? read_raw<int16_t>(raw, k, v.data) : void(); break;
          case onnx::TensorProto::UINT16: ok = raw.size() == k * 2, ok ? read_raw<uint16_t>(raw, k, v.data) : void(); break;
          case onnx::TensorProto::INT8: ok = raw.size() == k, ok ? read_raw<int8_t>(raw, k, v.data) : void(); break;
          default: ok = raw.size() == k, ok ? read_raw<uint8_t>(raw, k, v.data) : void(); break;
        }
      } else if (static_cast<size_t>(t.int32_data_size()) == k) {
        for (auto x : t.int32_data()) v.data.push_back(static_cast<double>(x));
      } else {
        ok = false;
      }
      break;
    default: ok = false;
  }
  v.has_data = ok && v.data.size() == k;
  if (!v.has_data) v.data.clear();
  return v;
}

namespace {

long long default_opset(const onnx::ModelProto& m) {
  for (const auto& o : m.opset_import())
    if (o.domain().empty() || o.domain() == "ai.onnx") return o.version();
  return 0;
}

// ONNX 1.12's opset 1-6 → 7 adapters index node inputs and read attributes without checking them
// (a one-input Add or a FLOAT `axis` crashes inside libonnx, found by fuzz_onnx). What they read is
// checked here first; the answer is what is wrong, or empty when the converter may run.
std::string converter_hazard(const onnx::ModelProto& proto) {
  std::map<std::string, int> rank;  // tensor → known rank (from inputs, value_info, outputs, initializers)
  auto note = [&](const onnx::ValueInfoProto& v) {
    if (v.type().has_tensor_type() && v.type().tensor_type().has_shape()) rank[v.name()] = v.type().tensor_type().shape().dim_size();
  };
  const auto& g = proto.graph();
  for (const auto& v : g.input()) note(v);
  for (const auto& v : g.value_info()) note(v);
  for (const auto& v : g.output()) note(v);
  for (const auto& t : g.initializer()) rank[t.name()] = t.dims_size();
  static const std::set<std::string> binary = {"Add", "Sub", "Mul", "Div", "Pow"};
  // every node, whatever its domain (the converter picks adapters by op name: fuzz_onnx crashed it
  // with an Add in domain "0"), and the nodes of subgraphs too
  std::vector<const onnx::NodeProto*> nodes;
  std::vector<const onnx::GraphProto*> graphs = {&g};
  while (!graphs.empty() && nodes.size() < 1000000) {
    const onnx::GraphProto* sub = graphs.back();
    graphs.pop_back();
    for (const auto& n : sub->node()) {
      nodes.push_back(&n);
      for (const auto& a : n.attribute()) {
        if (a.has_g()) graphs.push_back(&a.g());
        for (const auto& gg : a.graphs()) graphs.push_back(&gg);
      }
    }
  }
  for (const onnx::NodeProto* np : nodes) {
    const onnx::NodeProto& n = *np;
    const std::string& op = n.op_type();
    auto who = "node '" + n.name() + "' (" + op + ") ";
    auto inputs = [&](int want, bool exact) -> std::string {
      if (n.input_size() < want || (exact && n.input_size() != want))
        return who + "has " + std::to_string(n.input_size()) + " inputs; " + op + " takes " + std::to_string(want);
      for (int k = 0; k < want; ++k)
        if (n.input(k).empty()) return who + "leaves input " + std::to_string(k + 1) + " empty";
      return {};
    };
    auto kind = [&](const char* name, onnx::AttributeProto::AttributeType t, const char* spelled) -> std::string {
      for (const auto& a : n.attribute())
        if (a.name() == name && a.type() != t) return who + "has attribute '" + name + "' that is not " + spelled;
      return {};
    };
    std::string why;
    if (binary.count(op)) {
      if (why = inputs(2, true); why.empty()) why = kind("axis", onnx::AttributeProto::INT, "an integer");
    } else if (op == "Gemm") {
      if (why = inputs(3, true); why.empty()) why = kind("transA", onnx::AttributeProto::INT, "an integer");
      if (why.empty()) why = kind("transB", onnx::AttributeProto::INT, "an integer");
      for (int k = 0; k < 2 && why.empty(); ++k)
        if (auto r = rank.find(n.input(k)); r == rank.end() || r->second != 2) why = who + "input '" + n.input(k) + "' has no known 2-D shape";
    } else if (op == "Upsample") {
      if (why = inputs(1, false); why.empty()) why = kind("width_scale", onnx::AttributeProto::FLOAT, "a float");
      if (why.empty()) why = kind("height_scale", onnx::AttributeProto::FLOAT, "a float");
    } else if (op == "BatchNormalization" || op == "Dropout") {
      why = kind("is_test", onnx::AttributeProto::INT, "an integer");
    } else if (op == "Reshape") {
      why = kind("shape", onnx::AttributeProto::INTS, "a list of integers");
    }
    if (!why.empty()) return why;
  }
  return {};
}

// How deeply a model nests subgraphs (1: the main graph alone), read from the wire format without
// recursion: ModelProto.graph (7) → GraphProto.node (1) → NodeProto.attribute (5) →
// AttributeProto.g (6) or .graphs (11) → GraphProto … Protobuf's parser stops at 100 nested
// messages, three per subgraph level; this names the cause when it does. Stops where the bytes do not
// parse (what it found so far).
size_t subgraph_depth(const std::string& b) {
  struct Frame {
    size_t end;
    int kind;  // 0 model, 1 graph, 2 node, 3 attribute
    size_t graphs;
  };
  std::vector<Frame> st{{b.size(), 0, 0}};
  size_t pos = 0, best = 0;
  auto varint = [&](uint64_t& v) {
    v = 0;
    for (int shift = 0; shift < 64; shift += 7) {
      if (pos >= st.back().end) return false;
      const auto c = static_cast<unsigned char>(b[pos++]);
      v |= static_cast<uint64_t>(c & 0x7f) << shift;
      if (!(c & 0x80)) return true;
    }
    return false;
  };
  while (!st.empty()) {
    if (pos >= st.back().end) {
      pos = st.back().end;
      st.pop_back();
      continue;
    }
    uint64_t tag = 0, v = 0;
    if (!varint(tag)) return best;
    const uint64_t field = tag >> 3, wire = tag & 7;
    if (wire == 0) {
      if (!varint(v)) return best;
    } else if (wire == 1 || wire == 5) {
      pos += wire == 1 ? 8 : 4;
    } else if (wire == 2) {
      if (!varint(v) || v > st.back().end - pos) return best;
      const int k = st.back().kind;
      const int child = k == 0 && field == 7 ? 1 : k == 1 && field == 1 ? 2 : k == 2 && field == 5 ? 3 : k == 3 && (field == 6 || field == 11) ? 1 : -1;
      if (child >= 0) {
        const size_t graphs = st.back().graphs + (child == 1);
        best = std::max(best, graphs);
        st.push_back({pos + static_cast<size_t>(v), child, graphs});
      } else {
        pos += static_cast<size_t>(v);
      }
    } else {
      return best;  // (groups: not in ONNX)
    }
  }
  return best;
}

std::string read_file_bytes(const std::string& path) {
  auto f = SourceFile::from_text(path, "");
  // a regular file of at most 2 GiB (protobuf's limit), checked before reading: a FIFO, a device
  // or a 10 GB sparse file is refused at once, never waited on or read into memory
  std::string why;
  std::optional<std::string> bytes = read_regular_file(path, static_cast<size_t>(INT32_MAX), "ONNX model", why);
  if (!bytes) {
    std::vector<Note> notes;  // (a file that is there but is no regular file, or too large)
    if (why.rfind("it ", 0) == 0) notes.push_back(Note{{}, "an ONNX model is a regular file of at most 2 GiB; save larger weights as external data"});
    fail_file(f, "cannot read the ONNX model: " + why, notes);
  }
  return std::move(*bytes);
}

}  // namespace

}  // namespace onnx_detail

using namespace onnx_detail;

std::shared_ptr<const OnnxModel> parse_onnx(const std::string& bytes, const std::string& path) {
  auto m = std::make_shared<OnnxModel>();
  m->path = path;
  m->file = SourceFile::from_text(path, "");
  if (bytes.empty()) fail_file(m->file, "is empty, not an ONNX model");
  if (bytes.size() > static_cast<size_t>(INT32_MAX)) fail_file(m->file, "is larger than 2 GiB; save the weights as external data");
  if (!m->proto.ParseFromString(bytes)) {
    // protobuf stops at 100 nested messages: an If inside an If … about 33 deep
    if (const size_t depth = subgraph_depth(bytes); depth > 30)
      fail_file(m->file, "nests subgraphs (If or Loop bodies inside each other) " + std::to_string(depth - 1) +
                             " deep; protobuf reads at most 100 nested messages, about 32 levels of subgraphs",
                {Note{{}, "fold the constant conditions before exporting, or export the model without the nesting"}});
    fail_file(m->file, "is not a valid ONNX model (the protobuf data is truncated or corrupt)",
              {Note{{}, "export it again, e.g. torch.onnx.export(model, x, \"model.onnx\")"}});
  }
  if (!m->proto.has_graph() || m->proto.ir_version() <= 0)
    fail_file(m->file, "is not an ONNX model (no graph or IR version)", {Note{{}, "export it again, e.g. torch.onnx.export(model, x, \"model.onnx\")"}});
  const auto& g = m->proto.graph();
  // a bound on what is built from the file: protobuf parses a 35 MB chain of 10^6 nodes in a
  // second, but a layer per node took 28 s and 2.9 GB (the largest exported models, LLMs of
  // 80 layers, hold some 10^4 nodes)
  if (g.node_size() > kMaxOnnxNodes)
    fail_file(m->file, "has " + format_number(g.node_size()) + " nodes; rsim imports models of at most " + format_number(kMaxOnnxNodes) + " nodes",
              {Note{{}, "a model that large is usually a loop unrolled by the export: export it with the loop kept, or a smaller part of it"}});
  // structure: every node input is produced earlier (also catches files cut at a message boundary)
  std::set<std::string> known;
  for (const auto& t : g.initializer()) known.insert(t.name());
  for (const auto& i : g.input()) known.insert(i.name());
  for (const auto& n : g.node()) {
    for (const auto& i : n.input())
      if (!i.empty() && !known.count(i))
        fail_file(m->file, "node '" + n.name() + "' (" + n.op_type() + ") reads '" + i + "', which no earlier node, initializer or input produces",
                  {Note{{}, "the file may be truncated, or its nodes are not in topological order"}});
    for (const auto& o : n.output()) known.insert(o);
  }
  for (const auto& o : g.output())
    if (!known.count(o.name())) fail_file(m->file, "graph output '" + o.name() + "' is not produced by any node; the file may be truncated");
  m->opset = default_opset(m->proto);
  if (m->opset == 0) fail_file(m->file, "imports no version of the default ONNX opset (ai.onnx)");
  if (m->opset > kMaxOpset)
    fail_file(m->file, "uses ONNX opset " + std::to_string(m->opset) + "; rsim reads opsets " + std::to_string(kMinOpset) + " to " + std::to_string(kMaxOpset),
              {Note{{}, "export with opset_version=17 (torch.onnx.export(..., opset_version=17))"}});
  if (m->opset < kMinOpset) {
    // Binary operators broadcasting from an axis: ONNX 1.12's version converter pads B with
    // rank(A) - rank(B) 1s whatever the axis, so the padding it inserts is undone below and the
    // axis kept for the importer (legacy_broadcast) to apply.
    static const std::set<std::string> broadcasting = {"Add", "Sub", "Mul", "Div", "Pow", "Equal", "Less", "Greater", "And", "Or", "Xor"};
    std::map<std::string, std::pair<long long, std::string>> legacy;  // output → (axis, B)
    std::set<std::string> original;
    for (const auto& n : m->proto.graph().node()) {
      for (const auto& o : n.output()) original.insert(o);
      if ((!n.domain().empty() && n.domain() != "ai.onnx") || !broadcasting.count(n.op_type()) || n.input_size() < 2 || n.output_size() < 1) continue;
      bool bc = false;
      const onnx::AttributeProto* axis = nullptr;
      for (const auto& a : n.attribute()) {
        bc = bc || (a.name() == "broadcast" && a.i() != 0);
        if (a.name() == "axis") axis = &a;
      }
      if (bc && axis) legacy[n.output(0)] = {axis->i(), n.input(1)};
    }
    m->opset_before = m->opset;
    try {
      onnx::shape_inference::InferShapes(m->proto);  // the converter's adapters need intermediate shapes
    } catch (const std::exception&) {
      // converted without them: converter_hazard names an adapter that would need one
    }
    if (auto why = converter_hazard(m->proto); !why.empty())
      fail_file(m->file, "uses ONNX opset " + std::to_string(m->opset) + ", and ONNX's version converter cannot bring it to opset " +
                             std::to_string(kMinOpset) + ": " + why,
                {Note{{}, "export it again with opset_version 7 to 17"}});
    try {
      m->proto = onnx::version_conversion::ConvertVersion(m->proto, static_cast<int>(kMinOpset));
    } catch (const std::exception& e) {
      std::string why = e.what();  // "FILE:LINE: function: Assertion `...` failed: what is wrong"
      if (auto k = why.find("` failed: "); k != std::string::npos) why = why.substr(k + 10);
      while (!why.empty() && (why.back() == '\n' || why.back() == ' ')) why.pop_back();
      fail_file(m->file, "uses ONNX opset " + std::to_string(m->opset) + ", and ONNX's version converter could not bring it to opset " +
                             std::to_string(kMinOpset) + ": " + why,
                {Note{{}, "export it again with opset_version 7 to 17"}});
    }
    if (!legacy.empty()) {
      auto* nodes = m->proto.mutable_graph()->mutable_node();
      std::set<std::string> dropped;  // outputs of Unsqueeze nodes the converter inserted
      for (auto& n : *nodes) {
        if (n.output_size() < 1 || n.input_size() < 2) continue;
        auto it = legacy.find(n.output(0));
        if (it == legacy.end()) continue;
        auto* a = n.add_attribute();
        a->set_name(kLegacyAxis);
        a->set_type(onnx::AttributeProto::INT);
        a->set_i(it->second.first);
        if (n.input(1) != it->second.second && !original.count(n.input(1))) {
          dropped.insert(n.input(1));
          n.set_input(1, it->second.second);
        }
      }
      std::set<std::string> still_read;
      for (const auto& n : *nodes)
        for (const auto& i : n.input()) still_read.insert(i);
      google::protobuf::RepeatedPtrField<onnx::NodeProto> kept;
      for (auto& n : *nodes)
        if (!(n.op_type() == "Unsqueeze" && n.output_size() == 1 && dropped.count(n.output(0)) && !still_read.count(n.output(0)))) *kept.Add() = n;
      nodes->Swap(&kept);
    }
    m->opset = default_opset(m->proto);
  }
  return m;
}

std::shared_ptr<const OnnxModel> load_onnx(const std::string& path) { return parse_onnx(read_file_bytes(path), path); }

std::vector<std::string> onnx_input_names(const OnnxModel& m) {
  std::set<std::string> inits;
  for (const auto& t : m.proto.graph().initializer()) inits.insert(t.name());
  std::vector<std::string> v;
  for (const auto& in : m.proto.graph().input())
    if (!inits.count(in.name())) v.push_back(in.name());
  return v;
}

std::vector<std::string> onnx_symbols(const OnnxModel& m) {
  std::vector<std::string> syms;
  for (const auto& in : m.proto.graph().input())
    for (const auto& d : in.type().tensor_type().shape().dim())
      if (!d.dim_param().empty() && std::find(syms.begin(), syms.end(), d.dim_param()) == syms.end()) syms.push_back(d.dim_param());
  return syms;
}

std::map<std::string, Shape> onnx_reference_shapes(const OnnxModel& m, const OnnxImportOptions& opt) {
  onnx::ModelProto copy = m.proto;
  onnx::GraphProto* g = copy.mutable_graph();
  g->clear_value_info();
  for (auto& o : *g->mutable_output())
    if (o.type().has_tensor_type()) o.mutable_type()->mutable_tensor_type()->clear_shape();
  std::set<std::string> inits;
  for (const auto& t : g->initializer()) inits.insert(t.name());
  for (auto& in : *g->mutable_input()) {
    if (inits.count(in.name()) || !in.type().has_tensor_type()) continue;
    auto fixed = std::find_if(opt.inputs.begin(), opt.inputs.end(), [&](const auto& p) { return p.first == in.name(); });
    onnx::TensorShapeProto* shape = in.mutable_type()->mutable_tensor_type()->mutable_shape();
    if (fixed != opt.inputs.end()) {
      shape->clear_dim();
      for (auto d : fixed->second) shape->add_dim()->set_dim_value(d);
      continue;
    }
    for (auto& d : *shape->mutable_dim())
      if (d.has_dim_param()) {
        auto b = std::find_if(opt.dims.begin(), opt.dims.end(), [&](const auto& p) { return p.first == d.dim_param(); });
        if (b != opt.dims.end()) d.set_dim_value(b->second);
      }
  }
  std::map<std::string, Shape> out;
  try {
    onnx::shape_inference::InferShapes(copy, onnx::OpSchemaRegistry::Instance(), onnx::ShapeInferenceOptions(false, 0, true));
  } catch (const std::exception&) {
    // what it inferred before stopping is still in the graph
  }
  auto take = [&](const onnx::ValueInfoProto& v) {
    if (!v.type().has_tensor_type() || !v.type().tensor_type().has_shape()) return;
    Shape s;
    for (const auto& d : v.type().tensor_type().shape().dim()) {
      if (!d.has_dim_value()) return;
      s.push_back(d.dim_value());
    }
    out[v.name()] = s;
  };
  for (const auto& v : copy.graph().value_info()) take(v);
  for (const auto& v : copy.graph().output()) take(v);
  return out;
}

OnnxTensorInfo read_onnx_tensor(const std::string& bytes, const std::string& path) {
  onnx::TensorProto t;
  auto f = SourceFile::from_text(path, "");
  if (!t.ParseFromString(bytes)) fail_file(f, "is not a serialized ONNX tensor");
  OnnxTensorInfo info;
  info.name = t.name();
  for (auto d : t.dims()) info.shape.push_back(d);
  info.is_integer = is_int_type(t.data_type());
  Val v = tensor_val(t);
  if (v.has_data) info.values = v.data;
  return info;
}

}  // namespace rsim
