#include "engine/output.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <stdexcept>

#include "engine/config.hpp"
#include "engine/units.hpp"

namespace rsim {

std::string csv_escape(const std::string& s) {
  if (s.find_first_of(",\"\n\r") == std::string::npos) return s;
  std::string out = "\"";
  for (char c : s) {
    if (c == '"') out += '"';
    out += c;
  }
  return out + "\"";
}

std::string json_escape(const std::string& s) {
  std::string out = "\"";
  for (unsigned char c : s) {
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      default:
        if (c < 0x20) {
          char buf[8];
          std::snprintf(buf, sizeof buf, "\\u%04x", c);
          out += buf;
        } else {
          out += static_cast<char>(c);
        }
    }
  }
  return out + "\"";
}

std::string num_text(double v) { return format_number(v); }

std::string sweep_column(const std::string& var, const std::vector<std::string>& columns) {
  return std::find(columns.begin(), columns.end(), var) == columns.end() ? var : "sweep." + var;
}

static std::string json_num(double v) {
  // JSON has no infinity: null, with the convention stated in the file
  if (!std::isfinite(v)) return "null";
  return format_number(v);
}

const std::vector<std::string>& results_columns() {
  static const std::vector<std::string> c = {
      "point", "platform", "network", "layer", "op", "dtype", "input_shape", "output_shape", "macs", "flops", "macs_executed", "flops_executed", "mac_count", "params",
      "weight_bytes", "input_bytes", "output_bytes", "bytes", "intensity", "mac_intensity", "compute_roof", "memory_level",
      "peak_flops_per_s", "bandwidth_bytes_per_s", "attainable_flops_per_s", "time_s", "bound", "derated_peak_flops_per_s",
      "derated_bandwidth_bytes_per_s", "derated_attainable_flops_per_s", "derated_time_s", "derated_bound", "kernel", "efficiency_compute",
      "efficiency_bandwidth", "flops_per_mac", "memory_model"};
  return c;
}

const std::vector<std::string>& summary_columns() {
  static const std::vector<std::string> c = {
      "point", "platform", "network", "dtype", "layers", "kernels", "macs", "flops", "params", "bytes", "intensity", "time_s", "achieved_flops_per_s",
      "memory_bound_layers", "compute_bound_layers", "derated_time_s", "derated_achieved_flops_per_s",
      "derated_memory_bound_layers", "derated_compute_bound_layers", "batch", "derated_time_per_sample_s", "flops_per_mac", "memory_model"};
  return c;
}

// header with the sweep variables right after `point`; a variable named like a column of the
// table (a sweep over `batch` or `dtype`) is written `sweep.NAME`, so no header appears twice
static std::string header(const std::vector<std::string>& cols, const std::vector<std::string>& vars) {
  std::string h;
  for (size_t i = 0; i < cols.size(); ++i) {
    h += (i ? "," : "") + cols[i];
    if (i == 0)
      for (const auto& v : vars) h += "," + csv_escape(sweep_column(v, cols));
  }
  return h + "\n";
}

static std::string var_cells(const RunResult& r, size_t point) {
  std::string s;
  for (const auto& [k, v] : r.points[point].bindings) s += "," + csv_escape(v);
  return s;
}

