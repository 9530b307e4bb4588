// `rsim import`: an ONNX model as a zoo model file, or its summary.
#include "app/cli_common.hpp"

#include "engine/output/output.hpp"
#include "importers/onnx_import.hpp"

namespace po = boost::program_options;
namespace fs = std::filesystem;

namespace rsim::cli {

int cmd_import(const std::vector<std::string>& args, std::ostream& out, std::ostream& err) {
  po::options_description desc("rsim import options");
  desc.add_options()("help,h", "show this help")("file", po::value<std::string>(), "ONNX model")(
      "input", po::value<std::vector<std::string>>()->composing(),
      "NAME=1x3x224x224: fix an input's shape; NAME=batchx3x224x224 fixes the sizes given and keeps the symbols named (repeatable)")(
      "dim", po::value<std::vector<std::string>>()->composing(),
      "NAME=VALUE: a symbolic dimension's default; NAME alone: keep just the symbols named so, fix the rest with --input (repeatable)")(
      "name", po::value<std::string>(), "the network's name (default: the file's stem)")(
      "check-dims", po::value<std::vector<std::string>>()->composing(),
      "NAME=1,8: check that the imported model takes these sizes of a symbol it keeps (every combination; the others at their --dim default)")(
      "output,o", po::value<std::string>(), "write the model here (default: standard output)")(
      "summary", "print the op-type histogram, totals and unsupported ops instead");
  po::positional_options_description pos;
  pos.add("file", 1);
  po::variables_map vm;
  int code = kOk;
  if (!parse(args, desc, pos, vm, err, code)) return code;
  if (vm.count("help")) {
    out << "usage: rsim " << synopsis("import") << "\n\n" << desc;
    return kOk;
  }
  if (!vm.count("file")) return usage_error(err, "import needs an ONNX model", "rsim import model.onnx -o models/model.yaml");
  OnnxImportOptions opt;
  std::vector<std::pair<std::string, long long>> dims;
  if (vm.count("input"))
    for (const auto& a : vm["input"].as<std::vector<std::string>>()) {
      size_t eq = a.find('=');
      Shape shape;
      bool ok = eq != std::string::npos && eq > 0 && eq + 1 < a.size();
      for (size_t start = eq + 1; ok && start <= a.size();) {
        size_t x = a.find('x', start);
        auto v = parse_integer(a.substr(start, x == std::string::npos ? std::string::npos : x - start));
        if (!v || *v <= 0 || *v > 1000000000LL) ok = false;
        else shape.push_back(*v);
        if (x == std::string::npos) break;
        start = x + 1;
      }
      if (!ok) {  // sizes and symbols, e.g. x=batchx3x256x256 (rsim import only: the model's symbols by name)
        std::vector<std::string> dims;
        bool named = eq != std::string::npos && eq > 0 && eq + 1 < a.size();
        for (size_t start = eq + 1; named && start <= a.size();) {
          size_t x = a.find('x', start);
          // a symbol may hold an 'x' ("max_len"): a part that is not a size joins the next until it is one or the end
          std::string part = a.substr(start, x == std::string::npos ? std::string::npos : x - start);
          auto v = parse_integer(part);
          if (v && (*v <= 0 || *v > 1000000000LL)) named = false;
          if (!part.empty()) dims.push_back(part);
          else named = false;
          if (x == std::string::npos) break;
          start = x + 1;
        }
        if (!named) return usage_error(err, "--input wants NAME=DIMS with positive sizes or the model's symbols, e.g. input=1x3x224x224 or x=batchx3x256x256, not '" + a + "'");
        opt.input_dims.emplace_back(a.substr(0, eq), dims);
        continue;
      }
      opt.inputs.emplace_back(a.substr(0, eq), shape);
    }
  if (vm.count("dim"))
    for (const auto& a : vm["dim"].as<std::vector<std::string>>()) {
      size_t eq = a.find('=');
      if (eq == std::string::npos && !a.empty()) {  // --dim batch: keep just the symbols named so
        opt.keep.push_back(a);
        continue;
      }
      auto v = eq == std::string::npos ? std::nullopt : parse_integer(a.substr(eq + 1));
      if (eq == 0 || !v || *v <= 0 || *v > 1000000000LL)
        return usage_error(err, "--dim wants NAME=VALUE with a positive size (a default), or NAME alone (keep just the symbols named), e.g. batch=1, not '" + a + "'");
      dims.emplace_back(a.substr(0, eq), *v);
    }
  if (vm.count("name")) opt.name = vm["name"].as<std::string>();
  if (vm.count("check-dims"))
    for (const auto& a : vm["check-dims"].as<std::vector<std::string>>()) {
      const size_t eq = a.find('=');
      std::vector<long long> values;
      bool ok = eq != std::string::npos && eq > 0 && eq + 1 < a.size();
      for (size_t start = eq + 1; ok && start <= a.size();) {
        const size_t comma = a.find(',', start);
        auto v = parse_integer(a.substr(start, comma == std::string::npos ? std::string::npos : comma - start));
        if (!v || *v <= 0 || *v > 1000000000LL) ok = false;
        else values.push_back(*v);
        if (comma == std::string::npos) break;
        start = comma + 1;
      }
      if (!ok) return usage_error(err, "--check-dims wants NAME=SIZES with positive sizes separated by commas, e.g. batch=1,8, not '" + a + "'");
      opt.check_dims.emplace_back(a.substr(0, eq), values);
    }
  try {
    auto model = load_onnx(vm["file"].as<std::string>());
    if (vm.count("summary")) {
      opt.dims = dims;
      out << onnx_summary(*model, opt);
      return kOk;
    }
    {
      // every --dim must name a symbolic dimension (checked by a plain import with them bound)
      auto bad = onnx_unsupported_ops(*model, {});
      if (!bad.empty()) import_onnx(*model, opt);  // throws the error listing them
    }
    std::string yaml = onnx_to_model_yaml(*model, opt, dims);
    if (vm.count("output")) write_file_atomic(vm["output"].as<std::string>(), yaml);
    else out << yaml;
    return kOk;
  } catch (const ConfigError& e) {
    return print_config_error(err, e);
  }
}

}  // namespace rsim::cli
