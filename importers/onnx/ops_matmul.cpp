// Matrix products: MatMul, Gemm and Einsum. A constant 2-D weight (an initializer not already materialised
// as a layer) makes a `linear` layer that counts it as parameters; anything else the general
// matmul / gemm of two activations.
#include "importers/onnx/importer.hpp"

namespace rsim {

namespace onnx_detail {

namespace {

}  // namespace

void map_matmul(Importer& im, int a_index, int b_index) {
  Val& b = im.in(b_index);
  // a weight: a float initializer, or a stored int8 one (MatMulInteger, QLinearMatMul)
  const bool stored = b.is_const && (b.elem == onnx::TensorProto::INT8 || b.elem == onnx::TensorProto::UINT8);
  if ((b.param || stored) && b.shape.size() == 2 && b.ref.empty()) {
    LayerSpec l{"linear", {}, {im.ref(a_index)}};
    if (im.in(a_index).shape.empty() || im.in(a_index).shape.back() != b.shape[0])
      im.node_fail("inner dimensions differ: " + shape_text(im.in(a_index).shape) + " × " + shape_text(b.shape));
    l.set("out_features", int_node(b.shape[1]));
    l.set("bias", bool_node(false));
    im.emit(l);
    return;
  }
  LayerSpec l{"matmul", {}, {im.ref(a_index), im.ref(b_index)}};
  im.emit(l);
}

namespace {

void matmul(Importer& im, const OpConverter&) { map_matmul(im, 0, 1); }

void gemm(Importer& im, const OpConverter&) {
  Val& b = im.in(1);
  bool ta = im.attr_i("transA", 0) != 0, tb = im.attr_i("transB", 0) != 0;
  bool c_weight = !im.has_input(2) || (im.in(2).param && im.in(2).ref.empty());
  if (b.param && b.ref.empty() && !ta && b.shape.size() == 2 && c_weight && im.in(0).shape.size() == 2) {
    long long k = tb ? b.shape[1] : b.shape[0];
    if (im.in(0).shape[1] != k) im.node_fail("inner dimensions differ: " + shape_text(im.in(0).shape) + " × " + shape_text(b.shape) + (tb ? "ᵀ" : ""));
    LayerSpec l{"linear", {}, {im.ref(0)}};
    l.set("out_features", int_node(tb ? b.shape[0] : b.shape[1]));
    l.set("bias", bool_node(im.has_input(2)));
    im.emit(l);
    return;
  }
  LayerSpec l{"gemm", {}, {im.ref(0), im.ref(1)}};
  if (im.has_input(2)) l.inputs.push_back(im.ref(2));
  l.set("trans_a", bool_node(ta));
  l.set("trans_b", bool_node(tb));
  im.emit(l);
}

// Einsum of any number of operands: constant operands become constant layers (their elements
// parameters), the equation goes as it is
void einsum(Importer& im, const OpConverter&) {
  LayerSpec l{"einsum", {}, {}};
  for (int i = 0; i < im.cur().input_size(); ++i)
    if (im.has_input(i)) l.inputs.push_back(im.ref(i));
  l.set("equation", scalar(im.attr_s("equation", "")));
  im.emit(l);
}

}  // namespace

const std::vector<OpConverter>& matmul_converters() {
  static const std::vector<OpConverter> v = {
      {"Gemm", "linear (constant B) or gemm", gemm},
      {"MatMul", "linear (constant 2-D B) or matmul", matmul},
      {"Einsum", "einsum", einsum},
  };
  return v;
}

}  // namespace onnx_detail

}  // namespace rsim
