// Whole models written with blocks: counts pinned to the reference implementations.
#include <algorithm>
#include <filesystem>
#include <fstream>
#include <unistd.h>
#include <catch2/catch.hpp>
#include <stdexcept>
#include <string>
#include <vector>

#include "helpers.hpp"
#include "reference_nets.hpp"

using namespace rsim;
using namespace rsim::test;

TEST_CASE("ResNet-50 fits on a page and matches torchvision", "[models]") {
  RunResult r = run_file("scenarios/resnet50.yaml");
  const SummaryRow& s = summary_of(r, 0, "rtx3080");
  CHECK(s.params == 25557032);  // torchvision.models.resnet50().parameters(), BN γ/β included
  // the usual published count is 4.1 G multiply-accumulates (conv + fc)
  CHECK(s.macs > 4.05e9);
  CHECK(s.macs < 4.15e9);
  // stem conv by hand: 112·112 outputs × 64 channels × 3·7·7 MACs
  const Row& stem = *rows_of(r, 0, "rtx3080").at(0);
  CHECK(stem.output_shapes == "1x64x112x112");
  CHECK(stem.cost.macs == 112.0 * 112 * 64 * 3 * 7 * 7);
  // the projection shortcut exists only in the first block of each stage: 4 of them
  int downs = 0;
  for (const Row* row : rows_of(r, 0, "rtx3080")) downs += row->layer.size() > 5 && row->layer.substr(row->layer.size() - 5) == ".down";
  CHECK(downs == 4);
  CHECK(rows_of(r, 0, "rtx3080").back()->output_shapes == "1x1000");
}

TEST_CASE("models are used by name, with arguments, and checked", "[models]") {
  std::string base = "name: t\nplatforms: [rtx3080]\nnetworks:\n";
  auto scen = [&](const std::string& nets) {
    Scenario s = parse_scenario(base + nets, src("scenarios/t.yaml"));  // resolves scenarios/models/
    return s;
  };
  RunResult b1 = run(scen("  - {model: resnet50}\n"));
  RunResult b8 = run(scen("  - {model: resnet50, name: rn50_b8, args: {batch: 8}}\n"));
  // batch 8 multiplies every layer's MACs by 8; the parameters stay
  CHECK(summary_of(b8, 0, "rtx3080").macs == 8 * summary_of(b1, 0, "rtx3080").macs);
  CHECK(summary_of(b8, 0, "rtx3080").params == summary_of(b1, 0, "rtx3080").params);
  CHECK(summary_of(b8, 0, "rtx3080").network == "rn50_b8");
  std::string unknown = error_of([&] { run(scen("  - {model: resnet5}\n")); });
  CHECK(unknown == src("scenarios/t.yaml:4:13: error: unknown model 'resnet5'\n"
                       "  - {model: resnet5}\n"
                       "            ^\n"
                       "note: did you mean 'resnet50'?\n"));
  std::string arg = error_of([&] { run(scen("  - {model: resnet50, args: {batchsize: 8}}\n")); });
  CHECK(arg == src("scenarios/t.yaml:4:30: error: model 'resnet50' has no parameter 'batchsize'\n"
                   "  - {model: resnet50, args: {batchsize: 8}}\n"
                   "                             ^\n"
                   "note: its parameters: batch, size\n"));
}

