// Lua hooks: custom operators, the efficiency model, derived metrics, and the sandbox.
#include <algorithm>
#include <catch2/catch.hpp>
#include <cmath>
#include <filesystem>
#include <fstream>

#include "helpers.hpp"
#include "scripting/lua_host.hpp"

using namespace rsim;
using namespace rsim::test;

namespace {

RunResult run_scripted(const Scenario& s, int jobs = 1) { return run(s, jobs); }

// A one-layer scenario around an inline script; the layer line is line 8.
std::string with_script(const std::string& lua, const std::string& layer = "{name: x, op: custom}", const std::string& extra = "") {
  return "name: t\nplatforms: [rtx3080]\n" + extra +
         "networks:\n  - name: n\n    input: [1, 8, 4, 4]\n    layers:\n      - " + layer + "\nlua: |\n" + lua;
}

std::string custom_op(const std::string& cost_body) {
  return "  rsim.op { name = 'custom', cost = function(inputs, outputs, attrs, dtype)\n    " + cost_body + "\n  end }\n";
}

std::string script_error(const std::string& yaml) {
  return error_of([&] { run_scripted(parse_scenario(yaml, "t.yaml")); });
}

const Row& layer_row(const RunResult& r, size_t point, const std::string& platform, const std::string& name) {
  for (const Row& row : r.results.at(point).rows)
    if (row.platform == platform && row.layer == name) return row;
  throw std::runtime_error("no row " + name);
}

}  // namespace

TEST_CASE("scripted operators cost what their scripts say, composed from built-ins", "[scripting]") {
  RunResult r = run_scripted(load_scenario(src("scenarios/custom_ops.yaml")));
  // swish_beta on 1×64×56×56: 6 FLOPs per element
  const Row& sw = layer_row(r, 0, "rtx3080", "swish");
  CHECK(sw.cost.flops == 6.0 * 64 * 56 * 56);
  CHECK(sw.cost.macs == 0);
  CHECK(sw.cost.input_total() == 64.0 * 56 * 56 * 4);  // bytes derived from shapes like a built-in
  // conv_bn_relu: the conv's MACs (64→64, 3×3, 56×56), + 1 FLOP per output for the ReLU;
  // params: conv weights (no bias) + BN γ, β; bytes: input + weights(+BN shift) + output only
  const Row& fused = layer_row(r, 0, "rtx3080", "fused");
  double macs = 56.0 * 56 * 64 * 64 * 9;
  CHECK(fused.cost.macs == macs);
  CHECK(fused.cost.flops == 2 * macs + 64.0 * 56 * 56);
  CHECK(fused.cost.params == 64.0 * 64 * 9 + 2 * 64);
  CHECK(fused.bytes == (64.0 * 56 * 56 + (64.0 * 64 * 9 + 64) + 64.0 * 56 * 56) * 4);
  // self_attention over (1, 128, 512): MACs = 2·T·T·D, FLOPs = 2·MACs + 6·T·T
  const Row& attn = layer_row(r, 0, "rtx3080", "attn");
  CHECK(attn.cost.macs == 2.0 * 128 * 128 * 512);
  CHECK(attn.cost.flops == 4.0 * 128 * 128 * 512 + 6.0 * 128 * 128);
  CHECK(attn.cost.input_total() == (2.0 * 128 * 512 + 128.0 * 128) * 4);
  CHECK(attn.output_shapes == "1x128x512");
  // the scenarios README's claim: at 128 tokens under the RTX 3080 ridge (29.8e12 / 760.32e9 = 39.19),
  // bytes = in (2·128·512 + 128²)·4 + out (128·512 + 128²)·4
  double attn_bytes = (2.0 * 128 * 512 + 128.0 * 128) * 4 + (128.0 * 512 + 128.0 * 128) * 4;
  CHECK(attn.theoretical.intensity == Approx((4.0 * 128 * 128 * 512 + 6.0 * 128 * 128) / attn_bytes));
  CHECK(attn.theoretical.bound == Bound::Memory);
  CHECK(layer_row(r, 1, "rtx3080", "attn").theoretical.bound == Bound::Compute);  // 512 tokens
}

