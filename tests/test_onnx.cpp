// ONNX import: models built in test code (importers' builder over the ONNX protobuf API), their
// costs against hand-derived arithmetic, shape folding, the `onnx:` network source, import → YAML
// → run equal to the direct run, and every bad-input error with its full message.
#include <catch2/catch.hpp>

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "app/cli.hpp"
#include "cli_helpers.hpp"
#include "helpers.hpp"
#include "importers/onnx_import.hpp"

using namespace rsim;
using namespace rsim::test;
namespace fs = std::filesystem;

namespace {


void write(const fs::path& p, const std::string& bytes) {
  std::ofstream f(p, std::ios::binary);
  f << bytes;
}

const auto ints = OnnxSpecAttr::integers;
const auto one = OnnxSpecAttr::integer;

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
  fs::path dir = scratch_dir("cnn");
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
  fs::path dir = scratch_dir("unknown");
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
  fs::path dir = scratch_dir("bad");
  std::string good = build_onnx_model(small_cnn());
  std::string trunc = (dir / "trunc.onnx").string(), text = (dir / "text.onnx").string(), missing = (dir / "missing.onnx").string();
  write(trunc, good.substr(0, good.size() / 2));
  write(text, "name: not a model\n");
  CHECK(error_of([&] { load_onnx(missing); }) == missing + ": error: cannot read the ONNX model: No such file or directory\n");
  CHECK(error_of([&] { load_onnx(trunc); }) == trunc + ": error: is not a valid ONNX model (the protobuf data is truncated or corrupt)\n"
                                                   "note: export it again, e.g. torch.onnx.export(model, x, \"model.onnx\")\n");
  CHECK(error_of([&] { load_onnx(text); }).find(text + ": error: is not ") == 0);
  // a constant Add with one input (fuzz_onnx: folding it read a second argument that was not there)
  OnnxModelSpec lone;
  lone.inputs = {{"x", {"2"}, 1, {}}};
  lone.initializers = {{"k", {"2"}, 7, {1, 2}}};
  lone.nodes = {{"Add", "add", {"k"}, {"s"}, {}}, {"Mul", "mul", {"x", "s"}, {"y"}, {}}};
  lone.outputs = {{"y", {"2"}, 1, {}}};
  CHECK(error_of([&] { import_onnx(*parse_onnx(build_onnx_model(lone), "lone13.onnx"), {}); }) ==
        "lone13.onnx: error: node 'add' (Add): has 1 input; Add takes 2\n");
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
  fs::path dir = scratch_dir("import");
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

TEST_CASE("ONNX: ignored operators are listed in the terminal summary and report.md", "[onnx][cli]") {
  fs::path dir = scratch_dir("ignored");
  // x [1, 4] → Dropout → Relu → Dropout → FooOp → y; Dropout is built in, but the scenario may still drop it
  OnnxModelSpec s;
  s.inputs = {{"x", {"1", "4"}, 1, {}}};
  s.outputs = {{"y", {"1", "4"}, 1, {}}};
  s.nodes = {{"Dropout", "d1", {"x"}, {"a"}, {}}, {"Relu", "r", {"a"}, {"b"}, {}}, {"Dropout", "d2", {"b"}, {"c"}, {}}, {"FooOp", "f", {"c"}, {"y"}, {}}};
  write(dir / "m.onnx", build_onnx_model(s));
  std::string yaml = std::string("name: ign\n") + kPlatform +
                     "networks:\n  - {name: m, onnx: m.onnx, onnx_ops: {FooOp: ignore, Dropout: ignore}}\n  - {name: plain, input: [1, 4], layers: [{op: relu}]}\n";
  write(dir / "ign.yaml", yaml);
  RunResult r = run(parse_scenario(yaml, (dir / "ign.yaml").string()));
  auto rows = rows_of(r, 0, "box");
  REQUIRE(rows.size() == 2);  // m's relu and plain's relu
  CHECK(rows[0]->layer == "r");
  const std::string note = "note: network 'm' leaves out operators mapped to ignore (onnx_ops): Dropout (2 nodes), FooOp (1 node); their costs are not counted\n";
  CHECK(ignored_notes(r) == note);
  std::string ts = terminal_summary(r, 40);
  CHECK(ts.substr(ts.size() - note.size()) == note);  // after the table, once (not per platform or point)

  // through the CLI: the terminal output and report.md
  std::ostringstream o, e;
  int code = rsim_main({"run", (dir / "ign.yaml").string(), "--out", (dir / "out").string(), "--format", "svg"}, o, e);
  INFO(e.str());
  REQUIRE(code == 0);
  CHECK(o.str().find("\n" + note + "\nwrote ") != std::string::npos);
  std::ifstream f(dir / "out" / "report.md");
  std::stringstream md;
  md << f.rdbuf();
  CHECK(md.str().find("\n**Ignored operators.** These ONNX operators are mapped to `ignore` (`onnx_ops`): their nodes pass their input through "
                      "and their costs are not counted.\n\n- `m`: Dropout (2 nodes), FooOp (1 node)\n\n## Figures\n") != std::string::npos);
  // summary.csv's last column, ignored_ops, and results.json's summary objects
  std::ifstream sf(dir / "out" / "summary.csv");
  std::stringstream sc;
  sc << sf.rdbuf();
  CHECK(sc.str().substr(0, sc.str().find('\n')).find(",dtype_source,ignored_ops") != std::string::npos);
  CHECK(sc.str().find(",\"Dropout (2 nodes), FooOp (1 node)\",") != std::string::npos);  // (the time's parts follow)
  std::ifstream jf(dir / "out" / "results.json");
  std::stringstream js;
  js << jf.rdbuf();
  CHECK(js.str().find("\"ignored_ops\":\"Dropout (2 nodes), FooOp (1 node)\"") != std::string::npos);
  // a network that ignores nothing adds nothing
  RunResult plain = run_text(std::string("name: p\n") + kPlatform + "networks:\n  - {name: plain, input: [1, 4], layers: [{op: relu}]}\n");
  CHECK(ignored_notes(plain).empty());
  fs::remove_all(dir);
}

TEST_CASE("ONNX: an op mapped to a Lua rsim.op receives the node's attributes", "[onnx][scripting]") {
  fs::path dir = scratch_dir("lua");
  // x [2, 6, 5, 5] → MyGroupNorm(x, gamma [6], beta [6]; groups = 3, epsilon = 0.001, mode = "affine") → y
  OnnxModelSpec s;
  s.inputs = {{"x", {"2", "6", "5", "5"}, 1, {}}};
  s.outputs = {{"y", {"2", "6", "5", "5"}, 1, {}}};
  s.initializers = {{"gamma", {"6"}, 1, {}}, {"beta", {"6"}, 1, {}}};
  OnnxSpecAttr eps;
  eps.name = "epsilon";
  eps.kind = OnnxSpecAttr::Kind::Float;
  eps.f = 0.001;
  OnnxSpecAttr mode;
  mode.name = "mode";
  mode.kind = OnnxSpecAttr::Kind::String;
  mode.s = "affine";
  s.nodes = {{"MyGroupNorm", "gn", {"x", "gamma", "beta"}, {"y"}, {one("groups", 3), eps, mode}}};
  write(dir / "gn.onnx", build_onnx_model(s));
  // The Lua operator: output = input shape; FLOPs = 8 per element + 1000 · groups, and
  // + 1 per element when mode is "affine"; params = 0 (gamma and beta are constant layers that count themselves).
  std::string lua =
      "lua: |\n"
      "  rsim.op { name = 'group_norm', inputs = 3,\n"
      "    attrs = { groups = { type = 'int' }, epsilon = { type = 'number', default = 0.00001 }, mode = { type = 'string', default = 'plain' } },\n"
      "    infer = function(inputs, attrs) return { inputs[1] } end,\n"
      "    cost = function(inputs, outputs, attrs, dtype)\n"
      "      local n = rsim.numel(outputs[1])\n"
      "      local extra = attrs.mode == 'affine' and n or 0\n"
      "      assert(attrs.epsilon > 0.0009 and attrs.epsilon < 0.0011, 'epsilon ' .. attrs.epsilon)\n"
      "      return { macs = 0, flops = 8 * n + 1000 * attrs.groups + extra, params = 0 }\n"
      "    end }\n";
  std::string yaml = std::string("name: t\n") + kPlatform + "networks:\n  - {name: g, onnx: gn.onnx, onnx_ops: {MyGroupNorm: group_norm}}\n" + lua;
  RunResult r = run(parse_scenario(yaml, (dir / "t.yaml").string()));
  auto rows = rows_of(r, 0, "box");
  REQUIRE(rows.size() == 3);  // gamma and beta as constant layers, then the node
  CHECK(rows[0]->op == "constant");
  CHECK(rows[2]->layer == "gn");
  CHECK(rows[2]->op == "group_norm");
  CHECK(rows[2]->output_shapes == "2x6x5x5");
  CHECK(rows[2]->cost.flops == 8.0 * (2 * 6 * 5 * 5) + 1000.0 * 3 + 2 * 6 * 5 * 5);  // 8/element + 1000·groups + 1/element (affine)
  const SummaryRow& sm = summary_of(r, 0, "box");
  CHECK(sm.params == 6.0 + 6);  // gamma and beta
  // through the CLI, as a user runs it
  write(dir / "t.yaml", yaml);
  std::ostringstream o, e;
  INFO(e.str());
  CHECK(rsim_main({"run", (dir / "t.yaml").string(), "--out", (dir / "out").string(), "--no-plots"}, o, e) == 0);
  CHECK(o.str().find("gn") != std::string::npos);

  // an attribute the Lua operator does not declare is an error naming the node
  std::string lua_no_mode = lua;
  lua_no_mode.replace(lua_no_mode.find(", mode = { type = 'string', default = 'plain' }"), std::string(", mode = { type = 'string', default = 'plain' }").size(), "");
  std::string bad = std::string("name: t\n") + kPlatform + "networks:\n  - {name: g, onnx: gn.onnx, onnx_ops: {MyGroupNorm: group_norm}}\n" + lua_no_mode;
  std::string gn = (dir / "gn.onnx").string();
  CHECK(error_of([&] { run(parse_scenario(bad, (dir / "t.yaml").string())); }) ==
        gn + ": error: node 'gn' (MyGroupNorm): has the attribute 'mode', which operator 'group_norm' does not take\n"
             "note: declare it in the operator's attrs (the node's attributes: groups, epsilon, mode)\n" +
            (dir / "t.yaml").string() + ":6:21: note: the ONNX network is used here\n");
  fs::remove_all(dir);
}

TEST_CASE("ONNX: a weight that feeds several nodes is counted once", "[onnx]") {
  // x [2, 8] → Gemm(W, b1, transB) → Relu → Gemm(W, b1, transB) → Gemm(W, b2, transB) → MatMul(W) → Add(b2) → y
  // W [8, 8] feeds four nodes, b1 two, b2 two (once as the Add's constant operand).
  OnnxModelSpec s;
  s.inputs = {{"x", {"2", "8"}, 1, {}}};
  s.outputs = {{"y", {"2", "8"}, 1, {}}};
  s.initializers = {{"W", {"8", "8"}, 1, {}}, {"b1", {"8"}, 1, {}}, {"b2", {"8"}, 1, {}}};
  s.nodes = {{"Gemm", "g1", {"x", "W", "b1"}, {"h1"}, {one("transB", 1)}},
             {"Relu", "r", {"h1"}, {"a"}, {}},
             {"Gemm", "g2", {"a", "W", "b1"}, {"h2"}, {one("transB", 1)}},
             {"Gemm", "g3", {"h2", "W", "b2"}, {"h3"}, {one("transB", 1)}},
             {"MatMul", "m", {"h3", "W"}, {"h4"}, {}},
             {"Add", "add", {"h4", "b2"}, {"y"}, {}}};
  fs::path dir = scratch_dir("tied");
  write(dir / "tied.onnx", build_onnx_model(s));
  // (one layer per node: onnx_recompose: false keeps MatMul and Add apart)
  std::string yaml = std::string("name: t\n") + kPlatform + "networks:\n  - {name: tied, onnx: tied.onnx, onnx_recompose: false}\n";
  RunResult r = run(parse_scenario(yaml, (dir / "t.yaml").string()));
  std::map<std::string, const Row*> by;
  for (const Row* row : rows_of(r, 0, "box")) by[row->layer] = row;
  REQUIRE(by.size() == 7);  // g1 r g2 g3 m, the constant b2, add
  CHECK(by["g1"]->cost.params == 8.0 * 8 + 8);  // W and b1, first use
  CHECK(by["g2"]->cost.params == 0);            // W and b1 again: tied
  CHECK(by["g3"]->cost.params == 8);            // W again, b2 new
  CHECK(by["m"]->cost.params == 0);             // W again
  CHECK(by["b2"]->cost.params == 0);            // b2 already counted by g3
  for (const char* l : {"g1", "g2", "g3", "m"}) CHECK(by[l]->cost.macs == 2.0 * 8 * 8);  // shared weights still do their work
  CHECK(by["g2"]->cost.weight_bytes == (8.0 * 8 + 8) * 4);                              // and are still read
  const SummaryRow& sm = summary_of(r, 0, "box");
  CHECK(sm.params == 8.0 * 8 + 8 + 8);  // W + b1 + b2: the weights the file holds
  CHECK(sm.weight_footprint_bytes == (8.0 * 8 + 8 + 8) * 4);
  auto m = load_onnx((dir / "tied.onnx").string());
  CHECK(import_onnx(*m, {}).weight_elements == sm.params);
  // recomposed (the default), MatMul + Add is one linear layer with a bias; W and b2 are counted
  // already (by g1 and g3), so it holds no parameters of its own; the total is the same
  RunResult rc = run(parse_scenario(std::string("name: t\n") + kPlatform + "networks:\n  - {name: tied, onnx: tied.onnx}\n", (dir / "t.yaml").string()));
  std::map<std::string, const Row*> byc;
  for (const Row* row : rows_of(rc, 0, "box")) byc[row->layer] = row;
  REQUIRE(byc.size() == 5);
  CHECK(byc["m"]->op == "linear");
  CHECK(byc["m"]->cost.params == 0);
  CHECK(byc["m"]->cost.macs == 2.0 * 8 * 8);  // (linear counts FLOPs as 2 · MACs: the bias add is not counted apart)
  CHECK(summary_of(rc, 0, "box").params == 8.0 * 8 + 8 + 8);

  // the same through rsim import → {model: ...}
  fs::create_directories(dir / "models");
  std::ostringstream o, e;
  REQUIRE(rsim_main({"import", (dir / "tied.onnx").string(), "-o", (dir / "models" / "tied.yaml").string()}, o, e) == 0);
  RunResult ri = run(parse_scenario(std::string("name: t\n") + kPlatform + "networks:\n  - {model: tied}\n", (dir / "t.yaml").string()));
  CHECK(summary_of(ri, 0, "box").params == 8.0 * 8 + 8 + 8);
  fs::remove_all(dir);
}

TEST_CASE("ONNX: opset 6 models are converted by ONNX's version converter", "[onnx]") {
  // opset 6 Add with broadcast = 1, axis = 1: b [3] is added along the channels of x [1, 3, 4, 5]
  // (not numpy broadcasting, under which [1, 3, 4, 5] + [3] would not fit)
  OnnxModelSpec s;
  s.opset = 6;
  s.inputs = {{"x", {"1", "3", "4", "5"}, 1, {}}};
  s.outputs = {{"y", {"1", "3", "4", "5"}, 1, {}}};
  s.initializers = {{"b", {"3"}, 1, {}}};
  s.nodes = {{"Add", "add", {"x", "b"}, {"a"}, {one("broadcast", 1), one("axis", 1)}}, {"Relu", "relu", {"a"}, {"y"}, {}}};
  auto m = parse_onnx(build_onnx_model(s), "old.onnx");
  OnnxImport r = import_onnx(*m, {});
  CHECK(r.opset == 7);
  REQUIRE(r.outputs.size() == 1);
  CHECK(r.outputs[0].shape == Shape{1, 3, 4, 5});
  CHECK(r.weight_elements == 3);

  // what the converter cannot bring forward is a clear error naming the file
  OnnxModelSpec bad = s;
  bad.opset = 1;
  bad.nodes = {{"Upsample", "up", {"x"}, {"y"}, {}}};
  std::string msg = error_of([&] { parse_onnx(build_onnx_model(bad), "older.onnx"); });
  CHECK(msg == "older.onnx: error: uses ONNX opset 1, and ONNX's version converter could not bring it to opset 7: "
               "Upsample in opset 1 needs to have width_scale and height_scale attributes\n"
               "note: export it again with opset_version 7 to 17\n");

  // what would crash inside ONNX 1.12's adapters is refused before they run (fuzz_onnx found the first)
  const std::string pre = ": error: uses ONNX opset 6, and ONNX's version converter cannot bring it to opset 7: ";
  const std::string hint = "\nnote: export it again with opset_version 7 to 17\n";
  OnnxModelSpec lone = s;  // an Add with one input: the adapter reads inputs[1]
  lone.nodes = {{"Add", "add", {"x"}, {"y"}, {}}};
  CHECK(error_of([&] { parse_onnx(build_onnx_model(lone), "lone.onnx"); }) == "lone.onnx" + pre + "node 'add' (Add) has 1 inputs; Add takes 2" + hint);
  OnnxModelSpec fax = s;  // a FLOAT axis: the adapter reads it as an integer
  fax.nodes[0].attrs[1].kind = OnnxSpecAttr::Kind::Float;
  CHECK(error_of([&] { parse_onnx(build_onnx_model(fax), "fax.onnx"); }) == "fax.onnx" + pre + "node 'add' (Add) has attribute 'axis' that is not an integer" + hint);
  OnnxModelSpec gemm = s;  // Gemm on a 1-D input: the adapter reads A's dimension 1
  gemm.inputs = {{"v", {"3"}, 1, {}}};
  gemm.initializers = {{"w", {"4", "3"}, 1, {}}, {"c", {"4"}, 1, {}}};
  gemm.nodes = {{"Gemm", "fc", {"v", "w", "c"}, {"y"}, {one("transB", 1)}}};
  gemm.outputs = {{"y", {"1", "4"}, 1, {}}};
  std::string gm = error_of([&] { parse_onnx(build_onnx_model(gemm), "gemm.onnx"); });
  CHECK(gm == "gemm.onnx" + pre + "node 'fc' (Gemm) input 'v' has no known 2-D shape" + hint);

  // broadcasting from the last axis, and without an axis, needs no padding
  OnnxModelSpec suffix = s;
  suffix.inputs = {{"x", {"2", "4", "3"}, 1, {}}};
  suffix.outputs = {{"y", {"2", "4", "3"}, 1, {}}};
  suffix.nodes = {{"Mul", "mul", {"x", "b"}, {"a"}, {one("broadcast", 1), one("axis", 2)}}, {"Sub", "sub", {"a", "b"}, {"y"}, {one("broadcast", 1)}}};
  OnnxImport rs = import_onnx(*parse_onnx(build_onnx_model(suffix), "suffix.onnx"), {});
  CHECK(rs.outputs[0].shape == Shape{2, 4, 3});
  // an axis that does not fit is an error naming the node
  OnnxModelSpec misfit = s;
  misfit.nodes[0].attrs = {one("broadcast", 1), one("axis", 3)};  // [3] from axis 3 of a rank-4 tensor: fits ([1, 3, 4, 5] has 5 there: numpy then fails)
  misfit.nodes[0].attrs[1].i = 4;
  CHECK(error_of([&] { import_onnx(*parse_onnx(build_onnx_model(misfit), "misfit.onnx"), {}); }) ==
        "misfit.onnx: error: node 'add' (Add): broadcast axis 4 does not fit 1x3x4x5 and 3 (opset 6 broadcasting)\n");
}

TEST_CASE("ONNX: an fp16 file is costed in fp16 (its element types), unless the scenario gives a dtype", "[onnx]") {
  // the small CNN with every tensor FLOAT16 (ONNX elem_type 10): 2 bytes an element
  OnnxModelSpec spec = small_cnn();
  for (auto* list : {&spec.inputs, &spec.initializers, &spec.outputs})
    for (auto& t : *list) t.elem_type = 10;
  fs::path dir = scratch_dir("fp16");
  write(dir / "cnn16.onnx", build_onnx_model(spec));
  const std::string plat = R"(
platforms:
  - {name: box, compute: [{name: vec, dtypes: [fp32], peak: 1 TFLOP/s}, {name: half, dtypes: [fp16], peak: 8 TFLOP/s}], memory: [{name: dram, bandwidth: 100 GB/s}]}
)";
  auto run_with = [&](const std::string& settings) {
    std::string yaml = "name: t\n" + settings + plat + "networks:\n  - {name: cnn, onnx: cnn16.onnx, dims: {N: 2}}\n";
    return run(parse_scenario(yaml, (dir / "t.yaml").string()));
  };
  RunResult r = run_with("");
  auto rows = rows_of(r, 0, "box");
  REQUIRE(rows.size() == 5);
  CHECK(rows[0]->dtype == DType::fp16);
  CHECK(rows[0]->compute_roof == "half");  // the fp16 roof, 8 TFLOP/s
  // the conv reads x (2 · 3 · 32 · 32) and its weights (16 · 27 + 16), writes 2 · 16 · 32 · 32, all at 2 B
  CHECK(rows[0]->cost.input_total() == 2.0 * 3 * 32 * 32 * 2);
  CHECK(rows[0]->cost.weight_bytes == (16.0 * 27 + 16) * 2);
  CHECK(rows[0]->cost.output_total() == 2.0 * 16 * 32 * 32 * 2);
  const SummaryRow& s = summary_of(r, 0, "box");
  CHECK(s.dtype == DType::fp16);
  CHECK(s.dtype_from_file);
  CHECK(test::cell(test::csv_rows(summary_csv(r, Scenario{})), 1, "dtype_source") == "file");
  CHECK(test::cell(test::csv_rows(summary_csv(r, Scenario{})), 1, "dtype") == "fp16");
  // settings.dtype wins over the file
  RunResult f = run_with("settings: {dtype: fp32}\n");
  CHECK(rows_of(f, 0, "box")[0]->cost.weight_bytes == (16.0 * 27 + 16) * 4);
  CHECK(summary_of(f, 0, "box").dtype == DType::fp32);
  CHECK_FALSE(summary_of(f, 0, "box").dtype_from_file);
  // an fp32 file stays fp32 (and says the file set it)
  write(dir / "cnn32.onnx", build_onnx_model(small_cnn()));
  std::string yaml = "name: t\n" + plat + "networks:\n  - {name: cnn, onnx: cnn32.onnx, dims: {N: 2}}\n";
  RunResult r32 = run(parse_scenario(yaml, (dir / "t.yaml").string()));
  CHECK(summary_of(r32, 0, "box").dtype == DType::fp32);
  CHECK(rows_of(r32, 0, "box")[0]->compute_roof == "vec");
  fs::remove_all(dir);
}

