#pragma once
// The bucketed variant of the co-partitioned flow (copart/bucket_plan.hpp draws it and plans it):
// pass 1 partitions R and S into pinned host buckets (and resident groups), pass 2 joins the groups by
// the in-core and streamed variants (copart_flow.hpp).
#include "engine/src/copart/bucket_plan.hpp"
#include "engine/src/flows/copart/copart_flow.hpp"

#include <mgjoin/join.hpp>

namespace mgjoin::copart {

/// Runs the bucketed flow: pass 1 fills pinned buckets (from the pinned column cache) and the resident
/// groups (device memory beside pass 1's slots), pass 2 joins the resident groups on their GPUs, then
/// the host groups in order, two at once over halves of the GPUs' stacks when the plan overlaps them (a
/// group whose bucket outgrew its half is joined alone in all the memory), else one after the other;
/// fills count (and the output columns for Materialize) and appends phase stats. The context's pinned
/// stacks hold plan.pinned_bytes.
/// @throw PlanMissed when a bucket outgrows its bound or a group does not fit (before any output is
/// returned: the caller may run another flow).
/// @throw OutOfMemory when host memory cannot hold the buckets (checked before pass 1).
void run_bucketed(const RelationView& r, const RelationView& s, const BucketPlan& plan, OutputMode output,
                  PayloadFlow payloads, const CopartContext& context, JoinResult& result);

}  // namespace mgjoin::copart
