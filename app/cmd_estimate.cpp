// `rsim estimate MODEL --platform P...`: the answer a newcomer asks for first — a model's time on
// one or more platforms, what the time is made of and what limits it, a table per op type and the
// slowest layers — with no scenario written. MODEL is a zoo name, an .onnx file or a Hugging Face
// config.json; the scenario it stands for is built as text and run as `rsim run` runs one.
#include <algorithm>
#include <cmath>
#include <filesystem>
#include <map>
#include <ostream>

#include "app/cli_common.hpp"
#include "engine/output/output.hpp"
#include "engine/hardware/roofline.hpp"
#include "engine/model/units.hpp"
#include "session/session.hpp"

namespace rsim::cli {

namespace {

namespace fs = std::filesystem;

std::string yaml_quoted(const std::string& t) {
  std::string q = "\"";
  for (char c : t) q += c == '"' || c == '\\' ? std::string("\\") + c : std::string(1, c);
  return q + "\"";
}

std::string percent(double share) {
  char b[32];
  std::snprintf(b, sizeof b, "%.1f %%", 100 * share);
  return b;
}

}  // namespace

namespace {

// The totals, one column per platform, and each platform's limit in words
void print_totals(std::ostream& out, const RunResult& r, const std::string& phase) {
  const PointResult& pr = r.results.front();
  const std::vector<SummaryRow>& rows = pr.summary;
  const SummaryRow& first = rows.front();
  out << first.network << (phase.empty() ? "" : " (" + phase + ")") << ": " << run_dtype_label(r) << ", execution " << execution_name(pr.settings.execution)
      << "; FLOPs = " << format_number(pr.settings.flops_per_mac) << "×MAC, bytes = " << memory_model_name(pr.settings.memory_model) << "\n\n";
  std::vector<std::vector<std::string>> t = {{""}};
  for (const auto& s : rows) t[0].push_back(s.platform);
  auto line = [&](const std::string& what, auto cell) {
    std::vector<std::string> l = {what};
    for (const auto& s : rows) l.push_back(cell(s));
    t.push_back(l);
  };
  line("layers / kernels", [](const SummaryRow& s) { return format_number(s.layers) + " / " + format_number(s.kernels); });
  line("MACs", [](const SummaryRow& s) { return si(s.macs, "", 4); });
  line("FLOPs", [](const SummaryRow& s) { return si(s.flops, "", 4); });
  line("params", [](const SummaryRow& s) { return si(s.params, "", 4); });
  line("bytes", [](const SummaryRow& s) { return si(s.bytes, "B", 4); });
  line("FLOP/byte", [](const SummaryRow& s) { return std::isfinite(s.intensity) ? format_number(std::round(s.intensity * 100) / 100) : std::string("inf"); });
  line("time (theoretical roofs)", [](const SummaryRow& s) { return si(s.time_s, "s", 4); });
  line("time (derated roofs)", [](const SummaryRow& s) {
    return si(s.derated_time_s, "s", 4) + (s.banded ? " (" + si(s.derated_time_s + s.dparts.lo, "s", 2) + "–" + si(s.derated_time_s + s.dparts.hi, "s", 2) + ")" : "");
  });
  line("  work", [](const SummaryRow& s) { return si(s.dparts.work(), "s", 4); });
  line("  overhead", [](const SummaryRow& s) { return si(s.dparts.overhead(), "s", 4); });
  if (std::any_of(rows.begin(), rows.end(), [](const SummaryRow& s) { return s.dparts.comm > 0; }))
    line("  exposed comm", [](const SummaryRow& s) { return si(s.dparts.comm, "s", 4); });
  line("limit", [](const SummaryRow& s) { return limit_text(s); });
  line("assumed share", [](const SummaryRow& s) { return s.derated_time_s > 0 ? percent(std::min(1.0, s.dparts.assumed_total() / s.derated_time_s)) : "0 %"; });
  if (!phase.empty()) {
    line(phase == "decode" ? "time per output token" : "time to first token", [](const SummaryRow& s) { return si(s.derated_time_s, "s", 4); });
    line("tokens/s", [](const SummaryRow& s) { return s.derated_time_s > 0 ? si(s.tokens / s.derated_time_s, "", 4) : std::string(); });
    line("KV bytes per token", [](const SummaryRow& s) { return si(s.kv_bytes_per_token, "B", 4); });
  }
  line("memory footprint", [](const SummaryRow& s) {
    return si(s.memory_footprint_bytes, "B", 4) + (s.memory_size_bytes > 0 ? (s.memory_footprint_bytes <= s.memory_size_bytes ? " (fits)" : " (does not fit)") : "");
  });
  out << text_table(t);
  for (const auto& s : rows) {
    const Platform* pl = nullptr;
    for (const auto& p : pr.platforms)
      if (p->name == s.platform) pl = p.get();
    if (const std::string words = limit_sentence(s, pr.settings, pl); !words.empty()) out << words << "\n";
  }
}

// Per op type (derated): each op's layers' time and its share of the network's, then the overhead
void print_op_types(std::ostream& out, const PointResult& pr) {
  const std::vector<SummaryRow>& rows = pr.summary;
  const SummaryRow& first = rows.front();
  std::vector<std::string> ops;
  std::map<std::string, std::vector<const Row*>> by_op;
  for (const Row& row : pr.rows)
    if (row.platform == first.platform) {
      if (!by_op.count(row.op)) ops.push_back(row.op);
      by_op[row.op].push_back(&row);
    }
  auto op_time = [&](const std::string& op, const std::string& plat) {
    double t = 0;
    for (const Row& row : pr.rows)
      if (row.platform == plat && row.op == op && !row.kernel.empty()) t += row.derated.time_s;
    return t;
  };
  std::stable_sort(ops.begin(), ops.end(), [&](const std::string& x, const std::string& y) { return op_time(x, first.platform) > op_time(y, first.platform); });
  std::vector<std::vector<std::string>> ot = {{"op", "layers", "FLOPs", "bytes"}};
  for (const auto& s : rows) ot[0].push_back(s.platform + " (share)");
  for (const auto& op : ops) {
    double flops = 0, bytes = 0;
    for (const Row* row : by_op[op]) flops += row->cost.flops, bytes += row->bytes;
    std::vector<std::string> l = {op, std::to_string(by_op[op].size()), si(flops, "", 4), si(bytes, "B", 4)};
    for (const auto& s : rows) {
      const double t_op = op_time(op, s.platform);
      l.push_back(si(t_op, "s", 4) + " (" + percent(s.derated_time_s > 0 ? t_op / s.derated_time_s : 0) + ")");
    }
    ot.push_back(l);
  }
  {
    std::vector<std::string> l = {"overhead", "", "", ""};
    for (const auto& s : rows) l.push_back(si(s.dparts.overhead(), "s", 4) + " (" + percent(s.derated_time_s > 0 ? s.dparts.overhead() / s.derated_time_s : 0) + ")");
    ot.push_back(l);
  }
  out << "\nper op type (derated times; a layer's collectives with it):\n" << text_table(ot);
}

// The five slowest layers on the first platform, with their times on every platform
void print_slowest_layers(std::ostream& out, const PointResult& pr) {
  const std::vector<SummaryRow>& rows = pr.summary;
  const SummaryRow& first = rows.front();
  std::vector<const Row*> layers;
  for (const Row& row : pr.rows)
    if (row.platform == first.platform) layers.push_back(&row);
  std::stable_sort(layers.begin(), layers.end(), [](const Row* x, const Row* y) { return x->derated.time_s > y->derated.time_s; });
  if (layers.size() > 5) layers.resize(5);
  std::vector<std::vector<std::string>> lt = {{"layer", "op", "bound"}};
  for (const auto& s : rows) lt[0].push_back(s.platform);
  for (const Row* l : layers) {
    std::vector<std::string> c = {l->layer, l->op, bound_name(l->derated.bound)};
    for (const auto& s : rows) {
      std::string v;
      for (const Row& row : pr.rows)
        if (row.platform == s.platform && row.layer == l->layer) v = si(row.derated.time_s, "s", 4);
      c.push_back(v);
    }
    lt.push_back(c);
  }
  out << "\nslowest layers on " << first.platform << " (derated):\n" << text_table(lt);
}

}  // namespace

int cmd_estimate(const std::vector<std::string>& args, std::ostream& out, std::ostream& err) {
  po::options_description desc("rsim estimate options");
  desc.add_options()("help,h", "show this help")("model", po::value<std::string>(), "a zoo model's name, an .onnx file or a Hugging Face config.json")(
      "platform,p", po::value<std::vector<std::string>>()->composing(), "a catalog platform (repeat for several: one column each)")(
      "dtype", po::value<std::string>(), "the precision the layers run in (default: the model's own, else fp32)")(
      "batch", po::value<long long>(), "batch size (zoo models and configs)")(
      "execution", po::value<std::string>(), "fused (default), graph, eager or ideal (see settings.execution)")(
      "phase", po::value<std::string>(), "a language model's step: decode (default) or prefill")(
      "seq", po::value<long long>(), "prefill: the prompt's tokens (default 512)")(
      "context", po::value<long long>(), "decode: the tokens already in the KV cache (default 1024)")(
      "hw-dir", po::value<std::string>()->default_value(""), "platform catalog folder");
  po::positional_options_description pos;
  pos.add("model", 1);
  po::variables_map vm;
  int code = kOk;
  if (!parse(args, desc, pos, vm, err, code)) return code;
  if (vm.count("help")) {
    out << "usage: rsim estimate MODEL --platform P [--platform P]... [--dtype D] [--batch B] [--execution E] [--phase prefill|decode] [--seq N] "
           "[--context N] [--hw-dir DIR]\n\n"
        << desc;
    return kOk;
  }
  if (!vm.count("model")) return usage_error(err, "estimate needs a model: a zoo name (resnet50, llama3_8b), an .onnx file or a config.json");
  if (!vm.count("platform")) return usage_error(err, "estimate needs --platform (a catalog name, e.g. h100_sxm; `rsim hw list` lists them)");
  const std::string model = vm["model"].as<std::string>();
  const std::vector<std::string> platforms = vm["platform"].as<std::vector<std::string>>();
  auto fail = [&](const std::string& msg, const std::string& note = "") {
    err << "rsim: error: " << msg << "\n";
    if (!note.empty()) err << "rsim: note: " << note << "\n";
    return kConfig;
  };
  // the platforms, by catalog name (a suggestion for one it lacks)
  const std::string hw = find_hardware_dir(vm["hw-dir"].as<std::string>());
  Catalog catalog(hw);
  const std::vector<std::string> names = catalog.names();
  for (const auto& p : platforms)
    if (!catalog.has(p)) {
      const std::string hint = did_you_mean(p, names);
      return fail("unknown platform '" + p + "'", hint.empty() ? "`rsim hw list` lists the catalog" : hint);
    }
  // the model: what kind, and whether it is a language model (phases)
  const std::string ext = fs::path(model).extension().string();
  std::error_code ec;
  enum class Kind { Zoo, Onnx, Hf } kind = ext == ".onnx" ? Kind::Onnx : ext == ".json" ? Kind::Hf : Kind::Zoo;
  bool llm = kind == Kind::Hf;
  std::string entry;
  if (kind != Kind::Zoo) {
    if (!fs::is_regular_file(model, ec)) return fail("cannot read model '" + model + "': " + (fs::exists(model, ec) ? "not a regular file" : "no such file"));
    const std::string abs = fs::absolute(model, ec).string();
    entry = kind == Kind::Onnx ? "{onnx: " + yaml_quoted(abs) + "}" : "{model: hf, args: {config: " + yaml_quoted(abs) + "ARGS}}";
  } else {
    ModelLibrary lib(model_dirs());
    std::vector<std::string> zoo = lib.names();
    zoo.erase(std::remove(zoo.begin(), zoo.end(), "hf"), zoo.end());
    if (std::find(zoo.begin(), zoo.end(), model) == zoo.end()) {
      const std::string hint = did_you_mean(model, zoo);
      std::string list;
      for (const auto& z : zoo) list += (list.empty() ? "" : ", ") + z;
      return fail("unknown model '" + model + "': not a zoo model, an .onnx file or a config.json", hint.empty() ? "the zoo: " + list : hint);
    }
    try {
      const auto node = lib.get(model, SourceLoc{});
      const CNode* base = node->find("model");
      llm = model == "transformer" || (base && base->is_scalar() && base->scalar == "transformer");
    } catch (const ConfigError& e) {
      err << e.what();
      return kConfig;
    }
    entry = "{model: " + model + ", args: {ARGS}}";
  }
  // the step's arguments
  std::string a;
  auto arg = [&](const std::string& k, const std::string& v) { a += (a.empty() ? "" : ", ") + k + ": " + v; };
  if (!llm)
    for (const char* k : {"phase", "seq", "context"})
      if (vm.count(k)) return fail("--" + std::string(k) + " is for a language model's step; '" + model + "' is not one", "drop it (a CNN runs one forward pass per batch)");
  if (vm.count("batch")) {
    if (kind == Kind::Onnx)
      return fail("--batch: an ONNX file's input shapes are its own", "give them in a scenario: networks: [{onnx: " + model + ", inputs: {input: [8, 3, 224, 224]}}]");
    if (vm["batch"].as<long long>() < 1) return fail("--batch must be at least 1");
    arg("batch", std::to_string(vm["batch"].as<long long>()));
  }
  std::string phase;
  if (llm) {
    phase = vm.count("phase") ? vm["phase"].as<std::string>() : "decode";
    if (phase != "decode" && phase != "prefill") return fail("unknown --phase '" + phase + "'", "decode (default) or prefill");
    if (phase == "decode" && vm.count("seq")) return fail("--seq is the prompt of a prefill; a decode step reads --context", "give --phase prefill, or --context");
    arg("phase", phase);
    if (phase == "prefill") arg("seq", std::to_string(vm.count("seq") ? vm["seq"].as<long long>() : 512)), arg("context", "0");
    else arg("context", std::to_string(vm.count("context") ? vm["context"].as<long long>() : 1024));
    if (!vm.count("batch")) arg("batch", "1");
  }
  if (kind == Kind::Zoo) entry.replace(entry.find("ARGS"), 4, a);
  else if (kind == Kind::Hf) entry.replace(entry.find("ARGS"), 4, a.empty() ? "" : ", " + a);
  if (kind == Kind::Zoo && a.empty()) entry = "{model: " + model + "}";
  std::string settings;
  if (vm.count("dtype")) settings += "dtype: " + vm["dtype"].as<std::string>();
  if (vm.count("execution")) settings += std::string(settings.empty() ? "" : ", ") + "execution: " + vm["execution"].as<std::string>();
  std::string yaml = "name: estimate\n";
  if (!settings.empty()) yaml += "settings: {" + settings + "}\n";
  yaml += "platforms: [";
  for (size_t i = 0; i < platforms.size(); ++i) yaml += (i ? ", " : "") + platforms[i];
  yaml += "]\nnetworks:\n  - " + entry + "\n";
  RunResult r;
  try {
    Scenario s = parse_scenario(yaml, "<estimate>");
    ScriptSetup scripts = setup_scripts(s);
    RunOptions opt = scenario_run_options(scripts);
    r = run_scenario(s, catalog, opt);
  } catch (const ConfigError& e) {
    err << e.what() << "rsim: note: the scenario `rsim estimate` ran:\n" << yaml;
    return kConfig;
  }
  if (r.results.empty() || r.results.front().summary.empty()) return fail("'" + model + "' gave no network to estimate");
  const PointResult& pr = r.results.front();
  print_totals(out, r, phase);
  print_op_types(out, pr);
  print_slowest_layers(out, pr);
  return kOk;
}

}  // namespace rsim::cli
