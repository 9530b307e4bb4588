// `rsim calibrate` on measurements of a real NVIDIA H200 (tests/data/h200, a copy of
// ../shared/gpu/h200: ResNet-50 layers timed one by one in eager mode, whole networks eager and in
// one CUDA graph, a GEMM sweep, a Llama-2-7B-shaped decoder). Every expected figure here comes from
// the measurement files themselves, read by the test, or is derived by hand; none from rsim.
#include <catch2/catch.hpp>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include "cli_helpers.hpp"
#include "engine/model/config.hpp"
#include "helpers.hpp"
#include "measure/calibrate.hpp"

using namespace rsim;
using namespace rsim::measure;
namespace fs = std::filesystem;

namespace {

const std::string kDir = std::string(RSIM_SOURCE_DIR) + "/tests/data/h200/";

std::string slurp(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// The shared files: every *.measured.csv and measured_networks.csv.
std::vector<std::string> shared_files() {
  std::vector<std::string> f;
  for (const auto& e : fs::directory_iterator(kDir))
    if (e.path().filename().string().find(".measured.csv") != std::string::npos) f.push_back(e.path().string());
  std::sort(f.begin(), f.end());
  f.push_back(kDir + "measured_networks.csv");
  return f;
}

// A quoted-field-aware split of one CSV line (the test's own reader).
std::vector<std::string> cells(const std::string& line) {
  std::vector<std::string> out(1);
  bool q = false;
  for (char c : line) {
    if (c == '"') q = !q;
    else if (c == ',' && !q) out.emplace_back();
    else out.back() += c;
  }
  return out;
}

// name → column of a header line, and every data line of a file
struct Csv {
  std::map<std::string, size_t> col;
  std::vector<std::vector<std::string>> rows;
};
Csv read_csv(const std::string& path) {
  Csv c;
  std::ifstream in(path);
  std::string line;
  bool header = true;
  while (std::getline(in, line)) {
    if (!line.empty() && line.back() == '\r') line.pop_back();  // (the shared files end lines with CR LF)
    if (line.empty()) continue;
    auto v = cells(line);
    if (header) {
      for (size_t i = 0; i < v.size(); ++i) c.col[v[i]] = i;
      header = false;
    } else {
      c.rows.push_back(v);
    }
  }
  return c;
}

// A scenario's text run against the platform catalog in `dir` (the calibrated platform written there)
RunResult run_on(const fs::path& dir, const std::string& yaml) {
  RunOptions opt;
  opt.make_evaluator = make_lua_evaluator;
  opt.model_dirs = {test::src("scenarios/models")};
  return run_scenario(parse_scenario(yaml, (dir / "t.yaml").string()), Catalog(dir.string()), opt);
}

// layers.csv's fastest time of one ResNet-50 layer at a batch and dtype (0: no such row)
double layer_time(const Csv& l, const std::string& batch, const std::string& dtype, const std::string& name) {
  for (const auto& v : l.rows)
    if (v[l.col.at("batch")] == batch && v[l.col.at("dtype")] == dtype && v[l.col.at("name")] == name) return std::stod(v[l.col.at("event_min_s")]);
  return 0;
}

}  // namespace

TEST_CASE("calibrate (GPU): measured files are told apart by their header", "[calibrate]") {
  CHECK(measured_kind(slurp(kDir + "resnet50_b1_fp16.measured.csv")) == CsvKind::Layers);
  CHECK(measured_kind(slurp(kDir + "measured_networks.csv")) == CsvKind::Networks);
  CHECK(measured_kind(slurp(kDir + "graphs.csv")) == CsvKind::Unknown);  // model,batch,dtype,eager_min_s,graph_min_s
  CHECK(measured_kind("network,layer,op,measured_time_s\n") == CsvKind::Layers);
  CHECK(measured_kind("") == CsvKind::Unknown);
}

TEST_CASE("calibrate (GPU): measured_networks.csv rows, their fastest repetition, and rows without a time skipped", "[calibrate]") {
  // the file's first row: resnet50_b1_fp16, eager, 0.00353075 s in both time columns
  auto n = read_measured_networks_csv(slurp(kDir + "measured_networks.csv"), "measured_networks.csv");
  REQUIRE(n.size() == 20);  // 16 ResNet-50 rows (4 batches × 2 dtypes × 2 modes) and 4 Llama rows
  CHECK(n[0].network == "resnet50_b1_fp16");
  CHECK(n[0].execution == Execution::Eager);
  CHECK(n[0].time_s == 0.00353075);
  CHECK(n[1].execution == Execution::Graph);
  CHECK(n[1].time_s == 0.0008928);
  // measured_min_s wins over measured_time_s; a row with neither is skipped; no point column needed
  auto m = read_measured_networks_csv("network,execution,measured_time_s,measured_min_s\na,graph,2,1\nb,eager,,\nc,eager,3,\n", "x.csv");
  REQUIRE(m.size() == 2);
  CHECK(m[0].time_s == 1);
  CHECK(m[1].time_s == 3);
  CHECK_THROWS_WITH(read_measured_networks_csv("network,execution,measured_time_s\na,lazy,1\n", "x.csv"),
                    "x.csv:2: execution 'lazy' is not fused, graph or eager");
  CHECK_THROWS_WITH(read_measured_networks_csv("network,measured_time_s\na,1\n", "x.csv"), "x.csv: no column 'execution' (is it a measured_networks.csv?)");
  // batch 8: predicted rows only (no layer times); the optional columns of rsim measure are absent
  const std::string b8 = slurp(kDir + "resnet50_b8_fp16.measured.csv");
  CHECK(read_measured_csv(b8, "b8").empty());
  auto all = read_measured_rows(b8, "b8");
  CHECK(all.size() == 175);
  CHECK(all[0].kernel == "conv1");
  CHECK(all[0].roof == "bf16/fp16 tensor cores");
}

TEST_CASE("calibrate (GPU): the layers that beat their bound are those the files time below it, with reasons", "[calibrate]") {
  std::vector<Sample> rows;
  size_t expected = 0;  // counted from the files' own columns: measured_min_s < time_s
  for (const auto& f : shared_files()) {
    if (f.find("measured_networks") != std::string::npos) continue;
    auto r = read_measured_rows(slurp(f), f);
    rows.insert(rows.end(), r.begin(), r.end());
    Csv c = read_csv(f);
    for (const auto& v : c.rows) {
      const std::string& m = v[c.col.at("measured_min_s")];
      if (!m.empty() && std::stod(m) < std::stod(v[c.col.at("time_s")])) ++expected;
    }
  }
  auto b = beats_bound(rows);
  CHECK(expected == 9);  // (the README of the data: fp32 3×3 Winograd convolutions, and a strided 1×1)
  REQUIRE(b.size() == expected);
  std::map<std::string, std::string> reason;
  for (const auto& x : b) reason[x.network + "/" + x.layer] = x.reason;
  // 3×3 stride 1, 256 → 256 channels at 14×14: MACs per output = 256 · 9 (Winograd); 1×1 stride 2: reads a quarter
  CHECK(reason["resnet50_b256_fp32/layer3.1.conv2"].find("Winograd") != std::string::npos);
  CHECK(reason["resnet50_b256_fp16/layer2.0.down"].find("strided 1x1 convolution reads only the input pixels") != std::string::npos);
  CHECK(beats_bound_reason("conv2d", "1x64x56x56", "1x64x56x56", 64.0 * 56 * 56 * 64 * 9).find("Winograd") != std::string::npos);
  CHECK(beats_bound_reason("conv2d", "1x64x56x56", "1x64x56x56", 64.0 * 56 * 56 * 64).empty());  // 1×1 stride 1: no known reason
  CHECK(beats_bound_reason("relu", "1x64", "1x64", 0).empty());
}

TEST_CASE("calibrate (GPU): fitted on the shared H200 files, the platform predicts the measured networks", "[calibrate]") {
  fs::path dir = test::scratch_dir("calibrate_gpu");
  std::vector<std::string> args = {"calibrate"};
  for (const auto& f : shared_files()) args.push_back(f);
  // the network file first: the order of the files does not matter
  std::rotate(args.begin() + 1, args.end() - 1, args.end());
  args.insert(args.end(), {"--platform", "h200", "-o", (dir / "h200_cal.yaml").string(), "--predictions", (dir / "pred.csv").string()});
  auto r = test::cli(args);
  INFO(r.err << r.out);
  REQUIRE(r.code == 0);
  CHECK(r.out.find("fitted on 965 measured layers and 20 measured networks") != std::string::npos);
  CHECK(r.out.find("each network predicted by a fit without it") != std::string::npos);
  CHECK(r.out.find("9 measured layers faster than the theoretical bound") != std::string::npos);
  Diags d;
  Platform p = build_platform(parse_yaml(slurp((dir / "h200_cal.yaml").string()), "h200_cal.yaml"), nullptr, d);
  REQUIRE(d.empty());
  CHECK(p.name == "h200_cal");
  // the runtime, fitted: a gap between a graph's kernels of a few µs, and the host's time per
  // kernel near the 20.3 µs that the eager batch-1 forward gives (3.531 ms / 174 kernels)
  REQUIRE(p.runtime.has_graph_gap());
  CHECK(p.runtime.graph_gap_s > 0);
  CHECK(p.runtime.graph_gap_s < 10e-6);
  REQUIRE(p.runtime.has_host_overhead());
  CHECK(p.runtime.host_overhead_s > 10e-6);
  CHECK(p.runtime.host_overhead_s < 40e-6);
  CHECK(p.runtime.launch_overhead_s == Approx(5e-6));  // h200's own (one per graph)
  // the fitted times are calibrated figures; the launch the base's assumption
  CHECK(p.runtime.gap_basis == Basis::Calibrated);
  CHECK(p.runtime.host_basis == Basis::Calibrated);
  CHECK(p.runtime.launch_basis == Basis::Assumption);
  {  // every rule's error band: the networks predicted without themselves (pred.csv), measured /
     // predicted at the 10th and 90th percentile, interpolated between order statistics
    Csv pred = read_csv((dir / "pred.csv").string());
    std::vector<double> ratio;
    for (const auto& row : pred.rows) ratio.push_back(std::stod(row.at(pred.col.at("measured_s"))) / std::stod(row.at(pred.col.at("predicted_s"))));
    REQUIRE(ratio.size() >= 3);
    std::sort(ratio.begin(), ratio.end());
    auto at = [&](double q) {
      const double x = q * static_cast<double>(ratio.size() - 1);
      const size_t i = static_cast<size_t>(x);
      return i + 1 < ratio.size() ? ratio[i] + (x - static_cast<double>(i)) * (ratio[i + 1] - ratio[i]) : ratio.back();
    };
    for (const CalibrationRule& rule : p.calibration) {
      INFO(rule.name << " " << rule.roof);
      REQUIRE(rule.has_error_band());
      CHECK(rule.error_lo == Approx(at(0.1)).epsilon(1e-3));  // (written with 4 digits)
      CHECK(rule.error_hi == Approx(at(0.9)).epsilon(1e-3));
    }
  }
  // a rule per class and compute roof: fp32 CUDA-core and fp16 tensor-core convolutions apart
  const CalibrationRule* conv32 = p.calibration_for("conv2d", "fp32 CUDA cores");
  const CalibrationRule* conv16 = p.calibration_for("conv2d", "bf16/fp16 tensor cores");
  REQUIRE(conv32);
  REQUIRE(conv16);
  CHECK(conv32 != conv16);
  CHECK(conv32->host_overhead_s > 0);
  // fp32 convolutions with few outputs leave SMs idle: ResNet-50's layer3.x.conv2 and layer4.x.conv2
  // at batch 1 do the same MACs (14·14·256·2304 = 7·7·512·4608 = 115,605,504) on 50,176 and 25,088
  // outputs, and layers.csv times them apart (about 71 and 136 µs). The fitted occupancy factor puts
  // the same ratio between their predicted times (the MACs law is the same for both).
  REQUIRE(conv32->compute.has_occupancy());
  {
    Csv l = read_csv(kDir + "layers.csv");
    const double t3 = layer_time(l, "1", "fp32", "layer3.1.conv2"), t4 = layer_time(l, "1", "fp32", "layer4.1.conv2");
    REQUIRE(t3 > 0);
    REQUIRE(t4 > 0);
    const double macs = 14.0 * 14 * 256 * 2304;
    CHECK(macs == 7.0 * 7 * 512 * 4608);
    const double predicted_ratio = conv32->compute.at(macs, 0, 14.0 * 14 * 256) / conv32->compute.at(macs, 0, 7.0 * 7 * 512);
    INFO("measured " << t4 / t3 << ", predicted " << predicted_ratio);
    CHECK(predicted_ratio == Approx(t4 / t3).epsilon(0.15));
  }
  // measured_layers: ResNet-50's layer2.1.conv2 and layer1.0.conv2 at batch 32 in fp32 do the same
  // MACs (32 · 28 · 28 · 128 · 1152 = 32 · 56 · 56 · 64 · 576 = 3,699,376,128) on outputs past the
  // occupancy's saturation (3,211,264 and 6,422,528 of them), so the laws give them one time; cuDNN
  // runs the first as Winograd, and layers.csv times them apart. The calibrated platform keeps the
  // first shape (the law misses it by far more than 10 %) and so predicts their ratio as measured,
  // within the 10 % a shape the law meets is left at.
  {
    CHECK(32.0 * 28 * 28 * 128 * 1152 == 32.0 * 56 * 56 * 64 * 576);
    REQUIRE(conv32->compute.p_sat <= 32.0 * 28 * 28 * 128);
    Csv l = read_csv(kDir + "layers.csv");
    const double t_wino = layer_time(l, "32", "fp32", "layer2.1.conv2"), t_direct = layer_time(l, "32", "fp32", "layer1.0.conv2");
    REQUIRE(t_wino > 0);
    REQUIRE(t_direct > 0);
    CHECK(t_wino / t_direct < 0.6);  // (147.4 / 274.5 µs)
    bool kept = false;
    for (const auto& ml : p.measured_layers)
      kept |= ml.op == "conv2d" && ml.roof == "fp32 CUDA cores" && ml.input == "32x128x28x28" && ml.output == "32x128x28x28";
    CHECK(kept);
    const std::string yaml = "name: t\nsettings: {dtype: fp32}\nplatforms: [h200_cal]\nnetworks: [{model: resnet50, args: {batch: 32}}]\n";
    RunResult rr = run_on(dir, yaml);
    double p_wino = 0, p_direct = 0;
    for (const auto& row : rr.results[0].rows) {
      if (row.layer == "layer2.1.conv2") p_wino = row.derated.time_s;
      if (row.layer == "layer1.0.conv2") p_direct = row.derated.time_s;
    }
    REQUIRE(p_direct > 0);
    INFO("measured " << t_wino / t_direct << ", predicted " << p_wino / p_direct);
    CHECK(p_wino / p_direct == Approx(t_wino / t_direct).epsilon(0.11));
  }
  // the attention of the Llama decoder: no measured layer of its class, so a transferred law
  const CalibrationRule* att = p.calibration_for("attention", "bf16/fp16 tensor cores");
  REQUIRE(att);
  CHECK(att->extrapolated);
  // the calibrated platform run by rsim on the measured networks, under their own modes: each
  // prediction against the file's measured time (the fit saw these; the held-out check is the
  // leave-one-network-out table calibrate prints)
  Csv m = read_csv(kDir + "measured_networks.csv");
  size_t within = 0, n = 0;
  for (const auto& v : m.rows) {
    const std::string net = v[m.col.at("network")], exec = v[m.col.at("execution")], model = v[m.col.at("model")];
    const std::string batch = v[m.col.at("batch")], dtype = v[m.col.at("dtype")];
    const double measured = std::stod(v[m.col.at("measured_min_s")]);
    std::string args_text = "{batch: " + batch + "}";
    if (model == "llama2_7b") {
      const std::string note = v[m.col.at("measured_note")];
      args_text = note.find("prefill") != std::string::npos ? "{phase: prefill, batch: 1, seq: 2048}" : "{phase: decode, batch: " + batch + ", context: 2048}";
    }
    const std::string yaml = "name: t\nsettings: {dtype: " + dtype + ", execution: " + exec + "}\nplatforms: [h200_cal]\nnetworks: [{model: " + model +
                             ", args: " + args_text + "}]\n";
    RunResult rr = run_on(dir, yaml);
    const double predicted = rr.results[0].summary[0].derated_time_s;
    const double ratio = predicted / measured;
    INFO(net << " " << exec << ": predicted " << predicted << " s, measured " << measured << " s");
    ++n;
    within += ratio <= 1.25 && ratio >= 1 / 1.25;
    if (model == "llama2_7b" && exec == "graph") CHECK(std::fabs(ratio - 1) < 0.10);  // decode within 10 %
    if (model == "llama2_7b" && exec == "eager") CHECK(std::fabs(ratio - 1) < 0.20);  // prefill within 20 %
    CHECK(ratio < 1.6);
    CHECK(ratio > 1 / 1.6);
  }
  CHECK(n == 20);
  CHECK(within >= 16);
  // held out: torchvision networks the fit never saw, timed on a lent H200 of the same kind
  // (tests/data/h200_heldout/torchvision_networks.csv): MobileNetV2, ResNet-18 and VGG16 at batch 1
  // and 32 in fp16 and fp32, in one CUDA graph. Issue 25 asks for 10 of 12 within 1.25×. Misses:
  // VGG16 fp16 at batch 32 (its 3×3 convolutions run at 23–65 % of the tensor-core roof, below
  // ResNet-50's; see docs/validation-gpu.md) and MobileNetV2 fp16 at batch 32. ResNet-18 at batch 1
  // in fp32 — whose layer4 convolutions have 25,088 outputs each — is inside only with the
  // occupancy factor; at batch 32 in fp32 only with measured_layers: its 3×3 convolutions of
  // 32×128×28×28 and 32×256×14×14 are ResNet-50's layer2.x.conv2 and layer3.x.conv2 shapes, which
  // cuDNN runs as Winograd (147 and 183 µs in layers.csv where the law says about 300).
  {
    Csv h = read_csv(std::string(RSIM_SOURCE_DIR) + "/tests/data/h200_heldout/torchvision_networks.csv");
    size_t cases = 0, held_within = 0;
    for (const auto& v : h.rows) {
      const std::string model = v[h.col.at("model")], batch = v[h.col.at("batch")], dtype = v[h.col.at("dtype")];
      if (v[h.col.at("execution")] != "graph" || model == "resnet50" || (batch != "1" && batch != "32")) continue;
      const double measured = std::stod(v[h.col.at("measured_min_s")]);
      const std::string yaml = "name: t\nsettings: {dtype: " + dtype + ", execution: graph}\nplatforms: [h200_cal]\nnetworks: [{model: " + model +
                               ", args: {batch: " + batch + "}}]\n";
      RunResult rr = run_on(dir, yaml);
      const double ratio = rr.results[0].summary[0].derated_time_s / measured;
      INFO(model << " batch " << batch << " " << dtype << ": predicted / measured " << ratio);
      ++cases;
      held_within += ratio <= 1.25 && ratio >= 1 / 1.25;
      if (model == "resnet18" && dtype == "fp32") CHECK(std::fabs(std::log(ratio)) < std::log(1.25));
    }
    CHECK(cases == 12);
    CHECK(held_within >= 10);
  }
  // --predictions: one line per network row, with the held-out and the fitted prediction
  Csv pred = read_csv((dir / "pred.csv").string());
  CHECK(pred.rows.size() == 20);
  CHECK(pred.col.count("predicted_s") == 1);
  fs::remove_all(dir);
}

TEST_CASE("calibrate (GPU): a file that is neither kind is refused, naming both", "[calibrate]") {
  auto r = test::cli({"calibrate", kDir + "graphs.csv", "--platform", "h200", "-o", "/tmp/never.yaml"});
  CHECK(r.code == 1);
  CHECK(r.err == "rsim: error: " + kDir +
                     "graphs.csv is neither a measured.csv (a header with network, layer, op, ..., measured_time_s) nor a measured_networks.csv "
                     "(network, execution, measured_time_s)\n");
  CHECK_FALSE(fs::exists("/tmp/never.yaml"));
}

TEST_CASE("calibrate (GPU): a swept run's files name each point's network apart", "[calibrate]") {
  // rsim_torch measure of scripts/gpu/heldout_cnn.yaml (tests/data/h200_heldout): a dtype × batch
  // grid of 2 × 2 points, three networks each, two modes: 24 network rows, every one named "mobilenet_v2",
  // "resnet18" or "vgg16". Read as one network each, the four points' times were fitted as one.
  const std::string dir = std::string(RSIM_SOURCE_DIR) + "/tests/data/h200_heldout/";
  auto n = read_measured_networks_csv(slurp(dir + "cnn_networks.csv"), "cnn_networks.csv");
  REQUIRE(n.size() == 24);  // 2 dtypes × 2 batches × 3 networks × 2 modes
  std::set<std::string> names;
  for (const auto& s : n) names.insert(s.network);
  CHECK(names.size() == 12);  // one per point and network
  // the file's first row: point 0 (dtype fp16, batch 1), mobilenet_v2 eager, fastest 0.00279999995231628 s
  CHECK(n[0].network == "mobilenet_v2 [dtype=fp16, batch=1]");
  CHECK(n[0].time_s == Approx(0.002799999952316284).epsilon(1e-12));
  CHECK(names.count("vgg16 [dtype=fp32, batch=32]") == 1);
  // the layer rows of the same run carry the same names, so each network finds its layers
  auto rows = read_measured_csv(slurp(dir + "cnn.measured.csv"), "cnn.measured.csv");
  std::set<std::string> layer_nets;
  for (const auto& s : rows) layer_nets.insert(s.network);
  CHECK(layer_nets == names);
  // a point column with one point, or none at all, keeps the file's names
  auto one = read_measured_networks_csv("point,batch,network,execution,measured_time_s\n0,1,a,graph,2\n0,1,b,eager,3\n", "x.csv");
  REQUIRE(one.size() == 2);
  CHECK(one[0].network == "a");
  auto two = read_measured_networks_csv("point,network,execution,measured_time_s\n0,a,graph,2\n1,a,graph,3\n", "x.csv");
  REQUIRE(two.size() == 2);
  CHECK(two[0].network == "a [point 0]");  // no sweep columns: the point's index
  CHECK(two[1].network == "a [point 1]");
}

TEST_CASE("calibrate: a row with more cells than the header is read without reading past the header (found by fuzz_calibrate_csv)", "[calibrate][files]") {
  // the fuzzer's input: a header that lost its `platform` column (merged into `paramsplatform`)
  // and rows of up to 52 cells under its 51 names; naming a swept point read header[51]
  const std::string text = slurp(rsim::test::src("fuzz/corpus/calibrate_csv/row_longer_than_header.measured.csv"));
  try {
    (void)read_measured_rows(text, "m.csv");
  } catch (const std::runtime_error& e) {
    CHECK(std::string(e.what()).find("m.csv") != std::string::npos);  // an error naming the file is fine; a read past the header is not (ASan)
  }
  // by hand: a point column, one binding column (batch), and a row of one cell more than the header
  const std::string small =
      "point,batch,platform,network,layer,op,flops,flops_executed,macs,macs_executed,mac_count,bytes,derated_peak_flops_per_s,derated_bandwidth_bytes_per_s,bound,"
      "measured_time_s\n"
      "0,8,p,n,l,relu,100,100,0,0,0,800,1e12,1e11,memory,1e-6,extra\n"
      "1,16,p,n,l,relu,200,200,0,0,0,1600,1e12,1e11,memory,2e-6\n";
  std::vector<Sample> rows;
  REQUIRE_NOTHROW(rows = read_measured_rows(small, "s.csv"));
  REQUIRE(rows.size() == 2);
  CHECK(rows[0].network == "n [batch=8]");  // two points: each network named by its binding
  CHECK(rows[1].network == "n [batch=16]");
}

TEST_CASE("measured_layers: a layer of a timed shape runs at its law's time × factor, matched by op, roof, shapes and MACs", "[calibrate][measured_layers]") {
  // compute-bound on purpose (1000 TB/s of bandwidth): the conv law gives efficiency 0.5 everywhere.
  // a: 3×3 conv 16→16 on 8×8, padding 1: MACs 16 · 8 · 8 · 16 · 9 = 147,456; listed with factor 0.8,
  //    so its efficiency is 0.5 / 0.8 = 0.625 and its time 2 · 147,456 / (100 GFLOP/s · 0.625).
  // b: 1×1 conv 16→16 on the same shapes (MACs 16 · 8 · 8 · 16 = 16,384): not the listed MACs, so the law's 0.5.
  // c: 3×3 conv 16→32 listed with factor 0.25: 0.5 / 0.25 = 2 is past the roof, clamped to 1.
  const char* yaml = R"(name: ml
platforms:
  - name: p
    compute: [{name: c, dtypes: fp32, peak: 100 GFLOP/s}]
    memory: [{name: DRAM, bandwidth: 1000 TB/s}]
    calibration:
      - {class: conv, ops: [conv2d], compute: [0.5, 0, 0], bandwidth: [0.5, 0, 0]}
    measured_layers:
      - {op: conv2d, roof: c, input: 1x16x8x8, output: 1x16x8x8, macs: 147456, factor: 0.8, from: "net/a"}
      - {op: conv2d, roof: c, input: 1x16x8x8, output: 1x32x8x8, macs: 294912, factor: 0.25}
networks:
  - name: n
    input: [1, 16, 8, 8]
    layers:
      - {name: a, op: conv2d, out_channels: 16, kernel: 3, padding: 1}
      - {name: b, op: conv2d, out_channels: 16, kernel: 1}
      - {name: c, op: conv2d, out_channels: 32, kernel: 3, padding: 1}
)";
  RunResult r = rsim::test::run_text(yaml);
  const auto& rows = r.results.front().rows;
  REQUIRE(rows.size() == 3);
  CHECK(rows[0].cost.macs == 16.0 * 8 * 8 * 16 * 9);
  CHECK(rows[0].efficiency.compute == Approx(0.5 / 0.8));
  CHECK(rows[0].derated.time_s == Approx(2 * 147456 / (100e9 * 0.625)));
  CHECK(rows[1].cost.macs == 16.0 * 8 * 8 * 16);
  CHECK(rows[1].efficiency.compute == Approx(0.5));
  CHECK(rows[1].derated.time_s == Approx(2 * 16384 / (100e9 * 0.5)));
  CHECK(rows[2].cost.macs == 16.0 * 8 * 8 * 32 * 9);
  CHECK(rows[2].efficiency.compute == 1.0);
  CHECK(rows[2].derated.time_s == Approx(2 * 294912 / 100e9));
  // a platform without the list: the law alone (the same layer a at 0.5)
  std::string plain = yaml;
  plain.erase(plain.find("    measured_layers:"), plain.find("networks:") - plain.find("    measured_layers:"));
  RunResult r0 = rsim::test::run_text(plain);
  CHECK(r0.results.front().rows[0].efficiency.compute == Approx(0.5));
}

