// The ONNX importer, through its own API (ONNX headers stay in importers/): any bytes give a model
// or a ConfigError; a model imports (every symbolic dimension bound to 2) or fails with a
// ConfigError, and the network it produces builds in the engine or gives diagnostics.
#include <cstddef>
#include <cstdint>
#include <string>

#include "engine/graph/graph.hpp"
#include "importers/onnx_import.hpp"
#include "scripting/lua_expr.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string bytes(reinterpret_cast<const char*>(data), size);
  try {
    auto m = rsim::parse_onnx(bytes, "fuzz.onnx");
    rsim::OnnxImportOptions opt;
    for (const auto& s : rsim::onnx_symbols(*m)) opt.dims.emplace_back(s, 2);
    (void)rsim::onnx_summary(*m, opt);
    rsim::OnnxImport r = rsim::import_onnx(*m, opt);
    static auto ev = rsim::make_lua_evaluator();
    rsim::Diags d;
    rsim::BuildOptions bo{rsim::builtin_ops(), *ev, rsim::DType::fp32, 2};
    (void)rsim::build_network(r.network, {}, bo, d);
  } catch (const rsim::ConfigError&) {
  }
  return 0;
}
