// ONNX import: models built in test code (importers' builder over the ONNX protobuf API), their
// costs against hand-derived arithmetic, shape folding, the `onnx:` network source, import → YAML
// → run equal to the direct run, and every bad-input error with its full message.
#include <catch2/catch.hpp>

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "app/cli.hpp"
#include "helpers.hpp"
#include "importers/onnx_import.hpp"

using namespace rsim;
using namespace rsim::test;
namespace fs = std::filesystem;

namespace {

fs::path temp_dir(const std::string& name) {
  fs::path p = fs::temp_directory_path() / ("rsim_onnx_" + name + "_" + std::to_string(::getpid()));
  fs::remove_all(p);
  fs::create_directories(p);
  return p;
}

void write(const fs::path& p, const std::string& bytes) {
  std::ofstream f(p, std::ios::binary);
  f << bytes;
}

OnnxSpecAttr ints(const std::string& n, std::vector<long long> v) {
  OnnxSpecAttr a;
  a.name = n;
  a.kind = OnnxSpecAttr::Kind::Ints;
  a.ints = std::move(v);
  return a;
}
OnnxSpecAttr one(const std::string& n, long long v) {
  OnnxSpecAttr a;
  a.name = n;
  a.i = v;
  return a;
}

// x [N, 3, 32, 32] → Conv 16×3×3×3 (pad 1) + bias → Relu → MaxPool 2×2 → Flatten → Gemm (10 × 4096, transB) + bias.
// Weights are external (the data file is absent).
OnnxModelSpec small_cnn() {
  OnnxModelSpec s;
  s.inputs = {{"x", {"N", "3", "32", "32"}, 1, {}}};
  s.outputs = {{"y", {"N", "10"}, 1, {}}};
  s.initializers = {{"w", {"16", "3", "3", "3"}, 1, {}}, {"b", {"16"}, 1, {}}, {"fw", {"10", "4096"}, 1, {}}, {"fb", {"10"}, 1, {}}};
  s.nodes = {{"Conv", "conv", {"x", "w", "b"}, {"c"}, {ints("kernel_shape", {3, 3}), ints("pads", {1, 1, 1, 1})}},
             {"Relu", "relu", {"c"}, {"r"}, {}},
             {"MaxPool", "pool", {"r"}, {"p"}, {ints("kernel_shape", {2, 2}), ints("strides", {2, 2})}},
             {"Flatten", "flat", {"p"}, {"f"}, {}},
             {"Gemm", "fc", {"f", "fw", "fb"}, {"y"}, {one("transB", 1)}}};
  return s;
}

const char* kPlatform = R"(
platforms:
  - {name: box, compute: [{name: vec, dtypes: [fp32], peak: 1 TFLOP/s}], memory: [{name: dram, bandwidth: 100 GB/s}]}
)";

}  // namespace