TEST_CASE("measured_layers: a bad entry is an error at its key", "[calibrate][measured_layers]") {
  auto build = [](const std::string& entries, Diags& d) {
    return build_platform(parse_yaml("name: p\ncompute: [{name: fp32 cores, dtypes: fp32, peak: 1 TFLOP/s}]\nmemory: [{name: DRAM, bandwidth: 1 TB/s}]\n"
                                     "measured_layers:\n" + entries, "p.yaml"),
                          nullptr, d);
  };
  {
    Diags d;
    build("  - {op: conv2d, roof: fp32 core, input: 1x2, output: 1x2, macs: 4, factor: 0.5}\n", d);
    REQUIRE(d.size() == 1);
    CHECK(d.list()[0].message == "measured layer names compute roof 'fp32 core', which the platform lacks");
    CHECK(d.list()[0].loc.line == 5);
  }
  {
    Diags d;
    build("  - {op: conv2d, roof: fp32 cores, input: 1x2, output: 1x2, macs: 4, factor: 0}\n", d);
    REQUIRE(d.size() == 1);
    CHECK(d.list()[0].message.find("factor must lie in (0, 1000]") == 0);
  }
  {
    Diags d;
    build("  - {op: conv2d, roof: fp32 cores, input: 1x2, output: 1x2, macs: 4, factor: 0.5}\n"
          "  - {op: conv2d, roof: fp32 cores, input: 1x2, output: 1x2, macs: 4, factor: 0.7}\n", d);
    REQUIRE(d.size() == 1);
    CHECK(d.list()[0].message == "measured layer conv2d 1x2 -> 1x2 on 'fp32 cores' is listed twice");
    CHECK(d.list()[0].loc.line == 6);
  }
  {
    Diags d;
    build("  - {op: conv2d, roof: fp32 cores, input: 1x2, output: 1x2, factor: 0.5, speed: 2}\n", d);
    REQUIRE(d.size() == 2);  // macs missing, speed unknown
  }
  {
    Diags d;
    Platform p = build("  - {op: conv2d, roof: fp32 cores, input: 1x2, output: 1x2, macs: 4, factor: 0.5}\n", d);
    CHECK(d.empty());
    CHECK(p.measured_layers.size() == 1);
    CHECK(p.measured_factor(measured_layer_key("conv2d", "fp32 cores", "1x2", "1x2", 4)) == 0.5);
    CHECK(p.measured_factor(measured_layer_key("conv2d", "fp32 cores", "1x2", "1x2", 5)) == 1.0);
  }
}

