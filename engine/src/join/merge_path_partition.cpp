// Merge-path partitioning with boundary validation (paper Section 3.3.1, Figures 7 and 8).
#include "engine/src/join/merge_path_partition.hpp"

#include "core/dispatch.hpp"
#include "engine/src/join/range_search.cuh"

#include <mgjoin/error.hpp>

#include <algorithm>

namespace mgjoin::detail {
namespace {

/// A cut between two neighbouring pieces. A clean cut has lo == hi; a validated cut that took a key
/// out spans that key's full ranges: the left piece ends at lo, the right one starts at hi.
struct Cut {
  std::uint64_t r_lo, s_lo, r_hi, s_hi;
};

/// k-th of `parts` equidistant diagonals of a merge path of length n (no 64-bit overflow).
std::uint64_t diagonal(std::uint64_t n, std::uint64_t parts, std::uint64_t k) {
  return static_cast<std::uint64_t>(static_cast<unsigned __int128>(n) * k / parts);
}

/// Finds the merge path's crossing with `diag` and widens it to a key boundary when the key on its
/// left equals the key on its right (in R or S, on either side).
template <class Key>
Cut validated_cut(const Key* r, const Key* s, const PairRange& w, std::uint64_t diag) {
  const std::uint64_t i = w.r_begin + merge_path_search(r + w.r_begin, w.r_size(), s + w.s_begin, w.s_size(), diag);
  const std::uint64_t j = w.s_begin + (diag - (i - w.r_begin));
  const bool has_left_r = i > w.r_begin, has_left_s = j > w.s_begin;
  const bool has_right_r = i < w.r_end, has_right_s = j < w.s_end;
  if ((!has_left_r && !has_left_s) || (!has_right_r && !has_right_s)) return {i, j, i, j};
  // Every key left of the path is <= every key right of it: only max(left) == min(right) can straddle.
  const Key left_max = !has_left_r ? s[j - 1] : !has_left_s ? r[i - 1] : std::max(r[i - 1], s[j - 1]);
  const Key right_min = !has_right_r ? s[j] : !has_right_s ? r[i] : std::min(r[i], s[j]);
  if (left_max < right_min) return {i, j, i, j};
  const IndexRange in_r = key_range(r, w.r_begin, w.r_end, right_min);
  const IndexRange in_s = key_range(s, w.s_begin, w.s_end, right_min);
  return {in_r.begin, in_s.begin, in_r.end, in_s.end};
}

template <class Key>
ValidatedSplit split_typed(const Key* r, const Key* s, const PairRange& whole, std::uint64_t parts) {
  MGJOIN_EXPECTS(parts >= 1, "merge-path split needs at least one part");
  const std::uint64_t n = whole.size();
  // cuts[0] and cuts[parts] are the ends of `whole`; the inner cuts are independent searches.
  std::vector<Cut> cuts(parts + 1);
  cuts.front() = {whole.r_begin, whole.s_begin, whole.r_begin, whole.s_begin};
  cuts.back() = {whole.r_end, whole.s_end, whole.r_end, whole.s_end};
  const auto inner = static_cast<std::int64_t>(parts) - 1;
#pragma omp parallel for schedule(static) if (inner > 1024)
  for (std::int64_t k = 1; k <= inner; ++k)
    cuts[k] = validated_cut(r, s, whole, diagonal(n, parts, static_cast<std::uint64_t>(k)));

  ValidatedSplit out;
  out.pieces.reserve(parts);
  for (std::uint64_t k = 0; k < parts; ++k) {
    const Cut& a = cuts[k];
    const Cut& b = cuts[k + 1];
    // Two cuts that took out the same key overlap (b.lo < a.hi): the piece between them is empty.
    out.pieces.push_back({a.r_hi, std::max(a.r_hi, b.r_lo), a.s_hi, std::max(a.s_hi, b.s_lo)});
    const bool took_key = b.r_lo != b.r_hi || b.s_lo != b.s_hi;
    const bool same_as_previous = k > 0 && b.r_lo == a.r_lo && b.r_hi == a.r_hi && b.s_lo == a.s_lo &&
                                  b.s_hi == a.s_hi;
    const bool on_both_sides = b.r_hi > b.r_lo && b.s_hi > b.s_lo;
    if (k + 1 < parts && took_key && !same_as_previous && on_both_sides)
      out.boundary_ranges.push_back({b.r_lo, b.r_hi, b.s_lo, b.s_hi});
  }
  return out;
}

void check_keys(ColumnView r, ColumnView s) {
  MGJOIN_EXPECTS(r.type == s.type, "R and S keys must share their type");
}

std::uint64_t subpartition_count(const PairRange& p, const PartitionOptions& o) {
  if (p.size() == 0) return 0;
  const std::uint64_t bound = std::max<std::uint64_t>(1, o.max_subpartition_rows);
  const std::uint64_t by_bound = p.size() / bound + (p.size() % bound != 0);  // ceil without overflow
  // At least min_subpartitions (three streams), but never more pieces than rows.
  return std::max<std::uint64_t>(1, std::min(p.size(), std::max(by_bound, o.min_subpartitions)));
}

}  // namespace

ValidatedSplit split_merge_path(ColumnView r_keys, ColumnView s_keys, PairRange whole, std::uint64_t parts) {
  check_keys(r_keys, s_keys);
  return dispatch_key_type(r_keys.type, [&](auto k) {
    using Key = decltype(k);
    return split_typed(r_keys.as<Key>(), s_keys.as<Key>(), whole, parts);
  });
}

JoinPartitionPlan plan_join_partitions(ColumnView r_sorted_keys, ColumnView s_sorted_keys,
                                       const PartitionOptions& options) {
  MGJOIN_EXPECTS(options.partitions >= 1 && options.max_subpartition_rows >= 1,
                 "partition options need p >= 1 and a positive subpartition bound");
  const PairRange all{0, static_cast<std::uint64_t>(r_sorted_keys.size), 0,
                      static_cast<std::uint64_t>(s_sorted_keys.size)};
  ValidatedSplit top = split_merge_path(r_sorted_keys, s_sorted_keys, all, options.partitions);

  JoinPartitionPlan plan;
  plan.boundary_ranges = std::move(top.boundary_ranges);
  plan.partitions.resize(top.pieces.size());
  std::vector<std::vector<MatchRange>> sub_ranges(top.pieces.size());
#pragma omp parallel for schedule(dynamic, 1)
  for (std::size_t p = 0; p < top.pieces.size(); ++p) {
    PartitionPair& pair = plan.partitions[p];
    pair.range = top.pieces[p];
    // A skewed pair (one side empty) holds no match: every one of its keys lies in it alone.
    if (!pair.range.joinable()) continue;
    ValidatedSplit sub =
        split_merge_path(r_sorted_keys, s_sorted_keys, pair.range, subpartition_count(pair.range, options));
    for (const PairRange& piece : sub.pieces)
      if (piece.joinable()) pair.subpartitions.push_back(piece);
    sub_ranges[p] = std::move(sub.boundary_ranges);
  }
  for (auto& ranges : sub_ranges)
    plan.boundary_ranges.insert(plan.boundary_ranges.end(), ranges.begin(), ranges.end());
  return plan;
}

}  // namespace mgjoin::detail
