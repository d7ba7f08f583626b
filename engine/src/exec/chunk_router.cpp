#include "engine/src/exec/chunk_router.hpp"

#include <mgjoin/error.hpp>

namespace mgjoin::exec {

void ChunkRouter::make_slots(int d, alloc::DeviceStackAllocator& memory, alloc::PinnedStackAllocator& pinned,
                             std::int64_t chunk_rows, const Widths& r, const Widths& s, const std::array<int, 2>& copies,
                             int destinations, std::span<const int> release_on) {
  const int device = lanes_[d].device;
  for (ChunkSlot& slot : slots_[d]) {
    slot = ChunkSlot(device, memory, pinned, chunk_rows, r, s, copies, destinations);
    for (const int to : release_on) slot.released.emplace_back(to, false);
  }
}

std::vector<ChunkSlot*> ChunkRouter::slots(int b) {
  std::vector<ChunkSlot*> out;
  for (auto& pair : slots_) out.push_back(&pair[b]);
  return out;
}

std::uint64_t ChunkRouter::start_chunk(int j, int b, const RelationView& rel, const Widths& w, Side side,
                                       std::uint64_t key_xor, std::int64_t first, std::int64_t rows,
                                       const PartitionPlan& plan, std::uint32_t* source_out) {
  ChunkSlot& slot = slots_[j][b];
  Lane& lane = lanes_[j];
  slot.rows = rows;
  if (rows == 0) return 0;
  gpu::DeviceGuard guard(lane.device);
  // The slot's input is free once its last partition has read it; its output once released.
  if (wait_input_) MGJOIN_CUDA_TRY(cudaStreamWaitEvent(lane.h2d, slot.part_done, 0));
  const std::uint64_t bytes = slot.copy_in(rel, w, first, rows, lane.h2d, lane.staging);
  MGJOIN_CUDA_TRY(cudaStreamWaitEvent(lane.part, slot.h2d_done, 0));
  if (slot.released_recorded)
    for (auto& e : slot.released) MGJOIN_CUDA_TRY(cudaStreamWaitEvent(lane.part, e, 0));
  PartitionArgs args = slot.partition_args(w, side, key_xor, first);
  if (source_out) args.source_out = source_out;
  slot.partition(plan, args, lane.part);
  return bytes;
}

}  // namespace mgjoin::exec
