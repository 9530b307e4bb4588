// `rsim calibrate`: an efficiency model per op class fitted from measured.csv files, written into
// a platform file as data (`calibration:`) that the engine applies without scripts.
// Model: efficiency = a · x^b · g^c (clamped to (0, 1]) with x = MACs for compute-bound layers
// (FLOPs when a layer has no MACs) and x = bytes moved for memory-bound layers, g = input channels
// per group for grouped operators (convolutions; the factor is 1 for the others); fitted per class on
// log(efficiency) = log a + b · log x + c · log g by least squares made robust (Huber, below).
// Beside the rules, a platform-wide time-sharing term (engine/hardware/platform.hpp: Contention): on a core
// shared with other runnable work, a compute-bound layer longer than the onset (≈ half a scheduler
// slice) waits for the others' slices, so its median time grows by up to `slowdown`. fit_model
// picks (onset, slowdown) on a grid (slowdown 1 = no contention is one of the candidates) by the
// least squares of log(predicted / measured) over every layer, fitting the rules on the times
// with the contention taken out for each candidate. Before it, with no contention, the same least
// squares picks a fixed per-layer overhead (overhead_grid; 0 is a candidate and wins ties), which
// stays for the contention search.
//
// GPUs (layers timed by PyTorch, `measured_execution` eager or graph, and whole networks in
// measured_networks.csv): one rule per op class and compute roof; each rule's fixed time per
// layer (the host's time to issue it, for layers timed one by one in eager mode) is fitted beside
// its laws and written as the rule's host_overhead; classes the layers never showed take a law
// transferred from the classes of their roof (extrapolated); then the network rows fit the
// runtime: graph_gap from networks replayed in one CUDA graph, and the host overheads' scale from
// eager networks (fit_gpu_model). Last, the layer shapes the laws miss by more than 10 % (a library's
// choice per shape, such as Winograd for some 3×3 convolutions, which no smooth law follows) are
// kept with their measured factor (the platform's measured_layers) and applied before the network
// rows are fitted.
#pragma once
#include <functional>
#include <map>
#include <string>
#include <unordered_map>
#include <vector>

#include "engine/hardware/platform.hpp"

