// Small ONNX models built in code (tests, benchmarks, fuzz seeds) without ONNX headers outside importers/.
#include <onnx/onnx_pb.h>

#include "importers/onnx_import.hpp"

namespace rsim {

namespace {

void fill_graph(onnx::GraphProto* g, const OnnxModelSpec& spec) {
  g->set_name(spec.graph_name);
  auto value_info = [](onnx::ValueInfoProto* v, const OnnxSpecTensor& t) {
    v->set_name(t.name);
    auto* tt = v->mutable_type()->mutable_tensor_type();
    tt->set_elem_type(t.elem_type);
    auto* sh = tt->mutable_shape();
    for (const auto& d : t.dims) {
      auto* dim = sh->add_dim();
      if (auto n = parse_integer(d)) dim->set_dim_value(*n);
      else if (!d.empty() && d != "?") dim->set_dim_param(d);
    }
  };
  for (const auto& t : spec.inputs) value_info(g->add_input(), t);
  for (const auto& t : spec.outputs) value_info(g->add_output(), t);
  for (const auto& t : spec.initializers) {
    auto* i = g->add_initializer();
    i->set_name(t.name);
    i->set_data_type(t.elem_type);
    for (const auto& d : t.dims) i->add_dims(parse_integer(d).value_or(1));
    if (t.values.empty()) {
      i->set_data_location(onnx::TensorProto::EXTERNAL);
      auto* loc = i->add_external_data();
      loc->set_key("location");
      loc->set_value("weights.bin");
    } else if (t.elem_type == onnx::TensorProto::FLOAT) {
      for (double v : t.values) i->add_float_data(static_cast<float>(v));
    } else if (t.elem_type == onnx::TensorProto::BOOL || t.elem_type == onnx::TensorProto::INT32 || t.elem_type == onnx::TensorProto::INT8 ||
               t.elem_type == onnx::TensorProto::UINT8) {
      for (double v : t.values) i->add_int32_data(static_cast<int32_t>(v));
    } else {
      for (double v : t.values) i->add_int64_data(static_cast<int64_t>(v));
    }
  }
  for (const auto& n : spec.nodes) {
    auto* node = g->add_node();
    node->set_op_type(n.op_type);
    node->set_name(n.name);
    for (const auto& i : n.inputs) node->add_input(i);
    for (const auto& o : n.outputs) node->add_output(o);
    for (const auto& a : n.attrs) {
      auto* at = node->add_attribute();
      at->set_name(a.name);
      switch (a.kind) {
        case OnnxSpecAttr::Kind::Int: at->set_type(onnx::AttributeProto::INT), at->set_i(a.i); break;
        case OnnxSpecAttr::Kind::Float: at->set_type(onnx::AttributeProto::FLOAT), at->set_f(static_cast<float>(a.f)); break;
        case OnnxSpecAttr::Kind::String: at->set_type(onnx::AttributeProto::STRING), at->set_s(a.s); break;
        case OnnxSpecAttr::Kind::Ints:
          at->set_type(onnx::AttributeProto::INTS);
          for (auto v : a.ints) at->add_ints(v);
          break;
        case OnnxSpecAttr::Kind::Floats:
          at->set_type(onnx::AttributeProto::FLOATS);
          for (auto v : a.floats) at->add_floats(static_cast<float>(v));
          break;
        case OnnxSpecAttr::Kind::Graph:
          at->set_type(onnx::AttributeProto::GRAPH);
          if (a.graph) fill_graph(at->mutable_g(), *a.graph);
          break;
      }
    }
  }
}

}  // namespace

OnnxSpecAttr OnnxSpecAttr::integer(const std::string& n, long long v) {
  OnnxSpecAttr a;
  a.name = n, a.kind = Kind::Int, a.i = v;
  return a;
}
OnnxSpecAttr OnnxSpecAttr::integers(const std::string& n, std::vector<long long> v) {
  OnnxSpecAttr a;
  a.name = n, a.kind = Kind::Ints, a.ints = std::move(v);
  return a;
}
OnnxSpecAttr OnnxSpecAttr::text(const std::string& n, const std::string& v) {
  OnnxSpecAttr a;
  a.name = n, a.kind = Kind::String, a.s = v;
  return a;
}
OnnxSpecAttr OnnxSpecAttr::subgraph(const std::string& n, OnnxModelSpec g) {
  OnnxSpecAttr a;
  a.name = n, a.kind = Kind::Graph, a.graph = std::make_shared<const OnnxModelSpec>(std::move(g));
  return a;
}

std::string build_onnx_model(const OnnxModelSpec& spec) {
  onnx::ModelProto m;
  m.set_ir_version(8);
  m.set_producer_name("rsim-test");
  auto* op = m.add_opset_import();
  op->set_domain("");
  op->set_version(spec.opset);
  fill_graph(m.mutable_graph(), spec);
  return m.SerializeAsString();
}

}  // namespace rsim
