#include "engine/graph/passes.hpp"

#include <algorithm>
#include <map>

namespace rsim {

namespace {

struct PassInfo {
  const char* name;
  const char* what;
};

const PassInfo kPasses[] = {
    {"eliminate_noops", "drop slices and upsamples that return their input's shape, and identities"},
    {"eliminate_reshapes", "of consecutive reshapes/flattens keep the last (the earlier copy vanishes)"},
    {"eliminate_layout", "of consecutive transposes/permutes keep the last (one layout change instead of two)"},
    {"eliminate_concat_split", "a concat whose only consumer splits it back into the same pieces: both vanish"},
    {"fuse_conv_bn", "fold a batchnorm into the conv before it: no BN work, no BN weights, no intermediate tensor"},
    {"fuse_conv_act", "run an activation inside the conv (or conv+BN) kernel: the pre-activation tensor stays on chip"},
    {"fuse_conv_bn_act", "both of the above"},
    {"fuse_conv_add", "add a residual inside the conv (or conv+BN) kernel: the conv's output is not written before the add"},
    {"fuse_matmul_add", "matmul/linear followed by an add (bias) becomes one GEMM kernel"},
    {"fuse_gemm_act", "an activation after a GEMM (matmul/linear, with its bias) runs inside it"},
    {"fuse_elementwise", "chains of elementwise ops (add, sub, mul, div, activations, BN) become one kernel"},
    {"fold_bn", "a batchnorm left alone becomes a scale and shift: reads 2·C constants instead of 4·C"},
};

bool is(const Layer& l, std::initializer_list<const char*> ops) {
  for (const char* o : ops)
    if (l.op->name == o) return true;
  return false;
}
bool is_conv(const Layer& l) { return is(l, {"conv2d", "depthwise_conv2d", "conv_transpose2d"}); }
bool is_act(const Layer& l) { return is(l, {"relu", "relu6", "leaky_relu", "sigmoid", "tanh", "gelu", "silu", "hardswish", "hardsigmoid"}); }
bool is_gemm(const Layer& l) { return is(l, {"linear", "matmul"}); }
bool is_elementwise(const Layer& l) { return is_act(l) || is(l, {"add", "sub", "mul", "div", "batchnorm"}); }

class Optimizer {
 public:
  Optimizer(Network& n, const std::vector<std::string>& passes) : net_(n), on_(passes) {
    if (enabled("fuse_conv_bn_act")) on_.insert(on_.end(), {"fuse_conv_bn", "fuse_conv_act"});
    index();
  }

  void run() {
    if (enabled("eliminate_noops")) eliminate_noops();
    if (enabled("eliminate_reshapes")) eliminate_chains({"reshape", "reshape_copy", "flatten"});
    if (enabled("eliminate_layout")) eliminate_chains({"transpose", "permute"});
    if (enabled("eliminate_concat_split")) eliminate_concat_split();
    fuse();
    if (enabled("fold_bn"))
      for (auto& l : net_.layers)
        if (!l.eliminated && l.op->name == "batchnorm" && l.cost.weight_bytes > 0) l.cost.weight_bytes /= 2;  // γ, β, mean, var → scale, shift
  }

 private:
  Network& net_;
  std::vector<std::string> on_;
  std::vector<std::vector<std::pair<int, int>>> consumers_;  // of output 0: (layer, input slot)
  std::vector<int> head_, tail_;                            // fusion groups

  bool enabled(const std::string& p) const { return std::find(on_.begin(), on_.end(), p) != on_.end(); }

  void index() {
    size_t n = net_.layers.size();
    consumers_.assign(n, {});
    for (size_t j = 0; j < n; ++j)
      for (size_t k = 0; k < net_.layers[j].inputs.size(); ++k) {
        const TensorRef& r = net_.layers[j].inputs[k];
        if (r.layer >= 0 && r.output == 0) consumers_[static_cast<size_t>(r.layer)].push_back({static_cast<int>(j), static_cast<int>(k)});
      }
    head_.resize(n);
    tail_.resize(n);
    for (size_t i = 0; i < n; ++i) head_[i] = tail_[i] = static_cast<int>(i);
  }

  // The only consumer of layer i's first output, or -1 (none, several, or a network output).
  int sole_consumer(size_t i) const {
    if (consumers_[i].size() != 1) return -1;
    return consumers_[i][0].first;
  }

  void eliminate(Layer& l) {
    l.eliminated = true;
    l.kernel.clear();
    l.cost.macs = l.cost.flops = l.cost.macs_executed = l.cost.flops_executed = l.cost.weight_bytes = l.cost.scale_bytes = 0;
    l.cost.kv_read_bytes = l.cost.kv_write_bytes = l.cost.scratch_bytes = l.cost.activation_bytes = 0;
    std::fill(l.cost.input_bytes.begin(), l.cost.input_bytes.end(), 0.0);
    std::fill(l.cost.output_bytes.begin(), l.cost.output_bytes.end(), 0.0);
  }

  void eliminate_noops() {
    for (auto& l : net_.layers) {
      bool same = l.in_shapes.size() == 1 && l.out_shapes.size() == 1 && l.in_shapes[0] == l.out_shapes[0];
      if ((is(l, {"slice", "upsample"}) && same) || is(l, {"identity"})) eliminate(l);
    }
  }

