#include "engine/graph.hpp"

#include <algorithm>
#include <map>

namespace rsim {

namespace {

constexpr size_t kMaxLayers = 1'000'000;

std::optional<DType> read_dtype(const CNode& v, Diags& d, const std::string& key) {
  auto s = to_string(v, d, key);
  if (!s) return std::nullopt;
  if (auto t = parse_dtype(*s)) return t;
  std::string hint = did_you_mean(*s, dtype_names());
  d.error(v.loc, "unknown " + key + " '" + *s + "'", {Note{{}, hint.empty() ? "dtypes: fp64, fp32, tf32, bf16, fp16, fp8, int8, int4" : hint}});
  return std::nullopt;
}

struct BlockDef {
  std::vector<std::pair<std::string, std::optional<std::string>>> params;  // name, default
  const CNode* layers = nullptr;
  SourceLoc loc;
};

class Builder {
 public:
  Builder(const BuildOptions& opt, Diags& d, Network& net) : opt_(opt), d_(d), net_(net) {}

  std::map<std::string, BlockDef> blocks;
  DType dtype = DType::fp32;
  Precision precision;
  bool failed = false;  // a shape error happened: later layers would only repeat it

  // Scope: names visible to references, innermost last.
  struct Scope {
    std::string prefix;                      // "stage1.0."
    std::map<std::string, TensorRef> names;  // local names
  };

  void run_layers(const CNode& list, const Env& env, std::vector<Scope>& scopes, TensorRef& prev, int depth) {
    if (!list.is_seq()) {
      d_.error(list.loc, "layers must be a list");
      return;
    }
    for (const CNode& raw : list.items) {
      if (failed) return;
      Diags local;
      CNode item = substitute_tree(raw, env, opt_.ev, local);
      if (!local.empty()) {
        d_.merge(local);
        failed = true;
        return;
      }
      if (!item.is_map()) {
        d_.error(item.loc, "a layer must be a map with 'op' (or 'block'), not " + std::string(item.kind_name()));
        continue;
      }
      if (const CNode* when = item.find("when")) {
        // `when: ${expr}` keeps the layer (or block) only where the condition holds
        auto keep = to_bool(*when, d_, "when");
        if (!keep) {
          failed = true;
          return;
        }
        if (!*keep) continue;
      }
      if (item.find("block")) run_block(item, env, scopes, prev, depth);
      else run_layer(item, scopes, prev);
    }
  }

 private:
  const BuildOptions& opt_;
  Diags& d_;
  Network& net_;
  int auto_index_ = 0;

  std::vector<std::string> visible_names(const std::vector<Scope>& scopes) const {
    std::vector<std::string> n;
    for (const auto& s : scopes)
      for (const auto& [k, v] : s.names) n.push_back(k);
    for (const auto& l : net_.layers) n.push_back(l.name);
    return n;
  }

  bool resolve(const CNode& ref, const std::vector<Scope>& scopes, TensorRef& out) {
    auto text = to_string(ref, d_, "input reference");
    if (!text) return false;
    std::string name = *text;
    int index = -1;
    size_t colon = name.rfind(':');
    if (colon != std::string::npos) {
      auto idx = parse_integer(name.substr(colon + 1));
      if (!idx || *idx < 0) {
        d_.error(ref.loc, "bad output index in '" + name + "'; write NAME:K with K = 0, 1, ...");
        return false;
      }
      index = static_cast<int>(*idx);
      name = name.substr(0, colon);
    }
    bool found = false;
    for (auto it = scopes.rbegin(); it != scopes.rend() && !found; ++it) {
      auto f = it->names.find(name);
      if (f != it->names.end()) {
        out = f->second;
        found = true;
      }
    }
    if (!found) {
      for (int i = static_cast<int>(net_.layers.size()) - 1; i >= 0; --i)
        if (net_.layers[static_cast<size_t>(i)].name == name) {
          out = TensorRef{i, 0};
          found = true;
          break;
        }
    }
    if (!found) {
      std::vector<Note> notes;
      std::string hint = did_you_mean(name, visible_names(scopes));
      if (!hint.empty()) notes.push_back(Note{{}, hint});
      notes.push_back(Note{{}, "inputs name an earlier layer, a block output, 'input', or NAME:K for output K"});
      d_.error(ref.loc, "unknown input '" + name + "'", notes);
      return false;
    }
    if (index >= 0) {
      if (out.layer < 0) {
        d_.error(ref.loc, "a network input has a single tensor; drop ':" + std::to_string(index) + "'");
        return false;
      }
      size_t n = net_.layers[static_cast<size_t>(out.layer)].out_shapes.size();
      if (static_cast<size_t>(index) >= n) {
        d_.error(ref.loc, "'" + name + "' has " + std::to_string(n) + " output" + (n == 1 ? "" : "s") + "; index " + std::to_string(index) + " is out of range");
        return false;
      }
      out.output = index;
    }
    return true;
  }

