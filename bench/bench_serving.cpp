// Speed targets of the request-level serving simulation (issue 41), each printed beside its target:
//  - 10^5 requests of Llama-3-8B (bf16) on one H100 SXM, every iteration priced by the engine
//    (serving/pricer.hpp), simulated in at most 1 s of one core (CPU time, from the scenario's text
//    to the summary: the engine's evaluations of the network included);
//  - a sweep of 100 arrival rates (1 to 100 requests/s, 10^4 requests each) in at most 10 s;
//  - the scheduler's loop at least 50× a plain Python discrete-event loop of the same scheduler
//    (bench/serving_ref.py) on the same 2 × 10^4 requests with the same closed-form cost per
//    iteration, measured in the same run; both print their iterations, mean TTFT and mean E2E,
//    which must agree (the same work), else the ratio is not printed.
// Also, for the memory bound: 10^6 requests' peak resident memory (target ≤ 1 GB).
// Times are the best of a few runs (the loops: rsim 5, Python 3; the others 1), the two loops' runs
// taken in turn. Not Google Benchmark: one table.
// usage: rsim_bench_serving [--quick] [--loop (the two loops only)] [--python python3]
#include <sys/resource.h>
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <string>

#include "engine/eval/evaluate.hpp"
#include "scripting/lua_expr.hpp"
#include "scripting/lua_host.hpp"
#include "serving/serve.hpp"
#include "serving/simulate.hpp"
#include "serving/workload.hpp"

using namespace rsim;
namespace fs = std::filesystem;

namespace {

const std::string kSrc = RSIM_SOURCE_DIR;

// this process's CPU time (user + system, of every thread: the run is single-threaded)
double cpu_s() {
  timespec t{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
  return static_cast<double>(t.tv_sec) + 1e-9 * static_cast<double>(t.tv_nsec);
}

double peak_rss_mb() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return static_cast<double>(u.ru_maxrss) / 1024.0;
}

// the scenario text served in-process as `rsim run` serves it
serving::ServingTables serve(const std::string& yaml) {
  const Scenario s = parse_scenario(yaml, kSrc + "/scenarios/bench_serving.yaml");
  ScriptSetup setup = setup_scripts(s);
  Catalog cat(kSrc + "/hardware");
  RunOptions opt;
  opt.ops = &setup.ops;
  opt.make_evaluator = make_lua_evaluator;
  return serving::serve_scenario(s, cat, opt);
}

std::string workload(long long requests, const std::string& rate) {
  return "    requests: " + std::to_string(requests) + "\n    arrivals: {process: poisson, rate: " + rate +
         "}\n    prompt: {dist: lognormal, mean: 512, cv: 1, min: 16, max: 4096}\n    output: {dist: lognormal, mean: 256, cv: 1, min: 8, max: 2048}\n";
}

// The closed-form cost both loops use: Llama-3-8B-like on an H100 (a 5.6 ms weight read, 23 µs a
// batched token, 46 ns a KV token read)
constexpr double kBase = 0.0056, kPerToken = 23e-6, kPerKv = 46e-9;

double closed_form(const std::vector<serving::Work>& prefill, const std::vector<serving::Work>& decode) {
  double tokens = 0, kv = 0;
  for (const auto* list : {&prefill, &decode})
    for (const serving::Work& w : *list) tokens += static_cast<double>(w.tokens), kv += static_cast<double>(w.context + w.tokens);
  return kBase + kPerToken * tokens + kPerKv * kv;
}

void row(const char* what, double value, const char* unit, const char* target, bool ok) {
  std::printf("  %-58s %10.3f %-3s  target %-10s %s\n", what, value, unit, target, ok ? "met" : "NOT MET");
}

}  // namespace

