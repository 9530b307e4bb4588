#include "engine/scenario/schema.hpp"

#include <cstdio>
#include <map>
#include <memory>
#include <stdexcept>

#include "engine/model/keys.hpp"
#include "engine/graph/passes.hpp"
#include "engine/model/units.hpp"

namespace rsim {

namespace {

// A small JSON value that keeps object keys in insertion order, for readable output.
class J {
 public:
  enum class K { Null, Bool, Num, Str, Arr, Obj };
  J() = default;
  J(const char* s) : k_(K::Str), s_(s) {}
  J(std::string s) : k_(K::Str), s_(std::move(s)) {}
  J(bool b) : k_(K::Bool), b_(b) {}
  J(double d) : k_(K::Num), d_(d) {}
  J(int i) : k_(K::Num), d_(i) {}
  static J arr(std::vector<J> v = {}) {
    J j;
    j.k_ = K::Arr;
    j.a_ = std::move(v);
    return j;
  }
  static J obj() {
    J j;
    j.k_ = K::Obj;
    return j;
  }
  J& set(const std::string& key, J v) {
    for (auto& [k, x] : o_)
      if (k == key) {
        x = std::move(v);
        return *this;
      }
    o_.emplace_back(key, std::move(v));
    return *this;
  }
  J& push(J v) {
    a_.push_back(std::move(v));
    return *this;
  }
  bool has(const std::string& key) const {
    for (const auto& [k, x] : o_)
      if (k == key) return true;
    return false;
  }
  bool empty() const { return k_ == K::Arr ? a_.empty() : o_.empty(); }
  std::string dump(int indent = 0) const {
    std::string pad(static_cast<size_t>(indent + 2), ' '), end(static_cast<size_t>(indent), ' ');
    switch (k_) {
      case K::Null: return "null";
      case K::Bool: return b_ ? "true" : "false";
      case K::Num: return format_number(d_);
      case K::Str: return quote(s_);
      case K::Arr: {
        bool simple = true;
        for (const auto& x : a_) simple = simple && x.k_ != K::Arr && x.k_ != K::Obj;
        std::string o = "[";
        for (size_t i = 0; i < a_.size(); ++i) o += (i ? (simple ? ", " : ",\n" + pad) : (simple ? "" : "\n" + pad)) + a_[i].dump(indent + 2);
        return o + (simple || a_.empty() ? "]" : "\n" + end + "]");
      }
      case K::Obj: {
        if (o_.empty()) return "{}";
        std::string o = "{\n";
        for (size_t i = 0; i < o_.size(); ++i) o += pad + quote(o_[i].first) + ": " + o_[i].second.dump(indent + 2) + (i + 1 < o_.size() ? ",\n" : "\n");
        return o + end + "}";
      }
    }
    return "null";
  }

 private:
  static std::string quote(const std::string& s) {
    std::string o = "\"";
    for (unsigned char c : s) {
      if (c == '"') o += "\\\"";
      else if (c == '\\') o += "\\\\";
      else if (c == '\n') o += "\\n";
      else if (c == '\t') o += "\\t";
      else if (c < 0x20) {
        char buf[8];
        std::snprintf(buf, sizeof buf, "\\u%04x", c);
        o += buf;
      } else o += static_cast<char>(c);
    }
    return o + "\"";
  }
  K k_ = K::Null;
  bool b_ = false;
  double d_ = 0;
  std::string s_;
  std::vector<J> a_;
  std::vector<std::pair<std::string, J>> o_;
};

J jref(const std::string& def) { return J::obj().set("$ref", "#/$defs/" + def); }
J type(const char* t) { return J::obj().set("type", t); }
J strings(const std::vector<std::string>& v) {
  J a = J::arr();
  for (const auto& s : v) a.push(J(s));
  return a;
}
J any_of(std::vector<J> v) { return J::obj().set("anyOf", J::arr(std::move(v))); }

const char* kIdent = "^[A-Za-z_][A-Za-z0-9_]*$";
// A scalar the loader reads as text: YAML may type it as a number or a boolean.
J scalar() { return J::obj().set("type", J::arr({J("string"), J("number"), J("boolean")})); }

class Gen {
 public:
  Gen(const OpRegistry* ops, std::vector<std::string> plot_columns) : ops_(ops), plot_columns_(std::move(plot_columns)) {
    lists_["dtype"] = dtype_names();
    lists_["pass"] = pass_names();
    lists_["plot_column"] = plot_columns_;
  }

