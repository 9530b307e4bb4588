// A point's platforms and networks bound: see bind.hpp.
#include "engine/eval/bind.hpp"

#include <algorithm>

#include "engine/graph/passes.hpp"

namespace rsim {


std::map<const CNode*, std::shared_ptr<const Platform>> resolve_fixed_platforms(const Scenario& s, PlatformCache& cache) {
  std::map<const CNode*, std::shared_ptr<const Platform>> fixed;
  for (const auto& raw : s.platforms) {
    if (tree_has_expr(raw)) continue;
    Diags pd;
    try {
      auto pl = std::make_shared<const Platform>(resolve_platform(raw, cache, pd));
      if (pd.empty() && !pl->name.empty()) fixed.emplace(&raw, std::move(pl));
    } catch (const ConfigError&) {  // reported by the point that meets it
    }
  }
  return fixed;
}

// The point's platforms, each resolved with its `${…}` substituted (one without any was resolved
// once for the run), into out.platforms, and the scenario node of each into plat_nodes
void bind_platforms(const Scenario& s, const Env& env, EvalContext& ctx, PointResult& out, std::vector<const CNode*>& plat_nodes, Diags& d) {
  for (const auto& raw : s.platforms) {
    // an entry without `${…}` is the same platform at every point (resolve_fixed_platforms); a
    // context made without that (one evaluator) keeps it after its first point
    std::shared_ptr<const Platform> pl;
    if (auto it = ctx.fixed_platforms.find(&raw); it != ctx.fixed_platforms.end()) {
      pl = it->second;
    } else {
      Diags pd;
      CNode entry = substitute_tree(raw, env, ctx.ev, pd);
      pl = std::make_shared<const Platform>(resolve_platform(entry, ctx.platforms, pd));
      if (pd.empty() && !pl->name.empty() && !tree_has_expr(raw)) ctx.fixed_platforms.emplace(&raw, pl);
      d.merge(pd);
    }
    if (!pl->name.empty()) {
      for (const auto& prev : out.platforms)
        if (prev->name == pl->name)
          d.error(raw.loc, "platform '" + pl->name + "' appears twice; give a what-if copy its own name");
      out.platforms.push_back(std::move(pl));
      plat_nodes.push_back(&raw);
    }
  }
}

// The point's networks, built or re-bound (with their optimized copies after the passes), into the
// lists: each network, its kernel index, where it is used and its plan's repeats
void bind_networks(const Scenario& s, const Env& env, EvalContext& ctx, const Settings& st, PointLists& lists, Diags& d) {
  auto& nets = lists.nets;
  auto& net_kernels = lists.net_kernels;
  auto& net_locs = lists.net_locs;
  auto& net_repeats = lists.net_repeats;
  BuildOptions bo{ctx.ops, ctx.ev, st.dtype, st.flops_per_mac, st.precision, st.dtype_given, st.parallel};
  auto optimized = [&](const Network& net) {  // the same network after the passes, beside the original
    Network opt = apply_passes(net, s.passes);
    opt.name += ".optimized";
    return std::make_shared<const Network>(std::move(opt));
  };
  // Summary only, without passes or a script's efficiency model or metrics: a layer doing an
  // earlier layer's work is read through Layer::same_as (its totals are that layer's), so re-binding
  // need not copy that layer's shapes and cost into it (Layer::borrowed)
  const bool borrow = !ctx.rows && s.passes.empty() && !(ctx.hooks && (ctx.hooks->has_efficiency() || !ctx.hooks->metric_names().empty()));
  for (const auto& raw : s.networks) {
    // A plain network is built once per worker and re-bound at each point: only its `${…}` are
    // substituted again, and only layers whose attributes or input shapes change are re-inferred
    // (not with scripts, whose operators run user code; not ONNX files). A zoo model is resolved
    // at every point (its arguments may change); while its network node stays the same, it is
    // re-bound with the point's arguments like a plain one.
    const bool rebindable = s.scripts.empty() && raw.is_map() && !raw.find("onnx");
    const bool model = rebindable && raw.find("model");
    const bool plain = rebindable && !model;
    auto code = [](const std::optional<DType>& t) { return t ? static_cast<int>(*t) : -1; };
    const Precision& pr = st.precision;
    EvalContext::NetKey key{&raw,         st.dtype, st.flops_per_mac,       code(pr.weights),
                            code(pr.kv),  code(pr.compute),   pr.quant_group, st.parallel.tensor, st.parallel.overlap_full,
                            code(pr.embedding),
                            {st.parallel.pipeline, st.parallel.micro_batches, st.parallel.expert, st.parallel.data}};
    size_t first = nets.size();
    bool bound = false;
    std::optional<ModelUse> resolved;  // a model and its arguments at this point (its node is not copied)
    if (model) {
      Diags nd;
      resolved = resolve_model(raw, env, ctx, nd);
      if (!nd.empty() || !resolved->model) {
        d.merge(nd);
        continue;
      }
    }
    auto it = rebindable ? ctx.networks.find(key) : ctx.networks.end();
    // the network node of a model is the zoo's node with its name: the same while both are
    auto same_model = [&](const EvalContext::NetworkCache& c) {
      return c.source && c.model == resolved->model && c.preset == resolved->preset && c.name.has_value() == resolved->name.has_value() &&
             (!c.name || same_tree(*c.name, *resolved->name)) && c.parallel.has_value() == resolved->parallel.has_value() &&
             (!c.parallel || same_tree(*c.parallel, *resolved->parallel));
    };
    if (it != ctx.networks.end() && model && !same_model(it->second)) {
      ctx.networks.erase(it);  // another model (or another name): built anew below
      it = ctx.networks.end();
    }
    if (it != ctx.networks.end()) {
      EvalContext::NetworkCache& c = it->second;
      if (c.net.use_count() > 1) c.net = std::make_shared<Network>(*c.net);  // an earlier point still holds it
      bool changed = false;
      if (rebind_network(c.plan, model ? resolved->env : env, bo, *c.net, changed, borrow)) {
        if (changed && !s.passes.empty()) {
          c.optimized = optimized(*c.net);
          c.opt_kernels = std::make_shared<const KernelIndex>(index_kernels(*c.optimized));
        }
        nets.push_back(c.net);
        net_kernels.push_back(c.kernels);
        net_repeats.resize(nets.size());
        net_repeats.back() = borrow ? &c.plan.repeats : nullptr;
        if (c.optimized) nets.push_back(c.optimized), net_kernels.push_back(c.opt_kernels);
        bound = true;
      } else {
        ctx.networks.erase(it);  // the structure changed (or a value is wrong): built anew below
      }
    }
    if (!bound) {
      Diags nd;  // each network reports its own errors even when an earlier part failed
      NetworkSource src = model ? NetworkSource{model_node(*resolved), resolved->env} : resolve_network(raw, env, ctx, nd);
      if (!nd.empty()) {
        d.merge(nd);
        continue;
      }
      NetworkPlan plan;
      // a plain entry is built from the scenario's own node, a model from its node kept with the
      // plan: the plan points into it
      std::shared_ptr<const CNode> source = model ? std::make_shared<const CNode>(std::move(src.node)) : nullptr;
      auto net = plain   ? std::make_shared<Network>(build_network(raw, env, bo, nd, &plan))
                 : model ? std::make_shared<Network>(build_network(*source, src.env, bo, nd, &plan))
                         : std::make_shared<Network>(build_network(src.node, src.env, bo, nd));
      if (rebindable && nd.empty()) mark_same_work(*net);  // (a script's operators are never rebindable)
      nets.push_back(net);
      d.merge(nd);
      std::shared_ptr<const Network> opt;
      if (!s.passes.empty() && nd.empty()) nets.push_back(opt = optimized(*net));
      if (rebindable && nd.empty()) {
        if (ctx.networks.size() >= 64) ctx.networks.clear();  // settings that change per point: bounded
        auto kernels = std::make_shared<const KernelIndex>(index_kernels(*net));
        auto opt_kernels = opt ? std::make_shared<const KernelIndex>(index_kernels(*opt)) : nullptr;
        EvalContext::NetworkCache& c = ctx.networks[key] = EvalContext::NetworkCache{source, std::move(plan), net, opt, kernels, opt_kernels};
        if (model) c.model = resolved->model, c.name = resolved->name, c.preset = resolved->preset, c.parallel = resolved->parallel;
        net_kernels.resize(first);
        net_kernels.push_back(kernels);
        if (opt) net_kernels.push_back(opt_kernels);
      }
    }
    net_locs.resize(nets.size(), &raw.loc);
    net_kernels.resize(nets.size());
    net_repeats.resize(nets.size());
    for (size_t k = first; k < nets.size(); ++k)
      for (size_t i = 0; i < k; ++i)
        if (nets[i]->name == nets[k]->name && !nets[k]->name.empty())
          d.error(raw.loc, "network '" + nets[k]->name + "' appears twice; names must be unique");
  }
}

}  // namespace rsim
