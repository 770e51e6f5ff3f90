// How many threads to use by default: the physical cores this process may actually run on.
// Hyper-thread siblings share one core's execution units (matrix-vector work gains nothing from
// them), and containers limit CPU through cgroup quotas that the CPU count does not show.
#pragma once
#include <optional>
#include <string_view>
#include <vector>

namespace minfer::runtime {

struct CpuInfo {
  int logical = 1;             // CPUs in this process's affinity mask
  int physical = 1;            // distinct cores among them (per /sys topology)
  double cgroup_limit = 0;     // CPUs' worth of quota (cgroup v2 cpu.max or v1 cfs); 0 = none
  int usable = 1;              // min(physical, ceil(cgroup_limit)), at least 1
};

CpuInfo cpu_info();
int usable_physical_cores();   // cpu_info().usable, computed once

// Helpers exposed for tests.
// cgroup v2 "cpu.max" content ("max 100000" or "150000 100000"): CPUs' worth, nullopt when unlimited.
std::optional<double> parse_cpu_max(std::string_view content);
// Counts distinct core keys (e.g. package << 32 | core_id); CPUs without topology count alone.
int count_distinct_cores(const std::vector<std::optional<long long>>& core_keys);

}  // namespace minfer::runtime
