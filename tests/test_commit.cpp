// Streamed tables and whole result sets: the streamed files equal the whole-run tables for any
// number of workers; --tables summary; a result set is committed whole (staging folder, swap,
// lock), interrupts through the real executable leave the previous set; a failing figure keeps
// the tables.
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <thread>

#include "app/cli.hpp"
#include "cli_helpers.hpp"
#include "helpers.hpp"

extern char** environ;

using namespace rsim;
using namespace rsim::test;
namespace fs = std::filesystem;

namespace {

std::string read(const fs::path& p) {
  std::ifstream f(p, std::ios::binary);
  std::ostringstream s;
  s << f.rdbuf();
  return s.str();
}


// The exit code of `rsim ARGS`; its error stream in *err.
int code_of(std::vector<std::string> args, std::string* err = nullptr) {
  CliOut r = cli(std::move(args));
  if (err) *err = r.err;
  return r.code;
}

// Every file of a folder with its bytes (hidden files too).
std::map<std::string, std::string> snapshot(const fs::path& dir) {
  std::map<std::string, std::string> m;
  for (const auto& e : fs::directory_iterator(dir)) m[e.path().filename().string()] = read(e.path());
  return m;
}

// Names in `parent` that start with `prefix`.
std::vector<std::string> entries_with(const fs::path& parent, const std::string& prefix) {
  std::vector<std::string> n;
  for (const auto& e : fs::directory_iterator(parent))
    if (e.path().filename().string().rfind(prefix, 0) == 0) n.push_back(e.path().filename().string());
  return n;
}

pid_t spawn(const std::vector<std::string>& args) {
  std::vector<char*> argv;
  for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0);
  posix_spawn_file_actions_addopen(&fa, 2, "/dev/null", O_WRONLY, 0);
  pid_t pid = -1;
  int rc = posix_spawn(&pid, argv[0], &fa, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&fa);
  return rc == 0 ? pid : -1;
}

