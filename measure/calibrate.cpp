// rsim calibrate's inputs: the op classes and the measured CSVs (layers, networks) read into samples.
#include "measure/calibrate.hpp"
#include "measure/calibrate_detail.hpp"

#include <algorithm>
#include <array>
#include <cstdint>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <atomic>
#include <deque>
#include <set>
#include <thread>
#include <stdexcept>

namespace rsim::measure {

namespace detail {

const std::vector<std::pair<std::string, std::vector<std::string>>>& classes() {
  static const std::vector<std::pair<std::string, std::vector<std::string>>> c = {
      // one class for every convolution: channels per group (g) tells depthwise (g = 1), grouped
      // and dense ones apart, so a network's depthwise layers are predicted from grouped ones elsewhere
      {"conv", {"conv2d", "conv_transpose2d", "depthwise_conv2d"}},
      // swiglu: a gated MLP, three GEMMs and an elementwise product; the GEMMs carry its work
      {"matmul", {"linear", "matmul", "swiglu"}},
      // scaled dot-product attention (a fused kernel: no layer of the other classes runs like it)
      {"attention", {"attention"}},
      // windowed pooling reads each input under every window that covers it, a global pool makes
      // one reduction pass: measured here, oneDNN's max pools run at 6–7 % of the probed bandwidth
      // whatever their size, global ones at 24–42 %; one law over both bent with size (bandwidth
      // efficiency ∝ bytes^-0.58) and missed VGG-16's larger and smaller max pools by 2.5× and 5×
      {"pooling", {"max_pool2d", "avg_pool2d"}},
      {"global pooling", {"global_avg_pool", "adaptive_avg_pool2d"}},
      {"normalization", {"batchnorm", "layernorm", "rmsnorm", "softmax"}},
      // embedding: a gather of table rows; kv_cache: the new keys and values written into the cache
      {"copy", {"concat", "transpose", "permute", "reshape_copy", "slice", "split", "upsample", "embedding", "kv_cache"}},
      {"elementwise",
       {"relu", "relu6", "leaky_relu", "sigmoid", "tanh", "gelu", "silu", "hardswish", "hardsigmoid", "add", "sub", "mul", "div", "rope"}}};
  return c;
}

std::vector<std::string> split_csv_line(const std::string& line) {
  std::vector<std::string> out;
  std::string cur;
  bool q = false;
  for (size_t i = 0; i < line.size(); ++i) {
    char c = line[i];
    if (q) {
      if (c == '"' && i + 1 < line.size() && line[i + 1] == '"') cur += '"', ++i;
      else if (c == '"') q = false;
      else cur += c;
    } else if (c == '"') {
      q = true;
    } else if (c == ',') {
      out.push_back(cur);
      cur.clear();
    } else {
      cur += c;
    }
  }
  out.push_back(cur);
  return out;
}

double to_d(const std::string& s) {
  if (s.empty()) return 0;
  try {
    return std::stod(s);
  } catch (...) {
    return 0;
  }
}

double quantile(std::vector<double> v, double q) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[std::min(v.size() - 1, static_cast<size_t>(q * static_cast<double>(v.size())))];
}

}  // namespace detail

using namespace detail;

std::string op_class(const std::string& op) {
  for (const auto& [c, ops] : classes())
    if (std::find(ops.begin(), ops.end(), op) != ops.end()) return c;
  return "other";
}

std::vector<std::string> class_names() {
  std::vector<std::string> n;
  for (const auto& [c, ops] : classes()) n.push_back(c);
  return n;
}

std::vector<std::string> class_ops(const std::string& cls) {
  for (const auto& [c, ops] : classes())
    if (c == cls) return ops;
  return {};
}

namespace {

// A swept run's files (rsim measure, rsim_torch measure) name the same network at every sweep
// point: the point's bindings (the columns between `point` and `first`, e.g. "dtype=fp16, batch=32")
// go into its name, so that each point's network is its own. Files without a point column (the
// shared measurements) name each network uniquely already.
struct PointNames {
  size_t point = SIZE_MAX, first = SIZE_MAX;
  std::vector<std::string> header;
  void init(const std::vector<std::string>& h, const char* first_column) {
    header = h;
    for (size_t i = 0; i < h.size(); ++i)
      if (h[i] == "point") point = i;
      else if (h[i] == first_column && first == SIZE_MAX) first = i;
  }
  std::string label(const std::vector<std::string>& cells) const {
    if (point == SIZE_MAX || point >= cells.size()) return {};
    std::string b;
    for (size_t i = point + 1; i < first && i < cells.size() && i < header.size(); ++i) {  // (a row may have more cells than the header)
      std::string v = header[i].rfind("sweep.", 0) == 0 ? header[i].substr(6) : header[i];
      b += (b.empty() ? "" : ", ") + v + "=" + cells[i];
    }
    return b.empty() ? "point " + cells[point] : b;
  }
};

// "name [bindings]" for every row when the file holds more than one point
template <class T>
void name_points(std::vector<T>& rows, const std::vector<std::string>& labels) {
  std::set<std::string> distinct(labels.begin(), labels.end());
  if (distinct.size() < 2) return;
  for (size_t i = 0; i < rows.size(); ++i) rows[i].network += " [" + labels[i] + "]";
}

}  // namespace

