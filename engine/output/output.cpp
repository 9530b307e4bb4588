// The run's tables: results.csv and summary.csv (their columns, rows and the summary's texts); escaping.
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

std::string csv_escape(const std::string& s) {
  if (!needs_csv_quotes(s)) return s;
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

// ---- appending formatters: the same text as format_number, without temporaries


namespace output_detail {

// LLM capacity at a row's context and batch (NaN: not an LLM step, or a memory of no stated size).
// A sequence holds its KV cache and its share of the largest layer's activations: the largest
// batch whose footprint (weights + batch × that) fits, as fits_in_memory asks; 0 when the weights
// alone do not fit. The largest context: the most tokens each sequence's cache may hold beside the
// weights and the activations, less the step's new tokens.
double max_batch_in_memory(const SummaryRow& s) {
  if (s.kv_bytes_per_token <= 0 || !(s.memory_size_bytes > 0) || !(s.batch > 0)) return NAN;
  const double free = s.memory_size_bytes - s.weight_footprint_bytes, per_seq = (s.kv_cache_bytes + s.activation_bytes) / s.batch;
  if (free <= 0 || !(per_seq > 0)) return 0;
  return std::floor(free / per_seq);
}
double max_context_in_memory(const SummaryRow& s) {
  if (s.kv_bytes_per_token <= 0 || !(s.memory_size_bytes > 0) || !(s.batch > 0)) return NAN;
  const double free = s.memory_size_bytes - s.weight_footprint_bytes - s.activation_bytes;
  if (free <= 0) return 0;
  return std::max(0.0, std::floor(free / (s.batch * s.kv_bytes_per_token)) - s.new_tokens_per_seq);
}

void format_summary(SummaryTexts& t, const SummaryRow& s, const Settings& st) {
  const LlmTotals l = llm_totals(s);
  t.v = {s.layers, s.kernels, s.macs, s.flops, s.params, s.bytes, s.intensity, s.time_s, s.achieved_flops_per_s,
         static_cast<double>(s.memory_bound), static_cast<double>(s.compute_bound), s.derated_time_s, s.derated_achieved_flops_per_s,
         static_cast<double>(s.derated_memory_bound), static_cast<double>(s.derated_compute_bound), s.batch, s.derated_time_s / s.batch,
         st.flops_per_mac, s.active_params, l.tokens, l.tokens_per_s, l.derated_tokens_per_s, l.ttft_s, l.derated_ttft_s, l.tpot_s,
         l.derated_tpot_s, s.weight_footprint_bytes, s.kv_cache_bytes, s.activation_bytes, s.memory_footprint_bytes, s.memory_size_bytes,
         s.tensor_parallel, s.params_per_gpu, s.comm_bytes, s.comm_time_s, s.gpus, s.pipeline_parallel, s.micro_batches, s.pipeline_bubble,
         s.expert_parallel, s.data_parallel, s.phase == "request" ? s.prompt : NAN,
         s.phase == "request" ? s.generate : NAN, l.e2e_s, l.derated_e2e_s, l.tokens_per_s_per_user, l.tokens_per_s_per_gpu,
         s.parts.work(), s.dparts.work(), s.parts.overhead(), s.dparts.overhead(), s.parts.comm, s.dparts.comm, s.parts.bubble, s.dparts.bubble,
         time_limit(s.dparts).second, s.derated_time_s > 0 ? std::min(1.0, s.dparts.assumed_total() / s.derated_time_s) : 0,
         s.banded ? s.derated_time_s + s.dparts.lo : NAN, s.banded ? s.derated_time_s + s.dparts.hi : NAN,
         s.kv_bytes_per_token > 0 ? s.kv_bytes_per_token : NAN, max_batch_in_memory(s), max_context_in_memory(s)};
  for (size_t f = 0; f < SummaryTexts::kFields; ++f) {
    uint64_t bits;
    std::memcpy(&bits, &t.v[f], sizeof bits);
    if ((t.known >> f & 1u) && t.bits[f] == bits) continue;
    if (std::isfinite(t.v[f])) {  // finite_text's text lies in kNumberChars bytes or more: copied as a whole
      const std::string_view x = finite_text(t.v[f]);
      std::memcpy(t.text[f], x.data(), kNumberChars);
      t.len[f] = static_cast<unsigned char>(x.size());
    } else {
      const std::string_view x = num_view(t.v[f]);
      std::memcpy(t.text[f], x.data(), x.size());
      t.len[f] = static_cast<unsigned char>(x.size());
    }
    t.bits[f] = bits;
    t.known |= uint64_t{1} << f;
  }
}

// Each summary row's texts of a point, in a per-thread list kept from point to point (the writer's
// and the whole-table functions' alike)
const SummaryTexts* summary_texts(const PointResult& pr) {
  thread_local std::vector<SummaryTexts> texts;
  texts.resize(pr.summary.size());
  for (size_t i = 0; i < pr.summary.size(); ++i) format_summary(texts[i], pr.summary[i], pr.settings);
  return texts.data();
}

}  // namespace output_detail

const std::vector<std::string>& results_columns() {
  static const std::vector<std::string> c = {
      "point", "platform", "network", "layer", "op", "dtype", "compute_dtype", "weights_dtype", "kv_dtype", "input_shape", "output_shape",
      "macs", "flops", "macs_executed", "flops_executed", "mac_count", "params", "weight_bytes", "input_bytes", "output_bytes", "kv_read_bytes", "kv_write_bytes", "scratch_bytes", "bytes", "intensity", "mac_intensity", "compute_roof", "memory_level",
      "peak_flops_per_s", "bandwidth_bytes_per_s", "attainable_flops_per_s", "time_s", "bound", "derated_peak_flops_per_s",
      "derated_bandwidth_bytes_per_s", "derated_attainable_flops_per_s", "derated_time_s", "derated_bound", "kernel", "efficiency_compute",
      "efficiency_bandwidth", "flops_per_mac", "memory_model", "comm_bytes", "comm_time_s", "collective"};
  return c;
}

const std::vector<std::string>& summary_columns() {
  static const std::vector<std::string> c = {
      "point", "platform", "network", "dtype", "layers", "kernels", "macs", "flops", "params", "bytes", "intensity", "time_s", "achieved_flops_per_s",
      "memory_bound_layers", "compute_bound_layers", "derated_time_s", "derated_achieved_flops_per_s",
      "derated_memory_bound_layers", "derated_compute_bound_layers", "batch", "derated_time_per_sample_s", "flops_per_mac", "memory_model",
      "active_params", "phase", "tokens", "tokens_per_s", "derated_tokens_per_s", "time_to_first_token_s", "derated_time_to_first_token_s",
      "time_per_output_token_s", "derated_time_per_output_token_s", "weight_footprint_bytes", "kv_cache_bytes", "activation_bytes",
      "memory_footprint_bytes", "memory_size_bytes", "fits_in_memory", "execution", "tensor_parallel", "params_per_gpu", "comm_bytes", "comm_time_s",
      "gpus", "pipeline_parallel", "micro_batches", "pipeline_bubble", "expert_parallel", "data_parallel",
      "prompt", "generate", "e2e_latency_s", "derated_e2e_latency_s", "tokens_per_s_per_user", "tokens_per_s_per_gpu", "dtype_source", "ignored_ops",
      "work_time_s", "derated_work_time_s", "overhead_time_s", "derated_overhead_time_s", "exposed_comm_time_s", "derated_exposed_comm_time_s",
      "bubble_time_s", "derated_bubble_time_s", "limit", "limit_share", "assumed_share", "derated_time_lo_s", "derated_time_hi_s",
      "kv_bytes_per_token", "max_batch_in_memory", "max_context_in_memory"};
  return c;
}


LlmTotals llm_totals(const SummaryRow& s) {
  LlmTotals t;
  if (s.phase.empty()) return t;
  t.tokens = s.tokens;
  t.tokens_per_s = s.time_s > 0 ? s.tokens / s.time_s : NAN;
  t.derated_tokens_per_s = s.derated_time_s > 0 ? s.tokens / s.derated_time_s : NAN;
  t.tokens_per_s_per_gpu = s.time_s > 0 ? s.tokens / s.time_s / s.gpus : NAN;  // (a step's or a request's)
  if (s.phase == "request") {
    t.ttft_s = s.ttft_s, t.derated_ttft_s = s.derated_ttft_s;
    t.tpot_s = s.tpot_s, t.derated_tpot_s = s.derated_tpot_s;
    t.e2e_s = s.time_s, t.derated_e2e_s = s.derated_time_s;
    t.tokens_per_s_per_user = s.tpot_s > 0 ? 1 / s.tpot_s : NAN;
    if (s.continuous) {  // the steady state: every sequence gets a token each step
      t.tokens_per_s = s.tpot_s > 0 ? s.batch * s.data_parallel / s.tpot_s : NAN;
      t.derated_tokens_per_s = s.derated_tpot_s > 0 ? s.batch * s.data_parallel / s.derated_tpot_s : NAN;
      t.tokens_per_s_per_gpu = t.tokens_per_s / s.gpus;
    }
  } else if (s.phase == "prefill") {
    t.ttft_s = s.time_s;
    t.derated_ttft_s = s.derated_time_s;
  } else {
    t.tpot_s = s.time_s;
    t.derated_tpot_s = s.derated_time_s;
  }
  return t;
}

std::string results_csv_header(const RunHeader& h) {
  std::string out = table_header(results_columns(), h.var_names);
  if (!h.metric_names.empty()) {  // scripts' derived metrics close each row
    out.pop_back();
    for (const auto& m : h.metric_names) out += "," + csv_escape(m);
    out += "\n";
  }
  return out;
}

std::string summary_csv_header(const RunHeader& h) { return table_header(summary_columns(), h.var_names); }


// results.csv's rows of a point; twin_ok from check_twins
void output_detail::put_results_csv(std::string& out, const PointResult& pr, const Point& p, const std::vector<char>& twin_ok) {
  std::string lead;  // point and sweep values: the same for every row of the point
  put_uint(lead, p.index);
  for (const auto& [k, v] : p.bindings) lead += ',', put_csv(lead, v);
  std::string conv = ",";  // conventions close each row
  put_num(conv, pr.settings.flops_per_mac);
  conv += ',';
  conv += memory_model_name(pr.settings.memory_model);
  const std::string_view work = pr.settings.executed_work ? ",executed" : ",conventional";
  thread_local std::array<Buf::Memo, 32> memo;  // per numeric column, kept from point to point
  thread_local std::vector<Segments> seg;
  seg.resize(pr.rows.size());
  auto row_bound = [&](const Row& row) {
    size_t bound = lead.size() + conv.size() + 256 + (32 + row.metrics.size()) * (Buf::kNum + 1);
    for (const std::string* s : {&row.platform, &row.network, &row.layer, &row.op, &row.input_shapes, &row.output_shapes, &row.compute_roof,
                                 &row.memory_level, &row.kernel, &row.collective})
      bound += Buf::csv_bound(*s) + 1;
    return bound;
  };
  NamesText names;
  auto names_text = [](std::string& t, const Row& row) {
    t += ',', put_csv(t, row.platform);
    t += ',', put_csv(t, row.network);
  };
  write_rows(out, pr.rows, row_bound, [&](Buf& b, size_t ri) {
    const Row& row = pr.rows[ri];
    size_t col = 0;
    Segments& sg = seg[ri];
    b.lit(lead);
    b.lit(names.get(row, names_text));
    b.ch(','), b.csv(row.layer);
    if (twin_ok[ri]) {  // the twin's text with this row's names (the same bound: the same fields)
      const Segments& ts = seg[static_cast<size_t>(row.twin)];
      sg.a0 = b.pos(), b.copy(ts.a0, ts.a1), sg.a1 = b.pos();
      b.ch(','), b.csv(row.kernel);
      sg.b0 = b.pos(), b.copy(ts.b0, ts.b1), sg.b1 = b.pos();
      return;
    }
    sg.a0 = b.pos();
    b.ch(','), b.csv(row.op);
    b.ch(',');
    b.lit(dtype_name(row.dtype));
    b.ch(',');
    b.lit(dtype_name(row.compute_dtype));
    b.ch(',');
    if (row.has_weights) b.lit(dtype_name(row.weights_dtype));
    b.ch(',');
    if (row.touches_kv) b.lit(dtype_name(row.kv_dtype));
    b.ch(',');
    b.lit(row.input_shapes);
    b.ch(',');
    b.lit(row.output_shapes);
    double mac_i = row.bytes > 0 ? row.cost.macs / row.bytes : (row.cost.macs > 0 ? INFINITY : 0);
    for (double v : {row.cost.macs, row.cost.flops, row.cost.macs_executed, row.cost.flops_executed}) b.ch(','), b.num(v, memo[col++]);
    b.lit(work);
    for (double v : {row.cost.params, row.cost.weight_bytes, row.cost.input_total(),
                     row.cost.output_total(), row.cost.kv_read_bytes, row.cost.kv_write_bytes, row.cost.scratch_bytes, row.bytes,
                     row.theoretical.intensity, mac_i})
      b.ch(','), b.num(v, memo[col++]);
    b.ch(','), b.csv(row.compute_roof);
    b.ch(','), b.csv(row.memory_level);
    for (const RoofPoint* rp : {&row.theoretical, &row.derated}) {
      for (double v : {rp->peak_flops_per_s, rp->bandwidth_bytes_per_s, rp->attainable_flops_per_s, rp->time_s}) b.ch(','), b.num(v, memo[col++]);
      b.ch(',');
      b.lit(bound_name(rp->bound));
    }
    sg.a1 = b.pos();
    b.ch(','), b.csv(row.kernel);
    sg.b0 = b.pos();
    b.ch(','), b.num(row.efficiency.compute, memo[col++]);
    b.ch(','), b.num(row.efficiency.bandwidth, memo[col++]);
    b.lit(conv);
    b.ch(','), b.num(row.cost.comm_bytes, memo[col++]);
    b.ch(','), b.num(row.theoretical.comm_time_s, memo[col++]);
    b.ch(','), b.csv(row.collective);
    for (double m : row.metrics) b.ch(','), b.num(m);
    b.ch('\n');
    sg.b1 = b.pos();
  });
}

void output_detail::put_summary_csv(std::string& out, const PointResult& pr, const Point& p, const SummaryTexts* texts) {
  using F = SummaryTexts::Field;
  const std::string_view exec_csv = execution_csv(pr.settings.execution);
  size_t lead_bound = Buf::kNum + 1;
  for (const auto& kv : p.bindings) lead_bound += Buf::csv_bound(kv.second) + 1;
  for (size_t si = 0; si < pr.summary.size(); ++si) {
    const SummaryRow& s = pr.summary[si];
    const SummaryTexts& t = texts[si];
    Buf b(out, lead_bound + kSummaryCsvBound + Buf::csv_bound(s.platform) + Buf::csv_bound(s.network) + Buf::csv_bound(s.phase));
    b.num(static_cast<double>(p.index));
    for (const auto& kv : p.bindings) b.ch(','), b.csv(kv.second);
    b.ch(','), b.csv(s.platform);
    b.ch(','), b.csv(s.network);
    b.ch(','), b.lit(dtype_name(s.dtype));
    for (int f = F::Layers; f <= F::FlopsPerMac; ++f) b.ch(','), t.csv(b, static_cast<F>(f));
    b.ch(','), b.lit(memory_model_name(pr.settings.memory_model));
    b.ch(','), t.csv(b, F::ActiveParams);
    b.ch(','), b.csv(s.phase);
    for (int f = F::Tokens; f <= F::DeratedTpot; ++f) {  // empty where they do not apply
      b.ch(',');
      if (!std::isnan(t.v[static_cast<size_t>(f)])) t.csv(b, static_cast<F>(f));
    }
    for (int f = F::WeightFootprint; f <= F::Footprint; ++f) b.ch(','), t.csv(b, static_cast<F>(f));
    b.ch(',');
    if (s.memory_size_bytes > 0) t.csv(b, F::MemorySize);
    b.ch(',');
    if (s.memory_size_bytes > 0) b.lit(s.memory_footprint_bytes <= s.memory_size_bytes ? "true" : "false");
    b.lit(exec_csv.substr(0, exec_csv.size() - 1));  // (without its line's end)
    for (int f = F::TensorParallel; f <= F::DataParallel; ++f) b.ch(','), t.csv(b, static_cast<F>(f));
    for (int f = F::Prompt; f <= F::TokensPerGpu; ++f) {  // a request's (tokens per GPU: a transformer's); empty otherwise
      b.ch(',');
      if (!std::isnan(t.v[static_cast<size_t>(f)])) t.csv(b, static_cast<F>(f));
    }
    b.lit(s.dtype_from_file ? ",file," : ",settings,");
    if (!s.ignored.empty()) b.csv(s.ignored);  // ONNX operators left out (onnx_ops: ignore), e.g. "Dropout (2 nodes)"
    for (int f = F::WorkTime; f <= F::DeratedBubble; ++f) b.ch(','), t.csv(b, static_cast<F>(f));
    b.ch(','), b.lit(time_limit(s.dparts).first);
    b.ch(','), t.csv(b, F::LimitShare);
    b.ch(','), t.csv(b, F::AssumedShare);
    for (int f = F::DeratedTimeLo; f <= F::MaxContext; ++f) {  // a calibrated platform's band; LLM capacity; empty otherwise
      b.ch(',');
      if (!std::isnan(t.v[static_cast<size_t>(f)])) t.csv(b, static_cast<F>(f));
    }
    b.ch('\n');

  }
}

void append_summary_csv(std::string& out, const PointResult& pr, const Point& p) { put_summary_csv(out, pr, p, summary_texts(pr)); }

void append_results_csv(std::string& out, const PointResult& pr, const Point& p) {
  std::vector<char> twin_ok;
  check_twins(pr.rows, twin_ok);
  put_results_csv(out, pr, p, twin_ok);
}

std::string results_csv(const RunResult& r, const Scenario&) {
  std::string out = results_csv_header(RunHeader{r.var_names, r.metric_names, r.points.size()});
  for (size_t pi = 0; pi < r.results.size(); ++pi) append_results_csv(out, r.results[pi], r.points[pi]);
  return out;
}

std::string summary_csv(const RunResult& r, const Scenario&) {
  std::string out = summary_csv_header(RunHeader{r.var_names, r.metric_names, r.points.size()});
  for (size_t pi = 0; pi < r.results.size(); ++pi) append_summary_csv(out, r.results[pi], r.points[pi]);
  return out;
}

}  // namespace rsim
