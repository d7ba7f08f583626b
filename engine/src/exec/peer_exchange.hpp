#pragma once
// The exchange: one round's segments from the GPUs' chunk slots to the GPUs that own them, over the
// copy engines (one receive lane per source GPU, so that the copies overlap) or NCCL (each GPU's xchg
// stream). The copies out of a slot wait for its partition; the slot's `released` events are recorded
// where they are done, so that its next partition waits for them and for nothing else.
#include "engine/src/exec/chunk_slot.hpp"
#include "engine/src/exec/lanes.hpp"
#include "p2p/all_to_all.hpp"

#include <mgjoin/join.hpp>

#include <span>
#include <vector>

namespace mgjoin::p2p {
class NcclComms;
}

namespace mgjoin::exec {

class PeerExchange {
 public:
  /// Between the GPUs of `lanes` (their `from` lanes for the copy engines, xchg for NCCL with `comms`).
  PeerExchange(Lanes& lanes, std::span<const int> devices, Exchange how, const p2p::NcclComms* comms)
      : lanes_(lanes), devices_(devices), how_(how), comms_(comms) {}

  /// Issues `copies` out of `slots` (slot b of every GPU, in GPU order; those with no rows send nothing)
  /// and records the slots' `released` events (one per destination GPU) where the copies are done.
  void send(std::span<ChunkSlot* const> slots, const std::vector<p2p::PeerCopy>& copies);

 private:
  void send_copy_engines(std::span<ChunkSlot* const> slots, const std::vector<p2p::PeerCopy>& copies);
  void send_nccl(std::span<ChunkSlot* const> slots, const std::vector<p2p::PeerCopy>& copies);

  Lanes& lanes_;
  std::span<const int> devices_;
  Exchange how_;
  const p2p::NcclComms* comms_;
};

}  // namespace mgjoin::exec
