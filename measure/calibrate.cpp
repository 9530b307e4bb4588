#include "measure/calibrate.hpp"

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

namespace {

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

}  // namespace

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

PowerLaw fit_power_law(const std::vector<std::pair<double, double>>& xe) {
  PowerLaw p;
  std::vector<std::pair<double, double>> v;
  for (const auto& [x, e] : xe)
    if (x > 0 && e > 0 && std::isfinite(x) && std::isfinite(e)) v.emplace_back(std::log(x), std::log(e));
  if (v.empty()) return p;
  double n = static_cast<double>(v.size()), sx = 0, sy = 0;
  for (const auto& [x, y] : v) sx += x, sy += y;
  double mx = sx / n, my = sy / n, sxx = 0, sxy = 0;
  for (const auto& [x, y] : v) sxx += (x - mx) * (x - mx), sxy += (x - mx) * (y - my);
  p.b = sxx > 1e-12 ? sxy / sxx : 0;
  p.a = std::exp(my - p.b * mx);
  return p;
}

namespace {

// Weighted least squares of y = l + b·u + c·w on (u, w, y) triples; c only with use_g, b only when u
// varies and not no_b. An exponent is fitted only over x (or g) spanning at least a factor of 2: over
// a narrower range (one layer's shape at a few batches, say) its slope is the noise between the
// times divided by almost nothing (an exponent of 60 once, and a = e^−1000 = 0), so that law is flat.
constexpr double kMinLogSpan = 0.6931471805599453;  // log 2
PowerLaw solve_wls(const std::vector<std::array<double, 3>>& v, const std::vector<double>& wt, bool use_g, bool no_b = false) {
  {
    double ulo = INFINITY, uhi = -INFINITY, wlo = INFINITY, whi = -INFINITY;
    for (size_t i = 0; i < v.size(); ++i)
      if (wt[i] > 0) ulo = std::min(ulo, v[i][0]), uhi = std::max(uhi, v[i][0]), wlo = std::min(wlo, v[i][1]), whi = std::max(whi, v[i][1]);
    if (!(uhi - ulo >= kMinLogSpan)) no_b = true;
    if (!(whi - wlo >= kMinLogSpan)) use_g = false;
  }
  double n = 0, mu = 0, mw = 0, my = 0;
  for (size_t i = 0; i < v.size(); ++i) n += wt[i], mu += wt[i] * v[i][0], mw += wt[i] * v[i][1], my += wt[i] * v[i][2];
  mu /= n, mw /= n, my /= n;
  double suu = 0, suw = 0, sww = 0, suy = 0, swy = 0;
  for (size_t i = 0; i < v.size(); ++i) {
    double u = v[i][0] - mu, w = v[i][1] - mw, y = v[i][2] - my;
    suu += wt[i] * u * u, suw += wt[i] * u * w, sww += wt[i] * w * w, suy += wt[i] * u * y, swy += wt[i] * w * y;
  }
  PowerLaw p;
  if (no_b) {
    if (use_g && sww > 1e-12) p.c = swy / sww;
    else mw = 0;
  } else if (!use_g) {
    p.b = suu > 1e-12 ? suy / suu : 0;
    mw = 0;
  } else {  // normal equations, centred: [Suu Suw; Suw Sww] [b c]' = [Suy Swy]'
    double det = suu * sww - suw * suw;
    if (std::fabs(det) > 1e-9 * std::max(1.0, suu * sww)) {
      p.b = (suy * sww - swy * suw) / det;
      p.c = (swy * suu - suy * suw) / det;
    } else if (sww > 1e-12) {  // x and g move together: g alone
      p.c = swy / sww;
    }
  }
  p.a = std::exp(my - p.b * mu - p.c * mw);
  return p;
}

}  // namespace

namespace {

PowerLaw fit_robust(const std::vector<std::array<double, 3>>& v, bool use_g, bool no_b) {
  // Huber's M-estimate by iteratively reweighted least squares: a residual beyond log 1.5 (the
  // tolerance of the target) counts with weight log 1.5 / |residual|, so one layer on a slow
  // fallback kernel (a grouped conv oneDNN runs as a GEMM) cannot drag the law of the others.
  std::vector<double> wt(v.size(), 1.0);
  PowerLaw p = solve_wls(v, wt, use_g, no_b);
  for (int it = 0; it < 200; ++it) {
    for (size_t i = 0; i < v.size(); ++i) {
      double r = std::fabs(v[i][2] - std::log(p.a) - p.b * v[i][0] - (use_g ? p.c * v[i][1] : 0));
      wt[i] = r <= kHuber ? 1.0 : kHuber / r;
    }
    PowerLaw q = solve_wls(v, wt, use_g, no_b);
    bool done = std::fabs(std::log(q.a / p.a)) < 1e-13 && std::fabs(q.b - p.b) < 1e-13 && std::fabs(q.c - p.c) < 1e-13;
    p = q;
    if (done) break;
  }
  return p;
}

}  // namespace

PowerLaw fit_power_law_grouped(const std::vector<XGE>& xge, bool nonnegative_b) {
  std::vector<std::array<double, 3>> v;  // log x, log g (0 without groups), log e
  std::set<double> gs;
  for (const auto& p : xge)
    if (p.x > 0 && p.e > 0 && p.g >= 0 && std::isfinite(p.x) && std::isfinite(p.e) && std::isfinite(p.g)) {
      v.push_back({std::log(p.x), p.g > 0 ? std::log(p.g) : 0, std::log(p.e)});
      if (p.g > 0) gs.insert(p.g);
    }
  if (v.empty()) return {};
  const bool use_g = gs.size() >= 2;
  PowerLaw p = fit_robust(v, use_g, false);
  if (nonnegative_b && p.b < 0) p = fit_robust(v, use_g, true);  // (a law that loses efficiency with size: flat)
  return p;
}

namespace {

// Weighted least squares of y = l + Σ β_j · z_j over the columns `cols` of v (z = v[0..2], y = v[3]),
// by the centred normal equations and Gaussian elimination; false when they are singular.
bool solve_columns(const std::vector<std::array<double, 4>>& v, const std::vector<double>& wt, const std::vector<int>& cols, double& l,
                   std::array<double, 3>& beta) {
  const size_t k = cols.size();
  double n = 0;
  std::array<double, 4> mean{};
  for (size_t i = 0; i < v.size(); ++i) {
    n += wt[i];
    for (int j = 0; j < 4; ++j) mean[static_cast<size_t>(j)] += wt[i] * v[i][static_cast<size_t>(j)];
  }
  if (!(n > 0)) return false;
  for (double& m : mean) m /= n;
  double a[3][4] = {};  // [S | s_y]
  for (size_t i = 0; i < v.size(); ++i)
    for (size_t r = 0; r < k; ++r) {
      const double zr = v[i][static_cast<size_t>(cols[r])] - mean[static_cast<size_t>(cols[r])];
      for (size_t c = 0; c < k; ++c) a[r][c] += wt[i] * zr * (v[i][static_cast<size_t>(cols[c])] - mean[static_cast<size_t>(cols[c])]);
      a[r][k] += wt[i] * zr * (v[i][3] - mean[3]);
    }
  double scale = 1e-300;
  for (size_t r = 0; r < k; ++r) scale = std::max(scale, std::fabs(a[r][r]));
  for (size_t c = 0; c < k; ++c) {
    size_t piv = c;
    for (size_t r = c + 1; r < k; ++r)
      if (std::fabs(a[r][c]) > std::fabs(a[piv][c])) piv = r;
    if (std::fabs(a[piv][c]) < 1e-10 * scale) return false;
    std::swap(a[piv], a[c]);
    for (size_t r = 0; r < k; ++r) {
      if (r == c) continue;
      const double f = a[r][c] / a[c][c];
      for (size_t cc = c; cc <= k; ++cc) a[r][cc] -= f * a[c][cc];
    }
  }
  beta = {0, 0, 0};
  l = mean[3];
  for (size_t r = 0; r < k; ++r) {
    beta[static_cast<size_t>(cols[r])] = a[r][k] / a[r][r];
    l -= beta[static_cast<size_t>(cols[r])] * mean[static_cast<size_t>(cols[r])];
  }
  return true;
}

// Huber's loss of a residual (squares up to kHuber, linear beyond)
double huber(double r) {
  r = std::fabs(r);
  return r <= kHuber ? 0.5 * r * r : kHuber * r - 0.5 * kHuber * kHuber;
}

// Huber's M-estimate of y = l + Σ β_j · z_j by iteratively reweighted least squares; the loss
// (Σ huber) or infinity when singular.
double fit_columns_robust(const std::vector<std::array<double, 4>>& v, const std::vector<int>& cols, double& l, std::array<double, 3>& beta) {
  std::vector<double> wt(v.size(), 1.0);
  if (!solve_columns(v, wt, cols, l, beta)) return INFINITY;
  auto residual = [&](const std::array<double, 4>& p) { return p[3] - l - beta[0] * p[0] - beta[1] * p[1] - beta[2] * p[2]; };
  for (int it = 0; it < 200; ++it) {
    for (size_t i = 0; i < v.size(); ++i) {
      const double r = std::fabs(residual(v[i]));
      wt[i] = r <= kHuber ? 1.0 : kHuber / r;
    }
    double l2 = 0;
    std::array<double, 3> b2{};
    if (!solve_columns(v, wt, cols, l2, b2)) break;
    const bool done = std::fabs(l2 - l) < 1e-13 && std::fabs(b2[0] - beta[0]) < 1e-13 && std::fabs(b2[1] - beta[1]) < 1e-13 && std::fabs(b2[2] - beta[2]) < 1e-13;
    l = l2, beta = b2;
    if (done) break;
  }
  double loss = 0;
  for (const auto& p : v) loss += huber(residual(p));
  return loss;
}

}  // namespace

