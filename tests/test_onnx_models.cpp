// Acceptance: real models exported by PyTorch's exporter (torch 1.13, torchvision 0.14, Debian 12),
// committed graph-only (their external weight files deleted) by scripts/make_onnx_models.py.
// Reference numbers are PyTorch's own, printed by that script:
//   torch params = sum(p.numel() for p in model.parameters())
//   torch MACs   = every conv, linear, matmul and bmm PyTorch ran on the export's input, counted
//                  by a TorchFunctionMode (out elements × reduction length)
//   file weights = elements of the file's float initializers, BatchNorm running statistics excluded
//                  (onnx.load(..., load_external_data=False)); with BatchNorm folded into the convs
//                  by the exporter this is less than PyTorch's count (γ, β become a conv bias)
// rsim must give params equal to the file's weights (and to PyTorch's count for the export that
// keeps BatchNorm as its own node) and MACs within 0.5 % of PyTorch's, directly and through
// `rsim import`.
#include <catch2/catch.hpp>

#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <fstream>

#include "helpers.hpp"
#include "importers/onnx_import.hpp"

using namespace rsim;
using namespace rsim::test;
namespace fs = std::filesystem;

namespace {

struct Reference {
  const char* file;
  const char* entry_extra;  // dims or inputs for the network entry
  double torch_params, file_weights, torch_macs;
  bool bn_node;  // BatchNorm exported as its own node: params must equal PyTorch's count
};

// clang-format off
const Reference kModels[] = {
    // file                                   entry                              torch params  file weights  torch MACs    BN node
    {"resnet18_op13",                         "",                                11689512,     11684712,     1814073344,   false},
    {"resnet50_op17",                         "",                                25557032,     25530472,     4089184256,   false},
    {"mobilenet_v3_small_op17",               "",                                2542856,      2536800,      56510400,     false},
    {"shufflenet_v2_x0_5_op13",               "",                                1366792,      1362816,      40476448,     false},
    {"squeezenet1_1_op17",                    "",                                1235496,      1235496,      349151936,    false},
    {"googlenet_op13",                        "",                                6624904,      6617624,      1498376192,   false},
    {"resnet18_bn_op13",                      "",                                11689512,     11689512,     1814073344,   true},
    {"deeplabv3_mobilenet_v3_large_op13",     "",                                11025477,     11011485,     1882169120,   false},
    // a ViT (class token and position embedding are constant layers with params); its MACs counted with
    // the script's counter after the fix that sees inside nn.MultiheadAttention (the ONNX file is unchanged)
    {"vit_b_16_op17",                         "",                                86567656,     86567656,     17563828224,  false},
    // a GPT-2-style decoder exported with dynamic batch and seq axes; PyTorch ran it on ids of shape (2, 64)
    {"gpt2_small_op17",                       "dims: {batch: 2, seq: 64}",       685568,       685568,       70909952,     false},
};
// clang-format on

}  // namespace

TEST_CASE("ONNX acceptance: PyTorch exports give the file's params and PyTorch's MACs, directly and through rsim import", "[onnx][models]") {
  fs::path dir = fs::temp_directory_path() / ("rsim_onnx_models_" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir / "models");
  for (const Reference& m : kModels) {
    INFO(m.file);
    std::string onnx = src(std::string("tests/data/onnx/") + m.file + ".onnx");
    REQUIRE(fs::exists(onnx));
    REQUIRE(!fs::exists(onnx + ".data"));  // graph only: the external weights are absent
    // through rsim import: the zoo file, with the model's symbolic dimensions as parameters
    auto model = load_onnx(onnx);
    OnnxImportOptions opt;
    opt.name = m.file;
    {
      std::ofstream f(dir / "models" / (std::string(m.file) + ".yaml"));
      f << onnx_to_model_yaml(*model, opt, {});
    }
    std::string extra = m.entry_extra;
    std::string yaml = "name: acc\nplatforms: [a100_sxm_80gb]\nnetworks:\n"
                       "  - {name: direct, onnx: " + onnx + (extra.empty() ? "" : ", " + extra) + "}\n"
                       "  - {model: " + std::string(m.file) + ", name: imported" + (extra.empty() ? "" : ", args: {" + extra.substr(extra.find('{') + 1)) + "}\n";
    RunResult r = run(parse_scenario(yaml, (dir / "acc.yaml").string()));
    const auto& sums = r.results.at(0).summary;
    REQUIRE(sums.size() == 2);
    for (const SummaryRow& s : sums) {
      INFO(s.network);
      CHECK(s.params == m.file_weights);
      if (m.bn_node) CHECK(s.params == m.torch_params);
      CHECK(std::fabs(s.macs - m.torch_macs) <= 0.005 * m.torch_macs);
    }
    CHECK(sums[0].macs == sums[1].macs);
    CHECK(sums[0].bytes == sums[1].bytes);
    CHECK(sums[0].layers == sums[1].layers);
  }
  fs::remove_all(dir);
}
