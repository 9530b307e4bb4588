// Zoo transformers, Hugging Face configs, prefill and decode: parameter counts and per-step
// costs derived by hand from the published hyper-parameters (the arithmetic is written out).
#include <catch2/catch.hpp>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>

#include "cli_helpers.hpp"
#include "helpers.hpp"

using namespace rsim;
using namespace rsim::test;
namespace fs = std::filesystem;

namespace {

// One network on one platform, the scenario placed in scenarios/ so that the zoo resolves.
RunResult run_net(const std::string& net, const std::string& settings = "{dtype: fp16}", const std::string& platform = "h100_sxm") {
  std::string text = "name: t\nsettings: " + settings + "\nplatforms: [" + platform + "]\nnetworks:\n  - " + net + "\n";
  return run(parse_scenario(text, src("scenarios/t.yaml")));
}

// A network's totals, copied (the run is a temporary).
SummaryRow totals_of(const std::string& net) { return summary_of(run_net(net), 0, "h100_sxm"); }

// Sum of a cost field over the layers whose op is in `ops` ("" = every layer).
template <class F>
double sum_over(const RunResult& r, F field, std::initializer_list<const char*> ops = {}) {
  double s = 0;
  for (const Row& row : r.results.at(0).rows) {
    bool keep = ops.size() == 0;
    for (const char* o : ops) keep = keep || row.op == o;
    if (keep) s += field(row);
  }
  return s;
}

// Hand counts from the published configs (see the zoo files' headers).
const double kGpt2 = 50257.0 * 768 + 1024.0 * 768 + 12 * (2 * 1536.0 + 4 * (768.0 * 768 + 768) + (768.0 * 3072 + 3072 + 3072.0 * 768 + 768)) + 1536;
const double kLlama2 = 2 * 32000.0 * 4096 + 32 * (4 * 4096.0 * 4096 + 3 * 4096.0 * 11008 + 2 * 4096.0) + 4096;
const double kLlama3 = 2 * 128256.0 * 4096 + 32 * (2 * 4096.0 * 4096 + 2 * 4096.0 * 1024 + 3 * 4096.0 * 14336 + 2 * 4096.0) + 4096;
const double kMixtralLayerBase = 2 * 4096.0 * 4096 + 2 * 4096.0 * 1024 + 4096.0 * 8 + 2 * 4096.0;  // attention, router, norms
const double kMixtral = 2 * 32000.0 * 4096 + 32 * (kMixtralLayerBase + 8 * 3 * 4096.0 * 14336) + 4096;
const double kMixtralActive = 2 * 32000.0 * 4096 + 32 * (kMixtralLayerBase + 2 * 3 * 4096.0 * 14336) + 4096;

}  // namespace

TEST_CASE("zoo transformers have their published parameter counts", "[llm]") {
  // the hand counts are the published figures
  CHECK(kGpt2 == 124439808);
  CHECK(kLlama2 == 6738415616);
  CHECK(kLlama3 == 8030261248);
  CHECK(kMixtral == 46702792704);
  CHECK(kMixtralActive == 12879925248);
  CHECK(totals_of("{model: gpt2}").params == kGpt2);
  CHECK(totals_of("{model: llama2_7b, args: {seq: 8}}").params == kLlama2);
  CHECK(totals_of("{model: llama3_8b, args: {seq: 8}}").params == kLlama3);
  const SummaryRow m = totals_of("{model: mixtral_8x7b, args: {seq: 8}}");
  CHECK(m.params == kMixtral);
  CHECK(m.active_params == kMixtralActive);
}

TEST_CASE("hf: a transformer from a Hugging Face config.json", "[llm]") {
  auto params = [](const std::string& file) {
    const SummaryRow s = totals_of("{model: hf, args: {config: ../tests/data/hf/" + file + ", seq: 4}}");
    return std::pair<double, double>{s.params, s.active_params};
  };
  CHECK(params("gpt2.json").first == kGpt2);
  CHECK(params("llama2_7b.json").first == kLlama2);
  CHECK(params("llama3_8b.json").first == kLlama3);
  CHECK(params("mixtral_8x7b.json") == std::pair<double, double>{kMixtral, kMixtralActive});
  // the network is named after the config file
  CHECK(totals_of("{model: hf, args: {config: ../tests/data/hf/gpt2.json}}").network == "gpt2");

  CHECK(error_of([] { run_net("{model: hf, args: {seq: 4}}"); }) ==
        src("scenarios/t.yaml") + ":5:13: error: model 'hf' needs the path of a Hugging Face config.json\n"
                                  "  - {model: hf, args: {seq: 4}}\n"
                                  "            ^\n"
                                  "note: e.g. {model: hf, args: {config: models/llama/config.json, phase: decode}}\n");
  CHECK(error_of([] { run_net("{model: hf, args: {config: nowhere.json}}"); }) ==
        src("scenarios/t.yaml") + ":5:32: error: cannot read config '" + src("scenarios/nowhere.json") + "'\n"
                                  "  - {model: hf, args: {config: nowhere.json}}\n"
                                  "                               ^\n"
                                  "note: a relative path is relative to the scenario's folder\n");
}

TEST_CASE("hf: Mistral, Qwen2, Phi-3 and Gemma from their configs, with their published parameter counts", "[llm]") {
  auto params = [](const std::string& file) { return totals_of("{model: hf, args: {config: ../tests/data/hf/" + file + ", seq: 4}}").params; };
  // Mistral-7B: untied 32000 × 4096 tables; per layer q, o 4096², k, v 4096 × 1024 (8 KV heads of
  // 128), a SwiGLU of 14336, two norms; a final norm. Published: 7,241,732,096.
  const double mistral = 2 * 32000.0 * 4096 + 32 * (2 * 4096.0 * 4096 + 2 * 4096.0 * 1024 + 3 * 4096.0 * 14336 + 2 * 4096.0) + 4096;
  CHECK(mistral == 7241732096);
  CHECK(params("mistral_7b.json") == mistral);
  // Qwen2-7B: head_dim 3584 / 28 = 128, 4 KV heads (512 features); biases on q, k, v (3584 + 512
  // + 512) and none on o. Published: 7,615,616,512.
  const double qwen2 = 2 * 152064.0 * 3584 +
                       28 * (2 * 3584.0 * 3584 + 2 * 3584.0 * 512 + (3584 + 512 + 512) + 3 * 3584.0 * 18944 + 2 * 3584.0) + 3584;
  CHECK(qwen2 == 7615616512);
  CHECK(params("qwen2_7b.json") == qwen2);
  // Phi-3-mini: 32 heads of 96 and 32 KV heads: q, k, v, o 3072² each; SwiGLU 8192; vocab 32064
  // untied. Published: 3,821,079,552.
  const double phi3 = 2 * 32064.0 * 3072 + 32 * (4 * 3072.0 * 3072 + 3 * 3072.0 * 8192 + 2 * 3072.0) + 3072;
  CHECK(phi3 == 3821079552);
  CHECK(params("phi3_mini_4k.json") == phi3);
  // Gemma-7B: 16 heads of 256 (4096 features from a 3072-wide model), a GeGLU of 24576, the LM head
  // tied to the 256000-row table (tie_word_embeddings absent: true). Published: 8,537,680,896.
  const double gemma = 256000.0 * 3072 + 28 * (4 * 3072.0 * 4096 + 3 * 3072.0 * 24576 + 2 * 3072.0) + 3072;
  CHECK(gemma == 8537680896);
  CHECK(params("gemma_7b.json") == gemma);
}

TEST_CASE("hf: Qwen1.5-MoE-A2.7B, fine-grained experts with a gated shared expert", "[llm]") {
  // Per layer: q, k, v, o 2048² with q/k/v biases (3 · 2048); a router 2048 × 60; 60 experts of
  // 3 · 2048 · 1408; a shared expert 3 · 2048 · 5632 and its gate 2048 × 1; two norms. Untied
  // 151936 × 2048 tables and a final norm. Published total: 14.3 B.
  const double attn = 4 * 2048.0 * 2048 + 3 * 2048.0;
  const double layer = attn + 2048.0 * 60 + 60 * 3 * 2048.0 * 1408 + 3 * 2048.0 * 5632 + 2048.0 + 2 * 2048.0;
  const double total = 2 * 151936.0 * 2048 + 24 * layer + 2048;
  CHECK(total == 14315784192);
  // active per token: the router, 4 of the 60 experts, the shared expert and its gate
  const double active_layer = attn + 2048.0 * 60 + 4 * 3 * 2048.0 * 1408 + 3 * 2048.0 * 5632 + 2048.0 + 2 * 2048.0;
  const double active = 2 * 151936.0 * 2048 + 24 * active_layer + 2048;
  const SummaryRow s = totals_of("{model: hf, args: {config: ../tests/data/hf/qwen1_5_moe_a2_7b.json, seq: 4}}");
  CHECK(s.params == total);
  CHECK(s.active_params == active);
  CHECK(active == 2689173504);  // "A2.7B": 2.69 B active
}

