#include "engine/graph/graph.hpp"
#include "engine/graph/graph_detail.hpp"

#include <algorithm>
#include <cmath>

namespace rsim {
using graph_detail::kv_mask;

namespace graph_detail {

// parallel.expert on a mixture: its experts spread over that many GPUs (the operator's
// expert_parallel attribute, which the operator's cost reads)
void expert_attr(const Network& net, Layer& L) {
  if (net.parallel.expert <= 1 || L.op->name != "moe") return;
  const auto& all = L.attrs.all();
  for (size_t i = 0; i < all.size(); ++i)
    if (all[i].first == "expert_parallel") L.attrs.set_int(i, net.parallel.expert);
}

}  // namespace graph_detail

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
