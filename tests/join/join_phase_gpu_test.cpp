// The join kernel and the multi-GPU join phase against the CPU merge join (run on the GPU machine;
// skipped without GPUs). Every key's matching range must come back exactly once, as one range.
#include "engine/src/join/cpu_merge_join.hpp"
#include "engine/src/join/join_kernel.hpp"
#include "engine/src/join/join_pipeline.hpp"

#include "alloc/stack_allocator.hpp"
#include "alloc/stack_set.hpp"
#include "common/gpu.hpp"
#include "common/reference_join.hpp"
#include "common/seed.hpp"

#include <mgjoin/error.hpp>

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <memory>
#include <utility>
#include <random>

namespace mgjoin::detail {
namespace {

using test::dtype_of;
template <class Key>
ColumnView view(const std::vector<Key>& v) {
  return {v.data(), static_cast<std::int64_t>(v.size()), dtype_of<Key>()};
}

bool by_r_begin(const MatchRange& a, const MatchRange& b) { return a.r_begin < b.r_begin; }

/// The CPU reference: one range per key present on both sides.
template <class Key>
std::vector<MatchRange> reference_ranges(const std::vector<Key>& r, const std::vector<Key>& s) {
  std::vector<MatchRange> out;
  append_matching_ranges(view(r), view(s), {0, r.size(), 0, s.size()}, out);
  return out;
}

/// Device stacks and mapped pinned range stacks for GPUs 0..g-1.
struct Machine {
  std::vector<int> ids;
  alloc::StackSet<alloc::DeviceStackAllocator> memory;
  alloc::StackSet<alloc::PinnedStackAllocator> ranges;
  Machine(int g, std::size_t device_bytes, std::size_t range_bytes) {
    for (int d = 0; d < g; ++d) {
      ids.push_back(d);
      memory.add(d, device_bytes);
      ranges.add(range_bytes, /*mapped=*/true);
    }
  }
};

struct Case {
  int gpus = 1;
  OutputMode output = OutputMode::Ranges;
  std::uint64_t max_subpartition_rows = 0;
  std::size_t range_bytes = 256ull << 20;
};

/// One Machine per GPU count and range size for the whole binary, as an engine keeps its stacks for all
/// its joins (256 MiB of pinned ranges a GPU took ~0.1 s to pin for every join); each join must give back
/// all it took (checked in run_phase). Freed after the last test, before CUDA's teardown.
class Machines : public ::testing::Environment {
 public:
  Machine& get(int g, std::size_t range_bytes) {
    auto& m = machines_[{g, range_bytes}];
    if (!m) m = std::make_unique<Machine>(g, 1ull << 30, range_bytes);
    return *m;
  }
  void TearDown() override { machines_.clear(); }

