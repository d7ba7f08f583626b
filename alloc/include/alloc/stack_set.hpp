#pragma once
// One stack allocator per GPU, owned together (paper Section 3.1.3: the stacks are made once at start).
// The phases take non-owning views, std::span<Stack* const>; a StackSet owns the stacks and hands out
// that view, so that callers (the engine, benchmarks, tests) do not each keep an owning vector and a
// parallel vector of pointers.
//
//   alloc::StackSet<alloc::DeviceStackAllocator> device;
//   for (int d : devices) device.add(d, bytes_per_gpu);
//   sort::sort_phase(..., device.view(), ...);
#include <cstddef>
#include <memory>
#include <span>
#include <utility>
#include <vector>

namespace mgjoin::alloc {

template <class Stack>
class StackSet {
 public:
  /// Makes one more stack from `args` (e.g. a device id and a capacity) and returns it.
  template <class... Args>
  Stack& add(Args&&... args) {
    owned_.push_back(std::make_unique<Stack>(std::forward<Args>(args)...));
    ptrs_.push_back(owned_.back().get());
    return *ptrs_.back();
  }

  /// Frees every stack (their memory goes back to the system).
  void clear() {
    ptrs_.clear();
    owned_.clear();
  }

  /// The stacks, in the order added, as the phases take them.
  std::span<Stack* const> view() const { return ptrs_; }

  Stack& operator[](std::size_t i) const { return *ptrs_[i]; }
  std::size_t size() const { return ptrs_.size(); }
  bool empty() const { return ptrs_.empty(); }
  auto begin() const { return ptrs_.begin(); }
  auto end() const { return ptrs_.end(); }

 private:
  std::vector<std::unique_ptr<Stack>> owned_;  // stable addresses: the pointers below stay valid
  std::vector<Stack*> ptrs_;
};

}  // namespace mgjoin::alloc
