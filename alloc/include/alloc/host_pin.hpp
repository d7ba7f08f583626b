#pragma once
// Pins pageable host memory for a scope: copies from pageable memory are staged by the driver and
// synchronous, copies from pinned memory run at the PCIe rate and overlap the host's work.
#include <mgjoin/error.hpp>

#include <cuda_runtime_api.h>

#include <cstddef>
#include <utility>

namespace mgjoin::alloc {

/// Whether `p` is pinned host memory (allocated pinned, or registered); false without a CUDA driver.
inline bool is_pinned(const void* p) {
  cudaPointerAttributes attr{};
  if (!p || cudaPointerGetAttributes(&attr, p) != cudaSuccess) {
    cudaGetLastError();
    return false;
  }
  return attr.type == cudaMemoryTypeHost;
}

/// Registers [p, p + bytes) with CUDA until destroyed; memory that is already pinned (or registered) is
/// left alone. Movable, so that a vector can hold the pins of several columns.
class HostPin {
 public:
  HostPin() = default;
  HostPin(const void* p, std::size_t bytes) {
    if (!p || bytes == 0) return;
    cudaPointerAttributes attr{};
    if (cudaPointerGetAttributes(&attr, p) == cudaSuccess && attr.type != cudaMemoryTypeUnregistered) return;
    cudaGetLastError();  // the attribute query of pageable memory may leave an error behind
    // Registration only pins the pages (it writes nothing): const memory may be registered.
    const cudaError_t e = cudaHostRegister(const_cast<void*>(p), bytes, cudaHostRegisterPortable);
    if (e == cudaErrorHostMemoryAlreadyRegistered) {
      // Part of the range is registered already (a neighbour in the same allocation shares a page):
      // copies from it are then staged by the driver, slower but right.
      cudaGetLastError();
      return;
    }
    if (e != cudaSuccess) {
      cudaGetLastError();  // not left behind for the next launch check
      MGJOIN_CUDA_TRY(e);
    }
    pinned_ = const_cast<void*>(p);
  }
  ~HostPin() {
    if (pinned_) cudaHostUnregister(pinned_);
  }
  HostPin(HostPin&& o) noexcept : pinned_(std::exchange(o.pinned_, nullptr)) {}
  HostPin& operator=(HostPin&& o) noexcept {
    std::swap(pinned_, o.pinned_);
    return *this;
  }
  HostPin(const HostPin&) = delete;
  HostPin& operator=(const HostPin&) = delete;

  /// Whether this pin registered the memory (false: it was pinned already, or empty).
  bool registered() const { return pinned_ != nullptr; }

 private:
  void* pinned_ = nullptr;
};

}  // namespace mgjoin::alloc
