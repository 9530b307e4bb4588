// Answers that say what they are made of: the parts of a network's time (work by bound, overhead,
// exposed communication, a pipeline's bubble), the limit and its share, the assumed share of a
// time and a calibrated platform's error band. Every number is derived by hand below.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>

#include "cli_helpers.hpp"
#include "engine/output/output.hpp"
#include "helpers.hpp"
#include "measure/calibrate.hpp"
#include "plots/charts.hpp"

using namespace rsim;

namespace {

// Three relu kernels of 5, 30 and 2 µs: each moves (in + out) 8 bytes an element of 625, 3,750 and
// 250 fp32 elements: 5,000, 30,000 and 2,000 bytes at 1 GB/s. The compute roof (1 PFLOP/s) is far
// above (625, 3,750, 250 FLOPs: under a nanosecond), so all three are memory-bound.
std::string three(const std::string& execution, const std::string& runtime, const std::string& memory_extra = "", const std::string& extra = "",
                  const std::string& net_extra = "") {
  return "name: t\n"
         "settings: {execution: " + execution + "}\n"
         "platforms:\n"
         "  - name: p\n"
         "    compute: [{name: c, dtypes: [fp32], peak: 1 PFLOP/s}]\n"
         "    memory: [{name: m, bandwidth: 1 GB/s" + memory_extra + "}]\n"
         "    runtime: " + runtime + "\n" + extra +
         "networks:\n"
         "  - name: n\n" + net_extra +
         "    inputs: {a: [625], b: [3750], c: [250]}\n"
         "    layers:\n"
         "      - {name: k0, op: relu, inputs: [a]}\n"
         "      - {name: k1, op: relu, inputs: [b]}\n"
         "      - {name: k2, op: relu, inputs: [c]}\n";
}

const std::string kRuntime = "{launch_overhead: 4 us, graph_gap: 1 us, host_overhead: 10 us, basis: assumption}";

// time = work + overhead + exposed comm + bubble, on both roofs, to 1e-12 relative
void check_sums(const SummaryRow& s) {
  INFO(s.network << " on " << s.platform);
  CHECK(s.parts.total() == Approx(s.time_s).epsilon(1e-12).margin(1e-300));
  CHECK(s.dparts.total() == Approx(s.derated_time_s).epsilon(1e-12).margin(1e-300));
  for (const TimeParts* p : {&s.parts, &s.dparts})
    for (double v : {p->compute, p->memory, p->launch, p->host, p->comm, p->bubble, p->assumed, p->assumed_comm}) {
      CHECK(v >= 0);
      CHECK(std::isfinite(v));
    }
}

}  // namespace

TEST_CASE("breakdown: the three kernels' time in each mode is work plus overhead", "[breakdown]") {
  struct Case {
    const char* mode;
    double overhead, launch, host;  // µs
  } cases[] = {
      {"fused", 12, 12, 0},  // 3 launches × 4
      {"graph", 6, 6, 0},    // one launch of 4 + 2 gaps × 1
      {"eager", 15, 0, 15},  // the waits for the host: 10 before k0, 5 before k1 (it ends at 52: 52 - 37)
      {"ideal", 0, 0, 0},    // nothing
  };
  for (const Case& c : cases) {
    INFO(c.mode);
    RunResult r = test::run_text(three(c.mode, kRuntime));
    const SummaryRow& s = test::summary_of(r, 0, "p");
    // work: 5 + 30 + 2 = 37 µs, every kernel memory-bound
    CHECK(s.parts.work() == Approx(37e-6));
    CHECK(s.parts.memory == Approx(37e-6));
    CHECK(s.parts.compute == 0);
    CHECK(s.parts.overhead() == Approx(c.overhead * 1e-6).margin(1e-15));
    CHECK(s.parts.launch == Approx(c.launch * 1e-6).margin(1e-15));
    CHECK(s.parts.host == Approx(c.host * 1e-6).margin(1e-15));
    CHECK(s.time_s == Approx((37 + c.overhead) * 1e-6));
    check_sums(s);
    // summary.csv: the columns, and time_s their sum
    const auto rows = test::csv_rows(summary_csv(r, Scenario{}));
    const double work = std::stod(test::cell(rows, 1, "work_time_s")), over = std::stod(test::cell(rows, 1, "overhead_time_s"));
    const double comm = std::stod(test::cell(rows, 1, "exposed_comm_time_s")), bubble = std::stod(test::cell(rows, 1, "bubble_time_s"));
    CHECK(work + over + comm + bubble == Approx(std::stod(test::cell(rows, 1, "time_s"))).epsilon(1e-12));
    CHECK(std::stod(test::cell(rows, 1, "derated_work_time_s")) == Approx(37e-6));
    CHECK(std::stod(test::cell(rows, 1, "derated_overhead_time_s")) == Approx(c.overhead * 1e-6).margin(1e-15));
    // the limit: memory, 37 of 37 + overhead
    CHECK(test::cell(rows, 1, "limit") == "memory");
    CHECK(std::stod(test::cell(rows, 1, "limit_share")) == Approx(37 / (37 + c.overhead)));
    // the runtime's figures are assumptions: the overhead is the assumed share
    CHECK(std::stod(test::cell(rows, 1, "assumed_share")) == Approx(c.overhead / (37 + c.overhead)).margin(1e-15));
    CHECK(test::cell(rows, 1, "derated_time_lo_s").empty());  // no calibration: no band
    CHECK(test::cell(rows, 1, "execution") == c.mode);
  }
}

