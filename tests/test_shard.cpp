// Sharded sweeps (issue 44 item 5): `rsim run --shard K/N` evaluates the points whose index is K
// mod N; `rsim merge` writes the unsharded run's result set byte for byte; a missing, duplicated or
// foreign shard, a scenario changed since, a cut-short file and a malformed --shard are errors.
#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

#include "cli_helpers.hpp"
#include "helpers.hpp"

using namespace rsim;
using namespace rsim::test;
namespace fs = std::filesystem;

namespace {

std::string slurp(const fs::path& p) {
  std::ifstream f(p, std::ios::binary);
  std::ostringstream s;
  s << f.rdbuf();
  return s.str();
}

std::map<std::string, std::string> files_of(const fs::path& dir) {
  std::map<std::string, std::string> m;
  for (const auto& e : fs::directory_iterator(dir)) m[e.path().filename().string()] = slurp(e.path());
  return m;
}

// 7 points (features 64 … 4096 in factors of 2), two networks, two platforms (one of 1 GiB, which
// the largest layer's 4096·4096·4 = 64 MiB of weights fit; a footprint warning needs none)
const char* kScenario =
    "name: shards\n"
    "settings: {dtype: fp32}\n"
    "sweep:\n"
    "  grid:\n"
    "    features: {from: 64, to: 4096, factor: 2}\n"
    "platforms:\n"
    "  - {name: p, compute: [{name: c, dtypes: [fp32], peak: 1 TFLOP/s}], memory: [{name: m, bandwidth: 100 GB/s, size: 1 GiB}]}\n"
    "  - {name: q, compute: [{name: c, dtypes: [fp32], peak: 10 TFLOP/s}], memory: [{name: m, bandwidth: 1 TB/s}]}\n"
    "networks:\n"
    "  - name: mlp\n"
    "    input: [8, \"${features}\"]\n"
    "    layers:\n"
    "      - {name: up, op: linear, out_features: \"${features}\"}\n"
    "      - {name: act, op: relu}\n"
    "  - name: one\n"
    "    input: [1, \"${features}\"]\n"
    "    layers:\n"
    "      - {name: fc, op: linear, out_features: 16}\n"
    "plots:\n"
    "  - {kind: roofline, platforms: [p]}\n"
    "  - {kind: trend, x: features, y: derated_time_s}\n";

}  // namespace

