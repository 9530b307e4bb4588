// kernels.csv and ops.csv: the launches of each network and its time per op type.
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

const std::vector<std::string>& kernels_columns() {
  static const std::vector<std::string> c = {
      "point", "platform", "network", "kernel", "layers", "layer_names", "flops", "bytes", "intensity", "compute_time_s", "memory_time_s",
      "launch_overhead_s", "time_s", "bound", "derated_compute_time_s", "derated_memory_time_s", "derated_launch_overhead_s", "derated_time_s",
      "derated_bound"};
  return c;
}

std::string kernels_csv_header(const RunHeader& h) { return table_header(kernels_columns(), h.var_names); }

const std::vector<std::string>& ops_columns() {
  static const std::vector<std::string> c = {"point", "platform", "network", "op", "layers", "kernels", "flops", "bytes", "time_s", "derated_time_s", "share"};
  return c;
}

std::string ops_csv_header(const RunHeader& h) { return table_header(ops_columns(), h.var_names); }

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

namespace {

// A kernel of kernels.csv: its layers' sums
struct KernelSum {
  const Row* first;
  std::string names;
  double layers, flops, bytes, c, m, dc, dm;
  double host;      // the host time to issue it in eager mode (-1: the platform's runtime.host_overhead)
  double o, dover;  // the time the execution mode adds before it, on the theoretical and derated timelines
  size_t tail0, tail1;  // where its text after the layer names sits in `out`
};

// Each kernel's overhead under the point's execution mode, in kernel order per platform and
// network (the rule of evaluate_point's clock): its time_s adds it, so a network's kernels add
// up to its summary time
void add_kernel_overheads(std::vector<KernelSum>& ks, size_t nk, const PointResult& pr) {
  using K = KernelSum;
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

}  // namespace

void append_kernels_csv(std::string& out, const PointResult& pr, const Point& p) {
  using K = KernelSum;
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
  add_kernel_overheads(ks, nk, pr);
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

}  // namespace rsim