  const Shape& shape_of(const TensorRef& r) const {
    if (r.layer < 0) return net_.inputs[static_cast<size_t>(r.output)].second;
    return net_.layers[static_cast<size_t>(r.layer)].out_shapes[static_cast<size_t>(r.output)];
  }

  bool read_inputs(const CNode& item, const std::vector<Scope>& scopes, const TensorRef& prev, std::vector<TensorRef>& refs) {
    const CNode* in = item.find("inputs");
    if (!in) {
      refs = {prev};
      return true;
    }
    bool ok = true;
    for (const CNode* r : as_list(*in)) {
      TensorRef t;
      if (resolve(*r, scopes, t)) refs.push_back(t);
      else ok = false;
    }
    return ok;
  }

  void define(std::vector<Scope>& scopes, const std::string& local, const SourceLoc& loc, TensorRef ref) {
    Scope& s = scopes.back();
    if (s.names.count(local)) {
      d_.error(loc, "a layer named '" + local + "' already exists here; layer names must be unique");
      return;
    }
    s.names[local] = ref;
  }

  void run_layer(const CNode& item, std::vector<Scope>& scopes, TensorRef& prev) {
    const CNode* opn = item.find("op");
    if (!opn) {
      d_.error(item.loc, "a layer needs 'op' (an operator, see `rsim ops`) or 'block'");
      return;
    }
    auto opname = to_string(*opn, d_, "op");
    if (!opname) return;
    const OpDef* op = opt_.ops.find(*opname);
    if (!op) {
      std::string hint = did_you_mean(*opname, opt_.ops.all_names());
      d_.error(opn->loc, "unknown operator '" + *opname + "'", {Note{{}, hint.empty() ? "`rsim ops` lists the operators" : hint}});
      return;
    }
    std::string local;
    if (const CNode* n = item.find("name")) local = to_string(*n, d_, "name").value_or("");
    else local = op->name + "_" + std::to_string(++auto_index_);
    if (local == "input") {
      d_.error(item.find("name")->loc, "'input' is reserved for the network's (or block's) input; pick another name");
      return;
    }
    std::string full = scopes.back().prefix + local;
    std::string where = "layer '" + full + "' (" + op->name + ")";

    // unknown keys: everything that is neither a layer key nor an attribute
    std::vector<std::string> valid = keys::map("layer").names();
    for (const auto& a : op->attrs) valid.push_back(a.name);
    for (const auto& e : item.entries) {
      if (std::find(valid.begin(), valid.end(), e.key) != valid.end()) continue;
      std::string hint = did_you_mean(e.key, valid);
      std::string attrs;
      for (const auto& a : op->attrs) attrs += (attrs.empty() ? "" : ", ") + a.name;
      d_.error(e.key_loc, "unknown key '" + e.key + "' in " + where,
               {Note{{}, hint.empty() ? (attrs.empty() ? op->name + " takes no attributes" : op->name + " takes: " + attrs) : hint}});
    }
    size_t before = d_.size();
    Layer L;
    L.name = full;
    L.op = op;
    L.loc = item.loc;
    L.dtype = dtype;
    if (const CNode* dt = item.find("dtype"))
      if (auto t = read_dtype(*dt, d_, "dtype")) L.dtype = *t;
    L.precision = precision;
    read_precision_keys(item, L.precision, d_);
    if (const CNode* tw = item.find("tied_weights")) L.tied_weights = to_bool(*tw, d_, "tied_weights").value_or(false);
    L.attrs = read_attrs(*op, item, d_, where);
    bool inputs_ok = read_inputs(item, scopes, prev, L.inputs);
    if (d_.size() != before || !inputs_ok) {
      failed = true;  // shapes after this layer are unknown
      return;
    }
    int n_in = static_cast<int>(L.inputs.size());
    if (n_in < op->min_inputs || (op->max_inputs >= 0 && n_in > op->max_inputs)) {
      std::string want = op->max_inputs < 0 ? "at least " + std::to_string(op->min_inputs)
                         : op->min_inputs == op->max_inputs ? std::to_string(op->min_inputs)
                                                            : std::to_string(op->min_inputs) + " to " + std::to_string(op->max_inputs);
      d_.error(item.loc, where + " takes " + want + " input" + (want == "1" ? "" : "s") + ", got " + std::to_string(n_in),
               {Note{{}, "name them with 'inputs: [a, b]'"}});
      failed = true;
      return;
    }
    unsigned kv_inputs = 0;
    for (size_t i = 0; i < L.inputs.size(); ++i) {
      const TensorRef& r = L.inputs[i];
      L.in_shapes.push_back(shape_of(r));
      if (r.layer >= 0 && net_.layers[static_cast<size_t>(r.layer)].op->kv_outputs && i < 32) kv_inputs |= 1u << i;
    }
    L.touches_kv = kv_inputs != 0 || op->kv_outputs;
    OpArgs args{L.attrs, L.in_shapes, L.dtype, L.precision, kv_inputs};
    try {
      L.out_shapes = op->infer(args);
      for (const auto& sh : L.out_shapes)
        for (auto dim : sh)
          if (dim <= 0 || dim > 1000000000000LL) throw ShapeError("output dimension " + std::to_string(dim) + " of " + shape_str(sh) + " is out of range");
      L.cost = layer_cost(*op, args, L.out_shapes, opt_.flops_per_mac);
      if (L.tied_weights) L.cost.params = L.cost.active_params = L.cost.resident_weight_bytes = 0;
    } catch (const ShapeError& e) {
      std::string shapes;
      for (const auto& s : L.in_shapes) shapes += (shapes.empty() ? "" : ", ") + shape_str(s);
      std::vector<Note> notes = {Note{{}, "input shape" + std::string(L.in_shapes.size() == 1 ? "" : "s") + ": " + shapes}};
      for (const auto& n : e.notes) notes.push_back(Note{{}, n});
      d_.error(item.loc, where + ": " + e.what(), notes);
      failed = true;
      return;
    }
    if (net_.layers.size() >= kMaxLayers) {
      d_.error(item.loc, "network '" + net_.name + "' has more than 1,000,000 layers; is a repeat count too large?");
      failed = true;
      return;
    }
    TensorRef ref{static_cast<int>(net_.layers.size()), 0};
    define(scopes, local, item.loc, ref);
    if (!op->view) L.kernel = L.name;  // one kernel per layer until passes fuse them
    net_.layers.push_back(std::move(L));
    prev = ref;
  }

