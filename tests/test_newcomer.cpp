// The newcomer's round (the defects a new user hit): each failing case as they met it, then the
// fixed behaviour, derived by hand.
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>

#include "cli_helpers.hpp"
#include "helpers.hpp"

using namespace rsim;

TEST_CASE("newcomer: a short platform name suggests the catalog's long one", "[newcomer]") {
  // "a100" is 9 edits from a100_sxm_80gb: no typo, a short name; the note names the platform
  for (const auto& case_ : std::vector<std::pair<std::string, std::string>>{{"a100", "a100_sxm_80gb"}, {"h100", "h100_sxm"}, {"4090", "rtx4090"}}) {
    const std::string typed = case_.first, meant = case_.second;  // (clang 14 cannot capture a structured binding)
    INFO(typed);
    const std::string msg = test::error_of([&] {
      test::run_text("name: t\nplatforms: [" + typed + "]\nnetworks:\n  - name: n\n    inputs: {a: [4]}\n    layers: [{op: relu, inputs: [a]}]\n");
    });
    CHECK(msg.find("note: did you mean '" + meant + "'?") != std::string::npos);
  }
  // several long names that hold it: up to three listed
  CHECK(did_you_mean("xeon", {"xeon_8480_plus", "xeon_e5_2697v2_2s", "xeon_silver_4210_2s", "epyc_9654"}) ==
        "did you mean one of 'xeon_8480_plus', 'xeon_e5_2697v2_2s', 'xeon_silver_4210_2s'?");
  // a typo is still a typo
  CHECK(did_you_mean("bandwith", {"bandwidth", "latency"}) == "did you mean 'bandwidth'?");
  CHECK(did_you_mean("zz", {"zzz_long"}).empty());  // (too short to pick a name out)
}

TEST_CASE("newcomer: PyTorch's dtype spellings are dtypes", "[newcomer]") {
  for (const auto& [torch, ours] : std::vector<std::pair<std::string, DType>>{{"float16", DType::fp16}, {"bfloat16", DType::bf16}, {"float32", DType::fp32}}) {
    INFO(torch);
    RunResult r = test::run_text("name: t\nsettings: {dtype: " + torch + "}\nplatforms: [h100_sxm]\nnetworks:\n  - name: n\n    inputs: {a: [4]}\n"
                                 "    layers: [{op: relu, inputs: [a]}]\n");
    CHECK(test::summary_of(r, 0, "h100_sxm").dtype == ours);
  }
}

TEST_CASE("newcomer: a tab in YAML indentation is named as a tab, at its line and column", "[newcomer]") {
  // was: "t.yaml:7:6: error: illegal block entry", the caret under the line's start
  CHECK(test::error_of([] {
          parse_yaml("name: t\nplatforms: [rtx3080]\nnetworks:\n  - name: n\n    inputs: {a: [4]}\n    layers:\n    \t- {op: relu}\n", "t.yaml");
        }) == "t.yaml:7:5: error: a tab in the indentation: YAML indents with spaces only\n"
              "    \t- {op: relu}\n"
              "    ^\n"
              "note: replace the tab with spaces (the parser said: illegal block entry)\n");
}

TEST_CASE("newcomer: rsim run of an ONNX file says how to put it in a scenario", "[newcomer]") {
  const std::string f = test::src("tests/data/onnx/resnet18_op13.onnx");
  const test::CliOut o = test::cli({"run", f});
  CHECK(o.code == 1);
  CHECK(o.err.find(f + ": error: an ONNX model, not a scenario: rsim runs a scenario that names it") != std::string::npos);
  CHECK(o.err.find("  networks: [{onnx: " + f + "}]") != std::string::npos);
}