TEST_CASE("hf: Qwen3-8B and Qwen3-30B-A3B, per-head q/k norms and no biases, published counts by hand", "[llm]") {
  // Qwen3-8B: 32 heads and 8 KV heads of 128 (head_dim given): q, o 4096 × 4096, k, v 4096 × 1024,
  // no biases; an RMSNorm of 128 on each head of q and of k (2 · 128); a SwiGLU of 12288; two norms;
  // untied 151936 × 4096 tables and a final norm. Published: 8,190,735,360.
  const double q8 = 2 * 151936.0 * 4096 + 36 * (2 * 4096.0 * 4096 + 2 * 4096.0 * 1024 + 2 * 128.0 + 3 * 4096.0 * 12288 + 2 * 4096.0) + 4096;
  CHECK(q8 == 8190735360);
  const SummaryRow s8 = totals_of("{model: hf, args: {config: ../tests/data/hf/qwen3_8b.json, seq: 4}}");
  CHECK(s8.params == q8);
  // Qwen3-30B-A3B: 32 heads and 4 KV heads of 128 on a 2048-wide model (q 2048 × 4096, k, v
  // 2048 × 512, o 4096 × 2048), the q/k norms, a router 2048 × 128 and 128 experts of
  // 3 · 2048 · 768, no shared expert; two norms; untied 151936 × 2048 tables. Published: 30,532,122,624.
  const double layer = 2 * 2048.0 * 4096 + 2 * 2048.0 * 512 + 2 * 128.0 + 2048.0 * 128 + 128 * 3 * 2048.0 * 768 + 2 * 2048.0;
  const double q30 = 2 * 151936.0 * 2048 + 48 * layer + 2048;
  CHECK(q30 == 30532122624);
  const SummaryRow s30 = totals_of("{model: hf, args: {config: ../tests/data/hf/qwen3_30b_a3b.json, seq: 4}}");
  CHECK(s30.params == q30);
  // active per token: 8 of the 128 experts ("A3B": 3.35 B)
  const double active = 2 * 151936.0 * 2048 + 48 * (layer - 120 * 3 * 2048.0 * 768) + 2048;
  CHECK(s30.active_params == active);
  CHECK(active == 3353032704);
}

TEST_CASE("hf: Qwen-MoE's mlp_only_layers are dense MLPs of intermediate_size", "[llm]") {
  // the published config with mlp_only_layers [0, 5] (published configs leave it empty): those two
  // layers have a gated MLP of 5632 (3 · 2048 · 5632 = 34,603,008) instead of the mixture (router
  // 2048 · 60, 60 experts of 3 · 2048 · 1408, the shared expert 3 · 2048 · 5632 and its gate 2048:
  // 553,773,056): 2 · 519,170,048 fewer parameters than 14,315,784,192
  std::ifstream in(std::string(RSIM_SOURCE_DIR) + "/tests/data/hf/qwen1_5_moe_a2_7b.json");
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const size_t at = text.find("\"mlp_only_layers\": []");
  REQUIRE(at != std::string::npos);
  text.replace(at, std::string("\"mlp_only_layers\": []").size(), "\"mlp_only_layers\": [0, 5]");
  const fs::path dir = fs::temp_directory_path() / "rsim_test_mlp_only";
  fs::create_directories(dir);
  std::ofstream(dir / "config.json") << text;
  const double moe = 2048.0 * 60 + 60 * 3 * 2048.0 * 1408 + 3 * 2048.0 * 5632 + 2048, dense = 3 * 2048.0 * 5632;
  CHECK(moe - dense == 519170048);
  RunResult r = run_net("{model: hf, args: {config: " + (dir / "config.json").string() + ", seq: 4}}");
  CHECK(summary_of(r, 0, "h100_sxm").params == 14315784192 - 2 * (moe - dense));
  int mixtures = 0, mlps = 0;
  for (const Row& row : r.results.at(0).rows) mixtures += row.op == "moe", mlps += row.op == "swiglu";
  CHECK(mixtures == 22);
  CHECK(mlps == 2);
  // a layer past the 63 the mask holds is refused at its entry
  text.replace(text.find("[0, 5]"), 6, "[0, 70]");
  std::ofstream(dir / "deep.json") << text;
  const std::string e = error_of([&] { run_net("{model: hf, args: {config: " + (dir / "deep.json").string() + ", seq: 4}}"); });
  CHECK(e.find("mlp_only_layers lists layer 70: rsim takes layers 0 to 62 there") != std::string::npos);
}

TEST_CASE("hf: a sliding window keeps the last W tokens of the cache and bounds what a query sees", "[llm]") {
  // Mistral-7B in bf16: K and V of 8 KV heads × 128 over 32 layers: 2 · 32 · 1024 · 2 B = 131,072 B
  // per token of context
  auto run_mistral = [](const std::string& args) {
    return run_net("{model: hf, args: {config: ../tests/data/hf/mistral_7b.json, " + args + "}}", "{dtype: bf16}");
  };
  const double per_token = 2.0 * 32 * 1024 * 2;
  CHECK(per_token == 131072);
  auto kv_bytes = [](const RunResult& r) { return summary_of(r, 0, "h100_sxm").kv_cache_bytes; };
  // below the window the cache grows by 131,072 B a token: decode at context 1000 holds 1001 tokens
  const double at1000 = kv_bytes(run_mistral("phase: decode, context: 1000"));
  const double at1001 = kv_bytes(run_mistral("phase: decode, context: 1001"));
  CHECK(at1000 == 1001 * per_token);
  CHECK(at1001 - at1000 == per_token);
  // at 32k context it keeps exactly the window: 4096 × 131,072 B (not 32,769 tokens, 8× more)
  RunResult d32k = run_mistral("phase: decode, context: 32768");
  CHECK(kv_bytes(d32k) == 4096 * per_token);
  // the new token attends to the last 4096 positions, itself included: per layer 2 (QKᵀ, PV) × 32
  // heads × 4096 keys × 128 MACs; it reads 4095 cached tokens and its own K and V
  CHECK(sum_over(d32k, [](const Row& w) { return w.cost.macs; }, {"attention"}) == 32 * 2.0 * 32 * 4096 * 128);
  CHECK(sum_over(d32k, [](const Row& w) { return w.cost.kv_read_bytes; }) == 4096 * per_token);
  // a prefill of 8192 tokens from an empty cache: query i sees min(4096, i + 1) keys, so
  // Σ = (1 + … + 4096) + 4096 · 4096 = 8,390,656 + 16,777,216 = 25,167,872 pairs per head
  RunResult p = run_mistral("phase: prefill, seq: 8192");
  CHECK(sum_over(p, [](const Row& w) { return w.cost.macs; }, {"attention"}) == 32 * 2.0 * 32 * 25167872.0 * 128);
  CHECK(kv_bytes(p) == 4096 * per_token);  // and the cache keeps 4096 of the 8192
  // Qwen2's sliding_window is off (use_sliding_window: false): 32k of context are all kept
  RunResult q = run_net("{model: hf, args: {config: ../tests/data/hf/qwen2_7b.json, phase: decode, context: 32768}}", "{dtype: bf16}");
  CHECK(summary_of(q, 0, "h100_sxm").kv_cache_bytes == 32769 * (2.0 * 28 * 512 * 2));
  // with use_sliding_window: true, Qwen slides the layers from max_window_layers on (the window set
  // to 4096 here: Qwen2-7B's own 131,072 would keep all 32k): from 0, every layer keeps its last
  // 4096 tokens; from 28 of 28, none slides; from 14, half would — refused rather than built as all or none
  std::ifstream in(std::string(RSIM_SOURCE_DIR) + "/tests/data/hf/qwen2_7b.json");
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  auto with = [&](const std::string& key, const std::string& value) {
    const size_t at = text.find("\"" + key + "\": ");
    REQUIRE(at != std::string::npos);
    const size_t end = text.find_first_of(",\n", at);
    text.replace(at, end - at, "\"" + key + "\": " + value);
  };
  with("use_sliding_window", "true");
  with("sliding_window", "4096");
  const fs::path dir = fs::temp_directory_path() / "rsim_test_qwen_window";
  fs::create_directories(dir);
  auto kv_of = [&](const std::string& from) {
    with("max_window_layers", from);
    std::ofstream(dir / ("w" + from + ".json")) << text;
    return summary_of(run_net("{model: hf, args: {config: " + (dir / ("w" + from + ".json")).string() + ", phase: decode, context: 32768}}", "{dtype: bf16}"),
                      0, "h100_sxm")
        .kv_cache_bytes;
  };
  CHECK(kv_of("0") == 4096 * (2.0 * 28 * 512 * 2));
  CHECK(kv_of("28") == 32769 * (2.0 * 28 * 512 * 2));
  const std::string e = error_of([&] { kv_of("14"); });
  CHECK(e.find("error: use_sliding_window with max_window_layers = 14 of 28 layers is not supported: only the layers from 14 on would slide") !=
        std::string::npos);
}

