// StackAllocator on plain host memory: the behaviour every backing shares (alloc/stack_allocator.hpp).
#include "alloc/stack_allocator.hpp"

#include "common/seed.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstring>
#include <random>
#include <thread>
#include <vector>

namespace mgjoin::alloc {
namespace {

std::size_t offset_of(const HostStackAllocator& stack, const void* p) {
  return static_cast<std::size_t>(static_cast<const std::byte*>(p) - stack.backing().base());
}

TEST(StackAllocator, HandsOutSixteenByteAlignedBlocksOnHostMemory) {
  HostStackAllocator stack(1 << 20);
  std::vector<void*> blocks;
  for (std::size_t bytes : {1, 3, 16, 17, 31, 100, 0, 5})
    blocks.push_back(stack.allocate(bytes));
  for (void* p : blocks) EXPECT_EQ(reinterpret_cast<std::uintptr_t>(p) % 16, 0u);
  EXPECT_EQ(offset_of(stack, blocks[1]), 16u);  // 1 byte rounds up to one unit
  EXPECT_EQ(offset_of(stack, blocks[3]), 48u);  // 16 bytes take exactly one unit
  EXPECT_EQ(offset_of(stack, blocks[4]), 80u);  // 17 bytes take two
}

TEST(StackAllocator, HonoursALargerBackingAlignment) {
  HostStackAllocator stack(1 << 20, 128);
  EXPECT_EQ(stack.alignment(), 128u);
  for (std::size_t bytes : {1, 127, 128, 129, 4000}) {
    void* p = stack.allocate(bytes);
    EXPECT_EQ(reinterpret_cast<std::uintptr_t>(p) % 128, 0u) << bytes;
  }
}

TEST(StackAllocator, ZeroByteAllocationsGetDistinctAddresses) {
  HostStackAllocator stack(1024);
  void* a = stack.allocate(0);
  void* b = stack.allocate(0);
  EXPECT_NE(a, b);
  stack.deallocate(a);
  stack.deallocate(b);
  EXPECT_EQ(stack.used(), 0u);
}

TEST(StackAllocator, LifoFreesReturnEverySpaceAtOnce) {
  HostStackAllocator stack(4096);
  void* a = stack.allocate(100);
  void* b = stack.allocate(200);
  void* c = stack.allocate(300);
  EXPECT_EQ(stack.used(), 112u + 208u + 304u);
  stack.deallocate(c);
  EXPECT_EQ(stack.used(), 112u + 208u);
  stack.deallocate(b);
  EXPECT_EQ(stack.used(), 112u);
  stack.deallocate(a);
  EXPECT_EQ(stack.used(), 0u);
  EXPECT_EQ(stack.available(), 4096u);
  EXPECT_EQ(stack.live_allocations(), 0u);
}

TEST(StackAllocator, FreeBelowALiveBlockKeepsTheTopUntilTheTopIsFreed) {
  HostStackAllocator stack(4096);
  void* a = stack.allocate(64);
  void* b = stack.allocate(64);
  void* c = stack.allocate(64);
  void* d = stack.allocate(64);
  stack.deallocate(b);
  stack.deallocate(c);
  EXPECT_EQ(stack.used(), 256u);  // b and c are holes below the live d
  EXPECT_EQ(stack.live_bytes(), 128u);
  stack.deallocate(d);
  EXPECT_EQ(stack.used(), 64u);  // the top drops past d, c and b together
  void* e = stack.allocate(64);
  EXPECT_EQ(e, b);  // the defragmented space is handed out again
  stack.deallocate(a);
  EXPECT_EQ(stack.used(), 128u);
  stack.deallocate(e);
  EXPECT_EQ(stack.used(), 0u);
}

TEST(StackAllocator, FreesInAnyOrderEventuallyReturnAllSpace) {
  HostStackAllocator stack(1 << 16);
  std::vector<void*> blocks;
  for (int i = 0; i < 50; ++i) blocks.push_back(stack.allocate(17 * i));
  // Bottom first: nothing comes back until the last block goes.
  for (std::size_t i = 0; i + 1 < blocks.size(); ++i) stack.deallocate(blocks[i]);
  EXPECT_GT(stack.used(), 0u);
  stack.deallocate(blocks.back());
  EXPECT_EQ(stack.used(), 0u);
}

TEST(StackAllocator, UnalignedCapacityCanBeFilledExactly) {
  HostStackAllocator stack(100);
  void* a = stack.allocate(100);
  EXPECT_EQ(stack.used(), 100u);
  EXPECT_EQ(stack.available(), 0u);
  EXPECT_THROW(stack.allocate(0), OutOfMemory);
  stack.deallocate(a);
  EXPECT_EQ(stack.available(), 100u);
}

TEST(StackAllocator, ExhaustionNamesTheStackTheRequestTheUseAndTheCapacity) {
  HostStackAllocator stack(1000);
  void* a = stack.allocate(600);
  try {
    stack.allocate(500);
    FAIL() << "expected OutOfMemory";
  } catch (const OutOfMemory& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("host stack"), std::string::npos) << msg;
    EXPECT_NE(msg.find("500 bytes"), std::string::npos) << msg;
    EXPECT_NE(msg.find("608 bytes in use"), std::string::npos) << msg;
    EXPECT_NE(msg.find("capacity 1000"), std::string::npos) << msg;
  }
  EXPECT_EQ(stack.used(), 608u);  // a failed allocation leaves the stack as it was
  void* b = stack.allocate(392);
  EXPECT_EQ(stack.available(), 0u);
  stack.deallocate(b);
  stack.deallocate(a);
}

TEST(StackAllocator, ExhaustionMessageNamesTheGpuOfADeviceStack) {
  // The ledger is the part every backing shares; a device stack gives it this name.
  alignas(128) static std::byte memory[1024];
  detail::StackLedger ledger(memory, sizeof memory, 128, "device stack of GPU 2");
  try {
    ledger.allocate(4096);
    FAIL() << "expected OutOfMemory";
  } catch (const OutOfMemory& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("device stack of GPU 2"), std::string::npos) << msg;
    EXPECT_NE(msg.find("4096 bytes"), std::string::npos) << msg;
    EXPECT_NE(msg.find("capacity 1024"), std::string::npos) << msg;
  }
}

