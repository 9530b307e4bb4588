// Scenario loading, sweeps, substitution, error messages and the result tables.
#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <unistd.h>

#include "helpers.hpp"

using namespace rsim;
using namespace rsim::test;

namespace {
const char* kConv = R"(name: t
platforms: [rtx3080]
networks:
  - name: n
    input: [1, 32, 56, 56]
    layers:
      - {name: conv, op: conv2d, out_channels: 32, kernel: 3, padding: same}
)";

std::vector<std::string> values_of(const RunResult& r, const std::string& var) {
  std::vector<std::string> v;
  for (const auto& p : r.points)
    for (const auto& [k, val] : p.bindings)
      if (k == var) v.push_back(val);
  return v;
}
}  // namespace

TEST_CASE("every example scenario loads, validates and runs", "[scenarios]") {
  for (const auto& e : std::filesystem::directory_iterator(src("scenarios"))) {
    if (e.path().extension() != ".yaml") continue;
    INFO(e.path().string());
    RunResult r = run(load_scenario(e.path().string()));
    CHECK_FALSE(r.points.empty());
    for (const auto& pr : r.results) CHECK_FALSE(pr.rows.empty());
  }
}

TEST_CASE("a platform whose roofs change with a swept variable its name lacks is warned of, for figures", "[sweep][plots]") {
  auto warnings = [](const std::string& sweep, const std::string& vars, const std::string& platform) {
    std::string text = "name: w\nsweep: " + sweep + "\n" + vars + "platforms: [" + platform +
                       "]\nnetworks:\n  - name: n\n    input: [1, 8, 4, 4]\n    layers:\n      - {name: r, op: relu}\n";
    return platform_name_warnings(parse_scenario(text, "w.yaml"));
  };
  // `slow` reads f (two values) in its scale, its name does not: one warning, at the name (line 3)
  auto w = warnings("{grid: {f: [1, 2]}}", "", "{base: rtx3080, name: slow, scale: {compute: \"${f}\"}}");
  REQUIRE(w.size() == 1);
  CHECK(w[0].warning);
  CHECK(w[0].loc.line == 3);
  CHECK(w[0].message.find("does not change with 'f'") != std::string::npos);
  CHECK(w[0].notes.at(0).message.find("name: \"slow@${f}\"") != std::string::npos);
  // the name reads f: none
  CHECK(warnings("{grid: {f: [1, 2]}}", "", "{base: rtx3080, name: \"slow@${f}\", scale: {compute: \"${f}\"}}").empty());
  // the name reads a var that reads f: none
  CHECK(warnings("{grid: {f: [1, 2]}}", "vars: {tag: \"x${f}\"}\n", "{base: rtx3080, name: \"slow@${tag}\", scale: {compute: \"${f}\"}}").empty());
  // the scale reads a var that reads f, the name does not: warned of
  CHECK(warnings("{grid: {f: [1, 2]}}", "vars: {k: \"${2 * f}\"}\n", "{base: rtx3080, name: slow, scale: {compute: \"${k}\"}}").size() == 1);
  // zip variables advance together: a name reading a covers b
  CHECK(warnings("{zip: {a: [1, 2], b: [3, 4]}}", "", "{base: rtx3080, name: \"s@${a}\", scale: {compute: \"${b}\"}}").empty());
  // a grid variable of one value changes nothing
  CHECK(warnings("{grid: {f: [2]}}", "", "{base: rtx3080, name: slow, scale: {compute: \"${f}\"}}").empty());
}

TEST_CASE("ranges: linear, geometric and evenly spaced", "[sweep]") {
  std::string base = kConv;
  auto with = [&](const std::string& sweep) { return run_text(base + sweep); };
  CHECK(values_of(with("sweep: {grid: {k: {from: 1, to: 11, step: 2}}}\n"), "k") ==
        std::vector<std::string>{"1", "3", "5", "7", "9", "11"});
  CHECK(values_of(with("sweep: {grid: {c: {from: 16, to: 512, factor: 2}}}\n"), "c") ==
        std::vector<std::string>{"16", "32", "64", "128", "256", "512"});
  CHECK(values_of(with("sweep: {grid: {f: {from: 0.5, to: 1, count: 3}}}\n"), "f") == std::vector<std::string>{"0.5", "0.75", "1"});
}

