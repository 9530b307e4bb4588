// Hostile scripts, run through the real executable: each ends with exit 1 (never a signal), an
// error naming the script file and line, well inside the hang guard, and with memory under the cap.
#include <catch2/catch.hpp>
#include <filesystem>
#include <cstdio>
#include <cstdlib>
#include <fstream>

#include "helpers.hpp"
#include "proc.hpp"

using namespace rsim;
using namespace rsim::test;
namespace fs = std::filesystem;

namespace {

#if defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define RSIM_TEST_SANITIZED 1
#endif
#endif
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__) || defined(RSIM_TEST_SANITIZED)
constexpr bool kSanitized = true;  // ASan keeps freed memory in quarantine: peak memory means nothing
#else
constexpr bool kSanitized = false;
#endif

// A scenario of two layers of the plugin's operator `custom` (or of relu), 16 MiB per Lua state.
struct Hostile {
  fs::path dir, plugin, scenario;
  explicit Hostile(const std::string& name, const std::string& lua, bool custom = true) {
    dir = fs::temp_directory_path() / ("rsim_hostile_" + name + "_" + std::to_string(::getpid()));
    fs::remove_all(dir);
    fs::create_directories(dir);
    plugin = dir / "hostile.lua";
    scenario = dir / "s.yaml";
    std::ofstream(plugin) << lua;
    std::string op = custom ? "custom" : "relu";
    std::ofstream(scenario) << "name: h\nplugins: [hostile.lua]\nplatforms: [rtx3080]\nlimits: {memory: 16 MiB}\nnetworks:\n"
                               "  - name: n\n    input: [1, 8, 4, 4]\n    layers:\n      - {name: a, op: " +
                                   op + "}\n      - {name: b, op: " + op + "}\n";
  }
  ~Hostile() { fs::remove_all(dir); }
  Proc run() const { return run_exe({"run", scenario.string(), "--out", (dir / "out").string(), "--no-plots", "-q"}); }
};

// Defines `custom` (line 1) with the given cost body (line 2).
std::string custom_op(const std::string& cost_line = "return {macs = 1, flops = 1}") {
  return "rsim.op {name = 'custom', cost = function(inputs, outputs, attrs, dtype)\n  " + cost_line + "\nend}\n";
}

long peak_kib_of_benign() {
  static long kib = [] {
    Hostile h("benign", custom_op());
    Proc p = h.run();
    REQUIRE(p.code == 0);
    return p.max_rss_kib;
  }();
  return kib;
}

// exit 1, no signal, the script named at `line`, the message, memory under the cap
void check_hostile(const std::string& name, const std::string& lua, int line, const std::string& message, bool custom = true) {
  INFO(name);
  Hostile h(name, lua, custom);
  Proc p = h.run();
  INFO(p.err.substr(0, 2000));
  CHECK_FALSE(p.timed_out);
  CHECK(p.signal == 0);
  CHECK(p.exited);
  CHECK(p.code == 1);
  // named in the message (a rule's error) or as the diagnostic's location (an error while loading)
  std::string file = h.plugin.lexically_normal().string() + ":" + std::to_string(line);
  bool named = p.err.find(file + ": " + message) != std::string::npos;
  if (p.err.rfind(file + ":", 0) == 0) {  // file:line:col: error: message
    size_t col_end = p.err.find(':', file.size() + 1);
    std::string rest = ": error: " + message + "\n";
    named = named || (col_end != std::string::npos && p.err.compare(col_end, rest.size(), rest) == 0);
  }
  CHECK(named);
  if (std::getenv("RSIM_TEST_TIMES")) std::fprintf(stderr, "%-18s %.2f s  %ld KiB\n", name.c_str(), p.secs, p.max_rss_kib);
  if (!kSanitized) CHECK(p.max_rss_kib < peak_kib_of_benign() + 16 * 1024 + 16 * 1024);  // baseline + cap + slack
}

const std::string kBudget = "script ran for more than 10000000 instructions (an endless loop? raise limits.instructions if not)";
const std::string kMemory = "script used more than 16 MiB of memory (limits.memory)";

}  // namespace

TEST_CASE("sandbox: values a script returns are read raw, never through its metamethods", "[scripting][sandbox]") {
  check_hostile("eff_index_error",
                "rsim.efficiency(function(layer, platform)\n"
                "  return setmetatable({}, {__index = function() error('no') end})\nend)\n",
                1, "efficiency model for layer 'a' on 'rtx3080': the result has a metatable; return a plain table", false);
  check_hostile("eff_index_loop",
                "rsim.efficiency(function(layer, platform)\n"
                "  return setmetatable({}, {__index = function() while true do end end})\nend)\n",
                1, "efficiency model for layer 'a' on 'rtx3080': the result has a metatable; return a plain table", false);
  check_hostile("cost_len_error",
                custom_op("return {macs = 1, flops = 1, input_bytes = setmetatable({}, {__len = function() error('no') end})}"), 1,
                "custom operator 'custom': 'input_bytes' has a metatable; return a plain list");
  check_hostile("infer_len_loop",
                "rsim.op {name = 'custom', cost = function() return {macs = 1, flops = 1} end,\n"
                "  infer = function(inputs) return {setmetatable({}, {__len = function() while true do end end})} end}\n",
                2, "custom operator 'custom': infer's output 1 has a metatable; return a plain list");
  check_hostile("metric_index",
                "rsim.metric('m', function(row)\n  return setmetatable({}, {__index = function() error('no') end})\nend)\n", 1,
                "metric 'm' for layer 'a' on 'rtx3080': must return a number, got a table", false);
}

