#pragma once
// The bucketed co-partitioned flow, for R and S that do not fit the GPUs even with one of them
// streamed: the key space is cut into bucket groups, each small enough to be joined resident.
//
//   pass 1: R, S (host) ── chunks H2D on every GPU ─► partitioned by the group splitters ─┬─► D2H ─►
//           pinned host buckets, one region per (side, group)                             │
//           resident groups (hybrid): GPU k's group stays in GPU k's memory ◄─────────────┘
//   pass 2: resident: on every GPU at once, its group joined by the one-GPU flow (flows/copart)
//           group q: R_q, S_q (buckets) ─► the co-partitioned flow (flows/copart: in core, or
//           streamed) ─► count summed │ output appended to the same result columns
//
// Bucket groups are planned as the GPUs of the in-core flow are (splitters.hpp): split from a sample of
// both relations so that groups are balanced in R + S tuples, and a key too heavy for one group (one key
// larger than the GPUs' memory) is a hot key spanning several groups: its heavier side is spread over
// them by a hash of the row and its lighter side copied to each, so every (r, s) pair of it meets in
// exactly one group, which joins it as any other. Each input byte of a host group crosses PCIe twice
// inward and once outward; pass 2 re-plans each group from its real bucket.
//
// Hybrid residency: where the GPUs have memory beside pass 1's chunk slots, the last destinations of
// the plan are one resident group per GPU, sized by that memory (the splitters give them a share of
// their own): pass 1 leaves their rows on the GPU (a device copy, over NVLink when another GPU
// partitioned the chunk), and pass 2 joins them there first, before the host groups take the memory.
// Their bytes cross PCIe once: the more memory, the less traffic.
//
// plan_buckets() decides from sizes and samples alone (CPU-testable); flows/copart/bucketed.hpp runs a plan.
#include "engine/src/copart/copart_plan.hpp"

#include <string>

namespace mgjoin::copart {

/// Most bucket groups one plan cuts (the partition kernels' destinations).
inline constexpr int kMaxBucketGroups = kMaxGpus;

struct BucketPlan {
  /// Key ranges of the groups (plan.gpus groups: the host groups, then the resident ones) and the hot
  /// keys spanning them.
  PartitionPlan groups;
  PartitionSizes sizes;    ///< rows of each side per group: [side][group]
  /// Resident groups (0, or one per GPU): group host_groups() + k stays on GPU k after pass 1.
  int resident = 0;
  std::uint64_t resident_bytes = 0;  ///< device bytes the largest resident group holds on its GPU (bounds)
  Widths r, s;             ///< what the buckets hold: keys, and payloads when materializing
  std::int64_t chunk_rows = 0;   ///< pass 1: rows per GPU per chunk
  std::uint64_t host_bytes = 0;  ///< pinned bucket memory: every host group's bound of both sides
  std::uint64_t estimated_bytes = 0;  ///< what pass 1 should write to the host, by the sample's estimate
  std::uint64_t pass1_device_bytes = 0;  ///< pass 1 on each GPU: two chunk slots (beside its resident group)
  std::uint64_t device_bytes = 0;        ///< what each GPU has (pass 2 plans each group for it)
  std::uint64_t pinned_bytes = 0;        ///< pinned stack bytes per GPU (segment sizes, output staging)
  /// Pass 2 holds two groups on the GPUs at once (group q + 1 crosses PCIe while group q is sorted and
  /// joined), each in core in half of every GPU's memory (overlap_half) with pinned staging of
  /// `group_pinned_bytes`; otherwise one group after the other in all of it, in core or streamed.
  bool overlap = false;
  std::uint64_t group_pinned_bytes = 0;
  bool fits = false;
  std::string reason;  ///< one line: the groups and the tightest one's plan, or why none fits

  int host_groups() const { return groups.gpus - resident; }
  /// The GPU that keeps group q, or -1 for a host group.
  int resident_gpu(int q) const { return q < host_groups() ? -1 : q - host_groups(); }
};

/// Residency of plan_buckets: the planner's choice, none, or a given share of the tuples (tests).
struct Residency {
  /// < 0: as much as the GPUs hold beside pass 1 (none where that is little); 0: none; (0, 1): this
  /// share of all tuples, split evenly over the GPUs' resident groups (fits false where they do not).
  double share = -1;
};

/// Residency from MGJOIN_BUCKET_RESIDENT's text, the engine's setting: unset, empty, "off" or "0":
/// none (the default: measured, the resident groups' joins, which nothing overlaps, cost more than
/// the transfers they save at the shapes where the planner buckets; PERFORMANCE.md); "auto": the
/// planner's largest share; a number in (0, 1): that share.
/// @throw InputError naming the variable and the value otherwise.
Residency parse_residency(const char* text);

/// What each of pass 2's two groups on a GPU gets of its `device_bytes` when they overlap: a half,
/// less the alignment of the two blocks that hold the halves.
inline std::uint64_t overlap_half(std::uint64_t device_bytes) {
  return device_bytes / 2 > 512 ? (device_bytes / 2 - 256) / 128 * 128 : 0;
}

/// Plans the bucket groups for `gpus` GPUs of `device_bytes` each. First the resident groups (hybrid,
/// `residency`): the largest share of the tuples (down to 2%) whose group on each GPU fits beside
/// pass 1's chunk slots and is then joined by the one-GPU flow in what is left. Then the host groups
/// for the rest: the fewest (1 to kMaxBucketGroups less the resident ones; 2 without resident groups)
/// whose every group fits the co-partitioned flow in core in half the memory (overlapped), else the
/// fewest whose every group fits it in all the memory (in core or streamed); exactly `groups` host
/// groups when it is not 0 (tests force many groups at small sizes). Every group fits by its sample;
/// pass 2 re-plans each from its bucket. With `exchange` NCCL between several GPUs the groups run one
/// by one (NCCL does not order two joins' calls on one communicator).
BucketPlan plan_buckets(const KeySample& r_sample, const KeySample& s_sample, const RelationView& r,
                        const RelationView& s, int gpus, OutputMode output, std::uint64_t device_bytes,
                        const ScratchSizes& scratch, PayloadFlow payloads = PayloadFlow::Auto, int groups = 0,
                        Exchange exchange = Exchange::CopyEngines, Residency residency = {});

/// Whether pass 2 may hold two groups at once with this exchange between `gpus` GPUs.
inline bool overlap_possible(Exchange exchange, int gpus) { return exchange != Exchange::Nccl || gpus == 1; }

}  // namespace mgjoin::copart
