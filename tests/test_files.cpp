// Files that are not files: a scenario or a plugin must be a regular file of bounded size,
// opened without blocking; anything else is a located error, never a hang or a memory blow-up.
#include <catch2/catch.hpp>
#include <sys/stat.h>

#include <filesystem>
#include <fstream>

#include "helpers.hpp"
#include "proc.hpp"

using namespace rsim;
using namespace rsim::test;
namespace fs = std::filesystem;

namespace {

struct Folder {
  fs::path dir;
  explicit Folder(const std::string& name) {
    dir = fs::temp_directory_path() / ("rsim_files_" + name + "_" + std::to_string(::getpid()));
    fs::remove_all(dir);
    fs::create_directories(dir);
  }
  ~Folder() { fs::remove_all(dir); }
  // s.yaml naming `plugin` on line 2, column 11
  fs::path scenario_with_plugin(const std::string& plugin) const {
    fs::path s = dir / "s.yaml";
    std::ofstream(s) << "name: t\nplugins: [" << plugin << "]\nplatforms: [rtx3080]\nnetworks:\n  - {name: n, input: [1, 4], layers: [{op: relu}]}\n";
    return s;
  }
};

Proc validate(const fs::path& scenario) { return run_exe({"validate", scenario.string()}, 10); }

void check_exit1(const Proc& p) {
  CHECK_FALSE(p.timed_out);
  CHECK(p.exited);
  CHECK(p.code == 1);
}

}  // namespace

TEST_CASE("a plugin must be a regular file of at most 1 MiB", "[files]") {
  Folder f("plugins");
  std::string s = (f.dir / "s.yaml").string();
  const std::string line = "plugins: [PLUGIN]\n          ^\n";
  auto expect = [&](const std::string& plugin, const std::string& path, const std::string& why) {
    std::string l = line;
    l.replace(l.find("PLUGIN"), 6, plugin);
    return s + ":2:11: error: cannot read plugin '" + path + "': " + why + "\n" + l;
  };
  {
    fs::create_directories(f.dir / "d.lua");
    Proc p = validate(f.scenario_with_plugin("d.lua"));
    check_exit1(p);
    CHECK(p.err == expect("d.lua", (f.dir / "d.lua").string(), "it is a directory, not a file"));
  }
  {  // not a .lua name: not opened at all (no error may quote what /proc/self/environ holds)
    for (const std::string& not_lua : {std::string("/dev/zero"), std::string("/proc/self/environ")}) {
      Proc p = validate(f.scenario_with_plugin(not_lua));
      check_exit1(p);
      CHECK(p.err == s + ":2:11: error: plugin '" + not_lua + "' is not a Lua file: a plugin's name ends in .lua (the file is not opened)\n" +
                         "plugins: [" + not_lua + "]\n          ^\n");
    }
  }
  {
    REQUIRE(::mkfifo((f.dir / "fifo.lua").c_str(), 0600) == 0);
    Proc p = validate(f.scenario_with_plugin("fifo.lua"));
    check_exit1(p);
    CHECK(p.err == expect("fifo.lua", (f.dir / "fifo.lua").string(), "it is a FIFO, not a regular file"));
  }
  {
    std::ofstream(f.dir / "big.lua") << std::string(1024 * 1024 + 1, ' ');
    Proc p = validate(f.scenario_with_plugin("big.lua"));
    check_exit1(p);
    CHECK(p.err == expect("big.lua", (f.dir / "big.lua").string(), "it has 1048577 bytes; a plugin may have at most 1 MiB (1048576 bytes)"));
  }
  {
    std::ofstream(f.dir / "ok.lua") << std::string(1024 * 1024 - 1, ' ') << "\n";  // exactly 1 MiB
    Proc p = validate(f.scenario_with_plugin("ok.lua"));
    CHECK(p.code == 0);
  }
}

