// Transformer operators and per-tensor precision: shapes and costs derived by hand. Every
// expected value is the arithmetic that produces it, written out (never a number rsim printed).
#include <catch2/catch.hpp>

#include <cmath>
#include <string>
#include <vector>

#include "engine/model/diagnostics.hpp"
#include "engine/graph/graph.hpp"
#include "engine/ops/ops.hpp"
#include "helpers.hpp"

using namespace rsim;

namespace {

struct OpRun {
  std::vector<Shape> out;
  OpCost c;
};

const OpDef& op_named(const std::string& name) {
  const OpDef* op = builtin_ops().find(name);
  INFO("operator " << name);
  REQUIRE(op != nullptr);
  return *op;
}

Attrs attrs_of(const OpDef& op, const std::string& yaml) {
  Diags d;
  Attrs a = read_attrs(op, parse_yaml(yaml, "t.yaml"), d, "layer");
  REQUIRE(d.empty());
  return a;
}

OpRun run(const std::string& name, const std::string& yaml, const std::vector<Shape>& in, DType dt = DType::fp32, Precision p = {},
          unsigned kv_inputs = 0) {
  const OpDef& op = op_named(name);
  Attrs a = attrs_of(op, yaml);
  OpArgs args{a, in, dt, p, kv_inputs};
  OpRun r;
  r.out = op.infer(args);
  r.c = layer_cost(op, args, r.out, 2.0);
  return r;
}

std::string shape_error(const std::string& name, const std::string& yaml, const std::vector<Shape>& in) {
  const OpDef& op = op_named(name);
  Attrs a = attrs_of(op, yaml);
  OpArgs args{a, in, DType::fp32};
  try {
    op.infer(args);
  } catch (const ShapeError& e) {
    return e.what();
  }
  return "<no error>";
}

}  // namespace

TEST_CASE("attention: MHA, causal masking, flash vs naive", "[transformer]") {
  // B = 2, Sq = Skv = 16, H = 4, hd = 8: q, k, v are (2, 16, 32); fp16 (2 bytes)
  const std::vector<Shape> in = {{2, 16, 32}, {2, 16, 32}, {2, 16, 32}};
  SECTION("non-causal flash") {
    OpRun r = run("attention", "{heads: 4}", in, DType::fp16);
    CHECK(r.out == std::vector<Shape>{{2, 16, 32}});
    double scores = 2.0 * 4 * 16 * 16;          // B·H·Sq·Skv = 2048
    CHECK(r.c.macs == 2 * scores * 8);           // Q·Kᵀ and P·V: 32,768
    CHECK(r.c.flops == 2 * (2 * scores * 8) + 6 * scores);  // 65,536 + 12,288
    CHECK(r.c.input_bytes == std::vector<double>{2.0 * 16 * 32 * 2, 2.0 * 16 * 32 * 2, 2.0 * 16 * 32 * 2});
    CHECK(r.c.output_total() == 2.0 * 16 * 32 * 2);
    CHECK(r.c.scratch_bytes == 0);  // flash keeps the scores on chip
  }
  SECTION("causal flash skips the masked half") {
    OpRun r = run("attention", "{heads: 4, causal: true}", in, DType::fp16);
    double pairs = 16.0 * 16 - 16.0 * 15 / 2;  // 256 − 120 = 136 (query i sees i + 1 keys)
    CHECK(r.c.macs == 2 * (2.0 * 4 * pairs) * 8);
  }
  SECTION("causal naive computes the whole matrix and moves it 4 times") {
    OpRun r = run("attention", "{heads: 4, causal: true, implementation: naive}", in, DType::fp16);
    double scores = 2.0 * 4 * 16 * 16;
    CHECK(r.c.macs == 2 * scores * 8);
    CHECK(r.c.scratch_bytes == 4 * scores * 2);  // written, read, written, read; fp16
    CHECK(r.c.activation_bytes == 3 * (2.0 * 16 * 32 * 2) + 2.0 * 16 * 32 * 2 + scores * 2);  // q, k, v, output, the score matrix
    // under either memory model the scratch traffic counts
    CHECK(layer_bytes(r.c, MemoryModel::WeightsOutputs) == 2.0 * 16 * 32 * 2 + 4 * scores * 2);
  }
}