  void eliminate_chains(std::initializer_list<const char*> ops) {
    for (size_t i = 0; i < net_.layers.size(); ++i) {
      Layer& p = net_.layers[i];
      if (p.eliminated || !is(p, ops)) continue;
      int c = sole_consumer(i);
      if (c >= 0 && is(net_.layers[static_cast<size_t>(c)], ops) && !net_.layers[static_cast<size_t>(c)].eliminated) eliminate(p);
    }
  }

  void eliminate_concat_split() {
    for (size_t i = 0; i < net_.layers.size(); ++i) {
      Layer& cat = net_.layers[i];
      if (cat.eliminated || cat.op->name != "concat") continue;
      int c = sole_consumer(i);
      if (c < 0) continue;
      Layer& sp = net_.layers[static_cast<size_t>(c)];
      if (sp.op->name != "split" || sp.out_shapes != cat.in_shapes) continue;
      size_t rank = cat.out_shapes[0].size();
      auto axis = [rank](long long a) { return a < 0 ? a + static_cast<long long>(rank) : a; };
      if (axis(sp.attrs.i("axis")) != axis(cat.attrs.i("axis"))) continue;
      eliminate(cat);
      eliminate(sp);
    }
  }

  // Joins consumer c (reading the group's tail through input `slot`) to the group of layer p.
  void join(size_t p, size_t c, int slot) {
    Layer& P = net_.layers[p];
    Layer& C = net_.layers[c];
    int h = head_[p];
    P.cost.output_bytes[0] = 0;                           // not written...
    C.cost.input_bytes[static_cast<size_t>(slot)] = 0;    // ...and not read back
    C.kernel = net_.layers[static_cast<size_t>(h)].kernel;
    head_[c] = h;
    tail_[static_cast<size_t>(h)] = static_cast<int>(c);
  }

  void fuse() {
    for (size_t c = 0; c < net_.layers.size(); ++c) {
      Layer& C = net_.layers[c];
      if (C.eliminated || C.op->view) continue;
      for (size_t slot = 0; slot < C.inputs.size(); ++slot) {
        const TensorRef& r = C.inputs[slot];
        if (r.layer < 0 || r.output != 0) continue;
        size_t p = static_cast<size_t>(r.layer);
        const Layer& P = net_.layers[p];
        if (P.eliminated || sole_consumer(p) != static_cast<int>(c) || tail_[static_cast<size_t>(head_[p])] != static_cast<int>(p)) continue;
        if (P.dtype != C.dtype) continue;
        const Layer& H = net_.layers[static_cast<size_t>(head_[p])];
        bool ok = false;
        if (is_conv(H)) {
          if (C.op->name == "batchnorm" && is_conv(P) && enabled("fuse_conv_bn")) {
            Layer& conv = net_.layers[p];
            if (!conv.attrs.has("bias") || !conv.attrs.b("bias"))  // the folded shift becomes the conv's bias
              conv.cost.weight_bytes += static_cast<double>(conv.out_shapes[0][1]) * dtype_bytes(conv.dtype);
            join(p, c, static_cast<int>(slot));
            C.cost.flops = C.cost.flops_executed = 0;
            C.cost.weight_bytes = 0;
            break;
          }
          ok = (is_act(C) && enabled("fuse_conv_act") && (is_conv(P) || P.op->name == "batchnorm" || P.op->name == "add")) ||
               (C.op->name == "add" && enabled("fuse_conv_add") && (is_conv(P) || P.op->name == "batchnorm"));
        } else if (is_gemm(H)) {
          ok = (C.op->name == "add" && enabled("fuse_matmul_add") && is_gemm(P)) ||
               (is_act(C) && enabled("fuse_gemm_act") && (is_gemm(P) || P.op->name == "add"));
        }
        if (!ok && enabled("fuse_elementwise") && is_elementwise(C) && is_elementwise(H) && is_elementwise(P)) ok = true;
        if (ok) {
          join(p, c, static_cast<int>(slot));
          break;
        }
      }
    }
  }
};

}  // namespace

const std::vector<std::string>& pass_names() {
  static const std::vector<std::string> n = [] {
    std::vector<std::string> v;
    for (const auto& p : kPasses) v.push_back(p.name);
    return v;
  }();
  return n;
}

std::string pass_description(const std::string& name) {
  for (const auto& p : kPasses)
    if (name == p.name) return p.what;
  return "";
}

std::vector<std::string> read_passes(const CNode& node, Diags& d) {
  std::vector<std::string> out;
  if (node.is_scalar()) {
    if (node.scalar == "all") return pass_names();
    if (node.scalar == "none") return out;
  }
  for (const CNode* i : as_list(node)) {
    auto s = to_string(*i, d, "pass");
    if (!s) continue;
    if (std::find(pass_names().begin(), pass_names().end(), *s) == pass_names().end()) {
      std::string hint = did_you_mean(*s, pass_names()), all;
      for (const auto& p : pass_names()) all += (all.empty() ? "" : ", ") + p;
      d.error(i->loc, "unknown pass '" + *s + "'", {Note{{}, hint.empty() ? "passes: all, none, " + all : hint}});
      continue;
    }
    out.push_back(*s);
  }
  return out;
}

Network apply_passes(const Network& net, const std::vector<std::string>& passes) {
  Network out = net;
  for (Layer& L : out.layers) L.same_as = -1;  // passes change costs: a layer no longer copies another's
  Optimizer(out, passes).run();
  return out;
}

}  // namespace rsim
