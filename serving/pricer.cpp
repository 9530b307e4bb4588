#include "serving/pricer.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <tuple>

namespace rsim::serving {

namespace {

constexpr const char* kBatch = "rsim_serve_batch";
constexpr const char* kSeq = "rsim_serve_seq";
constexpr const char* kContext = "rsim_serve_context";
constexpr double kTokensRef = 2048;   // the token-wise model's second point (tokens)
constexpr double kContextRef = 4096;  // attention's second point (cached tokens)

void set_entry(CNode& map, const std::string& key, const std::string& value) {
  for (CEntry& e : map.entries)
    if (e.key == key) {
      e.value = CNode::make_scalar(value, e.value.loc);
      return;
    }
  map.entries.push_back(CEntry{key, {}, CNode::make_scalar(value, map.loc)});
}

double lerp(double a0, double a1, double x0, double x1, double x) { return a0 + (a1 - a0) * (x - x0) / (x1 - x0); }

}  // namespace

bool per_sequence_op(const std::string& op) { return op == "attention" || op == "mla_attention" || op == "kv_cache"; }

double BatchPricer::Model::at(double x) const {
  double t = lerp(base0, base1, x0, x1, x);
  for (const Affine& r : rows)
    t += r.count * (std::max(lerp(r.c0, r.c1, x0, x1, x), lerp(r.m0, r.m1, x0, x1, x)) + lerp(r.o0, r.o1, x0, x1, x));
  return t;
}

BatchPricer::BatchPricer(PointEvaluator& ev, const Scenario& base, const Point& point, const CNode& network, const CNode& platform,
                         const std::string& prefill_execution, const std::string& decode_execution)
    : ev_(ev), point_(point) {
  const std::string modes[2] = {prefill_execution, decode_execution};
  for (int m = 0; m < 2; ++m) {
    auto sc = std::make_unique<Scenario>();
    sc->path = base.path, sc->name = base.name, sc->hash = base.hash, sc->vars = base.vars, sc->scripts = base.scripts;
    sc->limits = base.limits, sc->passes = base.passes, sc->platforms_loc = base.platforms_loc;
    sc->settings = base.settings;
    if (!modes[m].empty()) {
      if (!sc->settings.is_map()) sc->settings = CNode{}, sc->settings.kind = CNode::Kind::Map;
      set_entry(sc->settings, "execution", modes[m]);
    }
    fix_settings(*sc);  // read once: every batch this pricer prices has these settings
    sc->platforms = {platform};
    // the served network as a prefill of `seq` tokens after `context` cached, `batch` sequences
    // (in prefill_execution), or as a decode step of `batch` sequences (in decode_execution)
    CNode net = network;
    CNode* args = nullptr;
    for (CEntry& e : net.entries)
      if (e.key == "args") args = &e.value;
    if (!args) {
      net.entries.push_back(CEntry{"args", {}, CNode{}});
      args = &net.entries.back().value;
      args->kind = CNode::Kind::Map;
    }
    set_entry(*args, "phase", m == 0 ? "prefill" : "decode");
    set_entry(*args, "batch", std::string("${") + kBatch + "}");
    set_entry(*args, "seq", std::string("${") + kSeq + "}");
    set_entry(*args, "context", std::string("${") + kContext + "}");
    set_entry(*args, "logits", "last");
    sc->networks = {net};
    sc_[m] = std::move(sc);
  }
  // one GPU's capacity figures, from a one-token step
  const PointResult& one = run(1, 1, 1, 0);
  const SummaryRow& s = one.summary.at(0);
  if (!one.platforms.empty() && one.platforms[0]) links_ = one.platforms[0]->interconnect;
  weights_ = s.weight_footprint_bytes, kv_per_token_ = s.kv_bytes_per_token, memory_ = s.memory_size_bytes, gpus_ = s.gpus;
  network_name_ = s.network, platform_name_ = s.platform;
}

const PointResult& BatchPricer::run(int mode, long long batch, long long seq, long long context) {
  Point p = point_;
  p.bindings.emplace_back(kBatch, std::to_string(batch));
  p.bindings.emplace_back(kSeq, std::to_string(seq));
  p.bindings.emplace_back(kContext, std::to_string(context));
  ++evaluations_;
  const PointResult& r = ev_.evaluate(*sc_[mode], p);
  if (r.summary.empty()) throw ConfigError(SourceLoc{}, "the served network gave no result at " + bindings_text(p.bindings));
  return r;
}

const BatchPricer::Model& BatchPricer::token_model(int mode) {
  Model& m = tokens_[mode];
  if (tokens_ready_[mode]) return m;
  // a prefill from 2 tokens (one of 1 token has no `last_token` slice: the same layers at both
  // ends); a decode step from 1 to 256 sequences
  m.x0 = mode == 0 ? 2 : 1, m.x1 = mode == 0 ? kTokensRef : 256;
  const PointResult& a0 = mode == 0 ? run(0, 1, 2, 0) : run(1, 1, 1, 0);
  const std::vector<Row> r0 = a0.rows;  // (the next run writes over a0)
  const double total0 = a0.summary.at(0).dparts.total();
  const PointResult& b = mode == 0 ? run(0, 1, static_cast<long long>(m.x1), 0) : run(1, static_cast<long long>(m.x1), 1, 0);
  const double total1 = b.summary.at(0).dparts.total();
  double rows0 = 0, rows1 = 0;
  for (const Row& r : r0) rows0 += r.derated.time_s;
  for (const Row& r : b.rows) rows1 += r.derated.time_s;
  m.base0 = total0 - rows0, m.base1 = total1 - rows1;  // the mode's overhead
  // the token-wise rows, paired by layer name
  std::map<std::string, const Row*> at1;
  for (const Row& r : b.rows) at1[r.layer] = &r;
  for (const Row& r : r0) {
    if (per_sequence_op(r.op) || r.layer == "lm_head") continue;
    auto it = at1.find(r.layer);
    if (it == at1.end()) continue;
    const Row& q = *it->second;
    Affine a;
    a.c0 = r.derated.compute_time_s, a.m0 = r.derated.memory_time_s, a.o0 = r.derated.time_s - std::max(a.c0, a.m0);
    a.c1 = q.derated.compute_time_s, a.m1 = q.derated.memory_time_s, a.o1 = q.derated.time_s - std::max(a.c1, a.m1);
    m.rows.push_back(a);
  }
  // identical rows (a decoder layer's copies) as one with a count
  std::sort(m.rows.begin(), m.rows.end(), [](const Affine& x, const Affine& y) {
    return std::tie(x.c0, x.c1, x.m0, x.m1, x.o0, x.o1) < std::tie(y.c0, y.c1, y.m0, y.m1, y.o0, y.o1);
  });
  std::vector<Affine> merged;
  for (const Affine& a : m.rows) {
    if (!merged.empty()) {
      Affine& b = merged.back();
      if (b.c0 == a.c0 && b.c1 == a.c1 && b.m0 == a.m0 && b.m1 == a.m1 && b.o0 == a.o0 && b.o1 == a.o1) {
        b.count += 1;
        continue;
      }
    }
    merged.push_back(a);
  }
  m.rows = std::move(merged);
  tokens_ready_[mode] = true;
  return m;
}

// Seven evaluations of one sequence's attention rows: q = 2, 512, 2048 at k = 0 give each row's
// quadratic in q for prefill chunks; q = 2 and 512 at k = kContextRef its terms in k; a decode
// (q = 1) at k = 0 and kContextRef its line (a context-attention kernel model prices q ≥ 2 and its
// tiles, which a decode does not run: the decode is fitted on its own points)
void BatchPricer::attention_model() {
  if (attention_ready_) return;
  struct Sample {
    std::array<double, 5> t;  // compute, memory, other, theoretical compute, theoretical memory
    bool decode = false;
    DecodeShape shape;
    std::string level;
    DType kv = DType::bf16;
  };
  auto rows = [&](long long q, long long k) {
    std::vector<Sample> out;
    const PointResult& res = run(0, 1, q, k);
    if (!platform_ && !res.platforms.empty()) platform_ = res.platforms[0];
    for (const Row& r : res.rows)
      if (per_sequence_op(r.op)) {
        const double c = r.derated.compute_time_s, m = r.derated.memory_time_s;
        out.push_back(Sample{{c, m, r.derated.time_s - std::max(c, m), r.theoretical.compute_time_s, r.theoretical.memory_time_s}, r.decode.has_value(), r.decode.value_or(DecodeShape{}),
                             r.memory_level, r.kv_dtype});
      }
    return out;
  };
  const double q1 = 2, q2 = 512, q3 = 2048, K = kContextRef;
  const auto f1 = rows(2, 0), f2 = rows(512, 0), f3 = rows(2048, 0), g1 = rows(2, static_cast<long long>(K)), g2 = rows(512, static_cast<long long>(K));
  const auto d0 = rows(1, 0), dK = rows(1, static_cast<long long>(K));
  const size_t n = std::min({f1.size(), f2.size(), f3.size(), g1.size(), g2.size(), d0.size(), dK.size()});
  attention_.assign(n, {});
  for (size_t i = 0; i < n; ++i) {
    for (size_t j = 0; j < 3; ++j) {
      Poly& p = j == 0 ? attention_[i].c : j == 1 ? attention_[i].m : attention_[i].o;
      // f(q, 0) = β q² + γ q + ε through the three points (Newton's divided differences)
      const double y1 = f1[i].t[j], y2 = f2[i].t[j], y3 = f3[i].t[j];
      const double d12 = (y2 - y1) / (q2 - q1), d23 = (y3 - y2) / (q3 - q2);
      p.b = (d23 - d12) / (q3 - q1);
      p.g = d12 - p.b * (q1 + q2);
      p.e = y1 - p.b * q1 * q1 - p.g * q1;
      // f(q, K) − f(q, 0) = (α q + δ) K
      const double s1 = (g1[i].t[j] - y1) / K, s2 = (g2[i].t[j] - y2) / K;
      p.a = (s2 - s1) / (q2 - q1);
      p.d = s1 - p.a * q1;
    }
    DecodeLine& line = attention_[i].decode;
    for (size_t j = 0; j < 5; ++j) line.at0[j] = d0[i].t[j], line.slope[j] = (dK[i].t[j] - d0[i].t[j]) / K;
    if (dK[i].decode && platform_) {
      const Platform& pl = *platform_;
      const MemoryLevel* level = nullptr;
      for (const MemoryLevel& l : pl.memory)
        if (l.name == dK[i].level) level = &l;
      line.params = pl.kernel_model.decode_for(dK[i].kv);
      if (level && line.params) {
        line.modelled = true, line.shape = dK[i].shape;
        line.figures = DecodeFigures{pl.sm_count, pl.boost_clock_hz, level->bandwidth_bytes_per_s, pl.l2_size_bytes};
      }
    }
  }
  attention_ready_ = true;
}

// The LM head on n sampling sequences: its compute, memory and other times are affine in n (a GEMM
// of n rows: FLOPs ∝ n, bytes = weights + n · (in + out)), from two evaluations, n = 1 and 256
double BatchPricer::lm_head(long long n) {
  if (n <= 0) return 0;
  if (!lm_ready_) {
    const double at[2] = {1, 256};
    double c[2] = {0, 0}, m[2] = {0, 0}, o[2] = {0, 0};
    for (int k = 0; k < 2; ++k)
      for (const Row& r : run(0, static_cast<long long>(at[k]), 1, 0).rows)
        if (r.layer == "lm_head") {
          c[k] += r.derated.compute_time_s, m[k] += r.derated.memory_time_s;
          o[k] += r.derated.time_s - std::max(r.derated.compute_time_s, r.derated.memory_time_s);
        }
    lm_ = Affine{c[0], c[1], m[0], m[1], o[0], o[1], 1};
    lm_ready_ = true;
  }
  const double x = static_cast<double>(n);
  return std::max(lerp(lm_.c0, lm_.c1, 1, 256, x), lerp(lm_.m0, lm_.m1, 1, 256, x)) + lerp(lm_.o0, lm_.o1, 1, 256, x);
}

double BatchPricer::activation_bytes(long long tokens) {
  auto found = activations_.find(tokens);
  if (found != activations_.end()) return found->second;
  return activations_.emplace(tokens, run(0, 1, tokens, 0).summary.at(0).activation_bytes).first->second;
}

double BatchPricer::cost(const std::vector<Work>& prefill, const std::vector<Work>& decode) {
  Sums b;
  b.sampling = static_cast<long long>(decode.size());
  for (const Work& w : prefill) b.tokens += static_cast<double>(w.tokens), b.sampling += w.last;
  b.tokens += static_cast<double>(decode.size());
  b.prefill = !prefill.empty();
  // attention: per layer, the batch's sequences' compute and memory times summed, then the larger.
  // Each sum is the polynomial at the batch's sums: Σ q·k, Σ q², Σ q, Σ k and the count
  for (const Work& w : prefill) {
    const double q = static_cast<double>(w.tokens), k = static_cast<double>(w.context);
    b.sqk += q * k, b.sqq += q * q, b.sq += q, b.sk += k, b.n += 1;
  }
  // the decodes: their count, Σ k, the longest k
  b.nd = static_cast<double>(decode.size());
  for (const Work& w : decode) b.dk += static_cast<double>(w.context), b.kmax = std::max(b.kmax, static_cast<double>(w.context));
  return price(b);
}

// (a decode-only batch: no prefill sums; Σ k of integers below 2^53 is exact either way)
double BatchPricer::decode_cost(long long n, long long context_sum, long long context_max) {
  Sums b;
  b.sampling = n;
  b.tokens = static_cast<double>(n);
  b.nd = static_cast<double>(n), b.dk = static_cast<double>(context_sum), b.kmax = n > 0 ? static_cast<double>(context_max) : 0;
  return price(b);
}

double BatchPricer::price(const Sums& b) {
  if (!(b.tokens > 0)) return 0;
  double t = token_model(b.prefill ? 0 : 1).at(b.tokens) + lm_head(b.sampling);
  attention_model();
  const double n = b.n, nd = b.nd, dk = b.dk, kmax = b.kmax;
  auto sum = [&](const Poly& p) { return p.a * b.sqk + p.b * b.sqq + p.g * b.sq + p.d * b.sk + p.e * n; };
  for (const AttentionRow& r : attention_) {
    const DecodeLine& d = r.decode;
    auto line = [&](size_t j) { return nd * d.at0[j] + d.slope[j] * dk; };
    double c = sum(r.c), m = sum(r.m), o = sum(r.o);
    if (nd > 0 && d.modelled) {  // one decode kernel for the batch's decodes, never below their roofline bound
      DecodeShape s = d.shape;
      s.batch = nd, s.kv_tokens = dk / nd + 1, s.max_kv_tokens = kmax + 1;
      t += std::max(decode_attention_time(s, *d.params, d.figures).time_s, std::max(line(3), line(4)));
    } else if (nd > 0) {
      c += line(0), m += line(1), o += line(2);
    }
    if (n > 0 || (nd > 0 && !d.modelled)) t += std::max(c, m) + o;
  }
  return t;
}

}  // namespace rsim::serving