TEST(StackAllocator, AllocateNRefusesASizeThatOverflows) {
  HostStackAllocator stack(1024);
  EXPECT_THROW(stack.allocate_n<std::uint64_t>(SIZE_MAX / 4), OutOfMemory);
  auto* p = stack.allocate_n<std::uint64_t>(10);
  EXPECT_EQ(stack.used(), 80u);
  stack.deallocate(p);
}

// Two stacks over two regions of one block (the bucketed flow's halves): each hands out only its own
// region, frees in any order between them, and leaves the memory to its owner when destroyed.
TEST(StackAllocator, StacksOverBorrowedRegionsStayInThemAndFreeNothing) {
  alignas(128) static std::byte block[2 * 4096];
  std::memset(block, 0x5a, sizeof block);
  std::byte* written = nullptr;
  {
    PinnedStackAllocator low(Region{block, 4096});
    PinnedStackAllocator high(Region{block + 4096, 4096});
    EXPECT_EQ(low.capacity(), 4096u);
    EXPECT_EQ(low.name(), "pinned host stack");
    EXPECT_EQ(low.backing().base(), block);
    void* a = low.allocate(1000);
    void* b = high.allocate(1000);
    void* c = low.allocate(3000);
    EXPECT_EQ(static_cast<std::byte*>(a), block);
    EXPECT_LE(static_cast<const std::byte*>(c) + 3000, block + 4096);
    EXPECT_EQ(static_cast<std::byte*>(b), block + 4096);
    std::memset(c, 0x11, 3000);
    written = static_cast<std::byte*>(c);
    EXPECT_THROW(high.allocate(4000), OutOfMemory);  // the other region's room is not this stack's
    low.deallocate(a);
    high.deallocate(b);
    low.deallocate(c);
    EXPECT_EQ(low.used(), 0u);
    EXPECT_EQ(high.used(), 0u);
  }
  // Still the owner's: what a block wrote is there, and the rest is as the owner left it.
  EXPECT_EQ(written[2999], std::byte{0x11});
  EXPECT_EQ(block[sizeof block - 1], std::byte{0x5a});
  alignas(16) static std::byte odd[64];
  try {
    PinnedStackAllocator misaligned(Region{odd + 8, 32});
    ADD_FAILURE() << "a pinned region off 16-byte alignment was taken";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("16-byte aligned"), std::string::npos) << e.what();
  }
}

TEST(StackAllocator, PeakRecordsTheHighestTop) {
  HostStackAllocator stack(4096);
  void* a = stack.allocate(1000);
  stack.deallocate(a);
  EXPECT_EQ(stack.peak_used(), 1008u);
  stack.reset_peak();
  EXPECT_EQ(stack.peak_used(), 0u);
}

TEST(StackAllocatorDeathTest, FreeingAForeignOrFreedPointerAborts) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  HostStackAllocator stack(1024);
  void* a = stack.allocate(64);
  void* b = stack.allocate(64);
  stack.deallocate(a);
  EXPECT_DEATH(stack.deallocate(a), "did not hand out or already freed");
  int local = 0;
  EXPECT_DEATH(stack.deallocate(&local), "did not hand out or already freed");
  EXPECT_DEATH(stack.deallocate(static_cast<std::byte*>(b) + 16), "did not hand out or already freed");
  stack.deallocate(b);
}

