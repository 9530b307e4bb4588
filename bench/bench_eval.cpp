// Speed targets of the core (issue 2):
//  - layer evaluations (shape inference + cost + roofline on one platform) of a 50-layer conv
//    network across a sweep: at least 5 million per second on one core;
//  - `rsim run` of any seed scenario: under 50 ms (measured here in-process: load, evaluate,
//    render the three tables and write them).
// Google Benchmark reports the details; the summary at the end prints each figure beside its target.
#include <benchmark/benchmark.h>

#include <chrono>
#include <cstdio>
#include <filesystem>

#include "engine/eval/evaluate.hpp"
#include "engine/output/output.hpp"
#include "plots/charts.hpp"
#include "plots/draw.hpp"
#include "plots/report.hpp"
#include "scripting/lua_expr.hpp"
#include "scripting/lua_host.hpp"

using namespace rsim;
namespace fs = std::filesystem;

namespace {

const std::string kSrc = RSIM_SOURCE_DIR;

// 50 conv layers: channels 64·(1 + i % 4), alternating 3×3 and 1×1, at the given width.
struct Prepared {
  std::vector<Attrs> attrs;
  const OpDef* op;
};

Prepared prepare(long long base) {
  Prepared p;
  p.op = builtin_ops().find("conv2d");
  Diags d;
  for (int i = 0; i < 50; ++i) {
    std::string yaml = "{out_channels: " + std::to_string(base * (1 + i % 4)) + ", kernel: " + (i % 2 ? "1" : "3") + ", padding: same}";
    p.attrs.push_back(read_attrs(*p.op, parse_yaml(yaml, "b.yaml"), d, "layer"));
  }
  return p;
}

struct Roof {
  double peak, bw;
};
const Roof kRoofs[] = {{29.8e12, 760.32e9}, {960e9, 76.8e9}};

// One sweep point: every layer inferred, costed and put on both roofs. Returns evaluations done.
size_t evaluate_network(const Prepared& p, long long hw, double& sink) {
  std::vector<Shape> in = {{1, 64, hw, hw}};
  size_t n = 0;
  for (const Attrs& a : p.attrs) {
    OpArgs args{a, in, DType::fp32};
    std::vector<Shape> out = p.op->infer(args);
    OpCost c = layer_cost(*p.op, args, out, 2.0);
    double bytes = layer_bytes(c, MemoryModel::InputsWeightsOutputs);
    for (const Roof& r : kRoofs) {
      RoofPoint rp = roofline(c.flops, bytes, r.peak, r.bw);
      sink += rp.time_s;
      ++n;
    }
    in = std::move(out);
  }
  return n;
}

void BM_LayerEvaluations(benchmark::State& state) {
  std::vector<Prepared> sweep = {prepare(16), prepare(32), prepare(64)};
  double sink = 0;
  size_t evals = 0;
  for (auto _ : state) {
    for (const auto& p : sweep)
      for (long long hw : {14LL, 28LL, 56LL}) evals += evaluate_network(p, hw, sink);
  }
  benchmark::DoNotOptimize(sink);
  state.SetItemsProcessed(static_cast<int64_t>(evals));
}
BENCHMARK(BM_LayerEvaluations);

std::string big_scenario() {
  std::string y = "name: bench\nsweep: {grid: {c: [16, 32, 64, 128], hw: [14, 28, 56, 112, 224]}}\nplatforms: [rtx3080, xeon_silver_4210_2s]\n"
                  "networks:\n  - name: n\n    input: [1, \"${c}\", \"${hw}\", \"${hw}\"]\n    layers:\n";
  for (int i = 0; i < 50; ++i)
    y += "      - {op: conv2d, out_channels: \"${c * " + std::to_string(1 + i % 4) + "}\", kernel: " + (i % 2 ? "1" : "3") + ", padding: same}\n";
  return y;
}

// The whole pipeline per point: substitution (Lua), graph building, costs, roofline.
void BM_FullPipeline(benchmark::State& state) {
  Scenario s = parse_scenario(big_scenario(), "bench.yaml");
  Catalog cat(kSrc + "/hardware");
  RunOptions opt;
  opt.make_evaluator = make_lua_evaluator;
  size_t evals = 0;
  for (auto _ : state) {
    RunResult r = run_scenario(s, cat, opt);
    for (const auto& pr : r.results) evals += pr.rows.size();
  }
  state.SetItemsProcessed(static_cast<int64_t>(evals));
}
BENCHMARK(BM_FullPipeline)->Unit(benchmark::kMillisecond);

double run_seed_scenario_ms(const std::string& file) {
  auto t0 = std::chrono::steady_clock::now();
  Scenario s = load_scenario(file);
  Catalog cat(kSrc + "/hardware");
  RunOptions opt;
  opt.make_evaluator = make_lua_evaluator;
  RunResult r = run_scenario(s, cat, opt);
  fs::path dir = fs::temp_directory_path() / "rsim_bench_out";
  fs::create_directories(dir);
  RunInfo info{RSIM_VERSION, &s};
  write_file_atomic((dir / "results.csv").string(), results_csv(r, s));
  write_file_atomic((dir / "summary.csv").string(), summary_csv(r, s));
  write_file_atomic((dir / "results.json").string(), results_json(r, info));
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

template <class F>
double best_of(int n, F f) {
  double best = 1e300;
  for (int i = 0; i < n; ++i) best = std::min(best, f());
  return best;
}

// A roofline with 10,000 layer points: a 1000-layer network over a 10-point sweep.
struct BigRoofline {
  Scenario s;
  RunResult r;
  BigRoofline() {
    std::string y = "name: big\nsweep: {grid: {c: [8, 16, 24, 32, 48, 64, 96, 128, 192, 256]}}\nplatforms: [xeon_silver_4210_2s]\n"
                    "networks:\n  - name: n\n    input: [1, \"${c}\", 28, 28]\n    layers:\n";
    for (int i = 0; i < 1000; ++i)
      y += std::string("      - {op: ") + (i % 3 == 0 ? "relu" : "conv2d, out_channels: \"${c}\", kernel: " + std::to_string(1 + 2 * (i % 3)) + ", padding: same") + "}\n";
    s = parse_scenario(y, "big.yaml");
    Catalog cat(kSrc + "/hardware");
    RunOptions opt;
    opt.make_evaluator = make_lua_evaluator;
    r = run_scenario(s, cat, opt);
  }
};

double render_big_roofline_s(const BigRoofline& b) {
  auto t0 = std::chrono::steady_clock::now();
  plots::PlotSpec spec;
  auto figs = plots::build_figures(spec, b.r, b.s);
  plots::CairoRenderer cr(plots::Format::PNG, 150);
  plots::draw(figs.front().figure, cr);
  benchmark::DoNotOptimize(cr.bytes().size());
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

void BM_Roofline10kPointsPNG(benchmark::State& state) {
  BigRoofline b;
  for (auto _ : state) render_big_roofline_s(b);
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations()) * 10000);
}
BENCHMARK(BM_Roofline10kPointsPNG)->Unit(benchmark::kMillisecond);

// Every default figure of a seed scenario, PNG and SVG, as `rsim run` draws them.
double render_seed_figures_s(const std::string& name) {
  Scenario s = load_scenario(kSrc + "/scenarios/" + name + ".yaml");
  Catalog cat(kSrc + "/hardware");
  RunOptions opt;
  opt.make_evaluator = make_lua_evaluator;
  RunResult r = run_scenario(s, cat, opt);
  auto t0 = std::chrono::steady_clock::now();
  std::vector<std::pair<std::string, std::vector<plots::Format>>> figs;
  auto files = plots::render_figures(r, s, plots::default_plot_specs(r, s), plots::RenderOptions{}, figs);
  benchmark::DoNotOptimize(files.size());
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

// A Lua-defined conv with the built-in conv2d's arithmetic, for a like-for-like comparison.
const char* kLuaConv = R"(
rsim.op {
  name = "lconv",
  attrs = { out_channels = { type = "int" }, kernel = { type = "pair" }, padding = { type = "padding", default = 0 } },
  infer = function(inputs, attrs)
    local x = inputs[1]
    local k = attrs.kernel
    local ph = attrs.padding == "same" and (k[1] - 1) // 2 or attrs.padding[1]
    local pw = attrs.padding == "same" and (k[2] - 1) // 2 or attrs.padding[2]
    return { { x[1], attrs.out_channels, x[3] + 2 * ph - k[1] + 1, x[4] + 2 * pw - k[2] + 1 } }
  end,
  cost = function(inputs, outputs, attrs, dtype)
    local x, y, k = inputs[1], outputs[1], attrs.kernel
    local macs = y[1] * y[2] * y[3] * y[4] * x[2] * k[1] * k[2]
    local params = k[1] * k[2] * x[2] * y[2]
    return { macs = macs, flops = 0, params = params, weights = params }
  end,
}
)";

// Seconds for evaluating a 50-layer conv network (built-in conv2d or the Lua lconv) at 20 points.
double network_seconds(bool lua, size_t& evals) {
  std::string y = "name: b\nsweep: {grid: {c: [16, 32, 64, 128, 256], hw: [14, 28, 56, 112]}}\nplatforms: [rtx3080]\n"
                  "networks:\n  - name: n\n    input: [1, \"${c}\", \"${hw}\", \"${hw}\"]\n    layers:\n";
  for (int i = 0; i < 50; ++i)
    y += std::string("      - {op: ") + (lua ? "lconv" : "conv2d") + ", out_channels: \"${c}\", kernel: " + (i % 2 ? "1" : "3") + ", padding: same}\n";
  Scenario s = parse_scenario(y, "b.yaml");
  s.scripts.push_back(Script{"bench.lua", kLuaConv, {}});
  ScriptSetup setup = setup_scripts(s);
  Catalog cat(kSrc + "/hardware");
  RunOptions opt;
  opt.ops = &setup.ops;
  opt.make_hooks = setup.make_hooks;
  opt.make_evaluator = make_lua_evaluator;
  auto t0 = std::chrono::steady_clock::now();
  RunResult r = run_scenario(s, cat, opt);
  double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  evals = 0;
  for (const auto& pr : r.results) evals += pr.rows.size();
  return secs;
}

// Evaluations of a Lua op (shape inference, cost rule, bytes), as the graph builder makes them.
// `with_infer`: the op has its own Lua shape rule; otherwise it keeps its input's shape (an
// elementwise op) and only the cost rule runs in Lua.
double lua_op_rate(bool with_infer) {
  Scenario s = parse_scenario("name: b\nplatforms: [rtx3080]\nnetworks: [{name: n, input: [1, 4], layers: [{op: relu}]}]\n", "b.yaml");
  std::string code = kLuaConv;
  if (!with_infer) {
    size_t a = code.find("  infer = function"), b = code.find("  cost = function");
    code.erase(a, b - a);
  }
  s.scripts.push_back(Script{"bench.lua", code, {}});
  LuaHost host(s.scripts, s.limits);
  OpRegistry reg = builtin_ops();
  register_script_ops(reg, host.ops());
  const OpDef* op = reg.find("lconv");
  Diags d;
  Attrs a = read_attrs(*op, parse_yaml("{out_channels: 64, kernel: 3, padding: same}", "b.yaml"), d, "layer");
  std::vector<Shape> in = {{1, 64, 56, 56}};
  OpArgs args{a, in, DType::fp32};
  const int n = 200000;
  auto t0 = std::chrono::steady_clock::now();
  double sink = 0;
  for (int i = 0; i < n; ++i) {
    auto out = op->infer(args);
    sink += layer_cost(*op, args, out, 2).flops;
  }
  benchmark::DoNotOptimize(sink);
  return n / std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

void print_targets() {
  // layer evaluations per second, one core
  Prepared p = prepare(64);
  double sink = 0;
  double rate = best_of(5, [&] {
    size_t n = 0;
    auto t0 = std::chrono::steady_clock::now();
    for (int rep = 0; rep < 2000; ++rep) n += evaluate_network(p, 56, sink);
    double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    return -static_cast<double>(n) / s;  // best = highest rate
  });
  rate = -rate;
  benchmark::DoNotOptimize(sink);
  double worst_ms = 0;
  std::string worst;
  for (const char* f : {"kernel_size_sweep", "output_size_sweep", "channel_sweep", "group_conv_sweep", "reshape_sweep", "fc_sweep"}) {
    double ms = best_of(5, [&] { return run_seed_scenario_ms(kSrc + "/scenarios/" + f + ".yaml"); });
    if (ms > worst_ms) {
      worst_ms = ms;
      worst = f;
    }
  }
  BigRoofline big;
  double roof_s = best_of(3, [&] { return render_big_roofline_s(big); });
  double fig_worst = 0;
  std::string fig_name;
  for (const char* f : {"kernel_size_sweep", "output_size_sweep", "channel_sweep", "group_conv_sweep", "reshape_sweep", "fc_sweep"}) {
    double t = best_of(3, [&] { return render_seed_figures_s(f); });
    if (t > fig_worst) fig_worst = t, fig_name = f;
  }
  std::printf("\n%-58s %14s %14s  %s\n", "figure", "measured", "target", "");
  std::printf("%-58s %11.2f M/s %11.2f M/s  %s\n", "layer evaluations per second (50-layer conv net, 1 core)", rate / 1e6, 5.0,
              rate >= 5e6 ? "ok" : "MISSED");
  std::printf("%-58s %12.2f ms %12.2f ms  %s\n", ("slowest seed scenario run in-process (" + worst + ")").c_str(), worst_ms, 50.0,
              worst_ms < 50 ? "ok" : "MISSED");
  std::printf("%-58s %12.3f s  %12.3f s   %s\n", "roofline with 10,000 points rendered to PNG", roof_s, 0.5, roof_s < 0.5 ? "ok" : "MISSED");
  double lua_rate = -best_of(5, [] { return -lua_op_rate(false); });
  double lua_full = -best_of(5, [] { return -lua_op_rate(true); });
  std::printf("%-58s %11.2f M/s %11.2f M/s  %s\n", "Lua-defined op evaluations per second (cost rule in Lua)", lua_rate / 1e6, 1.0, lua_rate >= 1e6 ? "ok" : "MISSED");
  std::printf("%-58s %11.2f M/s %14s\n", "  the same with a Lua shape rule too (infer + cost)", lua_full / 1e6, "(no target)");
  size_t e1 = 0, e2 = 0;
  double builtin_s = best_of(3, [&] { return network_seconds(false, e1); });
  double lua_s = best_of(3, [&] { return network_seconds(true, e2); });
  double ratio = lua_s / builtin_s;
  std::printf("%-58s %12.2f x  %12.2f x   %s\n", "all-Lua-op network run time / built-in network run time", ratio, 5.0, ratio <= 5 ? "ok" : "MISSED");
  std::printf("%-58s %12.3f s  %12.3f s   %s\n", ("all figures of a seed scenario, PNG+SVG (" + fig_name + ")").c_str(), fig_worst, 0.3,
              fig_worst < 0.3 ? "ok" : "MISSED");
}

}  // namespace

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  print_targets();
  return 0;
}