TEST_CASE("a scenario must be a regular file of at most 64 MiB", "[files]") {
  Folder f("scenarios");
  auto err = [](const std::string& path, const std::string& why) { return "rsim: error: cannot read scenario '" + path + "': " + why + "\n"; };
  {
    Proc p = run_exe({"run", "/dev/zero", "--out", (f.dir / "out").string()}, 10);
    check_exit1(p);
    CHECK(p.err == err("/dev/zero", "it is a character device, not a regular file"));
  }
  {
    Proc p = validate(f.dir);
    check_exit1(p);
    CHECK(p.err == err(f.dir.string(), "it is a directory, not a file"));
  }
  {
    REQUIRE(::mkfifo((f.dir / "fifo.yaml").c_str(), 0600) == 0);
    Proc p = validate(f.dir / "fifo.yaml");
    check_exit1(p);
    CHECK(p.err == err((f.dir / "fifo.yaml").string(), "it is a FIFO, not a regular file"));
  }
  {
    fs::path big = f.dir / "big.yaml";
    std::ofstream(big) << "name: t\n";
    fs::resize_file(big, 64ull * 1024 * 1024 + 1);  // sparse: costs no disk
    Proc p = validate(big);
    check_exit1(p);
    CHECK(p.err == err(big.string(), "it has 67108865 bytes; a scenario may have at most 64 MiB (67108864 bytes)"));
  }
}