TEST_CASE("breakdown: a launch-bound network names launch as its limit, in words", "[breakdown]") {
  // launches of 100 µs: 3 × 100 = 300 of 337 µs (89 %)
  RunResult r = test::run_text(three("fused", "{launch_overhead: 100 us, basis: {launch_overhead: assumption}}"));
  const SummaryRow& s = test::summary_of(r, 0, "p");
  check_sums(s);
  const auto [limit, share] = time_limit(s.dparts);
  CHECK(std::string(limit) == "launch");
  CHECK(share == Approx(300.0 / 337));
  CHECK(limit_text(s) == "launch 89 %");
  CHECK(limit_sentence(s, r.results[0].settings, r.results[0].platforms[0].get()) ==
        "n on p: 89 % of 337 µs is launch overhead (3 kernels × 100 µs, an assumed figure)");
  // the terminal says so below its table
  const std::string term = terminal_summary(r, 40);
  CHECK(term.find("n on p: 89 % of 337 µs is launch overhead (3 kernels × 100 µs, an assumed figure)\n") != std::string::npos);
  CHECK(term.find("launch 89 %") != std::string::npos);
  // ideal: the same network is memory-bound, 37 µs
  RunResult ideal = test::run_text(three("ideal", "{launch_overhead: 100 us}"));
  const SummaryRow& i = test::summary_of(ideal, 0, "p");
  CHECK(i.time_s == Approx(37e-6));
  CHECK(i.derated_time_s == Approx(37e-6));
  CHECK(std::string(time_limit(i.dparts).first) == "memory");
  CHECK(time_limit(i.dparts).second == Approx(1.0));
  CHECK(limit_sentence(i, ideal.results[0].settings, ideal.results[0].platforms[0].get()).empty());
  // kernels.csv under ideal: no overhead before any kernel
  const auto k = test::csv_rows(kernels_csv(ideal));
  for (size_t j = 1; j < k.size(); ++j) CHECK(std::stod(test::cell(k, j, "launch_overhead_s")) == 0);
}

