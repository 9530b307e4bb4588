// Operators: attribute schemas, shape inference and cost rules, one registry entry per operator.
// The registry derives bytes from shapes; each operator only states its arithmetic (onnx-tool style).
#pragma once
#include <functional>
#include <map>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "engine/model/config.hpp"
#include "engine/model/tensor.hpp"

namespace rsim {

enum class AttrType {
  Int,      // 3
  Float,    // 0.5
  Bool,     // true
  String,   // free text
  Choice,   // one of AttrSpec::choices
  Pair,     // 3 or [3, 5]  -> two ints (height, width)
  Ints,     // [1, -1, 7]   -> any number of ints
  Padding,  // 1, [1, 2], same, valid
};

struct AttrSpec {
  std::string name;
  AttrType type;
  std::string def;  // default as YAML text; "" = required, "~" = optional with no value
  std::string doc;
  std::vector<std::string> choices;  // Choice only
};

struct AttrValue {
  bool set = false;
  long long i = 0;
  double f = 0;
  bool b = false;
  std::string s;               // String, Choice, Padding keyword
  std::vector<long long> ints;  // Pair (2), Ints, Padding numbers (2)
};

class Attrs {
 public:
  void put(const std::string& name, AttrValue v);
  // The value of the attribute at position `index` of all() (which must exist)
  void set(size_t index, AttrValue v) { v_.at(index).second = std::move(v); }
  // The same for an integer (what parse_attr makes of an int): in place, keeping the storage
  void set_int(size_t index, long long i) {
    AttrValue& v = v_.at(index).second;
    v.set = true, v.i = i, v.f = 0, v.b = false;
    v.s.clear(), v.ints.clear();
  }
  // Lookups take string_view so that rules written with literals allocate nothing.
  const AttrValue& at(std::string_view name) const;  // throws std::logic_error if unknown
  bool has(std::string_view name) const { return at(name).set; }
  long long i(std::string_view n) const { return at(n).i; }
  double f(std::string_view n) const { return at(n).f; }
  bool b(std::string_view n) const { return at(n).b; }
  const std::string& s(std::string_view n) const { return at(n).s; }
  const std::vector<long long>& ints(std::string_view n) const { return at(n).ints; }
  const std::vector<std::pair<std::string, AttrValue>>& all() const { return v_; }

 private:
  std::vector<std::pair<std::string, AttrValue>> v_;
};

// A shape problem found by an operator; the graph adds the layer's location.
class ShapeError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
  ShapeError(const std::string& msg, std::vector<std::string> notes) : std::runtime_error(msg), notes(std::move(notes)) {}
  std::vector<std::string> notes;  // e.g. a script's traceback
};

struct OpArgs {
  const Attrs& attrs;
  const std::vector<Shape>& in;
  DType dtype;              // activations: inputs and outputs
  Precision precision{};    // weights, KV cache and math precision (unset: dtype)
  unsigned kv_inputs = 0;   // bit i: input i is read from the KV cache (stored in the KV dtype)
  DType weights_dtype() const { return precision.weights.value_or(dtype); }
  DType kv_dtype() const { return precision.kv.value_or(dtype); }
  DType compute_dtype() const { return precision.compute.value_or(dtype); }
};

// What an operator computes, before bytes: the arithmetic and its weights.
struct OpWork {
  double macs = 0;         // multiply-accumulates
  double other_flops = 0;  // FLOPs that are not part of a MAC (compares, adds, exp...)
  double params = 0;       // learnable parameters (what frameworks count)
  double weight_elems = 0; // elements of constant data read per pass (params plus buffers)
  double macs_executed = -1;  // MACs a direct kernel executes (taps on padding skipped); -1: = macs
  // Of weight_elems, the matrix weights: stored in the weights dtype (with quantization scales);
  // the rest (biases, norm scales, routers) stays in the activation dtype.
  double quantized_elems = 0;
  // Constants held in memory when they differ from what one pass reads (a whole embedding table,
  // every expert of a mixture); negative: the same as weight_elems / quantized_elems.
  double resident_elems = -1, resident_quantized_elems = -1;
  double active_params = -1;  // parameters one token uses (mixture of experts); negative: params
  // Intermediate elements written and read back inside the layer (naive attention's score
  // matrix): `scratch_passes` passes over them move bytes; they count as activations held once.
  double scratch_elems = 0, scratch_passes = 0;
  // KV-cache elements held after the layer (an operator with kv_outputs); negative: its outputs'
  // elements (a sliding window holds fewer tokens than attention reads in a prefill).
  double kv_cache_elems = -1;
  // Byte overrides (scripted operators may state them): negative / empty = derive from shapes.
  double weight_bytes = -1;
  std::vector<double> input_bytes, output_bytes;
};

