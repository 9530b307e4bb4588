// `rsim import`: the model as a zoo file whose symbolic dimensions are parameters (imported at a
// few probe values, the dimensions that differ fitted as expressions), and `rsim import --summary`.
#include <algorithm>
#include <numeric>
#include <optional>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <set>
#include <sstream>

#include "importers/onnx/importer.hpp"

namespace rsim {

using namespace onnx_detail;

namespace {

std::string quote(const std::string& s) {
  std::string q = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') q += '\\';
    if (c == '\n') {
      q += "\\n";
      continue;
    }
    q += c;
  }
  return q + "\"";
}

// ---------------------------------------------------------------- `rsim import`: YAML with parameters

// A dimension written as an expression of the model's symbolic dimensions.
struct Fit {
  bool ok = false;
  std::string expr;
};

struct Probe {
  std::vector<long long> values;  // one per symbol
  CNode net;
};

// v = c · Π sᵢ^eᵢ (exponents read off by dividing by the probe's primes), or v = c₀ + Σ cᵢ·sᵢ.
Fit fit_value(const std::vector<std::string>& syms, const std::vector<Probe>& probes, const std::vector<long long>& v) {
  size_t n = syms.size();
  const auto& base = probes[0].values;
  // monomial
  {
    long long c = v[0];
    std::vector<int> e(n, 0);
    for (size_t i = 0; i < n; ++i)
      while (c != 0 && c % base[i] == 0) {
        c /= base[i];
        ++e[i];
      }
    bool ok = c != 0;
    for (size_t p = 1; p < probes.size() && ok; ++p) {
      double pred = static_cast<double>(c);
      for (size_t i = 0; i < n; ++i) pred *= std::pow(static_cast<double>(probes[p].values[i]), e[i]);
      ok = pred == static_cast<double>(v[p]);
    }
    if (ok) {
      std::string s;
      for (size_t i = 0; i < n; ++i)
        for (int k = 0; k < e[i]; ++k) s += (s.empty() ? "" : " * ") + syms[i];
      if (c != 1 || s.empty()) s = s.empty() ? std::to_string(c) : (c == -1 ? "-" + s : s + " * " + std::to_string(c));
      return Fit{true, s};
    }
  }
  // linear: probes 1..n change one symbol each
  if (probes.size() >= n + 1) {
    std::vector<long long> c(n, 0);
    bool ok = true;
    long long c0 = v[0];
    for (size_t i = 0; i < n && ok; ++i) {
      long long ds = probes[i + 1].values[i] - base[i];
      long long dv = v[i + 1] - v[0];
      if (dv % ds != 0) ok = false;
      else c[i] = dv / ds;
      c0 -= c[i] * base[i];
    }
    for (size_t p = 0; p < probes.size() && ok; ++p) {
      long long pred = c0;
      for (size_t i = 0; i < n; ++i) pred += c[i] * probes[p].values[i];
      ok = pred == v[p];
    }
    if (ok) {
      std::string s;
      for (size_t i = 0; i < n; ++i) {
        if (c[i] == 0) continue;
        std::string term = (c[i] == 1 || c[i] == -1) ? syms[i] : std::to_string(std::llabs(c[i])) + " * " + syms[i];
        s += s.empty() ? (c[i] < 0 ? "-" + term : term) : (c[i] < 0 ? " - " : " + ") + term;
      }
      if (c0 != 0) s += (s.empty() ? std::to_string(c0) : (c0 < 0 ? " - " : " + ") + std::to_string(std::llabs(c0)));
      return Fit{true, s.empty() ? "0" : s};
    }
    // rational: c₀ + Σ (pᵢ/qᵢ)·sᵢ, exact at every probe (the probes are multiples of 32: a
    // UNet's height / 8), written with floor division: `height // 8`, `width * 3 // 4`
    std::vector<long long> num(n, 0), den(n, 1);
    ok = true;
    double c0d = static_cast<double>(v[0]);
    for (size_t i = 0; i < n && ok; ++i) {
      long long ds = probes[i + 1].values[i] - base[i];
      long long dv = v[i + 1] - v[0];
      if (ds == 0) ok = false;
      else {
        long long g = std::gcd(std::llabs(dv), std::llabs(ds));
        if (g == 0) g = 1;
        num[i] = dv / g, den[i] = ds / g;
        if (den[i] < 0) num[i] = -num[i], den[i] = -den[i];
        if (base[i] % den[i] != 0) ok = false;
        else c0d -= static_cast<double>(num[i] * (base[i] / den[i]));
      }
    }
    const long long r0 = static_cast<long long>(c0d);
    for (size_t p = 0; p < probes.size() && ok; ++p) {
      long long pred = r0;
      for (size_t i = 0; i < n && ok; ++i) {
        if (probes[p].values[i] % den[i] != 0) ok = false;
        else pred += num[i] * (probes[p].values[i] / den[i]);
      }
      ok = ok && pred == v[p];
    }
    if (ok) {
      std::string s;
      for (size_t i = 0; i < n; ++i) {
        if (num[i] == 0) continue;
        const long long a = std::llabs(num[i]);
        std::string term = syms[i] + (a == 1 ? "" : " * " + std::to_string(a)) + (den[i] == 1 ? "" : " // " + std::to_string(den[i]));
        s += s.empty() ? (num[i] < 0 ? "-" + term : term) : (num[i] < 0 ? " - " : " + ") + term;
      }
      if (r0 != 0) s += (s.empty() ? std::to_string(r0) : (r0 < 0 ? " - " : " + ") + std::to_string(std::llabs(r0)));
      return Fit{true, s.empty() ? "0" : s};
    }
  }
  return Fit{};
}

// Walks the probes' networks in parallel; scalars that differ become `${expression}`.
CNode merge(const std::vector<std::string>& syms, const std::vector<Probe>& probes, std::vector<const CNode*> nodes, const std::string& where,
            const std::shared_ptr<const SourceFile>& file) {
  const CNode& a = *nodes[0];
  auto structural = [&]() {
    fail_file(file, "the model's structure (" + where + ") changes with the value of its symbolic dimensions, so it cannot be written with parameters",
              {Note{{}, "fix the dimensions with --dim NAME=VALUE (then the file is written for those values)"}});
  };
  for (const CNode* n : nodes)
    if (n->kind != a.kind || n->items.size() != a.items.size() || n->entries.size() != a.entries.size()) structural();
  CNode out = a;
  if (a.is_scalar()) {
    bool same = true;
    for (const CNode* n : nodes) same = same && n->scalar == a.scalar;
    if (same) return out;
    std::vector<long long> v;
    for (const CNode* n : nodes) {
      auto x = parse_integer(n->scalar);
      if (!x) structural();
      v.push_back(*x);
    }
    Fit f = fit_value(syms, probes, v);
    if (!f.ok) {
      std::string list;
      for (const auto& s : syms) list += (list.empty() ? "" : ", ") + s;
      fail_file(file, where + " depends on " + list + " in a way rsim cannot write as an expression",
                {Note{{}, "fix the dimensions with --dim NAME=VALUE"}});
    }
    out.scalar = "${" + f.expr + "}";
    return out;
  }
  for (size_t i = 0; i < a.items.size(); ++i) {
    std::vector<const CNode*> sub;
    for (const CNode* n : nodes) sub.push_back(&n->items[i]);
    std::string w = where;
    if (const CNode* nm = a.items[i].find("name")) w = "layer '" + nm->scalar + "'";
    out.items[i] = merge(syms, probes, sub, w, file);
  }
  for (size_t i = 0; i < a.entries.size(); ++i) {
    std::vector<const CNode*> sub;
    for (const CNode* n : nodes) {
      if (n->entries[i].key != a.entries[i].key) structural();
      sub.push_back(&n->entries[i].value);
    }
    std::string w = where.empty() ? a.entries[i].key : where + " '" + a.entries[i].key + "'";
    if (where.rfind("layer '", 0) == 0 && where.find("' '") == std::string::npos) w = where + " attribute '" + a.entries[i].key + "'";
    out.entries[i].value = merge(syms, probes, sub, w, file);
  }
  return out;
}

bool plain_ok(const std::string& s) {
  if (s.empty()) return false;
  if (parse_double(s) || s == "true" || s == "false") return true;
  for (char c : s)
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '.' || c == '-' || c == '+')) return false;
  return std::isalpha(static_cast<unsigned char>(s[0])) || s[0] == '_';
}

