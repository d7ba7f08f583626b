// The pinned cache (HostColumn's blocks kept for reuse) against host-memory checks, on a machine where
// columns are really pinned. Skips without a GPU.
#include <mgjoin/error.hpp>
#include <mgjoin/types.hpp>

#include "alloc/host_memory.hpp"
#include "common/gpu.hpp"

#include <gtest/gtest.h>

#include <cstdlib>

namespace mgjoin {
namespace {

/// Caps host memory below what the process holds (no room at all) for one test.
class NoHostRoom : public ::testing::Test {
 protected:
  void SetUp() override {
    MGJOIN_REQUIRE_GPUS(1);
    alloc::release_pinned_cache();
  }
  void TearDown() override {
    unsetenv("MGJOIN_HOST_MEMORY_LIMIT");
    alloc::release_pinned_cache();
  }
};

// The cost model compares flows with host_memory_would_hold: it must not free the previous join's
// output blocks, which the next join's output reuses (freeing them cost a 64 GB join 3 s of re-pinning).
TEST_F(NoHostRoom, ComparingFlowsKeepsThePinnedBlocksThatACheckFrees) {
  // 1 GiB, a block registered as pinned: larger than the 256 MiB reserve that every check keeps back, so
  // that half of it fits once the reserve is off (with a 256 MiB block nothing would: the cap leaves no
  // room but the block, and the reserve takes all of it).
  const std::int64_t rows = std::int64_t{128} << 20;
  {
    const HostColumn c = HostColumn::allocate(DType::UInt64, rows, MemoryKind::Pinned);
    ASSERT_EQ(c.memory_kind(), MemoryKind::Pinned);
  }
  const std::uint64_t cached = alloc::pinned_cache_bytes();
  ASSERT_GE(cached, static_cast<std::uint64_t>(rows) * 8);
  ASSERT_GT(cached / 2, alloc::kHostMemoryReserve);  // half the block fits beside the reserve
  setenv("MGJOIN_HOST_MEMORY_LIMIT", "1M", 1);
  // The cached block counts as room (a join needing it would have it freed) ...
  EXPECT_TRUE(alloc::host_memory_would_hold(cached / 2));
  EXPECT_FALSE(alloc::host_memory_would_hold(cached * 4));
  // ... but only the real check frees it.
  EXPECT_EQ(alloc::pinned_cache_bytes(), cached);
  EXPECT_THROW(alloc::expect_host_memory(cached * 4, "a test's buffers"), OutOfMemory);
  EXPECT_EQ(alloc::pinned_cache_bytes(), 0u);
}

// A column a few rows larger than a cached block takes that block: the streamed join's output asked a
// few rows more in one run than in the last and pinned its 24 GB afresh each time it did.
TEST(PinnedCache, AColumnAFewRowsLargerReusesTheCachedBlock) {
  MGJOIN_REQUIRE_GPUS(1);
  alloc::release_pinned_cache();
  const std::int64_t rows = (std::int64_t{100} << 20) + 13;  // 800 MiB and some: a registered block
  const void* first = nullptr;
  {
    const HostColumn c = HostColumn::allocate(DType::UInt64, rows, MemoryKind::Pinned);
    ASSERT_EQ(c.memory_kind(), MemoryKind::Pinned);
    first = c.data();
  }
  ASSERT_GT(alloc::pinned_cache_bytes(), 0u);
  {
    const HostColumn c = HostColumn::allocate(DType::UInt64, rows + 8, MemoryKind::Pinned);
    EXPECT_EQ(c.data(), first) << "a new block was pinned for 64 bytes more";
    EXPECT_EQ(alloc::pinned_cache_bytes(), 0u);
  }
  alloc::release_pinned_cache();
}

// pinned_cache_serves says what allocate would do with the blocks kept (the result columns' choice
// between pinned and staged rests on it): a kept block serves its own size and a few rows more (in its
// size class), not a column under half its size or over its size, and nothing once it is taken.
TEST(PinnedCache, ServesSaysWhetherAllocateWouldReuseAKeptBlock) {
  MGJOIN_REQUIRE_GPUS(1);
  alloc::release_pinned_cache();
  // 800 MiB and some, inside its size class (its kept block is 832 MiB, pinned_block_bytes): 8 rows more
  // stay in it. (At 512 MiB exactly, s23's first version of this test, 8 rows more are the next class,
  // which allocate would not serve either.)
  const std::int64_t rows = (std::int64_t{100} << 20) + 13;
  EXPECT_FALSE(alloc::pinned_cache_serves(DType::UInt64, rows));
  { const HostColumn c = HostColumn::allocate(DType::UInt64, rows, MemoryKind::Pinned); }
  EXPECT_TRUE(alloc::pinned_cache_serves(DType::UInt64, rows));
  EXPECT_TRUE(alloc::pinned_cache_serves(DType::UInt64, rows + 8));
  EXPECT_FALSE(alloc::pinned_cache_serves(DType::UInt64, rows / 4));
  EXPECT_FALSE(alloc::pinned_cache_serves(DType::UInt64, rows * 2));
  {
    const HostColumn taken = HostColumn::allocate(DType::UInt64, rows + 8, MemoryKind::Pinned);
    EXPECT_FALSE(alloc::pinned_cache_serves(DType::UInt64, rows));
  }
  alloc::release_pinned_cache();
}

}  // namespace
}  // namespace mgjoin