TEST_CASE("grid is cartesian with the last variable fastest, zip advances together", "[sweep]") {
  RunResult g = run_text(std::string(kConv) + "sweep: {grid: {a: [1, 2], b: [x, y, z]}}\n");
  REQUIRE(g.points.size() == 6);  // 2 × 3
  CHECK(values_of(g, "a") == std::vector<std::string>{"1", "1", "1", "2", "2", "2"});
  CHECK(values_of(g, "b") == std::vector<std::string>{"x", "y", "z", "x", "y", "z"});
  RunResult z = run_text(std::string(kConv) + "sweep: {zip: {k: [1, 3, 5], p: [0, 1, 2]}, grid: {g: [1, 2]}}\n");
  REQUIRE(z.points.size() == 6);  // 3 zipped × 2
  CHECK(values_of(z, "k") == std::vector<std::string>{"1", "1", "3", "3", "5", "5"});
  CHECK(values_of(z, "p") == std::vector<std::string>{"0", "0", "1", "1", "2", "2"});
  CHECK(z.var_names == std::vector<std::string>{"k", "p", "g"});
}

TEST_CASE("the point guard refuses huge sweeps unless raised", "[sweep]") {
  std::string big = std::string(kConv) + "sweep:\n  grid:\n    a: {from: 1, to: 1000, step: 1}\n    b: {from: 1, to: 1001, step: 1}\n";
  CHECK(error_of([&] { run_text(big); }) ==
        "t.yaml:9:3: error: the sweep has 1001000 points, over the limit of 1000000\n"
        "  grid:\n"
        "  ^\n"
        "note: raise it with 'max_points:' under sweep if you mean it\n");
  Scenario s = parse_scenario(big + "  max_points: 2000000\n", "t.yaml");
  CHECK(point_count(s.sweep) == 1000.0 * 1001);
}

TEST_CASE("expressions: arithmetic, min/max, integer division and power", "[sweep]") {
  std::string y = R"(name: t
vars: {c: 16}
sweep: {grid: {s: [56]}}
platforms: [rtx3080]
networks:
  - name: n
    input: [1, "${c * 2}", "${s}", "${s}"]
    layers:
      - {op: conv2d, out_channels: "${max(c, 8) ** 2 // 4}", kernel: "${min(3, 5)}", stride: "${s % 3}", padding: 1}
)";
  RunResult r = run_text(y);
  const Row& row = r.results[0].rows[0];
  // input channels 16·2 = 32; out = 16² // 4 = 64; stride 56 % 3 = 2; H = floor((56 + 2 − 3)/2) + 1 = 28
  CHECK(row.input_shapes == "1x32x56x56");
  CHECK(row.output_shapes == "1x64x28x28");
}

TEST_CASE("overrides: --set changes a var and pins a sweep variable", "[sweep]") {
  Scenario s = parse_scenario(std::string(kConv) + "vars: {x: 1}\nsweep: {grid: {g: [1, 2, 4]}}\n", "t.yaml");
  apply_overrides(s, {{"x", "7"}, {"g", "2"}});
  CHECK(s.vars[0].second.scalar == "7");
  REQUIRE(s.sweep.grid[0].values == std::vector<std::string>{"2"});
  CHECK(error_of([&] { apply_overrides(s, {{"gg", "2"}}); }) ==
        "rsim: error: --set gg=2: the scenario has no variable 'gg'\nrsim: note: did you mean 'g'?\n");
}

TEST_CASE("memory models: weights+outputs leaves the inputs out", "[scenarios]") {
  std::string y = std::string(kConv) + "settings: {memory_model: weights+outputs}\n";
  RunResult wo = run_text(y), iwo = run_text(kConv);
  const Row& row = wo.results[0].rows[0];
  // weights 32·32·9 + bias 32, outputs 32·56·56, fp32
  CHECK(row.bytes == ((32.0 * 32 * 9 + 32) + 32.0 * 56 * 56) * 4);
  const Row& full = iwo.results[0].rows[0];
  CHECK(full.bytes == row.bytes + 32.0 * 56 * 56 * 4);
}

TEST_CASE("flops_per_mac: 1 reports MACs as FLOPs, as the seeds' tools do", "[scenarios]") {
  RunResult r = run_text(std::string(kConv) + "settings: {flops_per_mac: 1}\n");
  const Row& row = r.results[0].rows[0];
  CHECK(row.cost.flops == row.cost.macs);
  CHECK(row.cost.macs == 56.0 * 56 * 32 * 32 * 9);
}