TEST_CASE("hf: torch_dtype is the network's dtype unless settings give one", "[llm]") {
  // Mistral's config says bfloat16: 2 bytes a weight. The LM head reads 32000 × 4096 weights.
  auto lm_head_bytes = [](const std::string& net, const std::string& settings) {
    RunResult r = run_net(net, settings);
    for (const Row& row : r.results.at(0).rows)
      if (row.layer == "lm_head") return std::pair<double, DType>{row.cost.weight_bytes, row.dtype};
    FAIL("no lm_head");
    return std::pair<double, DType>{0, DType::fp32};
  };
  const std::string mistral = "{model: hf, args: {config: ../tests/data/hf/mistral_7b.json, seq: 4}}";
  CHECK(lm_head_bytes(mistral, "{}") == std::pair<double, DType>{32000.0 * 4096 * 2, DType::bf16});
  // settings.dtype beats the file
  CHECK(lm_head_bytes(mistral, "{dtype: fp32}") == std::pair<double, DType>{32000.0 * 4096 * 4, DType::fp32});
  // (a model use has no dtype key of its own: settings, or a layer's dtype, is how a user overrides it)
}

TEST_CASE("hf: DeepSeek-V2-Lite and DeepSeek-V3, latent attention and shared experts, published counts by hand", "[llm]") {
  // DeepSeek-V2-Lite (bf16): hidden 2048, 27 layers, 16 heads; MLA without a q LoRA:
  //   q_proj 2048 × 16·(128 + 64), kv_a_proj 2048 × (512 + 64), its norm 512,
  //   kv_b_proj 512 × 16·(128 + 128), o_proj 16·128 × 2048
  const double mla = 2048.0 * 16 * 192 + 2048.0 * 576 + 512 + 512.0 * 16 * 256 + 16.0 * 128 * 2048;
  CHECK(mla == 13763072);
  // layer 0 a dense SwiGLU of 10944; layers 1–26: 64 routed experts of 3 · 2048 · 1408, two shared
  // experts as one ungated-by-router SwiGLU of 2 · 1408, a router 2048 × 64; two norms per layer
  const double dense = 3 * 2048.0 * 10944;
  const double moe = 64 * 3 * 2048.0 * 1408 + 3 * 2048.0 * 2816 + 2048.0 * 64;
  CHECK(dense == 67239936);
  CHECK(moe == 571080704);
  // untied embedding and LM head 102400 × 2048, a final norm: published total 15.7 B
  const double lite = 2 * 102400.0 * 2048 + 27 * (mla + 2 * 2048.0) + dense + 26 * moe + 2048;
  CHECK(lite == 15706484224);
  auto lite_run = [](const std::string& args) {
    return run_net("{model: hf, args: {config: ../tests/data/hf/deepseek_v2_lite.json, " + args + "}}", "{}");
  };
  RunResult d1000 = lite_run("phase: decode, context: 1000");
  const SummaryRow s = summary_of(d1000, 0, "h100_sxm");
  CHECK(s.params == lite);
  CHECK(d1000.results.at(0).rows.at(0).dtype == DType::bf16);  // torch_dtype
  // the cache holds the latent (512) and the rope key (64) per token and layer, bf16:
  // (512 + 64) · 27 · 2 B = 31,104 B a token (the full K and V would be 16 · (192 + 128) · 27 · 2 = 276,480 B)
  const double per_token = (512.0 + 64) * 27 * 2;
  CHECK(per_token == 31104);
  CHECK(s.kv_cache_bytes == 1001 * per_token);
  const SummaryRow s1001 = summary_of(lite_run("phase: decode, context: 1001"), 0, "h100_sxm");
  CHECK(s1001.kv_cache_bytes - s.kv_cache_bytes == per_token);
  // a decode step at batch 1 reads every dense weight, 6 of 64 experts in each MoE layer, the
  // shared experts and routers, one embedding row, the LM head, and the whole latent cache:
  //   2048 + 27 · (mla + 4096) + dense + 26 · (6 · 3 · 2048 · 1408 + 3 · 2048 · 2816 + 2048 · 64)
  //   + 2048 + 102400 · 2048 elements, at 2 B, plus 1001 · 31,104 B of cache
  const double read = 2048 + 27 * (mla + 4096) + dense + 26 * (6 * 3 * 2048.0 * 1408 + 3 * 2048.0 * 2816 + 2048.0 * 64) + 2048 + 102400.0 * 2048;
  const double hand = read * 2 + 1001 * per_token;
  CHECK(hand == 4934009216);
  CHECK(std::abs(s.bytes - hand) / hand < 0.005);  // the rest: activations, rope tables, the appended token
  // absorbed decode (the default at decode): per layer and token, q absorb 16 · 128 · 512, scores over
  // 1001 keys of 512 + 64, values 1001 · 512 per head, un-absorb 16 · 512 · 128 MACs
  const double absorbed = 16 * 128 * 512.0 + 16 * 1001 * 576.0 + 16 * 1001 * 512.0 + 16 * 512 * 128.0;
  CHECK(sum_over(d1000, [](const Row& w) { return w.cost.macs; }, {"mla_attention"}) == 27 * absorbed);
  // not absorbed (as Hugging Face runs it): kv_b_proj decompresses all 1001 keys, 1001 · 512 · 16 · 256,
  // then attention of 192-feature scores and 128-feature values
  RunResult plain = lite_run("phase: decode, context: 1000, mla_absorb: false");
  const double decompressed = 1001 * 512.0 * 16 * 256 + 16 * 1001 * (192.0 + 128);
  CHECK(sum_over(plain, [](const Row& w) { return w.cost.macs; }, {"mla_attention"}) == 27 * decompressed);

  // DeepSeek-V3: hidden 7168, 61 layers, 128 heads, q LoRA 1536; first 3 layers dense (18432),
  // 58 with 256 routed experts of 2048, one shared, a router 7168 × 256 with a bias of 256
  // (topk_method noaux_tc); untied 129280 × 7168 tables. Published: 671 B (without the
  // multi-token-prediction module, which Hugging Face's model does not build)
  const double v3_mla = 7168.0 * 1536 + 1536 + 1536.0 * 128 * 192 + 7168.0 * 576 + 512 + 512.0 * 128 * 256 + 128.0 * 128 * 7168;
  CHECK(v3_mla == 187107328);
  const double v3_dense = 3 * 7168.0 * 18432, v3_moe = 256 * 3 * 7168.0 * 2048 + 3 * 7168.0 * 2048 + 7168.0 * 256 + 256;
  const double v3 = 2 * 129280.0 * 7168 + 3 * (v3_mla + 2 * 7168.0 + v3_dense) + 58 * (v3_mla + 2 * 7168.0 + v3_moe) + 7168;
  CHECK(v3 == 671026419200);
  CHECK(totals_of("{model: hf, args: {config: ../tests/data/hf/deepseek_v3.json, seq: 4}}").params == v3);
}

