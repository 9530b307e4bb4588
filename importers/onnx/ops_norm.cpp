// Normalization: BatchNormalization, InstanceNormalization, LayerNormalization, LRN. The statistics
// outputs of training-mode nodes (running mean and variance, Mean and InvStdDev) are constants of
// known shape that nothing reads as layers.
#include "importers/onnx/importer.hpp"

namespace rsim {

namespace onnx_detail {

namespace {

void batchnorm(Importer& im, const OpConverter&) {
  if (im.in(0).shape.size() < 2) im.node_fail("expects (N, C, ...), got " + shape_text(im.in(0).shape));
  long long c = im.in(0).shape[1];
  im.simple("batchnorm", 1);
  for (int i = 1; i < im.cur().output_size(); ++i) im.set_out(i, im.const_val({c}, {}, false));  // training mode: running mean and var
}

void instance_norm(Importer& im, const OpConverter&) { im.simple("instance_norm", 1); }

void layernorm(Importer& im, const OpConverter&) {
  size_t r = im.in(0).shape.size();
  long long ax = im.axis_attr("axis", -1, r);
  if (ax < 0) ax += static_cast<long long>(r);
  LayerSpec l{"layernorm", {}, {im.ref(0)}};
  l.set("dims", int_node(static_cast<long long>(r) - ax));
  Shape stat = im.in(0).shape;
  for (size_t i = static_cast<size_t>(ax); i < r; ++i) stat[i] = 1;
  im.emit(l, 1);
  for (int i = 1; i < im.cur().output_size(); ++i) im.set_out(i, im.const_val(stat, {}, false));  // Mean, InvStdDev
}

void lrn(Importer& im, const OpConverter&) {
  LayerSpec l{"lrn", {}, {im.ref(0)}};
  l.set("size", int_node(im.attr_i("size", 1)));
  im.emit(l);
}

}  // namespace

const std::vector<OpConverter>& norm_converters() {
  static const std::vector<OpConverter> v = {
      {"BatchNormalization", "batchnorm", batchnorm},
      {"InstanceNormalization", "instance_norm", instance_norm},
      {"LayerNormalization", "layernorm", layernorm},
      {"LRN", "lrn", lrn},
  };
  return v;
}

}  // namespace onnx_detail

}  // namespace rsim