TEST_CASE("calibrate (GPU): a shape the law misses is kept with its factor, the others are not", "[calibrate][measured_layers]") {
  // twelve conv layers timed in a CUDA graph at compute efficiency 0.5 exactly (compute-bound:
  // 100 GFLOP/s, 1 PB/s), MACs 1e6 · 2^i, i = 0 … 11, each a shape of its own; and two layers of
  // one more shape at MACs 1e6 · 2^5.5 (the middle of the range in logs) that took twice the time
  // (efficiency 0.25). The robust fit of log efficiency (Huber, δ = log 1.5): by symmetry the slope
  // stays 0; the level μ solves 12 · (0 − μ) + 2 · (−δ) = 0 (the two residuals −log 2 − μ lie beyond
  // −δ), so μ = −δ / 6 and the law is a = 0.5 · 1.5^(−1/6) ≈ 0.4671. The slow shape's factor, its
  // measured over its law's time: a / 0.25 = 2 · 1.5^(−1/6) ≈ 1.869; every other layer's is
  // a / 0.5 = 1.5^(−1/6) ≈ 0.935: within 10 %, not kept.
  std::vector<Sample> rows;
  auto add = [&](const std::string& layer, double macs, double eff, const std::string& shape) {
    Sample s;
    s.network = "n", s.layer = layer, s.op = "conv2d", s.roof = "c", s.execution = "graph", s.kernel = layer;
    s.macs = s.macs_counted = macs, s.work = 2 * macs, s.bytes = 1e3, s.peak = 1e11, s.bandwidth = 1e15, s.compute_bound = true;
    s.input_shape = shape, s.output_shape = shape;
    s.measured_s = s.measured_min_s = s.work / (s.peak * eff);
    rows.push_back(s);
  };
  for (int i = 0; i < 12; ++i) add("l" + std::to_string(i), 1e6 * std::pow(2.0, i), 0.5, "1x" + std::to_string(i + 1));
  add("slow1", 1e6 * std::pow(2.0, 5.5), 0.25, "1x99");
  add("slow2", 1e6 * std::pow(2.0, 5.5), 0.25, "1x99");
  Model m = fit_gpu_model(rows, {}, Runtime{});
  REQUIRE(m.rules.size() == 1);
  CHECK(m.rules[0].compute.b == Approx(0).margin(1e-6));
  CHECK(m.rules[0].compute.a == Approx(0.5 * std::pow(1.5, -1.0 / 6)).epsilon(1e-4));
  REQUIRE(m.measured_layers.size() == 1);
  const MeasuredLayer& l = m.measured_layers[0];
  CHECK(l.op == "conv2d");
  CHECK(l.roof == "c");
  CHECK(l.input == "1x99");
  CHECK(l.macs == Approx(1e6 * std::pow(2.0, 5.5)));
  CHECK(l.factor == Approx(2 * std::pow(1.5, -1.0 / 6)).epsilon(1e-4));
  CHECK(l.from == "n/slow1 (median of 2 layers)");
  // written into the platform and read back: the slow shape at its measured time again
  const std::string yaml = calibrated_platform_yaml("name: base\ncompute: [{name: c, dtypes: fp32, peak: 100 GFLOP/s}]\nmemory: [{name: DRAM, bandwidth: 1 PB/s}]\n",
                                                    "cal", m.rules, "x", {}, nullptr, "", m.measured_layers);
  Diags d;
  Platform p = build_platform(parse_yaml(yaml, "cal.yaml"), nullptr, d);
  INFO(yaml);
  REQUIRE(d.empty());
  REQUIRE(p.measured_layers.size() == 1);
  CHECK(p.measured_factor(measured_layer_key("conv2d", "c", "1x99", "1x99", 1e6 * std::pow(2.0, 5.5))) == Approx(l.factor).epsilon(1e-3));
}