TEST(StackBuffer, FreesOnDestructionAndMovesOwnership) {
  HostStackAllocator stack(4096);
  {
    StackBuffer<std::uint32_t, HostStackAllocator> a(stack, 100);
    EXPECT_EQ(a.size(), 100u);
    EXPECT_EQ(a.bytes(), 400u);
    std::fill(a.begin(), a.end(), 7u);
    StackBuffer<std::uint32_t, HostStackAllocator> b(std::move(a));
    EXPECT_TRUE(a.empty());
    EXPECT_EQ(a.data(), nullptr);
    EXPECT_EQ(b.data()[99], 7u);
    EXPECT_EQ(stack.live_allocations(), 1u);
    StackBuffer<std::uint32_t, HostStackAllocator> c(stack, 10);
    c = std::move(b);  // c's own block is freed, b's moves in
    EXPECT_EQ(stack.live_allocations(), 1u);
    EXPECT_EQ(c.size(), 100u);
  }
  EXPECT_EQ(stack.used(), 0u);
}

// Several threads allocate, fill, check and free their own blocks: no block may overlap another live one.
TEST(StackAllocator, ConcurrentThreadsNeverShareABlock) {
  const auto seed = test::announce_seed();
  HostStackAllocator stack(1 << 26);
  constexpr int kThreads = 8;
  std::atomic<int> out_of_memory{0};
  std::atomic<int> corrupted{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      std::mt19937_64 rng(seed + t);
      std::vector<std::pair<std::byte*, std::size_t>> mine;
      for (int step = 0; step < 20000; ++step) {
        if (mine.empty() || rng() % 2 == 0) {
          const std::size_t bytes = rng() % 2048;
          try {
            auto* p = static_cast<std::byte*>(stack.allocate(bytes));
            std::memset(p, t + 1, bytes);
            mine.emplace_back(p, bytes);
          } catch (const OutOfMemory&) {
            ++out_of_memory;
          }
        } else {
          const std::size_t i = rng() % mine.size();
          auto [p, bytes] = mine[i];
          if (std::any_of(p, p + bytes, [&](std::byte b) { return b != std::byte(t + 1); })) ++corrupted;
          stack.deallocate(p);
          mine.erase(mine.begin() + static_cast<std::ptrdiff_t>(i));
        }
      }
      for (auto [p, bytes] : mine) stack.deallocate(p);
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(corrupted.load(), 0);
  EXPECT_EQ(stack.used(), 0u);
  EXPECT_EQ(stack.live_allocations(), 0u);
  std::printf("[ info     ] %d allocations found the stack full\n", out_of_memory.load());
}

// A model of the stack: blocks in address order, the top after the last live one.
struct StackModel {
  struct Block {
    std::size_t offset, bytes;
    bool live;
  };
  std::size_t capacity, alignment;
  std::vector<Block> blocks;

  std::size_t top() const {
    if (blocks.empty()) return 0;
    const auto& b = blocks.back();
    const std::size_t end = b.offset + std::max<std::size_t>(b.bytes, 1);
    return std::min(capacity, (end + alignment - 1) / alignment * alignment);
  }
  bool fits(std::size_t bytes) const { return std::max<std::size_t>(bytes, 1) <= capacity - top(); }
  std::size_t push(std::size_t bytes) {
    const std::size_t offset = top();
    blocks.push_back({offset, bytes, true});
    return offset;
  }
  void free(std::size_t offset) {
    for (auto& b : blocks)
      if (b.offset == offset) b.live = false;
    while (!blocks.empty() && !blocks.back().live) blocks.pop_back();
  }
};

TEST(StackAllocator, RandomSequencesMatchAModel) {
  const auto seed = test::announce_seed();
  std::mt19937_64 rng(seed);
  for (int round = 0; round < 20; ++round) {
    const std::size_t capacity = 1000 + rng() % 100000;
    const std::size_t alignment = round % 2 ? 16 : 128;
    HostStackAllocator stack(capacity, alignment);
    StackModel model{capacity, alignment, {}};
    std::vector<void*> live;
    for (int step = 0; step < 5000; ++step) {
      const bool allocate = live.empty() || rng() % 100 < 55;
      if (allocate) {
        const std::size_t bytes = rng() % 8 == 0 ? rng() % capacity : rng() % 600;
        if (model.fits(bytes)) {
          void* p = stack.allocate(bytes);
          ASSERT_EQ(offset_of(stack, p), model.push(bytes)) << "round " << round << " step " << step;
          live.push_back(p);
        } else {
          ASSERT_THROW(stack.allocate(bytes), OutOfMemory) << "round " << round << " step " << step;
        }
      } else {
        const std::size_t i = rng() % 4 == 0 ? live.size() - 1 : rng() % live.size();  // often LIFO
        model.free(offset_of(stack, live[i]));
        stack.deallocate(live[i]);
        live.erase(live.begin() + static_cast<std::ptrdiff_t>(i));
      }
      ASSERT_EQ(stack.used(), model.top()) << "round " << round << " step " << step;
      ASSERT_EQ(stack.live_allocations(), live.size());
    }
    std::shuffle(live.begin(), live.end(), rng);
    for (void* p : live) stack.deallocate(p);
    EXPECT_EQ(stack.used(), 0u);
  }
}

}  // namespace
}  // namespace mgjoin::alloc