std::string flow(const CNode& n, bool force_quote = false) {
  switch (n.kind) {
    case CNode::Kind::Null: return "~";
    case CNode::Kind::Scalar:
      if (force_quote) return quote(n.scalar);
      return plain_ok(n.scalar) ? n.scalar : quote(n.scalar);
    case CNode::Kind::Seq: {
      std::string s = "[";
      for (size_t i = 0; i < n.items.size(); ++i) s += (i ? ", " : "") + flow(n.items[i], force_quote);
      return s + "]";
    }
    case CNode::Kind::Map: {
      std::string s = "{";
      for (size_t i = 0; i < n.entries.size(); ++i) {
        const auto& e = n.entries[i];
        bool q = e.key == "name" || e.key == "inputs";
        s += (i ? ", " : "") + (plain_ok(e.key) ? e.key : quote(e.key)) + ": " + flow(e.value, q);
      }
      return s + "}";
    }
  }
  return "~";
}

}  // namespace

namespace {

// --check-dims: the model imported at every combination of the sizes named (at most 64), the other
// symbols at their --dim defaults; a size the model cannot take is an error naming the sizes, the
// node that rejected them and why.
template <class Run>
void check_at_named_sizes(const OnnxModel& m, const OnnxImportOptions& opt, const std::vector<std::string>& syms,
                          const std::vector<std::pair<std::string, long long>>& defaults, Run run_with) {
  if (opt.check_dims.empty()) return;
  std::string list;
  for (const auto& x : syms) list += (list.empty() ? "" : ", ") + x;
  for (const auto& [name, values] : opt.check_dims)
    if (std::find(syms.begin(), syms.end(), name) == syms.end()) {
      std::string hint = did_you_mean(name, syms);
      fail_file(m.file, "--check-dims names '" + name + "', which is not a symbolic dimension the imported model keeps",
                {Note{{}, !hint.empty() ? hint : list.empty() ? "the imported model keeps no symbol" : "its symbols: " + list}});
    }
  // each symbol's sizes to check: its --check-dims list, else its default
  std::vector<std::vector<long long>> sizes;
  size_t combos = 1;
  for (const auto& s : syms) {
    auto c = std::find_if(opt.check_dims.begin(), opt.check_dims.end(), [&](const auto& p) { return p.first == s; });
    auto d = std::find_if(defaults.begin(), defaults.end(), [&](const auto& p) { return p.first == s; });
    if (c != opt.check_dims.end()) sizes.push_back(c->second);
    else if (d != defaults.end()) sizes.push_back({d->second});
    else
      fail_file(m.file, "--check-dims needs a size for every symbol the model keeps; '" + s + "' has none",
                {Note{{}, "name it too (--check-dims " + s + "=1) or give it a default (--dim " + s + "=1)"}});
    combos *= sizes.back().size();
    if (combos > 64) fail_file(m.file, "--check-dims names more than 64 combinations of sizes; check fewer at once");
  }
  for (size_t k = 0; k < combos; ++k) {
    std::vector<long long> v;
    std::string at;
    size_t rest = k;
    for (size_t i = 0; i < syms.size(); ++i) {
      v.push_back(sizes[i][rest % sizes[i].size()]);
      rest /= sizes[i].size();
      at += (at.empty() ? "" : ", ") + syms[i] + " = " + std::to_string(v.back());
    }
    try {
      run_with(v);
    } catch (const ConfigError& e) {
      std::vector<Diagnostic> ds = e.diagnostics();
      ds.front().message = "the model does not take " + at + " (--check-dims): " + ds.front().message;
      throw ConfigError(ds);
    }
  }
}

}  // namespace

