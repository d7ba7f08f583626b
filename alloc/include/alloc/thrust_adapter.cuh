#pragma once
// Thrust takes its temporary storage from a stack allocator instead of cudaMalloc:
//   alloc::ThrustAllocator scratch(stack);
//   thrust::sort_by_key(thrust::cuda::par(scratch).on(stream), keys, keys + n, values);
// Thrust frees its temporaries before the algorithm returns, possibly before the stream has drained:
// reuse of that space is safe on the same stream (stream order), elsewhere after a synchronization.
#include "alloc/stack_allocator.hpp"

#include <cstddef>

namespace mgjoin::alloc {

/// Byte allocator in the shape Thrust expects of a temporary-storage allocator (value_type char).
/// Copies share the stack. Throws mgjoin::OutOfMemory when the stack is exhausted.
template <class Alloc>
class ThrustAllocator {
 public:
  using value_type = char;

  explicit ThrustAllocator(Alloc& stack) : stack_(&stack) {}

  char* allocate(std::ptrdiff_t bytes) { return static_cast<char*>(stack_->allocate(static_cast<std::size_t>(bytes))); }
  void deallocate(char* p, std::size_t /*bytes*/) noexcept { stack_->deallocate(p); }

  Alloc& stack() const { return *stack_; }
  bool operator==(const ThrustAllocator& o) const { return stack_ == o.stack_; }

 private:
  Alloc* stack_;
};

}  // namespace mgjoin::alloc
