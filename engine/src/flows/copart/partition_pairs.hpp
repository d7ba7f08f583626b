#pragma once
// What the co-partitioned variants share: each GPU's partition pair (R_d, S_d), filled by the key pass
// and sorted in runs where it lands, and the resident joins of its runs.
//
// The key pass brings a relation in: one GPU, straight into its partition in runs (each run's arrival
// recorded, so that its sort starts at once); several, through the chunk router (exec/chunk_router.hpp):
// each chunk partitioned where it lands, its segments sent over the exchange to their owners while the
// next chunk arrives. One host thread drives every GPU; it blocks only to read a chunk's segment sizes,
// which it needs to address the copies and to check them against the plan's bounds (PlanMissed).
// Late payloads replay the key pass (late_payloads.hpp): its rounds and segments are kept for them.
#include "alloc/stack_allocator.hpp"
#include "alloc/stack_buffer.hpp"
#include "core/device.hpp"
#include "engine/src/copart/copart_plan.hpp"
#include "engine/src/exec/chunk_router.hpp"
#include "engine/src/exec/lanes.hpp"
#include "engine/src/exec/output_columns.hpp"
#include "engine/src/exec/output_writer.hpp"
#include "engine/src/exec/peer_exchange.hpp"
#include "engine/src/flows/copart/copart_flow.hpp"
#include "engine/src/sort/local_sort.hpp"

#include <mgjoin/types.hpp>

#include <array>
#include <cstdint>
#include <functional>
#include <vector>

namespace mgjoin::copart {

using DeviceBuffer = alloc::StackBuffer<std::byte, alloc::DeviceStackAllocator>;

/// One relation's partition on one GPU: filled by the exchange, then sorted in place. Payloads carried:
/// sorted with the keys. Late payloads: the keys are sorted with their positions, and the payloads,
/// arriving later, stay in arrival order (position i holds the payload of the i-th key to arrive).
struct Partition {
  DeviceBuffer keys, payload, positions;
  std::int64_t capacity = 0;
  std::int64_t rows = 0;  ///< filled so far (host bookkeeping)
};

/// Rows [first, first + rows) of a sorted partition (a run of it, or all of it).
struct SortedRows {
  const Partition* p = nullptr;
  std::int64_t first = 0, rows = 0;
};

/// Rows of one chunk's segment sent from GPU `from` to the partition of GPU `to`: what the late
/// payloads' pass replays.
struct SegmentCopy {
  int from, to;
  std::int64_t from_row, to_row, rows;
};

/// One chunk that landed on a GPU in the key pass (late payloads replay it).
struct LandedChunk {
  std::int64_t first = 0, rows = 0;  ///< the chunk's rows of the relation
  std::uint64_t map_row = 0;         ///< where its gather map starts in the GPU's map of the relation
  std::uint64_t landed = 0;          ///< rows its partitioning output (copies included)
};

/// One round of the key pass: chunk j landed on GPU j.
struct Round {
  std::vector<LandedChunk> chunks;
  std::vector<SegmentCopy> segments;
};

/// One GPU's partition pair, and what sorts and joins it.
struct PairGpu {
  int device = 0;
  alloc::DeviceStackAllocator* memory = nullptr;
  alloc::PinnedStackAllocator* pinned = nullptr;
  std::array<Partition, 2> partition;
  /// One GPU: per side, recorded on h2d once each run of its partition has crossed.
  std::array<std::vector<gpu::Event>, 2> run_in;
  exec::MatchCounter counter;
  DeviceBuffer join_scratch;  ///< resident_join's, shared by the joins on the work stream
  std::array<DeviceBuffer, 2> maps;  ///< late payloads, g > 1: per landed row, its row in its chunk
  std::array<std::uint64_t, 2> map_filled{};  ///< rows of each map handed to chunks so far
  DeviceBuffer alt_keys, alt_payload, sort_temp;  ///< one run's sort
  std::array<int, 2> runs_sorted{};  ///< per side, runs whose sort is issued (sort_runs_as_filled)
  /// The in-core tail: S's last run from its issue to its sort's end, and the last join.
  gpu::Event tail_begin, sorted, join_begin, joined;
};

/// `p`'s keys and payloads for its capacity of rows of widths `w`, from `memory`.
void take_rows(Partition& p, alloc::DeviceStackAllocator& memory, const Widths& w);

/// Where round t's segments of a relation for GPU d go.
using Destination = std::function<Partition&(int d)>;

class PartitionPairs {
 public:
  /// Over `lanes` (the variant's, which outlive this), with each side's partition sorted in `runs` runs.
  PartitionPairs(const RelationView& r, const RelationView& s, const CopartPlan& plan, const CopartContext& ctx,
                 exec::Lanes& lanes, std::array<int, 2> runs);
  PartitionPairs(const PartitionPairs&) = delete;
  PartitionPairs& operator=(const PartitionPairs&) = delete;

