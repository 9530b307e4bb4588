// Parallelism: Megatron-style tensor splits, pipeline stages, experts over GPUs, replicas; the all-reduces' payload and time on the platform's
// interconnect, one GPU's memory. Every expected number is hand arithmetic, written out.
#include <catch2/catch.hpp>

#include <cmath>
#include <string>

#include "helpers.hpp"

using namespace rsim;
using namespace rsim::test;

namespace {

RunResult run_tp(const std::string& net, const std::string& settings, const std::string& platform = "h100_sxm") {
  std::string text = "name: t\nsettings: " + settings + "\nplatforms: [" + platform + "]\nnetworks:\n  - " + net + "\n";
  return run(parse_scenario(text, src("scenarios/t.yaml")));
}

const std::string kLlama70b = "{model: hf, args: {config: ../tests/data/hf/llama3_1_70b.json, ";

const Row& row_named(const RunResult& r, const std::string& layer) {
  for (const Row& row : r.results.at(0).rows)
    if (row.layer == layer) return row;
  FAIL("no layer " << layer);
  return r.results.at(0).rows.front();
}

// NVLink 4 on h100_sxm (hardware/h100_sxm.yaml): 450 GB/s each way, 1 µs a message, 8 GPUs a node
constexpr double kNvlink = 450e9, kLatency = 1e-6;

}  // namespace

TEST_CASE("tensor parallelism: Llama-3.1-70B prefill over 8 H100s all-reduces 2 × 80 activations", "[parallel][llm]") {
  RunResult r = run_tp(kLlama70b + "seq: 2048}}", "{parallel: {tensor: 8}}");
  const SummaryRow& s = summary_of(r, 0, "h100_sxm");
  // two all-reduces per layer (after o_proj and after the MLP), each of 2048 tokens × 8192 × 2 B, one
  // more of the same size after the vocabulary-split embedding, and the all-gather of the last
  // token's logits from the vocabulary-split LM head: 128,256 × 2 B
  CHECK(s.comm_bytes == 2.0 * 80 * 2048 * 8192 * 2 + 2048 * 8192 * 2 + 128256 * 2);
  CHECK(s.comm_bytes == 5368709120.0 + 33554432 + 256512);
  CHECK(s.tensor_parallel == 8);
  // params stays the model's; one GPU holds 1/8 of every projection and MLP, all the norms, and
  // 128,256 / 8 = 16,032 rows of the embedding and of the LM head (split by vocabulary, as vLLM's
  // VocabParallelEmbedding and ParallelLMHead): per layer
  // (2 · 8192² + 2 · 8192 · 1024 + 3 · 8192 · 28672) / 8 + 2 · 8192, plus 2 · 16032 · 8192 + 8192
  const double layer = (2 * 8192.0 * 8192 + 2 * 8192.0 * 1024 + 3 * 8192.0 * 28672) / 8 + 2 * 8192.0;
  CHECK(s.params == 70553706496);
  CHECK(s.params_per_gpu == 80 * layer + 2 * 16032.0 * 8192 + 8192);
  // each all-reduce: a ring of 8 is cheaper than a tree at 32 MiB:
  // 2 · 7/8 · 33,554,432 B / 450 GB/s + 2 · 7 · 1 µs = 130.49 µs + 14 µs
  const double bytes = 2048 * 8192 * 2.0;
  const double ring = 2 * 7.0 / 8 * bytes / kNvlink + 2 * 7 * kLatency;
  CHECK(ring < 2 * bytes / kNvlink + 2 * 3 * kLatency);  // the tree: 2 · B / bw + 2 · log2(8) · latency
  // the embedding's all-reduce is one more of these; the all-gather a ring of 7 steps:
  // 7/8 · 256,512 B / 450 GB/s + 7 · 1 µs
  const double gather = 7.0 / 8 * 128256 * 2 / kNvlink + 7 * kLatency;
  CHECK(s.comm_time_s == Approx(161 * ring + gather).epsilon(1e-12));
  CHECK(row_named(r, "lm_head").collective == "all-gather ring 8 × NVLink 4");
  CHECK(row_named(r, "lm_head").theoretical.comm_time_s == Approx(gather).epsilon(1e-12));
  const Row& o = row_named(r, "layer.0.o_proj");
  CHECK(o.cost.comm_bytes == bytes);
  CHECK(o.theoretical.comm_time_s == Approx(ring).epsilon(1e-12));
  CHECK(o.collective == "all-reduce ring 8 × NVLink 4");
  // o_proj on one GPU: 2048 · 8192 · 8192 / 8 MACs at 989.5 TFLOP/s bf16 = 34.7 µs < the all-reduce
  CHECK(o.cost.macs == 2048 * 8192.0 * 8192 / 8);
  CHECK(o.theoretical.bound == Bound::Interconnect);
  CHECK(o.theoretical.time_s == Approx(std::max(o.theoretical.compute_time_s, o.theoretical.memory_time_s) + ring).epsilon(1e-12));
  // the q projection: 64 heads, 8 per GPU; k and v: 8 KV heads, one per GPU
  CHECK(row_named(r, "layer.0.q_proj").cost.macs == 2048 * 8192.0 * 8192 / 8);
  CHECK(row_named(r, "layer.0.k_proj").cost.macs == 2048 * 8192.0 * 1024 / 8);
  CHECK(row_named(r, "layer.0.q_proj").cost.comm_bytes == 0);  // column-parallel: no collective
  // the LM head computes its 16,032 of the last token's logits
  CHECK(row_named(r, "lm_head").cost.macs == 8192.0 * 16032);
  // memory per GPU: bf16 weights 2 · params_per_gpu, and RoPE's one table whole on each GPU
  // (max_position_embeddings 131,072 × 128, bf16); it fits 80 GiB on 8 GPUs and not on one
  const double rope_tables = 131072 * 128 * 2.0;
  CHECK(s.weight_footprint_bytes == 2 * s.params_per_gpu + rope_tables);
  CHECK(s.memory_footprint_bytes <= s.memory_size_bytes);
  const SummaryRow one = summary_of(run_tp(kLlama70b + "seq: 2048}}", "{}"), 0, "h100_sxm");
  CHECK(one.weight_footprint_bytes == 2 * 70553706496.0 + rope_tables);
  CHECK(one.memory_footprint_bytes > one.memory_size_bytes);
  CHECK(one.comm_bytes == 0);
  CHECK(one.params_per_gpu == one.params);
}

