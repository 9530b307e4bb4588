// Layer timing with oneDNN: one primitive per layer on the layer's own shapes and dtype; inputs
// in the layout the primitive prefers (reorders at layer boundaries are not timed); warm-up, then
// timed repetitions, each waited for; median and range. The only file that includes dnnl.hpp.
#include <oneapi/dnnl/dnnl.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <functional>
#include <memory>

#include "engine/model/tensor.hpp"
#include "measure/cpu.hpp"
#include "measure/layer_timing.hpp"

namespace rsim::measure {

namespace {

using dt = dnnl::memory::data_type;
using tag = dnnl::memory::format_tag;
using dims = dnnl::memory::dims;

dnnl::engine& cpu_engine() {
  static dnnl::engine e(dnnl::engine::kind::cpu, 0);
  return e;
}

std::optional<dt> data_type(DType t) {
  switch (t) {
    case DType::fp32: return dt::f32;
    case DType::bf16: return dt::bf16;
    case DType::fp16: return dt::f16;
    case DType::int8: return dt::s8;
    default: return std::nullopt;
  }
}

dims to_dims(const Shape& s) { return dims(s.begin(), s.end()); }

tag plain_tag(size_t rank) {
  switch (rank) {
    case 1: return tag::a;
    case 2: return tag::ab;
    case 3: return tag::abc;
    case 4: return tag::abcd;
    case 5: return tag::abcde;
    default: return tag::abcdef;
  }
}

dnnl::memory::desc plain(const Shape& s, dt t) { return dnnl::memory::desc(to_dims(s), t, plain_tag(s.size())); }
// Activations of pooling, normalisation and elementwise layers: channels-last for 4-D tensors (the
// layout oneDNN's optimised kernels take, as in a framework that keeps activations in it), plain
// otherwise.
dnnl::memory::desc act(const Shape& s, dt t) { return s.size() == 4 ? dnnl::memory::desc(to_dims(s), t, tag::acdb) : plain(s, t); }
dnnl::memory::desc any(const Shape& s, dt t) { return dnnl::memory::desc(to_dims(s), t, tag::any); }

// A primitive ready to run: the primitive, its descriptor (for the execution arguments), a name.
struct Prepared {
  dnnl::primitive prim;
  dnnl::primitive_desc_base pd;
  std::string name;
  std::vector<dnnl::memory::desc> dst_mds;
};

template <class P, class PD>
Prepared make(const PD& pd, const char* name) {
  Prepared p{P(pd), pd, name, {pd.dst_desc()}};
  return p;
}

// The window's padding (begin, end) for the output size the engine computed.
std::pair<long long, long long> pads_of(const Layer& L, size_t axis, long long in, long long out, long long k, long long s, long long d) {
  long long begin = -1;
  const AttrValue& pad = L.attrs.at("padding");
  if (pad.s == "valid") begin = 0;
  else if (pad.s != "same" && pad.ints.size() > axis) begin = pad.ints[axis];
  return window_padding(in, out, k, s, d, begin);
}

// A layer's primitive being described: the layer, its dtype, where a refusal says why, the engine,
// the operator, the first input and output shapes, the propagation kind and the dtypes of the
// sources, weights and results; a member function per operator family.
struct LayerPrimitive {
  const Layer& L;
  dt t;
  std::string& why;
  dnnl::engine& eng;
  const std::string& op;
  const Shape& x;
  const Shape& y;
  dnnl::prop_kind pk;
  dt src_t, wei_t, dst_t;

  // conv2d, depthwise_conv2d
  Prepared convolution() const {
    long long g = op == "depthwise_conv2d" ? x[1] : L.attrs.i("groups");
    const auto& k = L.attrs.ints("kernel");
    const auto& s = L.attrs.ints("stride");
    const auto& dl = L.attrs.ints("dilation");
    auto ph = pads_of(L, 0, x[2], y[2], k[0], s[0], dl[0]);
    auto pw = pads_of(L, 1, x[3], y[3], k[1], s[1], dl[1]);
    dims wd = g == 1 ? dims{y[1], x[1], k[0], k[1]} : dims{g, y[1] / g, x[1] / g, k[0], k[1]};
    bool bias = L.attrs.b("bias");
    dnnl::memory::desc wmd(wd, wei_t, tag::any), bmd = bias ? dnnl::memory::desc({y[1]}, t == dt::s8 ? dt::s32 : t, tag::a) : dnnl::memory::desc();
    dnnl::convolution_forward::desc d(pk, dnnl::algorithm::convolution_direct, any(x, src_t), wmd, bmd, any(y, dst_t), {s[0], s[1]},
                                      {dl[0] - 1, dl[1] - 1}, {ph.first, pw.first}, {ph.second, pw.second});
    return make<dnnl::convolution_forward>(dnnl::convolution_forward::primitive_desc(d, eng), "convolution");
  }

