#include "engine/scenario/scenario.hpp"

#include "engine/graph/graph.hpp"
#include "engine/model/names.hpp"

#include "engine/graph/passes.hpp"
#include "engine/model/units.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cerrno>
#include <filesystem>
#include <cstring>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

namespace rsim {

const char* memory_model_name(MemoryModel m) {
  return m == MemoryModel::WeightsOutputs ? "weights+outputs" : "inputs+weights+outputs";
}

std::string fnv1a_hex(const std::string& bytes) {
  uint64_t h = 1469598103934665603ULL;
  for (unsigned char c : bytes) {
    h ^= c;
    h *= 1099511628211ULL;
  }
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(h));
  return buf;
}

namespace {

// Values of one sweep variable: a list, or a range map.
std::vector<std::string> read_values(const CNode& n, const std::string& name, Diags& d, SweepVar* meta = nullptr) {
  std::vector<std::string> out;
  if (n.is_seq()) {
    if (n.items.empty()) d.error(n.loc, "sweep variable '" + name + "' has no values");
    for (const auto& i : n.items) {
      if (auto s = to_string(i, d, "sweep value")) out.push_back(*s);
    }
    return out;
  }
  if (n.is_scalar()) {
    out.push_back(n.scalar);
    return out;
  }
  if (!n.is_map()) {
    d.error(n.loc, "sweep variable '" + name + "' needs a list of values or a range {from, to, step|factor|count}");
    return out;
  }
  MapReader m(n, keys::map("range"), "range of '" + name + "'", d);
  // how figures name the variable: `label: Vector clock`, `unit: GHz` → "Vector clock [GHz]"
  for (auto [key, dst] : {std::pair<const char*, std::string*>{"label", meta ? &meta->label : nullptr}, {"unit", meta ? &meta->unit : nullptr}})
    if (const CNode* v = m.get(key)) {
      auto t = to_string(*v, d, key);
      if (t && dst) *dst = *t;
    }
  if (const CNode* v = m.get("values")) {  // {values: [...], label: ..., unit: ...}
    bool range = false;
    for (const char* k : {"from", "to", "step", "factor", "count"}) range = m.get(k) || range;
    m.finish();
    if (range)
      d.error(n.loc, "sweep variable '" + name + "' gives both 'values' and a range (from, to, ...); keep one");
    else
      out = read_values(*v, name, d);
    return out;
  }
  // plain doubles: GCC 12 misreports optional<double> as maybe-uninitialized here
  double from_v = 0, to_v = 0;
  bool have = true;
  for (auto [key, dst] : {std::pair<const char*, double*>{"from", &from_v}, {"to", &to_v}}) {
    const CNode* v = m.require(key);
    auto x = v ? to_number(*v, d, key) : std::nullopt;
    if (x) *dst = *x;
    else have = false;
  }
  const double* from = &from_v;
  const double* to = &to_v;
  const CNode* step = m.get("step");
  const CNode* factor = m.get("factor");
  const CNode* cnt = m.get("count");
  m.finish({"values", "label", "unit"});
  int given = (step != nullptr) + (factor != nullptr) + (cnt != nullptr);
  if (given != 1) {
    d.error(n.loc, "range of '" + name + "' needs exactly one of step (linear), factor (geometric) or count (evenly spaced)");
    return out;
  }
  if (!have) return out;
  const double limit = 1e7;  // a range this long is a typo; the point guard catches real sweeps
  if (step) {
    auto s = to_number(*step, d, "step");
    if (!s) return out;
    if (*s == 0 || (*to - *from) / *s < 0) {
      d.error(step->loc, "step " + step->scalar + " never gets from " + format_number(*from) + " to " + format_number(*to));
      return out;
    }
    double n_steps = std::floor((*to - *from) / *s + 1e-9);
    if (n_steps > limit) {
      d.error(n.loc, "range of '" + name + "' has more than 10 million values");
      return out;
    }
    for (double k = 0; k <= n_steps; ++k) out.push_back(format_number(*from + k * *s));
  } else if (factor) {
    auto f = to_number(*factor, d, "factor");
    if (!f) return out;
    if (*from <= 0 || *to <= 0 || *f <= 0 || *f == 1 || ((*to > *from) != (*f > 1) && *to != *from)) {
      d.error(factor->loc, "factor " + factor->scalar + " never gets from " + format_number(*from) + " to " + format_number(*to) +
                               " (from and to must be positive)");
      return out;
    }
    double v = *from;
    for (int k = 0; k < 10000; ++k) {
      if ((*f > 1 && v > *to * (1 + 1e-12)) || (*f < 1 && v < *to * (1 - 1e-12))) break;
      out.push_back(format_number(v));
      v *= *f;
    }
  } else {
    auto c = to_integer(*cnt, d, "count");
    if (!c) return out;
    if (*c < 1 || *c > limit) {
      d.error(cnt->loc, "count must be between 1 and 10 million");
      return out;
    }
    for (long long k = 0; k < *c; ++k)
      out.push_back(format_number(*c == 1 ? *from : *from + (*to - *from) * static_cast<double>(k) / static_cast<double>(*c - 1)));
  }
  return out;
}

bool valid_name(const std::string& s) {
  if (s.empty() || !(std::isalpha(static_cast<unsigned char>(s[0])) || s[0] == '_')) return false;
  return std::all_of(s.begin(), s.end(), [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; });
}

void read_vars(const CNode& n, std::vector<SweepVar>& out, Diags& d, const std::string& what) {
  if (!n.is_map()) {
    d.error(n.loc, what + " must map variable names to values");
    return;
  }
  for (const auto& e : n.entries) {
    if (!valid_name(e.key)) {
      d.error(e.key_loc, "'" + e.key + "' is not a valid variable name (letters, digits, _)");
      continue;
    }
    SweepVar v{e.key, {}, e.key_loc, "", ""};
    v.values = read_values(e.value, e.key, d, &v);
    out.push_back(std::move(v));
  }
}

Sweep read_sweep(const CNode& n, Diags& d) {
  Sweep s;
  s.loc = n.loc;
  MapReader m(n, keys::map("sweep"), "sweep", d);
  if (!m.ok()) return s;
  if (const CNode* g = m.get("grid")) read_vars(*g, s.grid, d, "sweep.grid");
  if (const CNode* z = m.get("zip")) {
    read_vars(*z, s.zip, d, "sweep.zip");
    for (const auto& v : s.zip)
      if (v.values.size() != s.zip.front().values.size())
        d.error(v.loc, "zipped variables need equal lengths: '" + v.name + "' has " + std::to_string(v.values.size()) + ", '" +
                           s.zip.front().name + "' has " + std::to_string(s.zip.front().values.size()));
  }
  if (const CNode* mp = m.get("max_points")) {
    auto v = to_number(*mp, d, "max_points");
    if (v && *v < 1) d.error(mp->loc, "max_points must be at least 1");
    else if (v) s.max_points = *v;
  }
  m.finish();
  std::vector<std::string> seen;
  for (const auto* list : {&s.zip, &s.grid})
    for (const auto& v : *list) {
      if (std::find(seen.begin(), seen.end(), v.name) != seen.end()) d.error(v.loc, "sweep variable '" + v.name + "' is declared twice");
      seen.push_back(v.name);
    }
  return s;
}

}  // namespace