TEST_CASE("tensor parallelism: one layer's all-reduce at T = 2, 4, 8, a tree where messages are small", "[parallel][llm]") {
  // a decode step at batch 1: one token, 8192 × 2 B = 16,384 B per all-reduce
  for (long long t : {2LL, 4LL, 8LL}) {
    INFO("T = " << t);
    RunResult r = run_tp(kLlama70b + "phase: decode, context: 1000}}", "{parallel: {tensor: " + std::to_string(t) + "}}");
    const Row& o = row_named(r, "layer.0.o_proj");
    const double bytes = 8192 * 2.0, n = static_cast<double>(t);
    CHECK(o.cost.comm_bytes == bytes);
    const double ring = 2 * (n - 1) / n * bytes / kNvlink + 2 * (n - 1) * kLatency;
    const double tree = 2 * bytes / kNvlink + 2 * std::log2(n) * kLatency;
    // T = 2: ring 2 · 1/2 · 16384 / 450e9 + 2 µs = 2.036 µs, tree 2.073 µs: the ring;
    // T = 4: ring 6.055 µs, tree 4.073 µs; T = 8: ring 14.064 µs, tree 6.073 µs: the tree
    CHECK(o.theoretical.comm_time_s == Approx(std::min(ring, tree)).epsilon(1e-12));
    CHECK(o.collective == std::string("all-reduce ") + (t == 2 ? "ring " : "tree ") + std::to_string(t) + " × NVLink 4");
    // the KV cache: 8 KV heads over T GPUs, 8/T heads of 128 each for K and V, 80 layers, bf16:
    // 1001 tokens · 80 · 2 · (8/T) · 128 · 2 B
    CHECK(summary_of(r, 0, "h100_sxm").kv_cache_bytes == 1001 * 80 * 2 * (8 / n) * 128 * 2);
  }
  // past 8 GPUs the all-reduce leaves the node: InfiniBand NDR, 50 GB/s each way, 5 µs a message.
  // T = 16 at prefill 2048 (32 MiB): ring 2 · 15/16 · 33,554,432 / 50e9 + 30 · 5 µs = 1408.3 µs;
  // tree 2 · 33,554,432 / 50e9 + 2 · 4 · 5 µs = 1382.2 µs: the tree
  RunResult r16 = run_tp(kLlama70b + "seq: 2048}}", "{parallel: {tensor: 16}}");
  const Row& o16 = row_named(r16, "layer.0.o_proj");
  const double b16 = 2048 * 8192 * 2.0;
  CHECK(2 * 15.0 / 16 * b16 / 50e9 + 30 * 5e-6 > 2 * b16 / 50e9 + 8 * 5e-6);
  CHECK(o16.theoretical.comm_time_s == Approx(2 * b16 / 50e9 + 8 * 5e-6).epsilon(1e-12));
  CHECK(o16.collective == "all-reduce tree 16 × InfiniBand NDR 400 Gb/s");
}