TEST_CASE("hf: Gemma-2-9B and Gemma-3-1B, sandwich norms and alternating sliding layers, published counts by hand", "[llm]") {
  // Gemma-2-9B: hidden 3584, 42 layers, 16 heads and 8 KV heads of 256, a GeGLU of 14336, four norms a
  // layer (before and after attention and the MLP), a tied 256000 × 3584 table. Published: 9.24 B
  const double g2_layer = 3584.0 * 4096 + 2 * 3584.0 * 2048 + 4096.0 * 3584 + 3 * 3584.0 * 14336 + 4 * 3584.0;
  const double g2 = 256000.0 * 3584 + 42 * g2_layer + 3584;
  CHECK(g2 == 9241705984);
  RunResult r2 = run_net("{model: hf, args: {config: ../tests/data/hf/gemma2_9b.json, phase: decode, context: 8191}}", "{}");
  const SummaryRow s2 = summary_of(r2, 0, "h100_sxm");
  CHECK(s2.params == g2);
  // every other layer slides over 4096 tokens (layers 0, 2, …; Hugging Face's is_sliding = not
  // layer_idx % 2): at 8192 tokens, 21 layers hold 8192 and 21 hold 4096, K and V of 8 × 256, fp32
  CHECK(s2.kv_cache_bytes == 2 * 8 * 256 * 4.0 * (21 * 8192 + 21 * 4096));
  // Gemma-3-1B: hidden 1152, 26 layers, 4 heads and 1 KV head of 256, RMSNorms of q and k per head
  // (256 each), a GeGLU of 6912, four norms a layer, a tied 262144 × 1152 table. Published: 1.0 B
  const double g3_layer = 1152.0 * 1024 + 2 * 1152.0 * 256 + 1024.0 * 1152 + 2 * 256.0 + 3 * 1152.0 * 6912 + 4 * 1152.0;
  const double g3 = 262144.0 * 1152 + 26 * g3_layer + 1152;
  CHECK(g3 == 999885952);
  RunResult r3 = run_net("{model: hf, args: {config: ../tests/data/hf/gemma3_1b.json, phase: decode, context: 8191}}", "{}");
  const SummaryRow s3 = summary_of(r3, 0, "h100_sxm");
  CHECK(s3.params == g3);
  // one layer in 6 is global (indices 5, 11, 17, 23: 4 of 26); the 22 others keep 512 tokens; bf16
  CHECK(s3.kv_cache_bytes == 2 * 1 * 256 * 2.0 * (4 * 8192 + 22 * 512));
}

TEST_CASE("hf: an architecture rsim does not build exactly is refused, naming its model_type", "[llm]") {
  const std::pair<const char*, const char*> cases[] = {{"mamba", "mamba_130m"}, {"bert", "bert_base"}, {"t5", "t5_small"}, {"rwkv", "rwkv_169m"}};
  for (const auto& [type, stem] : cases) {
    const std::string file = std::string(stem) + ".json";
    INFO(file);
    const std::string e = error_of([&] { run_net("{model: hf, args: {config: ../tests/data/hf/" + file + "}}"); });
    CHECK(e.find("tests/data/hf/" + file + ":") != std::string::npos);  // located in the config file, at its model_type
    CHECK(e.find("\n  \"model_type\": \"" + std::string(type) + "\",\n") != std::string::npos);
    CHECK(e.find("error: model_type '" + std::string(type) + "' is not supported: rsim would count it wrongly") != std::string::npos);
    CHECK(e.find("note: supported model types: gpt2, gpt_neox, llama, mistral, mixtral, qwen2, qwen2_moe, qwen3, qwen3_moe, gemma, gemma2, gemma3_text, phi, phi3, falcon, opt, deepseek_v2, deepseek_v3;") !=
          std::string::npos);
  }
  // a supported type in a variant rsim does not build: Falcon-RW's ALiBi attention is refused at its key
  const std::string e = error_of([] { run_net("{model: hf, args: {config: ../tests/data/hf/falcon_rw_1b.json}}"); });
  CHECK(e.find("tests/data/hf/falcon_rw_1b.json:3:") != std::string::npos);
  CHECK(e.find("error: falcon with alibi: true is not supported: ALiBi attention biases are not modelled") != std::string::npos);
}

TEST_CASE("hf: Falcon-7B, Falcon-40B, OPT-1.3B and OPT-350m, counts by hand", "[llm]") {
  // Falcon-7B: per layer one LayerNorm (γ, β: 2 · 4544), fused q/k/v with 71 query heads of 64 and
  // one K/V head: 4544 × (4544 + 2 · 64), the dense output 4544², an ungated GELU MLP 4544 → 18176
  // → 4544, no biases; tied 65024 × 4544 table; a final LayerNorm. Published: 6,921,720,704.
  const double falcon = 65024.0 * 4544 + 32 * (2 * 4544.0 + 4544.0 * (4544 + 2 * 64) + 4544.0 * 4544 + 2 * 4544.0 * 18176) + 2 * 4544.0;
  CHECK(falcon == 6921720704);
  const SummaryRow f = totals_of("{model: hf, args: {config: ../tests/data/hf/falcon_7b.json, seq: 4}}");
  CHECK(f.params == falcon);
  // KV cache bytes of a config at a context, in bf16
  auto kv = [](const std::string& file, int context) {
    return summary_of(run_net("{model: hf, args: {config: ../tests/data/hf/" + file + ", phase: decode, context: " + std::to_string(context) + "}}",
                              "{dtype: bf16}"),
                      0, "h100_sxm")
        .kv_cache_bytes;
  };
  // Falcon-7B's per token of context: one K/V head of 64, 32 layers: 2 · 32 · 64 · 2 B = 8192 B
  CHECK(kv("falcon_7b.json", 101) - kv("falcon_7b.json", 100) == 8192);
  // Falcon-40B (new_decoder_architecture): per layer two LayerNorms, one before attention and one
  // before the MLP (γ, β each: 4 · 8192), fused q/k/v of 128 query heads and 8 K/V heads of 64:
  // 8192 × (128 + 2 · 8) · 64 = 8192 × 9216, the dense output 8192², an ungated GELU MLP
  // 8192 → 32768 → 8192, no biases; tied 65024 × 8192 table; a final LayerNorm.
  const double falcon40 = 65024.0 * 8192 + 60 * (4 * 8192.0 + 8192.0 * 9216 + 8192.0 * 8192 + 2 * 8192.0 * 32768) + 2 * 8192.0;
  CHECK(falcon40 == 41303293952);
  const SummaryRow f40 = totals_of("{model: hf, args: {config: ../tests/data/hf/falcon_40b.json, seq: 4}}");
  CHECK(f40.params == falcon40);
  // the MLP reads its own norm of the block's input: 60 layers × 2 norms + the final one = 121
  RunResult r40 = run_net("{model: hf, args: {config: ../tests/data/hf/falcon_40b.json, seq: 4}}");
  CHECK(sum_over(r40, [](const Row&) { return 1.0; }, {"layernorm"}) == 121);
  // KV per token of context in bf16: 8 K/V heads of 64 in 60 layers: 2 · 60 · 8 · 64 · 2 B = 122,880 B
  CHECK(kv("falcon_40b.json", 101) - kv("falcon_40b.json", 100) == 122880);
  // OPT-1.3B: tied 50272 × 2048 tokens and 2048 + 2 learned positions; per layer q, k, v, o and the
  // two MLP matrices 2048 → 8192 → 2048 with biases, two LayerNorms (2 · 2048 each); a final
  // LayerNorm. Published: 1,315,758,080.
  const double opt = 50272.0 * 2048 + 2050.0 * 2048 +
                     24 * (4 * (2048.0 * 2048 + 2048) + (2048.0 * 8192 + 8192) + (8192.0 * 2048 + 2048) + 2 * 2 * 2048.0) + 2 * 2048.0;
  CHECK(opt == 1315758080);
  CHECK(totals_of("{model: hf, args: {config: ../tests/data/hf/opt_1_3b.json, seq: 4}}").params == opt);
  // OPT-350m: a 512-wide token table (50272 × 512, tied to the LM head) projected in to the blocks'
  // 1024 and out again (two 1024 × 512 matrices, no bias), 2048 + 2 learned positions of 1024; post-norm
  // blocks (two LayerNorms each, after the residual adds) and no final LayerNorm. Published: 331,196,416.
  const double opt350 = 50272.0 * 512 + 2 * 1024.0 * 512 + 2050.0 * 1024 +
                        24 * (4 * (1024.0 * 1024 + 1024) + (1024.0 * 4096 + 4096) + (4096.0 * 1024 + 1024) + 2 * 2 * 1024.0);
  CHECK(opt350 == 331196416);
  RunResult r350 = run_net("{model: hf, args: {config: ../tests/data/hf/opt_350m.json, seq: 4}}");
  CHECK(summary_of(r350, 0, "h100_sxm").params == opt350);
  // the norms: 2 a block, none after the last (24 · 2 = 48)
  CHECK(sum_over(r350, [](const Row&) { return 1.0; }, {"layernorm"}) == 48);
}