PowerLaw fit_power_law_occupancy(const std::vector<XGE>& xge, bool nonnegative_b) {
  PowerLaw base = fit_power_law_grouped(xge, nonnegative_b);
  std::vector<std::array<double, 4>> v;  // log x, log g, log min(1, p / p_sat), log e
  std::vector<double> ps;
  std::set<double> gs, distinct;
  for (const auto& q : xge) {
    if (!(q.x > 0 && q.e > 0 && q.g >= 0 && std::isfinite(q.x) && std::isfinite(q.e) && std::isfinite(q.g))) continue;
    if (!(q.p > 0) || !std::isfinite(q.p)) return base;  // a point of unknown occupancy: none fitted
    v.push_back({std::log(q.x), q.g > 0 ? std::log(q.g) : 0, 0, std::log(q.e)});
    ps.push_back(q.p);
    distinct.insert(q.p);
    if (q.g > 0) gs.insert(q.g);
  }
  if (v.size() < kOccupancySamples || distinct.size() < 3) return base;
  const bool use_g = gs.size() >= 2;
  const double n = static_cast<double>(v.size());
  double loss0 = 0;
  for (const auto& p : v) loss0 += huber(p[3] - std::log(base.a) - base.b * p[0] - (use_g ? base.c * p[1] : 0));
  if (!(loss0 > 1e-20 * n)) return base;  // (the law alone is exact)
  PowerLaw best = base;
  double best_loss = loss0 * std::exp(-2 * std::log(n) / n);  // what the occupancy factor must beat (the criterion)
  const double p_min = *distinct.begin(), p_max = *distinct.rbegin();
  double xlo = INFINITY, xhi = -INFINITY;  // (x's exponent only over a span of x: solve_wls)
  for (const auto& p : v) xlo = std::min(xlo, p[0]), xhi = std::max(xhi, p[0]);
  const bool x_varies = xhi - xlo >= kMinLogSpan;
  for (int i = 1;; ++i) {
    const double sat = p_min * std::pow(2.0, i / 4.0);
    if (sat > p_max) break;
    for (size_t j = 0; j < v.size(); ++j) v[j][2] = std::log(std::min(1.0, ps[j] / sat));
    std::vector<int> cols{0, 2};
    if (use_g) cols = {0, 1, 2};
    if (!x_varies) cols.erase(cols.begin());
    double l = 0;
    std::array<double, 3> beta{};
    double loss = fit_columns_robust(v, cols, l, beta);
    if (x_varies && nonnegative_b && beta[0] < 0) {  // (no slowdown with size: flat in x)
      cols.erase(cols.begin());
      loss = fit_columns_robust(v, cols, l, beta);
    }
    if (!(beta[2] > 1e-6) || beta[2] > 4 || !(loss < best_loss) || !std::isfinite(l)) continue;
    best_loss = loss;
    best = PowerLaw{};
    best.a = std::exp(l), best.b = beta[0], best.c = use_g ? beta[1] : 0, best.d = beta[2], best.p_sat = sat;
    best.p_lo = p_min, best.p_hi = p_max;  // (fewer outputs than any point: the factor at p_min)
  }
  return best;
}

namespace {

// One rule per class and compute roof (the roofs in order of first appearance), each fitted on its
// samples: the compute law over the compute-bound ones, the bandwidth law over the memory-bound
// ones, and a law per memory level that holds at least kLevelSamples of those.
// (gpu: laws that never lose efficiency with size, and the compute law's occupancy factor)
CalibrationRule fit_rule(const std::string& cls, const std::string& roof, const std::vector<const Sample*>& samples, bool gpu = false) {
  const bool nonnegative_b = gpu;
  std::vector<XGE> ce, be;
  std::vector<std::pair<std::string, std::vector<XGE>>> by_level;  // in order of first appearance
  for (const Sample* sp : samples) {
    const Sample& s = *sp;
    if (s.compute_bound && s.work > 0) {
      ce.push_back({s.macs > 0 ? s.macs : s.work, s.cpg, s.work / (s.peak * s.measured_s), s.outputs});
    } else if (!s.compute_bound && s.bytes > 0) {
      XGE p{s.bytes, s.cpg, s.bytes / (s.bandwidth * s.measured_s)};
      be.push_back(p);
      if (s.level.empty()) continue;
      auto it = std::find_if(by_level.begin(), by_level.end(), [&](const auto& l) { return l.first == s.level; });
      if (it == by_level.end()) it = by_level.insert(by_level.end(), {s.level, {}});
      it->second.push_back(p);
    }
  }
  CalibrationRule r;
  r.name = cls;
  r.ops = class_ops(cls);
  r.roof = roof;
  r.compute = gpu ? fit_power_law_occupancy(ce, nonnegative_b) : fit_power_law_grouped(ce, nonnegative_b);
  r.bandwidth = fit_power_law_grouped(be, nonnegative_b);
  for (const auto& [level, pts] : by_level)
    if (pts.size() >= kLevelSamples && by_level.size() > 1) r.bandwidth_by_level.emplace_back(level, fit_power_law_grouped(pts, nonnegative_b));
  return r;
}

// The samples of each class and roof, in the order of classes() and of the roofs' first appearance.
std::vector<std::pair<std::pair<std::string, std::string>, std::vector<const Sample*>>> by_class_and_roof(const std::vector<Sample>& samples) {
  std::vector<std::pair<std::pair<std::string, std::string>, std::vector<const Sample*>>> groups;
  std::vector<std::string> roofs;
  for (const auto& s : samples)
    if (std::find(roofs.begin(), roofs.end(), s.roof) == roofs.end()) roofs.push_back(s.roof);
  for (const auto& [cls, ops] : classes())
    for (const auto& roof : roofs) {
      std::vector<const Sample*> v;
      for (const auto& s : samples)
        if (s.roof == roof && std::find(ops.begin(), ops.end(), s.op) != ops.end()) v.push_back(&s);
      if (!v.empty()) groups.push_back({{cls, roof}, std::move(v)});
    }
  return groups;
}

const CalibrationRule* rule_for(const std::vector<CalibrationRule>& rules, const std::string& op, const std::string& roof) {
  const CalibrationRule* any = nullptr;
  for (const auto& r : rules) {
    if (std::find(r.ops.begin(), r.ops.end(), op) == r.ops.end()) continue;
    if (r.roof == roof) return &r;
    if (r.roof.empty() && !any) any = &r;
  }
  return any;
}

}  // namespace

std::vector<CalibrationRule> fit_calibration(const std::vector<Sample>& samples) {
  std::vector<CalibrationRule> rules;
  for (const auto& [key, v] : by_class_and_roof(samples)) rules.push_back(fit_rule(key.first, key.second, v));
  return rules;
}

double predict_s(const Sample& s, const std::vector<CalibrationRule>& rules) {
  double ec = 1, eb = 1;
  if (const CalibrationRule* r = rule_for(rules, s.op, s.roof)) {
    ec = r->compute.at(s.macs > 0 ? s.macs : s.work, s.cpg, s.outputs);
    eb = r->bandwidth_on(s.level).at(s.bytes, s.cpg);
  }
  return std::max(s.work / (s.peak * ec), s.bytes / (s.bandwidth * eb));
}

double remove_contention(double measured_s, const Contention& c) {
  if (!c.active() || !(measured_s > 0)) return measured_s;
  double lo = measured_s / c.slowdown, hi = measured_s;  // apply(t) ∈ [t, slowdown · t]
  for (int i = 0; i < 60 && hi - lo > 1e-15 * hi; ++i) {
    double mid = 0.5 * (lo + hi);
    (c.apply(mid) < measured_s ? lo : hi) = mid;
  }
  return 0.5 * (lo + hi);
}

double predict_s(const Sample& s, const Model& m) {
  double t = predict_s(s, m.rules);
  return (s.compute_bound ? m.contention.apply(t) : t) + m.overhead_s;
}

