#include <gtest/gtest.h>

#include "runtime/cpu_count.h"

using namespace minfer::runtime;

TEST(CpuCount, ParsesCgroupV2CpuMax) {
  EXPECT_FALSE(parse_cpu_max("max 100000\n").has_value());
  EXPECT_DOUBLE_EQ(*parse_cpu_max("200000 100000\n"), 2.0);
  EXPECT_DOUBLE_EQ(*parse_cpu_max("150000 100000"), 1.5);
  EXPECT_FALSE(parse_cpu_max("").has_value());
  EXPECT_FALSE(parse_cpu_max("garbage").has_value());
}

TEST(CpuCount, CountsHyperThreadSiblingsOnce) {
  // 4 logical CPUs on 2 cores (siblings share a key) + one CPU without topology.
  std::vector<std::optional<long long>> keys{0, 1, 0, 1, std::nullopt};
  EXPECT_EQ(count_distinct_cores(keys), 3);
}

TEST(CpuCount, UsableIsWithinTheLogicalCount) {
  const CpuInfo c = cpu_info();
  EXPECT_GE(c.usable, 1);
  EXPECT_LE(c.usable, c.physical);
  EXPECT_LE(c.physical, c.logical);
  EXPECT_EQ(usable_physical_cores(), c.usable);
}
