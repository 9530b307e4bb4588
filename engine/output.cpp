#include "engine/output.hpp"

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

#include "engine/config.hpp"
#include "engine/units.hpp"

namespace rsim {

// A plain loop: find_first_of calls memchr over the set once per character.
static bool needs_csv_quotes(std::string_view s) {
  for (char c : s)
    if (c == ',' || c == '"' || c == '\n' || c == '\r') return true;
  return false;
}

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

namespace {

// The text of a finite number: an integer's digits, else the shortest text that reads back the
// same double. The texts of recent numbers are kept by their bits: a point's totals go to
// summary.csv and again to results.json, and the shortest round-trip text is the costly part of
// writing them.
std::string_view finite_text(double v) {
  struct Recent {
    uint64_t bits = 0;
    unsigned char len = 0;  // 0: empty
    char text[31];
  };
  static_assert(sizeof(Recent::text) >= kNumberChars);
  thread_local std::array<Recent, 64> recent{};
  uint64_t bits;
  std::memcpy(&bits, &v, sizeof bits);
  Recent& r = recent[(bits * 0x9e3779b97f4a7c15ULL) >> 58];
  if (r.len && r.bits == bits) return {r.text, r.len};
  char* end = write_number(r.text, v);
  r.len = static_cast<unsigned char>(end - r.text);
  r.bits = bits;
  return {r.text, r.len};
}

std::string_view num_view(double v) {
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  return finite_text(v);
}

void put_num(std::string& o, double v) { o += num_view(v); }

void put_uint(std::string& o, size_t v) {
  char buf[24];
  o.append(buf, std::to_chars(buf, buf + sizeof buf, v).ptr);
}

// JSON has no infinity: null, with the convention stated in the file
void put_json_num(std::string& o, double v) {
  if (!std::isfinite(v)) o += "null";
  else put_num(o, v);
}

void put_csv(std::string& o, std::string_view s) {
  if (!needs_csv_quotes(s)) {
    o += s;
    return;
  }
  o += '"';
  for (char c : s) {
    if (c == '"') o += '"';
    o += c;
  }
  o += '"';
}

void put_json_str(std::string& o, std::string_view s) {
  o += '"';
  size_t run = 0;  // start of the current run of characters that need no escape
  for (size_t i = 0; i < s.size(); ++i) {
    unsigned char c = static_cast<unsigned char>(s[i]);
    if (c >= 0x20 && c != '"' && c != '\\') continue;
    o.append(s.data() + run, i - run);
    run = i + 1;
    switch (c) {
      case '"': o += "\\\""; break;
      case '\\': o += "\\\\"; break;
      case '\n': o += "\\n"; break;
      case '\r': o += "\\r"; break;
      case '\t': o += "\\t"; break;
      default: {
        char buf[8];
        std::snprintf(buf, sizeof buf, "\\u%04x", c);
        o += buf;
      }
    }
  }
  o.append(s.data() + run, s.size() - run);
  o += '"';
}

// Writes a row through a raw pointer (no per-character capacity checks) into a per-thread scratch
// area of at least the row's upper bound, and appends what was written to the string when the Buf
// ends (growing the string by the bound would zero-fill it first). The same text as the put_*
// functions above.
class Buf {
 public:
  Buf(std::string& s, size_t bound) : s_(s), base_(s.size()) {
    thread_local std::unique_ptr<char[]> scratch;
    thread_local size_t room = 0;
    if (open_) throw std::logic_error("Buf: two at once on one thread (they share the scratch area)");
    open_ = true;
    if (room < bound) {
      room = std::max(bound, 2 * room);
      scratch.reset(new char[room]);
    }
    start_ = p_ = scratch.get();
  }
  ~Buf() {
    s_.append(start_, static_cast<size_t>(p_ - start_));
    open_ = false;
  }
  Buf(const Buf&) = delete;
  Buf& operator=(const Buf&) = delete;
  static constexpr size_t kNum = 32;  // the longest number text (to_chars of a double: 24)
  static size_t csv_bound(std::string_view v) { return 2 * v.size() + 2; }
  static size_t json_bound(std::string_view v) { return 6 * v.size() + 2; }

  // where the next byte goes, as an offset into the string (once the Buf has ended)
  size_t pos() const { return base_ + static_cast<size_t>(p_ - start_); }
  // the bytes [from, to) written earlier into the same string (by this Buf or before it)
  void copy(size_t from, size_t to) {
    if (from < base_) {  // the part already in the string
      const size_t end = std::min(to, base_);
      std::memcpy(p_, s_.data() + from, end - from);
      p_ += end - from;
      from = end;
    }
    if (from < to) {
      std::memmove(p_, start_ + (from - base_), to - from);
      p_ += to - from;
    }
  }
  void ch(char c) { *p_++ = c; }
  void lit(std::string_view v) {
    std::memcpy(p_, v.data(), v.size());
    p_ += v.size();
  }
  // a number's text held in a kNum-byte array: copied whole (a fixed size, no call); the row's
  // bound gives every number kNum bytes, so the bytes past the text stay inside it and are
  // overwritten by what follows
  void number_text(const char (&text)[kNum], size_t len) {
    std::memcpy(p_, text, kNum);
    p_ += len;
  }
  // a string literal: its length known to the compiler, copied without a call (not for a char
  // buffer holding a shorter string: that goes through string_view)
  template <size_t N>
  void lit(const char (&v)[N]) {
    std::memcpy(p_, v, N - 1);
    p_ += N - 1;
  }
  void num(double v) {
    if (std::isnan(v)) return lit("nan");
    if (std::isinf(v)) return lit(v > 0 ? "inf" : "-inf");
    static_assert(kNum >= kNumberChars);
    p_ = write_number(p_, v);
  }
  void json_num(double v) {
    if (!std::isfinite(v)) return lit("null");
    num(v);
  }
  // A column's last number and its text: rows repeat most numbers (a platform's roofs in every
  // row, a repeated block's costs), and the shortest round-trip text is the writers' main cost.
  struct Memo {
    bool valid = false;
    unsigned char len = 0;
    uint64_t bits = 0;
    char text[kNum];
  };
  void num(double v, Memo& m) {
    uint64_t bits;
    std::memcpy(&bits, &v, sizeof bits);
    if (m.valid && bits == m.bits) return lit(std::string_view(m.text, m.len));
    char* start = p_;
    num(v);
    m.len = static_cast<unsigned char>(p_ - start);
    std::memcpy(m.text, start, m.len);
    m.bits = bits;
    m.valid = true;
  }
  void json_num(double v, Memo& m) {
    if (!std::isfinite(v)) return lit("null");
    num(v, m);
  }
  void csv(std::string_view v) {
    if (!needs_csv_quotes(v)) return lit(v);
    ch('"');
    for (char c : v) {
      if (c == '"') ch('"');
      ch(c);
    }
    ch('"');
  }
  void json_str(std::string_view v) {
    ch('"');
    for (char c : v) {
      unsigned char u = static_cast<unsigned char>(c);
      if (u >= 0x20 && c != '"' && c != '\\') {
        ch(c);
        continue;
      }
      switch (c) {
        case '"': lit("\\\""); break;
        case '\\': lit("\\\\"); break;
        case '\n': lit("\\n"); break;
        case '\r': lit("\\r"); break;
        case '\t': lit("\\t"); break;
        default: {
          char b[8];
          std::snprintf(b, sizeof b, "\\u%04x", u);
          lit(std::string_view(b));
        }
      }
    }
    ch('"');
  }