TEST_CASE("newcomer: rsim hw list shows the fastest roof's ridge", "[newcomer]") {
  const test::CliOut o = test::cli({"hw", "list"});
  REQUIRE(o.code == 0);
  // h100_sxm: fp8 (listed before int8 at the same 1,979 TFLOP/s) over 3.35 TB/s = 590.75
  // FLOP/byte; the first listed roof, fp32 at 67 TFLOP/s, gave 20.00
  const size_t at = o.out.find("\nh100_sxm ");
  REQUIRE(at != std::string::npos);
  const std::string row = o.out.substr(at + 1, o.out.find('\n', at + 1) - at - 1);
  CHECK(row.find("590.75 (fp8)") != std::string::npos);
  // rtx3080: int8 238 TOP/s over 760.32 GB/s = 313.03
  const size_t r3 = o.out.find("\nrtx3080 ");
  REQUIRE(r3 != std::string::npos);
  CHECK(o.out.substr(r3, o.out.find('\n', r3 + 1) - r3).find("313.03 (int8)") != std::string::npos);
}

TEST_CASE("newcomer: LLM capacity — KV bytes per token, the largest batch and context that fit", "[newcomer]") {
  // Llama-3-8B in bf16 (its published dtype), a decode step at 4,096 context on an 80 GiB H100:
  //   KV per token: 2 (K, V) · 32 layers · 8 KV heads · 128 · 2 B = 131,072 B (65,536 per GPU at TP 2);
  //   a sequence holds 4,097 tokens (the context and the new one): 4,097 · 131,072 = 537,001,984 B,
  //   and the largest layer's activations, the LM head's: 4,096 · 2 B in + 128,256 · 2 B out = 264,704 B;
  //   weights 8,030,261,248 · 2 B + RoPE's table once (max_position_embeddings 8,192 × 128 × 2 B =
  //   2,097,152 B) = 16,062,619,648 B.
  //   max batch: (85,899,345,920 − 16,062,619,648) / (537,001,984 + 264,704) = 129.985 → 129;
  //   max context at batch 1: (85,899,345,920 − 16,062,619,648 − 264,704) / 131,072 = 532,809.2 →
  //   532,809 tokens in the cache, less the step's new one: 532,808.
  const std::string y =
      "name: cap\nplatforms: [h100_sxm]\nnetworks:\n  - {model: llama3_8b, args: {phase: decode, batch: 1, context: 4096}}\n"
      "  - {model: llama3_8b, name: tp2, parallel: {tensor: 2}, args: {phase: decode, batch: 1, context: 4096}}\n";
  RunResult r = test::run(parse_scenario(y, test::src("scenarios/cap.yaml")));
  const auto rows = test::csv_rows(summary_csv(r, Scenario{}));
  REQUIRE(rows.size() == 3);
  CHECK(8030261248.0 * 2 + 8192 * 128 * 2 == 16062619648.0);
  CHECK(test::cell(rows, 1, "weight_footprint_bytes") == "16062619648");
  CHECK(test::cell(rows, 1, "activation_bytes") == "264704");
  CHECK(test::cell(rows, 1, "kv_bytes_per_token") == "131072");
  CHECK(test::cell(rows, 1, "max_batch_in_memory") == "129");
  CHECK(test::cell(rows, 1, "max_context_in_memory") == "532808");
  CHECK(test::cell(rows, 2, "kv_bytes_per_token") == "65536");
  // a platform of no stated memory size: empty; weights that do not fit: 0
  const std::string small =
      "name: cap\nplatforms:\n  - {base: h100_sxm, name: small, memory: [{name: HBM3, bandwidth: 3.35 TB/s, size: 8 GiB}]}\n"
      "  - {base: h100_sxm, name: unsized, memory: [{name: HBM3, bandwidth: 3.35 TB/s}]}\n"
      "networks:\n  - {model: llama3_8b, args: {phase: decode, batch: 1, context: 4096}}\n";
  const auto s = test::csv_rows(summary_csv(test::run(parse_scenario(small, test::src("scenarios/cap.yaml"))), Scenario{}));
  CHECK(test::cell(s, 1, "max_batch_in_memory") == "0");
  CHECK(test::cell(s, 1, "max_context_in_memory") == "0");
  CHECK(test::cell(s, 2, "max_batch_in_memory").empty());
  // a CNN has no KV cache: empty
  const auto cnn = test::csv_rows(summary_csv(test::run(parse_scenario("name: c\nplatforms: [h100_sxm]\nnetworks: [{model: resnet18}]\n",
                                                                        test::src("scenarios/c.yaml"))), Scenario{}));
  CHECK(test::cell(cnn, 1, "kv_bytes_per_token").empty());
  CHECK(test::cell(cnn, 1, "max_batch_in_memory").empty());
}