TEST_CASE("hf: Pythia-1B (GPT-NeoX) and Phi-2, parallel blocks and partial rotary, published counts by hand", "[llm]") {
  auto layer_op = [](const RunResult& r, const std::string& name) -> const Row& {
    for (const Row& row : r.results.at(0).rows)
      if (row.layer == name) return row;
    FAIL("no layer " << name);
    return r.results.at(0).rows.at(0);
  };
  // Pythia-1B: per layer two LayerNorms (attention's and the MLP's, side by side: 4 · 2048), fused
  // q/k/v 2048 → 6144 and the dense 2048² with biases, an ungated GELU MLP 2048 → 8192 → 2048 with
  // biases; untied 50304 × 2048 tables; a final LayerNorm. Published: 1,011,781,632.
  const double pythia = 2 * 50304.0 * 2048 +
                        16 * (4 * 2048.0 + (2048.0 * 6144 + 6144) + (2048.0 * 2048 + 2048) + (2048.0 * 8192 + 8192) + (8192.0 * 2048 + 2048)) + 2 * 2048.0;
  CHECK(pythia == 1011781632);
  RunResult p = run_net("{model: hf, args: {config: ../tests/data/hf/pythia_1b.json, seq: 4}}");
  CHECK(summary_of(p, 0, "h100_sxm").params == pythia);
  // rotary_pct 0.25 of 256-feature heads: 64 rotated, 3 FLOPs each, over 4 tokens × 8 heads:
  // 3 · 4 · 8 · 64 = 6144
  CHECK(layer_op(p, "layer.0.q_rope").cost.flops == 6144);
  // the MLP reads its own norm of the block's input (use_parallel_residual)
  CHECK(layer_op(p, "layer.0.norm2").op == "layernorm");
  // Phi-2: one LayerNorm a block for attention and the MLP side by side (2 · 2560), q, k, v and
  // dense 2560² with biases, an MLP 2560 → 10240 → 2560 with biases; untied 51200 × 2560 tables,
  // the LM head with a bias of 51200; a final LayerNorm. Published: 2,779,683,840.
  const double phi2 = 51200.0 * 2560 + (51200.0 * 2560 + 51200) +
                      32 * (2 * 2560.0 + 4 * (2560.0 * 2560 + 2560) + (2560.0 * 10240 + 10240) + (10240.0 * 2560 + 2560)) + 2 * 2560.0;
  CHECK(phi2 == 2779683840);
  RunResult f = run_net("{model: hf, args: {config: ../tests/data/hf/phi_2.json, seq: 4}}");
  CHECK(summary_of(f, 0, "h100_sxm").params == phi2);
  // partial_rotary_factor 0.4 of 80-feature heads: 32 rotated: 3 · 4 · 32 · 32 = 12,288 FLOPs
  CHECK(layer_op(f, "layer.0.q_rope").cost.flops == 12288);
  CHECK(sum_over(f, [](const Row&) { return 1.0; }, {"layernorm"}) == 33);
}

TEST_CASE("Llama-2-7B decode at batch 1 with 4,096 cached tokens (fp16)", "[llm]") {
  RunResult r = run_net("{model: llama2_7b, args: {phase: decode, batch: 1, context: 4096}}");
  const SummaryRow& s = summary_of(r, 0, "h100_sxm");
  // projections: q, k, v, o 4·4096² and the SwiGLU 3·4096·11008 per layer, plus the LM head
  double proj = 32 * (4 * 4096.0 * 4096 + 3 * 4096.0 * 11008) + 4096.0 * 32000;
  CHECK(proj == 6607077376);
  CHECK(sum_over(r, [](const Row& w) { return w.cost.macs; }, {"linear", "swiglu"}) == proj);
  // attention: the new token attends to the 4,096 cached keys and its own: 2 (QKᵀ, PV) × 32 layers
  // × 32 heads × 128 = 4,096 features × 4,097 keys (the 2 × 32 × 4096 × 4096 leaves out
  // the new token's own key)
  double attn = 2.0 * 32 * 4096 * 4097;
  CHECK(sum_over(r, [](const Row& w) { return w.cost.macs; }, {"attention"}) == attn);
  CHECK(s.macs == proj + attn);  // nothing else multiplies and accumulates
  // bytes: every weight but the embedding table (the embedding reads one 4,096-wide row)
  double weights = 2 * (6738415616.0 - 32000.0 * 4096);
  CHECK(weights == 13214687232);
  CHECK(sum_over(r, [](const Row& w) { return w.cost.weight_bytes; }, {"linear", "swiglu", "rmsnorm"}) == weights);
  // the KV cache read: K and V of 4,097 tokens, 4,096 features, 32 layers, 2 bytes
  CHECK(sum_over(r, [](const Row& w) { return w.cost.kv_read_bytes; }) == 2.0 * 32 * 4097 * 4096 * 2);
  // the appended token: K and V, 4,096 features, 32 layers
  CHECK(sum_over(r, [](const Row& w) { return w.cost.kv_write_bytes; }) == 2.0 * 32 * 4096 * 2);
  // total ≈ weights + the cache 2 × 32 × 4096 × 4096 × 2 B; the rest (activations, the new
  // token's K and V, rope tables, one embedding row) is under 0.1 %
  double approx = weights + 2.0 * 32 * 4096 * 4096 * 2;
  CHECK(s.bytes > approx);
  CHECK(s.bytes < approx * 1.001);
  // decode: one token per sequence per step
  CHECK(s.phase == "decode");
  CHECK(s.tokens == 1);
  CHECK(llm_totals(s).tokens_per_s == 1 / s.time_s);
  CHECK(llm_totals(s).tpot_s == s.time_s);
  CHECK(std::isnan(llm_totals(s).ttft_s));
  // memory footprint: all weights (fp16) and RoPE's cos/sin table, once per model and whatever the
  // step's positions (max_position_embeddings 4,096 × rotary_dim 128 × 2 B = 1,048,576 B, as vLLM's
  // cos_sin_cache) + the cache of 4,097 tokens + the largest layer's activations
  const double rope = 4096 * 128 * 2.0;
  CHECK(rope == 1048576);
  CHECK(s.weight_footprint_bytes == 2 * 6738415616.0 + rope);
  CHECK(s.kv_cache_bytes == 2.0 * 32 * 4097 * 4096 * 2);
  CHECK(s.memory_footprint_bytes == s.weight_footprint_bytes + s.kv_cache_bytes + s.activation_bytes);
  CHECK(s.memory_size_bytes == 80.0 * 1024 * 1024 * 1024);  // H100 SXM: 80 GiB
}

TEST_CASE("each extra cached token adds the K and V of one token per layer", "[llm]") {
  auto bytes = [](const std::string& model, int context) {
    return totals_of("{model: " + model + ", args: {phase: decode, context: " + std::to_string(context) + "}}").bytes;
  };
  // Llama-2-7B: 32 layers × (K + V) × 32 KV heads × 128 × 2 bytes
  CHECK(bytes("llama2_7b", 4097) - bytes("llama2_7b", 4096) == 32 * 2 * 32 * 128 * 2.0);
  CHECK(32 * 2 * 32 * 128 * 2.0 == 524288);
  // Llama-3-8B, grouped-query attention: 8 KV heads
  CHECK(bytes("llama3_8b", 4097) - bytes("llama3_8b", 4096) == 32 * 2 * 8 * 128 * 2.0);
  CHECK(32 * 2 * 8 * 128 * 2.0 == 131072);
}