  J type_schema(const keys::Type& t) {
    using keys::T;
    switch (t.t) {
      case T::String: return type("string");
      case T::Name: return J::obj().set("type", "string").set("pattern", kIdent);
      case T::Number: {
        J n = type("number");
        if (t.min < t.max) n.set("minimum", t.min).set("maximum", t.max);
        else if (t.min != 0) n.set("minimum", t.min);
        return any_of({n, jref("numeric_text"), jref("expr")});
      }
      case T::Integer: {
        J n = type("integer");
        if (t.min < t.max) n.set("minimum", t.min).set("maximum", t.max);
        else if (t.min != 0) n.set("minimum", t.min);
        return any_of({n, jref("numeric_text"), jref("expr")});
      }
      case T::Bool: return any_of({type("boolean"), jref("expr")});
      case T::Fraction: return any_of({type("number").set("exclusiveMinimum", 0).set("maximum", 1), jref("numeric_text"), jref("expr")});
      case T::Quantity: return jref(std::string("quantity.") + dim_key(t.dim));
      case T::Enum: return enum_schema(t);
      case T::Map: return jref(t.ref);
      case T::List: return J::obj().set("type", "array").set("items", jref(t.ref));
      case T::Def: return jref(t.ref);
      case T::OneOrList: {
        keys::Type item = t;
        item.t = t.item;
        J one = type_schema(item);
        return any_of({one, J::obj().set("type", "array").set("items", one)});
      }
    }
    return J::obj();
  }

  J enum_schema(const keys::Type& t) {
    std::vector<std::string> c = t.choices_from.empty() ? t.choices : lists_.at(t.choices_from);
    J e = J::arr();
    for (const auto& s : c) {
      e.push(J(s));
      if (auto v = parse_double(s)) e.push(J(*v));  // `flops_per_mac: 2` is a YAML number
    }
    if (t.no_expr) return J::obj().set("enum", e);
    return any_of({J::obj().set("enum", e), jref("expr")});
  }

  static const char* dim_key(Dim d) {
    switch (d) {
      case Dim::FlopRate: return "flop_rate";
      case Dim::ByteRate: return "byte_rate";
      case Dim::Frequency: return "frequency";
      case Dim::TransferRate: return "transfer_rate";
      case Dim::Bytes: return "bytes";
      case Dim::Bits: return "bits";
      case Dim::Time: return "time";
    }
    return "?";
  }

  J map_schema(const keys::MapDef& m, bool closed = true) {
    J props = J::obj();
    J req = J::arr();
    for (const auto& k : m.keys) {
      J s = type_schema(k.type);
      s.set("description", k.doc);
      props.set(k.name, s);
      if (k.required) req.push(J(k.name));
    }
    J o = J::obj().set("type", "object").set("title", m.title).set("properties", props);
    if (!req.empty()) o.set("required", req);
    if (closed) o.set("additionalProperties", false);
    return o;
  }

  J attr_schema(const AttrSpec& a) {
    J expr = jref("expr");
    J integer = any_of({type("integer"), jref("numeric_text"), expr});
    J s;
    switch (a.type) {
      case AttrType::Int: s = integer; break;
      case AttrType::Float: s = any_of({type("number"), jref("numeric_text"), expr}); break;
      case AttrType::Bool: s = any_of({type("boolean"), expr}); break;
      case AttrType::String: s = scalar(); break;
      case AttrType::Choice: s = any_of({J::obj().set("enum", strings(a.choices)), expr}); break;
      case AttrType::Pair:
        s = any_of({type("integer"), jref("numeric_text"), expr, J::obj().set("type", "array").set("items", integer).set("minItems", 2).set("maxItems", 2)});
        break;
      case AttrType::Ints: s = any_of({J::obj().set("type", "array").set("items", integer), expr}); break;
      case AttrType::Padding:
        s = any_of({type("integer"), jref("numeric_text"), J::obj().set("enum", strings({"same", "valid"})), expr,
                    J::obj().set("type", "array").set("items", integer).set("minItems", 2).set("maxItems", 2)});
        break;
    }
    std::string doc = a.doc;
    doc += std::string(doc.empty() ? "" : " ") + "(" + attr_type_name(a.type);
    if (a.def.empty()) doc += ", required)";
    else if (a.def == "~") doc += ", optional)";
    else doc += ", default " + a.def + ")";
    s.set("description", doc);
    return s;
  }