TEST_CASE("ONNX: a small CNN's layers and costs, by hand", "[onnx]") {
  fs::path dir = temp_dir("cnn");
  write(dir / "cnn.onnx", build_onnx_model(small_cnn()));
  std::string yaml = std::string("name: t\n") + kPlatform + "networks:\n  - {name: cnn, onnx: cnn.onnx, dims: {N: 2}}\n";
  RunResult r = run(parse_scenario(yaml, (dir / "t.yaml").string()));
  auto rows = rows_of(r, 0, "box");
  REQUIRE(rows.size() == 5);
  CHECK(rows[0]->layer == "conv");
  CHECK(rows[0]->op == "conv2d");
  CHECK(rows[0]->output_shapes == "2x16x32x32");
  CHECK(rows[0]->cost.macs == 2.0 * 16 * 32 * 32 * (3 * 3 * 3));  // N · Cout · H · W · Cin · kh · kw
  CHECK(rows[0]->cost.params == 16.0 * 3 * 3 * 3 + 16);          // weights + bias
  CHECK(rows[1]->op == "relu");
  CHECK(rows[1]->cost.flops == 2.0 * 16 * 32 * 32);
  CHECK(rows[2]->op == "max_pool2d");
  CHECK(rows[2]->output_shapes == "2x16x16x16");
  CHECK(rows[2]->cost.flops == 2.0 * 16 * 16 * 16 * 4);  // one compare per window element
  CHECK(rows[3]->op == "reshape");
  CHECK(rows[3]->output_shapes == "2x4096");  // Flatten(axis 1): 16 · 16 · 16
  CHECK(rows[4]->op == "linear");
  CHECK(rows[4]->cost.macs == 2.0 * 4096 * 10);
  CHECK(rows[4]->cost.params == 4096.0 * 10 + 10);
  const SummaryRow& s = summary_of(r, 0, "box");
  CHECK(s.params == (16.0 * 27 + 16) + (4096.0 * 10 + 10));  // every float initializer: the weights the file holds
  CHECK(s.macs == 2.0 * 16 * 32 * 32 * 27 + 2.0 * 4096 * 10);

  // the importer's own count of the file's weights agrees
  auto m = load_onnx((dir / "cnn.onnx").string());
  OnnxImportOptions opt;
  opt.dims = {{"N", 2}};
  CHECK(import_onnx(*m, opt).weight_elements == 16.0 * 27 + 16 + 4096.0 * 10 + 10);
  fs::remove_all(dir);
}

TEST_CASE("ONNX: shape-computing subgraphs are folded, not reported as layers", "[onnx]") {
  // x [B, 8, 4] → Reshape to [Shape(x)[0], -1] computed as Shape → Gather → Unsqueeze → Concat
  OnnxModelSpec s;
  s.opset = 13;
  s.inputs = {{"x", {"B", "8", "4"}, 1, {}}};
  s.outputs = {{"y", {"B", "32"}, 1, {}}};
  s.initializers = {{"zero", {}, 7, {0}}, {"minus1", {"1"}, 7, {-1}}, {"axes0", {"1"}, 7, {0}}};
  s.nodes = {{"Shape", "shape", {"x"}, {"sh"}, {}},
             {"Gather", "first", {"sh", "zero"}, {"b"}, {}},
             {"Unsqueeze", "unsq", {"b", "axes0"}, {"b1"}, {}},
             {"Concat", "target", {"b1", "minus1"}, {"t"}, {one("axis", 0)}},
             {"Reshape", "reshape", {"x", "t"}, {"y"}, {}}};
  auto m = parse_onnx(build_onnx_model(s), "fold.onnx");
  OnnxImportOptions opt;
  opt.dims = {{"B", 3}};
  OnnxImport r = import_onnx(*m, opt);
  const CNode* layers = r.network.find("layers");
  REQUIRE(layers->items.size() == 1);  // only the reshape
  CHECK(layers->items[0].find("name")->scalar == "reshape");
  REQUIRE(r.outputs.size() == 1);
  CHECK(r.outputs[0].shape == Shape{3, 32});  // [3, -1] with 3 · 8 · 4 elements
  CHECK(r.folded.at("Shape") == 1);
  CHECK(r.folded.at("Concat") == 1);
}

