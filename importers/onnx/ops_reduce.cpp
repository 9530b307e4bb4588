// Reductions: ReduceMean ... ReduceLogSumExp (axes as an attribute, or from opset 13/18 a constant
// input; noop_with_empty_axes makes an identity) and ArgMax / ArgMin.
#include "importers/onnx/importer.hpp"

namespace rsim {

namespace onnx_detail {

namespace {

// the entry's `op` is the rsim operator
void reduce(Importer& im, const OpConverter& c) {
  std::optional<std::vector<long long>> axes = im.attr_ints("axes");
  if (!axes && im.has_input(1)) axes = im.const_ints(1, "axes");
  if (axes && axes->empty() && im.attr_i("noop_with_empty_axes", 0)) return im.simple("identity", 1);
  LayerSpec l{c.op, {}, {im.ref(0)}};
  if (axes && !axes->empty()) l.set("axes", ints_node(*axes));
  l.set("keepdims", bool_node(im.attr_i("keepdims", 1) != 0));
  im.emit(l);
}

void arg_reduce(Importer& im, const OpConverter& c) {
  LayerSpec l{c.op, {}, {im.ref(0)}};
  l.set("axis", int_node(im.attr_i("axis", 0)));
  l.set("keepdims", bool_node(im.attr_i("keepdims", 1) != 0));
  im.emit(l);
}

OpConverter reduction(const char* op_type, const char* op) { return {op_type, op, reduce, op}; }

}  // namespace

const std::vector<OpConverter>& reduce_converters() {
  static const std::vector<OpConverter> v = {
      reduction("ReduceMean", "reduce_mean"),
      reduction("ReduceSum", "reduce_sum"),
      reduction("ReduceMax", "reduce_max"),
      reduction("ReduceMin", "reduce_min"),
      reduction("ReduceProd", "reduce_prod"),
      reduction("ReduceL1", "reduce_l1"),
      reduction("ReduceL2", "reduce_l2"),
      reduction("ReduceSumSquare", "reduce_sum_square"),
      reduction("ReduceLogSumExp", "reduce_log_sum_exp"),
      {"ArgMax", "argmax", arg_reduce, "argmax"},
      {"ArgMin", "argmin", arg_reduce, "argmin"},
  };
  return v;
}

}  // namespace onnx_detail

}  // namespace rsim
