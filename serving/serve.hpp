// A scenario's `serving:` section, read (per point: it may hold ${…}) and run: every language
// model of the scenario served on every platform at every sweep point, each batch priced by the
// engine (serving/pricer.hpp), and the tables written beside the run's (requests.csv,
// serving.csv, timeline.csv). Metric definitions: docs/serving.md.
#pragma once
#include <string>
#include <vector>

#include "engine/eval/evaluate.hpp"
#include "serving/simulate.hpp"
#include "serving/workload.hpp"

namespace rsim::serving {

struct ServingSpec {
  std::string trace;  // a trace file (resolved against the scenario), else synthetic
  SourceLoc trace_loc;
  Synthetic synthetic;
  EngineConfig engine;
  SourceLoc engine_loc, batched_tokens_loc;
  double gpu_memory_utilization = 0.9;
  std::string prefill_execution, decode_execution = "graph";
  Slo slo;
  Deployment deployment;  // its KV transfer's figures come from the pricer and the platform
  std::string link;       // disaggregated: the interconnect level by name ("" = the last)
  SourceLoc link_loc, deployment_loc;
  double link_bandwidth = 0, link_latency_s = -1;  // given instead of a link's (0, −1: not given)
};

// The substituted `serving:` node; errors into `d` (located). `scenario_path` places a trace.
ServingSpec read_serving(const CNode& node, const std::string& scenario_path, Diags& d);

// One point × platform × network served
struct ServedRun {
  size_t point = 0;
  Env bindings;
  std::string platform, network;
  long long kv_blocks = 0;
  double gpus = 1;  // of the whole deployment
  Slo slo;  // the point's targets
  Deployment deployment;
  Simulation sim;
  Summary summary;
};

struct ServingTables {
  std::vector<ServedRun> runs;
  std::string requests_csv, serving_csv, timeline_csv;
  // the terminal's lines, one a run: "llama3_8b on rtx4090: 300 requests, TTFT p50 …"
  std::string text;
};

// The section's errors at `points` (every point when empty) without serving anything: its keys,
// the served networks, the trace's lines; into `d`.
void validate_serving(const Scenario& s, const RunOptions& opt, const std::vector<Point>& points, Diags& d);

// Serves the scenario (s.serving not null) at every sweep point. Throws ConfigError.
ServingTables serve_scenario(const Scenario& s, const Catalog& catalog, const RunOptions& opt);

// A serving.csv column of a run (ttft_p99_s, goodput_requests_per_s, …); NaN when unknown
double serving_value(const ServedRun& r, const std::string& column);
// The columns serving_value knows, in serving.csv's order
const std::vector<std::string>& serving_columns();

// results.json's "serving": the metrics' definitions and serving.csv's rows, as a JSON object
std::string serving_json(const ServingTables& t);
// report.md's section: a table of each run's percentiles and what they mean
std::string serving_markdown(const ServingTables& t);

}  // namespace rsim::serving