// A network entry with `request:` becomes two entries (see Request): the prefill of the prompt and
// the decode at a context variable. The rest of the run sees ordinary model uses.
void split_requests(Scenario& s, Diags& d) {
  const size_t n = s.networks.size();
  for (size_t i = 0; i < n; ++i) {
    if (!s.networks[i].is_map() || !s.networks[i].find("request")) continue;
    const CNode e = s.networks[i];  // (a copy: the entry is replaced below)
    const CNode* rq = e.find("request");
    const CNode* model = e.find("model");
    if (!model || !model->is_scalar()) {
      d.error(rq->loc, "request: needs a language model from the zoo or a Hugging Face config (model: NAME or model: hf)",
              {Note{{}, "a request is a prefill of its prompt and decode steps: a transformer with phase, seq and context parameters"}});
      continue;
    }
    MapReader rm(*rq, keys::map("request"), "request", d);
    const CNode* prompt = rm.require("prompt");
    const CNode* generate = rm.require("generate");
    const CNode* paged = rm.get("paged_kv");
    std::string exec[2];
    // settings.execution: ideal (written as such) times every phase without overhead
    const CNode* se = s.settings.is_map() ? s.settings.find("execution") : nullptr;
    const bool ideal_run = se && se->is_scalar() && se->scalar == "ideal";
    const char* exec_keys[2] = {"prefill_execution", "decode_execution"};
    for (int k = 0; k < 2; ++k)
      if (const CNode* v = rm.get(exec_keys[k])) {
        const std::string t = v->is_scalar() ? v->scalar : "";
        if (t != "fused" && t != "graph" && t != "eager" && t != "ideal")
          d.error(v->loc, std::string("unknown ") + exec_keys[k] + " '" + t + "'", {Note{{}, "fused, graph, eager or ideal (see settings.execution)"}});
        else if (ideal_run) {
          Diagnostic w{v->loc, std::string("settings.execution: ideal overrides this ") + exec_keys[k] + " ('" + t + "'): every kernel runs at its roofline time, with no overhead", {}};
          w.warning = true;
          s.load_warnings.push_back(std::move(w));
        } else {
          exec[k] = t;
        }
      }
    bool continuous = false;
    if (const CNode* v = rm.get("batching")) {
      const std::string t = v->is_scalar() ? v->scalar : "";
      if (t == "continuous") continuous = true;
      else if (t != "static") d.error(v->loc, "unknown batching '" + t + "'", {Note{{}, "static (default) or continuous"}});
    }
    rm.finish();
    if (!prompt || !generate) continue;
    const CNode* args = e.find("args");
    if (args && !args->is_map()) continue;  // (resolve_model reports it)
    for (const char* k : {"phase", "seq", "context"})
      if (const CNode* a = args ? args->find(k) : nullptr)
        d.error(a->loc, std::string("args.") + k + " is set by request: (the prefill of the prompt, then decode steps at a growing context)",
                {Note{{}, "remove it; request: {prompt: N, generate: M} prefills N tokens, then decodes M at contexts N … N+M−1"}});
    long long block = 0;
    if (paged) {
      MapReader pm(*paged, keys::map("paged_kv"), "paged_kv", d);
      if (const CNode* b = pm.require("block"))
        if (auto v = to_integer(*b, d, "block")) {
          if (*v < 1 || *v > 1000000) d.error(b->loc, "paged_kv.block must be 1 to 1000000 tokens a page");
          else block = *v;
        }
      pm.finish();
    }
    std::string name;
    if (const CNode* nm = e.find("name"); nm && nm->is_scalar()) name = nm->scalar;
    else if (model->scalar == "hf" && args && args->find("config") && args->find("config")->is_scalar()) {
      const CNode* cfg = args->find("config");
      std::filesystem::path cp(cfg->scalar);
      if (cp.is_relative() && cfg->loc.file) cp = std::filesystem::path(cfg->loc.file->path).parent_path() / cp;  // (as resolve_model reads it)
      std::error_code ec;
      name = cp.stem() == "config" ? std::filesystem::absolute(cp, ec).parent_path().filename().string() : cp.stem().string();
      if (name.empty()) name = "hf";
    } else {
      name = model->scalar;
    }
    Request q;
    q.name = name;
    q.var = "rsim_request_context_" + std::to_string(s.requests.size());
    q.prompt = *prompt, q.generate = *generate;
    q.prefill_execution = exec[0], q.decode_execution = exec[1];
    auto entry = [&](const std::string& nm, std::vector<std::pair<std::string, std::string>> set) {
      CNode out = e;
      out.entries.clear();
      for (const auto& x : e.entries)
        if (x.key != "request" && x.key != "name") out.entries.push_back(x);
      out.entries.insert(out.entries.begin() + 1, CEntry{"name", e.loc, CNode::make_scalar(nm, e.loc)});
      CNode* a = nullptr;
      for (auto& x : out.entries)
        if (x.key == "args") a = &x.value;
      if (!a) {
        out.entries.push_back(CEntry{"args", e.loc, CNode{}});
        a = &out.entries.back().value;
        a->kind = CNode::Kind::Map;
        a->loc = e.loc;
      }
      if (block > 0) set.emplace_back("kv_block", std::to_string(block));
      for (const auto& kv : set) {
        const std::string& k = kv.first;
        const std::string& v = kv.second;
        auto it = std::find_if(a->entries.begin(), a->entries.end(), [&](const CEntry& x) { return x.key == k; });
        if (it != a->entries.end()) it->value = CNode::make_scalar(v, rq->loc);  // (batch: 1 of a continuous request's prefill)
        else a->entries.push_back(CEntry{k, rq->loc, CNode::make_scalar(v, rq->loc)});
      }
      return out;
    };
    const std::string prompt_text = prompt->is_scalar() ? prompt->scalar : "";
    q.continuous = continuous;
    std::vector<std::pair<std::string, std::string>> prefill_args = {{"phase", "prefill"}, {"seq", prompt_text}, {"context", "0"}};
    if (continuous) prefill_args.emplace_back("batch", "1");  // one prompt at a time joins the running batch
    s.networks[i] = entry(name, prefill_args);
    q.prefill = i;
    s.networks.push_back(entry(name + ".decode", {{"phase", "decode"}, {"context", "${" + q.var + "}"}}));
    q.decode = s.networks.size() - 1;
    s.vars.emplace_back(q.var, CNode::make_scalar(prompt_text, prompt->loc));
    s.requests.push_back(std::move(q));
  }
  // each request's decode entry alone, evaluated again at the later contexts (and its prefill
  // alone when the request gives it an execution mode of its own)
  for (Request& q : s.requests) {
    auto alone = [&](size_t entry, const std::string& execution, bool keep_var) {
      auto only = std::make_shared<Scenario>();
      only->path = s.path, only->name = s.name, only->settings = s.settings, only->platforms = s.platforms;
      only->platforms_loc = s.platforms_loc, only->scripts = s.scripts, only->limits = s.limits;
      if (!execution.empty()) {
        if (!only->settings.is_map()) only->settings.kind = CNode::Kind::Map, only->settings.loc = s.networks[entry].loc;
        auto& es = only->settings.entries;
        es.erase(std::remove_if(es.begin(), es.end(), [](const CEntry& e) { return e.key == "execution"; }), es.end());
        es.push_back(CEntry{"execution", s.networks[entry].loc, CNode::make_scalar(execution, s.networks[entry].loc)});
      }
      fix_settings(*only);
      for (const auto& v : s.vars)
        if (keep_var || v.first != q.var) only->vars.push_back(v);
      only->networks.push_back(s.networks[entry]);
      return only;
    };
    q.decode_only = alone(q.decode, q.decode_execution, false);
    if (!q.prefill_execution.empty()) q.prefill_only = alone(q.prefill, q.prefill_execution, true);
  }
}

