// Host memory planning: the room a process has (MemAvailable, cgroup limit, MGJOIN_HOST_MEMORY_LIMIT),
// refusals that name what needed the memory, and HostColumn's check before it takes large columns.
#include <mgjoin/error.hpp>
#include <mgjoin/types.hpp>

#include "alloc/host_memory.hpp"

#include <gtest/gtest.h>

#include <cstdlib>
#include <string>

namespace mgjoin::test {
namespace {

using alloc::HostMemoryReadings;
constexpr std::uint64_t GiB = 1ull << 30;

TEST(HostMemoryRoom, MemAvailableBoundsAFixedSizeMachine) {
  HostMemoryReadings r;
  r.mem_available = 61 * GiB;
  const auto room = alloc::host_memory_room(r);
  ASSERT_TRUE(room.bytes.has_value());
  EXPECT_EQ(*room.bytes, 61 * GiB);
  EXPECT_EQ(room.bound, "MemAvailable");
}

TEST(HostMemoryRoom, MemAvailableIsNoBoundWhereMemoryGrows) {
  // Virtual machines whose MemTotal starts small and grows as memory is used (virtio-mem).
  HostMemoryReadings r;
  r.mem_available = 20 * GiB;
  r.memory_grows = true;
  EXPECT_FALSE(alloc::host_memory_room(r).bytes.has_value());
  r.cgroup_limit = 256 * GiB;
  r.cgroup_usage = 6 * GiB;
  const auto room = alloc::host_memory_room(r);
  ASSERT_TRUE(room.bytes.has_value());
  EXPECT_EQ(*room.bytes, 250 * GiB);
  EXPECT_EQ(room.bound, "the cgroup's memory limit");
}

TEST(HostMemoryRoom, TheTightestBoundWins) {
  HostMemoryReadings r;
  r.mem_available = 100 * GiB;
  r.cgroup_limit = 64 * GiB;
  r.cgroup_usage = 10 * GiB;
  EXPECT_EQ(*alloc::host_memory_room(r).bytes, 54 * GiB);
  r.env_limit = 40 * GiB;
  r.resident = 8 * GiB;
  const auto room = alloc::host_memory_room(r);
  EXPECT_EQ(*room.bytes, 32 * GiB);
  EXPECT_EQ(room.bound, "MGJOIN_HOST_MEMORY_LIMIT");
  r.resident = 50 * GiB;  // already past the cap: no room, not a wrapped-around huge one
  EXPECT_EQ(*alloc::host_memory_room(r).bytes, 0u);
}

TEST(HostMemoryRoom, NothingReadMeansNoBound) {
  EXPECT_FALSE(alloc::host_memory_room(HostMemoryReadings{}).bytes.has_value());
}

TEST(ExpectHostMemory, FitsOrNamesWhatNeededItAndTheBound) {
  HostMemoryReadings r;
  r.mem_available = 61 * GiB;
  EXPECT_NO_THROW(alloc::expect_host_memory(32 * GiB, "the merge buffers", r));
  try {
    alloc::expect_host_memory(64 * GiB, "copies of the inputs", r);
    FAIL() << "64 GiB fitted into 61 GiB";
  } catch (const OutOfMemory& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find("host memory: copies of the inputs needs 64.0 GiB more"), std::string::npos) << m;
    EXPECT_NE(m.find("60.8 GiB can be had (MemAvailable"), std::string::npos) << m;  // less the reserve
    EXPECT_EQ(m.find('\n'), std::string::npos) << m;
  }
  // The reserve stays free: exactly the room does not fit.
  EXPECT_THROW(alloc::expect_host_memory(61 * GiB, "x", r), OutOfMemory);
  EXPECT_NO_THROW(alloc::expect_host_memory(61 * GiB - alloc::kHostMemoryReserve, "x", r));
  EXPECT_NO_THROW(alloc::expect_host_memory(1ull << 62, "anything", HostMemoryReadings{}));  // no bound read
}

TEST(HostMemoryWouldHold, CountsTheCachedBlocksAsTheCheckWouldOnceItFreedThem) {
  const std::uint64_t reserve = alloc::kHostMemoryReserve;
  HostMemoryReadings r;
  // Room below the reserve: the cached blocks come back into the room before the reserve is taken off
  // (100 MiB + 1 GiB - 256 MiB can be had, as expect_host_memory finds after freeing them).
  r.mem_available = 100ull << 20;
  const std::uint64_t cached = GiB;
  const std::uint64_t usable = (100ull << 20) + cached - reserve;
  EXPECT_TRUE(alloc::host_memory_would_hold(usable, r, cached));
  EXPECT_FALSE(alloc::host_memory_would_hold(usable + 1, r, cached));
  // Plenty of room: the same arithmetic, the cache on top.
  r.mem_available = 61 * GiB;
  EXPECT_TRUE(alloc::host_memory_would_hold(61 * GiB - reserve, r, 0));
  EXPECT_FALSE(alloc::host_memory_would_hold(61 * GiB - reserve + 1, r, 0));
  EXPECT_TRUE(alloc::host_memory_would_hold(62 * GiB - reserve, r, GiB));
  // Nothing to cache and no room at all: nothing fits; no bound read: everything does.
  r.mem_available = 0;
  EXPECT_FALSE(alloc::host_memory_would_hold(1, r, 0));
  EXPECT_TRUE(alloc::host_memory_would_hold(1ull << 62, HostMemoryReadings{}, 0));
}

// Size classes of pinned blocks: small blocks exact; from 64 MiB up whole 2 MiB pages, at most 1/16
// over the request, and requests a few rows apart in one class (the streamed join's output asked
// 1050007313, 1050007317 and 1050007321 rows of 8 bytes in three runs: each missed the last's block).
TEST(PinnedBlockBytes, ClassesOfSixteenPerPowerOfTwoFromSixtyFourMiB) {
  EXPECT_EQ(alloc::pinned_block_bytes(64), 64u);
  EXPECT_EQ(alloc::pinned_block_bytes((64ull << 20) - 64), (64ull << 20) - 64);
  EXPECT_EQ(alloc::pinned_block_bytes(64ull << 20), 64ull << 20);
  EXPECT_EQ(alloc::pinned_block_bytes((64ull << 20) + 1), (64ull << 20) + (4ull << 20));  // steps of 64 MiB / 16
  EXPECT_EQ(alloc::pinned_block_bytes(8010ull << 20), 8192ull << 20);                      // steps of 256 MiB
  const std::uint64_t a = 1050007313ull * 8, b = 1050007321ull * 8;
  EXPECT_EQ(alloc::pinned_block_bytes(a), alloc::pinned_block_bytes(b));
  std::uint64_t previous = 0;
  for (std::uint64_t bytes = 64ull << 20; bytes < (1ull << 40); bytes += bytes / 7 + 12345) {
    const std::uint64_t c = alloc::pinned_block_bytes(bytes);
    ASSERT_GE(c, bytes);
    ASSERT_LE(c - bytes, bytes / 16) << bytes;
    ASSERT_EQ(c % (2ull << 20), 0u) << bytes;
    ASSERT_GE(c, previous) << bytes;  // monotone
    ASSERT_EQ(alloc::pinned_block_bytes(c), c) << bytes;  // a class is its own class
    previous = c;
  }
}

TEST(FormatBytes, Units) {
  EXPECT_EQ(alloc::format_bytes(512), "512 B");
  EXPECT_EQ(alloc::format_bytes(1536), "1.5 KiB");
  EXPECT_EQ(alloc::format_bytes(64ull << 20), "64.0 MiB");
  EXPECT_EQ(alloc::format_bytes(125ull * GiB), "125.0 GiB");
  EXPECT_EQ(alloc::format_bytes(3ull << 40), "3.0 TiB");
}

/// Sets MGJOIN_HOST_MEMORY_LIMIT for one test.
class HostMemoryLimit : public ::testing::Test {
 protected:
  void TearDown() override { unsetenv("MGJOIN_HOST_MEMORY_LIMIT"); }
  static void limit(const char* value) { setenv("MGJOIN_HOST_MEMORY_LIMIT", value, 1); }
};

TEST_F(HostMemoryLimit, LargeColumnsAreRefusedBeforeTheyAreTaken) {
  // A cap below what the process already holds leaves no room at all.
  limit("1M");
  try {
    HostColumn::allocate(DType::UInt64, 16 << 20);  // 128 MiB
    FAIL() << "a 128 MiB column was allocated under a 1 MiB cap";
  } catch (const OutOfMemory& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find("a uint64 column of 16777216 rows needs 128.0 MiB more"), std::string::npos) << m;
    EXPECT_NE(m.find("MGJOIN_HOST_MEMORY_LIMIT"), std::string::npos) << m;
  }
  // Small columns are not checked (the check costs /proc reads): they are taken as before.
  EXPECT_EQ(HostColumn::allocate(DType::UInt64, 1 << 20).size(), 1 << 20);
}

