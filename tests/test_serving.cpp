// Serving: the request-level simulation of an inference engine (serving/). Each expected time is
// derived by hand from a step cost written in the test, iteration by iteration.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>

#include <nlohmann/json.hpp>

#include "cli_helpers.hpp"
#include "helpers.hpp"
#include "serving/pricer.hpp"
#include "serving/serve.hpp"
#include "serving/simulate.hpp"
#include "serving/workload.hpp"

using rsim::ConfigError;
using rsim::SourceLoc;
using namespace rsim::serving;

namespace {

Request req(double arrival, long long prompt, long long output) {
  Request r;
  r.arrival_s = arrival, r.prompt = prompt, r.output = output;
  return r;
}

// 10 ms an iteration, 0.1 ms a prefill token, 1 ms a decoding sequence
double linear_cost(const std::vector<Work>& prefill, const std::vector<Work>& decode) {
  double tokens = 0;
  for (const Work& w : prefill) tokens += static_cast<double>(w.tokens);
  return 0.010 + 0.0001 * tokens + 0.001 * static_cast<double>(decode.size());
}

// The scenario text served as `rsim run` serves it (a path inside scenarios/ finds the zoo)
ServingTables serve_text(const std::string& yaml, const std::string& where) {
  const rsim::Scenario s = rsim::parse_scenario(yaml, rsim::test::src(where));
  rsim::ScriptSetup setup = rsim::setup_scripts(s);
  rsim::Catalog cat(rsim::test::src("hardware"));
  rsim::RunOptions opt;
  opt.ops = &setup.ops;
  opt.make_evaluator = rsim::make_lua_evaluator;
  return serve_scenario(s, cat, opt);
}

}  // namespace

TEST_CASE("serving: three requests under vLLM scheduling, each TTFT, TPOT and E2E by hand", "[serving]") {
  // A at 0 (100 prompt tokens, 3 out), B at 5 ms (200, 2), C at 50 ms (50, 2); budget 2048.
  //   step 1 at 0:      A's prefill 100                    10 + 10 = 20 ms    → 0.020: A's 1st token
  //   step 2 at 0.020:  A decodes; B (arrived) prefills 200 10 + 20 + 1 = 31 ms → 0.051: A's 2nd, B's 1st
  //   step 3 at 0.051:  A, B decode; C (arrived at 0.050)  10 + 5 + 2 = 17 ms  → 0.068: A's 3rd (done), B's 2nd (done), C's 1st
  //   step 4 at 0.068:  C decodes                          10 + 1 = 11 ms      → 0.079: C done
  // A: TTFT 0.020, TPOT (0.068 − 0.020) / 2 = 0.024, E2E 0.068; B: TTFT 0.046, TPOT 0.017, E2E 0.063;
  // C: TTFT 0.018, TPOT 0.011, E2E 0.029.
  const std::vector<Request> rs = {req(0, 100, 3), req(0.005, 200, 2), req(0.050, 50, 2)};
  EngineConfig cfg;
  const Simulation s = simulate(rs, cfg, linear_cost, true);
  REQUIRE(s.steps.size() == 4);
  CHECK(s.steps[1].prefill.size() == 1);
  CHECK(s.steps[1].decode.size() == 1);
  const double ttft[] = {0.020, 0.046, 0.018}, tpot[] = {0.024, 0.017, 0.011}, e2e[] = {0.068, 0.063, 0.029};
  for (size_t i = 0; i < 3; ++i) {
    INFO("request " << i);
    CHECK(s.requests[i].first_token_s - s.requests[i].arrival_s == Approx(ttft[i]).epsilon(1e-9));
    CHECK(tpot_of(s.requests[i]) == Approx(tpot[i]).epsilon(1e-9));
    CHECK(s.requests[i].finish_s - s.requests[i].arrival_s == Approx(e2e[i]).epsilon(1e-9));
  }
  const Summary m = summarize(s, {});
  CHECK(m.ttft[0] == Approx((0.020 + 0.046 + 0.018) / 3).epsilon(1e-9));
  CHECK(m.duration_s == Approx(0.079).epsilon(1e-9));  // first arrival to last finish
  // ITL pooled: A 0.031, 0.017; B 0.017; C 0.011 → mean 0.076 / 4
  CHECK(m.itl[0] == Approx(0.076 / 4).epsilon(1e-6));
}

