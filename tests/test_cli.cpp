// The command line: exit codes, suggestions, and what each command prints.
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "app/cli.hpp"
#include "cli_helpers.hpp"
#include "helpers.hpp"

using namespace rsim;
using namespace rsim::test;
namespace fs = std::filesystem;

TEST_CASE("unknown commands and options are usage errors with a suggestion", "[cli]") {
  CliOut r = cli({"rn", "x.yaml"});
  CHECK(r.code == 2);
  CHECK(r.err == "rsim: error: unknown command 'rn'\nrsim: note: did you mean 'run'?\nrsim: note: see `rsim --help`\n");
  CliOut o = cli({"run", "x.yaml", "--jbos", "2"});
  CHECK(o.code == 2);
  CHECK(o.err.find("rsim: error: unknown option '--jbos'\nrsim: note: did you mean '--jobs'?\n") == 0);
  CHECK(cli({}).code == 2);
  CHECK(cli({"run"}).code == 2);
}

TEST_CASE("rsim --help and --version exit 0", "[cli]") {
  CliOut h = cli({"--help"});
  CHECK(h.code == 0);
  CHECK(h.out.find("run ") != std::string::npos);
  CliOut v = cli({"--version"});
  CHECK(v.code == 0);
  CHECK(v.out == std::string("rsim ") + RSIM_VERSION + "\n");
  CHECK(cli({"run", "--help"}).code == 0);
}

TEST_CASE("hw show prints roofs, derivations and ridge points", "[cli]") {
  CliOut r = cli({"hw", "show", "rtx3080", "--hw-dir", src("hardware")});
  REQUIRE(r.code == 0);
  CHECK(r.out.find("29.8 TFLOP/s") != std::string::npos);
  CHECK(r.out.find("760.32 GB/s") != std::string::npos);
  CHECK(r.out.find("39.19") != std::string::npos);  // 29.8e12 / 760.32e9 = 39.194...
  CliOut bad = cli({"hw", "show", "rtx308", "--hw-dir", src("hardware")});
  CHECK(bad.code == 1);
  CHECK(bad.err == "rsim: error: unknown platform 'rtx308'\nrsim: note: did you mean 'rtx3080'?\n");
  CliOut list = cli({"hw", "list", "--hw-dir", src("hardware")});
  CHECK(list.code == 0);
  CHECK(list.out.find("xeon_silver_4210_2s") != std::string::npos);
}

TEST_CASE("ops lists operators and shows one formula", "[cli]") {
  CliOut all = cli({"ops"});
  CHECK(all.code == 0);
  CHECK(all.out.find("conv_transpose2d") != std::string::npos);
  CliOut conv = cli({"ops", "conv2d"});
  CHECK(conv.code == 0);
  CHECK(conv.out.find("MACs   = N · Cout · Hout · Wout · (Cin/groups) · kh · kw") != std::string::npos);
  CliOut fc = cli({"ops", "fc"});  // an alias shows its target
  CHECK(fc.out.rfind("linear", 0) == 0);
  CliOut bad = cli({"ops", "conv3d"});
  CHECK(bad.code == 1);
  CHECK(bad.err == "rsim: error: unknown operator 'conv3d'\nrsim: note: did you mean 'conv2d'?\n");
}

TEST_CASE("run writes the three tables into --out", "[cli]") {
  fs::path dir = scratch_dir("run", false);
  CliOut r = cli({"run", src("scenarios/group_conv_sweep.yaml"), "--out", dir.string(), "--hw-dir", src("hardware"), "-q"});
  REQUIRE(r.code == 0);
  CHECK(r.out.empty());
  // 6 values of groups × 2 platforms × 1 layer: 12 rows in each table, after the header
  for (const char* f : {"results.csv", "summary.csv"}) {
    std::ifstream in(dir / f);
    std::string line;
    int lines = 0;
    while (std::getline(in, line)) ++lines;
    CHECK(lines == 1 + 12);
  }
  std::ifstream jf(dir / "results.json");
  nlohmann::json j = nlohmann::json::parse(jf);  // a real parser: valid JSON and UTF-8
  REQUIRE(j["points"].size() == 6);
  const auto& p0 = j["points"][0];
  CHECK(p0["bindings"]["groups"] == "32");
  REQUIRE(p0["layers"].size() == 2);
  // groups 32 on 32 channels: depthwise, 56·56 outputs × 32 channels × 1 input channel × 3·3
  CHECK(p0["layers"][0]["macs"] == 56 * 56 * 32 * 1 * 9);
  for (const auto& e : fs::directory_iterator(dir)) CHECK(e.path().extension() != ".tmp");
  fs::remove_all(dir);
}

