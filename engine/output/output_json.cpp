// results.json: the run's head, each point's rows and totals, the platforms referred to.
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

// One summary row of results.json (its texts made by summary_texts), after a comma unless it is the first
void put_summary_json(std::string& out, const SummaryRow& sm, const SummaryTexts& t, bool first, std::string_view exec_json) {
  using F = SummaryTexts::Field;
  Buf b(out, kSummaryJsonBound + Buf::json_bound(sm.platform) + Buf::json_bound(sm.network) + Buf::json_bound(sm.phase) + Buf::json_bound(sm.memory_name));
  b.lit(first ? "{\"platform\":" : ",{\"platform\":"), b.json_str(sm.platform);
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

// results.json's layer rows (a row whose twin's text was checked, twin_ok, copies it with its own names)
void put_layers_json(std::string& out, const PointResult& pr, const RunHeader& h, const std::vector<char>& twin_ok) {
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
}

}  // namespace

// twin_ok from check_twins (layers only)
void output_detail::put_point_json_tail(std::string& out, const PointResult& pr, const RunHeader& h, bool layers, const SummaryTexts* texts,
                         const std::vector<char>& twin_ok) {
  const std::string_view exec_json = execution_json(pr.settings.execution);
  Json j(out);
  j.close(']');
  j.key("summary");
  j.open('[');
  for (size_t si = 0; si < pr.summary.size(); ++si) put_summary_json(out, pr.summary[si], texts[si], si == 0, exec_json);
  j.close(']');
  if (layers) {
    j.key("layers");
    j.open('[');
    put_layers_json(out, pr, h, twin_ok);
    j.close(']');
  }
  j.close('}');
}

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

}  // namespace rsim
