// Lua hooks: custom operators, the efficiency model, derived metrics, and the sandbox.
#include <catch2/catch.hpp>
#include <chrono>
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
  // energy = (FLOPs · 1 pJ + bytes · 20 pJ)
  CHECK(dw.metrics[0] == Approx((dw.cost.flops * 1.0 + dw.bytes * 20.0) * 1e-12));
  CHECK(dw.metrics[1] == Approx(dw.derated.time_s / 0.7));
  std::string csv = results_csv(r, s);
  CHECK(csv.substr(0, csv.find('\n')).find(",efficiency_compute,efficiency_bandwidth,flops_per_mac,memory_model,energy_j,time_at_70pct_s") !=
        std::string::npos);
}

TEST_CASE("one and two workers give byte-identical results with scripts", "[scripting][parallel]") {
  Scenario s = load_scenario(src("scenarios/custom_ops.yaml"));
  CHECK(results_csv(run_scripted(s, 1), s) == results_csv(run_scripted(s, 2), s));
  Scenario e = load_scenario(src("scenarios/depthwise_efficiency.yaml"));
  CHECK(results_csv(run_scripted(e, 1), e) == results_csv(run_scripted(e, 2), e));
}

TEST_CASE("a cost function's bad result names the operator and the field", "[scripting][errors]") {
  auto msg = [&](const std::string& body) { return script_error(with_script(custom_op(body))); };
  CHECK(msg("return { flops = 1 }").find("layer 'x' (custom): custom operator 'custom': the cost function's result has no 'macs'") != std::string::npos);
  CHECK(msg("return { macs = 0, flops = 'many' }").find("custom operator 'custom': 'flops' must be a number, got a string") != std::string::npos);
  CHECK(msg("return { macs = -5, flops = 0 }").find("custom operator 'custom': 'macs' is negative (-5)") != std::string::npos);
  CHECK(msg("return { macs = 0, flops = 0/0 }").find("custom operator 'custom': 'flops' is NaN") != std::string::npos);
  CHECK(msg("return { macs = 0, flops = math.huge }").find("custom operator 'custom': 'flops' is infinite") != std::string::npos);
  CHECK(msg("return { macs = 0, flops = 0, input_bytes = {1, 2} }").find("'input_bytes' has 2 entries for 1 tensors") != std::string::npos);
  CHECK(msg("return 42").find("cost must return a table") != std::string::npos);
}

TEST_CASE("an error inside a cost function: script line, traceback, layer and sweep point", "[scripting][errors]") {
  std::string lua = "  local function deep(n) error('boom at ' .. n) end\n" + custom_op("deep(3)");
  std::string e = script_error(with_script(lua, "{name: x, op: custom}", "sweep: {grid: {k: [1]}}\n"));
  // t.yaml line 8 is the layer (after name, platforms, sweep, networks, - name, input, layers);
  // `lua: |` is line 9, so the script's first line, where `error` is called, is line 10
  CHECK(e.find("t.yaml:8:9: error: layer 'x' (custom): t.yaml:10: boom at 3") == 0);
  CHECK(e.find("note: stack traceback:") != std::string::npos);
  CHECK(e.find("t.yaml:10: in upvalue 'deep'") != std::string::npos);
  CHECK(e.find("note: at sweep point 0: k=1") != std::string::npos);
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
  CHECK(e.find("s.yaml:2:11: note: script loaded here") != std::string::npos);
  std::filesystem::remove_all(dir);
}

TEST_CASE("the sandbox: hostile scripts end in clean errors, quickly", "[scripting][sandbox]") {
  struct Case {
    const char* what;
    std::string lua;
    const char* expect;
  };
  std::vector<Case> cases = {
      {"endless loop", "while true do end\n", "script ran for more than 10000000 instructions"},
      {"memory bomb", "local s = string.rep('x', 100000000)\n", "script used more than 64 MiB of memory"},
      {"endless table", "local t = {} local i = 0 while true do i = i + 1 t[i] = i end\n", "script used more than 64 MiB of memory"},
      {"os.execute", "os.execute('touch /tmp/rsim_pwned')\n", "attempt to index a nil value (global 'os')"},
      {"io.open", "io.open('/etc/passwd')\n", "attempt to index a nil value (global 'io')"},
      {"require", "require('os')\n", "attempt to call a nil value (global 'require')"},
      {"dofile", "dofile('/etc/passwd')\n", "attempt to call a nil value (global 'dofile')"},
      {"bytecode", "assert(load('\\27LuaT\\0\\25\\147\\r\\n\\26\\n'))\n", "attempt to load a binary chunk"},
      {"string.dump", "string.dump(print)\n", "attempt to call a nil value (field 'dump')"},
      {"deep recursion", "local function f(n) return 1 + f(n + 1) end f(1)\n", "stack overflow"},
  };
  for (const Case& c : cases) {
    INFO(c.what);
    auto t0 = std::chrono::steady_clock::now();
    std::string e = script_error(with_script("  " + c.lua, "{op: relu}"));
    double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    CHECK(e.find(c.expect) != std::string::npos);
    CHECK(secs < 2.0);
  }
  CHECK_FALSE(std::filesystem::exists("/tmp/rsim_pwned"));
}

TEST_CASE("the sandbox limits are settable within bounds", "[scripting][sandbox]") {
  std::string e = script_error(with_script("  local n = 0 while n < 100000 do n = n + 1 end\n", "{op: relu}", "limits: {instructions: 10000}\n"));
  CHECK(e.find("script ran for more than 10000 instructions") != std::string::npos);
  std::string bad = error_of([] { parse_scenario("name: t\nplatforms: [x]\nnetworks: [{name: n}]\nlimits: {memory: 64 GiB}\n", "t.yaml"); });
  CHECK(bad.find("memory must be between 1 MiB and 4 GiB per Lua state") != std::string::npos);
}

TEST_CASE("a scripted operator cannot take a built-in's name", "[scripting][errors]") {
  std::string e = error_of([] {
    setup_scripts(parse_scenario(with_script("  rsim.op { name = 'conv2d', cost = function() return {macs = 0, flops = 0} end }\n", "{op: relu}"), "t.yaml"));
  });
  CHECK(e.find("script operator 'conv2d'") != std::string::npos);
  CHECK(e.find("has the name of a built-in operator") != std::string::npos);
}