TEST_CASE("tensor parallelism: KV heads fewer than the GPUs are replicated, and MLA's latent cache too", "[parallel][llm]") {
  // Falcon-7B: multi-query (one KV head of 64). Over 2 GPUs each holds the one KV head whole:
  // the cache per GPU is the single GPU's, 2 · 32 layers · 64 · 2 B = 8,192 B a token
  auto falcon_kv = [](const std::string& settings) {
    return summary_of(run_tp("{model: hf, args: {config: ../tests/data/hf/falcon_7b.json, phase: decode, context: 99}}", settings), 0, "h100_sxm")
        .kv_cache_bytes;
  };
  CHECK(falcon_kv("{}") == 100 * 8192.0);
  CHECK(falcon_kv("{parallel: {tensor: 2}}") == 100 * 8192.0);
  // DeepSeek-V2-Lite: every GPU keeps the whole latent, (512 + 64) · 27 · 2 B a token
  auto lite_kv = [](const std::string& settings) {
    return summary_of(run_tp("{model: hf, args: {config: ../tests/data/hf/deepseek_v2_lite.json, phase: decode, context: 99}}", settings), 0,
                      "h100_sxm")
        .kv_cache_bytes;
  };
  CHECK(lite_kv("{parallel: {tensor: 4}}") == 100 * (512.0 + 64) * 27 * 2);
}

TEST_CASE("tensor parallelism: overlap full hides the all-reduces behind the rest", "[parallel][llm]") {
  const SummaryRow none = summary_of(run_tp(kLlama70b + "seq: 2048}}", "{parallel: {tensor: 8}}"), 0, "h100_sxm");
  const SummaryRow full = summary_of(run_tp(kLlama70b + "seq: 2048}}", "{parallel: {tensor: 8, overlap: full}}"), 0, "h100_sxm");
  // the same collectives (160 of 144.49 µs = 23.1 ms); the step is the larger of the rest and them
  CHECK(full.comm_time_s == none.comm_time_s);
  CHECK(full.time_s == Approx(std::max(none.time_s - none.comm_time_s, none.comm_time_s)).epsilon(1e-12));
  CHECK(full.time_s < none.time_s);
}