namespace {

// A scenario running one model from scenarios/models/ (args: e.g. "{size: 224}"), with the rows
// of its only point on rtx3080.
struct ModelRun {
  RunResult r;
  const SummaryRow& total() const { return summary_of(r, 0, "rtx3080"); }
  std::vector<const Row*> rows() const { return rows_of(r, 0, "rtx3080"); }
  const Row& layer(const std::string& name) const {
    for (const Row* row : rows())
      if (row->layer == name) return *row;
    throw std::runtime_error("no layer " + name);
  }
  int count(const std::string& suffix) const {
    int n = 0;
    for (const Row* row : rows())
      n += row->layer.size() >= suffix.size() && row->layer.compare(row->layer.size() - suffix.size(), suffix.size(), suffix) == 0;
    return n;
  }
  // MACs / bytes over the rows whose op is in `ops` (all rows when empty)
  double mac_intensity(const std::vector<std::string>& ops = {}) const {
    double macs = 0, bytes = 0;
    for (const Row* row : rows())
      if (ops.empty() || std::find(ops.begin(), ops.end(), row->op) != ops.end()) {
        macs += row->cost.macs;
        bytes += row->bytes;
      }
    return macs / bytes;
  }
};

ModelRun run_model(const std::string& model, const std::string& args = "", const std::string& settings = "") {
  std::string text = "name: t\n" + (settings.empty() ? "" : "settings: " + settings + "\n") + "platforms: [rtx3080]\nnetworks:\n" +
                     "  - {model: " + model + (args.empty() ? "" : ", args: " + args) + "}\n";
  return ModelRun{run(parse_scenario(text, src("scenarios/t.yaml")))};
}

const std::vector<std::string> kMacOps = {"conv2d", "depthwise_conv2d", "linear"};

}  // namespace

TEST_CASE("VGG-16 matches torchvision", "[models]") {
  ModelRun m = run_model("vgg16");
  CHECK(m.total().params == 138357544);  // torchvision.models.vgg16().parameters()
  // published: 15.5 G MACs (torchvision's docs: 15.47 "GFLOPS", which are MACs)
  CHECK(m.total().macs > 15.4e9);
  CHECK(m.total().macs < 15.55e9);
  // first conv by hand: 224·224 outputs × 64 channels × 3·3·3 MACs
  CHECK(m.layer("stage1.0.conv").output_shapes == "1x64x224x224");
  CHECK(m.layer("stage1.0.conv").cost.macs == 224.0 * 224 * 64 * 3 * 3 * 3);  // 86,704,128
  // first FC: 512·7·7 = 25,088 inputs × 4096 outputs
  CHECK(m.layer("fc1").cost.macs == 25088.0 * 4096);
  CHECK(m.rows().back()->output_shapes == "1x1000");
}

TEST_CASE("ResNet-18 and ResNet-34 match torchvision", "[models]") {
  ModelRun r18 = run_model("resnet18");
  CHECK(r18.total().params == 11689512);  // torchvision.models.resnet18().parameters(), BN γ/β included
  // published: 1.8 G (paper), 1.81 G (torchvision's docs)
  CHECK(r18.total().macs > 1.78e9);
  CHECK(r18.total().macs < 1.85e9);
  // first 3×3 conv of layer1 by hand: 56·56 outputs × 64 channels × 64·3·3 MACs
  CHECK(r18.layer("layer1.0.conv1").output_shapes == "1x64x56x56");
  CHECK(r18.layer("layer1.0.conv1").cost.macs == 56.0 * 56 * 64 * 64 * 9);  // 115,605,504
  // projection shortcut of layer2: 28·28 × 128 × 64 MACs; only stages 2–4 have one
  CHECK(r18.layer("layer2.0.down").cost.macs == 28.0 * 28 * 128 * 64);
  CHECK(r18.count(".down") == 3);
  CHECK(r18.rows().back()->output_shapes == "1x1000");

  ModelRun r34 = run_model("resnet34");
  CHECK(r34.total().params == 21797672);  // torchvision.models.resnet34().parameters()
  // published: 3.6 G (paper), 3.66 G (torchvision's docs)
  CHECK(r34.total().macs > 3.6e9);
  CHECK(r34.total().macs < 3.7e9);
  CHECK(r34.layer("layer4.2.conv2").output_shapes == "1x512x7x7");
  CHECK(r34.layer("layer4.2.conv2").cost.macs == 7.0 * 7 * 512 * 512 * 9);
  CHECK(r34.count(".down") == 3);
  CHECK(r34.count(".add") == 16);  // 3 + 4 + 6 + 3 basic blocks
  CHECK(r34.rows().back()->output_shapes == "1x1000");
}

