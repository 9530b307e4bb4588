// The command line: exit codes, suggestions, and what each command prints.
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "app/cli.hpp"
#include "helpers.hpp"

using namespace rsim;
using namespace rsim::test;
namespace fs = std::filesystem;

namespace {
struct Out {
  int code;
  std::string out, err;
};
Out cli(std::vector<std::string> args) {
  std::ostringstream o, e;
  int c = rsim_main(args, o, e);
  return {c, o.str(), e.str()};
}
fs::path temp_dir(const std::string& name) {
  fs::path p = fs::temp_directory_path() / ("rsim_test_" + name + "_" + std::to_string(::getpid()));
  fs::remove_all(p);
  return p;
}
}  // namespace

TEST_CASE("unknown commands and options are usage errors with a suggestion", "[cli]") {
  Out r = cli({"rn", "x.yaml"});
  CHECK(r.code == 2);
  CHECK(r.err == "rsim: error: unknown command 'rn'\nrsim: note: did you mean 'run'?\nrsim: note: see `rsim --help`\n");
  Out o = cli({"run", "x.yaml", "--jbos", "2"});
  CHECK(o.code == 2);
  CHECK(o.err.find("rsim: error: unknown option '--jbos'\nrsim: note: did you mean '--jobs'?\n") == 0);
  CHECK(cli({}).code == 2);
  CHECK(cli({"run"}).code == 2);
}

TEST_CASE("--help and --version exit 0", "[cli]") {
  Out h = cli({"--help"});
  CHECK(h.code == 0);
  CHECK(h.out.find("run ") != std::string::npos);
  Out v = cli({"--version"});
  CHECK(v.code == 0);
  CHECK(v.out == std::string("rsim ") + RSIM_VERSION + "\n");
  CHECK(cli({"run", "--help"}).code == 0);
}

TEST_CASE("hw show prints roofs, derivations and ridge points", "[cli]") {
  Out r = cli({"hw", "show", "rtx3080", "--hw-dir", src("hardware")});
  REQUIRE(r.code == 0);
  CHECK(r.out.find("29.8 TFLOP/s") != std::string::npos);
  CHECK(r.out.find("760.32 GB/s") != std::string::npos);
  CHECK(r.out.find("39.19") != std::string::npos);  // 29.8e12 / 760.32e9 = 39.194...
  Out bad = cli({"hw", "show", "rtx308", "--hw-dir", src("hardware")});
  CHECK(bad.code == 1);
  CHECK(bad.err == "rsim: error: unknown platform 'rtx308'\nrsim: note: did you mean 'rtx3080'?\n");
  Out list = cli({"hw", "list", "--hw-dir", src("hardware")});
  CHECK(list.code == 0);
  CHECK(list.out.find("xeon_silver_4210_2s") != std::string::npos);
}

TEST_CASE("ops lists operators and shows one formula", "[cli]") {
  Out all = cli({"ops"});
  CHECK(all.code == 0);
  CHECK(all.out.find("conv_transpose2d") != std::string::npos);
  Out conv = cli({"ops", "conv2d"});
  CHECK(conv.code == 0);
  CHECK(conv.out.find("MACs   = N · Cout · Hout · Wout · (Cin/groups) · kh · kw") != std::string::npos);
  Out fc = cli({"ops", "fc"});  // an alias shows its target
  CHECK(fc.out.rfind("linear", 0) == 0);
  Out bad = cli({"ops", "conv3d"});
  CHECK(bad.code == 1);
  CHECK(bad.err == "rsim: error: unknown operator 'conv3d'\nrsim: note: did you mean 'conv2d'?\n");
}