TEST_CASE("parallelism: a platform without an interconnect, stages without layers and a data count that is no multiple of expert are refused", "[parallel]") {
  std::string e = error_of([] { run_tp(kLlama70b + "seq: 8}}", "{parallel: {tensor: 2}}", "l4"); });
  CHECK(e.find("error: network 'llama3_1_70b' is split over 2 GPUs, but platform 'l4' states no interconnect") != std::string::npos);
  CHECK(e.find("interconnect: [{name: NVLink, bandwidth: 450 GB/s, latency: 2 us, gpus: 8}]") != std::string::npos);
  e = error_of([] { run_tp(kLlama70b + "seq: 8}}", "{parallel: {pipeline: 4}}", "l4"); });
  CHECK(e.find("error: network 'llama3_1_70b' is split over 4 pipeline stages, but platform 'l4' states no interconnect") != std::string::npos);
  // 84 blocks (embed, 80 decoder layers, final_norm, lm_head) cannot fill 100 stages
  e = error_of([] { run_tp(kLlama70b + "seq: 8}}", "{parallel: {pipeline: 100}}"); });
  CHECK(e.find("cannot be split into 100 pipeline stages: stage ") != std::string::npos);
  e = error_of([] { run_tp(kLlama70b + "seq: 8}}", "{parallel: {expert: 4, data: 6}}"); });
  CHECK(e.find("error: parallel.data = 6 is not a multiple of parallel.expert = 4") != std::string::npos);
  // a layer's shard is checked like any key
  e = error_of([] {
    run_tp("{name: n, input: [1, 8], layers: [{name: a, op: linear, out_features: 8, shard: columns}]}", "{parallel: {tensor: 2}}");
  });
  CHECK(e.find("columns") != std::string::npos);
}

namespace {

// A platform where everything is memory-bound: 1 PFLOP/s, 1 GB/s (a byte takes a nanosecond), and
// one link of 1 GB/s each way with 1 µs a message
const std::string kSlow =
    "{name: p, compute: [{name: c, dtypes: [fp32], peak: 1 PFLOP/s}], memory: [{name: m, bandwidth: 1 GB/s}],"
    " interconnect: [{name: L, bandwidth: 1 GB/s, latency: 1 us, gpus: 8}]}";

// four fp32 linear layers 256 → 256 without bias on a batch of 4: each moves 256 · 256 · 4 B of
// weights, 4 · 256 · 4 B in and 4 · 256 · 4 B out
const std::string kFour =
    "{name: n, input: [4, 256], layers: [{name: l0, op: linear, out_features: 256, bias: false}, {name: l1, op: linear, out_features: 256, bias: false},"
    " {name: l2, op: linear, out_features: 256, bias: false}, {name: l3, op: linear, out_features: 256, bias: false}]}";

}  // namespace