TEST_CASE("the efficiency model scales the derated roofs, metrics become columns", "[scripting]") {
  Scenario s = load_scenario(src("scenarios/depthwise_efficiency.yaml"));
  RunResult r = run_scripted(s);
  REQUIRE(r.metric_names == std::vector<std::string>{"energy_j", "time_at_70pct_s"});
  const Row& dw = layer_row(r, 2, "xeon_silver_4210_2s", "dw");  // 512 channels
  CHECK(dw.efficiency.compute == 0.3);
  CHECK(dw.derated.peak_flops_per_s == Approx(960e9 * 0.3));
  const Row& pw = layer_row(r, 2, "xeon_silver_4210_2s", "pw");
  CHECK(pw.efficiency.compute == 1.0);  // 2·56·56·512·512 FLOPs: not small
  // dw by hand: 3×3 depthwise over 512×56×56 with a bias (conv2d's default)
  const double dw_flops = 2.0 * 512 * 56 * 56 * 9;                         // 28,901,376
  const double dw_bytes = (512.0 * 56 * 56 + (512.0 * 9 + 512) + 512.0 * 56 * 56) * 4;  // in, weights+bias, out
  CHECK(dw.cost.flops == dw_flops);
  CHECK(dw.bytes == dw_bytes);  // (1,605,632 + 5,120 + 1,605,632) · 4 = 12,865,536
  // energy = FLOPs · 1 pJ + bytes · 20 pJ
  CHECK(dw.metrics[0] == Approx((dw_flops * 1.0 + dw_bytes * 20.0) * 1e-12));
  // derated time: 28.9 MFLOP over 960 GFLOP/s × 0.3 = 100.4 us vs 12.87 MB over 76.8 GB/s = 167.5 us:
  // memory bound
  CHECK(dw.metrics[1] == Approx(std::max(dw_flops / (960e9 * 0.3), dw_bytes / 76.8e9) / 0.7));
  CHECK(dw.metrics[1] == Approx(dw_bytes / 76.8e9 / 0.7));
  std::string csv = results_csv(r, s);
  CHECK(csv.substr(0, csv.find('\n')).find(",efficiency_compute,efficiency_bandwidth,flops_per_mac,memory_model,comm_bytes,comm_time_s,collective,energy_j,time_at_70pct_s") !=
        std::string::npos);
}

TEST_CASE("one and two workers give byte-identical results with scripts", "[scripting][parallel]") {
  Scenario s = load_scenario(src("scenarios/custom_ops.yaml"));
  CHECK(results_csv(run_scripted(s, 1), s) == results_csv(run_scripted(s, 2), s));
  Scenario e = load_scenario(src("scenarios/depthwise_efficiency.yaml"));
  CHECK(results_csv(run_scripted(e, 1), e) == results_csv(run_scripted(e, 2), e));
}

TEST_CASE("a cost function's bad result names the script, the operator and the field", "[scripting][errors]") {
  // the layer is t.yaml:7:9 (name, platforms, networks, - name, input, layers, the layer); `lua: |`
  // is line 8, so the cost function is defined on line 9
  auto first_line = [&](const std::string& body) {
    std::string e = script_error(with_script(custom_op(body)));
    return e.substr(0, e.find('\n'));
  };
  const std::string at = "t.yaml:7:9: error: layer 'x' (custom): t.yaml:9: custom operator 'custom': ";
  CHECK(first_line("return { flops = 1 }") == at + "the cost function's result has no 'macs'");
  CHECK(first_line("return { macs = 0, flops = 'many' }") == at + "'flops' must be a number, got a string");
  CHECK(first_line("return { macs = -5, flops = 0 }") == at + "'macs' is negative (-5)");
  CHECK(first_line("return { macs = 0, flops = 0/0 }") == at + "'flops' is NaN");
  CHECK(first_line("return { macs = 0, flops = math.huge }") == at + "'flops' is infinite");
  CHECK(first_line("return { macs = 1e308, flops = 0 }") == at + "'macs' is 1e+308, beyond any real layer (at most 1e30)");
  CHECK(first_line("return { macs = 0, flops = 0, input_bytes = {1, 2} }") == at + "'input_bytes' has 2 entries for 1 tensors");
  CHECK(first_line("return { macs = 0, flops = 0, output_bytes = {-1} }") == at + "'output_bytes[1]' must be a finite number from 0 to 1e30");
  CHECK(first_line("return 42") == at + "cost must return a table {macs = ..., flops = ..., ...}, got a number");
  CHECK(first_line("return setmetatable({}, {__index = function() return 1 end})") ==
        at + "the cost function's result has a metatable; return a plain table");
}

TEST_CASE("an error inside a cost function: script line, traceback, layer and sweep point", "[scripting][errors]") {
  std::string lua = "  local function deep(n) error('boom at ' .. n) end\n" + custom_op("deep(3)");
  std::string e = script_error(with_script(lua, "{name: x, op: custom}", "sweep: {grid: {k: [1]}}\n"));
  // t.yaml line 8 is the layer (after name, platforms, sweep, networks, - name, input, layers);
  // `lua: |` is line 9, so the script's first line, where `error` is called, is line 10
  CHECK(e == "t.yaml:8:9: error: layer 'x' (custom): t.yaml:10: boom at 3\n"
             "      - {name: x, op: custom}\n"
             "        ^\n"
             "note: input shape: 1x8x4x4\n"
             "note: stack traceback:\n"
             "note: [C]: in function 'error'\n"
             "note: t.yaml:10: in upvalue 'deep'\n"
             "note: t.yaml:12: in function <t.yaml:11>\n"
             "note: at sweep point 0: k=1\n");
}