  void run_block(const CNode& item, const Env& env, std::vector<Scope>& scopes, TensorRef& prev, int depth) {
    MapReader m(item, keys::map("block_use"), "block use", d_);
    auto bname = to_string(*m.get("block"), d_, "block");
    if (!bname) return;
    auto it = blocks.find(*bname);
    if (it == blocks.end()) {
      std::vector<std::string> names;
      for (const auto& [k, v] : blocks) names.push_back(k);
      std::string hint = did_you_mean(*bname, names);
      d_.error(item.find("block")->loc, "unknown block '" + *bname + "'", {Note{{}, hint.empty() ? "define it under the network's 'blocks:'" : hint}});
      failed = true;
      return;
    }
    if (depth > 16) {
      d_.error(item.loc, "blocks nest more than 16 deep; is block '" + *bname + "' using itself?");
      failed = true;
      return;
    }
    const BlockDef& def = it->second;
    std::string local;
    if (const CNode* n = m.get("name")) local = to_string(*n, d_, "name").value_or("");
    if (local.empty()) local = *bname + "_" + std::to_string(++auto_index_);
    long long repeat = 1;
    if (const CNode* r = m.get("repeat")) {
      repeat = to_integer(*r, d_, "repeat").value_or(1);
      if (repeat < 1) {
        d_.error(r->loc, "repeat must be at least 1");
        repeat = 1;
      }
    }
    // arguments: every key must be a parameter; parameters without default are required
    Env benv = env;
    std::vector<std::string> pnames;
    for (const auto& [p, def_value] : def.params) pnames.push_back(p);
    const CNode* args = m.get("args");
    if (args && !args->is_map()) d_.error(args->loc, "args must be a map of block parameters");
    for (const auto& [p, dv] : def.params) {
      const CNode* given = args && args->is_map() ? args->find(p) : nullptr;
      if (given) {
        if (!given->is_scalar()) {
          d_.error(given->loc, "block argument '" + p + "' must be a single value");
          continue;
        }
        benv.emplace_back(p, given->scalar);
      } else if (dv) {
        benv.emplace_back(p, *dv);
      } else {
        d_.error(item.loc, "block '" + *bname + "' needs argument '" + p + "'");
      }
    }
    if (args && args->is_map())
      for (const auto& e : args->entries)
        if (std::find(pnames.begin(), pnames.end(), e.key) == pnames.end()) {
          std::string hint = did_you_mean(e.key, pnames);
          d_.error(e.key_loc, "block '" + *bname + "' has no parameter '" + e.key + "'", {Note{{}, hint.empty() ? "its parameters: " + join(pnames) : hint}});
        }
    m.allow({"inputs", "when"});
    m.finish();
    if (!d_.empty()) {
      failed = true;
      return;
    }
    TensorRef in = prev;
    if (const CNode* inn = item.find("inputs")) {
      std::vector<TensorRef> refs;
      if (!read_inputs(item, scopes, prev, refs) || refs.size() != 1) {
        if (refs.size() > 1) d_.error(inn->loc, "a block takes one input");
        failed = true;
        return;
      }
      in = refs[0];
    }
    for (long long r = 0; r < repeat && !failed; ++r) {
      Env renv = benv;
      renv.emplace_back("repeat_index", std::to_string(r));
      Scope s;
      s.prefix = scopes.back().prefix + local + (repeat > 1 ? "." + std::to_string(r) : "") + ".";
      s.names["input"] = in;
      scopes.push_back(s);
      TensorRef p = in;
      run_layers(*def.layers, renv, scopes, p, depth + 1);
      scopes.pop_back();
      in = p;
    }
    if (failed) return;
    define(scopes, local, item.loc, in);
    prev = in;
  }