std::vector<double> overhead_grid() {
  std::vector<double> g{0};
  for (int i = 0; i <= 12; ++i) g.push_back(0.25e-6 * std::pow(2.0, i / 2.0));
  return g;
}

namespace {

// A fit searches overheads and contentions, each a robust fit of every class: its cost grows with
// the rows. Past kMaxFitRows the fit takes every k-th row (in file order: every network and class
// keeps its share), so a file of 10^6 layers fits in seconds, and the laws of 20,000 layers are
// as good as those of all of them.
// The search over overheads and contentions (hundreds of candidate fits) runs on at most
// kSearchRows of those, spread the same way; the laws at the overhead and contention it finds are
// then fitted on all kMaxFitRows.
constexpr size_t kMaxFitRows = 20000, kSearchRows = 2000;

std::vector<Sample> thinned(const std::vector<Sample>& v, size_t cap = kMaxFitRows) {
  if (v.size() <= cap) return v;
  const size_t k = (v.size() + cap - 1) / cap;
  std::vector<Sample> out;
  out.reserve(v.size() / k + 1);
  for (size_t i = 0; i < v.size(); i += k) out.push_back(v[i]);
  return out;
}

}  // namespace

Model fit_model(const std::vector<Sample>& all_samples) {
  const std::vector<Sample> kept = thinned(all_samples);
  const std::vector<Sample> samples = thinned(kept, kSearchRows);
  std::vector<Sample> run = samples;
  // the rules fitted on the times with the overhead and the contention taken out (a layer never
  // below a tenth of its measured time), and their loss
  auto fit = [&](double o, const Contention& c, double& loss) {
    for (size_t j = 0; j < samples.size(); ++j) {
      double t = std::max(samples[j].measured_s - o, 0.1 * samples[j].measured_s);
      run[j].measured_s = samples[j].compute_bound ? remove_contention(t, c) : t;
    }
    Model m;
    m.rules = fit_calibration(run), m.contention = c, m.overhead_s = o;
    loss = 0;
    for (const auto& s : samples) {
      double r = std::log(predict_s(s, m) / s.measured_s);
      loss += r * r;
    }
    return m;
  };
  // a candidate must beat the best by more than rounding: ties (e.g. two layers, which any
  // contention fits exactly) keep the first, i.e. no overhead, the least contention
  const double eps = 1e-12 * (1.0 + static_cast<double>(samples.size()));
  Model best;
  double best_loss = INFINITY;
  // by turns: the overhead with the contention found so far, then the contention with that
  // overhead, until neither changes (an overhead alone can imitate some contention, and back)
  for (int round = 0; round < 4; ++round) {
    const Model before = best;
    const Contention c0 = best.contention;
    for (double o : overhead_grid()) {
      double loss;
      Model m = fit(o, c0, loss);
      if (loss < best_loss - eps) best_loss = loss, best = std::move(m);
    }
    const double overhead = best.overhead_s;
    for (int k = 0; k <= 20; ++k) {
      Contention c;
      c.slowdown = 1 + 0.25 * k;
      for (int i = -16; i <= 24; ++i) {
        c.onset_s = 1e-3 * std::pow(2.0, i / 4.0);
        if (k == 0 && i > -16) break;  // slowdown 1: the onset does not matter
        double loss;
        Model m = fit(overhead, k == 0 ? Contention{} : c, loss);
        if (loss < best_loss - eps) best_loss = loss, best = std::move(m);
      }
    }
    if (round > 0 && best.overhead_s == before.overhead_s && best.contention.onset_s == before.contention.onset_s &&
        best.contention.slowdown == before.contention.slowdown)
      break;
  }
  if (!std::isfinite(best_loss)) best = Model{}, best.rules = fit_calibration(samples);
  // the times the rules are fitted on (overhead and contention out), over every row kept: the
  // laws, their ranges and the transfers
  run = kept;
  for (size_t j = 0; j < kept.size(); ++j) {
    double t = std::max(kept[j].measured_s - best.overhead_s, 0.1 * kept[j].measured_s);
    run[j].measured_s = kept[j].compute_bound ? remove_contention(t, best.contention) : t;
  }
  if (kept.size() > samples.size() && std::isfinite(best_loss)) best.rules = fit_calibration(run);
  complete_rules(best.rules, run);
  return best;
}

Model fit_laws_at(const std::vector<Sample>& all_samples, double overhead_s, const Contention& contention) {
  std::vector<Sample> run = thinned(all_samples);
  for (auto& s : run) {
    const double t = std::max(s.measured_s - overhead_s, 0.1 * s.measured_s);
    s.measured_s = s.compute_bound ? remove_contention(t, contention) : t;
  }
  Model m;
  m.overhead_s = overhead_s, m.contention = contention;
  m.rules = fit_calibration(run);
  complete_rules(m.rules, run);
  return m;
}

namespace {

// The range of x (MACs or FLOPs for compute, bytes for bandwidth) and g of one side's samples.
void set_ranges(PowerLaw& law, const std::vector<const Sample*>& v, bool compute) {
  law.x_lo = law.x_hi = law.g_lo = law.g_hi = 0;
  for (const Sample* s : v) {
    const double x = compute ? (s->macs > 0 ? s->macs : s->work) : s->bytes;
    if (x > 0) law.x_lo = law.x_lo > 0 ? std::min(law.x_lo, x) : x, law.x_hi = std::max(law.x_hi, x);
    if (s->cpg > 0) law.g_lo = law.g_lo > 0 ? std::min(law.g_lo, s->cpg) : s->cpg, law.g_hi = std::max(law.g_hi, s->cpg);
  }
  law.p_lo = law.p_hi = 0;
  if (law.has_occupancy())
    for (const Sample* s : v)
      if (s->outputs > 0) law.p_lo = law.p_lo > 0 ? std::min(law.p_lo, s->outputs) : s->outputs, law.p_hi = std::max(law.p_hi, s->outputs);
}

// Each bandwidth_by_level law: the range of the memory-bound layers bounded on its level.
void set_level_ranges(CalibrationRule& r, const std::vector<const Sample*>& memory_bound) {
  for (auto& [level, law] : r.bandwidth_by_level) {
    std::vector<const Sample*> on;
    for (const Sample* s : memory_bound)
      if (s->level == level) on.push_back(s);
    set_ranges(law, on, false);
  }
}

}  // namespace

void complete_rules(std::vector<CalibrationRule>& rules, const std::vector<Sample>& fitted) {
  std::vector<std::string> roofs;
  for (const auto& s : fitted)
    if (std::find(roofs.begin(), roofs.end(), s.roof) == roofs.end()) roofs.push_back(s.roof);
  for (const auto& roof : roofs) {
    // every class's layers on this roof, by side; the pooled laws of each side (g left out: the
    // classes they go to group channels differently, or not at all)
    std::vector<Sample> pooled;
    for (const auto& s : fitted)
      if (s.roof == roof && op_class(s.op) != "other") pooled.push_back(s), pooled.back().cpg = 0;
    std::vector<const Sample*> pc, pb, all;
    for (const auto& s : pooled) {
      all.push_back(&s);
      (s.compute_bound ? pc : pb).push_back(&s);
    }
    CalibrationRule pool = fit_rule("pooled", roof, all);
    set_ranges(pool.compute, pc, true);
    set_ranges(pool.bandwidth, pb, false);
    set_level_ranges(pool, pb);
    // 1. each fitted rule: its laws bounded to the layers they were fitted on; a side without
    // layers takes the pooled law of that side
    for (auto& r : rules) {
      if (r.roof != roof || r.extrapolated) continue;
      std::vector<const Sample*> c, b;
      for (const auto& s : fitted)
        if (s.roof == roof && std::find(r.ops.begin(), r.ops.end(), s.op) != r.ops.end()) {
          if (s.compute_bound && s.work > 0) c.push_back(&s);
          else if (!s.compute_bound && s.bytes > 0) b.push_back(&s);
        }
      if (c.empty() && !pc.empty()) {
        r.compute = pool.compute;
        r.extrapolated_compute = true;
      } else {
        set_ranges(r.compute, c, true);
      }
      if (b.empty() && !pb.empty()) {
        r.bandwidth = pool.bandwidth;
        r.bandwidth_by_level = pool.bandwidth_by_level;
        r.extrapolated_bandwidth = true;
      } else {
        set_ranges(r.bandwidth, b, false);
        set_level_ranges(r, b);
      }
      if (r.extrapolated_compute && r.extrapolated_bandwidth) r.extrapolated = true, r.extrapolated_compute = r.extrapolated_bandwidth = false;
    }
    // 2. every class without a rule on this roof: the pooled laws, extrapolated
    if (all.empty()) continue;
    for (const auto& cls : class_names()) {
      const std::vector<std::string> ops = class_ops(cls);
      if (std::any_of(rules.begin(), rules.end(), [&](const CalibrationRule& r) { return r.roof == roof && r.name == cls; })) continue;
      CalibrationRule r = pool;
      r.name = cls;
      r.ops = ops;
      r.extrapolated = true;
      rules.push_back(std::move(r));
    }
  }
}