namespace {

// --input with symbols: a size where the model has a symbol fixes that symbol (into opt.dims); a
// name must be the model's symbol there (it stays a parameter)
void fix_input_symbols(const OnnxModel& m, OnnxImportOptions& opt) {
  for (const auto& [name, dims] : opt.input_dims) {
    const onnx::ValueInfoProto* in = nullptr;
    for (const auto& x : m.proto.graph().input())
      if (x.name() == name) in = &x;
    if (!in) fail_file(m.file, "--input names '" + name + "', which is not an input of the model");
    const auto& shape = in->type().tensor_type().shape();
    if (static_cast<size_t>(shape.dim_size()) != dims.size())
      fail_file(m.file, "--input gives " + std::to_string(dims.size()) + " dimensions for '" + name + "', which has " + std::to_string(shape.dim_size()));
    for (size_t k = 0; k < dims.size(); ++k) {
      const auto& d = shape.dim(static_cast<int>(k));
      const auto v = parse_integer(dims[k]);
      if (v && !d.dim_param().empty()) opt.dims.emplace_back(d.dim_param(), *v);
      else if (v && d.has_dim_value() && d.dim_value() != *v)
        fail_file(m.file, "--input gives '" + name + "' dimension " + std::to_string(k) + " as " + dims[k] + "; the model fixes it at " + std::to_string(d.dim_value()));
      else if (!v && d.dim_param() != dims[k])
        fail_file(m.file, "--input names dimension " + std::to_string(k) + " of '" + name + "' '" + dims[k] + "'; the model's is " +
                              (d.dim_param().empty() ? std::to_string(d.dim_value()) + " (fixed)" : "the symbol '" + d.dim_param() + "'"),
                  {Note{{}, "a name keeps the model's own symbol: write it as the model does, or give a size"}});
    }
  }
}

}  // namespace

