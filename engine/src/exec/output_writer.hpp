#pragma once
// The output writer: a joined pair's output built on its GPU in four steps, as libcudf's sort-merge join
// does ("matches per row, then scatter"):
//
//   count   resident_join fills, per probe row, its matches and its first match (match arrays), and a
//           counter of all matches, which the host reads through mapped memory (MatchCounter)
//   scan    the exclusive scan of the matches: each probe row's offset in the output
//   write   output rows at those offsets, window by window (write_output_window), column by column
//   out     each window D2H straight into the result columns, or through pinned staging, while the
//           GPU writes the next (two windows a GPU, on `out` and `d2h`)
#include "alloc/backings.hpp"
#include "alloc/stack_allocator.hpp"
#include "alloc/stack_buffer.hpp"
#include "core/device.hpp"
#include "engine/src/copart/copart_kernels.hpp"
#include "engine/src/exec/lanes.hpp"
#include "engine/src/join/output_count.hpp"

#include <mgjoin/join.hpp>
#include <mgjoin/types.hpp>

#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>

namespace mgjoin::exec {

using DeviceBuffer = alloc::StackBuffer<std::byte, alloc::DeviceStackAllocator>;
using PinnedBuffer = alloc::StackBuffer<std::byte, alloc::PinnedStackAllocator>;

/// A GPU's counter of matching tuples, and the mapped host memory the host reads it from.
class MatchCounter {
 public:
  MatchCounter() = default;
  /// The host side and its event (the device counter comes later, in the flow's order of allocations).
  explicit MatchCounter(int device);
  /// The device counter, from `memory`.
  void take(alloc::DeviceStackAllocator& memory);
  detail::TupleCounter* get() const { return reinterpret_cast<detail::TupleCounter*>(counter_.data()); }
  /// Zeroes the counter on `stream`.
  void zero(cudaStream_t stream) const;
  /// The counter once the work issued on `work` so far is done. A kernel writes it to mapped host memory:
  /// a copy out would wait on the copy engine behind the output windows' copies already queued there
  /// (on one H100, up to a whole job's windows: 30 ms).
  detail::TupleCounter read(cudaStream_t work);

 private:
  int device_ = 0;
  DeviceBuffer counter_;
  std::unique_ptr<alloc::PinnedHostBacking> host_;  ///< mapped
  gpu::Event counted_;  ///< recorded once the counter is written there
};

/// A GPU's probe side's match arrays and their scan.
struct OutputArrays {
  DeviceBuffer matches, first_match, offsets, scan_temp;
  copart::MatchArrays view() const {
    return {reinterpret_cast<std::uint64_t*>(matches.data()), reinterpret_cast<std::uint64_t*>(first_match.data())};
  }
};

/// Match arrays and their scan for up to `ny` probe rows, from GPU `device`'s `memory`.
OutputArrays make_output_arrays(int device, alloc::DeviceStackAllocator& memory, std::uint64_t ny);

/// The output offsets of `ny` probe rows: the exclusive scan of their match counts, on `work` ahead of
/// the output windows that read them.
void scan_matches(const OutputArrays& a, std::uint64_t ny, cudaStream_t work);

/// A GPU's two output windows (device memory, and pinned staging when the result columns are not
/// pinned): one is written while the other crosses PCIe. They live as long as the flow, so that the
/// host may go on while a job's last windows are still crossing; `copied` orders their reuse.
struct OutputWindows {
  std::array<DeviceBuffer, 2> device;
  std::array<PinnedBuffer, 2> staging;
  std::array<gpu::Event, 2> written, copied;
  int next = 0;  ///< the window the next job takes

  OutputWindows() = default;
  explicit OutputWindows(int device);
  void release() {
    for (auto& b : staging) b.release();
    for (auto& b : device) b.release();
  }
};

/// One column of a job's output: where it goes (a result column, or the join's sink, which then takes
/// the windows from the pinned staging), its width, which of the kernel's outputs it is, and an event its
/// first window waits for (late payloads: their arrival; nullptr: none).
struct WindowColumn {
  using Part = ResultPart;
  HostColumn* to = nullptr;
  int bytes = 0;
  Part part = Part::Key;
  const gpu::Event* ready = nullptr;
  ResultSink* sink = nullptr;  ///< where set, the rows go to it, not to `to`
};

/// Where a GPU writes its windows: its device, stacks and streams (work: the join and scan that fill
/// the arrays; out: the window kernels; d2h: the copies out).
struct WindowGpu {
  int device = 0;
  alloc::DeviceStackAllocator* memory = nullptr;
  alloc::PinnedStackAllocator* pinned = nullptr;
  cudaStream_t work = nullptr, out = nullptr, d2h = nullptr;
};

/// One GPU's output rows [base, base + total) of the result, column by column, each window by window of
/// `window_rows` rows, on the out stream after the work issued so far: the GPU writes window k + 1 while
/// window k crosses PCIe. Pinned result columns take the windows straight, and the host returns at once
/// (wait_for_windows() waits for them); pageable ones and a sink's go through the pinned staging, which
/// the host copies out (or hands the sink) window by window.
void write_windows(OutputWindows& windows, const WindowGpu& gpu, std::uint64_t window_rows,
                   std::span<const WindowColumn> columns, const copart::OutputWindowArgs& common, std::uint64_t base,
                   std::uint64_t total);

/// Waits for every GPU's output windows to be written and copied out.
void wait_for_windows(const Lanes& lanes);

/// One host copy of `bytes` from `from` to `to`.
struct ByteCopy {
  std::byte* to;
  const std::byte* from;
  std::size_t bytes;
};

/// Copies with all OpenMP threads in 2 MiB blocks: the result columns are fresh memory, and a window's
/// copy is bound by the first touch of its pages, which only many threads make fast. Streaming stores:
/// the result is far larger than the caches, and plain stores would read every line first.
void copy_in_blocks(std::span<const ByteCopy> copies);

}  // namespace mgjoin::exec