TEST_CASE("MobileNet V1 matches the paper's layout", "[models]") {
  ModelRun m = run_model("mobilenet_v1");
  // tf.keras.applications.MobileNet(alpha=1.0): 4,231,976 trainable parameters = 4,210,088 conv
  // and FC weights + BN γ and β (its 4,253,864 total adds the BN moving means and variances)
  CHECK(m.total().params == 4231976);
  // the paper's Table 1: 569 M mult-adds; within 2 %
  CHECK(m.total().macs > 569e6 * 0.98);
  CHECK(m.total().macs < 569e6 * 1.02);
  // first separable block by hand: 3×3 depthwise over 32 channels, then 1×1 32 → 64, at 112×112
  CHECK(m.layer("stage1.dw").cost.macs == 112.0 * 112 * 32 * 9);        // 3,612,672
  CHECK(m.layer("stage1.pw").cost.macs == 112.0 * 112 * 32 * 64);       // 25,690,112
  CHECK(m.layer("stage5.1.pw").output_shapes == "1x1024x7x7");
  CHECK(m.count(".dw") == 13);
  CHECK(m.rows().back()->output_shapes == "1x1000");
}

TEST_CASE("MobileNet V2 matches torchvision", "[models]") {
  ModelRun m = run_model("mobilenet_v2");
  CHECK(m.total().params == 3504872);  // torchvision.models.mobilenet_v2().parameters()
  // the paper's 300 M multiply-adds; within 2 %
  CHECK(m.total().macs > 300e6 * 0.98);
  CHECK(m.total().macs < 300e6 * 1.02);
  // the first block has t = 1: no expansion, depthwise straight on the stem's 32 channels
  CHECK(m.layer("stage1.dw").cost.macs == 112.0 * 112 * 32 * 9);
  CHECK(m.count("stage1.expand") == 0);
  // the second block expands 16 → 96 at 112×112 before its stride-2 depthwise
  CHECK(m.layer("stage2.0.expand").cost.macs == 112.0 * 112 * 16 * 96);  // 19,267,584
  CHECK(m.layer("stage2.0.dw").output_shapes == "1x96x56x56");
  // residual adds: every block but the first of a stage: 1 + 2 + 3 + 2 + 2
  CHECK(m.count(".add") == 10);
  CHECK(m.rows().back()->output_shapes == "1x1000");
}

TEST_CASE("MobileNet V3-Small matches torchvision", "[models]") {
  ModelRun m = run_model("mobilenet_v3_small");
  CHECK(m.total().params == 2542856);  // torchvision.models.mobilenet_v3_small().parameters()
  // the paper's 56 M multiply-adds; within 2 %
  CHECK(m.total().macs > 56e6 * 0.98);
  CHECK(m.total().macs < 56e6 * 1.02);
  CHECK(m.layer("conv1").cost.macs == 112.0 * 112 * 16 * 3 * 9);  // 5,419,008
  // block 1: stride-2 3×3 depthwise on 16 channels, then squeeze-excitation 16 → 8 → 16
  CHECK(m.layer("block1.dw").cost.macs == 56.0 * 56 * 16 * 9);  // 451,584
  CHECK(m.layer("block1.se_fc1").cost.macs == 16.0 * 8);
  CHECK(m.layer("block1.se_fc1").cost.params == 16.0 * 8 + 8);
  CHECK(m.layer("block1.se_scale").output_shapes == "1x16x56x56");  // (16, 56, 56) × (16, 1, 1)
  CHECK(m.layer("block10_11.0.se_fc1").output_shapes == "1x144x1x1");  // make_divisible(576 / 4, 8)
  CHECK(m.count(".se_scale") == 9);  // blocks 2 and 3 have none
  CHECK(m.count(".add") == 6);       // blocks 3, 5, 6, 8, 10, 11
  CHECK(m.rows().back()->output_shapes == "1x1000");
}

