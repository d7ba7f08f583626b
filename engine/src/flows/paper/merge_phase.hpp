#pragma once
// The merge phase (paper Section 3.2): when a relation took more than one chunkset, its k sorted runs
// are merged on the CPU (__gnu_parallel::multiway_merge over zip iterators) into a buffer of the
// relation's size and copied back, so that the relation is sorted in place as join() promises.
#include "engine/src/sort/planner.hpp"

#include <mgjoin/join.hpp>
#include <mgjoin/types.hpp>

#include <span>

namespace mgjoin::detail {

/// Host buffers of the merge phase, kept by the engine between joins (grown, never shrunk).
struct MergeBuffers {
  HostColumn keys, payloads;
  /// Makes room for n tuples of the given widths.
  void reserve(std::int64_t n, DType key_type, std::optional<DType> payload_type);
  std::uint64_t bytes() const { return keys.bytes() + payloads.bytes(); }
};

/// Host bytes the merge phase's buffers need for `r` and `s` under `plan` beyond those `buffers` hold (0:
/// none, or one chunkset each).
std::uint64_t merge_memory_needed(const RelationView& r, const RelationView& s, const sort::SortPlan& plan,
                                  const MergeBuffers& buffers);

/// Merges the sorted `runs` of `rel` (row ranges covering it, in order) and writes the result back
/// into `rel`. Nothing happens for a single run.
void merge_phase(RelationView rel, std::span<const sort::RowRange> runs, MergeBuffers& buffers);

}  // namespace mgjoin::detail
