// Recurrent layers (LSTM, GRU, RNN, laid out as ONNX has them) and Einsum: operators an importer
// maps ONNX's recurrent and einsum nodes to, usable in a scenario like any other.
#include <algorithm>
#include <array>
#include <cmath>
#include <map>

#include "engine/ops/ops.hpp"

namespace rsim {

namespace {

[[noreturn]] void fail(const std::string& msg) { throw ShapeError(msg); }
double d(long long v) { return static_cast<double>(v); }

struct Cell {
  double gates, act;  // gate blocks; FLOPs per hidden unit and step of the cell's activations and update
  int outputs;        // Y, Y_h (and Y_c)
};

Cell cell_of(const std::string& c) {
  if (c == "lstm") return {4, 24, 3};  // i, o, f, c; 3 sigmoid + 2 tanh (4 FLOPs each), 3 products, 1 sum
  if (c == "gru") return {3, 16, 2};   // z, r, h; 2 sigmoid + 1 tanh, the reset product, (1 − z)·n + z·h
  return {1, 4, 2};                    // rnn: one tanh
}

void add_recurrent(OpRegistry& r) {
  OpDef o;
  o.name = "recurrent";
  o.summary = "an LSTM, GRU or plain RNN over a sequence, forward, reverse or both (ONNX LSTM / GRU / RNN layout)";
  o.formula =
      "input x (T, B, I) (batch_first: (B, T, I)); D = 2 when bidirectional, else 1; H = hidden; G gates: lstm 4, gru 3, rnn 1\n"
      "outputs: Y (T, D, B, H) (batch_first: (B, T, D, H)), Y_h (D, B, H) (batch_first: (B, D, H)), lstm also Y_c like Y_h\n"
      "MACs   = T · B · D · G · H · (I + H)  (the input and recurrent projections of every step)\n"
      "FLOPs  = 2 · MACs + T · B · D · H · (2 · G with biases + the cell's own: lstm 24, gru 16, rnn 4 — a sigmoid or\n"
      "         tanh counted as 4 FLOPs, products and sums as 1)\n"
      "params = D · G · H · (I + H) (W and R) + D · 2 · G · H with bias (ONNX's Wb and Rb) + D · 3 · H with peepholes (lstm);\n"
      "weights read = params (every step reuses them: read once per pass); sequences shorter than T are costed at T";
  o.attrs = {{"cell", AttrType::Choice, "lstm", "the cell", {"lstm", "gru", "rnn"}},
             {"hidden", AttrType::Int, "", "hidden size H", {}},
             {"bidirectional", AttrType::Bool, "false", "both directions (D = 2)", {}},
             {"batch_first", AttrType::Bool, "false", "x is (B, T, I) and the outputs batch-first (ONNX layout 1)", {}},
             {"bias", AttrType::Bool, "true", "input and recurrent biases (2 · G · H per direction)", {}},
             {"peepholes", AttrType::Bool, "false", "an LSTM's peephole weights (3 · H per direction)", {}}};
  o.min_inputs = 1;
  o.max_inputs = 3;  // x, and initial h (and c): read, not costed otherwise
  o.infer = [](const OpArgs& a) -> std::vector<Shape> {
    const Shape& x = a.in[0];
    if (x.size() != 3) fail("recurrent takes x of rank 3 ((T, B, I), or (B, T, I) batch_first), got " + shape_str(x));
    const long long h = a.attrs.i("hidden");
    if (h <= 0) fail("hidden must be positive, got " + std::to_string(h));
    if (a.attrs.b("peepholes") && a.attrs.s("cell") != "lstm") fail("peepholes are an LSTM's");
    const bool bf = a.attrs.b("batch_first");
    const long long t = bf ? x[1] : x[0], b = bf ? x[0] : x[1], dirs = a.attrs.b("bidirectional") ? 2 : 1;
    Shape y = bf ? Shape{b, t, dirs, h} : Shape{t, dirs, b, h};
    Shape last = bf ? Shape{b, dirs, h} : Shape{dirs, b, h};
    std::vector<Shape> out = {y, last};
    if (cell_of(a.attrs.s("cell")).outputs == 3) out.push_back(last);
    return out;
  };
  o.work = [](const OpArgs& a, const std::vector<Shape>&) {
    const Shape& x = a.in[0];
    const Cell c = cell_of(a.attrs.s("cell"));
    const bool bf = a.attrs.b("batch_first");
    const double t = d(bf ? x[1] : x[0]), b = d(bf ? x[0] : x[1]), in = d(x[2]), h = d(a.attrs.i("hidden"));
    const double dirs = a.attrs.b("bidirectional") ? 2 : 1;
    OpWork w;
    w.macs = t * b * dirs * c.gates * h * (in + h);
    w.other_flops = t * b * dirs * h * ((a.attrs.b("bias") ? 2 * c.gates : 0) + c.act);
    const double mats = dirs * c.gates * h * (in + h);
    w.params = mats + (a.attrs.b("bias") ? dirs * 2 * c.gates * h : 0) + (a.attrs.b("peepholes") ? dirs * 3 * h : 0);
    w.weight_elems = w.params;
    w.quantized_elems = mats;
    return w;
  };
  r.add(o);
}

// An einsum equation, parsed: each operand's labels (letters; the dimensions an ellipsis stands
// for get labels of their own, aligned from the right) and the output's.
struct Equation {
  std::vector<std::vector<int>> in;
  std::vector<int> out;
  std::map<int, long long> size;  // label → size (broadcast: a 1 gives way)
};

constexpr int kEllipsis = 1000;  // labels kEllipsis + k: the k-th dimension from the right an ellipsis covers

int letter(char c) {
  if (c >= 'a' && c <= 'z') return c - 'a';
  if (c >= 'A' && c <= 'Z') return 26 + (c - 'A');
  fail(std::string("einsum: '") + c + "' is not a letter (labels are a-z and A-Z)");
}

// Labels of one side's term; `rank` the operand's (-1: the output, whose ellipsis has `ell` dims).
std::vector<int> term(const std::string& s, long long rank, size_t& ell) {
  std::vector<int> labels;
  size_t dots = s.find("...");
  std::string head = dots == std::string::npos ? s : s.substr(0, dots), tail = dots == std::string::npos ? "" : s.substr(dots + 3);
  if (tail.find("...") != std::string::npos) fail("einsum: more than one ellipsis in '" + s + "'");
  for (char c : head) labels.push_back(letter(c));
  if (dots != std::string::npos) {
    long long n = rank >= 0 ? rank - static_cast<long long>(head.size() + tail.size()) : static_cast<long long>(ell);
    if (n < 0) fail("einsum: '" + s + "' names more dimensions than the operand has (" + std::to_string(rank) + ")");
    if (rank >= 0) ell = std::max(ell, static_cast<size_t>(n));
    for (long long k = n - 1; k >= 0; --k) labels.push_back(kEllipsis + static_cast<int>(k));
  }
  for (char c : tail) labels.push_back(letter(c));
  return labels;
}

Equation parse_equation(std::string eq, const std::vector<Shape>& in) {
  eq.erase(std::remove(eq.begin(), eq.end(), ' '), eq.end());
  Equation e;
  const size_t arrow = eq.find("->");
  const std::string lhs = eq.substr(0, arrow);
  std::vector<std::string> terms;
  for (size_t from = 0;;) {
    const size_t comma = lhs.find(',', from);
    terms.push_back(lhs.substr(from, comma == std::string::npos ? std::string::npos : comma - from));
    if (comma == std::string::npos) break;
    from = comma + 1;
  }
  if (terms.size() != in.size())
    fail("einsum: the equation has " + std::to_string(terms.size()) + " operand" + (terms.size() == 1 ? "" : "s") + ", the layer " +
         std::to_string(in.size()));
  size_t ell = 0;
  for (size_t i = 0; i < terms.size(); ++i) {
    e.in.push_back(term(terms[i], static_cast<long long>(in[i].size()), ell));
    if (e.in.back().size() != in[i].size())
      fail("einsum: '" + terms[i] + "' has " + std::to_string(e.in.back().size()) + " labels for an operand of rank " + std::to_string(in[i].size()));
    for (size_t k = 0; k < in[i].size(); ++k) {
      long long& s = e.size[e.in.back()[k]];
      const long long v = in[i][k];
      if (s == 0 || s == 1) s = v;
      else if (v != 1 && v != s)
        fail("einsum: a label is " + std::to_string(s) + " in one operand and " + std::to_string(v) + " in another (" + shape_str(in[i]) + ")");
    }
  }
  if (arrow != std::string::npos) {
    e.out = term(eq.substr(arrow + 2), -1, ell);
    for (int l : e.out)
      if (!e.size.count(l)) fail("einsum: the output names a label no operand has");
  } else {  // implicit: the ellipsis, then the letters seen once, in alphabetical order
    std::map<int, int> seen;
    for (const auto& t : e.in)
      for (int l : t) ++seen[l];
    for (long long k = static_cast<long long>(ell) - 1; k >= 0; --k) e.out.push_back(kEllipsis + static_cast<int>(k));
    for (const auto& [l, n] : seen)
      if (l < kEllipsis && n == 1) e.out.push_back(l);
  }
  return e;
}

void add_einsum(OpRegistry& r) {
  OpDef o;
  o.name = "einsum";
  o.summary = "Einstein summation over one or more operands (ONNX Einsum, torch.einsum)";
  o.formula =
      "equation like 'bhqd,bhkd->bhqk' (an ellipsis for leading dimensions; no '->': the labels seen once, sorted)\n"
      "two operands: MACs = the product of every label's size (each output element sums over the labels it lacks)\n"
      "more: contracted pairwise in the given order, each intermediate keeping the labels still needed; MACs summed\n"
      "one operand: a transpose (0 FLOPs) or a sum over the dropped labels (one add per input element)";
  o.attrs = {{"equation", AttrType::String, "", "the einsum equation", {}}};
  o.min_inputs = 1;
  o.max_inputs = -1;
  o.infer = [](const OpArgs& a) -> std::vector<Shape> {
    const Equation e = parse_equation(a.attrs.s("equation"), a.in);
    Shape y;
    for (int l : e.out) y.push_back(e.size.at(l));
    return {y};
  };
  o.work = [](const OpArgs& a, const std::vector<Shape>& out) {
    const Equation e = parse_equation(a.attrs.s("equation"), a.in);
    OpWork w;
    if (e.in.size() == 1) {
      if (elements(out[0]) < elements(a.in[0])) w.other_flops = elements(a.in[0]);
      return w;
    }
    std::vector<int> acc = e.in[0];
    for (size_t i = 1; i < e.in.size(); ++i) {
      std::vector<int> all = acc;
      for (int l : e.in[i])
        if (std::find(all.begin(), all.end(), l) == all.end()) all.push_back(l);
      double macs = 1;
      for (int l : all) macs *= d(e.size.at(l));
      w.macs += macs;
      // the intermediate keeps the labels a later operand or the output reads
      std::vector<int> keep;
      for (int l : all) {
        bool needed = std::find(e.out.begin(), e.out.end(), l) != e.out.end();
        for (size_t j = i + 1; j < e.in.size() && !needed; ++j) needed = std::find(e.in[j].begin(), e.in[j].end(), l) != e.in[j].end();
        if (needed) keep.push_back(l);
      }
      acc = keep;
    }
    return w;
  };
  r.add(o);
}

}  // namespace

void add_sequence_ops(OpRegistry& r) {
  add_recurrent(r);
  add_einsum(r);
}

}  // namespace rsim
