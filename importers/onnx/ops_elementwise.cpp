// Elementwise operators: activations, unary math, binary operators with numpy broadcasting (and
// opset < 7 axis broadcasting), variadic Max/Min/Sum/Mean, Where; also Softmax, LogSoftmax and
// CumSum (along one axis), and the ops that become `identity` (a view): Cast, Dropout, ...
#include <cmath>

#include "importers/onnx/importer.hpp"

namespace rsim {

namespace onnx_detail {

namespace {

// Opset < 7 broadcasting (broadcast = 1, axis = k): B's dimensions line up with A's from axis k
// on; B gets trailing 1s, then numpy broadcasting applies. (ONNX 1.12's version converter pads B
// with rank(A) - rank(B) 1s whatever the axis; parse_onnx undoes that and keeps the axis.)
void legacy_broadcast(Importer& im, const std::string& op) {
  const Shape a = im.in(0).shape, b = im.in(1).shape;
  long long ax = im.attr_i(kLegacyAxis, 0);
  if (ax < 0) ax += static_cast<long long>(a.size());
  long long pad = static_cast<long long>(a.size()) - ax - static_cast<long long>(b.size());
  if (ax < 0 || pad < 0)
    im.node_fail("broadcast axis " + std::to_string(im.attr_i(kLegacyAxis, 0)) + " does not fit " + shape_text(a) + " and " + shape_text(b) +
                 " (opset " + std::to_string(im.model().opset_before) + " broadcasting)");
  LayerSpec l{op, {}, {im.ref(0)}};
  if (pad == 0) {
    l.inputs.push_back(im.ref(1));
  } else {
    Shape nb = b;
    nb.resize(b.size() + static_cast<size_t>(pad), 1);
    LayerSpec r{"reshape", {}, {im.ref(1)}};
    r.set("shape", ints_node(std::vector<long long>(nb.begin(), nb.end())));
    std::string name = im.node_name();
    im.node_name() += "_broadcast";
    im.emit(r);
    im.node_name() = name;
    l.inputs.push_back(im.val(im.cur().output(0)).ref);
  }
  im.emit(l);
}

// the converters that several op types share: the entry's `op` is the rsim operator
void convert_unary(Importer& im, const OpConverter& c) { im.simple(c.op, 1); }
void convert_binary(Importer& im, const OpConverter& c) {
  if (im.attr(kLegacyAxis)) return legacy_broadcast(im, c.op);
  im.simple(c.op, 2);
}
void convert_variadic(Importer& im, const OpConverter& c) { im.all_inputs(c.op); }

OpConverter unary(const char* op_type, const char* op) { return {op_type, op, convert_unary, op}; }
OpConverter binary(const char* op_type, const char* op) { return {op_type, op, convert_binary, op}; }
OpConverter variadic(const char* op_type, const char* op) { return {op_type, op, convert_variadic, op}; }

void where(Importer& im, const OpConverter&) { im.simple("where", 3); }

void leaky_relu(Importer& im, const OpConverter&) {
  LayerSpec l{"leaky_relu", {}, {im.ref(0)}};
  l.set("negative_slope", scalar(format_number(im.attr_f("alpha", 0.01))));
  im.emit(l);
}

void clip(Importer& im, const OpConverter&) {
  double lo = -INFINITY, hi = INFINITY;
  if (im.attr("min")) lo = im.attr_f("min", lo);
  if (im.attr("max")) hi = im.attr_f("max", hi);
  if (im.has_input(1) && im.in(1).has_data) lo = im.in(1).data.at(0);
  if (im.has_input(2) && im.in(2).has_data) hi = im.in(2).data.at(0);
  im.simple(lo == 0 && hi == 6 ? "relu6" : "clip", 1);
}

void prelu(Importer& im, const OpConverter&) {
  LayerSpec l{"prelu", {}, {im.ref(0)}};
  std::vector<long long> slope(im.in(1).shape.begin(), im.in(1).shape.end());
  const Shape& x = im.in(0).shape;
  if (slope.size() == 1 && x.size() > 2 && slope[0] == x[1] && slope[0] != x.back()) slope.resize(x.size() - 1, 1);  // per channel (opset < 7)
  l.set("slope_shape", ints_node(slope));
  im.emit(l);
}

// Softmax and LogSoftmax (the entry's `op`): the axis defaults to 1 before opset 13, to -1 from 13 on
void softmax(Importer& im, const OpConverter& c, long long def) {
  LayerSpec l{c.op, {}, {im.ref(0)}};
  l.set("axis", int_node(im.axis_attr("axis", def, im.in(0).shape.size())));
  im.emit(l);
}
void softmax_1(Importer& im, const OpConverter& c) { softmax(im, c, 1); }
void softmax_13(Importer& im, const OpConverter& c) { softmax(im, c, -1); }

void cumsum(Importer& im, const OpConverter&) {
  LayerSpec l{"cumsum", {}, {im.ref(0)}};
  l.set("axis", int_node(im.const_ints(1, "axis").at(0)));
  im.emit(l);
}

void identity(Importer& im, const OpConverter&) { im.simple("identity", 1); }

}  // namespace

const std::vector<OpConverter>& elementwise_converters() {
  static const std::vector<OpConverter> v = {
      unary("Relu", "relu"),
      {"LeakyRelu", "leaky_relu", leaky_relu},
      {"PRelu", "prelu", prelu},
      {"Clip", "relu6 (0..6) or clip", clip},
      unary("Sigmoid", "sigmoid"),
      unary("HardSigmoid", "hardsigmoid"),
      unary("HardSwish", "hardswish"),
      unary("Tanh", "tanh"),
      unary("Gelu", "gelu"),
      unary("Elu", "elu"),
      unary("Selu", "selu"),
      unary("Softplus", "softplus"),
      unary("Mish", "mish"),
      unary("Erf", "erf"),
      unary("Exp", "exp"),
      unary("Log", "log"),
      unary("Sqrt", "sqrt"),
      unary("Reciprocal", "reciprocal"),
      unary("Neg", "neg"),
      unary("Abs", "abs"),
      unary("Floor", "floor"),
      unary("Ceil", "ceil"),
      unary("Round", "round"),
      unary("Sign", "sign"),
      unary("Sin", "sin"),
      unary("Cos", "cos"),
      unary("Not", "logical_not"),
      {"CumSum", "cumsum", cumsum},
      {"Softmax", "softmax", softmax_1, "softmax", 0, 12},
      {"Softmax", "softmax", softmax_13, "softmax", 13},
      {"LogSoftmax", "log_softmax", softmax_1, "log_softmax", 0, 12},
      {"LogSoftmax", "log_softmax", softmax_13, "log_softmax", 13},
      binary("Add", "add"),
      binary("Sub", "sub"),
      binary("Mul", "mul"),
      binary("Div", "div"),
      binary("Pow", "pow"),
      binary("Mod", "mod"),
      binary("Equal", "equal"),
      binary("Less", "less"),
      binary("LessOrEqual", "less_equal"),
      binary("Greater", "greater"),
      binary("GreaterOrEqual", "greater_equal"),
      binary("And", "logical_and"),
      binary("Or", "logical_or"),
      binary("Xor", "logical_xor"),
      variadic("Max", "max"),
      variadic("Min", "min"),
      variadic("Sum", "sum"),
      variadic("Mean", "mean"),
      {"Where", "where", where},
  };
  return v;
}

// Ops that pass their input through unchanged (as far as shapes and costs go): `identity`, a view
const std::vector<OpConverter>& identity_converters() {
  static const std::vector<OpConverter> v = {
      {"Trilu", "identity", identity},
      {"Cast", "identity", identity},
      {"CastLike", "identity", identity},
      {"Identity", "identity", identity},
      {"Dropout", "identity", identity},
  };
  return v;
}

}  // namespace onnx_detail

}  // namespace rsim
