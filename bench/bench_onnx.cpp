// Speed targets of ONNX import (issue 9), printed beside each target:
//   - ResNet-50 from ONNX (tests/data/onnx/resnet50_op17.onnx): import + evaluate < 100 ms, with the
//     same network from the YAML zoo (scenarios/models/resnet50.yaml) as the reference in this run;
//   - a graph-only file of a 7 B-parameter decoder (32 layers, d 4096, FFN 11008, vocab 32000; its
//     external data absent) loads and imports in < 1 s and < 200 MB (peak RSS of a child process).
// Run: make bench (or build/bench/rsim_bench_onnx).
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>
#include <vector>

#include "engine/eval/evaluate.hpp"
#include "importers/onnx_import.hpp"
#include "scripting/lua_expr.hpp"

using namespace rsim;
namespace fs = std::filesystem;

namespace {

double median_ms(int reps, const std::function<void()>& f) {
  std::vector<double> t;
  for (int i = 0; i < reps; ++i) {
    auto t0 = std::chrono::steady_clock::now();
    f();
    t.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
  }
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}

double run_ms(const std::string& yaml, const std::string& path) {
  Scenario s = parse_scenario(yaml, path);
  Catalog cat(std::string(RSIM_SOURCE_DIR) + "/hardware");
  RunOptions opt;
  opt.make_evaluator = make_lua_evaluator;
  opt.model_dirs = {std::string(RSIM_SOURCE_DIR) + "/scenarios/models"};
  return median_ms(7, [&] {
    opt.importer = make_onnx_importer();  // a fresh importer: nothing cached between runs
    RunResult r = run_scenario(s, cat, opt);
    if (r.results.empty()) std::abort();
  });
}

const auto ints = OnnxSpecAttr::integers;

// A Llama-style decoder as a graph-only ONNX file: every weight external (absent).
std::string decoder_7b() {
  const long long d = 4096, ffn = 11008, vocab = 32000, layers = 32;
  OnnxModelSpec m;
  m.opset = 17;
  m.inputs = {{"ids", {"batch", "seq"}, 7, {}}};
  m.outputs = {{"logits", {"batch", "seq", std::to_string(vocab)}, 1, {}}};
  auto w = [&](const std::string& n, std::vector<long long> dims) {
    OnnxSpecTensor t{n, {}, 1, {}};
    for (auto x : dims) t.dims.push_back(std::to_string(x));
    m.initializers.push_back(t);
  };
  w("embed", {vocab, d});
  m.initializers.push_back({"shape4", {"4"}, 7, {0, 0, 32, 128}});
  m.initializers.push_back({"shape3", {"3"}, 7, {0, 0, d}});
  std::string x = "h0";
  m.nodes.push_back({"Gather", "embed", {"embed", "ids"}, {x}, {}});
  auto norm = [&](const std::string& p, const std::string& in) {
    w(p + ".g", {d});
    m.nodes.push_back({"LayerNormalization", p, {in, p + ".g"}, {p + ".y"}, {}});
    return p + ".y";
  };
  auto mm = [&](const std::string& p, const std::string& in, long long k, long long n) {
    w(p + ".w", {k, n});
    m.nodes.push_back({"MatMul", p, {in, p + ".w"}, {p + ".y"}, {}});
    return p + ".y";
  };
  for (long long l = 0; l < layers; ++l) {
    std::string p = "l" + std::to_string(l);
    std::string h = norm(p + ".ln1", x);
    std::string q = mm(p + ".q", h, d, d), k = mm(p + ".k", h, d, d), v = mm(p + ".v", h, d, d);
    for (const std::string& t : {q, k, v}) m.nodes.push_back({"Reshape", t + ".r", {t, "shape4"}, {t + ".4"}, {}});
    m.nodes.push_back({"Transpose", p + ".qt", {q + ".4"}, {p + ".qt"}, {ints("perm", {0, 2, 1, 3})}});
    m.nodes.push_back({"Transpose", p + ".kt", {k + ".4"}, {p + ".kt"}, {ints("perm", {0, 2, 3, 1})}});
    m.nodes.push_back({"Transpose", p + ".vt", {v + ".4"}, {p + ".vt"}, {ints("perm", {0, 2, 1, 3})}});
    m.nodes.push_back({"MatMul", p + ".scores", {p + ".qt", p + ".kt"}, {p + ".s"}, {}});
    m.nodes.push_back({"Softmax", p + ".softmax", {p + ".s"}, {p + ".a"}, {}});
    m.nodes.push_back({"MatMul", p + ".mix", {p + ".a", p + ".vt"}, {p + ".m"}, {}});
    m.nodes.push_back({"Transpose", p + ".mt", {p + ".m"}, {p + ".m2"}, {ints("perm", {0, 2, 1, 3})}});
    m.nodes.push_back({"Reshape", p + ".merge", {p + ".m2", "shape3"}, {p + ".m3"}, {}});
    std::string o = mm(p + ".o", p + ".m3", d, d);
    m.nodes.push_back({"Add", p + ".res1", {x, o}, {p + ".r1"}, {}});
    std::string h2 = norm(p + ".ln2", p + ".r1");
    std::string g = mm(p + ".gate", h2, d, ffn), u = mm(p + ".up", h2, d, ffn);
    m.nodes.push_back({"Sigmoid", p + ".sig", {g}, {p + ".sg"}, {}});
    m.nodes.push_back({"Mul", p + ".silu", {g, p + ".sg"}, {p + ".si"}, {}});
    m.nodes.push_back({"Mul", p + ".glu", {p + ".si", u}, {p + ".gu"}, {}});
    std::string dn = mm(p + ".down", p + ".gu", ffn, d);
    x = p + ".out";
    m.nodes.push_back({"Add", p + ".res2", {p + ".r1", dn}, {x}, {}});
  }
  std::string f = norm("final_norm", x);
  w("lm_head", {d, vocab});
  m.nodes.push_back({"MatMul", "lm_head", {f, "lm_head"}, {"logits"}, {}});
  return build_onnx_model(m);
}

}  // namespace