TEST_CASE("roofline time, attainable and bound per layer", "[roofline]") {
  RunResult r = run_text(kConv);
  const Row& row = r.results[0].rows[0];
  double flops = 2 * 56.0 * 56 * 32 * 32 * 9;
  double bytes = (32.0 * 56 * 56 * 2 + 32 * 32 * 9 + 32) * 4;
  // RTX 3080: 29.8 TFLOP/s, 760.32 GB/s
  CHECK(row.theoretical.time_s == Approx(std::max(flops / 29.8e12, bytes / 760.32e9)));
  CHECK(row.theoretical.attainable_flops_per_s == Approx(std::min(29.8e12, 760.32e9 * flops / bytes)));
  CHECK(row.theoretical.bound == (flops / bytes > 29.8e12 / 760.32e9 ? Bound::Compute : Bound::Memory));
}

TEST_CASE("zero FLOPs and zero bytes never give NaN", "[roofline]") {
  RoofPoint none = roofline(0, 0, 1e12, 1e9);
  CHECK(none.intensity == 0);
  CHECK(none.time_s == 0);
  CHECK(none.attainable_flops_per_s == 0);
  CHECK(none.bound == Bound::None);
  RoofPoint copy = roofline(0, 1e6, 1e12, 1e9);  // a copy: 1 MB at 1 GB/s = 1 ms
  CHECK(copy.intensity == 0);
  CHECK(copy.time_s == Approx(1e-3));
  CHECK(copy.bound == Bound::Memory);
  RoofPoint cached = roofline(1e9, 0, 1e12, 1e9);  // all in registers: infinite intensity
  CHECK(std::isinf(cached.intensity));
  CHECK(cached.attainable_flops_per_s == 1e12);
  CHECK(cached.time_s == Approx(1e-3));
  CHECK(cached.bound == Bound::Compute);
}

TEST_CASE("what-if: a platform parameter swept through an inline platform", "[scenarios]") {
  std::string y = R"(name: t
sweep: {grid: {clk: [2.2, 1.5]}}
platforms:
  - base: xeon_silver_4210_2s
    name: "x_${clk}"
    derate: {vector_clock: "${clk} GHz"}
networks:
  - name: n
    input: [1, 32, 56, 56]
    layers:
      - {op: conv2d, out_channels: 32, kernel: 3, padding: same}
)";
  RunResult r = run_text(y);
  // derated peak = 20 cores × clock × 32 FLOP/cycle
  CHECK(r.results[0].rows[0].derated.peak_flops_per_s == Approx(20 * 2.2e9 * 32));
  CHECK(r.results[1].rows[0].derated.peak_flops_per_s == Approx(20 * 1.5e9 * 32));
  CHECK(r.results[1].rows[0].platform == "x_1.5");
}

TEST_CASE("two workers give byte-identical tables", "[scenarios][parallel]") {
  Scenario s = load_scenario(src("scenarios/kernel_size_sweep.yaml"));
  RunResult a = run(s, 1), b = run(s, 2);
  CHECK(results_csv(a, s) == results_csv(b, s));
  CHECK(summary_csv(a, s) == summary_csv(b, s));
}

TEST_CASE("results.csv has the documented header with sweep variables after point", "[output]") {
  Scenario s = load_scenario(src("scenarios/group_conv_sweep.yaml"));
  RunResult r = run(s);
  std::string csv = results_csv(r, s);
  std::string head = csv.substr(0, csv.find('\n'));
  CHECK(head.rfind("point,groups,platform,network,layer,op,dtype,", 0) == 0);
  for (const char* col : {"macs", "flops", "params", "weight_bytes", "input_bytes", "output_bytes", "bytes", "intensity",
                          "peak_flops_per_s", "bandwidth_bytes_per_s", "attainable_flops_per_s", "time_s", "bound",
                          "derated_time_s", "derated_bound"})
    CHECK(("," + head + ",").find("," + std::string(col) + ",") != std::string::npos);
  // 6 points × 2 platforms × 1 layer + header
  CHECK(std::count(csv.begin(), csv.end(), '\n') == 13);
}

// ---- error messages: the whole text, caret included