TEST_CASE("ONNX: unknown operators stop the run with one error listing them all", "[onnx]") {
  fs::path dir = temp_dir("unknown");
  OnnxModelSpec s;
  s.inputs = {{"x", {"1", "4"}, 1, {}}};
  s.outputs = {{"z", {"1", "4"}, 1, {}}};
  s.nodes = {{"FooOp", "f1", {"x"}, {"a"}, {}}, {"BarOp", "b1", {"a"}, {"b"}, {}}, {"FooOp", "f2", {"b"}, {"c"}, {}}, {"Relu", "r", {"c"}, {"z"}, {}}};
  write(dir / "u.onnx", build_onnx_model(s));
  std::string path = (dir / "u.onnx").string();
  std::string yaml = std::string("name: t\n") + kPlatform + "networks:\n  - {name: u, onnx: u.onnx}\n";
  std::string scen = (dir / "t.yaml").string();
  std::string e = error_of([&] { run(parse_scenario(yaml, scen)); });
  CHECK(e == path + ": error: 2 unsupported ONNX operators: FooOp (2 nodes, first 'f1'), BarOp (1 node, first 'b1')\n"
                    "note: map each to a Lua operator or skip it in the network entry: onnx_ops: {FooOp: my_lua_op} or {FooOp: ignore}\n" +
                 scen + ":6:21: note: the ONNX network is used here\n");

  // mapped: FooOp to a built-in operator, BarOp ignored (passes its input through)
  std::string mapped = std::string("name: t\n") + kPlatform + "networks:\n  - {name: u, onnx: u.onnx, onnx_ops: {FooOp: sigmoid, BarOp: ignore}}\n";
  RunResult r = run(parse_scenario(mapped, scen));
  auto rows = rows_of(r, 0, "box");
  REQUIRE(rows.size() == 3);  // f1, f2 (sigmoid) and r; b1 is gone
  CHECK(rows[0]->layer == "f1");
  CHECK(rows[0]->op == "sigmoid");
  CHECK(rows[0]->cost.flops == 4.0 * 4);  // 4 FLOPs per element × 4 elements
  CHECK(rows[1]->layer == "f2");
  CHECK(rows[2]->op == "relu");

  std::string bad_map = std::string("name: t\n") + kPlatform + "networks:\n  - {name: u, onnx: u.onnx, onnx_ops: {FooOp: sigmod}}\n";
  CHECK(error_of([&] { run(parse_scenario(bad_map, scen)); }) ==
        scen + ":6:47: error: unknown operator 'sigmod' for ONNX op FooOp\n  - {name: u, onnx: u.onnx, onnx_ops: {FooOp: sigmod}}\n" +
            std::string(46, ' ') + "^\nnote: did you mean 'sigmoid'?\n");
  fs::remove_all(dir);
}

TEST_CASE("ONNX: bad files are errors naming the file", "[onnx]") {
  fs::path dir = temp_dir("bad");
  std::string good = build_onnx_model(small_cnn());
  std::string trunc = (dir / "trunc.onnx").string(), text = (dir / "text.onnx").string(), missing = (dir / "missing.onnx").string();
  write(trunc, good.substr(0, good.size() / 2));
  write(text, "name: not a model\n");
  CHECK(error_of([&] { load_onnx(missing); }) == missing + ": error: cannot read the ONNX model: No such file or directory\n");
  CHECK(error_of([&] { load_onnx(trunc); }) == trunc + ": error: is not a valid ONNX model (the protobuf data is truncated or corrupt)\n"
                                                   "note: export it again, e.g. torch.onnx.export(model, x, \"model.onnx\")\n");
  CHECK(error_of([&] { load_onnx(text); }).find(text + ": error: is not ") == 0);
  OnnxModelSpec s18 = small_cnn();
  s18.opset = 18;
  CHECK(error_of([&] { parse_onnx(build_onnx_model(s18), "new.onnx"); }) ==
        "new.onnx: error: uses ONNX opset 18; rsim reads opsets 7 to 17\nnote: export with opset_version=17 (torch.onnx.export(..., opset_version=17))\n");

  // an unbound symbolic dimension names the input and the symbol and suggests dims:
  auto m = parse_onnx(good, "cnn.onnx");
  CHECK(error_of([&] { import_onnx(*m, {}); }) ==
        "cnn.onnx: error: input 'x' has the symbolic dimension 'N' (dimension 0), which is not bound\nnote: bind it in the network entry: dims: {N: 1}\n");
  OnnxImportOptions typo;
  typo.dims = {{"n", 1}};
  CHECK(error_of([&] { import_onnx(*m, typo); }) == "cnn.onnx: error: the model has no symbolic dimension 'n'\nnote: did you mean 'N'?\n");

  // a node whose shape cannot be inferred names the node and its op
  OnnxModelSpec mismatch = small_cnn();
  mismatch.initializers[2].dims = {"10", "4000"};  // the Gemm's K no longer matches 4096
  auto mm = parse_onnx(build_onnx_model(mismatch), "mm.onnx");
  OnnxImportOptions opt;
  opt.dims = {{"N", 1}};
  CHECK(error_of([&] { import_onnx(*mm, opt); }) == "mm.onnx: error: node 'fc' (Gemm): inner dimensions differ: 1x4096 × 10x4000ᵀ\n");
  fs::remove_all(dir);
}

