#include "engine/eval/evaluate.hpp"
#include "engine/eval/bind.hpp"

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

namespace {
// A kernel's times on both roofs, summed over its layers, and the host time to issue it in eager
// mode (the largest of its layers' classes' host_overhead; -1: the platform's runtime.host_overhead).
struct KernelTime {
  double compute = 0, memory = 0, dcompute = 0, dmemory = 0, host = -1;
  double comm = 0, dcomm = 0;  // its layers' collectives, after them (tensor parallelism)
  // derated: the parts of its compute, memory and comm times that come from figures whose basis is
  // `assumption`; what a calibrated platform's error band adds at its 10th and 90th percentile
  double acompute = 0, amemory = 0, acomm = 0, lo = 0, hi = 0;
};


// A layer's roofline on a platform, kept for the later layers that do the same work.
struct Bounded {
  double bytes = 0;
  const MemoryLevel* level = nullptr;
  RoofPoint theoretical, derated;
  Efficiency efficiency;
  double host = -1;  // its class's host overhead in eager mode (-1: the platform's)
  bool algorithm = false;  // a platform's algorithm changed its work or bytes (its row's counts say how)
  LayerExtra extra;
};

// Kernels of a repeat's later copies whose times are added at once by evaluate_point's sum over
// kernels (their layers each alone in a kernel, numbered one after the other): kernels [begin,
// begin + count) take, in turn, the times of `period` kernels (their layers' first of kind's,
// each with the launch overhead: the terms that sum would add), held in `times` from `at`.
struct KernelSpan {
  size_t begin = 0, count = 0, period = 0, at = 0;
};
struct SpanTimes {
  double time = 0, derated = 0, host = -1;
  KernelTime kernel;  // the kernel's times (for the parts of the network's time)
};

// Adds the layers of a repeat's later copies to a network's totals and kernel times (summary
// only; the repeat held at this point: each of those layers takes the roofline of the first copy's
// first of its kind, as evaluate_point's layer loop would add them one by one). Counts, FLOPs,
// parameters and bytes are added at once, as (copies - 1) × one copy's sum: the same number as
// adding them one by one only where every term and the total so far are integers and no sum
// reaches 2^53 (each addition is then exact). When that does not hold, nothing is added and it
// returns false (the loop adds them one by one). Kernel times: where each of those layers runs
// alone in a kernel, numbered one after the other, one copy's terms as a span (added in order by
// the sum over kernels); else into each layer's kernel, in layer order.

bool add_copies(const Network& net, const NetworkPlan::Repeat& R, const KernelIndex& kix, const std::vector<Bounded>& bounded, SummaryRow& sum,
                std::vector<KernelTime>& kernels, double launch, std::vector<KernelSpan>& spans, std::vector<SpanTimes>& times) {
  const size_t first = R.begin + R.period, end = R.begin + R.period * R.copies;
  struct Field {
    double* total;
    double one = 0, size = 0;  // one copy's sum; its terms' sum of magnitudes
  };
  Field f[] = {{&sum.macs},           {&sum.flops},          {&sum.params}, {&sum.active_params}, {&sum.weight_footprint_bytes},
               {&sum.kv_cache_bytes}, {&sum.bytes},          {&sum.params_per_gpu}, {&sum.comm_bytes}, {&sum.comm_time_s}, {&sum.kv_write_bytes}};
  double activation = sum.activation_bytes;
  int bounds[4] = {0, 0, 0, 0};
  for (size_t k = first; k < first + R.period; ++k) {
    const size_t j = static_cast<size_t>(net.layers[k].same_as);
    const OpCost& c = net.layers[j].cost;
    const Bounded& b = bounded[j];
    const double terms[] = {c.macs,  c.flops, c.params, c.active_params, c.resident_weight_bytes, c.kv_cache_bytes, b.bytes, c.params * c.shard,
                            c.comm_bytes, b.theoretical.comm_time_s, c.kv_write_bytes};
    for (size_t q = 0; q < std::size(f); ++q) f[q].one += terms[q], f[q].size += std::fabs(terms[q]);
    for (double t : terms)
      if (t != std::trunc(t)) return false;  // (NaN too; an infinity fails the size check below)
    activation = std::max(activation, c.activation_bytes);
    bounds[0] += b.theoretical.bound == Bound::Memory;
    bounds[1] += b.theoretical.bound == Bound::Compute;
    bounds[2] += b.derated.bound == Bound::Memory;
    bounds[3] += b.derated.bound == Bound::Compute;
  }
  const double more = static_cast<double>(R.copies - 1);
  for (const Field& x : f)
    if (*x.total != std::trunc(*x.total) || !(std::fabs(*x.total) + more * x.size < 9007199254740992.0)) return false;
  if (kix.alone_run[first] >= end - first) {  // each layer alone in its kernel: the kernels' terms of one copy, added in turn by the sum
    spans.push_back(KernelSpan{static_cast<size_t>(kix.of_layer[first]), end - first, R.period, times.size()});
    for (size_t k = first; k < first + R.period; ++k) {
      const Bounded& b = bounded[static_cast<size_t>(net.layers[k].same_as)];
      // (as the sum computes a kernel of one layer: 0 + each time, the larger, + the launch)
      const KernelTime kt{0 + b.theoretical.compute_time_s, 0 + b.theoretical.memory_time_s, 0 + b.derated.compute_time_s, 0 + b.derated.memory_time_s,
                          -1, 0 + b.theoretical.comm_time_s, 0 + b.derated.comm_time_s, b.extra.acompute, b.extra.amemory, b.extra.acomm, b.extra.lo, b.extra.hi};
      times.push_back(SpanTimes{std::max(kt.compute, kt.memory) + kt.comm + launch, std::max(kt.dcompute, kt.dmemory) + kt.dcomm + launch, b.host, kt});
    }
  } else {
    for (size_t k = first; k < end; ++k)
      if (int ki = kix.of_layer[k]; ki >= 0) {
        const Bounded& b = bounded[static_cast<size_t>(net.layers[k].same_as)];
        KernelTime& kt = kernels[static_cast<size_t>(ki)];
        kt.compute += b.theoretical.compute_time_s;
        kt.memory += b.theoretical.memory_time_s;
        kt.dcompute += b.derated.compute_time_s;
        kt.dmemory += b.derated.memory_time_s;
        kt.comm += b.theoretical.comm_time_s;
        kt.dcomm += b.derated.comm_time_s;
        kt.host = std::max(kt.host, b.host);
        kt.acompute += b.extra.acompute, kt.amemory += b.extra.amemory, kt.acomm += b.extra.acomm, kt.lo += b.extra.lo, kt.hi += b.extra.hi;
      }
  }
  for (Field& x : f) *x.total += more * x.one;
  for (size_t k = first; k < first + R.period; ++k) {  // (the network's dtype: see evaluate_point)
    const Layer& L = net.layers[k];
    const double macs = net.layers[static_cast<size_t>(L.same_as)].cost.macs;
    const size_t t = static_cast<size_t>(L.dtype);
    sum.macs_by_dtype[t] += more * macs, sum.layers_by_dtype[t] += more;
    if (L.dtype_from_file) sum.file_dtypes |= 1u << t;
  }
  sum.layers += static_cast<double>(end - first);
  sum.activation_bytes = activation;
  const int m = static_cast<int>(R.copies - 1);
  sum.memory_bound += m * bounds[0], sum.compute_bound += m * bounds[1];
  sum.derated_memory_bound += m * bounds[2], sum.derated_compute_bound += m * bounds[3];
  return true;
}
}  // namespace

