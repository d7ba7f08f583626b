// Merge-path partitioning with boundary validation on adversarial sorted inputs: every matching pair
// must be covered exactly once by the subpartition pairs and the boundary ranges, and no key may lie
// in two subpartition pairs.
#include "engine/src/join/merge_path_partition.hpp"

#include "common/keys.hpp"
#include "common/reference_join.hpp"
#include "common/seed.hpp"

#include <gtest/gtest.h>

#include <random>

namespace mgjoin::detail {
namespace {

using test::expand;
using test::matching_pairs;
using test::sorted;

template <class Key>
ColumnView view(const std::vector<Key>& v, DType t) {
  return {v.data(), static_cast<std::int64_t>(v.size()), t};
}

/// Checks the plan's contract against nested loops; returns it for further checks.
template <class Key>
JoinPartitionPlan check_plan(const std::vector<Key>& r, const std::vector<Key>& s, DType t, PartitionOptions o) {
  JoinPartitionPlan plan = plan_join_partitions(view(r, t), view(s, t), o);
  EXPECT_EQ(plan.partitions.size(), o.partitions);

  // Covered pairs: nested loops inside each subpartition pair, plus every boundary range in full.
  std::vector<MatchRange> covered = plan.boundary_ranges;
  std::vector<PairRange> subs;
  for (const PartitionPair& p : plan.partitions)
    for (const PairRange& sp : p.subpartitions) {
      subs.push_back(sp);
      EXPECT_TRUE(sp.joinable());
      EXPECT_LE(sp.size(), o.max_subpartition_rows);
      EXPECT_GE(sp.r_begin, p.range.r_begin);
      EXPECT_LE(sp.r_end, p.range.r_end);
      EXPECT_GE(sp.s_begin, p.range.s_begin);
      EXPECT_LE(sp.s_end, p.range.s_end);
      for (auto i = sp.r_begin; i < sp.r_end; ++i)
        for (auto j = sp.s_begin; j < sp.s_end; ++j)
          if (r[i] == s[j]) covered.push_back({i, i + 1, j, j + 1});
    }
  for (const MatchRange& m : plan.boundary_ranges) {
    EXPECT_LT(m.r_begin, m.r_end);
    EXPECT_LT(m.s_begin, m.s_end);
    for (auto i = m.r_begin; i < m.r_end; ++i) EXPECT_EQ(r[i], r[m.r_begin]);
    for (auto j = m.s_begin; j < m.s_end; ++j) EXPECT_EQ(s[j], r[m.r_begin]);
  }
  EXPECT_EQ(expand(covered), matching_pairs(r, s));

  // No key split: consecutive subpartition pairs are ordered and hold disjoint key sets.
  for (std::size_t k = 1; k < subs.size(); ++k) {
    const PairRange& a = subs[k - 1];
    const PairRange& b = subs[k];
    EXPECT_LE(a.r_end, b.r_begin);
    EXPECT_LE(a.s_end, b.s_begin);
    const Key a_max = std::max(r[a.r_end - 1], s[a.s_end - 1]);
    const Key b_min = std::min(r[b.r_begin], s[b.s_begin]);
    EXPECT_LT(a_max, b_min) << "a key lies in subpartition pairs " << k - 1 << " and " << k;
  }
  return plan;
}

TEST(MergePathPartition, DistinctKeysSplitEvenlyIntoAtLeastThreeSubpartitions) {
  std::vector<std::uint64_t> r, s;
  for (std::uint64_t k = 0; k < 600; ++k) (k % 3 ? r : s).push_back(k);
  const auto plan = check_plan(r, s, DType::UInt64, {.partitions = 4, .max_subpartition_rows = 1000, .min_subpartitions = 3});
  EXPECT_TRUE(plan.boundary_ranges.empty());
  for (const PartitionPair& p : plan.partitions) {
    EXPECT_EQ(p.range.size(), 150u);
    EXPECT_GE(p.subpartitions.size(), 3u);
  }
}

TEST(MergePathPartition, SubpartitionBoundHonoured) {
  std::vector<std::uint32_t> r, s;
  for (std::uint32_t k = 0; k < 1000; ++k) r.push_back(2 * k), s.push_back(2 * k + (k % 2));
  const auto plan = check_plan(r, s, DType::UInt32, {.partitions = 3, .max_subpartition_rows = 17, .min_subpartitions = 3});
  for (const PartitionPair& p : plan.partitions) EXPECT_GE(p.subpartitions.size(), 2000u / 3 / 17 / 2);
}

TEST(MergePathPartition, OneHotKeyCoveringMostOfBothSides) {
  std::vector<std::int64_t> r{-5, -1}, s{-3};
  r.insert(r.end(), 300, 7);
  s.insert(s.end(), 250, 7);
  for (std::int64_t k = 8; k < 40; ++k) r.push_back(k), s.push_back(k + 1);
  const auto plan = check_plan(sorted(r), sorted(s), DType::Int64, {.partitions = 4, .max_subpartition_rows = 50, .min_subpartitions = 3});
  ASSERT_FALSE(plan.boundary_ranges.empty());
  EXPECT_EQ(plan.boundary_ranges.front().tuples(), 300u * 250u);  // taken out once, not per cut
}

TEST(MergePathPartition, AllKeysEqual) {
  const std::vector<std::uint32_t> r(200, 42), s(77, 42);
  const auto plan = check_plan(r, s, DType::UInt32, {.partitions = 4, .max_subpartition_rows = 10, .min_subpartitions = 3});
  ASSERT_EQ(plan.boundary_ranges.size(), 1u);
  EXPECT_EQ(plan.boundary_ranges[0], (MatchRange{0, 200, 0, 77}));
}

TEST(MergePathPartition, AlternatingKeys) {
  std::vector<std::uint64_t> r, s, r2, s2;
  for (std::uint64_t k = 0; k < 300; ++k) {
    r.push_back(2 * k);       // no matches at all
    s.push_back(2 * k + 1);
    r2.push_back(k / 2);      // every key twice on both sides
    s2.push_back(k / 2);
  }
  check_plan(r, s, DType::UInt64, {.partitions = 4, .max_subpartition_rows = 16, .min_subpartitions = 3});
  check_plan(r2, s2, DType::UInt64, {.partitions = 7, .max_subpartition_rows = 5, .min_subpartitions = 3});
}

TEST(MergePathPartition, OneSideEmpty) {
  const std::vector<std::uint64_t> some{1, 1, 2, 3, 3, 3, 9}, none;
  auto plan = check_plan(some, none, DType::UInt64, {.partitions = 3, .max_subpartition_rows = 2, .min_subpartitions = 3});
  plan = check_plan(none, some, DType::UInt64, {.partitions = 3, .max_subpartition_rows = 2, .min_subpartitions = 3});
  EXPECT_TRUE(plan.boundary_ranges.empty());
  check_plan(none, none, DType::UInt64, {.partitions = 2, .max_subpartition_rows = 2, .min_subpartitions = 3});
}

TEST(MergePathPartition, SkewedPartitionPairsHoldNoWork) {
  // Paper Figure 8: the middle partition of R holds only a key that starts before it, S has none there.
  const std::vector<std::uint32_t> r{1, 5, 5, 5, 5, 5, 5, 5, 9}, s{1, 9, 9};
  check_plan(r, s, DType::UInt32, {.partitions = 3, .max_subpartition_rows = 100, .min_subpartitions = 3});
  const std::vector<std::uint32_t> r2{1, 4, 4, 4, 6, 6, 6, 9}, s2{1, 9};
  check_plan(r2, s2, DType::UInt32, {.partitions = 3, .max_subpartition_rows = 100, .min_subpartitions = 3});
}

TEST(MergePathPartition, MorePartitionsThanRows) {
  const std::vector<std::int32_t> r{-3, 0, 4}, s{0, 4};
  check_plan(r, s, DType::Int32, {.partitions = 8, .max_subpartition_rows = 1, .min_subpartitions = 3});
  check_plan(r, s, DType::Int32, {.partitions = 5, .max_subpartition_rows = 100, .min_subpartitions = 3});
}

TEST(MergePathPartition, RandomDuplicateHeavyInputs) {
  std::mt19937_64 rng(test::announce_seed());
  for (int round = 0; round < 40; ++round) {
    const int keys = 1 + static_cast<int>(rng() % 30);
    std::uniform_int_distribution<std::int32_t> key(-keys, keys);
    std::vector<std::int32_t> r(rng() % 300), s(rng() % 300);
    for (auto& k : r) k = key(rng);
    for (auto& k : s) k = key(rng);
    const PartitionOptions o{.partitions = 1 + rng() % 9, .max_subpartition_rows = 1 + rng() % 40, .min_subpartitions = 3};
    check_plan(sorted(r), sorted(s), DType::Int32, o);
  }
}

TEST(MergePathPartition, CutsCanBeValidatedOneByOne) {
  // split_merge_path alone: pieces are ordered, cover the input, and the equal key at a cut moved out.
  const std::vector<std::uint64_t> r{1, 2, 2, 2, 3}, s{2, 2, 4};
  const ValidatedSplit split = split_merge_path(view(r, DType::UInt64), view(s, DType::UInt64), {0, 5, 0, 3}, 2);
  ASSERT_EQ(split.pieces.size(), 2u);
  EXPECT_EQ(split.pieces[0], (PairRange{0, 1, 0, 0}));
  EXPECT_EQ(split.pieces[1], (PairRange{4, 5, 2, 3}));
  ASSERT_EQ(split.boundary_ranges.size(), 1u);
  EXPECT_EQ(split.boundary_ranges[0], (MatchRange{1, 4, 0, 2}));
}

}  // namespace
}  // namespace mgjoin::detail