std::string onnx_to_model_yaml(const OnnxModel& m, const OnnxImportOptions& opt_in, const std::vector<std::pair<std::string, long long>>& defaults) {
  OnnxImportOptions opt = opt_in;
  fix_input_symbols(m, opt);
  // symbols: those of the inputs that --input does not fix and --dim does not pin
  OnnxImport first;
  std::vector<std::string> syms;
  {
    std::vector<std::string> all;
    for (const auto& in : m.proto.graph().input()) {
      if (std::any_of(opt.inputs.begin(), opt.inputs.end(), [&](const auto& p) { return p.first == in.name(); })) continue;
      for (const auto& d : in.type().tensor_type().shape().dim())
        if (!d.dim_param().empty() && std::find(all.begin(), all.end(), d.dim_param()) == all.end()) all.push_back(d.dim_param());
    }
    for (const auto& s : all)
      if (!std::any_of(opt.dims.begin(), opt.dims.end(), [&](const auto& p) { return p.first == s; })) syms.push_back(s);
    // --dim NAME without a value: just those stay parameters, every other symbol must be fixed
    for (const auto& k : opt.keep)
      if (std::find(all.begin(), all.end(), k) == all.end()) {
        std::string hint = did_you_mean(k, all);
        fail_file(m.file, "the model has no symbolic dimension '" + k + "'", {Note{{}, hint.empty() ? "its symbolic dimensions: " + [&] {
                                                                                  std::string l;
                                                                                  for (const auto& x : all) l += (l.empty() ? "" : ", ") + x;
                                                                                  return l.empty() ? std::string("none") : l;
                                                                                }()
                                                                                                         : hint}});
      }
    if (!opt.keep.empty()) {
      std::string loose;
      for (const auto& x : syms)
        if (std::find(opt.keep.begin(), opt.keep.end(), x) == opt.keep.end()) loose += (loose.empty() ? "" : ", ") + x;
      if (!loose.empty())
        fail_file(m.file, "--dim keeps only the symbols it names, but " + loose + " " + (loose.find(',') == std::string::npos ? "is" : "are") +
                              " neither kept nor fixed",
                  {Note{{}, "fix them with --input NAME=DIMS (sizes, and the kept symbols by name, e.g. x=batchx3x256x256), or keep them with --dim"}});
    }
    for (const auto& [name, value] : defaults)
      if (std::find(all.begin(), all.end(), name) == all.end()) {
        std::string hint = did_you_mean(name, all), list;
        for (const auto& x : all) list += (list.empty() ? "" : ", ") + x;
        fail_file(m.file, "the model has no symbolic dimension '" + name + "'",
                  {Note{{}, !hint.empty() ? hint : list.empty() ? "its inputs have fixed shapes" : "its symbolic dimensions: " + list}});
      }
  }
  std::vector<Probe> probes;
  static const long long primes[][8] = {{101, 103, 107, 109, 113, 127, 131, 137}, {139, 149, 151, 157, 163, 167, 173, 179}};
  if (syms.size() > 8) fail_file(m.file, "has more than 8 symbolic dimensions; fix some with --dim NAME=VALUE");
  auto run_with = [&](const std::vector<long long>& values) {
    OnnxImportOptions o = opt;
    for (size_t i = 0; i < syms.size(); ++i) o.dims.emplace_back(syms[i], values[i]);
    return import_onnx(m, o);
  };
  // The probes: the model imported at sizes rsim picks (primes, so that each fitted value shows
  // which symbols it depends on), then at the same primes times 32 when a model cannot take odd
  // sizes (a UNet: pooled, upsampled, concatenated with its skip), each family checked at the
  // defaults or at other primes. Sizes the user never gave are never named in an error but as probes.
  OnnxImport r0;
  CNode net;
  std::optional<ConfigError> first_error;
  std::vector<long long> tried;
  for (long long mult : {1LL, 32LL}) {
    probes.clear();
    try {
      std::vector<long long> base;
      for (size_t i = 0; i < syms.size(); ++i) base.push_back(primes[0][i] * mult);
      r0 = run_with(base);
      probes.push_back(Probe{base, r0.network});
      if (!syms.empty()) {
        for (size_t i = 0; i < syms.size(); ++i) {
          auto v = base;
          v[i] = primes[1][i] * mult;
          probes.push_back(Probe{v, run_with(v).network});
        }
        // the check: the defaults when every symbol has one, else other primes
        std::vector<long long> check;
        for (size_t i = 0; i < syms.size(); ++i) {
          auto d = std::find_if(defaults.begin(), defaults.end(), [&](const auto& p) { return p.first == syms[i]; });
          check.push_back(d != defaults.end() ? d->second : (primes[1][(i + 3) % 8] + 2 * static_cast<long long>(i)) * mult);
        }
        probes.push_back(Probe{check, run_with(check).network});
      }
      std::vector<const CNode*> nodes;
      for (const auto& p : probes) nodes.push_back(&p.net);
      net = merge(syms, probes, nodes, "", m.file);  // (a value no expression fits: the next family)
      first_error.reset();
      break;
    } catch (const ConfigError& e) {
      if (syms.empty()) throw;
      if (!first_error) first_error = e;
      tried.push_back(mult);
    }
  }
  if (first_error) {
    std::string list;
    for (const auto& x : syms) list += (list.empty() ? "" : ", ") + x;
    std::vector<Diagnostic> ds = first_error->diagnostics();
    ds.front().message = "the model's shapes cannot be derived for its symbolic dimensions (" + list + ") at rsim's probe sizes: " + ds.front().message;
    ds.front().notes.push_back(Note{{}, "rsim imports the model at sizes it picks (primes such as 101, then multiples of 32 such as 3232) to write each "
                                        "shape as an expression of the symbols; these sizes were rejected, or gave values no expression fits"});
    ds.front().notes.push_back(Note{{}, "give the symbols sizes the model takes: --dim NAME=VALUE for each, or fixed input shapes with --input NAME=1x3x128x160"});
    throw ConfigError(ds);
  }

  check_at_named_sizes(m, opt, syms, defaults, run_with);

  std::ostringstream y;
  std::string file = std::filesystem::path(m.path).filename().string();
  y << "# Imported from " << file << " by `rsim import` (ONNX opset " << r0.opset << ", " << r0.nodes << " nodes, "
    << r0.initializers << " initializers; " << format_number(r0.weight_elements) << " parameters, as rsim run counts them).\n";
  y << "# Shape computations were folded into the attributes; layer names are the node names.\n";
  if (!syms.empty()) {
    std::string list;
    for (const auto& s : syms) list += (list.empty() ? "" : ", ") + s;
    y << "# The model's symbolic dimensions (" << list << ") are its parameters: {model: NAME, args: {" << syms[0] << ": 1}}.\n";
  }
  for (const auto& e : net.entries) {
    if (e.key == "name") {
      y << "name: " << flow(e.value, true) << "\n";
      y << "description: " << quote("imported from " + file) << "\n";
      if (!syms.empty()) {
        y << "params: {";
        for (size_t i = 0; i < syms.size(); ++i) {
          auto d = std::find_if(defaults.begin(), defaults.end(), [&](const auto& p) { return p.first == syms[i]; });
          y << (i ? ", " : "") << (plain_ok(syms[i]) ? syms[i] : quote(syms[i])) << ": " << (d != defaults.end() ? std::to_string(d->second) : "~");
        }
        y << "}\n";
      }
    } else if (e.key == "inputs") {
      y << "inputs:\n";
      for (const auto& in : e.value.entries) y << "  " << quote(in.key) << ": " << flow(in.value) << "\n";
    } else if (e.key == "layers") {
      y << "layers:\n";
      for (const auto& l : e.value.items) y << "  - " << flow(l) << "\n";
    } else {
      y << e.key << ": " << flow(e.value) << "\n";
    }
  }
  return y.str();
}

