#pragma once
// One GPU's slot for a chunk of a relation on its way through the partition kernel: the chunk as it
// came H2D, its partitioned copy (hot-key copies included), the kernel's scratch and the segment sizes
// (on the device, and in pinned memory for the host, which addresses the copies out by them). The
// chunk router (chunk_router.hpp) keeps two per GPU, so that a chunk arrives while the other is
// partitioned, and hands their segments to a sink: the owners' partitions, host buckets, a resident group.
#include "alloc/stack_allocator.hpp"
#include "alloc/stack_buffer.hpp"
#include "core/device.hpp"
#include "engine/src/copart/copart_kernels.hpp"
#include "engine/src/exec/input_staging.hpp"

#include <mgjoin/types.hpp>

#include <array>
#include <cstddef>
#include <cstdint>
#include <vector>

namespace mgjoin::exec {

using copart::PartitionArgs;
using copart::PartitionPlan;
using copart::Side;
using copart::Widths;

struct ChunkSlot {
  using DeviceBuffer = alloc::StackBuffer<std::byte, alloc::DeviceStackAllocator>;
  using PinnedBuffer = alloc::StackBuffer<std::byte, alloc::PinnedStackAllocator>;

  DeviceBuffer in_keys, in_payload, out_keys, out_payload, scratch, segments;
  PinnedBuffer segments_host;
  std::int64_t rows = 0;  ///< rows of the chunk now in it (0: none this round)
  gpu::Event h2d_done, part_done;
  /// Recorded once the sink has taken the slot's segments (per destination GPU of an exchange, or one
  /// copy out): the partition of the slot's next chunk waits for them.
  std::vector<gpu::Event> released;
  bool released_recorded = false;

  ChunkSlot() = default;
  /// Buffers for chunks of up to `chunk_rows` rows of either relation (`r` or `s`: the widest key and
  /// payload of the two), each row copied to at most the most `copies` of either side, over
  /// `destinations` (copart_plan.cpp's two_slots_bytes counts the same).
  ChunkSlot(int device, alloc::DeviceStackAllocator& memory, alloc::PinnedStackAllocator& pinned, std::int64_t chunk_rows,
            const Widths& r, const Widths& s, const std::array<int, 2>& copies, int destinations);

  /// Rows [first, first + rows) of `rel` H2D into the slot on `h2d` (its keys, and its payloads when `w`
  /// moves them; through `staging` where given and the columns are pageable); records h2d_done. Returns
  /// the bytes copied.
  std::uint64_t copy_in(const RelationView& rel, const Widths& w, std::int64_t first, std::int64_t rows, cudaStream_t h2d,
                        InputStaging* staging);

  /// The partition kernel's arguments for the chunk in the slot: `side`'s rows from `first` on.
  PartitionArgs partition_args(const Widths& w, Side side, std::uint64_t key_xor, std::int64_t first) const;

  /// Partitions the chunk by `plan` on `part` and copies its segment sizes to segments_host; records
  /// part_done. `part` must already wait for h2d_done and for the output buffers to be free.
  void partition(const PartitionPlan& plan, const PartitionArgs& args, cudaStream_t part);
};

/// The steps of a slot, for a path that keeps its own buffers (dist/rank_gpus.cpp: one chunk per rank,
/// its sent rows freed before the rank's local join, which a slot's one allocation would not allow):
/// rows [first, first + n) of `rel` (its keys, and its payloads when `w` moves them) into `keys`/`payload`
/// on the device, on `stream` (the pointers say the direction; pageable columns through `staging` where
/// given). Returns the bytes copied.
std::uint64_t copy_rows_in(void* keys, void* payload, const RelationView& rel, const Widths& w, std::int64_t first,
                           std::int64_t n, cudaStream_t stream, InputStaging* staging = nullptr);

/// Partitions by `plan` on `stream` and copies the segment bounds (plan.gpus + 1 of them) to `segments_host`.
void partition_and_read_bounds(const PartitionPlan& plan, const PartitionArgs& args, std::uint64_t* segments_host,
                               cudaStream_t stream);

/// The partition kernel's arguments for `n` rows of `side` at `keys`/`payload` (device memory, the user's
/// key form), global row `first_row` on, into `keys_out`/`payload_out` with segment bounds at `segments`.
PartitionArgs partition_args(const Widths& w, Side side, std::uint64_t key_xor, const void* keys, const void* payload,
                             std::int64_t n, std::uint64_t first_row, void* keys_out, void* payload_out,
                             std::uint64_t* segments, void* scratch, std::size_t scratch_bytes);

}  // namespace mgjoin::exec
