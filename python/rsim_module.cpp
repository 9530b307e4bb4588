// The Python module `rsim`: rsim.run() evaluates a scenario with the C++ engine and returns its
// tables as lists of dicts, with the columns and values of results.csv, summary.csv and
// kernels.csv. No logic of its own beyond turning CSV text into Python values.
#include <dlfcn.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <charconv>
#include <csignal>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "session/session.hpp"
#include "engine/eval/evaluate.hpp"
#include "engine/model/diagnostics.hpp"
#include "engine/scenario/schema.hpp"
#include "plots/charts.hpp"

namespace py = pybind11;

namespace {

// One CSV field as a Python value: int, float (inf included) or str.
py::object cell(const std::string& f) {
  if (f.empty()) return py::str("");
  long long i = 0;
  auto [pi, ei] = std::from_chars(f.data(), f.data() + f.size(), i);
  if (ei == std::errc() && pi == f.data() + f.size()) return py::int_(i);
  if (f == "inf" || f == "-inf") return py::float_(f == "inf" ? HUGE_VAL : -HUGE_VAL);
  double d = 0;
  auto [pd, ed] = std::from_chars(f.data(), f.data() + f.size(), d);
  if (ed == std::errc() && pd == f.data() + f.size()) return py::float_(d);
  return py::str(f);
}

// RFC 4180 fields of `text` (quoted fields may hold commas, quotes and newlines).
std::vector<std::vector<std::string>> parse_csv(const std::string& text) {
  std::vector<std::vector<std::string>> rows;
  std::vector<std::string> row;
  std::string field;
  bool quoted = false, any = false;
  for (size_t i = 0; i < text.size(); ++i) {
    char c = text[i];
    if (quoted) {
      if (c == '"' && i + 1 < text.size() && text[i + 1] == '"') field += '"', ++i;
      else if (c == '"') quoted = false;
      else field += c;
    } else if (c == '"') {
      quoted = any = true;
    } else if (c == ',') {
      row.push_back(std::move(field)), field.clear();
    } else if (c == '\n') {
      row.push_back(std::move(field)), field.clear();
      rows.push_back(std::move(row)), row.clear();
      any = false;
    } else if (c != '\r') {
      field += c, any = true;
    }
  }
  if (any || !field.empty() || !row.empty()) row.push_back(field), rows.push_back(row);
  return rows;
}

py::list table(const std::string& csv) {
  py::list out;
  auto rows = parse_csv(csv);
  if (rows.empty()) return out;
  std::vector<py::str> header;
  for (const auto& h : rows[0]) header.emplace_back(h);
  for (size_t r = 1; r < rows.size(); ++r) {
    py::dict d;
    for (size_t c = 0; c < header.size() && c < rows[r].size(); ++c) d[header[c]] = cell(rows[r][c]);
    out.append(std::move(d));
  }
  return out;
}

struct Result {
  py::list rows, summary, kernels;
  py::list requests, serving, timeline;  // a `serving:` scenario's requests.csv, serving.csv, timeline.csv
  std::string scenario;
  rsim::RunTables run;  // (its tables and the evaluated run, for rsim.plot)
  py::object to_pandas(const std::string& which) const {
    py::object pd;
    try {
      pd = py::module_::import("pandas");
    } catch (py::error_already_set&) {
      throw py::import_error("Result.to_pandas() needs pandas (Debian: apt install python3-pandas); the tables are in .rows, .summary and .kernels");
    }
    if (which == "rows") return pd.attr("DataFrame")(rows);
    if (which == "summary") return pd.attr("DataFrame")(summary);
    if (which == "kernels") return pd.attr("DataFrame")(kernels);
    if (which == "requests") return pd.attr("DataFrame")(requests);
    if (which == "serving") return pd.attr("DataFrame")(serving);
    if (which == "timeline") return pd.attr("DataFrame")(timeline);
    throw py::value_error("to_pandas(table): table is 'rows', 'summary', 'kernels', 'requests', 'serving' or 'timeline', not '" + which + "'");
  }
};

// Ctrl-C during a run: the engine runs without the interpreter (and on worker threads, where
// Python's own handler never runs), so a SIGINT handler of ours holds for the run's length and
// raises a flag the engine asks for before each point; the previous handler is put back after.
volatile std::sig_atomic_t g_interrupted = 0;
extern "C" void on_sigint(int) { g_interrupted = 1; }

struct SigintGuard {
  struct sigaction old {};
  bool installed = false;
  SigintGuard() {
    g_interrupted = 0;
    struct sigaction sa {};
    sa.sa_handler = on_sigint;
    sigemptyset(&sa.sa_mask);
    installed = sigaction(SIGINT, &sa, &old) == 0;
  }
  ~SigintGuard() {
    if (installed) sigaction(SIGINT, &old, nullptr);
  }
};

std::string text_of(const py::handle& v) {
  if (py::isinstance<py::bool_>(v)) return v.cast<bool>() ? "true" : "false";
  if (py::isinstance<py::float_>(v)) return py::repr(v).cast<std::string>();  // shortest round trip
  return py::str(v).cast<std::string>();
}

// The folder of this module's .so: the catalog and the zoo are found relative to it.
std::string module_dir() {
  Dl_info info{};
  if (dladdr(reinterpret_cast<void*>(&module_dir), &info) && info.dli_fname) {
    std::error_code ec;
    auto p = std::filesystem::canonical(info.dli_fname, ec);
    if (!ec) return p.parent_path().string();
  }
  return "";
}

}  // namespace