TEST_CASE("Mixtral runs 2 of 8 experts at batch 1 and touches more with a batch", "[llm]") {
  auto moe_weights = [](int batch) {
    RunResult r = run_net("{model: mixtral_8x7b, args: {phase: decode, batch: " + std::to_string(batch) + ", context: 16}}");
    return sum_over(r, [](const Row& w) { return w.cost.weight_bytes; }, {"moe"});
  };
  double expert = 3 * 4096.0 * 14336, router = 4096.0 * 8;
  CHECK(moe_weights(1) == 32 * (router + 2 * expert) * 2);
  // 8 tokens: 8 · (1 − (1 − 2/8)^8) = 8 · (1 − 0.75^8) experts per layer under uniform routing
  CHECK(moe_weights(8) == Approx(32 * (router + 8 * (1 - std::pow(0.75, 8)) * expert) * 2));
}

TEST_CASE("prefill: time to first token, tokens per second, logits of the last token", "[llm]") {
  RunResult r = run_net("{model: llama3_8b, args: {phase: prefill, batch: 2, seq: 512}}");
  const SummaryRow& s = summary_of(r, 0, "h100_sxm");
  CHECK(s.phase == "prefill");
  CHECK(s.tokens == 2 * 512);
  CHECK(llm_totals(s).ttft_s == s.time_s);
  CHECK(llm_totals(s).tokens_per_s == 1024 / s.time_s);
  CHECK(std::isnan(llm_totals(s).tpot_s));
  // the LM head runs on each sequence's last token: 2 × 4096 × 128256 MACs
  CHECK(sum_over(r, [](const Row& w) { return w.layer == "lm_head" ? w.cost.macs : 0.0; }) == 2 * 4096.0 * 128256);
  // the KV cache holds the 512 prompt tokens: 32 layers × 2 × 8 heads × 128 × 2 sequences × 2 bytes
  CHECK(s.kv_cache_bytes == 32 * 2 * 8 * 128 * 512 * 2 * 2.0);
}

TEST_CASE("memory footprint is checked against the platform's memory, int4 weights make Mixtral fit", "[llm]") {
  const std::string net = "{model: mixtral_8x7b, args: {phase: decode, context: 4096}}";
  RunResult fp16 = run_net(net);
  const SummaryRow& s = summary_of(fp16, 0, "h100_sxm");
  // RoPE's table once: max_position_embeddings 32,768 × 128 × 2 B (see the Llama-2 case)
  const double rope = 32768 * 128 * 2.0;
  CHECK(s.weight_footprint_bytes == 2 * 46702792704.0 + rope);
  CHECK(s.memory_footprint_bytes > s.memory_size_bytes);
  // weights 93,405,585,408 + 8,388,608 B, the cache 2 · 32 · 4,097 · 1,024 · 2 = 537,001,984 B,
  // activations 131,072 B: 93,951,107,072 B = 87.4988 GiB
  CHECK(2 * 46702792704.0 + rope + 2.0 * 32 * 4097 * 1024 * 2 + 131072 == 93951107072.0);
  REQUIRE(fp16.results[0].warnings.size() == 1);
  CHECK(format_diagnostic(fp16.results[0].warnings[0]).find("warning: network 'mixtral_8x7b' needs 87.50 GiB of memory, more than the 80.00 GiB of platform 'h100_sxm' (HBM3)") !=
        std::string::npos);
  // int4 matrix weights with a fp16 scale per 128: norms and routers stay fp16
  RunResult q = run_net(net, "{dtype: fp16, weights_dtype: int4, quant_group: 128}");
  const SummaryRow& qs = summary_of(q, 0, "h100_sxm");
  double matrices = 46702792704.0 - 32 * (4096.0 * 8 + 2 * 4096) - 4096;  // all but routers and norms
  CHECK(qs.weight_footprint_bytes == matrices * (0.5 + 2.0 / 128) + (46702792704.0 - matrices) * 2 + rope);
  CHECK(qs.memory_footprint_bytes < qs.memory_size_bytes);
  CHECK(q.results[0].warnings.empty());
}

// ---------------------------------------------------------------- the LLM studies (scenarios/README.md)

namespace {
const SummaryRow& at(const RunResult& r, const std::string& platform, const std::string& network,
                     std::initializer_list<std::pair<const char*, const char*>> bindings) {
  for (size_t i = 0; i < r.points.size(); ++i) {
    bool match = true;
    for (const auto& [k, v] : bindings) match = match && env_find(r.points[i].bindings, k) && *env_find(r.points[i].bindings, k) == v;
    if (!match) continue;
    for (const auto& s : r.results[i].summary)
      if (s.platform == platform && s.network == network) return s;
  }
  throw std::runtime_error("no summary for " + platform + "/" + network);
}
double tps(const SummaryRow& s) { return llm_totals(s).derated_tokens_per_s; }
const SummaryRow& total(const RunResult& r, size_t point, const std::string& platform, const std::string& network) {
  for (const auto& s : r.results.at(point).summary)
    if (s.platform == platform && s.network == network) return s;
  throw std::runtime_error("no summary " + platform + "/" + network);
}
}  // namespace

TEST_CASE("study: decode tokens/s vs batch and context, fp16 vs int4 weights", "[studies][llm]") {
  RunResult r = run_file("scenarios/llm_decode.yaml");
  REQUIRE(r.points.size() == 3 * 5);
  const auto& fp16 = at(r, "h100_sxm", "llama3_8b.fp16", {{"context", "1024"}, {"batch", "1"}});
  const auto& int4 = at(r, "h100_sxm", "llama3_8b.int4", {{"context", "1024"}, {"batch", "1"}});
  CHECK(tps(fp16) == Approx(135).epsilon(0.01));  // README: 135 and 285 tokens/s, 2.1×
  CHECK(tps(int4) == Approx(285).epsilon(0.01));
  CHECK(tps(int4) / tps(fp16) == Approx(2.1).epsilon(0.02));
  CHECK(fp16.derated_memory_bound == fp16.layers);  // every layer memory bound at batch 1
  const auto& f64 = at(r, "h100_sxm", "llama3_8b.fp16", {{"context", "4096"}, {"batch", "64"}});
  const auto& i64 = at(r, "h100_sxm", "llama3_8b.int4", {{"context", "4096"}, {"batch", "64"}});
  CHECK(tps(f64) == Approx(3247).epsilon(0.01));  // README: 3,247 → 4,052, 1.25×
  CHECK(tps(i64) == Approx(4052).epsilon(0.01));
  // the KV cache read: 64 sequences × 4,097 tokens × 128 KiB = 32 GiB, more than the weights
  double kv = 64.0 * 4097 * 32 * 2 * 8 * 128 * 2;
  CHECK(kv == 32.0 * 4097 / 4096 * 1024 * 1024 * 1024);
  CHECK(f64.kv_cache_bytes == kv);
  CHECK(kv > f64.weight_footprint_bytes);
  // H200 1.27×, MI300X 1.36× the H100 at batch 1 (fp16)
  CHECK(tps(at(r, "h200", "llama3_8b.fp16", {{"context", "1024"}, {"batch", "1"}})) / tps(fp16) == Approx(1.27).epsilon(0.01));
  CHECK(tps(at(r, "mi300x", "llama3_8b.fp16", {{"context", "1024"}, {"batch", "1"}})) / tps(fp16) == Approx(1.36).epsilon(0.01));
  // batch 64 at 16,384 tokens: the cache alone is 64 × 16,385 × 128 KiB ≈ 128 GiB
  const auto& big = at(r, "h100_sxm", "llama3_8b.fp16", {{"context", "16384"}, {"batch", "64"}});
  CHECK(big.kv_cache_bytes == 64.0 * 16385 * 131072);
  CHECK(big.memory_footprint_bytes > big.memory_size_bytes);
  const auto& big_mi = at(r, "mi300x", "llama3_8b.fp16", {{"context", "16384"}, {"batch", "64"}});
  CHECK(big_mi.memory_footprint_bytes < big_mi.memory_size_bytes);
  CHECK_FALSE(r.results[0].warnings.size() > 0);  // batch 1, 1,024 tokens fits everywhere
}