bool extrapolated_for(const Sample& s, const std::vector<CalibrationRule>& rules) {
  const CalibrationRule* r = rule_for(rules, s.op, s.roof);
  if (!r) return false;  // an operator of no class: the roofline, not a transfer
  if (r->extrapolated) return true;
  if (s.compute_bound) return r->extrapolated_compute || r->compute.beyond(s.macs > 0 ? s.macs : s.work, s.cpg, s.outputs);
  return r->extrapolated_bandwidth || r->bandwidth_on(s.level).beyond(s.bytes, s.cpg);
}

CrossValidation cross_validate(const std::vector<Sample>& samples, const std::function<void(size_t, size_t)>& progress, const Model* full) {
  CrossValidation cv;
  std::vector<std::string> nets;
  std::map<std::string, std::vector<size_t>> rows_of;  // each network's samples, in order
  for (size_t i = 0; i < samples.size(); ++i) {
    auto [it, fresh] = rows_of.try_emplace(samples[i].network);
    if (fresh) nets.push_back(samples[i].network);
    it->second.push_back(i);
  }
  if (nets.size() < 2) return cv;
  // up to kMaxFolds networks: each held out alone, and every ordered pair; more: the networks in
  // kMaxFolds folds (network i in fold i mod kMaxFolds), each fold held out at once, no pairs
  const bool grouped = nets.size() > kMaxFolds;
  std::vector<std::vector<std::string>> folds;
  for (size_t i = 0; i < nets.size(); ++i) {
    if (!grouped) folds.push_back({nets[i]});
    else if (i < kMaxFolds) folds.push_back({nets[i]});
    else folds[i % kMaxFolds].push_back(nets[i]);
  }
  cv.grouped_networks = grouped ? nets.size() : 0;
  const size_t steps = folds.size() + (grouped ? 0 : nets.size());
  size_t step = 0;
  // grouped: each fold's laws at the overhead and contention of the fit on everything (a platform's,
  // which a twelfth of the networks barely moves; searching them again is hundreds of fits a fold)
  Model everything;
  if (grouped && !full) everything = fit_model(samples), full = &everything;
  std::vector<size_t> fold_of(samples.size()), fold_rows(folds.size(), 0);
  {
    std::map<std::string, size_t> fold_of_net;
    for (size_t fi = 0; fi < folds.size(); ++fi)
      for (const auto& n : folds[fi]) fold_of_net[n] = fi;
    for (size_t i = 0; i < samples.size(); ++i) ++fold_rows[fold_of[i] = fold_of_net.at(samples[i].network)];
  }
  for (size_t fi = 0; fi < folds.size(); ++fi) {
    if (progress) progress(step++, steps);
    // the other folds' rows (grouped, past kMaxFitRows: every k-th of them, as the fit would keep)
    const size_t n_train = samples.size() - fold_rows[fi];
    const size_t k = grouped ? std::max<size_t>(1, (n_train + kMaxFitRows - 1) / kMaxFitRows) : 1;
    std::vector<Sample> train;
    std::vector<const Sample*> test;
    size_t seen = 0;
    for (size_t i = 0; i < samples.size(); ++i) {
      if (fold_of[i] == fi) test.push_back(&samples[i]);
      else if (seen++ % k == 0) train.push_back(samples[i]);
    }
    Model model = grouped ? fit_laws_at(train, full->overhead_s, full->contention) : fit_model(train);
    CrossValidation::Fold f;
    f.network = folds[fi][0];
    if (grouped)
      f.network = "fold " + std::to_string(fi + 1) + " of " + std::to_string(folds.size()) + " (" +
                  (folds[fi].size() == 1 ? folds[fi][0] + ")" : std::to_string(folds[fi].size()) + " networks: " + folds[fi][0] + ", " + folds[fi][1] + ", …)");
    std::vector<double> err, before;
    double sum_p = 0, sum_m = 0;
    size_t flop_layers = 0, within = 0;
    for (const Sample* sp : test) {
      const Sample& s = *sp;
      double p = predict_s(s, model), p0 = predict_s(s, std::vector<CalibrationRule>{});
      const bool ex = extrapolated_for(s, model.rules);
      cv.predictions.push_back({s.network, s.op, s.work, s.measured_s, p0, p, ex});
      f.extrapolated += ex;
      err.push_back(std::fabs(p / s.measured_s - 1));
      before.push_back(std::fabs(p0 / s.measured_s - 1));
      sum_p += p, sum_m += s.measured_s;
      if (s.work > 0) {
        ++flop_layers;
        double r = p / s.measured_s;
        within += r <= 1.5 && r >= 1 / 1.5;
      }
    }
    f.layers = test.size();
    f.median_err = quantile(err, 0.5);
    f.p90_err = quantile(err, 0.9);
    f.median_err_before = quantile(before, 0.5);
    f.within_1_5x = flop_layers ? static_cast<double>(within) / static_cast<double>(flop_layers) : 0;
    f.network_err = sum_m > 0 ? std::fabs(sum_p / sum_m - 1) : 0;
    cv.folds.push_back(f);
  }
  // each network predicted by a fit on one other network alone
  if (grouped) return cv;
  for (const auto& from : nets) {
    if (progress) progress(step++, steps);
    std::vector<Sample> train;
    for (size_t i : rows_of.at(from)) train.push_back(samples[i]);
    Model model = fit_model(train);
    for (const auto& to : nets) {
      if (to == from) continue;
      CrossValidation::Pair pr;
      pr.fit_on = from, pr.predicted = to;
      double sum_p = 0, sum_m = 0;
      size_t flop_layers = 0, within = 0;
      for (size_t i : rows_of.at(to)) {
        const Sample& s = samples[i];
        ++pr.layers;
        const double p = predict_s(s, model);
        sum_p += p, sum_m += s.measured_s;
        pr.extrapolated += extrapolated_for(s, model.rules);
        if (s.work > 0) {
          ++flop_layers;
          const double r = p / s.measured_s;
          within += r <= 1.5 && r >= 1 / 1.5;
        }
      }
      pr.within_1_5x = flop_layers ? static_cast<double>(within) / static_cast<double>(flop_layers) : 0;
      pr.network_err = sum_m > 0 ? std::fabs(sum_p / sum_m - 1) : 0;
      cv.pairs.push_back(pr);
    }
  }
  return cv;
}

double percentile_linear(std::vector<double> v, double q) {
  if (v.empty()) return NAN;
  std::sort(v.begin(), v.end());
  const double at = q * static_cast<double>(v.size() - 1);
  const size_t i = static_cast<size_t>(std::floor(at));
  if (i + 1 >= v.size()) return v.back();
  return v[i] + (at - static_cast<double>(i)) * (v[i + 1] - v[i]);
}

void set_error_bands(std::vector<CalibrationRule>& rules, const CrossValidation& cv) {
  std::map<std::string, std::vector<double>> ratios;  // per class: measured / predicted
  for (const auto& p : cv.predictions)
    if (p.calibrated_s > 0 && p.measured_s > 0) ratios[op_class(p.op)].push_back(p.measured_s / p.calibrated_s);
  for (CalibrationRule& r : rules) {
    auto it = ratios.find(r.name);
    if (it == ratios.end() || it->second.size() < 5) continue;
    r.band = true;
    r.error_lo = percentile_linear(it->second, 0.1), r.error_hi = percentile_linear(it->second, 0.9);
  }
}

void set_error_bands(std::vector<CalibrationRule>& rules, const std::vector<double>& ratios) {
  if (ratios.size() < 3) return;
  const double lo = percentile_linear(ratios, 0.1), hi = percentile_linear(ratios, 0.9);
  for (CalibrationRule& r : rules) r.band = true, r.error_lo = lo, r.error_hi = hi;
}

std::string predictions_csv(const CrossValidation& cv) {
  std::string out = "network,op,class,flops,measured_s,uncalibrated_s,calibrated_s,extrapolated\n";
  char buf[128];
  auto cell = [](const std::string& t) {
    if (t.find_first_of(",\"\n") == std::string::npos) return t;
    std::string q = "\"";
    for (char c : t) q += c == '"' ? std::string("\"\"") : std::string(1, c);
    return q + "\"";
  };
  for (const auto& p : cv.predictions) {
    std::snprintf(buf, sizeof buf, ",%.9g,%.9g,%.9g,%.9g,%s\n", p.work, p.measured_s, p.uncalibrated_s, p.calibrated_s, p.extrapolated ? "true" : "false");
    out += cell(p.network) + "," + cell(p.op) + "," + op_class(p.op) + buf;
  }
  return out;
}