TEST_CASE("an ONNX model, a measured CSV and a platform file must be regular files: a FIFO or a device is refused at once", "[files]") {
  Folder f("inputs");
  REQUIRE(::mkfifo((f.dir / "m.onnx").c_str(), 0600) == 0);
  REQUIRE(::mkfifo((f.dir / "measured.csv").c_str(), 0600) == 0);
  REQUIRE(::mkfifo((f.dir / "p.yaml").c_str(), 0600) == 0);
  {  // rsim import of a FIFO: no wait for a writer
    Proc p = run_exe({"import", (f.dir / "m.onnx").string()}, 10);
    check_exit1(p);
    CHECK(p.err.find("cannot read the ONNX model: it is a FIFO, not a regular file") != std::string::npos);
  }
  {  // /dev/zero as a model: refused, not read without end
    Proc p = run_exe({"import", "/dev/zero"}, 10);
    check_exit1(p);
    CHECK(p.err.find("cannot read the ONNX model: it is a character device, not a regular file") != std::string::npos);
  }
  {  // a 10 GB sparse file: refused from its size, before a byte is read
    fs::path big = f.dir / "big.onnx";
    std::ofstream(big) << "x";
    fs::resize_file(big, 10'000'000'000ull);
    Proc p = run_exe({"import", big.string()}, 10);
    check_exit1(p);
    CHECK(p.err.find("cannot read the ONNX model: it has 10000000000 bytes; an ONNX model may have at most") != std::string::npos);
  }
  const std::string platform = src("hardware/i5_6300u.yaml");
  {  // a FIFO as a measured CSV, and /dev/zero
    Proc p = run_exe({"calibrate", (f.dir / "measured.csv").string(), "--platform", platform, "-o", (f.dir / "c.yaml").string()}, 10);
    check_exit1(p);
    CHECK(p.err == "rsim: error: cannot read '" + (f.dir / "measured.csv").string() + "': it is a FIFO, not a regular file\n");
    Proc z = run_exe({"calibrate", "/dev/zero", "--platform", platform, "-o", (f.dir / "c.yaml").string()}, 10);
    check_exit1(z);
    CHECK(z.err == "rsim: error: cannot read '/dev/zero': it is a character device, not a regular file\n");
  }
  {  // a FIFO as the platform file
    std::ofstream(f.dir / "m.csv") << "network,layer,op\n";
    Proc p = run_exe({"calibrate", (f.dir / "m.csv").string(), "--platform", (f.dir / "p.yaml").string(), "-o", (f.dir / "c.yaml").string()}, 10);
    check_exit1(p);
    CHECK(p.err == "rsim: error: cannot read platform file '" + (f.dir / "p.yaml").string() + "': it is a FIFO, not a regular file\n");
  }
  CHECK_FALSE(fs::exists(f.dir / "c.yaml"));
}

TEST_CASE("a Hugging Face config must be named .json: /etc/passwd is not opened, so no error quotes it", "[files]") {
  Folder f("hf");
  fs::path s = f.dir / "s.yaml";
  std::ofstream(s) << "name: t\nplatforms: [h100_sxm]\nnetworks:\n  - {model: hf, args: {config: /etc/passwd}}\n";
  Proc p = validate(s);
  check_exit1(p);
  CHECK(p.err.find("error: config '/etc/passwd' is not a JSON file: a Hugging Face config's name ends in .json (the file is not opened)") !=
        std::string::npos);
  CHECK(p.err.find("root:") == std::string::npos);
}

TEST_CASE("a file that is not text, or whose first line is not what its kind opens with, is refused without showing a byte of it", "[files]") {
  Folder f("quote");
  const std::string secret = "SECRET_TOKEN=hunter2";
  // an environment dump (NUL-separated, as /proc/self/environ) and a text key file, under the
  // names each reader accepts: a plugin, a Hugging Face config, a scenario, a platform file
  std::ofstream(f.dir / "env.lua", std::ios::binary) << secret << std::string(1, '\0') << "PATH=/usr/bin" << std::string(1, '\0');
  std::ofstream(f.dir / "key.lua") << "SECRET hunter2\n";
  std::ofstream(f.dir / "env.json", std::ios::binary) << secret << std::string(1, '\0');
  std::ofstream(f.dir / "key.json") << secret << "\n";
  std::ofstream(f.dir / "key.yaml") << secret << "\nPATH=/usr/bin\n";
  struct Case {
    fs::path scenario;
    std::string expect;
  };
  auto hf = [&](const std::string& cfg) {
    fs::path s = f.dir / ("hf_" + cfg + ".yaml");
    std::ofstream(s) << "name: t\nplatforms: [h100_sxm]\nnetworks:\n  - {model: hf, args: {config: " << cfg << "}}\n";
    return s;
  };
  fs::path env_plugin = f.scenario_with_plugin("env.lua");
  const std::string env_err = run_exe({"validate", env_plugin.string()}, 10).err;
  fs::path key_plugin = f.scenario_with_plugin("key.lua");
  const std::string key_err = run_exe({"validate", key_plugin.string()}, 10).err;
  for (const auto& [err, expect] : std::vector<std::pair<std::string, std::string>>{
           {env_err, "env.lua: error: not a Lua script: it is not UTF-8 text"},
           {key_err, "key.lua:1: error: not a Lua script: its first statement does not parse (its content is not shown)"},
           {run_exe({"validate", hf("env.json").string()}, 10).err, "env.json: error: not a JSON file: it is not UTF-8 text"},
           {run_exe({"validate", hf("key.json").string()}, 10).err, "key.json: error: not a JSON file: its first line does not open an object or a list"},
           {run_exe({"validate", (f.dir / "key.yaml").string()}, 10).err, "key.yaml: error: not a YAML file: its first line is not a key, a list item or a flow collection"}}) {
    INFO(err);
    CHECK(err.find(expect) != std::string::npos);
    CHECK(err.find("hunter2") == std::string::npos);
    CHECK(err.find("SECRET") == std::string::npos);
    CHECK(err.find("/usr/bin") == std::string::npos);
  }
  // a platform file of the catalog: the same
  fs::create_directories(f.dir / "hw");
  std::ofstream(f.dir / "hw" / "x.yaml") << secret << "\n";
  Proc hw = run_exe({"hw", "list", "--hw-dir", (f.dir / "hw").string()}, 10);
  CHECK(hw.err.find("x.yaml: error: not a YAML file") != std::string::npos);
  CHECK(hw.err.find("hunter2") == std::string::npos);
  // a real plugin's typo in its first statement is still shown, line and all (it opens as one)
  std::ofstream(f.dir / "typo.lua") << "rsim.op { name = 'x' cost = 1 }\n";
  fs::path typo = f.scenario_with_plugin("typo.lua");
  CHECK(run_exe({"validate", typo.string()}, 10).err.find("typo.lua:1:1: error: Lua syntax error: '}' expected near 'cost'\nrsim.op { name = 'x' cost = 1 }\n") !=
        std::string::npos);
  // and an inline `lua:` block is the scenario's own text: its first statement's error is shown
  // (line 6: the block starts on the line after `lua: |`; the block's text without its indent)
  fs::path inline_lua = f.dir / "inline.yaml";
  std::ofstream(inline_lua) << "name: t\nplatforms: [rtx3080]\nnetworks:\n  - {name: n, input: [1, 4], layers: [{op: relu}]}\nlua: |\n  x = = 1\n";
  CHECK(run_exe({"validate", inline_lua.string()}, 10).err.find("inline.yaml:6:1: error: Lua syntax error: unexpected symbol near '='\nx = = 1\n") !=
        std::string::npos);
}

TEST_CASE("output discipline: -o onto a device or through a link to one is refused, a lost stdout is an error", "[files]") {
  Folder f("outputs");
  const std::string scenario = src("scenarios/fc_sweep.yaml");
  {  // rsim plan -o /dev/null would have replaced the device node with a file (as root)
    Proc p = run_exe({"plan", scenario, "-o", "/dev/null"}, 20);
    check_exit1(p);
    CHECK(p.err == "rsim: error: cannot write '/dev/null': it is a character device (rsim writes regular files only; give a file's path)\n");
    struct stat st {};
    REQUIRE(::stat("/dev/null", &st) == 0);
    CHECK(S_ISCHR(st.st_mode));
  }
  {  // a symbolic link to a device: refused, the link left in place
    fs::create_symlink("/dev/null", f.dir / "out.json");
    Proc p = run_exe({"plan", scenario, "-o", (f.dir / "out.json").string()}, 20);
    check_exit1(p);
    CHECK(p.err.find("it is a symbolic link to something other than a regular file") != std::string::npos);
    CHECK(fs::is_symlink(f.dir / "out.json"));
  }
  {  // a symbolic link to a regular file: the file is written, the link stays
    std::ofstream(f.dir / "real.json") << "old";
    fs::create_symlink(f.dir / "real.json", f.dir / "link.json");
    Proc p = run_exe({"plan", scenario, "-o", (f.dir / "link.json").string()}, 20);
    CHECK(p.code == 0);
    CHECK(fs::is_symlink(f.dir / "link.json"));
    std::ifstream in(f.dir / "real.json");
    std::string first;
    std::getline(in, first);
    CHECK(first.rfind("{\"rsim_plan\":1,", 0) == 0);
  }
  {  // `-o -` is standard output: the plan is printed and no file named '-' is made
    Proc p = run_exe({"plan", scenario, "-o", "-"}, 20);
    CHECK(p.code == 0);
    CHECK(p.out.rfind("{\"rsim_plan\":1,", 0) == 0);
    CHECK_FALSE(fs::exists(fs::current_path() / "-"));
  }
  {  // standard output on a full device: exit 1 and say so (was 0)
    const std::string cmd = std::string(RSIM_BINARY) + " schema > /dev/full 2> " + (f.dir / "err.txt").string();
    int status = std::system(cmd.c_str());
    CHECK(WIFEXITED(status));
    CHECK(WEXITSTATUS(status) == 1);
    std::ifstream in(f.dir / "err.txt");
    std::string line;
    std::getline(in, line);
    CHECK(line == "rsim: error: cannot write to standard output (a full disk, a closed pipe?): the output is incomplete");
  }
}

TEST_CASE("calibrate: a NaN, inf or negative time is an error at its line, another platform's measurements are a warning", "[files]") {
  Folder f("calibrate_values");
  // a measured.csv by hand: the columns rsim calibrate reads, two relus measured on i5_6300u
  const std::string header =
      "platform,network,layer,op,flops,flops_executed,macs,macs_executed,mac_count,bytes,derated_peak_flops_per_s,"
      "derated_bandwidth_bytes_per_s,bound,measured_time_s\n";
  auto csv = [&](const std::string& name, const std::string& platform, const std::string& t2) {
    std::ofstream(f.dir / name) << header << platform << ",n,a,relu,1000,1000,0,0,conventional,8000,1e11,1e10,memory,1e-6\n"
                                << platform << ",n,b,relu,1000,1000,0,0,conventional,16000,1e11,1e10,memory," << t2 << "\n";
    return (f.dir / name).string();
  };
  const std::string platform = src("hardware/i5_6300u.yaml");
  for (const std::string& bad : {std::string("inf"), std::string("nan"), std::string("-1e-6"), std::string("fast")}) {
    INFO(bad);
    const std::string file = csv("bad.csv", "i5_6300u", bad);
    Proc p = run_exe({"calibrate", file, "--platform", platform, "-o", (f.dir / "c.yaml").string()}, 20);
    check_exit1(p);
    // line 3: the header is line 1, the first relu line 2
    CHECK(p.err == "rsim: error: " + file + ":3: measured_time_s is '" + bad +
                       "': a measured time is a finite number of seconds ≥ 0 (empty: the layer was not timed)\n");
    CHECK_FALSE(fs::exists(f.dir / "c.yaml"));
  }
  {  // measured against another platform: calibrated all the same, with a warning naming both
    const std::string file = csv("other.csv", "rtx3080", "2e-6");
    Proc p = run_exe({"calibrate", file, "--platform", platform, "-o", (f.dir / "c.yaml").string()}, 20);
    CHECK(p.code == 0);
    CHECK(p.err.find("rsim: warning: layers in the measured files were evaluated on platform 'rtx3080', not on --platform's 'i5_6300u'") == 0);
  }
}

TEST_CASE("hf configs: heads that do not divide hidden, and sizes beyond any model, are refused at once", "[files]") {
  Folder f("hf_sizes");
  auto run_config = [&](const std::string& json) {
    std::ofstream(f.dir / "c.json") << json;
    std::ofstream(f.dir / "s.yaml") << "name: t\nplatforms: [h100_sxm]\nnetworks:\n  - {model: hf, args: {config: c.json}}\n";
    return validate(f.dir / "s.yaml");
  };
  const std::string base = R"("model_type": "llama", "hidden_size": 4096, "intermediate_size": 11008, "vocab_size": 32000)";
  {  // 4096 / 6 = 682.67 features a head: Hugging Face rejects it; rsim ran it at 6 × 682 = 4092
    Proc p = run_config("{" + base + R"(, "num_hidden_layers": 2, "num_attention_heads": 6})");
    check_exit1(p);
    CHECK(p.err.find("error: num_attention_heads (6) does not divide hidden_size (4096)") != std::string::npos);
  }
  {  // 32 query heads over 6 KV heads: named by both the config's keys and rsim's parameters, at the key
    Proc p = run_config("{" + base + R"(, "num_hidden_layers": 2, "num_attention_heads": 32, "num_key_value_heads": 6})");
    check_exit1(p);
    CHECK(p.err.find("c.json:1:") != std::string::npos);
    CHECK(p.err.find("error: num_key_value_heads (kv_heads) = 6 does not divide num_attention_heads (heads) = 32") != std::string::npos);
  }
  {  // 10^9 layers: refused at the key, without building anything (bounded by the validate timeout of 10 s)
    Proc p = run_config("{" + base + R"(, "num_hidden_layers": 1000000000, "num_attention_heads": 32})");
    check_exit1(p);
    CHECK(p.err.find("error: num_hidden_layers = 1000000000 is beyond any model (at most 10000)") != std::string::npos);
    CHECK(p.secs < 5);
  }
}

TEST_CASE("an --out that is a symbolic link is refused, naming it, and the link and its folder are left as they were", "[files]") {
  Folder f("out_link");
  fs::create_directories(f.dir / "real");
  std::ofstream(f.dir / "real" / "mine.txt") << "keep";
  fs::create_directory_symlink(f.dir / "real", f.dir / "link");
  Proc p = run_exe({"run", src("scenarios/fc_sweep.yaml"), "--out", (f.dir / "link").string()}, 60);
  check_exit1(p);
  CHECK(p.err == "rsim: error: output folder '" + (f.dir / "link").string() + "' is a symbolic link (to '" + (f.dir / "real").string() +
                     "'); rsim replaces its output folder as a whole: give the folder itself\n");
  CHECK(fs::is_symlink(f.dir / "link"));
  CHECK(fs::exists(f.dir / "real" / "mine.txt"));
  CHECK_FALSE(fs::exists(f.dir / "real" / "results.csv"));
  fs::create_directory_symlink(f.dir / "nowhere", f.dir / "dangling");
  Proc q = run_exe({"run", src("scenarios/fc_sweep.yaml"), "--out", (f.dir / "dangling").string()}, 60);
  check_exit1(q);
  CHECK(q.err.find("is a symbolic link to nothing") != std::string::npos);
}

TEST_CASE("a file nested too deeply says so, and a long offending line is shown around its column", "[files]") {
  Folder f("deep");
  {  // 100,000 nested lists: "nests too deeply", not yaml-cpp's "bad file"
    std::ofstream(f.dir / "deep.yaml") << "name: t\nx: " << std::string(100000, '[') << std::string(100000, ']') << "\n";
    Proc p = validate(f.dir / "deep.yaml");
    check_exit1(p);
    CHECK(p.err.find("error: the file nests too deeply to read") != std::string::npos);
    CHECK(p.err.find("bad file") == std::string::npos);
    CHECK(p.err.size() < 1000);  // the 200,003-character line is not printed whole
  }
  {  // an error at column 310 of a 312-character line: 60 characters before it, "..." for the rest;
     // the caret under the ':' that yaml-cpp points at (line[309]: after "x: ", 300 a's and " bogus")
    std::ofstream(f.dir / "long.yaml") << "name: t\nx: " << std::string(300, 'a') << " bogus: [\n";
    Proc p = validate(f.dir / "long.yaml");
    check_exit1(p);
    const std::string shown = "..." + std::string(54, 'a') + " bogus: [\n";
    const std::string caret = std::string(63, ' ') + "^\n";
    CHECK(p.err == (f.dir / "long.yaml").string() + ":2:310: error: illegal map value\n" + shown + caret);
  }
}

TEST_CASE("calibrate --drop-bad-rows leaves out rows with a bad time and counts them, and a networks file's inf is an error too", "[files]") {
  Folder f("calibrate_drop");
  const std::string header =
      "platform,network,layer,op,flops,flops_executed,macs,macs_executed,mac_count,bytes,derated_peak_flops_per_s,"
      "derated_bandwidth_bytes_per_s,bound,measured_time_s\n";
  // three relus: two good, one inf
  std::ofstream(f.dir / "m.csv") << header << "i5_6300u,n,a,relu,1000,1000,0,0,conventional,8000,1e11,1e10,memory,1e-6\n"
                                 << "i5_6300u,n,b,relu,1000,1000,0,0,conventional,16000,1e11,1e10,memory,inf\n"
                                 << "i5_6300u,n,c,relu,1000,1000,0,0,conventional,32000,1e11,1e10,memory,4e-6\n";
  const std::string platform = src("hardware/i5_6300u.yaml");
  Proc p = run_exe({"calibrate", (f.dir / "m.csv").string(), "--platform", platform, "-o", (f.dir / "c.yaml").string(), "--drop-bad-rows"}, 20);
  CHECK(p.code == 0);
  CHECK(p.err.find("rsim: warning: left out 1 row whose measured time is not a finite number ≥ 0 (--drop-bad-rows)") != std::string::npos);
  CHECK(fs::exists(f.dir / "c.yaml"));
  // a measured_networks.csv with an inf: an error at its line (it was skipped in silence)
  std::ofstream(f.dir / "n.csv") << "network,execution,measured_time_s\nn,graph,0.001\nn2,eager,inf\n";
  Proc q = run_exe({"calibrate", (f.dir / "m.csv").string(), (f.dir / "n.csv").string(), "--platform", platform, "-o", (f.dir / "d.yaml").string()}, 20);
  check_exit1(q);
  CHECK(q.err.find(":3: measured_time_s is 'inf': a measured time is a finite number of seconds ≥ 0") != std::string::npos);
  CHECK_FALSE(fs::exists(f.dir / "d.yaml"));
}

TEST_CASE("rsim validate counts a request's every decode step among its layer evaluations", "[files][llm]") {
  Folder f("validate_request");
  std::ofstream(f.dir / "c.json") << R"({"model_type": "llama", "hidden_size": 256, "intermediate_size": 512, "vocab_size": 1000,
                                         "num_hidden_layers": 2, "num_attention_heads": 4})";
  auto evaluations = [&](const std::string& entry) {
    std::ofstream(f.dir / "s.yaml") << "name: t\nplatforms: [h100_sxm]\nnetworks:\n  - " + entry + "\n";
    Proc p = validate(f.dir / "s.yaml");
    CHECK(p.code == 0);
    const size_t at = p.out.find(" layer evaluations)");
    REQUIRE(at != std::string::npos);
    const size_t from = p.out.rfind(' ', at - 1) + 1;
    return std::stod(p.out.substr(from, at - from));
  };
  const double prefill = evaluations("{model: hf, args: {config: c.json, seq: 10}}");
  const double decode = evaluations("{model: hf, args: {config: c.json, phase: decode, context: 10}}");
  CHECK(prefill > 0);
  CHECK(decode > 0);
  // prompt 10, generate 4: the prefill, then decode steps at contexts 10, 11, 12, 13
  CHECK(evaluations("{model: hf, args: {config: c.json}, request: {prompt: 10, generate: 4}}") == prefill + 4 * decode);
}
