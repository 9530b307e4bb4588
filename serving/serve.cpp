#include "serving/serve.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <map>
#include <optional>

#include "engine/model/config.hpp"
#include "engine/model/expr.hpp"
#include "engine/model/keys.hpp"
#include "engine/model/units.hpp"
#include "serving/pricer.hpp"

namespace rsim::serving {

namespace {

// "10", "10/s", "0.5 /s": requests per second
std::optional<double> read_rate(const CNode& n, Diags& d) {
  std::string t = n.is_scalar() ? n.scalar : "";
  const size_t slash = t.find('/');
  std::string unit = slash == std::string::npos ? "" : t.substr(slash);
  if (slash != std::string::npos) t = t.substr(0, slash);
  char* end = nullptr;
  const double v = std::strtod(t.c_str(), &end);
  while (end && *end == ' ') ++end;
  unit.erase(std::remove(unit.begin(), unit.end(), ' '), unit.end());
  if (t.empty() || (end && *end) || !(unit.empty() || unit == "/s")) {
    d.error(n.loc, "rate must be requests per second, e.g. 10 or '10/s'");
    return std::nullopt;
  }
  if (!(v > 0) || !std::isfinite(v)) {
    d.error(n.loc, "rate must be above 0 requests per second", {Note{{}, "for every request at once, use process: burst"}});
    return std::nullopt;
  }
  return v;
}

// A quantity (`key: '50 GB/s'`) above 0 (or, with `zero_ok`, at least 0) into dst; else a located error
void read_quantity(const CNode& x, const char* key, Dim dim, const char* example, bool zero_ok, double& dst, Diags& d) {
  const QuantityResult q = x.is_scalar() ? parse_quantity(x.scalar, dim) : QuantityResult{std::nullopt, std::string("a quantity such as '") + example + "'"};
  if (!q.value || !(zero_ok ? *q.value >= 0 : *q.value > 0))
    d.error(x.loc, std::string(key) + ": " + (q.value ? std::string(zero_ok ? "must be 0 or more" : "must be above 0") : q.error));
  else dst = *q.value;
}

// `replicas:` of a deployment or a pool: at least one engine
long long read_replicas(const CNode& x, Diags& d) {
  const long long n = to_integer(x, d, "replicas").value_or(1);
  if (n < 1) d.error(x.loc, "replicas must be at least 1 (an engine)");
  return std::max(1LL, n);
}

void read_lengths(const CNode& node, Lengths& l, Diags& d, const char* what) {
  MapReader m(node, keys::map("serving.lengths"), what, d);
  if (!m.ok()) return;
  if (const CNode* v = m.get("dist")) {
    const std::string s = to_string(*v, d, "dist").value_or("fixed");
    l.dist = s == "uniform" ? Lengths::Dist::Uniform : s == "normal" ? Lengths::Dist::Normal : s == "lognormal" ? Lengths::Dist::Lognormal : Lengths::Dist::Fixed;
  }
  if (const CNode* v = m.get("mean")) l.mean = to_number(*v, d, "mean").value_or(l.mean);
  if (const CNode* v = m.get("cv")) l.cv = to_number(*v, d, "cv").value_or(l.cv);
  if (const CNode* v = m.get("min")) l.min = to_integer(*v, d, "min").value_or(l.min);
  if (const CNode* v = m.get("max")) l.max = to_integer(*v, d, "max").value_or(l.max);
  if (l.min > l.max) d.error(node.loc, std::string(what) + ": min " + std::to_string(l.min) + " is above max " + std::to_string(l.max));
  if (l.dist == Lengths::Dist::Uniform && !node.find("max")) d.error(node.loc, std::string(what) + ": a uniform length needs max (and min, default 1)");
  m.finish();
}

void read_workload(const CNode& node, const std::string& scenario_path, ServingSpec& sp, Diags& d) {
  MapReader m(node, keys::map("serving.workload"), "workload", d);
  if (!m.ok()) return;
  Synthetic& w = sp.synthetic;
  const CNode* trace = m.get("trace");
  const CNode* requests = m.get("requests");
  if (trace && requests) d.error(requests->loc, "a workload is a trace or synthetic requests, not both", {Note{trace->loc, "the trace"}});
  if (trace) {
    const std::string t = to_string(*trace, d, "trace").value_or("");
    std::filesystem::path p(t);
    if (p.is_relative()) p = std::filesystem::path(scenario_path).parent_path() / p;
    sp.trace = p.string(), sp.trace_loc = trace->loc;
    for (const char* k : {"arrivals", "prompt", "output", "shared_prefix"})
      if (const CNode* v = m.get(k)) d.error(v->loc, std::string(k) + " describes synthetic requests; a trace gives its own", {Note{trace->loc, "the trace"}});
  } else if (!requests) {
    d.error(node.loc, "a workload needs `trace:` or `requests:`", {Note{{}, "e.g. {requests: 1000, arrivals: {process: poisson, rate: 10/s}, prompt: {mean: 512}, output: {mean: 128}}"}});
  }
  if (requests) w.requests = to_integer(*requests, d, "requests").value_or(w.requests);
  if (const CNode* v = m.get("arrivals")) {
    MapReader a(*v, keys::map("serving.arrivals"), "arrivals", d);
    if (a.ok()) {
      if (const CNode* x = a.get("process")) {
        const std::string s = to_string(*x, d, "process").value_or("poisson");
        w.arrivals.process = s == "gamma" ? Process::Gamma : s == "constant" ? Process::Constant : s == "burst" ? Process::Burst : Process::Poisson;
      }
      if (const CNode* x = a.get("rate")) w.arrivals.rate = read_rate(*x, d).value_or(w.arrivals.rate);
      else if (w.arrivals.process != Process::Burst) d.error(v->loc, "arrivals need a rate (requests per second), or process: burst");
      if (const CNode* x = a.get("cv")) w.arrivals.cv = to_number(*x, d, "cv").value_or(1);
      a.finish();
    }
  }
  if (const CNode* v = m.get("prompt")) read_lengths(*v, w.prompt, d, "prompt");
  if (const CNode* v = m.get("output")) read_lengths(*v, w.output, d, "output");
  if (const CNode* v = m.get("concurrency")) {
    w.concurrency = to_integer(*v, d, "concurrency").value_or(0);
    if (requests && w.concurrency > w.requests)
      d.error(v->loc, "concurrency " + std::to_string(w.concurrency) + " is above the " + std::to_string(w.requests) + " requests", {Note{{}, "a closed loop holds at most `requests` in flight"}});
    if (node.find("arrivals")) d.error(v->loc, "a closed loop sends each request when one finishes: give concurrency or arrivals, not both");
  }
  if (const CNode* v = m.get("shared_prefix")) {
    MapReader sp2(*v, keys::map("serving.shared_prefix"), "shared_prefix", d);
    if (sp2.ok()) {
      if (const CNode* x = sp2.require("tokens")) w.shared_prefix_tokens = to_integer(*x, d, "tokens").value_or(0);
      if (const CNode* x = sp2.get("groups")) w.shared_prefix_groups = to_integer(*x, d, "groups").value_or(1);
      sp2.finish();
    }
  }
  if (const CNode* v = m.get("seed")) w.seed = static_cast<uint64_t>(to_integer(*v, d, "seed").value_or(1));
  m.finish();
}

void read_engine(const CNode& node, ServingSpec& sp, Diags& d) {
  MapReader m(node, keys::map("serving.engine"), "engine", d);
  if (!m.ok()) return;
  EngineConfig& e = sp.engine;
  sp.engine_loc = node.loc;
  if (const CNode* v = m.get("scheduler")) e.scheduler = to_string(*v, d, "scheduler").value_or("vllm") == "static" ? EngineConfig::Scheduler::Static : EngineConfig::Scheduler::Vllm;
  if (const CNode* v = m.get("max_num_seqs")) e.max_num_seqs = to_integer(*v, d, "max_num_seqs").value_or(e.max_num_seqs);
  if (const CNode* v = m.get("max_num_batched_tokens")) {
    e.max_num_batched_tokens = to_integer(*v, d, "max_num_batched_tokens").value_or(e.max_num_batched_tokens);
    sp.batched_tokens_loc = v->loc;
  }
  if (const CNode* v = m.get("chunked_prefill")) e.chunked_prefill = to_bool(*v, d, "chunked_prefill").value_or(true);
  if (const CNode* v = m.get("block_size")) e.block_size = to_integer(*v, d, "block_size").value_or(e.block_size);
  if (const CNode* v = m.get("kv_blocks")) e.kv_blocks = to_integer(*v, d, "kv_blocks").value_or(0);
  if (const CNode* v = m.get("gpu_memory_utilization")) {
    sp.gpu_memory_utilization = to_number(*v, d, "gpu_memory_utilization").value_or(0.9);
    if (!(sp.gpu_memory_utilization > 0) || sp.gpu_memory_utilization > 1) d.error(v->loc, "gpu_memory_utilization must be in (0, 1]");
    if (node.find("kv_blocks")) d.error(v->loc, "give kv_blocks or gpu_memory_utilization, not both");
  }
  if (const CNode* v = m.get("prefix_caching")) e.prefix_caching = to_bool(*v, d, "prefix_caching").value_or(false);
  m.get("preemption");  // (recompute, the only one)
  if (const CNode* v = m.get("prefill_execution")) sp.prefill_execution = to_string(*v, d, "prefill_execution").value_or("");
  if (const CNode* v = m.get("decode_execution")) sp.decode_execution = to_string(*v, d, "decode_execution").value_or("graph");
  m.finish();
}

void read_deployment(const CNode& node, ServingSpec& sp, Diags& d) {
  MapReader m(node, keys::map("serving.deployment"), "deployment", d);
  if (!m.ok()) return;
  Deployment& dep = sp.deployment;
  sp.deployment_loc = node.loc;
  if (const CNode* v = m.get("replicas")) dep.replicas = read_replicas(*v, d);
  if (const CNode* v = m.get("router"))
    dep.router = to_string(*v, d, "router").value_or("least_loaded") == "round_robin" ? Deployment::Router::RoundRobin : Deployment::Router::LeastLoaded;
  if (const CNode* v = m.get("disaggregated")) {
    dep.disaggregated = true;
    if (const CNode* r = node.find("replicas"))
      d.error(r->loc, "replicas and disaggregated: do not go together", {Note{v->loc, "give each pool its engines: disaggregated: {prefill: {replicas: P}, decode: {replicas: D}}"}});
    MapReader g(*v, keys::map("serving.disaggregated"), "disaggregated", d);
    if (g.ok()) {
      auto pool = [&](const char* k, long long& dst) {
        if (const CNode* x = g.get(k)) {
          MapReader pm(*x, keys::map("serving.pool"), k, d);
          if (!pm.ok()) return;
          if (const CNode* r = pm.get("replicas")) dst = read_replicas(*r, d);
          pm.finish();
        }
      };
      pool("prefill", dep.prefill_replicas), pool("decode", dep.decode_replicas);
      if (const CNode* x = g.get("link")) sp.link = to_string(*x, d, "link").value_or(""), sp.link_loc = x->loc;
      for (const char* k : {"bandwidth", "latency"})
        if (const CNode* x = g.get(k)) {
          const bool bw = k[0] == 'b';
          read_quantity(*x, k, bw ? Dim::ByteRate : Dim::Time, bw ? "50 GB/s" : "5 us", !bw, bw ? sp.link_bandwidth : sp.link_latency_s, d);
          if (sp.link_loc.known()) d.error(x->loc, std::string("give link or ") + k + " (and " + (bw ? "latency" : "bandwidth") + "), not both", {Note{sp.link_loc, "the link"}});
        }
      g.finish();
    }
  }
  m.finish();
}

// A disaggregated deployment's KV transfer: the KV bytes a token per GPU, over the named level
// (default the platform's last, between nodes) or the given bandwidth and latency
void set_transfer(const ServingSpec& sp, const BatchPricer& pricer, Deployment& dep) {
  if (!dep.disaggregated) return;
  dep.kv_bytes_per_token = pricer.kv_bytes_per_token();
  if (sp.link_bandwidth > 0) {
    dep.link_bandwidth_bytes_per_s = sp.link_bandwidth, dep.link_latency_s = std::max(0.0, sp.link_latency_s), dep.link_name = "given";
    return;
  }
  const std::vector<InterconnectLevel>& links = pricer.links();
  const InterconnectLevel* l = links.empty() ? nullptr : &links.back();
  if (!sp.link.empty()) {
    l = nullptr;
    std::string names;
    for (const InterconnectLevel& x : links) {
      names += (names.empty() ? "" : ", ") + x.name;
      if (x.name == sp.link) l = &x;
    }
    if (!l)
      throw ConfigError(sp.link_loc, "platform '" + pricer.platform_name() + "' has no interconnect level '" + sp.link + "'",
                        {Note{{}, names.empty() ? std::string("it states no interconnect: give bandwidth and latency") : "its levels: " + names}});
  }
  if (!l)
    throw ConfigError(sp.deployment_loc, "platform '" + pricer.platform_name() + "' states no interconnect for the KV cache's transfer",
                      {Note{{}, "give disaggregated: {bandwidth: '50 GB/s', latency: '5 us'}, or an interconnect: level on the platform"}});
  dep.link_bandwidth_bytes_per_s = l->bandwidth_bytes_per_s, dep.link_latency_s = sp.link_latency_s >= 0 ? sp.link_latency_s : l->latency_s, dep.link_name = l->name;
}

// " × 2 engines (least loaded)", " (1 prefill + 2 decode engines, KV over NVLink 4)"; "" for one engine
std::string deployment_text(const Deployment& d) {
  if (d.disaggregated)
    return " (" + std::to_string(d.prefill_replicas) + " prefill + " + std::to_string(d.decode_replicas) + " decode engines, KV over " + d.link_name + ")";
  if (d.replicas > 1) return " × " + std::to_string(d.replicas) + " engines (" + (d.router == Deployment::Router::RoundRobin ? "round robin" : "least loaded") + ")";
  return "";
}

std::string cell(double v) { return std::isfinite(v) ? format_number(v) : ""; }

std::string csv_text(const std::string& s) {
  if (s.find_first_of(",\"\n") == std::string::npos) return s;
  std::string q = "\"";
  for (char c : s) q += c == '"' ? std::string("\"\"") : std::string(1, c);
  return q + "\"";
}

// KV blocks from memory: ⌊(utilization × memory − weights − a full batch's activations) / (block × KV bytes a token)⌋
long long derive_blocks(const ServingSpec& sp, BatchPricer& pricer, const CNode& network) {
  const double mem = pricer.memory_bytes(), per_block = static_cast<double>(sp.engine.block_size) * pricer.kv_bytes_per_token();
  if (!(mem > 0))
    throw ConfigError(network.loc, "platform '" + pricer.platform_name() + "' states no memory size: the KV cache's blocks cannot be derived",
                      {Note{{}, "give serving.engine.kv_blocks, or a memory level's size"}});
  const double act = pricer.activation_bytes(sp.engine.max_num_batched_tokens);
  const double room = sp.gpu_memory_utilization * mem - pricer.weights_bytes() - act;
  if (!(room >= per_block)) {
    char b[320];
    std::snprintf(b, sizeof b, "network '%s' cannot be served on '%s': %.2f GiB of weights and %.2f GiB of activations per GPU leave no KV cache in %.0f %% of %.2f GiB",
                  pricer.network_name().c_str(), pricer.platform_name().c_str(), pricer.weights_bytes() / 1073741824.0, act / 1073741824.0,
                  100 * sp.gpu_memory_utilization, mem / 1073741824.0);
    throw ConfigError(network.loc, b, {Note{{}, "split it over more GPUs (parallel: {tensor: T}), quantize its weights, or raise gpu_memory_utilization"}});
  }
  return static_cast<long long>(std::floor(room / per_block));
}

// A network entry that can be served: a language model used from the zoo or a config
void check_served(const CNode& entry, Diags& d) {
  if (!entry.is_map() || !entry.find("model")) {
    d.error(entry.loc, "serving: serves language models; this network is not one", {Note{{}, "use a zoo transformer (llama3_8b) or {model: hf, args: {config: config.json}}"}});
    return;
  }
  if (const CNode* a = entry.find("args"); a && a->is_map())
    for (const char* k : {"phase", "batch", "seq", "context"})
      if (const CNode* v = a->find(k))
        d.error(v->loc, std::string("a served network takes no `") + k + "`: serving: forms its batches", {Note{{}, "leave the step's shape to the simulation (serving.workload, serving.engine)"}});
  if (entry.find("request")) d.error(entry.find("request")->loc, "a served network takes no request: (serving: sends the requests)");
}

}  // namespace

ServingSpec read_serving(const CNode& node, const std::string& scenario_path, Diags& d) {
  ServingSpec sp;
  MapReader m(node, keys::map("serving"), "serving", d);
  if (!m.ok()) return sp;
  if (const CNode* v = m.require("workload")) read_workload(*v, scenario_path, sp, d);
  if (const CNode* v = m.get("engine")) read_engine(*v, sp, d);
  if (const CNode* v = m.get("deployment")) read_deployment(*v, sp, d);
  if (const CNode* v = m.get("slo")) {
    MapReader sl(*v, keys::map("serving.slo"), "slo", d);
    auto time = [&](const char* k, double& dst) {
      if (const CNode* x = sl.get(k)) read_quantity(*x, k, Dim::Time, "2 s", false, dst, d);
    };
    if (sl.ok()) time("ttft", sp.slo.ttft_s), time("tpot", sp.slo.tpot_s), sl.finish();
  }
  m.finish();
  sp.engine.concurrency = sp.trace.empty() ? sp.synthetic.concurrency : 0;
  return sp;
}

void validate_serving(const Scenario& s, const RunOptions& opt, const std::vector<Point>& points, Diags& d) {
  if (s.serving.is_null()) return;
  if (!s.requests.empty()) d.error(s.serving.loc, "serving: and a network's request: do not go together: serving: sends the requests");
  for (const CNode& n : s.networks) check_served(n, d);
  std::unique_ptr<ExprEvaluator> ev = opt.make_evaluator();
  std::vector<Point> at = points;
  if (at.empty())
    for (size_t i = 0; i < static_cast<size_t>(point_count(s.sweep)); ++i) at.push_back(sweep_point(s.sweep, i));
  std::vector<std::string> traces_read;
  for (const Point& p : at) {
    Diags pd;
    try {
      Env env = p.bindings;
      for (const auto& [name, node] : s.vars) env.emplace_back(name, substitute(node.scalar, env, *ev, node.loc));
      const CNode node = substitute_tree(s.serving, env, *ev, pd);
      const ServingSpec sp = read_serving(node, s.path, pd);
      if (pd.empty() && !sp.trace.empty() && std::find(traces_read.begin(), traces_read.end(), sp.trace) == traces_read.end()) {
        traces_read.push_back(sp.trace);
        read_trace(sp.trace, sp.engine.block_size, sp.trace_loc);
      }
    } catch (const ConfigError& e) {
      pd.add(e);
    }
    for (const Diagnostic& g : pd.list()) {  // each error once, however many points repeat it
      const bool seen = std::any_of(d.list().begin(), d.list().end(), [&](const Diagnostic& o) { return o.message == g.message && o.loc.line == g.loc.line; });
      if (!seen) d.error(g.loc, g.message, g.notes);
    }
  }
}

ServingTables serve_scenario(const Scenario& s, const Catalog& catalog, const RunOptions& opt) {
  ServingTables out;
  {
    Diags d;
    if (!s.requests.empty()) d.error(s.serving.loc, "serving: and a network's request: do not go together: serving: sends the requests");
    for (const CNode& n : s.networks) check_served(n, d);
    d.throw_if_any();
  }
  std::unique_ptr<ExprEvaluator> ev = opt.make_evaluator();
  const std::vector<std::string> vars = sweep_names(s.sweep);
  std::string head = "point";
  for (const auto& v : vars) head += "," + v;
  out.requests_csv = "point,platform,network,request,arrival_s,prompt_tokens,output_tokens,cached_tokens,scheduled_s,first_token_s,finish_s,ttft_s,tpot_s,e2e_s,preemptions,replica,decode_replica,kv_transfer_s,note\n";
  out.serving_csv = head +
                    ",platform,network,requests,duration_s,requests_per_s,input_tokens_per_s,output_tokens_per_s,ttft_mean_s,ttft_p50_s,ttft_p90_s,ttft_p99_s,"
                    "tpot_mean_s,tpot_p50_s,tpot_p90_s,tpot_p99_s,itl_mean_s,itl_p50_s,itl_p90_s,itl_p99_s,e2e_mean_s,e2e_p50_s,e2e_p90_s,e2e_p99_s,"
                    "goodput_requests_per_s,slo_attainment,mean_running,max_running,mean_kv_usage,preemptions,prefix_hit_rate,gpus,kv_blocks,finished,queue_unbounded\n";
  out.timeline_csv = "point,platform,network,t,running,waiting,kv_usage,prompt_tokens_per_s,output_tokens_per_s\n";
  struct Priced {
    std::unique_ptr<PointEvaluator> engine;
    std::unique_ptr<BatchPricer> pricer;
  };
  std::map<std::string, Priced> pricers;
  const size_t n = static_cast<size_t>(point_count(s.sweep));
  // A `serving:` that no `${…}` changes is read once, and its requests made (or its trace read)
  // once: the same for every point
  const bool fixed_spec = !tree_has_expr(s.serving);
  std::optional<ServingSpec> spec;
  std::vector<Request> requests;
  for (size_t pi = 0; pi < n; ++pi) {
    Point p = sweep_point(s.sweep, pi);
    Env env = p.bindings;
    for (const auto& [name, node] : s.vars) env.emplace_back(name, substitute(node.scalar, env, *ev, node.loc));
    if (!spec || !fixed_spec) {
      Diags d;
      spec = read_serving(substitute_tree(s.serving, env, *ev, d), s.path, d);
      d.throw_if_any();
      // (prompt blocks' content hashes only for prefix caching: 8 B a block of every request)
      const long long hash_block = spec->engine.prefix_caching ? spec->engine.block_size : 0;
      requests = spec->trace.empty() ? generate(spec->synthetic, hash_block) : read_trace(spec->trace, hash_block, spec->trace_loc);
    }
    const ServingSpec& sp = *spec;
    if (!sp.engine.chunked_prefill && sp.engine.scheduler == EngineConfig::Scheduler::Vllm)
      for (const Request& r : requests)
        if (r.prompt > sp.engine.max_num_batched_tokens)
          throw ConfigError(sp.batched_tokens_loc.known() ? sp.batched_tokens_loc : sp.engine_loc,
                            "max_num_batched_tokens " + std::to_string(sp.engine.max_num_batched_tokens) + " is below a prompt of " + std::to_string(r.prompt) +
                                " tokens, which without chunked prefill can never be scheduled",
                            {Note{{}, "raise max_num_batched_tokens, or set chunked_prefill: true"}});
    for (size_t pj = 0; pj < s.platforms.size(); ++pj)
      for (size_t nj = 0; nj < s.networks.size(); ++nj) {
        const CNode& plat = s.platforms[pj];
        const CNode& net = s.networks[nj];
        // A pricer (and its evaluator: its caches are keyed by the addresses of the pricer's
        // entries, which a later pricer's could take once this one is gone) is kept for the
        // points that price alike: a network, platform and settings no `${…}` changes, the same
        // execution modes
        const bool fixed = !tree_has_expr(plat) && !tree_has_expr(net) && !tree_has_expr(s.settings);
        const std::string key = std::to_string(pj) + "/" + std::to_string(nj) + "/" + sp.prefill_execution + "/" + sp.decode_execution;
        auto kept = fixed ? pricers.find(key) : pricers.end();
        if (kept == pricers.end()) {
          Priced made;
          made.engine = std::make_unique<PointEvaluator>(catalog, opt, s.path);
          try {
            made.pricer = std::make_unique<BatchPricer>(*made.engine, s, p, net, plat, sp.prefill_execution, sp.decode_execution);
          } catch (const ConfigError& e) {  // a model without a language model's phase, batch, seq, context
            for (const Diagnostic& g : e.diagnostics())
              if (g.message.find("has no parameter '") != std::string::npos)
                throw ConfigError(net.loc, "this network is not a language model: serving: serves language models",
                                  {Note{{}, g.message + " (a language model takes phase, batch, seq and context)"}});
            throw;
          }
          if (!fixed) pricers.erase("(this point)");
          kept = pricers.emplace(fixed ? key : "(this point)", std::move(made)).first;
        }
        BatchPricer& pricer = *kept->second.pricer;
        if (!(pricer.kv_bytes_per_token() > 0))
          throw ConfigError(net.loc, "network '" + pricer.network_name() + "' holds no KV cache: serving: serves language models");
        EngineConfig cfg = sp.engine;
        if (cfg.kv_blocks <= 0) cfg.kv_blocks = derive_blocks(sp, pricer, net);
        ServedRun run;
        run.point = pi, run.bindings = p.bindings, run.platform = pricer.platform_name(), run.network = pricer.network_name();
        Deployment dep = sp.deployment;
        set_transfer(sp, pricer, dep);
        run.kv_blocks = cfg.kv_blocks, run.gpus = pricer.gpus() * static_cast<double>(dep.engines()), run.slo = sp.slo, run.deployment = dep;
        run.sim = simulate(requests, cfg, pricer.step_cost(), false, dep, pricer.decode_step_cost());
        run.summary = summarize(run.sim, sp.slo);
        out.runs.push_back(std::move(run));
      }
  }
  for (const ServedRun& r : out.runs) {
    const std::string key = std::to_string(r.point) + "," + csv_text(r.platform) + "," + csv_text(r.network);
    // (a row into a buffer, then appended: 10^5 rows of temporaries were a third of a run's time)
    out.requests_csv.reserve(out.requests_csv.size() + r.sim.requests.size() * (key.size() + 160));
    for (size_t i = 0; i < r.sim.requests.size(); ++i) {
      const Outcome& o = r.sim.requests[i];
      char b[16 * kNumberChars];
      char* p = b;
      auto num = [&](double v) {
        *p++ = ',';
        if (std::isfinite(v)) p = write_number(p, v);
      };
      auto integer = [&](long long v) {
        *p++ = ',';
        p = write_integer(p, v);
      };
      integer(static_cast<long long>(i)), num(o.arrival_s), integer(o.prompt), integer(o.output), integer(o.cached_tokens), num(o.scheduled_s), num(o.first_token_s);
      num(o.finish_s), num(o.first_token_s - o.arrival_s), num(tpot_of(o)), num(o.finish_s - o.arrival_s), integer(o.preemptions), integer(o.replica);
      if (o.decode_replica >= 0) integer(o.decode_replica);
      else *p++ = ',';
      num(o.kv_transfer_s);
      *p++ = ',';
      out.requests_csv += key;
      out.requests_csv.append(b, p);
      out.requests_csv += csv_text(o.note);
      out.requests_csv += '\n';
    }
    const Summary& m = r.summary;
    std::string row = std::to_string(r.point);
    for (const auto& [k, v] : r.bindings) row += "," + csv_text(v);
    row += "," + csv_text(r.platform) + "," + csv_text(r.network) + "," + std::to_string(m.requests) + "," + cell(m.duration_s) + "," + cell(m.requests_per_s) +
           "," + cell(m.input_tokens_per_s) + "," + cell(m.output_tokens_per_s);
    for (const double* q : {m.ttft, m.tpot, m.itl, m.e2e})
      for (int k = 0; k < 4; ++k) row += "," + cell(q[k]);
    row += "," + cell(m.goodput_requests_per_s) + "," + cell(m.slo_attainment) + "," + cell(m.mean_running) + "," + std::to_string(m.max_running) + "," +
           cell(m.mean_kv_usage) + "," + std::to_string(m.preemptions) + "," + cell(m.prefix_hit_rate) + "," + cell(r.gpus) + "," + std::to_string(r.kv_blocks) +
           "," + std::to_string(m.finished) + "," + (r.sim.queue_unbounded ? "true" : "false") + "\n";
    out.serving_csv += row;
    for (const Sample& x : r.sim.timeline) {
      if (x.t == 0) continue;
      out.timeline_csv += key + "," + cell(x.t) + "," + std::to_string(x.running) + "," + std::to_string(x.waiting) + "," + cell(x.kv_usage) + "," +
                          cell(x.prompt_tokens) + "," + cell(x.output_tokens) + "\n";
    }
    char line[640];
    std::snprintf(line, sizeof line, "%s on %s%s%s: %lld of %lld requests in %.3g s; TTFT p50 %s, p99 %s; TPOT p50 %s; E2E p50 %s; %lld KV blocks%s\n", r.network.c_str(),
                  r.platform.c_str(), deployment_text(r.deployment).c_str(), r.bindings.empty() ? "" : (" (" + bindings_text(r.bindings) + ")").c_str(), m.finished, m.requests, m.duration_s,
                  si(m.ttft[1], "s", 3).c_str(), si(m.ttft[3], "s", 3).c_str(), si(m.tpot[1], "s", 3).c_str(), si(m.e2e[1], "s", 3).c_str(), r.kv_blocks,
                  r.sim.queue_unbounded ? "; the queue grew without bound (the run was cut)" : "");
    out.text += line;
  }
  return out;
}

namespace {

std::string json_text(const std::string& s) {
  std::string o = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') o += '\\', o += c;
    else if (static_cast<unsigned char>(c) < 0x20) {
      char b[8];
      std::snprintf(b, sizeof b, "\\u%04x", c);
      o += b;
    } else o += c;
  }
  return o + "\"";
}
std::string json_number(double v) { return std::isfinite(v) ? format_number(v) : "null"; }

}  // namespace

