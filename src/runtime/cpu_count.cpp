#include "runtime/cpu_count.h"

#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <set>
#include <sstream>
#include <string>

namespace minfer::runtime {

static std::optional<std::string> read_file(const std::string& path) {
  std::ifstream f(path);
  if (!f) return std::nullopt;
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

static std::optional<long long> read_ll(const std::string& path) {
  auto s = read_file(path);
  if (!s) return std::nullopt;
  try {
    return std::stoll(*s);
  } catch (...) {
    return std::nullopt;
  }
}

std::optional<double> parse_cpu_max(std::string_view content) {
  std::istringstream in{std::string(content)};
  std::string quota;
  long long period = 100000;
  if (!(in >> quota)) return std::nullopt;
  if (quota == "max") return std::nullopt;
  in >> period;
  try {
    const long long q = std::stoll(quota);
    if (q <= 0 || period <= 0) return std::nullopt;
    return double(q) / double(period);
  } catch (...) {
    return std::nullopt;
  }
}

int count_distinct_cores(const std::vector<std::optional<long long>>& core_keys) {
  std::set<long long> seen;
  int alone = 0;
  for (const auto& k : core_keys) {
    if (k) seen.insert(*k);
    else ++alone;
  }
  return int(seen.size()) + alone;
}

static std::optional<double> cgroup_limit() {
  // v2: the process's own cgroup first, then the root of the mounted hierarchy.
  std::optional<std::string> rel;
  if (auto self = read_file("/proc/self/cgroup")) {
    std::istringstream in(*self);
    std::string line;
    while (std::getline(in, line))
      if (line.rfind("0::", 0) == 0) rel = line.substr(3);
  }
  if (rel && *rel != "/") {
    if (auto s = read_file("/sys/fs/cgroup" + *rel + "/cpu.max")) return parse_cpu_max(*s);
  }
  if (auto s = read_file("/sys/fs/cgroup/cpu.max")) return parse_cpu_max(*s);
  auto q = read_ll("/sys/fs/cgroup/cpu/cpu.cfs_quota_us");
  auto p = read_ll("/sys/fs/cgroup/cpu/cpu.cfs_period_us");
  if (q && p && *q > 0 && *p > 0) return double(*q) / double(*p);
  return std::nullopt;
}

CpuInfo cpu_info() {
  CpuInfo info;
  std::vector<int> cpus;
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof(set), &set) == 0) {
    for (int i = 0; i < CPU_SETSIZE; ++i)
      if (CPU_ISSET(i, &set)) cpus.push_back(i);
  }
  if (cpus.empty()) {
    const long n = sysconf(_SC_NPROCESSORS_ONLN);
    for (long i = 0; i < std::max(1L, n); ++i) cpus.push_back(int(i));
  }
  info.logical = int(cpus.size());

  std::vector<std::optional<long long>> keys;
  for (int c : cpus) {
    const std::string base = "/sys/devices/system/cpu/cpu" + std::to_string(c) + "/topology/";
    auto core = read_ll(base + "core_id");
    auto pkg = read_ll(base + "physical_package_id");
    if (core) keys.push_back((pkg.value_or(0) << 32) ^ *core);
    else keys.push_back(std::nullopt);
  }
  info.physical = std::max(1, count_distinct_cores(keys));
  info.usable = info.physical;
  if (auto lim = cgroup_limit()) {
    info.cgroup_limit = *lim;
    info.usable = std::min(info.usable, std::max(1, int(std::ceil(*lim - 1e-9))));
  }
  info.usable = std::max(1, info.usable);
  return info;
}

int usable_physical_cores() {
  static const int n = cpu_info().usable;
  return n;
}

}  // namespace minfer::runtime