  static std::string join(const std::vector<std::string>& v) {
    std::string s;
    for (const auto& x : v) s += (s.empty() ? "" : ", ") + x;
    return s;
  }
};

Shape read_shape(const CNode& n, Diags& d, const std::string& what) {
  Shape s;
  if (!n.is_seq() || n.items.empty()) {
    d.error(n.loc, what + " must be a list of dimensions, e.g. [1, 3, 224, 224]");
    return s;
  }
  for (const auto& i : n.items) {
    auto v = to_integer(i, d, what + " dimension");
    if (v && *v <= 0) d.error(i.loc, what + " dimensions must be positive, got " + std::to_string(*v));
    if (v && *v > 1000000000LL) d.error(i.loc, what + " dimension " + std::to_string(*v) + " is too large (at most 1e9)");
    if (v) s.push_back(*v);
  }
  return s;
}

}  // namespace

const std::vector<std::string> kPrecisionKeys = {"weights_dtype", "kv_dtype", "compute_dtype", "quant_group"};

void read_precision_keys(const CNode& map, Precision& p, Diags& d) {
  if (!map.is_map()) return;
  // an empty value keeps the enclosing one (a zoo model's parameter left at its default "")
  auto given = [&](const char* key) -> const CNode* {
    const CNode* v = map.find(key);
    return v && !(v->is_scalar() && v->scalar.empty()) ? v : nullptr;
  };
  if (const CNode* v = given("weights_dtype"))
    if (auto t = read_dtype(*v, d, "weights_dtype")) p.weights = t;
  if (const CNode* v = given("kv_dtype"))
    if (auto t = read_dtype(*v, d, "kv_dtype")) p.kv = t;
  if (const CNode* v = given("compute_dtype"))
    if (auto t = read_dtype(*v, d, "compute_dtype")) p.compute = t;
  if (const CNode* v = given("quant_group")) {
    auto g = to_integer(*v, d, "quant_group");
    if (g && (*g < 0 || *g > 1000000000LL)) d.error(v->loc, "quant_group must be 0 (no scales) or a positive group size, e.g. 128");
    else if (g) p.quant_group = *g;
  }
}

Network build_network(const CNode& raw, const Env& env, const BuildOptions& opt, Diags& d) {
  Network net;
  MapReader m(raw, keys::map("network"), "network", d);
  if (!m.ok()) return net;
  // substitute everything but the block templates (their parameters are bound on use)
  CNode node = raw;
  node.entries.clear();
  for (const auto& e : raw.entries) {
    if (e.key == "blocks" || e.key == "layers" || e.key == "params") node.entries.push_back(e);
    else node.entries.push_back(CEntry{e.key, e.key_loc, substitute_tree(e.value, env, opt.ev, d)});
  }
  Builder b(opt, d, net);
  b.dtype = opt.dtype;
  if (m.require("name")) net.name = to_string(*node.find("name"), d, "network name").value_or("");
  m.get("description");
  m.get("params");  // a model's parameters: bound before building (see resolve_network)
  if (const CNode* dt = node.find("dtype"))
    if (auto t = read_dtype(*dt, d, "dtype")) b.dtype = *t;
  m.get("dtype");
  b.precision = opt.precision;
  read_precision_keys(node, b.precision, d);
  m.allow(kPrecisionKeys);
  m.get("phase");
  if (const CNode* ph = node.find("phase")) {
    auto s = to_string(*ph, d, "phase");
    if (s && *s != "prefill" && *s != "decode") {
      std::string hint = did_you_mean(*s, {"prefill", "decode"});
      d.error(ph->loc, "unknown phase '" + *s + "'", {Note{{}, hint.empty() ? "phase is prefill (the prompt) or decode (one new token per sequence)" : hint}});
    } else if (s) {
      net.phase = *s;
    }
  }
  const CNode* input = node.find("input");
  const CNode* inputs = node.find("inputs");
  m.get("input");
  m.get("inputs");
  if (input && inputs) d.error(inputs->loc, "give either 'input' (one tensor) or 'inputs' (named tensors), not both");
  else if (input) net.inputs.emplace_back("input", read_shape(*input, d, "input"));
  else if (inputs) {
    if (!inputs->is_map() || inputs->entries.empty()) d.error(inputs->loc, "inputs must map names to shapes, e.g. {x: [1, 3, 224, 224]}");
    else
      for (const auto& e : inputs->entries) net.inputs.emplace_back(e.key, read_shape(e.value, d, "input '" + e.key + "'"));
  } else {
    d.error(raw.loc, "network '" + net.name + "' needs 'input: [N, C, H, W]' (or named 'inputs')");
  }
  if (const CNode* bl = m.get("blocks")) {
    if (!bl->is_map()) d.error(bl->loc, "blocks must map block names to {params, layers}");
    else
      for (const auto& e : bl->entries) {
        BlockDef def;
        def.loc = e.key_loc;
        MapReader bm(e.value, keys::map("block"), "block '" + e.key + "'", d);
        if (const CNode* p = bm.get("params")) {
          if (!p->is_map()) d.error(p->loc, "params must map parameter names to defaults (~ for required)");
          else
            for (const auto& pe : p->entries) {
              if (pe.value.is_null()) def.params.emplace_back(pe.key, std::nullopt);
              else if (pe.value.is_scalar()) def.params.emplace_back(pe.key, pe.value.scalar);
              else d.error(pe.value.loc, "a parameter default must be a single value (or ~ for required)");
            }
        }
        def.layers = bm.require("layers");
        bm.finish();
        if (def.layers) b.blocks[e.key] = def;
      }
  }
  const CNode* layers = m.require("layers");
  m.finish();
  if (!d.empty() || !layers) return net;
  std::vector<Builder::Scope> scopes(1);
  for (size_t i = 0; i < net.inputs.size(); ++i) scopes[0].names[net.inputs[i].first] = TensorRef{-1, static_cast<int>(i)};
  TensorRef prev{-1, 0};
  b.run_layers(*layers, env, scopes, prev, 0);
  return net;
}

double channels_per_group(const Layer& L) {
  if (!L.op || L.in_shapes.empty() || L.in_shapes[0].size() < 2) return 0;
  if (L.op->name == "depthwise_conv2d") return 1;
  for (const AttrSpec& a : L.op->attrs)
    if (a.name == "groups") {
      long long g = L.attrs.has("groups") ? L.attrs.i("groups") : 1;
      return g > 0 ? static_cast<double>(L.in_shapes[0][1]) / static_cast<double>(g) : 0;
    }
  return 0;
}

}  // namespace rsim
