#pragma once
// The co-partitioned flow in passes, for R and S that do not fit the GPUs even with one of them streamed
// but whose smaller relation X does fit in a few parts: the key space is cut into k ranges, and pass p
// runs the co-partitioned flow (streamed, or in core) over both whole relations with partitions that
// take only the keys of range p; every other tuple crosses PCIe and is left out by the partition kernel.
//
//   pass p: X (host) ── all chunks H2D ─► partition: range p's tuples to their owners, the rest nowhere
//           ─► X_p resident, sorted │ Y (host) ── all chunks H2D ─► range p's tuples land and are joined
//           against X_p, their output going out as in the streamed variant
//
// Each pass reads Y whole: about k·Y + (k + 1)/2·X bytes cross in and X's spill goes out, against the
// bucketed flow's (R + S) in, out to the host buckets and in again. On links that carry both ways at once
// little faster than one way (two H200s of x4: 70.7 GB/s a GPU both ways, 53-55 one way), two passes
// move the same input in less time than one bucketed round trip, and the output leaves beside them
// (docs/DESIGN.md, "Out of core at two GPUs").
//
// The first pass also spills: the resident side X's tuples above its range go back to pinned host rows
// (D2H while X comes in, when the link carries only H2D), and the passes after it read X from there,
// (k - 1)/k of X instead of all of it.
//
// A pass only leaves out tuples where a partition kernel sees them: on one GPU the streamed and in-core
// variants copy a relation straight into place, so the flow in passes needs two GPUs or more. A key
// heavy enough to span two ranges would have to be split across passes; such inputs are bucketed instead.
//
// plan_passes() decides from sizes and samples alone (CPU-testable); flows/copart/passes.hpp runs a plan.
#include "engine/src/copart/copart_plan.hpp"

#include <cstdint>
#include <string>
#include <vector>

namespace mgjoin::copart {

/// Most passes a plan makes: every pass reads R and S whole, so beyond a few the bucketed flow, which
/// reads them twice and writes them once, moves fewer bytes.
inline constexpr int kMaxPasses = 4;

struct PassPlan {
  /// The passes' key ranges: pass p takes the keys group p of this plan owns (it has no hot keys).
  PartitionPlan ranges;
  /// One co-partitioned plan per pass, over both whole relations, its partitions limited to its range
  /// (partitions.lowest and .highest); payloads carried.
  std::vector<CopartPlan> passes;
  std::uint64_t pinned_bytes = 0;  ///< pinned stack bytes per GPU: the most any pass takes
  /// The first pass's spill (more than one pass, the first streamed): X's rows above its range, at most
  /// `spill_rows` (the sample's bound), kept in pinned host memory for the passes after it (0: none).
  Side spill_side = Side::R;
  std::int64_t spill_rows = 0;
  std::uint64_t spill_bytes = 0;  ///< the pinned host bytes it takes
  bool fits = false;
  std::string reason;  ///< one line: the passes and the fullest pass's plan, or why none fits

  int count() const { return static_cast<int>(passes.size()); }
};

/// Plans the flow in passes for `gpus` GPUs of `device_bytes` each: the fewest passes (2 to kMaxPasses)
/// whose every pass fits the co-partitioned flow (in core or streamed) by its share of the samples, or
/// exactly `passes` when it is not 0 (tests and MGJOIN_COPART_PASSES force a count). Not fitting (with
/// the reason) on one GPU, or where a key would span two ranges.
PassPlan plan_passes(const KeySample& r_sample, const KeySample& s_sample, const RelationView& r, const RelationView& s,
                     int gpus, OutputMode output, std::uint64_t device_bytes, const ScratchSizes& scratch, int passes = 0);

/// Gives the first pass of `p` its spill, once (plan_passes() does; a test that reshapes the passes with
/// force_streamed() does it after): one more destination past its GPUs for X's tuples above its range, where the first pass is
/// streamed (X, the resident side, is all it holds; an in-core pass holds both sides and reads both whole),
/// there are passes after it, X has rows beyond the first range by the samples, and the plan still fits
/// with it (the destination's partition scratch).
/// Sets spill_side and spill_rows (the bound of X's rows in the ranges after the first).
void spill_first_pass(PassPlan& p, const KeySample& r_sample, const KeySample& s_sample, const RelationView& r,
                      const RelationView& s, OutputMode output, const ScratchSizes& scratch);

/// What a plan in passes moves over PCIe for relations of `r_bytes` and `s_bytes` (what moves of them).
struct PassBytes {
  std::uint64_t in = 0;       ///< Y in every pass; X whole in the first and its spill in each after it (or whole)
  std::uint64_t spilled = 0;  ///< X's rows beyond the first range, out while X comes in
};
PassBytes pass_bytes(const PassPlan& plan, std::uint64_t r_bytes, std::uint64_t s_bytes);

/// MGJOIN_COPART_PASSES, the engine's setting: unset, empty or "auto": the planner weighs the flow in
/// passes against the bucketed one by the cost model (0); "off": never in passes (-1); a count from 2 to
/// kMaxPasses: that many passes, taken over the bucketed flow wherever they fit.
/// @throw InputError naming the variable and the value otherwise.
int parse_passes(const char* text);

}  // namespace mgjoin::copart