namespace {

// Elements of the first tensor of a shape column ("32x64x56x56", "1x8;1x8"): 0 when none.
double shape_elements(const std::string& shape) {
  double n = 0, dim = 0;
  bool digits = false;
  for (char c : shape) {
    if (c >= '0' && c <= '9') {
      dim = dim * 10 + (c - '0'), digits = true;
    } else if (c == 'x' && digits) {
      n = (n > 0 ? n : 1) * dim, dim = 0, digits = false;
    } else {
      break;
    }
  }
  return digits ? (n > 0 ? n : 1) * dim : 0;
}

}  // namespace

std::vector<Sample> read_measured_rows(const std::string& text, const std::string& name, size_t* dropped) {
  PointNames points;
  std::vector<std::string> labels;
  std::vector<Sample> out;
  size_t pos = 0;
  std::vector<std::string> header;
  std::map<std::string, size_t> col;
  auto need = [&](const char* c) {
    auto it = col.find(c);
    if (it == col.end()) throw std::runtime_error(name + ": no column '" + c + "' (is it a measured.csv written by rsim measure?)");
    return it->second;
  };
  auto opt = [&](const char* c) {  // a column older files (or the shared ones) may lack
    auto it = col.find(c);
    return it == col.end() ? SIZE_MAX : it->second;
  };
  size_t i_cpg = SIZE_MAX, i_level = SIZE_MAX, i_roof = SIZE_MAX, i_exec = SIZE_MAX, i_kernel = SIZE_MAX, i_min = SIZE_MAX, i_layer = SIZE_MAX,
         i_in = SIZE_MAX, i_out = SIZE_MAX, i_time = SIZE_MAX, i_plat = SIZE_MAX;
  size_t line_no = 0;
  size_t i_net = 0, i_op = 0, i_flops = 0, i_fx = 0, i_macs = 0, i_mx = 0, i_count = 0, i_bytes = 0, i_peak = 0, i_bw = 0, i_bound = 0, i_t = 0;
  while (pos < text.size()) {
    size_t nl = text.find('\n', pos);
    if (nl == std::string::npos) nl = text.size();
    std::string line = text.substr(pos, nl - pos);
    pos = nl + 1;
    ++line_no;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.empty()) continue;
    auto cells = split_csv_line(line);
    if (header.empty()) {
      header = cells;
      for (size_t i = 0; i < header.size(); ++i) col[header[i]] = i;
      i_net = need("network"), i_op = need("op"), i_flops = need("flops"), i_fx = need("flops_executed"), i_macs = need("macs"),
      i_mx = need("macs_executed"), i_count = need("mac_count"), i_bytes = need("bytes"), i_peak = need("derated_peak_flops_per_s"),
      i_bw = need("derated_bandwidth_bytes_per_s"), i_bound = need("bound"), i_t = need("measured_time_s");
      i_cpg = opt("channels_per_group"), i_level = opt("memory_level"), i_roof = opt("compute_roof"), i_exec = opt("measured_execution");
      i_kernel = opt("kernel"), i_min = opt("measured_min_s"), i_layer = opt("layer"), i_in = opt("input_shape"), i_out = opt("output_shape");
      i_time = opt("time_s"), i_plat = opt("platform");
      points.init(header, "platform");
      continue;
    }
    if (cells.size() < header.size()) continue;
    // a measured time is empty (not timed) or a finite number ≥ 0: NaN, inf or a negative time
    // is an error at its line (or, asked for, a row left out and counted), never a row silently
    // dropped or kept
    bool bad_row = false;
    for (size_t i : {i_t, i_min}) {
      if (i == SIZE_MAX || cells[i].empty() || bad_row) continue;
      char* end = nullptr;
      const double v = std::strtod(cells[i].c_str(), &end);
      if (end == cells[i].c_str() || *end != '\0' || !std::isfinite(v) || v < 0) {
        if (!dropped)
          throw std::runtime_error(name + ":" + std::to_string(line_no) + ": " + header[i] + " is '" + cells[i] +
                                   "': a measured time is a finite number of seconds ≥ 0 (empty: the layer was not timed)");
        ++*dropped;
        bad_row = true;
      }
    }
    if (bad_row) continue;
    Sample s;
    s.network = cells[i_net];
    s.op = cells[i_op];
    bool executed = cells[i_count] == "executed";
    s.work = to_d(cells[executed ? i_fx : i_flops]);
    s.macs = to_d(cells[executed ? i_mx : i_macs]);
    s.macs_counted = to_d(cells[i_macs]);
    s.bytes = to_d(cells[i_bytes]);
    s.peak = to_d(cells[i_peak]);
    s.bandwidth = to_d(cells[i_bw]);
    s.compute_bound = cells[i_bound] == "compute";
    s.measured_s = to_d(cells[i_t]);
    auto text_of = [&](size_t i) { return i == SIZE_MAX ? std::string() : cells[i]; };
    if (i_cpg != SIZE_MAX) s.cpg = to_d(cells[i_cpg]);
    s.level = text_of(i_level);
    s.roof = text_of(i_roof);
    s.execution = text_of(i_exec);
    s.kernel = i_kernel == SIZE_MAX ? s.network + "/" + text_of(i_layer) : cells[i_kernel];
    s.layer = text_of(i_layer);
    s.platform = text_of(i_plat);
    s.input_shape = text_of(i_in);
    s.output_shape = text_of(i_out);
    if (i_time != SIZE_MAX) s.time_s = to_d(cells[i_time]);
    if (i_min != SIZE_MAX) s.measured_min_s = to_d(cells[i_min]);
    if (!(s.measured_min_s > 0)) s.measured_min_s = s.measured_s;
    if (!(s.measured_s > 0)) s.measured_s = s.measured_min_s;  // (a file giving only the fastest repetition)
    s.outputs = shape_elements(s.output_shape);
    if (s.peak > 0 && s.bandwidth > 0) out.push_back(s), labels.push_back(points.label(cells));
  }
  name_points(out, labels);
  return out;
}

