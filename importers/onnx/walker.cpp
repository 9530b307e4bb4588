// The graph walker: initializers, graph inputs, then every node in file order (ONNX keeps nodes in
// topological order; parse_onnx checks it), each folded to a constant (fold.cpp) or dispatched by
// op type and opset to its family's converter (ops_*.cpp) through the registry below.
#include <algorithm>
#include <filesystem>

#include "importers/onnx/importer.hpp"

namespace rsim {

namespace onnx_detail {

// ---------------------------------------------------------------- the converter registry

const std::vector<OpConverter>& converters() {
  // the families in the order of the supported-ops table (the README's, `rsim import --summary`)
  static const std::vector<OpConverter> all = [] {
    std::vector<OpConverter> r;
    for (const auto* family : {&conv_converters(), &matmul_converters(), &recurrent_converters(), &norm_converters(), &elementwise_converters(), &pool_converters(),
                               &tensor_converters(), &reduce_converters(), &quant_converters(), &folded_converters(), &identity_converters(), &control_converters()})
      r.insert(r.end(), family->begin(), family->end());
    return r;
  }();
  return all;
}

const OpConverter* find_converter(const std::string& op_type, long long opset) {
  static const std::unordered_map<std::string, std::vector<const OpConverter*>> by_type = [] {
    std::unordered_map<std::string, std::vector<const OpConverter*>> r;
    for (const auto& c : converters()) r[c.op_type].push_back(&c);
    return r;
  }();
  auto it = by_type.find(op_type);
  if (it == by_type.end()) return nullptr;
  for (const OpConverter* c : it->second)
    if (c->since <= opset && opset <= c->until) return c;
  return nullptr;
}

// op type → the rsim operator it becomes (for the README table and `rsim import --summary`): the
// registry's, once per op type (an op with entries for several opset ranges is listed at its first)
const std::vector<std::pair<std::string, std::string>>& mapping_table() {
  static const std::vector<std::pair<std::string, std::string>> t = [] {
    std::vector<std::pair<std::string, std::string>> r;
    std::set<std::string> seen;
    for (const auto& c : converters())
      if (seen.insert(c.op_type).second) r.emplace_back(c.op_type, c.becomes);
    return r;
  }();
  return t;
}

bool supported(const std::string& op) {
  static const std::set<std::string> s = [] {
    std::set<std::string> r;
    for (const auto& [k, v] : mapping_table()) r.insert(k);
    return r;
  }();
  return s.count(op) > 0;
}

void collect_unsupported(const onnx::GraphProto& g, const std::map<std::string, std::string>& op_map, std::vector<OnnxUnsupported>& bad) {
  for (const auto& n : g.node()) {
    // (other domains, com.microsoft and the like, are unsupported unless mapped)
    const bool ok = (n.domain().empty() || n.domain() == "ai.onnx") && supported(n.op_type());
    if (!ok && !op_map.count(n.op_type())) {
      auto it = std::find_if(bad.begin(), bad.end(), [&](const auto& b) { return b.op_type == n.op_type(); });
      if (it == bad.end()) bad.push_back(OnnxUnsupported{n.op_type(), 1, n.name()});
      else ++it->count;
    }
    for (const auto& a : n.attribute())  // an If's branches: walked in its place
      if (a.has_g()) collect_unsupported(a.g(), op_map, bad);
  }
}

// ---------------------------------------------------------------- the walk

OnnxImport Importer::run() {
  const onnx::GraphProto& g = m_.proto.graph();
  res_.opset = m_.opset;
  res_.nodes = static_cast<size_t>(g.node_size());
  res_.initializers = static_cast<size_t>(g.initializer_size());
  check_unsupported(g);
  std::set<std::string>& bn_stats = bn_stats_;
  for (const auto& n : g.node())
    if (n.op_type() == "BatchNormalization")
      for (int i = 3; i < n.input_size() && i < 5; ++i) bn_stats.insert(n.input(i));
  for (const auto& t : g.initializer()) {
    for (auto d : t.dims())  // (was reported later as "computed from data at run time")
      if (d < 0) {
        std::string dims;
        for (auto x : t.dims()) dims += (dims.empty() ? "" : ", ") + std::to_string(x);
        fail("initializer '" + t.name() + "' has a negative dimension (" + std::to_string(d) + "): dims [" + dims + "]");
      }
    Val v = tensor_val(t);
    v.param = is_float_type(t.data_type());
    v.const_name = t.name();
    vals_[t.name()] = std::move(v);
  }
  read_inputs(g);
  // decomposed operators: each chain one layer at its first node, its other nodes skipped
  std::vector<int> head(static_cast<size_t>(g.node_size()), -1);  // chain index at its first node; -2: inside a chain
  std::vector<Chain> chains = opt_.recompose ? find_chains(g) : std::vector<Chain>{};
  // (a chain with a node whose op type the user maps elsewhere stays nodes)
  chains.erase(std::remove_if(chains.begin(), chains.end(),
                              [&](const Chain& c) {
                                return std::any_of(c.nodes.begin(), c.nodes.end(), [&](int n) { return opt_.op_map.count(g.node(n).op_type()) > 0; });
                              }),
               chains.end());
  for (size_t c = 0; c < chains.size(); ++c)
    for (size_t k = 0; k < chains[c].nodes.size(); ++k) head[static_cast<size_t>(chains[c].nodes[k])] = k == 0 ? static_cast<int>(c) : -2;
  for (int i = 0; i < g.node_size(); ++i) {
    const int h = head[static_cast<size_t>(i)];
    if (h == -1) {
      node(g.node(i), i);
      continue;
    }
    ++res_.op_histogram[g.node(i).op_type()];
    if (h < 0) continue;
    cur_ = &g.node(i);
    cur_name_ = cur_->name().empty() ? cur_->op_type() + "_" + std::to_string(++unnamed_[cur_->op_type()]) : cur_->name();
    recompose(chains[static_cast<size_t>(h)]);
  }
  for (const auto& o : g.output()) {
    auto it = vals_.find(o.name());
    if (it == vals_.end() || !it->second.known) fail("graph output '" + o.name() + "' is not produced by any node");
    res_.outputs.push_back(OnnxOutput{o.name(), it->second.shape, it->second.ref});
  }
  if (opt_.record_shapes)  // every node output (not the inputs and initializers: nothing to infer there)
    for (const auto& n : g.node())
      for (const auto& o : n.output())
        if (auto it = vals_.find(o); !o.empty() && it != vals_.end() && it->second.known) {
          res_.tensor_shapes[o] = it->second.shape;
          res_.tensor_elems[o] = it->second.elem;
        }
  // the network node
  CNode net;
  net.kind = CNode::Kind::Map;
  net.loc = file_loc(m_.file);
  std::string name = opt_.name;
  if (name.empty()) name = std::filesystem::path(m_.path).stem().string();
  net.entries.push_back(CEntry{"name", {}, scalar(name)});
  if (!opt_.dtype.empty()) net.entries.push_back(CEntry{"dtype", {}, scalar(opt_.dtype)});
  CNode ins;
  ins.kind = CNode::Kind::Map;
  for (const auto& [n, s] : net_inputs_) ins.entries.push_back(CEntry{n, {}, ints_node(std::vector<long long>(s.begin(), s.end()))});
  if (ins.entries.empty()) fail("the model has no inputs with a shape (every input is a constant); rsim needs at least one");
  net.entries.push_back(CEntry{"inputs", {}, ins});
  CNode layers;
  layers.kind = CNode::Kind::Seq;
  layers.items = std::move(layers_);
  for (auto& l : layers.items) l.loc = file_loc(m_.file);
  net.entries.push_back(CEntry{"layers", {}, layers});
  if (!res_.ignored.empty()) {  // listed in the run's summary and report
    CNode ig;
    ig.kind = CNode::Kind::Map;
    for (const auto& [op, n] : res_.ignored) ig.entries.push_back(CEntry{op, {}, int_node(n)});
    net.entries.push_back(CEntry{"ignored", {}, ig});
  }
  res_.network = std::move(net);
  for (const auto& [name, elements] : counted_) res_.weight_elements += elements;  // (as the layers count them: each once)
  return std::move(res_);
}

void Importer::check_unsupported(const onnx::GraphProto& g) {
  std::vector<OnnxUnsupported> bad;
  collect_unsupported(g, opt_.op_map, bad);
  if (bad.empty()) return;
  std::string list;
  for (const auto& b : bad)
    list += (list.empty() ? "" : ", ") + b.op_type + " (" + std::to_string(b.count) + " node" + (b.count == 1 ? "" : "s") +
            (b.first_node.empty() ? "" : ", first '" + b.first_node + "'") + ")";
  fail(std::to_string(bad.size()) + " unsupported ONNX operator" + (bad.size() == 1 ? "" : "s") + ": " + list,
       {Note{{}, "map each to a Lua operator or skip it in the network entry: onnx_ops: {" + bad[0].op_type + ": my_lua_op} or {" +
                     bad[0].op_type + ": ignore}"}});
}

std::string Importer::sanitize(const std::string& raw) {
  std::string s;
  for (char c : raw) s += (c == ':' || c == '\n' || c == '\r') ? '_' : c;
  if (s.empty() || s == "input") s += "_";
  return s;
}

std::string Importer::unique(const std::string& raw) {
  std::string base = sanitize(raw), s = base;
  for (int k = 2; used_names_.count(s); ++k) s = base + "_" + std::to_string(k);
  used_names_.insert(s);
  return s;
}

void Importer::read_inputs(const onnx::GraphProto& g) {
  for (const auto& [n, s] : opt_.inputs) {
    bool found = false;
    for (const auto& in : g.input()) found = found || in.name() == n;
    if (!found || vals_.count(n)) {
      std::vector<std::string> names;
      for (const auto& in : g.input())
        if (!vals_.count(in.name())) names.push_back(in.name());
      std::string hint = did_you_mean(n, names), list;
      for (const auto& x : names) list += (list.empty() ? "" : ", ") + x;
      fail("the model has no input '" + n + "'", {Note{{}, hint.empty() ? "its inputs: " + list : hint}});
    }
  }
  for (const auto& [n, v] : opt_.dims) {
    (void)v;
    bool found = false;
    for (const auto& in : g.input())
      for (const auto& d : in.type().tensor_type().shape().dim()) found = found || d.dim_param() == n;
    // NODE.count: the number of nonzero elements a NonZero node finds (its data-dependent shape)
    int unnamed = 0;
    for (const auto& nd : g.node())
      if (nd.op_type() == "NonZero") {
        const std::string name = nd.name().empty() ? "NonZero_" + std::to_string(++unnamed) : nd.name();
        found = found || n == name + ".count";
      }
    if (!found) {
      std::vector<std::string> syms;
      for (const auto& in : g.input())
        for (const auto& d : in.type().tensor_type().shape().dim())
          if (!d.dim_param().empty() && std::find(syms.begin(), syms.end(), d.dim_param()) == syms.end()) syms.push_back(d.dim_param());
      std::string hint = did_you_mean(n, syms), list;
      for (const auto& x : syms) list += (list.empty() ? "" : ", ") + x;
      fail("the model has no symbolic dimension '" + n + "'",
           {Note{{}, !hint.empty() ? hint : list.empty() ? "its inputs have fixed shapes" : "its symbolic dimensions: " + list}});
    }
  }
  for (const auto& in : g.input()) {
    if (vals_.count(in.name())) continue;  // an initializer listed as an input (IR < 4)
    Val v;
    v.known = true;
    v.elem = in.type().tensor_type().elem_type();
    auto ov = std::find_if(opt_.inputs.begin(), opt_.inputs.end(), [&](const auto& p) { return p.first == in.name(); });
    const auto& tt = in.type().tensor_type();
    for (const auto& d : tt.shape().dim())
      if (!d.dim_param().empty() && std::find(res_.symbols.begin(), res_.symbols.end(), d.dim_param()) == res_.symbols.end())
        res_.symbols.push_back(d.dim_param());
    if (!in.type().has_tensor_type()) fail("input '" + in.name() + "' is not a tensor (a sequence, map or optional); rsim reads tensor inputs only");
    if (ov != opt_.inputs.end()) {
      v.shape = ov->second;
    } else {
      if (!tt.has_shape())
        fail("input '" + in.name() + "' has no shape in the model",
             {Note{{}, "give it one in the network entry: inputs: {" + in.name() + ": [1, 3, 224, 224]}"}});
      for (int i = 0; i < tt.shape().dim_size(); ++i) {
        const auto& d = tt.shape().dim(i);
        if (d.has_dim_value() && d.dim_value() > 0) {
          v.shape.push_back(d.dim_value());
        } else if (!d.dim_param().empty()) {
          auto b = std::find_if(opt_.dims.begin(), opt_.dims.end(), [&](const auto& p) { return p.first == d.dim_param(); });
          if (b == opt_.dims.end())
            fail("input '" + in.name() + "' has the symbolic dimension '" + d.dim_param() + "' (dimension " + std::to_string(i) +
                     "), which is not bound",
                 {Note{{}, "bind it in the network entry: dims: {" + d.dim_param() + ": 1}"}});
          v.shape.push_back(b->second);
        } else {
          fail("dimension " + std::to_string(i) + " of input '" + in.name() + "' is unknown (neither a size nor a name)",
               {Note{{}, "give the input's shape in the network entry: inputs: {" + in.name() + ": [...]}"}});
        }
      }
    }
    auto iv = opt_.input_values.find(in.name());
    if (iv != opt_.input_values.end() && static_cast<double>(iv->second.size()) == count(v.shape)) {
      // known contents: shape arguments read them; an empty or scalar one is a constant, not an input
      v.has_data = true;
      v.data = iv->second;
      v.const_name = in.name();
      if (v.shape.empty() || count(v.shape) == 0) {
        v.is_const = true;
        vals_[in.name()] = std::move(v);
        continue;
      }
    }
    for (auto d : v.shape)
      if (d <= 0 || d > 1000000000LL) fail("input '" + in.name() + "' has dimension " + std::to_string(d) + " (each must be 1 to 1e9)");
    if (v.shape.empty()) {  // a scalar input: rsim networks take tensors, so it becomes a constant
      v.is_const = true;
      v.const_name = in.name();
    } else {
      v.ref = unique(in.name());
      net_inputs_.emplace_back(v.ref, v.shape);
    }
    vals_[in.name()] = std::move(v);
  }
}

void Importer::inline_graph(const onnx::GraphProto& branch) {
  const onnx::NodeProto* outer = cur_;
  const std::string outer_name = cur_name_;
  if (++inline_depth_ > 64) node_fail("nests Ifs more than 64 deep");  // (protobuf reads about 32)
  for (const auto& t : branch.initializer()) {
    Val v = tensor_val(t);
    v.param = is_float_type(t.data_type());
    v.const_name = t.name();
    vals_[t.name()] = std::move(v);
  }
  for (int i = 0; i < branch.node_size(); ++i) node(branch.node(i), i);
  cur_ = outer;
  cur_name_ = outer_name;
  if (branch.output_size() != outer->output_size())
    node_fail("its branch '" + branch.name() + "' has " + std::to_string(branch.output_size()) + " outputs, the If " + std::to_string(outer->output_size()));
  for (int i = 0; i < branch.output_size(); ++i) {
    auto it = vals_.find(branch.output(i).name());
    if (it == vals_.end() || !it->second.known) node_fail("its branch's output '" + branch.output(i).name() + "' is produced by no node of the branch");
    set_out(i, it->second);
  }
  --inline_depth_;
}

void Importer::unroll_loop(const onnx::GraphProto& body, long long trips, bool cond) {
  const onnx::NodeProto* outer = cur_;
  const std::string outer_name = cur_name_;
  if (++inline_depth_ > 64) node_fail("nests Ifs and Loops more than 64 deep");
  const int carried = outer->input_size() - 2;  // inputs: M, cond, then the loop-carried values
  if (carried < 0 || body.input_size() != carried + 2 || body.output_size() < carried + 1)
    node_fail("its body has " + std::to_string(body.input_size()) + " inputs and " + std::to_string(body.output_size()) + " outputs for " +
              std::to_string(std::max(0, carried)) + " loop-carried values (ONNX: the iteration number, the condition, then the carried values in; the condition, the carried values, then scan outputs out)");
  const int scans = body.output_size() - 1 - carried;
  if (outer->output_size() > carried + scans) node_fail("has more outputs than its body's carried values and scan outputs");
  std::vector<Val> state;
  for (int k = 0; k < carried; ++k) state.push_back(outer->input(2 + k).empty() ? Val{} : in(2 + k));
  std::vector<std::vector<Val>> scanned(static_cast<size_t>(scans));
  long long it = 0;
  for (; cond && (trips < 0 || it < trips); ++it) {
    if (it >= kMaxLoopIterations)
      node_fail("runs more than " + std::to_string(kMaxLoopIterations) + " iterations; rsim unrolls a Loop, and stops there",
                {Note{{}, "export with a shorter trip count, or bind the input it comes from"}});
    for (const auto& t : body.initializer()) {
      Val v = tensor_val(t);
      v.param = is_float_type(t.data_type());
      v.const_name = t.name();
      vals_[t.name()] = std::move(v);
    }
    vals_[body.input(0).name()] = const_val({}, {static_cast<double>(it)}, true);
    Val c = const_val({}, {1}, true);
    c.elem = onnx::TensorProto::BOOL;
    vals_[body.input(1).name()] = c;
    for (int k = 0; k < carried; ++k) vals_[body.input(2 + k).name()] = state[static_cast<size_t>(k)];
    for (int i = 0; i < body.node_size(); ++i) node(body.node(i), i);
    cur_ = outer;
    cur_name_ = outer_name;
    auto out = [&](int i) -> const Val& {
      auto f = vals_.find(body.output(i).name());
      if (f == vals_.end() || !f->second.known) node_fail("its body's output '" + body.output(i).name() + "' is produced by no node of the body");
      return f->second;
    };
    const Val& c_out = out(0);
    if (!c_out.has_data || c_out.data.size() != 1)
      node_fail("its body's condition is computed from data at run time; rsim unrolls a Loop only when its trip count and condition are constants");
    cond = c_out.data[0] != 0;
    for (int k = 0; k < carried; ++k) state[static_cast<size_t>(k)] = out(1 + k);
    for (int j = 0; j < scans; ++j) scanned[static_cast<size_t>(j)].push_back(out(1 + carried + j));
  }
  if (scans > 0 && it == 0) node_fail("runs no iteration, so its scan outputs are empty tensors; rsim layers need at least one element");
  // scan outputs: each iteration's value with a new first axis, then one concat along it (or, all
  // constants, folded)
  std::vector<Val> stacked;
  for (int j = 0; j < scans; ++j) {
    const auto& vs = scanned[static_cast<size_t>(j)];
    Shape each = vs.front().shape;
    for (const Val& v : vs)
      if (v.shape != each) node_fail("its scan output " + std::to_string(j) + " changes shape between iterations (" + shape_text(each) + ", " + shape_text(v.shape) + ")");
    Shape all = each;
    all.insert(all.begin(), static_cast<long long>(vs.size()));
    if (std::all_of(vs.begin(), vs.end(), [](const Val& v) { return v.has_data; })) {
      std::vector<double> data;
      for (const Val& v : vs) data.insert(data.end(), v.data.begin(), v.data.end());
      Val f = const_val(all, std::move(data), !is_float_type(vs.front().elem));
      f.elem = vs.front().elem;
      stacked.push_back(std::move(f));
      continue;
    }
    // (emit() names each layer uniquely: the name it gave is the last layer's)
    auto last_layer = [&] {
      for (const auto& e : layers_.back().entries)
        if (e.key == "name") return e.value.scalar;
      return std::string();
    };
    std::vector<std::string> refs;
    Shape one = each;
    one.insert(one.begin(), 1);
    Val s;
    s.known = true;
    s.elem = vs.front().elem;
    for (size_t k = 0; k < vs.size(); ++k) {
      if (vs[k].ref.empty()) node_fail("its scan output " + std::to_string(j) + " mixes constants and computed values");
      cur_name_ = outer_name + "/scan" + std::to_string(j) + "/" + std::to_string(k);
      LayerSpec r{"reshape", {}, {vs[k].ref}};
      r.set("shape", ints_node(std::vector<long long>(one.begin(), one.end())));
      s.shape = emit(r, 1).at(0);
      refs.push_back(last_layer());
    }
    s.ref = refs.front();
    cur_name_ = outer_name + "/scan" + std::to_string(j);
    if (refs.size() > 1) {
      LayerSpec l{"concat", {}, refs};
      l.set("axis", int_node(0));
      s.shape = emit(l, 1).at(0);
      s.ref = last_layer();
    }
    stacked.push_back(std::move(s));
  }
  cur_name_ = outer_name;
  for (int k = 0; k < carried; ++k) set_out(k, state[static_cast<size_t>(k)]);
  for (int j = 0; j < scans; ++j) set_out(carried + j, stacked[static_cast<size_t>(j)]);
  --inline_depth_;
}

void Importer::node(const onnx::NodeProto& n, int index) {
  (void)index;
  cur_ = &n;
  if (n.name().empty()) cur_name_ = n.op_type() + "_" + std::to_string(++unnamed_[n.op_type()]);
  else cur_name_ = n.name();
  ++res_.op_histogram[n.op_type()];
  const std::string& t = n.op_type();
  auto mapped = opt_.op_map.find(t);
  if (mapped != opt_.op_map.end()) {
    if (mapped->second == "ignore") {
      ++res_.ignored[t];
      if (!has_input(0)) node_fail("is ignored (onnx_ops), but has no input to pass through");
      Val v = in(0);
      for (int i = 0; i < n.output_size(); ++i) set_out(i, v);
      return;
    }
    LayerSpec s;
    s.op = mapped->second;
    if (const OpDef* op = ops_.find(s.op)) {  // every attribute of the node must be one the operator takes
      std::vector<std::string> takes;
      for (const auto& a : op->attrs) takes.push_back(a.name);
      std::string all;
      for (const auto& a : n.attribute()) all += (all.empty() ? "" : ", ") + a.name();
      for (const auto& a : n.attribute())
        if (std::find(takes.begin(), takes.end(), a.name()) == takes.end()) {
          std::string hint = did_you_mean(a.name(), takes);
          node_fail("has the attribute '" + a.name() + "', which operator '" + s.op + "' does not take",
                    {Note{{}, hint.empty() ? "declare it in the operator's attrs (the node's attributes: " + all + ")" : hint}});
        }
    }
    for (int i = 0; i < n.input_size(); ++i)
      if (has_input(i)) s.inputs.push_back(ref(i));
    for (const auto& a : n.attribute()) {
      switch (a.type()) {
        case onnx::AttributeProto::INT: s.set(a.name(), int_node(a.i())); break;
        case onnx::AttributeProto::FLOAT: s.set(a.name(), scalar(format_number(a.f()))); break;
        case onnx::AttributeProto::STRING: s.set(a.name(), scalar(a.s())); break;
        case onnx::AttributeProto::INTS: s.set(a.name(), ints_node(std::vector<long long>(a.ints().begin(), a.ints().end()))); break;
        case onnx::AttributeProto::FLOATS: {
          CNode l;
          l.kind = CNode::Kind::Seq;
          for (float f : a.floats()) l.items.push_back(scalar(format_number(f)));
          s.set(a.name(), l);
          break;
        }
        default: break;  // tensors and graphs are not passed to scripted operators
      }
    }
    emit(s);
    return;
  }
  if (try_fold()) {
    ++res_.folded[t];
    return;
  }
  const OpConverter* c = find_converter(t, m_.opset);
  if (c && !c->convert) node_fail("its inputs are computed from data at run time, so its result cannot be folded to a constant");
  if (!c) node_fail("is not supported");
  c->convert(*this, *c);
}

}  // namespace onnx_detail

using namespace onnx_detail;

std::vector<OnnxUnsupported> onnx_unsupported_ops(const OnnxModel& m, const std::map<std::string, std::string>& op_map) {
  std::vector<OnnxUnsupported> bad;
  onnx_detail::collect_unsupported(m.proto.graph(), op_map, bad);
  return bad;
}

const std::vector<std::pair<std::string, std::string>>& onnx_supported_ops() { return mapping_table(); }

OnnxImport import_onnx(const OnnxModel& m, const OnnxImportOptions& opt) { return Importer(m, opt).run(); }

}  // namespace rsim
