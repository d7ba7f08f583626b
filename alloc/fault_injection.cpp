#include "alloc/fault_injection.hpp"

#include <mgjoin/error.hpp>

#include <mutex>

namespace mgjoin::alloc::fault {
namespace detail {
std::atomic<bool> armed{false};
}  // namespace detail

namespace {
std::mutex mutex;
std::uint64_t target = 0;   // guarded by mutex
std::uint64_t counted = 0;  // guarded by mutex
bool devices_only = true;   // guarded by mutex
}  // namespace

void fail_nth_allocation(std::uint64_t n, bool device_only) {
  const std::lock_guard lock(mutex);
  target = n;
  counted = 0;
  devices_only = device_only;
  detail::armed.store(n != 0, std::memory_order_relaxed);
}

std::uint64_t allocations_counted() {
  const std::lock_guard lock(mutex);
  return counted;
}

void detail::before_allocation(int device, const std::string& stack_name) {
  const std::lock_guard lock(mutex);
  if (target == 0 || (devices_only && device < 0)) return;
  if (++counted != target) return;
  target = 0;
  armed.store(false, std::memory_order_relaxed);
  throw OutOfMemory(stack_name + ": injected allocation failure (alloc::fault::fail_nth_allocation)");
}

}  // namespace mgjoin::alloc::fault