TEST_CASE("study: prefill near the compute roof, decode on the bandwidth slope", "[studies][llm]") {
  RunResult r = run_file("scenarios/llm_prefill_decode.yaml");
  REQUIRE(r.points.size() == 3);  // batch 1, 8, 64
  double ridge = 989.5e12 / 3.35e12;  // H100 fp16 / HBM3: 295.4 FLOP/byte
  const SummaryRow& pre = total(r, 0, "h100_sxm", "prefill");
  CHECK(pre.intensity > ridge);
  CHECK(pre.intensity == Approx(751).epsilon(0.01));
  CHECK(pre.compute_bound == 192);  // the matrix products: 32 × (q, k, v, o, attention, MLP) = 192
  CHECK(pre.compute_bound == 32 * 6);
  CHECK(pre.layers == 420);
  CHECK(llm_totals(pre).derated_ttft_s == Approx(35e-3).epsilon(0.01));
  CHECK(llm_totals(pre).derated_tokens_per_s == Approx(58400).epsilon(0.01));
  const SummaryRow& d1 = total(r, 0, "h100_sxm", "decode");
  const SummaryRow& d8 = total(r, 1, "h100_sxm", "decode");
  const SummaryRow& d64 = total(r, 2, "h100_sxm", "decode");
  CHECK(d1.intensity == Approx(1.05).epsilon(0.01));
  CHECK(d8.intensity == Approx(7.5).epsilon(0.01));
  CHECK(d64.intensity == Approx(31.2).epsilon(0.01));
  CHECK(d64.intensity < 64);
  CHECK(d1.compute_bound == 0);
  CHECK(tps(d1) == Approx(134).epsilon(0.01));
  CHECK(tps(d64) == Approx(4680).epsilon(0.01));
}

TEST_CASE("study: how long a context fits", "[studies][llm]") {
  RunResult r = run_file("scenarios/llm_footprint.yaml");
  auto fp = [&](const char* net, const char* ctx, const char* platform = "h100_sxm") { return at(r, platform, net, {{"context", ctx}}); };
  // per 1,024 tokens of context at batch 8, fp16: 8 × 1,024 × 2 (K, V) × 32 layers × KV width × 2 bytes
  const double gib = 1024.0 * 1024 * 1024;
  CHECK(fp("llama2_7b", "4096").kv_cache_bytes - fp("llama2_7b", "1024").kv_cache_bytes == 3 * (8.0 * 1024 * 2 * 32 * 4096 * 2));
  CHECK(8.0 * 1024 * 2 * 32 * 4096 * 2 == 4 * gib);
  CHECK(fp("llama3_8b", "4096").kv_cache_bytes - fp("llama3_8b", "1024").kv_cache_bytes == 3 * (8.0 * 1024 * 2 * 32 * 1024 * 2));
  CHECK(8.0 * 1024 * 2 * 32 * 1024 * 2 == 1 * gib);
  auto fits = [](const SummaryRow& s) { return s.memory_footprint_bytes <= s.memory_size_bytes; };
  CHECK(fits(fp("llama2_7b", "16384")));
  CHECK(fp("llama2_7b", "16384").memory_footprint_bytes / gib == Approx(76.6).epsilon(0.002));
  CHECK_FALSE(fits(fp("llama2_7b", "65536")));
  CHECK(fits(fp("llama3_8b", "65536")));
  CHECK(fp("llama3_8b", "65536").memory_footprint_bytes / gib == Approx(79.0).epsilon(0.002));
  CHECK_FALSE(fits(fp("mixtral_8x7b", "1024")));
  CHECK(fits(fp("mixtral_8x7b", "1024", "mi300x")));  // 192 GiB
  CHECK(fits(fp("mixtral_8x7b", "16384", "h200")));
  CHECK_FALSE(fits(fp("mixtral_8x7b", "65536", "h200")));
  CHECK((fp("llama3_8b", "1024").weight_footprint_bytes - fp("llama3_8b.int4", "1024").weight_footprint_bytes) / gib == Approx(11.1).epsilon(0.01));
  CHECK(fits(fp("llama3_8b.int4", "131072", "h200")));
  CHECK(fits(fp("llama3_8b.int4", "131072", "mi300x")));
  CHECK_FALSE(fits(fp("llama3_8b", "131072", "h200")));
}

TEST_CASE("weights_dtype labels the matrix weights only: norms and RoPE tables stay in the activation dtype", "[llm]") {
  // int4 weights on an fp16 Llama-2: the projections, MLP, embedding and LM head hold int4 matrices;
  // rmsnorm's γ and RoPE's cos/sin rows are kept in fp16, and results.csv says so
  RunResult r = run_net("{model: llama2_7b, args: {phase: decode, context: 16, weights_dtype: int4}}");
  std::map<std::string, DType> by_op;
  for (const Row& row : r.results.at(0).rows)
    if (row.has_weights) by_op[row.op] = row.weights_dtype;
  CHECK(by_op.at("linear") == DType::int4);
  CHECK(by_op.at("swiglu") == DType::int4);
  CHECK(by_op.at("embedding") == DType::int4);
  CHECK(by_op.at("rmsnorm") == DType::fp16);
  CHECK(by_op.at("rope") == DType::fp16);
}

TEST_CASE("request: time to first token is the prompt's prefill, time per output token the mean decode step", "[llm][request]") {
  // Llama-3-8B in bf16, a request of 100 prompt tokens generating 5: the prefill of 100, then decode
  // steps at contexts 100, 101, 102, 103, 104; each run here as its own network to compare
  std::string text = "name: t\nsettings: {dtype: bf16}\nplatforms: [h100_sxm]\nnetworks:\n"
                     "  - {model: llama3_8b, request: {prompt: 100, generate: 5}}\n"
                     "  - {name: p, model: llama3_8b, args: {phase: prefill, seq: 100}}\n";
  for (int c = 100; c < 105; ++c) text += "  - {name: d" + std::to_string(c) + ", model: llama3_8b, args: {phase: decode, context: " + std::to_string(c) + "}}\n";
  RunResult r = run(parse_scenario(text, src("scenarios/t.yaml")));
  auto net = [&](const std::string& name) -> const SummaryRow& {
    for (const SummaryRow& s : r.results.at(0).summary)
      if (s.network == name) return s;
    FAIL("no network " << name);
    return r.results.at(0).summary.front();
  };
  const SummaryRow& q = net("llama3_8b");
  CHECK(q.phase == "request");
  CHECK(q.ttft_s == net("p").time_s);
  double steps = 0, dsteps = 0;
  for (int c = 100; c < 105; ++c) steps += net("d" + std::to_string(c)).time_s, dsteps += net("d" + std::to_string(c)).derated_time_s;
  CHECK(q.tpot_s == Approx(steps / 5).epsilon(1e-14));
  CHECK(q.derated_tpot_s == Approx(dsteps / 5).epsilon(1e-14));
  CHECK(q.time_s == Approx(net("p").time_s + steps).epsilon(1e-14));  // end to end: the prefill and five steps
  const LlmTotals l = llm_totals(q);
  CHECK(l.e2e_s == q.time_s);
  CHECK(l.tokens_per_s_per_user == Approx(1 / q.tpot_s));
  CHECK(l.tokens_per_s_per_gpu == Approx(5 / q.time_s));  // batch 1, one GPU: 5 tokens over the request
  // the cache at the last step holds 105 tokens: 2 · 32 layers · 1024 · 2 B = 131,072 B each
  CHECK(q.kv_cache_bytes == 105 * 131072.0);
  // the decode entry is not a row of its own in the summary; its layers are in results as llama3_8b.decode
  for (const SummaryRow& s : r.results.at(0).summary) CHECK(s.network != "llama3_8b.decode");
  // args that the request sets are refused
  const std::string e = error_of([] {
    run(parse_scenario("name: t\nplatforms: [h100_sxm]\nnetworks:\n  - {model: llama3_8b, args: {seq: 8}, request: {prompt: 100, generate: 5}}\n",
                       src("scenarios/t.yaml")));
  });
  CHECK(e.find("error: args.seq is set by request:") != std::string::npos);
}

