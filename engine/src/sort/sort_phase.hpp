#pragma once
// The sort phase (paper, Section 3.1.3, Figure 6): a relation in host memory is sorted chunkset by
// chunkset across g GPUs. Per GPU three non-blocking streams: H2D (chunkset i+1 into the flipped
// primary buffer), compute (the chunkset sort of chunkset i) and D2H (sorted units of chunkset i back
// to host) — H2D and D2H on separate streams so that both PCIe directions run at once. Each chunkset is
// sorted in place: afterwards rows [run.begin, run.end) of the relation are sorted for each run.
#include "engine/src/sort/planner.hpp"

#include "alloc/stack_allocator.hpp"

#include <mgjoin/join.hpp>
#include <mgjoin/types.hpp>

#include <cstdint>
#include <span>
#include <vector>

namespace mgjoin::p2p {
class NcclComms;
}

namespace mgjoin::sort {

struct SortPhaseResult {
  std::vector<RowRange> runs;  ///< sorted runs, in row order, covering the relation
};

/// Free device memory of each GPU, now.
std::vector<std::uint64_t> free_device_bytes(std::span<const int> devices);

/// Plans the sort of R and S on `devices`: queries each GPU's free memory (usable_device_bytes applies
/// gpu_memory_limit, 0 = the default fraction) and CUB's temporary storage.
SortPlan plan_sort_on_devices(RelationView r, RelationView s, std::span<const int> devices,
                              std::uint64_t gpu_memory_limit);

/// Plans the sort of R and S for GPUs with `usable_bytes` of device memory each (the engine passes
/// what its device stacks hold); queries CUB's temporary storage.
SortPlan plan_sort_with_memory(RelationView r, RelationView s, std::span<const int> devices, std::uint64_t usable_bytes);

/// Chunksets of a relation of n rows under `plan` (k_R or k_S).
int chunksets_for(std::int64_t n, const SortPlan& plan);

/// Sorts `rel` in place, chunkset by chunkset. device_memory[i] is the stack of devices[i]; it must have
/// plan.device_bytes available. Per-part times and bytes are appended to `stats` ("sort.h2d",
/// "sort.partition", "sort.exchange", "sort.local_sort", "sort.d2h", "sort.total"); a part's time is the
/// sum over chunksets of its slowest GPU, so overlapped parts add up to more than the total.
/// Host memory should be pinned (else the copies are synchronous). `nccl` is needed for Exchange::Nccl.
SortPhaseResult sort_phase(RelationView rel, const SortPlan& plan, std::span<const int> devices,
                           std::span<alloc::DeviceStackAllocator* const> device_memory, SortStrategy strategy,
                           Exchange exchange, const p2p::NcclComms* nccl, std::vector<PhaseStat>& stats);

/// Sorts several relations (R and S, same key type) in one pipeline: the chunksets of all of them
/// stream through the same double-buffered GPUs in order, so the first chunkset of S is on its way in
/// while the last one of R is sorted and copied back. One result per relation; `stats` as above, for
/// all relations together. The plan must have been made for these relations (widest payload).
std::vector<SortPhaseResult> sort_phase(std::span<const RelationView> rels, const SortPlan& plan,
                                        std::span<const int> devices,
                                        std::span<alloc::DeviceStackAllocator* const> device_memory,
                                        SortStrategy strategy, Exchange exchange, const p2p::NcclComms* nccl,
                                        std::vector<PhaseStat>& stats);

}  // namespace mgjoin::sort