TEST_CASE("unknown top-level key: location, caret and suggestion", "[errors]") {
  std::string y = std::string(kConv) + "platfroms: [v100]\n";
  CHECK(error_of([&] { parse_scenario(y, "t.yaml"); }) ==
        "t.yaml:8:1: error: unknown key 'platfroms' in scenario\n"
        "platfroms: [v100]\n"
        "^\n"
        "note: did you mean 'platforms'?\n");
}

TEST_CASE("unknown platform and operator are reported with suggestions, all at once", "[errors]") {
  std::string y = R"(name: t
platforms: [rtx308]
networks:
  - name: n
    input: [1, 3, 8, 8]
    layers:
      - {op: conv2, out_channels: 8, kernel: 3}
)";
  CHECK(error_of([&] { run_text(y); }) ==
        "t.yaml:2:13: error: unknown platform 'rtx308'\n"
        "platforms: [rtx308]\n"
        "            ^\n"
        "note: did you mean 'rtx3080'?\n"
        "t.yaml:7:14: error: unknown operator 'conv2'\n"
        "      - {op: conv2, out_channels: 8, kernel: 3}\n"
        "             ^\n"
        "note: did you mean 'conv2d'?\n");
}

TEST_CASE("a shape error names the layer, the problem and the input shapes", "[errors]") {
  std::string y = R"(name: t
sweep: {grid: {g: [3]}}
platforms: [rtx3080]
networks:
  - name: n
    input: [1, 32, 8, 8]
    layers:
      - {name: c, op: conv2d, out_channels: 32, kernel: 3, groups: "${g}"}
)";
  // the value of groups: 6 spaces, "- " 7-8, "{" 9, "name: c, " 10-18, "op: conv2d, " 19-30, "out_channels: 32, " 31-48, "kernel: 3, " 49-59, "groups: " 60-67
  CHECK(error_of([&] { run_text(y); }) ==
        "t.yaml:8:68: error: layer 'c' (conv2d): groups (3) must divide the input channels (32) of 1x32x8x8\n"
        "      - {name: c, op: conv2d, out_channels: 32, kernel: 3, groups: \"${g}\"}\n"
        "                                                                   ^\n"
        "note: input shape: 1x32x8x8\n"
        "note: at sweep point 0: g=3\n");
}

TEST_CASE("an expression error points into the scalar", "[errors]") {
  std::string y = R"(name: t
platforms: [rtx3080]
networks:
  - name: n
    input: [1, 32, 8, 8]
    layers:
      - {op: conv2d, out_channels: "${chans}", kernel: 3}
)";
  CHECK(error_of([&] { run_text(y); }) ==
        "t.yaml:7:37: error: in '${chans}': unknown variable 'chans'\n"
        "      - {op: conv2d, out_channels: \"${chans}\", kernel: 3}\n"
        "                                    ^\n");
}

TEST_CASE("a missing unit in an inline platform", "[errors]") {
  std::string y = R"(name: t
platforms:
  - name: p
    compute: [{name: c, dtypes: [fp32], peak: 10 TFLOP/s}]
    memory: [{name: m, bandwidth: 760}]
networks:
  - {name: n, input: [1, 4], layers: [{op: linear, out_features: 4}]}
)";
  CHECK(error_of([&] { run_text(y); }) ==
        "t.yaml:5:35: error: bandwidth: '760' has no unit; write a bandwidth with its unit, e.g. '760.32 GB/s'\n"
        "    memory: [{name: m, bandwidth: 760}]\n"
        "                                  ^\n");
}

TEST_CASE("a dtype without a roof on the platform is an error, not a silent fallback", "[errors]") {
  std::string y = R"(name: t
settings: {dtype: bf16}
platforms: [rtx3080]
networks:
  - {name: n, input: [1, 4], layers: [{name: fc, op: linear, out_features: 4}]}
)";
  std::string e = error_of([&] { run_text(y); });
  CHECK(e ==
        "t.yaml:5:39: error: platform 'rtx3080' has no compute roof for bf16 (layer 'fc')\n"
        "  - {name: n, input: [1, 4], layers: [{name: fc, op: linear, out_features: 4}]}\n"
        "                                      ^\n"
        "t.yaml:3:13: note: platform used here\n"
        "note: its roofs cover: fp32, fp16, int8\n");
}

