// Tensor parallelism: Megatron-style splits, the all-reduces' payload and time on the platform's
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
  // two all-reduces per layer (after o_proj and after the MLP), each of 2048 tokens × 8192 × 2 B
  CHECK(s.comm_bytes == 2.0 * 80 * 2048 * 8192 * 2);
  CHECK(s.comm_bytes == 5368709120);
  CHECK(s.tensor_parallel == 8);
  // params stays the model's; one GPU holds 1/8 of every projection and MLP, all the norms, the
  // embedding and the LM head (replicated): per layer (2 · 8192² + 2 · 8192 · 1024 + 3 · 8192 · 28672) / 8
  // + 2 · 8192, plus 2 · 128256 · 8192 + 8192
  const double layer = (2 * 8192.0 * 8192 + 2 * 8192.0 * 1024 + 3 * 8192.0 * 28672) / 8 + 2 * 8192.0;
  CHECK(s.params == 70553706496);
  CHECK(s.params_per_gpu == 80 * layer + 2 * 128256.0 * 8192 + 8192);
  // each all-reduce: a ring of 8 is cheaper than a tree at 32 MiB:
  // 2 · 7/8 · 33,554,432 B / 450 GB/s + 2 · 7 · 1 µs = 130.49 µs + 14 µs
  const double bytes = 2048 * 8192 * 2.0;
  const double ring = 2 * 7.0 / 8 * bytes / kNvlink + 2 * 7 * kLatency;
  CHECK(ring < 2 * bytes / kNvlink + 2 * 3 * kLatency);  // the tree: 2 · B / bw + 2 · log2(8) · latency
  CHECK(s.comm_time_s == Approx(160 * ring).epsilon(1e-12));
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
  // the embedding and the LM head are replicated: no collective, all of their work
  CHECK(row_named(r, "lm_head").cost.macs == 8192.0 * 128256);  // the last token's logits
  // memory per GPU: bf16 weights 2 · params_per_gpu, and the RoPE tables of q and k in every layer,
  // whole on each GPU (2048 positions × 128, bf16); it fits 80 GiB on 8 GPUs and not on one
  const double rope_tables = 80 * 2 * 2048 * 128 * 2.0;
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

TEST_CASE("tensor parallelism: a platform without an interconnect, and pipeline / expert / data not built, are refused", "[parallel]") {
  std::string e = error_of([] { run_tp(kLlama70b + "seq: 8}}", "{parallel: {tensor: 2}}", "l4"); });
  CHECK(e.find("error: network 'llama3_1_70b' is split over 2 GPUs, but platform 'l4' states no interconnect") != std::string::npos);
  CHECK(e.find("interconnect: [{name: NVLink, bandwidth: 450 GB/s, latency: 2 us, gpus: 8}]") != std::string::npos);
  e = error_of([] { run_tp(kLlama70b + "seq: 8}}", "{parallel: {pipeline: 4}}"); });
  CHECK(e.find("error: parallel.pipeline = 4 is not built yet") != std::string::npos);
  // a layer's shard is checked like any key
  e = error_of([] {
    run_tp("{name: n, input: [1, 8], layers: [{name: a, op: linear, out_features: 8, shard: columns}]}", "{parallel: {tensor: 2}}");
  });
  CHECK(e.find("columns") != std::string::npos);
}