std::vector<Sample> read_measured_csv(const std::string& text, const std::string& name) {
  std::vector<Sample> all = read_measured_rows(text, name), out;
  for (auto& s : all)
    if (s.measured_s > 0) out.push_back(std::move(s));
  return out;
}

CsvKind measured_kind(const std::string& text) {
  std::string first = text.substr(0, text.find('\n'));
  if (!first.empty() && first.back() == '\r') first.pop_back();
  auto cells = split_csv_line(first);
  auto has = [&](const char* c) { return std::find(cells.begin(), cells.end(), c) != cells.end(); };
  if (has("network") && has("layer") && has("op") && has("measured_time_s")) return CsvKind::Layers;
  if (has("network") && has("execution") && (has("measured_time_s") || has("measured_min_s")) && !has("layer")) return CsvKind::Networks;
  return CsvKind::Unknown;
}

std::vector<NetworkSample> read_measured_networks_csv(const std::string& text, const std::string& name, size_t* dropped) {
  std::vector<NetworkSample> out;
  PointNames points;
  std::vector<std::string> labels;
  size_t pos = 0, line_no = 0;
  std::map<std::string, size_t> col;
  bool header = true;
  while (pos < text.size()) {
    size_t nl = text.find('\n', pos);
    if (nl == std::string::npos) nl = text.size();
    std::string line = text.substr(pos, nl - pos);
    pos = nl + 1;
    ++line_no;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.empty()) continue;
    auto cells = split_csv_line(line);
    if (header) {
      for (size_t i = 0; i < cells.size(); ++i) col[cells[i]] = i;
      points.init(cells, "network");
      for (const char* c : {"network", "execution"})
        if (!col.count(c)) throw std::runtime_error(name + ": no column '" + c + "' (is it a measured_networks.csv?)");
      if (!col.count("measured_time_s") && !col.count("measured_min_s"))
        throw std::runtime_error(name + ": no column 'measured_time_s' or 'measured_min_s' (is it a measured_networks.csv?)");
      header = false;
      continue;
    }
    auto cell = [&](const char* c) {
      auto it = col.find(c);
      return it == col.end() || it->second >= cells.size() ? std::string() : cells[it->second];
    };
    NetworkSample n;
    n.network = cell("network");
    n.model = cell("model");
    n.dtype = cell("dtype");
    n.note = cell("measured_note");
    n.batch = to_d(cell("batch"));
    n.reps = to_d(cell("measured_reps"));
    const std::string e = cell("execution");
    if (e == "graph") n.execution = Execution::Graph;
    else if (e == "eager") n.execution = Execution::Eager;
    else if (e == "fused") n.execution = Execution::Fused;
    else throw std::runtime_error(name + ":" + std::to_string(line_no) + ": execution '" + e + "' is not fused, graph or eager");
    // as in measured.csv: a time present is a finite number ≥ 0 (an inf was skipped in silence)
    bool bad_row = false;
    for (const char* c : {"measured_min_s", "measured_time_s"}) {
      const std::string v = cell(c);
      if (v.empty() || bad_row) continue;
      char* end = nullptr;
      const double x = std::strtod(v.c_str(), &end);
      if (end == v.c_str() || *end != '\0' || !std::isfinite(x) || x < 0) {
        if (!dropped)
          throw std::runtime_error(name + ":" + std::to_string(line_no) + ": " + c + " is '" + v +
                                   "': a measured time is a finite number of seconds ≥ 0 (empty: the network was not timed)");
        ++*dropped;
        bad_row = true;
      }
    }
    if (bad_row) continue;
    const double tmin = to_d(cell("measured_min_s")), tmed = to_d(cell("measured_time_s"));
    n.time_s = tmin > 0 ? tmin : tmed;
    if (n.time_s > 0 && std::isfinite(n.time_s)) out.push_back(n), labels.push_back(points.label(cells));  // (a row without a time: skipped)
  }
  name_points(out, labels);
  return out;
}

}  // namespace rsim::measure
