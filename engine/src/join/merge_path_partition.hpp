#pragma once
// CPU merge-path partitioning of sorted R and S with boundary validation (paper Section 3.3.1).
//
// Step 1 splits R and S into p partition pairs of (nearly) equal |R_i| + |S_i|; step 2 splits each
// partition pair into subpartition pairs of bounded size. After each step, boundary validation makes
// sure no key straddles a cut: a key found on both sides of a cut (in R or in S) is taken out of both
// neighbouring pieces, its full ranges in R and S are found by binary search, and its matching range
// is recorded directly. Pieces with one empty side (skewed pairs, paper Figure 8) can hold no match
// once every key lies in one piece, so they are dropped from the work list.
#include <mgjoin/join.hpp>
#include <mgjoin/types.hpp>

#include <cstdint>
#include <vector>

namespace mgjoin::detail {

/// A partition pair or subpartition pair: rows [r_begin, r_end) of sorted R and [s_begin, s_end) of
/// sorted S (absolute indices).
struct PairRange {
  std::uint64_t r_begin = 0, r_end = 0, s_begin = 0, s_end = 0;
  std::uint64_t r_size() const { return r_end - r_begin; }
  std::uint64_t s_size() const { return s_end - s_begin; }
  std::uint64_t size() const { return r_size() + s_size(); }
  /// Both sides hold rows: the only pairs that can produce matches.
  bool joinable() const { return r_size() > 0 && s_size() > 0; }
  friend bool operator==(const PairRange&, const PairRange&) = default;
};

/// Result of one validated split: the pieces (in order, `parts` of them, possibly empty) and the
/// matching ranges of the keys taken out at the cuts.
struct ValidatedSplit {
  std::vector<PairRange> pieces;
  std::vector<MatchRange> boundary_ranges;
};

/// Splits `whole` into `parts` pieces of equal |R|+|S| along the merge path, then validates the cuts.
/// Keys must be sorted ascending in their own type's order; r and s share the key type.
ValidatedSplit split_merge_path(ColumnView r_keys, ColumnView s_keys, PairRange whole, std::uint64_t parts);

/// A partition pair with its joinable subpartition pairs.
struct PartitionPair {
  PairRange range;                         ///< after boundary validation (may be skewed or empty)
  std::vector<PairRange> subpartitions;    ///< joinable only; each size() <= the planner's bound
};

/// The join phase's plan: p partition pairs and the matching ranges found by boundary validation.
struct JoinPartitionPlan {
  std::vector<PartitionPair> partitions;
  std::vector<MatchRange> boundary_ranges;
};

struct PartitionOptions {
  std::uint64_t partitions = 1;               ///< p (GPUs, or CPU work units)
  std::uint64_t max_subpartition_rows = ~0ull;  ///< bound on |R_ij| + |S_ij| (the stream buffers)
  std::uint64_t min_subpartitions = 3;          ///< per partition pair (three streams per GPU)
};

/// Two-step merge-path partitioning of sorted R and S (all rows) with boundary validation.
/// Every matching (r, s) pair lies in exactly one subpartition pair or one boundary range.
JoinPartitionPlan plan_join_partitions(ColumnView r_sorted_keys, ColumnView s_sorted_keys,
                                       const PartitionOptions& options);

}  // namespace mgjoin::detail
