// What the evaluation's files share (not for other rooms): a point's platforms and networks bound
// (evaluate_point_once's first half: the platforms resolved with the point's `${…}`, the networks
// built or re-bound in place from a worker's cache), the point evaluated, requests merged, a row's
// finiteness check, a pipeline's stages.
#pragma once
#include <cmath>
#include <memory>
#include <string>
#include <vector>

#include "engine/eval/evaluate.hpp"

namespace rsim {

// The point's working lists, kept per thread so that a point allocates none of them; emptied when
// the point ends (they hold the networks, which a later point re-binds in place only when no
// one else holds them)
struct PointLists {
  std::vector<const CNode*> plat_nodes;
  std::vector<std::shared_ptr<const Network>> nets;
  std::vector<std::shared_ptr<const KernelIndex>> net_kernels;  // of each network (built once with its plan)
  std::vector<const SourceLoc*> net_locs;                       // where each network is used, for warnings
  // of each network re-bound with borrowing: its plan's repeats (NetworkPlan::Repeat); nullptr otherwise
  std::vector<const std::vector<NetworkPlan::Repeat>*> net_repeats;
  bool busy = false;
};

// The point's platforms, each resolved with its `${…}` substituted (one without any was resolved once
// for the run), into out.platforms, and the scenario node of each into plat_nodes
void bind_platforms(const Scenario& s, const Env& env, EvalContext& ctx, PointResult& out, std::vector<const CNode*>& plat_nodes, Diags& d);

// The point's networks, built or re-bound (with their optimized copies after the passes), into the
// lists: each network, its kernel index, where it is used and its plan's repeats
void bind_networks(const Scenario& s, const Env& env, EvalContext& ctx, const Settings& st, PointLists& lists, Diags& d);

// One point evaluated (evaluate.cpp): every network on every platform, requests not merged
void evaluate_point_once(const Scenario& s, const Point& p, EvalContext& ctx, PointResult& out);

// A request's rows: its prefill and its decode steps at contexts N … N+M−1 merged into one summary
// row per platform (evaluate_request.cpp)
void merge_requests(const Scenario& s, const Point& p, EvalContext& ctx, PointResult& out);

// A layer's parts of its derated times from assumed figures, and what a calibrated platform's
// error band adds at its 10th and 90th percentile (added into its kernel's)
struct LayerExtra {
  double acompute = 0, amemory = 0, acomm = 0, lo = 0, hi = 0;
};

// What a layer's pricing reads of its platform and network at a point (evaluate_point_once sets it
// once per network on each platform)
struct LayerPricing {
  const Platform& pl;
  const Settings& st;
  EvalContext& ctx;
  Diags& d;
  const SourceLoc& plat_loc;  // where the scenario names the platform
  const MemoryLevel* mem;     // the point's memory level (memory_level: auto: each layer's, by its bytes)
  bool auto_level;
  bool full_rows;             // rows with their names and shapes (kept, or seen by a script)
  MemoryModel mm;
  double graph_gap;           // what a kernel model's times give up under execution: graph
  const Parallelism& par;
  const InterconnectLevel* link;         // tensor parallelism's
  const InterconnectLevel* expert_link;  // expert parallelism's all-to-all
};

// A layer priced afresh into its row (evaluate_layer.cpp): its bytes, both roofs' times, its
// efficiency, a kernel model's time, its collectives, a script's metrics; its class's host overhead
// into host, its assumed parts and error band into extra, whether a platform's algorithm changed its
// work into algorithm. Returns its memory level, or nullptr when an error went into lp.d (the
// network's loop stops)
const MemoryLevel* price_layer(const LayerPricing& lp, const Layer& L, const ComputeRoof& roof, Row& r, double& host, LayerExtra& extra, bool& algorithm);

// Whether every number of a row is finite (per layer, in the evaluation's loop)
// Whether every number of a row is finite, in one sum: a NaN or an infinity makes the sum one
// too. When it is not, nonfinite_field looks closer (a sum that only overflows, or a layer's legal
// infinite intensity, is not an error).
inline bool sum_is_finite(const Row& r, const OpCost& cost) {
  double sum = cost.macs + cost.flops + cost.params + cost.weight_bytes + r.bytes + r.efficiency.compute + r.efficiency.bandwidth;
  for (const auto* rp : {&r.theoretical, &r.derated})
    sum += rp->peak_flops_per_s + rp->bandwidth_bytes_per_s + rp->attainable_flops_per_s + rp->compute_time_s + rp->memory_time_s + rp->time_s +
           rp->intensity;
  for (double v : cost.input_bytes) sum += v;
  for (double v : cost.output_bytes) sum += v;
  for (double m : r.metrics) sum += m;
  return std::isfinite(sum);
}

// A located error for the first number of a layer's row that is NaN or infinite: true if there is
// one (evaluate_rows.cpp)
bool report_nonfinite(const Row& r, const Layer& L, const Platform& pl, const ComputeRoof& roof, const MemoryLevel& mem, const SourceLoc& plat, Diags& d);

// A network over parallel.pipeline stages (see plan_pipeline), and each stage's sums at one
// platform (see finish_pipeline).
struct PipelinePlan {
  struct Stage {
    double time = 0, derated = 0;  // its layers' roofline times (theoretical, derated), one micro-batch
    double params = 0, weights = 0, kv = 0, activations = 0;  // one GPU's: parameters, resident weights, KV cache, largest layer's activations
    double send_bytes = 0, sends = 0;  // tensors it sends on to later stages, one micro-batch
  };
  std::vector<int> stage_of;  // per layer
  std::vector<Stage> stages;
};

// A network's layers cut into parallel.pipeline stages; false (an error in d) when it cannot be
// (evaluate_pipeline.cpp)
bool plan_pipeline(const Network& net, PipelinePlan& pp, Diags& d, const SourceLoc& loc);
// A step of micro-batches through the stages: the network's summary (evaluate_pipeline.cpp)
void finish_pipeline(const Network& net, const PipelinePlan& pp, const InterconnectLevel* link, SummaryRow& sum);

}  // namespace rsim
