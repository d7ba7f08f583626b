// The per-thread k >= 3 merge on loser trees (host_merge/detail/tree_merge.hpp): one tree, or, for
// 4-byte keys, two trees in lockstep over the two halves of an exact median split. Called directly
// (kernel_fixtures.hpp), checked against a sequential sort of all tuples.
#include "host_merge/detail/tree_merge.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "common/seed.hpp"
#include "host_merge/detail/key_loser_tree.hpp"
#include "host_merge/detail/packed_loser_tree.hpp"
#include "host_merge/kernel_fixtures.hpp"
#include "host_merge/run_fixtures.hpp"

namespace mgjoin::host_merge::detail {
namespace {

using test::make_runs;
using test::reference_merge;
using test::Runs;
using test::cursors_of;
using test::sizes_summing_to;

/// tree_merge<Tree> over all tuples of `runs`, checked against the reference.
template <class Tree, class K, class P>
void expect_tree_merged(Runs<K, P> runs) {
  test::expect_kernel_merged(std::move(runs), [](auto* cursors, int m, K* keys, P* payloads, std::int64_t n) {
    tree_merge<Tree>(cursors, m, keys, payloads, n);
  });
}

template <class KP>
class TreeMerge : public ::testing::Test {};
// Both trees, signed and unsigned keys, both payload widths.
using TreeTypes = ::testing::Types<std::pair<std::int32_t, std::uint32_t>, std::pair<std::uint32_t, std::uint64_t>,
                                   std::pair<std::int64_t, std::uint64_t>, std::pair<std::uint64_t, std::uint32_t>>;
TYPED_TEST_SUITE(TreeMerge, TreeTypes);

#define TREE_TYPES                            \
  using K = typename TypeParam::first_type;   \
  using P = typename TypeParam::second_type;  \
  using Tree = LoserTreeFor<K, P>

/// Totals just below, at and above the two-tree threshold, odd and even.
std::vector<std::int64_t> totals() {
  return {kLanePairMinTuples - 1, kLanePairMinTuples, kLanePairMinTuples + 1, 3 * kLanePairMinTuples + 7,
          20011};
}

TYPED_TEST(TreeMerge, RandomKeysAroundTheTwoTreeThreshold) {
  TREE_TYPES;
  std::mt19937_64 rng(test::announce_seed());
  std::uniform_int_distribution<K> any_key(std::numeric_limits<K>::min(), std::numeric_limits<K>::max());
  for (std::size_t k : {3, 4, 5, 8, 16, 64})
    for (std::int64_t total : totals()) {
      SCOPED_TRACE("k=" + std::to_string(k) + " total=" + std::to_string(total));
      expect_tree_merged<Tree>(make_runs<K, P>(sizes_summing_to(rng, k, total), [&](auto, auto) { return any_key(rng); }));
    }
}

TYPED_TEST(TreeMerge, PayloadsOfEqualKeysInAnyOrder) {
  TREE_TYPES;
  std::mt19937_64 rng(test::announce_seed());
  std::uniform_int_distribution<int> few(0, 3);
  for (std::size_t k : {3, 8, 64}) {
    SCOPED_TRACE("k=" + std::to_string(k));
    auto runs = make_runs<K, P>(sizes_summing_to(rng, k, 3 * kLanePairMinTuples + 1), [&](auto, auto) { return K(few(rng)); });
    test::shuffle_payloads(runs, rng);
    expect_tree_merged<Tree>(std::move(runs));
  }
}

TYPED_TEST(TreeMerge, AllKeysEqualSplitExactlyAtTheMedian) {
  // Every tuple ties with the median: the split must still put each tuple in exactly one half.
  TREE_TYPES;
  for (std::size_t k : {3, 8, 13})
    for (std::int64_t total : totals()) {
      SCOPED_TRACE("k=" + std::to_string(k) + " total=" + std::to_string(total));
      const std::vector<std::int64_t> sizes(k, total / std::int64_t(k) + 1);
      expect_tree_merged<Tree>(make_runs<K, P>(sizes, [](auto, auto) { return K(7); }));
      expect_tree_merged<Tree>(make_runs<K, P>(sizes, [](auto, auto) { return std::numeric_limits<K>::max(); }));
      expect_tree_merged<Tree>(make_runs<K, P>(sizes, [](auto, auto) { return std::numeric_limits<K>::min(); }));
    }
}

TYPED_TEST(TreeMerge, OneHotKeyAcrossTheSplit) {
  TREE_TYPES;
  std::mt19937_64 rng(test::announce_seed());
  std::uniform_int_distribution<K> any_key(std::numeric_limits<K>::min(), std::numeric_limits<K>::max());
  std::bernoulli_distribution hot(0.6);
  for (std::size_t k : {3, 4, 8, 31}) {
    SCOPED_TRACE("k=" + std::to_string(k));
    expect_tree_merged<Tree>(make_runs<K, P>(sizes_summing_to(rng, k, 3 * kLanePairMinTuples),
                                             [&](auto, auto) { return hot(rng) ? K(42) : any_key(rng); }));
  }
}

TYPED_TEST(TreeMerge, MaxKeysWhileOtherRunsRunOutInEitherHalf) {
  // Max is what exhausted leaves hold: one half (or both) ends in a drain of max keys while the other
  // tree still merges; the lockstep loop must hand over to single-tree steps and lose nothing.
  TREE_TYPES;
  std::mt19937_64 rng(test::announce_seed());
  std::uniform_int_distribution<K> small(std::numeric_limits<K>::min(), K(50));
  for (double max_share : {0.1, 0.5, 0.9})
    for (std::size_t k : {3, 5, 8}) {
      SCOPED_TRACE("k=" + std::to_string(k) + " max share=" + std::to_string(max_share));
      std::bernoulli_distribution is_max(max_share);
      expect_tree_merged<Tree>(make_runs<K, P>(sizes_summing_to(rng, k, 2 * kLanePairMinTuples + 3),
                                               [&](std::size_t r, auto) {
                                                 return r % 2 == 0 && is_max(rng) ? std::numeric_limits<K>::max()
                                                                                  : small(rng);
                                               }));
    }
}

TYPED_TEST(TreeMerge, DisjointRunsLeaveOneRunOnASideOfTheSplit) {
  // Runs in key order: each half holds about half the runs, or a single run (then one tree merges all).
  TREE_TYPES;
  for (std::size_t k : {3, 4, 8}) {
    SCOPED_TRACE("k=" + std::to_string(k));
    const std::vector<std::int64_t> sizes(k, kLanePairMinTuples);
    expect_tree_merged<Tree>(make_runs<K, P>(sizes, [](std::size_t r, std::int64_t j) { return K(r * 100000 + j); }));
    expect_tree_merged<Tree>(
        make_runs<K, P>(sizes, [k](std::size_t r, std::int64_t j) { return K((k - 1 - r) * 100000 + j); }));
    // One long run holding both halves' ends and short runs in its middle.
    std::vector<std::int64_t> skewed(k, 5);
    skewed[0] = 4 * kLanePairMinTuples;
    expect_tree_merged<Tree>(make_runs<K, P>(skewed, [](std::size_t r, std::int64_t j) {
      return r == 0 ? K(j) : K(2 * kLanePairMinTuples + std::int64_t(r));
    }));
  }
}

TEST(TreeMergeSigned, NegativeAndPositiveKeysInPackedNodes) {
  // The packed tree flips the sign bit so that unsigned order of a node is signed order of its key.
  std::mt19937_64 rng(test::announce_seed());
  std::uniform_int_distribution<std::int32_t> around_zero(-3, 3);
  expect_tree_merged<PackedLoserTree<std::int32_t, std::uint32_t>>(make_runs<std::int32_t, std::uint32_t>(
      sizes_summing_to(rng, 6, 3 * kLanePairMinTuples), [&](auto, auto) { return around_zero(rng); }));
}

TEST(SplitRuns, SplitsAtTheRankWithEveryTupleOnOneSide) {
  std::mt19937_64 rng(test::announce_seed());
  std::uniform_int_distribution<std::uint32_t> few(0, 9);
  auto runs = make_runs<std::uint32_t, std::uint32_t>(sizes_summing_to(rng, 7, 5000),
                                                      [&](auto, auto) { return few(rng); });
  auto cursors = cursors_of(runs);
  const int m = static_cast<int>(cursors.size());
  for (std::int64_t rank : {std::int64_t{1}, std::int64_t{2500}, std::int64_t{4999}}) {
    SCOPED_TRACE("rank=" + std::to_string(rank));
    RunCursor<std::uint32_t, std::uint32_t> below[kKeyLoserTreeMaxLeaves], above[kKeyLoserTreeMaxLeaves];
    const auto [m_below, m_above] = split_runs(cursors.data(), m, rank, below, above);
    std::int64_t n_below = 0, n_above = 0;
    std::uint32_t max_below = 0, min_above = std::numeric_limits<std::uint32_t>::max();
    for (int i = 0; i < m_below; ++i) {
      n_below += below[i].end - below[i].key;
      max_below = std::max(max_below, below[i].end[-1]);
    }
    for (int i = 0; i < m_above; ++i) {
      n_above += above[i].end - above[i].key;
      min_above = std::min(min_above, above[i].key[0]);
    }
    EXPECT_EQ(n_below, rank);
    EXPECT_EQ(n_below + n_above, 5000);
    EXPECT_LE(max_below, min_above);
  }
}

}  // namespace
}  // namespace mgjoin::host_merge::detail
