#pragma once
// Bookkeeping of one stack allocator, kept apart from the memory it manages: the memory may be device
// memory the host cannot touch, so the doubly linked list of allocations lives in a host node pool.
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <string>
#include <vector>

namespace mgjoin::alloc::detail {

/// Hands out aligned offsets [0, capacity) in stack order. Thread-safe: one mutex guards every call.
class StackLedger {
 public:
  /// `name` is only used in messages; `alignment` must be a power of two.
  StackLedger(std::byte* base, std::size_t capacity, std::size_t alignment, std::string name);

  /// Next aligned block of `bytes` (0 counts as 1) at the top of the stack; throws mgjoin::OutOfMemory.
  void* allocate(std::size_t bytes);
  /// Marks the block starting at `p` free (searching from the top); lowers the top past every freed block
  /// behind it. nullptr is ignored; a pointer this stack did not hand out aborts (it is a bug).
  void deallocate(void* p) noexcept;

  std::size_t capacity() const { return capacity_; }
  std::size_t alignment() const { return alignment_; }
  const std::string& name() const { return name_; }
  std::size_t used() const;
  std::size_t live_bytes() const;
  std::size_t live_allocations() const;
  std::size_t peak_used() const;
  void reset_peak();

 private:
  static constexpr std::uint32_t kNone = UINT32_MAX;
  struct Node {
    std::size_t offset = 0;
    std::size_t bytes = 0;  // as asked; the block spans max(bytes, 1) rounded up to the alignment
    std::uint32_t prev = kNone;
    std::uint32_t next = kNone;
    bool live = false;
  };

  std::uint32_t new_node();
  void unlink_tail();
  std::size_t top_locked() const;
  [[noreturn]] void throw_out_of_memory(std::size_t bytes) const;

  std::byte* base_;
  std::size_t capacity_;
  std::size_t alignment_;
  std::string name_;

  mutable std::mutex mutex_;
  std::vector<Node> nodes_;            // node pool; the list links indices into it
  std::vector<std::uint32_t> spare_;   // pool slots not in the list
  std::uint32_t head_ = kNone;
  std::uint32_t tail_ = kNone;
  std::size_t live_bytes_ = 0;
  std::size_t live_count_ = 0;
  std::size_t peak_ = 0;
};

}  // namespace mgjoin::alloc::detail