TEST_CASE("seed 001: VGG-16 ≈ 25 and MobileNet V1 ≈ 7 MAC/byte, each under its own convention", "[models]") {
  // Seed 001 quotes I ≈ 25 for VGG-16 and ≈ 7 for MobileNet V1 (fp32, 224×224, bytes = weights +
  // outputs, "FLOPs" that are MACs). The two figures come from different conventions:
  const std::string wo = "{memory_model: weights+outputs}";
  ModelRun vgg = run_model("vgg16", "", wo);
  ModelRun mb1 = run_model("mobilenet_v1", "", wo);
  // the same ratios from the reference networks (tests/reference_nets.hpp), exactly
  auto mac_intensity = [](const ref::Net& n, bool mac_layers_only) {
    double macs = 0, bytes = 0;
    for (const ref::Work& l : n.layers)
      if (!mac_layers_only || l.op == "conv" || l.op == "linear") {
        macs += l.macs;
        bytes += l.bytes(true);  // weights + outputs, fp32
      }
    return macs / bytes;
  };
  ref::Net v = ref::vgg16(), m = ref::mobilenet_v1();
  // VGG-16's 25: conv and FC layers only, as if ReLU and pooling were fused away
  CHECK(vgg.mac_intensity(kMacOps) == Approx(mac_intensity(v, true)).epsilon(1e-12));
  CHECK(mac_intensity(v, true) == Approx(25.5).epsilon(0.005));
  // MobileNet V1's 7: every layer, each BN, ReLU and pool output its own memory traffic
  CHECK(mb1.mac_intensity() == Approx(mac_intensity(m, false)).epsilon(1e-12));
  CHECK(mac_intensity(m, false) == Approx(7.3).epsilon(0.01));
  // the other way round neither figure comes out: VGG-16 over every layer ≈ 23.2,
  // MobileNet V1 over conv and FC layers ≈ 15.4
  CHECK(vgg.mac_intensity() == Approx(mac_intensity(v, false)).epsilon(1e-12));
  CHECK(mac_intensity(v, false) == Approx(23.2).epsilon(0.01));
  CHECK(mb1.mac_intensity(kMacOps) == Approx(mac_intensity(m, true)).epsilon(1e-12));
  CHECK(mac_intensity(m, true) == Approx(15.4).epsilon(0.01));
}

TEST_CASE("YOLOv5s matches ultralytics v6.0, and v5.0 reproduces seed 003", "[models]") {
  ModelRun v6 = run_model("yolov5s");
  // ultralytics v6.0 yolov5s (80 classes): 7,235,389 parameters unfused, as modelled (BN separate);
  // fusing each BN into its conv drops γ and β (2 per channel) and adds a conv bias (1 per
  // channel): 7,225,885, the "7.2M" ultralytics prints after "Fusing layers"
  CHECK(v6.total().params == 7235389);
  double bn = 0;
  for (const Row* row : v6.rows())
    if (row->op == "batchnorm") bn += row->cost.params / 2;  // channels
  CHECK(bn == 9504);
  CHECK(v6.total().params - bn == 7225885);
  // 8.22 G MACs at 640 (ultralytics prints 16.6 GFLOPs: thop's 2 × MACs plus per-element batch-norm
  // and bias terms), not the 8.48 G of seed 003, whose model is v5.0 (below)
  CHECK(v6.total().macs > 8.15e9);
  CHECK(v6.total().macs < 8.3e9);
  // the 6×6 stride-2 stem by hand: 320·320 outputs × 32 channels × 3·6·6 MACs
  CHECK(v6.layer("stem.conv").output_shapes == "1x32x320x320");
  CHECK(v6.layer("stem.conv").cost.macs == 320.0 * 320 * 32 * 3 * 6 * 6);  // 353,894,400
  CHECK(v6.layer("detect_p3").output_shapes == "1x255x80x80");
  CHECK(v6.layer("detect_p3").cost.params == 128.0 * 255 + 255);
  CHECK(v6.rows().back()->layer == "detect_p5");
  CHECK(v6.rows().back()->output_shapes == "1x255x20x20");

  // seed 003's yolov5s (torchinfo): 7,276,605 parameters, 8.48 G MACs at 640, 1.04 G at 224 —
  // ultralytics v5.0 (Focus stem, SPP, three bottlenecks in the P3 C3)
  ModelRun v5 = run_model("yolov5s", "{version: 5}");
  CHECK(v5.total().params == 7276605);
  CHECK(v5.total().macs == Approx(8.48e9).epsilon(0.005));
  // the whole difference is the third P3 bottleneck: 1×1 and 3×3 convs 64 → 64 at 80×80
  CHECK(v5.total().params - v6.total().params == (64 * 64 + 128) + (64 * 64 * 9 + 128));  // 41,216
  CHECK(v5.total().macs - v6.total().macs == 64.0 * 64 * (1 + 9) * 80 * 80);            // 262,144,000
  CHECK(v5.layer("stem.cat").output_shapes == "1x12x320x320");  // space-to-depth
  ModelRun v5_224 = run_model("yolov5s", "{version: 5, size: 224}");
  CHECK(v5_224.total().macs == Approx(1.04e9).epsilon(0.005));
  CHECK(v5_224.rows().back()->output_shapes == "1x255x7x7");
}