TEST_CASE("newcomer: rsim estimate answers for a zoo model, an ONNX file and a config.json as a scenario of each would", "[newcomer][estimate]") {
  // each estimate's derated time is the one `rsim run` gives the same network in a scenario
  struct Case {
    std::vector<std::string> args;
    std::string entry;
  } cases[] = {
      {{"estimate", "resnet18", "--platform", "rtx3080", "--batch", "4"}, "{model: resnet18, args: {batch: 4}}"},
      {{"estimate", test::src("tests/data/onnx/resnet18_op13.onnx"), "--platform", "rtx3080"}, "{onnx: " + test::src("tests/data/onnx/resnet18_op13.onnx") + "}"},
      {{"estimate", test::src("tests/data/hf/llama3_8b.json"), "--platform", "h100_sxm", "--context", "2048"},
       "{model: hf, args: {config: " + test::src("tests/data/hf/llama3_8b.json") + ", phase: decode, batch: 1, context: 2048}}"},
      {{"estimate", "llama3_8b", "--platform", "h100_sxm", "--phase", "prefill", "--seq", "256", "--execution", "graph"},
       "{model: llama3_8b, args: {phase: prefill, seq: 256, context: 0, batch: 1}}"},
  };
  for (const Case& c : cases) {
    INFO(c.entry);
    const test::CliOut o = test::cli(c.args);
    INFO(o.err);
    REQUIRE(o.code == 0);
    const bool graph = c.args.back() == "graph";
    RunResult r = test::run(parse_scenario(std::string("name: e\n") + (graph ? "settings: {execution: graph}\n" : "") + "platforms: [" + c.args[3] +
                                               "]\nnetworks:\n  - " + c.entry + "\n",
                                           test::src("scenarios/e.yaml")));
    const SummaryRow& s = r.results[0].summary[0];
    CHECK(o.out.find("time (derated roofs)") != std::string::npos);
    CHECK(o.out.find(si(s.derated_time_s, "s", 4)) != std::string::npos);
    CHECK(o.out.find(limit_text(s)) != std::string::npos);
    CHECK(o.out.find("per op type") != std::string::npos);
    CHECK(o.out.find("\noverhead ") != std::string::npos);
    CHECK(o.out.find("slowest layers on " + c.args[3]) != std::string::npos);
  }
  // several platforms: one column each, headed by the catalog name
  const test::CliOut two = test::cli({"estimate", "resnet18", "--platform", "h100_sxm", "--platform", "a100_sxm_80gb"});
  REQUIRE(two.code == 0);
  const std::string head = two.out.substr(two.out.find("\n\n") + 2);
  CHECK(head.substr(0, head.find('\n')).find("h100_sxm") != std::string::npos);
  CHECK(head.substr(0, head.find('\n')).find("a100_sxm_80gb") != std::string::npos);
  // bad input: exit 1, a clear error, nothing written
  auto bad = [](std::vector<std::string> a, const std::string& says) {
    INFO(says);
    const test::CliOut o = test::cli(a);
    CHECK(o.code == 1);
    CHECK(o.out.empty());
    CHECK(o.err.find(says) != std::string::npos);
  };
  bad({"estimate", "resnet19", "--platform", "h100_sxm"}, "rsim: error: unknown model 'resnet19': not a zoo model, an .onnx file or a config.json\nrsim: note: did you mean 'resnet18'?");
  bad({"estimate", "resnet18", "--platform", "h100"}, "rsim: error: unknown platform 'h100'\nrsim: note: did you mean 'h100_sxm'?");
  bad({"estimate", "resnet18", "--platform", "h100_sxm", "--phase", "decode"}, "rsim: error: --phase is for a language model's step; 'resnet18' is not one");
  bad({"estimate", "/nonexistent/m.onnx", "--platform", "h100_sxm"}, "rsim: error: cannot read model '/nonexistent/m.onnx': no such file");
  bad({"estimate", test::src("tests/data/hf/README.md") + ".json", "--platform", "h100_sxm"}, "no such file");
  CHECK(test::cli({"estimate", "resnet18"}).code == 2);  // (no --platform: a usage error)
}

