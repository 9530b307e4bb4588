// A network over parallel.pipeline stages: its layers cut into stages by whole blocks, and a
// step of micro-batches through them (GPipe).
#include "engine/eval/bind.hpp"

#include <algorithm>
#include <string_view>

namespace rsim {

namespace {

// The block a layer belongs to for a pipeline's cuts: its name up to the second '.' ("layer.3" of
// "layer.3.mlp.down_proj", "stage2.0" of "stage2.0.conv1", "lm_head" of itself)
std::string_view block_of(std::string_view name) {
  const size_t a = name.find('.');
  if (a == std::string_view::npos) return name;
  const size_t b = name.find('.', a + 1);
  return b == std::string_view::npos ? name : name.substr(0, b);
}

}  // namespace

// Splits a network into parallel.pipeline stages of whole blocks (runs of layers of one block_of:
// a decoder layer, a repeat's copy), contiguous and balanced by parameters: each block goes to the
// stage its middle parameter falls in (by FLOPs when no layer has parameters, by count when none
// has FLOPs): a pipeline spreads the weights, and a decode step's time follows them. Then what each
// stage sends on: every tensor a later stage reads, once per reading stage (network inputs are at
// every stage). With one stage (micro-batches alone) every layer is in it. False, with an error,
// when a stage would hold no layer.
bool plan_pipeline(const Network& net, PipelinePlan& pp, Diags& d, const SourceLoc& loc) {
  const size_t stages = static_cast<size_t>(net.parallel.pipeline), n = net.layers.size();
  auto cost_of = [&](size_t i) -> const OpCost& {
    const Layer& L = net.layers[i];
    return L.borrowed && L.same_as >= 0 ? net.layers[static_cast<size_t>(L.same_as)].cost : L.cost;
  };
  pp.stage_of.assign(n, 0);
  pp.stages.assign(stages, PipelinePlan::Stage{});
  if (stages > 1) {
    double params = 0, flops = 0;
    for (size_t i = 0; i < n; ++i) params += cost_of(i).params, flops += cost_of(i).flops;
    auto weight = [&](size_t i) { return params > 0 ? cost_of(i).params : flops > 0 ? cost_of(i).flops : 1.0; };
    const double total = params > 0 ? params : flops > 0 ? flops : static_cast<double>(n);
    std::vector<size_t> held(stages, 0);
    double before = 0;
    size_t at = 0;
    for (size_t i = 0; i < n;) {
      size_t j = i + 1;  // the block: [i, j)
      double w = weight(i);
      while (j < n && block_of(net.layers[j].name) == block_of(net.layers[i].name)) w += weight(j++);
      const size_t s = std::min(stages - 1, static_cast<size_t>(static_cast<double>(stages) * (before + w / 2) / total));
      at = std::max(at, s);
      for (size_t k = i; k < j; ++k) pp.stage_of[k] = static_cast<int>(at);
      held[at] += j - i;
      before += w;
      i = j;
    }
    for (size_t s = 0; s < stages; ++s)
      if (!held[s]) {
        d.error(loc, "network '" + net.name + "' cannot be split into " + std::to_string(stages) + " pipeline stages: stage " + std::to_string(s) +
                         " would hold no layer",
                {Note{{}, "stages are runs of whole blocks (a decoder layer, a repeat's copy) balanced by parameters; use fewer stages"}});
        return false;
      }
    // (layer, output, reading stage): each sent once
    thread_local std::vector<std::tuple<int, int, int>> sent;
    sent.clear();
    for (size_t j = 0; j < n; ++j)
      for (const TensorRef& r : net.layers[j].inputs)
        if (r.layer >= 0 && pp.stage_of[static_cast<size_t>(r.layer)] < pp.stage_of[j]) sent.emplace_back(r.layer, r.output, pp.stage_of[j]);
    std::sort(sent.begin(), sent.end());
    sent.erase(std::unique(sent.begin(), sent.end()), sent.end());
    for (const auto& [i, out, to] : sent) {
      const OpCost& c = cost_of(static_cast<size_t>(i));
      PipelinePlan::Stage& from = pp.stages[static_cast<size_t>(pp.stage_of[static_cast<size_t>(i)])];
      from.send_bytes += static_cast<size_t>(out) < c.output_bytes.size() ? c.output_bytes[static_cast<size_t>(out)] : 0;
      from.sends += 1;
      (void)to;
    }
  }
  return true;
}

// A step of micro_batches m through the stages (GPipe: fill, then drain): the network's time (one
// micro-batch through every layer, with its launches and collectives) shared among the stages in
// proportion to their layers' roofline times, each stage's sends added (point to point on `link`:
// bytes / bandwidth + latency per tensor; or hidden behind it under overlap: full); the step takes
// the sum of the stage times plus (m − 1) times the slowest. The bubble: the share of the P GPUs'
// time idle, 1 − m · Σ t / (P · step), (P − 1) / (m + P − 1) for equal stages. The work columns
// become the step's, the memory columns the fullest stage's.
void finish_pipeline(const Network& net, const PipelinePlan& pp, const InterconnectLevel* link, SummaryRow& sum) {
  const double m = static_cast<double>(net.parallel.micro_batches), stages = static_cast<double>(pp.stages.size());
  double seq = 0, dseq = 0;
  for (const auto& st : pp.stages) seq += st.time, dseq += st.derated;
  double total = 0, slowest = 0, dtotal = 0, dslowest = 0, send_bytes = 0, send_time = 0;
  double share = 0, dshare = 0;  // the slowest stage's share of the network's time (each roof's)
  const PipelinePlan::Stage* fullest = nullptr;
  double most = -1, params = 0;
  for (const auto& st : pp.stages) {
    const double f = seq > 0 ? st.time / seq : 1 / stages, df = dseq > 0 ? st.derated / dseq : 1 / stages;
    double t = seq > 0 ? sum.time_s * st.time / seq : sum.time_s / stages;
    double dt = dseq > 0 ? sum.derated_time_s * st.derated / dseq : sum.derated_time_s / stages;
    const double c = link && st.send_bytes > 0 ? st.send_bytes / link->bandwidth_bytes_per_s + st.sends * link->latency_s : 0;
    if (net.parallel.overlap_full) t = std::max(t, c), dt = std::max(dt, c);
    else t += c, dt += c;
    if (t > slowest) share = f;
    if (dt > dslowest) dshare = df;
    total += t, slowest = std::max(slowest, t);
    dtotal += dt, dslowest = std::max(dslowest, dt);
    send_bytes += st.send_bytes, send_time += c;
    const double footprint = st.weights + m * st.kv + st.activations;
    if (footprint > most) most = footprint, fullest = &st;
    params = std::max(params, st.params);
  }
  // the parts on the slowest stage's GPUs: m times its share of the network's parts, its sends
  // (what they add to its time), and the bubble: the rest of the step
  const double net_time = sum.time_s, net_dtime = sum.derated_time_s;
  sum.time_s = total + (m - 1) * slowest;
  sum.derated_time_s = dtotal + (m - 1) * dslowest;
  auto on_slowest = [m](TimeParts& p, double f, double stage_time, double network_time, double step) {
    p.scale(f);
    p.comm += std::max(0.0, stage_time - f * network_time);
    p.scale(m);
    p.bubble = std::max(0.0, step - m * stage_time);
  };
  on_slowest(sum.parts, share, slowest, net_time, sum.time_s);
  on_slowest(sum.dparts, dshare, dslowest, net_dtime, sum.derated_time_s);
  sum.pipeline_bubble = sum.time_s > 0 ? 1 - m * total / (stages * sum.time_s) : 0;
  sum.params_per_gpu = params;
  if (fullest) sum.weight_footprint_bytes = fullest->weights, sum.kv_cache_bytes = m * fullest->kv, sum.activation_bytes = fullest->activations;
  sum.macs *= m, sum.flops *= m, sum.bytes *= m, sum.tokens *= m, sum.batch *= m;
  sum.comm_bytes = m * (sum.comm_bytes + send_bytes);
  sum.comm_time_s = m * (sum.comm_time_s + send_time);
}

}  // namespace rsim
