// One layer's roofline on one platform, priced afresh (evaluate_point_once's layer loop takes a
// layer that repeats an earlier one's work from that one's): its bytes under the memory model, an
// algorithm the platform's library runs instead, its efficiency (a script's model, a calibration's
// rule, a measured shape's factor), a GPU kernel model's time, its collectives, the contention a
// calibration fitted, a script's metrics, and the parts of its derated times that rest on assumed
// figures.
#include "engine/eval/bind.hpp"

#include <algorithm>
#include <cmath>
#include <string>

#include "engine/hardware/kernel_model.hpp"

namespace rsim {

namespace {

// The work and bytes of a convolution under an algorithm the platform declares (`algorithms:`):
// - conv3x3 winograd_f2x2 / winograd_f4x4, for a dense 3×3 stride-1 undilated convolution:
//   F(m×m, 3×3) multiplies (m + 2)² times per m×m output tile per input and output channel, so
//   MACs = N · ceil(Hout/m) · ceil(Wout/m) · (m + 2)² · Cin · Cout (4 / 9 and 1 / 4 of the direct
//   count on whole tiles); the FLOPs it bounds are flops_per_mac × those;
// - conv1x1_strided touched_input, for a 1×1 convolution with stride sh × sw > 1 and no padding: it
//   reads one input pixel in sh · sw, so its input bytes are the input's / (sh · sw).
// Returns whether one applied; `cost` (a row's copy) then carries the executed counts.
bool apply_algorithm(const Platform& pl, const Layer& L, const Settings& st, double& work, double& bytes, OpCost* cost) {
  if (!L.op || L.op->name != "conv2d" || L.in_shapes.empty() || L.out_shapes.empty()) return false;
  const auto& k = L.attrs.ints("kernel");
  const auto& s = L.attrs.ints("stride");
  const auto& dl = L.attrs.ints("dilation");
  const Shape& x = L.in_shapes[0];
  const Shape& y = L.out_shapes[0];
  if (k.size() != 2 || s.size() != 2 || dl.size() != 2 || x.size() != 4 || y.size() != 4) return false;
  const DType cd = L.compute_dtype();
  if (k[0] == 3 && k[1] == 3 && s[0] == 1 && s[1] == 1 && dl[0] == 1 && dl[1] == 1 && L.attrs.i("groups") == 1) {
    const std::string& a = pl.algorithm_for("conv3x3", cd);
    const long long m = a == "winograd_f2x2" ? 2 : a == "winograd_f4x4" ? 4 : 0;
    if (!m) return false;
    const double tiles = static_cast<double>(y[0]) * static_cast<double>((y[2] + m - 1) / m) * static_cast<double>((y[3] + m - 1) / m);
    const double macs = tiles * static_cast<double>((m + 2) * (m + 2)) * static_cast<double>(x[1]) * static_cast<double>(y[1]);
    work = st.flops_per_mac * macs;
    if (cost) cost->macs_executed = macs, cost->flops_executed = work;
    return true;
  }
  const AttrValue& pad = L.attrs.at("padding");
  const bool no_pad = pad.s == "valid" || (pad.s.empty() && std::all_of(pad.ints.begin(), pad.ints.end(), [](long long v) { return v == 0; }));
  if (k[0] == 1 && k[1] == 1 && (s[0] > 1 || s[1] > 1) && no_pad && pl.algorithm_for("conv1x1_strided", cd) == "touched_input") {
    if (st.memory_model != MemoryModel::InputsWeightsOutputs || L.cost.input_bytes.empty()) return false;
    const double in = L.cost.input_bytes[0], touched = in / static_cast<double>(s[0] * s[1]);
    bytes -= in - touched;
    if (cost) cost->input_bytes[0] = touched;
    return true;
  }
  return false;
}

// Its tensor parallelism's collectives (the all-reduce of its output, or the all-gather of a
// vocabulary-split LM head's logits) and a mixture's all-to-alls, after it, on both roofs (the
// derated through the platform's collective model), and the part of them from assumed figures
void price_collectives(const LayerPricing& lp, const OpCost& cost, Row& r, LayerExtra& extra) {
  const Parallelism& par = lp.par;
  const InterconnectLevel *link = lp.link, *expert_link = lp.expert_link;
  const Platform& pl = lp.pl;
  if (cost.comm_bytes > 0 && (link || expert_link)) {  // the all-reduce of its output, after it; a mixture's all-to-all
    // tensor parallelism's: the all-reduce of its output, or the all-gather of a vocabulary-split LM head's logits
    auto tp_time = [&](double latency, const KernelModel& km) {  // (km: a collective model, on the derated roofs only)
      const double reduced = cost.comm_bytes - cost.all_to_all_bytes - cost.all_gather_bytes;
      CollectiveTime c = all_reduce_on(km, reduced, par.tensor, link->bandwidth_bytes_per_s, latency, link == &pl.interconnect.front());
      c.time_s += all_gather_on(km, cost.all_gather_bytes, par.tensor, link->bandwidth_bytes_per_s, latency);
      return c;
    };
    // the dispatch of the routed tokens and their combine: two all-to-alls of half the payload
    auto a2a_time = [&](const KernelModel& km) {
      return expert_link && cost.all_to_all_bytes > 0 ? 2 * all_to_all_on(km, cost.all_to_all_bytes / 2, par.expert, expert_link->bandwidth_bytes_per_s, expert_link->latency_s) : 0;
    };
    static const KernelModel links;  // the theoretical roofs: the links' formulas
    const CollectiveTime ct = link ? tp_time(link->latency_s, pl.kernel_model) : CollectiveTime{};
    const double a2a = a2a_time(pl.kernel_model), comm0 = (link ? tp_time(link->latency_s, links).time_s : 0) + a2a_time(links);
    for (RoofPoint* rp : {&r.theoretical, &r.derated}) {
      const double c = rp == &r.theoretical ? comm0 : ct.time_s + a2a;
      if (c > std::max(rp->compute_time_s, rp->memory_time_s)) rp->bound = Bound::Interconnect;
      rp->comm_time_s = c;
      rp->time_s += c;
    }
    // the part of it from assumed figures: all of a collective on a link whose bandwidth is
    // assumed, else its latency terms where the latency is
    for (const InterconnectLevel* lk : {link, expert_link}) {
      if (!lk) continue;
      const bool tp = lk == link;
      const double t = tp ? ct.time_s : a2a;
      if (lk->basis == Basis::Assumption) extra.acomm += t;
      else if (lk->latency_basis == Basis::Assumption && t > 0)
        extra.acomm += t - (tp ? tp_time(0, pl.kernel_model).time_s
                               : 2 * all_to_all_on(pl.kernel_model, cost.all_to_all_bytes / 2, par.expert, lk->bandwidth_bytes_per_s, 0));
      if (link == expert_link) break;
    }
    if (lp.full_rows)
      r.collective = collective_text(cost.all_gather_bytes > 0, ct, a2a, par.tensor, link ? link->name : "", par.expert, expert_link ? expert_link->name : "");
  }
}

}  // namespace

const MemoryLevel* price_layer(const LayerPricing& lp, const Layer& L, const ComputeRoof& roof, Row& r, double& host, LayerExtra& extra, bool& algorithm) {
  const Platform& pl = lp.pl;
  const Settings& st = lp.st;
  const OpCost& cost = L.cost;
  Diags& d = lp.d;
  r.bytes = layer_bytes(L.cost, lp.mm);
  const MemoryLevel* lmem = lp.auto_level ? pl.level_for(layer_bytes(L.cost, MemoryModel::InputsWeightsOutputs)) : lp.mem;
  if (lp.full_rows) r.memory_level = lmem->name;
  double work = st.executed_work ? cost.flops_executed : cost.flops;  // FLOPs the roofline bounds
  // an algorithm the platform's library runs instead (Winograd; a strided 1×1 reading the pixels it uses)
  algorithm = !pl.algorithms.empty() && apply_algorithm(pl, L, st, work, r.bytes, lp.full_rows ? &r.cost : nullptr);
  const CalibrationRule* band = nullptr;  // the rule whose held-out errors give the layer its band
  r.theoretical = roofline(work, r.bytes, roof.peak_flops_per_s, lmem->bandwidth_bytes_per_s);
  if (lp.ctx.hooks && lp.ctx.hooks->has_efficiency()) {
    try {
      r.efficiency = lp.ctx.hooks->efficiency(r, L, pl);
    } catch (const ConfigError& e) {
      d.add(e);
      return nullptr;
    }
  } else if (const CalibrationRule* cal = pl.calibration_for(L.op->name, roof.name)) {  // fitted by rsim calibrate
    const double cpg = channels_per_group(L);
    const double outputs = L.out_shapes.empty() ? 0 : elements(L.out_shapes[0]);  // the occupancy factor's p
    r.efficiency.compute = cal->compute.at(cost.macs > 0 ? cost.macs : work, cpg, outputs);
    r.efficiency.bandwidth = cal->bandwidth_on(lmem->name).at(r.bytes, cpg);
    host = cal->host_overhead_s;
    band = cal->has_error_band() ? cal : nullptr;
  }
  if (!pl.measured_factors.empty() && !(lp.ctx.hooks && lp.ctx.hooks->has_efficiency())) {  // a shape rsim calibrate timed
    thread_local std::string ins, outs;
    ins.clear(), outs.clear();
    append_shapes(ins, L.in_shapes);
    append_shapes(outs, L.out_shapes);
    divide_efficiencies(r.efficiency.compute, r.efficiency.bandwidth,
                        pl.measured_factor(measured_layer_key(L.op->name, roof.name, ins, outs, cost.macs)));
  }
  r.derated = roofline(work, r.bytes, roof.derated_flops_per_s * r.efficiency.compute,
                       lmem->derated_bandwidth_bytes_per_s * r.efficiency.bandwidth);
  const bool kernel_model = pl.kernel_model.active() && !(lp.ctx.hooks && lp.ctx.hooks->has_efficiency()) &&  // a GPU kernel model's time
                            apply_kernel_model(r.derated, L, pl, roof, *lmem, work, r.bytes, r.theoretical.time_s, &r.decode, lp.graph_gap);
  price_collectives(lp, cost, r, extra);
  if (pl.contention.active() && r.theoretical.bound == Bound::Compute && r.derated.time_s > 0) {  // fitted by rsim calibrate
    const double f = pl.contention.apply(r.derated.time_s) / r.derated.time_s;
    r.derated.compute_time_s *= f;
    r.derated.memory_time_s *= f;
    r.derated.time_s *= f;
    r.derated.attainable_flops_per_s /= f;
  }
  if (lp.ctx.hooks && !lp.ctx.hooks->metric_names().empty()) {
    try {
      r.metrics = lp.ctx.hooks->metrics(r, L);
    } catch (const ConfigError& e) {
      d.add(e);
      return nullptr;
    }
  }
  if (!sum_is_finite(r, cost) && report_nonfinite(r, L, pl, roof, *lp.mem, lp.plat_loc, d)) return nullptr;
  {  // the derated times' parts from assumed figures: a whole roof, or what its assumed derating adds
    auto assumed = [](Basis figure, Basis derating, double derated, double theoretical) {
      return figure == Basis::Assumption ? derated : derating == Basis::Assumption ? std::max(0.0, derated - theoretical) : 0.0;
    };
    // (a kernel model's time rests on the roofs' figures and its fitted parameters, not on the derating)
    extra.acompute = assumed(roof.basis, kernel_model ? Basis::Calibrated : roof.derate_basis, r.derated.compute_time_s, r.theoretical.compute_time_s);
    extra.amemory = assumed(lmem->basis, kernel_model ? Basis::Calibrated : lmem->derate_basis, r.derated.memory_time_s, r.theoretical.memory_time_s);
    if (band) {  // the rule's held-out spread, on the layer's kernel time
      const double w = std::max(r.derated.compute_time_s, r.derated.memory_time_s);
      extra.lo = w * (band->error_lo - 1), extra.hi = w * (band->error_hi - 1);
    }
  }
  return lmem;
}

}  // namespace rsim
