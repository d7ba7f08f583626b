// The one physical allocation under each stack allocator. These backings are the only place in mgjoin's
// phases that calls the CUDA allocation functions (tests/alloc/no_raw_cuda_alloc_test.cpp keeps it so).
#include "alloc/backings.hpp"

#include "core/device.hpp"

#include <mgjoin/error.hpp>

#include <cuda_runtime_api.h>

#include <cstdint>
#include <new>

namespace mgjoin::alloc {
namespace {

std::size_t round_up(std::size_t x, std::size_t to) { return (x + to - 1) / to * to; }

[[noreturn]] void throw_backing_failure(const std::string& name, std::size_t capacity, cudaError_t err) {
  cudaGetLastError();  // an out-of-memory failure is not sticky: clear it for the caller
  const std::string what = "cannot create the " + name + " of " + std::to_string(capacity) + " bytes: " +
                           cudaGetErrorName(err) + " (" + cudaGetErrorString(err) + ")";
  if (err == cudaErrorMemoryAllocation) throw OutOfMemory(what);
  throw CudaError(what, err);
}

}  // namespace

HostBacking::HostBacking(std::size_t capacity, std::size_t alignment)
    : capacity_(capacity), alignment_(alignment) {
  MGJOIN_EXPECTS(alignment_ >= 16 && (alignment_ & (alignment_ - 1)) == 0,
                 "host stack alignment must be a power of two of at least 16");
  base_ = static_cast<std::byte*>(::operator new(round_up(capacity_, alignment_), std::align_val_t{alignment_}));
}

HostBacking::~HostBacking() { ::operator delete(base_, std::align_val_t{alignment_}); }

PinnedHostBacking::PinnedHostBacking(std::size_t capacity, bool mapped) : capacity_(capacity), mapped_(mapped) {
  if (capacity_ == 0) return;
  const unsigned flags = cudaHostAllocPortable | (mapped_ ? cudaHostAllocMapped : 0u);
  void* p = nullptr;
  if (const cudaError_t err = cudaHostAlloc(&p, capacity_, flags); err != cudaSuccess)
    throw_backing_failure(name(), capacity_, err);
  base_ = static_cast<std::byte*>(p);
}

PinnedHostBacking::PinnedHostBacking(Region region)
    : capacity_(region.bytes), mapped_(false), owned_(false), base_(region.base) {
  MGJOIN_EXPECTS(reinterpret_cast<std::uintptr_t>(base_) % alignment() == 0, "a pinned region must be 16-byte aligned");
}

PinnedHostBacking::~PinnedHostBacking() {
  if (base_ && owned_) cudaFreeHost(base_);
}

DeviceBacking::DeviceBacking(int device, std::size_t capacity) : device_(device), capacity_(capacity) {
  if (capacity_ == 0) return;
  gpu::DeviceGuard guard(device_);
  void* p = nullptr;
  if (const cudaError_t err = cudaMalloc(&p, capacity_); err != cudaSuccess)
    throw_backing_failure(name(), capacity_, err);
  base_ = static_cast<std::byte*>(p);
}

DeviceBacking::DeviceBacking(int device, Region region)
    : device_(device), capacity_(region.bytes), owned_(false), base_(region.base) {
  MGJOIN_EXPECTS(reinterpret_cast<std::uintptr_t>(base_) % alignment() == 0, "a device region must be 128-byte aligned");
}

DeviceBacking::~DeviceBacking() {
  if (!base_ || !owned_) return;
  cudaFree(base_);  // needs no current device: a guard here could throw from a destructor
}

}  // namespace mgjoin::alloc