std::vector<Diagnostic> platform_name_warnings(const Scenario& s) {
  std::vector<Diagnostic> out;
  std::map<std::string, std::vector<std::string>> var_reads;
  for (const auto& [name, node] : s.vars) {
    bool opaque = false;
    var_reads[name] = expr_names(node.scalar, opaque);
  }
  auto closure = [&](std::set<std::string>& names) {
    std::vector<std::string> todo(names.begin(), names.end());
    while (!todo.empty()) {
      std::string n = todo.back();
      todo.pop_back();
      if (auto it = var_reads.find(n); it != var_reads.end())
        for (const auto& m : it->second)
          if (names.insert(m).second) todo.push_back(m);
    }
  };
  auto reads = [&](const CNode& n, auto& self, std::set<std::string>& into, bool& opaque) -> void {
    if (n.is_scalar()) {
      for (auto& x : expr_names(n.scalar, opaque)) into.insert(x);
      return;
    }
    for (const auto& e : n.entries) self(e.value, self, into, opaque);
    for (const auto& i : n.items) self(i, self, into, opaque);
  };
  for (const CNode& p : s.platforms) {
    if (!p.is_map()) continue;
    const CEntry* name = nullptr;
    std::set<std::string> used;
    bool opaque = false;
    for (const auto& e : p.entries)
      if (e.key == "name") name = &e;
      else reads(e.value, reads, used, opaque);
    if (!name || !name->value.is_scalar() || opaque) continue;
    std::set<std::string> named;
    reads(name->value, reads, named, opaque);
    if (opaque) continue;
    closure(used), closure(named);
    auto swept = [&](const std::vector<SweepVar>& vs, bool together) {
      bool covered = together && std::any_of(vs.begin(), vs.end(), [&](const SweepVar& v) { return named.count(v.name) > 0; });
      for (const auto& v : vs)
        if (v.values.size() > 1 && used.count(v.name) && !named.count(v.name) && !covered) {
          Diagnostic w;
          w.warning = true;
          w.loc = name->value.loc;
          w.message = "platform name '" + name->value.scalar + "' does not change with '" + v.name +
                      "', which this platform reads: its points get different roofs under one name, and figures draw the first point's roofs for all";
          w.notes = {Note{v.loc, "swept here; to draw each, put it in the name, e.g. name: \"" + name->value.scalar + "@${" + v.name + "}\" (the tables keep each point's platform)"}};
          out.push_back(std::move(w));
          return;
        }
    };
    swept(s.sweep.zip, true);
    swept(s.sweep.grid, false);
  }
  return out;
}

