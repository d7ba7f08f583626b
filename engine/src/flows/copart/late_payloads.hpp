#pragma once
// Late payloads (PayloadFlow::Late) of an in-core join: the keys crossed first and were sorted with
// 4-byte positions; the payloads cross while S is sorted and joined and the key column goes out (PCIe
// carries both directions at once), to the places their keys took, and the output windows gather them
// by position. One GPU: the payloads go straight into the partition. Several: the key pass's chunks are
// replayed: each chunk's payloads land where its keys did, take the places its keys took in their
// segments (its gather map), and follow them to the same rows of the owners.
#include "engine/src/flows/copart/partition_pairs.hpp"

#include "core/device.hpp"

#include <array>
#include <vector>

namespace mgjoin::copart {

class LatePayloads {
 public:
  /// For the partition pairs of an in-core join (the events exist whether or not payloads come late).
  explicit LatePayloads(PartitionPairs& pairs);

  /// Brings `side`'s payloads to the places their keys took, when they come late. Stream-ordered: the
  /// host does not wait, and the GPUs' output learns of the arrival through arrived().
  void send(Side side);
  /// GPU d's event recorded once all of `side`'s payloads arrived (timed).
  const gpu::Event& arrived(int d, Side side) const { return payloads_in_[d][static_cast<int>(side)]; }
  /// From the start of S's sort until the last payload arrived, on the slowest GPU.
  double seconds() const;

 private:
  void send_whole(Side side);
  void send_rounds(Side side);
  void start_chunk(int j, int b, Side side, const LandedChunk& chunk);
  void send_segments(int b, Side side, const Round& round);

  PartitionPairs& pairs_;
  std::vector<std::array<gpu::Event, 2>> payloads_in_;  ///< per GPU, per side
};

}  // namespace mgjoin::copart
