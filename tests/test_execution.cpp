// The execution model (settings.execution: fused, graph, eager) and the platform's `runtime:`
// block: network times derived by hand from kernels of known times.
#include <catch2/catch.hpp>

#include "engine/output/output.hpp"
#include "helpers.hpp"

using namespace rsim;

namespace {

// Three kernels of 5, 30 and 2 µs: a relu each on its own input of 625, 3,750 and 250 fp32
// elements moves (in + out) 8 bytes an element, 5,000, 30,000 and 2,000 bytes, at 1 GB/s. The
// compute roof (1 PFLOP/s) is far above: each relu's 625, 3,750, 250 FLOPs take under a
// nanosecond, so every kernel is memory-bound and its time is its bytes / 1e9.
std::string three_kernels(const std::string& execution, const std::string& runtime, const std::string& extra = "") {
  return "name: t\n"
         "settings: {execution: " +
         execution +
         "}\n"
         "platforms:\n"
         "  - name: p\n"
         "    compute: [{name: c, dtypes: [fp32], peak: 1 PFLOP/s}]\n"
         "    memory: [{name: m, bandwidth: 1 GB/s}]\n"
         "    runtime: " +
         runtime + "\n" + extra +
         "networks:\n"
         "  - name: n\n"
         "    inputs: {a: [625], b: [3750], c: [250]}\n"
         "    layers:\n"
         "      - {name: k0, op: relu, inputs: [a]}\n"
         "      - {name: k1, op: relu, inputs: [b]}\n"
         "      - {name: k2, op: relu, inputs: [c]}\n";
}

double network_time(const RunResult& r, bool derated = false) {
  const SummaryRow& s = test::summary_of(r, 0, "p");
  return derated ? s.derated_time_s : s.time_s;
}

}  // namespace

TEST_CASE("execution: fused adds launch_overhead per kernel, graph a gap between kernels and one launch", "[execution]") {
  const std::string rt = "{launch_overhead: 4 us, graph_gap: 1 us, host_overhead: 10 us}";
  // each kernel alone: 5, 30, 2 µs (bytes / 1 GB/s)
  RunResult fused = test::run_text(three_kernels("fused", rt));
  REQUIRE(fused.results[0].rows.size() == 3);
  CHECK(fused.results[0].rows[0].theoretical.time_s == Approx(5e-6));
  CHECK(fused.results[0].rows[1].theoretical.time_s == Approx(30e-6));
  CHECK(fused.results[0].rows[2].theoretical.time_s == Approx(2e-6));
  // fused: 5 + 30 + 2 + 3 launches × 4 = 49 µs
  CHECK(network_time(fused) == Approx(49e-6));
  // graph: 5 + 30 + 2 + 2 gaps × 1 + one launch of 4 = 43 µs
  CHECK(network_time(test::run_text(three_kernels("graph", rt))) == Approx(43e-6));
  // (the derated roofs equal the theoretical ones here: no derating)
  CHECK(network_time(test::run_text(three_kernels("graph", rt)), true) == Approx(43e-6));
}

TEST_CASE("execution: eager issues kernel i at (i + 1) host overheads and starts it when the last one ends", "[execution]") {
  const std::string rt = "{launch_overhead: 4 us, graph_gap: 1 us, host_overhead: 10 us}";
  // kernel 0: issued at 10, runs 10 → 15; kernel 1: issued at 20 (the GPU idle since 15), runs
  // 20 → 50; kernel 2: issued at 30, waits for kernel 1, runs 50 → 52. The network: 52 µs, of which
  // the host's issue of the first kernel (10) and of the second (5 after the first ends) wait.
  RunResult r = test::run_text(three_kernels("eager", rt));
  CHECK(network_time(r) == Approx(52e-6));
  CHECK(network_time(r, true) == Approx(52e-6));
  // kernels.csv: each kernel's wait under `launch_overhead_s`, so the kernels add up to 52 µs
  // (10 + 5, 5 + 30 + 0 + 2 = 52)
  const auto k = test::csv_rows(kernels_csv(r));
  REQUIRE(k.size() == 4);
  const double wait[] = {10e-6, 5e-6, 0}, run[] = {5e-6, 30e-6, 2e-6};
  for (size_t i = 0; i < 3; ++i) {
    INFO("kernel " << i);
    CHECK(test::cell(k, i + 1, "kernel") == "k" + std::to_string(i));
    CHECK(std::stod(test::cell(k, i + 1, "launch_overhead_s")) == Approx(wait[i]).margin(1e-15));
    CHECK(std::stod(test::cell(k, i + 1, "time_s")) == Approx(wait[i] + run[i]));
    CHECK(std::stod(test::cell(k, i + 1, "derated_launch_overhead_s")) == Approx(wait[i]).margin(1e-15));
    CHECK(std::stod(test::cell(k, i + 1, "derated_time_s")) == Approx(wait[i] + run[i]));
  }
  // summary.csv names the mode
  const std::string s = summary_csv(r, Scenario{});
  CHECK(s.substr(0, s.find('\n')).find(",fits_in_memory,execution,tensor_parallel,") != std::string::npos);
  CHECK(test::cell(test::csv_rows(s), 1, "execution") == "eager");
}