namespace {

// An ONNX element type as rsim names dtypes (uint8 and uint4 as the file has them)
std::string elem_name(int t) {
  switch (t) {
    case onnx::TensorProto::FLOAT: return "fp32";
    case onnx::TensorProto::FLOAT16: return "fp16";
    case onnx::TensorProto::BFLOAT16: return "bf16";
    case onnx::TensorProto::DOUBLE: return "fp64";
    case onnx::TensorProto::INT8: return "int8";
    case onnx::TensorProto::UINT8: return "uint8";
    case onnx::TensorProto::INT16: return "int16";
    case onnx::TensorProto::UINT16: return "uint16";
    case onnx::TensorProto::INT32: return "int32";
    case onnx::TensorProto::UINT32: return "uint32";
    case onnx::TensorProto::INT64: return "int64";
    case onnx::TensorProto::UINT64: return "uint64";
    case onnx::TensorProto::BOOL: return "bool";
    case onnx::TensorProto::STRING: return "string";
    default: return "type " + std::to_string(t);
  }
}

// "fp16 × 3, fp32 × 1" (elements: "fp16 1,234 elements")
std::string by_type(const std::map<std::string, double>& m, bool elements) {
  std::string s;
  for (const auto& [t, n] : m) s += (s.empty() ? "" : ", ") + t + (elements ? " " + format_number(n) + " elements" : " × " + format_number(n));
  return s;
}

}  // namespace