  // conv_transpose2d
  Prepared deconvolution() const {
    long long g = L.attrs.i("groups");
    const auto& k = L.attrs.ints("kernel");
    const auto& s = L.attrs.ints("stride");
    const auto& dl = L.attrs.ints("dilation");
    const auto& p = L.attrs.ints("padding");
    // output = (in − 1)·s − pl − pr + d·(k − 1) + 1: pr absorbs output_padding
    long long prh = (x[2] - 1) * s[0] + dl[0] * (k[0] - 1) + 1 - p[0] - y[2];
    long long prw = (x[3] - 1) * s[1] + dl[1] * (k[1] - 1) + 1 - p[1] - y[3];
    dims wd = g == 1 ? dims{y[1], x[1], k[0], k[1]} : dims{g, y[1] / g, x[1] / g, k[0], k[1]};
    bool bias = L.attrs.b("bias");
    dnnl::memory::desc wmd(wd, wei_t, tag::any), bmd = bias ? dnnl::memory::desc({y[1]}, t, tag::a) : dnnl::memory::desc();
    dnnl::deconvolution_forward::desc d(pk, dnnl::algorithm::deconvolution_direct, any(x, src_t), wmd, bmd, any(y, dst_t), {s[0], s[1]},
                                        {dl[0] - 1, dl[1] - 1}, {p[0], p[1]}, {prh, prw});
    return make<dnnl::deconvolution_forward>(dnnl::deconvolution_forward::primitive_desc(d, eng), "deconvolution");
  }

  Prepared linear() const {
    // (B, K) × (K, N) with B the product of the leading dims
    long long K = x.back(), N = y.back(), B = 1;
    for (size_t i = 0; i + 1 < x.size(); ++i) B *= x[i];
    bool bias = L.attrs.b("bias");
    dnnl::memory::desc bmd = bias ? dnnl::memory::desc({1, N}, t == dt::s8 ? dt::s32 : t, tag::ab) : dnnl::memory::desc();
    dnnl::matmul::desc d(plain({B, K}, src_t), dnnl::memory::desc({K, N}, wei_t, tag::any), bmd, plain({B, N}, dst_t));
    Prepared p = make<dnnl::matmul>(dnnl::matmul::primitive_desc(d, eng), "matmul");
    p.dst_mds = {plain(y, dst_t)};  // reported in the layer's own shape
    return p;
  }

  std::optional<Prepared> matmul() const {
    const Shape& b = L.in_shapes.at(1);
    if (x.size() != b.size() || x.size() < 2 || x.size() > 4) {
      why = "matmul of ranks " + std::to_string(x.size()) + " and " + std::to_string(b.size()) + " (oneDNN needs equal ranks 2 to 4)";
      return std::nullopt;
    }
    dnnl::matmul::desc d(plain(x, src_t), plain(b, t == dt::s8 ? dt::s8 : t), plain(y, dst_t));
    return make<dnnl::matmul>(dnnl::matmul::primitive_desc(d, eng), "matmul");
  }