TEST_CASE("a failed run exits 1 and writes nothing", "[cli]") {
  fs::path dir = scratch_dir("fail", false);
  fs::path bad = fs::temp_directory_path() / ("rsim_bad_" + std::to_string(::getpid()) + ".yaml");
  std::ofstream(bad) << "name: bad\nsweep: {grid: {g: [1, 3]}}\nplatforms: [rtx3080]\nnetworks:\n"
                        "  - {name: n, input: [1, 8, 4, 4], layers: [{op: conv2d, out_channels: 8, kernel: 3, groups: \"${g}\"}]}\n";
  CliOut r = cli({"run", bad.string(), "--out", dir.string(), "--hw-dir", src("hardware")});
  CHECK(r.code == 1);
  // the value of groups: "  - {" 1-5, "name: n, " 6-14, "input: [1, 8, 4, 4], " 15-35, "layers: [" 36-44, "{" 45, "op: conv2d, " 46-57, "out_channels: 8, " 58-74, "kernel: 3, " 75-85, "groups: " 86-93
  CHECK(r.err == bad.string() +
                     ":5:94: error: layer 'conv2d_1' (conv2d): groups (3) must divide the input channels (8) of 1x8x4x4\n"
                     "  - {name: n, input: [1, 8, 4, 4], layers: [{op: conv2d, out_channels: 8, kernel: 3, groups: \"${g}\"}]}\n"
                     "                                                                                             ^\n"
                     "note: input shape: 1x8x4x4\n"
                     "note: at sweep point 1: g=3\n");
  CHECK_FALSE(fs::exists(dir));
  CliOut v = cli({"validate", bad.string(), "--hw-dir", src("hardware")});
  CHECK(v.code == 1);
  fs::remove(bad);
  CliOut missing = cli({"run", "/nonexistent.yaml"});
  CHECK(missing.code == 1);
  CHECK(missing.err == "rsim: error: cannot read scenario '/nonexistent.yaml': No such file or directory\n");
}

