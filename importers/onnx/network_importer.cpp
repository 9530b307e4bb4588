// The `onnx:` network source for the engine (a network entry {onnx: FILE, inputs:, dims:, onnx_ops:, onnx_recompose:,
// ...}): the entry's keys read and checked, parsed models and imports cached, thread-safe.
#include <filesystem>
#include <map>
#include <mutex>

#include "importers/onnx_import.hpp"

namespace rsim {

namespace {

class OnnxNetworkImporter : public NetworkImporter {
 public:
  CNode import(const CNode& entry, const OpRegistry& ops) override {
    Diags d;
    MapReader m(entry, keys::map("onnx_use"), "ONNX network", d);
    const CNode* file = m.require("onnx");
    const CNode* name = m.get("name");
    const CNode* inputs = m.get("inputs");
    const CNode* dims = m.get("dims");
    const CNode* onnx_ops = m.get("onnx_ops");
    const CNode* dtype = m.get("dtype");
    const CNode* recompose = m.get("onnx_recompose");
    m.get("description");
    m.finish();
    OnnxImportOptions opt;
    opt.ops = &ops;
    std::string path;
    if (file) {
      if (auto s = to_string(*file, d, "onnx")) {
        std::filesystem::path p(*s);
        if (p.is_relative() && file->loc.file) p = std::filesystem::path(file->loc.file->path).parent_path() / p;
        path = p.lexically_normal().string();
      }
    }
    if (name) opt.name = to_string(*name, d, "network name").value_or("");
    if (recompose) opt.recompose = to_bool(*recompose, d, "onnx_recompose").value_or(true);
    if (dtype) {
      opt.dtype = to_string(*dtype, d, "dtype").value_or("");
      if (!opt.dtype.empty() && !parse_dtype(opt.dtype))
        d.error(dtype->loc, "unknown dtype '" + opt.dtype + "'", {Note{{}, did_you_mean(opt.dtype, dtype_names())}});
    }
    if (inputs) {
      if (!inputs->is_map()) d.error(inputs->loc, "inputs must map input names to shapes, e.g. {input: [1, 3, 224, 224]}");
      else
        for (const auto& e : inputs->entries) {
          Shape s;
          if (!e.value.is_seq() || e.value.items.empty()) {
            d.error(e.value.loc, "input '" + e.key + "' must be a list of dimensions, e.g. [1, 3, 224, 224]");
            continue;
          }
          for (const auto& i : e.value.items) {
            auto v = to_integer(i, d, "input '" + e.key + "' dimension");
            if (v && (*v <= 0 || *v > 1000000000LL)) d.error(i.loc, "input dimensions must be 1 to 1e9, got " + std::to_string(*v));
            else if (v) s.push_back(*v);
          }
          opt.inputs.emplace_back(e.key, s);
        }
    }
    if (dims) {
      if (!dims->is_map()) d.error(dims->loc, "dims must map symbolic dimensions to sizes, e.g. {batch: 1, seq: 128}");
      else
        for (const auto& e : dims->entries) {
          auto v = to_integer(e.value, d, "dimension '" + e.key + "'");
          if (v && (*v <= 0 || *v > 1000000000LL)) d.error(e.value.loc, "dimension '" + e.key + "' must be 1 to 1e9, got " + std::to_string(*v));
          else if (v) opt.dims.emplace_back(e.key, *v);
        }
    }
    if (onnx_ops) {
      if (!onnx_ops->is_map()) d.error(onnx_ops->loc, "onnx_ops must map ONNX op types to operators (or ignore), e.g. {MyOp: my_lua_op}");
      else
        for (const auto& e : onnx_ops->entries) {
          auto v = to_string(e.value, d, "onnx_ops '" + e.key + "'");
          if (!v) continue;
          if (*v != "ignore" && !ops.find(*v)) {
            std::string hint = did_you_mean(*v, ops.all_names());
            d.error(e.value.loc, "unknown operator '" + *v + "' for ONNX op " + e.key,
                    {Note{{}, hint.empty() ? "name an operator (`rsim ops`, or a plugin's rsim.op) or 'ignore'" : hint}});
          }
          opt.op_map[e.key] = *v;
        }
    }
    d.throw_if_any();
    std::string key = path + "\n" + opt.name + "\n" + opt.dtype + "\n" + (opt.recompose ? "r" : "n") + "\n";
    for (const auto& [n, s] : opt.inputs) key += n + "=" + shape_str(s) + ";";
    key += "\n";
    for (const auto& [n, v] : opt.dims) key += n + "=" + std::to_string(v) + ";";
    key += "\n";
    for (const auto& [k, v] : opt.op_map) key += k + "=" + v + ";";
    key += "\n" + std::to_string(reinterpret_cast<uintptr_t>(&ops));
    {
      std::lock_guard<std::mutex> lock(mu_);
      auto it = imports_.find(key);
      if (it != imports_.end()) return it->second;
    }
    try {
      std::shared_ptr<const OnnxModel> model;
      {
        std::lock_guard<std::mutex> lock(mu_);
        auto it = models_.find(path);
        if (it != models_.end()) model = it->second;
      }
      if (!model) {
        model = load_onnx(path);
        std::lock_guard<std::mutex> lock(mu_);
        models_[path] = model;
      }
      CNode net = import_onnx(*model, opt).network;
      std::lock_guard<std::mutex> lock(mu_);
      imports_[key] = net;
      return net;
    } catch (const ConfigError& e) {
      std::vector<Diagnostic> list = e.diagnostics();
      for (auto& diag : list) diag.notes.push_back(Note{file->loc, "the ONNX network is used here"});
      throw ConfigError(list);
    }
  }

 private:
  std::mutex mu_;
  std::map<std::string, std::shared_ptr<const OnnxModel>> models_;
  std::map<std::string, CNode> imports_;
};

}  // namespace

std::shared_ptr<NetworkImporter> make_onnx_importer() { return std::make_shared<OnnxNetworkImporter>(); }

}  // namespace rsim