TEST_CASE("serving: chunked prefill splits a prompt over iterations within the token budget", "[serving]") {
  // The same requests with max_num_batched_tokens 128:
  //   step 1 at 0:       A's prefill 100                        20 ms          → 0.020: A's 1st
  //   step 2 at 0.020:   A decodes (1), B's first chunk 127     10 + 12.7 + 1  → 0.0437: A's 2nd
  //   step 3 at 0.0437:  A decodes, B's last 73 (C not here)    10 + 7.3 + 1   → 0.062: A done, B's 1st
  //   step 4 at 0.062:   B decodes, C prefills 50               10 + 5 + 1     → 0.078: B done, C's 1st
  //   step 5 at 0.078:   C decodes                              11 ms          → 0.089: C done
  const std::vector<Request> rs = {req(0, 100, 3), req(0.005, 200, 2), req(0.050, 50, 2)};
  EngineConfig cfg;
  cfg.max_num_batched_tokens = 128;
  const Simulation s = simulate(rs, cfg, linear_cost, true);
  REQUIRE(s.steps.size() == 5);
  CHECK(s.steps[1].prefill.at(0).tokens == 127);
  CHECK(s.steps[2].prefill.at(0).tokens == 73);
  CHECK(s.steps[2].prefill.at(0).context == 127);
  CHECK(s.requests[0].finish_s == Approx(0.062).epsilon(1e-9));
  CHECK(s.requests[1].first_token_s == Approx(0.062).epsilon(1e-9));
  CHECK(s.requests[1].finish_s == Approx(0.078).epsilon(1e-9));
  CHECK(s.requests[2].first_token_s - 0.050 == Approx(0.028).epsilon(1e-9));
  CHECK(s.requests[2].finish_s == Approx(0.089).epsilon(1e-9));
  // without chunking, a prompt over the budget can never be scheduled: a note, no times, no hang
  cfg.chunked_prefill = false;
  const Simulation n = simulate(rs, cfg, linear_cost);
  CHECK_FALSE(n.requests[1].done());
  CHECK(n.requests[1].note == "a prompt of 200 tokens, over max_num_batched_tokens 128 without chunked prefill");
  CHECK(n.requests[0].done());
  CHECK(n.requests[2].done());
}

TEST_CASE("serving: a KV cache too small for two requests preempts the later one once", "[serving]") {
  // Two requests at 0, 16 prompt tokens and 40 out each, blocks of 16, 6 blocks, 10 ms a step.
  // Step 1 prefills both (1 block each). Step j ≥ 2 decodes each from 16 + (j − 2) cached tokens,
  // needing ceil((j + 15) / 16) blocks: 3 each from step 18 (6 in all), 4 from step 34, when A's
  // 4th block is not free: B (the later admitted) is preempted, its 3 blocks freed, after 33 of its
  // tokens. A finishes at step 40 (0.40 s); B is admitted again at step 41 and recomputes its 16 + 33
  // = 49 tokens (4 blocks) in one prefill, which gives its 34th token, then decodes to 40 at step 47.
  const std::vector<Request> rs = {req(0, 16, 40), req(0, 16, 40)};
  EngineConfig cfg;
  cfg.kv_blocks = 6;
  const Simulation s = simulate(rs, cfg, [](const std::vector<Work>&, const std::vector<Work>&) { return 0.01; }, true);
  CHECK(s.preemptions == 1);
  CHECK(s.requests[0].preemptions == 0);
  CHECK(s.requests[1].preemptions == 1);
  REQUIRE(s.steps.size() == 47);
  CHECK(s.steps[33].decode.size() == 1);  // step 34: A alone
  CHECK(s.steps[33].kv_blocks_used == 4);
  CHECK(s.steps[40].prefill.at(0).tokens == 49);  // step 41: B's recompute
  CHECK(s.requests[0].finish_s == Approx(0.40).epsilon(1e-9));
  CHECK(s.requests[1].first_token_s == Approx(0.01).epsilon(1e-9));
  CHECK(s.requests[1].finish_s == Approx(0.47).epsilon(1e-9));
}

TEST_CASE("serving: a prefix-cache hit on a shared system prompt saves its prefill tokens", "[serving]") {
  // Two prompts of 40 tokens whose first 32 are the same ids, blocks of 16: A (at 0) computes all
  // 40, and its 2 full blocks of the shared tokens join the cache; B (at 1 s) reads them and
  // prefills its last 8 tokens (the third block is not full: never cached). Cost 10 ms + 0.1 ms a
  // prefill token: A's TTFT 14 ms, B's 10.8 ms; prefix hit rate 32 / 80 = 0.4.
  std::vector<long long> a(40), b(40);
  for (long long i = 0; i < 40; ++i) a[static_cast<size_t>(i)] = i, b[static_cast<size_t>(i)] = i < 32 ? i : 1000 + i;
  Request ra = req(0, 40, 1), rb = req(1.0, 40, 1);
  ra.block_hashes = block_hashes(a, 16), rb.block_hashes = block_hashes(b, 16);
  CHECK(ra.block_hashes.size() == 2);
  CHECK(ra.block_hashes[1] == rb.block_hashes[1]);  // the chain of the same 32 tokens
  EngineConfig cfg;
  cfg.prefix_caching = true;
  cfg.kv_blocks = 100;
  const Simulation s = simulate({ra, rb}, cfg, linear_cost, true);
  CHECK(s.requests[0].cached_tokens == 0);
  CHECK(s.requests[1].cached_tokens == 32);
  CHECK(s.steps.back().prefill.at(0).tokens == 8);
  CHECK(s.requests[0].first_token_s - 0 == Approx(0.014).epsilon(1e-9));
  CHECK(s.requests[1].first_token_s - 1.0 == Approx(0.0108).epsilon(1e-9));
  CHECK(summarize(s, {}).prefix_hit_rate == Approx(0.4).epsilon(1e-12));
  // without prefix caching B computes all 40
  cfg.prefix_caching = false;
  CHECK(simulate({ra, rb}, cfg, linear_cost).requests[1].cached_tokens == 0);
}

TEST_CASE("serving: percentiles interpolate between order statistics (numpy's default)", "[serving]") {
  // [1, 2, 3, 4]: p90 at position 0.9 · 3 = 2.7, between 3 and 4: 3.7; p50 2.5; p99 3.97
  CHECK(percentile({4, 1, 3, 2}, 0.9) == Approx(3.7).epsilon(1e-12));
  CHECK(percentile({4, 1, 3, 2}, 0.5) == Approx(2.5).epsilon(1e-12));
  CHECK(percentile({4, 1, 3, 2}, 0.99) == Approx(3.97).epsilon(1e-12));
  CHECK(percentile({7}, 0.99) == 7);
  CHECK(std::isnan(percentile({}, 0.5)));
}