  // A layer: the common keys, then each operator's attributes under `if op == NAME`; a layer
  // with an operator rsim does not know (a plugin's, or an expression) keeps any attributes.
  J layer_schema() {
    const keys::MapDef& m = keys::map("layer");
    J all = J::arr();
    J known = J::arr();
    std::map<std::string, std::vector<std::string>> names;  // canonical -> every spelling
    for (const auto& n : ops_->names()) names[n].push_back(n);
    for (const auto& [alias, target] : ops_->aliases()) names[target].push_back(alias);
    for (const auto& [canonical, spellings] : names) {
      const OpDef* op = ops_->find(canonical);
      J props = J::obj();
      J req = J::arr();
      for (const auto& a : op->attrs) {
        props.set(a.name, attr_schema(a));
        if (a.def.empty()) req.push(J(a.name));
      }
      J then = J::obj().set("properties", props);
      if (!req.empty()) then.set("required", req);
      J cond = J::obj().set("properties", J::obj().set("op", J::obj().set("enum", strings(spellings)))).set("required", J::arr({J("op")}));
      all.push(J::obj().set("if", cond).set("then", then));
      for (const auto& sp : spellings) known.push(J(sp));
    }
    all.push(J::obj()
                 .set("if", J::obj().set("properties", J::obj().set("op", J::obj().set("not", J::obj().set("enum", known)))))
                 .set("then", J::obj().set("additionalProperties", true)));
    J props = J::obj();
    J req = J::arr();
    for (const auto& k : m.keys) {
      // `op` lists the built-in operators as examples; a plugin's operator is accepted too
      J s = k.name == "op" ? J::obj().set("type", "string").set("examples", strings(ops_->all_names())) : type_schema(k.type);
      s.set("description", k.doc);
      props.set(k.name, s);
      if (k.required) req.push(J(k.name));
    }
    return J::obj()
        .set("type", "object")
        .set("title", m.title)
        .set("properties", props)
        .set("required", req)
        .set("allOf", all)
        .set("unevaluatedProperties", false);
  }

  J defs(bool with_ops) {
    J d = J::obj();
    d.set("expr", J::obj()
                      .set("type", "string")
                      .set("pattern", "\\$\\{")
                      .set("description", "An expression ${…} over vars, sweep variables and parameters, evaluated per sweep point."));
    d.set("numeric_text", J::obj().set("type", "string").set("pattern", "^[ \\t]*[-+]?([0-9]+\\.?[0-9]*|\\.[0-9]+)([eE][-+]?[0-9]+)?[ \\t]*$"));
    for (Dim dim : {Dim::FlopRate, Dim::ByteRate, Dim::Frequency, Dim::TransferRate, Dim::Bytes, Dim::Bits, Dim::Time})
      d.set(std::string("quantity.") + dim_key(dim),
            any_of({J::obj().set("type", "string").set("pattern", quantity_pattern(dim)), jref("expr")})
                .set("description", std::string(dim_name(dim)) + " with its unit, e.g. '" + dim_example(dim) + "'")
                .set("examples", J::arr({J(dim_example(dim))})));
    for (const auto& m : keys::all()) {
      if (m.name == "layer") continue;
      J s = map_schema(m);
      if (m.name == "platform") {
        // with `base: NAME` every other key is optional (taken from the catalog platform)
        J req = J::arr();
        for (const auto& k : m.keys)
          if (k.required) req.push(J(k.name));
        s = without_required(m);
        s.set("if", J::obj().set("required", J::arr({J("base")}))).set("else", J::obj().set("required", req));
      }
      if (m.name == "range") {
        J one = J::arr();
        one.push(J::obj().set("required", J::arr({J("values")})));
        for (const char* k : {"step", "factor", "count"}) one.push(J::obj().set("required", J::arr({J("from"), J("to"), J(k)})));
        s.set("oneOf", one);
      }
      d.set(m.name, s);
    }
    if (with_ops) d.set("layer", layer_schema());
    d.set("platform_ref", J::obj()
                              .set("if", type("string"))
                              .set("then", J::obj().set("description", "A platform of the catalog (`rsim hw list`)."))
                              .set("else", jref("platform")));
    d.set("network_item", J::obj()
                              .set("if", J::obj().set("required", J::arr({J("model")})))
                              .set("then", jref("model_use"))
                              .set("else", J::obj()
                                               .set("if", J::obj().set("required", J::arr({J("onnx")})))
                                               .set("then", jref("onnx_use"))
                                               .set("else", jref("network"))));
    d.set("layer_item", J::obj().set("if", J::obj().set("required", J::arr({J("block")}))).set("then", jref("block_use")).set("else", jref("layer")));
    J kinds = J::arr();
    J branches = J::arr();
    for (const std::string& k : keys::plot_kinds()) {
      kinds.push(J(k));
      branches.push(J::obj()
                        .set("if", J::obj().set("properties", J::obj().set("kind", J::obj().set("const", J(k)))).set("required", J::arr({J("kind")})))
                        .set("then", jref("plot." + k)));
    }
    d.set("plot", J::obj()
                      .set("type", "object")
                      .set("required", J::arr({J("kind")}))
                      .set("properties", J::obj().set("kind", J::obj().set("enum", kinds)))
                      .set("allOf", branches));
    d.set("vars", J::obj()
                      .set("type", "object")
                      .set("propertyNames", J::obj().set("pattern", kIdent))
                      .set("additionalProperties", scalar()));
    J range_or_values = J::obj()
                            .set("if", type("array"))
                            .set("then", J::obj().set("minItems", 1).set("items", scalar()))
                            .set("else", J::obj().set("if", type("object")).set("then", jref("range")).set("else", scalar()));
    d.set("values", J::obj().set("type", "array").set("minItems", 1).set("items", scalar()));
    d.set("sweep_vars", J::obj()
                            .set("type", "object")
                            .set("propertyNames", J::obj().set("pattern", kIdent))
                            .set("additionalProperties", range_or_values));
    d.set("params", J::obj()
                        .set("type", "object")
                        .set("propertyNames", J::obj().set("pattern", kIdent))
                        .set("additionalProperties", J::obj().set("type", J::arr({J("string"), J("number"), J("boolean"), J("null")}))));
    d.set("args", J::obj().set("type", "object").set("additionalProperties", scalar()));
    for (const auto& [name, choices] : {std::pair<const char*, std::vector<std::string>>{"algorithm_conv3x3", {"direct", "winograd_f2x2", "winograd_f4x4"}},
                                        {"algorithm_conv1x1_strided", {"full", "touched_input"}}}) {
      J one = J::obj().set("enum", strings(choices));
      d.set(name, any_of({one, J::obj().set("type", "object").set("additionalProperties", one)}));
    }
    {  // basis: one value for every figure of the map, or a map from figure to value
      J one = J::obj().set("enum", strings({"datasheet", "assumption", "measured", "calibrated", "carried"}));
      d.set("basis", any_of({one, J::obj().set("type", "object").set("additionalProperties", one)}));
    }
    d.set("level_laws", J::obj()
                            .set("type", "object")
                            .set("additionalProperties", J::obj().set("type", "array").set("minItems", 2).set("maxItems", 3).set("items", J::obj().set("type", "number"))));
    d.set("extrapolated", any_of({type("boolean"), J::obj().set("enum", strings({"compute", "bandwidth"}))}));
    {
      J pair = J::obj().set("type", "array").set("minItems", 2).set("maxItems", 2).set("items", J::obj().set("type", "number").set("exclusiveMinimum", 0));
      d.set("law_range", J::obj()
                             .set("type", "object")
                             .set("additionalProperties", false)
                             .set("properties", J::obj().set("compute_x", pair).set("bandwidth_x", pair).set("channels_per_group", pair).set("outputs", pair)));
    }
    {
      J lohi = J::obj().set("type", "array").set("minItems", 2).set("maxItems", 2).set("items", J::obj().set("type", "number"));
      d.set("axis_limits", lohi);
      d.set("color_scale", any_of({J::obj().set("enum", strings({"auto", "shared"})), lohi}));
    }
    J dim = any_of({type("integer").set("minimum", 1).set("maximum", 1e9), jref("numeric_text"), jref("expr")});
    d.set("shape", J::obj().set("type", "array").set("minItems", 1).set("items", dim));
    d.set("named_shapes", J::obj().set("type", "object").set("minProperties", 1).set("additionalProperties", jref("shape")));
    d.set("blocks", J::obj().set("type", "object").set("additionalProperties", jref("block")));
    J pass = J::obj().set("enum", strings(lists_["pass"]));
    d.set("passes", any_of({J::obj().set("enum", strings({"all", "none"})), pass, J::obj().set("type", "array").set("items", pass)}));
    return d;
  }

