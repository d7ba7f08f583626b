#pragma once
// A GPU's copies in from a join's input columns when they are pageable (fresh NumPy arrays, the CLI's
// files read into plain memory): piece by piece through a few pinned buffers that the host's threads
// fill, instead of registering the whole input with CUDA before the first byte moves. Registration
// locks every page first — on 4× H200 12-15 GB/s with four contexts, 41-53 GB/s with one (PERFORMANCE.md,
// "From files") — and holds the process's start-up and the join back by the input's size; the staging
// starts with the first piece and overlaps the copies of the pieces before it. The driver's own copy from
// pageable memory would stage too, but on one thread and synchronously.
//
//   piece i:  host threads copy it into buffer i mod k  ─►  H2D from the buffer on the caller's stream
//             (buffer i mod k is reused once the copy of piece i - k has ended: its event)
#include "core/device.hpp"

#include <mgjoin/types.hpp>

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <mutex>

#include <cuda_runtime_api.h>

namespace mgjoin::exec {

/// One GPU's staging buffers, made on the first staged copy (a join on pinned inputs never takes them).
/// Thread-safe: the copies of one GPU take turns.
class InputStaging {
 public:
  static constexpr int kBuffers = 3;
  static constexpr std::size_t kPieceBytes = std::size_t{16} << 20;

  explicit InputStaging(int device) : device_(device) {}
  InputStaging(const InputStaging&) = delete;
  InputStaging& operator=(const InputStaging&) = delete;
  ~InputStaging();

  /// Copies `bytes` from `src` to device memory `dst` on `stream`, asynchronously where `src` is not
  /// pageable (a plain cudaMemcpyAsync), else through the staging: returns once every piece is in a
  /// buffer and its copy queued on `stream`. `src` must stay valid until `stream` has done the copies.
  void copy(void* dst, const void* src, std::size_t bytes, cudaStream_t stream);

  /// Bytes copied through the staging so far, and the host's seconds in those copies (its threads'
  /// copies into the buffers, and its waits for a buffer to be free).
  std::uint64_t staged_bytes() const { return staged_; }
  double staged_seconds() const { return seconds_; }

 private:
  void make_buffers();

  int device_;
  std::mutex turn_;
  HostColumn buffers_;  ///< kBuffers pieces, pinned
  std::array<gpu::Event, kBuffers> done_;  ///< each buffer's last copy out
  std::array<bool, kBuffers> used_{};
  int next_ = 0;
  std::atomic<std::uint64_t> staged_{0};  ///< read by staged_bytes() without the turn
  std::atomic<double> seconds_{0};
};

/// Copies `bytes` from host `src` to `dst` on `stream`: through `staging` where it is given and `src`
/// is pageable, else straight (cudaMemcpyDefault: the source may be device memory already).
void copy_input(InputStaging* staging, void* dst, const void* src, std::size_t bytes, cudaStream_t stream);

}  // namespace mgjoin::exec