namespace {

// The fixed times a rule's fit tries: 0, then 0.25 µs · 2^(i/4), i = 0 … 40 (0.25 µs … 256 µs).
std::vector<double> fixed_time_grid() {
  std::vector<double> g{0};
  for (int i = 0; i <= 40; ++i) g.push_back(0.25e-6 * std::pow(2.0, i / 4.0));
  return g;
}

double rule_time(const Sample& s, const CalibrationRule& r) {
  const double ec = r.compute.at(s.macs > 0 ? s.macs : s.work, s.cpg, s.outputs), eb = r.bandwidth_on(s.level).at(s.bytes, s.cpg);
  return std::max(s.work / (s.peak * ec), s.bytes / (s.bandwidth * eb));
}

// A class's rule on one roof with the fixed time each of its layers took beside its work (the
// host's time to issue it, for layers timed one by one in eager mode): the pair with the least
// squares of log(predicted / measured), the laws fitted on the times with that fixed time taken
// out (a layer never below a tenth of its measured time).
CalibrationRule fit_rule_with_fixed_time(const std::string& cls, const std::string& roof, const std::vector<const Sample*>& samples,
                                         double& fixed_s) {
  std::vector<Sample> run;
  run.reserve(samples.size());
  for (const Sample* s : samples) run.push_back(*s);
  std::vector<const Sample*> ptrs;
  for (const auto& s : run) ptrs.push_back(&s);
  CalibrationRule best;
  double best_loss = INFINITY;
  fixed_s = 0;
  const double eps = 1e-12 * (1.0 + static_cast<double>(samples.size()));
  for (double o : fixed_time_grid()) {
    for (size_t j = 0; j < samples.size(); ++j) run[j].measured_s = std::max(samples[j]->measured_s - o, 0.1 * samples[j]->measured_s);
    CalibrationRule r = fit_rule(cls, roof, ptrs, true);
    double loss = 0;
    for (const Sample* s : samples) {
      const double e = std::log((rule_time(*s, r) + o) / s->measured_s);
      loss += e * e;
    }
    if (loss < best_loss - eps) best_loss = loss, best = std::move(r), fixed_s = o;
  }
  return best;
}


// The least squares of log(predicted / measured) over `cases` for a parameter on a grid, refined
// around the best point by golden sections; predict(k, x) is case k's prediction at x.
template <class F>
double fit_1d(size_t cases, double lo, double hi, size_t steps, const std::vector<double>& measured, F predict) {
  auto loss = [&](double x) {
    double l = 0;
    for (size_t k = 0; k < cases; ++k) {
      const double e = std::log(predict(k, x) / measured[k]);
      l += e * e;
    }
    return l;
  };
  double best = lo, best_loss = INFINITY;
  const double step = (hi - lo) / static_cast<double>(steps);
  for (size_t i = 0; i <= steps; ++i) {
    const double x = lo + step * static_cast<double>(i), l = loss(x);
    if (l < best_loss) best_loss = l, best = x;
  }
  double a = std::max(lo, best - step), b = std::min(hi, best + step);
  const double r = 0.5 * (std::sqrt(5.0) - 1);
  for (int it = 0; it < 60 && b - a > 1e-12 * (1 + std::fabs(best)); ++it) {
    const double c = b - r * (b - a), d = a + r * (b - a);
    (loss(c) < loss(d) ? b : a) = (loss(c) < loss(d) ? d : c);
  }
  const double mid = 0.5 * (a + b);
  return loss(mid) < best_loss ? mid : best;
}

}  // namespace

bool gpu_data(const std::vector<Sample>& rows, const std::vector<NetworkSample>& nets) {
  if (!nets.empty()) return true;
  return std::any_of(rows.begin(), rows.end(), [](const Sample& s) { return s.measured_s > 0 && (s.execution == "eager" || s.execution == "graph"); });
}

double measured_factor(const Sample& s, const std::unordered_map<std::string, double>* measured) {
  if (!measured || measured->empty() || s.input_shape.empty()) return 1;
  auto it = measured->find(measured_layer_key(s.op, s.roof, s.input_shape, s.output_shape, s.macs_counted));
  return it == measured->end() ? 1.0 : it->second;
}

KernelPlan plan_kernels(const std::vector<const Sample*>& layers, const std::vector<CalibrationRule>& rules,
                        const std::unordered_map<std::string, double>* measured) {
  KernelPlan k;
  std::vector<std::string> names;
  std::vector<double> c, m;
  std::map<std::string, size_t> at;
  for (const Sample* s : layers) {
    if (s->kernel.empty()) continue;  // a view runs no kernel
    auto [it, fresh] = at.try_emplace(s->kernel, c.size());
    if (fresh) c.push_back(0), m.push_back(0), k.host_s.push_back(-1);
    const size_t i = it->second;
    double ec = 1, eb = 1;
    if (const CalibrationRule* r = rule_for(rules, s->op, s->roof)) {
      ec = r->compute.at(s->macs > 0 ? s->macs : s->work, s->cpg, s->outputs);
      eb = r->bandwidth_on(s->level).at(s->bytes, s->cpg);
      k.host_s[i] = std::max(k.host_s[i], r->host_overhead_s);
    }
    divide_efficiencies(ec, eb, measured_factor(*s, measured));  // (as the engine does)
    c[i] += s->work / (s->peak * ec);
    m[i] += s->bytes / (s->bandwidth * eb);
  }
  for (size_t i = 0; i < c.size(); ++i) k.time_s.push_back(std::max(c[i], m[i]));
  return k;
}

double network_time_s(const KernelPlan& k, Execution e, const Runtime& r) {
  ExecutionClock clock(e, r);
  for (size_t i = 0; i < k.time_s.size(); ++i) clock.add(k.time_s[i], k.time_s[i], k.host_s[i]);
  return clock.dt;
}