TEST_CASE("serving: Poisson arrivals keep their rate, a closed loop keeps its concurrency", "[serving]") {
  // 100,000 exponential gaps of mean 0.1 s: the mean rate 10/s within 1 % (the mean gap's standard
  // error is 0.1 / √100000 = 0.03 %)
  Synthetic w;
  w.requests = 100000;
  w.arrivals = {Process::Poisson, 10, 1};
  const auto rs = generate(w, 16);
  const double rate = static_cast<double>(rs.size() - 1) / rs.back().arrival_s;
  CHECK(std::fabs(rate / 10 - 1) < 0.01);
  // the same seed, the same requests
  CHECK(generate(w, 16).back().arrival_s == rs.back().arrival_s);
  // a closed loop of 4 over 20 equal requests: every iteration holds exactly 4 (they run in
  // lockstep: 4 finish together and 4 are sent), and 5 rounds of 1 prefill + 2 decodes
  Synthetic c;
  c.requests = 20, c.concurrency = 4;
  c.prompt = {Lengths::Dist::Fixed, 64, 1, 1, 1LL << 40};
  c.output = {Lengths::Dist::Fixed, 3, 1, 1, 1LL << 40};
  EngineConfig loop;
  loop.concurrency = c.concurrency;
  const Simulation s = simulate(generate(c, 16), loop, linear_cost, true);
  REQUIRE(s.steps.size() == 15);
  for (const Step& st : s.steps) CHECK(st.running + st.waiting == 4);
  CHECK(s.requests[4].arrival_s == Approx(s.requests[0].finish_s).epsilon(1e-12));
}

TEST_CASE("serving: traces in JSONL and CSV, and a bad line located", "[serving][errors]") {
  const std::filesystem::path dir = rsim::test::scratch_dir("serving_trace");
  const std::string j = (dir / "t.jsonl").string();
  std::ofstream(j) << "{\"arrival_time_ns\": 1000000000, \"input_toks\": 40, \"output_toks\": 3, \"input_tok_ids\": [" << [] {
    std::string ids;
    for (int i = 0; i < 40; ++i) ids += (i ? "," : "") + std::to_string(i);
    return ids;
  }() << "]}\n{\"arrival_time_ns\": 1500000000, \"input_toks\": 10, \"output_toks\": 2}\n";
  const auto rs = read_trace(j, 16, SourceLoc{});
  REQUIRE(rs.size() == 2);
  CHECK(rs[0].arrival_s == 0);  // shifted to the first arrival
  CHECK(rs[1].arrival_s == Approx(0.5).epsilon(1e-12));
  CHECK(rs[0].block_hashes.size() == 2);  // 40 ids: 2 full blocks of 16
  const std::string c = (dir / "t.csv").string();
  std::ofstream(c) << "arrival_s,prompt_tokens,output_tokens\n0.0,100,10\n0.25,50,5\n0.1,20,2\n";
  CHECK(rsim::test::error_of([&] { read_trace(c, 16, SourceLoc{}); }).find("t.csv:4:1: error: arrivals must not decrease") != std::string::npos);
  std::ofstream(c) << "arrival_s,prompt_tokens,output_tokens\n0.0,100,0\n";
  CHECK(rsim::test::error_of([&] { read_trace(c, 16, SourceLoc{}); }).find("t.csv:2:1: error: the output's token count is not a whole number from 1 to 1e9") !=
        std::string::npos);
  std::filesystem::remove_all(dir);
}

TEST_CASE("serving: a static batch priced by the engine reproduces today's static request", "[serving][llm]") {
  // B = 4 requests of Llama-3-8B at 0 on an H100, 512 prompt tokens; rsim's `request: {prompt: 512,
  // generate: 16}` runs a prefill of 4 × 512 tokens and 16 decode steps at contexts 512 … 527. The
  // static scheduler with 17 output tokens (the prefill's token and 16 decodes) runs the same
  // iterations: its TTFT is the prefill's and its finish the request's derated time, but for RoPE:
  // a served batch reads the cos/sin rows of each token's position (a ragged batch's sequences sit
  // at different positions), where the uniform batch of 4 reads its 512 positions' rows once.
  // The extra: 64 rope layers × (2,048 − 512) rows × 128 × 2 B = 25,165,824 B at the derated
  // 3.35 TB/s × 0.85 = 8.84 µs in the prefill, less the last-token slice's 3 rows of 4,096 × 2 B
  // (24,576 B) that the one-sequence prefill does not write; a decode-only batch is priced as the
  // decode step it is, with no difference.
  const std::string y =
      "name: s\nplatforms: [h100_sxm]\nnetworks:\n  - {model: llama3_8b, name: r, args: {batch: 4}, request: {prompt: 512, generate: 16}}\n";
  rsim::Scenario s = rsim::parse_scenario(y, rsim::test::src("scenarios/s.yaml"));
  rsim::RunResult r = rsim::test::run(s);
  const rsim::SummaryRow& want = r.results.at(0).summary.at(0);
  const std::string served = "name: s\nplatforms: [h100_sxm]\nnetworks:\n  - {model: llama3_8b, name: r}\n";
  rsim::Scenario base = rsim::parse_scenario(served, rsim::test::src("scenarios/s.yaml"));
  rsim::ScriptSetup setup = rsim::setup_scripts(base);
  rsim::Catalog cat(rsim::test::src("hardware"));
  rsim::RunOptions opt;
  opt.ops = &setup.ops;
  opt.make_evaluator = rsim::make_lua_evaluator;
  rsim::PointEvaluator ev(cat, opt, base.path);
  BatchPricer pricer(ev, base, rsim::Point{}, base.networks.at(0), base.platforms.at(0), "", "");
  std::vector<Request> rs(4, req(0, 512, 17));
  EngineConfig cfg;
  cfg.scheduler = EngineConfig::Scheduler::Static;
  const Simulation sim = simulate(rs, cfg, pricer.step_cost(), true);
  REQUIRE(sim.steps.size() == 17);

  const double bw = 3.35e12 * 0.85;
  CHECK(sim.requests[0].first_token_s - want.derated_ttft_s == Approx((25165824 - 24576) / bw).epsilon(1e-6));
  CHECK(sim.requests[3].finish_s - want.derated_time_s == Approx((25165824 - 24576) / bw).epsilon(1e-6));
  // one GPU's KV bytes per token: 2 · 32 layers · 8 KV heads · 128 · 2 B (bf16)
  CHECK(pricer.kv_bytes_per_token() == 131072);
}