// (here, beside the layer loop that calls it per layer: a call the compiler may inline)
double layer_bytes(const OpCost& c, MemoryModel m) {
  double b = c.weight_bytes + c.output_total() + c.scratch_bytes;
  b += m == MemoryModel::InputsWeightsOutputs ? c.input_total() : c.kv_read_bytes;
  return b;
}

PointResult evaluate_point(const Scenario& s, const Point& p, EvalContext& ctx) {
  PointResult out;
  evaluate_point(s, p, ctx, out);
  return out;
}

namespace {

// The next element of a list written over from point to point: the last point's in this place, or
// a new one; `used` counts the point's elements (the list is cut to them at the end)
template <class T>
T& next_slot(std::vector<T>& v, size_t& used) {
  T& x = used < v.size() ? v[used] : v.emplace_back();
  ++used;
  return x;
}

}  // namespace

void evaluate_point(const Scenario& s, const Point& p, EvalContext& ctx, PointResult& out) {
  out.request_layer_evaluations = 0;
  evaluate_point_once(s, p, ctx, out);
  if (!s.requests.empty()) merge_requests(s, p, ctx, out);
}

namespace {

// A kernel's times into the parts of its network's, `times` times over (see TimeParts): its work
// under its bound, its collectives, and (derated) their assumed parts and error band
void add_kernel_parts(const KernelTime& kt, double times, TimeParts& th, TimeParts& de) {
  (kt.compute >= kt.memory ? th.compute : th.memory) += times * std::max(kt.compute, kt.memory);
  th.comm += times * kt.comm;
  if (kt.dcompute >= kt.dmemory) de.compute += times * kt.dcompute, de.assumed += times * kt.acompute;
  else de.memory += times * kt.dmemory, de.assumed += times * kt.amemory;
  de.comm += times * kt.dcomm;
  de.assumed_comm += times * kt.acomm;
  de.lo += times * kt.lo, de.hi += times * kt.hi;
}

// What the execution mode adds to n kernels (the rule of ExecutionClock): fused, n launches; graph,
// one launch and n − 1 gaps; eager, the GPU's waits for the host (the time past the kernels' own);
// ideal, nothing. The assumed part: each runtime figure whose basis is `assumption`.
void add_overhead_parts(Execution mode, const Platform& pl, size_t kernels, SummaryRow& sum) {
  const Runtime& rt = pl.runtime;
  const double n = static_cast<double>(kernels);
  const bool assumed_launch = rt.launch_basis == Basis::Assumption, assumed_gap = rt.gap_basis == Basis::Assumption;
  for (TimeParts* p : {&sum.parts, &sum.dparts}) {
    switch (mode) {
      case Execution::Fused:
        p->launch = n * rt.launch_overhead_s;
        if (p == &sum.dparts && assumed_launch) p->assumed += p->launch;
        break;
      case Execution::Graph:
        if (kernels == 0) break;
        p->launch = rt.launch_overhead_s + (n - 1) * (rt.graph_gap_s > 0 ? rt.graph_gap_s : 0);
        if (p == &sum.dparts)
          p->assumed += (assumed_launch ? rt.launch_overhead_s : 0) + (assumed_gap ? (n - 1) * std::max(0.0, rt.graph_gap_s) : 0);
        break;
      case Execution::Eager: {
        const double total = p == &sum.parts ? sum.time_s : sum.derated_time_s;
        p->host = std::max(0.0, total - p->work() - p->comm);
        if (p == &sum.dparts && rt.host_basis == Basis::Assumption) p->assumed += p->host;
        break;
      }
      case Execution::Ideal: break;
    }
  }
}

// overlap: full hides the collectives (c in all) behind the rest where they can be: what stays
// exposed is c less the rest, at least 0 (the network's time is then the larger of the two)
void hide_comm(TimeParts& p, double c) {
  const double exposed = std::max(0.0, c - p.work() - p.overhead());
  p.assumed_comm = p.comm > 0 ? p.assumed_comm * exposed / p.comm : 0;
  p.comm = exposed;
}

// The network's time from its kernels' (in order; a repeat's copies as spans of one copy's times)
// under the execution mode, and its parts; the collectives hidden where the network overlaps them
void sum_kernels(const std::vector<KernelTime>& kernels, const std::vector<KernelSpan>& spans, const std::vector<SpanTimes>& span_times,
                 const Settings& st, const Platform& pl, const Network& net, bool fused, double launch, SummaryRow& sum) {
  ExecutionClock clock(st.execution, pl.runtime);
  auto add_kernels = [&](size_t from, size_t to) {
    for (size_t k = from; k < to; ++k) {
      const KernelTime& kt = kernels[k];
      add_kernel_parts(kt, 1, sum.parts, sum.dparts);
      if (fused) {  // (today's sum, in today's order)
        sum.time_s += std::max(kt.compute, kt.memory) + kt.comm + launch;
        sum.derated_time_s += std::max(kt.dcompute, kt.dmemory) + kt.dcomm + launch;
      } else {
        clock.add(std::max(kt.compute, kt.memory) + kt.comm, std::max(kt.dcompute, kt.dmemory) + kt.dcomm, kt.host);
      }
    }
  };
  size_t done = 0;  // kernels added so far, in order
  for (const KernelSpan& sp : spans) {
    add_kernels(done, sp.begin);
    const SpanTimes* one = span_times.data() + sp.at;
    for (size_t k = 0, q = 0; k < sp.count; ++k) {  // (kernel by kernel, in order: the sums a network built afresh adds)
      add_kernel_parts(one[q].kernel, 1, sum.parts, sum.dparts);
      if (++q == sp.period) q = 0;
    }
    if (!fused) {  // (times without a launch: the clock adds each mode's overheads)
      for (size_t k = 0, q = 0; k < sp.count; ++k) {
        clock.add(one[q].time, one[q].derated, one[q].host);
        if (++q == sp.period) q = 0;
      }
      done = sp.begin + sp.count;
      continue;
    }
    double t = sum.time_s, dt = sum.derated_time_s;  // (in registers: the same additions in the same order)
    if (sp.period == 1) {  // (a chain of one repeated layer: no position in the copy to keep)
      const double a = one[0].time, b = one[0].derated;
      for (size_t k = 0; k < sp.count; ++k) t += a, dt += b;
    } else {
      for (size_t k = 0, q = 0; k < sp.count; ++k) {
        t += one[q].time, dt += one[q].derated;
        if (++q == sp.period) q = 0;
      }
    }
    sum.time_s = t, sum.derated_time_s = dt;
    done = sp.begin + sp.count;
  }
  add_kernels(done, kernels.size());
  if (!fused) sum.time_s = clock.t, sum.derated_time_s = clock.dt;
  add_overhead_parts(st.execution, pl, kernels.size(), sum);
  if (net.parallel.overlap_full && sum.comm_time_s > 0) {  // the collectives hidden behind the rest where they can be
    const double c = sum.comm_time_s;
    sum.time_s = std::max(sum.time_s - c, c);
    sum.derated_time_s = std::max(sum.derated_time_s - c, c);
    hide_comm(sum.parts, c), hide_comm(sum.dparts, c);
  }
}

// A network's summary finished from its sums: the KV bytes a token adds, a pipeline's stages, the
// data-parallel tokens, the network's dtype
void finish_sums(const Network& net, const Settings& st, bool staged, const PipelinePlan& pipe, const InterconnectLevel* stage_link, SummaryRow& sum) {
  const Parallelism& par = net.parallel;
  // the KV cache a token adds, per GPU (what each step appends over the tokens it processes),
  // and the new tokens per sequence of a step (see max_batch_in_memory)
  if (!net.phase.empty() && sum.tokens > 0 && sum.batch > 0) {
    sum.kv_bytes_per_token = sum.kv_write_bytes / sum.tokens;
    sum.new_tokens_per_seq = sum.tokens / sum.batch;
  }
  {
    const double kv_one = sum.kv_cache_bytes;  // (a pipeline's fullest stage holds a share of it for each micro-batch)
    if (staged) finish_pipeline(net, pipe, stage_link, sum);
    if (staged && kv_one > 0) sum.kv_bytes_per_token *= sum.kv_cache_bytes / (sum.micro_batches * kv_one);
  }
  if (par.data > 1) sum.tokens *= static_cast<double>(par.data);
  {  // the network's dtype: that of most MACs, else of most layers
    size_t best = static_cast<size_t>(st.dtype);
    double most = 0;
    const bool by_macs = sum.macs > 0;
    for (size_t k = 0; k < sum.macs_by_dtype.size(); ++k) {
      const double v = by_macs ? sum.macs_by_dtype[k] : sum.layers_by_dtype[k];
      if (v > most) most = v, best = k;
    }
    sum.dtype = static_cast<DType>(best);
    sum.dtype_from_file = (sum.file_dtypes >> best & 1u) != 0;
  }
}

// The point's memory level on a platform (memory_level: auto: the first, each layer then its own),
// once its runtime has what the execution mode needs: nullptr after an error into d
const MemoryLevel* point_level(const Settings& st, const Platform& pl, const SourceLoc& plat_loc, Diags& d) {
  const bool auto_level = st.memory_level == "auto";
  if ((st.execution == Execution::Graph && !pl.runtime.has_graph_gap()) ||
      (st.execution == Execution::Eager && !pl.runtime.has_host_overhead())) {
    const bool graph = st.execution == Execution::Graph;
    const std::string key = graph ? "graph_gap" : "host_overhead";
    d.error(st.execution_loc,
            std::string("execution: ") + execution_name(st.execution) + " needs the platform's runtime." + key + "; platform '" + pl.name +
                "' has none",
            {Note{plat_loc, "platform used here"},
             Note{{}, "give it one, e.g. {base: " + pl.name + ", name: " + pl.name + "_" + execution_name(st.execution) + ", runtime: {" + key +
                          (graph ? ": 2 us}}" : ": 20 us}}") + " (rsim calibrate fits both from measured network times)"}});
    return nullptr;
  }
  const MemoryLevel* mem = st.memory_level.empty() || auto_level ? &pl.memory.front() : pl.level(st.memory_level);
  if (!mem) {
    std::vector<std::string> names;
    for (const auto& m : pl.memory) names.push_back(m.name);
    std::string hint = did_you_mean(st.memory_level, names);
    d.error(plat_loc, "platform '" + pl.name + "' has no memory level '" + st.memory_level + "'",
            {Note{{}, hint.empty() ? "its levels: " + [&] { std::string a; for (auto& n : names) a += (a.empty() ? "" : ", ") + n; return a; }() : hint}});
    return nullptr;
  }
  return mem;
}

// A network's summary row begun on a platform: its names, shape and parallelism, its tokens and the
// memory that holds it; false after an error into d (split over GPUs on a platform with no links)
bool open_summary(SummaryRow& sum, const Point& p, const Platform& pl, const Network& net, const SourceLoc& net_loc, const SourceLoc& plat_loc, Diags& d) {
  const Parallelism& par = net.parallel;
  sum.clear();
  sum.point = p.index;
  sum.platform = pl.name;
  sum.network = net.name;
  if (!net.inputs.empty() && !net.inputs.front().second.empty()) sum.batch = static_cast<double>(net.inputs.front().second.front());
  sum.phase = net.phase;
  sum.tensor_parallel = static_cast<double>(par.tensor);
  sum.pipeline_parallel = static_cast<double>(par.pipeline), sum.micro_batches = static_cast<double>(par.micro_batches);
  sum.expert_parallel = static_cast<double>(par.expert), sum.data_parallel = static_cast<double>(par.data);
  sum.gpus = static_cast<double>(par.gpus());
  if ((par.tensor > 1 || par.expert > 1 || par.pipeline > 1) && pl.interconnect.empty()) {
    const std::string split = par.tensor > 1 && par.pipeline > 1 ? std::to_string(par.tensor * par.pipeline) + " GPUs (tensor × pipeline)"
                              : par.tensor > 1                   ? std::to_string(par.tensor) + " GPUs"
                              : par.pipeline > 1                 ? std::to_string(par.pipeline) + " pipeline stages"
                                                                 : std::to_string(par.expert) + " expert-parallel GPUs";
    d.error(net_loc, "network '" + net.name + "' is split over " + split + ", but platform '" + pl.name + "' states no interconnect",
            {Note{plat_loc, "platform used here"},
             Note{{}, "give it one, e.g. {base: " + pl.name + ", name: " + pl.name + "_nvlink, interconnect: [{name: NVLink, bandwidth: 450 GB/s, latency: 2 us, gpus: 8}]}"}});
    return false;
  }
  if (!net.phase.empty() && !net.inputs.empty()) sum.tokens = elements(net.inputs.front().second);
  // the capacity is the largest level's, unless a level states no size (main memory of
  // unknown size holds anything: no capacity check)
  bool unbounded = false;
  for (const auto& m : pl.memory) unbounded = unbounded || !(m.size_bytes > 0);
  for (const auto& m : pl.memory)
    if (!unbounded && m.size_bytes > sum.memory_size_bytes) {
      sum.memory_size_bytes = m.size_bytes;
      sum.memory_name = m.name;
    }
  return true;
}

// A layer whose compute precision the platform has no roof for: the error, with what it has
void report_missing_roof(const Platform& pl, const Network& net, const Layer& L, const SourceLoc& plat_loc, Diags& d) {
  std::string have;
  for (const auto& t : pl.dtypes()) have += (have.empty() ? "" : ", ") + t;
  std::vector<Note> notes = {Note{plat_loc, "platform used here"}, Note{{}, "its roofs cover: " + have}};
  if (L.dtype_from_file && L.compute_dtype() == L.dtype)  // the model's published precision, not the scenario's
    notes.push_back(Note{{}, std::string("network '") + net.name + "' runs in its model's published dtype, " + dtype_name(L.dtype) +
                                 ", as no settings.dtype or network dtype says otherwise: give one this platform has, e.g. settings: {dtype: " +
                                 (have.find("fp16") != std::string::npos ? "fp16" : "fp32") + "}"});
  d.error(L.loc, "platform '" + pl.name + "' has no compute roof for " + dtype_name(L.compute_dtype()) + " (layer '" + L.name + "')", notes);
}

// A layer's row begun: its point, precisions and flags; with full rows its names, shapes (a layer
// doing an earlier one's work, in kept rows: that row's text), roof, level and kernel
void start_row(Row& r, size_t point, const Platform& pl, const Network& net, const Layer& L, size_t li, const ComputeRoof& roof, const MemoryLevel& mem,
               const KernelIndex& kix, bool full_rows, bool kept, const std::vector<Row>& rows, size_t rows_base) {
  r.point = point;
  r.dtype = L.dtype;
  r.compute_dtype = L.compute_dtype();
  // the weights dtype labels matrix weights only: a norm's γ or RoPE's tables stay in the
  // activation dtype whatever weights_dtype says
  r.weights_dtype = L.cost.quantized_weight_bytes > 0 ? L.weights_dtype() : L.dtype;
  r.kv_dtype = L.kv_dtype();
  r.has_weights = L.cost.weight_bytes > 0 || L.cost.resident_weight_bytes > 0;
  r.touches_kv = L.touches_kv;
  if (full_rows) {
    r.platform = pl.name;
    r.network = net.name;
    r.layer = L.name;
    r.op = L.op->name;
    if (kept && L.same_as >= 0 && static_cast<size_t>(L.same_as) < li) {  // the same shapes: the earlier row's text
      const Row& t = rows[rows_base + static_cast<size_t>(L.same_as)];
      r.input_shapes = t.input_shapes;
      r.output_shapes = t.output_shapes;
    } else {
      append_shapes(r.input_shapes, L.in_shapes);
      append_shapes(r.output_shapes, L.out_shapes);
    }
    if (!L.out_shapes.empty()) r.output_shape = L.out_shapes[0];
    r.compute_roof = roof.name;
    r.memory_level = mem.name;
    r.kernel = L.kernel;
    r.kernel_index = kix.of_layer[li];
  }
}

// A network's summary finished from its totals: intensity, achieved rates, footprint (over the
// memory: a footprint excess written, over the last point's), the operators it ignored
void close_summary(SummaryRow& sum, const Network& net, const Platform& pl, const SourceLoc& net_loc, std::vector<FootprintExcess>& excess, size_t& excess_used) {
  sum.intensity = sum.flops > 0 ? (sum.bytes > 0 ? sum.flops / sum.bytes : INFINITY) : 0;
  sum.achieved_flops_per_s = sum.time_s > 0 ? sum.flops / sum.time_s : 0;
  sum.derated_achieved_flops_per_s = sum.derated_time_s > 0 ? sum.flops / sum.derated_time_s : 0;
  sum.memory_footprint_bytes = sum.weight_footprint_bytes + sum.kv_cache_bytes + sum.activation_bytes;
  if (sum.memory_size_bytes > 0 && sum.memory_footprint_bytes > sum.memory_size_bytes) {
    // (written over the last point's: a sweep past the memory has one at nearly every point)
    FootprintExcess& x = next_slot(excess, excess_used);
    x.loc = net_loc;
    x.network = net.name, x.platform = pl.name, x.memory = sum.memory_name;
    x.footprint = sum.memory_footprint_bytes, x.size = sum.memory_size_bytes;
    x.weights = sum.weight_footprint_bytes, x.kv_cache = sum.kv_cache_bytes, x.activations = sum.activation_bytes;
  }
  for (const auto& [op, n] : net.ignored)
    sum.ignored += (sum.ignored.empty() ? "" : ", ") + op + " (" + std::to_string(n) + " node" + (n == 1 ? "" : "s") + ")";
}

// A network's totals on a platform, layer by layer: each layer's roofline into its kernel's times,
// its pipeline stage's sums and the network's summary
struct Tally {
  const Network& net;
  const KernelIndex& kix;
  std::vector<KernelTime>& kernels;
  SummaryRow& sum;
  PipelinePlan& pipe;
  bool eager, staged;
  void operator()(size_t li, const OpCost& cost, double bytes, const RoofPoint& th, const RoofPoint& de, double host, const LayerExtra& x) {
    if (int k = kix.of_layer[li]; k >= 0) {
      KernelTime& kt = kernels[static_cast<size_t>(k)];
      kt.acompute += x.acompute, kt.amemory += x.amemory, kt.acomm += x.acomm, kt.lo += x.lo, kt.hi += x.hi;
      kt.compute += th.compute_time_s;
      kt.memory += th.memory_time_s;
      kt.dcompute += de.compute_time_s;
      kt.dmemory += de.memory_time_s;
      kt.comm += th.comm_time_s;
      kt.dcomm += de.comm_time_s;
      if (eager) kt.host = std::max(kt.host, host);
    }
    {
      const Layer& TL = net.layers[li];
      const size_t k = static_cast<size_t>(TL.dtype);
      sum.macs_by_dtype[k] += cost.macs, sum.layers_by_dtype[k] += 1;
      if (TL.dtype_from_file) sum.file_dtypes |= 1u << k;
    }
    if (staged) {
      PipelinePlan::Stage& st = pipe.stages[static_cast<size_t>(pipe.stage_of[li])];
      st.time += th.time_s, st.derated += de.time_s;
      st.params += cost.params * cost.shard, st.weights += cost.resident_weight_bytes, st.kv += cost.kv_cache_bytes;
      st.activations = std::max(st.activations, cost.activation_bytes);
    }
    sum.params_per_gpu += cost.params * cost.shard;
    sum.comm_bytes += cost.comm_bytes;
    sum.comm_time_s += th.comm_time_s;
    sum.layers += 1;
    sum.macs += cost.macs;
    sum.flops += cost.flops;
    sum.params += cost.params;
    sum.active_params += cost.active_params;
    sum.weight_footprint_bytes += cost.resident_weight_bytes;
    sum.kv_cache_bytes += cost.kv_cache_bytes;
    sum.kv_write_bytes += cost.kv_write_bytes;
    sum.activation_bytes = std::max(sum.activation_bytes, cost.activation_bytes);
    sum.bytes += bytes;
    sum.memory_bound += th.bound == Bound::Memory;
    sum.compute_bound += th.bound == Bound::Compute;
    sum.derated_memory_bound += de.bound == Bound::Memory;
    sum.derated_compute_bound += de.bound == Bound::Compute;
  }
};

// The point's errors, each with a note naming the sweep point (where it has bindings)
ConfigError at_point(const Diags& d, const Point& p) {
  std::vector<Diagnostic> list = d.list();
  if (!p.bindings.empty())
    for (auto& diag : list) diag.notes.push_back(Note{{}, "at sweep point " + std::to_string(p.index) + ": " + bindings_text(p.bindings)});
  return ConfigError(list);
}

// The point's variables: its sweep bindings, then the scenario's vars in order (each may use what
// came before, into with_vars); without vars, the point's bindings themselves
const Env& point_env(const Scenario& s, const Point& p, EvalContext& ctx, Env& with_vars, Diags& d) {
  if (s.vars.empty()) return p.bindings;
  with_vars = p.bindings;
  for (const auto& [name, node] : s.vars) {
    try {
      with_vars.emplace_back(name, substitute(node.scalar, with_vars, ctx.ev, node.loc));
    } catch (const ConfigError& e) {
      d.add(e);
    }
  }
  return with_vars;
}

// count kernels' times, all zero (zero bits are 0.0); in eager mode each with no class's own host
// overhead yet (-1: the runtime's)
void reset_kernels(std::vector<KernelTime>& kernels, size_t count, bool eager) {
  kernels.resize(count);
  static_assert(std::is_trivially_copyable_v<KernelTime>);
  if (!kernels.empty()) std::memset(static_cast<void*>(kernels.data()), 0, kernels.size() * sizeof(KernelTime));
  if (eager)
    for (KernelTime& kt : kernels) kt.host = -1;
}

// A layer's row from the roofline of the earlier layer whose work it does (kept rows: that row is
// its twin, with the decode kernel's shape and an algorithm's counts)
void take_twin(Row& r, const Bounded& b, size_t same_as, size_t rows_base, bool kept, bool full_rows, const std::vector<Row>& rows) {
  if (kept) {
    r.twin = static_cast<int>(rows_base + same_as);
    r.decode = rows[static_cast<size_t>(r.twin)].decode;  // (a decode kernel's shape)
  }
  if (kept && b.algorithm) r.cost = rows[rows_base + same_as].cost;  // (its algorithm's counts)
  r.bytes = b.bytes;
  if (full_rows) r.memory_level = b.level->name;
  r.theoretical = b.theoretical;
  r.derated = b.derated;
  r.efficiency = b.efficiency;
}

// The point's networks as written (an optimized copy, named NAME.optimized, follows its network)
std::vector<std::shared_ptr<const Network>> as_written(const std::vector<std::shared_ptr<const Network>>& nets) {
  std::vector<std::shared_ptr<const Network>> written;
  for (size_t i = 0; i < nets.size(); ++i)
    if (!(i > 0 && nets[i]->name == nets[i - 1]->name + ".optimized")) written.push_back(nets[i]);
  return written;
}

}  // namespace

