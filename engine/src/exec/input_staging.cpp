// Staged copies in from pageable input columns (input_staging.hpp).
#include "engine/src/exec/input_staging.hpp"

#include "alloc/host_pin.hpp"
#include "core/timing.hpp"

#include <mgjoin/error.hpp>

#include <omp.h>

#include <algorithm>
#include <cstring>

namespace mgjoin::exec {
namespace {

/// Below this, one thread copies a piece: the threads' start costs more than they save.
constexpr std::size_t kBytesPerThread = std::size_t{1} << 20;

/// memcpy on the host's threads (a piece of 16 MiB: one thread copies ~5-10 GB/s, PCIe takes ~55).
void parallel_memcpy(void* dst, const void* src, std::size_t bytes) {
  const int threads = static_cast<int>(std::clamp<std::size_t>(bytes / kBytesPerThread, 1, omp_get_max_threads()));
  const std::size_t share = (bytes + threads - 1) / threads;
#pragma omp parallel for num_threads(threads) schedule(static, 1)
  for (int t = 0; t < threads; ++t) {
    const std::size_t begin = std::min(bytes, share * t), end = std::min(bytes, begin + share);
    std::memcpy(static_cast<char*>(dst) + begin, static_cast<const char*>(src) + begin, end - begin);
  }
}

}  // namespace

InputStaging::~InputStaging() {
  // The last pieces may still be crossing: their buffers go back only once they have.
  for (int b = 0; b < kBuffers; ++b)
    if (used_[b]) cudaEventSynchronize(done_[b]);
}

void InputStaging::make_buffers() {
  // Taken whole or not at all: a failure leaves no buffers, and the next copy tries again.
  std::array<gpu::Event, kBuffers> done;
  for (gpu::Event& e : done) e = gpu::Event(device_, /*timing=*/false);
  HostColumn buffers = HostColumn::allocate(DType::UInt8, static_cast<std::int64_t>(kBuffers * kPieceBytes), MemoryKind::Pinned);
  MGJOIN_EXPECTS(buffers.memory_kind() == MemoryKind::Pinned, "the input staging's buffers are pinned");
  done_ = std::move(done);
  buffers_ = std::move(buffers);
}

void InputStaging::copy(void* dst, const void* src, std::size_t bytes, cudaStream_t stream) {
  if (bytes == 0) return;
  if (!alloc::is_pageable(src)) {
    MGJOIN_CUDA_TRY(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDefault, stream));
    return;
  }
  const std::lock_guard lock(turn_);
  const gpu::DeviceGuard guard(device_);
  const auto start = timing::Clock::now();
  if (buffers_.size() == 0) make_buffers();
  for (std::size_t at = 0; at < bytes; at += kPieceBytes) {
    const std::size_t n = std::min(kPieceBytes, bytes - at);
    const int b = next_;
    next_ = (next_ + 1) % kBuffers;
    if (used_[b]) done_[b].synchronize();  // its previous piece has crossed
    std::byte* buffer = static_cast<std::byte*>(buffers_.data()) + b * kPieceBytes;
    parallel_memcpy(buffer, static_cast<const std::byte*>(src) + at, n);
    MGJOIN_CUDA_TRY(cudaMemcpyAsync(static_cast<std::byte*>(dst) + at, buffer, n, cudaMemcpyHostToDevice, stream));
    done_[b].record(stream);
    used_[b] = true;
  }
  staged_.fetch_add(bytes);
  seconds_.store(seconds_.load() + timing::seconds_since(start));  // one writer: copies take turns
}

void copy_input(InputStaging* staging, void* dst, const void* src, std::size_t bytes, cudaStream_t stream) {
  if (staging)
    staging->copy(dst, src, bytes, stream);
  else if (bytes)
    MGJOIN_CUDA_TRY(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDefault, stream));
}

}  // namespace mgjoin::exec
