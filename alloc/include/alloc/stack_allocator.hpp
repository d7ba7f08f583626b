#pragma once
// Stack allocators over one physical allocation made up front (paper, Section 3.1.3): after start-up no
// phase calls cudaMalloc/cudaFree/cudaMallocHost; every scratch buffer is a virtual allocation here.
//
// Semantics
// - allocate() hands out the next aligned block at the top of the stack (16 B host/pinned, 128 B device);
//   allocate(0) takes one aligned unit so that every live allocation has its own address.
// - deallocate() may come in any order. It searches the doubly linked list of allocations from the top;
//   freeing the topmost live allocation lowers the top past every freed block behind it
//   (self-defragmentation), so once everything is freed the whole capacity is available again. A block
//   freed below a live one stays unusable until everything above it is freed.
// - Exhaustion throws mgjoin::OutOfMemory naming the allocator ("device stack of GPU 2", "pinned host
//   stack"), the bytes asked for, the bytes in use and the capacity; the stack is left unchanged.
// - Thread safety: every member function may be called from several host threads at once (one mutex per
//   allocator). Interleaved allocations of several threads stay correct but fragment the stack until the
//   later ones are freed; give each long-lived worker its own allocator where that matters.
// - Device work is not tracked: a freed block is reusable at once. Use an allocator's device memory in
//   stream order (one stream, or synchronize before a block freed on one stream is reused on another).
//
// Usage
//   alloc::DeviceStackAllocator stack(gpu, 8ull << 30);
//   alloc::StackBuffer<std::uint64_t, alloc::DeviceStackAllocator> keys(stack, n);
//   thrust::sort(thrust::cuda::par(alloc::ThrustAllocator(stack)).on(s), ...);  // thrust_adapter.cuh
//   alloc::run_cub(stack, [&](void* t, std::size_t& b) { return cub::DeviceRadixSort::SortPairs(t, b, ...); });
#include "alloc/backings.hpp"
#include "alloc/detail/stack_ledger.hpp"
#include "alloc/fault_injection.hpp"

#include <concepts>
#include <cstddef>
#include <limits>
#include <string>
#include <utility>

#include <mgjoin/error.hpp>

namespace mgjoin::alloc {

template <class Backing>
class StackAllocator {
 public:
  /// Makes the one physical allocation: the arguments go to the Backing's constructor.
  template <class... Args>
    requires std::constructible_from<Backing, Args...>
  explicit StackAllocator(Args&&... args)
      : backing_(std::forward<Args>(args)...),
        ledger_(backing_.base(), backing_.capacity(), backing_.alignment(), backing_.name()) {}

  // Owns memory and a mutex: neither copyable nor movable (hold it in a std::unique_ptr or std::deque).
  StackAllocator(const StackAllocator&) = delete;
  StackAllocator& operator=(const StackAllocator&) = delete;

  /// An aligned block of `bytes` at the top of the stack. Throws mgjoin::OutOfMemory when it does not fit.
  void* allocate(std::size_t bytes) {
    fault::check(backing_.device(), ledger_.name());
    return ledger_.allocate(bytes);
  }
  /// Frees a block from allocate() (any order; nullptr is ignored).
  void deallocate(void* p) noexcept { ledger_.deallocate(p); }

  /// Room for `n` objects of T (not constructed: the memory may be device memory).
  template <class T>
  T* allocate_n(std::size_t n) {
    static_assert(alignof(T) <= 16, "StackAllocator aligns to 16 bytes at least; T needs more");
    if (n > std::numeric_limits<std::size_t>::max() / sizeof(T))
      throw OutOfMemory(name() + ": " + std::to_string(n) + " objects of " + std::to_string(sizeof(T)) +
                        " bytes overflow the size type");
    return static_cast<T*>(allocate(n * sizeof(T)));
  }

  std::size_t capacity() const { return ledger_.capacity(); }
  /// Bytes from the bottom to the top of the stack (freed blocks below a live one count as used).
  std::size_t used() const { return ledger_.used(); }
  /// Bytes a next allocation can still get (before alignment of its size).
  std::size_t available() const { return capacity() - used(); }
  /// Bytes in live allocations, as asked (≤ used()).
  std::size_t live_bytes() const { return ledger_.live_bytes(); }
  std::size_t live_allocations() const { return ledger_.live_allocations(); }
  /// Highest used() since construction or reset_peak(): what a phase really needed.
  std::size_t peak_used() const { return ledger_.peak_used(); }
  void reset_peak() { ledger_.reset_peak(); }
  std::size_t alignment() const { return ledger_.alignment(); }
  /// For messages: "host stack", "pinned host stack", "device stack of GPU 2".
  const std::string& name() const { return ledger_.name(); }
  /// The GPU whose memory this is; -1 for host (pinned or plain) memory.
  int device() const { return backing_.device(); }
  const Backing& backing() const { return backing_; }

 private:
  Backing backing_;
  detail::StackLedger ledger_;
};

/// Plain host memory: ctor (std::size_t capacity[, std::size_t alignment = 16]).
using HostStackAllocator = StackAllocator<HostBacking>;
/// Portable pinned host memory: ctor (std::size_t capacity, bool mapped = false).
using PinnedStackAllocator = StackAllocator<PinnedHostBacking>;
/// Device memory of one GPU: ctor (int device, std::size_t capacity).
using DeviceStackAllocator = StackAllocator<DeviceBacking>;

}  // namespace mgjoin::alloc

#include "alloc/stack_buffer.hpp"