TEST_CASE("validate reports the errors of plots, platforms and networks together, in file order", "[cli]") {
  fs::path bad = fs::temp_directory_path() / ("rsim_many_" + std::to_string(::getpid()) + ".yaml");
  std::ofstream(bad) << "name: many\n"
                        "platforms: [rtx3080, nosuchplat]\n"
                        "networks:\n"
                        "  - {name: n, input: [1, 3, 8, 8], layers: [{op: conv2d, out_channels: 4, kernal: 3}]}\n"
                        "plots:\n"
                        "  - {kind: roofline, nme: x}\n";
  CliOut v = cli({"validate", bad.string(), "--hw-dir", src("hardware")});
  CHECK(v.code == 1);
  CHECK(v.out.empty());
  // line 2 (the platform), line 4 (the layer: a missing key at its map, col 45; the misspelt key at col 75:
  // "  - {" 1-5, "name: n, " 6-14, "input: [1, 3, 8, 8], " 15-35, "layers: [" 36-44, "{" 45, "op: conv2d, " 46-57,
  // "out_channels: 4, " 58-74), line 6 (the plot)
  const std::string f = bad.string();
  CHECK(v.err == f + ":2:22: error: unknown platform 'nosuchplat'\n"
                     "platforms: [rtx3080, nosuchplat]\n"
                     "                     ^\n"
                     "note: `rsim hw list` shows the catalog in " + src("hardware") + "\n" +
                 f + ":4:45: error: layer 'conv2d_1' (conv2d) needs 'kernel' (kernel size (kh, kw))\n"
                     "  - {name: n, input: [1, 3, 8, 8], layers: [{op: conv2d, out_channels: 4, kernal: 3}]}\n"
                     "                                            ^\n" +
                 f + ":4:75: error: unknown key 'kernal' in layer 'conv2d_1' (conv2d)\n"
                     "  - {name: n, input: [1, 3, 8, 8], layers: [{op: conv2d, out_channels: 4, kernal: 3}]}\n"
                     "                                                                          ^\n"
                     "note: did you mean 'kernel'?\n" +
                 f + ":6:22: error: unknown key 'nme' in plot\n"
                     "  - {kind: roofline, nme: x}\n"
                     "                     ^\n"
                     "note: did you mean 'name'?\n");
  // two plots naming platforms the run lacks: both reported, each at the name
  std::ofstream(bad) << "name: p\nplatforms: [rtx3080]\nnetworks:\n  - {name: n, input: [1, 4], layers: [{op: relu}]}\nplots:\n"
                        "  - {kind: roofline, name: r, platforms: [a100]}\n"
                        "  - {kind: roofline, name: s, platforms: [rtx3080, a100x]}\n";
  CliOut pl = cli({"validate", bad.string(), "--hw-dir", src("hardware")});
  CHECK(pl.code == 1);
  // "  - {" 1-5, "kind: roofline, " 6-21, "name: r, " 22-30, "platforms: " 31-41, "[" 42: a100 at 43;
  // "rtx3080" 43-49, ", " 50-51: a100x at 52
  CHECK(pl.err == f + ":6:43: error: plot names platform 'a100', which this run does not evaluate\n"
                      "  - {kind: roofline, name: r, platforms: [a100]}\n"
                      "                                          ^\n"
                      "note: platforms here: rtx3080\n" +
                  f + ":7:52: error: plot names platform 'a100x', which this run does not evaluate\n"
                      "  - {kind: roofline, name: s, platforms: [rtx3080, a100x]}\n"
                      "                                                   ^\n"
                      "note: platforms here: rtx3080\n");
  // a plot without a kind is an error, not an internal failure
  std::ofstream(bad) << "name: nokind\nplatforms: [rtx3080]\nnetworks:\n  - {name: n, input: [1, 4], layers: [{op: relu}]}\nplots:\n  - {type: roofline}\n";
  CliOut k = cli({"validate", bad.string(), "--hw-dir", src("hardware")});
  CHECK(k.code == 1);
  CHECK(k.err == f + ":6:5: error: plot needs 'kind'\n  - {type: roofline}\n    ^\n");
  fs::remove(bad);
}

TEST_CASE("run --set pins a sweep variable from the command line", "[cli]") {
  fs::path dir = scratch_dir("set", false);
  CliOut r = cli({"run", src("scenarios/group_conv_sweep.yaml"), "--set", "groups=4", "--out", dir.string(), "--hw-dir", src("hardware"), "-q"});
  REQUIRE(r.code == 0);
  std::ifstream in(dir / "summary.csv");
  std::string header, line;
  std::getline(in, header);
  int rows = 0;
  while (std::getline(in, line)) {
    ++rows;
    CHECK(line.rfind("0,4,", 0) == 0);  // point 0, groups = 4
  }
  CHECK(rows == 2);  // one point × two platforms
  CliOut bad = cli({"run", src("scenarios/group_conv_sweep.yaml"), "--set", "group=4", "--hw-dir", src("hardware")});
  CHECK(bad.code == 1);
  CHECK(bad.err == "rsim: error: --set group=4: the scenario has no variable 'group'\nrsim: note: did you mean 'groups'?\n");
  fs::remove_all(dir);
}