Scenario parse_scenario(const std::string& text, const std::string& path, Diags* unknown_keys) {
  CNode root = parse_yaml(text, path);
  Scenario s;
  s.path = path;
  s.hash = fnv1a_hex(text);
  Diags d;
  MapReader m(root, keys::map("scenario"), "scenario", d);
  if (!m.ok()) d.throw_if_any();
  if (const CNode* v = m.require("name")) {
    s.name = to_string(*v, d, "name").value_or("");
    if (!s.name.empty() && (!std::all_of(s.name.begin(), s.name.end(), [](char c) {
          return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-' || c == '.';
        }) || s.name.find_first_not_of('.') == std::string::npos))
      d.error(v->loc, "scenario name '" + printable(s.name) + "' is used as a folder name: use letters, digits, '-', '_' and '.' (not only dots)");
  }
  if (const CNode* v = m.get("description")) s.description = to_string(*v, d, "description").value_or("");
  if (const CNode* v = m.get("settings")) s.settings = *v;
  if (const CNode* v = m.get("vars")) {
    if (!v->is_map()) d.error(v->loc, "vars must map names to values");
    else
      for (const auto& e : v->entries) {
        if (!valid_name(e.key)) d.error(e.key_loc, "'" + e.key + "' is not a valid variable name (letters, digits, _)");
        else if (!e.value.is_scalar()) d.error(e.value.loc, "var '" + e.key + "' must be a single value");
        else s.vars.emplace_back(e.key, e.value);
      }
  }
  if (const CNode* v = m.get("sweep")) s.sweep = read_sweep(*v, d);
  for (const auto& [name, node] : s.vars)
    for (const auto& sv : sweep_names(s.sweep))
      if (sv == name) d.error(node.loc, "'" + name + "' is both a var and a sweep variable");
  if (const CNode* v = m.require("platforms")) {
    s.platforms_loc = v->loc;
    if (!v->is_seq() || v->items.empty()) d.error(v->loc, "platforms must be a list of catalog names (see `rsim hw list`) or inline platforms");
    else s.platforms = v->items;
  }
  if (const CNode* v = m.require("networks")) {
    if (!v->is_seq() || v->items.empty()) d.error(v->loc, "networks must be a list of networks (name, input, layers)");
    else s.networks = v->items;
  }
  split_requests(s, d);
  if (const CNode* v = m.get("plots")) s.plots = *v;
  const CNode* passes = m.get("passes");
  const CNode* optimize = m.get("optimize");
  if (passes && optimize) d.error(optimize->loc, "give either 'passes' or 'optimize', not both");
  if (passes || optimize) s.passes = read_passes(passes ? *passes : *optimize, d);
  if (const CNode* v = m.get("plugins")) {
    for (const CNode* i : as_list(*v)) {
      auto rel = to_string(*i, d, "plugin");
      if (!rel) continue;
      // relative to the scenario file
      std::filesystem::path pp = std::filesystem::path(*rel).is_absolute() ? std::filesystem::path(*rel)
                                                                           : std::filesystem::path(path).parent_path() / *rel;
      // a Lua file by its name: anything else (/proc/self/environ, a key file) is not opened, so
      // that no error message (a syntax error quotes its line) can show what it holds
      if (pp.extension() != ".lua") {
        d.error(i->loc, "plugin '" + pp.string() + "' is not a Lua file: a plugin's name ends in .lua (the file is not opened)");
        continue;
      }
      std::string why;
      auto code = read_regular_file(pp.string(), kMaxPluginBytes, "plugin", why);
      if (!code) {
        d.error(i->loc, "cannot read plugin '" + pp.string() + "': " + why);
        continue;
      }
      s.scripts.push_back(Script{pp.lexically_normal().string(), std::move(*code), i->loc});
    }
  }
  if (const CNode* v = m.get("lua")) {
    if (!v->is_scalar()) d.error(v->loc, "lua must be a block of Lua code (lua: |)");
    else {
      // pad with blank lines so Lua's line numbers are the scenario's
      bool block = false;  // `lua: |`: the code starts on the line after the indicator
      if (v->loc.known() && v->loc.line <= static_cast<int>(v->loc.file->lines.size())) {
        const std::string& l = v->loc.file->lines[static_cast<size_t>(v->loc.line - 1)];
        size_t c = static_cast<size_t>(std::max(0, v->loc.col - 1));
        block = c < l.size() && (l[c] == '|' || l[c] == '>');
      }
      int first = v->loc.line + (block ? 1 : 0);
      s.scripts.push_back(Script{path, std::string(static_cast<size_t>(std::max(0, first - 1)), '\n') + v->scalar, v->loc});
    }
  }
  if (const CNode* v = m.get("serving")) s.serving = *v;  // read per point by serving/ (it may hold ${…})
  if (const CNode* v = m.get("limits")) {
    MapReader lm(*v, keys::map("limits"), "limits", d);
    if (const CNode* n = lm.get("instructions")) {
      auto x = to_number(*n, d, "instructions");
      if (x && (*x < 1e3 || *x > 1e10)) d.error(n->loc, "instructions must be between 1000 and 10000000000 per call");
      else if (x) s.limits.instructions = *x;
    }
    if (const CNode* n = lm.get("memory")) {
      QuantityResult q = n->is_scalar() ? parse_quantity(n->scalar, Dim::Bytes) : QuantityResult{std::nullopt, "memory must be a size such as '64 MiB'"};
      if (!q.value) d.error(n->loc, "memory: " + q.error);
      else if (*q.value < 1048576 || *q.value > 4294967296.0) d.error(n->loc, "memory must be between 1 MiB and 4 GiB per Lua state");
      else s.limits.memory_bytes = *q.value;
    }
    lm.finish();
  }
  Diags unknown;
  m.finish({}, &unknown);
  const size_t before_settings = d.size();
  // Settings without expressions are read now, once (and `validate` reports their errors with the rest).
  fix_settings(s, &d);
  // a caller collecting every error of the file (rsim run, validate) gets the settings' errors with
  // the unknown keys, and the scenario: its networks, platforms and plots are checked too (an
  // unknown dtype does not hide an unknown model)
  if (unknown_keys && before_settings == 0) {
    unknown_keys->merge(unknown);
    unknown_keys->merge(d);
    return s;
  }
  if (d.empty() && unknown.empty()) return s;
  // in the order they were found: the keys' errors, the unknown keys, the settings'
  std::vector<Diagnostic> all(d.list().begin(), d.list().begin() + static_cast<std::ptrdiff_t>(before_settings));
  all.insert(all.end(), unknown.list().begin(), unknown.list().end());
  all.insert(all.end(), d.list().begin() + static_cast<std::ptrdiff_t>(before_settings), d.list().end());
  throw ConfigError(all);
}