int main(int argc, char** argv) {
  bool quick = false, loop_only = false;
  std::string python = "python3";
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--quick") quick = true;
    else if (a == "--loop") loop_only = true;
    else if (a == "--python" && i + 1 < argc) python = argv[++i];
    else {
      std::fprintf(stderr, "usage: rsim_bench_serving [--quick] [--loop] [--python python3]\n");
      return 2;
    }
  }
  const std::string head = "name: bench_serving\nplatforms: [h100_sxm]\nnetworks:\n  - {model: llama3_8b}\n";
  std::printf("serving simulation speed (CPU seconds of one core; %s)\n", quick ? "--quick: smaller runs, the targets scaled" : "full runs");

  double t0 = 0;
  if (!loop_only) {
  // 1. 10^5 requests at 20/s, priced by the engine
  const long long n1 = quick ? 10000 : 100000;
  t0 = cpu_s();
  const serving::ServingTables one = serve(head + "serving:\n  workload:\n" + workload(n1, "20/s"));
  const double t_one = cpu_s() - t0;
  const auto& m1 = one.runs.at(0).summary;
  std::printf("  (%lld requests: %lld finished, TTFT p50 %.4g s, TPOT p50 %.4g s, %lld iterations)\n", n1, m1.finished, m1.ttft[1], m1.tpot[1],
              one.runs.at(0).sim.iterations);
  const double target1 = quick ? 0.1 : 1.0;
  row(quick ? "10^4 requests, Llama-3-8B on an H100, engine-priced" : "10^5 requests, Llama-3-8B on an H100, engine-priced", t_one, "s", quick ? "<= 0.1 s" : "<= 1 s",
      t_one <= target1);

  // 2. a sweep of 100 rates
  const long long n2 = quick ? 1000 : 10000;
  t0 = cpu_s();
  const serving::ServingTables sweep = serve(head + "sweep:\n  grid:\n    rate: {from: 1, to: 100, step: 1}\nserving:\n  workload:\n" + workload(n2, "\"${rate}\""));
  const double t_sweep = cpu_s() - t0;
  const double target2 = quick ? 1.0 : 10.0;
  row(quick ? "100 rates × 10^3 requests (1 to 100 /s)" : "100 rates × 10^4 requests (1 to 100 /s)", t_sweep, "s", quick ? "<= 1 s" : "<= 10 s", t_sweep <= target2);
  if (sweep.runs.size() != 100) std::printf("  (the sweep served %zu runs, not 100)\n", sweep.runs.size());

  }

  // 3. the scheduler's loop against a Python loop of the same scheduler and costs
  serving::Synthetic w;
  w.requests = quick ? 2000 : 20000;
  w.arrivals.process = serving::Process::Poisson, w.arrivals.rate = 20;
  w.prompt.dist = w.output.dist = serving::Lengths::Dist::Lognormal;
  w.prompt.mean = 512, w.prompt.cv = 1, w.prompt.min = 16, w.prompt.max = 4096;
  w.output.mean = 256, w.output.cv = 1, w.output.min = 8, w.output.max = 2048;
  const std::vector<serving::Request> reqs = serving::generate(w, 0);
  serving::EngineConfig cfg;
  cfg.kv_blocks = 20000;  // a cache that preempts now and then under this load
  serving::Simulation sim;
  double t_cpp = INFINITY;
  for (int k = 0; k < 5; ++k) {
    t0 = cpu_s();
    sim = serving::simulate(reqs, cfg, closed_form);
    t_cpp = std::min(t_cpp, cpu_s() - t0);
  }
  double ttft = 0, e2e = 0;
  for (const serving::Outcome& o : sim.requests) ttft += o.first_token_s - o.arrival_s, e2e += o.finish_s - o.arrival_s;
  ttft /= static_cast<double>(sim.requests.size()), e2e /= static_cast<double>(sim.requests.size());
  const fs::path dir = fs::temp_directory_path() / ("rsim_bench_serving_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  {
    std::ofstream f(dir / "requests.csv");
    f << "arrival_s,prompt_tokens,output_tokens\n";
    char b[96];
    for (const serving::Request& r : reqs) {
      std::snprintf(b, sizeof b, "%.17g,%lld,%lld\n", r.arrival_s, r.prompt, r.output);
      f << b;
    }
  }
  char cmd[1024];
  std::snprintf(cmd, sizeof cmd, "%s %s/bench/serving_ref.py %s %.17g %.17g %.17g %lld %lld %lld %lld > %s", python.c_str(), kSrc.c_str(), (dir / "requests.csv").c_str(), kBase,
                kPerToken, kPerKv, cfg.max_num_seqs, cfg.max_num_batched_tokens, cfg.block_size, cfg.kv_blocks, (dir / "ref.txt").c_str());
  int rc = 0;
  long long py_it = -1;
  double py_ttft = NAN, py_e2e = NAN, t_py = INFINITY;
  for (int k = 0; k < (quick ? 1 : 3) && rc == 0; ++k) {
    rc = std::system(cmd);
    if (rc != 0) break;
    std::ifstream f(dir / "ref.txt");
    double t = NAN;
    f >> py_it >> py_ttft >> py_e2e >> t;
    t_py = std::min(t_py, t);
  }
  fs::remove_all(dir);
  std::printf("  (%lld requests, closed-form cost: rsim %lld iterations, TTFT mean %.9g s, E2E mean %.9g s, %lld preemptions; Python %lld, %.9g s, %.9g s)\n",
              w.requests, sim.iterations, ttft, e2e, sim.preemptions, py_it, py_ttft, py_e2e);
  const bool same = py_it == sim.iterations && std::fabs(py_ttft - ttft) <= 1e-9 * std::fabs(ttft) && std::fabs(py_e2e - e2e) <= 1e-9 * std::fabs(e2e);
  if (rc != 0 || !same) {
    std::printf("  the Python loop %s: no ratio\n", rc != 0 ? "did not run" : "did other work (its figures differ)");
  } else {
    std::printf("  (scheduler loop: rsim %.4f s, Python %.3f s)\n", t_cpp, t_py);
    row("scheduler loop vs a plain Python event loop (ratio)", t_py / t_cpp, "×", ">= 50×", t_py / t_cpp >= 50);
  }

  // 4. memory: 10^6 requests (the engine's pricing aside: the closed-form cost), peak RSS
  if (!quick && !loop_only) {
    w.requests = 1000000;
    w.arrivals.rate = 20;
    const std::vector<serving::Request> big = serving::generate(w, 0);
    serving::EngineConfig c2;
    c2.kv_blocks = 29000;
    const serving::Simulation s2 = serving::simulate(big, c2, closed_form);
    const serving::Summary m = serving::summarize(s2, {});
    std::printf("  (10^6 requests: %lld finished, %lld token gaps pooled)\n", m.finished, s2.itl_count());
    const double rss = peak_rss_mb();
    row("10^6 requests: peak resident memory of this process", rss, "MB", "<= 1024 MB", rss <= 1024);
  }
  return 0;
}