std::string results_csv(const RunResult& r, const Scenario&) {
  std::string out = header(results_columns(), r.var_names);
  if (!r.metric_names.empty()) {  // scripts' derived metrics close each row
    out.pop_back();
    for (const auto& m : r.metric_names) out += "," + csv_escape(m);
    out += "\n";
  }
  for (size_t pi = 0; pi < r.results.size(); ++pi) {
    const PointResult& pr = r.results[pi];
    std::string conv = "," + num_text(pr.settings.flops_per_mac) + "," + memory_model_name(pr.settings.memory_model);
    for (const Row& row : pr.rows) {
      std::string line = std::to_string(row.point) + var_cells(r, pi);
      for (const std::string* s : {&row.platform, &row.network, &row.layer, &row.op}) line += "," + csv_escape(*s);
      line += "," + std::string(dtype_name(row.dtype)) + "," + row.input_shapes + "," + row.output_shapes;
      double mac_i = row.bytes > 0 ? row.cost.macs / row.bytes : (row.cost.macs > 0 ? INFINITY : 0);
      line += "," + num_text(row.cost.macs) + "," + num_text(row.cost.flops) + "," + num_text(row.cost.macs_executed) + "," +
              num_text(row.cost.flops_executed) + (pr.settings.executed_work ? ",executed" : ",conventional");
      for (double v : {row.cost.params, row.cost.weight_bytes, row.cost.input_total(), row.cost.output_total(), row.bytes, row.theoretical.intensity, mac_i})
        line += "," + num_text(v);
      line += "," + csv_escape(row.compute_roof) + "," + csv_escape(row.memory_level);
      for (const RoofPoint* rp : {&row.theoretical, &row.derated}) {
        for (double v : {rp->peak_flops_per_s, rp->bandwidth_bytes_per_s, rp->attainable_flops_per_s, rp->time_s})
          line += "," + num_text(v);
        line += std::string(",") + bound_name(rp->bound);
      }
      line += "," + csv_escape(row.kernel) + "," + num_text(row.efficiency.compute) + "," + num_text(row.efficiency.bandwidth) + conv;
      for (double m : row.metrics) line += "," + num_text(m);
      out += line + "\n";
    }
  }
  return out;
}

std::string summary_csv(const RunResult& r, const Scenario&) {
  std::string out = header(summary_columns(), r.var_names);
  for (size_t pi = 0; pi < r.results.size(); ++pi) {
    const PointResult& pr = r.results[pi];
    for (const SummaryRow& s : pr.summary) {
      std::string line = std::to_string(s.point) + var_cells(r, pi) + "," + csv_escape(s.platform) + "," + csv_escape(s.network) + "," +
                         dtype_name(pr.settings.dtype);
      for (double v : {s.layers, s.kernels, s.macs, s.flops, s.params, s.bytes, s.intensity, s.time_s, s.achieved_flops_per_s})
        line += "," + num_text(v);
      line += "," + std::to_string(s.memory_bound) + "," + std::to_string(s.compute_bound);
      line += "," + num_text(s.derated_time_s) + "," + num_text(s.derated_achieved_flops_per_s);
      line += "," + std::to_string(s.derated_memory_bound) + "," + std::to_string(s.derated_compute_bound);
      line += "," + num_text(s.batch) + "," + num_text(s.derated_time_s / s.batch);
      line += "," + num_text(pr.settings.flops_per_mac) + "," + memory_model_name(pr.settings.memory_model);
      out += line + "\n";
    }
  }
  return out;
}

const std::vector<std::string>& kernels_columns() {
  static const std::vector<std::string> c = {
      "point", "platform", "network", "kernel", "layers", "layer_names", "flops", "bytes", "intensity", "compute_time_s", "memory_time_s",
      "launch_overhead_s", "time_s", "bound", "derated_compute_time_s", "derated_memory_time_s", "derated_time_s", "derated_bound"};
  return c;
}

