// A request's rows (Request: `request: {prompt: N, generate: M}` on a network): its prefill and its
// decode steps merged into one summary row per platform, after the point's own evaluation.
#include "engine/eval/bind.hpp"

#include <cmath>
#include <map>

namespace rsim {

// A request's rows: its prefill and its decode steps at contexts N … N+M−1 merged into one summary
// row per platform (see Request). The decode entry was evaluated at context N with the point; the
// later steps are evaluated here, summary only, in the request's own scenario.
void merge_requests(const Scenario& s, const Point& p, EvalContext& ctx, PointResult& out) {
  Env env = p.bindings;
  for (const auto& [name, node] : s.vars) env.emplace_back(name, substitute(node.scalar, env, ctx.ev, node.loc));
  for (const Request& q : s.requests) {
    auto number = [&](const CNode& n, const char* what, double most) -> long long {
      const std::string text = n.is_scalar() ? substitute(n.scalar, env, ctx.ev, n.loc) : "";
      char* end = nullptr;
      const double v = std::strtod(text.c_str(), &end);
      if (text.empty() || *end || !(v >= 1) || v > most || v != std::floor(v))
        throw ConfigError(n.loc, std::string("request ") + what + " must be a whole number of tokens from 1 to " + format_number(most) + ", got '" + text + "'");
      return static_cast<long long>(v);
    };
    const long long prompt = number(q.prompt, "prompt", 1e7), generate = number(q.generate, "generate", 1e6);
    const std::string decode_name = q.name + ".decode";
    // per platform: the sums of the decode steps' times, and the last step's memory
    struct Acc {
      double time = 0, derated = 0, flops = 0, macs = 0, bytes = 0, comm_bytes = 0, comm_time = 0, kv = 0, steps = 0;
      TimeParts parts, dparts;
      bool banded = false;
      SummaryRow last;
      void add(const SummaryRow& r) {
        parts.add(r.parts), dparts.add(r.dparts), banded = banded || r.banded;
        time += r.time_s, derated += r.derated_time_s, flops += r.flops, macs += r.macs, bytes += r.bytes;
        comm_bytes += r.comm_bytes, comm_time += r.comm_time_s, kv += r.kv_cache_bytes, steps += 1;
        last = r;
      }
    };
    std::map<std::string, Acc> acc;
    // with an execution mode of its own the decode step at N is evaluated again (below), else the
    // point's is taken; continuous batching evaluates its own contexts. (settings.execution: ideal
    // overrides a request's own modes: split_requests leaves them out)
    if (q.decode_execution.empty() && !q.continuous)
      for (const SummaryRow& r : out.summary)
        if (r.network == decode_name) acc[r.platform].add(r);
    if (!ctx.request_ctx) {
      ctx.request_ctx = std::make_shared<EvalContext>(EvalContext{ctx.ops, ctx.platforms, ctx.ev, ctx.hooks, ctx.models, ctx.importer});
      ctx.request_ctx->rows = false;
      ctx.request_ctx->fixed_platforms = ctx.fixed_platforms;
    }
    std::map<std::string, SummaryRow> prefill_row;  // a prefill with its own execution mode: per platform
    if (q.prefill_only) {
      PointResult pre;
      evaluate_point_once(*q.prefill_only, p, *ctx.request_ctx, pre);
      for (const SummaryRow& r : pre.summary) prefill_row[r.platform] = r, out.request_layer_evaluations += static_cast<size_t>(r.layers);
    }
    {
      PointResult step;
      Point at = p;
      at.bindings.emplace_back(q.var, "");
      // continuous batching: the B sequences' contexts spread evenly over N … N+M−1, a step at their
      // mean N + (M − 1)/2 (two steps, at the integers on either side, when it is a half: a
      // step's cost is linear in the context, so their mean is the spread batch's)
      std::vector<long long> contexts;
      if (q.continuous) {
        contexts.push_back(prompt + (generate - 1) / 2);
        if ((generate - 1) % 2) contexts.push_back(prompt + generate / 2);
      } else {
        for (long long c = q.decode_execution.empty() ? prompt + 1 : prompt; c < prompt + generate; ++c) contexts.push_back(c);
      }
      size_t step_no = 0;
      for (long long c : contexts) {
        // a long request is many evaluations in one point: an embedding's stop is asked here too
        if (ctx.should_stop && ++step_no % 64 == 0 && ctx.should_stop()) throw Interrupted();
        at.bindings.back().second = std::to_string(c);
        evaluate_point_once(*q.decode_only, at, *ctx.request_ctx, step);
        for (const SummaryRow& r : step.summary) acc[r.platform].add(r), out.request_layer_evaluations += static_cast<size_t>(r.layers);
      }
    }
    // the request's row in place of its prefill's; its decode row (context N) removed
    std::vector<SummaryRow> merged;
    merged.reserve(out.summary.size());
    for (SummaryRow& r : out.summary) {
      if (r.network == decode_name) continue;
      if (r.network == q.name && acc.count(r.platform)) {
        const Acc& a = acc[r.platform];
        const double m = static_cast<double>(generate);
        r.phase = "request";
        r.prompt = static_cast<double>(prompt), r.generate = m;
        r.ttft_s = r.time_s, r.derated_ttft_s = r.derated_time_s;
        if (auto it = prefill_row.find(r.platform); it != prefill_row.end()) {
          r.ttft_s = it->second.time_s, r.derated_ttft_s = it->second.derated_time_s;
          r.parts = it->second.parts, r.dparts = it->second.dparts;
        }
        const TimeParts pre = r.parts, dpre = r.dparts;  // the prefill's
        r.banded = r.banded || a.banded;
        if (q.continuous) {
          // one steady-state step: a decode token for each of the B sequences, and the prefill of
          // the B / M prompts that replace the requests that finished (one prompt's prefill each,
          // r's: its entry ran at batch 1); the work and memory columns are that step's
          const double batch = a.last.batch, share = batch / m, n = a.steps;
          r.tpot_s = a.time / n + share * r.ttft_s, r.derated_tpot_s = a.derated / n + share * r.derated_ttft_s;
          r.time_s = r.ttft_s + m * r.tpot_s, r.derated_time_s = r.derated_ttft_s + m * r.derated_tpot_s;
          // e2e = ttft + m · (the mean step + share · ttft): the parts likewise
          r.parts.scale(1 + m * share), r.parts.add(a.parts, m / n);
          r.dparts.scale(1 + m * share), r.dparts.add(a.dparts, m / n);
          r.flops = a.flops / n + share * r.flops, r.macs = a.macs / n + share * r.macs, r.bytes = a.bytes / n + share * r.bytes;
          r.comm_bytes = a.comm_bytes / n + share * r.comm_bytes, r.comm_time_s = a.comm_time / n + share * r.comm_time_s;
          r.tokens = batch * m * r.data_parallel;
          r.batch = batch;
          r.continuous = true;
          r.kv_cache_bytes = a.kv / n;  // (the mean context's)
          r.activation_bytes = std::max(r.activation_bytes, a.last.activation_bytes);
          r.intensity = r.flops > 0 ? (r.bytes > 0 ? r.flops / r.bytes : INFINITY) : 0;
          r.achieved_flops_per_s = r.tpot_s > 0 ? r.flops / r.tpot_s : 0;
          r.derated_achieved_flops_per_s = r.derated_tpot_s > 0 ? r.flops / r.derated_tpot_s : 0;
          r.memory_footprint_bytes = r.weight_footprint_bytes + r.kv_cache_bytes + r.activation_bytes;
          merged.push_back(std::move(r));
          continue;
        }
        r.tpot_s = a.time / m, r.derated_tpot_s = a.derated / m;
        r.time_s = r.ttft_s + a.time, r.derated_time_s = r.derated_ttft_s + a.derated;
        r.parts = pre, r.parts.add(a.parts);
        r.dparts = dpre, r.dparts.add(a.dparts);
        r.tokens = r.batch * m * r.data_parallel;  // generated tokens (one per sequence and decode step, on every replica)
        r.flops += a.flops, r.macs += a.macs, r.bytes += a.bytes, r.comm_bytes += a.comm_bytes, r.comm_time_s += a.comm_time;
        r.intensity = r.flops > 0 ? (r.bytes > 0 ? r.flops / r.bytes : INFINITY) : 0;
        r.achieved_flops_per_s = r.time_s > 0 ? r.flops / r.time_s : 0;
        r.derated_achieved_flops_per_s = r.derated_time_s > 0 ? r.flops / r.derated_time_s : 0;
        // memory: the last step's (the longest context), or the prefill's if larger
        r.kv_cache_bytes = std::max(r.kv_cache_bytes, a.last.kv_cache_bytes);
        r.activation_bytes = std::max(r.activation_bytes, a.last.activation_bytes);
        r.memory_footprint_bytes = r.weight_footprint_bytes + r.kv_cache_bytes + r.activation_bytes;
      }
      merged.push_back(std::move(r));
    }
    out.summary = std::move(merged);
  }
}

}  // namespace rsim
