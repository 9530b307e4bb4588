// A point's inputs resolved: catalog platforms (cached), zoo models and networks, the names and texts the evaluation reports with.
#include "engine/eval/evaluate.hpp"

#include "engine/ops/llm_models.hpp"
#include "engine/graph/passes.hpp"

#include <algorithm>
#include <atomic>
#include <charconv>
#include <condition_variable>
#include <map>
#include <optional>
#include <filesystem>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <string_view>
#include <thread>
#include <type_traits>
#include <unordered_map>

namespace rsim {

std::shared_ptr<const CNode> PlatformCache::get(const std::string& name) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = cache_.find(name);
  if (it != cache_.end()) return it->second;
  auto node = std::make_shared<const CNode>(catalog_.load(name));
  cache_[name] = node;
  return node;
}

std::vector<std::string> ModelLibrary::names() const {
  std::vector<std::string> n;
  for (const auto& dir : dirs_) {
    std::error_code ec;
    for (const auto& e : std::filesystem::directory_iterator(dir, ec))
      if (e.path().extension() == ".yaml") n.push_back(e.path().stem().string());
  }
  n.push_back("hf");  // a transformer from a Hugging Face config.json (see resolve_network)
  std::sort(n.begin(), n.end());
  n.erase(std::unique(n.begin(), n.end()), n.end());
  return n;
}

std::shared_ptr<const CNode> ModelLibrary::get(const std::string& name, const SourceLoc& where) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = cache_.find(name);
  if (it != cache_.end()) return it->second;
  bool plain = !name.empty() && name.find('/') == std::string::npos && name[0] != '.';
  for (const auto& dir : dirs_) {
    std::filesystem::path p = std::filesystem::path(dir) / (name + ".yaml");
    std::error_code ec;
    if (plain && std::filesystem::is_regular_file(p, ec)) {
      auto node = std::make_shared<const CNode>(load_yaml_file(p.string()));
      cache_[name] = node;
      return node;
    }
  }
  std::vector<std::string> all;
  for (const auto& dir : dirs_) {
    std::error_code ec;
    for (const auto& e : std::filesystem::directory_iterator(dir, ec))
      if (e.path().extension() == ".yaml") all.push_back(e.path().stem().string());
  }
  std::string hint = did_you_mean(name, all), list;
  std::sort(all.begin(), all.end());
  for (const auto& a : all) list += (list.empty() ? "" : ", ") + a;
  throw ConfigError(where, "unknown model '" + name + "'",
                    {Note{{}, !hint.empty() ? hint : list.empty() ? "no models found in the model folders" : "models: " + list}});
}

NetworkSource resolve_network(const CNode& raw, const Env& env, EvalContext& ctx, Diags& d) {
  if (raw.is_map() && raw.find("onnx")) {
    CNode entry = substitute_tree(raw, env, ctx.ev, d);
    if (!d.empty()) return NetworkSource{CNode{}, env};
    if (!ctx.importer) {
      d.error(entry.find("onnx")->loc, "ONNX models cannot be read here (this build has no importer)");
      return NetworkSource{CNode{}, env};
    }
    try {
      return NetworkSource{ctx.importer->import(entry, ctx.ops), env};
    } catch (const ConfigError& e) {
      d.add(e);
      return NetworkSource{CNode{}, env};
    }
  }
  if (!raw.is_map() || !raw.find("model")) return NetworkSource{raw, env};
  ModelUse u = resolve_model(raw, env, ctx, d);
  if (!u.model) return NetworkSource{CNode{}, env};
  return NetworkSource{model_node(u), std::move(u.env)};
}

CNode model_node(const ModelUse& u) {
  CNode node = *u.model;
  if (u.name || !u.preset.empty()) {  // a new name, e.g. to compare two configurations of one model
    for (auto& e : node.entries)
      if (e.key == "name") e.value = u.name ? *u.name : CNode::make_scalar(u.preset, e.value.loc);
  }
  if (u.parallel) {  // the use's parallel: in place of the model's own
    auto it = std::find_if(node.entries.begin(), node.entries.end(), [](const CEntry& e) { return e.key == "parallel"; });
    if (it != node.entries.end()) it->value = *u.parallel;
    else node.entries.push_back(CEntry{"parallel", u.parallel->loc, *u.parallel});
  }
  return node;
}

