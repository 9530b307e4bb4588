// Hardware platforms: compute roofs per precision and memory levels, each with its derivation,
// theoretical and derated.
#pragma once
#include <algorithm>
#include <optional>
#include <unordered_map>
#include <string>
#include <vector>

#include "engine/model/config.hpp"
#include "engine/hardware/kernel_model.hpp"
#include "engine/model/tensor.hpp"

namespace rsim {

// What a platform's figure rests on (`basis:` beside it): a vendor's datasheet, an assumption, a
// measurement on the part (rsim probe), a fit (rsim calibrate), or another platform's figure
// carried over. Unstated: the file does not say.
enum class Basis : unsigned char { Unstated, Datasheet, Assumption, Measured, Calibrated, Carried };
const char* basis_name(Basis b);  // "datasheet", ...; "unstated"
const std::vector<std::string>& basis_names();  // the values `basis:` accepts
// The basis of a figure derived from two: an assumption wins (the result is no firmer than its
// weakest part), then whichever is stated
Basis weaker(Basis a, Basis b);

struct ComputeRoof {
  std::string name;            // "fp32 CUDA cores"
  std::vector<DType> dtypes;   // precisions this roof executes
  double peak_flops_per_s = 0;          // theoretical
  double derated_flops_per_s = 0;       // after vector clock and efficiency
  std::string derivation;               // how the theoretical value was obtained
  std::string derated_derivation;       // how the derated value was obtained
  Basis basis = Basis::Unstated;        // of the peak
  Basis derate_basis = Basis::Unstated; // of what derates it (vector clock, efficiency, measured); unstated when nothing does
};

struct MemoryLevel {
  std::string name;  // "HBM2", "DDR4", "L2"
  double bandwidth_bytes_per_s = 0;
  double derated_bandwidth_bytes_per_s = 0;
  double size_bytes = 0;  // 0: not stated
  std::string size_source;  // how the size was found (rsim probe: sysfs, cpuid, sysconf, curve); "" when not said
  std::string derivation;
  std::string derated_derivation;
  Basis basis = Basis::Unstated;         // of the bandwidth
  Basis derate_basis = Basis::Unstated;  // of the achievable fraction or measured bandwidth (unstated: none)
  Basis size_basis = Basis::Unstated;
};

// A link between GPUs (`interconnect:`): NVLink within a node, InfiniBand between nodes. A
// collective among n GPUs runs on the first level whose `gpus` reaches n (the last level else).
struct InterconnectLevel {
  std::string name;                   // "NVLink 4", "InfiniBand NDR"
  double bandwidth_bytes_per_s = 0;   // what one GPU sends (and receives) at once: each way
  double latency_s = 0;               // per message (one step of a ring or a tree)
  long long gpus = 1;                 // GPUs this level connects (per node for NVLink)
  std::string source;
  Basis basis = Basis::Unstated, latency_basis = Basis::Unstated;  // of the bandwidth, of the latency
};

// A fitted efficiency model for a class of operators (written by `rsim calibrate`, applied by the
// engine without scripts): efficiency = clamp(a · x^b · g^c · min(1, p / p_sat)^d, 0.001, 1) with
// x = the layer's MACs (compute; FLOPs when it has none) or bytes moved (bandwidth), g its input
// channels per group (grouped operators only: the factor is 1 when g is 0, i.e. the operator has no
// groups), and p its output elements (the occupancy factor, `occupancy: [d, p_sat]`: a GPU kernel
// with fewer outputs than p_sat leaves multiprocessors idle; 1 when d or p_sat is 0 or p unknown).
struct PowerLaw {
  double a = 1, b = 0, c = 0;
  double d = 0, p_sat = 0;
  // The range of x, g and p over the layers the law was fitted on (0: unbounded): beyond it the law
  // keeps its value at the nearer end, a power law is not extrapolated (rsim calibrate's `range`)
  double x_lo = 0, x_hi = 0, g_lo = 0, g_hi = 0, p_lo = 0, p_hi = 0;
  bool has_occupancy() const { return d != 0 && p_sat > 0; }
  double at(double x, double g = 0, double p = 0) const;  // raw(x, g, p) clamped to [0.001, 1]
  double raw(double x, double g = 0, double p = 0) const;  // the law's value before the clamp
  // Whether x, g (g > 0) or p (p > 0, with an occupancy factor) lies outside the fitted range
  bool beyond(double x, double g = 0, double p = 0) const;
};
// Time sharing of the measured core (written by `rsim calibrate`, fitted beside the rules): a
// compute-bound layer that runs t seconds on its own takes
//   t · (1 + (slowdown − 1) / (1 + (onset_s / t)^8))
// on a core shared with other runnable work: t below the onset (about half the scheduler's time
// slice) mostly runs in one slice (factor → 1), a longer one waits for the others' slices (factor
// → slowdown). slowdown 1 (the default) is a core of its own.
struct Contention {
  double onset_s = 0, slowdown = 1;
  static constexpr double steepness = 8;
  bool active() const { return slowdown > 1 && onset_s > 0; }
  double apply(double t) const;
};
struct CalibrationRule {
  std::string name;               // op class, e.g. "conv"
  std::vector<std::string> ops;   // operator names it covers
  // The compute roof whose layers it covers ("" = every roof): a class runs differently on fp32
  // CUDA cores and on tensor cores, so `rsim calibrate` fits one rule per class and roof.
  std::string roof;
  // Host time to issue one kernel of the class under `execution: eager` (-1: the platform's
  // runtime.host_overhead); fitted by `rsim calibrate` from layers timed one by one in eager mode.
  double host_overhead_s = -1;
  // Transferred, not fitted: no measured layer of the class ran on its roof, so its laws are those
  // of the roof's other classes together (rsim calibrate). A class measured on one side only
  // (compute-bound layers and no memory-bound ones, or the reverse) has the other side's law
  // transferred: extrapolated_compute / extrapolated_bandwidth (`extrapolated: compute|bandwidth`).
  bool extrapolated = false;
  bool extrapolated_compute = false, extrapolated_bandwidth = false;
  // The factor the measured networks put on the times of the class's layers (rsim calibrate; already
  // in the laws: it says how far the layers timed one by one were from the networks' times)
  double network_factor = 1;
  // The spread of the class's held-out errors (rsim calibrate's cross-validation, `error_band`):
  // measured / predicted at the 10th and 90th percentile; a layer's derated time × each is its band
  bool band = false;
  double error_lo = 1, error_hi = 1;
  bool has_error_band() const { return band; }
  PowerLaw compute, bandwidth;
  // Bandwidth efficiency on a memory level of its own (`bandwidth_by_level`): the level a layer is
  // bounded on (its own under memory_level: auto) picks the law; a level without one takes `bandwidth`.
  std::vector<std::pair<std::string, PowerLaw>> bandwidth_by_level;
  const PowerLaw& bandwidth_on(const std::string& level) const;
};

// A layer shape `rsim calibrate` timed and its class's laws missed (`measured_layers:`, GPU fits: a
// library's own choice per shape, such as a Winograd kernel for some 3×3 convolutions and not
// others, that no smooth law follows). A layer of the same operator, compute roof, input and output
// shapes and MACs takes its efficiencies ÷ factor (at most 1: never past the roofline), i.e. its
// law's time × factor.
struct MeasuredLayer {
  std::string op, roof;
  std::string input, output;  // shapes as results.csv writes them ("32x64x56x56", inputs joined by ';')
  double macs = 0;            // conventional MACs (the macs column)
  double factor = 1;
  std::string from;           // the measured layer it came from (network/layer), and how many of its shape
};
// A layer's efficiencies ÷ f (a measured shape's factor, a rule's network factor), each kept in
// [0.001, 1]: a slower layer, or a faster one up to its roofline and no further
inline void divide_efficiencies(double& compute, double& bandwidth, double f) {
  if (f == 1) return;
  compute = std::clamp(compute / f, 0.001, 1.0);
  bandwidth = std::clamp(bandwidth / f, 0.001, 1.0);
}
// The key a MeasuredLayer is found by (MACs rounded to an integer)
std::string measured_layer_key(const std::string& op, const std::string& roof, const std::string& input, const std::string& output, double macs);

// How kernels are issued (settings.execution), and the platform's times for each way
// (`runtime:`). With n kernels of times t_i:
//   fused: Σ t_i + n × launch_overhead (each kernel launched on its own, back to back)
//   graph: Σ t_i + (n − 1) × graph_gap + launch_overhead (one CUDA graph: one launch)
//   eager: kernel i is issued by the host at Σ_{j ≤ i} host_j (host_j: its class's host_overhead,
//          else runtime.host_overhead) and starts at max(its issue time, the previous kernel's
//          end); the network time is the last kernel's end.
//   ideal: Σ t_i (no overhead at all: the seeds' theoretical network time; needs no runtime)
enum class Execution { Fused, Graph, Eager, Ideal };
const char* execution_name(Execution e);  // "fused", "graph", "eager", "ideal"

struct Runtime {
  double launch_overhead_s = 0;  // per kernel (fused), per graph (graph)
  double graph_gap_s = -1;       // between kernels of one graph (-1: not stated)
  double host_overhead_s = -1;   // host time per kernel in eager mode (-1: not stated)
  Basis launch_basis = Basis::Unstated, gap_basis = Basis::Unstated, host_basis = Basis::Unstated;
  bool has_graph_gap() const { return graph_gap_s >= 0; }
  bool has_host_overhead() const { return host_overhead_s >= 0; }
};

// A network's time as its kernels are issued one after the other under an execution mode: add
// each kernel's theoretical and derated time in order (the rule above; the engine, kernels.csv and
// `rsim calibrate` all time networks through it).
struct ExecutionClock {
  Execution mode = Execution::Fused;
  double launch = 0, gap = 0, host = 0;  // the runtime's (gap and host: 0 when not stated)
  double t = 0, dt = 0;                  // the network's time so far, on both roofs
  double issue = 0;                      // eager: when the host has issued the kernels so far
  size_t n = 0;                          // kernels added
  ExecutionClock(Execution m, const Runtime& r)
      : mode(m), launch(r.launch_overhead_s), gap(r.graph_gap_s > 0 ? r.graph_gap_s : 0), host(r.host_overhead_s > 0 ? r.host_overhead_s : 0) {}
  // kernel_host: the host time to issue this kernel in eager mode (< 0: the runtime's)
  void add(double kt, double dkt, double kernel_host = -1) {
    switch (mode) {
      case Execution::Fused:
        t += kt + launch;
        dt += dkt + launch;
        break;
      case Execution::Graph: {  // one launch for the graph, then a gap before each later kernel
        const double o = n ? gap : launch;
        t += kt + o;
        dt += dkt + o;
        break;
      }
      case Execution::Eager:
        issue += kernel_host >= 0 ? kernel_host : host;
        t = std::max(issue, t) + kt;
        dt = std::max(issue, dt) + dkt;
        break;
      case Execution::Ideal:
        t += kt;
        dt += dkt;
        break;
    }
    ++n;
  }
};

// An algorithm a platform's libraries run for a kind of layer (`algorithms:`), for every precision
// (dtype unset) or one.
struct AlgorithmChoice {
  std::string kind;            // "conv3x3", "conv1x1_strided"
  std::optional<DType> dtype;  // the compute precision it applies to (none: every one)
  std::string algorithm;       // "winograd_f4x4", "touched_input", ...
};

struct Platform {
  std::string name;   // catalog id, e.g. "rtx3080"
  std::string title;  // "NVIDIA GeForce RTX 3080"
  std::string kind;   // gpu, cpu, soc, accelerator
  std::string source; // where the figures come from
  std::vector<ComputeRoof> compute;
  std::vector<MemoryLevel> memory;  // memory[0] is the level rooflines are evaluated against by default
  Runtime runtime;                  // `runtime:`: launch overhead, graph gap, host overhead
  std::vector<InterconnectLevel> interconnect;  // `interconnect:`, fastest (smallest group) first
  // The level a collective among n GPUs runs on (nullptr: none stated)
  const InterconnectLevel* link_for(long long n) const;
  std::vector<CalibrationRule> calibration;  // `calibration:`; applied to derated roofs when no script model is set
  Contention contention;                     // `contention:`; applied to compute-bound layers' derated times
  std::vector<AlgorithmChoice> algorithms;   // `algorithms:`; the work and bytes the roofline bounds
  // GPU figures the kernel models read (datasheet): streaming multiprocessors, boost clock, L2
  int sm_count = 0;            // 0: not stated
  double boost_clock_hz = 0;   // 0: not stated
  double l2_size_bytes = 0, l2_bandwidth_bytes_per_s = 0;
  Basis l2_bandwidth_basis = Basis::Unstated;
  std::string l2_source;  // where the L2 size comes from (`l2: {source}`); `hw show` prints it unless it is `datasheet`
  KernelModel kernel_model;    // `kernel_model:`; GEMM and memory-bound kernels priced by it (kernel_model.hpp)
  std::vector<MeasuredLayer> measured_layers;  // `measured_layers:`; a layer of a timed shape at its law's time × factor
  std::unordered_map<std::string, double> measured_factors;  // measured_layer_key → factor
  // The factor of a layer shape timed by rsim calibrate (1: none)
  double measured_factor(const std::string& key) const {
    auto it = measured_factors.find(key);
    return it == measured_factors.end() ? 1.0 : it->second;
  }
  // The algorithm of `kind` for a compute precision: the one named for it, else the one for every
  // precision, else "" (the conventional count).
  const std::string& algorithm_for(const std::string& kind, DType compute) const;