Scenario load_scenario(const std::string& path, Diags* unknown_keys) {
  std::string why;
  auto text = read_regular_file(path, kMaxScenarioBytes, "scenario", why);
  if (!text) throw ConfigError(SourceLoc{}, "cannot read scenario '" + path + "': " + why);
  // a model file where a scenario belongs: say how to put it in one
  if (std::filesystem::path(path).extension() == ".onnx")
    throw ConfigError(SourceLoc{SourceFile::from_text(path, ""), 0, 0}, "an ONNX model, not a scenario: rsim runs a scenario that names it",
                      {Note{{}, "write a scenario such as\n  name: mine\n  platforms: [h100_sxm]\n  networks: [{onnx: " + path +
                                    "}]\nand run it with `rsim run mine.yaml` (`rsim import " + path + " --summary` shows what rsim reads of it)"}});
  return parse_scenario(*text, path, unknown_keys);
}

std::vector<std::string> sweep_names(const Sweep& s) {
  std::vector<std::string> n;
  for (const auto& v : s.zip) n.push_back(v.name);
  for (const auto& v : s.grid) n.push_back(v.name);
  return n;
}

void apply_overrides(Scenario& s, const std::vector<std::pair<std::string, std::string>>& sets) {
  Diags d;
  for (const auto& [name, value] : sets) {
    if (std::string why = text_problem(value); !why.empty()) {
      d.error(SourceLoc{}, "--set " + name + "=" + printable(value) + ": the value " + why);
      continue;
    }
    bool done = false;
    for (auto& [vn, node] : s.vars)
      if (vn == name) {
        node.scalar = value;
        done = true;
      }
    for (auto& v : s.sweep.grid)
      if (v.name == name) {
        v.values = {value};
        done = true;
      }
    // a zipped variable is pinned to one of its values: its partners keep theirs at that index
    for (size_t zi = 0; zi < s.sweep.zip.size() && !done; ++zi) {
      const SweepVar& v = s.sweep.zip[zi];
      if (v.name != name) continue;
      done = true;
      const std::string& wanted = value;  // (clang 14 cannot capture a structured binding)
      auto same = [&wanted](const std::string& a) {
        if (a == wanted) return true;
        char *ea = nullptr, *eb = nullptr;
        double x = std::strtod(a.c_str(), &ea), y = std::strtod(wanted.c_str(), &eb);
        return !a.empty() && !wanted.empty() && *ea == '\0' && *eb == '\0' && x == y;
      };
      auto at = std::find_if(v.values.begin(), v.values.end(), same);
      if (at == v.values.end()) {
        std::string listed;
        for (const auto& x : v.values) listed += (listed.empty() ? "" : ", ") + x;
        std::string partners;
        for (const auto& o : s.sweep.zip)
          if (o.name != name) partners += (partners.empty() ? "" : ", ") + o.name;
        d.error(SourceLoc{}, "--set " + name + "=" + value + ": '" + name + "' is a zipped variable and " + value + " is not one of its values",
                {Note{{}, "its values: " + listed + (partners.empty() ? "" : "; pinning one of them pins " + partners + " to the value beside it")}});
        break;
      }
      size_t index = static_cast<size_t>(at - v.values.begin());
      for (auto& o : s.sweep.zip) o.values = {o.values[index]};
    }
    if (!done) {
      std::vector<std::string> names = sweep_names(s.sweep);
      for (const auto& [vn, node] : s.vars) names.push_back(vn);
      std::string hint = did_you_mean(name, names);
      std::string all;
      for (const auto& n : names) all += (all.empty() ? "" : ", ") + n;
      d.error(SourceLoc{}, "--set " + name + "=" + value + ": the scenario has no variable '" + name + "'",
              {Note{{}, !hint.empty() ? hint : all.empty() ? "this scenario declares no vars or sweep variables" : "its variables: " + all}});
    }
  }
  d.throw_if_any();
}