namespace {

ModelUse read_model_use(const CNode& raw, const Env& env, EvalContext& ctx, Diags& d) {
  ModelUse use{nullptr, std::nullopt, "", env, std::nullopt};
  CNode entry = substitute_tree(raw, env, ctx.ev, d);
  MapReader m(entry, keys::map("model_use"), "model use", d);
  const CNode* mn = m.require("model");
  const CNode* name = m.get("name");
  const CNode* args = m.get("args");
  const CNode* parallel = m.get("parallel");
  m.finish();
  if (!mn || !mn->is_scalar() || !ctx.models) {
    if (mn && !ctx.models) d.error(mn->loc, "models are not available here");
    return use;
  }
  // A preset (a zoo file `model: BASE` with `args:`) or `hf` (a Hugging Face config.json) is a
  // base model with fixed arguments; the user's args are added to them or replace them.
  std::string model_name = mn->scalar, preset_name;
  CNode merged;
  if (model_name == "hf") {
    const CNode* cfg = args && args->is_map() ? args->find("config") : nullptr;
    if (!cfg || !cfg->is_scalar()) {
      d.error(cfg ? cfg->loc : mn->loc, "model 'hf' needs the path of a Hugging Face config.json",
              {Note{{}, "e.g. {model: hf, args: {config: models/llama/config.json, phase: decode}}"}});
      return use;
    }
    std::filesystem::path path(cfg->scalar);
    if (path.is_relative() && cfg->loc.file) path = std::filesystem::path(cfg->loc.file->path).parent_path() / path;
    std::error_code ec;
    if (path.extension() != ".json") {  // not opened: a parse error would quote the file's first line
      d.error(cfg->loc, "config '" + path.string() + "' is not a JSON file: a Hugging Face config's name ends in .json (the file is not opened)",
              {Note{{}, "e.g. models/llama/config.json"}});
      return use;
    }
    if (!std::filesystem::is_regular_file(path, ec)) {
      d.error(cfg->loc, "cannot read config '" + path.string() + "'", {Note{{}, "a relative path is relative to the scenario's folder"}});
      return use;
    }
    CNode json;
    try {
      json = load_yaml_file(path.string());
    } catch (const ConfigError& e) {
      d.add(e);
      return use;
    }
    merged = hf_transformer_args(json, d);
    for (const auto& e : args->entries)
      if (e.key != "config") merged.entries.push_back(e);
    model_name = "transformer";
    // the network's name: the config's stem, or its folder's for a config.json (a scenario given as
    // text or a dict reads a relative path from the working directory, whose own name it takes)
    preset_name = path.stem() == "config" ? std::filesystem::absolute(path, ec).parent_path().filename().string() : path.stem().string();
    if (preset_name.empty()) preset_name = "hf";
  }
  std::shared_ptr<const CNode> model;
  try {
    model = ctx.models->get(model_name, mn->loc);
    if (const CNode* base = model->find("model"); base && base->is_scalar() && preset_name.empty()) {
      merged.kind = CNode::Kind::Map;
      if (const CNode* pa = model->find("args"); pa && pa->is_map()) merged.entries = pa->entries;
      if (args && args->is_map())
        for (const auto& e : args->entries) {
          auto it = std::find_if(merged.entries.begin(), merged.entries.end(), [&](const CEntry& x) { return x.key == e.key; });
          if (it != merged.entries.end()) *it = e;
          else merged.entries.push_back(e);
        }
      preset_name = model->find("name") ? model->find("name")->scalar : model_name;
      model_name = base->scalar;
      model = ctx.models->get(model_name, base->loc);
    }
  } catch (const ConfigError& e) {
    d.add(e);
    return use;
  }
  if (!preset_name.empty()) args = &merged;
  ModelUse& out = use;
  // parameters: the model's defaults, replaced by args (each key must be a parameter)
  std::vector<std::string> pnames;
  if (const CNode* params = model->find("params"); params && params->is_map())
    for (const auto& e : params->entries) {
      pnames.push_back(e.key);
      const CNode* given = args && args->is_map() ? args->find(e.key) : nullptr;
      if (given && !given->is_scalar()) d.error(given->loc, "model argument '" + e.key + "' must be a single value");
      else if (given) out.env.emplace_back(e.key, given->scalar);
      else if (e.value.is_scalar()) out.env.emplace_back(e.key, substitute(e.value.scalar, out.env, ctx.ev, e.value.loc));
      else d.error(mn->loc, "model '" + mn->scalar + "' needs argument '" + e.key + "'");
    }
  if (args && !args->is_map()) d.error(args->loc, "args must map model parameters to values");
  if (args && args->is_map())
    for (const auto& e : args->entries)
      if (std::find(pnames.begin(), pnames.end(), e.key) == pnames.end()) {
        std::string hint = did_you_mean(e.key, pnames), list;
        for (const auto& p : pnames) list += (list.empty() ? "" : ", ") + p;
        d.error(e.key_loc, "model '" + model_name + "' has no parameter '" + e.key + "'",
                {Note{{}, !hint.empty() ? hint : list.empty() ? "it takes no arguments" : "its parameters: " + list}});
      }
  if (name) out.name = *name;
  else out.preset = preset_name;
  if (parallel) out.parallel = *parallel;
  out.model = std::move(model);
  return out;
}

}  // namespace