int main() {
  std::string root = RSIM_SOURCE_DIR;
  std::string platform = "platforms: [a100_sxm_80gb]\n";
  double onnx_ms = run_ms("name: b\n" + platform + "networks:\n  - {name: r50, onnx: " + root + "/tests/data/onnx/resnet50_op17.onnx}\n", root + "/b.yaml");
  double yaml_ms = run_ms("name: b\n" + platform + "networks:\n  - {model: resnet50}\n", root + "/b.yaml");

  // the 7 B graph-only file, loaded by a child process so that its peak RSS is the loader's alone
  fs::path file = fs::temp_directory_path() / ("rsim_bench_7b_" + std::to_string(::getpid()) + ".onnx");
  {
    std::ofstream out(file, std::ios::binary);
    out << decoder_7b();
  }
  double load_ms = 0, weights = 0;
  long rss_kb = 0;
  int fds[2];
  if (pipe(fds) != 0) return 1;
  pid_t pid = fork();
  if (pid == 0) {
    close(fds[0]);
    double w = 0;
    auto t0 = std::chrono::steady_clock::now();
    auto model = load_onnx(file.string());
    OnnxImportOptions opt;
    opt.dims = {{"batch", 1}, {"seq", 2048}};
    OnnxImport r = import_onnx(*model, opt);
    double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    w = r.weight_elements;
    double msg[2] = {ms, w};
    if (write(fds[1], msg, sizeof msg) != sizeof msg) _exit(1);
    _exit(0);
  }
  close(fds[1]);
  double msg[2] = {0, 0};
  bool got = read(fds[0], msg, sizeof msg) == sizeof msg;
  int status = 0;
  waitpid(pid, &status, 0);
  struct rusage ru {};
  getrusage(RUSAGE_CHILDREN, &ru);
  rss_kb = ru.ru_maxrss;
  load_ms = msg[0];
  weights = msg[1];
  double file_kb = static_cast<double>(fs::file_size(file)) / 1024;
  fs::remove(file);
  if (!got || status != 0) {
    std::fprintf(stderr, "the 7 B import failed in the child process\n");
    return 1;
  }

  std::printf("\n%-66s %12s %12s  %s\n", "figure", "measured", "target", "");
  std::printf("%-66s %9.1f ms %9.1f ms  %s\n", "ResNet-50 from ONNX: import + evaluate on one platform (median of 7)", onnx_ms, 100.0,
              onnx_ms < 100 ? "ok" : "MISSED");
  std::printf("%-66s %9.1f ms %12s\n", "  reference: the zoo's resnet50.yaml, evaluated the same way", yaml_ms, "");
  std::printf("%-66s %9.2f x %12s\n", "  ratio ONNX / YAML", onnx_ms / yaml_ms, "");
  char what[128];
  std::snprintf(what, sizeof what, "graph-only %.2f B-parameter decoder (%.0f KiB file): load + import", weights / 1e9, file_kb);
  std::printf("%-66s %9.1f ms %9.1f ms  %s\n", what, load_ms, 1000.0, load_ms < 1000 ? "ok" : "MISSED");
  std::printf("%-66s %9.1f MB %9.1f MB  %s\n", "  peak resident memory of that process", static_cast<double>(rss_kb) / 1024, 200.0,
              rss_kb < 200 * 1024 ? "ok" : "MISSED");
  return 0;
}