TEST_CASE("pipeline parallelism: two stages, three micro-batches: the stages, the send and the bubble by hand", "[parallel]") {
  const SummaryRow one = summary_of(run_tp(kFour, "{}", kSlow), 0, "p");
  const SummaryRow s = summary_of(run_tp(kFour, "{parallel: {pipeline: 2, micro_batches: 3}}", kSlow), 0, "p");
  const double layer_bytes = 256 * 256 * 4.0 + 4 * 256 * 4.0 + 4 * 256 * 4.0;  // 270,336 B
  const double layer = layer_bytes / 1e9;                                      // 270.336 µs
  CHECK(one.time_s == Approx(4 * layer).epsilon(1e-12));
  // equal parameters: the middles of the four layers at 1/8, 3/8, 5/8, 7/8 of them → stages 0, 0, 1, 1.
  // Stage 0 sends l1's output to stage 1: 4 · 256 · 4 = 4,096 B, 4.096 µs + 1 µs a message
  const double send = 4096 / 1e9 + 1e-6;
  const double t0 = 2 * layer + send, t1 = 2 * layer;  // 545.768 µs, 540.672 µs
  // GPipe: the sum of the stages, then (m − 1) more of the slowest
  CHECK(s.time_s == Approx(t0 + t1 + 2 * t0).epsilon(1e-12));  // 1086.44 + 1091.536 = 2177.976 µs
  // the bubble: 1 − 3 · 1086.44 / (2 · 2177.976) = 1 − 3259.32 / 4355.952 = 0.25175
  CHECK(s.pipeline_bubble == Approx(1 - 3 * (t0 + t1) / (2 * (3 * t0 + t1))).epsilon(1e-12));
  CHECK(s.pipeline_bubble == Approx(0.25175).epsilon(1e-4));
  CHECK(s.comm_bytes == 3 * 4096.0);
  CHECK(s.comm_time_s == Approx(3 * send).epsilon(1e-12));
  // the step's work: three micro-batches of 4 through four layers; one stage's weights and parameters per GPU
  CHECK(s.batch == 12);
  CHECK(s.flops == 3 * 4 * (4 * 2 * 256 * 256.0));
  CHECK(s.params == 4 * 65536.0);
  CHECK(s.params_per_gpu == 2 * 65536.0);
  CHECK(s.weight_footprint_bytes == 2 * 65536 * 4.0);
  CHECK(s.gpus == 2);
  CHECK(s.pipeline_parallel == 2);
  CHECK(s.micro_batches == 3);
  // equal stages without a send: (P − 1) / (m + P − 1) = 1/4; overlap: full hides the send (4.1 µs < 540 µs)
  const SummaryRow o = summary_of(run_tp(kFour, "{parallel: {pipeline: 2, micro_batches: 3, overlap: full}}", kSlow), 0, "p");
  CHECK(o.time_s == Approx(4 * 2 * layer).epsilon(1e-12));
  CHECK(o.pipeline_bubble == Approx(1.0 / 4).epsilon(1e-12));
  // micro-batches alone (one stage): one after another, no bubble
  const SummaryRow m = summary_of(run_tp(kFour, "{parallel: {micro_batches: 3}}", kSlow), 0, "p");
  CHECK(m.time_s == Approx(3 * 4 * layer).epsilon(1e-12));
  CHECK(m.pipeline_bubble == 0);
  CHECK(m.gpus == 1);
}

TEST_CASE("pipeline parallelism: Llama-3.1-70B over 4 stages keeps decoder layers whole and balances parameters", "[parallel][llm]") {
  // decode, batch 8 a micro-batch, 4 micro-batches, context 1024 (bf16)
  const SummaryRow s =
      summary_of(run_tp(kLlama70b + "phase: decode, batch: 8, context: 1024}}", "{parallel: {pipeline: 4, micro_batches: 4}}"), 0, "h100_sxm");
  // blocks: embed E = 128,256 · 8192 = 1,050,673,152; 80 layers of
  // L = 2 · 8192² + 2 · 8192 · 1024 + 3 · 8192 · 28,672 + 2 · 8192 = 855,654,400; final_norm 8192; lm_head E.
  const double E = 128256.0 * 8192, L = 2 * 8192.0 * 8192 + 2 * 8192.0 * 1024 + 3 * 8192.0 * 28672 + 2 * 8192.0;
  const double total = 2 * E + 80 * L + 8192;
  CHECK(total == 70553706496.0);
  // layer k's middle E + (k + ½) L falls in stage ⌊4 · middle / total⌋: stage 0 up to k = 18
  // ((18.5 L + E) · 4 / total = 0.9568, k = 19: 1.0053), stage 1 to k = 39, stage 2 to k = 60:
  // 19, 21, 21, 19 layers. One GPU holds at most 21 layers
  CHECK(std::floor(4 * (E + 18.5 * L) / total) == 0);
  CHECK(std::floor(4 * (E + 19.5 * L) / total) == 1);
  CHECK(std::floor(4 * (E + 39.5 * L) / total) == 1);
  CHECK(std::floor(4 * (E + 40.5 * L) / total) == 2);
  CHECK(std::floor(4 * (E + 60.5 * L) / total) == 2);
  CHECK(std::floor(4 * (E + 61.5 * L) / total) == 3);
  CHECK(s.params_per_gpu == 21 * L);
  // each boundary sends the residual stream once per micro-batch: 8 tokens · 8192 · 2 B, 3 boundaries, 4 micro-batches
  CHECK(s.comm_bytes == 4 * 3 * 8 * 8192 * 2.0);
  // the fullest stage's KV cache holds the 4 micro-batches: 21 layers · 1025 tokens · 8 sequences · 2 · 8 · 128 · 2 B
  CHECK(s.kv_cache_bytes == 4 * 21 * 1025 * 8 * (2 * 8 * 128 * 2.0));
  CHECK(s.tokens == 4 * 8);
  CHECK(s.gpus == 4);
}