TEST(HostColumnSize, ASizeWhoseBytesOverflowIsRefusedNotWrapped) {
  // 2^61 rows of 8 bytes is 2^64 bytes: computed naively it wraps to a tiny allocation.
  try {
    HostColumn::allocate(DType::UInt64, std::int64_t{1} << 61);
    FAIL() << "a 2^64-byte column was allocated";
  } catch (const OutOfMemory& e) {
    EXPECT_NE(std::string(e.what()).find("past any host memory"), std::string::npos) << e.what();
  }
}

TEST_F(HostMemoryLimit, WouldHoldComparesWithTheRoomLikeTheCheck) {
  limit("1M");  // below what the process holds: no room
  EXPECT_FALSE(alloc::host_memory_would_hold(std::uint64_t{1} << 30));
  EXPECT_THROW(alloc::expect_host_memory(std::uint64_t{1} << 30, "a test's buffers"), OutOfMemory);
  limit("1T");
  EXPECT_TRUE(alloc::host_memory_would_hold(std::uint64_t{1} << 30));
  EXPECT_NO_THROW(alloc::expect_host_memory(std::uint64_t{1} << 30, "a test's buffers"));
}

TEST_F(HostMemoryLimit, ARoomyCapChangesNothing) {
  limit("1T");
  EXPECT_EQ(HostColumn::allocate(DType::UInt32, 32 << 20).size(), 32 << 20);
}

TEST_F(HostMemoryLimit, AValueThatIsNotASizeIsAnInputError) {
  limit("lots");
  try {
    alloc::read_host_memory();
    FAIL() << "MGJOIN_HOST_MEMORY_LIMIT=lots accepted";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("MGJOIN_HOST_MEMORY_LIMIT 'lots'"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace mgjoin::test
