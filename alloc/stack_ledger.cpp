// Bookkeeping of the stack allocators (paper, Section 3.1.3): a doubly linked list of allocations in
// address order over a host node pool, searched from the top on free.
#include "alloc/detail/stack_ledger.hpp"

#include <mgjoin/error.hpp>

#include <algorithm>
#include <cstdio>
#include <cstdlib>

namespace mgjoin::alloc::detail {
namespace {

std::size_t align_up(std::size_t x, std::size_t alignment) { return (x + alignment - 1) & ~(alignment - 1); }

}  // namespace

StackLedger::StackLedger(std::byte* base, std::size_t capacity, std::size_t alignment, std::string name)
    : base_(base), capacity_(capacity), alignment_(alignment), name_(std::move(name)) {
  MGJOIN_EXPECTS(alignment_ != 0 && (alignment_ & (alignment_ - 1)) == 0, name_ + ": alignment must be a power of two");
  MGJOIN_EXPECTS(reinterpret_cast<std::uintptr_t>(base_) % alignment_ == 0, name_ + ": base is not aligned");
}

std::size_t StackLedger::top_locked() const {
  if (tail_ == kNone) return 0;
  const Node& top = nodes_[tail_];
  // The last block may end within the final alignment unit of an unaligned capacity.
  return std::min(capacity_, align_up(top.offset + std::max<std::size_t>(top.bytes, 1), alignment_));
}

void* StackLedger::allocate(std::size_t bytes) {
  const std::size_t size = std::max<std::size_t>(bytes, 1);  // a distinct address for every live allocation
  std::lock_guard lock(mutex_);
  const std::size_t offset = top_locked();
  if (size > capacity_ - offset) throw_out_of_memory(bytes);

  const std::uint32_t n = new_node();
  nodes_[n] = Node{offset, bytes, tail_, kNone, true};
  if (tail_ != kNone) nodes_[tail_].next = n;
  else head_ = n;
  tail_ = n;
  live_bytes_ += bytes;
  ++live_count_;
  peak_ = std::max(peak_, top_locked());
  return base_ + offset;
}

void StackLedger::deallocate(void* p) noexcept {
  if (p == nullptr) return;
  std::lock_guard lock(mutex_);
  const auto offset = static_cast<std::size_t>(static_cast<std::byte*>(p) - base_);
  // Search from the top: scratch space is mostly freed in LIFO order, so this is usually one step.
  std::uint32_t n = tail_;
  while (n != kNone && nodes_[n].offset > offset) n = nodes_[n].prev;
  if (n == kNone || nodes_[n].offset != offset || !nodes_[n].live) {
    std::fprintf(stderr, "mgjoin: %s: deallocate(%p) of a pointer it did not hand out or already freed\n",
                 name_.c_str(), p);
    std::abort();  // a bookkeeping bug: carrying on would hand out memory still in use
  }
  nodes_[n].live = false;
  live_bytes_ -= nodes_[n].bytes;
  --live_count_;
  while (tail_ != kNone && !nodes_[tail_].live) unlink_tail();  // self-defragmentation
}

std::uint32_t StackLedger::new_node() {
  if (!spare_.empty()) {
    const std::uint32_t n = spare_.back();
    spare_.pop_back();
    return n;
  }
  nodes_.emplace_back();
  return static_cast<std::uint32_t>(nodes_.size() - 1);
}

void StackLedger::unlink_tail() {
  const std::uint32_t n = tail_;
  tail_ = nodes_[n].prev;
  if (tail_ != kNone) nodes_[tail_].next = kNone;
  else head_ = kNone;
  spare_.push_back(n);
}

void StackLedger::throw_out_of_memory(std::size_t bytes) const {
  const std::size_t in_use = top_locked();
  throw OutOfMemory(name_ + " exhausted: asked for " + std::to_string(bytes) + " bytes, " +
                    std::to_string(in_use) + " bytes in use (" + std::to_string(live_bytes_) + " in " +
                    std::to_string(live_count_) + " live allocations), capacity " + std::to_string(capacity_) +
                    " bytes");
}

std::size_t StackLedger::used() const {
  std::lock_guard lock(mutex_);
  return top_locked();
}

std::size_t StackLedger::live_bytes() const {
  std::lock_guard lock(mutex_);
  return live_bytes_;
}

std::size_t StackLedger::live_allocations() const {
  std::lock_guard lock(mutex_);
  return live_count_;
}

std::size_t StackLedger::peak_used() const {
  std::lock_guard lock(mutex_);
  return peak_;
}

void StackLedger::reset_peak() {
  std::lock_guard lock(mutex_);
  peak_ = top_locked();
}

}  // namespace mgjoin::alloc::detail
