// Quantization: QuantizeLinear and DequantizeLinear (QDQ models) become no layer of their own. A
// DequantizeLinear of a stored int8 (uint8, int32) initializer is that weight as the next layer
// sees it: a parameter whose bytes are its stored type's; of an activation, the same activation
// still in int8. A layer whose first input is such a tensor runs in int8 (node_elem), so a QDQ
// group — DequantizeLinear → Conv / Gemm / MatMul → QuantizeLinear — is one int8 layer named after
// its Conv, Gemm or MatMul node. Scales and zero points are read by no layer: neither parameters
// nor bytes.
#include "importers/onnx/importer.hpp"

namespace rsim {

namespace onnx_detail {

namespace {

// QuantizeLinear: the tensor in the type of its zero point (uint8 without one, as ONNX says)
void quantize(Importer& im, const OpConverter&) {
  Val v = im.in(0);
  v.elem = im.has_input(2) ? im.in(2).elem : onnx::TensorProto::UINT8;
  if (const auto* a = im.attr("output_dtype"); a && a->i() != 0) v.elem = static_cast<int>(a->i());
  if (v.elem != onnx::TensorProto::INT8 && v.elem != onnx::TensorProto::UINT8)
    im.node_fail("quantizes to element type " + std::to_string(v.elem) + ": rsim costs int8 and uint8");
  v.quantized = true;
  v.has_data = false, v.data.clear();
  v.param = false;
  im.set_out(0, v);
}

// DequantizeLinear: the stored tensor, still flagged as stored in its integer type
void dequantize(Importer& im, const OpConverter&) {
  Val v = im.in(0);
  if (v.elem != onnx::TensorProto::INT8 && v.elem != onnx::TensorProto::UINT8 && v.elem != onnx::TensorProto::INT32)
    im.node_fail("dequantizes element type " + std::to_string(v.elem) + ": rsim costs int8, uint8 and int32");
  v.quantized = true;
  if (v.is_const && v.ref.empty()) {  // a stored weight or bias: a parameter (its data is never needed)
    v.param = true;
    if (v.const_name.empty()) v.const_name = im.cur().input(0);
    v.has_data = false, v.data.clear();
  }
  im.set_out(0, v);
}

// DynamicQuantizeLinear: y, its input stored in uint8 (the scale and zero point it computes: two
// scalars, read by no layer)
void dynamic_quantize(Importer& im, const OpConverter&) {
  Val v = im.in(0);
  v.elem = onnx::TensorProto::UINT8;
  v.quantized = true;
  v.has_data = false, v.data.clear();
  v.param = false;
  im.set_out(0, v);
  for (int i = 1; i < 3; ++i) im.set_out(i, im.const_val({}, {}, false));
}

// The integer operators: a convolution or matrix product in int8 (node_elem), weights at their
// ONNX input positions
void qlinear_conv(Importer& im, const OpConverter&) { map_conv(im, false, 3, 8); }
void conv_integer(Importer& im, const OpConverter&) { map_conv(im, false, 1, -1); }
void qlinear_matmul(Importer& im, const OpConverter&) { map_matmul(im, 0, 3); }
void matmul_integer(Importer& im, const OpConverter&) { map_matmul(im, 0, 1); }

}  // namespace

const std::vector<OpConverter>& quant_converters() {
  static const std::vector<OpConverter> v = {
      {"QuantizeLinear", "no layer: its input, stored in int8", quantize},
      {"DequantizeLinear", "no layer: the int8 tensor its reader runs on (a weight: a parameter)", dequantize},
      {"DynamicQuantizeLinear", "no layer: its input, stored in uint8", dynamic_quantize},
      {"QLinearConv", "conv2d or conv_nd in int8", qlinear_conv},
      {"ConvInteger", "conv2d or conv_nd in int8", conv_integer},
      {"QLinearMatMul", "linear (constant B) or matmul in int8", qlinear_matmul},
      {"MatMulInteger", "linear (constant B) or matmul in int8", matmul_integer},
  };
  return v;
}

}  // namespace onnx_detail

}  // namespace rsim
