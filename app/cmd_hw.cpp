// `rsim hw`, `rsim ops`, `rsim schema`: the catalog, the operators and the JSON Schemas.
#include "app/cli_common.hpp"

#include "session/session.hpp"
#include "engine/scenario/schema.hpp"

namespace po = boost::program_options;
namespace fs = std::filesystem;

namespace rsim::cli {

// `hw show NAME --scenario FILE`: the platform as the scenario resolves it at each sweep point; a
// what-if named per point ("x@${clock}GHz") is found by its full name or by the part before '@'.
int show_scenario_platform(const std::string& file, const std::string& name, const Catalog& catalog, std::ostream& out, std::ostream& err) {
  try {
    Scenario s = load_scenario(file);
    ScriptSetup scripts = setup_scripts(s);
    RunOptions opt = scenario_run_options(scripts);
    RunResult r = run_scenario(s, catalog, opt);
    std::vector<std::string> names;
    size_t shown = 0;
    for (size_t pi = 0; pi < r.results.size(); ++pi)
      for (const auto& held : r.results[pi].platforms) {
        const Platform& p = *held;
        if (std::find(names.begin(), names.end(), p.name) == names.end()) names.push_back(p.name);
        bool match = p.name == name || p.name.substr(0, p.name.find('@')) == name;
        bool again = std::any_of(r.results.begin(), r.results.begin() + static_cast<std::ptrdiff_t>(pi), [&](const PointResult& e) {
          return std::any_of(e.platforms.begin(), e.platforms.end(), [&](const std::shared_ptr<const Platform>& q) { return q->name == p.name; });
        });
        if (!match || again) continue;  // one description per distinct platform
        if (shown++) out << "\n";
        if (!r.points[pi].bindings.empty()) out << "at sweep point " << pi << ": " << bindings_text(r.points[pi].bindings) << "\n";
        out << describe_platform(p);
      }
    if (shown == 0) {
      std::string hint = did_you_mean(name, names), all;
      for (const auto& n : names) all += (all.empty() ? "" : ", ") + n;
      err << "rsim: error: scenario '" << file << "' has no platform '" << name << "'\n";
      err << "rsim: note: " << (hint.empty() ? "its platforms: " + all : hint) << "\n";
      return kConfig;
    }
    return kOk;
  } catch (const ConfigError& e) {
    return print_config_error(err, e);
  }
}

int cmd_hw(const std::vector<std::string>& args, std::ostream& out, std::ostream& err) {
  po::options_description desc("rsim hw options");
  desc.add_options()("help,h", "show this help")("action", po::value<std::string>(), "list or show")("name", po::value<std::string>(), "platform")(
      "scenario", po::value<std::string>(), "show: look NAME up among this scenario's platforms (inline, `base:` what-ifs, every sweep point)");
  desc.add(hw_dir_option());
  po::positional_options_description pos;
  pos.add("action", 1).add("name", 1);
  po::variables_map vm;
  int code = kOk;
  if (!parse(args, desc, pos, vm, err, code)) return code;
  if (vm.count("help")) {
    out << "usage: rsim " << synopsis("hw") << "\n\n" << desc;
    return kOk;
  }
  std::string action = vm.count("action") ? vm["action"].as<std::string>() : "list";
  Catalog catalog(find_hardware_dir(vm["hw-dir"].as<std::string>()));
  PlatformCache cache(catalog);
  if (action == "list") {
    if (vm.count("name")) return usage_error(err, "hw list takes no name", "rsim hw show " + vm["name"].as<std::string>());
    auto names = catalog.names();
    if (names.empty()) {
      err << "rsim: error: no platforms in '" << catalog.dir() << "'\n";
      return kConfig;
    }
    // name, kind, title, every compute roof, the first memory level, the fastest roof's ridge
    std::vector<std::vector<std::string>> rows = {{"name", "kind", "title", "compute roofs (theoretical)", "memory (theoretical / derated)", "ridge"}};
    int rc = kOk;
    for (const auto& n : names) {
      Diags d;
      Platform p = resolve_platform(CNode::make_scalar(n), cache, d);
      if (!d.empty()) {
        err << ConfigError(d.list()).what();
        rc = kConfig;
        continue;
      }
      std::string roofs;
      for (const auto& r : p.compute) {
        std::string dts;
        for (DType t : r.dtypes) dts += (dts.empty() ? "" : "/") + std::string(dtype_name(t));
        roofs += (roofs.empty() ? "" : ", ") + dts + " " + si(r.peak_flops_per_s, "", 4);
      }
      const MemoryLevel& m = p.memory.front();
      // the ridge of the fastest roof (a GPU's tensor cores, not its fp64 units listed first)
      const ComputeRoof* fastest = &p.compute.front();
      for (const auto& r : p.compute)
        if (r.peak_flops_per_s > fastest->peak_flops_per_s) fastest = &r;
      std::string fast_dts;
      for (DType t : fastest->dtypes) fast_dts += (fast_dts.empty() ? "" : "/") + std::string(dtype_name(t));
      char ridge[96];
      std::snprintf(ridge, sizeof ridge, "%.2f (%s)", fastest->peak_flops_per_s / m.bandwidth_bytes_per_s, fast_dts.c_str());
      rows.push_back({n, p.kind, p.title, roofs, m.name + " " + si(m.bandwidth_bytes_per_s, "B/s") + " / " + si(m.derated_bandwidth_bytes_per_s, "B/s"), ridge});
    }
    out << text_table(rows);
    out << "compute in FLOP/s (OP/s for int); ridge = the fastest roof / the first memory level, in FLOP/byte (OP/byte); `rsim hw show NAME` for every "
           "roof's ridge and the derivations\n";
    return rc;
  }
  if (action == "show") {
    if (!vm.count("name")) return usage_error(err, "hw show needs a platform name", "`rsim hw list` shows the names");
    Diags d;
    std::string name = vm["name"].as<std::string>();
    if (vm.count("scenario")) return show_scenario_platform(vm["scenario"].as<std::string>(), name, catalog, out, err);
    Platform p = resolve_platform(CNode::make_scalar(name), cache, d);
    if (!d.empty()) {
      err << ConfigError(d.list()).what();
      return kConfig;
    }
    out << describe_platform(p);
    return kOk;
  }
  std::string hint = did_you_mean(action, {"list", "show"});
  return usage_error(err, "unknown hw action '" + action + "'", hint.empty() ? "use `rsim hw list` or `rsim hw show NAME`" : hint);
}

int cmd_ops(const std::vector<std::string>& args, std::ostream& out, std::ostream& err) {
  po::options_description desc("rsim ops options");
  desc.add_options()("help,h", "show this help")("name", po::value<std::string>(), "operator")(
      "scenario", po::value<std::string>(), "also list the operators a scenario's scripts define");
  po::positional_options_description pos;
  pos.add("name", 1);
  po::variables_map vm;
  int code = kOk;
  if (!parse(args, desc, pos, vm, err, code)) return code;
  if (vm.count("help")) {
    out << "usage: rsim " << synopsis("ops") << "\n\n" << desc;
    return kOk;
  }
  ScriptSetup scripts;
  scripts.ops = builtin_ops();
  if (vm.count("scenario")) {
    try {
      scripts = setup_scripts(load_scenario(vm["scenario"].as<std::string>()));
    } catch (const ConfigError& e) {
      return print_config_error(err, e);
    }
  }
  const OpRegistry& ops = scripts.ops;
  if (!vm.count("name")) {
    out << "operators (FLOPs = 2 × MACs for multiply-accumulate ops; `rsim ops NAME` shows each formula):\n";
    for (const auto& n : ops.names()) {
      char buf[256];
      std::snprintf(buf, sizeof buf, "  %-20s %s\n", n.c_str(), ops.find(n)->summary.c_str());
      out << buf;
    }
    std::string al;
    for (const auto& [a, t] : ops.aliases()) al += (al.empty() ? "" : ", ") + a + " → " + t;
    out << "aliases: " << al << "\n";
    return kOk;
  }
  std::string name = vm["name"].as<std::string>();
  const OpDef* op = ops.find(name);
  if (!op) {
    std::string hint = did_you_mean(name, ops.all_names());
    err << "rsim: error: unknown operator '" << name << "'\n";
    err << "rsim: note: " << (hint.empty() ? "`rsim ops` lists the operators" : hint) << "\n";
    return kConfig;
  }
  out << describe_op(*op, ops.aliases());
  return kOk;
}

int cmd_schema(const std::vector<std::string>& args, std::ostream& out, std::ostream& err) {
  po::options_description desc("rsim schema options");
  desc.add_options()("help,h", "show this help")("what", po::value<std::string>()->default_value("scenario"), "scenario or platform");
  po::positional_options_description pos;
  pos.add("what", 1);
  po::variables_map vm;
  int code = kOk;
  if (!parse(args, desc, pos, vm, err, code)) return code;
  if (vm.count("help")) {
    out << "usage: rsim " << synopsis("schema") << "\n\n"
        << "Prints a JSON Schema (draft 2020-12). Save it and name it on a YAML file's first line for completion and checks:\n"
        << "  rsim schema > scenario.schema.json\n"
        << "  # yaml-language-server: $schema=scenario.schema.json\n\n"
        << desc;
    return kOk;
  }
  std::string what = vm["what"].as<std::string>();
  if (what == "scenario") out << scenario_schema(builtin_ops(), plots::plottable_columns());
  else if (what == "platform") out << platform_schema();
  else {
    std::string hint = did_you_mean(what, {"scenario", "platform"});
    return usage_error(err, "unknown schema '" + what + "'", hint.empty() ? "use `rsim schema` or `rsim schema platform`" : hint);
  }
  return kOk;
}

}  // namespace rsim::cli