TEST_CASE("attention: GQA and MQA read the smaller K and V", "[transformer]") {
  // H = 8, KVH = 2, hd = 4; one query token against 10 keys (decode); fp32
  OpRun r = run("attention", "{heads: 8, kv_heads: 2, causal: true}", {{1, 1, 32}, {1, 10, 8}, {1, 10, 8}});
  double pairs = 1.0 * 10 - 0;  // Sq·Skv − Sq(Sq−1)/2 = 10
  CHECK(r.c.macs == 2 * (8 * pairs) * 4);
  CHECK(r.c.input_bytes == std::vector<double>{32.0 * 4, 10.0 * 8 * 4, 10.0 * 8 * 4});
  // MQA: one KV head
  OpRun m = run("attention", "{heads: 8, kv_heads: 1, causal: true}", {{1, 4, 32}, {1, 10, 4}, {1, 10, 4}});
  double mpairs = 4.0 * 10 - 4.0 * 3 / 2;  // 40 − 6 = 34
  CHECK(m.c.macs == 2 * (8 * mpairs) * 4);
  CHECK(m.c.input_bytes[1] == 10.0 * 4 * 4);

  CHECK(shape_error("attention", "{heads: 8, kv_heads: 3}", {{1, 1, 32}, {1, 10, 12}, {1, 10, 12}}) ==
        "heads (8) must be a multiple of kv_heads (3)");
  CHECK(shape_error("attention", "{heads: 8, kv_heads: 2}", {{1, 1, 32}, {1, 10, 16}, {1, 10, 16}}) ==
        "k has 16 features, kv_heads × head_dim = 2 × 4 = 8");
  CHECK(shape_error("attention", "{heads: 8, causal: true}", {{1, 5, 32}, {1, 4, 32}, {1, 4, 32}}) ==
        "causal attention needs at least as many keys (4) as queries (5)");
  CHECK(shape_error("attention", "{heads: 8}", {{1, 5, 32}, {1, 4, 32}, {1, 3, 32}}) == "k and v must have the same shape: 1x4x32 vs 1x3x32");
  CHECK(shape_error("attention", "{heads: 8}", {{5, 32}, {1, 4, 32}, {1, 4, 32}}) ==
        "attention expects q of rank 3 (batch, tokens, features), got 5x32");
}

TEST_CASE("kv_cache appends in the KV dtype and attention reads the whole cache", "[transformer]") {
  // k, v new: (2, 3, 16) in fp16 activations; 5 tokens already cached; the cache is fp8 (1 byte)
  Precision p;
  p.kv = DType::fp8;
  OpRun kv = run("kv_cache", "{context: 5}", {{2, 3, 16}, {2, 3, 16}}, DType::fp16, p);
  CHECK(kv.out == std::vector<Shape>{{2, 8, 16}, {2, 8, 16}});  // C + S = 8 tokens
  CHECK(kv.c.input_bytes == std::vector<double>{2.0 * 3 * 16 * 2, 2.0 * 3 * 16 * 2});
  CHECK(kv.c.output_bytes == std::vector<double>{2.0 * 3 * 16 * 1, 2.0 * 3 * 16 * 1});  // only the appended tokens are written
  CHECK(kv.c.kv_write_bytes == 2 * (2.0 * 3 * 16 * 1));
  CHECK(kv.c.kv_cache_bytes == 2 * (2.0 * 8 * 16 * 1));  // the cache held: K and V of 8 tokens
  CHECK(kv.c.macs == 0);
  CHECK(kv.c.flops == 0);

  // attention reads K and V (inputs 1 and 2) from the cache: fp8; q in fp16
  OpRun at = run("attention", "{heads: 4, kv_heads: 4, causal: true}", {{2, 3, 16}, {2, 8, 16}, {2, 8, 16}}, DType::fp16, p, 0b110);
  CHECK(at.c.input_bytes == std::vector<double>{2.0 * 3 * 16 * 2, 2.0 * 8 * 16 * 1, 2.0 * 8 * 16 * 1});
  CHECK(at.c.kv_read_bytes == 2 * (2.0 * 8 * 16 * 1));
  // the cache is not the previous layer's output: it counts under weights+outputs too
  CHECK(layer_bytes(at.c, MemoryModel::WeightsOutputs) == 2.0 * 3 * 16 * 2 + 2 * (2.0 * 8 * 16 * 1));
  CHECK(shape_error("kv_cache", "{context: -1}", {{1, 1, 8}, {1, 1, 8}}) == "context must not be negative, got -1");
}