ModelUse resolve_model(const CNode& raw, const Env& env, EvalContext& ctx, Diags& d) {
  if (auto it = ctx.fixed_models.find(&raw); it != ctx.fixed_models.end()) {
    ModelUse u = it->second;
    u.env.insert(u.env.begin(), env.begin(), env.end());
    return u;
  }
  Diags md;
  ModelUse u = read_model_use(raw, env, ctx, md);
  // the same at every point when the entry has no `${…}` and its model's defaults read only its
  // earlier parameters (a Hugging Face config is read once, not at every point)
  bool fixed = md.empty() && u.model && !tree_has_expr(raw) && u.env.size() >= env.size();
  if (const CNode* params = fixed ? u.model->find("params") : nullptr; params && params->is_map()) {
    std::vector<std::string> earlier;
    for (const auto& e : params->entries) {
      if (e.value.is_scalar() && has_expr(e.value.scalar)) {
        bool opaque = false;
        for (const std::string& name : expr_names(e.value.scalar, opaque))
          fixed = fixed && std::find(earlier.begin(), earlier.end(), name) != earlier.end();
        fixed = fixed && !opaque;
      }
      earlier.push_back(e.key);
    }
  }
  if (fixed) {
    ModelUse c = u;
    c.env.erase(c.env.begin(), c.env.begin() + static_cast<std::ptrdiff_t>(env.size()));
    ctx.fixed_models.emplace(&raw, std::move(c));
  }
  d.merge(md);
  return u;
}

// 2 decimals in the largest binary unit that keeps the value at 1 or more (GiB at most); to_chars
// with a precision prints what printf's %.2f prints, without printf's cost (a sweep past a
// platform's memory formats four per point)
static std::string gib_text(double bytes) {
  const char* unit = " B";
  double v = bytes;
  int digits = 0;
  if (bytes >= 1073741824.0) v = bytes / 1073741824.0, unit = " GiB", digits = 2;
  else if (bytes >= 1048576.0) v = bytes / 1048576.0, unit = " MiB", digits = 2;
  else if (bytes >= 1024.0) v = bytes / 1024.0, unit = " KiB", digits = 2;
  char buf[400];  // the largest double in fixed notation has 309 digits
  auto [end, ec] = std::to_chars(buf, buf + sizeof buf, v, std::chars_format::fixed, digits);
  if (ec != std::errc()) return "?";
  return std::string(buf, end) + unit;
}

std::string bindings_text(const Env& b) {
  std::string s;
  for (const auto& [k, v] : b) s += (s.empty() ? "" : ", ") + k + "=" + v;
  return s;
}

Diagnostic footprint_warning(const FootprintExcess& x, const Point& p) {
  Diagnostic w;
  w.warning = true;
  w.loc = x.loc;
  w.message = "network '" + x.network + "' needs " + gib_text(x.footprint) + " of memory, more than the " + gib_text(x.size) + " of platform '" +
              x.platform + "' (" + x.memory + ")";
  w.notes.push_back(Note{{}, "weights " + gib_text(x.weights) + " + KV cache " + gib_text(x.kv_cache) + " + activations " + gib_text(x.activations)});
  if (!p.bindings.empty()) w.notes.push_back(Note{{}, "at sweep point " + std::to_string(p.index) + ": " + bindings_text(p.bindings)});
  return w;
}

static const CNode* catalog_entry(const CNode& ref, PlatformCache& cache, Diags& d, std::shared_ptr<const CNode>& holder) {
  const std::string& name = ref.scalar;
  if (!cache.catalog().has(name)) {
    std::string hint = did_you_mean(name, cache.catalog().names());
    d.error(ref.loc, "unknown platform '" + name + "'",
            {Note{{}, hint.empty() ? "`rsim hw list` shows the catalog in " + cache.catalog().dir() : hint}});
    return nullptr;
  }
  try {
    holder = cache.get(name);
  } catch (const ConfigError& e) {
    d.add(e);
    return nullptr;
  }
  return holder.get();
}

