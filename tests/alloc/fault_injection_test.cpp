// The allocation fault hook the fault tests use: it fails exactly the chosen allocation, leaves the
// stack as it was, and disarms itself.
#include <mgjoin/error.hpp>

#include "alloc/fault_injection.hpp"
#include "alloc/stack_allocator.hpp"

#include <gtest/gtest.h>

#include <string>

namespace mgjoin::test {
namespace {

class FaultInjection : public ::testing::Test {
 protected:
  void TearDown() override { alloc::fault::fail_nth_allocation(0); }
};

TEST_F(FaultInjection, FailsExactlyTheNthAllocationThenDisarms) {
  alloc::HostStackAllocator stack(1 << 20);
  alloc::fault::fail_nth_allocation(3, /*device_only=*/false);
  void* a = stack.allocate(100);
  void* b = stack.allocate(100);
  const std::size_t used = stack.used();
  try {
    stack.allocate(100);
    FAIL() << "the third allocation succeeded";
  } catch (const OutOfMemory& e) {
    EXPECT_NE(std::string(e.what()).find("host stack: injected allocation failure"), std::string::npos) << e.what();
  }
  EXPECT_EQ(stack.used(), used);  // the failed allocation took nothing
  EXPECT_EQ(stack.live_allocations(), 2u);
  void* c = stack.allocate(100);  // disarmed
  EXPECT_NE(c, nullptr);
  stack.deallocate(c);
  stack.deallocate(b);
  stack.deallocate(a);
  EXPECT_EQ(stack.used(), 0u);
}

TEST_F(FaultInjection, DeviceOnlyFaultsIgnoreHostStacks) {
  alloc::HostStackAllocator stack(1 << 20);
  alloc::fault::fail_nth_allocation(1);  // device stacks only
  for (int i = 0; i < 10; ++i) stack.deallocate(stack.allocate(64));
  EXPECT_EQ(alloc::fault::allocations_counted(), 0u);
}

TEST_F(FaultInjection, CountsAllocationsToSizeASweep) {
  alloc::HostStackAllocator stack(1 << 20);
  alloc::fault::fail_nth_allocation(~0ull, /*device_only=*/false);
  for (int i = 0; i < 7; ++i) stack.deallocate(stack.allocate(64));
  EXPECT_EQ(alloc::fault::allocations_counted(), 7u);
}

TEST_F(FaultInjection, DisarmedByZero) {
  alloc::HostStackAllocator stack(1 << 20);
  alloc::fault::fail_nth_allocation(1, false);
  alloc::fault::fail_nth_allocation(0);
  EXPECT_NO_THROW(stack.deallocate(stack.allocate(64)));
}

}  // namespace
}  // namespace mgjoin::test
