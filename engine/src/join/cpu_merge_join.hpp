#pragma once
// Sequential merge join of one partition pair of sorted R and S into matching ranges: the CPU path's
// worker and the GPU join phase's fallback for subpartition pairs whose ranges did not fit.
#include "engine/src/join/merge_path_partition.hpp"

#include <mgjoin/join.hpp>
#include <mgjoin/types.hpp>

#include <vector>

namespace mgjoin::detail {

/// Appends one matching range per key present in both sides of `pair` (ordered by key).
void append_matching_ranges(ColumnView r_sorted_keys, ColumnView s_sorted_keys, const PairRange& pair,
                            std::vector<MatchRange>& out);

/// Number of matching ranges of `pair` (a first pass that lets the caller size the output exactly:
/// growing vectors costs more than the join itself once page faults are counted).
std::uint64_t count_matching_ranges(ColumnView r_sorted_keys, ColumnView s_sorted_keys, const PairRange& pair);

/// Writes the matching ranges of `pair` to out[0, count_matching_ranges(...)) and returns the end.
MatchRange* write_matching_ranges(ColumnView r_sorted_keys, ColumnView s_sorted_keys, const PairRange& pair,
                                  MatchRange* out);

}  // namespace mgjoin::detail