std::string kernels_csv(const RunResult& r) {
  std::string out = header(kernels_columns(), r.var_names);
  for (size_t pi = 0; pi < r.results.size(); ++pi) {
    const PointResult& pr = r.results[pi];
    struct K {
      const Row* first;
      std::string names;
      double layers = 0, flops = 0, bytes = 0, c = 0, m = 0, dc = 0, dm = 0;
    };
    std::vector<K> ks;  // in order of first layer, per platform and network
    for (const Row& row : pr.rows) {
      if (row.kernel.empty()) continue;  // a view or an eliminated layer runs no kernel
      auto it = std::find_if(ks.begin(), ks.end(), [&](const K& k) {
        return k.first->platform == row.platform && k.first->network == row.network && k.first->kernel == row.kernel;
      });
      if (it == ks.end()) it = ks.insert(ks.end(), K{&row, ""});
      it->names += (it->names.empty() ? "" : ";") + row.layer;
      it->layers += 1, it->flops += row.cost.flops, it->bytes += row.bytes;
      it->c += row.theoretical.compute_time_s, it->m += row.theoretical.memory_time_s;
      it->dc += row.derated.compute_time_s, it->dm += row.derated.memory_time_s;
    }
    for (const K& k : ks) {
      double overhead = 0;
      for (const auto& pl : pr.platforms)
        if (pl.name == k.first->platform) overhead = pl.launch_overhead_s;
      auto bound = [](double c, double m) { return c == 0 && m == 0 ? "none" : m >= c ? "memory" : "compute"; };
      double inten = k.flops > 0 ? (k.bytes > 0 ? k.flops / k.bytes : INFINITY) : 0;
      std::string line = std::to_string(k.first->point) + var_cells(r, pi) + "," + csv_escape(k.first->platform) + "," + csv_escape(k.first->network) +
                         "," + csv_escape(k.first->kernel) + "," + num_text(k.layers) + "," + csv_escape(k.names);
      for (double v : {k.flops, k.bytes, inten, k.c, k.m, overhead, std::max(k.c, k.m) + overhead}) line += "," + num_text(v);
      line += std::string(",") + bound(k.c, k.m);
      for (double v : {k.dc, k.dm, std::max(k.dc, k.dm) + overhead}) line += "," + num_text(v);
      line += std::string(",") + bound(k.dc, k.dm);
      out += line + "\n";
    }
  }
  return out;
}

namespace {

class Json {
 public:
  std::string out;
  void raw(const std::string& s) { out += s; }
  void key(const std::string& k) {
    comma();
    out += json_escape(k) + ":";
    fresh_ = true;
  }
  void str(const std::string& v) { value(json_escape(v)); }
  void num(double v) { value(json_num(v)); }
  void boolean(bool b) { value(b ? "true" : "false"); }
  void open(char c) {
    comma();
    out += c;
    fresh_ = true;
  }
  void close(char c) {
    out += c;
    fresh_ = false;
  }

 private:
  bool fresh_ = true;
  void comma() {
    if (!fresh_) out += ",";
    fresh_ = false;
  }
  void value(const std::string& v) {
    comma();
    out += v;
  }
};

void platform_json(Json& j, const Platform& p) {
  j.open('{');
  j.key("name"), j.str(p.name);
  j.key("title"), j.str(p.title);
  j.key("source"), j.str(p.source);
  j.key("compute");
  j.open('[');
  for (const auto& r : p.compute) {
    j.open('{');
    j.key("name"), j.str(r.name);
    j.key("dtypes");
    j.open('[');
    for (DType t : r.dtypes) j.str(dtype_name(t));
    j.close(']');
    j.key("peak_flops_per_s"), j.num(r.peak_flops_per_s);
    j.key("derivation"), j.str(r.derivation);
    j.key("derated_peak_flops_per_s"), j.num(r.derated_flops_per_s);
    j.key("derated_derivation"), j.str(r.derated_derivation);
    j.close('}');
  }
  j.close(']');
  j.key("memory");
  j.open('[');
  for (const auto& m : p.memory) {
    j.open('{');
    j.key("name"), j.str(m.name);
    j.key("bandwidth_bytes_per_s"), j.num(m.bandwidth_bytes_per_s);
    j.key("derivation"), j.str(m.derivation);
    j.key("derated_bandwidth_bytes_per_s"), j.num(m.derated_bandwidth_bytes_per_s);
    j.key("derated_derivation"), j.str(m.derated_derivation);
    if (m.size_bytes > 0) j.key("size_bytes"), j.num(m.size_bytes);
    j.close('}');
  }
  j.close(']');
  j.close('}');
}

void roof_json(Json& j, const char* name, const RoofPoint& r) {
  j.key(name);
  j.open('{');
  j.key("peak_flops_per_s"), j.num(r.peak_flops_per_s);
  j.key("bandwidth_bytes_per_s"), j.num(r.bandwidth_bytes_per_s);
  j.key("attainable_flops_per_s"), j.num(r.attainable_flops_per_s);
  j.key("compute_time_s"), j.num(r.compute_time_s);
  j.key("memory_time_s"), j.num(r.memory_time_s);
  j.key("time_s"), j.num(r.time_s);
  j.key("bound"), j.str(bound_name(r.bound));
  j.close('}');
}

}  // namespace

