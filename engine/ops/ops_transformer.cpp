// Transformer operators: attention (MHA / GQA / MQA, naive or flash), the KV cache, RMSNorm,
// rotary position embedding, token embedding (a gather), gated MLPs (SwiGLU, GeGLU) and a
// mixture of experts. Each states its cost rule in `formula`, shown by `rsim ops NAME`.
#include <cmath>
#include <string>

#include "engine/ops/ops.hpp"

namespace rsim {

namespace {

[[noreturn]] void fail(const std::string& msg) { throw ShapeError(msg); }

long long positive(long long v, const char* what) {
  if (v <= 0) fail(std::string(what) + " must be positive, got " + std::to_string(v));
  return v;
}

double d(long long v) { return static_cast<double>(v); }

void need_rank3(const Shape& s, const char* op, const char* what) {
  if (s.size() != 3)
    fail(std::string(op) + " expects " + what + " of rank 3 (batch, tokens, features), got " + shape_str(s));
}

// Tokens and features of a (..., features) input.
struct Rows {
  double tokens;
  long long features;
};
Rows rows_of(const Shape& x, const char* op) {
  if (x.empty()) fail(std::string(op) + " expects an input of rank 1 or more (..., features)");
  return {elements(x) / d(x.back()), x.back()};
}

const AttrSpec kIntermediate{"intermediate", AttrType::Int, "", "hidden size F of the feed-forward network", {}};

// Unfused gated MLP on T tokens: gate and up projections (D → F each) are written and read
// back, their product is written and read by the down projection: 3 passes over 2·T·F elements.
void gated_mlp_work(OpWork& w, double tokens, double dm, double f, double act_flops, double experts_read, double experts_all,
                    double per_token_experts, bool gated) {
  double mats = gated ? 3 : 2;
  w.macs += tokens * per_token_experts * mats * dm * f;
  w.other_flops += tokens * per_token_experts * f * (act_flops + (gated ? 1 : 0));
  w.params += experts_all * mats * dm * f;
  w.weight_elems += experts_read * mats * dm * f;
  w.quantized_elems += experts_read * mats * dm * f;
  w.scratch_elems += tokens * per_token_experts * (gated ? 2 : 1) * f;
  w.scratch_passes = gated ? 3 : 2;
}

// Query-key pairs scored per sequence and head: Sq queries over Skv keys, the queries being the
// last Sq positions. Flash skips masked blocks when causal; naive computes the whole matrix.
double score_pairs(double sq, double skv, bool causal, bool naive, double window) {
  if (naive || !causal) return sq * skv;
  if (window > 0) {
    // query i sees min(W, a + i) keys, a = Skv − Sq + 1: the first n = clamp(W − a + 1, 0, Sq)
    // queries see a, a + 1, …; the rest see W
    const double a0 = skv - sq + 1, n = std::clamp(window - a0 + 1, 0.0, sq);
    return n * a0 + n * (n - 1) / 2 + (sq - n) * window;
  }
  return sq * skv - sq * (sq - 1) / 2;
}

// Scaled dot-product attention (causal, windowed, grouped-query; a prefill's or a decode's)
void add_attention(OpRegistry& r) {
  OpDef a;
  a.name = "attention";
  a.summary = "scaled dot-product attention of q (B, Sq, H·hd) over k, v (B, Skv, KVH·hd): MHA, GQA (KVH < H) or MQA (KVH = 1)";
  a.formula =
      "output (B, Sq, H·hd); with causal masking query i (of Sq, the last Sq positions) sees Skv − Sq + i + 1 keys\n"
      "P = scores computed: flash: B·H·(Sq·Skv − Sq·(Sq−1)/2) when causal (masked blocks skipped), B·H·Sq·Skv otherwise;\n"
      "    naive: B·H·Sq·Skv always (the full matrix is computed, then masked)\n"
      "    with a sliding window W (causal): query i sees min(W, Skv − Sq + i + 1) keys, P = B·H·Σ_i of it (flash)\n"
      "MACs   = 2 · P · hd (Q·Kᵀ and P·V)\n"
      "FLOPs  = 2 · MACs + 6 · P (scale 1, softmax 5 per score); params = 0\n"
      "bytes: q, k, v read once (k, v from a kv_cache layer in the KV dtype), output written once;\n"
      "    naive also moves the B·H·Sq·Skv score matrix 4 times (QKᵀ writes it, softmax reads it and writes\n"
      "    the probabilities, P·V reads them); flash keeps it on chip (K and V read once: ideal tiling)";
  a.attrs = {{"heads", AttrType::Int, "", "query heads H", {}},
             {"kv_heads", AttrType::Int, "~", "key/value heads KVH (default H; 1 = multi-query)", {}},
             {"head_dim", AttrType::Int, "~", "features per head hd (default: q features / H)", {}},
             {"causal", AttrType::Bool, "false", "causal mask (decoders)", {}},
             {"implementation", AttrType::Choice, "flash", "naive writes the score matrix to memory; flash keeps it on chip", {"flash", "naive"}},
             {"window", AttrType::Int, "0", "sliding window W: a query sees its last W positions (itself included); 0 = none (needs causal)", {}}};
  a.min_inputs = a.max_inputs = 3;
  a.infer = [](const OpArgs& x) -> std::vector<Shape> {
    const Shape& q = x.in[0];
    const Shape& k = x.in[1];
    const Shape& v = x.in[2];
    need_rank3(q, "attention", "q");
    need_rank3(k, "attention", "k");
    need_rank3(v, "attention", "v");
    long long h = positive(x.attrs.i("heads"), "heads");
    long long kvh = x.attrs.has("kv_heads") ? positive(x.attrs.i("kv_heads"), "kv_heads") : h;
    if (h % kvh != 0) fail("heads (" + std::to_string(h) + ") must be a multiple of kv_heads (" + std::to_string(kvh) + ")");
    long long hd = x.attrs.has("head_dim") ? positive(x.attrs.i("head_dim"), "head_dim") : q[2] / h;
    if (q[2] != h * hd)
      fail("q has " + std::to_string(q[2]) + " features, heads × head_dim = " + std::to_string(h) + " × " + std::to_string(hd) + " = " +
           std::to_string(h * hd));
    if (k[2] != kvh * hd)
      fail("k has " + std::to_string(k[2]) + " features, kv_heads × head_dim = " + std::to_string(kvh) + " × " + std::to_string(hd) + " = " +
           std::to_string(kvh * hd));
    if (v != k) fail("k and v must have the same shape: " + shape_str(k) + " vs " + shape_str(v));
    if (k[0] != q[0]) fail("q and k have different batch sizes: " + shape_str(q) + " vs " + shape_str(k));
    if (x.attrs.i("window") < 0) fail("window must not be negative, got " + std::to_string(x.attrs.i("window")));
    if (x.attrs.i("window") > 0 && !x.attrs.b("causal")) fail("a sliding window needs causal: true (a query sees the W positions up to its own)");
    if (x.attrs.b("causal") && k[1] < q[1])
      fail("causal attention needs at least as many keys (" + std::to_string(k[1]) + ") as queries (" + std::to_string(q[1]) + ")");
    return {q};
  };
  a.work = [](const OpArgs& x, const std::vector<Shape>&) {
    const Shape& q = x.in[0];
    double b = d(q[0]), sq = d(q[1]), skv = d(x.in[1][1]);
    long long h = x.attrs.i("heads");
    double hd = x.attrs.has("head_dim") ? d(x.attrs.i("head_dim")) : d(q[2] / h);
    bool naive = x.attrs.s("implementation") == "naive";
    double scores = b * d(h) * score_pairs(sq, skv, x.attrs.b("causal"), naive, d(x.attrs.i("window")));
    OpWork w;
    w.macs = 2 * scores * hd;
    w.other_flops = 6 * scores;
    if (naive) {
      w.scratch_elems = b * d(h) * sq * skv;
      w.scratch_passes = 4;
    }
    return w;
  };
  r.add(a);
}

// Multi-head latent attention (DeepSeek-V2/V3) and the KV cache it and attention read
void add_latent_attention_and_cache(OpRegistry& r) {
  OpDef m;
  m.name = "mla_attention";
  m.summary = "multi-head latent attention (DeepSeek-V2/V3): q (B, Sq, H·(N+R)) over a cached latent (B, Skv, L) and rope key (B, Skv, R)";
  m.formula =
      "inputs: q (B, Sq, H·(N + R)) with its last R features of each head rotated; the KV cache's latent c (B, Skv, L)\n"
      "    and shared rope key k_pe (B, Skv, R); output (B, Sq, H·V). The layer owns kv_b_proj (L → H·(N + V)):\n"
      "    params = L · H · (N + V), read once per pass (a matrix weight)\n"
      "P = B · H · pairs, pairs as attention's (causal flash: Sq·Skv − Sq·(Sq−1)/2; naive or non-causal: Sq·Skv)\n"
      "absorb: false (as Hugging Face runs it; the prefill path of serving engines):\n"
      "    kv_b_proj decompresses every key: B · Skv · L · H · (N + V) MACs, K_nope and V (B·Skv·H·(N + V) elements)\n"
      "    written and read back (scratch, 2 passes); then attention of head dims N + R (scores) and V (values):\n"
      "    MACs = B·Skv·L·H·(N + V) + P · (N + R + V)\n"
      "absorb: true (the decode path of DeepSeek's and serving engines' kernels): W_UK folds into q and W_UV\n"
      "    into the output, so attention runs in the latent space like MQA with one KV head:\n"
      "    MACs = B·Sq·H·N·L (q absorb) + P · (L + R) (scores) + P · L (values) + B·Sq·H·L·V (un-absorb)\n"
      "FLOPs = 2 · MACs + 6 · P (scale 1, softmax 5 per score)\n"
      "bytes: q, c and k_pe read once (c, k_pe from the KV cache in the KV dtype), output written once, kv_b_proj read;\n"
      "    naive also moves the B·H·Sq·Skv score matrix 4 times";
  m.attrs = {{"heads", AttrType::Int, "", "query heads H", {}},
             {"qk_nope_dim", AttrType::Int, "", "features per head of the non-rotary part of q and k, N", {}},
             {"v_head_dim", AttrType::Int, "", "features per head of v, V", {}},
             {"causal", AttrType::Bool, "false", "causal mask (decoders)", {}},
             {"absorb", AttrType::Bool, "false", "fold kv_b_proj into q and the output (attention in the latent space)", {}},
             {"implementation", AttrType::Choice, "flash", "naive writes the score matrix to memory; flash keeps it on chip", {"flash", "naive"}}};
  m.min_inputs = m.max_inputs = 3;
  m.infer = [](const OpArgs& x) -> std::vector<Shape> {
    const Shape& q = x.in[0];
    const Shape& c = x.in[1];
    const Shape& kpe = x.in[2];
    need_rank3(q, "mla_attention", "q");
    need_rank3(c, "mla_attention", "the latent");
    need_rank3(kpe, "mla_attention", "the rope key");
    const long long h = positive(x.attrs.i("heads"), "heads");
    const long long n = positive(x.attrs.i("qk_nope_dim"), "qk_nope_dim");
    const long long v = positive(x.attrs.i("v_head_dim"), "v_head_dim");
    const long long rope = kpe[2];
    if (q[2] != h * (n + rope))
      fail("q has " + std::to_string(q[2]) + " features, heads × (qk_nope_dim + the rope key's " + std::to_string(rope) + ") = " + std::to_string(h) +
           " × " + std::to_string(n + rope) + " = " + std::to_string(h * (n + rope)));
    if (c[0] != q[0] || kpe[0] != q[0]) fail("q, the latent and the rope key have different batch sizes: " + shape_str(q) + ", " + shape_str(c) + ", " + shape_str(kpe));
    if (c[1] != kpe[1]) fail("the latent and the rope key hold different numbers of tokens: " + shape_str(c) + " vs " + shape_str(kpe));
    if (x.attrs.b("causal") && c[1] < q[1])
      fail("causal attention needs at least as many keys (" + std::to_string(c[1]) + ") as queries (" + std::to_string(q[1]) + ")");
    return one_shape(Shape{q[0], q[1], h * v});
  };
  m.work = [](const OpArgs& x, const std::vector<Shape>&) {
    const Shape& q = x.in[0];
    const double b = d(q[0]), sq = d(q[1]), skv = d(x.in[1][1]), lat = d(x.in[1][2]), rope = d(x.in[2][2]);
    const double h = d(x.attrs.i("heads")), n = d(x.attrs.i("qk_nope_dim")), v = d(x.attrs.i("v_head_dim"));
    const bool naive = x.attrs.s("implementation") == "naive";
    const double scores = b * h * score_pairs(sq, skv, x.attrs.b("causal"), naive, 0);
    OpWork w;
    w.params = w.weight_elems = w.quantized_elems = lat * h * (n + v);
    // scratch held: the decompressed K_nope and V (2 passes: written, read), naive's score matrix (4)
    double held = 0, moved = 0;
    if (x.attrs.b("absorb")) {
      w.macs = b * sq * h * n * lat + scores * (lat + rope) + scores * lat + b * sq * h * lat * v;
    } else {
      w.macs = b * skv * lat * h * (n + v) + scores * (n + rope + v);
      held += b * skv * h * (n + v), moved += 2 * b * skv * h * (n + v);
    }
    if (naive) held += b * h * sq * skv, moved += 4 * b * h * sq * skv;
    w.other_flops = 6 * scores;
    w.scratch_elems = held;
    w.scratch_passes = held > 0 ? moved / held : 0;
    return w;
  };
  r.add(m);

  OpDef kv;
  kv.name = "kv_cache";
  kv.summary = "the KV cache: appends the new k (B, S, Fk) and v (B, S, Fv) to C cached tokens; outputs the whole cache (B, C+S, Fk), (B, C+S, Fv)";
  kv.formula =
      "outputs K (B, C + S, Fk), V (B, C + S, Fv), stored in the KV dtype (settings kv_dtype); a later attention reads them whole\n"
      "    (Fk = Fv = KVH·hd for attention; MLA caches its latent, Fk = kv_lora, and its rope key, Fv = qk_rope_dim)\n"
      "bytes: reads the new k, v (activations), writes B·S·(Fk + Fv) elements (the append, KV dtype);\n"
      "    the cache held is B·(C + S)·(Fk + Fv) elements (memory footprint); FLOPs = 0; params = 0\n"
      "with a sliding window W: the outputs hold min(C, W − 1) cached tokens + S, the cache held min(C + S, W) tokens\n"
      "paged (page P): the cache held is rounded up to whole pages, ceil(tokens / P) · P per sequence (what a page's waste costs)";
  kv.attrs = {{"context", AttrType::Int, "0", "tokens already in the cache, C", {}},
              {"window", AttrType::Int, "0", "sliding window W: the cache keeps the last W tokens; 0 = every token", {}},
              {"page", AttrType::Int, "0", "a paged cache (vLLM): each sequence holds whole pages of this many tokens; 0 = exact tokens", {}}};
  kv.min_inputs = kv.max_inputs = 2;
  kv.kv_outputs = true;
  kv.infer = [](const OpArgs& x) -> std::vector<Shape> {
    const Shape& k = x.in[0];
    need_rank3(k, "kv_cache", "k");
    const Shape& v = x.in[1];
    need_rank3(v, "kv_cache", "v");
    // k and v may differ in width (MLA caches a latent of kv_lora features beside a rope key)
    if (v[0] != k[0] || v[1] != k[1]) fail("k and v must have the same batch and tokens: " + shape_str(k) + " vs " + shape_str(v));
    long long c = x.attrs.i("context");
    if (c < 0) fail("context must not be negative, got " + std::to_string(c));
    long long win = x.attrs.i("window");
    if (win < 0) fail("window must not be negative, got " + std::to_string(win));
    if (x.attrs.i("page") < 0) fail("page must not be negative, got " + std::to_string(x.attrs.i("page")));
    // with a window, the new tokens see at most W − 1 cached ones
    if (win > 0) c = std::min(c, win - 1);
    return {Shape{k[0], k[1] + c, k[2]}, Shape{v[0], v[1] + c, v[2]}};
  };
  kv.work = [](const OpArgs& x, const std::vector<Shape>& out) {
    OpWork w;
    const double kvb = dtype_bytes(x.kv_dtype());
    w.output_bytes = {elements(x.in[0]) * kvb, elements(x.in[1]) * kvb};
    const long long win = x.attrs.i("window"), page = x.attrs.i("page");
    if (win > 0 || page > 0) {  // the cache keeps min(C + S, W) tokens, in whole pages when paged
      double held = d(x.in[0][1]) + d(x.attrs.i("context"));
      if (win > 0) held = std::min(held, d(win));
      if (page > 0) held = std::ceil(held / d(page)) * d(page);
      w.kv_cache_elems = d(x.in[0][0]) * held * (d(x.in[0][2]) + d(x.in[1][2]));
    }
    (void)out;
    return w;
  };
  r.add(kv);
}

void add_norm_and_position(OpRegistry& r) {
  OpDef n;
  n.name = "rmsnorm";
  n.summary = "RMS normalisation over the last dimension (Llama): x / rms(x) · γ";
  n.formula =
      "FLOPs  = 4 per element (square, sum, scale by 1/rms, γ); 3 without affine\n"
      "params = D (γ) with affine, else 0 (features: F, one γ shared by every group of F); weights read = params (kept in the activation dtype)";
  n.attrs = {{"affine", AttrType::Bool, "true", "learnable γ", {}},
             {"features", AttrType::Int, "~", "normalise each group of this many features (per head: Gemma-3's q and k norms); default the last dimension", {}}};
  n.infer = [](const OpArgs& x) -> std::vector<Shape> {
    rows_of(x.in[0], "rmsnorm");
    if (x.attrs.has("features")) {
      const long long f = positive(x.attrs.i("features"), "features");
      if (x.in[0].back() % f != 0) fail("rmsnorm: " + std::to_string(x.in[0].back()) + " features are not a whole number of groups of " + std::to_string(f));
    }
    return one_shape(x.in[0]);
  };
  n.work = [](const OpArgs& x, const std::vector<Shape>& out) {
    bool affine = x.attrs.b("affine");
    OpWork w;
    w.other_flops = elements(out[0]) * (affine ? 4 : 3);
    w.params = affine ? d(x.attrs.has("features") ? x.attrs.i("features") : x.in[0].back()) : 0;
    w.weight_elems = w.params;
    return w;
  };
  r.add(n);

  OpDef p;
  p.name = "rope";
  p.summary = "rotary position embedding applied to (B, S, heads·hd)";
  p.formula =
      "y = x·cos + rotate_half(x)·sin per rotated element: FLOPs = 3 per element × rotary_dim / hd; MACs = 0; params = 0\n"
      "weights read = the cos and sin rows of the S positions: S · rotary_dim elements (rotary_dim/2 each);\n"
      "weights held = the model's one cos/sin table, table_positions · rotary_dim elements, on the layer that\n"
      "  states table_positions (the other rope layers share it: 0 held), whatever S is;\n"
      "bytes: the whole input read and written (rotated and pass-through features alike)";
  p.attrs = {{"head_dim", AttrType::Int, "", "features per head hd (even)", {}},
             {"rotary_dim", AttrType::Int, "~", "features rotated in each head, the last ones (MLA's q: qk_rope_dim of N + R); default hd", {}},
             {"table_positions", AttrType::Int, "~", "rows of the cos/sin table this layer holds in memory (the model's max positions, on one rope layer of the model; default 0: it shares another's)", {}}};
  p.infer = [](const OpArgs& x) -> std::vector<Shape> {
    const Shape& s = x.in[0];
    need_rank3(s, "rope", "its input");
    long long hd = positive(x.attrs.i("head_dim"), "head_dim");
    if (hd % 2 != 0) fail("rope head_dim must be even, got " + std::to_string(hd));
    if (s[2] % hd != 0) fail("rope: " + std::to_string(s[2]) + " features are not a whole number of heads of " + std::to_string(hd));
    if (x.attrs.has("rotary_dim")) {
      const long long rd = positive(x.attrs.i("rotary_dim"), "rotary_dim");
      if (rd % 2 != 0 || rd > hd) fail("rope rotary_dim must be even and at most head_dim (" + std::to_string(hd) + "), got " + std::to_string(rd));
    }
    return {s};
  };
  p.work = [](const OpArgs& x, const std::vector<Shape>& out) {
    OpWork w;
    const double hd = d(x.attrs.i("head_dim")), rd = x.attrs.has("rotary_dim") ? d(x.attrs.i("rotary_dim")) : hd;
    w.other_flops = 3 * elements(out[0]) * rd / hd;
    w.weight_elems = d(x.in[0][1]) * rd;
    w.resident_elems = (x.attrs.has("table_positions") ? d(x.attrs.i("table_positions")) : 0) * rd;
    return w;
  };
  r.add(p);

  OpDef e;
  e.name = "embedding";
  e.summary = "token embedding: a gather of one table row per token id";
  e.formula =
      "input: token ids (...), output (..., dim); T = number of ids\n"
      "FLOPs = 0; params = vocab · dim (the table, held in memory)\n"
      "weights read = T · dim (one row per token, repeated ids read again); ids read as int32 (4 bytes)";
  e.attrs = {{"vocab", AttrType::Int, "", "rows of the table (vocabulary size)", {}}, {"dim", AttrType::Int, "", "features per row", {}}};
  e.infer = [](const OpArgs& x) -> std::vector<Shape> {
    positive(x.attrs.i("vocab"), "vocab");
    Shape y = x.in[0];
    y.push_back(positive(x.attrs.i("dim"), "dim"));
    return {y};
  };
  e.work = [](const OpArgs& x, const std::vector<Shape>&) {
    double t = elements(x.in[0]), dim = d(x.attrs.i("dim")), vocab = d(x.attrs.i("vocab"));
    OpWork w;
    w.params = vocab * dim;
    w.weight_elems = w.quantized_elems = t * dim;
    w.resident_elems = w.resident_quantized_elems = vocab * dim;
    w.input_bytes = {t * 4};
    return w;
  };
  r.add(e);
}

void add_mlps(OpRegistry& r) {
  struct Gated {
    const char* name;
    const char* act;
    double act_flops;
  };
  for (const Gated& g : {Gated{"swiglu", "silu", 5}, Gated{"geglu", "gelu", 8}}) {
    OpDef m;
    m.name = g.name;
    m.summary = std::string("gated feed-forward block: down(") + g.act + "(x·W_gate) ⊙ (x·W_up)), D → F → D";
    m.formula = std::string(
                    "input (..., D), T tokens; output (..., D)\n"
                    "MACs   = 3 · T · D · F (gate, up, down)\n"
                    "FLOPs  = 2 · MACs + T · F · ") +
                (g.act_flops == 5 ? "6 (silu 5, product 1)" : "9 (gelu 8, product 1)") +
                "\n"
                "params = 3 · D · F (+ 2·F + D with bias); weights read = params\n"
                "bytes also: gate and up (2·T·F) written and read back, their product written and read by down\n"
                "    (unfused: 3 passes over 2·T·F elements, counted as scratch)";
    m.attrs = {kIntermediate, {"bias", AttrType::Bool, "false", "biases on the three projections", {}}};
    m.infer = [name = std::string(g.name)](const OpArgs& x) -> std::vector<Shape> {
      rows_of(x.in[0], name.c_str());
      positive(x.attrs.i("intermediate"), "intermediate");
      return one_shape(x.in[0]);
    };
    double af = g.act_flops;
    m.work = [af, name = std::string(g.name)](const OpArgs& x, const std::vector<Shape>&) {
      Rows rw = rows_of(x.in[0], name.c_str());
      double f = d(x.attrs.i("intermediate")), dm = d(rw.features);
      OpWork w;
      gated_mlp_work(w, rw.tokens, dm, f, af, 1, 1, 1, true);
      if (x.attrs.b("bias")) {
        w.params += 2 * f + dm;
        w.weight_elems += 2 * f + dm;
      }
      return w;
    };
    r.add(m);
  }

  OpDef moe;
  moe.name = "moe";
  moe.summary = "mixture of experts: a router picks top_k of E expert MLPs per token (Mixtral)";
  moe.formula =
      "input (..., D), T tokens; output (..., D)\n"
      "router: T · D · E MACs, softmax and top-k 6 · T · E FLOPs; combine: 2 · T · k · D FLOPs\n"
      "experts: each token runs k expert MLPs (gated: 3 · D · F MACs each, activation and product 6 or 9 · F FLOPs)\n"
      "MACs   = T · D · E + T · k · 3 · D · F (2 · D · F per expert without gating)\n"
      "params = D · E + E · 3 · D · F; active params (one token) = D · E + k · 3 · D · F\n"
      "weights read = router + the experts the batch touches: with uniform, independent routing of T tokens,\n"
      "    E · (1 − (1 − k/E)^T) experts (k at T = 1, nearly E for large batches) — an ASSUMPTION: real routers\n"
      "    are not uniform; every expert is held in memory (footprint); the router stays in the activation dtype\n"
      "scratch: as the gated MLP, per token and expert\n"
      "shared experts (Qwen-MoE, DeepSeek): one gated MLP of shared_intermediate Fs that every token runs:\n"
      "    T · 3 · D · Fs MACs, 3 · D · Fs params (always read and active); shared_gate: a sigmoid gate on its\n"
      "    output, D params, T · D MACs; router_bias: E more params (DeepSeek-V3)\n"
      "expert parallelism over G GPUs (expert_parallel, set by parallel.expert): each GPU holds ceil(E / G) experts\n"
      "    (and the router and shared experts whole) and runs its own T tokens' share of the expert work, balanced:\n"
      "    the same MACs; the experts it reads are those the G · T tokens of all replicas touch among its own:\n"
      "    ceil(E / G) · (1 − (1 − k/E)^(G · T))";
  moe.attrs = {{"experts", AttrType::Int, "", "experts E", {}},
               {"top_k", AttrType::Int, "", "experts per token k", {}},
               kIntermediate,
               {"activation", AttrType::Choice, "silu", "the experts' activation", {"silu", "gelu"}},
               {"gated", AttrType::Bool, "true", "gated experts (SwiGLU / GeGLU: three matrices); false: two", {}},
               {"shared_intermediate", AttrType::Int, "0", "hidden size Fs of the shared experts every token runs (0: none)", {}},
               {"shared_gate", AttrType::Bool, "false", "a sigmoid gate (D → 1) on the shared experts' output", {}},
               {"router_bias", AttrType::Bool, "false", "a per-expert bias on the routing scores (DeepSeek-V3's e_score_correction_bias): E params", {}},
               {"expert_parallel", AttrType::Int, "1", "GPUs the experts are spread over, each serving its own tokens (set by parallel.expert)", {}}};
  moe.infer = [](const OpArgs& x) -> std::vector<Shape> {
    rows_of(x.in[0], "moe");
    long long e = positive(x.attrs.i("experts"), "experts");
    long long k = positive(x.attrs.i("top_k"), "top_k");
    if (k > e) fail("top_k (" + std::to_string(k) + ") cannot exceed experts (" + std::to_string(e) + ")");
    positive(x.attrs.i("intermediate"), "intermediate");
    if (x.attrs.i("shared_intermediate") < 0) fail("shared_intermediate must not be negative");
    if (const long long g = x.attrs.i("expert_parallel"); g < 1 || g > e)
      fail("expert_parallel (" + std::to_string(g) + ") must be 1 to the experts (" + std::to_string(e) + ")");
    return one_shape(x.in[0]);
  };
  moe.work = [](const OpArgs& x, const std::vector<Shape>&) {
    Rows rw = rows_of(x.in[0], "moe");
    double t = rw.tokens, dm = d(rw.features), e = d(x.attrs.i("experts")), k = d(x.attrs.i("top_k"));
    double f = d(x.attrs.i("intermediate"));
    bool gated = x.attrs.b("gated");
    // expert parallelism: this GPU's experts, touched by the tokens of every replica
    const double g = d(x.attrs.i("expert_parallel")), held = std::ceil(e / g);
    double touched = held * (1 - std::pow(1 - k / e, g * t));
    OpWork w;
    w.macs = t * dm * e;
    w.other_flops = 6 * t * e + 2 * t * k * dm;
    const double router = dm * e + (x.attrs.b("router_bias") ? e : 0);
    w.params = router;
    w.weight_elems = router;
    gated_mlp_work(w, t, dm, f, x.attrs.s("activation") == "silu" ? 5 : 8, touched, e, k, gated);
    double mats = gated ? 3 : 2;
    w.active_params = router + k * mats * dm * f;
    w.resident_elems = router + held * mats * dm * f;
    w.resident_quantized_elems = held * mats * dm * f;
    if (const double fs = d(x.attrs.i("shared_intermediate")); fs > 0) {  // the shared experts: every token, always read
      OpWork s;
      gated_mlp_work(s, t, dm, fs, x.attrs.s("activation") == "silu" ? 5 : 8, 1, 1, 1, true);
      w.macs += s.macs, w.other_flops += s.other_flops;
      w.params += s.params, w.weight_elems += s.weight_elems, w.quantized_elems += s.quantized_elems;
      w.scratch_elems += s.scratch_elems;
      w.active_params += s.params, w.resident_elems += s.params, w.resident_quantized_elems += s.params;
      if (x.attrs.b("shared_gate")) {  // D → 1, a sigmoid, the product
        w.macs += t * dm, w.other_flops += t * (4 + dm);
        w.params += dm, w.weight_elems += dm, w.active_params += dm, w.resident_elems += dm;
      }
    }
    return w;
  };
  r.add(moe);
}

}  // namespace

void add_transformer_ops(OpRegistry& r) {
  add_attention(r);
  add_latent_attention_and_cache(r);
  add_norm_and_position(r);
  add_mlps(r);
}

}  // namespace rsim
