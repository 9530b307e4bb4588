#include "engine/graph/graph.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <functional>
#include <map>
#include <unordered_map>

namespace rsim {

namespace {

constexpr size_t kMaxLayers = 1'000'000;
void expert_attr(const Network& net, Layer& L);

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

std::string flat(const CNode& n) {
  if (n.is_scalar()) return n.scalar;
  std::string s;
  flatten(n, s);
  return s;
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

namespace {

// What a layer's shapes and cost depend on (besides flops_per_mac): a hash, and equality.
// A hash of what same_work compares (equal work, equal hash). Run for every layer at every sweep
// point: one multiply per value, and an attribute that is not set (most of an operator's) adds
// only its position.
size_t work_hash(const Layer& L, unsigned kv_inputs) {
  size_t h = reinterpret_cast<size_t>(L.op);
  auto mix = [&h](size_t v) { h = (h ^ v) * 0x9e3779b97f4a7c15ULL; h ^= h >> 29; };
  mix(static_cast<size_t>(L.dtype) | static_cast<size_t>(kv_inputs) << 8 | static_cast<size_t>(L.tied_weights) << 40);
  for (const auto& sh : L.in_shapes) {
    mix(sh.size());
    for (auto d : sh) mix(static_cast<size_t>(d));
  }
  size_t k = 0;
  for (const auto& [n, v] : L.attrs.all()) {
    ++k;
    if (!v.set) continue;
    mix(k);
    mix(static_cast<size_t>(v.i) ^ static_cast<size_t>(v.b) << 63);
    if (v.f != 0) {  // (its bits: the table lives for one process)
      uint64_t bits;
      std::memcpy(&bits, &v.f, sizeof bits);
      mix(static_cast<size_t>(bits));
    }
    if (!v.s.empty()) mix(std::hash<std::string>()(v.s));
    for (auto i : v.ints) mix(static_cast<size_t>(i));
  }
  return h;
}

// Equal vectors of a few numbers: a plain loop (memcmp's call costs more than these compares).
template <class T>
bool same_values(const std::vector<T>& x, const std::vector<T>& y) {
  if (x.size() != y.size()) return false;
  for (size_t i = 0; i < x.size(); ++i)
    if (x[i] != y[i]) return false;
  return true;
}

// Copies for the per-point loop of rebind_network, where a layer's vectors keep their sizes from
// point to point: element by element (vector's operator= is a generic copy with a call to memmove,
// several times the cost for a shape of four numbers).
template <class T>
void assign_values(std::vector<T>& to, const std::vector<T>& from) {
  const size_t n = from.size();
  if (to.size() != n) {
    to = from;
    return;
  }
  T* a = to.data();
  const T* b = from.data();
  for (size_t i = 0; i < n; ++i) a[i] = b[i];
}

void assign_shapes(std::vector<Shape>& to, const std::vector<Shape>& from) {
  if (to.size() != from.size()) {
    to = from;
    return;
  }
  for (size_t i = 0; i < from.size(); ++i) assign_values(to[i], from[i]);
}

// parallel.expert on a mixture: its experts spread over that many GPUs (the operator's
// expert_parallel attribute, which the operator's cost reads)
void expert_attr(const Network& net, Layer& L) {
  if (net.parallel.expert <= 1 || L.op->name != "moe") return;
  const auto& all = L.attrs.all();
  for (size_t i = 0; i < all.size(); ++i)
    if (all[i].first == "expert_parallel") L.attrs.set_int(i, net.parallel.expert);
}

void assign_cost(OpCost& to, const OpCost& from) {
  // every field: a field added to OpCost must be added here (the size check catches it)
  static_assert(sizeof(OpCost) == 19 * sizeof(double) + 2 * sizeof(std::vector<double>), "assign_cost copies every field of OpCost");
  to.shard = from.shard, to.comm_bytes = from.comm_bytes, to.all_to_all_bytes = from.all_to_all_bytes, to.all_gather_bytes = from.all_gather_bytes;
  to.quantized_weight_bytes = from.quantized_weight_bytes;
  to.macs = from.macs, to.flops = from.flops, to.macs_executed = from.macs_executed, to.flops_executed = from.flops_executed;
  to.params = from.params, to.weight_bytes = from.weight_bytes;
  assign_values(to.input_bytes, from.input_bytes);
  assign_values(to.output_bytes, from.output_bytes);
  to.active_params = from.active_params, to.scale_bytes = from.scale_bytes, to.kv_read_bytes = from.kv_read_bytes;
  to.kv_write_bytes = from.kv_write_bytes, to.scratch_bytes = from.scratch_bytes, to.resident_weight_bytes = from.resident_weight_bytes;
  to.kv_cache_bytes = from.kv_cache_bytes, to.activation_bytes = from.activation_bytes;
}

// The same precisions and attributes (of two layers of the same operator).
bool same_settings(const Layer& a, const Layer& b) {
  auto dt = [](const std::optional<DType>& t) { return t ? static_cast<int>(*t) : -1; };
  if (dt(a.precision.weights) != dt(b.precision.weights) || dt(a.precision.kv) != dt(b.precision.kv) ||
      dt(a.precision.compute) != dt(b.precision.compute) || a.precision.quant_group != b.precision.quant_group)
    return false;
  const auto& x = a.attrs.all();
  const auto& y = b.attrs.all();
  if (x.size() != y.size()) return false;
  for (size_t i = 0; i < x.size(); ++i) {  // the same operator: the same attributes in the same order
    const AttrValue& u = x[i].second;
    const AttrValue& v = y[i].second;
    if (!u.set && !v.set) continue;  // most of an operator's attributes (their values are the defaults)
    if (u.set != v.set || u.i != v.i || !(u.f == v.f || (u.f != u.f && v.f != v.f)) || u.b != v.b || u.s.size() != v.s.size() ||
        (!u.s.empty() && u.s != v.s) || !same_values(u.ints, v.ints))
      return false;
  }
  return true;
}

bool same_work(const Layer& a, unsigned kva, const Layer& b, unsigned kvb) {
  if (a.op != b.op || a.dtype != b.dtype || kva != kvb || a.tied_weights != b.tied_weights || a.in_shapes.size() != b.in_shapes.size()) return false;
  // under tensor parallelism the same shapes may be split differently
  if (a.shard != b.shard || a.shard_units != b.shard_units || a.cost.shard != b.cost.shard || a.out_share != b.out_share) return false;
  for (size_t k = 0; k < a.in_shapes.size(); ++k)
    if (!same_values(a.in_shapes[k], b.in_shapes[k])) return false;
  return same_settings(a, b);
}

// The kv-cache inputs of a layer as a bit mask (inputs made by an operator with kv_outputs).
unsigned kv_mask(const Network& net, const Layer& L) {
  unsigned m = 0;
  for (size_t k = 0; k < L.inputs.size() && k < 32; ++k) {
    const TensorRef& r = L.inputs[k];
    if (r.layer >= 0 && static_cast<size_t>(r.layer) < net.layers.size() && net.layers[static_cast<size_t>(r.layer)].op->kv_outputs) m |= 1u << k;
  }
  return m;
}

// The table of the kinds of work of a network's layers: open-addressed, layer index + 1 by work
// hash (kv and hashes per layer, filled as layers are looked up). Sized for `n` layers.
size_t work_table_size(size_t n) {
  size_t cap = 16;
  while (cap < 2 * n) cap *= 2;
  return cap;
}
void clear_work_table(std::vector<size_t>& memo, size_t n) { memo.assign(work_table_size(n), 0); }

// The first earlier layer that does layer i's work, or -1 after adding layer i as the first of
// its kind.
int first_of_work(const Network& net, size_t i, std::vector<size_t>& memo, std::vector<size_t>& hashes, const std::vector<unsigned>& kv,
                  std::vector<size_t>* used = nullptr) {
  const Layer& L = net.layers[i];
  const size_t h = hashes[i] = work_hash(L, kv[i]);
  const size_t mask = memo.size() - 1;
  size_t at = h & mask;
  for (; memo[at] != 0; at = (at + 1) & mask) {
    const size_t j = memo[at] - 1;
    if (hashes[j] == h && same_work(L, kv[i], net.layers[j], kv[j])) return static_cast<int>(j);
  }
  memo[at] = i + 1;
  if (used) used->push_back(at);  // (for the caller to clear: rebind_network at its next point)
  return -1;
}

// The text of a slot at new bindings; nullopt when substituting fails.
std::optional<std::string> slot_text(const CNode& raw, const Env& env, ExprEvaluator& ev, CNode* tree) {
  if (raw.is_scalar()) {
    try {
      return substitute(raw.scalar, env, ev, raw.loc);
    } catch (const ConfigError&) {
      return std::nullopt;
    }
  }
  Diags d;
  CNode t = substitute_tree(raw, env, ev, d);
  if (!d.empty()) return std::nullopt;
  std::string f = flat(t);
  if (tree) *tree = std::move(t);
  return f;
}

}  // namespace

// The slots' groups and the names their texts read (see NetworkPlan::Group).
static void make_groups(NetworkPlan& plan) {
  auto name_id = [&](const std::string& n) {
    auto it = std::find(plan.names.begin(), plan.names.end(), n);
    if (it != plan.names.end()) return static_cast<int>(it - plan.names.begin());
    plan.names.push_back(n);
    return static_cast<int>(plan.names.size() - 1);
  };
  std::map<std::pair<int, std::string>, int> by_text;
  plan.group_of.assign(plan.slots.size(), -1);
  plan.binds.assign(plan.slots.size(), {});
  auto read_names = [&](const CNode& n, NetworkPlan::Group& g, auto& self) -> void {
    if (n.is_scalar())
      for (const auto& name : expr_names(n.scalar, g.opaque)) g.names.push_back(name_id(name));
    for (const auto& item : n.items) self(item, g, self);
    for (const auto& e : n.entries) self(e.value, g, self);
  };
  // The bindings a scalar's text reads its names from: the innermost of its EnvDef and their
  // parents that binds one of them (the network's own, 0, when none does). Texts that read the
  // same names from the same bindings are equal at every point: the same slot of each copy of a
  // repeated block (whose copies differ only in repeat_index) is one group, unless it reads
  // repeat_index. An opaque text may read any name: it keeps its own bindings. `fixed`: every name
  // it reads is bound by a block to a constant (repeat_index, a constant argument), so its text
  // is the same at every point.
  auto reads_from = [&](const NetworkPlan::Slot& sl, bool& fixed) {
    bool opaque = false;
    const std::vector<std::string> read = expr_names(sl.raw->scalar, opaque);
    fixed = !opaque;
    if (opaque) return sl.env;
    // walking out from the slot's own bindings, each name is bound where first met (within one
    // EnvDef, by its last binding of the name: later bindings hide earlier ones)
    int from = 0;
    std::vector<char> bound(read.size(), 0);
    for (int e = sl.env; e > 0; e = plan.envs[static_cast<size_t>(e)].parent) {
      const auto& adds = plan.envs[static_cast<size_t>(e)].adds;
      for (auto a = adds.rbegin(); a != adds.rend(); ++a) {
        const size_t k = static_cast<size_t>(std::find(read.begin(), read.end(), a->name) - read.begin());
        if (k == read.size() || bound[k]) continue;
        bound[k] = 1, fixed = fixed && a->slot < 0;
        if (!from) from = e;
      }
    }
    fixed = fixed && std::all_of(bound.begin(), bound.end(), [](char b) { return b != 0; });  // (else read from the point's bindings)
    return from;
  };
  for (size_t i = 0; i < plan.slots.size(); ++i) {
    const NetworkPlan::Slot& sl = plan.slots[i];
    // a subtree (a list of inputs, an [h, w] pair) is a group of its own
    bool fixed = false;
    auto [it, fresh] = sl.raw->is_scalar() ? by_text.try_emplace({reads_from(sl, fixed), sl.raw->scalar}, static_cast<int>(plan.groups.size()))
                                           : std::pair{by_text.end(), true};
    if (fresh) {
      NetworkPlan::Group g;
      g.fixed = fixed;
      g.tree = !sl.raw->is_scalar();
      read_names(*sl.raw, g, read_names);
      plan.groups.push_back(std::move(g));
    }
    plan.group_of[i] = fresh ? static_cast<int>(plan.groups.size() - 1) : it->second;
    plan.slots[i].int_attr = sl.kind == NetworkPlan::SlotKind::Attr && sl.spec && sl.spec->type == AttrType::Int && sl.raw->is_scalar();
  }
  for (const auto& def : plan.envs)
    for (const auto& a : def.adds)
      if (a.slot >= 0) plan.binds[static_cast<size_t>(a.slot)].push_back(name_id(a.name));
  plan.changed.assign(plan.names.size(), 0);
}

// The plan's repeats (NetworkPlan::Repeat), from its flat graph (ref_begin, refs, kv_mask) and
// groups. Each run is the one starting at a layer that covers the most layers (the shortest period
// of those); runs do not overlap. Bounded work: periods up to 512 layers, a few hundred compares
// per layer in all.
static void find_repeats(NetworkPlan& plan, const Network& net) {
  plan.repeats.clear();
  const size_t n = net.layers.size();
  if (n < 2) return;
  // per layer: the attributes its slots set, as (attribute position, slot group), sorted
  std::vector<std::vector<std::pair<size_t, int>>> set_by(n);
  for (size_t si = 0; si < plan.slots.size(); ++si) {
    const NetworkPlan::Slot& sl = plan.slots[si];
    // (an attribute of a fixed group never changes: compared as a constant one)
    if (sl.kind == NetworkPlan::SlotKind::Attr && sl.layer < n && !plan.groups[static_cast<size_t>(plan.group_of[si])].fixed)
      set_by[sl.layer].emplace_back(sl.index, plan.group_of[si]);
  }
  for (auto& v : set_by) std::sort(v.begin(), v.end());
  auto refs_of = [&](size_t i) { return std::pair{plan.refs.begin() + static_cast<std::ptrdiff_t>(plan.ref_begin[i]), plan.refs.begin() + static_cast<std::ptrdiff_t>(plan.ref_begin[i + 1])}; };
  // what a layer is besides its input shapes, with its inputs relative to itself: equal for a layer
  // and its copy
  std::vector<size_t> sig(n);
  for (size_t i = 0; i < n; ++i) {
    const Layer& L = net.layers[i];
    size_t h = reinterpret_cast<size_t>(L.op);
    auto mix = [&h](size_t v) { h = (h ^ v) * 0x9e3779b97f4a7c15ULL; h ^= h >> 29; };
    mix(static_cast<size_t>(L.dtype) | static_cast<size_t>(plan.kv_mask[i]) << 8 | static_cast<size_t>(L.tied_weights) << 40 | static_cast<size_t>(L.touches_kv) << 41);
    for (auto [b, e] = refs_of(i); b != e; ++b) mix(b->layer < 0 ? ~static_cast<size_t>(b->output) : (i - static_cast<size_t>(b->layer)) << 20 | static_cast<size_t>(b->output));
    for (const auto& [at, g] : set_by[i]) mix(at << 32 | static_cast<size_t>(g));
    sig[i] = h;
  }
  // layer i repeats layer j = i - p: what sig hashes, compared, and no input further back than p
  auto repeats = [&](size_t i, size_t p) {
    const size_t j = i - p;
    const Layer& a = net.layers[i];
    const Layer& b = net.layers[j];
    if (sig[i] != sig[j] || !a.op || a.op != b.op || a.dtype != b.dtype || plan.kv_mask[i] != plan.kv_mask[j] || a.tied_weights != b.tied_weights ||
        a.touches_kv != b.touches_kv || a.shared_params != b.shared_params || set_by[i] != set_by[j])
      return false;
    auto [ai, ae] = refs_of(i);
    auto [bi, be] = refs_of(j);
    if (ae - ai != be - bi) return false;
    for (; ai != ae; ++ai, ++bi) {
      if ((ai->layer < 0) != (bi->layer < 0) || ai->output != bi->output) return false;
      if (ai->layer >= 0 && (i - static_cast<size_t>(ai->layer) != j - static_cast<size_t>(bi->layer) || i - static_cast<size_t>(ai->layer) > p)) return false;
    }
    return same_settings(a, b);
  };
  // the next layer of the same signature, for the periods worth trying
  std::vector<size_t> next(n, n);
  {
    std::unordered_map<size_t, size_t> last;
    for (size_t i = n; i-- > 0;) {
      auto [it, fresh] = last.try_emplace(sig[i], i);
      if (!fresh) next[i] = it->second, it->second = i;
    }
  }
  constexpr size_t kMaxPeriod = 512;
  size_t budget = 256 * n + 100000;  // compares left
  for (size_t b = 0; b + 1 < n && budget > 0;) {
    size_t best_p = 0, best_copies = 0;
    for (size_t q = next[b]; q < n && q - b <= kMaxPeriod && budget > 0; q = next[q]) {
      const size_t p = q - b;
      if (b + 2 * p > n) break;
      size_t copies = 1;
      for (bool whole = true; whole && b + (copies + 1) * p <= n; copies += whole) {
        for (size_t k = 0; k < p && whole; ++k) {
          if (budget == 0) whole = false;
          else --budget, whole = repeats(b + copies * p + k, p);
        }
      }
      if (copies >= 2 && copies * p > best_copies * best_p) best_p = p, best_copies = copies;
      if (best_copies * best_p == n - b) break;  // to the last layer: no longer run
    }
    if (best_copies >= 2) {
      NetworkPlan::Repeat& R = plan.repeats.emplace_back();
      R.begin = b, R.period = best_p, R.copies = best_copies;
      b += best_p * best_copies;
    } else {
      ++b;
    }
  }
}

void mark_same_work(Network& net) {
  const size_t n = net.layers.size();
  std::vector<unsigned> kv(n);
  std::vector<size_t> hashes(n), memo;
  clear_work_table(memo, n);
  for (size_t i = 0; i < n; ++i) {
    Layer& L = net.layers[i];
    L.same_as = -1;
    if (!L.op) continue;
    kv[i] = kv_mask(net, L);
    L.same_as = first_of_work(net, i, memo, hashes, kv);
  }
}

// Gives every borrowed layer of `net` its own shapes and cost again (those of its same_as).
static void materialize_twins(Network& net) {
  for (Layer& L : net.layers) {
    if (!L.borrowed) continue;
    const Layer& t = net.layers[static_cast<size_t>(L.same_as)];  // never borrowed itself: the first of its kind
    assign_shapes(L.in_shapes, t.in_shapes);
    assign_shapes(L.out_shapes, t.out_shapes);
    assign_cost(L.cost, t.cost);
    L.borrowed = false;
  }
}

// At a repeat's second copy, in rebind_network's layer loop (holder set for the layers before
// it): its inputs from layers before it have the shapes of the first copy's inputs `period`
// layers further back (its other inputs are the same network inputs).
static bool copies_agree(const NetworkPlan& plan, const Network& net, const NetworkPlan::Repeat& R) {
  const size_t second = R.begin + R.period;
  for (size_t i = second; i < second + R.period; ++i)
    for (size_t q = plan.ref_begin[i]; q < plan.ref_begin[i + 1]; ++q) {
      const TensorRef& r = plan.refs[q];
      if (r.layer < 0 || static_cast<size_t>(r.layer) >= second) continue;
      const Layer& x = net.layers[plan.holder[static_cast<size_t>(r.layer)]];
      const Layer& y = net.layers[plan.holder[static_cast<size_t>(r.layer) - R.period]];
      const size_t o = static_cast<size_t>(r.output);
      if (o >= x.out_shapes.size() || o >= y.out_shapes.size()) return false;
      if (&x != &y && !same_values(x.out_shapes[o], y.out_shapes[o])) return false;
    }
  return true;
}

bool rebind_network(NetworkPlan& plan, const Env& env, const BuildOptions& opt, Network& net, bool& changed, bool borrow) {
  changed = false;
  if (plan.borrowed && !borrow) {
    materialize_twins(net), plan.borrowed = false;
    for (auto& R : plan.repeats) R.held = false;
  }
  if (plan.group_of.size() != plan.slots.size()) make_groups(plan);
  ++plan.stamp;
  // the names whose values changed since the last point (all of them, when the names differ)
  std::fill(plan.changed.begin(), plan.changed.end(), 0);
  bool all = env.size() != plan.last_env.size();
  for (size_t i = 0; i < env.size() && !all; ++i) {
    if (env[i].first != plan.last_env[i].first) {
      all = true;
    } else if (env[i].second != plan.last_env[i].second) {
      auto it = std::find(plan.names.begin(), plan.names.end(), env[i].first);
      if (it != plan.names.end()) plan.changed[static_cast<size_t>(it - plan.names.begin())] = 1;
      plan.last_env[i].second = env[i].second;
    }
  }
  if (all) plan.last_env = env;
  // the bindings of each EnvDef, made when a slot first needs them (after the Env slots they use)
  std::vector<Env>& envs = plan.bindings;
  envs.resize(plan.envs.size());
  std::vector<char>& made = plan.made;
  made.assign(plan.envs.size(), 0);
  auto env_of = [&](int k, auto& self) -> const Env& {
    if (k == 0) return env;
    size_t u = static_cast<size_t>(k);
    if (!made[u]) {
      const NetworkPlan::EnvDef& def = plan.envs[u];
      envs[u] = self(def.parent, self);
      for (const auto& a : def.adds) envs[u].emplace_back(a.name, a.slot < 0 ? a.value : plan.slots[static_cast<size_t>(a.slot)].value);
      made[u] = 1;
    }
    return envs[u];
  };
  std::vector<char>& dirty = plan.dirty;
  std::vector<NetworkPlan::Updates>& updates = plan.updates;
  if (dirty.size() != net.layers.size()) {
    dirty.assign(net.layers.size(), 0);
    updates.assign(net.layers.size(), NetworkPlan::Updates{});
  } else {  // only the layers a slot set at the last point hold anything
    for (size_t l : plan.touched) dirty[l] = 0, updates[l] = NetworkPlan::Updates{};
  }
  plan.touched.clear();
  bool any = false;
  // a subtree's slot text, substituted (its group is its own, so every read of it below follows
  // its assignment in the same iteration); one node for the loop, not one built per slot
  CNode tree;
  // Substitutes slot si again where a name its text reads changed (or `force`: a slot left stale
  // at earlier points) and sets what it holds: -1 when a guard changed or a value is invalid, 1
  // when its value changed, 0 otherwise
  auto apply = [&](size_t si, bool force) -> int {
    NetworkPlan::Slot& sl = plan.slots[si];
    NetworkPlan::Group& g = plan.groups[static_cast<size_t>(plan.group_of[si])];
    if (g.stamp != plan.stamp) {
      g.stamp = plan.stamp;
      g.dirty = all || g.opaque || std::any_of(g.names.begin(), g.names.end(), [&](int n) { return plan.changed[static_cast<size_t>(n)] != 0; });
      g.text.reset();
      g.parsed = false;
    }
    if (!g.dirty && !force) return 0;  // the names it reads have their last values: so has its text
    if (!g.text) {
      g.text = slot_text(*sl.raw, env_of(sl.env, env_of), opt.ev, g.tree ? &tree : nullptr);
      if (!g.text) return -1;
    }
    const std::string* v = &*g.text;  // the slot's text at this point
    // an integer attribute (the common case, as parse_attr reads it) compares its value
    const bool int_attr = sl.int_attr;
    if (int_attr) {
      if (!g.parsed) g.parsed = true, g.integer = parse_integer(*v);  // once per group and point
      if (sl.has_int && g.integer && *g.integer == sl.int_value) return 0;
    }
    if (!int_attr && *v == sl.value) return 0;
    switch (sl.kind) {
      case NetworkPlan::SlotKind::Guard: return -1;
      case NetworkPlan::SlotKind::Env: break;
      case NetworkPlan::SlotKind::Attr: {
        if (sl.layer >= net.layers.size()) return -1;
        if (int_attr) {
          const std::optional<long long>& iv = g.integer;
          if (!iv || *iv > 1000000000LL || *iv < -1000000000LL) return -1;
          net.layers[sl.layer].attrs.set_int(sl.index, *iv);
          sl.has_int = true, sl.int_value = *iv;
        } else {
          Diags d;
          AttrValue av;
          if (sl.raw->is_scalar()) tree = CNode::make_scalar(*v, sl.raw->loc);
          if (!parse_attr(*sl.spec, tree, av, d, "") || !d.empty()) return -1;
          net.layers[sl.layer].attrs.set(sl.index, std::move(av));  // its position, found when the plan was made
        }
        if (!dirty[sl.layer]) plan.touched.push_back(sl.layer);
        dirty[sl.layer] = 1;
        if (NetworkPlan::Updates& u = updates[sl.layer]; u.n < 2) {
          u.at[u.n] = static_cast<unsigned>(sl.index);
          u.group[u.n] = plan.group_of[si];
          ++u.n;
        } else {
          u.n = 3;  // too many to compare: the full comparison decides
        }
        break;
      }
      case NetworkPlan::SlotKind::InputDim: {
        if (!g.parsed) g.parsed = true, g.integer = parse_integer(*v);  // (to_integer's reading, without its node)
        const std::optional<long long>& dim = g.integer;
        if (!dim || *dim <= 0 || *dim > 1000000000LL || sl.layer >= net.inputs.size() || sl.index >= net.inputs[sl.layer].second.size()) return -1;
        net.inputs[sl.layer].second[sl.index] = *dim;
        break;
      }
    }
    if (!int_attr) sl.value = *v;
    for (int n : plan.binds[si]) plan.changed[static_cast<size_t>(n)] = 1;  // a block argument: its parameter changed
    return 1;
  };
  for (size_t si = 0; si < plan.slots.size(); ++si) {
    NetworkPlan::Slot& sl = plan.slots[si];
    // an attribute of a repeat's later copy, borrowing: left stale until the copy is looked at
    // (its layer borrows the first copy's work, whose attribute is the same; see the layer loop)
    if (sl.repeat >= 0) {
      NetworkPlan::Repeat& R = plan.repeats[static_cast<size_t>(sl.repeat)];
      if (borrow) {
        R.stale = true;
        si = sl.run_end - 1;
        continue;
      }
      const int r = apply(si, R.stale);
      if (r < 0) return false;
      any = any || r > 0;
      continue;
    }
    const int r = apply(si, false);
    if (r < 0) return false;
    any = any || r > 0;
  }
  if (!borrow)
    for (auto& R : plan.repeats) R.stale = false;  // (each slot of theirs substituted above)
  if (!any) return true;
  changed = true;
  // shapes and costs, in layer order: only where attributes or input shapes changed; a layer
  // that does the same work as an earlier one (the same operator, attributes, input shapes and
  // precisions: a repeated block) takes its shapes and cost instead of inferring them again
  const size_t n = net.layers.size();
  std::vector<unsigned>& kv = plan.kv;
  std::vector<size_t>& hashes = plan.hashes;
  std::vector<size_t>& memo = plan.memo;
  kv.resize(n);      // (each layer's set before a later one reads it)
  hashes.resize(n);  // (set for a layer when it enters the table, which is cleared here)
  if (memo.size() != work_table_size(n)) {
    clear_work_table(memo, n);
  } else {  // only the entries the last point made
    for (size_t at : plan.memo_used) memo[at] = 0;
  }
  plan.memo_used.clear();
  if (plan.ref_begin.size() != n + 1) {  // the graph, read once from the layers (a layer's first cache lines are the costly part of the loop)
    plan.ref_begin.assign(1, 0);
    plan.refs.clear();
    plan.kv_mask.assign(n, 0);
    for (size_t i = 0; i < n; ++i) {
      const Layer& L = net.layers[i];
      if (L.in_shapes.size() != L.inputs.size()) return false;
      for (size_t k = 0; k < L.inputs.size(); ++k) {
        const TensorRef& r = L.inputs[k];
        if (r.layer >= static_cast<int>(i)) return false;
        if (r.layer >= 0 && net.layers[static_cast<size_t>(r.layer)].op->kv_outputs && k < 32) plan.kv_mask[i] |= 1u << k;
        plan.refs.push_back(r);
      }
      plan.ref_begin.push_back(plan.refs.size());
    }
    find_repeats(plan, net);
    for (size_t si = 0; si < plan.slots.size(); ++si) {  // the attribute slots of the repeats' later copies
      NetworkPlan::Slot& sl = plan.slots[si];
      if (sl.kind != NetworkPlan::SlotKind::Attr || plan.groups[static_cast<size_t>(plan.group_of[si])].tree) continue;
      for (size_t ri = 0; ri < plan.repeats.size(); ++ri) {
        NetworkPlan::Repeat& R = plan.repeats[ri];
        if (sl.layer >= R.begin + R.period && sl.layer < R.begin + R.period * R.copies) sl.repeat = static_cast<int>(ri), R.copy_slots.push_back(static_cast<int>(si));
      }
    }
    for (size_t si = plan.slots.size(); si-- > 0;) {
      NetworkPlan::Slot& sl = plan.slots[si];
      const bool joins = si + 1 < plan.slots.size() && plan.slots[si + 1].repeat == sl.repeat;
      sl.run_end = joins ? plan.slots[si + 1].run_end : si + 1;
    }
  }
  std::vector<size_t>& holder = plan.holder;
  holder.resize(n);
  std::vector<const Shape*>& sources = plan.sources;
  // The last two shapes found equal: a layer's shapes are final once the loop has passed it, so
  // the pair stays equal for the rest of the loop
  const Shape* equal_a = nullptr;
  const Shape* equal_b = nullptr;
  size_t next_repeat = 0;  // the first repeat whose second copy is not reached yet
  for (size_t i = 0; i < n; ++i) {
    // At a repeat's second copy (borrowing): when its inputs from before it have the shapes of the
    // first copy's, every later copy does the first copy's work, layer by layer (each reads its
    // copy's outputs, or earlier ones through the first copy's: by induction the same shapes). Its
    // layers borrow those of the first copy's first of their kind, without a look at each.
    if (next_repeat < plan.repeats.size() && i == plan.repeats[next_repeat].begin + plan.repeats[next_repeat].period) {
      NetworkPlan::Repeat& R = plan.repeats[next_repeat++];
      const bool was = R.held;
      R.held = borrow && copies_agree(plan, net, R);
      if (!R.held && R.stale) {  // its layers are looked at one by one: their attributes of this point first
        for (int si : R.copy_slots)
          if (apply(static_cast<size_t>(si), true) < 0) return false;
        R.stale = false;
      }
      // the first of their kind of the first copy's layers: the later copies' layers still borrow
      // theirs from the last point when the repeat held then too and these are the same
      bool kept = was && R.held;
      R.firsts.resize(R.period);
      for (size_t q = 0; q < R.period && R.held; ++q) {
        const int t = net.layers[R.begin + q].same_as;
        const int f = t >= 0 ? t : static_cast<int>(R.begin + q);
        kept = kept && R.firsts[q] == f;
        R.firsts[q] = f;
      }
      if (kept) {
        i = R.begin + R.period * R.copies - 1;
        continue;
      }
      if (R.held) {
        const size_t end = R.begin + R.period * R.copies;
        for (size_t k = i; k < end; ++k) {
          Layer& C = net.layers[k];
          const int t = net.layers[k - R.period].same_as;
          C.same_as = t >= 0 ? t : static_cast<int>(k - R.period);
          C.borrowed = true;
          holder[k] = static_cast<size_t>(C.same_as);
          kv[k] = plan.kv_mask[k];
        }
        plan.borrowed = true;
        i = end - 1;
        continue;
      }
    }
    Layer& L = net.layers[i];
    bool same = !dirty[i];
    const unsigned kv_inputs = plan.kv_mask[i];
    holder[i] = i;
    sources.clear();
    for (size_t q = plan.ref_begin[i]; q < plan.ref_begin[i + 1]; ++q) {
      const TensorRef& r = plan.refs[q];
      if (r.layer < 0) {
        if (static_cast<size_t>(r.output) >= net.inputs.size()) return false;
        sources.push_back(&net.inputs[static_cast<size_t>(r.output)].second);
      } else {
        const Layer& src = net.layers[holder[static_cast<size_t>(r.layer)]];  // a borrowed layer's shapes are its twin's
        if (static_cast<size_t>(r.output) >= src.out_shapes.size()) return false;
        sources.push_back(&src.out_shapes[static_cast<size_t>(r.output)]);
      }
    }
    kv[i] = kv_inputs;
    // the first layer of each kind of work is in the table; a later one of the same kind copies
    // it. A layer that did the same work as an earlier one at the last point is compared with that
    // one first (most still do: a repeated block stays repeated), without hashing it; the table
    // still holds the first layer of every kind, which never takes this path.
    const int before = L.same_as;
    L.same_as = -1;
    bool quick = false;
    if (before >= 0 && static_cast<size_t>(before) < i) {
      const size_t j = static_cast<size_t>(before);
      // Layer j did the same work as this one at the last point. When it is still the first of
      // its kind and both had the same attributes set from the same groups (the same texts, read
      // by the same attribute specs), their attributes are still equal, and nothing else a
      // point changes (operator, dtypes and precisions are guards; kv inputs are the graph's):
      // only their input shapes can differ.
      quick = net.layers[j].same_as < 0 && updates[i] == updates[j] && sources.size() == net.layers[j].in_shapes.size() && [&] {
        for (size_t k = 0; k < sources.size(); ++k) {
          const Shape* twin_in = &net.layers[j].in_shapes[k];
          if (sources[k] == equal_a && twin_in == equal_b) continue;  // (a chain of twins: the same two shapes each time)
          if (!same_values(*sources[k], *twin_in)) return false;
          equal_a = sources[k], equal_b = twin_in;
        }
        return true;
      }();
      if (quick && borrow) {  // still its twin's work: nothing of its own is kept up to date
        L.same_as = before;
        L.borrowed = plan.borrowed = true;
        holder[i] = j;
        continue;
      }
    }
    if (L.borrowed) {  // its stored shapes and cost are an older point's: it is computed again
      L.borrowed = false;
      same = false;
    }
    for (size_t k = 0; k < sources.size(); ++k) {
      if (!same_values(L.in_shapes[k], *sources[k])) {
        assign_values(L.in_shapes[k], *sources[k]);
        same = false;
      }
    }
    if (before >= 0 && static_cast<size_t>(before) < i) {
      const size_t j = static_cast<size_t>(before);
      const size_t first = net.layers[j].same_as >= 0 ? static_cast<size_t>(net.layers[j].same_as) : j;
      if (quick || same_work(L, kv_inputs, net.layers[first], kv[first])) L.same_as = static_cast<int>(first);
    }
    if (L.same_as < 0) L.same_as = first_of_work(net, i, memo, hashes, kv, &plan.memo_used);
    if (L.same_as >= 0 && borrow) {
      L.borrowed = plan.borrowed = true;
      holder[i] = static_cast<size_t>(L.same_as);
      continue;
    }
    if (L.same_as >= 0 && !same) {
      assign_shapes(L.out_shapes, net.layers[static_cast<size_t>(L.same_as)].out_shapes);
      assign_cost(L.cost, net.layers[static_cast<size_t>(L.same_as)].cost);
      same = true;
    }
    if (same) continue;
    expert_attr(net, L);
    OpArgs args{L.attrs, L.in_shapes, L.dtype, L.precision, kv_inputs};
    try {
      L.out_shapes = L.op->infer(args);
      for (const auto& sh : L.out_shapes)
        for (auto dim : sh)
          if (dim <= 0 || dim > 1000000000000LL) return false;
      layer_cost(*L.op, args, L.out_shapes, opt.flops_per_mac, L.cost);
      if (L.tied_weights) L.cost.params = L.cost.active_params = L.cost.resident_weight_bytes = 0;
      shard_cost(net, L);
    } catch (const ShapeError&) {
      return false;
    } catch (const ConfigError&) {
      return false;
    }
  }
  return true;
}

void read_parallel(const CNode& node, Parallelism& p, Diags& d) {
  MapReader m(node, keys::map("parallel"), "parallel", d);
  auto count = [&](const char* k, long long most, long long& to) {
    const CNode* v = m.get(k);
    if (!v) return false;
    if (auto n = to_integer(*v, d, k)) {
      if (*n < 1 || *n > most) d.error(v->loc, std::string("parallel.") + k + " must be 1 to " + std::to_string(most) + ", got " + std::to_string(*n));
      else to = *n;
    }
    return true;
  };
  count("tensor", 4096, p.tensor);
  count("pipeline", 4096, p.pipeline);
  count("micro_batches", 1000000, p.micro_batches);
  const bool expert = count("expert", 4096, p.expert);
  const bool data = count("data", 1000000, p.data);
  if (expert && !data && p.data % p.expert != 0) p.data = p.expert;  // the experts' replicas
  if (p.data % p.expert != 0) {
    const CNode* v = m.get(data ? "data" : "expert");
    d.error(v ? v->loc : node.loc,
            "parallel.data = " + std::to_string(p.data) + " is not a multiple of parallel.expert = " + std::to_string(p.expert),
            {Note{{}, "the experts are spread over data-parallel replicas, each serving its own batch: give data a multiple of expert (or leave it out: it defaults to expert)"}});
  }
  if (const CNode* v = m.get("overlap"))
    if (auto s = to_string(*v, d, "overlap")) {
      if (*s == "full") p.overlap_full = true;
      else if (*s == "none") p.overlap_full = false;
      else d.error(v->loc, "unknown overlap '" + *s + "'", {Note{{}, "overlap is none (default) or full"}});
    }
  m.finish();
}

namespace {

// Expert parallelism on a mixture (its cost already one GPU's: its experts, as the operator's
// expert_parallel attribute says): the parameters it holds, and the all-to-all that sends each of
// its tokens' top-k copies to the GPUs of their experts and back. The T GPUs of a tensor-parallel
// replica hold the tokens whole and dispatch a 1/T share each.
void expert_share(const Network& net, Layer& L) {
  const long long g = L.attrs.i("expert_parallel");
  if (g <= 1 || L.in_shapes.empty() || L.in_shapes[0].empty()) return;
  OpCost& c = L.cost;
  const double e = static_cast<double>(L.attrs.i("experts")), held = std::ceil(e / static_cast<double>(g));
  const double dm = static_cast<double>(L.in_shapes[0].back()), f = static_cast<double>(L.attrs.i("intermediate"));
  const double expert_params = (L.attrs.b("gated") ? 3 : 2) * dm * f;
  if (c.params > 0) c.shard *= std::max(0.0, c.params - (e - held) * expert_params) / c.params;
  const double tokens = elements(L.in_shapes[0]) / dm, k = static_cast<double>(L.attrs.i("top_k"));
  const double a2a = 2 * tokens * k * dm * dtype_bytes(L.dtype) / static_cast<double>(net.parallel.tensor);
  c.all_to_all_bytes = a2a;
  c.comm_bytes += a2a;
}

void tensor_share(const Network& net, Layer& L);

}  // namespace

void shard_cost(const Network& net, Layer& L) {
  L.out_share = 1;
  if (net.parallel.tensor > 1) tensor_share(net, L);
  if (net.parallel.expert > 1 && L.op->name == "moe") expert_share(net, L);
}

namespace {

void tensor_share(const Network& net, Layer& L) {
  const long long t = net.parallel.tensor;
  // the share of each input one GPU holds; the layer's work share: its own split, else that of its
  // first split input (an elementwise layer, rope, attention over split heads)
  double in_share[32];
  double first_split = 1;
  for (size_t k = 0; k < L.inputs.size() && k < 32; ++k) {
    const TensorRef& r = L.inputs[k];
    in_share[k] = r.layer >= 0 && static_cast<size_t>(r.layer) < net.layers.size() ? net.layers[static_cast<size_t>(r.layer)].out_share : 1;
    if (in_share[k] < 1 && first_split == 1) first_split = in_share[k];
  }
  const double whole = 1.0 / static_cast<double>(t);
  double work = 1, out = 1;
  bool reduce = false;
  switch (L.shard) {
    case Layer::Shard::Column:
      work = out = L.shard_units > 0 ? std::ceil(static_cast<double>(L.shard_units) / static_cast<double>(t)) / static_cast<double>(L.shard_units) : whole;
      break;
    case Layer::Shard::Row: work = first_split < 1 ? first_split : whole, reduce = true; break;
    case Layer::Shard::Mlp: work = whole, reduce = true; break;
    case Layer::Shard::Partial: work = first_split < 1 ? first_split : whole; break;  // a partial sum, reduced later
    case Layer::Shard::Reduce: reduce = true; break;  // sums partial sums: all-reduces its output
    case Layer::Shard::None: break;
    case Layer::Shard::Auto: work = out = first_split; break;
    case Layer::Shard::Vocab: {  // ceil(vocab / T) rows of the table per GPU; the output whole after its collective
      const char* rows = L.op->name == "embedding" ? "vocab" : "out_features";
      const long long units = L.shard_units > 0 ? L.shard_units : L.attrs.has(rows) ? L.attrs.i(rows) : 0;
      work = units > 0 ? std::ceil(static_cast<double>(units) / static_cast<double>(t)) / static_cast<double>(units) : whole;
      reduce = L.op->name == "embedding";  // the rows a GPU lacks are zeros in its output: summed
      break;
    }
  }
  if (work == 1 && !reduce) return;  // replicated: every GPU does all of it
  // a layer split by its input holds all of its constants (RoPE's tables); a split layer 1/T
  const double weights = L.shard == Layer::Shard::Auto ? 1 : work;
  OpCost& c = L.cost;
  const double scratch_held = c.activation_bytes - (c.input_total() - c.kv_read_bytes) - (c.output_total() - c.kv_write_bytes);
  if (reduce) c.comm_bytes = c.output_total();  // the whole output, summed over the GPUs
  const bool gather = L.shard == Layer::Shard::Vocab && !reduce;
  if (gather) c.comm_bytes = c.all_gather_bytes = c.output_total();  // the whole output, gathered from the shards
  for (double* f : {&c.macs, &c.flops, &c.macs_executed, &c.flops_executed, &c.scratch_bytes, &c.kv_cache_bytes}) *f *= work;
  for (double* f : {&c.weight_bytes, &c.scale_bytes, &c.resident_weight_bytes, &c.quantized_weight_bytes}) *f *= weights;
  c.shard = weights;
  double kv_read = 0;
  const unsigned kv = kv_mask(net, L);
  for (size_t k = 0; k < c.input_bytes.size() && k < L.inputs.size() && k < 32; ++k) {
    c.input_bytes[k] *= in_share[k];
    if (kv >> k & 1u) kv_read += c.input_bytes[k];
  }
  c.kv_read_bytes = kv_read;
  for (double& b : c.output_bytes) b *= gather ? work : out;  // (an LM head writes its shard of the logits)
  c.kv_write_bytes *= out;
  c.activation_bytes = (c.input_total() - c.kv_read_bytes) + (c.output_total() - c.kv_write_bytes) + scratch_held * work;
  L.out_share = out;
}

}  // namespace

}  // namespace rsim