TEST_CASE("rsim run --shard K/N and rsim merge: the unsharded run's result set byte for byte", "[shard][cli]") {
  const fs::path dir = scratch_dir("shard_merge");
  const std::string scen = (dir / "s.yaml").string();
  std::ofstream(scen) << kScenario;
  const std::string hw = src("hardware");
  REQUIRE(cli({"run", scen, "-o", (dir / "full").string(), "-q", "--hw-dir", hw}).code == 0);
  // 3 shards of 7 points: indices 0, 3, 6 · 1, 4 · 2, 5
  std::vector<std::string> merge = {"merge", (dir / "merged").string()};
  for (int k = 2; k >= 0; --k) {  // (given out of order: the merge orders them)
    const std::string out = (dir / ("s" + std::to_string(k))).string();
    CliOut r = cli({"run", scen, "--shard", std::to_string(k) + "/3", "-o", out, "--hw-dir", hw, "-j", "1"});
    REQUIRE(r.code == 0);
    CHECK(r.out.find(std::string(k == 0 ? "3" : "2") + " of 7 points") != std::string::npos);
    merge.push_back(out);
  }
  CliOut m = cli(merge);
  REQUIRE(m.code == 0);
  const auto full = files_of(dir / "full"), merged = files_of(dir / "merged");
  REQUIRE(full.size() == merged.size());
  for (const auto& [name, bytes] : full) {
    INFO(name);
    REQUIRE(merged.count(name));
    CHECK(merged.at(name) == bytes);
  }
  CHECK(full.count("report.html"));
  // summary.csv: a header and 7 points × 2 networks × 2 platforms = 28 rows
  const std::string summary = full.at("summary.csv");
  CHECK(std::count(summary.begin(), summary.end(), '\n') == 1 + 28);

  SECTION("more shards than points: the empty ones merge too") {
    std::vector<std::string> many = {"merge", (dir / "many").string(), "-q"};
    for (int k = 0; k < 9; ++k) {  // shards 7 and 8 hold no point
      const std::string out = (dir / ("m" + std::to_string(k))).string();
      REQUIRE(cli({"run", scen, "--shard", std::to_string(k) + "/9", "-o", out, "--hw-dir", hw, "-q", "--tables", "summary"}).code == 0);
      many.push_back(out);
    }
    REQUIRE(cli({"run", scen, "-o", (dir / "sum").string(), "-q", "--hw-dir", hw, "--tables", "summary"}).code == 0);
    REQUIRE(cli(many).code == 0);
    CHECK(files_of(dir / "many") == files_of(dir / "sum"));
  }
  SECTION("a missing, duplicated or foreign shard, and a scenario changed since") {
    CliOut r = cli({"merge", (dir / "x").string(), (dir / "s0").string(), (dir / "s1").string()});
    CHECK(r.code == 1);
    CHECK(r.err.find("shard 2 of 3 is missing") != std::string::npos);
    r = cli({"merge", (dir / "x").string(), (dir / "s0").string(), (dir / "s1").string(), (dir / "s1").string()});
    CHECK(r.code == 1);
    CHECK(r.err.find("shard 1 of 3 is given twice") != std::string::npos);
    REQUIRE(cli({"run", scen, "--shard", "2/3", "-o", (dir / "t2").string(), "--hw-dir", hw, "-q", "--tables", "summary"}).code == 0);
    r = cli({"merge", (dir / "x").string(), (dir / "s0").string(), (dir / "s1").string(), (dir / "t2").string()});
    CHECK(r.code == 1);
    CHECK(r.err.find("its options: '--tables=summary") != std::string::npos);
    std::ofstream(scen, std::ios::app) << "# changed\n";
    r = cli({"merge", (dir / "x").string(), (dir / "s0").string(), (dir / "s1").string(), (dir / "s2").string()});
    CHECK(r.code == 1);
    CHECK(r.err.find("changed since its shards ran") != std::string::npos);
    CHECK(!fs::exists(dir / "x"));  // nothing half-merged
  }
  SECTION("a file that is not a shard, and one cut short") {
    std::ofstream(dir / "junk.rsim") << "not a shard";
    CliOut r = cli({"merge", (dir / "x").string(), (dir / "junk.rsim").string()});
    CHECK(r.code == 1);
    CHECK(r.err.find("not a shard") != std::string::npos);
    const std::string whole = slurp(dir / "s1" / "shard.rsim");
    std::ofstream(dir / "cut.rsim", std::ios::binary) << whole.substr(0, whole.size() - 20);
    r = cli({"merge", (dir / "x").string(), (dir / "s0").string(), (dir / "cut.rsim").string(), (dir / "s2").string()});
    CHECK(r.code == 1);
    CHECK(r.err.find("cut short") != std::string::npos);
    CHECK(!fs::exists(dir / "x"));
  }
  fs::remove_all(dir);
}

TEST_CASE("rsim run --shard: K/N with K below N, or slurm inside an array job, else a usage error naming it", "[shard][cli]") {
  for (const char* bad : {"3/2", "0/0", "2/2", "a/b", "1", "-1/2", "1/2/3"}) {
    INFO(bad);
    CliOut r = cli({"run", src("scenarios/fc_sweep.yaml"), "--shard", bad, "-o", "/nonexistent/never"});
    CHECK(r.code == 2);
    CHECK(r.err.find("--shard") != std::string::npos);
  }
  unsetenv("SLURM_ARRAY_TASK_ID");
  CliOut r = cli({"run", src("scenarios/fc_sweep.yaml"), "--shard", "slurm", "-o", "/nonexistent/never"});
  CHECK(r.code == 2);
  CHECK(r.err.find("SLURM_ARRAY_TASK_ID") != std::string::npos);
  // an array job of tasks 5–8 (sbatch --array=5-8): task 7 is shard 2 of 4
  const fs::path dir = scratch_dir("shard_slurm");
  setenv("SLURM_ARRAY_TASK_ID", "7", 1), setenv("SLURM_ARRAY_TASK_MIN", "5", 1), setenv("SLURM_ARRAY_TASK_COUNT", "4", 1);
  r = cli({"run", src("scenarios/fc_sweep.yaml"), "--shard", "slurm", "-o", (dir / "o").string(), "--hw-dir", src("hardware")});
  unsetenv("SLURM_ARRAY_TASK_ID"), unsetenv("SLURM_ARRAY_TASK_MIN"), unsetenv("SLURM_ARRAY_TASK_COUNT");
  CHECK(r.code == 0);
  // fc_sweep: 3 batches × 5 feature sizes (256 … 4096) = 15 points; indices ≡ 2 mod 4: 2, 6, 10, 14
  CHECK(r.out.find("shard 2 of 4, 4 of 15 points") != std::string::npos);
  fs::remove_all(dir);
}
