// Evaluation: per sweep point, bind the scenario, build networks and platforms, and apply the
// roofline to every layer on every platform. A pure function of (scenario, point).
#pragma once
#include <array>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <string>
#include <tuple>
#include <vector>

#include "engine/graph/graph.hpp"
#include "engine/eval/hooks.hpp"
#include "engine/hardware/platform.hpp"
#include "engine/hardware/roofline.hpp"
#include "engine/scenario/scenario.hpp"

namespace rsim {

struct Row {
  size_t point = 0;
  std::string platform, network, layer, op;
  DType dtype = DType::fp32;          // activations (inputs and outputs)
  DType compute_dtype = DType::fp32;  // the precision the math runs in: picks the compute roof
  DType weights_dtype = DType::fp32;  // matrix weights (meaningful when has_weights)
  DType kv_dtype = DType::fp32;       // KV cache (meaningful when touches_kv)
  bool has_weights = false, touches_kv = false;
  std::string input_shapes, output_shapes;  // "1x32x56x56;1x32x56x56"
  Shape output_shape;  // the first output's dimensions (what charts read; output_shapes is the text of all)
  OpCost cost;
  double bytes = 0;  // under the scenario's memory model
  std::string compute_roof, memory_level;
  RoofPoint theoretical, derated;
  std::optional<DecodeShape> decode;  // a decode attention priced by the platform's decode model: its shape (the serving pricer's)
  std::string collective;       // its collective under tensor parallelism, e.g. "all-reduce ring 8 × NVLink 4" ("" = none)
  std::string kernel;           // the kernel the layer runs in ("" = none: a view, or eliminated)
  int kernel_index = -1;        // that kernel's number in the network, in order of first layer (-1: none or not known)
  Efficiency efficiency;        // from a script's efficiency model (1, 1 without one)
  std::vector<double> metrics;  // a script's derived metrics, in RunResult::metric_names order
  // A hint for the writers: the index in PointResult::rows of an earlier row of the same point
  // that should print the same text but for its layer and kernel names (a layer doing the same
  // work on the same platform: Layer::same_as), -1 if none. Writers check it field by field
  // before copying that row's text (same_row_text in output_detail.hpp): a wrong hint costs a compare.
  int twin = -1;
  // Every field back to its default, keeping the strings' and lists' storage (a point's rows are
  // written over from point to point). A field added to Row is reset here too.
  void clear();
};

// The parts of a network's time on one set of roofs. Work: its kernels' roofline times alone
// (Σ tᵢ), split by each kernel's bound; overhead: what the execution mode adds (launches and graph
// gaps; under eager, the GPU's waits for the host); the communication not hidden behind compute;
// a pipeline's bubble (on the slowest stage's GPUs). Their sum is the network's time.
struct TimeParts {
  double compute = 0, memory = 0;  // work, by the kernel's bound
  double launch = 0, host = 0;     // overhead
  double comm = 0;                 // exposed communication
  double bubble = 0;               // a pipeline's idle time
  // The time that comes from figures whose basis is `assumption`: of work and overhead, of comm
  double assumed = 0, assumed_comm = 0;
  double lo = 0, hi = 0;           // a calibrated platform's error band: what it adds to the total at its 10th and 90th percentile
  double work() const { return compute + memory; }
  double overhead() const { return launch + host; }
  double total() const { return compute + memory + launch + host + comm + bubble; }
  double assumed_total() const { return assumed + assumed_comm; }
  void add(const TimeParts& o, double f = 1) {
    compute += f * o.compute, memory += f * o.memory, launch += f * o.launch, host += f * o.host;
    comm += f * o.comm, bubble += f * o.bubble, assumed += f * o.assumed, assumed_comm += f * o.assumed_comm, lo += f * o.lo, hi += f * o.hi;
  }
  void scale(double f) {
    TimeParts z;
    z.add(*this, f);
    *this = z;
  }
};
// The part that takes the largest share of `p` ("compute", "memory", "launch", "host", "comm",
// "bubble"; "" when the total is 0) and that share (0–1)
std::pair<const char*, double> time_limit(const TimeParts& p);

struct SummaryRow {
  size_t point = 0;
  std::string platform, network;
  double layers = 0, kernels = 0, macs = 0, flops = 0, params = 0, bytes = 0;
  double batch = 1;  // first dimension of the network's first input
  double intensity = 0;  // flops / bytes
  // sum over kernels of max(Σ compute time, Σ memory time) of their layers, plus the platform's
  // launch overhead per kernel; with one kernel per layer and no overhead, the sum of layer times
  double time_s = 0, derated_time_s = 0;
  TimeParts parts, dparts;  // what time_s and derated_time_s are made of (their sums, within rounding)
  bool banded = false;      // a calibrated platform gave a layer its error band (dparts.lo, dparts.hi)
  double achieved_flops_per_s = 0, derated_achieved_flops_per_s = 0;  // flops / time
  int memory_bound = 0, compute_bound = 0;  // layers, theoretical roofs
  int derated_memory_bound = 0, derated_compute_bound = 0;
  double active_params = 0;  // parameters one token uses (a mixture of experts routes to top_k)
  // Transformers (a network with `phase`): tokens processed in this step (batch × new tokens);
  // tokens/s = tokens / time; prefill: time to first token = time; decode: time per output token = time.
  std::string phase;
  double tokens = 0;
  // Memory footprint: weights held (all experts, whole tables; tied weights once) + the KV cache
  // + the largest activations of one layer; checked against the platform's memory size.
  double weight_footprint_bytes = 0, kv_cache_bytes = 0, activation_bytes = 0, memory_footprint_bytes = 0;
  double memory_size_bytes = 0;  // the platform's largest stated memory size (0: not stated)
  // LLM capacity: the KV-cache bytes one GPU appends per token processed (Σ kv_write_bytes / tokens)
  // and a step's new tokens per sequence; max_batch_in_memory and max_context_in_memory follow
  double kv_write_bytes = 0, kv_bytes_per_token = 0, new_tokens_per_seq = 0;
  std::string memory_name;       // that level's name
  // Tensor parallelism: GPUs the network is split over; one GPU's parameters; the all-reduces'
  // payload and time (theoretical; with overlap: full, time_s is the larger of the rest and this)
  double tensor_parallel = 1, params_per_gpu = 0, comm_bytes = 0, comm_time_s = 0;
  // Pipeline, expert and data parallelism (see Parallelism): GPUs in all (tensor × pipeline ×
  // data), stages, micro-batches per step, the share of the pipeline's GPU time idle (the
  // bubble), expert-parallel GPUs, data-parallel replicas. Under a pipeline, time_s is one step's
  // (every micro-batch through every stage), the work columns (macs, flops, bytes, comm) are the
  // step's on one replica, tokens the step's on every replica, and the memory columns those of
  // the stage that needs the most (its KV cache holds every micro-batch's).
  double gpus = 1, pipeline_parallel = 1, micro_batches = 1, pipeline_bubble = 0, expert_parallel = 1, data_parallel = 1;
  // A request (phase "request"): its prefill's time (time to first token) and the mean of its
  // decode steps (time per output token), theoretical and derated; time_s is the end-to-end latency
  double ttft_s = 0, derated_ttft_s = 0, tpot_s = 0, derated_tpot_s = 0, prompt = 0, generate = 0;
  // The dtype of the layers that carry most of the MACs (most layers when none has MACs), and
  // whether the model's file set it (dtype_source: file) rather than the scenario
  DType dtype = DType::fp32;
  bool dtype_from_file = false;
  // a request under continuous batching: its work columns are one steady-state step's, and its
  // throughput batch × data / time per output token
  bool continuous = false;
  std::array<double, 8> macs_by_dtype{}, layers_by_dtype{};  // (per DType, for the above)
  unsigned file_dtypes = 0;  // bit t: a layer of DType t took it from the model's file
  // Operators of the source model left out (ONNX nodes mapped to `ignore`), e.g. "Dropout (2 nodes)"; "" when none.
  std::string ignored;
  // Every field back to its default, keeping the strings' storage (a point's rows are written
  // over from point to point). A field added to SummaryRow is reset here too.
  void clear();
};

// A network whose memory footprint exceeds a platform's memory at a point: its warning's numbers.
// The text (footprint_warning) is made only where the warning is shown: a sweep past the memory
// has one at nearly every point, and a run prints the first few.
struct FootprintExcess {
  SourceLoc loc;  // where the network is used
  std::string network, platform, memory;
  double footprint = 0, size = 0, weights = 0, kv_cache = 0, activations = 0;  // bytes
};

struct PointResult {
  Settings settings;
  // shared: a platform no `${…}` changes is resolved once per worker and held by every point
  std::vector<std::shared_ptr<const Platform>> platforms;
  std::vector<Row> rows;
  std::vector<SummaryRow> summary;
  // Warnings: those of a memory footprint over a platform's memory are kept as numbers by
  // evaluate_point (footprint_excess) and made into diagnostics (footprint_warning) by the sink
  // that shows or keeps them (CollectSink: every one, in warnings)
  std::vector<Diagnostic> warnings;
  std::vector<FootprintExcess> footprint_excess;
  // Layer evaluations of requests' later decode steps (summary only: not in `rows`), for counts
  size_t request_layer_evaluations = 0;
  // Filled by a ResultSink's prepare (formatted output), else empty: one buffer, cut into pieces
  // (piece k is text[text_end[k - 1], text_end[k]), piece 0 from 0)
  std::string text;
  std::array<size_t, 6> text_end{};
};

// What every point of a run shares, known before the first point is delivered.
struct RunHeader {
  std::vector<std::string> var_names;
  std::vector<std::string> metric_names;  // derived metrics from scripts
  size_t points = 0;
};

// Receives a run's points as they are evaluated (see stream_scenario).
class ResultSink {
 public:
  virtual ~ResultSink() = default;
  // Once, before any other call.
  virtual void start(const RunHeader& h) { (void)h; }
  // On a worker thread, concurrently with other points, in any order: prepare a point for
  // `consume` (format its rows into pr.text, drop what the sink does not keep), so that the
  // costly part of writing scales with the workers.
  virtual void prepare(PointResult& pr, const Point& p) {
    (void)pr;
    (void)p;
  }
  // In point order, one point at a time.
  virtual void consume(PointResult&& pr, const Point& p) = 0;
};

struct RunResult {
  std::vector<std::string> var_names;
  std::vector<std::string> metric_names;  // derived metrics from scripts
  std::vector<Point> points;
  std::vector<PointResult> results;  // one per point
  // Layer rows a figure collector left out because they coincide, on every chart that could draw
  // them, with a kept row (plots/collect.hpp); per platform and network, with how many of them a
  // roofline could not have drawn anyway (0 FLOPs or 0 bytes), on the theoretical and derated roofs.
  struct Thinned {
    std::string platform, network;
    size_t rows = 0, hidden = 0, hidden_derated = 0;
  };
  std::vector<Thinned> thinned;
};

// Keeps every point: a whole RunResult (figures, tests, small runs).
class CollectSink : public ResultSink {
 public:
  explicit CollectSink(RunResult& r) : r_(r) {}
  void start(const RunHeader& h) override;
  void consume(PointResult&& pr, const Point& p) override;