 private:
  std::string& s_;
  static inline thread_local bool open_ = false;
  size_t base_;  // the string's size when the Buf began
  char* start_;
  char* p_;
};

// Upper bounds of a summary row's text without its names: at most 40 numbers, and the rest
// (commas, dtype and memory model names; the JSON keys: 702 characters in all)
constexpr size_t kSummaryCsvBound = 74 * (Buf::kNum + 1) + 64;
constexpr size_t kSummaryJsonBound = 74 * Buf::kNum + 1800;

// A summary row's numbers, formatted once for summary.csv and results.json (in summary.csv's
// order). The writer keeps one per summary row from point to point (a row is the same platform
// and network at every point of a sweep), and a column whose number is bit for bit its last one
// keeps its text (most columns of a sweep repeat: bound counts, batch, the platform's memory); a
// new number goes through finite_text's cache (a row's derated totals often equal its theoretical
// ones).
struct SummaryTexts {
  enum Field {
    Layers, Kernels, Macs, Flops, Params, Bytes, Intensity, Time, Achieved, MemoryBound, ComputeBound, DeratedTime, DeratedAchieved,
    DeratedMemoryBound, DeratedComputeBound, Batch, DeratedTimePerSample, FlopsPerMac, ActiveParams, Tokens, TokensPerS,
    DeratedTokensPerS, Ttft, DeratedTtft, Tpot, DeratedTpot, WeightFootprint, KvCache, Activation, Footprint, MemorySize, TensorParallel,
    ParamsPerGpu, CommBytes, CommTime, Gpus, PipelineParallel, MicroBatches, PipelineBubble, ExpertParallel, DataParallel, Prompt, Generate, E2e, DeratedE2e, TokensPerUser, TokensPerGpu,
    WorkTime, DeratedWorkTime, OverheadTime, DeratedOverheadTime, ExposedComm, DeratedExposedComm, Bubble, DeratedBubble, LimitShare,
    AssumedShare, DeratedTimeLo, DeratedTimeHi, KvBytesPerToken, MaxBatch, MaxContext, kFields
  };
  std::array<double, kFields> v{};
  std::array<uint64_t, kFields> bits{};  // of v: the number each text is of
  uint64_t known = 0;                    // bit f: text[f] is of bits[f]
  std::array<unsigned char, kFields> len{};
  char text[kFields][Buf::kNum];
  static_assert(kFields <= 64);
  void csv(Buf& b, Field f) const { b.number_text(text[f], len[f]); }  // num_view's text: nan, inf, -inf or the number
  [[gnu::always_inline]] void json(Buf& b, Field f) const {  // JSON has no infinity or NaN: null
    if (std::isfinite(v[f])) b.number_text(text[f], len[f]);
    else b.lit("null");
  }
};

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

}  // namespace

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
  std::string out = header(results_columns(), h.var_names);
  if (!h.metric_names.empty()) {  // scripts' derived metrics close each row
    out.pop_back();
    for (const auto& m : h.metric_names) out += "," + csv_escape(m);
    out += "\n";
  }
  return out;
}

std::string summary_csv_header(const RunHeader& h) { return header(summary_columns(), h.var_names); }

namespace {

bool same_bits(double a, double b) { return std::memcmp(&a, &b, sizeof a) == 0; }  // NaN = NaN, -0 ≠ 0: as their texts

bool same_bits(const std::vector<double>& a, const std::vector<double>& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i)
    if (!same_bits(a[i], b[i])) return false;
  return true;
}

bool same_roof(const RoofPoint& a, const RoofPoint& b) {
  return same_bits(a.peak_flops_per_s, b.peak_flops_per_s) && same_bits(a.bandwidth_bytes_per_s, b.bandwidth_bytes_per_s) &&
         same_bits(a.intensity, b.intensity) && same_bits(a.attainable_flops_per_s, b.attainable_flops_per_s) &&
         same_bits(a.compute_time_s, b.compute_time_s) && same_bits(a.memory_time_s, b.memory_time_s) && same_bits(a.time_s, b.time_s) && same_bits(a.comm_time_s, b.comm_time_s) &&
         a.bound == b.bound;
}

// Whether rows a and b print the same text in results.csv and results.json but for their layer
// and kernel names: every other field either writer prints (a field added to a row's text must be
// added here, or a row hinted as a twin would print its twin's value).
bool same_row_text(const Row& a, const Row& b) {
  const OpCost& x = a.cost;
  const OpCost& y = b.cost;
  return a.platform == b.platform && a.network == b.network && a.op == b.op && a.dtype == b.dtype && a.compute_dtype == b.compute_dtype &&
         a.has_weights == b.has_weights && (!a.has_weights || a.weights_dtype == b.weights_dtype) && a.touches_kv == b.touches_kv &&
         (!a.touches_kv || a.kv_dtype == b.kv_dtype) && a.input_shapes == b.input_shapes && a.output_shapes == b.output_shapes &&
         same_bits(x.macs, y.macs) && same_bits(x.flops, y.flops) && same_bits(x.macs_executed, y.macs_executed) &&
         same_bits(x.flops_executed, y.flops_executed) && same_bits(x.params, y.params) && same_bits(x.weight_bytes, y.weight_bytes) &&
         same_bits(x.input_bytes, y.input_bytes) && same_bits(x.output_bytes, y.output_bytes) && same_bits(x.scale_bytes, y.scale_bytes) &&
         same_bits(x.kv_read_bytes, y.kv_read_bytes) && same_bits(x.kv_write_bytes, y.kv_write_bytes) &&
         same_bits(x.scratch_bytes, y.scratch_bytes) && same_bits(x.resident_weight_bytes, y.resident_weight_bytes) &&
         same_bits(x.kv_cache_bytes, y.kv_cache_bytes) && same_bits(a.bytes, b.bytes) && a.compute_roof == b.compute_roof &&
         a.memory_level == b.memory_level && same_roof(a.theoretical, b.theoretical) && same_roof(a.derated, b.derated) &&
         same_bits(a.efficiency.compute, b.efficiency.compute) && same_bits(a.efficiency.bandwidth, b.efficiency.bandwidth) &&
         same_bits(a.metrics, b.metrics) && same_bits(x.comm_bytes, y.comm_bytes) && a.collective == b.collective;
}

// Each row's twin hint (Row::twin), checked: twin_ok[ri] is 1 when row ri prints its twin's text
// but for its names (0 when it has none or the hint is wrong). Checked once for both writers.
void check_twins(const std::vector<Row>& rows, std::vector<char>& twin_ok) {
  twin_ok.assign(rows.size(), 0);
  for (size_t ri = 0; ri < rows.size(); ++ri) {
    const Row& r = rows[ri];
    twin_ok[ri] = r.twin >= 0 && static_cast<size_t>(r.twin) < ri && same_row_text(r, rows[static_cast<size_t>(r.twin)]);
  }
}

// The text of a row's platform and network in a table, made again only when they differ from the
// last row's (a point's rows of one platform and network are adjacent)
struct NamesText {
  const Row* of = nullptr;
  std::string text;
  template <class Make>
  const std::string& get(const Row& row, Make make) {
    if (!of || of->platform != row.platform || of->network != row.network) {
      text.clear();
      make(text, row);
    }
    of = &row;
    return text;
  }
};

// A point's rows go through one Buf per chunk of rows whose bounds add up to about this much
// (one Buf per row cost a scratch set-up and an append each)
constexpr size_t kRowsChunk = 1 << 20;

// Writes a point's rows so: bound(row) is a row's bound, write(b, ri) writes row ri into b
template <class Bound, class Write>
void write_rows(std::string& out, const std::vector<Row>& rows, Bound bound, Write write) {
  for (size_t ri = 0; ri < rows.size();) {
    size_t end = ri, total = 0;
    while (end < rows.size() && (end == ri || total < kRowsChunk)) total += bound(rows[end++]);
    Buf b(out, total);
    for (; ri < end; ++ri) write(b, ri);
  }
}

// Where a row's text shared with its twins sits: [a0, a1) between the layer name and the kernel
// name, [b0, b1) after the kernel name; offsets into the output string of the point.
struct Segments {
  size_t a0, a1, b0, b1;
};

}  // namespace