TEST_CASE("breakdown: execution ideal needs no runtime, and a runtime is no error", "[breakdown]") {
  const std::string none =
      "name: t\nsettings: {execution: ideal}\nplatforms:\n  - {name: p, compute: [{name: c, dtypes: [fp32], peak: 1 PFLOP/s}], memory: [{name: m, bandwidth: 1 GB/s}]}\n"
      "networks:\n  - name: n\n    inputs: {a: [625]}\n    layers:\n      - {name: k0, op: relu, inputs: [a]}\n";
  RunResult r = test::run_text(none);
  CHECK(test::summary_of(r, 0, "p").time_s == Approx(5e-6));
  // the catalog's H100 has a runtime: ideal runs without it all the same
  const std::string h100 = "name: t\nsettings: {execution: ideal}\nplatforms: [h100_sxm]\nnetworks:\n  - name: n\n    inputs: {a: [625]}\n"
                           "    layers:\n      - {name: k0, op: relu, inputs: [a]}\n";
  const RunResult hr = test::run_text(h100);
  const SummaryRow& s = test::summary_of(hr, 0, "h100_sxm");
  CHECK(s.parts.overhead() == 0);
  // 5,000 bytes at 3.35 TB/s
  CHECK(s.time_s == Approx(5000 / 3.35e12));
}

TEST_CASE("breakdown: a pipeline's parts are taken on its slowest stage's GPUs", "[breakdown]") {
  // three stages of one relu each (balanced by FLOPs, none has parameters: 625, 3,750 and 250 of
  // 4,625 put k0, k1, k2 in stages 0, 1, 2), two micro-batches, no tensor sent between them. The
  // network (one micro-batch, fused): 37 µs of work + 3 × 4 µs of launches = 49 µs, shared by the
  // stages as 5 : 30 : 2. The step: the stages' sum plus one more of the slowest, 49 + 49 · 30/37 =
  // 49 · 67/37 µs. On the slowest stage's GPUs: 2 × 30 µs of work, 2 × (30/37) × 12 µs of launches,
  // and the bubble, the rest: 49 · 67/37 - 2 · 49 · 30/37 = 49 · 7/37 µs.
  const std::string ic = "    interconnect: [{name: l, bandwidth: 1 GB/s, latency: 1 us, gpus: 8}]\n";
  RunResult r = test::run_text(three("fused", "{launch_overhead: 4 us}", "", ic, "    parallel: {pipeline: 3, micro_batches: 2}\n"));
  const SummaryRow& s = test::summary_of(r, 0, "p");
  CHECK(s.time_s == Approx(49e-6 * 67 / 37));
  CHECK(s.parts.work() == Approx(60e-6));
  CHECK(s.parts.launch == Approx(2 * 30.0 / 37 * 12e-6));
  CHECK(s.parts.bubble == Approx(49e-6 * 7 / 37));
  CHECK(s.parts.comm == Approx(0).margin(1e-18));
  check_sums(s);
}

TEST_CASE("breakdown: the assumed share counts assumed figures and what an assumed derating adds", "[breakdown]") {
  // the bandwidth a datasheet figure, its achievable fraction 0.5 an assumption: derated memory
  // times double (74 µs), of which 37 come from the fraction; the launches (12 µs) are assumed too
  RunResult r = test::run_text(three("fused", "{launch_overhead: 4 us, basis: assumption}", ", fraction: 0.5, basis: {bandwidth: datasheet, fraction: assumption}"));
  const SummaryRow& s = test::summary_of(r, 0, "p");
  CHECK(s.derated_time_s == Approx(86e-6));
  CHECK(s.dparts.assumed_total() == Approx(49e-6));
  const auto rows = test::csv_rows(summary_csv(r, Scenario{}));
  CHECK(std::stod(test::cell(rows, 1, "assumed_share")) == Approx(49.0 / 86));
  // with the fraction a datasheet figure as well, only the launches: 12 of 86
  RunResult d = test::run_text(three("fused", "{launch_overhead: 4 us, basis: assumption}", ", fraction: 0.5, basis: datasheet"));
  CHECK(test::summary_of(d, 0, "p").dparts.assumed_total() == Approx(12e-6));
  // an unstated basis is not an assumption
  RunResult u = test::run_text(three("fused", "{launch_overhead: 4 us}"));
  CHECK(test::summary_of(u, 0, "p").dparts.assumed_total() == 0);
}

