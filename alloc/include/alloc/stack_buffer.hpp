#pragma once
// RAII over one virtual allocation of a stack allocator: frees it when the buffer goes out of scope.
#include <cstddef>
#include <type_traits>
#include <utility>

namespace mgjoin::alloc {

/// `n` objects of T from `Alloc` (any StackAllocator). Elements are not constructed (the memory may be
/// on a GPU), hence T must be trivially copyable. Movable, not copyable. Buffers of one stack should
/// die in reverse order of creation for the space to come back at once (any order is still correct).
template <class T, class Alloc>
class StackBuffer {
  static_assert(std::is_trivially_copyable_v<T>, "StackBuffer holds raw memory: T must be trivially copyable");

 public:
  StackBuffer() = default;
  StackBuffer(Alloc& alloc, std::size_t n) : alloc_(&alloc), data_(alloc.template allocate_n<T>(n)), size_(n) {}
  ~StackBuffer() { release(); }

  StackBuffer(StackBuffer&& o) noexcept
      : alloc_(std::exchange(o.alloc_, nullptr)), data_(std::exchange(o.data_, nullptr)),
        size_(std::exchange(o.size_, 0)) {}
  StackBuffer& operator=(StackBuffer&& o) noexcept {
    if (this != &o) {
      release();
      alloc_ = std::exchange(o.alloc_, nullptr);
      data_ = std::exchange(o.data_, nullptr);
      size_ = std::exchange(o.size_, 0);
    }
    return *this;
  }
  StackBuffer(const StackBuffer&) = delete;
  StackBuffer& operator=(const StackBuffer&) = delete;

  T* data() const { return data_; }
  std::size_t size() const { return size_; }
  std::size_t bytes() const { return size_ * sizeof(T); }
  bool empty() const { return size_ == 0; }
  T* begin() const { return data_; }
  T* end() const { return data_ + size_; }

  /// Frees the memory now (the buffer becomes empty).
  void release() noexcept {
    if (alloc_ && data_) alloc_->deallocate(data_);
    alloc_ = nullptr;
    data_ = nullptr;
    size_ = 0;
  }

 private:
  Alloc* alloc_ = nullptr;
  T* data_ = nullptr;
  std::size_t size_ = 0;
};

}  // namespace mgjoin::alloc