namespace {

// A number after "key": in one JSON line (the test's own reader of the measured file)
double json_number(const std::string& line, const std::string& key) {
  const size_t at = line.find("\"" + key + "\":");
  REQUIRE(at != std::string::npos);
  return std::strtod(line.c_str() + at + key.size() + 3, nullptr);
}

double mean(const std::vector<double>& v) {
  double s = 0;
  for (double x : v) s += x;
  return s / static_cast<double>(v.size());
}

}  // namespace

TEST_CASE("serving: the shared vLLM run on an RTX 4090 replayed: TTFT, TPOT, E2E and running requests", "[serving][llm][external]") {
  // vLLM 0.19 on an RTX 4090, Llama-3.1-8B bf16, 300 ShareGPT requests (tests/data/vllm_rtx4090,
  // measured by others). Replayed with the run's engine config (meta.json: max_num_seqs 256,
  // max_num_batched_tokens 2048, chunked prefill, prefix caching, blocks of 16, its 2,588 KV
  // blocks) on the catalog's rtx4090, the zoo's llama3_8b (Llama-3.1-8B's shapes).
  // The bounds: TPOT mean within 15 %, E2E within 20 %, TTFT within 30 %, the same at p90;
  // the running requests' mean over the run's seconds within 20 %.
  const std::string dir = rsim::test::src("tests/data/vllm_rtx4090");
  std::vector<double> ttft, tpot, e2e;
  {
    std::ifstream in(dir + "/requests.jsonl");
    for (std::string line; std::getline(in, line);) {
      if (line.empty()) continue;
      const double q = json_number(line, "queued_ts"), f = json_number(line, "first_token_ts"), l = json_number(line, "last_token_ts");
      const double out = json_number(line, "output_toks");
      ttft.push_back(f - q), e2e.push_back(l - q);
      if (out > 1) tpot.push_back((l - f) / (out - 1));
    }
  }
  REQUIRE(ttft.size() == 300);
  double measured_running = 0;
  {
    std::ifstream in(dir + "/timeseries.csv");
    std::string line;
    std::getline(in, line);  // t,prompt_throughput,gen_throughput,running,waiting,kv_cache_pct
    std::vector<double> running;
    while (std::getline(in, line)) {
      size_t c = 0;
      for (int k = 0; k < 3; ++k) c = line.find(',', c) + 1;
      running.push_back(std::strtod(line.c_str() + c, nullptr));
    }
    measured_running = mean(running);
  }
  const std::string y = "name: replay\nplatforms: [rtx4090]\nnetworks:\n  - {model: llama3_8b}\nserving:\n  workload: {trace: " + dir +
                        "/sharegpt-llama-3.1-8b-300-sps10.jsonl.gz}\n"
                        "  engine: {max_num_seqs: 256, max_num_batched_tokens: 2048, chunked_prefill: true, block_size: 16, kv_blocks: 2588, prefix_caching: true}\n";
  const ServingTables t = serve_text(y, "scenarios/replay.yaml");
  REQUIRE(t.runs.size() == 1);
  const Summary& m = t.runs[0].summary;
  CHECK(m.finished == 300);
  auto near = [](double got, double want, double tol) {
    INFO("rsim " << got << " measured " << want << " (" << 100 * (got / want - 1) << " %)");
    CHECK(std::fabs(got / want - 1) <= tol);
  };
  near(m.tpot[0], mean(tpot), 0.15);
  near(m.tpot[2], percentile(tpot, 0.9), 0.15);
  near(m.e2e[0], mean(e2e), 0.20);
  near(m.e2e[2], percentile(e2e, 0.9), 0.20);
  near(m.ttft[0], mean(ttft), 0.30);
  near(m.ttft[2], percentile(ttft, 0.9), 0.30);
  double running = 0;
  size_t seconds = 0;
  for (const Sample& x : t.runs[0].sim.timeline)
    if (x.t > 0) running += static_cast<double>(x.running), ++seconds;
  near(running / static_cast<double>(seconds), measured_running, 0.20);
}