TEST_CASE("breakdown: a calibrated class's error band spans its layers' derated times", "[breakdown]") {
  // relu's rule: efficiency 1 (compute [1, 0], bandwidth [1, 0]) and held-out errors from 0.8 to
  // 1.3 × at the 10th and 90th percentile: 49 µs (37 of work + 12 of launches) becomes
  // 49 - 0.2 · 37 = 41.6 µs to 49 + 0.3 · 37 = 60.1 µs (the launches carry no band)
  const std::string rule =
      "    calibration: [{class: elementwise, ops: [relu], compute: [1, 0], bandwidth: [1, 0], error_band: [0.8, 1.3]}]\n";
  RunResult r = test::run_text(three("fused", "{launch_overhead: 4 us}", "", rule));
  const SummaryRow& s = test::summary_of(r, 0, "p");
  CHECK(s.banded);
  CHECK(s.derated_time_s + s.dparts.lo == Approx(41.6e-6));
  CHECK(s.derated_time_s + s.dparts.hi == Approx(60.1e-6));
  const auto rows = test::csv_rows(summary_csv(r, Scenario{}));
  CHECK(std::stod(test::cell(rows, 1, "derated_time_lo_s")) == Approx(41.6e-6));
  CHECK(std::stod(test::cell(rows, 1, "derated_time_hi_s")) == Approx(60.1e-6));
  CHECK(terminal_summary(r, 40).find("49 µs (42 µs–60 µs)") != std::string::npos);
  // a band the wrong way round is a located error
  const std::string bad = "    calibration: [{class: elementwise, ops: [relu], compute: [1, 0], bandwidth: [1, 0], error_band: [1.3, 0.8]}]\n";
  CHECK(test::error_of([&] { test::run_text(three("fused", "{launch_overhead: 4 us}", "", bad)); })
            .find("error: error_band must be [lo, hi] with 0 < lo <= hi <= 1000") != std::string::npos);
}

TEST_CASE("breakdown: an unknown basis is a located error with the list", "[breakdown]") {
  CHECK(test::error_of([] { test::run_text(three("fused", "{launch_overhead: 4 us, basis: guess}")); }) ==
        "t.yaml:7:45: error: unknown basis 'guess'\n"
        "    runtime: {launch_overhead: 4 us, basis: guess}\n"
        "                                            ^\n"
        "note: choose datasheet, assumption, measured, calibrated or carried\n");
  CHECK(test::error_of([] { test::run_text(three("fused", "{launch_overhead: 4 us, basis: {launch_overhed: assumption}}")); }).find(
            "error: basis names 'launch_overhed', which is not a figure of runtime") != std::string::npos);
  CHECK(test::error_of([] { test::run_text(three("fused", "{launch_overhead: 4 us, basis: asumption}")); }).find("note: did you mean 'assumption'?") !=
        std::string::npos);
}

TEST_CASE("breakdown: a network of views only has no limit and no NaN", "[breakdown]") {
  const std::string views =
      "name: t\nplatforms:\n  - {name: p, compute: [{name: c, dtypes: [fp32], peak: 1 PFLOP/s}], memory: [{name: m, bandwidth: 1 GB/s}], runtime: {launch_overhead: 4 us}}\n"
      "networks:\n  - name: n\n    inputs: {a: [4, 8]}\n    layers:\n      - {name: r, op: reshape, shape: [32], inputs: [a]}\n";
  RunResult r = test::run_text(views);
  const SummaryRow& s = test::summary_of(r, 0, "p");
  CHECK(s.kernels == 0);
  CHECK(s.time_s == 0);
  check_sums(s);
  const auto rows = test::csv_rows(summary_csv(r, Scenario{}));
  CHECK(test::cell(rows, 1, "limit").empty());
  CHECK(std::stod(test::cell(rows, 1, "limit_share")) == 0);
  CHECK(std::stod(test::cell(rows, 1, "assumed_share")) == 0);
}