std::string results_json(const RunResult& r, const RunInfo& info) {
  Json j;
  const Scenario& s = *info.scenario;
  j.open('{');
  j.key("rsim_version"), j.str(info.version);
  j.key("scenario");
  j.open('{');
  j.key("name"), j.str(s.name);
  j.key("path"), j.str(s.path);
  j.key("hash"), j.str("fnv1a64:" + s.hash);
  j.key("description"), j.str(s.description);
  j.close('}');
  j.key("conventions");
  j.open('{');
  j.key("flops"), j.str("FLOPs = flops_per_mac × MACs for multiply-accumulate operators, plus each operator's stated per-element FLOPs (`rsim ops NAME`)");
  j.key("bytes"), j.str("memory_model of each point: weights+outputs, or inputs+weights+outputs; per-tensor bytes are given so either can be recomputed");
  j.key("intensity"), j.str("flops / bytes in FLOP/byte; null when bytes = 0 and flops > 0 (infinite intensity)");
  j.key("time"), j.str("time_s = max(flops / peak, bytes / bandwidth) per layer, alone; network time_s = sum over kernels (a layer, or a fused group: "
                      "see kernels.csv) of max(sum of compute times, sum of memory times) of its layers, plus the platform's launch_overhead per kernel");
  j.key("units"), j.str("SI: FLOP, byte, second; rates per second");
  j.close('}');
  j.key("sweep_variables");
  j.open('[');
  for (const auto& v : r.var_names) j.str(v);
  j.close(']');
  j.key("points");
  j.open('[');
  for (size_t pi = 0; pi < r.points.size(); ++pi) {
    const PointResult& pr = r.results[pi];
    j.open('{');
    j.key("index"), j.num(static_cast<double>(pi));
    j.key("bindings");
    j.open('{');
    for (const auto& [k, v] : r.points[pi].bindings) j.key(k), j.str(v);
    j.close('}');
    j.key("settings");
    j.open('{');
    j.key("dtype"), j.str(dtype_name(pr.settings.dtype));
    j.key("memory_model"), j.str(memory_model_name(pr.settings.memory_model));
    j.key("flops_per_mac"), j.num(pr.settings.flops_per_mac);
    j.key("memory_level"), j.str(pr.settings.memory_level.empty() ? "(first level of each platform)" : pr.settings.memory_level);
    j.close('}');
    j.key("platforms");
    j.open('[');
    for (const auto& p : pr.platforms) platform_json(j, p);
    j.close(']');
    j.key("summary");
    j.open('[');
    for (const auto& sm : pr.summary) {
      j.open('{');
      j.key("platform"), j.str(sm.platform);
      j.key("network"), j.str(sm.network);
      j.key("layers"), j.num(sm.layers);
      j.key("kernels"), j.num(sm.kernels);
      j.key("macs"), j.num(sm.macs);
      j.key("flops"), j.num(sm.flops);
      j.key("params"), j.num(sm.params);
      j.key("bytes"), j.num(sm.bytes);
      j.key("intensity"), j.num(sm.intensity);
      j.key("time_s"), j.num(sm.time_s);
      j.key("achieved_flops_per_s"), j.num(sm.achieved_flops_per_s);
      j.key("memory_bound_layers"), j.num(sm.memory_bound);
      j.key("compute_bound_layers"), j.num(sm.compute_bound);
      j.key("derated_time_s"), j.num(sm.derated_time_s);
      j.key("derated_achieved_flops_per_s"), j.num(sm.derated_achieved_flops_per_s);
      j.key("derated_memory_bound_layers"), j.num(sm.derated_memory_bound);
      j.key("derated_compute_bound_layers"), j.num(sm.derated_compute_bound);
      j.key("batch"), j.num(sm.batch);
      j.key("derated_time_per_sample_s"), j.num(sm.derated_time_s / sm.batch);
      j.close('}');
    }
    j.close(']');
    j.key("layers");
    j.open('[');
    for (const auto& row : pr.rows) {
      j.open('{');
      j.key("platform"), j.str(row.platform);
      j.key("network"), j.str(row.network);
      j.key("layer"), j.str(row.layer);
      j.key("op"), j.str(row.op);
      j.key("dtype"), j.str(dtype_name(row.dtype));
      j.key("input_shape"), j.str(row.input_shapes);
      j.key("output_shape"), j.str(row.output_shapes);
      j.key("macs"), j.num(row.cost.macs);
      j.key("flops"), j.num(row.cost.flops);
      j.key("params"), j.num(row.cost.params);
      j.key("weight_bytes"), j.num(row.cost.weight_bytes);
      j.key("input_bytes");
      j.open('[');
      for (double b : row.cost.input_bytes) j.num(b);
      j.close(']');
      j.key("output_bytes");
      j.open('[');
      for (double b : row.cost.output_bytes) j.num(b);
      j.close(']');
      j.key("bytes"), j.num(row.bytes);
      j.key("intensity"), j.num(row.theoretical.intensity);
      j.key("kernel"), j.str(row.kernel);
      j.key("compute_roof"), j.str(row.compute_roof);
      j.key("memory_level"), j.str(row.memory_level);
      roof_json(j, "theoretical", row.theoretical);
      roof_json(j, "derated", row.derated);
      j.key("efficiency");
      j.open('{');
      j.key("compute"), j.num(row.efficiency.compute);
      j.key("bandwidth"), j.num(row.efficiency.bandwidth);
      j.close('}');
      if (!row.metrics.empty()) {
        j.key("metrics");
        j.open('{');
        for (size_t k = 0; k < row.metrics.size() && k < r.metric_names.size(); ++k) j.key(r.metric_names[k]), j.num(row.metrics[k]);
        j.close('}');
      }
      j.close('}');
    }
    j.close(']');
    j.close('}');
  }
  j.close(']');
  j.close('}');
  return j.out + "\n";
}

