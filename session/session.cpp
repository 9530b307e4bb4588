#include "session/session.hpp"

#include <algorithm>
#include <fstream>

#include "engine/output/output.hpp"
#include "importers/onnx_import.hpp"
#include "plots/charts.hpp"
#include "plots/collect.hpp"
#include "plots/report.hpp"
#include "scripting/lua_expr.hpp"
#include "scripting/lua_host.hpp"
#include "serving/serve.hpp"

namespace fs = std::filesystem;

namespace rsim {

// The scenario's `plots:` section, checked before anything is evaluated.
std::vector<plots::PlotSpec> load_plot_specs(const Scenario& s) {
  if (s.plots.is_null()) return {};
  Diags d;
  auto specs = plots::parse_plot_specs(s.plots, sweep_names(s.sweep), d);
  plots::apply_figure_defaults(specs, s.settings, d);
  d.throw_if_any();
  return specs;
}

// How every command evaluates a scenario as `rsim run` does: its scripts' operators, efficiency
// model and metrics, Lua expressions, the model zoo, and onnx: entries.
RunOptions scenario_run_options(const ScriptSetup& scripts) {
  RunOptions opt;
  opt.ops = &scripts.ops;
  opt.make_hooks = scripts.make_hooks;
  opt.make_evaluator = make_lua_evaluator;
  opt.model_dirs = model_dirs();
  opt.importer = make_onnx_importer();
  return opt;
}

namespace {

fs::path g_anchor;  // set_data_anchor: the folder of the binary that embeds rsim (the Python module)

// The folder of the running executable (empty if /proc/self/exe cannot be read).
fs::path exe_dir() {
  if (!g_anchor.empty()) return g_anchor;
  std::error_code ec;
  fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  return ec ? fs::path() : exe.parent_path();
}

}  // namespace

// The source tree, only when rsim runs from its build folder: CMake writes a marker file
// `rsim-build-tree` (holding the source path) beside the binaries of a build tree. `cmake --install`
// does not install it, so an installed rsim never looks into the sources.
std::filesystem::path build_tree_source() {
  fs::path dir = exe_dir();
  if (dir.empty()) return {};
  for (const fs::path& marker : {dir / "rsim-build-tree", dir.parent_path() / "rsim-build-tree"}) {
    std::ifstream in(marker);
    std::string src;
    if (in && std::getline(in, src) && !src.empty()) return fs::path(src);
  }
  return {};
}

// <prefix>/share/rsim for an installed binary (<prefix>/bin/rsim), or beside the folder of a module
// that is itself the prefix (pip's rsim/_rsim.so beside rsim/share/rsim).
std::filesystem::path installed_data() {
  fs::path dir = exe_dir();
  if (dir.empty()) return {};
  std::error_code ec;
  if (fs::path beside = dir / "share" / "rsim"; !g_anchor.empty() && fs::is_directory(beside, ec)) return beside;
  return dir.parent_path() / "share" / "rsim";
}

void set_data_anchor(const std::string& dir) { g_anchor = dir; }

struct RunArtifacts {
  Scenario scenario;
  RunResult result;
};

namespace {

RunTables tables_of(Scenario s, const std::vector<std::pair<std::string, std::string>>& sets, const std::string& hw_dir, int jobs,
                    const std::function<bool()>& should_stop) {
  apply_overrides(s, sets);
  load_plot_specs(s);  // a bad `plots:` section fails here as it does in `rsim run`
  Catalog catalog(find_hardware_dir(hw_dir));
  ScriptSetup scripts = setup_scripts(s);
  RunOptions opt = scenario_run_options(scripts);
  opt.jobs = std::clamp(jobs, 1, 256);
  opt.should_stop = should_stop;
  auto a = std::make_shared<RunArtifacts>();
  a->result = run_scenario(s, catalog, opt);
  RunTables t{results_csv(a->result, s), summary_csv(a->result, s), kernels_csv(a->result), {}, {}, {}, nullptr};
  if (!s.serving.is_null()) {  // the request-level simulation, as `rsim run` writes its tables
    serving::ServingTables st = serving::serve_scenario(s, catalog, opt);
    t.requests_csv = std::move(st.requests_csv), t.serving_csv = std::move(st.serving_csv), t.timeline_csv = std::move(st.timeline_csv);
  }
  a->scenario = std::move(s);
  t.run = std::move(a);
  return t;
}

}  // namespace

RunTables run_tables(const std::string& path, const std::vector<std::pair<std::string, std::string>>& sets, const std::string& hw_dir, int jobs,
                     const std::function<bool()>& should_stop) {
  return tables_of(load_scenario(path), sets, hw_dir, jobs, should_stop);
}

RunTables run_tables_text(const std::string& yaml, const std::string& name, const std::vector<std::pair<std::string, std::string>>& sets,
                          const std::string& hw_dir, int jobs, const std::function<bool()>& should_stop) {
  return tables_of(parse_scenario(yaml, name), sets, hw_dir, jobs, should_stop);
}

std::vector<std::string> plot_run(const RunTables& run, const std::string& dir, const std::vector<std::string>& formats, const std::string& style) {
  if (!run.run) throw ConfigError(SourceLoc{}, "this result holds no run to draw");
  const Scenario& s = run.run->scenario;
  const RunResult& r = run.run->result;
  plots::RenderOptions ropt;
  if (!formats.empty()) {
    ropt.formats.clear();
    for (const auto& f : formats) {
      if (f == "png") ropt.formats.push_back(plots::Format::PNG);
      else if (f == "svg") ropt.formats.push_back(plots::Format::SVG);
      else if (f == "pdf") ropt.formats.push_back(plots::Format::PDF);
      else throw ConfigError(SourceLoc{}, "format '" + f + "': choose png, svg or pdf");
    }
  }
  if (!style.empty() && style != "screen" && style != "paper" && style != "paper-wide" && style != "slides")
    throw ConfigError(SourceLoc{}, "style '" + style + "': choose screen, paper, paper-wide or slides");
  std::vector<plots::PlotSpec> specs = load_plot_specs(s);
  if (specs.empty()) {
    specs = plots::default_plot_specs(r, s);
    Diags d;
    plots::apply_figure_defaults(specs, s.settings, d);
    d.throw_if_any();
  }
  if (!style.empty())
    for (auto& sp : specs) sp.style = style, sp.given = {"style"}, sp.physical = false;
  std::vector<std::pair<std::string, std::vector<plots::Format>>> figures;
  std::vector<plots::OutputFile> files = plots::render_figures(r, s, specs, ropt, figures);
  files.push_back({"report.md", plots::report_markdown(r, s, figures)});
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) throw ConfigError(SourceLoc{}, "cannot create '" + dir + "': " + ec.message());
  std::vector<std::string> written;
  for (const auto& f : files) {
    write_file_atomic((fs::path(dir) / f.name).string(), f.bytes);
    written.push_back(f.name);
  }
  return written;
}

// The model zoo shipped with rsim, for scenarios outside the source tree.
std::vector<std::string> model_dirs() {
  std::vector<std::string> d;
  if (const char* env = std::getenv("RSIM_MODELS"); env && *env) d.push_back(env);
  std::error_code ec;
  if (fs::path data = installed_data(); !data.empty() && fs::is_directory(data / "models", ec)) d.push_back((data / "models").string());
  if (fs::path src = build_tree_source(); !src.empty() && fs::is_directory(src / "scenarios" / "models", ec))
    d.push_back((src / "scenarios" / "models").string());
  return d;
}

std::string find_hardware_dir(const std::string& given) {
  if (!given.empty()) return given;
  if (const char* env = std::getenv("RSIM_HARDWARE"); env && *env) return env;
  std::error_code ec;
  if (fs::path data = installed_data(); !data.empty() && fs::is_directory(data / "hardware", ec)) return (data / "hardware").string();
  if (fs::path src = build_tree_source(); !src.empty() && fs::is_directory(src / "hardware", ec)) return (src / "hardware").string();
  return "hardware";
}

}  // namespace rsim