TEST_CASE("run draws the default figures, the report, and cleans figures a later run drops", "[cli][plots]") {
  fs::path dir = scratch_dir("figs", false);
  CliOut r = cli({"run", src("scenarios/group_conv_sweep.yaml"), "--out", dir.string(), "--hw-dir", src("hardware"), "-q", "--format", "png,pdf"});
  REQUIRE(r.code == 0);
  for (const char* f : {"roofline_rtx3080.png", "roofline_rtx3080.pdf", "roofline_rtx3080.csv", "trend_intensity_vs_groups.png", "report.md"})
    CHECK(fs::exists(dir / f));
  CHECK_FALSE(fs::exists(dir / "roofline_rtx3080.svg"));
  CliOut t = cli({"run", src("scenarios/group_conv_sweep.yaml"), "--out", dir.string(), "--hw-dir", src("hardware"), "-q", "--no-plots"});
  REQUIRE(t.code == 0);
  CHECK_FALSE(fs::exists(dir / "roofline_rtx3080.png"));  // stale figures do not linger
  CHECK(fs::exists(dir / "results.csv"));
  CliOut bad = cli({"run", src("scenarios/group_conv_sweep.yaml"), "--format", "jpg"});
  CHECK(bad.code == 2);
  CHECK(bad.err == "rsim: error: unknown figure format 'jpg'\nrsim: note: formats: png, svg, pdf\nrsim: note: see `rsim --help`\n");
  fs::remove_all(dir);
}

TEST_CASE("a plot naming a platform the run lacks is a config error before anything is written", "[cli][plots]") {
  fs::path dir = scratch_dir("badplot", false);
  fs::path y = fs::temp_directory_path() / ("rsim_badplot_" + std::to_string(::getpid()) + ".yaml");
  std::ofstream(y) << "name: p\nplatforms: [rtx3080]\nnetworks:\n  - {name: n, input: [1, 8], layers: [{op: linear, out_features: 8}]}\n"
                      "plots:\n  - {kind: roofline, platforms: [v100]}\n";
  CliOut r = cli({"run", y.string(), "--out", dir.string(), "--hw-dir", src("hardware")});
  CHECK(r.code == 1);
  // at the name: "  - {" 1-5, "kind: roofline, " 6-21, "platforms: " 22-32, "[" 33, v100 at 34
  CHECK(r.err == y.string() +
                     ":6:34: error: plot names platform 'v100', which this run does not evaluate\n"
                     "  - {kind: roofline, platforms: [v100]}\n"
                     "                                 ^\n"
                     "note: platforms here: rtx3080\n");
  CHECK_FALSE(fs::exists(dir / "results.csv"));
  fs::remove(y);
  fs::remove_all(dir);
}

TEST_CASE("run prints the first three footprint warnings of a sweep and counts the rest", "[cli]") {
  // rtx3080: 10 GiB of GDDR6X = 10,737,418,240 B. A linear layer on 65,536 fp32 features holds
  // 65,536 × n × 4 B of weights: n = 1,024 holds 0.25 GiB (fits); n = 50,000 holds
  // 13,107,200,000 B (+ 200,000 B of bias) = 12.207 GiB, and the larger n more: 5 of 6 points
  // exceed the memory.
  fs::path dir = scratch_dir("footprint");
  fs::path yaml = dir / "s.yaml";
  std::ofstream(yaml) << "name: footprint\nplatforms: [rtx3080]\nsweep: {grid: {n: [1024, 50000, 60000, 70000, 80000, 90000]}}\n"
                         "networks:\n  - name: fc\n    input: [1, 65536]\n    layers:\n      - {op: linear, out_features: \"${n}\"}\n";
  for (const char* tables : {"all", "summary"}) {
    CliOut r = cli({"run", yaml.string(), "--out", (dir / "out").string(), "--hw-dir", src("hardware"), "--no-plots", "--tables", tables});
    REQUIRE(r.code == 0);
    // 12,207,... B of weights + activations well under 1 MiB: 12.21 GiB at the first excess
    CHECK(r.err.find("warning: network 'fc' needs 12.21 GiB of memory, more than the 10.00 GiB of platform 'rtx3080' (GDDR6X)") != std::string::npos);
    CHECK(r.err.find("at sweep point 1: n=50000") != std::string::npos);
    CHECK(r.err.find("at sweep point 3: n=70000") != std::string::npos);
    CHECK(r.err.find("at sweep point 4:") == std::string::npos);  // shown: the first three
    CHECK(r.err.find("at sweep point 0:") == std::string::npos);  // n = 1,024 fits
    CHECK(r.err.find("2 more warnings like these") != std::string::npos);
  }
  fs::remove_all(dir);
}