TEST_CASE("sandbox: tables handed to rules may be given metatables without harm", "[scripting][sandbox]") {
  Hostile h("attrs_meta", "rsim.op {name = 'custom', attrs = {k = {type = 'int', default = 2}}, cost = function(inputs, outputs, attrs)\n"
                          "  setmetatable(attrs, {__index = function() error('no') end, __newindex = function() error('no') end})\n"
                          "  setmetatable(inputs, {__len = function() error('no') end})\n"
                          "  return {macs = attrs.k, flops = 0}\nend}\n");
  Proc p = h.run();
  INFO(p.err);
  CHECK(p.exited);
  CHECK(p.code == 0);
}

TEST_CASE("sandbox: a cyclic table handed to rsim.cost is a clean error", "[scripting][sandbox]") {
  check_hostile("cyclic_cost",
                "local t = {}\nt[1] = t\n"
                "rsim.cost.conv2d {input = {1, 3, 8, 8}, out_channels = 4, kernel = t}\n",
                3, "rsim.cost.conv2d: 'kernel' is nested more than 8 tables deep (a cycle?)");
}

TEST_CASE("sandbox: budget and memory errors cannot be caught", "[scripting][sandbox]") {
  check_hostile("pcall_budget", "while true do\n  pcall(function() while true do end end)\nend\n", 2, kBudget);
  check_hostile("pcall_memory", "while true do\n  pcall(function() local t = {} for i = 1, 1e9 do t[i] = i end end)\nend\n", 2, kMemory);
  check_hostile("xpcall_handler", "while true do\n  xpcall(error, function() while true do end end)\nend\n", 2, kBudget);
  check_hostile("pcall_in_pcall",
                "for i = 1, 1e9 do\n  pcall(pcall, pcall, function() local s = '' while true do s = s .. 'x' end end)\nend\n", 2, kBudget);
}

TEST_CASE("sandbox: no finalizers (Lua runs them with hooks off, outside any budget)", "[scripting][sandbox]") {
  check_hostile("gc_load", custom_op() + "setmetatable({}, {__gc = function()\n  while true do pcall(function() while true do end end) end\nend})\n", 4,
                "setmetatable: finalizers (__gc) are not available in rsim's sandbox");
  check_hostile("gc_metric",
                "rsim.metric('m', function(row)\n"
                "  setmetatable({}, {__gc = function()\n    while true do pcall(function() while true do end end) end\n  end})\n"
                "  local t = {} for i = 1, 100000 do t[i] = {} end return 1\nend)\n",
                2, "setmetatable: finalizers (__gc) are not available in rsim's sandbox", false);
}

TEST_CASE("sandbox: string functions that work inside C count against the budget", "[scripting][sandbox]") {
  check_hostile("find_backtrack", "local s = ('a'):rep(5000)\nreturn s:find('.-.-.-.-.-.-b')\n", 2, kBudget);
  check_hostile("match_backtrack", "local s = ('a'):rep(3000)\nreturn s:match('(.*)(.*)(.*)(.*)b')\n", 2, kBudget);
  check_hostile("gsub_backtrack", "local s = ('a'):rep(3000)\nreturn s:gsub('a*a*a*a*b', '')\n", 2, kBudget);
  check_hostile("gmatch_backtrack", "local s = ('a'):rep(3000)\nfor w in s:gmatch('.-.-.-.-b') do end\n", 2, kBudget);
  check_hostile("rep_loop", "while true do\n  local s = string.rep('x', 4 * 2^20)\nend\n", 2, kBudget);
  check_hostile("rep_empty", "return ('').rep('', 2^52)\n", 1, kBudget);
  check_hostile("plain_find_loop", "local s = string.rep('x', 4 * 2^20)\nwhile true do\n  s:find('y', 1, true)\nend\n", 3, kBudget);
  check_hostile("load_loop", "local c = string.rep(' ', 4e6) .. 'return 1'\nwhile true do\n  load(c)\nend\n", 3, kBudget);
  check_hostile("format_loop", "local s = string.rep('x', 2^20)\nwhile true do\n  local f = string.format('%s%s%s', s, s, s)\nend\n", 3, kBudget);
  check_hostile("tonumber_loop", "local s = string.rep('1', 4 * 2^20)\nwhile true do\n  tonumber(s)\nend\n", 3, kBudget);
  check_hostile("remove_loop", "local t = {} for i = 1, 500000 do t[i] = i end\nwhile true do\n  table.insert(t, 1, 0) table.remove(t, 1)\nend\n", 3, kBudget);
}

TEST_CASE("sandbox: errors in functions rsim gives to scripts leak nothing", "[scripting][sandbox]") {
  check_hostile("print_tostring",
                "-- all on line 2: the budget runs out in __tostring or in the loop\n"
                "for i = 1, 1e9 do pcall(print, setmetatable({}, {__tostring = function() error('no') end})) end\n",
                2, kBudget);
  check_hostile("cost_bad_args",
                "for i = 1, 1e9 do\n  pcall(rsim.cost.conv2d, {input = {1, 3, 8, 8}, out_channels = 4, kernel = 3, bogus = string.rep('x', 100)})\nend\n", 2,
                kBudget);
  check_hostile("op_bad_args", "for i = 1, 1e9 do\n  pcall(rsim.op, {name = 'x', attrs = {a = {type = 'bogus', doc = string.rep('x', 100)}}})\nend\n", 2,
                kBudget);
}