TEST_CASE("execution: a class's own host overhead (calibration) issues its kernels in eager mode", "[execution]") {
  // relu's rule issues a kernel in 12 µs: kernel 0 issued at 12, runs 12 → 17; kernel 1 at 24,
  // 24 → 54; kernel 2 at 36, waits, 54 → 56
  const std::string rule =
      "    calibration: [{class: elementwise, ops: [relu], compute: [1, 0], bandwidth: [1, 0], host_overhead: 12 us}]\n";
  CHECK(network_time(test::run_text(three_kernels("eager", "{host_overhead: 10 us}", rule))) == Approx(56e-6));
  // the same rule for the layers' own roof (c)
  const std::string own =
      "    calibration: [{class: elementwise, ops: [relu], roof: c, compute: [1, 0], bandwidth: [1, 0], host_overhead: 12 us}]\n";
  CHECK(network_time(test::run_text(three_kernels("eager", "{host_overhead: 10 us}", own))) == Approx(56e-6));
  // a rule naming a roof the platform lacks is an error
  const std::string other =
      "    calibration: [{class: elementwise, ops: [relu], roof: d, compute: [1, 0], bandwidth: [1, 0], host_overhead: 12 us}]\n";
  CHECK(test::error_of([&] { test::run_text(three_kernels("eager", "{host_overhead: 10 us}", other)); })
            .find("error: calibration rule 'elementwise' names compute roof 'd', which the platform lacks") != std::string::npos);
}

TEST_CASE("execution: a mode the platform's runtime cannot time is an error at execution:", "[execution]") {
  CHECK(test::error_of([] { test::run_text(three_kernels("graph", "{launch_overhead: 4 us}")); }) ==
        "t.yaml:2:23: error: execution: graph needs the platform's runtime.graph_gap; platform 'p' has none\n"
        "settings: {execution: graph}\n"
        "                      ^\n"
        "t.yaml:4:5: note: platform used here\n"
        "note: give it one, e.g. {base: p, name: p_graph, runtime: {graph_gap: 2 us}} (rsim calibrate fits both from measured network times)\n");
  CHECK(test::error_of([] { test::run_text(three_kernels("eager", "{graph_gap: 1 us}")); }).find(
            "error: execution: eager needs the platform's runtime.host_overhead; platform 'p' has none") != std::string::npos);
  CHECK(test::error_of([] { test::run_text(three_kernels("lazy", "{graph_gap: 1 us}")); }) ==
        "t.yaml:2:23: error: unknown execution 'lazy'\n"
        "settings: {execution: lazy}\n"
        "                      ^\n"
        "note: choose fused, graph, eager or ideal\n");
}

TEST_CASE("runtime: the old top-level launch_overhead is an error naming its new place", "[execution]") {
  const std::string yaml =
      "name: t\n"
      "platforms:\n"
      "  - name: p\n"
      "    compute: [{name: c, dtypes: [fp32], peak: 1 PFLOP/s}]\n"
      "    memory: [{name: m, bandwidth: 1 GB/s}]\n"
      "    launch_overhead: 5 us\n"
      "networks: [{name: n, input: [4], layers: [{op: relu}]}]\n";
  CHECK(test::error_of([&] { test::run_text(yaml); }) ==
        "t.yaml:6:5: error: launch_overhead has moved into the platform's runtime block\n"
        "    launch_overhead: 5 us\n"
        "    ^\n"
        "note: write `runtime: {launch_overhead: 5 us}` (with graph_gap and host_overhead for `execution: graph | eager`)\n");
}

TEST_CASE("runtime: a what-if platform replaces one runtime value and keeps the base's others", "[execution]") {
  // h200's catalog runtime: launch 5 µs, gap 4.83 µs, host 20.3 µs; the what-if sets the gap only
  RunResult r = test::run_text(
      "name: t\n"
      "settings: {execution: graph}\n"
      "platforms: [{base: h200, name: h, runtime: {graph_gap: 1 us}}]\n"
      "networks: [{name: n, input: [1000000], layers: [{name: a, op: relu}, {name: b, op: relu}]}]\n");
  const Platform& p = *r.results[0].platforms[0];
  CHECK(p.runtime.launch_overhead_s == Approx(5e-6));
  CHECK(p.runtime.graph_gap_s == Approx(1e-6));
  CHECK(p.runtime.host_overhead_s == Approx(20.3e-6));
  // two relus on 10^6 fp32 elements: 8 MB each at 4.8 TB/s = 1.6667 µs; graph: 2 × 1.6667 + 1 gap + 5 launch
  CHECK(r.results[0].summary[0].time_s == Approx(2 * 8e6 / 4.8e12 + 1e-6 + 5e-6));
}