TEST_CASE("mla_attention: a latent cache, decompressed or absorbed, kv_cache of two widths", "[transformer]") {
  // MLA with 4 heads, N = 8 non-rotary and R = 4 rotary features per head, V = 6 value features,
  // a latent of L = 16; batch 2, 3 new tokens over 5 cached (8 keys); fp16, cache in fp16
  OpRun kv = run("kv_cache", "{context: 5}", {{2, 3, 16}, {2, 3, 4}}, DType::fp16);
  CHECK(kv.out == std::vector<Shape>{{2, 8, 16}, {2, 8, 4}});
  CHECK(kv.c.kv_cache_bytes == 2.0 * 8 * (16 + 4) * 2);  // B · (C + S) · (L + R) · 2 B
  CHECK(kv.c.kv_write_bytes == 2.0 * 3 * (16 + 4) * 2);
  CHECK(shape_error("kv_cache", "{}", {{1, 3, 16}, {1, 2, 4}}) == "k and v must have the same batch and tokens: 1x3x16 vs 1x2x4");

  const std::vector<Shape> in = {{2, 3, 4 * (8 + 4)}, {2, 8, 16}, {2, 8, 4}};
  OpRun plain = run("mla_attention", "{heads: 4, qk_nope_dim: 8, v_head_dim: 6, causal: true}", in, DType::fp16, {}, 0b110);
  CHECK(plain.out == std::vector<Shape>{{2, 3, 4 * 6}});
  // kv_b_proj: L × H · (N + V) = 16 × 4 · 14 = 896 parameters
  CHECK(plain.c.params == 16.0 * 4 * 14);
  CHECK(plain.c.weight_bytes == 896.0 * 2);
  // causal flash: queries are the last 3 of 8 positions and see 6, 7, 8 keys: 21 pairs per head,
  // 2 · 4 · 21 = 168 scores. Decompressing 8 keys: 2 · 8 · 16 · 4 · 14 = 14,336 MACs; scores
  // 168 · (8 + 4) and values 168 · 6 MACs
  const double scores = 2 * 4 * (6 + 7 + 8.0);
  CHECK(scores == 168);
  CHECK(plain.c.macs == 2 * 8 * 16 * 4 * 14.0 + scores * 12 + scores * 6);
  CHECK(plain.c.flops == 2 * plain.c.macs + 6 * scores);
  // the decompressed K_nope and V, 2 · 8 · 4 · 14 elements, written and read back once: 2 passes
  CHECK(plain.c.scratch_bytes == 2 * (2 * 8 * 4 * 14.0) * 2);
  // absorbed: q absorb 2 · 3 · 4 · 8 · 16, scores over L + R = 20 features, values of L = 16, un-absorb
  // 2 · 3 · 4 · 16 · 6 MACs; no decompressed keys
  OpRun ab = run("mla_attention", "{heads: 4, qk_nope_dim: 8, v_head_dim: 6, causal: true, absorb: true}", in, DType::fp16, {}, 0b110);
  CHECK(ab.c.macs == 2 * 3 * 4 * 8 * 16.0 + scores * 20 + scores * 16 + 2 * 3 * 4 * 16 * 6.0);
  CHECK(ab.c.scratch_bytes == 0);
  CHECK(ab.c.params == plain.c.params);
  // both read the cache once: (2 · 8 · 16 + 2 · 8 · 4) · 2 B
  CHECK(ab.c.kv_read_bytes == (2 * 8 * 16 + 2 * 8 * 4.0) * 2);
  CHECK(shape_error("mla_attention", "{heads: 4, qk_nope_dim: 8, v_head_dim: 6}", {{2, 3, 40}, {2, 8, 16}, {2, 8, 4}}) ==
        "q has 40 features, heads × (qk_nope_dim + the rope key's 4) = 4 × 12 = 48");
  CHECK(shape_error("mla_attention", "{heads: 4, qk_nope_dim: 8, v_head_dim: 6}", {{2, 3, 48}, {2, 8, 16}, {2, 7, 4}}) ==
        "the latent and the rope key hold different numbers of tokens: 2x8x16 vs 2x7x4");

  // rope on the last 4 of each 12-feature head: 3 FLOPs per rotated element, 2 · 3 · 4 heads · 4
  OpRun r = run("rope", "{head_dim: 12, rotary_dim: 4}", {{2, 3, 48}});
  CHECK(r.c.flops == 3.0 * 2 * 3 * 4 * 4);
  CHECK(r.c.weight_bytes == 3.0 * 4 * 4);  // cos and sin of 3 positions × 4 rotated features, fp32
  CHECK(shape_error("rope", "{head_dim: 12, rotary_dim: 14}", {{2, 3, 48}}) == "rope rotary_dim must be even and at most head_dim (12), got 14");
}

