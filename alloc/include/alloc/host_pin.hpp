#pragma once
// Pins pageable host memory for a scope: copies from pageable memory are staged by the driver and
// synchronous, copies from pinned memory run at the PCIe rate and overlap the host's work.
#include <mgjoin/error.hpp>

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>
#include <utility>

namespace mgjoin::alloc {

/// What CUDA knows `p` to be: host (pinned), device, managed, or unregistered memory (also for a null
/// pointer, or without a driver).
inline cudaMemoryType memory_type(const void* p) {
  cudaPointerAttributes attr{};
  if (!p || cudaPointerGetAttributes(&attr, p) != cudaSuccess) {
    cudaGetLastError();  // the attribute query of pageable memory may leave an error behind
    return cudaMemoryTypeUnregistered;
  }
  return attr.type;
}

/// Whether `p` is pinned host memory (allocated pinned, or registered); false without a CUDA driver.
inline bool is_pinned(const void* p) { return memory_type(p) == cudaMemoryTypeHost; }

/// Whether `p` is host memory CUDA does not know (neither pinned, nor device or managed memory, which a
/// copy reads directly): a copy from it is staged.
inline bool is_pageable(const void* p) { return memory_type(p) == cudaMemoryTypeUnregistered; }

/// Whether [p, p + bytes) is pinned: its first and last bytes (a range cannot be pinned in part only by
/// one registration, but a slice may start inside another one's).
inline bool is_pinned(const void* p, std::size_t bytes) {
  return is_pinned(p) && (bytes == 0 || is_pinned(static_cast<const char*>(p) + bytes - 1));
}

/// What a HostPin does with memory that cannot be registered (read-only mappings where the GPU does not
/// support read-only registration, a range sharing pages with another registration, the OS's limit).
enum class Unpinnable : std::uint8_t {
  Throw,       ///< CudaError
  CopyStaged,  ///< leave it pageable: copies from it are staged by the driver, slower but right
};

/// Registers [p, p + bytes) with CUDA until destroyed; memory that is already pinned is left alone.
/// Movable, so that a vector can hold the pins of several columns.
class HostPin {
 public:
  HostPin() = default;
  HostPin(const void* p, std::size_t bytes, Unpinnable otherwise = Unpinnable::Throw) {
    if (!p || bytes == 0 || is_pinned(p, bytes)) return;
    // Registration only pins the pages (it writes nothing): const memory may be registered, and memory
    // mapped read-only may be registered as such where the GPU supports it.
    void* at = const_cast<void*>(p);
    cudaError_t e = cudaHostRegister(at, bytes, cudaHostRegisterPortable);
    if (e == cudaErrorInvalidValue && otherwise == Unpinnable::CopyStaged) {
      cudaGetLastError();
      e = cudaHostRegister(at, bytes, cudaHostRegisterPortable | cudaHostRegisterReadOnly);
    }
    if (e != cudaSuccess) {
      cudaGetLastError();  // not left behind for the next launch check
      if (otherwise == Unpinnable::CopyStaged || e == cudaErrorHostMemoryAlreadyRegistered) return;
      MGJOIN_CUDA_TRY(e);
    }
    pinned_ = at;
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

  /// Whether this pin registered the memory (false: it was pinned already, empty, or left pageable).
  bool registered() const { return pinned_ != nullptr; }

 private:
  void* pinned_ = nullptr;
};

}  // namespace mgjoin::alloc
