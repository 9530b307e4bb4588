#include "measure/measure_run.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <map>

#include <unistd.h>

#include "engine/output/output.hpp"
#include "engine/model/units.hpp"
#include "measure/calibrate.hpp"
#include "measure/probe_figures.hpp"
#include "plots/draw.hpp"

namespace rsim::measure {

std::pair<long long, long long> window_padding(long long in, long long out, long long k, long long s, long long d, long long begin_hint) {
  long long eff = d * (k - 1) + 1;
  long long total = (out - 1) * s + eff - in;
  long long begin = begin_hint >= 0 ? begin_hint : std::max(0LL, total) / 2;
  return {begin, total - begin};
}

void use_platform(Scenario& s, const std::string& platform) {
  bool is_file = platform.find('/') != std::string::npos || (platform.size() > 5 && platform.substr(platform.size() - 5) == ".yaml");
  if (is_file) {
    CNode node = load_yaml_file(platform);
    s.platforms = {node};
  } else {
    s.platforms = {CNode::make_scalar(platform)};
  }
}

void set_memory_level(Scenario& s, const std::string& level) { set_setting(s, "memory_level", level); }

namespace {

// The networks of one point, built as evaluate_point builds them (without graph passes).
std::vector<Network> point_networks(const Scenario& s, const Point& p, EvalContext& ctx) {
  Diags d;
  Env env = p.bindings;
  for (const auto& [name, node] : s.vars) env.emplace_back(name, substitute(node.scalar, env, ctx.ev, node.loc));
  const Settings settings = point_settings(s, env, ctx.ev, d);
  BuildOptions bo{ctx.ops, ctx.ev, settings.dtype, settings.flops_per_mac};
  bo.dtype_given = settings.dtype_given;
  std::vector<Network> nets;
  for (const auto& raw : s.networks) {
    NetworkSource src = resolve_network(raw, env, ctx, d);
    nets.push_back(build_network(src.node, src.env, bo, d));
  }
  d.throw_if_any();
  return nets;
}

std::string short_num(double v, const char* unit) { return si(v, unit, 3); }

}  // namespace

MeasureResult measure_scenario(const Scenario& s, const Catalog& catalog, const RunOptions& opt, const TimingOptions& topt,
                               const std::function<void(size_t, size_t)>& progress) {
  MeasureResult m;
  m.backend = timing_backend();
  m.run = run_scenario(s, catalog, opt);
  const OpRegistry& ops = opt.ops ? *opt.ops : builtin_ops();
  PlatformCache cache(catalog);
  std::vector<std::string> dirs = {(std::filesystem::path(s.path).parent_path() / "models").string()};
  dirs.insert(dirs.end(), opt.model_dirs.begin(), opt.model_dirs.end());
  ModelLibrary models(dirs);
  std::unique_ptr<ExprEvaluator> ev = opt.make_evaluator();
  // the scenario's scripts, loaded on this thread: building the networks again calls their
  // operators' rules (LuaHost::current), as the run's workers did
  std::unique_ptr<ScriptHooks> hooks = opt.make_hooks ? opt.make_hooks() : nullptr;
  EvalContext ctx{ops, cache, *ev, hooks.get(), &models};
  size_t total = 0, done = 0;
  for (const auto& pr : m.run.results) total += pr.rows.size();
  for (size_t pi = 0; pi < m.run.results.size(); ++pi) {
    const PointResult& pr = m.run.results[pi];
    std::vector<Network> nets = point_networks(s, m.run.points[pi], ctx);
    std::map<std::pair<std::string, std::string>, const Layer*> by_name;
    for (const Network& n : nets)
      for (const Layer& L : n.layers) by_name[{n.name, L.name}] = &L;
    for (const Row& row : pr.rows) {
      MeasuredRow mr;
      auto it = by_name.find({row.network, row.layer});
      if (it == by_name.end()) {
        mr.timing.why_not = "not in the network as written (made by a graph pass)";
      } else {
        const Layer& L = *it->second;
        mr.channels_per_group = channels_per_group(L);
        // a layer whose tensors need more than half this machine's memory is not run: oneDNN
        // would page or be killed (a relu on [5, 10^9] asked for three 20 GB mappings)
        const double need = L.cost.input_total() + L.cost.output_total() + L.cost.weight_bytes;
        const double ram = static_cast<double>(::sysconf(_SC_PHYS_PAGES)) * static_cast<double>(::sysconf(_SC_PAGESIZE));
        if (topt.max_bytes > 0 && need > topt.max_bytes) {
          char b[160];
          std::snprintf(b, sizeof b, "its tensors need %.3g GB, more than --max-memory's %.3g GB", need / 1e9, topt.max_bytes / 1e9);
          mr.timing.why_not = b;
        } else if (topt.max_bytes <= 0 && ram > 0 && need > ram / 2) {
          char b[160];
          std::snprintf(b, sizeof b, "its tensors need %.3g GB, more than half of this machine's %.3g GB", need / 1e9, ram / 1e9);
          mr.timing.why_not = b;
        } else {
          mr.timing = time_layer(L, topt);
        }
        if (mr.timing.ran && mr.timing.out_shapes != L.out_shapes) {
          std::string a, b;
          for (const auto& sh : mr.timing.out_shapes) a += (a.empty() ? "" : ";") + shape_str(sh);
          for (const auto& sh : L.out_shapes) b += (b.empty() ? "" : ";") + shape_str(sh);
          m.findings.push_back(row.network + "/" + row.layer + ": oneDNN computed output " + a + " but rsim counted " + b);
        }
      }
      if (mr.timing.ran) {
        ++m.ran;
        mr.measured_time_s = mr.timing.median_s;
        mr.measured_flops_per_s = row.cost.flops / mr.measured_time_s;
        mr.measured_bytes_per_s = row.bytes / mr.measured_time_s;
        mr.measured_over_bound = row.theoretical.time_s > 0 ? mr.measured_time_s / row.theoretical.time_s : INFINITY;
        mr.bound_s = row.theoretical.time_s;
        if (row.theoretical.time_s > 0 && mr.measured_time_s < row.theoretical.time_s * (1 - kBoundSlack)) {
          char b[64];
          std::snprintf(b, sizeof b, "%.2f", mr.measured_over_bound);
          m.findings.push_back(row.network + "/" + row.layer + " (" + row.op + "): measured " + short_num(mr.measured_time_s, "s") +
                               " is below its roofline bound " + short_num(row.theoretical.time_s, "s") + " (" + b + "×, " +
                               bound_name(row.theoretical.bound) + "-bound on " +
                               (row.theoretical.bound == Bound::Compute ? row.compute_roof : row.memory_level) +
                               "): a wrong count, a wrong roof, or caches the model ignores");
        }
      } else {
        ++m.skipped;
      }
      m.rows.push_back(std::move(mr));
      if (progress) progress(++done, total);
    }
  }
  std::string roof = memory_roof_finding(m);
  if (!roof.empty()) m.findings.insert(m.findings.begin(), roof);
  return m;
}

std::string memory_roof_finding(const MeasureResult& m) {
  // the streaming layers (elementwise, normalization, copy) that ran memory-bound with a bound of
  // kMemoryRoofMinBound or more, by memory level, and those 3× or more below their bound
  static const std::vector<std::string> streaming_ops = [] {
    std::vector<std::string> v;
    for (const char* cls : {"elementwise", "normalization", "copy"})
      for (const auto& op : class_ops(cls)) v.push_back(op);
    return v;
  }();
  std::map<std::string, std::pair<size_t, std::vector<double>>> by_level;  // level → (counted, ratios ≥ 3)
  size_t counted = 0, slow = 0, k = 0;
  for (const PointResult& pr : m.run.results)
    for (const Row& row : pr.rows) {
      const MeasuredRow& mr = m.rows.at(k++);
      if (!mr.timing.ran || row.theoretical.bound != Bound::Memory || !(row.theoretical.time_s >= kMemoryRoofMinBound)) continue;
      if (std::find(streaming_ops.begin(), streaming_ops.end(), row.op) == streaming_ops.end()) continue;
      ++counted;
      auto& e = by_level[row.memory_level];
      ++e.first;
      if (mr.measured_over_bound >= kMemoryRoofSlowdown) {
        ++slow;
        e.second.push_back(mr.measured_over_bound);
      }
    }
  if (slow < 2 || 4 * slow <= counted) return {};
  std::string s = "the platform's memory roof looks wrong; probe again: " + std::to_string(slow) + " of " + std::to_string(counted) +
                  " memory-bound streaming layers (elementwise, normalization, copy; bound 20 µs or more) ran 3× or more below their bound";
  for (auto& [level, e] : by_level) {
    if (e.second.empty()) continue;
    std::sort(e.second.begin(), e.second.end());
    char b[64];
    std::snprintf(b, sizeof b, "%.3g", e.second[e.second.size() / 2]);
    s += "; on " + (level.empty() ? std::string("memory") : level) + ": " + std::to_string(e.second.size()) + " of " + std::to_string(e.first) +
         ", median " + b + "× the bound";
  }
  return s;
}

const std::vector<std::string>& measured_columns() {
  static const std::vector<std::string> c = {"measured_time_s",      "measured_min_s",      "measured_max_s",      "measured_reps",
                                             "measured_flops_per_s", "measured_bytes_per_s", "measured_over_bound", "measured_primitive",
                                             "measured_impl",        "measured_note",        "channels_per_group",   "measured_execution",
                                             "beats_bound"};
  return c;
}

std::string measured_csv(const MeasureResult& m, const std::string& text) {
  std::string out;
  size_t pos = 0, line_no = 0;
  while (pos < text.size()) {
    size_t nl = text.find('\n', pos);
    if (nl == std::string::npos) nl = text.size();
    std::string line = text.substr(pos, nl - pos);
    pos = nl + 1;
    if (line_no == 0) {
      for (const auto& c : measured_columns()) line += "," + c;
    } else if (line_no - 1 < m.rows.size()) {
      const MeasuredRow& r = m.rows[line_no - 1];
      if (r.timing.ran) {
        for (double v : {r.measured_time_s, r.timing.min_s, r.timing.max_s, static_cast<double>(r.timing.reps), r.measured_flops_per_s,
                         r.measured_bytes_per_s, r.measured_over_bound})
          line += "," + num_text(v);
      } else {
        line += ",,,,0,,,";
      }
      line += "," + csv_escape(r.timing.primitive) + "," + csv_escape(r.timing.impl) + "," + csv_escape(r.timing.why_not) + "," +
              num_text(r.channels_per_group);
      // measured_execution: a oneDNN primitive run alone, again and again (no host or launch between
      // runs): empty; beats_bound: the fastest run below the theoretical bound (the bound is not one)
      line += ",";
      if (r.timing.ran) line += r.timing.min_s < r.bound_s ? ",true" : ",false";
      else line += ",";
    }
    out += line + "\n";
    ++line_no;
  }
  return out;
}

plots::Figure measured_roofline(const MeasureResult& m, const std::string& title) {
  plots::Figure f;
  f.title = title;
  f.width = 720;
  f.height = 480;
  const PointResult& pr = m.run.results.front();
  const Platform& pl = *pr.platforms.front();
  f.subtitle = pl.title.empty() ? pl.name : pl.title;
  f.subtitle += ": filled = roofline bound (predicted), hollow = measured (" + m.backend + ")";
  // op classes, coloured
  auto op_class = [](const std::string& op) -> std::string {
    if (op.find("conv") != std::string::npos) return op == "depthwise_conv2d" ? "depthwise conv" : "conv";
    if (op == "linear" || op == "matmul") return "matmul / linear";
    if (op.find("pool") != std::string::npos) return "pooling";
    if (op == "batchnorm" || op == "layernorm" || op == "softmax") return "normalisation / softmax";
    if (op == "concat" || op == "transpose" || op == "permute" || op == "reshape_copy" || op == "slice" || op == "split") return "copies";
    return "elementwise";
  };
  std::vector<std::string> classes;
  double xmin = INFINITY, xmax = 0, ymin = INFINITY, ymax = 0;
  size_t k = 0;
  for (const auto& res : m.run.results)
    for (const Row& row : res.rows) {
      const MeasuredRow& mr = m.rows[k++];
      if (!mr.timing.ran || !(row.cost.flops > 0) || !(row.bytes > 0)) continue;
      std::string c = op_class(row.op);
      size_t ci = std::find(classes.begin(), classes.end(), c) - classes.begin();
      if (ci == classes.size()) classes.push_back(c);
      plots::Color col = plots::palette(ci);
      double x = row.theoretical.intensity;
      plots::Point pred;
      pred.at = {x, row.theoretical.attainable_flops_per_s};
      pred.fill = col;
      pred.marker = plots::marker_cycle(ci);
      plots::Point meas = pred;
      meas.at = {x, mr.measured_flops_per_s};
      meas.hollow = true;
      plots::Line join;
      join.pts = {pred.at, meas.at};
      join.style = plots::LineStyle{plots::Color{col.r, col.g, col.b, 0.6}, 0.8, plots::Dash::Solid};
      f.lines.push_back(join);
      f.points.push_back(pred);
      f.points.push_back(meas);
      xmin = std::min(xmin, x), xmax = std::max(xmax, x);
      ymin = std::min({ymin, pred.at.y, meas.at.y}), ymax = std::max({ymax, pred.at.y, meas.at.y});
    }
  // roofs: the compute roof of the first row's dtype, and every memory level
  const ComputeRoof* roof = pr.rows.empty() ? nullptr : pl.roof_for(pr.rows.front().dtype);
  double peak = roof ? roof->peak_flops_per_s : ymax;
  if (!(xmax > 0)) xmin = 0.1, xmax = 100, ymin = peak / 100, ymax = peak;
  f.x = plots::Axis{plots::Scale::Log, std::pow(10.0, std::floor(std::log10(xmin / 2))), std::pow(10.0, std::ceil(std::log10(xmax * 2))),
                    "Arithmetic intensity, " + std::string(memory_model_name(pr.settings.memory_model)) + " [FLOP/byte]", "", {}, {}};
  f.y = plots::Axis{plots::Scale::Log, std::pow(10.0, std::floor(std::log10(ymin / 2))), std::pow(10.0, std::ceil(std::log10(std::max(ymax, peak) * 1.5))),
                    "Performance [FLOP/s]", "FLOP/s", {}, {}};
  if (roof) {
    plots::Line l;
    l.pts = {{f.x.min, peak}, {f.x.max, peak}};
    l.style = plots::LineStyle{plots::rgb(0x444444), 1.8, plots::Dash::Solid};
    l.label = roof->name + " " + si(peak, "FLOP/s", 3);
    l.label_at = 0.95;
    f.lines.push_back(l);
  }
  std::vector<std::pair<std::string, double>> levels;
  for (const auto& lv : pl.memory) levels.emplace_back(lv.name, lv.bandwidth_bytes_per_s);
  std::vector<std::string> labels = diagonal_labels(levels);
  size_t labelled = 0;
  for (size_t li = 0; li < pl.memory.size(); ++li) {
    double bw = levels[li].second;
    plots::Line l;
    double ridge = peak / bw;
    l.pts = {{f.x.min, bw * f.x.min}, {std::min(ridge, f.x.max), std::min(peak, bw * f.x.max)}};
    l.style = plots::LineStyle{plots::rgb(0x444444), li == 0 ? 1.8 : 1.0, li == 0 ? plots::Dash::Solid : plots::dash_cycle(li)};
    l.label = labels[li];
    l.label_at = 0.25 + 0.15 * static_cast<double>(labelled % 4);
    if (!l.label.empty()) ++labelled;
    f.lines.push_back(l);
  }
  for (size_t ci = 0; ci < classes.size(); ++ci) {
    plots::LegendEntry e;
    e.text = classes[ci];
    e.has_marker = true;
    e.marker = plots::marker_cycle(ci);
    e.fill = plots::palette(ci);
    f.legend.push_back(e);
  }
  return f;
}

}  // namespace rsim::measure