std::string serving_json(const ServingTables& t) {
  std::string o = "{\"definitions\":{"
                  "\"ttft_s\":\"first token - arrival (queueing included)\","
                  "\"tpot_s\":\"(finish - first token) / (output tokens - 1), per request\","
                  "\"itl_s\":\"the gaps between a request's consecutive tokens, pooled over requests\","
                  "\"e2e_s\":\"finish - arrival\","
                  "\"percentiles\":\"linear interpolation between order statistics (numpy's default)\","
                  "\"goodput_requests_per_s\":\"requests meeting both SLOs per second of the run (first arrival to last finish)\"},\"rows\":[";
  for (size_t i = 0; i < t.runs.size(); ++i) {
    const ServedRun& r = t.runs[i];
    const Summary& m = r.summary;
    o += i ? ",{" : "{";
    o += "\"point\":" + std::to_string(r.point) + ",\"bindings\":{";
    for (size_t k = 0; k < r.bindings.size(); ++k) o += (k ? "," : "") + json_text(r.bindings[k].first) + ":" + json_text(r.bindings[k].second);
    o += "},\"platform\":" + json_text(r.platform) + ",\"network\":" + json_text(r.network) + ",\"requests\":" + std::to_string(m.requests) +
         ",\"finished\":" + std::to_string(m.finished) + ",\"duration_s\":" + json_number(m.duration_s) + ",\"requests_per_s\":" + json_number(m.requests_per_s) +
         ",\"input_tokens_per_s\":" + json_number(m.input_tokens_per_s) + ",\"output_tokens_per_s\":" + json_number(m.output_tokens_per_s);
    const char* names[4] = {"mean", "p50", "p90", "p99"};
    for (const auto& [metric, q] : {std::pair<const char*, const double*>{"ttft", m.ttft}, {"tpot", m.tpot}, {"itl", m.itl}, {"e2e", m.e2e}})
      for (int k = 0; k < 4; ++k) o += ",\"" + std::string(metric) + "_" + names[k] + "_s\":" + json_number(q[k]);
    o += ",\"goodput_requests_per_s\":" + json_number(m.goodput_requests_per_s) + ",\"slo_attainment\":" + json_number(m.slo_attainment) +
         ",\"mean_running\":" + json_number(m.mean_running) + ",\"max_running\":" + std::to_string(m.max_running) + ",\"mean_kv_usage\":" +
         json_number(m.mean_kv_usage) + ",\"preemptions\":" + std::to_string(m.preemptions) + ",\"prefix_hit_rate\":" + json_number(m.prefix_hit_rate) +
         ",\"gpus\":" + json_number(r.gpus) + ",\"engines\":" + std::to_string(r.deployment.engines()) + ",\"kv_blocks\":" + std::to_string(r.kv_blocks) + ",\"queue_unbounded\":" + (r.sim.queue_unbounded ? "true" : "false") + "}";
  }
  return o + "]}";
}

