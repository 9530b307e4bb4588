// Networks: an input, then layers that consume the previous output unless they name their
// inputs; reusable blocks with parameters and repeat counts. Built per sweep point with shape
// inference and per-layer costs.
#pragma once
#include <optional>
#include <string>
#include <vector>

#include "engine/model/config.hpp"
#include "engine/model/expr.hpp"
#include "engine/ops/ops.hpp"

namespace rsim {

struct TensorRef {
  int layer = -1;   // -1: a network input
  int output = 0;   // output index of that layer, or the input index
};

struct Layer {
  std::string name;  // full name, e.g. "stage1.0.conv1"
  const OpDef* op = nullptr;
  Attrs attrs;
  std::vector<TensorRef> inputs;
  std::vector<Shape> in_shapes;
  std::vector<Shape> out_shapes;
  DType dtype = DType::fp32;  // activations
  Precision precision;        // weights, KV cache and math precision (unset: dtype)
  DType weights_dtype() const { return precision.weights.value_or(dtype); }
  DType kv_dtype() const { return precision.kv.value_or(dtype); }
  DType compute_dtype() const { return precision.compute.value_or(dtype); }  // picks the compute roof
  bool touches_kv = false;    // reads or appends to the KV cache
  bool tied_weights = false;  // its weights are another layer's (tied embeddings): read, not counted as params or memory
  double shared_params = 0;   // elements of its weights another layer already counts (part of them tied), e.g. an ONNX initializer feeding two nodes
  OpCost cost;
  SourceLoc loc;
  // Set by graph passes: the kernel this layer runs in (its own name when alone; "" when it moves
  // nothing or was eliminated), and why it changed.
  std::string kernel;
  bool eliminated = false;
  // Set by mark_same_work and rebind_network: the first earlier layer that does the same work
  // (the same operator, attributes, input shapes and precisions: a repeated block), whose shapes
  // and cost it has; -1 when none is known. Evaluation takes that layer's roofline too, and the
  // writers its row's text (Row::twin).
  int same_as = -1;
  // Set by rebind_network when the caller allows it (summary-only runs, which read a repeated
  // layer's totals through same_as): its in_shapes, out_shapes and cost are not kept up to date;
  // they are those of layer same_as. Its attributes are. Re-binding without `borrow` copies them back.
  bool borrowed = false;
  // Tensor parallelism (`shard:`): how the layer is split; `out_share`: the share of its output
  // tensor one GPU holds (1: whole), set with the cost by shard_cost.
  // partial: split like row but its output stays a partial sum (no all-reduce); reduce: an
  // elementwise layer that sums partial sums and all-reduces its output (Falcon's parallel block:
  // attention and MLP outputs added, then one all-reduce)
  enum class Shard : char { Auto, Column, Row, Mlp, None, Partial, Reduce, Vocab } shard = Shard::Auto;
  long long shard_units = 0;  // a column or vocabulary split of this many heads or tokens: ceil(units / T) per GPU (0: 1/T)
  double out_share = 1;
  bool dtype_from_file = false;  // its dtype is the model file's (a layer's or network's file_dtype)
};

struct Network {
  std::string name;
  std::string phase;  // "prefill" or "decode" for a transformer (network key `phase`); "" otherwise
  std::vector<std::pair<std::string, Shape>> inputs;
  std::vector<Layer> layers;
  Parallelism parallel;  // `parallel:` (else settings.parallel)
  // Operators of the source model left out of `layers` (ONNX nodes mapped to `ignore`): op type → nodes.
  std::vector<std::pair<std::string, int>> ignored;
};

struct BuildOptions {
  const OpRegistry& ops;
  ExprEvaluator& ev;
  DType dtype = DType::fp32;
  double flops_per_mac = 2;
  Precision precision{};
  bool dtype_given = false;  // settings.dtype was written: it beats a network's file_dtype
  Parallelism parallel{};    // settings.parallel: a network's own `parallel:` wins
};

// Reads `parallel: {tensor, overlap, ...}` into `p`, overriding what it holds.
void read_parallel(const CNode& node, Parallelism& p, Diags& d);

// Tensor parallelism: scales a layer's cost (just computed for the whole layer) to one GPU's share
// over net.parallel.tensor GPUs, from its `shard:` and the shares of its inputs (earlier layers'
// out_share): column and row layers hold 1/T of their weights and work, a layer reading a split
// tensor works on its share; row and mlp layers all-reduce their whole output (comm_bytes). A vocab
// layer holds ceil(vocab / T) rows of its table: an embedding all-reduces its output (Megatron's and
// vLLM's VocabParallelEmbedding), the LM head all-gathers its logits (ParallelLMHead).
void shard_cost(const Network& net, Layer& L);

// Reads the precision keys (weights_dtype, kv_dtype, compute_dtype, quant_group) of a settings,
// network or layer map into `p`, overriding what it holds. Other keys are left to the caller.
void read_precision_keys(const CNode& map, Precision& p, Diags& d);
extern const std::vector<std::string> kPrecisionKeys;

// A network entry's `${…}` compiled once: recorded while build_network builds it at one point,
// then re-bound at other points by rebind_network without re-reading the YAML. Each `${…}` of the
// entry is a slot: a value (an operator attribute, an input dimension, a block argument) that
// may change from point to point, or a guard (a name, an op, inputs, `when`, `repeat`, a dtype)
// that must keep its value, or the network's structure would change.
struct NetworkPlan {
  enum class SlotKind { Guard, Env, Attr, InputDim };
  struct Slot {
    SlotKind kind = SlotKind::Guard;
    const CNode* raw = nullptr;  // the entry's node (scalar or subtree) holding the `${…}`
    int env = 0;                 // the bindings it is substituted with (index into envs)
    std::string value;           // its text at the last binding (a subtree's scalars joined)
    // An integer attribute written as one scalar, once re-bound: its value, compared instead of
    // the text (which is then no longer kept)
    bool has_int = false;
    long long int_value = 0;
    size_t layer = 0, index = 0;  // Attr: the layer and the attribute's position; InputDim: input, dimension
    const AttrSpec* spec = nullptr;  // Attr
    bool int_attr = false;  // an Attr slot of an integer attribute written as one scalar (set by make_groups)
    // An Attr slot of a layer in a repeat's later copy (not a subtree's): `repeat` (else -1). A
    // point that borrows leaves it unsubstituted (the repeat `stale`) while the repeat holds; it
    // is substituted again, with its group's text of that point, before anything reads its
    // layer's attributes. `run_end`: the slot after the run of slots of the same repeat it starts.
    int repeat = -1;
    size_t run_end = 0;
  };
  // The bindings of a block's layers: its parent's, then the block's parameters (a constant, or
  // the value of an Env slot), then repeat_index.
  struct EnvAdd {
    std::string name, value;  // value: a constant, when slot < 0
    int slot = -1;            // an Env slot
  };
  struct EnvDef {
    int parent = -1;  // -1: none (envs[0], the network's own bindings)
    std::vector<EnvAdd> adds;
  };
  std::vector<EnvDef> envs;  // envs[0]: the network's own bindings
  std::vector<Slot> slots;   // in build order (a block argument before the block's layers)
  // Which slots a point substitutes again (made by the first rebind_network): slots of the same
  // text under the same bindings form a group, substituted once per point, and only when a name
  // its text reads (expr_names) changed value since the last point, or its text is opaque.
  struct Group {
    std::vector<int> names;  // into `names`
    bool opaque = false;     // substituted at every point
    bool tree = false;       // one slot's subtree (not shared): substituted with its tree
    bool fixed = false;      // reads only names blocks bind to constants: the same text at every point
    size_t stamp = 0;        // the point it was last looked at
    bool dirty = false;      // at that point: a name it reads changed
    std::optional<std::string> text;  // at that point, once substituted
    bool parsed = false;              // at that point: `integer` holds the text read as an integer
    std::optional<long long> integer;
  };
  std::vector<Group> groups;
  std::vector<int> group_of;                // per slot
  std::vector<std::vector<int>> binds;      // per slot: the names an Env slot binds
  std::vector<std::string> names;           // the names the texts read or blocks bind
  std::vector<char> changed;                // per name: changed at this point
  Env last_env;                             // the bindings of the last point (set by build_network)
  size_t stamp = 0;
  // rebind_network's working memory, kept between points
  std::vector<size_t> memo;    // open-addressed table of layer index + 1 by work hash
  std::vector<size_t> memo_used;  // its entries made at the last point (cleared at the next)
  std::vector<size_t> touched;    // the layers whose `dirty` and `updates` the last point set
  std::vector<size_t> hashes;  // per layer
  std::vector<unsigned> kv;    // per layer: its inputs read from the KV cache
  std::vector<Env> bindings;   // per EnvDef, at this point
  std::vector<char> made;      // per EnvDef: bindings made at this point
  std::vector<char> dirty;     // per layer: an attribute changed at this point
  // per layer: the attributes set at this point, as (attribute position, slot group) pairs (up to
  // two; more: n = 3). Two layers that did the same work at the last point and had the same
  // attributes set from the same groups still have equal attributes (see rebind_network).
  struct Updates {
    unsigned char n = 0;
    unsigned at[2] = {0, 0};
    int group[2] = {0, 0};
    bool operator==(const Updates& o) const {
      if (n != o.n || n > 2) return false;
      for (unsigned char k = 0; k < n; ++k)
        if (at[k] != o.at[k] || group[k] != o.group[k]) return false;
      return true;
    }
  };
  std::vector<Updates> updates;
  std::vector<const Shape*> sources;  // a layer's input shapes at this point
  bool borrowed = false;              // a layer of the network may be borrowed
  // The graph, flat (fixed while the plan holds: made by the first rebind_network): layer i's
  // inputs are refs[ref_begin[i] .. ref_begin[i + 1]), kv_mask[i] its inputs read from the KV cache
  std::vector<size_t> ref_begin;
  std::vector<TensorRef> refs;
  std::vector<unsigned> kv_mask;
  std::vector<size_t> holder;  // per layer, at this point: the layer holding its shapes (itself, or its twin when borrowed)
  // Runs of repeated layers, in layer order (found with the flat graph): layers [begin, begin +
  // period · copies) are `copies` copies of their first `period` layers. A layer of a later copy
  // has the operator, dtypes, precisions and attributes of the layer `period` before it, its
  // attributes set from the same slot groups (so equal at every point), and reads the same network
  // inputs or the outputs of the layers `period` before its own inputs, none further back than
  // `period` layers. When the second copy's inputs from before it have the shapes of the first
  // copy's, every copy does the first copy's work (see rebind_network).
  struct Repeat {
    size_t begin = 0, period = 0, copies = 0;
    bool held = false;  // at this point (borrowing): every copy's layers borrow the first copy's
    bool stale = false;  // its copies' attribute slots were left unsubstituted at a point
    std::vector<int> copy_slots;  // the Attr slots of its later copies' layers (Slot::repeat)
    std::vector<int> firsts;      // when held: the first of its kind of each layer of the first copy
  };
  std::vector<Repeat> repeats;
};

// Builds one network from its scenario entry with the point's bindings.
// Config and shape errors are collected in `d` (building stops at the first shape error).
// `plan` (optional) records the entry's `${…}` for rebind_network.
Network build_network(const CNode& node, const Env& env, const BuildOptions& opt, Diags& d, NetworkPlan* plan = nullptr);

// Sets every layer's same_as on a network just built (rebind_network keeps it from then on).
// Only for networks whose operators' costs are functions of their attributes and shapes (not a
// script's operators, which run user code).
void mark_same_work(Network& net);

// Re-binds `net` (built with `plan`, or re-bound since) to new bindings: substitutes only the
// plan's slots, re-reads the attributes and input dimensions whose text changed, and re-infers
// shapes and costs of the layers whose attributes or input shapes changed. `changed` tells
// whether any layer or input changed. Returns false when a guard changed or a value or shape is
// invalid: `net` is then unusable and the caller builds the network anew (which reports errors).
// `borrow`: a layer doing the same work as an earlier one may be left `borrowed` (Layer::borrowed)
// instead of taking a copy of its shapes and cost; without it, every layer holds its own.
bool rebind_network(NetworkPlan& plan, const Env& env, const BuildOptions& opt, Network& net, bool& changed, bool borrow = false);

// Input channels per group of a grouped operator (conv2d, conv_transpose2d: Cin / groups;
// depthwise_conv2d: 1); 0 for an operator without channel groups. A variable of calibration.
double channels_per_group(const Layer& L);

}  // namespace rsim