void evaluate_point_once(const Scenario& s, const Point& p, EvalContext& ctx, PointResult& out) {
  out.settings = Settings{};
  // (the rows of the last point are written over when rows are kept: see rows_used)
  // (and its summary rows and footprint excesses: see summary_used, excess_used)
  out.platforms.clear(), out.warnings.clear();
  if (!ctx.rows) out.rows.clear();
  size_t rows_used = 0, summary_used = 0, excess_used = 0;
  struct Trim {  // the lists cut to what this point wrote, however it ends
    PointResult& out;
    size_t& rows;
    size_t& summary;
    size_t& excess;
    bool keep_rows;
    ~Trim() {
      if (keep_rows) out.rows.resize(rows);
      out.summary.resize(summary);
      out.footprint_excess.resize(excess);
    }
  } trim{out, rows_used, summary_used, excess_used, ctx.rows};
  out.text_end = {};
  Diags d;
  Env with_vars;
  const Env& env = point_env(s, p, ctx, with_vars, d);
  out.settings = point_settings(s, env, ctx.ev, d);
  thread_local PointLists lists;  // (per thread: a point allocates none of them)
  if (lists.busy) throw std::logic_error("evaluate_point: called within itself");
  struct Clear {
    PointLists& l;
    ~Clear() { l.plat_nodes.clear(), l.nets.clear(), l.net_kernels.clear(), l.net_locs.clear(), l.net_repeats.clear(), l.busy = false; }
  } clear_lists{lists};
  lists.busy = true;
  auto& [plat_nodes, nets, net_kernels, net_locs, net_repeats, busy_] = lists;
  bind_platforms(s, env, ctx, out, plat_nodes, d);
  bind_networks(s, env, ctx, out.settings, lists, d);
  if (!d.empty()) throw at_point(d, p);

  if (ctx.on_networks) ctx.on_networks(p, as_written(nets));
  MemoryModel mm = out.settings.memory_model;
  // rows with their names and shapes: kept, or handed to a script's efficiency model or metrics
  const bool full_rows = ctx.rows || (ctx.hooks && (ctx.hooks->has_efficiency() || !ctx.hooks->metric_names().empty()));
  if (ctx.rows) {  // every row of the point, in one allocation
    size_t layers = 0;
    for (const auto& net : nets) layers += net->layers.size();
    out.rows.reserve(std::max(out.rows.size(), layers * out.platforms.size()));
  }
  for (size_t pi = 0; pi < out.platforms.size(); ++pi) {
    const Platform& pl = *out.platforms[pi];
    const bool auto_level = out.settings.memory_level == "auto";  // the cache-aware roofline: per layer
    // ideal: summed as fused is, with no launch
    const bool fused = out.settings.execution == Execution::Fused || out.settings.execution == Execution::Ideal;
    const bool eager = out.settings.execution == Execution::Eager;
    const double launch = out.settings.execution == Execution::Fused ? pl.runtime.launch_overhead_s : 0;
    // a kernel model's times hold the gap of the CUDA graph they were timed in: graph mode's gap comes out of them
    const double graph_gap = out.settings.execution == Execution::Graph && pl.kernel_model.active() ? std::max(0.0, pl.runtime.graph_gap_s) : 0;
    const MemoryLevel* mem = point_level(out.settings, pl, plat_nodes[pi]->loc, d);
    if (!mem) continue;
    for (size_t ni = 0; ni < nets.size(); ++ni) {
      const Network& net = *nets[ni];
      SummaryRow& sum = next_slot(out.summary, summary_used);
      if (!open_summary(sum, p, pl, net, *net_locs[ni], plat_nodes[pi]->loc, d)) continue;
      const Parallelism& par = net.parallel;
      // the links the network's collectives run on: tensor parallelism's all-reduces among its T
      // GPUs, expert parallelism's all-to-all among T × E, a pipeline's sends among T × P
      const InterconnectLevel* link = par.tensor > 1 ? pl.link_for(par.tensor) : nullptr;
      const InterconnectLevel* expert_link = par.expert > 1 ? pl.link_for(par.tensor * par.expert) : nullptr;
      const InterconnectLevel* stage_link = par.pipeline > 1 ? pl.link_for(par.tensor * par.pipeline) : nullptr;
      // a pipeline (or micro-batches run one after another): each layer's stage, the tensors each
      // stage sends on, and the stages' sums (see finish_pipeline)
      const bool staged = par.pipeline > 1 || par.micro_batches > 1;
      thread_local PipelinePlan pipe;
      if (staged && !plan_pipeline(net, pipe, d, *net_locs[ni])) continue;
      std::shared_ptr<const KernelIndex> made;  // (when the network has none kept)
      const KernelIndex* kix = net_kernels[ni].get();
      if (!kix) made = std::make_shared<const KernelIndex>(index_kernels(net)), kix = made.get();
      thread_local std::vector<KernelTime> kernels;  // (plain numbers: its room is reused from point to point)
      reset_kernels(kernels, kix->count, eager);
      // each layer's roofline on this platform, for the later layers that do the same work
      // (Layer::same_as): they take it instead of computing it again (not for a script's
      // efficiency model or metrics, which see the layer's name)
      const bool reuse = !(ctx.hooks && (ctx.hooks->has_efficiency() || !ctx.hooks->metric_names().empty()));
      thread_local std::vector<Bounded> bounded;
      if (reuse) bounded.resize(std::max(bounded.size(), net.layers.size()));
      Row scratch;
      const size_t rows_base = rows_used;  // this network's first row on this platform
      Tally tally{net, *kix, kernels, sum, pipe, eager, staged};
      const LayerPricing lp{pl, out.settings, ctx, d, plat_nodes[pi]->loc, mem, auto_level, full_rows, mm, graph_gap, par, link, expert_link};
      const std::vector<NetworkPlan::Repeat>* repeats = net_repeats[ni];
      size_t next_repeat = 0;  // the first repeat whose second copy is not reached yet
      thread_local std::vector<KernelSpan> spans;  // (in kernel order: repeats come in layer order)
      thread_local std::vector<SpanTimes> span_times;
      spans.clear(), span_times.clear();
      for (size_t li = 0; li < net.layers.size(); ++li) {
        // summary only, at a repeat's second copy, when every later copy borrows the first copy's
        // layers: their totals at once (see add_copies)
        if (repeats && next_repeat < repeats->size() && li == (*repeats)[next_repeat].begin + (*repeats)[next_repeat].period) {
          const NetworkPlan::Repeat& R = (*repeats)[next_repeat++];
          if (R.held && reuse && !full_rows && !staged && add_copies(net, R, *kix, bounded, sum, kernels, launch, spans, span_times)) {
            li = R.begin + R.period * R.copies - 1;
            continue;
          }
        }
        const Layer& L = net.layers[li];
        // summary only: a layer doing the same work as an earlier one adds that layer's roofline
        // to the totals, and nothing else is made (no row is kept). Its compute roof is the
        // earlier layer's (the same precisions), found there.
        if (reuse && !full_rows && L.same_as >= 0 && static_cast<size_t>(L.same_as) < li) {
          const Bounded& b = bounded[static_cast<size_t>(L.same_as)];
          tally(li, net.layers[static_cast<size_t>(L.same_as)].cost, b.bytes, b.theoretical, b.derated, b.host, b.extra);  // (L's may be borrowed)
          continue;
        }
        if (L.borrowed) throw std::logic_error("evaluate_point: layer '" + L.name + "' has no shapes of its own");
        const ComputeRoof* roof = pl.roof_for(L.compute_dtype());
        if (!roof) {
          report_missing_roof(pl, net, L, plat_nodes[pi]->loc, d);
          break;
        }
        // kept rows: the last point's row in this place written over (its strings' and lists'
        // storage reused); otherwise one row's room (summary only: its strings stay empty)
        Row& r = ctx.rows ? next_slot(out.rows, rows_used) : scratch;
        if (full_rows) r.clear();
        else scratch.efficiency = Efficiency{}, scratch.metrics.clear();
        start_row(r, p.index, pl, net, L, li, *roof, *mem, *kix, full_rows, ctx.rows, out.rows, rows_base);
        // summary only: the layer's cost is read in place (a row's copy holds two vectors)
        if (full_rows) r.cost = L.cost;
        const OpCost& cost = L.cost;
        double host = -1;  // the host time of the layer's class in eager mode (-1: the platform's)
        LayerExtra extra;  // its assumed parts and error band
        if (reuse && L.same_as >= 0 && static_cast<size_t>(L.same_as) < li) {
          const Bounded& b = bounded[li] = bounded[static_cast<size_t>(L.same_as)];
          take_twin(r, b, static_cast<size_t>(L.same_as), rows_base, ctx.rows, full_rows, out.rows);
          host = b.host;
          extra = b.extra;
        } else {
          bool algorithm = false;
          const MemoryLevel* lmem = price_layer(lp, L, *roof, r, host, extra, algorithm);
          if (!lmem) break;
          if (reuse) bounded[li] = Bounded{r.bytes, lmem, r.theoretical, r.derated, r.efficiency, host, algorithm, extra};
        }
        if (extra.lo != 0 || extra.hi != 0) sum.banded = true;
        tally(li, cost, r.bytes, r.theoretical, r.derated, host, extra);
      }
      sum_kernels(kernels, spans, span_times, out.settings, pl, net, fused, launch, sum);
      finish_sums(net, out.settings, staged, pipe, stage_link, sum);
      sum.kernels = static_cast<double>(kernels.size());
      close_summary(sum, net, pl, *net_locs[ni], out.footprint_excess, excess_used);
    }
  }
  if (!d.empty()) throw at_point(d, p);
}

}  // namespace rsim
