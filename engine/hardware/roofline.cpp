#include "engine/hardware/roofline.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

namespace rsim {

const char* bound_name(Bound b) {
  switch (b) {
    case Bound::Memory: return "memory";
    case Bound::Compute: return "compute";
    case Bound::None: return "none";
    case Bound::Interconnect: return "interconnect";
  }
  return "?";
}

CollectiveTime all_reduce_time(double bytes, long long n, double bandwidth, double latency) {
  if (n <= 1 || !(bytes > 0)) return {};
  const double nn = static_cast<double>(n);
  const double ring = 2 * (nn - 1) / nn * bytes / bandwidth + 2 * (nn - 1) * latency;
  const double tree = 2 * bytes / bandwidth + 2 * std::ceil(std::log2(nn)) * latency;
  return tree < ring ? CollectiveTime{tree, true} : CollectiveTime{ring, false};
}

double all_to_all_time(double bytes, long long n, double bandwidth, double latency) {
  if (n <= 1 || !(bytes > 0)) return 0;
  const double nn = static_cast<double>(n);
  return (nn - 1) / nn * bytes / bandwidth + (nn - 1) * latency;
}

double all_gather_time(double bytes, long long n, double bandwidth, double latency) {
  // a ring: each GPU receives the n − 1 shards it lacks, one step per shard
  return all_to_all_time(bytes, n, bandwidth, latency);
}

RoofPoint roofline(double flops, double bytes, double peak, double bw) {
  RoofPoint r;
  r.peak_flops_per_s = peak;
  r.bandwidth_bytes_per_s = bw;
  if (flops > 0) r.intensity = bytes > 0 ? flops / bytes : std::numeric_limits<double>::infinity();
  r.attainable_flops_per_s = bytes > 0 ? std::min(peak, bw * r.intensity) : (flops > 0 ? peak : 0.0);
  r.compute_time_s = flops / peak;
  r.memory_time_s = bytes / bw;
  r.time_s = std::max(r.compute_time_s, r.memory_time_s);
  if (flops > 0 || bytes > 0) r.bound = r.memory_time_s >= r.compute_time_s ? Bound::Memory : Bound::Compute;
  return r;
}

std::string collective_text(bool gather, const CollectiveTime& ct, double a2a, long long tensor, const std::string& link, long long expert,
                            const std::string& expert_link) {
  std::string s;
  if (ct.time_s > 0) s = (gather ? std::string("all-gather ring ") : std::string("all-reduce ") + (ct.tree ? "tree " : "ring ")) + std::to_string(tensor) + " × " + link;
  if (a2a > 0) s += (s.empty() ? "" : " + ") + std::string("all-to-all ") + std::to_string(expert) + " × " + expert_link;
  return s;
}

}  // namespace rsim