double point_count(const Sweep& s) {
  double n = s.zip.empty() ? 1 : static_cast<double>(s.zip.front().values.size());
  for (const auto& v : s.grid) n *= static_cast<double>(v.values.size());
  return n;
}

Point sweep_point(const Sweep& s, size_t index) {
  Point p;
  sweep_point(s, index, p);
  return p;
}

void sweep_point(const Sweep& s, size_t index, Point& p) {
  p.index = index;
  p.bindings.resize(s.zip.size() + s.grid.size());
  // mixed radix, the last grid variable fastest, the zip dimension slowest
  size_t few[16];  // (a sweep has a few grid variables: no allocation per point)
  std::vector<size_t> many(s.grid.size() > 16 ? s.grid.size() : 0);
  size_t* idx = s.grid.size() > 16 ? many.data() : few;
  size_t rest = index;
  for (size_t g = s.grid.size(); g-- > 0;) {
    idx[g] = rest % s.grid[g].values.size();
    rest /= s.grid[g].values.size();
  }
  auto bind = [&](size_t k, const std::string& name, const std::string& value) {
    p.bindings[k].first = name;
    p.bindings[k].second = value;
  };
  for (size_t z = 0; z < s.zip.size(); ++z) bind(z, s.zip[z].name, s.zip[z].values[rest]);
  for (size_t g = 0; g < s.grid.size(); ++g) bind(s.zip.size() + g, s.grid[g].name, s.grid[g].values[idx[g]]);
}

