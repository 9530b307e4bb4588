#include "serving/pricer.hpp"

#include <algorithm>
#include <cmath>

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
  const SummaryRow& s = run(1, 1, 1, 0).summary.at(0);
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
  tokens_ready_[mode] = true;
  return m;
}

const BatchPricer::Model& BatchPricer::attention_model(long long q) {
  auto found = attention_.find(q);
  if (found != attention_.end()) return found->second;
  Model m;
  m.x0 = 0, m.x1 = kContextRef;
  std::vector<Row> r0;
  for (const Row& r : run(0, 1, q, 0).rows)
    if (per_sequence_op(r.op)) r0.push_back(r);
  std::vector<const Row*> r1;
  const PointResult& b = run(0, 1, q, static_cast<long long>(kContextRef));
  for (const Row& r : b.rows)
    if (per_sequence_op(r.op)) r1.push_back(&r);
  for (size_t i = 0; i < r0.size() && i < r1.size(); ++i) {
    Affine a;
    a.c0 = r0[i].derated.compute_time_s, a.m0 = r0[i].derated.memory_time_s, a.o0 = r0[i].derated.time_s - std::max(a.c0, a.m0);
    a.c1 = r1[i]->derated.compute_time_s, a.m1 = r1[i]->derated.memory_time_s, a.o1 = r1[i]->derated.time_s - std::max(a.c1, a.m1);
    m.rows.push_back(a);
  }
  return attention_.emplace(q, std::move(m)).first->second;
}

double BatchPricer::lm_head(long long n) {
  if (n <= 0) return 0;
  auto found = lm_head_.find(n);
  if (found != lm_head_.end()) return found->second;
  double t = 0;
  for (const Row& r : run(0, n, 1, 0).rows)
    if (r.layer == "lm_head") t += r.derated.time_s;
  return lm_head_.emplace(n, t).first->second;
}

double BatchPricer::activation_bytes(long long tokens) {
  auto found = activations_.find(tokens);
  if (found != activations_.end()) return found->second;
  return activations_.emplace(tokens, run(0, 1, tokens, 0).summary.at(0).activation_bytes).first->second;
}

double BatchPricer::cost(const std::vector<Work>& prefill, const std::vector<Work>& decode) {
  double tokens = 0;
  long long sampling = static_cast<long long>(decode.size());
  for (const Work& w : prefill) tokens += static_cast<double>(w.tokens), sampling += w.last;
  tokens += static_cast<double>(decode.size());
  if (!(tokens > 0)) return 0;
  double t = token_model(prefill.empty() ? 1 : 0).at(tokens) + lm_head(sampling);
  // attention: per layer, the batch's sequences' compute and memory times summed, then the larger
  thread_local std::vector<double> c, m, o;
  c.clear(), m.clear(), o.clear();
  auto add = [&](long long q, long long k) {
    const Model& a = attention_model(q);
    if (c.size() < a.rows.size()) c.resize(a.rows.size()), m.resize(a.rows.size()), o.resize(a.rows.size());
    const double x = static_cast<double>(k);
    for (size_t i = 0; i < a.rows.size(); ++i) {
      const Affine& r = a.rows[i];
      c[i] += lerp(r.c0, r.c1, a.x0, a.x1, x), m[i] += lerp(r.m0, r.m1, a.x0, a.x1, x), o[i] += lerp(r.o0, r.o1, a.x0, a.x1, x);
    }
  };
  for (const Work& w : prefill) add(w.tokens, w.context);
  for (const Work& w : decode) add(1, w.context);
  for (size_t i = 0; i < c.size(); ++i) t += std::max(c[i], m[i]) + o[i];
  return t;
}

}  // namespace rsim::serving