std::string onnx_summary(const OnnxModel& m, const OnnxImportOptions& opt) {
  std::ostringstream s;
  const auto& g = m.proto.graph();
  std::map<std::string, int> hist;
  for (const auto& n : g.node()) ++hist[n.op_type()];
  s << m.path << ": ONNX opset " << m.opset << ", IR version " << m.proto.ir_version();
  if (!m.proto.producer_name().empty()) s << ", produced by " << m.proto.producer_name() << " " << m.proto.producer_version();
  s << "\n";
  std::set<std::string> bn, quant;  // BatchNorm statistics; quantization scales and zero points
  for (const auto& n : g.node()) {
    const std::string& t = n.op_type();
    std::vector<int> at;
    if (t == "BatchNormalization") {
      for (int i = 3; i < n.input_size() && i < 5; ++i) bn.insert(n.input(i));
    } else if (t == "QuantizeLinear" || t == "DequantizeLinear") {
      at = {1, 2};
    } else if (t == "QLinearConv" || t == "QLinearMatMul") {
      at = {1, 2, 4, 5, 6, 7};
    } else if (t == "ConvInteger" || t == "MatMulInteger") {
      at = {2, 3};
    }
    for (int i : at)
      if (i < n.input_size() && !n.input(i).empty()) quant.insert(n.input(i));
  }
  // element types per class of tensor; weights: every initializer but those and integer constants
  size_t external = 0;
  std::set<std::string> inits;
  std::map<std::string, double> w, q, st, c, ins, outs;
  for (const auto& t : g.initializer()) {
    inits.insert(t.name());
    double e = 1;
    for (auto d : t.dims()) e *= static_cast<double>(d);
    if (t.data_location() == onnx::TensorProto::EXTERNAL) ++external;
    const std::string ty = elem_name(t.data_type());
    if (quant.count(t.name())) q[ty] += 1;
    else if (bn.count(t.name())) st[ty] += e;
    else if (t.data_type() == onnx::TensorProto::INT64 || t.data_type() == onnx::TensorProto::BOOL) c[ty] += 1;
    else w[ty] += e;
  }
  double weights = 0, stats = 0;
  for (const auto& [t, e] : w) weights += e;
  for (const auto& [t, e] : st) stats += e;
  s << "  " << g.node_size() << " nodes, " << g.initializer_size() << " initializers (" << external << " in external data), "
    << format_number(weights) << " weight elements";
  if (stats > 0) s << " (+" << format_number(stats) << " BatchNorm running statistics, not parameters)";
  s << "\n";
  for (const auto& in : g.input())
    if (!inits.count(in.name())) ins[elem_name(in.type().tensor_type().elem_type())] += 1;
  for (const auto& o : g.output()) outs[elem_name(o.type().tensor_type().elem_type())] += 1;
  {
    std::string line = "inputs " + by_type(ins, false);
    if (!w.empty()) line += "; weights " + by_type(w, true);
    if (!q.empty()) line += "; quantization scales and zero points " + by_type(q, false);
    if (!st.empty()) line += "; BatchNorm statistics " + by_type(st, true);
    if (!c.empty()) line += "; integer constants " + by_type(c, false);
    line += "; outputs " + by_type(outs, false);
    s << "  dtypes: " << line << "\n";
  }
  s << "  inputs:";
  for (const auto& in : g.input()) {
    bool init = false;
    for (const auto& t : g.initializer()) init = init || t.name() == in.name();
    if (init) continue;
    s << " " << in.name() << " [";
    const auto& dims = in.type().tensor_type().shape().dim();
    for (int i = 0; i < dims.size(); ++i) s << (i ? ", " : "") << (dims[i].dim_param().empty() ? std::to_string(dims[i].dim_value()) : dims[i].dim_param());
    s << "]";
  }
  s << "\n  op types (" << hist.size() << "):\n";
  std::vector<std::pair<int, std::string>> order;
  for (const auto& [k, v] : hist) order.emplace_back(-v, k);
  std::sort(order.begin(), order.end());
  for (const auto& [neg, k] : order) {
    std::string to = "unsupported";
    for (const auto& [op, r] : onnx_supported_ops())
      if (op == k) to = r;
    auto mapped = opt.op_map.find(k);
    if (mapped != opt.op_map.end()) to = mapped->second == "ignore" ? "ignored (onnx_ops)" : mapped->second + " (onnx_ops)";
    char line[256];
    std::snprintf(line, sizeof line, "    %-24s %6d  → %s\n", k.c_str(), -neg, to.c_str());
    s << line;
  }
  auto bad = onnx_unsupported_ops(m, opt.op_map);
  if (bad.empty()) {
    s << "  unsupported: none\n";
    try {
      OnnxImportOptions ro = opt;
      ro.record_shapes = true;  // (the node outputs' element types)
      OnnxImport r = import_onnx(m, ro);
      std::map<std::string, double> acts;
      for (const auto& [name, elem] : r.tensor_elems) acts[elem_name(elem)] += 1;
      if (!acts.empty()) s << "  dtypes: activations (node outputs, as rsim costs them) " << by_type(acts, false) << "\n";
      size_t folded = 0;
      for (const auto& [k, v] : r.folded) folded += static_cast<size_t>(v);
      const size_t n = r.network.find("layers")->items.size();
      s << "  imported: " << n << (n == 1 ? " layer (" : " layers (") << folded << (folded == 1 ? " node" : " nodes") << " folded into constants)\n";
      // the count `rsim run` gives (summary.csv's params), from the same import
      s << "  parameters: " << format_number(r.weight_elements)
        << ", as rsim run counts them (the initializers its layers hold as weights, each once; BatchNorm statistics, quantization scales and zero points, "
           "integer constants and initializers no layer reads left out)\n";
      if (!r.recomposed.empty()) {  // chains of nodes that became one layer each
        s << "  recomposed:";
        for (const auto& [k, v] : r.recomposed) s << " " << k << " × " << v;
        s << " (chains of nodes as one layer each; onnx_recompose: false keeps the nodes)\n";
      }
    } catch (const ConfigError& e) {
      s << "  not imported with these shapes: " << e.diagnostics().front().message << "\n";
    }
  } else {
    s << "  unsupported (" << bad.size() << "):";
    for (const auto& b : bad) s << " " << b.op_type << " ×" << b.count << (b.first_node.empty() ? "" : " (first '" + b.first_node + "')");
    s << "\n";
  }
  return s.str();
}

}  // namespace rsim
