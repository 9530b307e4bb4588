// What the terminal shows: the preview table, the summary, the limit in words; write_file_atomic.
#include "engine/output/output.hpp"
#include "engine/output/output_detail.hpp"

#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <array>
#include <cstring>
#include <string_view>
#include <unordered_map>
#include <cstdio>
#include <fcntl.h>
#include <sys/uio.h>
#include <unistd.h>

#include <climits>

#include <filesystem>
#include <memory>
#include <fstream>
#include <set>
#include <stdexcept>

#include "engine/model/config.hpp"
#include "engine/model/units.hpp"

namespace rsim {

using namespace output_detail;

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

std::string terminal_table(const RunResult& r, size_t max_rows, size_t total_rows) {
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
  total = std::max(total, total_rows);
  if (max_rows == 0) return std::to_string(total) + " row" + (total == 1 ? "" : "s") + " in results.csv\n";  // --rows 0: no table
  std::string out = t.render();
  if (total > shown) out += "... " + std::to_string(total - shown) + " more rows in results.csv\n";
  return out;
}

std::string ignored_notes(const RunResult& r) {
  std::string out;
  std::set<std::string> seen;
  for (const auto& pr : r.results)
    for (const SummaryRow& s : pr.summary)
      if (!s.ignored.empty() && seen.insert(s.network + '\n' + s.ignored).second)
        out += "note: network '" + s.network + "' leaves out operators mapped to ignore (onnx_ops): " + s.ignored + "; their costs are not counted\n";
  return out;
}

namespace {
std::string percent(double share) {
  char b[32];
  std::snprintf(b, sizeof b, "%.0f %%", 100 * share);
  return b;
}
std::string assumed_word(Basis b) { return b == Basis::Assumption ? ", an assumed figure" : b == Basis::Unstated ? "" : std::string(", ") + basis_name(b); }
}  // namespace

std::string run_dtype_label(const RunResult& r) {
  std::vector<DType> seen;
  for (const auto& pr : r.results)
    for (const SummaryRow& s : pr.summary)
      if (std::find(seen.begin(), seen.end(), s.dtype) == seen.end()) seen.push_back(s.dtype);
  if (seen.empty()) return r.results.empty() ? "fp32" : dtype_name(r.results.front().settings.dtype);
  if (seen.size() == 1) return dtype_name(seen.front());
  std::sort(seen.begin(), seen.end(), [](DType a, DType b) { return std::string(dtype_name(a)) < dtype_name(b); });
  std::string out = "mixed (";
  for (size_t i = 0; i < seen.size(); ++i) out += (i ? ", " : "") + std::string(dtype_name(seen[i]));
  return out + ")";
}

std::string limit_text(const SummaryRow& s) {
  const auto [limit, share] = time_limit(s.dparts);
  if (!*limit) return "";
  return std::string(limit) + " " + percent(share);
}

std::string limit_sentence(const SummaryRow& s, const Settings& set, const Platform* pl) {
  const auto [limit, share] = time_limit(s.dparts);
  const std::string what = std::string(limit);
  if (what.empty() || what == "compute" || what == "memory") return "";
  std::string out = s.network + " on " + s.platform + ": " + percent(share) + " of " + si(s.derated_time_s, "s", 3) + " is ";
  const Runtime rt = pl ? pl->runtime : Runtime{};
  const std::string kernels = format_number(s.kernels) + " kernel" + (s.kernels == 1 ? "" : "s");
  if (what == "launch") {
    out += "launch overhead";
    if (set.execution == Execution::Graph)
      out += " (one graph launch of " + si(rt.launch_overhead_s, "s", 3) + assumed_word(rt.launch_basis) + " and a gap of " + si(std::max(0.0, rt.graph_gap_s), "s", 3) +
             assumed_word(rt.gap_basis) + " between " + kernels + ")";
    else if (s.phase == "request")
      out += " (" + si(rt.launch_overhead_s, "s", 3) + " per kernel" + assumed_word(rt.launch_basis) + ", over the prefill and every decode step)";
    else
      out += " (" + kernels + " × " + si(rt.launch_overhead_s, "s", 3) + assumed_word(rt.launch_basis) + ")";
  } else if (what == "host") {
    out += "the GPU waiting for the host to issue its kernels (eager: " + si(std::max(0.0, rt.host_overhead_s), "s", 3) + " per kernel" +
           assumed_word(rt.host_basis) + ")";
  } else if (what == "comm") {
    out += "communication not hidden behind compute (" + si(s.comm_time_s, "s", 3) + " of collectives over " + format_number(s.gpus) + " GPUs)";
  } else {
    out += "pipeline bubble (" + format_number(s.pipeline_parallel) + " stages, " + format_number(s.micro_batches) + " micro-batch" +
           (s.micro_batches == 1 ? "" : "es") + ")";
  }
  return out;
}

std::string limit_notes(const RunResult& r, size_t most) {
  std::string out;
  size_t n = 0;
  std::set<std::string> seen;
  for (const auto& pr : r.results)
    for (const SummaryRow& s : pr.summary) {
      const Platform* pl = nullptr;
      for (const auto& p : pr.platforms)
        if (p->name == s.platform) pl = p.get();
      std::string line = limit_sentence(s, pr.settings, pl);
      if (line.empty() || !seen.insert(line).second) continue;
      if (n++ < most) out += line + "\n";
    }
  if (n > most) out += "(" + std::to_string(n - most) + " more networks not limited by compute or memory: summary.csv's limit column)\n";
  return out;
}

std::string terminal_summary(const RunResult& r, size_t max_rows, size_t total_rows) {
  Table t;
  t.head = {"pt"};
  for (const auto& v : r.var_names) t.head.push_back(v);
  for (const char* h : {"platform", "network", "FLOPs", "bytes", "FLOP/B", "kernels", "time", "derated time", "achieved", "mem/comp layers", "limit"})
    t.head.push_back(h);
  t.right.assign(t.head.size(), true);
  for (size_t i = 1 + r.var_names.size(); i < 3 + r.var_names.size(); ++i) t.right[i] = false;
  t.right.back() = false;
  size_t total = 0;
  for (size_t pi = 0; pi < r.results.size(); ++pi)
    for (const SummaryRow& s : r.results[pi].summary) {
      if (total++ >= max_rows) continue;
      std::vector<std::string> cells = {std::to_string(s.point)};
      for (const auto& [k, v] : r.points[pi].bindings) cells.push_back(v);
      std::string dtime = si(s.derated_time_s, "s", 4);
      if (s.banded) dtime += " (" + si(s.derated_time_s + s.dparts.lo, "s", 2) + "–" + si(s.derated_time_s + s.dparts.hi, "s", 2) + ")";
      cells.insert(cells.end(), {s.platform, s.network, si(s.flops, "", 4), si(s.bytes, "B", 4), intensity_text(s.intensity),
                                 format_number(s.kernels), si(s.time_s, "s", 4), dtime, si(s.achieved_flops_per_s, "FLOP/s", 4),
                                 std::to_string(s.memory_bound) + "/" + std::to_string(s.compute_bound), limit_text(s)});
      t.rows.push_back(cells);
    }
  total = std::max(total, total_rows);
  if (max_rows == 0) return std::to_string(total) + " row" + (total == 1 ? "" : "s") + " in summary.csv\n" + limit_notes(r) + ignored_notes(r);  // --rows 0
  std::string out = t.render();
  if (total > max_rows) out += "... " + std::to_string(total - max_rows) + " more rows in summary.csv\n";
  out += limit_notes(r);
  out += ignored_notes(r);
  return out;
}

void write_file_atomic(const std::string& path_in, const std::string& content) {
  // Only a regular file is written (over, atomically): a device, FIFO, socket or folder at the
  // path is refused — a rename would replace /dev/null itself — and a symbolic link is followed
  // to the regular file it names (replacing the link would leave its target unwritten).
  if (path_in == "-") {  // `-o -`: standard output, every write checked
    if (std::fwrite(content.data(), 1, content.size(), stdout) != content.size() || std::fflush(stdout) != 0)
      throw std::runtime_error(std::string("cannot write to standard output: ") + std::strerror(errno));
    return;
  }
  std::string path = path_in;
  struct stat st {};
  if (::lstat(path.c_str(), &st) == 0) {
    if (S_ISLNK(st.st_mode)) {
      std::error_code ec;
      std::filesystem::path target = std::filesystem::canonical(path, ec);
      struct stat ts {};
      if (ec || ::stat(target.c_str(), &ts) != 0 || !S_ISREG(ts.st_mode))
        throw std::runtime_error("cannot write '" + path_in + "': it is a symbolic link to something other than a regular file (rsim writes regular files only)");
      path = target.string();
    } else if (!S_ISREG(st.st_mode)) {
      const char* what = S_ISDIR(st.st_mode) ? "a directory" : S_ISCHR(st.st_mode) ? "a character device" : S_ISBLK(st.st_mode) ? "a block device"
                         : S_ISFIFO(st.st_mode) ? "a FIFO" : S_ISSOCK(st.st_mode) ? "a socket" : "not a regular file";
      throw std::runtime_error("cannot write '" + path_in + "': it is " + std::string(what) + " (rsim writes regular files only; give a file's path)");
    }
  }
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