  // max_pool2d, avg_pool2d, global_avg_pool, adaptive_avg_pool2d
  std::optional<Prepared> pooling() const {
    long long kh, kw, sh, sw;
    std::pair<long long, long long> ph{0, 0}, pw{0, 0};
    if (op == "global_avg_pool") {
      kh = x[2], kw = x[3], sh = 1, sw = 1;
    } else if (op == "adaptive_avg_pool2d") {
      if (x[2] % y[2] != 0 || x[3] % y[3] != 0) {
        why = "adaptive pooling with uneven windows (" + shape_str(x) + " → " + shape_str(y) + ")";
        return std::nullopt;
      }
      sh = x[2] / y[2], sw = x[3] / y[3], kh = sh, kw = sw;
    } else {
      const auto& k = L.attrs.ints("kernel");
      kh = k[0], kw = k[1];
      sh = L.attrs.has("stride") ? L.attrs.ints("stride")[0] : kh;
      sw = L.attrs.has("stride") ? L.attrs.ints("stride")[1] : kw;
      const auto& p = L.attrs.ints("padding");
      ph = window_padding(x[2], y[2], kh, sh, 1, p[0]);
      pw = window_padding(x[3], y[3], kw, sw, 1, p[1]);
    }
    auto alg = op == "max_pool2d" ? dnnl::algorithm::pooling_max : dnnl::algorithm::pooling_avg_include_padding;
    dnnl::pooling_forward::desc d(pk, alg, act(x, t), act(y, t), {sh, sw}, {kh, kw}, {ph.first, pw.first}, {ph.second, pw.second});
    return make<dnnl::pooling_forward>(dnnl::pooling_forward::primitive_desc(d, eng), "pooling");
  }