std::string serving_markdown(const ServingTables& t) {
  std::string o = "\n## Serving under load\n\n"
                  "Each language model served by the simulated engine (docs/serving.md): TTFT = first token − arrival (queueing included), "
                  "TPOT = (finish − first token) / (output tokens − 1), E2E = finish − arrival; percentiles interpolate between order statistics. "
                  "Every request is in requests.csv, the engine's state second by second in timeline.csv.\n\n"
                  "| point | platform | network | requests | TTFT p50 | TTFT p99 | TPOT p50 | TPOT p99 | E2E p50 | goodput | KV blocks | preemptions |\n"
                  "|---|---|---|---|---|---|---|---|---|---|---|---|\n";
  for (const ServedRun& r : t.runs) {
    const Summary& m = r.summary;
    char b[64];
    std::snprintf(b, sizeof b, "%.3g/s", m.goodput_requests_per_s);
    o += "| " + std::to_string(r.point) + (r.bindings.empty() ? "" : " (" + bindings_text(r.bindings) + ")") + " | " + r.platform + " | " + r.network + " | " +
         std::to_string(m.finished) + " of " + std::to_string(m.requests) + " | " + si(m.ttft[1], "s", 3) + " | " + si(m.ttft[3], "s", 3) + " | " +
         si(m.tpot[1], "s", 3) + " | " + si(m.tpot[3], "s", 3) + " | " + si(m.e2e[1], "s", 3) + " | " + b + " | " + std::to_string(r.kv_blocks) + " | " +
         std::to_string(m.preemptions) + (r.sim.queue_unbounded ? " (queue unbounded: cut)" : "") + " |\n";
  }
  return o;
}