PYBIND11_MODULE(_rsim, m) {  // rsim._rsim: the package rsim (python/package/rsim) wraps it
  m.doc() = "rsim, the roofline simulator: rsim.run('scenario.yaml', set={'groups': 4}) evaluates a scenario with the C++ engine.";
  m.attr("__version__") = RSIM_VERSION;
  rsim::set_data_anchor(module_dir());
  static py::exception<rsim::ConfigError> error(m, "Error");
  error.doc() = "A scenario or configuration error; str(e) is rsim's located message (file:line:col: error: ..., the line, a caret).";
  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const rsim::ConfigError& e) {
      std::string msg = e.what();
      while (!msg.empty() && msg.back() == '\n') msg.pop_back();
      error(msg.c_str());
    }
  });

  py::class_<Result>(m, "Result", "The tables of one run: lists of dicts with the columns of results.csv, summary.csv and kernels.csv.")
      .def_readonly("rows", &Result::rows, "per-layer rows (results.csv)")
      .def_readonly("summary", &Result::summary, "network totals per point and platform (summary.csv)")
      .def_readonly("kernels", &Result::kernels, "one row per kernel (kernels.csv)")
      .def_readonly("requests", &Result::requests, "a serving: scenario's requests (requests.csv; empty without serving:)")
      .def_readonly("serving", &Result::serving, "a serving: scenario's percentiles and throughput per point (serving.csv)")
      .def_readonly("timeline", &Result::timeline, "a serving: scenario's running, waiting and KV use per second (timeline.csv)")
      .def_readonly("scenario", &Result::scenario, "the scenario file")
      .def("to_pandas", &Result::to_pandas, py::arg("table") = "rows", "A pandas DataFrame of 'rows', 'summary', 'kernels', 'requests', 'serving' or 'timeline'.")
      .def("__repr__", [](const Result& r) {
        return "<rsim.Result " + r.scenario + ": " + std::to_string(r.rows.size()) + " rows, " + std::to_string(r.summary.size()) + " summary rows>";
      });

  m.def(
      "run",
      [](const py::object& path, const py::object& text, const py::object& scenario, const py::dict& set, int jobs, const std::string& hw_dir) {
        const int given = !path.is_none() + !text.is_none() + !scenario.is_none();
        if (given != 1) throw py::value_error("rsim.run takes one of: a scenario file's path, text=YAML, or scenario=dict");
        std::string yaml, name;
        if (!text.is_none()) {
          if (!py::isinstance<py::str>(text)) throw py::type_error("rsim.run(text=...): the scenario's YAML as a str");
          yaml = text.cast<std::string>(), name = "<text>";
        } else if (!scenario.is_none()) {
          if (!py::isinstance<py::dict>(scenario)) throw py::type_error("rsim.run(scenario=...): the scenario as a dict (as its YAML would load)");
          // JSON is YAML: the dict as JSON text, read by the same loader as a file (its errors
          // point into that text, shown with the message)
          yaml = py::module_::import("json").attr("dumps")(scenario, py::arg("indent") = 1).cast<std::string>(), name = "<dict>";
        }
        std::vector<std::pair<std::string, std::string>> sets;
        for (const auto& [k, v] : set) sets.emplace_back(py::str(k).cast<std::string>(), text_of(v));
        rsim::RunTables t;
        const std::string file = path.is_none() ? std::string() : py::str(path).cast<std::string>();
        bool interrupted = false;
        {
          SigintGuard sigint;  // (only the main thread may set signal handlers: Python runs us there)
          py::gil_scoped_release unlocked;  // the engine runs without the interpreter
          auto stop = [] { return g_interrupted != 0; };
          try {
            t = file.empty() ? rsim::run_tables_text(yaml, name, sets, hw_dir, jobs, stop) : rsim::run_tables(file, sets, hw_dir, jobs, stop);
          } catch (const rsim::Interrupted&) {
            interrupted = true;
          }
        }
        if (interrupted) {
          PyErr_SetNone(PyExc_KeyboardInterrupt);
          throw py::error_already_set();
        }
        Result r;
        r.rows = table(t.results_csv);
        r.summary = table(t.summary_csv);
        r.kernels = table(t.kernels_csv);
        r.requests = table(t.requests_csv), r.serving = table(t.serving_csv), r.timeline = table(t.timeline_csv);
        r.scenario = file.empty() ? name : file;
        r.run = std::move(t);
        return r;
      },
      py::arg("path") = py::none(), py::kw_only(), py::arg("text") = py::none(), py::arg("scenario") = py::none(), py::arg("set") = py::dict(),
      py::arg("jobs") = 1, py::arg("hw_dir") = "",
      "Evaluate a scenario as `rsim run PATH --set NAME=VALUE ... --jobs N` does and return its tables: from a file's path,\n"
      "from YAML text (text=...), or from a dict (scenario=..., the structure its YAML loads to).\n"
      "Raises rsim.Error with the located message for a bad scenario.");
  m.def(
      "read_result",
      [](const std::string& dir, const std::string& scenario) {
        auto text = [&](const char* name) {
          std::ifstream f(std::filesystem::path(dir) / name, std::ios::binary);
          std::ostringstream o;
          o << f.rdbuf();
          return o.str();
        };
        if (!std::filesystem::exists(std::filesystem::path(dir) / "summary.csv"))
          throw py::value_error("rsim.read_result: '" + dir + "' holds no summary.csv (not a folder rsim run or rsim merge wrote)");
        Result r;
        r.run.results_csv = text("results.csv"), r.run.summary_csv = text("summary.csv"), r.run.kernels_csv = text("kernels.csv");
        r.run.requests_csv = text("requests.csv"), r.run.serving_csv = text("serving.csv"), r.run.timeline_csv = text("timeline.csv");
        r.rows = table(r.run.results_csv), r.summary = table(r.run.summary_csv), r.kernels = table(r.run.kernels_csv);
        r.requests = table(r.run.requests_csv), r.serving = table(r.run.serving_csv), r.timeline = table(r.run.timeline_csv);
        r.scenario = scenario;
        return r;
      },
      py::arg("dir"), py::arg("scenario") = "",
      "The tables of a result folder that rsim run or rsim merge wrote, as a Result (its figures are in the folder: rsim.plot does not redraw them).");
  m.def(
      "plot",
      [](const Result& r, const std::string& out, const py::object& formats, const std::string& style) {
        std::vector<std::string> fmts;
        if (py::isinstance<py::str>(formats)) {
          std::string f = formats.cast<std::string>(), item;
          for (char c : f + ",")
            if (c == ',') {
              if (!item.empty()) fmts.push_back(item);
              item.clear();
            } else if (c != ' ') {
              item += c;
            }
        } else if (!formats.is_none()) {
          for (const auto& f : formats) fmts.push_back(py::str(f).cast<std::string>());
        }
        if (!r.run.run) throw py::value_error("rsim.plot: this result was read from a result folder (a merged sharded run): its figures are in that folder");
        std::vector<std::string> written;
        {
          py::gil_scoped_release unlocked;
          written = rsim::plot_run(r.run, out, fmts, style);
        }
        return written;
      },
      py::arg("result"), py::arg("out"), py::kw_only(), py::arg("formats") = py::none(), py::arg("style") = "",
      "Write the figures `rsim run` draws for this result (the scenario's plots, else the default ones) and report.md into\n"
      "the folder `out`; formats: 'png,svg' or a list (default png and svg), style: screen, paper, paper-wide or slides.\n"
      "Returns the names of the files written.");
  m.def(
      "schema", [](const std::string& what) {
        if (what == "platform") return rsim::platform_schema();
        if (what != "scenario") throw py::value_error("schema(what): 'scenario' or 'platform'");
        return rsim::scenario_schema(rsim::builtin_ops(), rsim::plots::plottable_columns());
      },
      py::arg("what") = "scenario", "The JSON Schema text of `rsim schema` / `rsim schema platform`.");
}
