// Constant folding: shape computations (Shape → Gather → Concat → Reshape, Range, ConstantOfShape,
// small integer arithmetic, ...) are evaluated at import time and become constants that later
// nodes read as attributes, not layers. Shape, Size, Constant, ConstantOfShape and Range are only
// ever folded (folded_converters: no converter); any other node folds when all its inputs are
// known constants and its result is small (kMaxFold elements).
#include <algorithm>
#include <cmath>

#include "importers/onnx/importer.hpp"

namespace rsim {

namespace onnx_detail {

const std::vector<OpConverter>& folded_converters() {
  static const std::vector<OpConverter> v = {
      {"Shape", "folded"},
      {"Size", "folded"},
      {"Constant", "folded (or constant)"},
      {"ConstantOfShape", "folded (or constant)"},
      {"Range", "folded"},
  };
  return v;
}

namespace {

// Row-major strides of a shape.
std::vector<double> strides_of(const Shape& s) {
  std::vector<double> st(s.size(), 1);
  for (size_t i = s.size(); i-- > 1;) st[i - 1] = st[i] * static_cast<double>(s[i]);
  return st;
}

// The flat index into `in` (broadcast against `out`) of output element `o`.
size_t bcast_index(size_t o, const Shape& out, const Shape& in) {
  size_t idx = 0, mul = 1;
  for (size_t k = 0; k < out.size(); ++k) {
    size_t i = out.size() - 1 - k;
    size_t coord = o % static_cast<size_t>(out[i]);
    o /= static_cast<size_t>(out[i]);
    if (k < in.size()) {
      size_t j = in.size() - 1 - k;
      if (in[j] != 1) idx += coord * mul;
      mul *= static_cast<size_t>(in[j]);
    }
  }
  return idx;
}

bool int_elem(const Val& v) { return is_int_type(v.elem); }

}  // namespace

// ---------------------------------------------------------------- folding

bool Importer::all_const_data() {
  for (int i = 0; i < cur_->input_size(); ++i) {
    if (!has_input(i)) continue;
    Val& v = in(i);
    if (!v.is_const || !v.has_data) return false;
  }
  return true;
}

bool Importer::fold_elementwise(const std::function<double(const std::vector<double>&)>& f, bool out_int, int arity) {
  // f reads `arity` arguments: a node with fewer inputs (fuzz_onnx: a one-input Add) is an error
  // (a Max or Min of no inputs, too); in(i) reports an empty input
  if (cur_->input_size() < std::max(arity, 1))
    node_fail("has " + std::to_string(cur_->input_size()) + " input" + (cur_->input_size() == 1 ? "" : "s") + "; " + cur_->op_type() + " takes " +
              std::to_string(std::max(arity, 1)));
  std::vector<Val*> ins;
  for (int i = 0; i < arity; ++i) ins.push_back(&in(i));
  Shape out = ins[0]->shape;
  for (size_t i = 1; i < ins.size(); ++i) {
    const Shape& b = ins[i]->shape;
    size_t r = std::max(out.size(), b.size());
    Shape o(r);
    for (size_t k = 0; k < r; ++k) {
      long long da = k < r - out.size() ? 1 : out[k - (r - out.size())];
      long long db = k < r - b.size() ? 1 : b[k - (r - b.size())];
      if (da != db && da != 1 && db != 1) node_fail("cannot broadcast " + shape_text(out) + " with " + shape_text(b));
      o[k] = da == 1 ? db : da;
    }
    out = o;
  }
  if (count(out) > kMaxFold) return false;
  size_t n = static_cast<size_t>(count(out));
  std::vector<double> data(n);
  std::vector<double> args(ins.size());
  for (size_t o = 0; o < n; ++o) {
    for (size_t i = 0; i < ins.size(); ++i) args[i] = ins[i]->data[bcast_index(o, out, ins[i]->shape)];
    data[o] = f(args);
  }
  set_out(0, const_val(out, std::move(data), out_int));
  return true;
}

Val Importer::reshaped(const Val& v, Shape s) {
  Val o = const_val(std::move(s), v.data, int_elem(v));
  o.elem = v.elem;
  if (!v.has_data) o.has_data = false, o.data.clear();
  return o;
}

// Constant: its value attribute as a constant
bool Importer::fold_constant() {
  Val v;
  if (const auto* a = attr("value")) v = tensor_val(a->t());
  else if (const auto* f = attr("value_float")) v = const_val({}, {static_cast<double>(f->f())}, false);
  else if (const auto* fs = attr("value_floats")) v = const_val({static_cast<long long>(fs->floats_size())}, std::vector<double>(fs->floats().begin(), fs->floats().end()), false);
  else if (const auto* i = attr("value_int")) v = const_val({}, {static_cast<double>(i->i())}, true);
  else if (const auto* is = attr("value_ints")) {
    std::vector<double> d;
    for (auto x : is->ints()) d.push_back(static_cast<double>(x));
    v = const_val({static_cast<long long>(is->ints_size())}, d, true);
  } else node_fail("has no value rsim can read (sparse or string constants are not supported)");
  v.const_name = cur_name_;
  v.param = false;
  set_out(0, v);
  return true;
}

// Shape (a slice of its input's dimensions) and Size, known from the shapes alone
bool Importer::fold_shape(const std::string& t) {
  Val& x = in(0);
  if (t == "Size") {
    set_out(0, const_val({}, {count(x.shape)}, true));
    return true;
  }
  long long r = static_cast<long long>(x.shape.size());
  long long b = attr_i("start", 0), e = attr_i("end", r);
  if (b < 0) b += r;
  if (e < 0) e += r;
  b = std::clamp(b, 0LL, r);
  e = std::clamp(e, 0LL, r);
  std::vector<double> d;
  for (long long i = b; i < e; ++i) d.push_back(static_cast<double>(x.shape[static_cast<size_t>(i)]));
  set_out(0, const_val({static_cast<long long>(d.size())}, d, true));
  return true;
}

// ConstantOfShape: its value over a known shape (no data past kMaxFold elements)
bool Importer::fold_constant_of_shape() {
  auto s = const_ints(0, "shape");
  Shape sh(s.begin(), s.end());
  for (auto d : sh)
    if (d < 0) node_fail("shape has a negative dimension");
  double value = 0;
  bool is_int = false;
  if (const auto* a = attr("value")) {
    Val tv = tensor_val(a->t());
    if (tv.has_data && !tv.data.empty()) value = tv.data[0];
    is_int = int_elem(tv);
  }
  Val v = const_val(sh, count(sh) <= kMaxFold ? std::vector<double>(static_cast<size_t>(count(sh)), value) : std::vector<double>{}, is_int);
  set_out(0, v);
  return true;
}

// Range of known start, limit and delta
bool Importer::fold_range() {
  if (!all_const_data()) return false;
  double s = const_floats(0, "start")[0], l = const_floats(1, "limit")[0], d = const_floats(2, "delta")[0];
  // (a NaN limit made the element count NaN, and the next node took the blame)
  if (!std::isfinite(s) || !std::isfinite(l) || !std::isfinite(d))
    node_fail("start, limit and delta must be finite numbers; got start " + format_number(s) + ", limit " + format_number(l) + ", delta " + format_number(d));
  if (d == 0) node_fail("delta is 0");
  double n = std::max(std::ceil((l - s) / d), 0.0);
  if (n > 1e9) node_fail("would have " + format_number(n) + " elements");
  std::vector<double> data;
  if (n <= kMaxFold)
    for (double i = 0; i < n; ++i) data.push_back(s + i * d);
  set_out(0, const_val({static_cast<long long>(n)}, data, int_elem(in(0))));
  return true;
}

// A node whose inputs are not all known: shape-only constants (masks whose values nobody needs) stay
// constant without data
bool Importer::fold_shape_only(const std::string& t) {
  // shape-only constants: results whose values nobody needs (masks) stay constant without data
  if (cur_->input_size() > 0 && (t == "Trilu" || t == "Cast" || t == "Identity" || t == "Expand" || t == "Where" || t == "ScatterND" || t == "ScatterElements")) {
    bool consts = true;
    for (int i = 0; i < cur_->input_size(); ++i)
      if (has_input(i) && !in(i).is_const) consts = false;
    if (consts && (t == "Trilu" || t == "Cast" || t == "Identity" || t == "ScatterND" || t == "ScatterElements")) {
      Val v = in(0);
      v.ref.clear();
      v.has_data = false;
      v.data.clear();
      v.param = false;
      v.const_name = cur_name_;
      set_out(0, v);
      return true;
    }
  }
  return false;
}

// Cast and CastLike of a known value: integers truncated, booleans 0 or 1
bool Importer::fold_cast(const std::string& t) {
  auto I = [](double x) { return std::trunc(x); };
  int to = t == "Cast" ? static_cast<int>(attr_i("to", 1)) : in(1).elem;
  Val v = in(0);
  v.ref.clear();
  v.elem = to;
  v.param = false;
  v.const_name = cur_name_;
  for (auto& x : v.data) {
    if (to == onnx::TensorProto::BOOL) x = x != 0;
    else if (is_int_type(to)) x = I(x);
  }
  set_out(0, v);
  return true;
}

// The elementwise ops of known inputs (broadcast): nullopt for any other op
std::optional<bool> Importer::fold_math(const std::string& t, bool iout) {
  if (t == "Add") return fold_elementwise([](const auto& a) { return a[0] + a[1]; }, iout, 2);
  if (t == "Sub") return fold_elementwise([](const auto& a) { return a[0] - a[1]; }, iout, 2);
  if (t == "Mul") return fold_elementwise([](const auto& a) { return a[0] * a[1]; }, iout, 2);
  if (t == "Div")
    return fold_elementwise(
        [&](const auto& a) {
          if (iout && a[1] == 0) node_fail("divides by zero");
          return iout ? std::trunc(a[0] / a[1]) : a[0] / a[1];
        },
        iout, 2);
  if (t == "Mod")
    return fold_elementwise(
        [&](const auto& a) {
          if (a[1] == 0) node_fail("takes a remainder by zero");
          double r = std::fmod(a[0], a[1]);
          if (attr_i("fmod", 0) == 0 && r != 0 && ((r < 0) != (a[1] < 0))) r += a[1];
          return r;
        },
        iout, 2);
  if (t == "Pow") return fold_elementwise([](const auto& a) { return std::pow(a[0], a[1]); }, iout, 2);
  if (t == "Equal") return fold_elementwise([](const auto& a) { return double(a[0] == a[1]); }, true, 2);
  if (t == "Less") return fold_elementwise([](const auto& a) { return double(a[0] < a[1]); }, true, 2);
  if (t == "Greater") return fold_elementwise([](const auto& a) { return double(a[0] > a[1]); }, true, 2);
  if (t == "LessOrEqual") return fold_elementwise([](const auto& a) { return double(a[0] <= a[1]); }, true, 2);
  if (t == "GreaterOrEqual") return fold_elementwise([](const auto& a) { return double(a[0] >= a[1]); }, true, 2);
  if (t == "And") return fold_elementwise([](const auto& a) { return double(a[0] != 0 && a[1] != 0); }, true, 2);
  if (t == "Or") return fold_elementwise([](const auto& a) { return double(a[0] != 0 || a[1] != 0); }, true, 2);
  if (t == "Not") return fold_elementwise([](const auto& a) { return double(a[0] == 0); }, true, 1);
  if (t == "Neg") return fold_elementwise([](const auto& a) { return -a[0]; }, iout, 1);
  if (t == "Abs") return fold_elementwise([](const auto& a) { return std::fabs(a[0]); }, iout, 1);
  if (t == "Floor") return fold_elementwise([](const auto& a) { return std::floor(a[0]); }, iout, 1);
  if (t == "Ceil") return fold_elementwise([](const auto& a) { return std::ceil(a[0]); }, iout, 1);
  if (t == "Sqrt") return fold_elementwise([](const auto& a) { return std::sqrt(a[0]); }, iout, 1);
  if (t == "Sign") return fold_elementwise([](const auto& a) { return double((a[0] > 0) - (a[0] < 0)); }, iout, 1);
  if (t == "Reciprocal") return fold_elementwise([](const auto& a) { return 1 / a[0]; }, iout, 1);
  if (t == "Where") return fold_elementwise([](const auto& a) { return a[0] != 0 ? a[1] : a[2]; }, int_elem(in(1)), 3);
  if (t == "Max" || t == "Min") {
    bool mx = t == "Max";
    return fold_elementwise(
        [mx](const auto& a) {
          double r = a[0];
          for (double x : a) r = mx ? std::max(r, x) : std::min(r, x);
          return r;
        },
        iout, cur_->input_size());
  }
  return std::nullopt;
}

// Concat of known tensors along an axis
bool Importer::fold_concat(bool iout) {
  Val& a = in(0);
  size_t r = a.shape.size();
  long long ax = attr_i("axis", 0);
  if (ax < 0) ax += static_cast<long long>(r);
  if (ax < 0 || ax >= static_cast<long long>(r)) node_fail("axis out of range");
  size_t axis = static_cast<size_t>(ax);
  Shape out = a.shape;
  out[axis] = 0;
  for (int i = 0; i < cur_->input_size(); ++i) {
    Val& v = in(i);
    if (v.shape.size() != r) node_fail("inputs differ in rank");
    out[axis] += v.shape[axis];
  }
  if (count(out) > kMaxFold) return false;
  double outer = 1;
  for (size_t k = 0; k < axis; ++k) outer *= static_cast<double>(out[k]);
  std::vector<double> data;
  for (double o = 0; o < outer; ++o)
    for (int i = 0; i < cur_->input_size(); ++i) {
      Val& v = in(i);
      double inner = 1;
      for (size_t k = axis; k < r; ++k) inner *= static_cast<double>(v.shape[k]);
      size_t base = static_cast<size_t>(o * inner);
      for (size_t k = 0; k < static_cast<size_t>(inner); ++k) data.push_back(v.data[base + k]);
    }
  set_out(0, const_val(out, data, iout));
  return true;
}

// Gather of known data at known indices along an axis
bool Importer::fold_gather() {
  Val& d = in(0);
  Val& idx = in(1);
  if (d.shape.empty()) node_fail("gathers from a scalar");
  long long ax = attr_i("axis", 0);
  if (ax < 0) ax += static_cast<long long>(d.shape.size());
  if (ax < 0 || ax >= static_cast<long long>(d.shape.size())) node_fail("axis out of range");
  size_t axis = static_cast<size_t>(ax);
  Shape out(d.shape.begin(), d.shape.begin() + static_cast<long>(axis));
  out.insert(out.end(), idx.shape.begin(), idx.shape.end());
  out.insert(out.end(), d.shape.begin() + static_cast<long>(axis) + 1, d.shape.end());
  if (count(out) > kMaxFold) return false;
  double outer = 1, inner = 1;
  for (size_t k = 0; k < axis; ++k) outer *= static_cast<double>(d.shape[k]);
  for (size_t k = axis + 1; k < d.shape.size(); ++k) inner *= static_cast<double>(d.shape[k]);
  long long n = d.shape[axis];
  std::vector<double> data;
  for (double o = 0; o < outer; ++o)
    for (double id : idx.data) {
      // range-checked as a double first: a huge or NaN index must not reach the integer cast
      if (!(id >= -static_cast<double>(n) && id < static_cast<double>(n)))
        node_fail("index " + format_number(id) + " is out of range for dimension " + std::to_string(n));
      long long j = static_cast<long long>(id);
      if (j < 0) j += n;
      for (double k = 0; k < inner; ++k) data.push_back(d.data[static_cast<size_t>((o * static_cast<double>(n) + static_cast<double>(j)) * inner + k)]);
    }
  set_out(0, const_val(out, data, int_elem(d)));
  return true;
}

// Slice of a known tensor
bool Importer::fold_slice(bool iout) {
  Val& x = in(0);
  auto sl = slice_params(x.shape);
  Shape out = x.shape;
  for (const auto& s : sl) out[s.axis] = s.len;
  if (count(out) > kMaxFold) return false;
  size_t n = static_cast<size_t>(count(out));
  std::vector<double> data(n);
  auto st_in = strides_of(x.shape);
  for (size_t o = 0; o < n; ++o) {
    size_t rem = o;
    double src = 0;
    std::vector<long long> coord(out.size());
    for (size_t k = out.size(); k-- > 0;) {
      coord[k] = static_cast<long long>(rem % static_cast<size_t>(out[k]));
      rem /= static_cast<size_t>(out[k]);
    }
    for (size_t k = 0; k < out.size(); ++k) {
      long long c = coord[k];
      for (const auto& s : sl)
        if (s.axis == k) c = s.start + c * s.step;
      src += static_cast<double>(c) * st_in[k];
    }
    data[o] = x.data[static_cast<size_t>(src)];
  }
  set_out(0, const_val(out, data, iout));
  return true;
}

// Transpose of a known tensor
bool Importer::fold_transpose(bool iout) {
  Val& x = in(0);
  auto perm = transpose_perm(x.shape.size());
  Shape out;
  for (auto p : perm) out.push_back(x.shape[static_cast<size_t>(p)]);
  size_t n = static_cast<size_t>(count(out));
  auto st_in = strides_of(x.shape);
  std::vector<double> data(n);
  for (size_t o = 0; o < n; ++o) {
    size_t rem = o;
    double src = 0;
    for (size_t k = out.size(); k-- > 0;) {
      src += static_cast<double>(rem % static_cast<size_t>(out[k])) * st_in[static_cast<size_t>(perm[k])];
      rem /= static_cast<size_t>(out[k]);
    }
    data[o] = x.data[static_cast<size_t>(src)];
  }
  set_out(0, const_val(out, data, iout));
  return true;
}

// Expand of a known tensor to a known shape (no data past kMaxFold elements)
bool Importer::fold_expand(bool iout) {
  auto s = const_ints(1, "shape");
  Shape target(s.begin(), s.end());
  Val& x = in(0);
  Shape out = bcast(x.shape, target);
  if (count(out) > kMaxFold) {
    Val v = const_val(out, {}, iout);
    set_out(0, v);
    return true;
  }
  size_t n = static_cast<size_t>(count(out));
  std::vector<double> data(n);
  for (size_t o = 0; o < n; ++o) data[o] = x.data[bcast_index(o, out, x.shape)];
  set_out(0, const_val(out, data, iout));
  return true;
}

// Tile of a known tensor by known repeats
bool Importer::fold_tile(bool iout) {
  auto rp = const_ints(1, "repeats");
  Val& x = in(0);
  if (rp.size() != x.shape.size()) node_fail("needs one repeat count per axis");
  for (auto v : rp)
    if (v < 1 || v > 1000000000LL) node_fail("repeat count " + std::to_string(v) + " is out of range (1 to 1e9)");
  Shape out = x.shape;
  for (size_t k = 0; k < out.size(); ++k) out[k] *= rp[k];
  if (count(out) > kMaxFold) return false;
  size_t n = static_cast<size_t>(count(out));
  auto st_in = strides_of(x.shape);
  std::vector<double> data(n);
  for (size_t o = 0; o < n; ++o) {
    size_t rem = o;
    double src = 0;
    for (size_t k = out.size(); k-- > 0;) {
      src += static_cast<double>((rem % static_cast<size_t>(out[k])) % static_cast<size_t>(x.shape[k])) * st_in[k];
      rem /= static_cast<size_t>(out[k]);
    }
    data[o] = x.data[static_cast<size_t>(src)];
  }
  set_out(0, const_val(out, data, iout));
  return true;
}

// ReduceProd, ReduceSum, ReduceMax and ReduceMin of a known tensor
bool Importer::fold_reduce(const std::string& t, bool iout) {
  Val& x = in(0);
  std::optional<std::vector<long long>> axes = attr_ints("axes");
  if (!axes && has_input(1)) axes = const_ints(1, "axes");
  bool keep = attr_i("keepdims", 1) != 0;
  size_t r = x.shape.size();
  std::vector<bool> red(r, !axes || axes->empty());
  if (axes)
    for (auto a : *axes) red[static_cast<size_t>(a < 0 ? a + static_cast<long long>(r) : a)] = true;
  if (axes && axes->empty() && attr_i("noop_with_empty_axes", 0)) red.assign(r, false);
  Shape out, kept;
  for (size_t k = 0; k < r; ++k) {
    if (!red[k]) out.push_back(x.shape[k]);
    else if (keep) out.push_back(1);
    kept.push_back(red[k] ? 1 : x.shape[k]);
  }
  size_t n = static_cast<size_t>(count(kept));
  double init = t == "ReduceProd" ? 1 : t == "ReduceSum" ? 0 : t == "ReduceMax" ? -INFINITY : INFINITY;
  std::vector<double> data(n, init);
  auto st_k = strides_of(kept);
  for (size_t i = 0; i < x.data.size(); ++i) {
    size_t rem = i;
    double dst = 0;
    for (size_t k = r; k-- > 0;) {
      size_t c = rem % static_cast<size_t>(x.shape[k]);
      rem /= static_cast<size_t>(x.shape[k]);
      if (!red[k]) dst += static_cast<double>(c) * st_k[k];
    }
    double& acc = data[static_cast<size_t>(dst)];
    double v = x.data[i];
    acc = t == "ReduceProd" ? acc * v : t == "ReduceSum" ? acc + v : t == "ReduceMax" ? std::max(acc, v) : std::min(acc, v);
  }
  set_out(0, const_val(out, data, iout));
  return true;
}

// ScatterND and ScatterElements of known inputs (shape computations, masks)
bool Importer::fold_scatter(const std::string& t) {
  Val v = in(0);
  const Val& idx = in(1);
  const Val& up = in(2);
  if (count(v.shape) > kMaxFold) return false;
  const std::string red = attr_s("reduction", "none");
  auto put = [&](size_t at, double x) {
    double& o = v.data[at];
    o = red == "add" ? o + x : red == "mul" ? o * x : red == "max" ? std::max(o, x) : red == "min" ? std::min(o, x) : x;
  };
  const auto st = strides_of(v.shape);
  auto index = [&](double id, long long n) {  // range-checked as a double before the cast
    if (!(id >= -static_cast<double>(n) && id < static_cast<double>(n)))
      node_fail("index " + format_number(id) + " is out of range for dimension " + std::to_string(n));
    long long j = static_cast<long long>(id);
    return static_cast<double>(j < 0 ? j + n : j);
  };
  if (t == "ScatterND") {
    if (idx.shape.empty()) node_fail("indices must have rank 1 or more");
    const size_t k = static_cast<size_t>(idx.shape.back());
    if (k > v.shape.size()) node_fail("indices index " + std::to_string(k) + " dimensions of data of rank " + std::to_string(v.shape.size()));
    const size_t tuples = static_cast<size_t>(count(idx.shape) / static_cast<double>(std::max<size_t>(k, 1)));
    double slice = 1;
    for (size_t q = k; q < v.shape.size(); ++q) slice *= static_cast<double>(v.shape[q]);
    if (static_cast<double>(tuples) * slice != count(up.shape)) node_fail("updates " + shape_text(up.shape) + " do not match the indexed slices");
    for (size_t u = 0; u < tuples; ++u) {
      double base = 0;
      for (size_t q = 0; q < k; ++q) base += index(idx.data[u * k + q], v.shape[q]) * st[q];
      for (size_t e = 0; e < static_cast<size_t>(slice); ++e) put(static_cast<size_t>(base) + e, up.data[u * static_cast<size_t>(slice) + e]);
    }
  } else {
    long long ax = attr_i("axis", 0);
    if (ax < 0) ax += static_cast<long long>(v.shape.size());
    if (ax < 0 || ax >= static_cast<long long>(v.shape.size()) || idx.shape.size() != v.shape.size() || up.shape != idx.shape)
      node_fail("indices " + shape_text(idx.shape) + " and updates " + shape_text(up.shape) + " do not fit data " + shape_text(v.shape));
    const auto ist = strides_of(idx.shape);
    for (size_t e = 0; e < idx.data.size(); ++e) {
      double at = 0;
      size_t rem = e;
      for (size_t q = 0; q < idx.shape.size(); ++q) {
        const size_t c = rem / static_cast<size_t>(ist[q]);
        rem %= static_cast<size_t>(ist[q]);
        at += (static_cast<long long>(q) == ax ? index(idx.data[e], v.shape[q]) : static_cast<double>(c)) * st[q];
      }
      put(static_cast<size_t>(at), up.data[e]);
    }
  }
  v.ref.clear();
  v.param = false;
  v.const_name = cur_name_;
  set_out(0, v);
  return true;
}

bool Importer::try_fold() {
  const std::string& t = cur_->op_type();
  if (t == "Constant") return fold_constant();
  if (t == "Shape" || t == "Size") return fold_shape(t);
  if (t == "ConstantOfShape") return fold_constant_of_shape();
  if (t == "Range") return fold_range();
  // everything else folds only when every input is a known constant
  if (cur_->input_size() == 0 || !all_const_data()) return fold_shape_only(t);
  bool iout = int_elem(in(0));
  if (t == "Identity" || t == "Dropout" || t == "Trilu") {
    Val v = in(0);
    v.ref.clear();
    v.const_name = cur_name_;
    if (t == "Trilu") v.has_data = false, v.data.clear();
    set_out(0, v);
    return true;
  }
  if (t == "Cast" || t == "CastLike") return fold_cast(t);
  if (const std::optional<bool> folded = fold_math(t, iout)) return *folded;
  if (t == "Unsqueeze" || t == "Squeeze" || t == "Reshape" || t == "Flatten") {
    Shape s = view_shape(in(0).shape);
    set_out(0, reshaped(in(0), s));
    return true;
  }
  if (t == "Concat") return fold_concat(iout);
  if (t == "Gather") return fold_gather();
  if (t == "Slice") return fold_slice(iout);
  if (t == "Transpose") return fold_transpose(iout);
  if (t == "Expand") return fold_expand(iout);
  if (t == "ReduceProd" || t == "ReduceSum" || t == "ReduceMax" || t == "ReduceMin") return fold_reduce(t, iout);
  if (t == "ScatterND" || t == "ScatterElements") return fold_scatter(t);  // (shape computations, masks: every input known)
  if (t == "Tile") return fold_tile(iout);
  return false;
}

Shape Importer::bcast(const Shape& a, const Shape& b) {
  size_t r = std::max(a.size(), b.size());
  Shape o(r);
  for (size_t k = 0; k < r; ++k) {
    long long da = k < r - a.size() ? 1 : a[k - (r - a.size())];
    long long db = k < r - b.size() ? 1 : b[k - (r - b.size())];
    if (da != db && da != 1 && db != 1) node_fail("cannot broadcast " + shape_text(a) + " with " + shape_text(b));
    o[k] = da == 1 ? db : da;
  }
  return o;
}

}  // namespace onnx_detail

}  // namespace rsim
