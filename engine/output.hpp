// Result files (CSV, JSON) and the terminal table. Numbers in files are plain SI.
#pragma once
#include <string>
#include <vector>

#include "engine/evaluate.hpp"

namespace rsim {

struct RunInfo {
  std::string version;  // rsim version
  const Scenario* scenario = nullptr;
};

std::string csv_escape(const std::string& s);
std::string json_escape(const std::string& s);
std::string num_text(double v);  // shortest round-trip text; "inf" for infinity
// The header of a sweep variable's column: its name, or `sweep.NAME` when a column of the table
// already has that name (a sweep over `batch` in summary.csv, over `dtype` in results.csv).
std::string sweep_column(const std::string& var, const std::vector<std::string>& columns);

std::string results_csv(const RunResult& r, const Scenario& s);
std::string summary_csv(const RunResult& r, const Scenario& s);
// One row per kernel (a layer, or a group fused by a pass): its layers, FLOPs, bytes, time and the
// bound of the kernel as a whole (results.csv's `bound` describes each layer alone).
std::string kernels_csv(const RunResult& r);
std::string results_json(const RunResult& r, const RunInfo& info);

// The compact per-layer table for the terminal, with SI prefixes; at most `max_rows` rows.
std::string terminal_table(const RunResult& r, size_t max_rows);
// Network totals per point and platform.
std::string terminal_summary(const RunResult& r, size_t max_rows);

// Writes `content` to `path` through a temporary file and a rename. Throws std::runtime_error.
void write_file_atomic(const std::string& path, const std::string& content);

// Column names of results.csv and summary.csv (without the sweep variables), for docs and tests.
const std::vector<std::string>& results_columns();
const std::vector<std::string>& summary_columns();
const std::vector<std::string>& kernels_columns();

}  // namespace rsim