TEST_CASE("expert parallelism: DeepSeek-V2-Lite over 8 GPUs: the all-to-all per MoE layer and the experts each GPU holds", "[parallel][llm]") {
  RunResult r = run_tp("{model: hf, args: {config: ../tests/data/hf/deepseek_v2_lite.json, phase: decode, batch: 16, context: 1024}}",
                       "{parallel: {expert: 8}}");
  const Row& moe = row_named(r, "layer.1.moe");
  // each of a GPU's 16 tokens goes to its 6 experts and comes back: 2 · 16 · 6 · 2048 · 2 B (bf16)
  const double a2a = 2 * 16 * 6 * 2048 * 2.0;
  CHECK(a2a == 786432);
  CHECK(moe.cost.comm_bytes == a2a);
  // two all-to-alls (dispatch, combine) of 393,216 B among 8 GPUs on NVLink 4:
  // 7/8 · 393,216 / 450e9 + 7 · 1 µs = 7.765 µs each
  const double one = 7.0 / 8 * (a2a / 2) / kNvlink + 7 * kLatency;
  CHECK(moe.theoretical.comm_time_s == Approx(2 * one).epsilon(1e-12));
  CHECK(moe.collective == "all-to-all 8 × NVLink 4");
  const SummaryRow& s = summary_of(r, 0, "h100_sxm");
  // 26 MoE layers (the first is dense)
  CHECK(s.comm_bytes == 26 * a2a);
  // each GPU holds 64 / 8 = 8 of the routed experts (3 · 2048 · 1408 each): 56 fewer per MoE layer
  CHECK(s.params == 15706484224.0);
  CHECK(s.params_per_gpu == 15706484224.0 - 26 * 56 * 3 * 2048 * 1408.0);
  // data defaults to expert: 8 replicas of one GPU each, each with its own 16 sequences
  CHECK(s.data_parallel == 8);
  CHECK(s.gpus == 8);
  CHECK(s.tokens == 8 * 16);
}

TEST_CASE("data parallelism: replicas multiply the tokens, not the time or one GPU's memory", "[parallel][llm]") {
  const SummaryRow one = summary_of(run_tp(kLlama70b + "phase: decode, batch: 8, context: 100}}", "{parallel: {tensor: 8}}"), 0, "h100_sxm");
  const SummaryRow d = summary_of(run_tp(kLlama70b + "phase: decode, batch: 8, context: 100}}", "{parallel: {tensor: 8, data: 3}}"), 0, "h100_sxm");
  CHECK(d.time_s == one.time_s);
  CHECK(d.memory_footprint_bytes == one.memory_footprint_bytes);
  CHECK(one.tokens == 8);
  CHECK(d.tokens == 3 * 8);
  CHECK(d.gpus == 3 * 8);
}

TEST_CASE("tensor parallelism: Falcon's parallel block all-reduces once per layer, after the sum of attention and MLP", "[parallel][llm]") {
  RunResult r = run_tp("{model: hf, args: {config: ../tests/data/hf/falcon_7b.json, phase: decode, context: 99}}", "{parallel: {tensor: 2}}");
  // hidden 4544, bf16, one token: 4544 · 2 = 9,088 B per all-reduce, one per layer, 32 layers, and
  // one after the vocabulary-split embedding; the LM head all-gathers 65,024 · 2 B of logits
  CHECK(summary_of(r, 0, "h100_sxm").comm_bytes == 32 * 4544 * 2.0 + 4544 * 2 + 65024 * 2);
  CHECK(row_named(r, "layer.0.o_proj").cost.comm_bytes == 0);
  CHECK(row_named(r, "layer.0.down").cost.comm_bytes == 0);
  CHECK(row_named(r, "layer.0.residual2").cost.comm_bytes == 4544 * 2.0);
  CHECK(row_named(r, "layer.0.residual2").collective == "all-reduce ring 2 × NVLink 4");
}

