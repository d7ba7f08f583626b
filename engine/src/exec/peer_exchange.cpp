#include "engine/src/exec/peer_exchange.hpp"

#include <mgjoin/error.hpp>

namespace mgjoin::exec {

void PeerExchange::send(std::span<ChunkSlot* const> slots, const std::vector<p2p::PeerCopy>& copies) {
  if (how_ == Exchange::Nccl)
    send_nccl(slots, copies);
  else
    send_copy_engines(slots, copies);
}

void PeerExchange::send_copy_engines(std::span<ChunkSlot* const> slots, const std::vector<p2p::PeerCopy>& copies) {
  const int g = lanes_.gpus();
  for (int j = 0; j < g; ++j) {
    if (slots[j]->rows == 0) continue;
    for (int d = 0; d < g; ++d) {
      gpu::DeviceGuard guard(lanes_[d].device);
      MGJOIN_CUDA_TRY(cudaStreamWaitEvent(lanes_[d].from[j], slots[j]->part_done, 0));
    }
  }
  p2p::all_to_all_copy_engines(copies, devices_, lanes_.receive_lanes());
  for (int j = 0; j < g; ++j) {
    ChunkSlot& slot = *slots[j];
    if (slot.rows == 0) continue;
    for (int d = 0; d < g; ++d) {
      gpu::DeviceGuard guard(lanes_[d].device);
      slot.released[d].record(lanes_[d].from[j]);
    }
    slot.released_recorded = true;
  }
}

void PeerExchange::send_nccl(std::span<ChunkSlot* const> slots, const std::vector<p2p::PeerCopy>& copies) {
  MGJOIN_EXPECTS(comms_, "NCCL exchange without communicators");
  const int g = lanes_.gpus();
  std::vector<cudaStream_t> streams;
  for (int j = 0; j < g; ++j) {
    streams.push_back(lanes_[j].xchg);
    gpu::DeviceGuard guard(lanes_[j].device);
    if (slots[j]->rows) MGJOIN_CUDA_TRY(cudaStreamWaitEvent(lanes_[j].xchg, slots[j]->part_done, 0));
  }
  p2p::all_to_all_nccl(copies, *comms_, streams);
  // A slot's segments are sent once the sender's and every receiver's xchg stream passed them: record
  // on all of them (released[d] lives on GPU d).
  for (int j = 0; j < g; ++j) {
    ChunkSlot& slot = *slots[j];
    if (slot.rows == 0) continue;
    for (int d = 0; d < g; ++d) {
      gpu::DeviceGuard guard(lanes_[d].device);
      slot.released[d].record(lanes_[d].xchg);
    }
    slot.released_recorded = true;
  }
}

}  // namespace mgjoin::exec
