// Late materialization's gather plan (engine/src/table/gather_plan.hpp): which payload columns the CPU
// gathers and which go to a GPU, from sizes and rates. Every expected placement and prediction below is
// worked out by hand from the rates given (seconds = bytes / (GB/s · 1e9); a GPU with columns adds 200 µs
// and 50 µs a column).
#include "engine/src/table/gather_plan.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <vector>

namespace mgjoin::table {
namespace {

/// Rates of a GPU set (together) and of the host.
detail::Rates rates(double pcie_each_way, double both_ways, double cpu_gather, double host_memcpy = 100) {
  detail::Rates r;
  r.h2d = r.d2h = pcie_each_way;
  r.both_ways = both_ways;
  r.cpu_gather = cpu_gather;
  r.host_memcpy = host_memcpy;
  return r;
}

/// `n` 8-byte columns of `rows` rows, on maps 0, 1, 0, 1, ...
std::vector<GatherColumn> columns(int n, std::uint64_t rows, bool pinned = true) {
  std::vector<GatherColumn> c;
  for (int i = 0; i < n; ++i) c.push_back({rows, 8, i % 2, pinned});
  return c;
}

constexpr std::uint64_t kPlenty = 1ull << 40;

TEST(GatherPlan, CpuAskedForOrNoGpuGathersEverythingOnTheCpu) {
  const auto cols = columns(3, 1000);
  const GatherPlan asked = plan_gathers(cols, 1000, 1, {2, kPlenty, rates(100, 160, 4)}, GatherOn::Cpu);
  EXPECT_EQ(asked.place, std::vector<int>(3, kOnCpu));
  EXPECT_EQ(asked.why, "gathers: CPU (asked for)");
  const GatherPlan none = plan_gathers(cols, 1000, 1, {0, 0, rates(100, 160, 4)}, GatherOn::Gpus);
  EXPECT_EQ(none.place, std::vector<int>(3, kOnCpu));
  EXPECT_EQ(none.why, "gathers: CPU (no GPU)");
  // 4 columns of 1000 rows at 4 GB/s: 4 · 8000 B / 4e9 B/s.
  EXPECT_DOUBLE_EQ(asked.cpu_seconds, 4 * 8000 / 4e9);
}

TEST(GatherPlan, FastPcieSendsEveryColumnToAGpuAndEachGpuFollowsOneMap) {
  // 2 GPUs at 50 GB/s each way (100 together), 80 both ways each; the CPU at 4 GB/s: a column costs the
  // CPU 0.2 s and a GPU 0.032 s (0.8 GB in, its 0.8 GB map in, 0.8 GB out) and 250 µs.
  const std::uint64_t rows = 100'000'000;
  const GatherPlan p = plan_gathers(columns(4, rows), rows, 1, {2, kPlenty, rates(100, 160, 4)}, GatherOn::Auto);
  // The second column (map 1) costs GPU 0 0.064 s (a second map) and GPU 1 0.032 s; the third (map 0)
  // GPU 0 0.05 s and GPU 1 0.064 s: the maps split between the GPUs.
  EXPECT_EQ(p.place, (std::vector<int>{0, 1, 0, 1}));
  ASSERT_EQ(p.gpus.size(), 2u);
  EXPECT_TRUE(p.gpus[0].map_used[0] && !p.gpus[0].map_used[1]);
  EXPECT_TRUE(!p.gpus[1].map_used[0] && p.gpus[1].map_used[1]);
  // Each GPU: 2.4 GB in, 1.6 GB out: max(2.4 / 50, 1.6 / 50, 4.0 / 80) = 0.05 s, 200 µs and two columns' 50 µs;
  // the CPU its key, 0.2 s.
  EXPECT_NEAR(p.gpu_seconds, 0.05 + 200e-6 + 2 * 50e-6, 1e-12);
  EXPECT_NEAR(p.cpu_seconds, 0.2, 1e-12);
  EXPECT_EQ(p.why, "gathers: 4 payload column(s) on GPUs, 0 on the CPU (predicted GPUs 0.050 s, CPU 0.200 s)");
}

TEST(GatherPlan, SlowPcieKeepsEveryColumnOnTheCpu) {
  // 1 GB/s each way: a column of 10^6 rows costs a GPU 16 ms, the CPU (40 GB/s) 0.2 ms.
  const GatherPlan p = plan_gathers(columns(3, 1'000'000), 1'000'000, 1, {1, kPlenty, rates(1, 1.6, 40)}, GatherOn::Auto);
  EXPECT_EQ(p.place, std::vector<int>(3, kOnCpu));
  EXPECT_EQ(p.gpu_seconds, 0);
}

TEST(GatherPlan, TheCpuTakesAColumnWhenItWouldFinishItFirst) {
  // One GPU at 20 GB/s each way, 40 both ways; the CPU at 3.2 GB/s: 0.25 s a column, 0.25 s for the key.
  // The GPU finishes its k-th column at 0.04 (k + 1) s + 200 µs + k · 50 µs (its map and k columns in), so
  // columns 1-11 go to it (0.48075 s < 0.5 s), the 12th to the CPU (0.52080 s > 0.5 s), the 13th to the
  // GPU (0.52080 s < 0.75 s).
  const std::uint64_t rows = 100'000'000;
  std::vector<GatherColumn> cols(13, GatherColumn{rows, 8, 0, true});
  const GatherPlan p = plan_gathers(cols, rows, 1, {1, kPlenty, rates(20, 40, 3.2)}, GatherOn::Auto);
  std::vector<int> expected(13, 0);
  expected[11] = kOnCpu;
  EXPECT_EQ(p.place, expected);
  EXPECT_NEAR(p.cpu_seconds, 0.5, 1e-12);
  EXPECT_NEAR(p.gpu_seconds, 0.52 + 200e-6 + 12 * 50e-6, 1e-12);
}

TEST(GatherPlan, GpusAskedForTakeColumnsTheCpuWouldFinishFirst) {
  const GatherPlan p = plan_gathers(columns(2, 1'000'000), 1'000'000, 1, {1, kPlenty, rates(1, 1.6, 40)}, GatherOn::Gpus);
  EXPECT_EQ(p.place, (std::vector<int>{0, 0}));
  EXPECT_NE(p.why.find("GPUs asked for"), std::string::npos) << p.why;
}

TEST(GatherPlan, AColumnTooLargeForEveryGpuStaysOnTheCpuAndTheReasonSaysSo) {
  // 10^6 rows: the map alone is 8 MB, the column 8 MB in and 8 MB out; a GPU has 16 MB.
  const GatherPlan p = plan_gathers(columns(1, 1'000'000), 1'000'000, 1, {2, 16'000'000, rates(100, 160, 1)}, GatherOn::Gpus);
  EXPECT_EQ(p.place, std::vector<int>{kOnCpu});
  EXPECT_NE(p.why.find("1 column(s) too large for a GPU's free memory"), std::string::npos) << p.why;
}

TEST(GatherPlan, DeviceMemoryIsTheMapsAndOneOrTwoBuffersEachWay) {
  GpuGatherLoad one;
  EXPECT_EQ(gather_device_bytes(one, 1000), 0u);  // no column, nothing taken
  one.columns = 1;
  one.map_used[0] = true;
  one.largest_source = 5000;
  one.largest_output = 4000;
  const std::uint64_t slack = gather_device_bytes(one, 1000) - (8000 + 5000 + 4000);
  // The device stack aligns each of up to six buffers (maps, two sources, two outputs) to 128 B.
  EXPECT_GE(slack, 6u * 128);
  EXPECT_LE(slack, 1u << 12);
  GpuGatherLoad two = one;
  two.columns = 3;
  two.map_used[1] = true;
  EXPECT_EQ(gather_device_bytes(two, 1000), 2 * 8000 + 2 * (5000 + 4000) + slack);
}

TEST(GatherPlan, PinningAPageableColumnOrMapCountsAgainstTheGpu) {
  // One GPU at 100 GB/s, a column of 10^8 rows: 1.6 GB in, 0.8 GB out: 16.25 ms; the CPU at 8 GB/s: 0.1 s.
  // Pinned, it goes to the GPU; pageable with pinning at 5 GB/s (0.16 s more), it stays on the CPU.
  const std::uint64_t rows = 100'000'000;
  const auto machine = GatherMachine{1, kPlenty, rates(100, 160, 8, /*host_memcpy=*/5)};
  EXPECT_EQ(plan_gathers(columns(1, rows, true), rows, 0, machine, GatherOn::Auto).place, std::vector<int>{0});
  EXPECT_EQ(plan_gathers(columns(1, rows, false), rows, 0, machine, GatherOn::Auto).place, std::vector<int>{kOnCpu});
  // So does a pageable gather map (0.8 GB: 0.16 s to pin), once per GPU that follows it.
  GatherMachine pageable_maps = machine;
  pageable_maps.maps_pinned = false;
  EXPECT_EQ(plan_gathers(columns(1, rows, true), rows, 0, pageable_maps, GatherOn::Auto).place, std::vector<int>{kOnCpu});
  const GatherPlan forced = plan_gathers(columns(2, rows, true), rows, 0, pageable_maps, GatherOn::Gpus);
  EXPECT_EQ(forced.gpus[0].registered, 2 * rows * 8);  // both maps, no source
}

TEST(GatherPlan, SmallColumnsStayOnTheCpu) {
  // The rates measured on nvidia-h100-x2 (PCIe 106.5 GB/s each way and 134.5 both ways for 2 GPUs, the
  // CPU's gather 6.0 GB/s). 10^4 rows: a column costs the CPU 13 µs, a GPU at least 250 µs: all on the
  // CPU. 10^6 rows: the CPU 1.33 ms a column (2.67 ms for its first, after the key), a GPU 0.61 ms for its
  // first (24 MB both ways at 67.25 GB/s, and 250 µs) and 1.47 ms for its fourth: all on the GPUs.
  const GatherMachine h100x2{2, kPlenty, rates(106.5, 134.5, 6.0)};
  EXPECT_EQ(plan_gathers(columns(8, 10'000), 10'000, 1, h100x2, GatherOn::Auto).place, std::vector<int>(8, kOnCpu));
  const GatherPlan large = plan_gathers(columns(8, 1'000'000), 1'000'000, 1, h100x2, GatherOn::Auto);
  EXPECT_EQ(std::count(large.place.begin(), large.place.end(), kOnCpu), 0) << large.why;
}

TEST(GatherPlan, NoRowsNeedNoGpu) {
  const GatherPlan p = plan_gathers(columns(2, 1000), 0, 1, {2, kPlenty, rates(100, 160, 4)}, GatherOn::Gpus);
  EXPECT_EQ(p.place, std::vector<int>(2, kOnCpu));
}

}  // namespace
}  // namespace mgjoin::table