namespace {

// One layer alone on a platform of 1 TFLOP/s and 1 GB/s, with `algorithms` as given.
RunResult one_conv(const std::string& layer, const std::string& algorithms, const std::string& dtype = "fp32", const std::string& input = "[1, 64, 56, 56]") {
  return test::run_text("name: t\n"
                        "settings: {dtype: " + dtype + "}\n"
                        "platforms:\n"
                        "  - name: p\n"
                        "    compute: [{name: c, dtypes: [fp32, fp16], peak: 1 TFLOP/s}]\n"
                        "    memory: [{name: m, bandwidth: 1 GB/s}]\n" +
                        (algorithms.empty() ? std::string() : "    algorithms: " + algorithms + "\n") +
                        "networks:\n"
                        "  - name: n\n"
                        "    input: " + input + "\n"
                        "    layers: [" + layer + "]\n");
}

}  // namespace

TEST_CASE("algorithms: Winograd F(4x4, 3x3) and F(2x2, 3x3) bound a 3x3 stride-1 convolution by the multiplications they run", "[execution]") {
  const std::string conv = "{name: c, op: conv2d, out_channels: 64, kernel: 3, padding: 1, bias: false}";
  // direct: 56·56 outputs · 64 out · 64 in · 9 taps = 115,605,504 MACs, 231,211,008 FLOPs
  RunResult rr1 = one_conv(conv, "");
  const Row& direct = rr1.results[0].rows[0];
  CHECK(direct.cost.macs == 115605504.0);
  CHECK(direct.theoretical.compute_time_s == Approx(231211008.0 / 1e12));
  // F(4x4): ceil(56/4)² = 196 tiles · 6² = 36 multiplications · 64 · 64 = 28,901,376 MACs (a quarter)
  RunResult w4 = one_conv(conv, "{conv3x3: winograd_f4x4}");
  const Row& r4 = w4.results[0].rows[0];
  CHECK(r4.cost.macs == 115605504.0);  // the conventional count stays
  CHECK(r4.cost.macs_executed == 28901376.0);
  CHECK(r4.cost.flops_executed == 2 * 28901376.0);
  CHECK(r4.theoretical.compute_time_s == Approx(2 * 28901376.0 / 1e12));
  // F(2x2): 28² = 784 tiles · 4² = 16 · 64 · 64 = 51,380,224 MACs (4/9)
  RunResult rr2 = one_conv(conv, "{conv3x3: winograd_f2x2}");
  const Row& r2 = rr2.results[0].rows[0];
  CHECK(r2.cost.macs_executed == 51380224.0);
  // declared for fp32 only: an fp16 convolution keeps the direct count
  RunResult rr3 = one_conv(conv, "{conv3x3: {fp32: winograd_f4x4}}", "fp16");
  const Row& h = rr3.results[0].rows[0];
  CHECK(h.theoretical.compute_time_s == Approx(231211008.0 / 1e12));
  // a strided or grouped 3×3 convolution is not Winograd's
  RunResult rr4 = one_conv("{name: c, op: conv2d, out_channels: 64, kernel: 3, stride: 2, padding: 1, bias: false}", "{conv3x3: winograd_f4x4}");
  const Row& s2 = rr4.results[0].rows[0];
  CHECK(s2.theoretical.compute_time_s == Approx(2 * 28.0 * 28 * 64 * 64 * 9 / 1e12));
}

TEST_CASE("algorithms: a strided 1x1 convolution that reads only the pixels it uses", "[execution]") {
  // 64 → 128 channels, stride 2 on 56×56 (fp32): input 64·56·56·4 = 802,816 bytes, of which a
  // quarter, 200,704, are read; weights 64·128·4 = 32,768; output 128·28·28·4 = 401,408
  const std::string conv = "{name: c, op: conv2d, out_channels: 128, kernel: 1, stride: 2, bias: false}";
  RunResult rr5 = one_conv(conv, "");
  const Row& full = rr5.results[0].rows[0];
  CHECK(full.bytes == 802816.0 + 32768 + 401408);
  RunResult rr6 = one_conv(conv, "{conv1x1_strided: touched_input}");
  const Row& t = rr6.results[0].rows[0];
  CHECK(t.bytes == 200704.0 + 32768 + 401408);
  CHECK(t.cost.input_bytes[0] == 200704.0);
  CHECK(t.theoretical.memory_time_s == Approx((200704.0 + 32768 + 401408) / 1e9));
  // a bad name: the choices
  CHECK(test::error_of([&] { one_conv(conv, "{conv1x1_strided: touched}"); }).find("error: unknown conv1x1_strided algorithm 'touched'") != std::string::npos);
  CHECK(test::error_of([&] { one_conv(conv, "{conv3x3: {fp33: winograd_f4x4}}"); }).find("error: 'fp33' is not a precision") != std::string::npos);
}