  // Buffers, each taken on every GPU in the order the variant calls these (their stacks are LIFO).
  /// `side`'s partition of its plan's bound (with 4-byte positions when its payloads come late).
  void take_partition(Side side, bool positions);
  /// The match counter and the resident joins' scratch.
  void take_join_buffers();
  /// Late payloads, g > 1: each side's gather map.
  void take_maps();
  /// g > 1: the chunk router's slots.
  void take_slots();
  /// The sort buffers of one run of the largest runs (`sides`: those sorted here).
  void take_sort_buffers(std::array<bool, 2> sides);
  /// Frees GPU d's sort buffers (the caller has waited for its work stream, or sorts stay behind them).
  void free_sort_buffers(int d);

  /// Brings `side` in: its keys, and its payloads unless they come late.
  void transfer(Side side);
  /// Several GPUs: `side`'s runs but the last are sorted as soon as they are filled during transfer(),
  /// each behind the copies into it, so that they sort while later chunks cross (by default a GPU sorts
  /// once everything has arrived). Call before transfer(side); sort_partitions() sorts the rest.
  void sort_runs_as_filled(Side side) { sort_as_filled_[static_cast<int>(side)] = true; }
  /// Sorts each GPU's partition of `side` run by run, each run once it has arrived (several GPUs: once
  /// everything sent to the GPU has); `timed`: records the tail's events around the last run's sort;
  /// `count_runs`: joins each run of S with R's runs as soon as it is sorted. Issued once a side.
  void sort_partitions(Side side, bool timed, bool count_runs);
  /// Waits until every input byte has arrived where it belongs.
  void wait_transfer();
  /// Frees, once the sorts are done, the sort buffers and, unless `keep_slots` (late payloads still
  /// need them), the chunk slots (carried payloads: the slots lie above the sort buffers on the stack,
  /// so they go first). Expects wait_transfer() first.
  void release_transfer_buffers(bool keep_slots);

  /// Several GPUs: round t's chunks of `side` started into the router's next slot; returns the slot.
  int start_round(Side side, std::int64_t t);
  /// Sends every GPU's segments of slot b (round `t` of `side`) to `destination`, appending to it;
  /// records the segments for late payloads.
  /// @throw PlanMissed when a destination would outgrow its capacity.
  void exchange(int b, Side side, std::size_t t, const Destination& destination);
  /// `waiter` waits for every copy into GPU d issued so far: H2D (unless `with_h2d` is false), and the
  /// sends of other GPUs (on the lanes, or xchg for NCCL).
  void wait_inbound(int d, cudaStream_t waiter, bool with_h2d = true);
  /// One GPU: rows [first, first + rows) of `side` into `p` from its row `to` on, as they are (keys
  /// unflipped), on h2d.
  void copy_rows_in(Side side, std::int64_t first, std::int64_t rows, Partition& p, std::int64_t to);
  /// Sorts rows [first, first + rows) of `p` (keys with their payloads or positions) on GPU d's work
  /// stream, in the given sort buffers.
  void sort_rows(int d, Side side, Partition& p, std::int64_t first, std::int64_t rows, DeviceBuffer& alt_keys,
                 DeviceBuffer& alt_payload, DeviceBuffer& temp);

