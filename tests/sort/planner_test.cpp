// Chunkset planning: the plan fits the usable memory, covers both relations, and fails clearly.
#include "engine/src/sort/planner.hpp"

#include <mgjoin/error.hpp>

#include <gtest/gtest.h>

#include <vector>

namespace mgjoin::sort {
namespace {

constexpr std::uint64_t GiB = 1ull << 30;

/// A plan's input for `gpus` GPUs with the usable memory of usable_device_bytes(free, limit).
SortPlanInput input(std::int64_t r, std::int64_t s, std::vector<std::uint64_t>& free, std::uint64_t limit = 0) {
  SortPlanInput in;
  in.r_size = r;
  in.s_size = s;
  in.key_bytes = 8;
  in.r_payload_bytes = 8;
  in.s_payload_bytes = 8;
  in.gpus = static_cast<int>(free.size());
  in.usable_bytes = usable_device_bytes(free, limit);
  in.sort_temp_bytes = [](std::int64_t n) { return static_cast<std::uint64_t>(n) / 10 + (1u << 20); };
  return in;
}

void expect_covers(const SortPlan& p, std::int64_t rows, int k) {
  EXPECT_GE(static_cast<std::int64_t>(k) * p.gpus * p.chunk, rows);
  if (k > 1) {
    EXPECT_LT(static_cast<std::int64_t>(k - 1) * p.gpus * p.chunk, rows);
  }
  // Every chunkset of an even split fits the chunk on every GPU.
  for (int i = 0; i < k; ++i) {
    const auto cs = even_part(rows, k, i);
    for (int d = 0; d < p.gpus; ++d) EXPECT_LE(even_part(cs.size(), p.gpus, d).size(), p.chunk);
  }
}

TEST(Planner, InCoreFitsOneChunksetPerRelation) {
  std::vector<std::uint64_t> free(4, 140 * GiB);
  const auto p = plan_sort(input(1'000'000'000, 1'000'000'000, free));
  EXPECT_EQ(p.k_r, 1);
  EXPECT_EQ(p.k_s, 1);
  EXPECT_EQ(p.chunk, 250'000'000);
  EXPECT_LE(p.device_bytes, p.usable_bytes);
  EXPECT_GE(p.chunk_capacity, p.chunk + p.chunk / 200);
}

TEST(Planner, AccountsForThreeBuffersPaddingAndTemp) {
  std::vector<std::uint64_t> free(1, 100 * GiB);
  const auto p = plan_sort(input(1, 1, free));
  // 3 buffers of chunk_capacity tuples of 16 bytes, the temp, scratch and slack.
  const std::uint64_t expected = 3ull * p.chunk_capacity * 16 + (p.chunk_capacity / 10 + (1u << 20)) +
                                 kPartitionScratchBytes + kAlignmentSlack;
  EXPECT_EQ(p.device_bytes, expected);
  EXPECT_EQ(p.chunk, kMinChunk);  // a tiny relation still gets the minimal chunk
}

TEST(Planner, MemoryLimitForcesSeveralChunksetsAndKrDiffersFromKs) {
  std::vector<std::uint64_t> free(3, 80 * GiB);
  const std::int64_t r = 10'000'001, s = 3'000'017;
  const std::uint64_t limit = 64ull << 20;  // 64 MiB per GPU
  const auto p = plan_sort(input(r, s, free, limit));
  EXPECT_LE(p.device_bytes, limit);
  EXPECT_GE(p.k_r, 3);
  EXPECT_GT(p.k_r, p.k_s);
  expect_covers(p, r, p.k_r);
  expect_covers(p, s, p.k_s);
}

TEST(Planner, TightestGpuDecides) {
  std::vector<std::uint64_t> free{80 * GiB, 1 * GiB};
  const auto p = plan_sort(input(1'000'000'000, 10, free));
  EXPECT_EQ(p.usable_bytes, static_cast<std::uint64_t>(0.8 * GiB));
  EXPECT_LE(p.device_bytes, p.usable_bytes);
  EXPECT_EQ(p.k_s, 1);
  expect_covers(p, 1'000'000'000, p.k_r);
}

TEST(Planner, UsableMemoryIsTheLimitOrTheDefaultFractionOfTheTightestGpu) {
  const std::vector<std::uint64_t> free{80 * GiB, 10 * GiB};
  EXPECT_EQ(usable_device_bytes(free, 0), static_cast<std::uint64_t>(0.8 * 10 * GiB));
  EXPECT_EQ(usable_device_bytes(free, 2 * GiB), 2 * GiB);
  EXPECT_EQ(usable_device_bytes(free, 8 * GiB), 8 * GiB);  // exactly 80% of the tightest
  try {
    usable_device_bytes(free, 9 * GiB);
    FAIL() << "a limit above 80% of the tightest GPU's free memory must be refused";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("JoinOptions::gpu_memory_limit"), std::string::npos) << e.what();
  }
}

TEST(Planner, EmptyRelationHasNoChunksets) {
  std::vector<std::uint64_t> free(2, 10 * GiB);
  const auto p = plan_sort(input(0, 5, free));
  EXPECT_EQ(p.k_r, 0);
  EXPECT_EQ(p.k_s, 1);
}

TEST(Planner, TooLittleMemoryIsAClearInputError) {
  std::vector<std::uint64_t> free(2, 10 * GiB);
  try {
    plan_sort(input(100, 100, free, 1 << 20));
    FAIL() << "expected InputError";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("JoinOptions::gpu_memory_limit"), std::string::npos) << e.what();
  }
}

// k_R and k_S are ints: a chunkset count beyond INT_MAX (here 2^32 + 1 chunksets of a minimal chunk)
// must be refused, not truncated into a plan that covers a sliver of the relation.
TEST(Planner, ChunksetCountBeyondIntIsRefusedNotTruncated) {
  std::vector<std::uint64_t> free(1, 10 * GiB);
  SortPlanInput probe = input(0, 0, free);
  const std::int64_t pad = kMinChunk + (kMinChunk * 5 + 999) / 1000;  // chunk + ceil(0.005 * chunk)
  const std::uint64_t just_min_chunk = device_bytes_for_chunk(kMinChunk, 16, probe.sort_temp_bytes(pad));
  const std::int64_t rows = ((1ll << 32) + 1) * kMinChunk;
  SortPlan p;
  try {
    p = plan_sort(input(rows, 1, free, just_min_chunk));
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("JoinOptions::gpu_memory_limit"), std::string::npos) << e.what();
    return;
  }
  // If a plan is returned, it must cover R.
  EXPECT_GE(static_cast<std::int64_t>(p.k_r) * p.gpus * p.chunk, rows) << "k_r = " << p.k_r;
}

TEST(Planner, EvenPartsDifferByAtMostOneRow) {
  for (const std::int64_t n : {0ll, 1ll, 2ll, 7ll, 1'000'000'007ll, (1ll << 62) + 3}) {
    for (const std::int64_t parts : {1ll, 3ll, 4ll}) {
      std::int64_t total = 0, smallest = INT64_MAX, largest = 0;
      for (std::int64_t i = 0; i < parts; ++i) {
        const auto r = even_part(n, parts, i);
        if (i > 0) {
          EXPECT_EQ(r.begin, even_part(n, parts, i - 1).end);
        }
        total += r.size();
        smallest = std::min(smallest, r.size());
        largest = std::max(largest, r.size());
      }
      EXPECT_EQ(total, n);
      EXPECT_LE(largest - smallest, 1);
    }
  }
}

}  // namespace
}  // namespace mgjoin::sort