  J without_required(const keys::MapDef& m) {
    keys::MapDef copy = m;
    for (auto& k : copy.keys) k.required = false;
    return map_schema(copy);
  }

 private:
  const OpRegistry* ops_;
  std::vector<std::string> plot_columns_;
  std::map<std::string, std::vector<std::string>> lists_;
};

J document(const std::string& id, const std::string& title, const std::string& description, const std::string& root, J defs) {
  return J::obj()
      .set("$schema", "https://json-schema.org/draft/2020-12/schema")
      .set("$id", id)
      .set("title", title)
      .set("description", description)
      .set("$ref", "#/$defs/" + root)
      .set("$defs", defs);
}

}  // namespace

std::string scenario_schema(const OpRegistry& ops, const std::vector<std::string>& plot_columns) {
  Gen g(&ops, plot_columns);
  return document("https://rsim.invalid/schema/" RSIM_VERSION "/scenario.json", "rsim scenario",
                  "A scenario for rsim " RSIM_VERSION " (`rsim run FILE`), generated by `rsim schema` from the tables its loader reads.",
                  "scenario", g.defs(true))
             .dump() +
         "\n";
}

std::string platform_schema() {
  Gen g(nullptr, {});
  return document("https://rsim.invalid/schema/" RSIM_VERSION "/platform.json", "rsim platform",
                  "A platform file of the rsim " RSIM_VERSION " catalog (hardware/NAME.yaml), generated by `rsim schema platform`.", "platform",
                  g.defs(false))
             .dump() +
         "\n";
}

}  // namespace rsim