TEST_CASE("breakdown: every example scenario's networks add up, in every mode and kind", "[breakdown]") {
  // CNNs, LLM phases, requests (static and continuous), tensor / pipeline / expert parallelism and
  // overlap: full are among the examples; each row's parts add up to its times
  size_t rows = 0;
  for (const auto& e : std::filesystem::directory_iterator(test::src("scenarios"))) {
    if (e.path().extension() != ".yaml") continue;
    INFO(e.path().filename().string());
    RunResult r = test::run(load_scenario(e.path().string()), 1, false);
    for (const auto& pr : r.results)
      for (const SummaryRow& s : pr.summary) check_sums(s), ++rows;
  }
  CHECK(rows > 100);
  // and in graph, eager and ideal on the LLM parallelism examples
  for (const char* mode : {"graph", "eager", "ideal"}) {
    INFO(mode);
    Scenario s = load_scenario(test::src("scenarios/llm_parallel.yaml"));
    if (!s.settings.is_map()) s.settings.kind = CNode::Kind::Map;
    auto& es = s.settings.entries;
    es.erase(std::remove_if(es.begin(), es.end(), [](const CEntry& x) { return x.key == "execution"; }), es.end());
    es.push_back(CEntry{"execution", {}, CNode::make_scalar(mode)});
    RunResult r = test::run(s, 1, false);
    for (const auto& pr : r.results)
      for (const SummaryRow& sm : pr.summary) check_sums(sm);
  }
}

TEST_CASE("breakdown: EfficientNet-B0 on the H100 is 97 % launches, and the terminal, tables and report say the 5 µs is assumed", "[breakdown]") {
  // torchvision's EfficientNet-B0 (tests/data/onnx, scripts/make_onnx_models.py) in fp16: 189
  // kernels × 5 µs = 945 µs of assumed launches; its work at fp16 on 3.35 TB/s × 0.85 is ~30 µs
  namespace fs = std::filesystem;
  const fs::path dir = test::scratch_dir("effnet");
  const fs::path scen = dir / "effnet.yaml";
  std::ofstream(scen) << "name: effnet\nsettings: {dtype: fp16}\nplatforms: [h100_sxm]\nnetworks:\n  - {onnx: " << test::src("tests/data/onnx/efficientnet_b0_op13.onnx")
                      << ", name: effnet_b0}\n";
  const test::CliOut o = test::cli({"run", scen.string(), "--out", (dir / "out").string()});
  INFO(o.err);
  REQUIRE(o.code == 0);
  CHECK(o.out.find("effnet_b0 on h100_sxm: 97 % of ") != std::string::npos);
  CHECK(o.out.find("is launch overhead (189 kernels × 5 µs, an assumed figure)") != std::string::npos);
  auto read = [](const fs::path& p) {
    std::ifstream f(p);
    return std::string(std::istreambuf_iterator<char>(f), {});
  };
  const auto rows = test::csv_rows(read(dir / "out" / "summary.csv"));
  CHECK(test::cell(rows, 1, "limit") == "launch");
  const double share = std::stod(test::cell(rows, 1, "limit_share"));
  CHECK(share >= 0.965);
  CHECK(share < 0.975);
  // the overhead: 189 × 5 µs exactly
  CHECK(std::stod(test::cell(rows, 1, "derated_overhead_time_s")) == Approx(189 * 5e-6));
  CHECK(std::stod(test::cell(rows, 1, "assumed_share")) >= share);
  const std::string json = read(dir / "out" / "results.json");
  CHECK(json.find("\"limit\":\"launch\"") != std::string::npos);
  CHECK(json.find("\"derated_overhead_time_s\":") != std::string::npos);
  const std::string md = read(dir / "out" / "report.md");
  CHECK(md.find("effnet_b0 on h100_sxm: 97 % of ") != std::string::npos);
  CHECK(md.find("launch overhead 5 µs") != std::string::npos);
  CHECK(md.find("assumption") != std::string::npos);
  CHECK(md.find("summed over the network") == std::string::npos);  // the old sentence that hid the launches
  fs::remove_all(dir);
}