TEST_CASE("a Lua syntax error points into the script file", "[scripting][errors]") {
  auto dir = std::filesystem::temp_directory_path() / ("rsim_lua_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  std::ofstream(dir / "bad.lua") << "-- a comment\nrsim.op { name = 'x' cost = 1 }\n";
  std::ofstream(dir / "s.yaml") << "name: t\nplugins: [bad.lua]\nplatforms: [rtx3080]\nnetworks:\n  - {name: n, input: [1, 4], layers: [{op: relu}]}\n";
  std::string e = error_of([&] { setup_scripts(load_scenario((dir / "s.yaml").string())); });
  std::string path = (dir / "bad.lua").lexically_normal().string();
  CHECK(e.rfind(path + ":2:1: error: Lua syntax error: '}' expected near 'cost'\n"
                       "rsim.op { name = 'x' cost = 1 }\n"
                       "^\n",
                0) == 0);
  CHECK(e.substr(e.find("^\n") + 2) == (dir / "s.yaml").lexically_normal().string() + ":2:11: note: script loaded here\n");
  std::filesystem::remove_all(dir);
}

TEST_CASE("the sandbox: hostile scripts end in clean errors", "[scripting][sandbox]") {
  // The script is t.yaml's line 9 (after `lua: |` on line 8); messages show the script's text.
  // (Time and memory of hostile scripts are checked on the real executable in test_sandbox.cpp.)
  struct Case {
    const char* what;
    std::string lua, message, trace;
  };
  const std::string main_chunk = "note: stack traceback:\nnote: t.yaml:9: in main chunk\n";
  std::vector<Case> cases = {
      {"endless loop", "while true do end", "script ran for more than 10000000 instructions (an endless loop? raise limits.instructions if not)",
       main_chunk},
      {"memory bomb", "local s = 'x' while true do s = s .. s end", "script used more than 64 MiB of memory (limits.memory)", main_chunk},
      {"endless table", "local t = {} local i = 0 while true do i = i + 1 t[i] = i end", "script used more than 64 MiB of memory (limits.memory)",
       main_chunk},
      {"os.execute", "os.execute('touch /tmp/rsim_pwned')", "attempt to index a nil value (global 'os')", main_chunk},
      {"io.open", "io.open('/etc/passwd')", "attempt to index a nil value (global 'io')", main_chunk},
      {"require", "require('os')", "attempt to call a nil value (global 'require')", main_chunk},
      {"dofile", "dofile('/etc/passwd')", "attempt to call a nil value (global 'dofile')", main_chunk},
      {"bytecode", "assert(load('\\27LuaT\\0\\25\\147\\r\\n\\26\\n'))", "attempt to load a binary chunk (mode is 't')",
       "note: stack traceback:\nnote: [C]: in function 'assert'\nnote: t.yaml:9: in main chunk\n"},
      {"string.dump", "string.dump(print)", "attempt to call a nil value (field 'dump')", main_chunk},
  };
  for (const Case& c : cases) {
    INFO(c.what);
    std::string e = script_error(with_script("  " + c.lua + "\n", "{op: relu}"));
    CHECK(e == "t.yaml:9:1: error: " + c.message + "\n" + c.lua + "\n^\n" + c.trace + "t.yaml:8:6: note: script loaded here\n");
  }
  // deep recursion: the traceback is Lua's, cut to 12 lines
  std::string e = script_error(with_script("  local function f(n) return 1 + f(n + 1) end f(1)\n", "{op: relu}"));
  CHECK(e.rfind("t.yaml:9:1: error: stack overflow\nlocal function f(n) return 1 + f(n + 1) end f(1)\n^\nnote: stack traceback:\n"
                "note: t.yaml:9: in upvalue 'f'\n", 0) == 0);
  CHECK_FALSE(std::filesystem::exists("/tmp/rsim_pwned"));
}

TEST_CASE("the sandbox limits are settable within bounds", "[scripting][sandbox]") {
  std::string e = script_error(with_script("  local n = 0 while n < 100000 do n = n + 1 end\n", "{op: relu}", "limits: {instructions: 10000}\n"));
  CHECK(e ==
        "t.yaml:10:1: error: script ran for more than 10000 instructions (an endless loop? raise limits.instructions if not)\n"
        "local n = 0 while n < 100000 do n = n + 1 end\n"
        "^\n"
        "note: stack traceback:\n"
        "note: t.yaml:10: in main chunk\n"
        "t.yaml:9:6: note: script loaded here\n");
  std::string bad = error_of([] { parse_scenario("name: t\nplatforms: [x]\nnetworks: [{name: n}]\nlimits: {memory: 64 GiB}\n", "t.yaml"); });
  CHECK(bad ==
        "t.yaml:4:18: error: memory must be between 1 MiB and 4 GiB per Lua state\n"
        "limits: {memory: 64 GiB}\n"
        "                 ^\n");
}

TEST_CASE("a scripted operator cannot take a built-in's name", "[scripting][errors]") {
  std::string e = error_of([] {
    setup_scripts(parse_scenario(with_script("  rsim.op { name = 'conv2d', cost = function() return {macs = 0, flops = 0} end }\n", "{op: relu}"), "t.yaml"));
  });
  CHECK(e ==
        "t.yaml:8:6: error: script operator 'conv2d' (t.yaml:9) has the name of a built-in operator; pick another\n"
        "lua: |\n"
        "     ^\n");
}