// Waits (at most 20 s) until `parent` holds a staging folder for `base`.
bool wait_for_staging(const fs::path& parent, const std::string& base) {
  for (int i = 0; i < 2000; ++i) {
    if (!entries_with(parent, "." + base + ".rsim-staging-").empty()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return false;
}

// A sweep long enough to interrupt: `points` points of a 20-layer network.
void write_long_scenario(const fs::path& p, int points = 4000) {
  std::ofstream f(p);
  f << "name: long\nplatforms: [rtx3080]\nsweep: {grid: {c: {from: 8, to: " << 7 + points << ", step: 1}}}\n"
       "networks:\n  - name: n\n    input: [1, \"${c}\", 8, 8]\n    layers:\n";
  for (int i = 0; i < 20; ++i) f << "      - {op: conv2d, out_channels: \"${c}\", kernel: 3, padding: 1}\n";
}

const char* kSmall =
    "name: small\nplatforms: [rtx3080]\nsweep: {grid: {k: [1, 3]}}\n"
    "networks:\n  - name: n\n    input: [1, 8, 8, 8]\n    layers:\n      - {op: conv2d, out_channels: 8, kernel: \"${k}\"}\n";

}  // namespace

TEST_CASE("streamed tables equal the whole-run tables, byte for byte, for any number of workers", "[commit]") {
  fs::path dir = scratch_dir("stream");
  Scenario s = load_scenario(src("scenarios/group_conv_sweep.yaml"));
  RunResult whole = run(s, 1);
  RunInfo info{RSIM_VERSION, &s};
  for (int jobs : {1, 2, 5}) {
    fs::path d = dir / std::to_string(jobs);
    fs::create_directories(d);
    ScriptSetup setup = setup_scripts(s);
    Catalog cat(src("hardware"));
    RunOptions opt;
    opt.jobs = jobs;
    opt.ops = &setup.ops;
    opt.make_evaluator = make_lua_evaluator;
    TableWriter w(d.string(), Tables::All, info);
    stream_scenario(s, cat, opt, w);
    CHECK(w.finish() == std::vector<std::string>{"results.csv", "summary.csv", "kernels.csv", "ops.csv", "results.json"});
    CHECK(read(d / "results.csv") == results_csv(whole, s));
    CHECK(read(d / "ops.csv") == ops_csv(whole));
    CHECK(read(d / "summary.csv") == summary_csv(whole, s));
    CHECK(read(d / "kernels.csv") == kernels_csv(whole));
    CHECK(read(d / "results.json") == results_json(whole, info));
  }
  fs::remove_all(dir);
}

TEST_CASE("large streamed files end where their text ends (their room, allocated ahead, is cut)", "[commit]") {
  // The writer allocates a file's room 16 MB at a time once it holds 1 MB, then cuts it to what
  // was written. 1,500 points of a 20-layer network: results.csv has a header and 1,500 × 20 =
  // 30,000 rows (several MB), kernels.csv as many (one kernel per layer), summary.csv 1,500.
  fs::path d = scratch_dir("reserve");
  write_long_scenario(d / "long.yaml", 1500);
  Scenario s = load_scenario((d / "long.yaml").string());
  Catalog cat(src("hardware"));
  ScriptSetup setup = setup_scripts(s);
  RunOptions opt;
  opt.ops = &setup.ops;
  opt.make_evaluator = make_lua_evaluator;
  fs::create_directories(d / "out");
  TableWriter w((d / "out").string(), Tables::All, RunInfo{RSIM_VERSION, &s});
  stream_scenario(s, cat, opt, w);
  w.finish();
  for (const auto& [name, lines] : std::vector<std::pair<std::string, size_t>>{{"results.csv", 1 + 30000}, {"kernels.csv", 1 + 30000}, {"summary.csv", 1 + 1500}, {"results.json", 1}}) {
    INFO(name);
    std::string text = read(d / "out" / name);
    CHECK(text.size() == fs::file_size(d / "out" / name));
    CHECK(std::count(text.begin(), text.end(), '\n') == static_cast<long>(lines));
    CHECK(text.find('\0') == std::string::npos);  // no room left past the text
    CHECK(text.back() == '\n');
  }
  CHECK(fs::file_size(d / "out" / "results.csv") > (2u << 20));  // (past the 1 MB from which room is allocated ahead)
  fs::remove_all(d);
}

TEST_CASE("run with tables summary writes network totals only, the same totals as a full run", "[commit]") {
  fs::path dir = scratch_dir("summary");
  std::string scen = src("scenarios/group_conv_sweep.yaml");
  REQUIRE(code_of({"run", scen, "--out", (dir / "full").string(), "--no-plots", "-q", "--hw-dir", src("hardware")}) == 0);
  REQUIRE(code_of({"run", scen, "--out", (dir / "sum").string(), "--tables", "summary", "-q", "--hw-dir", src("hardware")}) == 0);
  CHECK(read(dir / "sum" / "summary.csv") == read(dir / "full" / "summary.csv"));
  std::set<std::string> files;
  for (const auto& e : fs::directory_iterator(dir / "sum")) files.insert(e.path().filename().string());
  CHECK(files == std::set<std::string>{".rsim-files", "results.json", "summary.csv"});
  std::string json = read(dir / "sum" / "results.json");
  CHECK(json.find("\"layers\":[") == std::string::npos);
  CHECK(json.find("\"summary\":[") != std::string::npos);
  std::string err;
  CHECK(code_of({"run", scen, "--tables", "sumary"}, &err) == 2);
  CHECK(err == "rsim: error: unknown --tables 'sumary'\nrsim: note: did you mean 'summary'?\nrsim: note: see `rsim --help`\n");
  fs::remove_all(dir);
}

TEST_CASE("validate evaluates each variable's first, last, extreme and 16 spread values", "[commit]") {
  // grid a: 5 values, b: 2 values (b fastest): point = 2 × index(a) + index(b)
  Scenario s = parse_scenario(std::string(kSmall) + "vars: {}\n", "t.yaml");
  auto var = [](std::string name, std::vector<std::string> values) {
    SweepVar v;
    v.name = std::move(name);
    v.values = std::move(values);
    return v;
  };
  s.sweep.grid = {var("a", {"5", "1", "9", "3", "4"}), var("b", {"x", "y"})};
  std::vector<size_t> idx;
  for (const auto& p : validation_points(s.sweep)) idx.push_back(p.index);
  // a at 0..4 with b = x: 0, 2, 4, 6, 8; b at x, y with a first: 0, 1; the last point: 9
  CHECK(idx == std::vector<size_t>{0, 1, 2, 4, 6, 8, 9});
  // one variable of 40 values: positions k × 39 / 15 for k = 0..15, and its minimum (position 17)
  std::vector<std::string> vals;
  for (int i = 0; i < 40; ++i) vals.push_back(std::to_string(i == 17 ? -1 : i));
  s.sweep.grid = {var("c", vals)};
  idx.clear();
  for (const auto& p : validation_points(s.sweep)) idx.push_back(p.index);
  CHECK(idx == std::vector<size_t>{0, 2, 5, 7, 10, 13, 15, 17, 18, 20, 23, 26, 28, 31, 33, 36, 39});
  CHECK(sweep_point(s.sweep, 17).bindings == Env{{"c", "-1"}});
}

TEST_CASE("a result set is committed whole: stale rsim files go, a person's files stay, no staging is left", "[commit]") {
  fs::path dir = scratch_dir("whole");
  fs::path scen = dir / "small.yaml";
  std::ofstream(scen) << kSmall;
  fs::path out = dir / "out";
  REQUIRE(code_of({"run", scen.string(), "--out", out.string(), "-q", "--hw-dir", src("hardware")}) == 0);
  CHECK(fs::exists(out / "roofline_rtx3080.png"));
  std::ofstream(out / "notes.txt") << "mine";
  REQUIRE(code_of({"run", scen.string(), "--out", out.string(), "-q", "--no-plots", "--hw-dir", src("hardware")}) == 0);
  std::set<std::string> files;
  for (const auto& e : fs::directory_iterator(out)) files.insert(e.path().filename().string());
  CHECK(files == std::set<std::string>{".rsim-files", "kernels.csv", "notes.txt", "ops.csv", "results.csv", "results.json", "summary.csv"});
  CHECK(read(out / "notes.txt") == "mine");
  CHECK(read(out / ".rsim-files") == "results.csv\nsummary.csv\nkernels.csv\nops.csv\nresults.json\n");
  CHECK(entries_with(dir, ".out.rsim-staging-").empty());
  // a failed run leaves the set as it was
  auto before = snapshot(out);
  std::ofstream(scen) << std::string(kSmall) + "bogus: 1\n";
  CHECK(code_of({"run", scen.string(), "--out", out.string(), "-q", "--hw-dir", src("hardware")}) == 1);
  CHECK(snapshot(out) == before);
  CHECK(entries_with(dir, ".out.rsim-staging-").empty());
  fs::remove_all(dir);
}

TEST_CASE("a figure that cannot be drawn is reported and the tables are committed", "[commit][plots]") {
  fs::path dir = scratch_dir("figfail");
  fs::path scen = dir / "deep.yaml";
  {
    std::ofstream f(scen);
    f << "name: deep\nplatforms: [rtx3080]\nnetworks:\n  - name: n\n    input: [1, 8, 16, 16]\n    layers:\n";
    for (int i = 0; i < 2000; ++i) f << "      - {op: relu}\n";
    // a PNG of 6000 pt at 600 dpi (50,000 px) is past what cairo can allocate; the layers chart of
    // 2,000 layers itself now fits a page (the largest layers and an "others" bar)
    f << "plots:\n  - {kind: roofline}\n  - {kind: layers, width: 6000 pt, height: 6000 pt, dpi: 600}\n";
  }
  std::string err;
  CHECK(code_of({"run", scen.string(), "--out", (dir / "out").string(), "-q", "--hw-dir", src("hardware")}, &err) == 0);
  CHECK(err == "rsim: warning: figure layers_rtx3080: cairo: cannot create a drawing surface; not drawn (the tables are written)\n");
  // 2,000 layers, one row each, plus the header
  std::string csv = read(dir / "out" / "results.csv");
  CHECK(std::count(csv.begin(), csv.end(), '\n') == 2001);
  CHECK(fs::exists(dir / "out" / "roofline_rtx3080.svg"));
  CHECK_FALSE(fs::exists(dir / "out" / "layers_rtx3080.svg"));
  fs::remove_all(dir);
}

TEST_CASE("SIGINT, SIGTERM and SIGKILL of the real executable leave the previous set, the next run cleans up", "[commit][slow]") {
  fs::path dir = scratch_dir("signals");
  fs::path small = dir / "small.yaml", longer = dir / "long.yaml";
  std::ofstream(small) << kSmall;
  write_long_scenario(longer);
  fs::path out = dir / "out";
  std::vector<std::string> base = {RSIM_BINARY, "run", "--out", out.string(), "-q", "--no-plots", "--jobs", "1", "--hw-dir", src("hardware")};
  auto args = [&](const fs::path& scen) {
    std::vector<std::string> a = base;
    a.insert(a.begin() + 2, scen.string());
    return a;
  };
  REQUIRE(code_of({"run", small.string(), "--out", out.string(), "-q", "--no-plots", "--hw-dir", src("hardware")}) == 0);
  const auto previous = snapshot(out);
  for (int sig : {SIGINT, SIGTERM, SIGKILL}) {
    INFO("signal " << sig);
    pid_t pid = spawn(args(longer));
    REQUIRE(pid > 0);
    REQUIRE(wait_for_staging(dir, "out"));
    ::kill(pid, sig);
    int status = 0;
    REQUIRE(::waitpid(pid, &status, 0) == pid);
    if (sig == SIGKILL) {
      CHECK((WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL));
      CHECK(entries_with(dir, ".out.rsim-staging-").size() == 1);  // stale: cleaned by the next run
    } else {
      CHECK((WIFEXITED(status) && WEXITSTATUS(status) == 128 + sig));
      CHECK(entries_with(dir, ".out.rsim-staging-").empty());
    }
    CHECK(snapshot(out) == previous);
  }
  REQUIRE(code_of({"run", small.string(), "--out", out.string(), "-q", "--no-plots", "--hw-dir", src("hardware")}) == 0);
  CHECK(entries_with(dir, ".out.rsim-staging-").empty());
  CHECK(snapshot(out) == previous);  // the same scenario again: the same bytes
  fs::remove_all(dir);
}

TEST_CASE("two runs into one folder: the second waits for the first's lock, one complete set is left", "[commit][slow]") {
  fs::path dir = scratch_dir("lock");
  fs::path small = dir / "small.yaml", longer = dir / "long.yaml";
  std::ofstream(small) << kSmall;
  write_long_scenario(longer, 1000);  // long enough for the second run to find the lock taken
  fs::path out = dir / "out";
  pid_t first = spawn({RSIM_BINARY, "run", longer.string(), "--out", out.string(), "-q", "--no-plots", "--jobs", "1", "--hw-dir", src("hardware")});
  REQUIRE(first > 0);
  REQUIRE(wait_for_staging(dir, "out"));  // the first run holds the lock
  std::string err;
  int second = code_of({"run", small.string(), "--out", out.string(), "-q", "--no-plots", "--hw-dir", src("hardware")}, &err);
  int status = 0;
  REQUIRE(::waitpid(first, &status, 0) == first);
  CHECK((WIFEXITED(status) && WEXITSTATUS(status) == 0));
  CHECK(second == 0);
  CHECK(err == "rsim: waiting for another rsim writing into '" + out.string() + "' to finish\n");
  // the second run committed last: its set, whole (2 points × 1 layer)
  std::string csv = read(out / "results.csv");
  CHECK(std::count(csv.begin(), csv.end(), '\n') == 3);
  CHECK(entries_with(dir, ".out.rsim-staging-").empty());
  fs::remove_all(dir);
}

TEST_CASE("the output folder is replaced as a whole, so never the working folder or a folder with sub-folders", "[commit]") {
  fs::path dir = scratch_dir("guard");
  fs::path scen = dir / "small.yaml";
  std::ofstream(scen) << kSmall;
  fs::create_directories(dir / "out" / "sub");
  std::string err;
  CHECK(code_of({"run", scen.string(), "--out", (dir / "out").string(), "-q", "--no-plots", "--hw-dir", src("hardware")}, &err) == 1);
  CHECK(err == "rsim: error: output folder '" + (dir / "out").string() +
                   "' holds the folder 'sub'; rsim replaces its output folder as a whole: use a folder of its own (e.g. out/NAME)\n");
  CHECK(fs::is_directory(dir / "out" / "sub"));
  fs::path before = fs::current_path();
  fs::current_path(dir / "out" / "sub");
  int code = code_of({"run", scen.string(), "--out", ".", "-q", "--no-plots", "--hw-dir", src("hardware")}, &err);
  fs::current_path(before);
  CHECK(code == 1);
  CHECK(err == "rsim: error: output folder '.' is the working folder or contains it; rsim replaces its output folder as a whole: use a folder of its own (e.g. out/NAME)\n");
  CHECK(entries_with(dir / "out", ".sub.rsim-staging-").empty());
  fs::remove_all(dir);
}

TEST_CASE("a table that cannot be written is an error naming the file, at the end or mid-run", "[commit]") {
  // /dev/full takes no byte: every write(2) fails with ENOSPC. summary.csv is made a link to it.
  if (!fs::exists("/dev/full")) {
    WARN("no /dev/full here: not checked");
    return;
  }
  fs::path dir = scratch_dir("full");
  Catalog cat(src("hardware"));
  // 3 points: under the 1 MiB buffer, written when the tables are finished; 8,000 points: each
  // summary.csv row is over 200 bytes, so the buffer fills (8,000 × 200 B > 1,048,576 B) mid-run
  for (int points : {3, 8000}) {
    fs::path d = dir / std::to_string(points);
    fs::create_directories(d);
    fs::create_symlink("/dev/full", d / "summary.csv");
    Scenario s = parse_scenario("name: f\nplatforms: [rtx3080]\nsweep: {grid: {c: {from: 1, to: " + std::to_string(points) +
                                    ", step: 1}}}\nnetworks:\n  - name: n\n    input: [1, \"${c}\", 4, 4]\n    layers:\n      - {op: relu}\n",
                                "f.yaml");
    RunOptions opt;
    opt.make_evaluator = make_lua_evaluator;
    TableWriter w(d.string(), Tables::Summary, RunInfo{RSIM_VERSION, &s});
    std::string what;
    try {
      stream_scenario(s, cat, opt, w);
      w.finish();
    } catch (const std::runtime_error& e) {
      what = e.what();
    }
    INFO(what);
    CHECK(what.find("cannot write '" + (d / "summary.csv").string() + "'") != std::string::npos);
    CHECK(what.find("No space left on device") != std::string::npos);
  }
  fs::remove_all(dir);
}
