// A row's and a summary row's reset between points, a summary's limiting part, and the located
// error for a row with a number that is not finite.
#include "engine/eval/bind.hpp"

#include <cmath>

namespace rsim {

namespace {

// The first number of a row that is NaN or infinite ("" when all are finite). An intensity of
// +inf is the legal value of a layer that moves no bytes.
std::string nonfinite_field(const Row& r, const OpCost& cost) {
  auto bad = [](double v) { return !std::isfinite(v); };
  auto what = [](const std::string& name, double v) { return name + " is " + (std::isnan(v) ? "NaN" : v > 0 ? "infinite" : "-infinite"); };
  const std::pair<const char*, double> costs[] = {{"MACs", cost.macs},           {"FLOPs", cost.flops},     {"params", cost.params},
                                                  {"weight bytes", cost.weight_bytes}, {"input bytes", cost.input_total()},
                                                  {"output bytes", cost.output_total()}, {"bytes", r.bytes}};
  for (const auto& [n, v] : costs)
    if (bad(v)) return what(n, v);
  for (const auto* rp : {&r.theoretical, &r.derated}) {
    const char* pre = rp == &r.theoretical ? "" : "derated ";
    const std::pair<const char*, double> roof[] = {{"peak", rp->peak_flops_per_s},
                                                   {"bandwidth", rp->bandwidth_bytes_per_s},
                                                   {"attainable FLOP/s", rp->attainable_flops_per_s},
                                                   {"compute time", rp->compute_time_s},
                                                   {"memory time", rp->memory_time_s},
                                                   {"time", rp->time_s}};
    for (const auto& [n, v] : roof)
      if (bad(v)) return what(std::string(pre) + n, v);
    if (std::isnan(rp->intensity) || (std::isinf(rp->intensity) && r.bytes != 0)) return what(std::string(pre) + "intensity", rp->intensity);
  }
  if (bad(r.efficiency.compute) || bad(r.efficiency.bandwidth)) return "an efficiency is not finite";
  for (double m : r.metrics)
    if (bad(m)) return what("a metric", m);
  return "";
}

}  // namespace

// A located error for the first number of a layer's row that is NaN or infinite: true if there is one
bool report_nonfinite(const Row& r, const Layer& L, const Platform& pl, const ComputeRoof& roof, const MemoryLevel& mem, const SourceLoc& plat, Diags& d) {
  const std::string bad = nonfinite_field(r, L.cost);
  if (bad.empty()) return false;
  std::string ins;
  append_shapes(ins, L.in_shapes);
  d.error(L.loc, "layer '" + L.name + "' on '" + pl.name + "': " + bad,
          {Note{{}, "inputs " + (ins.empty() ? std::string("none") : ins) + " (" + dtype_name(L.dtype) + "); FLOPs " + format_number(L.cost.flops) +
                        ", bytes " + format_number(r.bytes) + "; peak " + format_number(roof.peak_flops_per_s) + " FLOP/s (derated " +
                        format_number(roof.derated_flops_per_s) + "), bandwidth " + format_number(mem.bandwidth_bytes_per_s) + " B/s (derated " +
                        format_number(mem.derated_bandwidth_bytes_per_s) + ")"},
           Note{plat, "platform used here"}});
  return true;
}

void Row::clear() {
  static_assert(sizeof(Row) == 856, "a field added to Row: reset it in Row::clear, then update this size");
  point = 0;
  platform.clear(), network.clear(), layer.clear(), op.clear();
  dtype = compute_dtype = weights_dtype = kv_dtype = DType::fp32;
  has_weights = touches_kv = false;
  input_shapes.clear(), output_shapes.clear();
  output_shape.clear();
  cost.clear();
  bytes = 0;
  compute_roof.clear(), memory_level.clear();
  theoretical = derated = RoofPoint{}, decode.reset();
  collective.clear();
  kernel.clear();
  kernel_index = -1;
  efficiency = Efficiency{};
  metrics.clear();
  twin = -1;
}

std::pair<const char*, double> time_limit(const TimeParts& p) {
  const double total = p.total();
  if (!(total > 0)) return {"", 0.0};
  const std::pair<const char*, double> parts[] = {{"compute", p.compute}, {"memory", p.memory}, {"launch", p.launch},
                                                  {"host", p.host},       {"comm", p.comm},     {"bubble", p.bubble}};
  auto best = parts[0];
  for (const auto& x : parts)
    if (x.second > best.second) best = x;
  return {best.first, best.second / total};
}

void SummaryRow::clear() {
  static_assert(sizeof(SummaryRow) == 800, "a field added to SummaryRow: reset it in SummaryRow::clear, then update this size");
  dtype = DType::fp32, dtype_from_file = false, continuous = false;
  parts = dparts = TimeParts{};
  banded = false;
  kv_write_bytes = kv_bytes_per_token = new_tokens_per_seq = 0;
  macs_by_dtype.fill(0), layers_by_dtype.fill(0);
  file_dtypes = 0;
  tensor_parallel = 1, params_per_gpu = comm_bytes = comm_time_s = 0;
  gpus = pipeline_parallel = micro_batches = expert_parallel = data_parallel = 1, pipeline_bubble = 0;
  ttft_s = derated_ttft_s = tpot_s = derated_tpot_s = prompt = generate = 0;
  point = 0;
  platform.clear(), network.clear(), phase.clear(), memory_name.clear(), ignored.clear();
  layers = kernels = macs = flops = params = bytes = 0;
  batch = 1;
  intensity = time_s = derated_time_s = achieved_flops_per_s = derated_achieved_flops_per_s = 0;
  memory_bound = compute_bound = derated_memory_bound = derated_compute_bound = 0;
  active_params = tokens = 0;
  weight_footprint_bytes = kv_cache_bytes = activation_bytes = memory_footprint_bytes = memory_size_bytes = 0;
}

}  // namespace rsim