TEST_CASE("absurd sizes are errors, not overflows", "[errors]") {
  std::string big = "name: t\nplatforms: [rtx3080]\nnetworks:\n  - {name: n, input: [1, 4, 8, 8], layers: [{op: conv2d, out_channels: 99999999999, kernel: 3}]}\n";
  CHECK(error_of([&] { run_text(big); }) ==
        "t.yaml:4:72: error: layer 'conv2d_1' (conv2d) 'out_channels' is out of range: 99999999999 (at most 1e9 in magnitude)\n"
        "  - {name: n, input: [1, 4, 8, 8], layers: [{op: conv2d, out_channels: 99999999999, kernel: 3}]}\n"
        "                                                                       ^\n");
  std::string dims = "name: t\nplatforms: [rtx3080]\nnetworks:\n  - {name: n, input: [1, 2000000000], layers: [{op: relu}]}\n";
  CHECK(error_of([&] { run_text(dims); }) ==
        "t.yaml:4:26: error: input dimension 2000000000 is too large (at most 1e9)\n"
        "  - {name: n, input: [1, 2000000000], layers: [{op: relu}]}\n"
        "                         ^\n");
  // 1e9 · 1e9 · 1e9 elements merged into one dimension would overflow 64 bits: caught
  std::string flat = "name: t\nplatforms: [rtx3080]\nnetworks:\n  - {name: n, input: [1, 1000000000, 1000000000, 1000], layers: [{op: flatten}]}\n";
  CHECK(error_of([&] { run_text(flat); }) ==
        "t.yaml:4:66: error: layer 'flatten_1' (flatten): flatten: the merged dimension 1e+21 is too large\n"
        "  - {name: n, input: [1, 1000000000, 1000000000, 1000], layers: [{op: flatten}]}\n"
        "                                                                 ^\n"
        "note: input shape: 1x1000000000x1000000000x1000\n");
}

TEST_CASE("settings are read once into their typed value where nothing in them is swept, else at each point", "[scenario][typed]") {
  const std::string net = "networks:\n  - {name: n, input: [1, 8], layers: [{name: fc, op: linear, out_features: 4}]}\n";
  // linear 8 -> 4 on one row: 8 × 4 = 32 MACs, so 32 FLOPs at 1 a MAC and 64 at 2
  auto fc_flops = [](const RunResult& r, size_t point) {
    for (const Row& row : r.results.at(point).rows)
      if (row.layer == "fc") return row.cost.flops;
    return -1.0;
  };
  {  // fixed: read at parse, and the typed value is what every point gets
    Scenario s = parse_scenario("name: t\nplatforms: [rtx3080]\nsettings: {flops_per_mac: 1, dtype: fp16}\nsweep: {grid: {x: [1, 2]}}\n" + net, "t.yaml");
    REQUIRE(s.fixed_settings);
    CHECK(s.fixed_settings->value.flops_per_mac == 1);
    CHECK(s.fixed_settings->value.dtype == DType::fp16);
    RunResult r = run(s);
    REQUIRE(r.results.size() == 2);
    CHECK(fc_flops(r, 0) == 32);
    CHECK(fc_flops(r, 1) == 32);
    CHECK(r.results[1].settings.dtype == DType::fp16);
    // edited in place without fix_settings: the node as it is now wins over the stale typed value
    for (CEntry& e : s.settings.entries)
      if (e.key == "flops_per_mac") e.value.scalar = "2";
    CHECK(fc_flops(run(s), 0) == 64);
    // set_setting reads them again
    set_setting(s, "flops_per_mac", "1");
    REQUIRE(s.fixed_settings);
    CHECK(s.fixed_settings->value.flops_per_mac == 1);
    CHECK(fc_flops(run(s), 0) == 32);
  }
  {  // swept: read at each point after substitution
    Scenario s = parse_scenario("name: t\nplatforms: [rtx3080]\nsettings: {flops_per_mac: '${f}'}\nsweep: {grid: {f: [1, 2]}}\n" + net, "t.yaml");
    CHECK_FALSE(s.fixed_settings);
    RunResult r = run(s);
    REQUIRE(r.results.size() == 2);
    CHECK(fc_flops(r, 0) == 32);
    CHECK(fc_flops(r, 1) == 64);
  }
  {  // a `${…}` only under figures: (read by plots/) leaves the rest fixed
    Scenario s = parse_scenario("name: t\nplatforms: [rtx3080]\nsettings: {flops_per_mac: 1, figures: {title: '${x}'}}\nsweep: {grid: {x: [1]}}\n" + net, "t.yaml");
    CHECK(s.fixed_settings);
  }
  {  // settings with an error are not fixed: the error is the scenario's, at the value: line 3,
     // `settings: {` is 11 columns, `flops_per_mac: ` 15 more, so the 3 is at column 27
    CHECK_THROWS_WITH(parse_scenario("name: t\nplatforms: [rtx3080]\nsettings: {flops_per_mac: 3}\n" + net, "t.yaml"),
                      Catch::Contains("t.yaml:3:27: error: flops_per_mac must be 2"));
  }
}

