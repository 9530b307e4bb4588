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
  {
    Proc p = validate(f.scenario_with_plugin("/dev/zero"));
    check_exit1(p);
    CHECK(p.err == expect("/dev/zero", "/dev/zero", "it is a character device, not a regular file"));
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