struct OpDef {
  std::string name;
  std::string summary;  // one line
  std::string formula;  // the cost rule, written once; shown by `rsim ops NAME`
  std::vector<AttrSpec> attrs;
  int min_inputs = 1;
  int max_inputs = 1;  // -1: any number
  bool view = false;   // moves no data (reshape view, identity): zero bytes
  bool kv_outputs = false;  // its outputs live in the KV cache (stored in the KV dtype)
  std::function<std::vector<Shape>(const OpArgs&)> infer;
  std::function<OpWork(const OpArgs&, const std::vector<Shape>& out)> work;
};

// An operator's one output shape as infer returns it (a braced `return {shape}` would build the
// shape and then copy it)
std::vector<Shape> one_shape(Shape s);

// Full cost of one layer: arithmetic plus bytes by tensor.
struct OpCost {
  double macs = 0;
  double flops = 0;
  // What a direct kernel executes: a convolution skips the taps that fall on padding, which the
  // conventional count (macs, flops) includes. Equal to macs/flops for every other operator.
  double macs_executed = 0;
  double flops_executed = 0;
  double params = 0;
  double weight_bytes = 0;
  std::vector<double> input_bytes;   // one per input tensor
  std::vector<double> output_bytes;  // one per output tensor
  double active_params = 0;     // parameters one token uses (all but unrouted experts)
  double scale_bytes = 0;       // part of weight_bytes: quantization scales
  double kv_read_bytes = 0;     // part of input_bytes read from the KV cache
  double kv_write_bytes = 0;    // part of output_bytes appended to the KV cache
  double scratch_bytes = 0;     // intermediates written and read back inside the layer
  double resident_weight_bytes = 0;  // constants held in memory (0 for tied weights)
  double kv_cache_bytes = 0;    // KV cache this layer holds (its kv outputs' whole size)
  double quantized_weight_bytes = 0;  // part of weight_bytes held in the weights dtype (matrix weights): 0 = none
  double activation_bytes = 0;  // activations live while the layer runs (inputs, outputs, scratch; not the KV cache)
  // Tensor parallelism: the share of the layer's parameters one GPU holds (1: all of them,
  // replicated or alone; expert parallelism holds a mixture's experts in part too), and the payload
  // of its collectives: the all-reduce of its output (a row-parallel layer's), an all-gather, an all-to-all.
  double shard = 1;
  double comm_bytes = 0;
  double all_to_all_bytes = 0;  // part of comm_bytes: expert parallelism's dispatch and combine of the routed tokens
  double all_gather_bytes = 0;  // part of comm_bytes: an output gathered whole from its shards (a vocabulary-split LM head's logits)
  double input_total() const;
  double output_total() const;
  // Every field back to zero, keeping the byte lists' storage (a cost written over, point by point)
  void clear();
};

// flops = flops_per_mac * macs + other_flops; bytes = elements * dtype size (zero for views):
// activations in args.dtype, matrix weights in the weights dtype (plus one fp16 scale per
// quant_group weights when they are int8/int4/fp8), KV-cache tensors in the KV dtype.
OpCost layer_cost(const OpDef& op, const OpArgs& args, const std::vector<Shape>& out, double flops_per_mac);
// The same, written over `c` (keeping the storage of its per-tensor byte lists)
void layer_cost(const OpDef& op, const OpArgs& args, const std::vector<Shape>& out, double flops_per_mac, OpCost& c);

class OpRegistry {
 public:
  void add(OpDef def);
  void alias(const std::string& alias, const std::string& target);
  const OpDef* find(const std::string& name) const;
  std::vector<std::string> names() const;  // canonical names, sorted
  std::vector<std::string> all_names() const;  // with aliases
  const std::map<std::string, std::string>& aliases() const { return aliases_; }

 private:
  std::map<std::string, OpDef> ops_;
  std::map<std::string, std::string> aliases_;
};

// The operators rsim knows without plugins.
const OpRegistry& builtin_ops();
// Transformer operators (engine/ops/ops_transformer.cpp): attention, kv_cache, rmsnorm, rope,
// embedding, swiglu, geglu, moe.
void add_transformer_ops(OpRegistry& r);
void add_sequence_ops(OpRegistry& r);  // ops_sequence.cpp: recurrent (LSTM, GRU, RNN), einsum
// ops_layers.cpp: convolutions, dense, pooling, norms, activations, elementwise and layout operators
void add_layer_ops(OpRegistry& r);

// Read one attribute value from the scenario (errors at the value's location).
bool parse_attr(const AttrSpec& spec, const CNode& value, AttrValue& out, Diags& d, const std::string& where);
// Fill every attribute of `op` from a layer's map, applying defaults; unknown keys are left to the caller.
Attrs read_attrs(const OpDef& op, const CNode& layer, Diags& d, const std::string& where);
// "int or [h, w]" etc., for documentation.
const char* attr_type_name(AttrType t);
// A readable description of an operator for `rsim ops NAME`.
std::string describe_op(const OpDef& op, const std::map<std::string, std::string>& aliases);

}  // namespace rsim
