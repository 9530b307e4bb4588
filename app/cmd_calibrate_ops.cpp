// `rsim calibrate --ops DIR`: the GPU kernel model fitted from measured op data (AIConfigurator's
// gemm_perf.csv), or with --check, a platform's kernel model (its own, or carried with
// `kernel_model: {from: …}`) against such data.
#include <filesystem>

#include "app/cli_common.hpp"
#include "session/session.hpp"
#include "engine/output/output.hpp"
#include "engine/model/text_file.hpp"
#include "measure/calibrate_ops.hpp"

namespace fs = std::filesystem;

namespace rsim::cli {

namespace {

constexpr size_t kMaxOpTableBytes = size_t(1) << 30;

// The STEM.csv[.gz] files of DIR (searched below it), or DIR itself when it is one of that name
std::vector<std::string> tables(const std::string& dir, const std::string& stem) {
  std::vector<std::string> found;
  std::error_code ec;
  if (fs::is_regular_file(dir, ec)) {
    const std::string name = fs::path(dir).filename().string();
    return name.rfind(stem, 0) == 0 ? std::vector<std::string>{dir} : std::vector<std::string>{};
  }
  for (auto it = fs::recursive_directory_iterator(dir, ec); !ec && it != fs::recursive_directory_iterator(); it.increment(ec)) {
    const std::string name = it->path().filename().string();
    if (it->is_regular_file(ec) && (name == stem + ".csv" || name == stem + ".csv.gz")) found.push_back(it->path().string());
  }
  std::sort(found.begin(), found.end());
  return found;
}

// The rsim measured.csv files of DIR (NAME.measured.csv or measured.csv, searched below it), or
// DIR itself when it is one
std::vector<std::string> measured_tables(const std::string& dir) {
  auto is_measured = [](const std::string& name) {
    const std::string tail = ".measured.csv";
    return name == "measured.csv" || (name.size() > tail.size() && name.compare(name.size() - tail.size(), tail.size(), tail) == 0);
  };
  std::vector<std::string> found;
  std::error_code ec;
  if (fs::is_regular_file(dir, ec)) return is_measured(fs::path(dir).filename().string()) ? std::vector<std::string>{dir} : found;
  for (auto it = fs::recursive_directory_iterator(dir, ec); !ec && it != fs::recursive_directory_iterator(); it.increment(ec))
    if (it->is_regular_file(ec) && is_measured(it->path().filename().string())) found.push_back(it->path().string());
  std::sort(found.begin(), found.end());
  return found;
}

// An op table's text (gzip read as such); throws naming the file
std::string op_table_text(const std::string& f) {
  std::string why;
  std::optional<std::string> text = read_text_file(f, kMaxOpTableBytes, "op table", why);
  if (!text) throw std::runtime_error("cannot read '" + f + "': " + why);
  return *text;
}

std::string stats_text(const measure::ErrorStats& e) {
  char buf[200];
  std::snprintf(buf, sizeof buf, "p10 %.3f  median %.3f  p90 %.3f  within 1.25x %5.1f %%  within 1.5x %5.1f %%", e.p10, e.median, e.p90, 100 * e.within_1_25,
                100 * e.within_1_5);
  return buf;
}

// The platform: a catalog name, or a platform file (which may be a what-if: base:, kernel_model:
// {from: …}), resolved as a scenario would; its file's text (what a fit is written into)
int load_platform(const po::variables_map& vm, Platform& p, std::string& ptext, std::ostream& err) {
  const std::string plat = vm["platform"].as<std::string>();
  Catalog catalog(find_hardware_dir(vm["hw-dir"].as<std::string>()));
  PlatformCache cache(catalog);
  try {
    const bool file = plat.find('/') != std::string::npos || (plat.size() > 5 && plat.substr(plat.size() - 5) == ".yaml");
    const std::string path = file ? plat : catalog.path_of(plat);
    std::string why;
    std::optional<std::string> t = read_regular_file(path, kMaxScenarioBytes, "platform file", why);
    if (!t) {
      err << "rsim: error: cannot read platform file '" << path << "': " << why << "\n";
      return kConfig;
    }
    ptext = *t;
    Diags d;
    const CNode node = file ? parse_yaml(ptext, path) : CNode::make_scalar(plat);
    p = resolve_platform(node, cache, d);
    if (!d.empty()) return print_config_error(err, ConfigError(d.list()));
  } catch (const ConfigError& e) {
    return print_config_error(err, e);
  }
  return kOk;
}

// The GEMM and collective rows of the tables, with notes for what was skipped
int read_op_tables(const std::vector<std::string>& files, const std::vector<std::string>& comm_files, std::vector<measure::GemmSample>& rows,
                   std::vector<measure::CollectiveSample>& comm, std::ostream& err) {
  std::vector<std::string> skipped, skipped_comm;
  try {
    auto read = [&](const std::string& f) {
      std::string why;
      std::optional<std::string> text = read_text_file(f, kMaxOpTableBytes, "op table", why);
      if (!text) throw std::runtime_error("cannot read '" + f + "': " + why);
      return *text;
    };
    for (const auto& f : files) {
      auto r = measure::read_aiconfigurator_gemm(read(f), f, skipped);
      rows.insert(rows.end(), r.begin(), r.end());
    }
    for (const auto& f : comm_files) {  // (TensorRT-LLM's own all-reduce: custom_allreduce_perf)
      auto r = f.find("custom_allreduce_perf") != std::string::npos ? measure::read_custom_allreduce_perf(read(f), f, skipped_comm)
                                                                     : measure::read_nccl_perf(read(f), f, skipped_comm);
      comm.insert(comm.end(), r.begin(), r.end());
    }
  } catch (const std::exception& e) {
    err << "rsim: error: " << e.what() << "\n";
    return kConfig;
  }
  for (const auto& s : skipped) err << "rsim: note: skipped " << s << " (a dtype the GEMM model does not fit)\n";
  for (const auto& s : skipped_comm) err << "rsim: note: skipped " << s << " (an op or dtype the collective model does not fit)\n";
  return kOk;
}

// Context attention: the rows of DIR's context_attention_perf tables checked against `p`'s model
// (check) or fitted on its figures (the `  attention:` lines for the kernel_model block into `yaml`);
// each row into the predictions (m: batch, n: isl, k: head dim)
int attention_part(bool check, const std::vector<std::string>& files, const Platform& p, std::string& csv, std::string& yaml, std::ostream& out, std::ostream& err) {
  if (files.empty()) return kOk;
  std::vector<measure::AttentionSample> rows;
  std::vector<std::string> skipped;
  for (const auto& f : files) {
    const std::string text = op_table_text(f);
    auto r = measure::read_context_attention(text, f, skipped);
    rows.insert(rows.end(), r.begin(), r.end());
  }
  for (const auto& s : skipped) err << "rsim: note: skipped " << s << "\n";
  char buf[256];
  auto row = [&](const measure::AttentionSample& s, double predicted) {
    std::snprintf(buf, sizeof buf, "context_attention,%s,%.0f,%.0f,%.0f,,%.0f,%.6g,%.6g,%.6g\n", dtype_name(s.compute), s.shape.batch, s.shape.sq,
                  s.shape.head_dim, s.bytes, s.measured_s, predicted, measure::attention_bound(s, p));
    csv += buf;
  };
  std::vector<measure::AttentionFit> fits;
  for (DType t : {DType::bf16, DType::fp8}) {
    size_t n = 0;
    for (const auto& s : rows) n += s.compute == t;
    if (n == 0) continue;
    if (check) {
      const ComputeRoof* roof = p.roof_for(t);
      const AttentionParams* a = p.kernel_model.attention_for(t, roof ? roof->dtypes : std::vector<DType>{});
      std::vector<double> model, bound;
      for (const auto& s : rows) {
        if (s.compute != t) continue;
        const double pr = a ? measure::predict_attention(s, *a, p) : measure::attention_bound(s, p);
        model.push_back(s.measured_s / pr), bound.push_back(s.measured_s / measure::attention_bound(s, p));
        row(s, pr);
      }
      out << "  context attention " << dtype_name(t) << " (" << n << " rows)\n    " << (a ? "kernel model   " : "(no model)     ")
          << stats_text(measure::error_stats(model)) << "\n    roofline bound " << stats_text(measure::error_stats(bound)) << "\n";
    } else {
      fits.push_back(measure::fit_attention(rows, t, p));
      const measure::AttentionFit& f = fits.back();
      out << "  context attention " << dtype_name(t) << ": " << f.rows << " rows\n    parameters " << attention_params_yaml(f.params) << "\n    fitted   "
          << stats_text(f.fitted) << "\n    held out " << stats_text(f.held_out) << "  (5 folds by head shape)\n";
      size_t i = 0;
      for (const auto& s : rows)
        if (s.compute == t) row(s, f.cv_predicted_s[i++]);
    }
  }
  yaml += measure::attention_fits_yaml(fits);
  return kOk;
}

// Decode attention: the rows of DIR's generation_attention_perf tables (one query per sequence over
// its KV cache), checked or fitted per KV-cache dtype like attention_part (m: batch, n: KV tokens, k: head dim)
int decode_part(bool check, const std::vector<std::string>& files, const Platform& p, std::string& csv, std::string& yaml, std::ostream& out, std::ostream& err) {
  if (files.empty()) return kOk;
  std::vector<measure::DecodeSample> rows;
  std::vector<std::string> skipped;
  for (const auto& f : files) {
    const std::string text = op_table_text(f);
    auto r = measure::read_generation_attention(text, f, skipped);
    rows.insert(rows.end(), r.begin(), r.end());
  }
  for (const auto& s : skipped) err << "rsim: note: skipped " << s << "\n";
  char buf[256];
  auto row = [&](const measure::DecodeSample& s, double predicted) {
    std::snprintf(buf, sizeof buf, "decode_attention,%s,%.0f,%.0f,%.0f,,%.0f,%.6g,%.6g,%.6g\n", dtype_name(s.kv), s.shape.batch, s.shape.kv_tokens,
                  s.shape.head_dim, s.bytes, s.measured_s, predicted, measure::decode_bound(s, p));
    csv += buf;
  };
  std::vector<measure::DecodeFit> fits;
  for (DType t : {DType::bf16, DType::fp8}) {
    size_t n = 0;
    for (const auto& s : rows) n += s.kv == t;
    if (n == 0) continue;
    if (check) {
      const DecodeAttentionParams* a = p.kernel_model.decode_for(t);
      std::vector<double> model, bound;
      for (const auto& s : rows) {
        if (s.kv != t) continue;
        const double pr = a ? measure::predict_decode(s, *a, p) : measure::decode_bound(s, p);
        model.push_back(s.measured_s / pr), bound.push_back(s.measured_s / measure::decode_bound(s, p));
        row(s, pr);
      }
      out << "  decode attention, " << dtype_name(t) << " KV (" << n << " rows)\n    " << (a ? "kernel model   " : "(no model)     ")
          << stats_text(measure::error_stats(model)) << "\n    roofline bound " << stats_text(measure::error_stats(bound)) << "\n";
    } else {
      fits.push_back(measure::fit_decode(rows, t, p));
      const measure::DecodeFit& f = fits.back();
      out << "  decode attention, " << dtype_name(t) << " KV: " << f.rows << " rows\n    parameters " << decode_params_yaml(f.params) << "\n    fitted   "
          << stats_text(f.fitted) << "\n    held out " << stats_text(f.held_out) << "  (5 folds by head shape)\n";
      size_t i = 0;
      for (const auto& s : rows)
        if (s.kv == t) row(s, f.cv_predicted_s[i++]);
    }
  }
  yaml += measure::decode_fits_yaml(fits);
  return kOk;
}

// A collective's roofline: the ring/tree formula on the platform's link for its GPUs
double link_formula(const measure::CollectiveSample& c, const Platform& p) {
  const InterconnectLevel* l = p.link_for(c.gpus);
  if (!l) throw std::runtime_error("platform '" + p.name + "' states no interconnect");
  const double bw = l->bandwidth_bytes_per_s, lat = l->latency_s;
  return c.kind == Collective::AllReduce || c.kind == Collective::CustomAllReduce ? all_reduce_time(c.bytes, c.gpus, bw, lat).time_s
         : c.kind == Collective::AllToAll ? all_to_all_time(c.bytes, c.gpus, bw, lat)
                                          : all_gather_time(c.bytes, c.gpus, bw, lat);
}

// The op tables under the folders, by family
struct OpFiles {
  std::vector<std::string> gemm, attention, decode, comm, memory;
};
OpFiles op_files(const std::vector<std::string>& dirs) {
  OpFiles o;
  auto add = [](std::vector<std::string>& to, const std::vector<std::string>& found) { to.insert(to.end(), found.begin(), found.end()); };
  for (const std::string& x : dirs) {
    add(o.gemm, tables(x, "gemm_perf")), add(o.attention, tables(x, "context_attention_perf")), add(o.decode, tables(x, "generation_attention_perf"));
    add(o.comm, tables(x, "nccl_perf")), add(o.comm, tables(x, "custom_allreduce_perf")), add(o.memory, measured_tables(x));
  }
  return o;
}

// Memory-bound layers: the timed rows without MACs of rsim measured.csv files, checked against
// `p`'s `memory:` (check) or fitted on its bandwidth (the `  memory:` line into `yaml`); each row
// into the predictions (family memory, dtype: its operator)
int memory_part(bool check, const std::vector<std::string>& files, const Platform& p, std::string& csv, std::string& yaml, std::ostream& out, std::ostream& err) {
  if (files.empty()) return kOk;
  std::vector<measure::MemorySample> rows;
  size_t other = 0;
  for (const auto& f : files) {
    const std::string text = op_table_text(f);
    auto r = measure::read_measured_memory(text, f, other);
    rows.insert(rows.end(), r.begin(), r.end());
  }
  if (other) err << "rsim: note: " << other << " rows of the measured.csv files are not memory-bound layers or have no time (left to the other families)\n";
  if (rows.empty()) return kOk;
  char buf[256];
  auto row = [&](const measure::MemorySample& s, double predicted) {
    std::snprintf(buf, sizeof buf, "memory,%s,,,,,%.0f,%.6g,%.6g,%.6g\n", s.op.c_str(), s.bytes, s.measured_s, predicted, measure::memory_bound(s, p));
    csv += buf;
  };
  if (check) {
    const auto& m = p.kernel_model.memory;
    std::vector<double> model, bound;
    for (const auto& s : rows) {
      const double pr = m ? measure::predict_memory(s, *m, p) : measure::memory_bound(s, p);
      if (s.bytes / p.memory.front().bandwidth_bytes_per_s >= measure::kMemoryFitMinStream)
        model.push_back(s.measured_s / pr), bound.push_back(s.measured_s / measure::memory_bound(s, p));
      row(s, pr);
    }
    out << "  memory-bound layers (" << model.size() << " of " << rows.size() << " rows bandwidth-bound)\n    " << (m ? "kernel model   " : "(no model)     ")
        << stats_text(measure::error_stats(model)) << "\n    roofline bound " << stats_text(measure::error_stats(bound)) << "\n";
    return kOk;
  }
  const measure::MemoryFit f = measure::fit_memory(rows, p);
  std::string ops;
  for (const auto& [op, n] : f.op_rows) ops += (ops.empty() ? "" : ", ") + op + " " + std::to_string(n);
  out << "  memory-bound layers: " << f.fitted_rows << " of " << f.rows << " rows fitted (" << ops << ")\n    parameters " << memory_params_yaml(f.params)
      << "\n    fitted   " << stats_text(f.fitted) << "\n    held out " << stats_text(f.held_out) << "  (each network predicted by a fit on the others)\n";
  for (size_t i = 0; i < rows.size(); ++i) row(rows[i], f.cv_predicted_s[i]);
  std::snprintf(buf, sizeof buf, "  # memory: %zu bandwidth-bound rows (%s); median %.3f, within 1.25x %.1f %% (each network held out: %.1f %%); floor not fitted\n",
                f.fitted_rows, ops.c_str(), f.fitted.median, 100 * f.fitted.within_1_25, 100 * f.held_out.within_1_25);
  yaml += buf;
  yaml += "  memory: " + memory_params_yaml(f.params) + "\n";
  return kOk;
}

}  // namespace

po::options_description calibrate_ops_options() {
  po::options_description d("rsim calibrate --ops options (the GPU kernel model, docs/kernel-models.md)");
  d.add_options()("ops", po::value<std::vector<std::string>>()->composing(), "fit the GPU kernel model from measured op data instead: folders (or files; --ops again for more) of AIConfigurator gemm_perf, nccl_perf, custom_allreduce_perf, context_attention_perf and generation_attention_perf .csv[.gz], and rsim measured.csv files (their layers without MACs: the memory-bound family)")(
      "check", "with --ops: check the platform's kernel model (its own, or carried with kernel_model: {from: ...}) against the data; nothing fitted");
  return d;
}

int calibrate_ops(const po::variables_map& vm, std::ostream& out, std::ostream& err) {
  if (!vm.count("ops")) return usage_error(err, "--check goes with --ops DIR");
  const std::vector<std::string> dirs = vm["ops"].as<std::vector<std::string>>();
  std::string dir;  // (for messages)
  for (const auto& x : dirs) dir += (dir.empty() ? "" : ", ") + x;
  if (!vm.count("platform")) return usage_error(err, "calibrate --ops needs --platform", "rsim calibrate --ops DIR --platform h200 -o h200_op.yaml");
  const bool check = vm.count("check") > 0;
  if (!check && !vm.count("output")) return usage_error(err, "calibrate --ops needs -o FITTED.yaml (or --check)");
  const OpFiles found = op_files(dirs);
  const std::vector<std::string>&files = found.gemm, &att_files = found.attention, &dec_files = found.decode, &comm_files = found.comm, &mem_files = found.memory;
  if (files.empty() && comm_files.empty() && att_files.empty() && dec_files.empty() && mem_files.empty()) {
    err << "rsim: error: no gemm_perf, nccl_perf, custom_allreduce_perf, context_attention_perf or generation_attention_perf .csv[.gz] and no measured.csv under '" << dir << "'\n";
    return kConfig;
  }
  Platform p;
  std::string ptext;
  if (int code = load_platform(vm, p, ptext, err)) return code;
  if (!check && (p.kernel_model.active() || ptext.find("\nkernel_model:") != std::string::npos)) {
    err << "rsim: error: platform '" << p.name << "' has a kernel model already; fit on the platform without one\n";
    return kConfig;
  }
  std::vector<measure::GemmSample> rows;
  std::vector<measure::CollectiveSample> comm;
  char buf[256];
  if (int code = read_op_tables(files, comm_files, rows, comm, err)) return code;
  std::vector<Collective> kinds;
  for (const auto& c : comm)
    if (std::find(kinds.begin(), kinds.end(), c.kind) == kinds.end()) kinds.push_back(c.kind);
  std::vector<std::pair<DType, bool>> dtypes;  // compute dtype, block-scaled
  for (const auto& r : rows)
    if (std::find(dtypes.begin(), dtypes.end(), std::make_pair(r.compute, r.block)) == dtypes.end()) dtypes.emplace_back(r.compute, r.block);
  if (dtypes.empty() && kinds.empty() && att_files.empty() && dec_files.empty() && mem_files.empty()) {
    err << "rsim: error: no GEMM rows of a dtype the model fits (bfloat16, float16, fp8, fp8_block) and no collectives in " << dir << "\n";
    return kConfig;
  }
  // predictions: a GEMM row's m, n, k; a collective's GPUs and bytes (its bound: the roofline's ring/tree formula on the link)
  std::string csv = "family,dtype,m,n,k,gpus,bytes,measured_s,predicted_s,bound_s\n";
  auto comm_bound = [&](const measure::CollectiveSample& c) { return link_formula(c, p); };
  auto comm_row = [&](const measure::CollectiveSample& c, double predicted) {
    std::snprintf(buf, sizeof buf, "collective,%s,,,,%lld,%.0f,%.6g,%.6g,%.6g\n", collective_name(c.kind), c.gpus, c.bytes, c.measured_s, predicted, comm_bound(c));
    csv += buf;
  };
  try {
    if (check) {
      if (!p.kernel_model.active()) {
        err << "rsim: error: platform '" << p.name << "' has no kernel model to check (fit one, or carry one with kernel_model: {from: …})\n";
        return kConfig;
      }
      out << "kernel model of " << p.name << (p.kernel_model.source.empty() ? "" : " (" + p.kernel_model.source + ")") << " against " << rows.size()
          << " GEMMs of " << dir << "; measured / predicted:\n";
      for (const auto& [t, block] : dtypes) {
        const std::string name = measure::gemm_variant_name(t, block);
        // (a block-scaled GEMM takes the dtype's own parameters where the platform has none for it, as a layer does)
        const std::vector<DType> same_roof = p.roof_for(t) ? p.roof_for(t)->dtypes : std::vector<DType>{};
        const GemmParams* g = p.kernel_model.gemm_for_layer(t, block ? 128 : 0, same_roof);
        if (!g) {
          out << "  " << name << ": no GEMM parameters for this dtype\n";
          continue;
        }
        const bool own = !block || g != p.kernel_model.gemm_for(t, same_roof);  // (false: the dtype's own, in place of block-scaled ones)
        std::vector<double> model, bound;
        for (const auto& r : rows) {
          if (r.compute != t || r.block != block) continue;
          const double pr = measure::predict_gemm(r, *g, p), b = measure::gemm_bound(r, p);
          model.push_back(r.measured_s / pr), bound.push_back(r.measured_s / b);
          std::snprintf(buf, sizeof buf, "gemm,%s,%.0f,%.0f,%.0f,,,%.6g,%.6g,%.6g\n", name.c_str(), r.m, r.n, r.k, r.measured_s, pr, b);
          csv += buf;
        }
        out << "  " << name << " (" << model.size() << " rows" << (own ? "" : "; no block-scaled parameters: " + std::string(dtype_name(t)) + "'s") << ")\n    kernel model   " << stats_text(measure::error_stats(model))
            << "\n    roofline bound " << stats_text(measure::error_stats(bound)) << "\n";
      }
      for (Collective k : kinds) {
        const CollectiveParams* cp = p.kernel_model.collective_for(k);
        std::vector<double> model, formula;
        for (const auto& c : comm) {
          if (c.kind != k) continue;
          const double pr = cp ? measure::predict_collective(c, *cp, p) : comm_bound(c);
          model.push_back(c.measured_s / pr), formula.push_back(c.measured_s / comm_bound(c));
          comm_row(c, pr);
        }
        out << "  " << collective_name(k) << " (" << model.size() << " rows)\n    " << (cp ? "kernel model   " : "(no model)     ")
            << stats_text(measure::error_stats(model)) << "\n    link formula   " << stats_text(measure::error_stats(formula)) << "\n";
      }
      std::string unused;
      if (int code = attention_part(true, att_files, p, csv, unused, out, err)) return code;
      if (int code = decode_part(true, dec_files, p, csv, unused, out, err)) return code;
      if (int code = memory_part(true, mem_files, p, csv, unused, out, err)) return code;
    } else {
      std::vector<measure::GemmFit> fits;
      out << "fitting the kernel model on " << rows.size() << " GEMM and " << comm.size() << " collective rows of " << dir << " with " << p.name << "'s figures (" << p.sm_count << " SMs, "
          << si(p.memory.front().bandwidth_bytes_per_s, "B/s") << "):\n";
      for (const auto& [t, block] : dtypes) {
        fits.push_back(measure::fit_gemm(rows, t, p, 5, block));
        const measure::GemmFit& f = fits.back();
        const std::string name = measure::gemm_variant_name(t, block);
        out << "  " << name << ": " << f.rows << " rows";
        if (f.flagged) out << " (" << f.flagged << " faster than the roofline bound, e.g. L2-resident weights: kept in the errors, not fitted)";
        out << "\n    parameters " << gemm_params_yaml(f.params) << "\n    fitted   " << stats_text(f.fitted) << "\n    held out " << stats_text(f.held_out)
            << "  (5 folds by weight shape (n, k))\n";
        size_t i = 0;
        for (const auto& r : rows) {
          if (r.compute != t || r.block != block) continue;
          std::snprintf(buf, sizeof buf, "gemm,%s,%.0f,%.0f,%.0f,,,%.6g,%.6g,%.6g\n", name.c_str(), r.m, r.n, r.k, r.measured_s, f.cv_predicted_s[i++],
                        measure::gemm_bound(r, p));
          csv += buf;
        }
      }
      std::vector<measure::CollectiveFit> cfits;
      for (Collective k : kinds) {
        cfits.push_back(measure::fit_collective(comm, k, p));
        const measure::CollectiveFit& f = cfits.back();
        out << "  " << collective_name(k) << ": " << f.rows << " rows\n    parameters " << collective_params_yaml(f.params) << "\n    fitted   "
            << stats_text(f.fitted) << "\n    held out " << stats_text(f.held_out) << "  (each GPU count predicted by a fit on the others)\n";
        for (const auto& c : comm)
          if (c.kind == k) comm_row(c, measure::predict_collective(c, f.params, p));
      }
      std::string attention_yaml;
      if (int code = attention_part(false, att_files, p, csv, attention_yaml, out, err)) return code;
      if (int code = decode_part(false, dec_files, p, csv, attention_yaml, out, err)) return code;
      if (int code = memory_part(false, mem_files, p, csv, attention_yaml, out, err)) return code;
      const std::string output = vm["output"].as<std::string>();
      std::string from;
      for (const auto& f : files) from += (from.empty() ? "" : ", ") + f;
      for (const auto& f : comm_files) from += (from.empty() ? "" : ", ") + f;
      for (const auto& f : att_files) from += (from.empty() ? "" : ", ") + f;
      for (const auto& f : dec_files) from += (from.empty() ? "" : ", ") + f;
      for (const auto& f : mem_files) from += (from.empty() ? "" : ", ") + f;
      const std::string yaml = measure::kernel_model_platform_yaml(ptext, fs::path(output).stem().string(), fits, cfits,
                                                                   "rsim calibrate --ops on " + std::to_string(rows.size()) + " GEMM and " +
                                                                       std::to_string(comm.size()) + " collective rows" + (att_files.empty() ? "" : " and context attention") + (dec_files.empty() ? "" : " and decode attention") +
                                                                       (mem_files.empty() ? "" : " and memory-bound layer") + " rows of " + from) +
                               attention_yaml;  // (the kernel_model block is the file's last)
      Diags d;  // the result must load as a platform
      build_platform(parse_yaml(yaml, output), nullptr, d);
      if (!d.empty()) return print_config_error(err, ConfigError(d.list()));
      write_file_atomic(output, yaml);
      out << "wrote " << output << "\n";
    }
    if (vm.count("predictions")) {
      write_file_atomic(vm["predictions"].as<std::string>(), csv);
      out << "wrote " << vm["predictions"].as<std::string>() << (check ? "" : " (held-out predictions)") << "\n";
    }
  } catch (const std::exception& e) {
    err << "rsim: error: " << e.what() << "\n";
    return kConfig;
  }
  return kOk;
}

}  // namespace rsim::cli