 private:
  RunResult& r_;
};

// Catalog files parsed once and shared between workers.
class PlatformCache {
 public:
  explicit PlatformCache(const Catalog& c) : catalog_(c) {}
  const Catalog& catalog() const { return catalog_; }
  std::shared_ptr<const CNode> get(const std::string& name);  // throws ConfigError

 private:
  const Catalog& catalog_;
  std::mutex mu_;
  std::map<std::string, std::shared_ptr<const CNode>> cache_;
};

// The model zoo: NAME.yaml files (a network with `params:`), searched in order, parsed once.
class ModelLibrary {
 public:
  explicit ModelLibrary(std::vector<std::string> dirs) : dirs_(std::move(dirs)) {}
  std::vector<std::string> names() const;  // every model on the search path, sorted
  // The model's network node; throws ConfigError (at `where`) when unknown.
  std::shared_ptr<const CNode> get(const std::string& name, const SourceLoc& where);
  const std::vector<std::string>& dirs() const { return dirs_; }

 private:
  std::vector<std::string> dirs_;
  std::mutex mu_;
  std::map<std::string, std::shared_ptr<const CNode>> cache_;
};

// A source of networks from model files (`{onnx: FILE, ...}` entries); importers/ implements it so
// that the engine never includes a model format's headers.
class NetworkImporter {
 public:
  virtual ~NetworkImporter() = default;
  // The network node (name, inputs, layers) for a substituted entry; FILE is relative to the
  // scenario. Throws ConfigError. Called from every worker: must be thread-safe.
  virtual CNode import(const CNode& entry, const OpRegistry& ops) = 0;
};

// Each layer's kernel as an index, in order of first appearance (-1: the layer runs none).
struct KernelIndex {
  std::vector<int> of_layer;
  size_t count = 0;
  // per layer: how many layers from it on each run alone in a kernel of their own, numbered one
  // after the other (the layer's kernel, the next one's kernel + 1...): 0 when the layer does not
  std::vector<size_t> alone_run;
};
KernelIndex index_kernels(const Network& net);

struct ModelUse {
  std::shared_ptr<const CNode> model;
  std::optional<CNode> name;  // `name:` of the entry, substituted
  std::string preset;         // else a preset's name ("" when neither)
  Env env;
  std::optional<CNode> parallel;  // `parallel:` of the entry, substituted (in place of the model's)
};
struct EvalContext {
  const OpRegistry& ops;
  PlatformCache& platforms;
  ExprEvaluator& ev;
  ScriptHooks* hooks = nullptr;
  ModelLibrary* models = nullptr;
  NetworkImporter* importer = nullptr;
  bool rows = true;  // false: network totals only (no per-layer rows unless a script needs them)
  // Called with a point's networks as built (before passes; the optimized copies are left out),
  // before they are evaluated: what `rsim plan` writes. May be empty.
  std::function<void(const Point&, const std::vector<std::shared_ptr<const Network>>&)> on_networks{};
  // Platforms that no `${…}` changes, resolved once for the run (resolve_fixed_platforms) and
  // shared by its workers; one that resolved with a diagnostic is resolved (and reported) per point.
  std::map<const CNode*, std::shared_ptr<const Platform>> fixed_platforms{};
  // Per worker: model uses that no `${…}` changes (nor their models' defaults), read once: the
  // model and its arguments (`env` holds the arguments alone; a point's bindings go before them).
  std::map<const CNode*, ModelUse> fixed_models{};
  // Per worker: each plain network entry built once and re-bound per point (rebind_network):
  // the plan, the network at the last point and its optimized copy (with passes).
  struct NetworkCache {
    std::shared_ptr<const CNode> source;  // a model's network node, which the plan points into (null: the scenario's own entry)
    NetworkPlan plan;
    std::shared_ptr<Network> net;
    std::shared_ptr<const Network> optimized;
    std::shared_ptr<const KernelIndex> kernels, opt_kernels;  // of net and optimized
    // a model's: the zoo node and the name that `source` was made of (see ModelUse)
    std::shared_ptr<const CNode> model = nullptr;
    std::optional<CNode> name = std::nullopt;
    std::string preset = "";
    std::optional<CNode> parallel = std::nullopt;
  };
  // entry, dtype, flops_per_mac, precision (weights, kv, compute dtype or -1; quant_group)
  using NetKey = std::tuple<const CNode*, DType, double, int, int, int, long long, long long, bool, int, std::array<long long, 4>>;
  std::map<NetKey, NetworkCache> networks{};
  // Per worker: the context that evaluates requests' later decode steps (Scenario::requests)
  std::shared_ptr<EvalContext> request_ctx{};
  // RunOptions::should_stop, asked inside a point that takes many evaluations (a request's decode
  // steps): true throws Interrupted. May be empty.
  std::function<bool()> should_stop{};
};

// Bytes a layer moves under a memory model. KV-cache reads and a layer's internal scratch traffic
// count under both models (like weights, the cache was not written by the previous layer).
double layer_bytes(const OpCost& c, MemoryModel m);

// Resolve one `platforms:` entry (already substituted) to a platform.
Platform resolve_platform(const CNode& entry, PlatformCache& cache, Diags& d);
// The scenario's `platforms:` entries without `${…}`, each resolved once (for EvalContext::
// fixed_platforms): those that resolve without a diagnostic; the others are left to each point,
// which reports them where they are.
std::map<const CNode*, std::shared_ptr<const Platform>> resolve_fixed_platforms(const Scenario& s, PlatformCache& cache);

// Evaluate one point. Throws ConfigError (with the point's bindings as a note).
PointResult evaluate_point(const Scenario& s, const Point& p, EvalContext& ctx);
// The same, written over `out` (keeping the storage of its lists: a worker's result point after point)
void evaluate_point(const Scenario& s, const Point& p, EvalContext& ctx, PointResult& out);

// Thrown by a run that RunOptions::should_stop stopped.
struct Interrupted : std::runtime_error {
  Interrupted() : std::runtime_error("interrupted") {}
};

struct RunOptions {
  int jobs = 1;
  const OpRegistry* ops = nullptr;  // default: builtin_ops()
  std::function<std::unique_ptr<ExprEvaluator>()> make_evaluator;
  // One per worker, created on the worker's thread (scripts' Lua states are per thread). May be empty.
  std::function<std::unique_ptr<ScriptHooks>()> make_hooks;
  std::function<void(size_t done, size_t total)> progress;  // called from workers, may be empty
  // Asked (from workers) before each point: true stops the run, which then throws Interrupted
  // (an embedding's Ctrl-C: the Python module checks the interpreter's signals). May be empty.
  std::function<bool()> should_stop;
  // Where `model: NAME` looks, after the scenario's own models/ folder.
  std::vector<std::string> model_dirs;
  // Reads `onnx:` network entries (shared by the workers). May be empty: such entries are errors.
  std::shared_ptr<NetworkImporter> importer;
  bool rows = true;  // false: summary rows only (per-layer rows are neither kept nor built)
  // Evaluate only these points (e.g. validation_points); empty: every point of the sweep.
  std::vector<Point> points;
  // Each point's networks as built, before they are evaluated (EvalContext::on_networks; called
  // from the workers: with jobs > 1, concurrently and in any order). May be empty.
  std::function<void(const Point&, const std::vector<std::shared_ptr<const Network>>&)> on_networks;
};

// Resolves a `networks:` entry that names a model ({model: NAME, name: ..., args: {...}}) or a
// model file ({onnx: FILE, ...}, through the context's importer) into the network node and the
// variables it is built with. A plain network is returned as is.
struct NetworkSource {
  CNode node;
  Env env;
};
NetworkSource resolve_network(const CNode& entry, const Env& env, EvalContext& ctx, Diags& d);

// A `{model: NAME, ...}` entry resolved without copying the model's network node: the zoo's node
// (shared, null after an error), the name it takes (`name:`, or a preset's), and the variables.
// The network node is *model with that name (model_node).
ModelUse resolve_model(const CNode& entry, const Env& env, EvalContext& ctx, Diags& d);
CNode model_node(const ModelUse& u);

// Evaluate every point, in parallel with `jobs` workers; results are in point order.
RunResult run_scenario(const Scenario& s, const Catalog& catalog, const RunOptions& opt);

// Evaluate every point with `jobs` workers and hand each to `sink` in point order. At most a few
// points per worker are held at a time (memory is bounded by the workers, not the points). The
// first error (lowest point index among those evaluated) is thrown after the workers stop.
void stream_scenario(const Scenario& s, const Catalog& catalog, const RunOptions& opt, ResultSink& sink);

// One worker's evaluation on the calling thread, kept from call to call: scenarios evaluated at
// points the caller chooses, each network entry built once and re-bound at later points (what a
// caller that prices many configurations of one network needs: serving's batches). The
// scenarios handed to it must outlive it (its networks are cached by their entries' addresses).
// Not thread-safe: one per thread.
class PointEvaluator {
 public:
  // `opt` as for run_scenario (make_evaluator at least); `scenario_path` places the zoo's search
  PointEvaluator(const Catalog& catalog, const RunOptions& opt, const std::string& scenario_path);
  ~PointEvaluator();
  // The point's result (valid until the next call); throws ConfigError
  const PointResult& evaluate(const Scenario& s, const Point& p);

 private:
  struct State;
  std::unique_ptr<State> st_;
};

std::string bindings_text(const Env& b);  // "groups=4, k=3"
// The warning of a footprint excess at point p: "network 'N' needs X GiB of memory, more than …"
Diagnostic footprint_warning(const FootprintExcess& x, const Point& p);

}  // namespace rsim