TEST_CASE("ONNX: rsim import writes a zoo model whose run equals the direct one", "[onnx][cli]") {
  fs::path dir = temp_dir("import");
  write(dir / "cnn.onnx", build_onnx_model(small_cnn()));
  fs::create_directories(dir / "models");
  std::ostringstream o, e;
  int code = rsim_main({"import", (dir / "cnn.onnx").string(), "--dim", "N=1", "-o", (dir / "models" / "cnn.yaml").string()}, o, e);
  INFO(e.str());
  REQUIRE(code == 0);
  std::ifstream f(dir / "models" / "cnn.yaml");
  std::stringstream text;
  text << f.rdbuf();
  CHECK(text.str().find("params: {N: 1}\n") != std::string::npos);
  CHECK(text.str().find("\"x\": [\"${N}\", 3, 32, 32]") != std::string::npos);
  std::string both = std::string("name: t\nsweep: {grid: {b: [1, 4]}}\n") + kPlatform +
                     "networks:\n  - {name: direct, onnx: cnn.onnx, dims: {N: \"${b}\"}}\n  - {model: cnn, name: imported, args: {N: \"${b}\"}}\n";
  RunResult r = run(parse_scenario(both, (dir / "t.yaml").string()));
  for (size_t p = 0; p < 2; ++p) {
    std::vector<const Row*> direct, imported;
    for (const auto& row : r.results[p].rows) (row.network == "direct" ? direct : imported).push_back(&row);
    REQUIRE(direct.size() == 5);
    REQUIRE(imported.size() == direct.size());
    for (size_t i = 0; i < direct.size(); ++i) {
      CHECK(direct[i]->layer == imported[i]->layer);
      CHECK(direct[i]->output_shapes == imported[i]->output_shapes);
      CHECK(direct[i]->cost.macs == imported[i]->cost.macs);
      CHECK(direct[i]->cost.params == imported[i]->cost.params);
      CHECK(direct[i]->bytes == imported[i]->bytes);
    }
  }
  CHECK(summary_of(r, 1, "box").macs == 4 * (2.0 * 16 * 32 * 32 * 27 / 2 + 4096.0 * 10));  // batch 4

  // a truncated file: exit 1, the file named, nothing written
  std::string good = build_onnx_model(small_cnn());
  write(dir / "trunc.onnx", good.substr(0, good.size() - 7));
  std::ostringstream o2, e2;
  fs::path out = dir / "models" / "trunc.yaml";
  CHECK(rsim_main({"import", (dir / "trunc.onnx").string(), "-o", out.string()}, o2, e2) == 1);
  CHECK(e2.str().find((dir / "trunc.onnx").string() + ": error: ") == 0);
  CHECK(!fs::exists(out));

  std::ostringstream o4, e4;
  CHECK(rsim_main({"import", (dir / "cnn.onnx").string(), "--dim", "M=1"}, o4, e4) == 1);
  CHECK(e4.str() == (dir / "cnn.onnx").string() + ": error: the model has no symbolic dimension 'M'\nnote: did you mean 'N'?\n");
  CHECK(o4.str().empty());

  std::ostringstream o3, e3;
  CHECK(rsim_main({"import", (dir / "cnn.onnx").string(), "--summary"}, o3, e3) == 0);
  CHECK(o3.str().find("5 nodes, 4 initializers (4 in external data), 41418 weight elements") != std::string::npos);  // 448 + 40970
  CHECK(o3.str().find("unsupported: none") != std::string::npos);
  fs::remove_all(dir);
}