  // The rule for an operator on a compute roof: one of that roof, else one for every roof (with
  // roof "", the operator's first rule).
  const CalibrationRule* calibration_for(const std::string& op, const std::string& roof = "") const;

  const ComputeRoof* roof_for(DType t) const;
  const MemoryLevel* level(const std::string& name) const;
  // The cache-aware roofline (`memory_level: auto`): the smallest level whose size holds
  // `working_set_bytes`; a level without a size (DRAM) holds anything; when every level has a
  // size and none holds it, the largest.
  const MemoryLevel* level_for(double working_set_bytes) const;
  std::vector<std::string> dtypes() const;  // every precision with a roof, in catalog order
};

// The folder of platform files, one YAML file per platform named like the platform.
class Catalog {
 public:
  explicit Catalog(std::string dir) : dir_(std::move(dir)) {}
  const std::string& dir() const { return dir_; }
  std::vector<std::string> names() const;  // sorted
  std::string path_of(const std::string& name) const;
  bool has(const std::string& name) const;
  // Loads and parses NAME.yaml (cached by the caller if needed).
  CNode load(const std::string& name) const;

 private:
  std::string dir_;
};

// A `basis:` value (datasheet, assumption, ...), or nullopt after a located error
std::optional<Basis> basis_value(const CNode& n, Diags& d);
// The keys of a platform's map build_platform leaves to platform_gpu.cpp: sm_count, boost_clock,
// l2, kernel_model, contention
void read_platform_extras(MapReader& m, Platform& p, Diags& d);

// Build a platform from its YAML description. `base`, when given, supplies every key the node
// does not set (an inline what-if platform written as `base: NAME` plus overrides).
Platform build_platform(const CNode& node, const CNode* base, Diags& d);

// The figures of `p` whose basis is `assumption` that a run in mode `e` uses, as text
// ("launch overhead 5 µs per kernel", "HBM3 achievable bandwidth 85 % of 3.35 TB/s"), in the
// order hw show prints them; the links' only when `links` (a network communicates)
std::vector<std::string> assumed_figures(const Platform& p, Execution e, bool links = true);

// Human-readable description of every roof with both values and the ridge points.
std::string describe_platform(const Platform& p);

}  // namespace rsim
