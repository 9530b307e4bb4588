// Scenarios: what to evaluate (networks, platforms, settings) and the sweep over variables.
// Loading checks structure and collects every error of the file; binding to a sweep point
// happens later, in evaluate.hpp.
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "engine/model/config.hpp"
#include "engine/model/expr.hpp"
#include "engine/hardware/platform.hpp"
#include "engine/model/tensor.hpp"

namespace rsim {

enum class MemoryModel { WeightsOutputs, InputsWeightsOutputs };
const char* memory_model_name(MemoryModel m);  // "weights+outputs", "inputs+weights+outputs"

struct Settings {
  DType dtype = DType::fp32;
  bool dtype_given = false;  // settings.dtype was written (a model file's own dtype yields to it)
  MemoryModel memory_model = MemoryModel::InputsWeightsOutputs;
  double flops_per_mac = 2;
  std::string memory_level;  // "" = the platform's first level; "auto" = the smallest level holding each layer's working set
  bool executed_work = false;  // mac_count: executed — roofline FLOPs skip the taps on padding
  Precision precision;       // weights_dtype, kv_dtype, compute_dtype, quant_group
  Execution execution = Execution::Fused;  // how kernels are issued (engine/hardware/platform.hpp)
  SourceLoc execution_loc;                 // where `execution:` is written (for its errors)
  Parallelism parallel;                    // `parallel:`: every network's unless its own says
};

struct SweepVar {
  std::string name;
  std::vector<std::string> values;
  SourceLoc loc;
  std::string label, unit;  // how figures name it ("" = the variable's name, no unit)
};

struct Sweep {
  std::vector<SweepVar> zip;   // advance together: one dimension
  std::vector<SweepVar> grid;  // cartesian product, last varies fastest
  double max_points = 1e6;
  SourceLoc loc;
};

struct Point {
  size_t index = 0;
  Env bindings;  // sweep variables only
};

// A user script: a plugin file or the scenario's inline `lua:` block.
struct Script {
  std::string name;  // chunk name used in messages: the file path
  std::string code;
  SourceLoc loc;     // where the scenario names it
};

// Sandbox limits for scripts, settable in a scenario within sane bounds.
struct ScriptLimits {
  double instructions = 1e7;        // per call into Lua
  double memory_bytes = 64.0 * 1024 * 1024;  // per Lua state
};

struct Scenario;

// A network entry's `request: {prompt: N, generate: M}` (a language model from the zoo or a
// Hugging Face config): its prefill of N tokens and its M decode steps at contexts N … N+M−1,
// reported as one summary row. parse_scenario splits the entry into a prefill entry (named like
// the request) and a decode entry (NAME.decode, at context `${var}`, the var bound to N); the
// engine evaluates the decode entry again at N+1 … N+M−1 in `decode_only` and merges the rows.
struct Request {
  std::string name;          // the request's network name (its prefill entry's)
  size_t prefill = 0, decode = 0;  // indices in Scenario::networks
  std::string var;           // the decode entry's context variable
  CNode prompt, generate;    // substituted per point
  std::shared_ptr<const Scenario> decode_only;  // the scenario with the decode entry alone
  // `prefill_execution` / `decode_execution`: that phase evaluated with settings.execution set
  // (in prefill_only / decode_only), "" = the scenario's
  std::string prefill_execution, decode_execution;
  std::shared_ptr<const Scenario> prefill_only;  // the prefill entry alone (with prefill_execution)
  // `batching: continuous`: the steady state of continuous batching (see merge_requests); its
  // prefill entry runs one prompt (batch 1)
  bool continuous = false;
};

struct FixedSettings {
  CNode node;      // what `value` was read from
  Settings value;
};

struct Scenario {
  std::string path;
  std::string name;
  std::string description;
  std::string hash;  // FNV-1a 64-bit of the file's bytes, hex
  CNode settings;    // as written (`figures:` is read by plots/)
  // The settings read once into their typed value where no `${…}` (outside `figures:`) is in
  // them, with the node they were read from; null: read per point (see point_settings). Edit
  // `settings` through set_setting, or call fix_settings after editing it.
  std::shared_ptr<const FixedSettings> fixed_settings;
  std::vector<std::pair<std::string, CNode>> vars;  // in order; may use sweep variables and earlier vars
  Sweep sweep;
  std::vector<CNode> platforms;  // a catalog name or an inline map (optionally `base: NAME`)
  std::vector<CNode> networks;
  CNode plots;  // read by plots/ (figures); null when the scenario declares none
  std::vector<Script> scripts;  // plugins in order, then inline `lua:`
  std::vector<std::string> passes;  // graph passes; non-empty: each network is also evaluated optimized
  ScriptLimits limits;
  SourceLoc platforms_loc;
  std::vector<Request> requests;
  CNode serving;  // `serving:` (null: none): read, substituted per point, by serving/
  // Warnings found while loading (the run goes on), e.g. a request's execution mode that
  // settings.execution: ideal overrides
  std::vector<Diagnostic> load_warnings;
};

// Every error of the file at once, thrown as one ConfigError. With `unknown_keys`, a file whose only
// errors are unknown top-level keys loads (they cannot change what is evaluated), and those errors
// go there: the caller reports them with the errors the evaluation finds (an unknown platform or
// model), not instead of them (`rsim run`, `rsim validate`).
Scenario parse_scenario(const std::string& text, const std::string& path, Diags* unknown_keys = nullptr);
Scenario load_scenario(const std::string& path, Diags* unknown_keys = nullptr);
// Warnings for figures: an inline platform whose `${…}` read a swept variable its name does not
// (through `vars` too; a zip variable in the name covers its zip). Its points get different roofs
// under one name, which tables keep apart (results.json writes each definition) but a figure,
// drawing a platform by its name, cannot.
std::vector<Diagnostic> platform_name_warnings(const Scenario& s);

// Applies `--set name=value` overrides: a var takes the value, a sweep variable is pinned to it.
void apply_overrides(Scenario& s, const std::vector<std::pair<std::string, std::string>>& sets);

// Number of points (zip length × product of grid sizes).
double point_count(const Sweep& s);
// All points in order. Throws ConfigError when over max_points.
std::vector<Point> expand_sweep(const Sweep& s);
// Throws ConfigError when the sweep has more than max_points points.
void check_point_limit(const Sweep& s);
// Point `index` of the sweep (index < point_count), computed without expanding the others.
Point sweep_point(const Sweep& s, size_t index);
// The same, written over `p` (keeping the storage of its bindings: a worker's point after point)
void sweep_point(const Sweep& s, size_t index, Point& p);
// The points `validate` evaluates, in point order: along each dimension (each grid variable in
// turn, the others at their first value; the zip positions) the first and last value, the
// smallest and largest numeric value and up to 16 spread evenly between; plus the last point.
// Errors that only other values or combinations of values cause are found by `run`.
std::vector<Point> validation_points(const Sweep& s);
// The names of the sweep variables in column order (zip first, then grid).
std::vector<std::string> sweep_names(const Sweep& s);

// Settings for one point (after substitution).
Settings read_settings(const CNode& node, Diags& d);

// Reads s.settings once into s.fixed_settings when nothing in them is swept and they have no
// error (else leaves it null); errors go to `d` when given.
void fix_settings(Scenario& s, Diags* d = nullptr);
// Sets (or, with an empty value, removes) one `settings:` key and reads the settings again.
void set_setting(Scenario& s, const std::string& key, const std::string& value);
// A point's settings: the fixed value while s.settings is still the node it was read from, else
// s.settings with the point's `${…}` substituted, read.
Settings point_settings(const Scenario& s, const Env& env, ExprEvaluator& ev, Diags& d);

std::string fnv1a_hex(const std::string& bytes);

}  // namespace rsim