TEST_CASE("run --quiet prints nothing but errors, --rows 0 prints no table, and the usage names every option", "[cli]") {
  // the footprint case above: 5 of the 6 points exceed the rtx3080's 10 GiB, 5 warnings without --quiet
  fs::path dir = scratch_dir("quiet");
  fs::path yaml = dir / "s.yaml";
  std::ofstream(yaml) << "name: quiet\nplatforms: [rtx3080]\nsweep: {grid: {n: [1024, 50000, 60000, 70000, 80000, 90000]}}\n"
                         "networks:\n  - name: fc\n    input: [1, 65536]\n    layers:\n      - {op: linear, out_features: \"${n}\"}\n";
  CliOut q = cli({"run", yaml.string(), "--out", (dir / "out").string(), "--hw-dir", src("hardware"), "--no-plots", "--quiet"});
  REQUIRE(q.code == 0);
  CHECK(q.err.empty());
  CHECK(q.out.empty());
  // --rows 0: 6 points × 1 platform × 1 layer = 6 rows, counted, no table (no header, no rule)
  CliOut z = cli({"run", yaml.string(), "--out", (dir / "out").string(), "--hw-dir", src("hardware"), "--no-plots", "--rows", "0"});
  REQUIRE(z.code == 0);
  CHECK(z.out.find("6 rows in results.csv\n") != std::string::npos);
  CHECK(z.out.find("platform  network") == std::string::npos);
  CHECK(z.out.find("--") == std::string::npos);
  CliOut zs = cli({"run", yaml.string(), "--out", (dir / "out").string(), "--hw-dir", src("hardware"), "--tables", "summary", "--rows", "0"});
  REQUIRE(zs.code == 0);
  CHECK(zs.out.find("6 rows in summary.csv\n") != std::string::npos);  // 6 points × 1 network
  CHECK(zs.out.find("platform  network") == std::string::npos);
  // the usage line of `rsim run --help` names the options its table lists
  CliOut h = cli({"run", "--help"});
  REQUIRE(h.code == 0);
  const std::string usage = h.out.substr(0, h.out.find('\n'));
  for (const char* o : {"--rows", "--tables", "--dpi", "--no-plots", "--quiet", "--format", "--style", "--jobs"}) CHECK(usage.find(o) != std::string::npos);
  fs::remove_all(dir);
}

TEST_CASE("an unknown top-level key does not hide the errors the evaluation finds", "[cli]") {
  // line 2: a key rsim does not know; line 3: a platform the catalog lacks. Both are reported,
  // in file order, by run and by validate; run writes nothing.
  fs::path dir = scratch_dir("unknown_key");
  fs::path yaml = dir / "s.yaml";
  std::ofstream(yaml) << "name: x\nbogus: 1\nplatforms: [nope]\nnetworks: [{model: resnet18, args: {batch: 1}}]\n";
  for (const char* cmd : {"run", "validate"}) {
    std::vector<std::string> args = {cmd, yaml.string(), "--hw-dir", src("hardware")};
    if (std::string(cmd) == "run") args.insert(args.end(), {"--out", (dir / "out").string()});
    CliOut r = cli(args);
    CHECK(r.code == 1);
    const size_t key = r.err.find("s.yaml:2:1: error: unknown key 'bogus' in scenario");
    const size_t platform = r.err.find("s.yaml:3:13: error: unknown platform 'nope'");
    CHECK(key != std::string::npos);
    CHECK(platform != std::string::npos);
    CHECK(key < platform);
  }
  CHECK_FALSE(fs::exists(dir / "out"));
  // alone, an unknown key is still an error (nothing is run with a key that was meant to say something)
  std::ofstream(yaml) << "name: x\nbogus: 1\nplatforms: [rtx3080]\nnetworks: [{model: resnet18, args: {batch: 1}}]\n";
  CliOut r = cli({"run", yaml.string(), "--hw-dir", src("hardware"), "--out", (dir / "out").string()});
  CHECK(r.code == 1);
  CHECK(r.err.find("unknown key 'bogus'") != std::string::npos);
  CHECK_FALSE(fs::exists(dir / "out"));
  fs::remove_all(dir);
}
