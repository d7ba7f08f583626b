#pragma once
// The co-partitioned flow in passes (copart/pass_plan.hpp draws it and plans it): pass p runs the
// in-core or streamed variant (copart_flow.hpp) over both whole relations, its partitions taking only the
// keys of range p, into one count or one set of result columns.
#include "engine/src/copart/pass_plan.hpp"
#include "engine/src/flows/copart/copart_flow.hpp"

#include <mgjoin/join.hpp>

namespace mgjoin::copart {

/// Runs the passes one after the other on all of the context's memory (each pass's buffers go back
/// before the next takes its own); fills count (and the output columns for Materialize) and appends
/// each pass's phase stats, named "pass<p>.<phase>". The context's pinned stacks hold plan.pinned_bytes.
/// @throw PlanMissed when a partition outgrows its bound (the output so far is dropped with the result:
/// the caller may run another flow from the untouched inputs).
void run_passes(const RelationView& r, const RelationView& s, const PassPlan& plan, OutputMode output,
                const CopartContext& context, JoinResult& result);

}  // namespace mgjoin::copart
