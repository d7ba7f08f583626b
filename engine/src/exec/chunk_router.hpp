#pragma once
// The chunk router: a relation crosses PCIe in rounds, round t giving GPU j the chunk t·g + j; each
// chunk lands in one of its GPU's two chunk slots, is partitioned there, and its segments are handed
// to a sink (the owners' partitions over NVLink, host buckets, a resident group) while the next round's
// chunks cross in:
//
//   round t:      H2D chunk (t, j) ─► partition on `part` ─┐
//   round t - 1:  wait for its partition, read its segment sizes ─► sink(j, slot, segments)
//
// The router knows no flow: the flows say where the segments go and when a slot's segments have left
// (ChunkSlot::released, which the slot's next partition waits for).
#include "engine/src/exec/chunk_slot.hpp"
#include "engine/src/exec/lanes.hpp"

#include <algorithm>
#include <array>
#include <cstdint>
#include <vector>

namespace mgjoin::exec {

/// How a relation of `rows` rows is cut: chunks of `chunk_rows` per GPU, `gpus` chunks a round.
struct RoundCut {
  std::int64_t rows = 0, chunk_rows = 0;
  int gpus = 1;

  std::int64_t rounds() const { return (rows + chunk_rows * gpus - 1) / (chunk_rows * gpus); }
  /// First row of round t's chunk on GPU j.
  std::int64_t first(std::int64_t t, int j) const { return t * chunk_rows * gpus + j * chunk_rows; }
  /// Rows of round t's chunk on GPU j (0 past the end).
  std::int64_t rows_of(std::int64_t t, int j) const { return std::clamp<std::int64_t>(rows - first(t, j), 0, chunk_rows); }
};

class ChunkRouter {
 public:
  /// Routes over `lanes` (their h2d and part streams). With `wait_input_on_device`, a chunk's H2D also
  /// waits on the device for its slot's previous partition (the host has waited for it already where
  /// the segments were read; a flow that never skips that read may leave it out).
  ChunkRouter(Lanes& lanes, bool wait_input_on_device) : lanes_(lanes), wait_input_(wait_input_on_device), slots_(lanes.gpus()) {}
  ChunkRouter(const ChunkRouter&) = delete;
  ChunkRouter& operator=(const ChunkRouter&) = delete;

  /// GPU d's two slots, taken from its stacks now (the flow places them in its order of allocations),
  /// each with one `released` event per device of `release_on` (those that record it).
  void make_slots(int d, alloc::DeviceStackAllocator& memory, alloc::PinnedStackAllocator& pinned, std::int64_t chunk_rows,
                  const Widths& r, const Widths& s, const std::array<int, 2>& copies, int destinations,
                  std::span<const int> release_on);
  /// Frees GPU d's slots (they are made again by make_slots).
  void free_slots(int d) {
    for (ChunkSlot& slot : slots_[d]) slot = ChunkSlot{};
  }
  ChunkSlot& slot(int d, int b) { return slots_[d][b]; }
  /// Slot b of every GPU, in GPU order.
  std::vector<ChunkSlot*> slots(int b);

  /// The slot the next round takes: they alternate across every relation the router carries.
  int next_slot() { return turn_++ % 2; }
  /// The next round takes slot 0 (a flow that restarts the alternation for each relation).
  void restart_slots() { turn_ = 0; }

  /// Round t's chunk of GPU j into slot b: H2D of rows [first, first + rows) of `rel` (its keys, and the
  /// payloads `w` moves) on h2d, then the partition by `plan` on part, after the slot's previous
  /// segments were released; per output row its chunk row into `source_out` when set. Returns the
  /// bytes copied in.
  std::uint64_t start_chunk(int j, int b, const RelationView& rel, const Widths& w, Side side, std::uint64_t key_xor,
                            std::int64_t first, std::int64_t rows, const PartitionPlan& plan,
                            std::uint32_t* source_out = nullptr);

  /// For each GPU j whose slot b holds a chunk, in GPU order: waits for its partition and hands its
  /// segment bounds (destinations + 1 entries) to take(j, slot, bounds).
  template <class Take>
  void for_each_partitioned(int b, Take&& take) {
    for (int j = 0; j < lanes_.gpus(); ++j) {
      ChunkSlot& slot = slots_[j][b];
      if (slot.rows == 0) continue;
      slot.part_done.synchronize();
      take(j, slot, reinterpret_cast<const std::uint64_t*>(slot.segments_host.data()));
    }
  }

  /// The round loop over `rounds` rounds: step(t) (a cancellation point, or nothing), then round t's
  /// chunks started (start(b, t), b its slot) before round t - 1's are handed on (hand_off(b', t - 1)),
  /// so that chunk t crosses PCIe while chunk t - 1 is partitioned and its segments leave.
  template <class Step, class Start, class HandOff>
  void run_rounds(std::int64_t rounds, Step&& step, Start&& start, HandOff&& hand_off) {
    int pending = -1;
    for (std::int64_t t = 0; t <= rounds; ++t) {
      step(t);
      const int previous = pending;
      if (t < rounds) {
        pending = next_slot();
        start(pending, t);
      }
      if (t > 0) hand_off(previous, t - 1);
    }
  }

 private:
  Lanes& lanes_;
  bool wait_input_;
  std::vector<std::array<ChunkSlot, 2>> slots_;
  int turn_ = 0;
};

/// No step between rounds.
inline constexpr auto kNoStep = [](std::int64_t) {};

}  // namespace mgjoin::exec
