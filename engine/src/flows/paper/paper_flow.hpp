#pragma once
// The paper flow (Maltenberger, Tolovski and Rabl, PVLDB 18(11), 2025, Section 3; docs/DESIGN.md draws
// it): the sort phase sorts R's and S's chunksets across the GPUs in one pipeline (sort/), the merge
// phase merges a relation that took several chunksets on the CPU (merge_phase.hpp), the join phase
// joins sorted partition pairs on all GPUs (join/join_pipeline.hpp), and the matching ranges are
// materialized on the CPU. It sorts the inputs in place (copies of them with keep_inputs).
#include "alloc/stack_allocator.hpp"
#include "engine/src/exec/pinned_stacks.hpp"
#include "engine/src/flows/paper/merge_phase.hpp"
#include "engine/src/plan/join_request.hpp"
#include "engine/src/sort/planner.hpp"
#include "topology/topology.hpp"
#include "topology/tuning_file.hpp"

#include <mgjoin/join.hpp>

#include <cstdint>
#include <functional>
#include <span>
#include <string>

namespace mgjoin::p2p {
class NcclComms;
}

namespace mgjoin::detail {

/// What the paper flow runs on: an Engine's GPUs and what it keeps between joins.
struct PaperContext {
  std::span<const int> devices;
  std::uint64_t device_bytes = 0;  ///< each GPU's stack
  std::span<alloc::DeviceStackAllocator* const> device_memory;
  const topology::TuningFile* tuning = nullptr;  ///< chooses the sort strategy for SortStrategy::FromTuning
  const topology::Topology* topology = nullptr;
  MergeBuffers* merge_buffers = nullptr;
  exec::PinnedStacks* ranges = nullptr;  ///< the join phase's matching ranges (grown for ranges output)
  std::function<const p2p::NcclComms*(Exchange)> comms;  ///< the communicators, made when first asked for
};

/// A progress report of the join (a cancellation point): phase and fraction done.
using Report = std::function<void(const char* phase, double fraction)>;

/// The paper flow's sort plan for `r` and `s` on `ctx`'s GPUs (CUB's scratch queried).
sort::SortPlan paper_sort_plan(const RelationView& r, const RelationView& s, const PaperContext& ctx);

/// Runs the paper flow; `reason` says why it was chosen, `report` takes its progress, `seconds` gives
/// the join's time so far (for JoinResult::seconds).
/// @throw InputError when a relation would take more chunksets than the merge phase merges;
///        OutOfMemory when host memory cannot hold the merge buffers (checked before the sort phase).
JoinResult run_paper_flow(RelationView r, RelationView s, const JoinRequest& request, PaperContext& ctx,
                          const std::string& reason, const Report& report, const std::function<double()>& seconds);

}  // namespace mgjoin::detail