TEST_CASE("rmsnorm, rope and embedding", "[transformer]") {
  OpRun n = run("rmsnorm", "{}", {{2, 5, 8}});
  CHECK(n.c.flops == 4.0 * 2 * 5 * 8);  // square, sum, scale, γ
  CHECK(n.c.params == 8);
  CHECK(n.c.weight_bytes == 8 * 4);
  CHECK(run("rmsnorm", "{affine: false}", {{2, 5, 8}}).c.flops == 3.0 * 80);

  OpRun r = run("rope", "{head_dim: 4}", {{1, 6, 16}});
  CHECK(r.c.flops == 3.0 * 6 * 16);
  CHECK(r.c.params == 0);
  CHECK(r.c.weight_bytes == 6.0 * 4 * 4);  // cos and sin rows of 6 positions: 6 · hd elements, fp32
  CHECK(shape_error("rope", "{head_dim: 3}", {{1, 6, 12}}) == "rope head_dim must be even, got 3");
  CHECK(shape_error("rope", "{head_dim: 8}", {{1, 6, 12}}) == "rope: 12 features are not a whole number of heads of 8");

  // token ids (2, 3) into a 100 × 8 table, fp16
  OpRun e = run("embedding", "{vocab: 100, dim: 8}", {{2, 3}}, DType::fp16);
  CHECK(e.out == std::vector<Shape>{{2, 3, 8}});
  CHECK(e.c.params == 100 * 8);
  CHECK(e.c.weight_bytes == 6.0 * 8 * 2);  // one row per token: 6 rows, not the table
  CHECK(e.c.resident_weight_bytes == 100.0 * 8 * 2);
  CHECK(e.c.input_bytes == std::vector<double>{6.0 * 4});  // int32 ids
  CHECK(e.c.output_total() == 6.0 * 8 * 2);
}

TEST_CASE("swiglu and geglu: gated MLPs", "[transformer]") {
  // T = 2 tokens, D = 4, F = 6, fp32
  OpRun s = run("swiglu", "{intermediate: 6}", {{1, 2, 4}});
  CHECK(s.out == std::vector<Shape>{{1, 2, 4}});
  CHECK(s.c.macs == 3.0 * 2 * 4 * 6);                     // 144
  CHECK(s.c.flops == 2 * (3.0 * 2 * 4 * 6) + 2.0 * 6 * 6);  // silu 5 + product 1 per hidden element
  CHECK(s.c.params == 3.0 * 4 * 6);
  CHECK(s.c.weight_bytes == 3.0 * 4 * 6 * 4);
  CHECK(s.c.scratch_bytes == 3 * (2.0 * 2 * 6) * 4);  // 3 passes over gate and up (2·T·F)
  OpRun g = run("geglu", "{intermediate: 6}", {{1, 2, 4}});
  CHECK(g.c.flops == 2 * (3.0 * 2 * 4 * 6) + 2.0 * 6 * 9);  // gelu 8 + product 1
  OpRun b = run("swiglu", "{intermediate: 6, bias: true}", {{1, 2, 4}});
  CHECK(b.c.params == 3.0 * 4 * 6 + 2 * 6 + 4);
}

TEST_CASE("moe: active experts, experts touched by a batch, footprint of all", "[transformer]") {
  // T = 3 tokens, D = 4, E = 4 experts, top-2, F = 5, gated (3 matrices of D·F = 20 per expert)
  OpRun m = run("moe", "{experts: 4, top_k: 2, intermediate: 5}", {{1, 3, 4}});
  CHECK(m.c.macs == 3.0 * 4 * 4 + 3.0 * 2 * 3 * 4 * 5);  // router 48 + experts 360
  CHECK(m.c.flops == 2 * (48.0 + 360) + 6.0 * 3 * 4 + 2.0 * 3 * 2 * 4 + 3.0 * 2 * 5 * 6);  // softmax/top-k, combine, activations
  CHECK(m.c.params == 4.0 * 4 + 4 * (3.0 * 4 * 5));         // 256
  CHECK(m.c.active_params == 4.0 * 4 + 2 * (3.0 * 4 * 5));  // 136
  // uniform routing: E·(1 − (1 − k/E)^T) = 4·(1 − (1/2)^3) = 3.5 experts touched
  CHECK(m.c.weight_bytes == Approx((16 + 3.5 * 60) * 4));
  CHECK(m.c.resident_weight_bytes == 256.0 * 4);
  // one token touches exactly top_k experts: weights read = active parameters
  OpRun one = run("moe", "{experts: 4, top_k: 2, intermediate: 5}", {{1, 1, 4}});
  CHECK(one.c.weight_bytes == (16 + 2 * 60.0) * 4);
  CHECK(shape_error("moe", "{experts: 4, top_k: 5, intermediate: 5}", {{1, 1, 4}}) == "top_k (5) cannot exceed experts (4)");
}