 private:
  std::map<std::pair<int, std::size_t>, std::unique_ptr<Machine>> machines_;
};
Machines* const machines = static_cast<Machines*>(::testing::AddGlobalTestEnvironment(new Machines));

template <class Key>
JoinPhaseResult run_phase(const std::vector<Key>& r, const std::vector<Key>& s, const Case& c) {
  Machine& m = machines->get(c.gpus, c.range_bytes);
  std::vector<PhaseStat> stats;
  JoinPhaseOptions options;
  options.max_subpartition_rows = c.max_subpartition_rows;
  JoinPhaseResult result = join_phase(view(r), view(s), m.ids, m.memory.view(), m.ranges.view(), c.output, stats, options);
  EXPECT_EQ(stats.size(), 3u);
  // Every stream buffer and range region went back to its stack.
  for (auto* d : m.memory) EXPECT_EQ(d->used(), 0u);
  for (auto* p : m.ranges) EXPECT_EQ(p->used(), 0u);
  return result;
}

/// Runs the join phase on g = 1..4 GPUs (those present) and compares with the CPU reference.
template <class Key>
void check_all_gpu_counts(const std::vector<Key>& r, const std::vector<Key>& s, Case c = {}) {
  ASSERT_TRUE(std::is_sorted(r.begin(), r.end()) && std::is_sorted(s.begin(), s.end()));
  std::vector<MatchRange> expected = reference_ranges(r, s);
  std::uint64_t expected_count = 0;
  for (const MatchRange& m : expected) expected_count += m.tuples();
  for (int g = 1; g <= std::min(4, test::gpu_count()); ++g) {
    SCOPED_TRACE("gpus = " + std::to_string(g));
    c.gpus = g;
    for (OutputMode mode : {OutputMode::Count, OutputMode::Ranges}) {
      c.output = mode;
      JoinPhaseResult result = run_phase(r, s, c);
      EXPECT_EQ(result.count, expected_count);
      if (mode == OutputMode::Count) {
        EXPECT_TRUE(result.ranges.empty());
        continue;
      }
      std::sort(result.ranges.begin(), result.ranges.end(), by_r_begin);
      EXPECT_EQ(result.ranges, expected);
    }
  }
}

std::vector<std::uint64_t> unique_sorted_keys(std::mt19937_64& rng, std::size_t n) {
  std::vector<std::uint64_t> v(n);
  for (auto& k : v) k = rng();
  std::sort(v.begin(), v.end());
  v.erase(std::unique(v.begin(), v.end()), v.end());
  return v;
}

TEST(JoinKernelGpu, PaperFigure10Example) {
  MGJOIN_REQUIRE_GPUS(1);
  const std::vector<std::uint32_t> r{2, 7, 7, 7, 9}, s{2, 2, 5, 7, 7};
  alloc::DeviceStackAllocator dev(0, 1 << 20);
  alloc::PinnedStackAllocator pinned(1 << 16, true);
  alloc::StackBuffer<std::uint32_t, alloc::DeviceStackAllocator> rd(dev, r.size()), sd(dev, s.size());
  alloc::StackBuffer<TupleCounter, alloc::DeviceStackAllocator> tuples(dev, 1);
  alloc::StackBuffer<unsigned long long, alloc::DeviceStackAllocator> range_counter(dev, 1);
  alloc::StackBuffer<MatchRange, alloc::PinnedStackAllocator> ranges(pinned, 4);
  MGJOIN_CUDA_TRY(cudaMemcpy(rd.data(), r.data(), 20, cudaMemcpyHostToDevice));
  MGJOIN_CUDA_TRY(cudaMemcpy(sd.data(), s.data(), 20, cudaMemcpyHostToDevice));
  MGJOIN_CUDA_TRY(cudaMemset(tuples.data(), 0, tuples.bytes()));
  MGJOIN_CUDA_TRY(cudaMemset(range_counter.data(), 0, range_counter.bytes()));
  SubpartitionJoinArgs args;
  args.r_keys = rd.data(), args.r_size = 5, args.s_keys = sd.data(), args.s_size = 5;
  args.r_base = 100, args.s_base = 200;
  args.ranges = ranges.data(), args.range_capacity = 4;
  args.tuple_count = tuples.data(), args.range_counter = range_counter.data();
  launch_join_subpartition(args, 4, nullptr);
  MGJOIN_CUDA_TRY(cudaDeviceSynchronize());
  TupleCounter count;
  unsigned long long range_count = 0;
  MGJOIN_CUDA_TRY(cudaMemcpy(&count, tuples.data(), sizeof count, cudaMemcpyDeviceToHost));
  MGJOIN_CUDA_TRY(cudaMemcpy(&range_count, range_counter.data(), sizeof range_count, cudaMemcpyDeviceToHost));
  EXPECT_EQ(count.count, 1u * 2 + 3u * 2);
  EXPECT_EQ(count.overflowed, 0u);
  ASSERT_EQ(range_count, 2u);
  std::vector<MatchRange> got(ranges.data(), ranges.data() + 2);
  std::sort(got.begin(), got.end(), by_r_begin);
  EXPECT_EQ(got, (std::vector<MatchRange>{{100, 101, 200, 202}, {101, 104, 203, 205}}));
}

TEST(JoinKernelGpu, CountBeyondTwoToThe31CountOnly) {
  MGJOIN_REQUIRE_GPUS(1);
  // 50000 x 50000 equal keys: 2.5e9 tuples from one kernel, no ranges written.
  const std::size_t n = 50000;
  const std::vector<std::uint64_t> keys(n, 12345);
  alloc::DeviceStackAllocator dev(0, 8 << 20);
  alloc::StackBuffer<std::uint64_t, alloc::DeviceStackAllocator> rd(dev, n), sd(dev, n);
  alloc::StackBuffer<TupleCounter, alloc::DeviceStackAllocator> tuples(dev, 1);
  alloc::StackBuffer<unsigned long long, alloc::DeviceStackAllocator> range_counter(dev, 1);
  MGJOIN_CUDA_TRY(cudaMemcpy(rd.data(), keys.data(), n * 8, cudaMemcpyHostToDevice));
  MGJOIN_CUDA_TRY(cudaMemcpy(sd.data(), keys.data(), n * 8, cudaMemcpyHostToDevice));
  MGJOIN_CUDA_TRY(cudaMemset(tuples.data(), 0, tuples.bytes()));
  MGJOIN_CUDA_TRY(cudaMemset(range_counter.data(), 0, range_counter.bytes()));
  SubpartitionJoinArgs args;
  args.r_keys = rd.data(), args.r_size = n, args.s_keys = sd.data(), args.s_size = n;
  args.tuple_count = tuples.data(), args.range_counter = range_counter.data();
  launch_join_subpartition(args, 8, nullptr);
  TupleCounter count;
  MGJOIN_CUDA_TRY(cudaMemcpy(&count, tuples.data(), sizeof count, cudaMemcpyDeviceToHost));
  EXPECT_EQ(count.count, 2500000000ull);
  EXPECT_EQ(count.overflowed, 0u);
}

TEST(JoinPhaseGpu, UniformUniqueKeysForeignKeyJoin) {
  MGJOIN_REQUIRE_GPUS(1);
  std::mt19937_64 rng(test::announce_seed());
  const auto r = unique_sorted_keys(rng, 1 << 20);
  std::vector<std::uint64_t> s(1 << 20);
  for (auto& k : s) k = r[rng() % r.size()];
  std::sort(s.begin(), s.end());
  check_all_gpu_counts(r, s);
  check_all_gpu_counts(r, s, {.max_subpartition_rows = 5000});  // many subpartition pairs per stream
}

TEST(JoinPhaseGpu, ManyToManyDuplicatesSignedKeys) {
  MGJOIN_REQUIRE_GPUS(1);
  std::mt19937_64 rng(test::announce_seed());
  std::uniform_int_distribution<std::int32_t> key(-700, 700);
  std::vector<std::int32_t> r(300000), s(200000);
  for (auto& k : r) k = key(rng);
  for (auto& k : s) k = key(rng);
  std::sort(r.begin(), r.end());
  std::sort(s.begin(), s.end());
  check_all_gpu_counts(r, s, {.max_subpartition_rows = 40000});
}

TEST(JoinPhaseGpu, ZipfSkewTheta1) {
  MGJOIN_REQUIRE_GPUS(1);
  std::mt19937_64 rng(test::announce_seed());
  const auto r = unique_sorted_keys(rng, 100000);
  // S draws R's keys with probability ~ 1 / rank (theta = 1): the first keys are very hot.
  std::vector<double> cdf(r.size());
  double sum = 0;
  for (std::size_t i = 0; i < r.size(); ++i) cdf[i] = sum += 1.0 / static_cast<double>(i + 1);
  std::uniform_real_distribution<double> u(0, sum);
  std::vector<std::uint64_t> s(1 << 20);
  for (auto& k : s) k = r[std::min<std::size_t>(std::lower_bound(cdf.begin(), cdf.end(), u(rng)) - cdf.begin(), r.size() - 1)];
  std::sort(s.begin(), s.end());
  check_all_gpu_counts(r, s);
}

TEST(JoinPhaseGpu, SelectivityZeroAndOne) {
  MGJOIN_REQUIRE_GPUS(1);
  std::vector<std::uint64_t> even, odd;
  for (std::uint64_t k = 0; k < 400000; ++k) (k % 2 ? odd : even).push_back(k);
  check_all_gpu_counts(even, odd);   // selectivity 0
  check_all_gpu_counts(even, even);  // selectivity 1
}

TEST(JoinPhaseGpu, SingleKeyAndSignedExtremes) {
  MGJOIN_REQUIRE_GPUS(1);
  check_all_gpu_counts(std::vector<std::int64_t>(20000, -3), std::vector<std::int64_t>(10000, -3));
  const std::int64_t lo = std::numeric_limits<std::int64_t>::min(), hi = std::numeric_limits<std::int64_t>::max();
  check_all_gpu_counts(std::vector<std::int64_t>{lo, lo, -1, 0, hi}, std::vector<std::int64_t>{lo, 0, 0, hi, hi});
}

TEST(JoinPhaseGpu, EmptySides) {
  MGJOIN_REQUIRE_GPUS(1);
  const std::vector<std::uint32_t> some{1, 2, 3, 3}, none;
  check_all_gpu_counts(some, none);
  check_all_gpu_counts(none, some);
  check_all_gpu_counts(none, none);
}

TEST(JoinPhaseGpu, RangeBufferOverflowFallsBackToCpu) {
  MGJOIN_REQUIRE_GPUS(1);
  std::vector<std::uint64_t> r(200000);
  for (std::uint64_t k = 0; k < r.size(); ++k) r[k] = 3 * k;
  // 64 KiB of ranges hold 2048 of the 200000: nearly every pair overflows and is redone on the CPU.
  const auto result = run_phase(r, r, {.gpus = 1, .output = OutputMode::Ranges, .max_subpartition_rows = 20000, .range_bytes = 64 << 10});
  EXPECT_GT(result.cpu_fallback_subpartitions, 0u);
  EXPECT_EQ(result.count, r.size());
  auto ranges = result.ranges;
  std::sort(ranges.begin(), ranges.end(), by_r_begin);
  EXPECT_EQ(ranges, reference_ranges(r, r));
}

TEST(JoinPhaseGpu, OutputBeyondTwoToThe31ThroughThePipeline) {
  MGJOIN_REQUIRE_GPUS(1);
  // Ten hot keys of 20000 x 20000: 4e9 tuples, most of them counted by kernels (count only).
  std::vector<std::uint64_t> keys;
  for (std::uint64_t k = 0; k < 10; ++k) keys.insert(keys.end(), 20000, k * 1000);
  for (int g = 1; g <= std::min(4, test::gpu_count()); ++g) {
    const auto result = run_phase(keys, keys, {.gpus = g, .output = OutputMode::Count});
    EXPECT_EQ(result.count, 4000000000ull) << "gpus = " << g;
  }
}

TEST(JoinPhaseGpu, TimelineCoversEverySubpartitionInOrder) {
  MGJOIN_REQUIRE_GPUS(1);
  std::vector<std::uint64_t> r(1 << 20);
  for (std::uint64_t k = 0; k < r.size(); ++k) r[k] = k;
  const auto result = run_phase(r, r, {.gpus = 1, .output = OutputMode::Count, .max_subpartition_rows = 100000});
  EXPECT_EQ(result.timeline.size(), result.subpartitions);
  for (const auto& e : result.timeline) {
    EXPECT_LE(e.h2d_begin_ms, e.h2d_end_ms);
    EXPECT_LE(e.h2d_end_ms, e.kernel_end_ms);
    EXPECT_LT(e.stream, 3);
  }
}

}  // namespace
}  // namespace mgjoin::detail