void check_point_limit(const Sweep& s) {
  double n = point_count(s);
  if (n > s.max_points) {
    char buf[200];
    std::snprintf(buf, sizeof buf, "the sweep has %.0f points, over the limit of %.0f", n, s.max_points);
    throw ConfigError(s.loc, buf, {Note{{}, "raise it with 'max_points:' under sweep if you mean it"}});
  }
}

// Positions of a dimension worth checking: the first and last, each variable's smallest and
// largest numeric value, and up to 16 spread evenly between.
static std::vector<size_t> sample_positions(const std::vector<const SweepVar*>& vars, size_t size) {
  std::vector<size_t> pos;
  if (size == 0) return pos;
  const size_t spread = 16;
  for (size_t k = 0; k < spread && k < size; ++k) pos.push_back(size <= spread ? k : k * (size - 1) / (spread - 1));
  pos.push_back(size - 1);
  for (const SweepVar* v : vars) {
    size_t lo = SIZE_MAX, hi = SIZE_MAX;
    double lov = 0, hiv = 0;
    for (size_t i = 0; i < v->values.size(); ++i) {
      auto x = parse_double(v->values[i]);
      if (!x) continue;
      if (lo == SIZE_MAX || *x < lov) lo = i, lov = *x;
      if (hi == SIZE_MAX || *x > hiv) hi = i, hiv = *x;
    }
    if (lo != SIZE_MAX) pos.push_back(lo), pos.push_back(hi);
  }
  std::sort(pos.begin(), pos.end());
  pos.erase(std::unique(pos.begin(), pos.end()), pos.end());
  return pos;
}

