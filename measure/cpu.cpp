#include "measure/cpu.hpp"

#include <pthread.h>
#include <sched.h>
#include <unistd.h>

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#endif

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <set>

namespace rsim::measure {

CpuFeatures detect_features() {
  CpuFeatures f;
#if defined(__x86_64__) || defined(__i386__)
  __builtin_cpu_init();
  f.sse2 = __builtin_cpu_supports("sse2");
  f.avx = __builtin_cpu_supports("avx");
  f.fma = __builtin_cpu_supports("fma");
  f.avx2 = __builtin_cpu_supports("avx2");
  f.avx512f = __builtin_cpu_supports("avx512f");
  f.avx512vl = __builtin_cpu_supports("avx512vl");
  f.avx512bw = __builtin_cpu_supports("avx512bw");
  f.avx512_bf16 = __builtin_cpu_supports("avx512bf16");
  f.avx512_vnni = __builtin_cpu_supports("avx512vnni");
#endif
  return f;
}

std::string features_text(const CpuFeatures& f) {
  std::string s;
  auto add = [&](bool on, const char* n) {
    if (on) s += (s.empty() ? "" : " ") + std::string(n);
  };
  add(f.sse2, "sse2");
  add(f.avx, "avx");
  add(f.fma, "fma");
  add(f.avx2, "avx2");
  add(f.avx512f, "avx512f");
  add(f.avx512vl, "avx512vl");
  add(f.avx512bw, "avx512bw");
  add(f.avx512_bf16, "avx512_bf16");
  add(f.avx512_vnni, "avx512_vnni");
  return s.empty() ? "none" : s;
}

double parse_sysfs_size(const std::string& raw) {
  std::string s = raw;
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.pop_back();
  if (s.empty() || !std::isdigit(static_cast<unsigned char>(s[0]))) return 0;
  size_t i = 0;
  double v = 0;
  while (i < s.size() && std::isdigit(static_cast<unsigned char>(s[i]))) v = v * 10 + (s[i++] - '0');
  std::string unit = s.substr(i);
  if (unit.empty() || unit == "B") return v;
  if (unit == "K" || unit == "KiB") return v * 1024;
  if (unit == "M" || unit == "MiB") return v * 1024 * 1024;
  if (unit == "G" || unit == "GiB") return v * 1024 * 1024 * 1024;
  return 0;
}

static std::string read_line(const std::filesystem::path& p) {
  std::ifstream in(p);
  std::string s;
  std::getline(in, s);
  return s;
}

// "0-3,8" → 5
static int count_cpu_list(const std::string& s) {
  int n = 0;
  size_t i = 0;
  while (i < s.size()) {
    size_t comma = s.find(',', i);
    std::string part = s.substr(i, comma == std::string::npos ? std::string::npos : comma - i);
    size_t dash = part.find('-');
    try {
      if (dash == std::string::npos) n += part.empty() ? 0 : 1;
      else n += std::stoi(part.substr(dash + 1)) - std::stoi(part.substr(0, dash)) + 1;
    } catch (...) {
      return 1;
    }
    if (comma == std::string::npos) break;
    i = comma + 1;
  }
  return std::max(n, 1);
}

int physical_cores_among(int cpus, const std::string& root) {
  std::set<std::pair<std::string, std::string>> cores;
  int unknown = 0;
  for (int c = 0; c < cpus; ++c) {
    std::filesystem::path dir = std::filesystem::path(root) / ("cpu" + std::to_string(c)) / "topology";
    std::string package = read_line(dir / "physical_package_id"), core = read_line(dir / "core_id");
    if (core.empty()) ++unknown;
    else cores.emplace(package, core);
  }
  return static_cast<int>(cores.size()) + unknown;
}

std::vector<CacheLevel> read_caches(const std::string& root) {
  std::vector<CacheLevel> out;
  std::error_code ec;
  for (int i = 0; i < 16; ++i) {
    std::filesystem::path dir = std::filesystem::path(root) / ("index" + std::to_string(i));
    if (!std::filesystem::is_directory(dir, ec)) break;
    CacheLevel c;
    c.type = read_line(dir / "type");
    if (c.type == "Instruction") continue;
    try {
      c.level = std::stoi(read_line(dir / "level"));
    } catch (...) {
      continue;
    }
    c.size_bytes = parse_sysfs_size(read_line(dir / "size"));
    c.shared_by = count_cpu_list(read_line(dir / "shared_cpu_list"));
    c.source = "sysfs";
    if (c.size_bytes > 0) out.push_back(c);
  }
  std::sort(out.begin(), out.end(), [](const CacheLevel& a, const CacheLevel& b) { return a.level < b.level; });
  return out;
}

std::vector<CacheLevel> read_caches_cpuid() {
  std::vector<CacheLevel> out;
#if defined(__x86_64__) || defined(__i386__)
  unsigned a = 0, b = 0, c = 0, d = 0;
  if (!__get_cpuid(0, &a, &b, &c, &d)) return out;
  char vendor[13] = {};
  std::memcpy(vendor, &b, 4), std::memcpy(vendor + 4, &d, 4), std::memcpy(vendor + 8, &c, 4);
  unsigned leaf = 0;
  if (std::strcmp(vendor, "GenuineIntel") == 0 && a >= 4) {
    leaf = 4;
  } else if (std::strcmp(vendor, "AuthenticAMD") == 0 || std::strcmp(vendor, "HygonGenuine") == 0) {
    unsigned ea = 0, eb = 0, ec = 0, ed = 0;
    // leaf 0x8000001D exists with the topology extensions (0x80000001 ECX bit 22)
    if (__get_cpuid(0x80000000, &ea, &eb, &ec, &ed) && ea >= 0x8000001D && __get_cpuid(0x80000001, &ea, &eb, &ec, &ed) && (ec >> 22 & 1))
      leaf = 0x8000001D;
  }
  if (!leaf) return out;
  for (unsigned i = 0; i < 16; ++i) {
    if (!__get_cpuid_count(leaf, i, &a, &b, &c, &d)) break;
    const unsigned type = a & 0x1F;  // 0: no more caches, 1: data, 2: instruction, 3: unified
    if (type == 0) break;
    if (type == 2) continue;
    CacheLevel l;
    l.level = static_cast<int>(a >> 5 & 0x7);
    l.type = type == 1 ? "Data" : "Unified";
    const double ways = (b >> 22 & 0x3FF) + 1, partitions = (b >> 12 & 0x3FF) + 1, line = (b & 0xFFF) + 1, sets = static_cast<double>(c) + 1;
    l.size_bytes = ways * partitions * line * sets;
    l.shared_by = static_cast<int>((a >> 14 & 0xFFF) + 1);
    l.source = "cpuid";
    if (l.size_bytes > 0) out.push_back(l);
  }
  std::sort(out.begin(), out.end(), [](const CacheLevel& x, const CacheLevel& y) { return x.level < y.level; });
#endif
  return out;
}

std::vector<CacheLevel> read_caches_sysconf() {
  std::vector<CacheLevel> out;
#if defined(_SC_LEVEL1_DCACHE_SIZE) && defined(_SC_LEVEL2_CACHE_SIZE) && defined(_SC_LEVEL3_CACHE_SIZE)
  const std::pair<int, int> names[] = {{1, _SC_LEVEL1_DCACHE_SIZE}, {2, _SC_LEVEL2_CACHE_SIZE}, {3, _SC_LEVEL3_CACHE_SIZE}};
  for (const auto& [level, name] : names) {
    const long v = sysconf(name);
    if (v <= 0) continue;
    CacheLevel l;
    l.level = level;
    l.type = level == 1 ? "Data" : "Unified";
    l.size_bytes = static_cast<double>(v);
    l.shared_by = level == 3 ? online_cpus() : 1;  // (sysconf does not say; a last level is usually shared)
    l.source = "sysconf";
    out.push_back(l);
  }
#endif
  return out;
}

std::vector<CacheLevel> detect_caches(const std::string& sysfs_root) {
  std::vector<CacheLevel> c = read_caches(sysfs_root);
  if (c.empty()) c = read_caches_cpuid();
  if (c.empty()) c = read_caches_sysconf();
  return c;
}

std::string cpu_model_name() {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line))
    if (line.rfind("model name", 0) == 0) {
      size_t colon = line.find(':');
      if (colon != std::string::npos) {
        std::string v = line.substr(colon + 1);
        while (!v.empty() && v.front() == ' ') v.erase(v.begin());
        return v;
      }
    }
  return "unknown CPU";
}

int online_cpus() {
  long n = sysconf(_SC_NPROCESSORS_ONLN);
  return n > 0 ? static_cast<int>(n) : 1;
}

bool pin_this_thread(int cpu) {
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(cpu, &set);
  return pthread_setaffinity_np(pthread_self(), sizeof set, &set) == 0;
}

}  // namespace rsim::measure