  // transpose, permute, reshape_copy
  Prepared layout_copy() const {
    // a layout copy: read the input in one order, write it in another
    Shape src = x;
    dnnl::memory::desc smd = plain(src, t);
    dnnl::memory::desc dmd;
    if (op == "reshape_copy") {
      dmd = plain(y, t).reshape(to_dims(x));
    } else {
      std::vector<int> perm(x.size());
      for (size_t i = 0; i < perm.size(); ++i) perm[i] = static_cast<int>(i);
      if (op == "transpose") {
        long long a = L.attrs.ints("dims").at(0), b = L.attrs.ints("dims").at(1);
        if (a < 0) a += static_cast<long long>(x.size());
        if (b < 0) b += static_cast<long long>(x.size());
        std::swap(perm[static_cast<size_t>(a)], perm[static_cast<size_t>(b)]);
      } else {
        const auto& ds = L.attrs.ints("dims");
        for (size_t i = 0; i < ds.size() && i < perm.size(); ++i) perm[i] = static_cast<int>(ds[i] < 0 ? ds[i] + static_cast<long long>(x.size()) : ds[i]);
      }
      // dst: the input's dims stored in the permuted order
      dmd = plain(y, t).permute_axes(perm);
    }
    dnnl::reorder::primitive_desc pd(eng, smd, eng, dmd);
    Prepared p{dnnl::reorder(pd), pd, "reorder", {plain(y, t)}};
    return p;
  }
};

std::optional<Prepared> prepare(const Layer& L, dt t, std::string& why) {
  auto& eng = cpu_engine();
  const std::string& op = L.op->name;
  const Shape& x = L.in_shapes.at(0);
  const Shape& y = L.out_shapes.at(0);
  auto pk = dnnl::prop_kind::forward_inference;
  // integer convolutions and products: u8 activations, s8 weights, s32 results
  dt src_t = t == dt::s8 ? dt::u8 : t, wei_t = t, dst_t = t == dt::s8 ? dt::s32 : t;
  const LayerPrimitive lp{L, t, why, eng, op, x, y, pk, src_t, wei_t, dst_t};

  if (op == "conv2d" || op == "depthwise_conv2d") return lp.convolution();
  if (op == "conv_transpose2d") return lp.deconvolution();
  if (op == "linear") return lp.linear();
  if (op == "matmul") return lp.matmul();
  if (op == "max_pool2d" || op == "avg_pool2d" || op == "global_avg_pool" || op == "adaptive_avg_pool2d") return lp.pooling();
  if (op == "batchnorm") {
    dnnl::batch_normalization_forward::desc d(pk, act(x, t), 1e-5f,
                                              dnnl::normalization_flags::use_global_stats | dnnl::normalization_flags::use_scale |
                                                  dnnl::normalization_flags::use_shift);
    return make<dnnl::batch_normalization_forward>(dnnl::batch_normalization_forward::primitive_desc(d, eng), "batch_normalization");
  }
  if (op == "layernorm") {
    long long nd = L.attrs.has("dims") ? L.attrs.i("dims") : 1;
    if (nd != 1) {
      why = "layer normalisation over " + std::to_string(nd) + " dims (oneDNN normalises the last one)";
      return std::nullopt;
    }
    auto flags = L.attrs.b("affine") ? dnnl::normalization_flags::use_scale | dnnl::normalization_flags::use_shift : dnnl::normalization_flags::none;
    dnnl::layer_normalization_forward::desc d(pk, plain(x, t), 1e-5f, flags);
    return make<dnnl::layer_normalization_forward>(dnnl::layer_normalization_forward::primitive_desc(d, eng), "layer_normalization");
  }
  if (op == "softmax") {
    if (L.in_shapes.size() > 1) {  // (oneDNN 2.6's softmax takes no mask: the sum would be a second kernel)
      why = "softmax with an additive mask (oneDNN's softmax takes none)";
      return std::nullopt;
    }
    long long axis = L.attrs.has("axis") ? L.attrs.i("axis") : -1;
    if (axis < 0) axis += static_cast<long long>(x.size());
    dnnl::softmax_forward::desc d(pk, plain(x, t), static_cast<int>(axis));
    return make<dnnl::softmax_forward>(dnnl::softmax_forward::primitive_desc(d, eng), "softmax");
  }
  static const std::vector<std::pair<const char*, dnnl::algorithm>> eltwise = {
      {"relu", dnnl::algorithm::eltwise_relu},         {"leaky_relu", dnnl::algorithm::eltwise_relu},
      {"relu6", dnnl::algorithm::eltwise_clip},        {"sigmoid", dnnl::algorithm::eltwise_logistic},
      {"tanh", dnnl::algorithm::eltwise_tanh},         {"gelu", dnnl::algorithm::eltwise_gelu_erf},
      {"silu", dnnl::algorithm::eltwise_swish},        {"hardswish", dnnl::algorithm::eltwise_hardswish}};
  for (const auto& [name, alg] : eltwise)
    if (op == name) {
      float alpha = op == "leaky_relu" ? static_cast<float>(L.attrs.f("negative_slope")) : op == "silu" ? 1.f : 0.f;
      float beta = op == "relu6" ? 6.f : 0.f;
      dnnl::eltwise_forward::desc d(pk, alg, act(x, t), alpha, beta);
      return make<dnnl::eltwise_forward>(dnnl::eltwise_forward::primitive_desc(d, eng), "eltwise");
    }
  static const std::vector<std::pair<const char*, dnnl::algorithm>> binary = {
      {"add", dnnl::algorithm::binary_add}, {"sub", dnnl::algorithm::binary_sub}, {"mul", dnnl::algorithm::binary_mul}, {"div", dnnl::algorithm::binary_div}};
  for (const auto& [name, alg] : binary)
    if (op == name) {
      Shape a = L.in_shapes.at(0), b = L.in_shapes.at(1);
      while (a.size() < y.size()) a.insert(a.begin(), 1);
      while (b.size() < y.size()) b.insert(b.begin(), 1);
      dnnl::binary::desc d(alg, act(a, t), act(b, t), act(y, t));
      return make<dnnl::binary>(dnnl::binary::primitive_desc(d, eng), "binary");
    }
  if (op == "concat") {
    long long axis = L.attrs.has("axis") ? L.attrs.i("axis") : 1;
    if (axis < 0) axis += static_cast<long long>(y.size());
    std::vector<dnnl::memory::desc> srcs;
    for (const auto& s : L.in_shapes) srcs.push_back(plain(s, t));
    dnnl::concat::primitive_desc pd(plain(y, t), static_cast<int>(axis), srcs, eng);
    Prepared p{dnnl::concat(pd), pd, "concat", {pd.dst_desc()}};
    return p;
  }
  if (op == "transpose" || op == "permute" || op == "reshape_copy") return lp.layout_copy();
  why = "operator '" + op + "' has no oneDNN primitive here";
  return std::nullopt;
}

void fill(dnnl::memory& m) {
  size_t n = m.get_desc().get_size();
  auto* p = static_cast<unsigned char*>(m.get_data_handle());
  if (!p) return;
  dt t = m.get_desc().data_type();
  if (t == dt::f32) {
    float* f = reinterpret_cast<float*>(p);
    for (size_t i = 0; i < n / 4; ++i) f[i] = 0.01f * static_cast<float>(static_cast<int>(i % 17) - 8);
  } else {
    for (size_t i = 0; i < n; ++i) p[i] = static_cast<unsigned char>(i % 7);
  }
}

std::vector<char>& flush_buffer(double bytes) {
  static std::vector<char> buf;
  if (buf.size() < static_cast<size_t>(bytes)) buf.assign(static_cast<size_t>(bytes), 1);
  return buf;
}

}  // namespace

bool timing_available() { return true; }

std::string timing_backend() {
  const dnnl_version_t* v = dnnl_version();
  return "oneDNN " + std::to_string(v->major) + "." + std::to_string(v->minor) + "." + std::to_string(v->patch) + " (CPU engine)";
}

LayerTiming time_layer(const Layer& L, const TimingOptions& opt) {
  LayerTiming out;
  if (L.op->view) {
    out.why_not = "a view: moves no data";
    return out;
  }
  auto t = data_type(L.dtype);
  if (!t) {
    out.why_not = std::string("dtype ") + dtype_name(L.dtype) + " has no oneDNN type";
    return out;
  }
  std::optional<Prepared> p;
  try {
    p = prepare(L, *t, out.why_not);
  } catch (const dnnl::error& e) {
    out.why_not = std::string("oneDNN cannot run it: ") + e.what();
    return out;
  } catch (const std::exception& e) {
    out.why_not = std::string("cannot describe it to oneDNN: ") + e.what();
    return out;
  }
  if (!p) return out;
  out.primitive = p->name;
  try {
    out.impl = p->pd.impl_info_str();
  } catch (...) {
  }
  for (const auto& md : p->dst_mds) {
    Shape s;
    // md.data, not md.dims(): GCC 12 -O2 misreports the temporary vector's delete (-Wfree-nonheap-object)
    for (int i = 0; i < md.data.ndims; ++i) s.push_back(md.data.dims[i]);
    out.out_shapes.push_back(s);
  }
  // every execution argument the primitive declares, allocated and filled
  std::unordered_map<int, dnnl::memory> args;
  std::vector<int> ids = {DNNL_ARG_SRC, DNNL_ARG_SRC_1, DNNL_ARG_WEIGHTS, DNNL_ARG_BIAS, DNNL_ARG_DST, DNNL_ARG_MEAN, DNNL_ARG_VARIANCE,
                          DNNL_ARG_SCALE, DNNL_ARG_SHIFT, DNNL_ARG_WORKSPACE, DNNL_ARG_SCRATCHPAD};
  for (int i = 0; i < static_cast<int>(L.in_shapes.size()); ++i) ids.push_back(DNNL_ARG_MULTIPLE_SRC + i);
  try {
    for (int id : ids) {
      dnnl::memory::desc md = p->pd.query_md(dnnl::query::exec_arg_md, id);
      if (md.get_size() == 0) continue;
      dnnl::memory m(md, cpu_engine());
      fill(m);
      args.emplace(id, m);
    }
  } catch (const dnnl::error& e) {
    out.why_not = std::string("oneDNN cannot allocate its arguments: ") + e.what();
    return out;
  }
  dnnl::stream st(cpu_engine());
  double flush = opt.flush_bytes;
  if (opt.cold && flush <= 0) {
    double total = 0;
    for (const auto& c : read_caches()) total += c.size_bytes * std::max(1, online_cpus() / c.shared_by);
    flush = std::max(64.0 * 1024 * 1024, 2 * total);
  }
  std::vector<double> times;
  try {
    for (int i = 0; i < opt.warmup + opt.reps; ++i) {
      if (opt.cold) {
        auto& buf = flush_buffer(flush);
        for (size_t j = 0; j < buf.size(); j += 64) buf[j] = static_cast<char>(buf[j] + 1);
      }
      auto t0 = std::chrono::steady_clock::now();
      p->prim.execute(st, args);
      st.wait();
      double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      if (i >= opt.warmup) times.push_back(s);
    }
  } catch (const dnnl::error& e) {
    out.why_not = std::string("oneDNN failed while running it: ") + e.what();
    return out;
  }
  std::sort(times.begin(), times.end());
  size_t n = times.size();
  out.ran = n > 0;
  out.reps = static_cast<int>(n);
  if (n) {
    out.median_s = n % 2 ? times[n / 2] : 0.5 * (times[n / 2 - 1] + times[n / 2]);
    out.min_s = times.front();
    out.max_s = times.back();
  }
  return out;
}


}  // namespace rsim::measure
