#include "engine/graph/graph.hpp"
#include "engine/graph/graph_detail.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <functional>
#include <map>
#include <unordered_map>

namespace rsim {
using graph_detail::expert_attr;
using graph_detail::flat;

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

// A substituted node as one text (a scalar: itself), to compare a slot's values between points.
void flatten(const CNode& n, std::string& out) {
  switch (n.kind) {
    case CNode::Kind::Null: out += '\x1e'; break;
    case CNode::Kind::Scalar: out += n.scalar; break;
    case CNode::Kind::Seq:
      out += "\x1d[";
      for (const auto& i : n.items) flatten(i, out), out += '\x1f';
      out += ']';
      break;
    case CNode::Kind::Map:
      out += "\x1d{";
      for (const auto& e : n.entries) out += e.key, out += '\x1c', flatten(e.value, out), out += '\x1f';
      out += '}';
      break;
  }
}


struct BlockDef {
  std::vector<std::pair<std::string, std::optional<std::string>>> params;  // name, default
  const CNode* layers = nullptr;
  SourceLoc loc;
};

class Builder {
 public:
  Builder(const BuildOptions& opt, Diags& d, Network& net, NetworkPlan* plan) : opt_(opt), d_(d), net_(net), plan_(plan) {}

  std::map<std::string, BlockDef> blocks;
  DType dtype = DType::fp32;
  bool dtype_fixed = false;      // the network's or settings' dtype was written: a layer's file_dtype yields to it
  bool dtype_from_file = false;  // the network's dtype is its file's (file_dtype)
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
        if (const CNode* rw = raw.is_map() ? raw.find("when") : nullptr) guard(*rw, *when);
        // `when: ${expr}` keeps the layer (or block) only where the condition holds
        auto keep = to_bool(*when, d_, "when");
        if (!keep) {
          failed = true;
          return;
        }
        if (!*keep) continue;
      }
      if (item.find("block")) run_block(item, raw, env, scopes, prev, depth);
      else run_layer(item, raw, scopes, prev);
    }
  }

 private:
  const BuildOptions& opt_;
  Diags& d_;
  Network& net_;
  NetworkPlan* plan_ = nullptr;
  int env_id_ = 0;  // the plan's EnvDef of the bindings in use
  int auto_index_ = 0;

  // A `${…}` that must keep its value for the plan to be re-bound (a name, an op, inputs...).
  void guard(const CNode& raw, const CNode& sub) {
    if (!plan_ || !tree_has_expr(raw)) return;
    NetworkPlan::Slot sl;
    sl.kind = NetworkPlan::SlotKind::Guard;
    sl.raw = &raw;
    sl.env = env_id_;
    sl.value = flat(sub);
    plan_->slots.push_back(std::move(sl));
  }

  // The plan's record of a layer about to be added: its attributes' `${…}` are values, any other
  // key's `${…}` a guard (`when` was recorded by run_layers).
  void record_layer(const CNode& item, const CNode& raw, const Layer& L) {
    if (!plan_ || !raw.is_map() || raw.entries.size() != item.entries.size()) return;
    for (size_t k = 0; k < raw.entries.size(); ++k) {
      const CEntry& e = raw.entries[k];
      if (e.key == "when" || !tree_has_expr(e.value)) continue;
      const AttrSpec* spec = nullptr;
      for (const auto& a : L.op->attrs)
        if (a.name == e.key) spec = &a;
      if (!spec) {
        guard(e.value, item.entries[k].value);
        continue;
      }
      NetworkPlan::Slot sl;
      sl.kind = NetworkPlan::SlotKind::Attr;
      sl.raw = &e.value;
      sl.env = env_id_;
      sl.value = flat(item.entries[k].value);
      sl.layer = net_.layers.size();
      sl.spec = spec;
      const auto& all = L.attrs.all();
      bool held = false;  // the layer holds the attribute at a position re-binding writes to
      for (size_t i = 0; i < all.size(); ++i)
        if (all[i].first == spec->name) sl.index = i, held = true;
      if (!held) sl.kind = NetworkPlan::SlotKind::Guard;
      plan_->slots.push_back(std::move(sl));
    }
  }

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

  void run_layer(const CNode& item, const CNode& raw, std::vector<Scope>& scopes, TensorRef& prev) {
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
    L.dtype_from_file = dtype_from_file;
    if (const CNode* dt = item.find("dtype")) {
      if (auto t = read_dtype(*dt, d_, "dtype")) L.dtype = *t, L.dtype_from_file = false;
    } else if (const CNode* fd = item.find("file_dtype"); fd && !dtype_fixed && !(fd->is_scalar() && fd->scalar.empty())) {
      // the element type the model's file gives this layer (an ONNX tensor's): below every dtype written
      if (auto t = read_dtype(*fd, d_, "file_dtype")) L.dtype = *t, L.dtype_from_file = true;
    }
    L.precision = precision;
    // embedding tables and the LM head (`vocab_weights`) in embedding_dtype, unless the layer says
    if (const CNode* vw = item.find("vocab_weights"); L.precision.embedding && (op->name == "embedding" || (vw && to_bool(*vw, d_, "vocab_weights").value_or(false))))
      L.precision.weights = L.precision.embedding;
    read_precision_keys(item, L.precision, d_);
    if (const CNode* tw = item.find("tied_weights")) L.tied_weights = to_bool(*tw, d_, "tied_weights").value_or(false);
    if (const CNode* sh = item.find("shard")) {
      static const std::pair<const char*, Layer::Shard> modes[] = {
          {"column", Layer::Shard::Column}, {"row", Layer::Shard::Row},         {"mlp", Layer::Shard::Mlp}, {"none", Layer::Shard::None},
          {"partial", Layer::Shard::Partial}, {"reduce", Layer::Shard::Reduce}, {"auto", Layer::Shard::Auto},
          {"vocab", Layer::Shard::Vocab}};
      const std::string v = sh->is_scalar() ? sh->scalar : "";
      bool known = false;
      for (const auto& [name, mode] : modes)
        if (v == name) L.shard = mode, known = true;
      if (!known) d_.error(sh->loc, "unknown shard '" + v + "'", {Note{{}, "shard is column, row, mlp, partial, reduce, vocab, none or auto"}});
      else if (L.shard == Layer::Shard::Vocab && op->name != "embedding" && op->name != "linear")
        d_.error(sh->loc, "shard: vocab splits a vocabulary table: an embedding or the LM head (a linear), not a " + op->name,
                 {Note{{}, "use column, row or none here"}});
    }
    if (const CNode* su = item.find("shard_units")) {
      auto v = to_integer(*su, d_, "shard_units");
      if (v && (*v < 1 || *v > 1000000000LL)) d_.error(su->loc, "shard_units must be 1 to 1e9 (the heads a column split divides)");
      else if (v) L.shard_units = *v;
    }
    if (const CNode* sp = item.find("shared_params")) {
      auto v = to_integer(*sp, d_, "shared_params");
      if (v && (*v < 0 || *v > 1000000000000000LL)) d_.error(sp->loc, "shared_params must be 0 to 1e15 (elements of weights another layer counts)");
      else if (v) L.shared_params = static_cast<double>(*v);
    }
    L.attrs = read_attrs(*op, item, d_, where);
    expert_attr(net_, L);
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
      shard_cost(net_, L);
      if (L.shared_params > 0 && L.cost.params > 0) {  // part of its weights are counted elsewhere: keep the rest
        double keep = std::max(0.0, L.cost.params - L.shared_params) / L.cost.params;
        L.cost.params *= keep;
        L.cost.active_params *= keep;
        L.cost.resident_weight_bytes *= keep;
      }
    } catch (const ShapeError& e) {
      std::string shapes;
      for (const auto& s : L.in_shapes) shapes += (shapes.empty() ? "" : ", ") + shape_str(s);
      std::vector<Note> notes = {Note{{}, "input shape" + std::string(L.in_shapes.size() == 1 ? "" : "s") + ": " + shapes}};
      for (const auto& n : e.notes) notes.push_back(Note{{}, n});
      // a message about one of the layer's attributes ("groups (3) must divide …") points at its
      // value; any other at the layer
      SourceLoc at = item.loc;
      const std::string msg = e.what();
      if (size_t k = msg.find_first_of(" ("); k != std::string::npos && k > 0 && item.is_map()) {
        const std::string word = msg.substr(0, k);
        bool is_attr = std::any_of(L.op->attrs.begin(), L.op->attrs.end(), [&](const AttrSpec& a) { return a.name == word; });
        if (const CNode* v = is_attr ? item.find(word) : nullptr) at = v->loc;
      }
      d_.error(at, where + ": " + msg, notes);
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
    record_layer(item, raw, L);
    net_.layers.push_back(std::move(L));
    prev = ref;
  }

  void run_block(const CNode& item, const CNode& raw, const Env& env, std::vector<Scope>& scopes, TensorRef& prev, int depth) {
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
    // the plan: block arguments with `${…}` are values that bind the block's parameters; any other
    // key's `${…}` is a guard
    const int outer_env = env_id_;
    int block_env = 0;
    if (plan_ && raw.is_map() && raw.entries.size() == item.entries.size()) {
      for (size_t k = 0; k < raw.entries.size(); ++k)
        if (raw.entries[k].key != "when" && raw.entries[k].key != "args") guard(raw.entries[k].value, item.entries[k].value);
      NetworkPlan::EnvDef def_env;
      def_env.parent = outer_env;
      const CNode* rargs = raw.find("args");
      for (const auto& [p, dv] : def.params) {
        const CNode* given = args && args->is_map() ? args->find(p) : nullptr;
        const CNode* rgiven = rargs && rargs->is_map() ? rargs->find(p) : nullptr;
        NetworkPlan::EnvAdd add;
        add.name = p;
        if (given && rgiven && has_expr(rgiven->scalar) && rgiven->is_scalar()) {
          NetworkPlan::Slot sl;
          sl.kind = NetworkPlan::SlotKind::Env;
          sl.raw = rgiven;
          sl.env = outer_env;
          sl.value = given->scalar;
          add.slot = static_cast<int>(plan_->slots.size());
          plan_->slots.push_back(std::move(sl));
        } else {
          if (rgiven) guard(*rgiven, *given);
          add.value = given ? given->scalar : dv.value_or("");
        }
        def_env.adds.push_back(std::move(add));
      }
      block_env = static_cast<int>(plan_->envs.size());
      plan_->envs.push_back(std::move(def_env));
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
      if (plan_) {
        NetworkPlan::EnvDef rep_env;
        rep_env.parent = block_env;
        rep_env.adds.push_back(NetworkPlan::EnvAdd{"repeat_index", std::to_string(r), -1});
        env_id_ = static_cast<int>(plan_->envs.size());
        plan_->envs.push_back(std::move(rep_env));
      }
      run_layers(*def.layers, renv, scopes, p, depth + 1);
      env_id_ = outer_env;
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

namespace graph_detail {
std::string flat(const CNode& n) {
  if (n.is_scalar()) return n.scalar;
  std::string s;
  flatten(n, s);
  return s;
}
}  // namespace graph_detail

const std::vector<std::string> kPrecisionKeys = {"weights_dtype", "kv_dtype", "compute_dtype", "quant_group", "embedding_dtype"};

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
  if (const CNode* v = given("embedding_dtype"))
    if (auto t = read_dtype(*v, d, "embedding_dtype")) p.embedding = t;
  if (const CNode* v = given("quant_group")) {
    auto g = to_integer(*v, d, "quant_group");
    if (g && (*g < 0 || *g > 1000000000LL)) d.error(v->loc, "quant_group must be 0 (no scales) or a positive group size, e.g. 128");
    else if (g) p.quant_group = *g;
  }
}

Network build_network(const CNode& raw, const Env& env, const BuildOptions& opt, Diags& d, NetworkPlan* plan) {
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
  if (plan) {
    *plan = NetworkPlan{};
    plan->envs.emplace_back();
    plan->last_env = env;
    // the network's own keys: input dimensions are values, anything else a guard
    for (size_t k = 0; k < raw.entries.size(); ++k) {
      const CEntry& e = raw.entries[k];
      const CNode& sub = node.entries[k].value;
      if (e.key == "blocks" || e.key == "layers" || e.key == "params" || !tree_has_expr(e.value)) continue;
      auto dims = [&](const CNode& rshape, const CNode& sshape, size_t input) {
        if (!rshape.is_seq() || !sshape.is_seq() || rshape.items.size() != sshape.items.size()) return false;
        for (size_t i = 0; i < rshape.items.size(); ++i) {
          const CNode& r = rshape.items[i];
          if (!tree_has_expr(r)) continue;
          if (!r.is_scalar()) return false;
          NetworkPlan::Slot sl;
          sl.kind = NetworkPlan::SlotKind::InputDim;
          sl.raw = &r;
          sl.value = sshape.items[i].scalar;
          sl.layer = input;
          sl.index = i;
          plan->slots.push_back(std::move(sl));
        }
        return true;
      };
      bool ok = false;
      if (e.key == "input") ok = dims(e.value, sub, 0);
      else if (e.key == "inputs" && e.value.is_map() && sub.is_map() && e.value.entries.size() == sub.entries.size()) {
        ok = true;
        for (size_t i = 0; i < e.value.entries.size() && ok; ++i) ok = dims(e.value.entries[i].value, sub.entries[i].value, i);
      }
      if (!ok) {
        NetworkPlan::Slot sl;
        sl.raw = &e.value;
        sl.value = flat(sub);
        plan->slots.push_back(std::move(sl));
      }
    }
  }
  Builder b(opt, d, net, plan);
  b.dtype = opt.dtype;
  b.dtype_fixed = opt.dtype_given || node.find("dtype");
  if (m.require("name")) net.name = to_string(*node.find("name"), d, "network name").value_or("");
  m.get("description");
  m.get("params");  // a model's parameters: bound before building (see resolve_network)
  if (const CNode* dt = node.find("dtype")) {
    if (auto t = read_dtype(*dt, d, "dtype")) b.dtype = *t;
  } else if (const CNode* fd = node.find("file_dtype"); fd && !opt.dtype_given && !(fd->is_scalar() && fd->scalar.empty())) {
    // the dtype the model's file stores (a Hugging Face config's torch_dtype): below settings.dtype
    if (auto t = read_dtype(*fd, d, "file_dtype")) b.dtype = *t, b.dtype_from_file = true;
  }
  m.get("dtype");
  m.get("file_dtype");
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
  net.parallel = opt.parallel;
  if (const CNode* pa = m.get("parallel")) read_parallel(*pa, net.parallel, d);
  if (const CNode* ig = m.get("ignored")) {
    if (!ig->is_map()) d.error(ig->loc, "ignored must map op types to node counts, e.g. {Dropout: 2}");
    else
      for (const auto& e : ig->entries) {
        auto n = to_integer(e.value, d, "ignored '" + e.key + "'");
        if (n && (*n < 1 || *n > 1000000000LL)) d.error(e.value.loc, "ignored '" + e.key + "' must count 1 to 1e9 nodes");
        else if (n) net.ignored.emplace_back(e.key, static_cast<int>(*n));
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

}  // namespace rsim
