// Shared helpers for the tests: run scenarios from files or inline text.
#pragma once
#include <string>

#include "engine/eval/evaluate.hpp"
#include "engine/output/output.hpp"
#include "importers/onnx_import.hpp"
#include "scripting/lua_expr.hpp"
#include "scripting/lua_host.hpp"

namespace rsim::test {

inline std::string src(const std::string& rel) { return std::string(RSIM_SOURCE_DIR) + "/" + rel; }

// Runs a scenario as `rsim run` does: with its scripts' operators, efficiency model and metrics.
// rows = false: network totals only, as `--tables summary` runs
inline RunResult run(const Scenario& s, int jobs = 1, bool rows = true) {
  ScriptSetup setup = setup_scripts(s);
  Catalog cat(src("hardware"));
  RunOptions opt;
  opt.jobs = jobs;
  opt.rows = rows;
  opt.ops = &setup.ops;
  opt.make_hooks = setup.make_hooks;
  opt.make_evaluator = make_lua_evaluator;
  opt.importer = make_onnx_importer();
  return run_scenario(s, cat, opt);
}

inline RunResult run_text(const std::string& yaml, int jobs = 1, bool rows = true) { return run(parse_scenario(yaml, "t.yaml"), jobs, rows); }
inline RunResult run_file(const std::string& rel) { return run(load_scenario(src(rel))); }

// The message of the ConfigError that `f` throws ("" if none).
template <class F>
std::string error_of(F f) {
  try {
    f();
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "";
}

// Rows of one point/platform/network, in layer order.
inline std::vector<const Row*> rows_of(const RunResult& r, size_t point, const std::string& platform) {
  std::vector<const Row*> out;
  for (const auto& row : r.results.at(point).rows)
    if (row.platform == platform) out.push_back(&row);
  return out;
}

inline const SummaryRow& summary_of(const RunResult& r, size_t point, const std::string& platform) {
  for (const auto& s : r.results.at(point).summary)
    if (s.platform == platform) return s;
  throw std::runtime_error("no summary for " + platform);
}

// A CSV text as rows of cells (no quoting: the tables' test scenarios have plain names), and one
// cell by row and column name.
inline std::vector<std::string> split(const std::string& s, char sep) {
  std::vector<std::string> out;
  std::string cur;
  for (char c : s) {
    if (c == sep) {
      out.push_back(cur);
      cur.clear();
    } else {
      cur += c;
    }
  }
  out.push_back(cur);
  return out;
}

inline std::vector<std::vector<std::string>> csv_rows(const std::string& csv) {
  std::vector<std::vector<std::string>> rows;
  for (const auto& line : split(csv, '\n'))
    if (!line.empty()) rows.push_back(split(line, ','));
  return rows;
}

inline std::string cell(const std::vector<std::vector<std::string>>& t, size_t row, const std::string& col) {
  for (size_t i = 0; i < t[0].size(); ++i)
    if (t[0][i] == col) return t.at(row).at(i);
  return "<no column " + col + ">";
}

}  // namespace rsim::test
