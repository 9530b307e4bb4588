// A point's platforms and networks bound (evaluate_point_once's first half): the platforms resolved
// with the point's `${…}`, the networks built or re-bound in place from a worker's cache.
#pragma once
#include <memory>
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

// The point's platforms, each resolved with its `${…}` substituted (one without any is resolved once
// per worker), into out.platforms, and the scenario node of each into plat_nodes
void bind_platforms(const Scenario& s, const Env& env, EvalContext& ctx, PointResult& out, std::vector<const CNode*>& plat_nodes, Diags& d);

// The point's networks, built or re-bound (with their optimized copies after the passes), into the
// lists: each network, its kernel index, where it is used and its plan's repeats
void bind_networks(const Scenario& s, const Env& env, EvalContext& ctx, const Settings& st, PointLists& lists, Diags& d);

// One point evaluated (evaluate.cpp): every network on every platform, requests not merged
void evaluate_point_once(const Scenario& s, const Point& p, EvalContext& ctx, PointResult& out);

// A request's rows: its prefill and its decode steps at contexts N … N+M−1 merged into one summary
// row per platform (evaluate_request.cpp)
void merge_requests(const Scenario& s, const Point& p, EvalContext& ctx, PointResult& out);

}  // namespace rsim
