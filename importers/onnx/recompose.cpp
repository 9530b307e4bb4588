// Decomposed operators recomposed: exports spell LayerNorm (before opset 17), GELU (the Erf and the
// tanh forms), SiLU, HardSwish, nn.Linear on 3-D input (MatMul, then a bias Add) and softmax with
// an additive attention mask (Add, then Softmax) as chains of nodes. Before the walk, find_chains recognises them, as ONNX Runtime's graph optimiser does: a
// chain is recomposed only when every tensor inside it is read by the chain alone (not a graph
// output), so nothing outside needs them. The walk then emits one layer per chain, named after its
// first node, and skips the rest (their count: OnnxImport::recomposed).
#include <cmath>
#include <map>

#include "importers/onnx/importer.hpp"

namespace rsim {

namespace onnx_detail {

namespace {

class Matcher {
 public:
  explicit Matcher(const onnx::GraphProto& g) : g_(g) {
    for (int i = 0; i < g.node_size(); ++i) {
      for (const auto& o : g.node(i).output()) producer_[o] = i;
      for (const auto& in : g.node(i).input())
        if (!in.empty()) consumers_[in].push_back(i);
    }
    for (const auto& o : g.output()) outputs_.insert(o.name());
    for (const auto& t : g.initializer()) init_[t.name()] = &t;
  }

  const onnx::NodeProto& node(int i) const { return g_.node(i); }

  // the one node reading `t` (-1: none, several, or a graph output)
  int only_reader(const std::string& t) const {
    auto it = consumers_.find(t);
    if (outputs_.count(t) || it == consumers_.end() || it->second.size() != 1) return -1;
    return it->second.front();
  }
  const std::vector<int>& readers(const std::string& t) const {
    static const std::vector<int> none;
    auto it = consumers_.find(t);
    return it == consumers_.end() ? none : it->second;
  }
  bool is_output(const std::string& t) const { return outputs_.count(t) > 0; }

  // the value of a one-element constant (an initializer or a Constant node's), if it is one
  std::optional<double> scalar(const std::string& t) const {
    const onnx::TensorProto* p = nullptr;
    if (auto it = init_.find(t); it != init_.end()) p = it->second;
    else if (auto pr = producer_.find(t); pr != producer_.end() && g_.node(pr->second).op_type() == "Constant")
      for (const auto& a : g_.node(pr->second).attribute())
        if (a.name() == "value" && a.has_t()) p = &a.t();
    if (!p) return std::nullopt;
    Val v = tensor_val(*p);
    if (!v.has_data || v.data.size() != 1) return std::nullopt;
    return v.data.front();
  }
  bool is_init(const std::string& t) const { return init_.count(t) > 0; }
  Shape init_shape(const std::string& t) const { return tensor_val(*init_.at(t)).shape; }

  // the other input of a two-input node, given one of them (nullopt: `one` is neither)
  std::optional<std::string> other(int n, const std::string& one) const {
    const auto& nd = g_.node(n);
    if (nd.input_size() != 2) return std::nullopt;
    if (nd.input(0) == one) return nd.input(1);
    if (nd.input(1) == one) return nd.input(0);
    return std::nullopt;
  }
  bool near(const std::string& t, double want) const {
    auto v = scalar(t);
    return v && std::fabs(*v - want) <= 1e-3 * std::fabs(want);
  }
  // the same of other()'s answer: false when there is none (a one-input node where two were wanted)
  bool near(const std::optional<std::string>& t, double want) const { return t && near(*t, want); }
  bool is_scalar(const std::optional<std::string>& t) const { return t && scalar(*t); }
  // the single reader of `t` if it is an `op` node with an output (a malformed file may give a
  // node none: the chains read every node's first output)
  int next(const std::string& t, const char* op) const {
    int n = only_reader(t);
    return n >= 0 && g_.node(n).op_type() == op && g_.node(n).output_size() > 0 ? n : -1;
  }

