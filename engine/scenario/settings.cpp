// A scenario's `settings:` read into their typed value: once where nothing in them is swept, else
// at each point after substitution.
#include "engine/graph/graph.hpp"
#include "engine/model/names.hpp"
#include "engine/scenario/scenario.hpp"

#include <algorithm>

namespace rsim {

void fix_settings(Scenario& s, Diags* d) {
  s.fixed_settings = nullptr;
  if (s.settings.is_null()) return;
  auto dynamic_tree = [](const CNode& n, auto& self) -> bool {
    if (n.is_scalar()) return has_expr(n.scalar);
    for (const auto& e : n.entries)
      if (self(e.value, self)) return true;
    for (const auto& i : n.items)
      if (self(i, self)) return true;
    return false;
  };
  for (const auto& e : s.settings.entries)
    if (e.key != "figures" && dynamic_tree(e.value, dynamic_tree)) return;  // read per point
  Diags sd;
  Settings value = read_settings(s.settings, sd);
  if (sd.empty()) s.fixed_settings = std::make_shared<const FixedSettings>(FixedSettings{s.settings, std::move(value)});
  if (d) d->merge(sd);
}

void set_setting(Scenario& s, const std::string& key, const std::string& value) {
  if (s.settings.is_null()) s.settings.kind = CNode::Kind::Map;
  auto& e = s.settings.entries;
  e.erase(std::remove_if(e.begin(), e.end(), [&](const CEntry& x) { return x.key == key; }), e.end());
  if (!value.empty()) e.push_back(CEntry{key, s.settings.loc, CNode::make_scalar(value, s.settings.loc)});
  fix_settings(s);
}

Settings point_settings(const Scenario& s, const Env& env, ExprEvaluator& ev, Diags& d) {
  if (s.settings.is_null()) return Settings{};
  // (a scenario whose settings were edited without fix_settings is read as it is now)
  if (s.fixed_settings && same_tree(s.fixed_settings->node, s.settings)) return s.fixed_settings->value;
  return read_settings(substitute_tree(s.settings, env, ev, d), d);
}

Settings read_settings(const CNode& node, Diags& d) {
  Settings s;
  if (node.is_null()) return s;
  MapReader m(node, keys::map("settings"), "settings", d);
  if (const CNode* v = m.get("dtype")) {
    if (auto t = to_string(*v, d, "dtype")) {
      if (auto dt = parse_dtype(*t)) s.dtype = *dt, s.dtype_given = true;
      else {
        std::string hint = did_you_mean(*t, dtype_names());
        d.error(v->loc, "unknown dtype '" + *t + "'", {Note{{}, hint.empty() ? "dtypes: fp64, fp32, tf32, bf16, fp16, fp8, int8, int4" : hint}});
      }
    }
  }
  if (const CNode* v = m.get("memory_model")) {
    if (auto t = to_string(*v, d, "memory_model")) {
      if (*t == "weights+outputs") s.memory_model = MemoryModel::WeightsOutputs;
      else if (*t == "inputs+weights+outputs") s.memory_model = MemoryModel::InputsWeightsOutputs;
      else {
        std::string hint = did_you_mean(*t, {"weights+outputs", "inputs+weights+outputs"});
        d.error(v->loc, "unknown memory_model '" + *t + "'",
                {Note{{}, hint.empty() ? "choose weights+outputs or inputs+weights+outputs" : hint}});
      }
    }
  }
  if (const CNode* v = m.get("flops_per_mac")) {
    auto f = to_number(*v, d, "flops_per_mac");
    if (f && *f != 1 && *f != 2) d.error(v->loc, "flops_per_mac must be 2 (a MAC is a multiply and an add) or 1 (count MACs as FLOPs)");
    else if (f) s.flops_per_mac = *f;
  }
  if (const CNode* v = m.get("memory_level")) s.memory_level = to_string(*v, d, "memory_level").value_or("");
  if (const CNode* v = m.get("mac_count")) {
    if (auto t = to_string(*v, d, "mac_count")) {
      if (*t == "executed") s.executed_work = true;
      else if (*t != "conventional") {
        std::string hint = did_you_mean(*t, {"conventional", "executed"});
        d.error(v->loc, "unknown mac_count '" + *t + "'", {Note{{}, hint.empty() ? "choose conventional or executed" : hint}});
      }
    }
  }
  if (const CNode* v = m.get("parallel")) read_parallel(*v, s.parallel, d);
  if (const CNode* v = m.get("execution")) {
    s.execution_loc = v->loc;
    if (auto t = to_string(*v, d, "execution")) {
      if (*t == "fused") s.execution = Execution::Fused;
      else if (*t == "graph") s.execution = Execution::Graph;
      else if (*t == "eager") s.execution = Execution::Eager;
      else if (*t == "ideal") s.execution = Execution::Ideal;
      else {
        std::string hint = did_you_mean(*t, {"fused", "graph", "eager", "ideal"});
        d.error(v->loc, "unknown execution '" + *t + "'", {Note{{}, hint.empty() ? "choose fused, graph, eager or ideal" : hint}});
      }
    }
  }
  read_precision_keys(node, s.precision, d);
  m.allow(kPrecisionKeys);
  m.allow({"figures"});  // figure defaults (style, size, font): read by plots/
  m.finish();
  return s;
}

}  // namespace rsim
