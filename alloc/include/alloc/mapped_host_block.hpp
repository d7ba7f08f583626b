#pragma once
// A small page-locked host block that kernels write directly: how a flow reads a value a kernel computed
// without a copy (alloc/ is the home of every CUDA allocation: tests/alloc/no_raw_cuda_alloc_test.cpp).
#include <mgjoin/error.hpp>

#include <cuda_runtime_api.h>

#include <cstddef>
#include <utility>

namespace mgjoin::alloc {

/// A small page-locked host block that kernels on every GPU write directly (cudaHostAllocMapped): a value
/// read this way takes no copy, so it never waits on a copy engine behind other streams' copies.
class MappedHostBlock {
 public:
  MappedHostBlock() = default;
  explicit MappedHostBlock(std::size_t bytes) {
    MGJOIN_CUDA_TRY(cudaHostAlloc(&host_, bytes, cudaHostAllocPortable | cudaHostAllocMapped));
    MGJOIN_CUDA_TRY(cudaHostGetDevicePointer(&device_, host_, 0));
  }
  ~MappedHostBlock() { reset(); }
  MappedHostBlock(MappedHostBlock&& o) noexcept
      : host_(std::exchange(o.host_, nullptr)), device_(std::exchange(o.device_, nullptr)) {}
  MappedHostBlock& operator=(MappedHostBlock&& o) noexcept {
    if (this != &o) {
      reset();
      host_ = std::exchange(o.host_, nullptr);
      device_ = std::exchange(o.device_, nullptr);
    }
    return *this;
  }
  /// Where the host reads it (after an event that follows the kernel's write).
  const volatile void* host() const { return host_; }
  /// Where kernels write it.
  void* device() const { return device_; }

 private:
  void reset() {
    if (host_) cudaFreeHost(host_);
    host_ = device_ = nullptr;
  }
  void* host_ = nullptr;
  void* device_ = nullptr;
};

}  // namespace mgjoin::alloc