TEST_CASE("run writes the three tables into --out", "[cli]") {
  fs::path dir = temp_dir("run");
  Out r = cli({"run", src("scenarios/group_conv_sweep.yaml"), "--out", dir.string(), "--hw-dir", src("hardware"), "-q"});
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
  fs::path dir = temp_dir("fail");
  fs::path bad = fs::temp_directory_path() / ("rsim_bad_" + std::to_string(::getpid()) + ".yaml");
  std::ofstream(bad) << "name: bad\nsweep: {grid: {g: [1, 3]}}\nplatforms: [rtx3080]\nnetworks:\n"
                        "  - {name: n, input: [1, 8, 4, 4], layers: [{op: conv2d, out_channels: 8, kernel: 3, groups: \"${g}\"}]}\n";
  Out r = cli({"run", bad.string(), "--out", dir.string(), "--hw-dir", src("hardware")});
  CHECK(r.code == 1);
  CHECK(r.err == bad.string() +
                     ":5:45: error: layer 'conv2d_1' (conv2d): groups (3) must divide the input channels (8) of 1x8x4x4\n"
                     "  - {name: n, input: [1, 8, 4, 4], layers: [{op: conv2d, out_channels: 8, kernel: 3, groups: \"${g}\"}]}\n"
                     "                                            ^\n"
                     "note: input shape: 1x8x4x4\n"
                     "note: at sweep point 1: g=3\n");
  CHECK_FALSE(fs::exists(dir));
  Out v = cli({"validate", bad.string(), "--hw-dir", src("hardware")});
  CHECK(v.code == 1);
  fs::remove(bad);
  Out missing = cli({"run", "/nonexistent.yaml"});
  CHECK(missing.code == 1);
  CHECK(missing.err == "rsim: error: cannot read scenario '/nonexistent.yaml': No such file or directory\n");
}

TEST_CASE("run --set pins a sweep variable from the command line", "[cli]") {
  fs::path dir = temp_dir("set");
  Out r = cli({"run", src("scenarios/group_conv_sweep.yaml"), "--set", "groups=4", "--out", dir.string(), "--hw-dir", src("hardware"), "-q"});
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
  Out bad = cli({"run", src("scenarios/group_conv_sweep.yaml"), "--set", "group=4", "--hw-dir", src("hardware")});
  CHECK(bad.code == 1);
  CHECK(bad.err == "rsim: error: --set group=4: the scenario has no variable 'group'\nrsim: note: did you mean 'groups'?\n");
  fs::remove_all(dir);
}

TEST_CASE("run draws the default figures, the report, and cleans figures a later run drops", "[cli][plots]") {
  fs::path dir = temp_dir("figs");
  Out r = cli({"run", src("scenarios/group_conv_sweep.yaml"), "--out", dir.string(), "--hw-dir", src("hardware"), "-q", "--format", "png,pdf"});
  REQUIRE(r.code == 0);
  for (const char* f : {"roofline_rtx3080.png", "roofline_rtx3080.pdf", "roofline_rtx3080.csv", "trend_intensity_vs_groups.png", "report.md"})
    CHECK(fs::exists(dir / f));
  CHECK_FALSE(fs::exists(dir / "roofline_rtx3080.svg"));
  Out t = cli({"run", src("scenarios/group_conv_sweep.yaml"), "--out", dir.string(), "--hw-dir", src("hardware"), "-q", "--no-plots"});
  REQUIRE(t.code == 0);
  CHECK_FALSE(fs::exists(dir / "roofline_rtx3080.png"));  // stale figures do not linger
  CHECK(fs::exists(dir / "results.csv"));
  Out bad = cli({"run", src("scenarios/group_conv_sweep.yaml"), "--format", "jpg"});
  CHECK(bad.code == 2);
  CHECK(bad.err == "rsim: error: unknown figure format 'jpg'\nrsim: note: formats: png, svg, pdf\nrsim: note: see `rsim --help`\n");
  fs::remove_all(dir);
}

TEST_CASE("a plot naming a platform the run lacks is a config error before anything is written", "[cli][plots]") {
  fs::path dir = temp_dir("badplot");
  fs::path y = fs::temp_directory_path() / ("rsim_badplot_" + std::to_string(::getpid()) + ".yaml");
  std::ofstream(y) << "name: p\nplatforms: [rtx3080]\nnetworks:\n  - {name: n, input: [1, 8], layers: [{op: linear, out_features: 8}]}\n"
                      "plots:\n  - {kind: roofline, platforms: [v100]}\n";
  Out r = cli({"run", y.string(), "--out", dir.string(), "--hw-dir", src("hardware")});
  CHECK(r.code == 1);
  CHECK(r.err == y.string() +
                     ":6:5: error: plot names platform 'v100', which this run does not evaluate\n"
                     "  - {kind: roofline, platforms: [v100]}\n"
                     "    ^\n"
                     "note: platforms here: rtx3080\n");
  CHECK_FALSE(fs::exists(dir / "results.csv"));
  fs::remove(y);
  fs::remove_all(dir);
}
