#pragma once
// Fault injection for tests: makes a chosen stack allocation fail as if its stack were exhausted, so
// that tests can check that a join failing midway (on any allocation, of any phase) reports an error,
// waits for its GPU work and frees what it took. Disarmed, it costs one relaxed atomic load per
// allocation.
#include <atomic>
#include <cstdint>
#include <string>

namespace mgjoin::alloc::fault {

/// Arms the fault: the n-th stack allocation from now (counting from 1; only of device stacks when
/// `device_only`) throws mgjoin::OutOfMemory. n = 0 disarms.
void fail_nth_allocation(std::uint64_t n, bool device_only = true);

/// Allocations counted since the last fail_nth_allocation (a sweep's length: arm with a large n, run
/// once, read this).
std::uint64_t allocations_counted();

namespace detail {
extern std::atomic<bool> armed;
/// Counts one allocation of a stack of `device` (-1: host); throws when it is the chosen one.
void before_allocation(int device, const std::string& stack_name);
}  // namespace detail

/// Called by every StackAllocator::allocate.
inline void check(int device, const std::string& stack_name) {
  if (detail::armed.load(std::memory_order_relaxed)) [[unlikely]]
    detail::before_allocation(device, stack_name);
}

}  // namespace mgjoin::alloc::fault