TEST_CASE("a model use no `${…}` changes is read once per run: its Hugging Face config is not read again at each point", "[scenario][typed]") {
  namespace fs = std::filesystem;
  const fs::path dir = fs::temp_directory_path() / ("rsim_typed_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  const fs::path cfg = dir / "config.json";
  std::ofstream(cfg) << R"({"model_type": "llama", "hidden_size": 256, "intermediate_size": 512, "vocab_size": 1000,
                           "num_hidden_layers": 2, "num_attention_heads": 4, "tie_word_embeddings": false})";
  Scenario s = parse_scenario("name: t\nplatforms: [h100_sxm]\nsweep: {grid: {x: [1, 2, 3]}}\nnetworks:\n  - {model: hf, args: {config: " + cfg.string() +
                                  ", phase: prefill, seq: 4}}\n",
                              (dir / "s.yaml").string());
  ScriptSetup setup = setup_scripts(s);
  Catalog cat(src("hardware"));
  RunOptions opt;
  opt.ops = &setup.ops;
  opt.make_evaluator = make_lua_evaluator;
  opt.model_dirs = {src("scenarios/models")};
  opt.progress = [&](size_t, size_t) { fs::remove(cfg); };  // gone after the first point
  RunResult r = run_scenario(s, cat, opt);
  fs::remove_all(dir);
  REQUIRE(r.results.size() == 3);
  // Llama, hidden 256, FFN 512, vocabulary 1000, 2 layers of 4 heads (as many KV heads), untied:
  // embedding 1000 × 256 = 256,000; a layer's q, k, v, o 4 × 256 × 256 = 262,144, gate, up, down
  // 3 × 256 × 512 = 393,216, two RMSNorms 2 × 256 = 512: 655,872, × 2 = 1,311,744; the final norm
  // 256; the LM head 256 × 1000 = 256,000. In all 1,824,000, at every point.
  for (const PointResult& pr : r.results) {
    REQUIRE(pr.summary.size() == 1);
    CHECK(pr.summary[0].params == 1824000);
  }
}

TEST_CASE("a platform no `${…}` changes is resolved once for the run and shared by its workers", "[scenario][typed]") {
  const std::string y = R"(name: t
platforms:
  - {name: fixed, compute: [{name: c, dtypes: [fp32], peak: 10 TFLOP/s}], memory: [{name: m, bandwidth: 100 GB/s}]}
  - {name: swept, compute: [{name: c, dtypes: [fp32], peak: '${p} TFLOP/s'}], memory: [{name: m, bandwidth: 100 GB/s}]}
sweep: {grid: {p: [1, 2, 3, 4]}}
networks:
  - {name: n, input: [1, 8], layers: [{name: fc, op: linear, out_features: 4}]}
)";
  Scenario s = parse_scenario(y, "t.yaml");
  Catalog cat(src("hardware"));
  PlatformCache cache(cat);
  auto fixed = resolve_fixed_platforms(s, cache);
  REQUIRE(fixed.size() == 1);  // the entry with `${p}` is left to each point
  REQUIRE(fixed.count(&s.platforms[0]) == 1);
  CHECK(fixed.at(&s.platforms[0])->compute.at(0).peak_flops_per_s == Approx(10e12));
  RunResult r = run(s, 2);
  REQUIRE(r.results.size() == 4);
  for (size_t i = 0; i < 4; ++i) {
    REQUIRE(r.results[i].platforms.size() == 2);
    // the one fixed platform, the same object at every point whichever worker evaluated it
    CHECK(r.results[i].platforms[0].get() == r.results[0].platforms[0].get());
    CHECK(r.results[i].platforms[0]->compute.at(0).peak_flops_per_s == Approx(10e12));
    // the swept one read at its point: p = 1, 2, 3, 4 TFLOP/s
    CHECK(r.results[i].platforms[1]->compute.at(0).peak_flops_per_s == Approx((i + 1) * 1e12));
  }
}