  /// The sorted runs of `side`'s partition.
  int runs(Side side) const { return runs_[static_cast<int>(side)]; }
  /// Rows of a partition of `capacity` rows that one of `runs` runs holds at most.
  static std::int64_t run_capacity(std::int64_t capacity, int runs) { return (capacity + runs - 1) / runs; }
  /// Run i of `side`'s partition p: one GPU, equal parts of its rows (known before they cross); several,
  /// equal parts of its capacity (fixed before the rows arrive, so that a filled run can be sorted early;
  /// the last ones may be short or empty).
  SortedRows run_of(const Partition& p, Side side, int i) const;
  SortedRows whole(int d, Side side) const;
  /// X: the build side of the resident joins (the side whose order the output does not follow).
  Side x_side() const { return plan_.probe == Side::S ? Side::R : Side::S; }
  ResidentPair pair_of(const SortedRows& x, const SortedRows& y) const;
  /// The window kernel's arguments for the output of x joined with y, by `arrays` (their match arrays
  /// and scan).
  OutputWindowArgs window_args(const SortedRows& x, const SortedRows& y, const exec::OutputArrays& arrays) const;
  /// GPU d's output rows [base, base + total) into `out`'s columns (or its sink) through `windows` (key,
  /// R's payload, S's payload; a payload column waits for `ready[side]` where set: late payloads).
  void write_output(int d, exec::OutputWindows& windows, const OutputWindowArgs& common, std::uint64_t base,
                    std::uint64_t total, exec::OutputColumns& out, std::array<const gpu::Event*, 2> ready = {});
  const Widths& widths(Side side) const { return side == Side::R ? plan_.r : plan_.s; }
  /// What the key pass moves: late payloads stay behind.
  Widths key_pass_widths(Side side) const { return {widths(side).key_bytes, plan_.late ? 0 : widths(side).payload_bytes}; }
  sort::TupleLayout layout(Side side) const { return {widths(side).key_bytes, plan_.sorted_payload_bytes(side), false}; }
  const RelationView& relation(Side side) const { return rel_[static_cast<int>(side)]; }
  const void* host_payload(Side side) const { return widths(side).payload_bytes ? relation(side).payload->data : nullptr; }
  std::uint64_t key_xor() const { return key_xor_; }

  int gpus() const { return g_; }
  PairGpu& gpu(int d) { return gpus_[d]; }
  const PairGpu& gpu(int d) const { return gpus_[d]; }
  exec::Lanes& lanes() { return lanes_; }
  exec::ChunkRouter& router() { return router_; }
  exec::PeerExchange& peers() { return exchange_; }
  const CopartPlan& plan() const { return plan_; }
  /// The key pass's rounds of `side` (g > 1), as late payloads replay them.
  const std::vector<Round>& rounds(Side side) const { return rounds_[static_cast<int>(side)]; }
  std::uint64_t bytes_pcie_in() const { return bytes_in_; }
  /// Bytes of a pass's spill sent to the host (PCIe out).
  std::uint64_t bytes_spilled() const { return bytes_spilled_; }
  std::uint64_t bytes_nvlink() const { return bytes_nvlink_; }
  void add_bytes(std::uint64_t pcie_in, std::uint64_t nvlink) {
    bytes_in_ += pcie_in;
    bytes_nvlink_ += nvlink;
  }

 private:
  void transfer_whole(Side side);
  void transfer_rounds(Side side);
  /// sort_runs_as_filled: on every GPU, the sorts of `side`'s runs (but the last) filled so far.
  void sort_filled_runs(Side side);
  void start_chunk(int j, int b, Side side, std::int64_t first, std::int64_t rows);
  /// The spill segment of GPU j's slot (past the GPUs' segments) into the context's spill bucket.
  /// @throw PlanMissed when they would outgrow its bound.
  void spill(int j, exec::ChunkSlot& slot, const std::uint64_t* seg, Side side, std::vector<p2p::PeerCopy>& copies);
  /// One GPU: the work stream waits for run i of `side` to cross, then flips its keys.
  void wait_run(int d, Side side, int i, const SortedRows& run);
  /// Counting on arrival: joins a run of S, just sorted, with every run of R.
  void count_run_of_s(int d, const SortedRows& s_run, bool last);

  std::array<RelationView, 2> rel_;
  const CopartPlan& plan_;
  CopartContext ctx_;
  int g_;
  std::uint64_t key_xor_;
  exec::Lanes& lanes_;
  std::array<int, 2> runs_;
  std::vector<PairGpu> gpus_;
  exec::ChunkRouter router_;
  exec::PeerExchange exchange_;
  std::array<bool, 2> sorts_issued_{};
  std::array<bool, 2> sort_as_filled_{};
  std::array<std::vector<Round>, 2> rounds_;  ///< the key pass, per side (g > 1)
  std::uint64_t bytes_in_ = 0, bytes_nvlink_ = 0, bytes_spilled_ = 0;
};

}  // namespace mgjoin::copart
