// The writers' shared formatting, internal to engine/output*.cpp (not an API): number texts with a
// per-thread cache, CSV and JSON quoting, the raw row buffer, and each summary row's texts kept
// from point to point. Split out of engine/output/output.cpp (issue 43) without a change of behaviour.
#pragma once
#include <algorithm>
#include <array>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <memory>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "engine/model/config.hpp"
#include "engine/output/output.hpp"
#include "engine/model/units.hpp"

namespace rsim::output_detail {

// A plain loop: find_first_of calls memchr over the set once per character.
inline bool needs_csv_quotes(std::string_view s) {
  for (char c : s)
    if (c == ',' || c == '"' || c == '\n' || c == '\r') return true;
  return false;
}


// The text of a finite number: an integer's digits, else the shortest text that reads back the
// same double. The texts of recent numbers are kept by their bits: a point's totals go to
// summary.csv and again to results.json, and the shortest round-trip text is the costly part of
// writing them.
inline std::string_view finite_text(double v) {
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

inline std::string_view num_view(double v) {
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  return finite_text(v);
}

inline void put_num(std::string& o, double v) { o += num_view(v); }

inline void put_uint(std::string& o, size_t v) {
  char buf[24];
  o.append(buf, std::to_chars(buf, buf + sizeof buf, v).ptr);
}

// JSON has no infinity: null, with the convention stated in the file
inline void put_json_num(std::string& o, double v) {
  if (!std::isfinite(v)) o += "null";
  else put_num(o, v);
}

inline void put_csv(std::string& o, std::string_view s) {
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

inline void put_json_str(std::string& o, std::string_view s) {
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

// header with the sweep variables right after `point`; a variable named like a column of the
// table (a sweep over `batch` or `dtype`) is written `sweep.NAME`, so no header appears twice
inline std::string table_header(const std::vector<std::string>& cols, const std::vector<std::string>& vars) {
  std::string h;
  for (size_t i = 0; i < cols.size(); ++i) {
    h += (i ? "," : "") + cols[i];
    if (i == 0)
      for (const auto& v : vars) h += "," + csv_escape(sweep_column(v, cols));
  }
  return h + "\n";
}

inline bool same_bits(double a, double b) { return std::memcmp(&a, &b, sizeof a) == 0; }  // NaN = NaN, -0 ≠ 0: as their texts

inline bool same_bits(const std::vector<double>& a, const std::vector<double>& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i)
    if (!same_bits(a[i], b[i])) return false;
  return true;
}

inline bool same_roof(const RoofPoint& a, const RoofPoint& b) {
  return same_bits(a.peak_flops_per_s, b.peak_flops_per_s) && same_bits(a.bandwidth_bytes_per_s, b.bandwidth_bytes_per_s) &&
         same_bits(a.intensity, b.intensity) && same_bits(a.attainable_flops_per_s, b.attainable_flops_per_s) &&
         same_bits(a.compute_time_s, b.compute_time_s) && same_bits(a.memory_time_s, b.memory_time_s) && same_bits(a.time_s, b.time_s) && same_bits(a.comm_time_s, b.comm_time_s) &&
         a.bound == b.bound;
}

// Whether rows a and b print the same text in results.csv and results.json but for their layer
// and kernel names: every other field either writer prints (a field added to a row's text must be
// added here, or a row hinted as a twin would print its twin's value).
inline bool same_row_text(const Row& a, const Row& b) {
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
inline void check_twins(const std::vector<Row>& rows, std::vector<char>& twin_ok) {
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
inline void write_rows(std::string& out, const std::vector<Row>& rows, Bound bound, Write write) {
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

// A point's execution mode as summary.csv's last cell (with the line's end) and as results.json's key.
inline std::string_view execution_csv(Execution e) {
  switch (e) {
    case Execution::Graph: return ",graph\n";
    case Execution::Eager: return ",eager\n";
    case Execution::Ideal: return ",ideal\n";
    case Execution::Fused: break;
  }
  return ",fused\n";
}
inline std::string_view execution_json(Execution e) {
  switch (e) {
    case Execution::Graph: return ",\"execution\":\"graph\"";
    case Execution::Eager: return ",\"execution\":\"eager\"";
    case Execution::Ideal: return ",\"execution\":\"ideal\"";
    case Execution::Fused: break;
  }
  return ",\"execution\":\"fused\"";
}

// results.csv's rows of a point (twin_ok from check_twins), summary.csv's (texts from summary_texts),
// results.json's point tail: in output.cpp and output_json.cpp
void put_results_csv(std::string& out, const PointResult& pr, const Point& p, const std::vector<char>& twin_ok);
void put_summary_csv(std::string& out, const PointResult& pr, const Point& p, const SummaryTexts* texts);
void put_point_json_tail(std::string& out, const PointResult& pr, const RunHeader& h, bool layers, const SummaryTexts* texts,
                         const std::vector<char>& twin_ok);

// LLM capacity at a row's context and batch (NaN: not an LLM step, or a memory of no stated size)
double max_batch_in_memory(const SummaryRow& s);
double max_context_in_memory(const SummaryRow& s);
void format_summary(SummaryTexts& t, const SummaryRow& s, const Settings& st);
// Each summary row's texts of a point, in a per-thread list kept from point to point
const SummaryTexts* summary_texts(const PointResult& pr);

}  // namespace rsim::output_detail
