#include "engine/ops/ops.hpp"

#include "engine/ops/ops_tensor.hpp"

#include <algorithm>
#include <cstring>
#include <cmath>
#include <numeric>

namespace rsim {

// ---------------------------------------------------------------- attributes

void Attrs::put(const std::string& name, AttrValue v) {
  for (auto& [n, val] : v_)
    if (n == name) {
      val = std::move(v);
      return;
    }
  v_.emplace_back(name, std::move(v));
}

const AttrValue& Attrs::at(std::string_view name) const {
  // (rules look attributes up by name in every evaluation: the size and first character rule out
  // most names without a call to compare the rest)
  for (const auto& [n, val] : v_)
    if (n.size() == name.size() && (name.empty() || (n[0] == name[0] && std::memcmp(n.data(), name.data(), name.size()) == 0))) return val;
  throw std::logic_error("operator attribute '" + std::string(name) + "' is not declared");
}

const char* attr_type_name(AttrType t) {
  switch (t) {
    case AttrType::Int: return "int";
    case AttrType::Float: return "number";
    case AttrType::Bool: return "bool";
    case AttrType::String: return "string";
    case AttrType::Choice: return "choice";
    case AttrType::Pair: return "int or [h, w]";
    case AttrType::Ints: return "list of ints";
    case AttrType::Padding: return "int, [h, w], same or valid";
  }
  return "?";
}

static bool read_int(const CNode& n, long long& out, Diags& d, const std::string& what) {
  auto v = to_integer(n, d, what);
  if (!v) return false;
  if (*v > 1000000000LL || *v < -1000000000LL) {  // keeps shape arithmetic far from int64 overflow
    d.error(n.loc, what + " is out of range: " + n.scalar + " (at most 1e9 in magnitude)");
    return false;
  }
  out = *v;
  return true;
}

static bool read_pair(const CNode& n, std::vector<long long>& out, Diags& d, const std::string& what) {
  if (n.is_scalar()) {
    long long v;
    if (!read_int(n, v, d, what)) return false;
    out = {v, v};
    return true;
  }
  if (n.is_seq() && n.items.size() == 2) {
    long long a, b;
    bool ok = read_int(n.items[0], a, d, what);
    ok = read_int(n.items[1], b, d, what) && ok;
    if (ok) out = {a, b};
    return ok;
  }
  d.error(n.loc, what + " must be a whole number or a pair [h, w]");
  return false;
}

bool parse_attr(const AttrSpec& spec, const CNode& value, AttrValue& out, Diags& d, const std::string& where) {
  std::string what = where + " '" + spec.name + "'";
  out = AttrValue{};
  bool ok = false;
  switch (spec.type) {
    case AttrType::Int: ok = read_int(value, out.i, d, what); break;
    case AttrType::Float: {
      auto v = to_number(value, d, what);
      if (v && !std::isfinite(*v)) {
        d.error(value.loc, what + " must be finite");
        v.reset();
      }
      if (v) out.f = *v;
      ok = v.has_value();
      break;
    }
    case AttrType::Bool: {
      auto v = to_bool(value, d, what);
      if (v) out.b = *v;
      ok = v.has_value();
      break;
    }
    case AttrType::String: {
      auto v = to_string(value, d, what);
      if (v) out.s = *v;
      ok = v.has_value();
      break;
    }
    case AttrType::Choice: {
      auto v = to_string(value, d, what);
      if (!v) break;
      if (std::find(spec.choices.begin(), spec.choices.end(), *v) == spec.choices.end()) {
        std::string list;
        for (const auto& c : spec.choices) list += (list.empty() ? "" : ", ") + c;
        std::vector<Note> notes;
        std::string s = did_you_mean(*v, spec.choices);
        notes.push_back(Note{{}, s.empty() ? "choose one of: " + list : s});
        d.error(value.loc, what + " cannot be '" + *v + "'", notes);
        break;
      }
      out.s = *v;
      ok = true;
      break;
    }
    case AttrType::Pair: ok = read_pair(value, out.ints, d, what); break;
    case AttrType::Ints: {
      if (value.is_scalar()) {
        long long v;
        ok = read_int(value, v, d, what);
        if (ok) out.ints = {v};
        break;
      }
      if (!value.is_seq()) {
        d.error(value.loc, what + " must be a list of whole numbers");
        break;
      }
      ok = true;
      for (const auto& item : value.items) {
        long long v;
        if (read_int(item, v, d, what)) out.ints.push_back(v);
        else ok = false;
      }
      break;
    }
    case AttrType::Padding:
      if (value.is_scalar() && (value.scalar == "same" || value.scalar == "valid")) {
        out.s = value.scalar;
        ok = true;
      } else if (value.is_scalar() && !parse_double(value.scalar)) {
        std::vector<Note> notes;
        std::string s = did_you_mean(value.scalar, {"same", "valid"});
        notes.push_back(Note{{}, s.empty() ? "padding is a whole number, a pair [h, w], 'same' or 'valid'" : s});
        d.error(value.loc, what + " cannot be '" + value.scalar + "'", notes);
      } else {
        ok = read_pair(value, out.ints, d, what);
      }
      break;
  }
  out.set = ok;
  return ok;
}

Attrs read_attrs(const OpDef& op, const CNode& layer, Diags& d, const std::string& where) {
  Attrs attrs;
  for (const auto& spec : op.attrs) {
    AttrValue v;
    const CNode* given = layer.is_map() ? layer.find(spec.name) : nullptr;
    if (given) {
      parse_attr(spec, *given, v, d, where);
    } else if (spec.def.empty()) {
      d.error(layer.loc, where + " needs '" + spec.name + "' (" + spec.doc + ")");
    } else if (spec.def != "~") {
      CNode def;
      if (spec.def.front() == '[') {
        def = parse_yaml(spec.def, "<default>");
      } else {
        def = CNode::make_scalar(spec.def);
      }
      parse_attr(spec, def, v, d, where);
    }
    attrs.put(spec.name, v);
  }
  return attrs;
}

// ---------------------------------------------------------------- costs

double OpCost::input_total() const { return std::accumulate(input_bytes.begin(), input_bytes.end(), 0.0); }
double OpCost::output_total() const { return std::accumulate(output_bytes.begin(), output_bytes.end(), 0.0); }

OpCost layer_cost(const OpDef& op, const OpArgs& args, const std::vector<Shape>& out, double flops_per_mac) {
  OpCost c;
  layer_cost(op, args, out, flops_per_mac, c);
  return c;
}

void OpCost::clear() {
  std::vector<double> in = std::move(input_bytes), outs = std::move(output_bytes);
  *this = OpCost{};
  in.clear(), outs.clear();
  input_bytes = std::move(in), output_bytes = std::move(outs);
}

void layer_cost(const OpDef& op, const OpArgs& args, const std::vector<Shape>& out, double flops_per_mac, OpCost& c) {
  OpWork w = op.work ? op.work(args, out) : OpWork{};
  c.clear();
  double size = dtype_bytes(args.dtype);
  DType wt = args.weights_dtype();
  double wsize = dtype_bytes(wt), kvsize = dtype_bytes(args.kv_dtype());
  c.macs = w.macs;
  c.flops = flops_per_mac * w.macs + w.other_flops;
  c.macs_executed = w.macs_executed >= 0 ? w.macs_executed : w.macs;
  c.flops_executed = flops_per_mac * c.macs_executed + w.other_flops;
  c.params = w.params;
  c.active_params = w.active_params >= 0 ? w.active_params : w.params;
  long long group = args.precision.quant_group;
  bool scaled = group > 0 && dtype_needs_scales(wt);
  auto scales = [&](double quantized) { return scaled ? std::ceil(quantized / static_cast<double>(group)) * kQuantScaleBytes : 0.0; };
  auto constants = [&](double all, double quantized) { return (all - quantized) * size + quantized * wsize + scales(quantized); };
  if (w.weight_bytes >= 0) {
    c.weight_bytes = c.resident_weight_bytes = w.weight_bytes;
  } else {
    c.scale_bytes = scales(w.quantized_elems);
    c.weight_bytes = constants(w.weight_elems, w.quantized_elems);
    c.quantized_weight_bytes = std::max(w.quantized_elems, w.resident_quantized_elems) * wsize;
    c.resident_weight_bytes = constants(w.resident_elems >= 0 ? w.resident_elems : w.weight_elems,
                                        w.resident_quantized_elems >= 0 ? w.resident_quantized_elems : w.quantized_elems);
  }
  if (!w.input_bytes.empty()) c.input_bytes = w.input_bytes;
  else
    for (size_t i = 0; i < args.in.size(); ++i) {
      bool kv = i < 32 && (args.kv_inputs >> i & 1u);
      double b = op.view ? 0.0 : elements(args.in[i]) * (kv ? kvsize : size);
      c.input_bytes.push_back(b);
      if (kv) c.kv_read_bytes += b;
    }
  if (!w.output_bytes.empty()) c.output_bytes = w.output_bytes;
  else
    for (const auto& s : out) c.output_bytes.push_back(op.view ? 0.0 : elements(s) * (op.kv_outputs ? kvsize : size));
  if (op.kv_outputs) {
    c.kv_write_bytes = c.output_total();
    if (w.kv_cache_elems >= 0) c.kv_cache_bytes = w.kv_cache_elems * kvsize;
    else
      for (const auto& s : out) c.kv_cache_bytes += elements(s) * kvsize;
  }
  c.scratch_bytes = w.scratch_elems * w.scratch_passes * size;
  c.activation_bytes = (c.input_total() - c.kv_read_bytes) + (c.output_total() - c.kv_write_bytes) + w.scratch_elems * size;
}

std::vector<Shape> one_shape(Shape s) {
  std::vector<Shape> out;
  out.push_back(std::move(s));
  return out;
}

// ---------------------------------------------------------------- registry

void OpRegistry::add(OpDef def) {
  std::string n = def.name;
  ops_[n] = std::move(def);
}

void OpRegistry::alias(const std::string& alias, const std::string& target) { aliases_[alias] = target; }

const OpDef* OpRegistry::find(const std::string& name) const {
  auto it = ops_.find(name);
  if (it != ops_.end()) return &it->second;
  auto a = aliases_.find(name);
  if (a != aliases_.end()) return find(a->second);
  return nullptr;
}

std::vector<std::string> OpRegistry::names() const {
  std::vector<std::string> n;
  for (const auto& [k, v] : ops_) n.push_back(k);
  return n;
}

std::vector<std::string> OpRegistry::all_names() const {
  std::vector<std::string> n = names();
  for (const auto& [k, v] : aliases_) n.push_back(k);
  return n;
}

std::string describe_op(const OpDef& op, const std::map<std::string, std::string>& aliases) {
  std::string s = op.name + " — " + op.summary + "\n";
  std::string al;
  for (const auto& [a, t] : aliases)
    if (t == op.name) al += (al.empty() ? "" : ", ") + a;
  if (!al.empty()) s += "  aliases: " + al + "\n";
  std::string inputs = op.max_inputs < 0 ? std::to_string(op.min_inputs) + " or more"
                       : op.min_inputs == op.max_inputs ? std::to_string(op.min_inputs)
                                                        : std::to_string(op.min_inputs) + " to " + std::to_string(op.max_inputs);
  s += "  inputs: " + inputs + (op.view ? " (a view: moves no data, 0 bytes)" : "") + "\n";
  if (!op.attrs.empty()) {
    s += "  attributes:\n";
    for (const auto& a : op.attrs) {
      std::string type = attr_type_name(a.type);
      if (a.type == AttrType::Choice) {
        type.clear();
        for (const auto& c : a.choices) type += (type.empty() ? "" : "|") + c;
      }
      std::string def = a.def.empty() ? "required" : a.def == "~" ? "optional" : "default " + a.def;
      s += "    " + a.name + " (" + type + ", " + def + "): " + a.doc + "\n";
    }
  }
  s += "  cost:\n";
  std::string line;
  for (char c : op.formula) {
    if (c == '\n') {
      s += "    " + line + "\n";
      line.clear();
    } else {
      line += c;
    }
  }
  if (!line.empty()) s += "    " + line + "\n";
  return s;
}

namespace {

OpRegistry make_builtins() {
  OpRegistry r;
  add_layer_ops(r);
  add_tensor_ops(r);
  add_transformer_ops(r);
  add_sequence_ops(r);
  return r;
}

}  // namespace

const OpRegistry& builtin_ops() {
  static const OpRegistry r = make_builtins();
  return r;
}

}  // namespace rsim

