// Tensor and shape ops: Concat, Split, Slice, Gather, the views (Reshape, Flatten, Squeeze,
// Unsqueeze), Transpose, DepthToSpace / SpaceToDepth, Expand, Tile, Resize / Upsample, Pad. Their
// shape rules that folding shares (view_shape, slice_params, transpose_perm) are in propagate.cpp.
#include <algorithm>
#include <cmath>

#include "importers/onnx/importer.hpp"

namespace rsim {

namespace onnx_detail {

namespace {

void concat(Importer& im, const OpConverter&) {
  int n = 0;
  for (int i = 0; i < im.cur().input_size(); ++i) n += im.has_input(i);
  if (n == 1) return im.simple("identity", 1);
  LayerSpec l{"concat", {}, {}};
  for (int i = 0; i < im.cur().input_size(); ++i)
    if (im.has_input(i)) l.inputs.push_back(im.ref(i));
  l.set("axis", int_node(im.axis_attr("axis", 0, im.in(0).shape.size())));
  im.emit(l);
}

void split(Importer& im, const OpConverter&) {
  const Shape& x = im.in(0).shape;
  long long ax = im.axis_attr("axis", 0, x.size());
  size_t a = static_cast<size_t>(ax < 0 ? ax + static_cast<long long>(x.size()) : ax);
  std::vector<long long> sizes;
  if (auto s = im.ints_arg("split", 1)) sizes = *s;
  else {
    long long parts = im.attr_i("num_outputs", im.cur().output_size());
    if (parts <= 0) im.node_fail("has no outputs");
    long long each = (x[a] + parts - 1) / parts;
    for (long long p = 0, left = x[a]; p < parts; ++p, left -= each) sizes.push_back(std::min(each, left));
  }
  if (static_cast<int>(sizes.size()) != im.cur().output_size())
    im.node_fail("splits into " + std::to_string(sizes.size()) + " parts but has " + std::to_string(im.cur().output_size()) + " outputs");
  LayerSpec l{"split", {}, {im.ref(0)}};
  l.set("axis", int_node(ax));
  l.set("sizes", ints_node(sizes));
  im.emit(l);
}

void slice(Importer& im, const OpConverter&) {
  const Shape& x = im.in(0).shape;
  auto sl = im.slice_params(x);
  for (const auto& s : sl)
    if (s.len <= 0) im.node_fail("the slice of axis " + std::to_string(s.axis) + " (size " + std::to_string(x[s.axis]) + ") is empty");
  if (sl.size() == 1 && sl[0].step > 0) {
    LayerSpec l{"slice", {}, {im.ref(0)}};
    l.set("axis", int_node(static_cast<long long>(sl[0].axis)));
    l.set("start", int_node(sl[0].start));
    l.set("end", int_node(sl[0].start + (sl[0].len - 1) * sl[0].step + 1));
    l.set("step", int_node(sl[0].step));
    im.emit(l);
    return;
  }
  std::vector<long long> starts, ends, axes, steps;
  for (const auto& s : sl) {
    long long n = x[s.axis];
    long long last = s.start + (s.len - 1) * s.step;
    starts.push_back(s.start);
    long long e = last + (s.step > 0 ? 1 : -1);
    if (e < 0) e = -(n + 1);  // before index 0 (a negative end would count from the end)
    ends.push_back(e);
    axes.push_back(static_cast<long long>(s.axis));
    steps.push_back(s.step);
  }
  LayerSpec l{"slice_nd", {}, {im.ref(0)}};
  l.set("starts", ints_node(starts));
  l.set("ends", ints_node(ends));
  l.set("axes", ints_node(axes));
  l.set("steps", ints_node(steps));
  im.emit(l);
}

void gather(Importer& im, const OpConverter&) {
  Val& d = im.in(0);
  Val& idx = im.in(1);
  long long ax = im.axis_attr("axis", 0, d.shape.size());
  // indices known at import (constants, folded shape arithmetic: a BERT's position ids) must lie in
  // the table: a BERT at seq 1000 reads past its 512 positions
  if (idx.is_const && idx.has_data && static_cast<size_t>(ax) < d.shape.size()) {
    const long long n = d.shape[static_cast<size_t>(ax)];
    for (double i : idx.data)
      if (!(i >= -static_cast<double>(n) && i < static_cast<double>(n)))
        im.node_fail("index " + format_number(i) + " is beyond the " + std::to_string(n) + " entries of " + shape_text(d.shape) + " along axis " +
                         std::to_string(ax),
                     {Note{{}, "the indices are computed from the model's sizes (a sequence longer than a position table?): give sizes the model takes"}});
  }
  LayerSpec l{"gather", {}, {}};
  l.set("axis", int_node(ax));
  if (d.is_const && d.ref.empty()) l.set("data_shape", ints_node(std::vector<long long>(d.shape.begin(), d.shape.end())));
  else l.inputs.push_back(im.ref(0));
  if (idx.is_const && idx.ref.empty()) l.set("indices_shape", ints_node(std::vector<long long>(idx.shape.begin(), idx.shape.end())));
  else l.inputs.push_back(im.ref(1));
  if (d.is_const && d.ref.empty() && !d.param) {
    // a constant table that is not a weight (e.g. a folded buffer): read through a constant layer
    l.attrs.erase(l.attrs.end() - (idx.is_const && idx.ref.empty() ? 2 : 1));
    l.inputs.insert(l.inputs.begin(), im.ref(0));
  }
  im.emit(l);
}

// Reshape, Flatten, Squeeze, Unsqueeze
void view(Importer& im, const OpConverter&) { im.reshape_to(im.view_shape(im.in(0).shape)); }

void transpose(Importer& im, const OpConverter&) {
  LayerSpec l{"permute", {}, {im.ref(0)}};
  l.set("dims", ints_node(im.transpose_perm(im.in(0).shape.size())));
  im.emit(l);
}

// DepthToSpace, SpaceToDepth
void space_depth(Importer& im, const OpConverter&) {
  const std::string& t = im.cur().op_type();
  const Shape& x = im.in(0).shape;
  long long b = im.attr_i("blocksize", 0);
  if (x.size() != 4 || b <= 0) im.node_fail("needs a rank-4 input and a positive blocksize");
  Shape y = x;
  if (t == "DepthToSpace") {
    if (x[1] % (b * b)) im.node_fail("channels " + std::to_string(x[1]) + " are not divisible by blocksize² " + std::to_string(b * b));
    y = {x[0], x[1] / (b * b), x[2] * b, x[3] * b};
  } else {
    if (x[2] % b || x[3] % b) im.node_fail("height and width must be divisible by the blocksize " + std::to_string(b));
    y = {x[0], x[1] * b * b, x[2] / b, x[3] / b};
  }
  im.reshape_to(y, "reshape_copy");
}

void expand(Importer& im, const OpConverter&) {
  auto s = im.const_ints(1, "shape");
  for (auto v : s)
    if (v <= 0) im.node_fail("target shape has dimension " + std::to_string(v));
  LayerSpec l{"expand", {}, {im.ref(0)}};
  l.set("shape", ints_node(s));
  im.emit(l);
}

void tile(Importer& im, const OpConverter&) {
  LayerSpec l{"tile", {}, {im.ref(0)}};
  l.set("repeats", ints_node(im.const_ints(1, "repeats")));
  im.emit(l);
}

void pad(Importer& im, const OpConverter&) {
  const Shape& x = im.in(0).shape;
  std::vector<long long> pads;
  if (auto p = im.attr_ints("pads")) pads = *p;
  else pads = im.const_ints(1, "pads");
  if (im.has_input(3)) {  // opset 18 axes
    auto axes = im.const_ints(3, "axes");
    std::vector<long long> full(2 * x.size(), 0);
    for (size_t i = 0; i < axes.size(); ++i) {
      long long a = axes[i] < 0 ? axes[i] + static_cast<long long>(x.size()) : axes[i];
      full[static_cast<size_t>(a)] = pads[i];
      full[static_cast<size_t>(a) + x.size()] = pads[i + axes.size()];
    }
    pads = full;
  }
  std::string mode = im.attr_s("mode", "constant");
  LayerSpec l{"pad", {}, {im.ref(0)}};
  l.set("pads", ints_node(pads));
  l.set("mode", scalar(mode));
  im.emit(l);
}

// ---------------------------------------------------------------- Resize, Upsample

// The output shape from scales or sizes (of `axes`, else of every axis; keep_aspect_ratio_policy
// applied to sizes), then upsample (4-D, N and C kept, nearest or linear) or interpolate.
void resize_to(Importer& im, const Shape& x, std::vector<long long> sizes, std::vector<double> scales) {
  Shape out = x;
  std::vector<long long> axes = im.attr_ints("axes").value_or(std::vector<long long>{});
  if (axes.empty())
    for (size_t i = 0; i < x.size(); ++i) axes.push_back(static_cast<long long>(i));
  size_t nvals = sizes.empty() ? scales.size() : sizes.size();
  if (nvals != axes.size()) im.node_fail("needs " + std::to_string(axes.size()) + " scales or sizes, got " + std::to_string(nvals));
  std::string policy = im.attr_s("keep_aspect_ratio_policy", "stretch");
  if (!sizes.empty() && policy != "stretch") {
    double scale = policy == "not_larger" ? INFINITY : 0;
    for (size_t i = 0; i < axes.size(); ++i) {
      double sc = static_cast<double>(sizes[i]) / static_cast<double>(x[static_cast<size_t>(axes[i])]);
      scale = policy == "not_larger" ? std::min(scale, sc) : std::max(scale, sc);
    }
    for (size_t i = 0; i < axes.size(); ++i)
      sizes[i] = static_cast<long long>(std::round(scale * static_cast<double>(x[static_cast<size_t>(axes[i])])));
  }
  for (size_t i = 0; i < axes.size(); ++i) {
    long long a = axes[i] < 0 ? axes[i] + static_cast<long long>(x.size()) : axes[i];
    if (a < 0 || a >= static_cast<long long>(x.size())) im.node_fail("axis " + std::to_string(axes[i]) + " is out of range");
    size_t ai = static_cast<size_t>(a);
    out[ai] = sizes.empty() ? static_cast<long long>(std::floor(static_cast<double>(x[ai]) * scales[i])) : sizes[i];
    if (out[ai] <= 0) im.node_fail("resizes dimension " + std::to_string(a) + " of " + shape_text(x) + " to " + std::to_string(out[ai]));
  }
  std::string mode = im.attr_s("mode", "nearest");
  if (mode == "bilinear") mode = "linear";
  if (mode != "nearest" && mode != "linear" && mode != "cubic") im.node_fail("mode '" + mode + "' is not nearest, linear or cubic");
  LayerSpec l;
  l.inputs = {im.ref(0)};
  if (x.size() == 4 && out[0] == x[0] && out[1] == x[1] && mode != "cubic") {
    l.op = "upsample";
    l.set("size", ints_node({out[2], out[3]}));
    l.set("mode", scalar(mode == "linear" ? "bilinear" : "nearest"));
  } else {
    l.op = "interpolate";
    l.set("size", ints_node(std::vector<long long>(out.begin(), out.end())));
    l.set("mode", scalar(mode));
  }
  im.emit(l);
}

// Upsample: scales as an attribute (opset 7) or input 1 (opset 9 on)
void upsample(Importer& im, const OpConverter&) {
  const Shape& x = im.in(0).shape;
  std::vector<double> scales;
  if (auto s = im.attr_floats("scales")) scales = *s;
  else scales = im.const_floats(1, "scales");
  resize_to(im, x, {}, std::move(scales));
}

// Resize before opset 11: scales are input 1
void resize_10(Importer& im, const OpConverter&) {
  const Shape& x = im.in(0).shape;
  resize_to(im, x, {}, im.const_floats(1, "scales"));
}

// Resize from opset 11 on: sizes (input 3) or else scales (input 2); input 1 is the ROI
void resize_11(Importer& im, const OpConverter&) {
  const Shape& x = im.in(0).shape;
  std::vector<long long> sizes;
  std::vector<double> scales;
  if (im.has_input(3) && !im.in(3).shape.empty() && count(im.in(3).shape) > 0) sizes = im.const_ints(3, "sizes");
  else if (im.has_input(2) && count(im.in(2).shape) > 0) scales = im.const_floats(2, "scales");
  else im.node_fail("has neither scales nor sizes");
  resize_to(im, x, std::move(sizes), std::move(scales));
}

// NonZero: its output's width is the count of nonzero elements, known only from the data: the
// scenario binds it (dims: {NODE.count: N}), else the node is refused
void nonzero(Importer& im, const OpConverter&) {
  const Val& x = im.in(0);
  const std::string key = im.node_name() + ".count";
  const auto c = im.bound(key);
  if (!c)
    im.node_fail("has a data-dependent shape: its output has a column per nonzero element of its input",
                 {Note{{}, "bind the count with dims: {" + key + ": N} (N at most the input's " + format_number(count(x.shape)) + " elements)"}});
  if (*c < 1 || static_cast<double>(*c) > count(x.shape))
    im.node_fail(key + " = " + std::to_string(*c) + " must be 1 to the input's " + format_number(count(x.shape)) + " elements");
  LayerSpec l{"nonzero", {}, {im.ref(0)}};
  l.set("count", int_node(*c));
  im.emit(l);
}

// TopK: k from the attribute (opset < 10) or the constant second input
void topk(Importer& im, const OpConverter&) {
  long long k = im.attr_i("k", 0);
  if (im.has_input(1)) {
    const auto v = im.const_ints(1, "k");
    if (v.size() != 1) im.node_fail("k must be one number");
    k = v[0];
  }
  if (k <= 0) im.node_fail("needs k (a positive count)");
  LayerSpec l{"topk", {}, {im.ref(0)}};
  l.set("k", int_node(k));
  l.set("axis", int_node(im.axis_attr("axis", -1, im.in(0).shape.size())));
  im.emit(l, 2);
}

void grid_sample(Importer& im, const OpConverter&) {
  std::string mode = im.attr_s("mode", "bilinear");
  if (mode == "linear") mode = "bilinear";  // (opset 20's names)
  if (mode == "cubic") mode = "bicubic";
  if (mode != "bilinear" && mode != "nearest" && mode != "bicubic") im.node_fail("unknown mode '" + mode + "'");
  LayerSpec l{"grid_sample", {}, {im.ref(0), im.ref(1)}};
  l.set("mode", scalar(mode));
  im.emit(l);
}

// ScatterND / ScatterElements of an activation: a copy of data with the updates written in
// (constant ones were folded); the index checks are the folding's
void scatter(Importer& im, const OpConverter&) {
  if (!im.has_input(2)) im.node_fail("needs data, indices and updates");
  LayerSpec l{"scatter", {}, {im.ref(0), im.ref(1), im.ref(2)}};
  const std::string red = im.attr_s("reduction", "none");
  if (red != "none" && red != "add" && red != "mul" && red != "max" && red != "min") im.node_fail("unknown reduction '" + red + "'");
  l.set("reduction", scalar(red));
  im.emit(l);
}

}  // namespace

const std::vector<OpConverter>& tensor_converters() {
  static const std::vector<OpConverter> v = {
      {"Concat", "concat", concat},
      {"Split", "split", split},
      {"Slice", "slice (one axis, positive step) or slice_nd", slice},
      {"Gather", "gather", gather},
      {"Reshape", "reshape", view},
      {"Flatten", "reshape", view},
      {"Squeeze", "reshape", view},
      {"Unsqueeze", "reshape", view},
      {"Transpose", "permute", transpose},
      {"DepthToSpace", "reshape_copy", space_depth},
      {"SpaceToDepth", "reshape_copy", space_depth},
      {"Expand", "expand", expand},
      {"Tile", "tile", tile},
      {"Resize", "upsample (2-D nearest/linear) or interpolate", resize_10, {}, 0, 10},
      {"Resize", "upsample (2-D nearest/linear) or interpolate", resize_11, {}, 11},
      {"Upsample", "upsample (2-D nearest/linear) or interpolate", upsample},
      {"Pad", "pad", pad},
      {"TopK", "topk", topk},
      {"NonZero", "nonzero (its count bound by dims: {NODE.count: N})", nonzero},
      {"GridSample", "grid_sample", grid_sample},
      {"ScatterND", "scatter (folded when every input is constant)", scatter},
      {"ScatterElements", "scatter (folded when every input is constant)", scatter},
  };
  return v;
}

}  // namespace onnx_detail

}  // namespace rsim