TEST_CASE("calibrate: an exponent is not fitted over x that barely varies (a NaN law once)", "[calibrate]") {
  // two layers of one shape at two batches: 8,208,192 and 8,293,536 bytes (ResNet-50's fc in fp32 at
  // batch 1 and 8), efficiencies 0.5 and 0.25. A slope through them would be
  // log(0.25 / 0.5) / log(8,293,536 / 8,208,192) = −0.693 / 0.0103 ≈ −67 (a = e^(−1000s) = 0 for the
  // other sign), so under a factor of 2 of x the law is flat: b = 0 and a the geometric mean
  // √(0.5 · 0.25) (both logs within Huber's log 1.5 of their mean, so least squares).
  PowerLaw p = fit_power_law_grouped(std::vector<XGE>{{8208192, 0, 0.5}, {8293536, 0, 0.25}}, false);
  CHECK(p.b == 0);
  CHECK(p.a == Approx(std::sqrt(0.5 * 0.25)));
  // over a factor of 2 the exponent is fitted: log(0.25 / 0.5) / log 2 = −1
  PowerLaw q = fit_power_law_grouped(std::vector<XGE>{{1e6, 0, 0.5}, {2e6, 0, 0.25}}, false);
  CHECK(q.b == Approx(-1));
  // the lent H200's own ResNet-50 files (tests/data/h200_heldout, rsim_torch): the fc layer in fp32 is
  // memory-bound at batch 1 and 8 only, so its class's bandwidth law saw one shape; the calibration
  // wrote `bandwidth: [nan, 0, 0]` and refused its own output. Now it calibrates.
  const std::string h = std::string(RSIM_SOURCE_DIR) + "/tests/data/h200_heldout/";
  fs::path dir = test::scratch_dir("calibrate_lent");
  auto r = test::cli({"calibrate", h + "resnet50.measured.csv", h + "resnet50_networks.csv", "--platform", "h200", "-o", (dir / "lent.yaml").string()});
  INFO(r.err << r.out);
  CHECK(r.code == 0);
  CHECK(r.err.find("nan") == std::string::npos);
  Diags d;
  Platform pl = build_platform(parse_yaml(slurp((dir / "lent.yaml").string()), "lent.yaml"), nullptr, d);
  CHECK(d.empty());
  const CalibrationRule* mm = pl.calibration_for("linear", "fp32 CUDA cores");
  REQUIRE(mm);
  CHECK(std::isfinite(mm->bandwidth.a));
  CHECK(mm->bandwidth.a > 0);
  fs::remove_all(dir);
}