TEST_CASE("serving: bad input is a located error before anything is served, every one at once", "[serving][errors]") {
  const std::filesystem::path dir = rsim::test::scratch_dir("serving_bad");
  const std::string f = (dir / "s.yaml").string();
  std::ofstream(f) << "name: s\n"
                      "platforms: [h100_sxm]\n"
                      "networks:\n"
                      "  - {model: llama3_8b, args: {phase: decode}}\n"
                      "  - {model: resnet50}\n"
                      "serving:\n"
                      "  workload: {requests: 10, concurrency: 20, arrivals: {rate: 0}}\n"
                      "  engine: {gpu_memory_utilization: 1.5}\n";
  for (const char* command : {"run", "validate"}) {
    INFO(command);
    std::vector<std::string> args = {command, f};
    if (std::string(command) == "run") args.push_back("--out"), args.push_back((dir / "out").string());
    const rsim::test::CliOut o = rsim::test::cli(args);
    INFO(o.err);
    CHECK(o.code == 1);
    CHECK(o.err.find(f + ":4:38: error: a served network takes no `phase`: serving: forms its batches") != std::string::npos);
    CHECK(o.err.find(f + ":7:41: error: concurrency 20 is above the 10 requests") != std::string::npos);
    CHECK(o.err.find(f + ":7:62: error: rate must be above 0 requests per second") != std::string::npos);
    CHECK(o.err.find(f + ":8:36: error: gpu_memory_utilization must be in (0, 1]") != std::string::npos);
    CHECK_FALSE(std::filesystem::exists(dir / "out"));
  }
  // a network that is not a language model, found when it is priced
  std::ofstream(f) << "name: s\nplatforms: [h100_sxm]\nnetworks:\n  - {model: resnet50}\nserving:\n  workload: {requests: 4, prompt: {mean: 10}, output: {mean: 2}, concurrency: 2}\n";
  const rsim::test::CliOut o = rsim::test::cli({"run", f, "--out", (dir / "out").string()});
  CHECK(o.code == 1);
  CHECK(o.err.find(f + ":4:5: error: this network is not a language model: serving: serves language models") != std::string::npos);
  CHECK(o.err.find("note: model 'resnet50' has no parameter") != std::string::npos);
  std::filesystem::remove_all(dir);
}

TEST_CASE("serving: rsim run writes requests.csv, serving.csv, timeline.csv and results.json's rows, the same with --jobs", "[serving][cli]") {
  // 2 points (rate 2 and 4 /s) × 1 platform × 1 network, 20 requests each: serving.csv has 2 rows,
  // requests.csv 40; results.json's "serving" the same 2 rows; --jobs 2 writes the same bytes
  const std::filesystem::path dir = rsim::test::scratch_dir("serving_cli");
  const std::string f = (dir / "s.yaml").string();
  std::ofstream(f) << "name: s\nplatforms: [h100_sxm]\nnetworks:\n  - {model: llama3_8b}\nsweep: {grid: {rate: [2, 4]}}\n"
                      "serving:\n  workload: {requests: 20, arrivals: {rate: \"${rate}\"}, prompt: {mean: 100}, output: {mean: 10}}\n";
  auto read = [](const std::filesystem::path& p) {
    std::ifstream in(p, std::ios::binary);
    return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  };
  auto lines = [](const std::string& s) { return static_cast<size_t>(std::count(s.begin(), s.end(), '\n')); };
  const rsim::test::CliOut one = rsim::test::cli({"run", f, "--out", (dir / "a").string(), "--quiet"});
  REQUIRE(one.code == 0);
  const rsim::test::CliOut two = rsim::test::cli({"run", f, "--out", (dir / "b").string(), "--quiet", "--jobs", "2"});
  REQUIRE(two.code == 0);
  CHECK(lines(read(dir / "a" / "serving.csv")) == 1 + 2);
  CHECK(lines(read(dir / "a" / "requests.csv")) == 1 + 40);
  CHECK(read(dir / "a" / "timeline.csv").rfind("point,platform,network,t,running,waiting,kv_usage", 0) == 0);
  for (const char* t : {"serving.csv", "requests.csv", "timeline.csv"}) CHECK(read(dir / "a" / t) == read(dir / "b" / t));
  const auto j = nlohmann::json::parse(read(dir / "a" / "results.json"));
  REQUIRE(j.contains("serving"));
  CHECK(j["serving"]["rows"].size() == 2);
  CHECK(j["serving"]["rows"][1]["bindings"]["rate"] == "4");
  CHECK(j["serving"]["rows"][0]["requests"] == 20);
  CHECK(read(dir / "a" / "report.md").find("## Serving under load") != std::string::npos);
  std::filesystem::remove_all(dir);
}

TEST_CASE("serving: two platforms in one scenario are each priced on their own roofs", "[serving]") {
  // the same closed loop on the H100 (3.35 TB/s) and the RTX 4090 (1.008 TB/s): decode steps are
  // memory bound, so the 4090's TPOT is the larger, by at most the bandwidth ratio 3.35 / 1.008 = 3.3
  const std::string y = "name: two\nplatforms: [h100_sxm, rtx4090]\nnetworks:\n  - {model: llama3_8b}\nserving:\n"
                        "  workload: {requests: 16, concurrency: 4, prompt: {mean: 64}, output: {mean: 32}}\n  engine: {kv_blocks: 1000}\n";
  const ServingTables t = serve_text(y, "scenarios/two.yaml");
  REQUIRE(t.runs.size() == 2);
  CHECK(t.runs[0].platform == "h100_sxm");
  CHECK(t.runs[1].platform == "rtx4090");
  const double ratio = t.runs[1].summary.tpot[0] / t.runs[0].summary.tpot[0];
  CHECK(ratio > 1.5);
  CHECK(ratio < 3.35 / 1.008 + 1e-9);
}