TEST_CASE("breakdown: calibrate's error band of a class is the 10th and 90th percentile of its held-out ratios", "[breakdown][calibrate]") {
  // ten held-out relu layers (class elementwise) measured at 0.5, 0.6, …, 1.4 × their prediction:
  // sorted, the 10th percentile sits at 0.1 · 9 = 0.9 between the first two, 0.5 + 0.9 · 0.1 = 0.59;
  // the 90th at 0.9 · 9 = 8.1, 1.3 + 0.1 · 0.1 = 1.31. Four conv2d layers are too few for a band.
  measure::CrossValidation cv;
  for (int i = 9; i >= 0; --i) cv.predictions.push_back({"n", "relu", 1, (0.5 + 0.1 * i) * 2e-6, 1e-6, 2e-6, false});
  for (int i = 0; i < 4; ++i) cv.predictions.push_back({"n", "conv2d", 1, 1e-6, 1e-6, 1e-6, false});
  std::vector<CalibrationRule> rules(2);
  rules[0].name = "elementwise", rules[1].name = "conv";
  rules[0].ops = {"relu"}, rules[1].ops = {"conv2d"};
  measure::set_error_bands(rules, cv);
  REQUIRE(rules[0].has_error_band());
  CHECK(rules[0].error_lo == Approx(0.59));
  CHECK(rules[0].error_hi == Approx(1.31));
  CHECK_FALSE(rules[1].has_error_band());
  // written into the calibrated platform and read back
  const std::string yaml = measure::calibrated_platform_yaml(
      "name: p\ncompute: [{name: c, dtypes: [fp32], peak: 1 TFLOP/s}]\nmemory: [{name: m, bandwidth: 1 GB/s}]\n", "p_cal", rules, "a test", {}, nullptr, "", {});
  CHECK(yaml.find("error_band: [0.59, 1.31]") != std::string::npos);
  Diags d;
  Platform p = build_platform(parse_yaml(yaml, "p_cal.yaml"), nullptr, d);
  REQUIRE(d.empty());
  REQUIRE(p.calibration_for("relu"));
  CHECK(p.calibration_for("relu")->error_lo == Approx(0.59));
}

