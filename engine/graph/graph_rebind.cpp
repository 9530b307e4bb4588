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
using graph_detail::kv_mask;

namespace graph_detail {
// The kv-cache inputs of a layer as a bit mask (inputs made by an operator with kv_outputs)
unsigned kv_mask(const Network& net, const Layer& L) {
  unsigned m = 0;
  for (size_t k = 0; k < L.inputs.size() && k < 32; ++k) {
    const TensorRef& r = L.inputs[k];
    if (r.layer >= 0 && static_cast<size_t>(r.layer) < net.layers.size() && net.layers[static_cast<size_t>(r.layer)].op->kv_outputs) m |= 1u << k;
  }
  return m;
}
}  // namespace graph_detail

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

namespace {

// The names whose values changed since the last point, marked in plan.changed; true when the
// names themselves differ (all of them changed)
bool note_changed_names(NetworkPlan& plan, const Env& env) {
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
  return all;
}

// A point's slots set on the network (rebind_network's first half): each slot's text substituted
// again where a name it reads changed, and what it holds (an attribute, an input dimension, a
// binding) set
struct SlotSetter {
  NetworkPlan& plan;
  const Env& env;
  const BuildOptions& opt;
  Network& net;
  bool all;  // every name changed
  // a subtree's slot text, substituted (its group is its own, so every read of it below follows
  // its assignment in the same iteration); one node for the loop, not one built per slot
  CNode tree;
  const Env& env_of(int k);
  int apply(size_t si, bool force);
};

// The bindings of EnvDef k, made when a slot first needs them (after the Env slots they use)
const Env& SlotSetter::env_of(int k) {
  if (k == 0) return env;
  size_t u = static_cast<size_t>(k);
  if (!plan.made[u]) {
    const NetworkPlan::EnvDef& def = plan.envs[u];
    plan.bindings[u] = env_of(def.parent);
    for (const auto& a : def.adds) plan.bindings[u].emplace_back(a.name, a.slot < 0 ? a.value : plan.slots[static_cast<size_t>(a.slot)].value);
    plan.made[u] = 1;
  }
  return plan.bindings[u];
}

// Substitutes slot si again where a name its text reads changed (or `force`: a slot left stale
// at earlier points) and sets what it holds: -1 when a guard changed or a value is invalid, 1
// when its value changed, 0 otherwise
int SlotSetter::apply(size_t si, bool force) {
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
    g.text = slot_text(*sl.raw, env_of(sl.env), opt.ev, g.tree ? &tree : nullptr);
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
      if (!plan.dirty[sl.layer]) plan.touched.push_back(sl.layer);
      plan.dirty[sl.layer] = 1;
      if (NetworkPlan::Updates& u = plan.updates[sl.layer]; u.n < 2) {
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
}

// Every slot set at this point (a repeat's later copies' attributes, borrowing: left stale until
// the copy is looked at): -1 when a guard changed or a value is invalid, 1 when a value changed, 0 otherwise
int set_slots(SlotSetter& set, bool borrow) {
  NetworkPlan& plan = set.plan;
  bool any = false;
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
      const int r = set.apply(si, R.stale);
      if (r < 0) return -1;
      any = any || r > 0;
      continue;
    }
    const int r = set.apply(si, false);
    if (r < 0) return -1;
    any = any || r > 0;
  }
  if (!borrow)
    for (auto& R : plan.repeats) R.stale = false;  // (each slot of theirs substituted above)
  return any ? 1 : 0;
}

// The graph, read once from the layers (a layer's first cache lines are the costly part of the
// loop): each layer's inputs and kv-cache inputs, the repeats and their later copies' attribute
// slots; false when a layer reads a later one or its shapes do not match its inputs
bool read_graph(NetworkPlan& plan, const Network& net) {
  const size_t n = net.layers.size();
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
  return true;
}

// A layer's shapes and cost inferred again (false: its shapes are invalid at this point)
bool infer_layer(Network& net, Layer& L, unsigned kv_inputs, const BuildOptions& opt) {
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
  return true;
}