TEST_CASE("ONNX: a Slice of opset 9 with 'starts' and no 'ends' is an error at its node, not undefined behaviour", "[onnx]") {
  // (an empty optional was read: ASan saw a bad free; a release build a wrong message)
  OnnxModelSpec s;
  s.opset = 9;
  s.inputs = {{"x", {"4", "8"}, 1, {}}};
  s.outputs = {{"y", {"2", "8"}, 1, {}}};
  s.nodes = {{"Slice", "cut", {"x"}, {"y"}, {ints("starts", {0}), ints("axes", {0})}}};
  std::string msg;
  try {
    auto m = parse_onnx(build_onnx_model(s), "slice.onnx");
    import_onnx(*m, OnnxImportOptions{});
  } catch (const ConfigError& e) {
    msg = e.what();
  }
  CHECK(msg.find("node 'cut' (Slice): a Slice of opset below 10 needs the attribute 'ends' beside 'starts'") != std::string::npos);
}

TEST_CASE("ONNX: a Range with a NaN limit and an initializer with a negative dimension are errors naming the real cause", "[onnx]") {
  auto error_of_model = [](const OnnxModelSpec& s) {
    try {
      auto m = parse_onnx(build_onnx_model(s), "m.onnx");
      import_onnx(*m, OnnxImportOptions{});
    } catch (const ConfigError& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  {  // Range(0, NaN, 1): the element count was NaN and the next node took the blame
    OnnxModelSpec s;
    s.inputs = {{"x", {"1", "4"}, 1, {}}};
    s.outputs = {{"z", {"1", "4"}, 1, {}}, {"y", {"?"}, 1, {}}};
    s.initializers = {{"start", {}, 1, {0}}, {"limit", {}, 1, {std::nan("")}}, {"delta", {}, 1, {1}}};
    s.nodes = {{"Relu", "relu", {"x"}, {"z"}, {}}, {"Range", "range", {"start", "limit", "delta"}, {"y"}, {}}};
    const std::string e = error_of_model(s);
    INFO(e);
    CHECK(e.find("node 'range' (Range): start, limit and delta must be finite numbers") != std::string::npos);
  }
  {  // an initializer of dims [-3]: was "computed from data at run time"
    OnnxModelSpec s;
    s.inputs = {{"x", {"3"}, 1, {}}};
    s.outputs = {{"y", {"3"}, 1, {}}};
    s.initializers = {{"w", {"-3"}, 1, {}}};
    s.nodes = {{"Add", "add", {"x", "w"}, {"y"}, {}}};
    const std::string e = error_of_model(s);
    INFO(e);
    CHECK(e.find("initializer 'w' has a negative dimension (-3): dims [-3]") != std::string::npos);
  }
}