namespace {

struct Table {
  std::vector<std::string> head;
  std::vector<std::vector<std::string>> rows;
  std::vector<bool> right;  // right-align numbers
  std::string render() const {
    std::vector<size_t> w(head.size());
    auto width = [](const std::string& s) {
      size_t n = 0;  // count UTF-8 code points
      for (unsigned char c : s) n += (c & 0xC0) != 0x80;
      return n;
    };
    for (size_t i = 0; i < head.size(); ++i) w[i] = width(head[i]);
    for (const auto& r : rows)
      for (size_t i = 0; i < r.size(); ++i) w[i] = std::max(w[i], width(r[i]));
    auto line = [&](const std::vector<std::string>& r) {
      std::string s;
      for (size_t i = 0; i < r.size(); ++i) {
        std::string pad(w[i] - width(r[i]), ' ');
        s += (i ? "  " : "") + (right[i] ? pad + r[i] : r[i] + (i + 1 < r.size() ? pad : ""));
      }
      return s + "\n";
    };
    std::string out = line(head);
    std::string rule;
    for (size_t i = 0; i < w.size(); ++i) rule += (i ? "  " : "") + std::string(w[i], '-');
    out += rule + "\n";
    for (const auto& r : rows) out += line(r);
    return out;
  }
};

std::string intensity_text(double v) {
  if (std::isinf(v)) return "inf";
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.3g", v);
  return buf;
}

}  // namespace