// At a repeat's second copy, layer i (borrowing): when its inputs from before it have the shapes of
// the first copy's, every later copy does the first copy's work, layer by layer (each reads its
// copy's outputs, or earlier ones through the first copy's: by induction the same shapes). Its
// layers borrow those of the first copy's first of their kind, without a look at each. Returns
// the last layer so passed (the loop goes on after it), -2 when the copies are to be looked at one
// by one, -1 when a slot of theirs is invalid
long long borrow_repeat(SlotSetter& set, NetworkPlan::Repeat& R, size_t i, bool borrow) {
  NetworkPlan& plan = set.plan;
  Network& net = set.net;
  const bool was = R.held;
  R.held = borrow && copies_agree(plan, net, R);
  if (!R.held && R.stale) {  // its layers are looked at one by one: their attributes of this point first
    for (int si : R.copy_slots)
      if (set.apply(static_cast<size_t>(si), true) < 0) return -1;
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
  if (kept) return static_cast<long long>(R.begin + R.period * R.copies - 1);
  if (R.held) {
    const size_t end = R.begin + R.period * R.copies;
    for (size_t k = i; k < end; ++k) {
      Layer& C = net.layers[k];
      const int t = net.layers[k - R.period].same_as;
      C.same_as = t >= 0 ? t : static_cast<int>(k - R.period);
      C.borrowed = true;
      plan.holder[k] = static_cast<size_t>(C.same_as);
      plan.kv[k] = plan.kv_mask[k];
    }
    plan.borrowed = true;
    return static_cast<long long>(end - 1);
  }
  return -2;
}

}  // namespace

bool rebind_network(NetworkPlan& plan, const Env& env, const BuildOptions& opt, Network& net, bool& changed, bool borrow) {
  changed = false;
  if (plan.borrowed && !borrow) {
    materialize_twins(net), plan.borrowed = false;
    for (auto& R : plan.repeats) R.held = false;
  }
  if (plan.group_of.size() != plan.slots.size()) make_groups(plan);
  ++plan.stamp;
  // the names whose values changed since the last point (all of them, when the names differ)
  const bool all = note_changed_names(plan, env);
  plan.bindings.resize(plan.envs.size());  // (each EnvDef's, made when a slot first needs them)
  plan.made.assign(plan.envs.size(), 0);
  std::vector<char>& dirty = plan.dirty;
  std::vector<NetworkPlan::Updates>& updates = plan.updates;
  if (dirty.size() != net.layers.size()) {
    dirty.assign(net.layers.size(), 0);
    updates.assign(net.layers.size(), NetworkPlan::Updates{});
  } else {  // only the layers a slot set at the last point hold anything
    for (size_t l : plan.touched) dirty[l] = 0, updates[l] = NetworkPlan::Updates{};
  }
  plan.touched.clear();
  SlotSetter set{plan, env, opt, net, all, CNode{}};
  const int slots = set_slots(set, borrow);
  if (slots < 0) return false;
  if (slots == 0) return true;
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
  if (plan.ref_begin.size() != n + 1 && !read_graph(plan, net)) return false;  // (once)
  std::vector<size_t>& holder = plan.holder;
  holder.resize(n);
  std::vector<const Shape*>& sources = plan.sources;
  // The last two shapes found equal: a layer's shapes are final once the loop has passed it, so
  // the pair stays equal for the rest of the loop
  const Shape* equal_a = nullptr;
  const Shape* equal_b = nullptr;
  size_t next_repeat = 0;  // the first repeat whose second copy is not reached yet
  for (size_t i = 0; i < n; ++i) {
    // at a repeat's second copy: its later copies borrowed at once, where they do the first copy's work
    if (next_repeat < plan.repeats.size() && i == plan.repeats[next_repeat].begin + plan.repeats[next_repeat].period) {
      const long long last = borrow_repeat(set, plan.repeats[next_repeat++], i, borrow);
      if (last == -1) return false;
      if (last >= 0) {
        i = static_cast<size_t>(last);
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
    if (!infer_layer(net, L, kv_inputs, opt)) return false;
  }
  return true;
}

}  // namespace rsim