TEST_CASE("a model swept over its arguments is re-bound per point, and rebuilt where its node changes", "[models]") {
  // models/tiny.yaml: one 3×3 conv (padding 1) from c to 2c channels on n × n:
  // MACs = 2c · c · 9 · n².
  namespace fs = std::filesystem;
  fs::path dir = fs::temp_directory_path() / ("rsim_test_model_rebind_" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir / "models");
  std::ofstream(dir / "models" / "tiny.yaml") << "name: tiny\nparams: {c: 8, n: 16}\ninput: [1, \"${c}\", \"${n}\", \"${n}\"]\n"
                                                 "layers:\n  - {name: conv, op: conv2d, out_channels: \"${2 * c}\", kernel: 3, padding: 1}\n";
  std::ofstream(dir / "s.yaml") << "name: s\nplatforms: [rtx3080]\nsweep: {zip: {c: [8, 16, 8]}}\nnetworks:\n"
                                   "  - {model: tiny, args: {c: \"${c}\"}}\n"                  // c swept, n = 16
                                   "  - {model: tiny, name: tiny_b, args: {c: 4, n: \"${c}\"}}\n"  // n swept, c = 4
                                   "  - {model: tiny, name: \"tiny_${c}\", args: {c: 2}}\n";     // its name (its node) changes
  RunResult r = run(load_scenario((dir / "s.yaml").string()));
  fs::remove_all(dir);
  REQUIRE(r.results.size() == 3);
  const double want_a[3] = {16.0 * 8 * 9 * 256, 32.0 * 16 * 9 * 256, 16.0 * 8 * 9 * 256};  // c = 8, 16, 8; n = 16
  const double want_b[3] = {8.0 * 4 * 9 * 64, 8.0 * 4 * 9 * 256, 8.0 * 4 * 9 * 64};          // c = 4; n = 8, 16, 8
  const char* names_c[3] = {"tiny_8", "tiny_16", "tiny_8"};
  for (size_t p = 0; p < 3; ++p) {
    const auto& sums = r.results[p].summary;
    REQUIRE(sums.size() == 3);
    CHECK(sums[0].network == "tiny");
    CHECK(sums[0].macs == want_a[p]);
    CHECK(sums[1].network == "tiny_b");
    CHECK(sums[1].macs == want_b[p]);
    CHECK(sums[2].network == names_c[p]);
    CHECK(sums[2].macs == 4.0 * 2 * 9 * 256);  // c = 2, n = 16
  }
}