std::string terminal_table(const RunResult& r, size_t max_rows) {
  Table t;
  t.head = {"pt"};
  for (const auto& v : r.var_names) t.head.push_back(v);
  for (const char* h : {"platform", "network", "layer", "op", "FLOPs", "bytes", "FLOP/B", "attainable", "time", "bound", "derated time", "bound"})
    t.head.push_back(h);
  t.right.assign(t.head.size(), false);
  t.right[0] = true;
  for (size_t i = t.head.size() - 8; i < t.head.size(); ++i) t.right[i] = true;
  t.right[t.head.size() - 3] = false;
  t.right[t.head.size() - 1] = false;
  size_t total = 0, shown = 0;
  for (size_t pi = 0; pi < r.results.size(); ++pi)
    for (const Row& row : r.results[pi].rows) {
      ++total;
      if (shown >= max_rows) continue;
      ++shown;
      std::vector<std::string> cells = {std::to_string(row.point)};
      for (const auto& [k, v] : r.points[pi].bindings) cells.push_back(v);
      cells.insert(cells.end(), {row.platform, row.network, row.layer, row.op, si(row.cost.flops, "", 4), si(row.bytes, "B", 4),
                                 intensity_text(row.theoretical.intensity), si(row.theoretical.attainable_flops_per_s, "FLOP/s", 4),
                                 si(row.theoretical.time_s, "s", 4), bound_name(row.theoretical.bound), si(row.derated.time_s, "s", 4),
                                 bound_name(row.derated.bound)});
      t.rows.push_back(cells);
    }
  std::string out = t.render();
  if (total > shown) out += "... " + std::to_string(total - shown) + " more rows in results.csv\n";
  return out;
}

std::string terminal_summary(const RunResult& r, size_t max_rows) {
  Table t;
  t.head = {"pt"};
  for (const auto& v : r.var_names) t.head.push_back(v);
  for (const char* h : {"platform", "network", "FLOPs", "bytes", "FLOP/B", "kernels", "time", "derated time", "achieved", "mem/comp layers"})
    t.head.push_back(h);
  t.right.assign(t.head.size(), true);
  for (size_t i = 1 + r.var_names.size(); i < 3 + r.var_names.size(); ++i) t.right[i] = false;
  size_t total = 0;
  for (size_t pi = 0; pi < r.results.size(); ++pi)
    for (const SummaryRow& s : r.results[pi].summary) {
      if (total++ >= max_rows) continue;
      std::vector<std::string> cells = {std::to_string(s.point)};
      for (const auto& [k, v] : r.points[pi].bindings) cells.push_back(v);
      cells.insert(cells.end(), {s.platform, s.network, si(s.flops, "", 4), si(s.bytes, "B", 4), intensity_text(s.intensity),
                                 format_number(s.kernels), si(s.time_s, "s", 4), si(s.derated_time_s, "s", 4), si(s.achieved_flops_per_s, "FLOP/s", 4),
                                 std::to_string(s.memory_bound) + "/" + std::to_string(s.compute_bound)});
      t.rows.push_back(cells);
    }
  std::string out = t.render();
  if (total > max_rows) out += "... " + std::to_string(total - max_rows) + " more rows in summary.csv\n";
  return out;
}

void write_file_atomic(const std::string& path, const std::string& content) {
  std::string tmp = path + ".tmp";
  {
    std::ofstream f(tmp, std::ios::binary | std::ios::trunc);
    if (!f) throw std::runtime_error("cannot write '" + tmp + "'");
    f << content;
    f.flush();
    if (!f) {
      std::filesystem::remove(tmp);
      throw std::runtime_error("cannot write '" + tmp + "' (disk full?)");
    }
  }
  std::error_code ec;
  std::filesystem::rename(tmp, path, ec);
  if (ec) {
    std::filesystem::remove(tmp);
    throw std::runtime_error("cannot rename '" + tmp + "' to '" + path + "': " + ec.message());
  }
}

}  // namespace rsim