 private:
  const onnx::GraphProto& g_;
  std::unordered_map<std::string, int> producer_;
  std::unordered_map<std::string, std::vector<int>> consumers_;
  std::set<std::string> outputs_;
  std::unordered_map<std::string, const onnx::TensorProto*> init_;
};

bool last_axis_mean(const onnx::NodeProto& n) {
  if (n.op_type() != "ReduceMean") return false;
  for (const auto& a : n.attribute()) {
    if (a.name() == "keepdims" && a.i() == 0) return false;
    if (a.name() == "axes" && !(a.ints_size() == 1 && a.ints(0) == -1)) return false;
  }
  return n.input_size() == 1;  // (axes as an input, opset 18: not before opset 17's LayerNormalization)
}

// ReduceMean(x) → Sub(x, ·) → Pow(·, 2) or Mul(·, ·) → ReduceMean → Add(·, eps) → Sqrt → Div(d, ·)
// [→ Mul(·, γ) → Add(·, β)]
std::optional<Chain> layernorm(const Matcher& m, int i) {
  const auto& rm = m.node(i);
  if (!last_axis_mean(rm)) return std::nullopt;
  const std::string x = rm.input(0);
  Chain c{"layernorm", {i}, x, "", {}};
  int sub = m.next(rm.output(0), "Sub");
  if (sub < 0 || m.node(sub).input(0) != x) return std::nullopt;
  const std::string d = m.node(sub).output(0);
  const auto& rd = m.readers(d);
  if (m.is_output(d) || rd.size() != 2) return std::nullopt;
  int sq = -1, div = -1;
  for (int r : rd) {
    const auto& n = m.node(r);
    if (n.input_size() != 2 || n.output_size() == 0) continue;
    if ((n.op_type() == "Pow" && n.input(0) == d && m.near(n.input(1), 2)) || (n.op_type() == "Mul" && n.input(0) == d && n.input(1) == d)) sq = r;
    else if (n.op_type() == "Div" && n.input(0) == d) div = r;
  }
  if (sq < 0 || div < 0) return std::nullopt;
  int rm2 = m.only_reader(m.node(sq).output(0));
  if (rm2 < 0 || !last_axis_mean(m.node(rm2)) || m.node(rm2).output_size() == 0) return std::nullopt;
  int add = m.next(m.node(rm2).output(0), "Add");
  if (add < 0 || !m.is_scalar(m.other(add, m.node(rm2).output(0)))) return std::nullopt;
  int sqrt = m.next(m.node(add).output(0), "Sqrt");
  if (sqrt < 0 || m.only_reader(m.node(sqrt).output(0)) != div || m.node(div).input(1) != m.node(sqrt).output(0)) return std::nullopt;
  c.nodes.insert(c.nodes.end(), {sub, sq, rm2, add, sqrt, div});
  c.output = m.node(div).output(0);
  // the affine part: γ and β both (one alone stays a layer of its own)
  int mul = m.next(c.output, "Mul");
  if (mul >= 0) {
    auto g = m.other(mul, c.output);
    int badd = g && m.is_init(*g) ? m.next(m.node(mul).output(0), "Add") : -1;
    auto b = badd >= 0 ? m.other(badd, m.node(mul).output(0)) : std::nullopt;
    if (b && m.is_init(*b)) {
      c.nodes.insert(c.nodes.end(), {mul, badd});
      c.output = m.node(badd).output(0);
      c.weights = {*g, *b};
    }
  }
  return c;
}

// GELU, Erf form: Div(x, √2) or Mul(x, 1/√2) → Erf → Add(·, 1) → Mul(x, ·) → Mul(·, 0.5)
std::optional<Chain> gelu_erf(const Matcher& m, int i) {
  const auto& n = m.node(i);
  if (n.input_size() != 2) return std::nullopt;
  const std::string x = n.input(0);
  if (!((n.op_type() == "Div" && m.near(n.input(1), std::sqrt(2.0))) || (n.op_type() == "Mul" && m.near(n.input(1), std::sqrt(0.5)))))
    return std::nullopt;
  int erf = m.next(n.output(0), "Erf");
  int one = erf >= 0 ? m.next(m.node(erf).output(0), "Add") : -1;
  if (one < 0 || !m.near(m.other(one, m.node(erf).output(0)), 1)) return std::nullopt;
  int mx = m.next(m.node(one).output(0), "Mul");
  if (mx < 0 || m.other(mx, m.node(one).output(0)) != x) return std::nullopt;
  int half = m.next(m.node(mx).output(0), "Mul");
  if (half < 0 || !m.near(m.other(half, m.node(mx).output(0)), 0.5)) return std::nullopt;
  return Chain{"gelu", {i, erf, one, mx, half}, x, m.node(half).output(0), {}};
}

// GELU, tanh form: Pow(x, 3) → Mul(·, 0.044715) → Add(x, ·) → Mul(·, √(2/π)) → Tanh → Add(·, 1) →
// Mul(x, ·) → Mul(·, 0.5), or the last two as Mul(Mul(x, 0.5), ·) (Hugging Face's NewGELU)
std::optional<Chain> gelu_tanh(const Matcher& m, int i) {
  const auto& p = m.node(i);
  if (p.op_type() != "Pow" || p.input_size() != 2 || !m.near(p.input(1), 3)) return std::nullopt;
  const std::string x = p.input(0);
  int c1 = m.next(p.output(0), "Mul");
  if (c1 < 0 || !m.near(m.other(c1, p.output(0)), 0.044715)) return std::nullopt;
  int ax = m.next(m.node(c1).output(0), "Add");
  if (ax < 0 || m.other(ax, m.node(c1).output(0)) != x) return std::nullopt;
  int c2 = m.next(m.node(ax).output(0), "Mul");
  if (c2 < 0 || !m.near(m.other(c2, m.node(ax).output(0)), std::sqrt(2 / M_PI))) return std::nullopt;
  int th = m.next(m.node(c2).output(0), "Tanh");
  int one = th >= 0 ? m.next(m.node(th).output(0), "Add") : -1;
  if (one < 0 || !m.near(m.other(one, m.node(th).output(0)), 1)) return std::nullopt;
  int mx = m.next(m.node(one).output(0), "Mul");
  if (mx < 0) return std::nullopt;
  Chain c{"gelu", {i, c1, ax, c2, th, one, mx}, x, "", {}};
  auto o = m.other(mx, m.node(one).output(0));
  if (o == x) {  // x · (1 + tanh) → · 0.5
    int half = m.next(m.node(mx).output(0), "Mul");
    if (half < 0 || !m.near(m.other(half, m.node(mx).output(0)), 0.5)) return std::nullopt;
    c.nodes.push_back(half);
    c.output = m.node(half).output(0);
    return c;
  }
  // (x · 0.5) · (1 + tanh): the half is a node of its own reading x, read only here
  for (int r : m.readers(x)) {
    const auto& h = m.node(r);
    if (h.op_type() == "Mul" && h.output_size() == 1 && h.output(0) == o && m.near(m.other(r, x), 0.5) && m.only_reader(h.output(0)) == mx) {
      c.nodes.push_back(r);
      c.output = m.node(mx).output(0);
      return c;
    }
  }
  return std::nullopt;
}

// SiLU and HardSwish: Sigmoid(x) or HardSigmoid(x) (its defaults α = 1/6, β = 0.5) → Mul(x, ·)
std::optional<Chain> gated(const Matcher& m, int i) {
  const auto& s = m.node(i);
  const bool sig = s.op_type() == "Sigmoid", hard = s.op_type() == "HardSigmoid";
  if (!(sig || hard) || s.input_size() != 1) return std::nullopt;
  if (hard)
    for (const auto& a : s.attribute())
      if ((a.name() == "alpha" && std::fabs(a.f() - 1.0 / 6) > 1e-4) || (a.name() == "beta" && std::fabs(a.f() - 0.5) > 1e-4)) return std::nullopt;
  const std::string x = s.input(0);
  int mul = m.next(s.output(0), "Mul");
  if (mul < 0 || m.other(mul, s.output(0)) != x) return std::nullopt;
  return Chain{sig ? "silu" : "hardswish", {i, mul}, x, m.node(mul).output(0), {}};
}

// nn.Linear on 3-D input: MatMul(x, W) with a constant 2-D W (K, N) → Add(·, b) with a constant b of N
std::optional<Chain> linear_bias(const Matcher& m, int i) {
  const auto& mm = m.node(i);
  if (mm.op_type() != "MatMul" || mm.input_size() != 2 || !m.is_init(mm.input(1))) return std::nullopt;
  const Shape w = m.init_shape(mm.input(1));
  if (w.size() != 2) return std::nullopt;
  int add = m.next(mm.output(0), "Add");
  auto b = add >= 0 ? m.other(add, mm.output(0)) : std::nullopt;
  if (!b || !m.is_init(*b) || m.init_shape(*b) != Shape{w[1]}) return std::nullopt;
  return Chain{"linear", {i, add}, mm.input(0), m.node(add).output(0), {mm.input(1), *b}};
}

// softmax with an additive mask: Add(scores, mask) → Softmax, the sum read by the Softmax alone
// (which of the two is the mask is told by shape in the walk: the one that broadcasts)
std::optional<Chain> masked_softmax(const Matcher& m, int i) {
  const auto& add = m.node(i);
  if (add.op_type() != "Add" || add.input_size() != 2) return std::nullopt;
  int sm = m.next(add.output(0), "Softmax");
  if (sm < 0) return std::nullopt;
  return Chain{"masked_softmax", {i, sm}, add.input(0), m.node(sm).output(0), {}};
}

}  // namespace

std::vector<Chain> find_chains(const onnx::GraphProto& g) {
  Matcher m(g);
  std::vector<Chain> out;
  std::vector<char> taken(static_cast<size_t>(g.node_size()), 0);
  for (int i = 0; i < g.node_size(); ++i) {
    if (taken[static_cast<size_t>(i)] || g.node(i).output_size() == 0) continue;
    std::optional<Chain> c;
    for (auto* f : {layernorm, gelu_erf, gelu_tanh, gated, linear_bias, masked_softmax})
      if (!c) c = f(m, i);
    if (!c) continue;
    bool free = true;
    for (int n : c->nodes) free = free && !taken[static_cast<size_t>(n)];
    if (!free) continue;
    for (int n : c->nodes) taken[static_cast<size_t>(n)] = 1;
    out.push_back(std::move(*c));
  }
  return out;
}

void Importer::recompose(const Chain& c) {
  const onnx::NodeProto& head = m_.proto.graph().node(c.nodes.front());
  int x = 0;  // the head's input that is the chain's
  for (int k = 0; k < head.input_size(); ++k)
    if (head.input(k) == c.input) x = k;
  LayerSpec l{c.kind, {}, {ref(x)}};
  if (c.kind == "masked_softmax") {
    // one softmax layer reading the scores and the mask (the input that broadcasts to the other;
    // the first when both have the sum's shape), along the Softmax node's axis
    const Shape a = in(0).shape, b = in(1).shape;
    const int scores = a.size() < b.size() || (a.size() == b.size() && count(a) < count(b)) ? 1 : 0;
    const onnx::NodeProto& sm = m_.proto.graph().node(c.nodes[1]);
    long long axis = m_.opset < 13 ? 1 : -1;
    for (const auto& at : sm.attribute())
      if (at.name() == "axis") axis = at.i();
    const long long rank = static_cast<long long>(in(scores).shape.size());
    if (axis < -rank || axis >= rank) node_fail("its Softmax's axis " + std::to_string(axis) + " is out of range for rank " + std::to_string(rank));
    l = LayerSpec{"softmax", {}, {ref(scores), ref(1 - scores)}};
    l.set("axis", int_node(axis < 0 ? axis + rank : axis));
  } else if (c.kind == "layernorm") {
    l.set("affine", bool_node(!c.weights.empty()));
  } else if (c.kind == "linear") {
    const Val& w = val(c.weights[0]);
    if (in(x).shape.empty() || in(x).shape.back() != w.shape[0])
      node_fail("inner dimensions differ: " + shape_text(in(x).shape) + " × " + shape_text(w.shape));
    l.set("out_features", int_node(w.shape[1]));
    l.set("bias", bool_node(true));
  }
  emit(l, 1);
  for (const auto& w : c.weights) counted_.emplace(w, count(val(w).shape));  // (γ, β, a bias: counted by the layer; after emit, which reads the head's own)
  Val out = vals_[head.output(0)];
  vals_[c.output] = out;
  ++res_.recomposed[c.kind == "masked_softmax" ? "softmax" : c.kind];
}

}  // namespace onnx_detail

}  // namespace rsim
