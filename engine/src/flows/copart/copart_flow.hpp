#pragma once
// The co-partitioned flow's entry points (docs/DESIGN.md draws the flow, copart/copart_plan.hpp plans
// it): R and S range-partitioned by shared splitters as they arrive, every input byte over PCIe once,
// each GPU sorting and joining the partition pair it owns, output written on the GPU and copied out once.
//
//   R, S (host) ── chunks H2D on every GPU's link ─► partition by the plan ─► NVLink to the owner GPU
//     owner d: R_d sorted while S arrives; S_d sorted after its last chunk ─► merge-path join
//     count: summed on the host │ materialize: match arrays, scan, output windows ─► D2H ─► result columns
//
// The variants, each a file of phases over the building blocks (engine/src/exec) and the partition
// pairs they share (partition_pairs.hpp):
//   in_core.cpp        InCoreJoin: start (transfers, R's sort) ─► arrive (S's sort) ─► finish (join, output)
//   late_payloads.cpp  the payloads of an in-core join, crossing while its key column goes out
//   streamed.cpp       X resident in sorted runs, Y through in rounds: round t lands, is sorted and joined
//                      against X's runs, and its output goes out while round t + 1 arrives
//   bucketed.cpp       (bucketed.hpp) pass 1 into host buckets, pass 2 joins bucket groups by the above
// The caller's inputs are read, never written.
#include "alloc/stack_allocator.hpp"
#include "engine/src/copart/copart_plan.hpp"
#include "engine/src/exec/input_staging.hpp"
#include "engine/src/exec/output_columns.hpp"

#include <mgjoin/join.hpp>

#include <memory>
#include <span>

namespace mgjoin::p2p {
class NcclComms;
}

namespace mgjoin::copart {

using exec::OutputColumns;
using exec::OutputInto;

class Buckets;  // bucket_pass1.hpp

struct CopartContext {
  std::span<const int> devices;
  std::span<alloc::DeviceStackAllocator* const> device_memory;
  /// Pinned host memory per GPU: segment sizes and the output staging windows come from it.
  std::span<alloc::PinnedStackAllocator* const> pinned;
  Exchange exchange = Exchange::CopyEngines;
  const p2p::NcclComms* comms = nullptr;  ///< for Exchange::Nccl
  /// Where a plan's spill destination (PartitionPlan::spill_side) sends its rows, keys in the input's form:
  /// group 0 of pinned buckets of the resident side X (the flow in passes, copart/pass_plan.hpp); nullptr:
  /// nowhere (they are left out, and the passes after read X whole).
  Buckets* spill = nullptr;
  /// Per GPU, where copies in from pageable input columns go through (input_staging.hpp); empty: straight
  /// (the inputs are pinned, or registered by the caller).
  std::span<exec::InputStaging* const> staging = {};
  /// Where a materialized output's rows go instead of result columns (JoinSettings::sink); nullptr: the
  /// result's columns.
  ResultSink* sink = nullptr;
};

/// The in-core flow in three steps, so that a caller can run two joins on the same GPUs at once, each
/// on stacks of its own (CopartContext): the next join's inputs cross PCIe while this one sorts its last
/// partitions and joins. run_copart() runs the steps back to back.
class InCoreJoin {
 public:
  /// Takes the flow's buffers from the context's stacks. Expects a plan that fits in core, and for
  /// Materialize the columns to write into (`into.columns`).
  InCoreJoin(const RelationView& r, const RelationView& s, const CopartPlan& plan, OutputMode output,
             const CopartContext& context, const OutputInto& into);
  /// Waits for the GPUs' work before the buffers go back.
  ~InCoreJoin();
  InCoreJoin(const InCoreJoin&) = delete;
  InCoreJoin& operator=(const InCoreJoin&) = delete;

  /// Issues both relations' transfers and R's sort. One GPU: returns at once; several: once every
  /// chunk is partitioned (the host reads their segment sizes to address the exchange).
  void start();
  /// Waits until every input byte has arrived where it belongs, then issues S's sort (once).
  void arrive();
  /// Arrives if the caller has not, joins, then counts (result.count) or writes into the columns;
  /// appends the phase stats.
  /// @throw InputError when the output has 2^64 or more tuples.
  void finish(JoinResult& result);

 private:
  struct State;
  OutputMode output_;
  OutputInto into_;
  std::unique_ptr<State> state_;
};

/// Runs the flow; fills count (and key/r_payload/s_payload for Materialize, or `into`'s columns) and
/// appends phase stats.
/// @throw PlanMissed when a partition outgrows its bound (before any output is written).
/// @throw InputError when the output has 2^64 or more tuples (counted before any output is allocated).
void run_copart(const RelationView& r, const RelationView& s, const CopartPlan& plan, OutputMode output,
                const CopartContext& context, JoinResult& result, const OutputInto& into = {});

}  // namespace mgjoin::copart