TEST_CASE("serving: replicas behind a router, round robin and least loaded, each request's engine and times by hand", "[serving]") {
  // linear_cost: 10 ms a step, 0.1 ms a prefill token, 1 ms a decoding sequence. Two engines.
  // A at 0 (100 prompt, 10 out), B at 1 ms (50, 2), C at 50 ms (50, 2), D at 60 ms (50, 2).
  // Round robin, in arrival order: A, B, C, D → engines 0, 1, 0, 1.
  // Least loaded (unfinished requests, the lower index on a tie): A → 0 (0 vs 0); B → 1 (1 vs 0);
  //   engine 1: B's prefill 1 → 16 ms (10 + 5), decode 16 → 27 ms: done, so at 50 ms C → 1 (1 vs 0):
  //   C's prefill 50 → 65 ms (TTFT 15 ms), decode → 76 ms (E2E 26 ms).
  //   engine 0: A's prefill 0 → 20 ms, then decodes of 11 ms ending 31, 42, 53, 64 ms; D (60 ms) sees
  //   engine 0 with A (1) and engine 1 with C (1): a tie → 0, joining the step at 64 ms: A's decode
  //   and D's prefill 10 + 5 + 1 = 16 ms → 80 ms (D's TTFT 20 ms); A and D decode 12 ms → 92 ms: D
  //   done (E2E 32 ms), A's 7th token; A alone 11 ms × 3 → 125 ms: A done.
  const std::vector<Request> rs = {req(0, 100, 10), req(0.001, 50, 2), req(0.050, 50, 2), req(0.060, 50, 2)};
  EngineConfig cfg;
  Deployment dep;
  dep.replicas = 2;
  dep.router = Deployment::Router::RoundRobin;
  const Simulation rr = simulate(rs, cfg, linear_cost, false, dep);
  const long long rr_engine[] = {0, 1, 0, 1};
  for (size_t i = 0; i < 4; ++i) CHECK(rr.requests[i].replica == rr_engine[i]);
  dep.router = Deployment::Router::LeastLoaded;
  const Simulation ll = simulate(rs, cfg, linear_cost, true, dep);
  const long long ll_engine[] = {0, 1, 1, 0};
  for (size_t i = 0; i < 4; ++i) CHECK(ll.requests[i].replica == ll_engine[i]);
  CHECK(ll.requests[2].first_token_s - 0.050 == Approx(0.015).epsilon(1e-9));
  CHECK(ll.requests[2].finish_s - 0.050 == Approx(0.026).epsilon(1e-9));
  CHECK(ll.requests[3].first_token_s - 0.060 == Approx(0.020).epsilon(1e-9));
  CHECK(ll.requests[3].finish_s - 0.060 == Approx(0.032).epsilon(1e-9));
  CHECK(ll.requests[0].finish_s == Approx(0.125).epsilon(1e-9));
  CHECK(ll.end_s == Approx(0.125).epsilon(1e-9));
  // engine 0's steps: A's prefill, 4 decodes, A + D, A + D, 3 decodes = 10; engine 1's: 2 for B, 2 for C
  CHECK(std::count_if(ll.steps.begin(), ll.steps.end(), [](const Step& s) { return s.engine == 0; }) == 10);
  CHECK(std::count_if(ll.steps.begin(), ll.steps.end(), [](const Step& s) { return s.engine == 1; }) == 4);
  // at 64 ms engine 0 runs A and D while C runs on engine 1 (50 to 76 ms): 3 at once
  CHECK(ll.max_running == 3);
}