TEST_CASE("request: continuous batching's steady state decodes every sequence each step and prefills the prompts that replace the finished", "[llm][request]") {
  // Llama-3-8B in bf16, 8 sequences running requests of 100 prompt tokens generating 11 (then 10).
  // Their contexts spread over 100 … 110: a step at their mean, 105 (M = 10: 100 … 109, the mean
  // 104.5 as the mean of steps at 104 and 105, exact since a step's cost is linear in the
  // context). Each step also prefills 8 / M prompts of 100 tokens, one at a time (batch 1).
  auto summary = [](const std::string& text) { return run(parse_scenario(text, src("scenarios/t.yaml"))); };
  const std::string head = "name: t\nsettings: {dtype: bf16}\nplatforms: [h100_sxm]\nnetworks:\n";
  RunResult r = summary(head +
                        "  - {name: q11, model: llama3_8b, args: {batch: 8}, request: {prompt: 100, generate: 11, batching: continuous}}\n"
                        "  - {name: q10, model: llama3_8b, args: {batch: 8}, request: {prompt: 100, generate: 10, batching: continuous}}\n"
                        "  - {name: p, model: llama3_8b, args: {phase: prefill, seq: 100, batch: 1}}\n"
                        "  - {name: d104, model: llama3_8b, args: {phase: decode, context: 104, batch: 8}}\n"
                        "  - {name: d105, model: llama3_8b, args: {phase: decode, context: 105, batch: 8}}\n");
  auto net = [&](const std::string& name) -> const SummaryRow& {
    for (const SummaryRow& s : r.results.at(0).summary)
      if (s.network == name) return s;
    FAIL("no network " << name);
    return r.results.at(0).summary.front();
  };
  const SummaryRow &q11 = net("q11"), &q10 = net("q10"), &p = net("p"), &d104 = net("d104"), &d105 = net("d105");
  CHECK(q11.ttft_s == p.time_s);
  CHECK(q11.tpot_s == Approx(d105.time_s + 8.0 / 11 * p.time_s).epsilon(1e-14));
  CHECK(q11.derated_tpot_s == Approx(d105.derated_time_s + 8.0 / 11 * p.derated_time_s).epsilon(1e-14));
  CHECK(q10.tpot_s == Approx((d104.time_s + d105.time_s) / 2 + 8.0 / 10 * p.time_s).epsilon(1e-14));
  CHECK(q11.time_s == Approx(p.time_s + 11 * q11.tpot_s).epsilon(1e-14));  // a request's latency: its prefill, then 11 steps
  // the steady state's throughput: 8 tokens a step
  const LlmTotals l = llm_totals(q11);
  CHECK(l.tokens_per_s == Approx(8 / q11.tpot_s).epsilon(1e-14));
  CHECK(l.tokens_per_s_per_user == Approx(1 / q11.tpot_s).epsilon(1e-14));
  // the cache holds the 8 sequences at the mean context: 8 · 106 tokens (105 cached + the new one) · 131,072 B
  CHECK(q11.kv_cache_bytes == 8 * 106 * 131072.0);
  CHECK(q11.batch == 8);
  const std::string e = error_of([&] { summary(head + "  - {model: llama3_8b, request: {prompt: 100, generate: 5, batching: dynamic}}\n"); });
  CHECK(e.find("unknown batching 'dynamic'") != std::string::npos);
}

TEST_CASE("paged KV: a sequence holds whole pages, so a prompt that does not fill its last page wastes the rest", "[llm][request]") {
  // Llama-3-8B bf16: 131,072 B of K and V a token. Decode at context 100 holds 101 tokens: in pages of
  // 16 that is ceil(101 / 16) = 7 pages = 112 tokens, 11 of them waste
  auto kv = [](const std::string& args) {
    return summary_of(run_net("{model: llama3_8b, args: {" + args + "}}", "{dtype: bf16}"), 0, "h100_sxm").kv_cache_bytes;
  };
  CHECK(kv("phase: decode, context: 100") == 101 * 131072.0);
  CHECK(kv("phase: decode, context: 100, kv_block: 16") == 7 * 16 * 131072.0);
  CHECK(kv("phase: decode, context: 111, kv_block: 16") == 7 * 16 * 131072.0);  // 112 tokens: the pages exactly full
  CHECK(kv("phase: decode, context: 112, kv_block: 16") == 8 * 16 * 131072.0);  // 113: one more page
  // batch 3: each sequence its own pages, 3 · 112 tokens
  CHECK(kv("phase: decode, batch: 3, context: 100, kv_block: 16") == 3 * 7 * 16 * 131072.0);
  // through a request: the last step (prompt 100, 5 generated) holds 105 tokens, 7 pages
  RunResult r = run_net("{model: llama3_8b, request: {prompt: 100, generate: 5, paged_kv: {block: 16}}}", "{dtype: bf16}");
  CHECK(summary_of(r, 0, "h100_sxm").kv_cache_bytes == 7 * 16 * 131072.0);
}

TEST_CASE("embedding_dtype keeps the embedding table and the LM head apart from int4 weights", "[llm][precision]") {
  // Llama-3-8B decode, bf16 activations, int4 weights, bf16 embeddings: the LM head reads
  // 128256 × 4096 × 2 B, a q projection 4096 × 4096 × 0.5 B, the embedding one row of 4096 × 2 B
  RunResult r = run_net("{model: llama3_8b, args: {phase: decode, context: 10}}", "{dtype: bf16, weights_dtype: int4, embedding_dtype: bf16}");
  auto row = [&](const std::string& layer) -> const Row& {
    for (const Row& w : r.results.at(0).rows)
      if (w.layer == layer) return w;
    FAIL("no layer " << layer);
    return r.results.at(0).rows.front();
  };
  CHECK(row("lm_head").cost.weight_bytes == 128256.0 * 4096 * 2);
  CHECK(row("lm_head").weights_dtype == DType::bf16);
  CHECK(row("layer.0.q_proj").cost.weight_bytes == 4096.0 * 4096 / 2);
  CHECK(row("layer.0.q_proj").weights_dtype == DType::int4);
  CHECK(row("embed").cost.weight_bytes == 4096.0 * 2);
  CHECK(row("embed").cost.resident_weight_bytes == 128256.0 * 4096 * 2);
  // without it both tables are int4 too
  RunResult q = run_net("{model: llama3_8b, args: {phase: decode, context: 10}}", "{dtype: bf16, weights_dtype: int4}");
  for (const Row& w : q.results.at(0).rows)
    if (w.layer == "lm_head") CHECK(w.cost.weight_bytes == 128256.0 * 4096 / 2);
}

TEST_CASE("request: the prefill and the decode steps may run in execution modes of their own", "[llm][request]") {
  // decode steps replayed from CUDA graphs, the prefill eager: each phase's time is the one its
  // mode gives when the whole scenario runs in it
  auto times = [](const std::string& execution) {
    std::string text = "name: t\nsettings: {dtype: bf16, execution: " + execution + "}\nplatforms: [h100_sxm]\nnetworks:\n"
                       "  - {name: p, model: llama3_8b, args: {phase: prefill, seq: 64}}\n";
    for (int c = 64; c < 67; ++c) text += "  - {name: d" + std::to_string(c) + ", model: llama3_8b, args: {phase: decode, context: " + std::to_string(c) + "}}\n";
    RunResult r = run(parse_scenario(text, src("scenarios/t.yaml")));
    std::vector<double> t;
    for (const SummaryRow& s : r.results.at(0).summary) t.push_back(s.time_s);
    return t;  // prefill, then the three steps
  };
  const std::vector<double> eager = times("eager"), graph = times("graph");
  RunResult q = run(parse_scenario("name: t\nsettings: {dtype: bf16}\nplatforms: [h100_sxm]\nnetworks:\n"
                                   "  - {model: llama3_8b, request: {prompt: 64, generate: 3, prefill_execution: eager, decode_execution: graph}}\n",
                                   src("scenarios/t.yaml")));
  const SummaryRow& s = q.results.at(0).summary.at(0);
  CHECK(s.ttft_s == eager[0]);
  CHECK(s.tpot_s == Approx((graph[1] + graph[2] + graph[3]) / 3).epsilon(1e-14));
  CHECK(graph[1] < times("fused")[1]);  // (the graph's gap is shorter than a launch: the modes differ)
}

TEST_CASE("hf: a count past what rsim counts with says so, once", "[llm][files]") {
  // hidden_size 4.6e22: a whole number, beyond 9e15 (it was called "not a whole number", twice)
  const fs::path dir = scratch_dir("hf_big");
  std::ofstream(dir / "config.json") << "{\"model_type\": \"llama\", \"hidden_size\": 46116860184273879040000, \"num_hidden_layers\": 2,\n"
                                        " \"num_attention_heads\": 4, \"intermediate_size\": 64, \"vocab_size\": 100}\n";
  const std::string e = error_of([&] { run_net("{model: hf, args: {config: " + (dir / "config.json").string() + "}}"); });
  CHECK(e.find("config.json:1:40: error: hidden_size = 46116860184273879040000 is too large: rsim counts up to 9e15") != std::string::npos);
  INFO(e);
  CHECK(e.find("error:") == e.rfind("error:"));  // one error
  fs::remove_all(dir);
}