TEST_CASE("calibrate (GPU): files timing each layer eager and in a graph — each layer counted once, and calibrate predicts what the engine does", "[calibrate]") {
  // rsim_torch measures every layer eager and in a CUDA graph (two rows per layer) and each network
  // as a forward pass (tests/data/h200_heldout/resnet50*.csv: ResNet-50 at batch 1, 8, 32, 128 in
  // fp16 and fp32 on a lent H200). A network runs each layer once: the fit counted both rows, so it
  // put twice the layers' time into every network and fitted factors of about ½ to match, which the
  // engine (one row per layer) then applied. The network rows' kernels: ResNet-50's 53 convolutions,
  // 53 batchnorms, 49 ReLUs (one in the stem, three in each of 16 blocks), 16 residual adds, max
  // pool, average pool and fc: 53 + 53 + 49 + 16 + 3 = 174 (the flatten is a view).
  const std::string h = std::string(RSIM_SOURCE_DIR) + "/tests/data/h200_heldout/";
  fs::path dir = test::scratch_dir("calibrate_both_modes");
  auto r = test::cli({"calibrate", h + "resnet50.measured.csv", h + "resnet50_networks.csv", "--platform", "h200", "-o", (dir / "h200_lent.yaml").string(),
                      "--predictions", (dir / "pred.csv").string()});
  INFO(r.err << r.out);
  REQUIRE(r.code == 0);
  Csv pred = read_csv((dir / "pred.csv").string());
  Csv meas = read_csv(h + "resnet50_networks.csv");
  size_t checked = 0;
  for (const auto& v : pred.rows) {
    const std::string net = v[pred.col.at("network")], exec = v[pred.col.at("execution")];
    CHECK(v[pred.col.at("kernels")] == "174");
    const double fitted = std::stod(v[pred.col.at("fitted_s")]);
    // the file's own time of that row: the fit on everything within 1.25× of it in a CUDA graph
    // from batch 8 on (batch 1 is the graph gap's and the smallest kernels')
    for (const auto& m : meas.rows) {
      const std::string name = "resnet50 [dtype=" + m[meas.col.at("sweep.dtype")] + ", batch=" + m[meas.col.at("sweep.batch")] + "]";
      if (name != net || m[meas.col.at("execution")] != exec) continue;
      const double t = std::stod(m[meas.col.at("measured_min_s")]);
      INFO(net << " " << exec << ": fitted " << fitted << " s, measured " << t << " s");
      if (exec == "graph" && m[meas.col.at("sweep.batch")] != "1") CHECK(std::fabs(std::log(fitted / t)) < std::log(1.25));
    }
    // the written platform run by the engine: the same time as calibrate's own prediction
    if (exec != "graph" || net.find("batch=32]") == std::string::npos) continue;
    const std::string dtype = net.find("fp16") != std::string::npos ? "fp16" : "fp32";
    const std::string yaml = "name: t\nsettings: {dtype: " + dtype + ", execution: graph}\nplatforms: [h200_lent]\nnetworks: [{model: resnet50, args: {batch: 32}}]\n";
    RunResult rr = run_on(dir, yaml);
    INFO(net << ": engine " << rr.results[0].summary[0].derated_time_s << " s, calibrate " << fitted << " s");
    CHECK(rr.results[0].summary[0].derated_time_s == Approx(fitted).epsilon(0.02));
    ++checked;
  }
  CHECK(pred.rows.size() == 16);  // 2 dtypes × 4 batches × 2 modes
  CHECK(checked == 2);
  fs::remove_all(dir);
}
