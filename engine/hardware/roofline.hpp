// The roofline model for one layer on one roof pair.
#pragma once
#include <string>

namespace rsim {

enum class Bound { Memory, Compute, None, Interconnect };
const char* bound_name(Bound b);

struct RoofPoint {
  double peak_flops_per_s = 0;
  double bandwidth_bytes_per_s = 0;
  double intensity = 0;   // FLOP/byte; +inf when bytes == 0 and flops > 0; 0 when flops == 0
  double attainable_flops_per_s = 0;  // min(peak, bandwidth · intensity)
  double compute_time_s = 0;          // flops / peak
  double memory_time_s = 0;           // bytes / bandwidth
  double time_s = 0;                  // max of the two, plus comm_time_s
  Bound bound = Bound::None;          // None: neither flops nor bytes; Interconnect: comm_time_s is the largest
  double comm_time_s = 0;             // the layer's collective on the GPUs' interconnect (tensor parallelism)
};

// An all-reduce of `bytes` among n GPUs over links of `bandwidth` (each way, per GPU) and
// `latency` per message: ring 2(n−1)/n · bytes / bandwidth + 2(n−1) · latency; tree (reduce, then
// broadcast, along a pipelined binary tree) 2 · bytes / bandwidth + 2 · ⌈log2 n⌉ · latency. The
// cheaper of the two, and which.
struct CollectiveTime {
  double time_s = 0;
  bool tree = false;
};
CollectiveTime all_reduce_time(double bytes, long long n, double bandwidth, double latency);
// An all-to-all among n GPUs of `bytes` from each (pairwise exchange: it keeps 1/n and sends n − 1
// messages): (n − 1)/n · bytes / bandwidth + (n − 1) · latency.
double all_to_all_time(double bytes, long long n, double bandwidth, double latency);
// A ring all-gather of a tensor of `bytes` (whole) from n GPUs holding 1/n each: every GPU receives
// the n − 1 shards it lacks, (n − 1)/n · bytes / bandwidth + (n − 1) · latency.
double all_gather_time(double bytes, long long n, double bandwidth, double latency);

// The text of a layer's collectives in results.csv: "all-reduce ring 8 × NVLink 4", "all-gather ring
// 8 × …", " + all-to-all 8 × …" ("" when none): tensor parallelism's (ct, on `link`; an all-gather
// when `gather`) and expert parallelism's all-to-alls (a2a seconds, on `expert_link`)
std::string collective_text(bool gather, const CollectiveTime& ct, double a2a, long long tensor, const std::string& link, long long expert,
                            const std::string& expert_link);

// I = F/B, P = min(π, β·I), t = max(F/π, B/β). Never NaN for F, B ≥ 0 and π, β > 0.
RoofPoint roofline(double flops, double bytes, double peak_flops_per_s, double bandwidth_bytes_per_s);

}  // namespace rsim
