// The rsim command line: the table of commands (each in its own app/cmd_*.cpp), the usage text
// and the dispatch. Boost.Program_options is included in app/ only.

#include "app/cli_common.hpp"

namespace rsim {

using namespace cli;

namespace {

struct Command {
  const char* name;
  const char* synopsis;
  const char* help;
  int (*fn)(const std::vector<std::string>&, std::ostream&, std::ostream&);
};

const Command kCommands[] = {
    {"run", "run FILE [--out DIR] [--set NAME=VALUE]... [--jobs N] [--hw-dir DIR] [--quiet] [--rows N] [--tables all|summary] [--format png,svg,pdf] "
            "[--style STYLE] [--dpi N] [--no-plots] [--shard K/N|slurm]",
     "evaluate a scenario and write results.csv, summary.csv and results.json", cmd_run},
    {"merge", "merge OUT SHARD_DIR... [--scenario FILE] [--quiet]",
     "combine the shards of rsim run --shard K/N into the result set the unsharded run writes (tables, JSON, figures, byte for byte)", cmd_merge},
    {"estimate", "estimate MODEL --platform P [--platform P]... [--dtype D] [--batch B] [--execution E] [--phase prefill|decode] [--seq N] [--context N]",
     "a model's time on platforms (a zoo name, an .onnx file or a config.json), what it is made of and what limits it, per op type, with no scenario written",
     cmd_estimate},
    {"validate", "validate FILE... [--all-points] [--hw-dir DIR]", "check scenarios without writing anything (a sample of each sweep variable's values; --all-points: every point)", cmd_validate},
    {"hw", "hw list | hw show NAME [--scenario FILE] [--hw-dir DIR]",
     "list the platform catalog, or show one platform's roofs and derivations (a scenario's inline or what-if platform with --scenario)", cmd_hw},
    {"ops", "ops [NAME] [--scenario FILE]", "list the operators (with a scenario's scripted ones), or show one operator's attributes and cost formula", cmd_ops},
    {"probe", "probe [--quick] [--threads N] [-o PLATFORM.yaml] [--json FILE] [--out DIR] [--backend native|torch] [--device D]",
     "measure this CPU's roofs: FMA peaks per ISA and precision, clock, bandwidth per memory level (--backend torch: any device through PyTorch)", cmd_probe},
    {"measure", "measure FILE [--platform PLATFORM(.yaml|name)] [--backend onednn|torch] [--device D] [--execution eager,graph] [--reps N] [--cache warm|cold] [--out DIR] [--set NAME=VALUE]...",
     "run every layer for real beside its roofline prediction: with oneDNN on this CPU, measured.csv, a figure and findings.txt; with "
     "--backend torch on any device, plan.json, measured.csv and measured_networks.csv (each network as a forward pass)",
     cmd_measure},
    {"plan", "plan FILE [-o PLAN.json] [--set NAME=VALUE]... [--hw-dir DIR]",
     "write every point × network × layer (operator, attributes, inputs, shapes, dtypes, predictions) as JSON for rsim_torch to measure where rsim is not built",
     cmd_plan},
    {"calibrate", "calibrate MEASURED.csv... [MEASURED_NETWORKS.csv...] --platform PLATFORM(.yaml|name) -o CALIBRATED.yaml [--predictions FILE.csv] [--drop-bad-rows] [--hw-dir DIR] | calibrate --ops DIR --platform PLATFORM (-o FITTED.yaml | --check) [--predictions FILE.csv]",
     "fit an efficiency model per op class (and the runtime, from whole networks) from measured files into a platform file; or, with --ops, the GPU kernel model from measured op data (AIConfigurator's GEMM tables); print the cross-validated error", cmd_calibrate},
    {"schema", "schema [scenario | platform]", "print the JSON Schema (draft 2020-12) of scenario files, or of platform files, for editors", cmd_schema},
    {"import", "import MODEL.onnx [--input NAME=1x3x224x224]... [--dim NAME=VALUE]... [--check-dims NAME=1,8]... [--name NAME] [-o FILE.yaml] [--summary]",
     "write an ONNX model as a zoo model file (symbolic dimensions become parameters), or summarise it", cmd_import},
};

std::string usage_text() {
  std::string s = "usage: rsim COMMAND [ARGS]\n\nA roofline simulator: per-layer FLOPs, bytes, intensity and bound time from YAML scenarios.\n\ncommands:\n";
  for (const auto& c : kCommands) {  // (a help line of any length)
    std::string name = c.name;
    name.resize(std::max<size_t>(name.size(), 10), ' ');
    s += "  " + name + " " + c.help + "\n";
  }
  s += "\noptions:\n  --help     show this help (or `rsim COMMAND --help`)\n  --version  print the version\n";
  s += "\nexit status: 0 ok, 1 scenario or configuration error, 2 usage error\n";
  return s;
}

const Command* find_command(const std::string& name) {
  for (const auto& c : kCommands)
    if (name == c.name) return &c;
  return nullptr;
}

}  // namespace

const char* cli::synopsis(const std::string& command) {
  const Command* c = find_command(command);
  return c ? c->synopsis : "";
}

int rsim_main(const std::vector<std::string>& args, std::ostream& out, std::ostream& err) {
  if (args.empty()) {
    err << usage_text();
    return kUsage;
  }
  const std::string& first = args[0];
  if (first == "--help" || first == "-h" || first == "help") {
    out << usage_text();
    return kOk;
  }
  if (first == "--version" || first == "-V") {
    out << "rsim " << RSIM_VERSION << "\n";
    return kOk;
  }
  if (const Command* c = find_command(first)) {
    std::vector<std::string> rest(args.begin() + 1, args.end());
    try {
      return c->fn(rest, out, err);
    } catch (const ConfigError& e) {
      return print_config_error(err, e);
    } catch (const std::exception& e) {
      err << "rsim: error: " << e.what() << "\n";
      return kConfig;
    }
  }
  std::vector<std::string> names;
  for (const auto& c : kCommands) names.push_back(c.name);
  if (first.rfind("-", 0) == 0) {
    std::string hint = did_you_mean(first, {"--help", "--version"});
    return usage_error(err, "unknown option '" + first + "'", hint);
  }
  std::string hint = did_you_mean(first, names);
  return usage_error(err, "unknown command '" + first + "'", hint);
}

}  // namespace rsim