std::vector<Point> validation_points(const Sweep& s) {
  check_point_limit(s);
  size_t n = static_cast<size_t>(point_count(s));
  if (n == 0) return {};
  // index of the point with zip position z and grid positions idx
  auto index_of = [&](size_t z, const std::vector<size_t>& idx) {
    size_t i = z;
    for (size_t g = 0; g < s.grid.size(); ++g) i = i * s.grid[g].values.size() + idx[g];
    return i;
  };
  std::vector<size_t> picks;
  std::vector<size_t> idx(s.grid.size(), 0);
  std::vector<const SweepVar*> zvars;
  for (const auto& v : s.zip) zvars.push_back(&v);
  for (size_t z : sample_positions(zvars, s.zip.empty() ? 1 : s.zip.front().values.size())) picks.push_back(index_of(z, idx));
  for (size_t g = 0; g < s.grid.size(); ++g) {
    for (size_t v : sample_positions({&s.grid[g]}, s.grid[g].values.size())) {
      idx[g] = v;
      picks.push_back(index_of(0, idx));
    }
    idx[g] = 0;
  }
  picks.push_back(n - 1);  // every variable at its last value together
  std::sort(picks.begin(), picks.end());
  picks.erase(std::unique(picks.begin(), picks.end()), picks.end());
  std::vector<Point> pts;
  pts.reserve(picks.size());
  for (size_t i : picks) pts.push_back(sweep_point(s, i));
  return pts;
}

std::vector<Point> expand_sweep(const Sweep& s) {
  double n = point_count(s);
  if (n > s.max_points) {
    char buf[200];
    std::snprintf(buf, sizeof buf, "the sweep has %.0f points, over the limit of %.0f", n, s.max_points);
    throw ConfigError(s.loc, buf, {Note{{}, "raise it with 'max_points:' under sweep if you mean it"}});
  }
  std::vector<Point> pts;
  pts.reserve(static_cast<size_t>(n));
  size_t zn = s.zip.empty() ? 1 : s.zip.front().values.size();
  std::vector<size_t> idx(s.grid.size(), 0);
  for (size_t z = 0; z < zn; ++z) {
    std::fill(idx.begin(), idx.end(), 0);
    while (true) {
      Point p;
      p.index = pts.size();
      for (const auto& v : s.zip) p.bindings.emplace_back(v.name, v.values[z]);
      for (size_t g = 0; g < s.grid.size(); ++g) p.bindings.emplace_back(s.grid[g].name, s.grid[g].values[idx[g]]);
      pts.push_back(std::move(p));
      // odometer, last fastest
      size_t g = s.grid.size();
      while (g > 0) {
        --g;
        if (++idx[g] < s.grid[g].values.size()) break;
        idx[g] = 0;
        if (g == 0) {
          g = SIZE_MAX;
          break;
        }
      }
      if (s.grid.empty() || g == SIZE_MAX) break;
    }
  }
  return pts;
}

}  // namespace rsim