// A platform as its entry describes it (a catalog name, or a map with an optional base:), its
// kernel model's `from:` not yet followed
static Platform resolve_own(const CNode& entry, PlatformCache& cache, Diags& d) {
  std::shared_ptr<const CNode> holder;
  if (entry.is_scalar()) {
    const CNode* node = catalog_entry(entry, cache, d, holder);
    if (!node) return {};
    Diags local;
    if (const CNode* b = node->find("base"))
      local.error(b->loc, "'base' only applies to inline platforms in a scenario; a catalog file describes its platform fully");
    Platform p = build_platform(*node, nullptr, local);
    if (!local.empty()) {
      d.merge(local);
      return {};
    }
    if (p.name != entry.scalar)
      d.error(node->find("name") ? node->find("name")->loc : node->loc,
              "platform file " + cache.catalog().path_of(entry.scalar) + " is named '" + p.name + "'; the name must match the file");
    return p;
  }
  if (!entry.is_map()) {
    d.error(entry.loc, "a platform is a catalog name or a map (name, compute, memory; or base: NAME with overrides)");
    return {};
  }
  const CNode* base = nullptr;
  if (const CNode* b = entry.find("base")) {
    if (!b->is_scalar()) {
      d.error(b->loc, "base must name a catalog platform");
      return {};
    }
    base = catalog_entry(*b, cache, d, holder);
    if (!base) return {};
  }
  return build_platform(entry, base, d);
}

// `kernel_model: {from: X}`: X's fitted parameters on p's own datasheet figures. `chain`: the
// platforms followed so far (a chain that leads back to one of them is an error).
static void carry_kernel_model(Platform& p, PlatformCache& cache, Diags& d, std::vector<std::string> chain) {
  const std::string from = p.kernel_model.from;
  const SourceLoc loc = p.kernel_model.from_loc;
  chain.push_back(p.name);
  if (std::find(chain.begin(), chain.end(), from) != chain.end()) {
    std::string path;
    for (const auto& c : chain) path += c + " → ";
    d.error(loc, "kernel_model's `from: " + from + "` leads back to '" + from + "' (" + path + from + ")",
            {Note{{}, "name a platform whose kernel model is fitted (rsim calibrate --ops writes one)"}});
    return;
  }
  Diags local;
  Platform src = resolve_own(CNode::make_scalar(from, loc), cache, local);
  if (!local.empty()) {
    d.merge(local);
    return;
  }
  if (src.kind != "gpu") {
    d.error(loc, "kernel_model's `from: " + from + "` names a " + (src.kind.empty() ? std::string("platform that is not a GPU") : src.kind) +
                     "; a kernel model carries between GPUs");
    return;
  }
  if (!src.kernel_model.from.empty()) carry_kernel_model(src, cache, d, chain);
  if (!src.kernel_model.active()) {
    d.error(loc, "platform '" + from + "' has no kernel model to carry", {Note{{}, "fit one with `rsim calibrate --ops DIR --platform " + from + " -o FILE`"}});
    return;
  }
  // every fitted family at once (a family added later carries with the rest), keeping p's own `from:`
  KernelModel carried = src.kernel_model;
  carried.from = p.kernel_model.from, carried.from_loc = p.kernel_model.from_loc;
  p.kernel_model = carried;
  p.kernel_model.source = "carried from " + from + (src.kernel_model.source.empty() ? "" : " (" + src.kernel_model.source + ")");
}

Platform resolve_platform(const CNode& entry, PlatformCache& cache, Diags& d) {
  Platform p = resolve_own(entry, cache, d);
  if (!p.kernel_model.from.empty()) {
    if (p.kernel_model.active()) return p;  // (both given: build_platform's error)
    carry_kernel_model(p, cache, d, {});
    if (!p.kernel_model.gemm.empty() && p.sm_count == 0)
      d.error(p.kernel_model.from_loc, "platform '" + p.name + "' carries a GEMM model but states no sm_count", {Note{{}, "add `sm_count: N` (the datasheet's)"}});
  }
  return p;
}

KernelIndex index_kernels(const Network& net) {
  KernelIndex k;
  k.of_layer.reserve(net.layers.size());
  // a hash lookup: a kernel's layers need not be adjacent, and a network may have 10^5 kernels
  std::unordered_map<std::string_view, int> index;
  index.reserve(net.layers.size());
  for (const Layer& L : net.layers) {
    if (L.kernel.empty()) {
      k.of_layer.push_back(-1);
      continue;
    }
    auto [it, fresh] = index.try_emplace(L.kernel, static_cast<int>(k.count));
    if (fresh) ++k.count;
    k.of_layer.push_back(it->second);
  }
  std::vector<int> members(k.count, 0);
  for (int ki : k.of_layer)
    if (ki >= 0) ++members[static_cast<size_t>(ki)];
  const size_t n = net.layers.size();
  k.alone_run.assign(n + 1, 0);
  for (size_t i = n; i-- > 0;) {
    const int ki = k.of_layer[i];
    if (ki < 0 || members[static_cast<size_t>(ki)] != 1) continue;
    const bool next = i + 1 < n && k.of_layer[i + 1] == ki + 1 && k.alone_run[i + 1] > 0;
    k.alone_run[i] = next ? k.alone_run[i + 1] + 1 : 1;
  }
  k.alone_run.pop_back();
  return k;
}

}  // namespace rsim
