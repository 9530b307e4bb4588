#include "measure/cpu.hpp"

#include <pthread.h>
#include <sched.h>
#include <unistd.h>

#include <algorithm>
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
    if (c.size_bytes > 0) out.push_back(c);
  }
  std::sort(out.begin(), out.end(), [](const CacheLevel& a, const CacheLevel& b) { return a.level < b.level; });
  return out;
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