TEST_CASE("newcomer: the layers chart shortens exporters' scope names and says what it does not draw", "[newcomer][plots]") {
  // ONNX names repeat each scope's prefix: /features/features.2/features.2.0/block/block.0/block.0.2/Sigmoid
  // keeps the last of each run, /features.2.0/block.0.2/Sigmoid (whole names stay in the plot data)
  const std::string y = "name: lay\nsettings: {dtype: fp16}\nplatforms: [h100_sxm, a100_sxm_80gb]\nnetworks:\n  - {onnx: " +
                        test::src("tests/data/onnx/efficientnet_b0_op13.onnx") + ", name: effnet_b0}\n  - {model: resnet18}\nplots:\n  - {kind: layers}\n";
  Scenario s = parse_scenario(y, test::src("scenarios/lay.yaml"));
  RunResult r = test::run(s);
  Diags d;
  const auto specs = plots::parse_plot_specs(s.plots, sweep_names(s.sweep), d);
  REQUIRE(specs.size() == 1);
  const auto figs = plots::build_figures(specs[0], r, s);
  REQUIRE(figs.size() == 1);
  const auto& cats = figs[0].figure.y.categories;
  CHECK(std::find(cats.begin(), cats.end(), "/features.2.0/block.0.2/Sigmoid") != cats.end());
  for (const auto& c : cats) CHECK(c.size() <= 44);  // (36 characters, a few more for a kept path)
  CHECK(figs[0].data_csv.find("/features/features.2/features.2.0/block/block.0/block.0.2/Sigmoid") != std::string::npos);
  CHECK(figs[0].figure.subtitle.find("not drawn: network resnet18 (network: picks one); platform a100_sxm_80gb (platforms: picks them)") != std::string::npos);
}

TEST_CASE("newcomer: every configuration error of a file at once, across settings, platforms, networks and plots", "[newcomer][errors]") {
  // Failing case first: `rsim run` stopped at the unknown dtype in settings (or, with settings
  // right, at the plot's unknown kind) and hid the unknown platform and model. Now one run and one
  // validate name all four, in file order, each once, and write nothing.
  const std::filesystem::path dir = test::scratch_dir("all_errors");
  const std::string f = (dir / "bad.yaml").string();
  std::ofstream(f) << "name: bad\n"
                      "settings: {dtype: fp17}\n"
                      "platforms: [h100_sxm, a100x]\n"
                      "networks:\n"
                      "  - {model: llama3_8c, args: {phase: decode}}\n"
                      "  - {model: resnet50}\n"
                      "plots:\n"
                      "  - {kind: rooflinex}\n";
  for (const char* command : {"run", "validate"}) {
    INFO(command);
    std::vector<std::string> args = {command, f};
    if (std::string(command) == "run") args.push_back("--out"), args.push_back((dir / "out").string());
    const test::CliOut o = test::cli(args);
    CHECK(o.code == 1);
    const std::vector<std::string> wanted = {f + ":2:19: error: unknown dtype 'fp17'", f + ":3:23: error: unknown platform 'a100x'",
                                             f + ":5:13: error: unknown model 'llama3_8c'", f + ":8:12: error: unknown plot kind 'rooflinex'"};
    size_t at = 0;
    for (const auto& w : wanted) {
      INFO(w << "\n" << o.err);
      const size_t found = o.err.find(w);
      CHECK(found != std::string::npos);
      CHECK(found >= at);  // in file order
      CHECK(o.err.find(w, found + 1) == std::string::npos);  // once
      if (found != std::string::npos) at = found;
    }
    CHECK_FALSE(std::filesystem::exists(dir / "out"));
  }
  std::filesystem::remove_all(dir);
}