TEST_CASE("dtype: zoo LLMs run in their published dtype, and every label names the dtype the layers ran in", "[breakdown][dtype]") {
  // Llama-3-8B's config.json gives torch_dtype bfloat16: with no settings.dtype its layers are bf16
  // (the zoo file declares it), and settings.dtype still wins
  const std::string decode = "name: z\nplatforms: [h100_sxm]\nnetworks:\n  - {model: llama3_8b, args: {phase: decode, batch: 1, context: 1024}}\n";
  // (a scenario in scenarios/ finds the zoo in scenarios/models)
  auto zoo = [](const std::string& y) { return test::run(parse_scenario(y, test::src("scenarios/z.yaml"))); };
  RunResult r = zoo(decode);
  const SummaryRow& s = test::summary_of(r, 0, "h100_sxm");
  CHECK(s.dtype == DType::bf16);
  CHECK(s.dtype_from_file);
  // bf16 weights: 8,030,261,248 parameters × 2 bytes = 16,060,522,496 B held (with the rotary
  // tables, a few MB more: within 0.1 %); fp32 would hold twice that
  CHECK(s.weight_footprint_bytes == Approx(8030261248.0 * 2).epsilon(1e-3));
  RunResult f = zoo("name: z\nsettings: {dtype: fp32}\nplatforms: [h100_sxm]\nnetworks:\n  - {model: llama3_8b, args: {phase: decode, batch: 1, context: 1024}}\n");
  CHECK(test::summary_of(f, 0, "h100_sxm").dtype == DType::fp32);
  CHECK_FALSE(test::summary_of(f, 0, "h100_sxm").dtype_from_file);
  // Llama-2-7B's is float16
  RunResult l2 = zoo("name: z\nplatforms: [h100_sxm]\nnetworks:\n  - {model: llama2_7b, args: {phase: decode, batch: 1, context: 16}}\n");
  CHECK(test::summary_of(l2, 0, "h100_sxm").dtype == DType::fp16);
  // a platform without the published dtype's roof: the error says how to run it in another
  const std::string msg = test::error_of([&] {
    zoo("name: z\nplatforms: [rtx3080]\nnetworks:\n  - {model: llama3_8b, args: {phase: decode, batch: 1, context: 16}}\n");
  });
  CHECK(msg.find("error: platform 'rtx3080' has no compute roof for bf16") != std::string::npos);
  CHECK(msg.find("note: network 'llama3_8b' runs in its model's published dtype, bf16, as no settings.dtype or network dtype says otherwise: give one "
                 "this platform has, e.g. settings: {dtype: fp16}") != std::string::npos);
  // the labels of a bf16 run: the banner, report.md, the trend's and the layers chart's subtitles
  namespace fs = std::filesystem;
  const fs::path dir = test::scratch_dir("dtype_labels");
  std::ofstream(dir / "z.yaml") << "name: z\nsweep: {grid: {b: [1, 4]}}\nplatforms: [h100_sxm]\nnetworks:\n"
                                   "  - {model: llama3_8b, args: {phase: decode, batch: \"${b}\", context: 1024}}\n"
                                   "plots:\n  - {kind: trend, x: b, y: time_s}\n  - {kind: layers, network: llama3_8b}\n";
  const test::CliOut o = test::cli({"run", (dir / "z.yaml").string(), "--out", (dir / "out").string(), "--rows", "0"});
  INFO(o.err);
  REQUIRE(o.code == 0);
  CHECK(o.out.find("z: 2 points × 1 platform; FLOPs = 2×MAC, bytes = inputs+weights+outputs, bf16") == 0);
  std::ifstream md(dir / "out" / "report.md");
  const std::string report((std::istreambuf_iterator<char>(md)), {});
  CHECK(report.find("element type bf16") != std::string::npos);
  CHECK(report.find("element type fp32") == std::string::npos);
  std::ifstream zf(dir / "z.yaml");
  Scenario sc = parse_scenario(std::string((std::istreambuf_iterator<char>(zf)), {}), test::src("scenarios/z.yaml"));
  RunResult rr = test::run(sc);
  Diags d;
  for (const auto& spec : plots::parse_plot_specs(sc.plots, sweep_names(sc.sweep), d))
    for (const auto& b : plots::build_figures(spec, rr, sc)) {
      INFO(b.name << ": " << b.figure.subtitle);
      CHECK(b.figure.subtitle.find("bf16") != std::string::npos);
      CHECK(b.figure.subtitle.find("fp32") == std::string::npos);
    }
  // two networks of two dtypes: "mixed (bf16, fp16)"
  RunResult mixed = zoo("name: z\nplatforms: [h100_sxm]\nnetworks:\n  - {model: llama3_8b, args: {phase: decode, batch: 1, context: 16}}\n"
                                   "  - {model: llama2_7b, args: {phase: decode, batch: 1, context: 16}}\n");
  CHECK(run_dtype_label(mixed) == "mixed (bf16, fp16)");
  fs::remove_all(dir);
}

TEST_CASE("breakdown: execution ideal overrides a request's own execution modes, and says so", "[breakdown]") {
  const std::string y =
      "name: q\nsettings: {execution: ideal}\nplatforms: [h100_sxm]\nnetworks:\n"
      "  - {model: transformer, args: {hidden: 64, layers: 2, heads: 4, intermediate: 128, vocab: 100},\n"
      "     request: {prompt: 8, generate: 4, prefill_execution: eager, decode_execution: graph}}\n";
  Scenario s = parse_scenario(y, test::src("scenarios/q.yaml"));
  REQUIRE(s.load_warnings.size() == 2);
  CHECK(format_diagnostic(s.load_warnings[0]).find(
            "scenarios/q.yaml:6:59: warning: settings.execution: ideal overrides this prefill_execution ('eager'): every kernel runs at its roofline time, with no overhead") !=
        std::string::npos);
  CHECK(format_diagnostic(s.load_warnings[1]).find("warning: settings.execution: ideal overrides this decode_execution ('graph')") != std::string::npos);
  // the request: its prefill and its four decode steps, every one without overhead
  RunResult r = test::run(s, 1, false);
  const SummaryRow& q = test::summary_of(r, 0, "h100_sxm");
  CHECK(q.phase == "request");
  CHECK(q.parts.overhead() == 0);
  CHECK(q.dparts.overhead() == 0);
  check_sums(q);
}