namespace rsim::measure {

// The op class a measured layer belongs to, and the operators of each class.
std::string op_class(const std::string& op);
std::vector<std::string> class_ops(const std::string& cls);
std::vector<std::string> class_names();

struct Sample {
  std::string network, op;
  double work = 0;       // FLOPs the roofline bounds
  double macs = 0;       // MACs (executed when mac_count is executed)
  double bytes = 0;
  double peak = 0, bandwidth = 0;  // derated roofs the layer was bounded on (without efficiency)
  bool compute_bound = false;      // by the theoretical roofs
  double measured_s = 0;  // 0: not timed (a row of predictions only)
  double cpg = 0;        // input channels per group (0: the operator has no groups)
  std::string level;     // the memory level the layer was bounded on ("" in older measured.csv files)
  // (columns rsim calibrate reads since GPUs: all optional)
  std::string layer;
  std::string platform;   // the platform the layer was evaluated on ("" in files without the column)
  std::string roof;       // the compute roof the layer was bounded on ("" in files without the column)
  std::string execution;  // how the layer was timed: eager, graph ("" for oneDNN: a primitive alone)
  std::string kernel;     // the kernel the layer runs in ("": none, a view)
  std::string input_shape, output_shape;
  double time_s = 0;      // the theoretical bound
  double measured_min_s = 0;  // the fastest repetition (measured_s when the file has no such column)
  double outputs = 0;         // elements of output_shape's first tensor (0: unknown)
  double macs_counted = 0;    // the macs column (the conventional count): measured_layers' key
};

// Reads measured.csv text (rsim measure's output); rows without a measurement are skipped.
// Throws std::runtime_error naming the file and the missing column.
std::vector<Sample> read_measured_csv(const std::string& text, const std::string& name);
// Every layer row, timed or not (a network measured as a whole lists its layers untimed).
// A measured time present but not a finite number ≥ 0 (inf, NaN, negative, text) is an error at
// its line, or with `dropped` given, the row is left out and counted there (--drop-bad-rows).
std::vector<Sample> read_measured_rows(const std::string& text, const std::string& name, size_t* dropped = nullptr);

// A whole network's measured time (measured_networks.csv): the time is measured_min_s when given,
// else measured_time_s.
struct NetworkSample {
  std::string network, model, dtype, note;
  Execution execution = Execution::Eager;
  double batch = 0, time_s = 0, reps = 0;
};
std::vector<NetworkSample> read_measured_networks_csv(const std::string& text, const std::string& name, size_t* dropped = nullptr);
// What a measured CSV holds, told by its header: layers (measured.csv), networks
// (measured_networks.csv) or neither.
enum class CsvKind { Layers, Networks, Unknown };
CsvKind measured_kind(const std::string& text);

// Fits a·x^b to (x, efficiency) pairs; with one distinct x, b = 0 and a = their geometric mean.
PowerLaw fit_power_law(const std::vector<std::pair<double, double>>& xe);

struct XGE {
  double x = 0, g = 0, e = 0;  // work or bytes, channels per group (0: none), efficiency
  double p = 0;                // output elements (0: unknown), for the occupancy factor
};
// Fits a·x^b·g^c on logs, robustly: Huber's M-estimate (squares for residuals up to kHuber in log
// space, linear beyond), by iteratively reweighted least squares. c is fitted only when the points
// with g > 0 span more than one value of g (otherwise c = 0); the points with g = 0 count with g's
// factor 1. Without outliers (every |residual| ≤ kHuber) it is the least-squares fit.
constexpr double kHuber = 0.4054651081081644;  // log 1.5
// nonnegative_b: a law that would lose efficiency as x grows is fitted flat instead (b = 0): the
// GPU fits, whose laws must not extrapolate a slowdown past the largest layer measured.
PowerLaw fit_power_law_grouped(const std::vector<XGE>& xge, bool nonnegative_b = false);
// The same law with an occupancy factor min(1, p / p_sat)^d (d ≥ 0) where it earns its two
// parameters: p_sat on a grid of ratio 2^(1/4) over the points' p, each a robust fit of
// (log a, b, c, d); the best is kept when n · ln(loss / loss without it) + 2 · ln n < 0 (the
// Bayesian information criterion, the loss being Huber's), else the law above. Needs at least
// kOccupancySamples points with p > 0 spanning 3 values of p. For GPU data: a kernel with fewer
// outputs than the multiprocessors can hold leaves some idle, at any MACs.
constexpr size_t kOccupancySamples = 8;
PowerLaw fit_power_law_occupancy(const std::vector<XGE>& xge, bool nonnegative_b = false);

// Per op class: the compute law over its compute-bound samples, the bandwidth law over its
// memory-bound ones, and for each memory level holding at least kLevelSamples of those, a law of
// that level's own (bandwidth_by_level): a cache level and DRAM reward the same bytes differently.
constexpr size_t kLevelSamples = 8;
std::vector<CalibrationRule> fit_calibration(const std::vector<Sample>& samples);

// Predicted time of a sample under rules (1, 1 efficiency for an op without a rule).
double predict_s(const Sample& s, const std::vector<CalibrationRule>& rules);

// The rules and the contention fitted together.
struct Model {
  std::vector<CalibrationRule> rules;
  Contention contention;
  // The fixed time of running a layer at all (a primitive's dispatch and its threads' start), added
  // to every layer's time: written as the platform's runtime.launch_overhead (added per kernel).
  double overhead_s = 0;
  // GPU fits (fit_gpu_model): rules per class and roof with host overheads, and the runtime fitted
  // from the network rows (graph_gap, host_overhead: -1 where no network row of that mode was given)
  bool gpu = false;
  Runtime runtime;
  double host_scale = 1;  // the factor the eager network rows put on the rules' host overheads
  // GPU fits: the timed layer shapes whose times the laws missed by more than kMeasuredMiss, each
  // with the median of its layers' measured / law time (the platform's measured_layers), and by key
  std::vector<MeasuredLayer> measured_layers;
  std::unordered_map<std::string, double> measured_factors;

};
// The overheads fit_model tries: 0, then 0.25 µs · 2^(i/2), i = 0 … 12 (0.25 µs … 16 µs).
std::vector<double> overhead_grid();
// The grid fit_model searches: slowdown 1, 1.25, … 6; onset 1 ms · 2^(i/4), i = −16 … 24 (62.5 µs … 64 ms).
// Past 20,000 rows it keeps every k-th (file order), and searches the grid on at most 2,000 of them.
Model fit_model(const std::vector<Sample>& samples);
// The laws alone, at a given overhead and contention (the rows' times with both taken out).
Model fit_laws_at(const std::vector<Sample>& samples, double overhead_s, const Contention& contention);
// predict_s under the rules, then the contention on a compute-bound sample (as the engine does).
double predict_s(const Sample& s, const Model& m);
// After a fit (fit_model calls it with the samples the rules were fitted on, overhead and contention
// taken out), per compute roof: each rule's laws get the range of x and g of the layers they were
// fitted on (PowerLaw::at holds a law's value beyond it); a class measured on one side of the ridge
// only takes the other side's law from the classes of its roof together (extrapolated_compute or
// extrapolated_bandwidth); every class of class_names() without a rule gets those pooled laws
// (extrapolated). So a calibrated platform has a law for every class rsim knows.
void complete_rules(std::vector<CalibrationRule>& rules, const std::vector<Sample>& fitted);
// Whether the sample's prediction leans on a transferred law, or on a law beyond its fitted range.
bool extrapolated_for(const Sample& s, const std::vector<CalibrationRule>& rules);
// The run time t with c.apply(t) = measured (c.apply is increasing); measured when c is inactive.
double remove_contention(double measured_s, const Contention& c);

struct CrossValidation {
  struct Fold {
    std::string network;
    size_t layers = 0;
    double median_err = 0, p90_err = 0;     // |predicted/measured − 1| per layer, calibrated
    double median_err_before = 0;           // the same with the derated roofs alone
    double within_1_5x = 0;                 // share of FLOP-carrying layers within 1.5× of measured
    double network_err = 0;                 // |Σ predicted / Σ measured − 1|
    size_t extrapolated = 0;                // layers predicted by a transferred law or beyond a law's range
  };
  std::vector<Fold> folds;  // one per network held out (empty with fewer than two networks), or per fold of networks
  size_t grouped_networks = 0;  // past kMaxFolds networks: how many, held out in kMaxFolds folds (and no pairs)
  struct Pair {  // a network predicted by a fit on one other network alone
    std::string fit_on, predicted;
    size_t layers = 0, extrapolated = 0;
    double within_1_5x = 0, network_err = 0;
  };
  std::vector<Pair> pairs;  // every ordered pair of networks
  struct Prediction {        // one per measured layer, predicted by the fit on the other networks
    std::string network, op;
    double work = 0, measured_s = 0;
    double uncalibrated_s = 0;  // the derated roofs alone
    double calibrated_s = 0;    // the derated roofs × the efficiencies fitted without this network
    bool extrapolated = false;  // extrapolated_for under that fit
  };
  std::vector<Prediction> predictions;
};
// The error band of each class (CalibrationRule::error_band): measured / predicted of its layers in
// the cross-validation's held-out predictions, at the 10th and 90th percentile (linear
// interpolation between order statistics); a class with fewer than 5 held-out layers gets none.
void set_error_bands(std::vector<CalibrationRule>& rules, const CrossValidation& cv);
// The same from ratios measured / predicted pooled over every class (a GPU fit's networks
// predicted without themselves): every rule gets that band; fewer than 3 ratios give none.
void set_error_bands(std::vector<CalibrationRule>& rules, const std::vector<double>& ratios);
// The q-quantile of v by linear interpolation between order statistics (numpy's default)
double percentile_linear(std::vector<double> v, double q);
// The predictions as CSV: network,op,class,flops,measured_s,uncalibrated_s,calibrated_s,extrapolated.
std::string predictions_csv(const CrossValidation& cv);
// progress (may be empty): called before each of its fits, (done, total). Up to kMaxFolds networks
// each is held out alone and every ordered pair is fitted; more are held out in kMaxFolds folds
// (network i in fold i mod kMaxFolds) and no pairs are fitted: the fits stay kMaxFolds whatever
// the file holds.
// Grouped folds fit their laws at the overhead and contention of the fit on every network (`full`
// when given, else fitted here).
constexpr size_t kMaxFolds = 12;
CrossValidation cross_validate(const std::vector<Sample>& samples, const std::function<void(size_t, size_t)>& progress = {}, const Model* full = nullptr);

// A network's kernels (its layer rows grouped by kernel, in order of first layer) timed under the
// rules, and its time under an execution mode and runtime (engine/hardware/platform.hpp: ExecutionClock).
struct KernelPlan {
  std::vector<double> time_s, host_s;  // per kernel: calibrated time, host overhead (-1: the runtime's)
};
// (`measured`: a GPU fit's measured_factors, applied to the layers of those shapes)
KernelPlan plan_kernels(const std::vector<const Sample*>& layers, const std::vector<CalibrationRule>& rules,
                        const std::unordered_map<std::string, double>* measured = nullptr);
// A layer shape is kept in measured_layers when its measured time is off its law's by more than this factor either way
constexpr double kMeasuredMiss = 1.1;
// The measured factor of a sample's shape (1: none)
double measured_factor(const Sample& s, const std::unordered_map<std::string, double>* measured);
double network_time_s(const KernelPlan& k, Execution e, const Runtime& r);

// The GPU fit: rules per class and roof with host overheads from the timed layers (`rows`: every
// layer row of the files, timed or not), extrapolated rules for the classes the networks use but
// no timed layer showed, then the runtime from the network rows; `base` gives launch_overhead
// (one per graph) and the runtime a mode without network rows keeps.
Model fit_gpu_model(const std::vector<Sample>& rows, const std::vector<NetworkSample>& nets, const Runtime& base);
// Whether a fit should take the GPU path: layers timed with a measured_execution, or network rows.
bool gpu_data(const std::vector<Sample>& rows, const std::vector<NetworkSample>& nets);

// Each network row predicted by a GPU fit without that network (its layers and its rows):
// leave-one-network-out, per execution mode.
struct NetworkValidation {
  struct Case {
    NetworkSample m;
    double predicted_s = 0;   // by the fit on the other networks
    double fitted_s = 0;      // by the fit on everything
    double uncalibrated_s = 0;  // by the derated roofs and `base` runtime alone
    size_t kernels = 0;
  };
  std::vector<Case> cases;
};
// `fitted`: the fit on everything, when the caller has it (else made here).
NetworkValidation validate_networks(const std::vector<Sample>& rows, const std::vector<NetworkSample>& nets, const Runtime& base,
                                    const Model* fitted = nullptr);

// A measured layer faster than its theoretical bound (measured_min_s < time_s), and why when known.
struct BeatsBound {
  std::string network, layer, op, reason;
  double measured_min_s = 0, time_s = 0;
};
std::vector<BeatsBound> beats_bound(const std::vector<Sample>& rows);
// Why a layer may beat its bound ("" when no known algorithm explains it): a 3×3 stride-1
// convolution runs Winograd; a strided 1×1 convolution reads only the pixels it uses.
std::string beats_bound_reason(const std::string& op, const std::string& input_shape, const std::string& output_shape, double macs);

// The platform file's text with `name:` set to `name` and the rules appended as `calibration:`.
// An active contention is appended as `contention:`; `runtime`, when given, replaces the platform's
// `runtime:` block (written with its fitted values and where they came from).
// `measured`, when not empty, is appended as `measured_layers:`.
std::string calibrated_platform_yaml(const std::string& platform_text, const std::string& name, const std::vector<CalibrationRule>& rules,
                                     const std::string& fitted_from, const Contention& contention = {}, const Runtime* runtime = nullptr,
                                     const std::string& runtime_source = "", const std::vector<MeasuredLayer>& measured = {});

}  // namespace rsim::measure