const std::vector<std::string>& serving_columns() {
  static const std::vector<std::string> c = [] {
    std::vector<std::string> v = {"requests_per_s", "input_tokens_per_s", "output_tokens_per_s"};
    for (const char* m : {"ttft", "tpot", "itl", "e2e"})
      for (const char* q : {"mean", "p50", "p90", "p99"}) v.push_back(std::string(m) + "_" + q + "_s");
    for (const char* k : {"goodput_requests_per_s", "slo_attainment", "mean_running", "max_running", "mean_kv_usage", "preemptions", "prefix_hit_rate"}) v.push_back(k);
    return v;
  }();
  return c;
}

double serving_value(const ServedRun& r, const std::string& column) {
  const Summary& m = r.summary;
  if (column == "requests_per_s") return m.requests_per_s;
  if (column == "input_tokens_per_s") return m.input_tokens_per_s;
  if (column == "output_tokens_per_s") return m.output_tokens_per_s;
  if (column == "goodput_requests_per_s") return m.goodput_requests_per_s;
  if (column == "slo_attainment") return m.slo_attainment;
  if (column == "mean_running") return m.mean_running;
  if (column == "max_running") return static_cast<double>(m.max_running);
  if (column == "mean_kv_usage") return m.mean_kv_usage;
  if (column == "preemptions") return static_cast<double>(m.preemptions);
  if (column == "prefix_hit_rate") return m.prefix_hit_rate;
  const char* qs[4] = {"mean", "p50", "p90", "p99"};
  for (const auto& [name, q] : {std::pair<const char*, const double*>{"ttft", m.ttft}, {"tpot", m.tpot}, {"itl", m.itl}, {"e2e", m.e2e}})
    for (int k = 0; k < 4; ++k)
      if (column == std::string(name) + "_" + qs[k] + "_s") return q[k];
  return std::numeric_limits<double>::quiet_NaN();
}

}  // namespace rsim::serving
