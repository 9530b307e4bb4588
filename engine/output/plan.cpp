#include "engine/output/plan.hpp"

#include <cmath>
#include <map>
#include <mutex>

#include "engine/output/output.hpp"

namespace rsim {

namespace {

// A JSON number: the shortest text that reads back as the same double; null when not finite.
std::string jnum(double v) { return std::isfinite(v) ? num_text(v) : "null"; }
std::string jstr(const std::string& s) { return json_escape(s); }  // (quoted)

std::string jshape(const Shape& s) {
  std::string out = "[";
  for (size_t i = 0; i < s.size(); ++i) out += (i ? "," : "") + std::to_string(s[i]);
  return out + "]";
}

std::string jattr(const AttrSpec* spec, const AttrValue& v) {
  if (!v.set) return "null";
  const AttrType t = spec ? spec->type : AttrType::String;
  switch (t) {
    case AttrType::Int: return std::to_string(v.i);
    case AttrType::Float: return jnum(v.f);
    case AttrType::Bool: return v.b ? "true" : "false";
    case AttrType::String:
    case AttrType::Choice: return jstr(v.s);
    case AttrType::Pair:
    case AttrType::Ints: {
      std::string out = "[";
      for (size_t i = 0; i < v.ints.size(); ++i) out += (i ? "," : "") + std::to_string(v.ints[i]);
      return out + "]";
    }
    case AttrType::Padding: {
      if (!v.s.empty()) return jstr(v.s);
      std::string out = "[";
      for (size_t i = 0; i < v.ints.size(); ++i) out += (i ? "," : "") + std::to_string(v.ints[i]);
      return out + "]";
    }
  }
  return "null";
}

// The name a layer's input goes by in the plan: a network input's name, or the producing layer's
// name (NAME:K for its output K > 0), as a scenario writes `inputs:`.
std::string input_name(const Network& net, const TensorRef& r) {
  if (r.layer < 0) return r.output >= 0 && static_cast<size_t>(r.output) < net.inputs.size() ? net.inputs[static_cast<size_t>(r.output)].first : "input";
  const std::string& n = net.layers[static_cast<size_t>(r.layer)].name;
  return r.output > 0 ? n + ":" + std::to_string(r.output) : n;
}

// A layer's row on one platform: the columns of results.csv that a measured.csv carries (so that
// rsim_torch writes one that `rsim calibrate` reads without rsim's help).
std::string predicted_row(const Row& r, const Settings& st) {
  const OpCost& c = r.cost;
  std::string o = "{\"platform\":" + jstr(r.platform);
  o += ",\"macs\":" + jnum(c.macs) + ",\"flops\":" + jnum(c.flops) + ",\"macs_executed\":" + jnum(c.macs_executed) +
       ",\"flops_executed\":" + jnum(c.flops_executed) + ",\"mac_count\":" + jstr(st.executed_work ? "executed" : "conventional");
  o += ",\"params\":" + jnum(c.params) + ",\"weight_bytes\":" + jnum(c.weight_bytes) + ",\"input_bytes\":" + jnum(c.input_total()) +
       ",\"output_bytes\":" + jnum(c.output_total()) + ",\"kv_read_bytes\":" + jnum(c.kv_read_bytes) + ",\"kv_write_bytes\":" + jnum(c.kv_write_bytes) +
       ",\"scratch_bytes\":" + jnum(c.scratch_bytes) + ",\"bytes\":" + jnum(r.bytes);
  o += ",\"intensity\":" + jnum(r.theoretical.intensity) + ",\"mac_intensity\":" + jnum(r.bytes > 0 ? c.macs / r.bytes : 0);
  o += ",\"compute_roof\":" + jstr(r.compute_roof) + ",\"memory_level\":" + jstr(r.memory_level);
  for (const auto& [pre, rp] : {std::pair<const char*, const RoofPoint*>{"", &r.theoretical}, {"derated_", &r.derated}}) {
    o += ",\"" + std::string(pre) + "peak_flops_per_s\":" + jnum(rp->peak_flops_per_s);
    o += ",\"" + std::string(pre) + "bandwidth_bytes_per_s\":" + jnum(rp->bandwidth_bytes_per_s);
    o += ",\"" + std::string(pre) + "attainable_flops_per_s\":" + jnum(rp->attainable_flops_per_s);
    o += ",\"" + std::string(pre) + "time_s\":" + jnum(rp->time_s);
    o += ",\"" + std::string(pre) + "bound\":" + jstr(bound_name(rp->bound));
  }
  o += ",\"efficiency_compute\":" + jnum(r.efficiency.compute) + ",\"efficiency_bandwidth\":" + jnum(r.efficiency.bandwidth);
  o += ",\"flops_per_mac\":" + jnum(st.flops_per_mac) + ",\"memory_model\":" + jstr(memory_model_name(st.memory_model));
  o += ",\"comm_bytes\":" + jnum(c.comm_bytes) + ",\"comm_time_s\":" + jnum(r.theoretical.comm_time_s) + ",\"collective\":" + jstr(r.collective) + "}";
  return o;
}

}  // namespace

std::string plan_json(const Scenario& s, const Catalog& catalog, RunOptions opt, const std::string& rsim_version) {
  // each point's networks as built, kept until the point's rows arrive
  std::mutex mu;
  std::map<size_t, std::vector<std::shared_ptr<const Network>>> nets_of;
  opt.on_networks = [&](const Point& p, const std::vector<std::shared_ptr<const Network>>& nets) {
    std::lock_guard<std::mutex> lock(mu);
    nets_of[p.index] = nets;
  };
  opt.rows = true;
  struct Sink : ResultSink {
    std::string out;
    std::mutex& mu;
    std::map<size_t, std::vector<std::shared_ptr<const Network>>>& nets_of;
    size_t written = 0;
    Sink(std::mutex& m, std::map<size_t, std::vector<std::shared_ptr<const Network>>>& n) : mu(m), nets_of(n) {}
    void consume(PointResult&& pr, const Point& p) override {
      std::vector<std::shared_ptr<const Network>> nets;
      {
        std::lock_guard<std::mutex> lock(mu);
        nets = std::move(nets_of[p.index]);
        nets_of.erase(p.index);
      }
      // the point's rows and summary rows by platform, network and layer
      std::map<std::tuple<std::string, std::string, std::string>, const Row*> rows;
      for (const Row& r : pr.rows) rows.emplace(std::make_tuple(r.platform, r.network, r.layer), &r);
      std::string& o = out;
      o += written++ ? ",\n" : "\n";
      o += "{\"index\":" + std::to_string(p.index) + ",\"bindings\":{";
      for (size_t k = 0; k < p.bindings.size(); ++k) o += (k ? "," : "") + jstr(p.bindings[k].first) + ":" + jstr(p.bindings[k].second);
      const Settings& st = pr.settings;
      o += "},\"settings\":{\"dtype\":" + jstr(dtype_name(st.dtype)) + ",\"execution\":" + jstr(execution_name(st.execution)) +
           ",\"memory_model\":" + jstr(memory_model_name(st.memory_model)) + ",\"flops_per_mac\":" + jnum(st.flops_per_mac) + "}";
      o += ",\"platforms\":[";
      for (size_t i = 0; i < pr.platforms.size(); ++i) {
        const Platform& pl = *pr.platforms[i];
        o += (i ? "," : "") + std::string("{\"name\":") + jstr(pl.name) + ",\"title\":" + jstr(pl.title) + ",\"runtime\":{\"launch_overhead_s\":" +
             jnum(pl.runtime.launch_overhead_s);
        if (pl.runtime.has_graph_gap()) o += ",\"graph_gap_s\":" + jnum(pl.runtime.graph_gap_s);
        if (pl.runtime.has_host_overhead()) o += ",\"host_overhead_s\":" + jnum(pl.runtime.host_overhead_s);
        o += "}}";
      }
      o += "],\"networks\":[";
      for (size_t ni = 0; ni < nets.size(); ++ni) {
        const Network& net = *nets[ni];
        o += ni ? ",\n " : "\n ";
        o += "{\"name\":" + jstr(net.name) + ",\"phase\":" + jstr(net.phase) + ",\"inputs\":[";
        for (size_t k = 0; k < net.inputs.size(); ++k) {
          // a network input's precision: the first layer that reads it (a token id input is read by an embedding)
          std::string dt = dtype_name(st.dtype);
          for (const Layer& L : net.layers) {
            bool reads = false;
            for (const TensorRef& r : L.inputs) reads = reads || (r.layer < 0 && static_cast<size_t>(r.output) == k);
            if (reads) {
              dt = L.op && L.op->name == "embedding" ? "int64" : dtype_name(L.dtype);
              break;
            }
          }
          o += (k ? "," : "") + std::string("{\"name\":") + jstr(net.inputs[k].first) + ",\"shape\":" + jshape(net.inputs[k].second) + ",\"dtype\":" +
               jstr(dt) + "}";
        }
        o += "],\"predicted\":[";
        size_t np = 0;
        for (const SummaryRow& sm : pr.summary) {
          if (sm.network != net.name) continue;
          o += (np++ ? "," : "") + std::string("{\"platform\":") + jstr(sm.platform) + ",\"kernels\":" + jnum(sm.kernels) + ",\"flops\":" + jnum(sm.flops) +
               ",\"bytes\":" + jnum(sm.bytes) + ",\"execution\":" + jstr(execution_name(st.execution)) + ",\"time_s\":" + jnum(sm.time_s) +
               ",\"derated_time_s\":" + jnum(sm.derated_time_s) + "}";
        }
        o += "],\"layers\":[";
        for (size_t li = 0; li < net.layers.size(); ++li) {
          const Layer& L = net.layers[li];
          o += li ? ",\n  " : "\n  ";
          o += "{\"name\":" + jstr(L.name) + ",\"op\":" + jstr(L.op ? L.op->name : "") + ",\"attrs\":{";
          size_t na = 0;
          for (const auto& [name, v] : L.attrs.all()) {
            const AttrSpec* spec = nullptr;
            if (L.op)
              for (const AttrSpec& a : L.op->attrs)
                if (a.name == name) spec = &a;
            o += (na++ ? "," : "") + jstr(name) + ":" + jattr(spec, v);
          }
          o += "},\"inputs\":[";
          for (size_t k = 0; k < L.inputs.size(); ++k) o += (k ? "," : "") + jstr(input_name(net, L.inputs[k]));
          o += "],\"input_shapes\":[";
          for (size_t k = 0; k < L.in_shapes.size(); ++k) o += (k ? "," : "") + jshape(L.in_shapes[k]);
          o += "],\"output_shapes\":[";
          for (size_t k = 0; k < L.out_shapes.size(); ++k) o += (k ? "," : "") + jshape(L.out_shapes[k]);
          o += "],\"dtype\":" + jstr(dtype_name(L.dtype)) + ",\"weights_dtype\":" + jstr(dtype_name(L.weights_dtype())) +
               ",\"compute_dtype\":" + jstr(dtype_name(L.compute_dtype())) + ",\"kv_dtype\":" + jstr(dtype_name(L.kv_dtype()));
          o += ",\"kernel\":" + jstr(L.kernel) + ",\"view\":" + std::string(L.op && L.op->view ? "true" : "false");
          o += ",\"tied_weights\":" + std::string(L.tied_weights ? "true" : "false") + ",\"channels_per_group\":" + jnum(channels_per_group(L));
          o += ",\"predicted\":[";
          size_t nr = 0;
          for (const auto& pl : pr.platforms)
            if (auto it = rows.find(std::make_tuple(pl->name, net.name, L.name)); it != rows.end()) o += (nr++ ? "," : "") + predicted_row(*it->second, st);
          o += "]}";
        }
        o += "]}";
      }
      o += "]}";
    }
  } sink(mu, nets_of);
  opt.jobs = 1;  // (points in order; a plan is small beside a run)
  stream_scenario(s, catalog, opt, sink);
  std::string out = "{\"rsim_plan\":" + std::to_string(kPlanVersion) + ",\"rsim_version\":" + jstr(rsim_version);
  out += ",\"scenario\":{\"name\":" + jstr(s.name) + ",\"path\":" + jstr(s.path) + ",\"hash\":" + jstr("fnv1a64:" + s.hash) + "}";
  out += ",\"conventions\":{\"flops\":\"FLOPs = flops_per_mac × MACs for multiply-accumulate operators\",";
  out += "\"inputs\":\"a layer's inputs are the network's input names or the layers that feed it (NAME:K for output K > 0), as a scenario writes them\",";
  out += "\"units\":\"SI: FLOP, byte, second\",";
  out += "\"predicted\":\"per platform: the layer's roofline alone (time_s, derated_time_s); per network: the network's time under settings.execution\"}";
  out += ",\"points\":[" + sink.out + "\n]}\n";
  return out;
}

}  // namespace rsim