TEST_CASE("serving: disaggregated prefill and decode move the KV cache, bytes over bandwidth plus latency", "[serving]") {
  // 1,000 KV bytes a token over 1 MB/s with 1 ms latency: a prompt of 100 tokens moves in
  // 100 × 1000 / 1e6 + 0.001 = 0.101 s, one of 200 in 0.201 s.
  Deployment dep;
  dep.disaggregated = true;
  dep.kv_bytes_per_token = 1000, dep.link_bandwidth_bytes_per_s = 1e6, dep.link_latency_s = 0.001;
  CHECK(dep.transfer_s(100) == Approx(0.101).epsilon(1e-12));
  CHECK(dep.engines() == 2);
  // A at 0 (100 prompt, 3 out), B at 1 ms (200, 2); linear_cost.
  //   prefill engine: A 0 → 20 ms (10 + 10); B 20 → 50 ms (10 + 20): neither samples a token there.
  //   A's KV arrives at 0.020 + 0.101 = 0.121: the decode engine computes its 100th token again after
  //   99 cached (a decode, 11 ms) → first token 0.132, then 0.143, 0.154: done. TTFT 0.132, TPOT 0.011.
  //   B's KV arrives at 0.050 + 0.201 = 0.251 (the decode engine idle since 0.154): 0.262, 0.273.
  const std::vector<Request> rs = {req(0, 100, 3), req(0.001, 200, 2)};
  EngineConfig cfg;
  const Simulation s = simulate(rs, cfg, linear_cost, true, dep);
  CHECK(s.requests[0].kv_transfer_s == Approx(0.101).epsilon(1e-12));
  CHECK(s.requests[1].kv_transfer_s == Approx(0.201).epsilon(1e-12));
  CHECK(s.requests[0].first_token_s == Approx(0.132).epsilon(1e-9));
  CHECK(tpot_of(s.requests[0]) == Approx(0.011).epsilon(1e-9));
  CHECK(s.requests[0].finish_s == Approx(0.154).epsilon(1e-9));
  CHECK(s.requests[1].first_token_s - 0.001 == Approx(0.261).epsilon(1e-9));
  CHECK(s.requests[1].finish_s == Approx(0.273).epsilon(1e-9));
  CHECK(s.requests[0].replica == 0);
  CHECK(s.requests[0].decode_replica == 0);
  REQUIRE(s.steps.size() == 2 + 3 + 2);
  CHECK(s.steps[0].engine == 0);
  CHECK(s.steps[0].prefill.at(0).tokens == 100);
  // the decode engine's first step for A: one token after 99, a decode
  const auto first_decode = std::find_if(s.steps.begin(), s.steps.end(), [](const Step& x) { return x.engine == 1; });
  REQUIRE(first_decode != s.steps.end());
  CHECK(first_decode->prefill.empty());
  CHECK(first_decode->decode.at(0).tokens == 1);
  CHECK(first_decode->decode.at(0).context == 99);
  CHECK(first_decode->start_s == Approx(0.121).epsilon(1e-9));
}

TEST_CASE("serving: a disaggregated deployment in a scenario moves Llama-3-8B's KV cache over the named link", "[serving]") {
  // Llama-3-8B in bf16 keeps 32 layers × 2 (K, V) × 8 KV heads × 128 × 2 B = 131,072 B a token; a
  // prompt of 512 tokens over NVLink 4 (450 GB/s each way, 1 µs: the h100_sxm catalog entry) moves
  // in 512 × 131,072 / 450e9 + 1e-6 = 1.4913e-4 + 1e-6 = 1.5013e-4 s. Two engines of one GPU: 2 GPUs.
  const std::string y = "name: pd\nplatforms: [h100_sxm]\nnetworks:\n  - {model: llama3_8b}\nserving:\n"
                        "  workload: {requests: 8, concurrency: 4, prompt: {mean: 512}, output: {mean: 16}}\n  engine: {kv_blocks: 2000}\n"
                        "  deployment: {disaggregated: {prefill: {replicas: 1}, decode: {replicas: 1}, link: NVLink 4}}\n";
  const ServingTables t = serve_text(y, "scenarios/pd.yaml");
  REQUIRE(t.runs.size() == 1);
  CHECK(t.runs[0].gpus == 2);
  const double expect = 512.0 * 131072.0 / 450e9 + 1e-6;
  for (const Outcome& o : t.runs[0].sim.requests) {
    CHECK(o.kv_transfer_s == Approx(expect).epsilon(1e-9));
    CHECK(o.first_token_s - o.scheduled_s > expect);  // the first token comes after the move
  }
  CHECK(t.requests_csv.find("replica,decode_replica,kv_transfer_s,note") != std::string::npos);
  // a link the platform does not have, and replicas beside disaggregated: located errors
  const std::string bad = "name: pd\nplatforms: [h100_sxm]\nnetworks:\n  - {model: llama3_8b}\nserving:\n"
                          "  workload: {requests: 8, concurrency: 4, prompt: {mean: 512}, output: {mean: 16}}\n  engine: {kv_blocks: 2000}\n"
                          "  deployment: {disaggregated: {link: PCIe 9}}\n";
  const std::string e = rsim::test::error_of([&] { serve_text(bad, "scenarios/pd.yaml"); });
  CHECK(e.find("has no interconnect level 'PCIe 9'") != std::string::npos);
  CHECK(e.find("NVLink 4") != std::string::npos);
  const std::string both = "name: pd\nplatforms: [h100_sxm]\nnetworks:\n  - {model: llama3_8b}\nserving:\n"
                           "  workload: {requests: 8, concurrency: 4, prompt: {mean: 512}, output: {mean: 16}}\n"
                           "  deployment: {replicas: 2, disaggregated: {}}\n";
  CHECK(rsim::test::error_of([&] { serve_text(both, "scenarios/pd.yaml"); }).find("replicas and disaggregated: do not go together") != std::string::npos);
}

TEST_CASE("serving: a deployment without engines or with an unreadable link is a located error", "[serving][errors]") {
  const std::string head = "name: pd\nplatforms: [h100_sxm]\nnetworks:\n  - {model: llama3_8b}\nserving:\n"
                           "  workload: {requests: 8, concurrency: 4, prompt: {mean: 512}, output: {mean: 16}}\n  engine: {kv_blocks: 2000}\n";
  const std::string none = rsim::test::error_of([&] { serve_text(head + "  deployment: {replicas: 0}\n", "scenarios/pd.yaml"); });
  // line 8 is "  deployment: {replicas: 0}": the 0 after 2 + 13 ("deployment: {") + 10 ("replicas: ") = 25 columns
  CHECK(none.find("pd.yaml:8:26: error: replicas must be at least 1") != std::string::npos);
  const std::string pool = rsim::test::error_of([&] { serve_text(head + "  deployment: {disaggregated: {decode: {replicas: 0}}}\n", "scenarios/pd.yaml"); });
  CHECK(pool.find("replicas must be at least 1") != std::string::npos);
  const std::string bw = rsim::test::error_of([&] { serve_text(head + "  deployment: {disaggregated: {bandwidth: fast, latency: -1 us}}\n", "scenarios/pd.yaml"); });
  CHECK(bw.find("bandwidth: ") != std::string::npos);
  CHECK(bw.find("latency: must be 0 or more") != std::string::npos);
}