TEST_CASE("precision per tensor: int4 weights with group scales, activations and roof in fp16", "[transformer][precision]") {
  // linear 64 → 128 with bias on (1, 4, 64) fp16 activations, int4 weights, one fp16 scale per 32 weights
  Precision p;
  p.weights = DType::int4;
  p.quant_group = 32;
  OpRun r = run("linear", "{out_features: 128}", {{1, 4, 64}}, DType::fp16, p);
  double scales = (64.0 * 128 / 32) * 2;   // 256 scales × 2 bytes
  CHECK(r.c.scale_bytes == scales);
  CHECK(r.c.weight_bytes == 64.0 * 128 * 0.5 + scales + 128 * 2);  // int4 matrix + scales + fp16 bias
  CHECK(r.c.input_total() == 4.0 * 64 * 2);
  CHECK(r.c.output_total() == 4.0 * 128 * 2);
  // without groups, no scales; int4 embedding rows: 0.5 byte each
  p.quant_group = 0;
  CHECK(run("linear", "{out_features: 128}", {{1, 4, 64}}, DType::fp16, p).c.weight_bytes == 64.0 * 128 * 0.5 + 128 * 2);
  // norms keep their scales in the activation dtype
  CHECK(run("rmsnorm", "{}", {{1, 4, 64}}, DType::fp16, p).c.weight_bytes == 64 * 2);
  // an embedding table quantized in groups of 4: 6 rows of 8 read; the whole table held
  p.quant_group = 4;
  OpRun e = run("embedding", "{vocab: 100, dim: 8}", {{2, 3}}, DType::fp16, p);
  CHECK(e.c.weight_bytes == 48 * 0.5 + (48.0 / 4) * 2);
  CHECK(e.c.resident_weight_bytes == 800 * 0.5 + (800.0 / 4) * 2);
}

TEST_CASE("precision keys in a scenario: roofs by compute dtype, dtypes in every output", "[transformer][precision]") {
  const std::string yaml = R"(name: t
settings: {dtype: fp16, weights_dtype: int4, kv_dtype: fp8, quant_group: 128}
platforms:
  - name: p
    compute:
      - {name: half, dtypes: [fp16], peak: 100 TFLOP/s}
      - {name: bytes, dtypes: [int8], peak: 200 TOP/s}
    memory: [{name: m, bandwidth: 1 TB/s, size: 1 GiB}]
networks:
  - name: n
    input: [1, 8, 256]
    layers:
      - {name: fc, op: linear, out_features: 256, bias: false}
      - {name: fc8, op: linear, out_features: 256, bias: false, weights_dtype: int8, compute_dtype: int8, quant_group: 0}
)";
  RunResult r = test::run_text(yaml);
  auto rows = test::rows_of(r, 0, "p");
  REQUIRE(rows.size() == 2);
  // fp16 math on int4 weights: the fp16 roof
  CHECK(rows[0]->compute_roof == "half");
  CHECK(rows[0]->cost.weight_bytes == 256.0 * 256 * 0.5 + (256.0 * 256 / 128) * 2);
  CHECK(rows[1]->compute_roof == "bytes");
  CHECK(rows[1]->cost.weight_bytes == 256.0 * 256 * 1);
  Scenario sc = parse_scenario(yaml, "t.yaml");
  std::string csv = results_csv(r, sc);
  CHECK(csv.find(",dtype,compute_dtype,weights_dtype,kv_dtype,") != std::string::npos);
  CHECK(csv.find(",fc,linear,fp16,fp16,int4,,") != std::string::npos);
  CHECK(csv.find(",fc8,linear,fp16,int8,int8,,") != std::string::npos);
  RunInfo info{"test", &sc};
  std::string json = results_json(r, info);
  CHECK(json.find("\"weights_dtype\":\"int4\",\"kv_dtype\":\"fp8\",\"compute_dtype\":\"fp16\",\"quant_group\":128") != std::string::npos);

  CHECK(test::error_of([&] { test::run_text("name: t\nsettings: {weights_dtype: int3}\nplatforms: [h100_sxm]\nnetworks: [{name: n, input: [1, 4], layers: [{op: relu}]}]\n");
        }) == "t.yaml:2:27: error: unknown weights_dtype 'int3'\n"
              "settings: {weights_dtype: int3}\n"
              "                          ^\n"
              "note: did you mean 'int8'?\n");
}
