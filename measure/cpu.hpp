// What this CPU is: its vector features (CPUID, through the compiler's builtins) and the cache
// sizes the operating system reports (sysfs). Nothing here is hard-coded per microarchitecture.
#pragma once
#include <string>
#include <vector>

namespace rsim::measure {

struct CpuFeatures {
  bool sse2 = false, avx = false, fma = false, avx2 = false;
  bool avx512f = false, avx512vl = false, avx512bw = false, avx512_bf16 = false, avx512_vnni = false, avx_vnni = false;
};
CpuFeatures detect_features();
std::string features_text(const CpuFeatures& f);  // "sse2 avx avx2 fma"

struct CacheLevel {
  int level = 0;            // 1, 2, 3
  std::string type;         // Data, Unified
  double size_bytes = 0;
  int shared_by = 1;        // logical CPUs sharing one instance
  std::string source;       // where the size comes from: sysfs, cpuid, sysconf
};
// From /sys/devices/system/cpu/cpu0/cache (instruction caches skipped), by level. `root` is the
// sysfs folder, a parameter so that tests can point it at a fake tree.
std::vector<CacheLevel> read_caches(const std::string& root = "/sys/devices/system/cpu/cpu0/cache");
// From CPUID: leaf 4 on Intel, leaf 0x8000001D on AMD (with topology extensions); empty elsewhere.
std::vector<CacheLevel> read_caches_cpuid();
// From sysconf (_SC_LEVEL1_DCACHE_SIZE …; glibc asks CPUID itself); empty where it says nothing.
std::vector<CacheLevel> read_caches_sysconf();
// The caches as the first source that names any: sysfs, else CPUID, else sysconf. Every size is a
// hint: a cloud VM's guest may see the host's last-level cache (a 508 MB L3 in one), so the probe
// confirms each against its bandwidth curve (detect_levels).
std::vector<CacheLevel> detect_caches(const std::string& sysfs_root = "/sys/devices/system/cpu/cpu0/cache");
// "32K", "1024K", "32M" as sysfs writes them; 0 when unreadable.
double parse_sysfs_size(const std::string& s);

// The physical cores among logical CPUs 0 … cpus−1 (the CPUs run_pinned uses): distinct
// (physical_package_id, core_id) pairs under `root`, a parameter so that tests can point it at a
// fake tree. Logical CPUs whose topology is unreadable count as cores of their own.
int physical_cores_among(int cpus, const std::string& root = "/sys/devices/system/cpu");
std::string cpu_model_name();  // /proc/cpuinfo "model name", or "unknown CPU"
int online_cpus();
// Pins the calling thread to one logical CPU; false when the OS refuses.
bool pin_this_thread(int cpu);

}  // namespace rsim::measure