namespace {

// 10 ms an iteration, 0.1 ms a prefill token, 1 ms a decoding sequence, 1 µs a decode's context token
double context_cost(const std::vector<Work>& prefill, const std::vector<Work>& decode) {
  double tokens = 0, context = 0;
  for (const Work& w : prefill) tokens += static_cast<double>(w.tokens);
  for (const Work& w : decode) context += static_cast<double>(w.context);
  return 0.010 + 0.0001 * tokens + 0.001 * static_cast<double>(decode.size()) + 1e-6 * context;
}

}  // namespace

TEST_CASE("serving: a run of decode-only iterations stepped from its aggregates, by hand and as the slow path", "[serving]") {
  long long aggregate_calls = 0;
  const DecodeCost aggregate = [&](long long n, long long sum, long long) {
    ++aggregate_calls;
    return 0.010 + 0.001 * static_cast<double>(n) + 1e-6 * static_cast<double>(sum);
  };
  // One request, prompt 100, output 5: step 1 prefills (10 + 10 = 20 ms), then 4 decodes at
  // contexts 100, 101, 102, 103: 11.100, 11.101, 11.102, 11.103 ms (the first three a run stepped
  // from the aggregates; the fourth, which ends the request, one by one). Finish 20 + 44.406 ms,
  // TPOT 44.406 / 4 = 11.1015 ms.
  {
    const std::vector<Request> rs = {req(0, 100, 5)};
    EngineConfig cfg;
    const Simulation s = simulate(rs, cfg, context_cost, false, {}, aggregate);
    REQUIRE(s.requests[0].done());
    CHECK(s.requests[0].first_token_s == Approx(0.020).epsilon(1e-12));
    CHECK(s.requests[0].finish_s == Approx(0.064406).epsilon(1e-12));
    CHECK(tpot_of(s.requests[0]) == Approx(0.0111015).epsilon(1e-12));
    CHECK(s.iterations == 5);
    CHECK(aggregate_calls == 3);
    CHECK(s.itl_count() == 4);
  }
  // Against the slow path, bit for bit: open arrivals with a KV cache that preempts, a prefix cache
  // on a shared system prompt, few sequences (requests wait), a closed loop
  for (int variant = 0; variant < 4; ++variant) {
    Synthetic w;
    w.requests = 400;
    w.arrivals = {Process::Poisson, 30, 1};
    w.prompt = {Lengths::Dist::Lognormal, 300, 1, 8, 2000};
    w.output = {Lengths::Dist::Lognormal, 60, 1, 2, 400};
    EngineConfig cfg;
    cfg.max_num_batched_tokens = 512;
    if (variant == 0) cfg.kv_blocks = 600;
    if (variant == 1) w.shared_prefix_tokens = 128, w.shared_prefix_groups = 3, cfg.prefix_caching = true, cfg.kv_blocks = 2000;
    if (variant == 2) cfg.max_num_seqs = 6;
    if (variant == 3) w.concurrency = 12, cfg.concurrency = 12, cfg.kv_blocks = 800;
    const std::vector<Request> rs = generate(w, cfg.prefix_caching ? cfg.block_size : 0);
    aggregate_calls = 0;
    const Simulation slow = simulate(rs, cfg, context_cost);
    const Simulation fast = simulate(rs, cfg, context_cost, false, {}, aggregate);
    INFO("variant " << variant);
    CHECK(aggregate_calls > 0);
    REQUIRE(fast.requests.size() == slow.requests.size());
    size_t same = 0;
    for (size_t i = 0; i < rs.size(); ++i) {
      const Outcome &a = slow.requests[i], &b = fast.requests[i];
      same += a.first_token_s == b.first_token_s && a.finish_s == b.finish_s && a.scheduled_s == b.scheduled_s && a.preemptions == b.preemptions &&
              a.cached_tokens == b.cached_tokens && a.arrival_s == b.arrival_s;
    }
    CHECK(same == rs.size());
    CHECK(fast.iterations == slow.iterations);
    CHECK(fast.preemptions == slow.preemptions);
    CHECK(fast.max_running == slow.max_running);
    CHECK(fast.running_time == slow.running_time);
    CHECK(fast.kv_time == slow.kv_time);
    CHECK(fast.itl_steps == slow.itl_steps);
    CHECK(fast.itl_other_s == slow.itl_other_s);
    REQUIRE(fast.timeline.size() == slow.timeline.size());
    size_t same_seconds = 0;
    for (size_t k = 0; k < fast.timeline.size(); ++k) {
      const Sample &a = slow.timeline[k], &b = fast.timeline[k];
      same_seconds += a.running == b.running && a.waiting == b.waiting && a.kv_usage == b.kv_usage && a.output_tokens == b.output_tokens && a.prompt_tokens == b.prompt_tokens;
    }
    CHECK(same_seconds == fast.timeline.size());
  }
}
