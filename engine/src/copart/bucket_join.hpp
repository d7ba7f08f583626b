#pragma once
// The bucketed co-partitioned flow, for R and S that do not fit the GPUs even with one of them
// streamed: the key space is cut into bucket groups, each small enough to be joined resident.
//
//   pass 1: R, S (host) ── chunks H2D on every GPU ─► partitioned by the group splitters ─► D2H ─►
//           pinned host buckets, one region per (side, group)
//   pass 2: group q: R_q, S_q (buckets) ─► the co-partitioned flow (copart_join.hpp: in core, or
//           streamed) ─► count summed │ output appended to the same result columns
//
// Bucket groups are planned as the GPUs of the in-core flow are (splitters.hpp): split from a sample of
// both relations so that groups are balanced in R + S tuples, and a key too heavy for one group (one key
// larger than the GPUs' memory) is a hot key spanning several groups: its heavier side is spread over
// them by a hash of the row and its lighter side copied to each, so every (r, s) pair of it meets in
// exactly one group, which joins it as any other. Each input byte crosses PCIe twice inward and once
// outward; pass 2 re-plans each group from its real bucket.
//
// plan_buckets() decides from sizes and samples alone (CPU-testable); run_bucketed() executes a plan.
#include "engine/src/copart/copart_join.hpp"

namespace mgjoin::copart {

/// Most bucket groups one plan cuts (the partition kernels' destinations).
inline constexpr int kMaxBucketGroups = kMaxGpus;

struct BucketPlan {
  PartitionPlan groups;    ///< key ranges of the groups (plan.gpus groups) and the hot keys spanning them
  PartitionSizes sizes;    ///< rows of each side per group: [side][group]
  Widths r, s;             ///< what the buckets hold: keys, and payloads when materializing
  std::int64_t chunk_rows = 0;   ///< pass 1: rows per GPU per chunk
  std::uint64_t host_bytes = 0;  ///< pinned bucket memory: every group's bound of both sides
  std::uint64_t estimated_bytes = 0;  ///< what pass 1 should write, by the sample's estimate
  std::uint64_t pass1_device_bytes = 0;  ///< pass 1 on each GPU: two chunk slots
  std::uint64_t device_bytes = 0;        ///< what each GPU has (pass 2 plans each group for it)
  std::uint64_t pinned_bytes = 0;        ///< pinned stack bytes per GPU (segment sizes, output staging)
  bool fits = false;
  std::string reason;  ///< one line: the groups and the tightest one's plan, or why none fits
};

/// Plans the bucket groups for `gpus` GPUs of `device_bytes` each: the fewest groups (2 to
/// kMaxBucketGroups) whose every group fits the co-partitioned flow by its sample, or exactly `groups`
/// when it is not 0 (tests force many groups at small sizes).
BucketPlan plan_buckets(const KeySample& r_sample, const KeySample& s_sample, const RelationView& r,
                        const RelationView& s, int gpus, OutputMode output, std::uint64_t device_bytes,
                        const ScratchSizes& scratch, PayloadFlow payloads = PayloadFlow::Auto, int groups = 0);

/// The part of a sorted sample that falls in group q of `groups`, standing for `rows` rows: the keys
/// whose tuples go to q; a hot key's split-side keys in proportion to q's share of it.
KeySample group_sample(const KeySample& sample, Side side, const PartitionPlan& groups, int q, std::int64_t rows);

/// Runs the bucketed flow: pass 1 fills pinned buckets (from the pinned column cache), pass 2 joins
/// the groups one after the other with the GPUs' stacks; fills count (and the output columns for
/// Materialize) and appends phase stats.
/// @throw PlanMissed when a bucket outgrows its bound or a group does not fit (before any output is
/// returned: the caller may run another flow).
/// @throw OutOfMemory when host memory cannot hold the buckets (checked before pass 1).
void run_bucketed(const RelationView& r, const RelationView& s, const BucketPlan& plan, OutputMode output,
                  PayloadFlow payloads, const CopartContext& context, JoinResult& result);

}  // namespace mgjoin::copart