TEST_CASE("ops.csv: a row per op type with its share, and the overhead a row of its own", "[breakdown][ops]") {
  // the three relus (fused, 4 µs launches): one op type, 3 layers in 3 kernels, 625 + 3,750 + 250
  // = 4,625 FLOPs, 5,000 + 30,000 + 2,000 = 37,000 bytes, 37 µs of 49 µs; then the overhead,
  // 3 × 4 = 12 µs of 49
  RunResult r = test::run_text(three("fused", kRuntime));
  const auto rows = test::csv_rows(ops_csv(r));
  REQUIRE(rows.size() == 3);
  CHECK(rows[0] == std::vector<std::string>{"point", "platform", "network", "op", "layers", "kernels", "flops", "bytes", "time_s", "derated_time_s", "share"});
  CHECK(test::cell(rows, 1, "op") == "relu");
  CHECK(test::cell(rows, 1, "layers") == "3");
  CHECK(test::cell(rows, 1, "kernels") == "3");
  CHECK(test::cell(rows, 1, "flops") == "4625");
  CHECK(test::cell(rows, 1, "bytes") == "37000");
  CHECK(std::stod(test::cell(rows, 1, "derated_time_s")) == Approx(37e-6));
  CHECK(std::stod(test::cell(rows, 1, "share")) == Approx(37.0 / 49));
  CHECK(test::cell(rows, 2, "op") == "overhead");
  CHECK(std::stod(test::cell(rows, 2, "derated_time_s")) == Approx(12e-6));
  CHECK(std::stod(test::cell(rows, 2, "share")) == Approx(12.0 / 49));
  // rsim run writes it beside the other tables, and report.md points at it
  namespace fs = std::filesystem;
  const fs::path dir = test::scratch_dir("ops_csv");
  std::ofstream(dir / "t.yaml") << three("fused", kRuntime);
  const test::CliOut o = test::cli({"run", (dir / "t.yaml").string(), "--out", (dir / "out").string()});
  REQUIRE(o.code == 0);
  std::ifstream f(dir / "out" / "ops.csv");
  CHECK(std::string((std::istreambuf_iterator<char>(f)), {}) == ops_csv(r));
  std::ifstream md(dir / "out" / "report.md");
  const std::string report((std::istreambuf_iterator<char>(md)), {});
  CHECK(report.find("| p | n | relu 75.5 % · overhead 24.5 % |") != std::string::npos);  // 37 / 49, 12 / 49
  fs::remove_all(dir);
}

TEST_CASE("basis: every figure of every catalog platform says what it rests on", "[breakdown][platforms]") {
  Catalog cat(test::src("hardware"));
  PlatformCache cache(cat);
  size_t figures = 0;
  auto stated = [&](Basis b) {
    CHECK(b != Basis::Unstated);
    ++figures;
  };
  for (const auto& name : cat.names()) {
    INFO(name);
    Diags d;
    const Platform p = resolve_platform(CNode::make_scalar(name), cache, d);
    REQUIRE(d.empty());
    for (const auto& r : p.compute) {
      INFO(r.name);
      stated(r.basis);
      if (r.derated_flops_per_s != r.peak_flops_per_s) stated(r.derate_basis);
    }
    for (const auto& m : p.memory) {
      INFO(m.name);
      stated(m.basis);
      if (m.derated_bandwidth_bytes_per_s != m.bandwidth_bytes_per_s) stated(m.derate_basis);
      if (m.size_bytes > 0) stated(m.size_basis);
    }
    for (const auto& l : p.interconnect) stated(l.basis), stated(l.latency_basis);
    if (p.runtime.launch_overhead_s > 0) stated(p.runtime.launch_basis);
    if (p.runtime.has_graph_gap()) stated(p.runtime.gap_basis);
    if (p.runtime.has_host_overhead()) stated(p.runtime.host_basis);
  }
  CHECK(figures > 150);
  // the catalog's launch overhead is an assumption on every GPU that states one (hardware/README.md)
  Diags d;
  CHECK(resolve_platform(CNode::make_scalar("h100_sxm"), cache, d).runtime.launch_basis == Basis::Assumption);
  CHECK(resolve_platform(CNode::make_scalar("h200"), cache, d).runtime.gap_basis == Basis::Measured);
}