namespace {

// A class's rule on one roof from layers timed one by one in eager mode. Such a time is the larger
// of the host's time to issue the layer (h, the same for every layer of the class) and the
// kernel's own time: back to back, the host issues the next call while the GPU still runs the last
// one, so a short kernel hides behind h and a long one hides h. The pair (h, laws) with the least
// squares of log(max(h, predicted) / measured): the laws fitted on the layers measured well above
// h (at least kAboveHost × h; the others only say their kernel took at most h).
constexpr double kAboveHost = 1.5;
CalibrationRule fit_rule_eager(const std::string& cls, const std::string& roof, const std::vector<const Sample*>& samples, double& host_s) {
  CalibrationRule best = fit_rule(cls, roof, samples, true);
  double best_loss = INFINITY;
  host_s = 0;
  const double eps = 1e-12 * (1.0 + static_cast<double>(samples.size()));
  for (double h : fixed_time_grid()) {
    std::vector<const Sample*> above;
    for (const Sample* s : samples)
      if (s->measured_s >= kAboveHost * h) above.push_back(s);
    if (above.empty()) break;  // (h only grows)
    CalibrationRule r = fit_rule(cls, roof, above, true);
    // a layer measured near h says only that its kernel took at most its time: one the laws
    // predict slower than that joins the fit at three quarters of its time, until none does
    std::deque<Sample> bounded;
    for (int round = 0; round < 4; ++round) {
      bool added = false;
      for (const Sample* s : samples)
        if (s->measured_s < kAboveHost * h && rule_time(*s, r) > s->measured_s &&
            std::none_of(bounded.begin(), bounded.end(), [&](const Sample& b) { return b.layer == s->layer && b.network == s->network; })) {
          bounded.push_back(*s);
          bounded.back().measured_s = 0.75 * s->measured_s;
          above.push_back(&bounded.back());
          added = true;
        }
      if (!added) break;
      r = fit_rule(cls, roof, above, true);
    }
    double loss = 0;
    for (const Sample* s : samples) {
      const double e = std::log(std::max(h, rule_time(*s, r)) / s->measured_s);
      loss += e * e;
    }
    if (loss < best_loss - eps) best_loss = loss, best = std::move(r), host_s = h;
  }
  return best;
}

// A layer of a measured network: its compute and memory times under the rules, and the roof and
// bound the network correction of its time goes by.
// (the efficiencies as the engine will apply them: the law with the rule's factor folded in,
// clamped to [0.001, 1], then ÷ a measured shape's factor, clamped again)
struct PlannedLayer {
  size_t kernel = 0;
  double compute = 0, memory = 0;  // work / peak and bytes / bandwidth: the times at efficiency 1
  double ec = 1, eb = 1;           // the laws' efficiencies before the clamp
  double shape = 1;                // a measured shape's factor (2b)
  double host = -1;
  int pair = -1;  // its rule's index (the rule's factor scales its time; -1: no rule)
};
struct PlannedNetwork {
  const NetworkSample* m = nullptr;
  std::vector<PlannedLayer> layers;
  size_t kernels = 0;
};


// A network's time with each rule's layers' efficiencies ÷ factor[rule] (its times × factor, as
// far as the roofline lets them go).
double planned_time(const PlannedNetwork& p, const std::vector<double>& factor, Execution e, const Runtime& rt, double host_scale, double default_host) {
  thread_local std::vector<double> c, m, h;
  c.assign(p.kernels, 0), m.assign(p.kernels, 0), h.assign(p.kernels, -1);
  for (const PlannedLayer& l : p.layers) {
    const double f = l.pair >= 0 ? factor[static_cast<size_t>(l.pair)] : 1;
    double ec = std::clamp(l.ec / f, 0.001, 1.0), eb = std::clamp(l.eb / f, 0.001, 1.0);  // (the law with the factor in a, as written)
    divide_efficiencies(ec, eb, l.shape);
    c[l.kernel] += l.compute / ec;
    m[l.kernel] += l.memory / eb;
    h[l.kernel] = std::max(h[l.kernel], l.host);
  }
  ExecutionClock clock(e, rt);
  for (size_t i = 0; i < p.kernels; ++i) clock.add(std::max(c[i], m[i]), std::max(c[i], m[i]), (h[i] >= 0 ? h[i] : default_host) * host_scale);
  return clock.dt;
}

// Each network's layer rows, each layer once: a file of rsim_torch's lists a layer timed eager and
// in a CUDA graph as two rows, and a network runs it once (its first row stands for it)
std::map<std::string, std::vector<const Sample*>> network_layers(const std::vector<Sample>& rows) {
  std::map<std::string, std::vector<const Sample*>> out;
  std::set<std::pair<std::string, std::string>> seen;  // network, layer
  for (const auto& s : rows)
    if (s.layer.empty() || seen.insert({s.network, s.layer}).second) out[s.network].push_back(&s);
  return out;
}

double median_of(std::vector<double> v) {
  if (v.empty()) return NAN;
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

}  // namespace

Model fit_gpu_model(const std::vector<Sample>& rows, const std::vector<NetworkSample>& nets, const Runtime& base) {
  Model model;
  model.gpu = true;
  model.runtime = base;
  std::vector<Sample> timed;
  for (const auto& s : rows)
    if (s.measured_s > 0) timed.push_back(s);
  // 1. a rule per class and roof; the layers each rule's laws were fitted on, for the transfers
  std::vector<const Sample*> kernel_timed;  // layers whose time is their kernel's
  std::map<std::string, std::vector<double>> hosts_of_roof;
  std::vector<Sample> shifted;  // graph-timed layers with the rule's fixed time taken out
  shifted.reserve(timed.size());
  for (const auto& [key, all] : by_class_and_roof(timed)) {
    // layers timed both ways (rsim_torch measures eager and graph on CUDA by default): a layer's time
    // in a CUDA graph is its kernel's (and the graph's launch), its eager time mostly the host's, so
    // the laws come from the graph times and the host time h from the eager ones
    std::vector<const Sample*> in_graph, in_eager;
    for (const Sample* s : all) (s->execution == "eager" ? in_eager : in_graph).push_back(s);
    double both_h = -1;
    if (!in_graph.empty() && !in_eager.empty()) (void)fit_rule_eager(key.first, key.second, in_eager, both_h);
    const std::vector<const Sample*>& v = both_h >= 0 ? in_graph : all;
    size_t eager = 0;
    for (const Sample* s : v) eager += s->execution == "eager";
    if (2 * eager > v.size()) {  // timed one by one in eager mode: the fixed time is the host's
      double h = 0;
      CalibrationRule r = fit_rule_eager(key.first, key.second, v, h);
      r.host_overhead_s = h;
      hosts_of_roof[key.second].push_back(h);
      for (const Sample* s : v)
        if (s->measured_s >= kAboveHost * h) kernel_timed.push_back(s);
      model.rules.push_back(std::move(r));
    } else {  // timed in a CUDA graph (or alone): a fixed time per layer beside its work, taken out
      double fixed = 0;
      CalibrationRule r = fit_rule_with_fixed_time(key.first, key.second, v, fixed);
      for (const Sample* s : v) {
        Sample x = *s;
        x.measured_s = std::max(s->measured_s - fixed, 0.1 * s->measured_s);
        shifted.push_back(x);
      }
      if (both_h >= 0) r.host_overhead_s = both_h, hosts_of_roof[key.second].push_back(both_h);
      model.rules.push_back(std::move(r));
    }
  }
  for (const auto& s : shifted) kernel_timed.push_back(&s);
  // 2. classes the networks run but no timed layer showed on their roof: the roof's other classes' laws
  std::vector<std::pair<std::string, std::string>> missing;  // class, roof
  for (const auto& s : rows) {
    const std::string cls = op_class(s.op);
    if (cls == "other" || rule_for(model.rules, s.op, s.roof)) continue;
    if (std::find(missing.begin(), missing.end(), std::make_pair(cls, s.roof)) == missing.end()) missing.emplace_back(cls, s.roof);
  }
  for (const auto& [cls, roof] : missing) {
    std::vector<const Sample*> pool;
    for (const Sample* s : kernel_timed)
      if (s->roof == roof) pool.push_back(s);
    if (pool.empty()) continue;  // nothing measured on this roof: the roofline stands
    CalibrationRule r = fit_rule(cls, roof, pool, true);
    r.bandwidth_by_level.clear();
    r.extrapolated = true;
    if (auto it = hosts_of_roof.find(roof); it != hosts_of_roof.end()) r.host_overhead_s = median_of(it->second);
    model.rules.push_back(std::move(r));
  }
  // 2b. the layer shapes the laws miss: a library's choice per shape (cuDNN runs some 3×3
  // convolutions as Winograd and others of the same MACs not) that no smooth law follows. Each
  // shape timed well above the host (the layers the laws were fitted on) and long by its law too,
  // whose median measured / law time lies beyond kMeasuredMiss either way, is kept with that
  // factor; a network layer of the same operator, roof, shapes and MACs then runs at its law's
  // time × factor.
  {
    std::map<std::string, std::vector<std::pair<double, const Sample*>>> by_shape;  // (sorted by key: the same list from every run)
    for (const Sample* s : kernel_timed) {
      if (s->input_shape.empty() || s->output_shape.empty() || s->roof.empty() || !(s->measured_s > 0)) continue;
      const CalibrationRule* r = rule_for(model.rules, s->op, s->roof);
      if (!r || r->extrapolated) continue;
      const double t = rule_time(*s, *r);
      // timed one by one in eager mode: a layer whose law puts its kernel well under the host's time
      // per call was timed at the host's pace however long it took (a slow call, not a slow kernel)
      if (t > 0 && std::isfinite(t) && (s->execution != "eager" || t >= r->host_overhead_s))
        by_shape[measured_layer_key(s->op, s->roof, s->input_shape, s->output_shape, s->macs_counted)].emplace_back(s->measured_s / t, s);
    }
    for (auto& [key, v] : by_shape) {
      std::vector<double> f;
      for (const auto& x : v) f.push_back(x.first);
      const double m = median_of(f);
      if (!(std::fabs(std::log(m)) > std::log(kMeasuredMiss))) continue;
      const Sample& s = *v.front().second;
      MeasuredLayer l;
      l.op = s.op, l.roof = s.roof, l.input = s.input_shape, l.output = s.output_shape, l.macs = s.macs_counted, l.factor = m;
      l.from = s.network + "/" + s.layer + (v.size() > 1 ? " (median of " + std::to_string(v.size()) + " layers)" : "");
      model.measured_factors.emplace(key, m);
      model.measured_layers.push_back(std::move(l));
    }
  }
  // 3. the network rows: each network's layers timed under the rules; per roof and bound, a
  // correction of the layers' times (layers timed one by one hide short kernels behind the host),
  // the graph gap and the scale of the host overheads, fitted together on the networks' times
  const std::map<std::string, std::vector<const Sample*>> layers_of = network_layers(rows);
  std::vector<std::string> roofs;  // roofs with a rule, in order
  for (const auto& r : model.rules)
    if (std::find(roofs.begin(), roofs.end(), r.roof) == roofs.end()) roofs.push_back(r.roof);
  std::vector<PlannedNetwork> planned;
  std::vector<char> pair_used(model.rules.size(), 0);
  std::vector<double> rule_hosts;
  for (const auto& r : model.rules)
    if (r.host_overhead_s >= 0 && !r.extrapolated) rule_hosts.push_back(r.host_overhead_s);
  const double h0 = !rule_hosts.empty() ? median_of(rule_hosts) : base.has_host_overhead() ? base.host_overhead_s : 0;
  for (const auto& n : nets) {
    auto it = layers_of.find(n.network);
    if (it == layers_of.end()) continue;  // no layer rows: nothing to time it by
    PlannedNetwork p;
    p.m = &n;
    std::map<std::string, size_t> at;
    for (const Sample* s : it->second) {
      if (s->kernel.empty()) continue;
      auto [k, fresh] = at.try_emplace(s->kernel, at.size());
      PlannedLayer l;
      l.kernel = k->second;
      l.compute = s->work / s->peak;
      l.memory = s->bytes / s->bandwidth;
      l.shape = measured_factor(*s, &model.measured_factors);  // a measured shape (2b)
      if (const CalibrationRule* r = rule_for(model.rules, s->op, s->roof)) {
        l.ec = r->compute.raw(s->macs > 0 ? s->macs : s->work, s->cpg, s->outputs);
        l.eb = r->bandwidth_on(s->level).raw(s->bytes, s->cpg);
        l.host = r->host_overhead_s;
        l.pair = static_cast<int>(r - model.rules.data());
        pair_used[static_cast<size_t>(l.pair)] = 1;
      }
      p.layers.push_back(l);
    }
    p.kernels = at.size();
    if (p.kernels) planned.push_back(std::move(p));
  }
  std::vector<double> factor(model.rules.size(), 1.0);  // per rule: the factor on its layers' times
  bool graph_rows = false, eager_rows = false;
  for (const auto& p : planned) graph_rows |= p.m->execution == Execution::Graph, eager_rows |= p.m->execution == Execution::Eager;
  Runtime rt = base;
  if (graph_rows) rt.graph_gap_s = 0;
  double scale = 1, host = h0;  // eager: the rules' host overheads × scale; `host` for kernels of no rule
  // the loss: the squares of log(predicted / measured) over the network rows, and a light pull of
  // each factor towards 1 (a rule whose layers carry little of any network's time stays near 1)
  // (0.3: on the shared H200 data, the held-out networks' median error was least near it, graph
  // and eager alike: 0.05 lets one network family's rows pull another's class, 1 undoes the factors)
  constexpr double kFactorPull = 0.3;
  // (only_roof ≥ 0: the networks with a layer of that roof, the only part of the loss its
  // correction changes)
  int only_roof = -1;
  std::vector<std::vector<char>> has_roof(planned.size(), std::vector<char>(model.rules.size(), 0));
  for (size_t i = 0; i < planned.size(); ++i)
    for (const PlannedLayer& l : planned[i].layers)
      if (l.pair >= 0) has_roof[i][static_cast<size_t>(l.pair)] = 1;
  auto loss = [&]() {
    double l = 0;
    for (size_t i = 0; i < planned.size(); ++i) {
      const PlannedNetwork& p = planned[i];
      if (only_roof >= 0 && !has_roof[i][static_cast<size_t>(only_roof)]) continue;
      const double t = planned_time(p, factor, p.m->execution, rt, scale, host);
      const double e = std::log(t / p.m->time_s);
      l += e * e;
    }
    for (double f : factor) l += kFactorPull * std::log(f) * std::log(f);
    return l;
  };
  // golden sections of the loss over x in [lo, hi]; x keeps its value unless another is better.
  // `set` applies a value of x to what the loss reads.
  auto line_search = [&](double& x, double lo, double hi, const std::function<void(double)>& set) {
    const double r = 0.5 * (std::sqrt(5.0) - 1);
    const double x0 = x;
    set(x0);
    const double l0 = loss();
    double a = lo, b = hi;
    for (int it = 0; it < 22; ++it) {
      const double c = b - r * (b - a), d = a + r * (b - a);
      set(c);
      const double lc = loss();
      set(d);
      const double ld = loss();
      (lc < ld ? b : a) = lc < ld ? d : c;
    }
    x = 0.5 * (a + b);
    set(x);
    if (!(loss() < l0)) x = x0, set(x0);
  };
  if (!planned.empty()) {
    for (int round = 0; round < 4; ++round) {
      for (size_t k = 0; k < factor.size(); ++k) {  // per rule: the factor on its layers' times
        if (!pair_used[k]) continue;
        only_roof = static_cast<int>(k);
        double la = std::log(factor[k]);
        line_search(la, std::log(0.05), std::log(20.0), [&](double v) { factor[k] = std::exp(v); });
        only_roof = -1;
      }
      if (graph_rows) {
        double g = rt.graph_gap_s;
        line_search(g, 0, 100e-6, [&](double v) { rt.graph_gap_s = v; });
      }
      if (eager_rows) {
        double ls = std::log(scale);
        line_search(ls, std::log(0.25), std::log(4.0), [&](double v) { scale = std::exp(v); });
        if (rule_hosts.empty()) {
          double h = host;
          line_search(h, 0, 500e-6, [&](double v) { host = v; });
        }
      }
    }
  }
  // each rule's factor into its laws: a time × f is an efficiency ÷ f
  for (size_t k = 0; k < model.rules.size(); ++k) {
    CalibrationRule& r = model.rules[k];
    r.compute.a /= factor[k];
    r.bandwidth.a /= factor[k];
    for (auto& [level, law] : r.bandwidth_by_level) law.a /= factor[k];
    if (r.host_overhead_s >= 0) r.host_overhead_s *= scale;
    r.network_factor = factor[k];
  }
  model.host_scale = scale;
  model.runtime = base;
  if (graph_rows) model.runtime.graph_gap_s = rt.graph_gap_s;
  if (eager_rows || h0 > 0) model.runtime.host_overhead_s = (rule_hosts.empty() ? host : h0) * (rule_hosts.empty() ? 1 : scale);
  return model;
}

NetworkValidation validate_networks(const std::vector<Sample>& rows, const std::vector<NetworkSample>& nets, const Runtime& base, const Model* fitted) {
  NetworkValidation v;
  const std::map<std::string, std::vector<const Sample*>> layers_of = network_layers(rows);
  const Model all = fitted ? *fitted : fit_gpu_model(rows, nets, base);
  std::vector<std::string> names;
  for (const auto& n : nets)
    if (layers_of.count(n.network) && std::find(names.begin(), names.end(), n.network) == names.end()) names.push_back(n.network);
  // one fit per held-out network, on the machine's cores
  std::vector<std::vector<NetworkValidation::Case>> cases(names.size());
  std::atomic<size_t> next{0};
  auto work = [&]() {
    for (size_t i; (i = next++) < names.size();) {
      const std::string& held = names[i];
      std::vector<Sample> train_rows;
      std::vector<NetworkSample> train_nets;
      for (const auto& s : rows)
        if (s.network != held) train_rows.push_back(s);
      for (const auto& n : nets)
        if (n.network != held) train_nets.push_back(n);
      const Model m = fit_gpu_model(train_rows, train_nets, base);
      const auto& layers = layers_of.at(held);
      const KernelPlan p = plan_kernels(layers, m.rules, &m.measured_factors), pa = plan_kernels(layers, all.rules, &all.measured_factors),
                       p0 = plan_kernels(layers, {});
      for (const auto& n : nets) {
        if (n.network != held) continue;
        NetworkValidation::Case c;
        c.m = n;
        c.predicted_s = network_time_s(p, n.execution, m.runtime);
        c.fitted_s = network_time_s(pa, n.execution, all.runtime);
        c.uncalibrated_s = network_time_s(p0, n.execution, base);
        c.kernels = p.time_s.size();
        cases[i].push_back(c);
      }
    }
  };
  const size_t workers = std::min<size_t>(names.size(), std::max(1u, std::thread::hardware_concurrency()));
  std::vector<std::thread> threads;
  for (size_t w = 1; w < workers; ++w) threads.emplace_back(work);
  work();
  for (auto& t : threads) t.join();
  for (auto& c : cases) v.cases.insert(v.cases.end(), c.begin(), c.end());
  return v;
}

std::string beats_bound_reason(const std::string& op, const std::string& input_shape, const std::string& output_shape, double macs) {
  auto dims = [](const std::string& t) {
    std::vector<double> d;
    const std::string first = t.substr(0, t.find(';'));
    size_t pos = 0;
    while (pos < first.size()) {
      size_t x = first.find('x', pos);
      if (x == std::string::npos) x = first.size();
      d.push_back(to_d(first.substr(pos, x - pos)));
      pos = x + 1;
    }
    return d;
  };
  if (op != "conv2d") return "";
  const auto in = dims(input_shape), out = dims(output_shape);
  if (in.size() != 4 || out.size() != 4 || !(macs > 0)) return "";
  const double outputs = out[0] * out[1] * out[2] * out[3], taps = macs / outputs;  // MACs per output: channels per group × kernel area
  const bool same_size = in[2] == out[2] && in[3] == out[3];
  if (same_size && std::fabs(taps - 9 * in[1]) < 0.5)
    return "a 3x3 stride-1 convolution: the library may run Winograd, which multiplies fewer times than the convolution's MACs "
           "(declare it: algorithms: {conv3x3: winograd_f4x4} on the platform)";
  if (std::fabs(taps - in[1]) < 0.5 && out[2] < in[2])
    return "a strided 1x1 convolution reads only the input pixels it uses (1/stride^2 of its input; declare it: "
           "algorithms: {conv1x1_strided: touched_input} on the platform)";
  return "";
}

std::vector<BeatsBound> beats_bound(const std::vector<Sample>& rows) {
  std::vector<BeatsBound> out;
  for (const auto& s : rows)
    if (s.measured_min_s > 0 && s.time_s > 0 && s.measured_min_s < s.time_s)
      out.push_back({s.network, s.layer, s.op, beats_bound_reason(s.op, s.input_shape, s.output_shape, s.macs), s.measured_min_s, s.time_s});
  return out;
}

std::string calibrated_platform_yaml(const std::string& text, const std::string& name, const std::vector<CalibrationRule>& rules,
                                     const std::string& fitted_from, const Contention& contention, const Runtime* runtime,
                                     const std::string& runtime_source, const std::vector<MeasuredLayer>& measured) {
  std::string out;
  size_t pos = 0;
  bool named = false, in_runtime = false;
  while (pos < text.size()) {
    size_t nl = text.find('\n', pos);
    if (nl == std::string::npos) nl = text.size();
    std::string line = text.substr(pos, nl - pos);
    pos = nl + 1;
    if (in_runtime) {  // the block's indented lines (and blank ones) go with it
      if (line.empty() || line[0] == ' ' || line[0] == '\t') continue;
      in_runtime = false;
    }
    if (!named && line.rfind("name:", 0) == 0) {
      line = "name: " + name;
      named = true;
    }
    if (runtime && line.rfind("runtime:", 0) == 0) {  // replaced below
      in_runtime = true;
      continue;
    }
    out += line + "\n";
  }
  char buf[512];
  out += "# Calibrated by `rsim calibrate` from " + fitted_from + ": per op class (and compute roof), efficiency = a · x^b · g^c\n";
  out += "# (clamped to (0, 1]), x = the layer's MACs for compute (FLOPs without MACs), its bytes for bandwidth, g = its\n";
  out += "# input channels per group (grouped operators; factor 1 for the others); bandwidth_by_level: the bandwidth law of a\n";
  out += "# memory level that held enough of the class's memory-bound layers (others take bandwidth); host_overhead: the\n";
  out += "# host's time to issue one kernel of the class in eager mode; extrapolated: no measured layer of the class ran on\n";
  out += "# that roof, so the laws are the roof's other classes' together (compute or bandwidth: that side's law alone, the class's\n";
  out += "# layers being all on the other side of the ridge); range: the layers the laws were fitted on (beyond it a law keeps\n";
  out += "# its value at the nearer end); occupancy: [d, p_sat], the compute law's factor min(1, p / p_sat)^d, p = the layer's\n";
  out += "# output elements (a GPU kernel with few outputs leaves multiprocessors idle). derated_time_s carries it.\n";
  out += "calibration:\n";
  auto quoted = [](const std::string& t) {
    std::string q = "\"";
    for (char c : t) q += c == '"' || c == '\\' ? std::string("\\") + c : std::string(1, c);
    return q + "\"";
  };
  for (const auto& r : rules) {
    std::string ops;
    for (const auto& o : r.ops) ops += (ops.empty() ? "" : ", ") + o;
    out += "  - {class: " + r.name;
    if (!r.roof.empty()) out += ", roof: " + quoted(r.roof);
    std::snprintf(buf, sizeof buf, ", ops: [%s], compute: [%.6g, %.6g, %.6g], bandwidth: [%.6g, %.6g, %.6g]", ops.c_str(), r.compute.a, r.compute.b,
                  r.compute.c, r.bandwidth.a, r.bandwidth.b, r.bandwidth.c);
    out += buf;
    if (!r.bandwidth_by_level.empty()) {
      out += ", bandwidth_by_level: {";
      for (size_t i = 0; i < r.bandwidth_by_level.size(); ++i) {
        const auto& [level, law] = r.bandwidth_by_level[i];
        std::snprintf(buf, sizeof buf, "%s%s: [%.6g, %.6g, %.6g]", i ? ", " : "", quoted(level).c_str(), law.a, law.b, law.c);
        out += buf;
      }
      out += "}";
    }
    if (r.compute.has_occupancy()) {
      std::snprintf(buf, sizeof buf, ", occupancy: [%.6g, %.6g]", r.compute.d, r.compute.p_sat);
      out += buf;
    }
    if (r.host_overhead_s >= 0) {
      std::snprintf(buf, sizeof buf, ", host_overhead: %.6g us", r.host_overhead_s * 1e6);
      out += buf;
    }
    if (r.band) {  // the spread of the class's held-out errors (measured / predicted, 10th and 90th percentile)
      std::snprintf(buf, sizeof buf, ", error_band: [%.4g, %.4g]", r.error_lo, r.error_hi);
      out += buf;
    }
    if (r.extrapolated) out += ", extrapolated: true";
    else if (r.extrapolated_compute) out += ", extrapolated: compute";
    else if (r.extrapolated_bandwidth) out += ", extrapolated: bandwidth";
    // the range the laws were fitted on (the widest over the bandwidth laws; g over both sides)
    double bx_lo = r.bandwidth.x_lo, bx_hi = r.bandwidth.x_hi, g_lo = 0, g_hi = 0;
    for (const auto& [level, law] : r.bandwidth_by_level)
      if (law.x_lo > 0) bx_lo = bx_lo > 0 ? std::min(bx_lo, law.x_lo) : law.x_lo, bx_hi = std::max(bx_hi, law.x_hi);
    for (const PowerLaw* law : {&r.compute, &r.bandwidth})
      if (law->g_lo > 0) g_lo = g_lo > 0 ? std::min(g_lo, law->g_lo) : law->g_lo, g_hi = std::max(g_hi, law->g_hi);
    std::string range;
    auto pair = [&](const char* key, double lo, double hi) {
      if (!(lo > 0)) return;
      std::snprintf(buf, sizeof buf, "%s%s: [%.6g, %.6g]", range.empty() ? "" : ", ", key, lo, hi);
      range += buf;
    };
    pair("compute_x", r.compute.x_lo, r.compute.x_hi);
    pair("bandwidth_x", bx_lo, bx_hi);
    pair("channels_per_group", g_lo, g_hi);
    if (r.compute.has_occupancy()) pair("outputs", r.compute.p_lo, r.compute.p_hi);
    if (!range.empty()) out += ", range: {" + range + "}";
    out += "}\n";
  }
  if (runtime) {
    out += "# The runtime: launch_overhead per kernel (execution: fused) or per graph; graph_gap between the kernels of one\n";
    out += "# CUDA graph; host_overhead per kernel in eager mode for a class without its own.\n";
    out += "runtime:\n";
    std::snprintf(buf, sizeof buf, "  launch_overhead: %.6g us\n", runtime->launch_overhead_s * 1e6);
    out += buf;
    if (runtime->has_graph_gap()) {
      std::snprintf(buf, sizeof buf, "  graph_gap: %.6g us\n", runtime->graph_gap_s * 1e6);
      out += buf;
    }
    if (runtime->has_host_overhead()) {
      std::snprintf(buf, sizeof buf, "  host_overhead: %.6g us\n", runtime->host_overhead_s * 1e6);
      out += buf;
    }
    if (!runtime_source.empty()) out += "  source: " + quoted(runtime_source) + "\n";
    {  // what each time rests on: the fitted ones calibrated, the others as the base platform said
      std::string b;
      auto add = [&](const char* key, Basis x, bool stated) {
        if (stated && x != Basis::Unstated) b += (b.empty() ? "" : ", ") + std::string(key) + ": " + basis_name(x);
      };
      add("launch_overhead", runtime->launch_basis, true);
      add("graph_gap", runtime->gap_basis, runtime->has_graph_gap());
      add("host_overhead", runtime->host_basis, runtime->has_host_overhead());
      if (!b.empty()) out += "  basis: {" + b + "}\n";
    }
  }
  if (!measured.empty()) {
    out += "# Layer shapes timed in those files whose times the class laws missed by more than 10 % either way (a library's\n";
    out += "# choice per shape, such as Winograd for some 3x3 convolutions): a layer of the same op, roof, input and output\n";
    out += "# shapes and MACs runs at its law's time x factor (the median measured / law time of the layers of that shape).\n";
    out += "measured_layers:\n";
    for (const auto& l : measured) {
      std::snprintf(buf, sizeof buf, ", macs: %.0f, factor: %.4g", l.macs, l.factor);
      out += "  - {op: " + quoted(l.op) + ", roof: " + quoted(l.roof) + ", input: " + quoted(l.input) + ", output: " + quoted(l.output) + buf;
      if (!l.from.empty()) out += ", from: " + quoted(l.from);
      out += "}\n";
    }
  }
  if (contention.active()) {
    out += "# Long compute-bound layers slower than the class laws (time sharing with other work on the measured core,\n";
    out += "# or the layers' own slowdown): a compute-bound layer of derated time t takes t · (1 + (slowdown − 1) / (1 + (onset_s / t)^8)).\n";
    std::snprintf(buf, sizeof buf, "contention: {onset_s: %.6g, slowdown: %.6g}\n", contention.onset_s, contention.slowdown);
    out += buf;
  }
  return out;
}

}  // namespace rsim::measure