TEST_CASE("tensor parallelism: Llama-3-8B at TP 2 splits the embedding and the LM head by vocabulary", "[parallel][llm]") {
  // Failing case first (before the split): the embedding and the LM head replicated gave
  // 6,979,584,000 / 2 + ... = 4,540,600,320 per GPU. Now, per GPU:
  //   each layer's q, k, v, o and SwiGLU halved: (218,112,000 − 8,192 norms) / 2 + 8,192 = 109,060,096, × 32 = 3,489,923,072;
  //   128,256 / 2 = 64,128 rows of the embedding and of the LM head: 2 · 64,128 · 4,096 = 525,336,576;
  //   the final norm 4,096: 3,489,923,072 + 525,336,576 + 4,096 = 4,015,263,744.
  CHECK((218112000.0 - 8192) / 2 + 8192 == 109060096);
  CHECK(32 * 109060096.0 + 2 * 64128.0 * 4096 + 4096 == 4015263744);
  RunResult r = run_tp("{model: llama3_8b, args: {phase: decode, batch: 8, context: 4096}}", "{parallel: {tensor: 2}}");
  const SummaryRow& s = summary_of(r, 0, "h100_sxm");
  CHECK(s.params == 8030261248);
  CHECK(s.params_per_gpu == 4015263744);
  // the embedding: each GPU looks up the ids in its half of the table (zeros for the others) and
  // the outputs are all-reduced: 8 tokens · 4,096 · 2 B = 65,536 B; ring 2 · 1/2 · 65,536 / 450 GB/s + 2 · 1 µs
  const Row& e = row_named(r, "embed");
  CHECK(e.cost.comm_bytes == 65536);
  CHECK(e.theoretical.comm_time_s == Approx(65536.0 / kNvlink + 2 * kLatency).epsilon(1e-12));
  CHECK(e.collective == "all-reduce ring 2 × NVLink 4");
  // the LM head: 4,096 × 64,128 MACs per token, and an all-gather of the 8 × 128,256 bf16 logits:
  // 1/2 · 2,052,096 B / 450 GB/s + 1 µs
  const Row& h = row_named(r, "lm_head");
  CHECK(h.cost.macs == 8 * 4096.0 * 64128);
  CHECK(h.cost.comm_bytes == 8 * 128256 * 2.0);
  CHECK(h.theoretical.comm_time_s == Approx(0.5 * 2052096 / kNvlink + kLatency).epsilon(1e-12));
  CHECK(h.collective == "all-gather ring 2 × NVLink 4");
  // weights per GPU: bf16 parameters and RoPE's one table (8,192 positions × 128 × 2 B), the same
  // in prefill as in decode
  CHECK(s.weight_footprint_bytes == 2 * 4015263744.0 + 8192 * 128 * 2);
  RunResult p = run_tp("{model: llama3_8b, args: {phase: prefill, batch: 1, seq: 512}}", "{parallel: {tensor: 2}}");
  CHECK(summary_of(p, 0, "h100_sxm").weight_footprint_bytes == s.weight_footprint_bytes);
}

TEST_CASE("shard: vocab is for an embedding or a linear", "[parallel]") {
  const std::string y = "name: t\nplatforms: [h100_sxm]\nnetworks:\n  - name: n\n    input: [1, 8, 64]\n    layers:\n      - {name: r, op: relu, shard: vocab}\n";
  try {
    run(parse_scenario(y, "t.yaml"));
    FAIL("no error");
  } catch (const ConfigError& e) {
    const std::string m = e.what();
    CHECK(m.find("t.yaml:7:") != std::string::npos);
    CHECK(m.find("shard: vocab splits a vocabulary table: an embedding or the LM head (a linear), not a relu") != std::string::npos);
  }
}