// results.csv's rows of a point; twin_ok from check_twins
static void put_results_csv(std::string& out, const PointResult& pr, const Point& p, const std::vector<char>& twin_ok) {
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

namespace {

// A point's execution mode as summary.csv's last cell (with the line's end) and as results.json's key.
std::string_view execution_csv(Execution e) {
  switch (e) {
    case Execution::Graph: return ",graph\n";
    case Execution::Eager: return ",eager\n";
    case Execution::Ideal: return ",ideal\n";
    case Execution::Fused: break;
  }
  return ",fused\n";
}
std::string_view execution_json(Execution e) {
  switch (e) {
    case Execution::Graph: return ",\"execution\":\"graph\"";
    case Execution::Eager: return ",\"execution\":\"eager\"";
    case Execution::Ideal: return ",\"execution\":\"ideal\"";
    case Execution::Fused: break;
  }
  return ",\"execution\":\"fused\"";
}

void put_summary_csv(std::string& out, const PointResult& pr, const Point& p, const SummaryTexts* texts) {
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

}  // namespace

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

const std::vector<std::string>& kernels_columns() {
  static const std::vector<std::string> c = {
      "point", "platform", "network", "kernel", "layers", "layer_names", "flops", "bytes", "intensity", "compute_time_s", "memory_time_s",
      "launch_overhead_s", "time_s", "bound", "derated_compute_time_s", "derated_memory_time_s", "derated_launch_overhead_s", "derated_time_s",
      "derated_bound"};
  return c;
}

std::string kernels_csv_header(const RunHeader& h) { return header(kernels_columns(), h.var_names); }

const std::vector<std::string>& ops_columns() {
  static const std::vector<std::string> c = {"point", "platform", "network", "op", "layers", "kernels", "flops", "bytes", "time_s", "derated_time_s", "share"};
  return c;
}

std::string ops_csv_header(const RunHeader& h) { return header(ops_columns(), h.var_names); }

namespace {
// The op totals of rows [b, e) (one platform and network) and its summary row (may be null)
void op_totals_of(const Row* b, const Row* e, const SummaryRow* sm, std::vector<OpTotal>& out) {
  out.clear();
  for (const Row* row = b; row != e; ++row) {
    auto it = std::find_if(out.begin(), out.end(), [&](const OpTotal& t) { return t.op == row->op; });
    if (it == out.end()) out.push_back(OpTotal{row->op}), it = out.end() - 1;
    it->layers += 1, it->flops += row->cost.flops, it->bytes += row->bytes;
    if (row->kernel.empty()) continue;  // a view, or eliminated: no time
    it->time_s += row->theoretical.time_s, it->derated_time_s += row->derated.time_s;
    if (row->kernel == row->layer) it->kernels += 1;  // (a kernel is named after its first layer)
  }
  if (!sm) return;
  OpTotal o{"overhead"};
  o.time_s = sm->parts.overhead(), o.derated_time_s = sm->dparts.overhead();
  out.push_back(o);
  for (OpTotal& t : out) t.share = sm->derated_time_s > 0 ? t.derated_time_s / sm->derated_time_s : 0;
}
const SummaryRow* summary_row(const PointResult& pr, const std::string& platform, const std::string& network) {
  for (const SummaryRow& s : pr.summary)
    if (s.platform == platform && s.network == network) return &s;
  return nullptr;
}
}  // namespace

std::vector<OpTotal> op_totals(const PointResult& pr, const std::string& platform, const std::string& network) {
  std::vector<OpTotal> out;
  const Row* b = nullptr;
  const Row* e = nullptr;
  for (const Row& row : pr.rows)  // (a platform's and network's rows are adjacent)
    if (row.platform == platform && row.network == network) {
      if (!b) b = &row;
      e = &row + 1;
    }
  if (b) op_totals_of(b, e, summary_row(pr, platform, network), out);
  return out;
}

void append_ops_csv(std::string& out, const PointResult& pr, const Point& p) {
  std::string lead;
  put_uint(lead, p.index);
  for (const auto& [name, v] : p.bindings) lead += ',', put_csv(lead, v);
  thread_local std::vector<OpTotal> totals;
  const Row* rows = pr.rows.data();
  for (size_t i = 0, n = pr.rows.size(); i < n;) {
    size_t j = i + 1;
    while (j < n && rows[j].platform == rows[i].platform && rows[j].network == rows[i].network) ++j;
    op_totals_of(rows + i, rows + j, summary_row(pr, rows[i].platform, rows[i].network), totals);
    for (const OpTotal& t : totals) {
      out += lead;
      out += ',', put_csv(out, rows[i].platform);
      out += ',', put_csv(out, rows[i].network);
      out += ',', put_csv(out, t.op);
      for (double v : {t.layers, t.kernels, t.flops, t.bytes, t.time_s, t.derated_time_s, t.share}) out += ',', put_num(out, v);
      out += '\n';
    }
    i = j;
  }
}

std::string ops_csv(const RunResult& r) {
  std::string out = ops_csv_header(RunHeader{r.var_names, r.metric_names, r.points.size()});
  for (size_t pi = 0; pi < r.results.size(); ++pi) append_ops_csv(out, r.results[pi], r.points[pi]);
  return out;
}

void append_kernels_csv(std::string& out, const PointResult& pr, const Point& p) {
  struct K {
    const Row* first;
    std::string names;
    double layers, flops, bytes, c, m, dc, dm;
    double host;      // the host time to issue it in eager mode (-1: the platform's runtime.host_overhead)
    double o, dover;  // the time the execution mode adds before it, on the theoretical and derated timelines
    size_t tail0, tail1;  // where its text after the layer names sits in `out`
  };
  // in order of first layer, per platform and network; kept from point to point (the names'
  // storage is reused): the first `nk` are this point's
  thread_local std::vector<K> ks;
  size_t nk = 0;
  thread_local std::vector<int> kernel_of;  // each row's kernel in ks (-1: none)
  kernel_of.assign(pr.rows.size(), -1);
  // rows of one platform and network are adjacent: the kernel index restarts with each. A row
  // knows its kernel's number in the network (Row::kernel_index) when evaluate_point made it;
  // rows made otherwise are grouped by kernel name.
  bool indexed = true;
  for (const Row& row : pr.rows) indexed = indexed && (row.kernel.empty() || row.kernel_index >= 0);
  thread_local std::vector<int> slot;  // indexed: ks's place of each kernel number of the group
  std::unordered_map<std::string_view, size_t> index;  // otherwise: of each kernel name
  const Row* group = nullptr;
  const Platform* group_pl = nullptr;  // the group's platform (its calibration gives a kernel's host time)
  const bool eager = pr.settings.execution == Execution::Eager;
  for (size_t ri = 0; ri < pr.rows.size(); ++ri) {
    const Row& row = pr.rows[ri];
    if (row.kernel.empty()) continue;  // a view or an eliminated layer runs no kernel
    if (!group || group->platform != row.platform || group->network != row.network) {
      group = &row;
      index.clear();
      slot.clear();
      group_pl = nullptr;
      for (const auto& pl : pr.platforms)
        if (pl->name == row.platform) group_pl = pl.get();
    }
    size_t at;
    bool fresh;
    if (indexed) {
      const size_t ki = static_cast<size_t>(row.kernel_index);
      if (ki >= slot.size()) slot.resize(ki + 1, -1);
      fresh = slot[ki] < 0;
      if (fresh) slot[ki] = static_cast<int>(nk);
      at = static_cast<size_t>(slot[ki]);
    } else {
      auto [it, f] = index.try_emplace(row.kernel, nk);
      fresh = f;
      at = it->second;
    }
    if (fresh) {
      K& k = nk < ks.size() ? ks[nk] : ks.emplace_back();
      ++nk;
      k.first = &row;
      k.names.clear();
      k.layers = k.flops = k.bytes = k.c = k.m = k.dc = k.dm = k.o = k.dover = 0;
      k.host = -1;
      k.tail0 = k.tail1 = 0;
    }
    kernel_of[ri] = static_cast<int>(at);
    K& k = ks[at];
    if (!k.names.empty()) k.names += ';';
    k.names += row.layer;
    k.layers += 1, k.flops += row.cost.flops, k.bytes += row.bytes;
    k.c += row.theoretical.compute_time_s, k.m += row.theoretical.memory_time_s;
    k.dc += row.derated.compute_time_s, k.dm += row.derated.memory_time_s;
    if (eager && group_pl)
      if (const CalibrationRule* cal = group_pl->calibration_for(row.op, row.compute_roof)) k.host = std::max(k.host, cal->host_overhead_s);
  }
  // each kernel's overhead under the point's execution mode, in kernel order per platform and
  // network (the rule of evaluate_point's clock): its time_s adds it, so a network's kernels add
  // up to its summary time
  {
    const Row* g = nullptr;
    std::optional<ExecutionClock> clock;
    for (size_t ki = 0; ki < nk; ++ki) {
      K& k = ks[ki];
      if (!g || g->platform != k.first->platform || g->network != k.first->network) {
        g = k.first;
        Runtime rt;
        for (const auto& pl : pr.platforms)
          if (pl->name == g->platform) rt = pl->runtime;
        clock.emplace(pr.settings.execution, rt);
      }
      const double t = clock->t, dt = clock->dt, kt = std::max(k.c, k.m), dkt = std::max(k.dc, k.dm);
      if (clock->mode == Execution::Eager) {  // the wait for the host: the kernel's start - the last one's end
        clock->add(kt, dkt, k.host);
        k.o = std::max(clock->issue - t, 0.0);
        k.dover = std::max(clock->issue - dt, 0.0);
      } else if (clock->mode == Execution::Ideal) {  // no overhead
        k.o = k.dover = 0;
        clock->add(kt, dkt, k.host);
      } else {  // (exactly the runtime's figure)
        k.o = k.dover = clock->mode == Execution::Fused || clock->n == 0 ? clock->launch : clock->gap;
        clock->add(kt, dkt, k.host);
      }
    }
  }
  std::string lead;
  put_uint(lead, p.index);
  for (const auto& [name, v] : p.bindings) lead += ',', put_csv(lead, v);
  // A kernel whose first layer has a twin row (Row::twin) that is the first layer of an earlier
  // kernel with the same sums (a repeated block's kernel) copies that kernel's numbers' text.
  auto twin_of = [&](size_t ki) -> const K* {
    const K& k = ks[ki];
    const int t = k.first->twin;
    if (t < 0) return nullptr;
    const int tk = kernel_of[static_cast<size_t>(t)];
    if (tk < 0 || static_cast<size_t>(tk) >= ki) return nullptr;
    const K& o = ks[static_cast<size_t>(tk)];
    const bool same = o.first == &pr.rows[static_cast<size_t>(t)] && o.first->platform == k.first->platform &&
                      same_bits(o.layers, k.layers) && same_bits(o.flops, k.flops) && same_bits(o.bytes, k.bytes) && same_bits(o.c, k.c) &&
                      same_bits(o.m, k.m) && same_bits(o.dc, k.dc) && same_bits(o.dm, k.dm) && same_bits(o.o, k.o) && same_bits(o.dover, k.dover);
    return same ? &o : nullptr;
  };
  // the rows in one buffer: its bound is every row's
  size_t bound = 0;
  for (size_t ki = 0; ki < nk; ++ki) {
    const K& k = ks[ki];
    bound += lead.size() + Buf::csv_bound(k.first->platform) + Buf::csv_bound(k.first->network) + Buf::csv_bound(k.first->kernel) +
             Buf::csv_bound(k.names) + 12 * (Buf::kNum + 1) + 64;
  }
  Buf b(out, bound);
  thread_local std::array<Buf::Memo, 11> memo;  // per numeric column, kept from point to point
  for (size_t ki = 0; ki < nk; ++ki) {
    K& k = ks[ki];
    b.lit(lead);
    b.ch(','), b.csv(k.first->platform);
    b.ch(','), b.csv(k.first->network);
    b.ch(','), b.csv(k.first->kernel);
    b.ch(','), b.num(k.layers);
    b.ch(','), b.csv(k.names);
    if (const K* o = twin_of(ki)) {
      k.tail0 = b.pos();
      b.copy(o->tail0, o->tail1);
      k.tail1 = b.pos();
      continue;
    }
    auto bound_text = [&](double c, double m) {
      if (c == 0 && m == 0) b.lit("none");
      else if (m >= c) b.lit("memory");
      else b.lit("compute");
    };
    double inten = k.flops > 0 ? (k.bytes > 0 ? k.flops / k.bytes : INFINITY) : 0;
    k.tail0 = b.pos();
    size_t col = 0;
    for (double v : {k.flops, k.bytes, inten, k.c, k.m, k.o, std::max(k.c, k.m) + k.o}) b.ch(','), b.num(v, memo[col++]);
    b.ch(',');
    bound_text(k.c, k.m);
    for (double v : {k.dc, k.dm, k.dover, std::max(k.dc, k.dm) + k.dover}) b.ch(','), b.num(v, memo[col++]);
    b.ch(',');
    bound_text(k.dc, k.dm);
    b.ch('\n');
    k.tail1 = b.pos();
  }
}

std::string kernels_csv(const RunResult& r) {
  std::string out = kernels_csv_header(RunHeader{r.var_names, r.metric_names, r.points.size()});
  for (size_t pi = 0; pi < r.results.size(); ++pi) append_kernels_csv(out, r.results[pi], r.points[pi]);
  return out;
}

namespace {

// Appends compact JSON to a string, with the commas between values.
class Json {
 public:
  explicit Json(std::string& out) : out_(out) {}
  void key(std::string_view k) {
    comma();
    put_json_str(out_, k);
    out_ += ':';
    fresh_ = true;
  }
  // a key written in this file (a literal that needs no escape)
  template <size_t N>
  void key(const char (&k)[N]) {
    comma();
    out_ += '"';
    out_.append(k, N - 1);
    out_ += "\":";
    fresh_ = true;
  }
  void str(std::string_view v) {
    comma();
    put_json_str(out_, v);
  }
  void num(double v) {
    comma();
    put_json_num(out_, v);
  }
  void boolean(bool b) {
    comma();
    out_ += b ? "true" : "false";
  }
  void open(char c) {
    comma();
    out_ += c;
    fresh_ = true;
  }
  void raw(std::string_view v) {  // a value formatted by another Json
    comma();
    out_ += v;
  }
  void close(char c) {
    out_ += c;
    fresh_ = false;
  }

 private:
  std::string& out_;
  bool fresh_ = true;
  void comma() {
    if (!fresh_) out_ += ',';
    fresh_ = false;
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
  j.key("runtime");
  j.open('{');
  j.key("launch_overhead_s"), j.num(p.runtime.launch_overhead_s);
  if (p.runtime.has_graph_gap()) j.key("graph_gap_s"), j.num(p.runtime.graph_gap_s);
  if (p.runtime.has_host_overhead()) j.key("host_overhead_s"), j.num(p.runtime.host_overhead_s);
  j.close('}');
  j.close('}');
}

}  // namespace

std::string results_json_head(const RunHeader& h, const RunInfo& info) {
  std::string out;
  Json j(out);
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
  j.key("time"), j.str("time_s = max(flops / peak, bytes / bandwidth) per layer, alone; network time_s: the kernels (a layer, or a fused group: "
                      "see kernels.csv), each taking max(sum of compute times, sum of memory times) of its layers, issued under settings.execution: "
                      "fused = their sum plus runtime.launch_overhead per kernel; graph = their sum plus runtime.graph_gap between kernels and one "
                      "launch_overhead; eager = the end of the last kernel when the host issues kernel i after its own host_overhead and the ones before");
  j.key("units"), j.str("SI: FLOP, byte, second; rates per second");
  j.key("precision"), j.str("activations in dtype; matrix weights in weights_dtype with one fp16 scale per quant_group weights when int8/int4/fp8; the KV cache in kv_dtype; the compute roof is the one of compute_dtype (default dtype: weights are dequantized to the activation precision)");
  j.key("kv_cache"), j.str("KV-cache reads (kv_read_bytes) and a layer's internal scratch traffic count under both memory models");
  j.key("llm"), j.str("tokens = batch × new tokens of the step; tokens_per_s = tokens / time; prefill: time to first token = time; decode: time per output token = time; memory footprint = resident weights + KV cache + the largest activations of one layer");
  j.close('}');
  j.key("sweep_variables");
  j.open('[');
  for (const auto& v : h.var_names) j.str(v);
  j.close(']');
  j.key("points");
  j.open('[');
  return out;
}

const char* results_json_tail() { return "]}\n"; }

void append_point_json_head(std::string& out, const PointResult& pr, const Point& p) {
  // the settings of most sweeps are the same at every point: formatted once per worker
  const Settings& st = pr.settings;
  const Precision& pc = st.precision;
  const std::array<DType, 4> dtypes{st.dtype, pc.weights.value_or(st.dtype), pc.kv.value_or(st.dtype), pc.compute.value_or(st.dtype)};
  thread_local struct {
    bool valid = false;
    std::array<DType, 4> dtypes;
    MemoryModel model;
    Execution execution;
    double flops_per_mac, quant_group;
    std::string level, text;
  } last;
  if (!last.valid || last.dtypes != dtypes || last.model != st.memory_model || !(last.flops_per_mac == st.flops_per_mac) ||
      last.quant_group != static_cast<double>(pc.quant_group) || last.level != st.memory_level || last.execution != st.execution) {
    last.text.clear();
    Json sj(last.text);
    sj.open('{');
    sj.key("dtype"), sj.str(dtype_name(dtypes[0]));
    sj.key("memory_model"), sj.str(memory_model_name(st.memory_model));
    sj.key("flops_per_mac"), sj.num(st.flops_per_mac);
    sj.key("memory_level"), sj.str(st.memory_level.empty() ? "(first level of each platform)" : st.memory_level);
    sj.key("weights_dtype"), sj.str(dtype_name(dtypes[1]));
    sj.key("kv_dtype"), sj.str(dtype_name(dtypes[2]));
    sj.key("compute_dtype"), sj.str(dtype_name(dtypes[3]));
    sj.key("quant_group"), sj.num(static_cast<double>(pc.quant_group));
    sj.key("execution"), sj.str(execution_name(st.execution));
    sj.close('}');
    last.execution = st.execution;
    last.valid = true, last.dtypes = dtypes, last.model = st.memory_model, last.flops_per_mac = st.flops_per_mac;
    last.quant_group = static_cast<double>(pc.quant_group), last.level = st.memory_level;
  }
  size_t bound = Buf::kNum + last.text.size() + 64;
  for (const auto& [k, v] : p.bindings) bound += Buf::json_bound(k) + Buf::json_bound(v) + 2;
  Buf b(out, bound);
  b.lit("{\"index\":"), b.num(static_cast<double>(p.index));
  b.lit(",\"bindings\":{");
  for (size_t k = 0; k < p.bindings.size(); ++k) {
    if (k) b.ch(',');
    b.json_str(p.bindings[k].first), b.ch(':'), b.json_str(p.bindings[k].second);
  }
  b.lit("},\"settings\":"), b.lit(last.text);
  b.lit(",\"platforms\":[");
}

void PlatformRefs::append(std::string& out, const PointResult& pr, const Point& p) {
  Json j(out);
  for (const auto& pl : pr.platforms) {
    // the same object (a platform no `${…}` changes is shared by every point), or the same text
    auto it = std::find_if(written_.begin(), written_.end(), [&](const Written& w) { return w.platform == pl; });
    std::string text;
    if (it == written_.end()) {
      Json pj(text);
      platform_json(pj, *pl);
      it = std::find_if(written_.begin(), written_.end(), [&](const Written& w) { return w.text == text; });
    }
    if (it != written_.end()) {  // (the same text: the same name)
      if (it->ref.empty()) {
        Json rj(it->ref);
        rj.open('{');
        rj.key("name"), rj.str(pl->name);
        rj.key("as_in_point"), rj.num(static_cast<double>(it->point));
        rj.close('}');
      }
      j.raw(it->ref);
      continue;
    }
    j.raw(text);
    if (written_.size() < 64) written_.push_back(Written{pl, std::move(text), p.index, {}});
  }
}

void append_results_json(std::string& out, const PointResult& pr, const Point& p, const RunHeader& h, bool layers, PlatformRefs& refs) {
  append_point_json_head(out, pr, p);
  refs.append(out, pr, p);
  append_point_json_tail(out, pr, h, layers);
}

namespace {

// twin_ok from check_twins (layers only)
void put_point_json_tail(std::string& out, const PointResult& pr, const RunHeader& h, bool layers, const SummaryTexts* texts,
                         const std::vector<char>& twin_ok) {
  using F = SummaryTexts::Field;
  const std::string_view exec_json = execution_json(pr.settings.execution);
  Json j(out);
  j.close(']');
  j.key("summary");
  j.open('[');
  for (size_t si = 0; si < pr.summary.size(); ++si) {
    const SummaryRow& sm = pr.summary[si];
    const SummaryTexts& t = texts[si];
    Buf b(out, kSummaryJsonBound + Buf::json_bound(sm.platform) + Buf::json_bound(sm.network) + Buf::json_bound(sm.phase) + Buf::json_bound(sm.memory_name));
    b.lit(si ? ",{\"platform\":" : "{\"platform\":"), b.json_str(sm.platform);
    b.lit(",\"network\":"), b.json_str(sm.network);
    b.lit(exec_json);
    b.lit(",\"dtype\":\""), b.lit(dtype_name(sm.dtype)), b.lit(sm.dtype_from_file ? "\",\"dtype_source\":\"file\"" : "\",\"dtype_source\":\"settings\"");
    if (!sm.ignored.empty()) b.lit(",\"ignored_ops\":"), b.json_str(sm.ignored);
    b.lit(",\"layers\":"), t.json(b, F::Layers);
    b.lit(",\"kernels\":"), t.json(b, F::Kernels);
    b.lit(",\"macs\":"), t.json(b, F::Macs);
    b.lit(",\"flops\":"), t.json(b, F::Flops);
    b.lit(",\"params\":"), t.json(b, F::Params);
    b.lit(",\"bytes\":"), t.json(b, F::Bytes);
    b.lit(",\"intensity\":"), t.json(b, F::Intensity);
    b.lit(",\"time_s\":"), t.json(b, F::Time);
    b.lit(",\"achieved_flops_per_s\":"), t.json(b, F::Achieved);
    b.lit(",\"memory_bound_layers\":"), t.json(b, F::MemoryBound);
    b.lit(",\"compute_bound_layers\":"), t.json(b, F::ComputeBound);
    b.lit(",\"derated_time_s\":"), t.json(b, F::DeratedTime);
    b.lit(",\"derated_achieved_flops_per_s\":"), t.json(b, F::DeratedAchieved);
    b.lit(",\"derated_memory_bound_layers\":"), t.json(b, F::DeratedMemoryBound);
    b.lit(",\"derated_compute_bound_layers\":"), t.json(b, F::DeratedComputeBound);
    b.lit(",\"batch\":"), t.json(b, F::Batch);
    b.lit(",\"derated_time_per_sample_s\":"), t.json(b, F::DeratedTimePerSample);
    b.lit(",\"active_params\":"), t.json(b, F::ActiveParams);
    b.lit(",\"tensor_parallel\":"), t.json(b, F::TensorParallel);
    b.lit(",\"params_per_gpu\":"), t.json(b, F::ParamsPerGpu);
    b.lit(",\"comm_bytes\":"), t.json(b, F::CommBytes);
    b.lit(",\"comm_time_s\":"), t.json(b, F::CommTime);
    b.lit(",\"gpus\":"), t.json(b, F::Gpus);
    b.lit(",\"pipeline_parallel\":"), t.json(b, F::PipelineParallel);
    b.lit(",\"micro_batches\":"), t.json(b, F::MicroBatches);
    b.lit(",\"pipeline_bubble\":"), t.json(b, F::PipelineBubble);
    b.lit(",\"expert_parallel\":"), t.json(b, F::ExpertParallel);
    b.lit(",\"data_parallel\":"), t.json(b, F::DataParallel);
    b.lit(",\"work_time_s\":"), t.json(b, F::WorkTime);
    b.lit(",\"derated_work_time_s\":"), t.json(b, F::DeratedWorkTime);
    b.lit(",\"overhead_time_s\":"), t.json(b, F::OverheadTime);
    b.lit(",\"derated_overhead_time_s\":"), t.json(b, F::DeratedOverheadTime);
    b.lit(",\"exposed_comm_time_s\":"), t.json(b, F::ExposedComm);
    b.lit(",\"derated_exposed_comm_time_s\":"), t.json(b, F::DeratedExposedComm);
    b.lit(",\"bubble_time_s\":"), t.json(b, F::Bubble);
    b.lit(",\"derated_bubble_time_s\":"), t.json(b, F::DeratedBubble);
    b.lit(",\"limit\":\""), b.lit(time_limit(sm.dparts).first), b.ch('"');
    b.lit(",\"limit_share\":"), t.json(b, F::LimitShare);
    b.lit(",\"assumed_share\":"), t.json(b, F::AssumedShare);
    if (sm.kv_bytes_per_token > 0) {
      b.lit(",\"kv_bytes_per_token\":"), t.json(b, F::KvBytesPerToken);
      b.lit(",\"max_batch_in_memory\":"), t.json(b, F::MaxBatch);
      b.lit(",\"max_context_in_memory\":"), t.json(b, F::MaxContext);
    }
    if (sm.banded) {
      b.lit(",\"derated_time_lo_s\":"), t.json(b, F::DeratedTimeLo);
      b.lit(",\"derated_time_hi_s\":"), t.json(b, F::DeratedTimeHi);
    }
    if (!sm.phase.empty()) {
      b.lit(",\"phase\":"), b.json_str(sm.phase);
      b.lit(",\"tokens\":"), t.json(b, F::Tokens);
      b.lit(",\"tokens_per_s\":"), t.json(b, F::TokensPerS);
      b.lit(",\"derated_tokens_per_s\":"), t.json(b, F::DeratedTokensPerS);
      if (sm.phase == "request") {
        b.lit(",\"prompt\":"), t.json(b, F::Prompt);
        b.lit(",\"generate\":"), t.json(b, F::Generate);
        b.lit(",\"time_to_first_token_s\":"), t.json(b, F::Ttft);
        b.lit(",\"derated_time_to_first_token_s\":"), t.json(b, F::DeratedTtft);
        b.lit(",\"time_per_output_token_s\":"), t.json(b, F::Tpot);
        b.lit(",\"derated_time_per_output_token_s\":"), t.json(b, F::DeratedTpot);
        b.lit(",\"e2e_latency_s\":"), t.json(b, F::E2e);
        b.lit(",\"derated_e2e_latency_s\":"), t.json(b, F::DeratedE2e);
        b.lit(",\"tokens_per_s_per_user\":"), t.json(b, F::TokensPerUser);
        b.lit(",\"tokens_per_s_per_gpu\":"), t.json(b, F::TokensPerGpu);
      } else if (sm.phase == "prefill") {
        b.lit(",\"time_to_first_token_s\":"), t.json(b, F::Ttft);
        b.lit(",\"derated_time_to_first_token_s\":"), t.json(b, F::DeratedTtft);
        b.lit(",\"tokens_per_s_per_gpu\":"), t.json(b, F::TokensPerGpu);
      } else {
        b.lit(",\"time_per_output_token_s\":"), t.json(b, F::Tpot);
        b.lit(",\"derated_time_per_output_token_s\":"), t.json(b, F::DeratedTpot);
        b.lit(",\"tokens_per_s_per_gpu\":"), t.json(b, F::TokensPerGpu);
      }
    }
    b.lit(",\"memory_footprint\":{\"weight_bytes\":"), t.json(b, F::WeightFootprint);
    b.lit(",\"kv_cache_bytes\":"), t.json(b, F::KvCache);
    b.lit(",\"activation_bytes\":"), t.json(b, F::Activation);
    b.lit(",\"total_bytes\":"), t.json(b, F::Footprint);
    if (sm.memory_size_bytes > 0) {
      b.lit(",\"memory_size_bytes\":"), t.json(b, F::MemorySize);
      b.lit(",\"memory\":"), b.json_str(sm.memory_name);
      b.lit(sm.memory_footprint_bytes <= sm.memory_size_bytes ? ",\"fits\":true" : ",\"fits\":false");
    }
    b.lit("}}");
  }
  j.close(']');
  if (layers) {
    j.key("layers");
    j.open('[');
    thread_local std::array<Buf::Memo, 48> jm;  // per numeric field (46, 47: input and output bytes), kept from point to point
    thread_local std::vector<Segments> jseg;
    jseg.resize(pr.rows.size());
    auto row_bound = [&](const Row& row) {
      size_t bound = 1200 + (row.cost.input_bytes.size() + row.cost.output_bytes.size() + 40) * (Buf::kNum + 1);
      for (const std::string* s : {&row.platform, &row.network, &row.layer, &row.op, &row.input_shapes, &row.output_shapes, &row.compute_roof,
                                   &row.memory_level, &row.kernel, &row.collective})
        bound += Buf::json_bound(*s);
      for (size_t k = 0; k < row.metrics.size() && k < h.metric_names.size(); ++k) bound += Buf::json_bound(h.metric_names[k]) + Buf::kNum + 2;
      return bound;
    };
    NamesText names;  // {"platform":…,"network":…
    auto names_text = [](std::string& t, const Row& row) {
      t += "{\"platform\":", put_json_str(t, row.platform);
      t += ",\"network\":", put_json_str(t, row.network);
    };
    write_rows(out, pr.rows, row_bound, [&](Buf& b, size_t ri) {
      const Row& row = pr.rows[ri];
      size_t col = 0;
      if (ri) b.ch(',');
      b.lit(names.get(row, names_text));
      b.lit(",\"layer\":"), b.json_str(row.layer);
      Segments& sg = jseg[ri];
      if (twin_ok[ri]) {  // the twin's text with this row's names
        const Segments& ts = jseg[static_cast<size_t>(row.twin)];
        sg.a0 = b.pos(), b.copy(ts.a0, ts.a1), sg.a1 = b.pos();
        b.lit(",\"kernel\":"), b.json_str(row.kernel);
        sg.b0 = b.pos(), b.copy(ts.b0, ts.b1), sg.b1 = b.pos();
        return;
      }
      sg.a0 = b.pos();
      b.lit(",\"op\":"), b.json_str(row.op);
      b.lit(",\"dtype\":\""), b.lit(dtype_name(row.dtype));
      b.lit("\",\"compute_dtype\":\""), b.lit(dtype_name(row.compute_dtype)), b.ch('"');
      if (row.has_weights) b.lit(",\"weights_dtype\":\""), b.lit(dtype_name(row.weights_dtype)), b.ch('"');
      if (row.touches_kv) b.lit(",\"kv_dtype\":\""), b.lit(dtype_name(row.kv_dtype)), b.ch('"');
      b.lit(",\"input_shape\":"), b.json_str(row.input_shapes);
      b.lit(",\"output_shape\":"), b.json_str(row.output_shapes);
      b.lit(",\"macs\":"), b.json_num(row.cost.macs, jm[col++]);
      b.lit(",\"flops\":"), b.json_num(row.cost.flops, jm[col++]);
      b.lit(",\"params\":"), b.json_num(row.cost.params, jm[col++]);
      b.lit(",\"weight_bytes\":"), b.json_num(row.cost.weight_bytes, jm[col++]);
      b.lit(",\"input_bytes\":[");
      for (size_t k = 0; k < row.cost.input_bytes.size(); ++k) {
        if (k) b.ch(',');
        b.json_num(row.cost.input_bytes[k], jm[46]);
      }
      b.lit("],\"output_bytes\":[");
      for (size_t k = 0; k < row.cost.output_bytes.size(); ++k) {
        if (k) b.ch(',');
        b.json_num(row.cost.output_bytes[k], jm[47]);
      }
      b.lit("],\"quant_scale_bytes\":"), b.json_num(row.cost.scale_bytes, jm[col++]);
      b.lit(",\"kv_read_bytes\":"), b.json_num(row.cost.kv_read_bytes, jm[col++]);
      b.lit(",\"kv_write_bytes\":"), b.json_num(row.cost.kv_write_bytes, jm[col++]);
      b.lit(",\"scratch_bytes\":"), b.json_num(row.cost.scratch_bytes, jm[col++]);
      b.lit(",\"resident_weight_bytes\":"), b.json_num(row.cost.resident_weight_bytes, jm[col++]);
      b.lit(",\"kv_cache_bytes\":"), b.json_num(row.cost.kv_cache_bytes, jm[col++]);
      b.lit(",\"bytes\":"), b.json_num(row.bytes, jm[col++]);
      b.lit(",\"intensity\":"), b.json_num(row.theoretical.intensity, jm[col++]);
      sg.a1 = b.pos();
      b.lit(",\"kernel\":"), b.json_str(row.kernel);
      sg.b0 = b.pos();
      b.lit(",\"compute_roof\":"), b.json_str(row.compute_roof);
      b.lit(",\"memory_level\":"), b.json_str(row.memory_level);
      for (const RoofPoint* rp : {&row.theoretical, &row.derated}) {
        b.lit(rp == &row.theoretical ? ",\"theoretical\":{\"peak_flops_per_s\":" : ",\"derated\":{\"peak_flops_per_s\":");
        b.json_num(rp->peak_flops_per_s, jm[col++]);
        b.lit(",\"bandwidth_bytes_per_s\":"), b.json_num(rp->bandwidth_bytes_per_s, jm[col++]);
        b.lit(",\"attainable_flops_per_s\":"), b.json_num(rp->attainable_flops_per_s, jm[col++]);
        b.lit(",\"compute_time_s\":"), b.json_num(rp->compute_time_s, jm[col++]);
        b.lit(",\"memory_time_s\":"), b.json_num(rp->memory_time_s, jm[col++]);
        b.lit(",\"time_s\":"), b.json_num(rp->time_s, jm[col++]);
        b.lit(",\"bound\":\""), b.lit(bound_name(rp->bound)), b.lit("\"}");
      }
      if (row.cost.comm_bytes > 0) {
        b.lit(",\"comm_bytes\":"), b.json_num(row.cost.comm_bytes, jm[col++]);
        b.lit(",\"comm_time_s\":"), b.json_num(row.theoretical.comm_time_s, jm[col++]);
        b.lit(",\"collective\":"), b.json_str(row.collective);
      }
      b.lit(",\"efficiency\":{\"compute\":"), b.json_num(row.efficiency.compute, jm[col++]);
      b.lit(",\"bandwidth\":"), b.json_num(row.efficiency.bandwidth, jm[col++]), b.ch('}');
      if (!row.metrics.empty()) {
        b.lit(",\"metrics\":{");
        for (size_t k = 0; k < row.metrics.size() && k < h.metric_names.size(); ++k) {
          if (k) b.ch(',');
          b.json_str(h.metric_names[k]), b.ch(':'), b.json_num(row.metrics[k]);
        }
        b.ch('}');
      }
      b.ch('}');
      sg.b1 = b.pos();
    });
    j.close(']');
  }
  j.close('}');
}

}  // namespace

void append_point_json_tail(std::string& out, const PointResult& pr, const RunHeader& h, bool layers) {
  std::vector<char> twin_ok;
  if (layers) check_twins(pr.rows, twin_ok);
  put_point_json_tail(out, pr, h, layers, summary_texts(pr), twin_ok);
}

std::string results_json(const RunResult& r, const RunInfo& info) {
  RunHeader h{r.var_names, r.metric_names, r.points.size()};
  std::string out = results_json_head(h, info);
  PlatformRefs refs;
  for (size_t pi = 0; pi < r.results.size(); ++pi) {
    if (pi) out += ',';
    append_results_json(out, r.results[pi], r.points[pi], h, true, refs);
  }
  return out + results_json_tail();
}

// ---- TableWriter

TableWriter::TableWriter(std::string dir, Tables tables, RunInfo info) : dir_(std::move(dir)), tables_(tables), info_(std::move(info)) {}

TableWriter::~TableWriter() {
  try {
    write_pending();  // (what a failed run wrote is removed by the caller)
  } catch (const std::exception&) {
  }
  for (auto& f : files_)
    if (f.fd >= 0) ::close(f.fd);
}

void TableWriter::open(const std::string& name, const std::string& head) {
  File f;
  f.name = name;
  std::string path = (std::filesystem::path(dir_) / name).string();
  f.fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0666);
  if (f.fd < 0) throw std::runtime_error("cannot write '" + path + "': " + std::strerror(errno));
  if (!arena_) arena_.reset(new char[kArena]);
  files_.push_back(std::move(f));
  put(files_.size() - 1, head);
}

// Writes n bytes to a file (all of them: write(2) may take part of them, or be interrupted).
void TableWriter::write_all(const File& f, const char* p, size_t n) {
  while (n > 0) {
    const ssize_t w = ::write(f.fd, p, n);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) throw std::runtime_error("cannot write '" + (std::filesystem::path(dir_) / f.name).string() + "': " + std::strerror(w < 0 ? errno : ENOSPC));
    p += w;
    n -= static_cast<size_t>(w);
  }
}

void TableWriter::reserve(File& f, size_t more) {
  if (!f.can_reserve || f.written + more <= f.reserved || f.written < kReserveFrom) return;
  const size_t from = std::max(f.reserved, f.written), len = std::max(kReserveStep, f.written + more - from);
  // (a file system without fallocate, or without the room: the writes themselves allocate, and
  // report a full disk)
  if (::fallocate(f.fd, 0, static_cast<off_t>(from), static_cast<off_t>(len)) != 0) {
    f.can_reserve = false;
    return;
  }
  f.reserved = from + len;
}

void TableWriter::write_pending() {
  std::vector<iovec> iov;
  for (auto& f : files_) {
    if (f.fd < 0) continue;
    size_t bytes = 0;
    for (const Piece& q : f.pending) bytes += q.size;
    reserve(f, bytes);
    f.written += bytes;
    // writev takes at most IOV_MAX pieces and may write part of them
    size_t k = 0;
    while (k < f.pending.size()) {
      iov.clear();
      for (size_t j = k; j < f.pending.size() && iov.size() < IOV_MAX; ++j) iov.push_back({const_cast<char*>(f.pending[j].data), f.pending[j].size});
      const ssize_t w = ::writev(f.fd, iov.data(), static_cast<int>(iov.size()));
      if (w < 0 && errno == EINTR) continue;
      if (w <= 0) {
        f.pending.clear();
        throw std::runtime_error("cannot write '" + (std::filesystem::path(dir_) / f.name).string() + "': " + std::strerror(w < 0 ? errno : ENOSPC));
      }
      size_t left = static_cast<size_t>(w);
      while (left > 0 && left >= f.pending[k].size) left -= f.pending[k++].size;
      if (left > 0) {  // part of a piece: the rest stays
        f.pending[k].data += left;
        f.pending[k].size -= left;
      }
    }
    f.pending.clear();
  }
  arena_used_ = 0;
  pending_ = 0;
}

void TableWriter::flush_all() {
  write_pending();
  std::lock_guard<std::mutex> lock(pool_mu_);
  for (auto& t : held_) pool_.push_back(std::move(t));
  held_.clear();
}

// Queues text for a file: a long piece of a held point text as it lies, anything else copied to
// the arena (a point writes a few small pieces to each file; the kernel copies the lot once)
void TableWriter::put(size_t i, std::string_view text, bool held) {
  if (text.empty()) return;
  File& f = files_[i];
  bytes_ += static_cast<double>(text.size());
  if (held && text.size() >= kHeldPiece) {
    f.pending.push_back({text.data(), text.size()});
  } else {
    if (arena_used_ + text.size() > kArena) write_pending();
    if (text.size() > kArena) {  // (nothing waits now)
      reserve(f, text.size());
      f.written += text.size();
      return write_all(f, text.data(), text.size());
    }
    char* d = arena_.get() + arena_used_;
    std::memcpy(d, text.data(), text.size());
    arena_used_ += text.size();
    if (!f.pending.empty() && f.pending.back().data + f.pending.back().size == d) f.pending.back().size += text.size();
    else f.pending.push_back({d, text.size()});
  }
  pending_ += text.size();
}

void TableWriter::start(const RunHeader& h) {
  header_ = h;
  if (tables_ == Tables::All) open("results.csv", results_csv_header(h));
  open("summary.csv", summary_csv_header(h));
  if (tables_ == Tables::All) open("kernels.csv", kernels_csv_header(h));
  if (tables_ == Tables::All) open("ops.csv", ops_csv_header(h));
  open("results.json", results_json_head(h, info_));
  if (next) next->start(h);
}

namespace {

// A point's text buffer, handed back by consume for the next point that thread prepares when the
// point's text was copied (small points: one worker reuses one buffer, with no lock)
std::string& spare_text() {
  thread_local std::string spare;
  return spare;
}

}  // namespace

void TableWriter::prepare(PointResult& pr, const Point& p) {
  // every piece of the point in one buffer (one allocation at most), cut at text_end
  const bool layers = tables_ == Tables::All;
  std::string& o = pr.text;
  if (o.capacity() < spare_text().capacity()) o.swap(spare_text());
  if (o.capacity() < kHeldPiece) {  // a text written out by consume, if one is back
    std::lock_guard<std::mutex> lock(pool_mu_);
    if (!pool_.empty()) {
      o.swap(pool_.back());
      pool_.pop_back();
    }
  }
  o.clear();
  // room for the point: an estimate, or the last point's size on this thread and an eighth more
  // (the points of a sweep are much alike; a buffer that grows copies what it holds)
  thread_local size_t last = 0;
  o.reserve(std::max(pr.rows.size() * 1500 + pr.summary.size() * (kSummaryCsvBound + kSummaryJsonBound + 256) + 1024, last + last / 8));
  const SummaryTexts* texts = summary_texts(pr);  // each summary row's numbers, formatted once for both files
  thread_local std::vector<char> twin_ok;        // the rows' twin hints, checked once for both files
  if (layers) check_twins(pr.rows, twin_ok);
  if (layers) put_results_csv(o, pr, p, twin_ok);
  pr.text_end[0] = o.size();
  put_summary_csv(o, pr, p, texts);
  pr.text_end[1] = o.size();
  if (layers) append_kernels_csv(o, pr, p);
  pr.text_end[2] = o.size();
  if (layers) append_ops_csv(o, pr, p);
  pr.text_end[3] = o.size();
  append_point_json_head(o, pr, p);
  pr.text_end[4] = o.size();
  put_point_json_tail(o, pr, header_, layers, texts, twin_ok);
  pr.text_end[5] = o.size();
  last = o.size();
  if (next) next->prepare(pr, p);
}

void TableWriter::consume(PointResult&& pr, const Point& p) {
  double before = bytes_;
  // a text with a piece long enough to be written as it lies is held until it is written
  bool hold = false;
  for (size_t k = 0; k < pr.text_end.size(); ++k) hold = hold || pr.text_end[k] - (k ? pr.text_end[k - 1] : 0) >= kHeldPiece;
  if (hold) held_.push_back(std::move(pr.text));
  const std::string& text = hold ? held_.back() : pr.text;
  auto piece = [&](size_t k) { return std::string_view(text).substr(k ? pr.text_end[k - 1] : 0, pr.text_end[k] - (k ? pr.text_end[k - 1] : 0)); };
  size_t k = 0;
  if (tables_ == Tables::All) put(k++, piece(0), hold);
  put(k++, piece(1), hold);
  if (tables_ == Tables::All) put(k++, piece(2), hold);
  if (tables_ == Tables::All) put(k++, piece(3), hold);
  if (points_) put(k, ",");
  put(k, piece(4), hold);
  platforms_.clear();
  platform_refs_.append(platforms_, pr, p);
  put(k, platforms_);
  put(k, piece(5), hold);
  ++points_;
  if (points_ == 1 && on_projection) on_projection(before + (bytes_ - before) * static_cast<double>(header_.points));
  if (!hold) {
    std::string& spare = spare_text();
    if (spare.capacity() < pr.text.capacity()) spare.swap(pr.text);
  }
  std::string().swap(pr.text);
  if (pending_ >= kPending) flush_all();
  if (next) next->consume(std::move(pr), p);
}

std::vector<std::string> TableWriter::finish() {
  if (files_.empty()) start(header_);
  put(files_.size() - 1, results_json_tail());
  std::vector<std::string> names;
  std::string failed;
  std::string error;
  try {
    flush_all();
  } catch (const std::runtime_error& e) {
    error = e.what();
  }
  for (auto& f : files_) {
    // a file whose room was allocated ahead is cut to what was written
    if (error.empty() && f.reserved > f.written && ::ftruncate(f.fd, static_cast<off_t>(f.written)) != 0)
      error = "cannot write '" + (std::filesystem::path(dir_) / f.name).string() + "': " + std::strerror(errno);
    if (::close(f.fd) != 0 && failed.empty()) failed = f.name;
    f.fd = -1;
    names.push_back(f.name);
  }
  if (!error.empty()) throw std::runtime_error(error);
  if (!failed.empty()) throw std::runtime_error("cannot write '" + (std::filesystem::path(dir_) / failed).string() + "' (disk full?)");
  return names;
}

// ---- PreviewSink

void PreviewSink::start(const RunHeader& h) {
  r_.var_names = h.var_names;
  r_.metric_names = h.metric_names;
}

void PreviewSink::consume(PointResult&& pr, const Point& p) {
  size_t rows = pr.rows.size(), sums = pr.summary.size();
  // a point is kept while it adds rows the tables still show (a summary-only run has no layer
  // rows: its points must not all be kept for the empty layer table)
  if ((rows > 0 && kept_rows_ < max_rows_) || (sums > 0 && kept_summary_ < max_summary_) || r_.results.empty()) {
    kept_rows_ += rows;
    kept_summary_ += sums;
    r_.points.push_back(p);
    r_.results.push_back(std::move(pr));
    r_.results.back().text.clear();
  }
  total_rows_ += rows;
  total_summary_ += sums;
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
