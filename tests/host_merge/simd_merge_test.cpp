// The AVX-512 per-thread merge of 4/4 tuples (host_merge/detail/simd_merge.hpp): packed (key, index)
// words, rounds cut by round_counts, bitonic merge networks, payloads gathered back by index. Called
// directly (kernel_fixtures.hpp), checked against a sequential sort of all tuples; skipped on a CPU
// without AVX-512F. round_counts is checked on its own.
#include "host_merge/detail/simd_merge.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <limits>
#include <random>
#include <string>
#include <tuple>
#include <vector>

#include "common/seed.hpp"
#include "host_merge/kernel_fixtures.hpp"
#include "host_merge/run_fixtures.hpp"

namespace mgjoin::host_merge::detail {
namespace {

using test::cursors_of;
using test::make_runs;
using test::Runs;
using test::sizes_summing_to;

template <class K>
void expect_simd_merged(Runs<K, std::uint32_t> runs) {
  test::expect_kernel_merged(std::move(runs), [](auto* cursors, int m, K* keys, std::uint32_t* payloads, std::int64_t) {
    simd_merge(cursors, m, keys, payloads);
  });
}

template <class K>
class SimdMerge : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!simd_merge_supported()) GTEST_SKIP() << "this CPU has no AVX-512F (or MGJOIN_MERGE_SIMD=0)";
  }
};
using KeyTypes = ::testing::Types<std::int32_t, std::uint32_t>;
TYPED_TEST_SUITE(SimdMerge, KeyTypes);

/// Totals that end mid-vector, at a round's size and over several rounds.
std::vector<std::int64_t> totals() {
  return {2, 9, 17, 63, kSimdRoundTuples - 1, kSimdRoundTuples + 1, 3 * kSimdRoundTuples + 5};
}

TYPED_TEST(SimdMerge, RandomKeys) {
  using K = TypeParam;
  std::mt19937_64 rng(test::announce_seed());
  std::uniform_int_distribution<K> any_key(std::numeric_limits<K>::min(), std::numeric_limits<K>::max());
  for (std::size_t k : {2, 3, 4, 5, 8, 16, 33, 64})
    for (std::int64_t total : totals()) {
      if (total < std::int64_t(k)) continue;
      SCOPED_TRACE("k=" + std::to_string(k) + " total=" + std::to_string(total));
      auto sizes = sizes_summing_to(rng, k, total);
      if (std::count_if(sizes.begin(), sizes.end(), [](auto s) { return s > 0; }) < 2) continue;
      expect_simd_merged(make_runs<K, std::uint32_t>(sizes, [&](auto, auto) { return any_key(rng); }));
    }
}

TYPED_TEST(SimdMerge, EveryRunCount) {
  // The round's window, and so the layout of its buffers, depends on the run count.
  using K = TypeParam;
  std::mt19937_64 rng(test::announce_seed());
  std::uniform_int_distribution<K> any_key(std::numeric_limits<K>::min(), std::numeric_limits<K>::max());
  for (std::size_t k = 2; k <= kKeyLoserTreeMaxLeaves; ++k) {
    SCOPED_TRACE("k=" + std::to_string(k));
    const std::vector<std::int64_t> sizes(k, kSimdRoundTuples / std::int64_t(k) + 3);
    expect_simd_merged(make_runs<K, std::uint32_t>(sizes, [&](auto, auto) { return any_key(rng); }));
  }
}

TYPED_TEST(SimdMerge, FewDistinctKeysAcrossRounds) {
  // Ties at every round's cut: the cut must take each tuple in exactly one round.
  using K = TypeParam;
  std::mt19937_64 rng(test::announce_seed());
  std::uniform_int_distribution<int> few(-2, 2);
  for (std::size_t k : {3, 8, 13})
    for (std::int64_t total : {kSimdRoundTuples + 1, 4 * kSimdRoundTuples + 3}) {
      SCOPED_TRACE("k=" + std::to_string(k) + " total=" + std::to_string(total));
      expect_simd_merged(
          make_runs<K, std::uint32_t>(sizes_summing_to(rng, k, total), [&](auto, auto) { return K(few(rng) + 3); }));
    }
}

TYPED_TEST(SimdMerge, PayloadsOfEqualKeysInAnyOrder) {
  // Runs are sorted by key only: a word must not order equal keys by their payloads (it would find
  // segments unsorted, and the merges from both ends would write some tuples twice and lose others).
  using K = TypeParam;
  std::mt19937_64 rng(test::announce_seed());
  std::uniform_int_distribution<int> few(-2, 2);
  for (std::size_t k : {2, 3, 8, 64})
    for (std::int64_t total : {std::int64_t{17}, kSimdRoundTuples + 1, 4 * kSimdRoundTuples + 3}) {
      if (total < std::int64_t(k)) continue;
      SCOPED_TRACE("k=" + std::to_string(k) + " total=" + std::to_string(total));
      auto sizes = sizes_summing_to(rng, k, total);
      if (std::count_if(sizes.begin(), sizes.end(), [](auto s) { return s > 0; }) < 2) continue;
      auto runs = make_runs<K, std::uint32_t>(sizes, [&](auto, auto) { return K(few(rng) + 3); });
      test::shuffle_payloads(runs, rng);
      expect_simd_merged(std::move(runs));
    }
}

TYPED_TEST(SimdMerge, AllKeysEqualAtEveryValue) {
  using K = TypeParam;
  for (std::size_t k : {3, 8})
    for (K key : {std::numeric_limits<K>::min(), K(0), K(7), std::numeric_limits<K>::max()}) {
      SCOPED_TRACE("k=" + std::to_string(k) + " key=" + std::to_string(key));
      const std::vector<std::int64_t> sizes(k, 2 * kSimdRoundTuples / std::int64_t(k) + 5);
      expect_simd_merged(make_runs<K, std::uint32_t>(sizes, [=](auto, auto) { return key; }));
    }
}

TYPED_TEST(SimdMerge, MaxKeysWithMaxPayloadsPackToThePaddingWord) {
  // (max key, max payload) packs to the max word that pads segments: the merge must still write each
  // such tuple exactly once. Payloads here are not ids: max on every tuple of even runs.
  using K = TypeParam;
  std::mt19937_64 rng(test::announce_seed());
  std::uniform_int_distribution<K> small(std::numeric_limits<K>::min(), K(50));
  std::bernoulli_distribution is_max(0.5);
  for (std::size_t k : {3, 5, 8}) {
    SCOPED_TRACE("k=" + std::to_string(k));
    auto runs = make_runs<K, std::uint32_t>(sizes_summing_to(rng, k, kSimdRoundTuples + 13), [&](std::size_t r, auto) {
      return r % 2 == 0 && is_max(rng) ? std::numeric_limits<K>::max() : small(rng);
    });
    for (std::size_t r = 0; r < k; r += 2)
      for (std::size_t j = 0; j < runs.keys[r].size(); ++j)
        if (runs.keys[r][j] == std::numeric_limits<K>::max()) runs.payloads[r][j] = ~std::uint32_t{0};
    expect_simd_merged(std::move(runs));
  }
}

TYPED_TEST(SimdMerge, OneHotKey) {
  using K = TypeParam;
  std::mt19937_64 rng(test::announce_seed());
  std::uniform_int_distribution<K> any_key(std::numeric_limits<K>::min(), std::numeric_limits<K>::max());
  std::bernoulli_distribution hot(0.6);
  for (std::size_t k : {3, 4, 8, 31}) {
    SCOPED_TRACE("k=" + std::to_string(k));
    expect_simd_merged(make_runs<K, std::uint32_t>(sizes_summing_to(rng, k, 3 * kSimdRoundTuples),
                                                   [&](auto, auto) { return hot(rng) ? K(42) : any_key(rng); }));
  }
}

TYPED_TEST(SimdMerge, DisjointInterleavedAndSkewedRuns) {
  using K = TypeParam;
  for (std::size_t k : {3, 4, 8}) {
    SCOPED_TRACE("k=" + std::to_string(k));
    const std::vector<std::int64_t> sizes(k, kSimdRoundTuples / 2 + 3);
    // In run order, in reverse run order, and perfectly interleaved.
    expect_simd_merged(
        make_runs<K, std::uint32_t>(sizes, [](std::size_t r, std::int64_t j) { return K(r * 100000 + j); }));
    expect_simd_merged(
        make_runs<K, std::uint32_t>(sizes, [k](std::size_t r, std::int64_t j) { return K((k - 1 - r) * 100000 + j); }));
    expect_simd_merged(make_runs<K, std::uint32_t>(sizes, [k](std::size_t r, std::int64_t j) { return K(j * k + r); }));
    // One long run and short runs whose keys fall in its middle.
    std::vector<std::int64_t> skewed(k, 5);
    skewed[0] = 4 * kSimdRoundTuples;
    expect_simd_merged(make_runs<K, std::uint32_t>(skewed, [](std::size_t r, std::int64_t j) {
      return r == 0 ? K(j) : K(2 * kSimdRoundTuples + std::int64_t(r));
    }));
  }
}

TEST(SimdMergeSigned, NegativeAndPositiveKeys) {
  // Packed words flip the sign bit so that unsigned order of a word is signed order of its key.
  if (!simd_merge_supported()) GTEST_SKIP() << "this CPU has no AVX-512F (or MGJOIN_MERGE_SIMD=0)";
  std::mt19937_64 rng(test::announce_seed());
  std::uniform_int_distribution<std::int32_t> around_zero(-3, 3);
  expect_simd_merged(make_runs<std::int32_t, std::uint32_t>(sizes_summing_to(rng, 6, 2 * kSimdRoundTuples + 1),
                                                            [&](auto, auto) { return around_zero(rng); }));
}

/// (key, run, position) of every tuple of `runs` from each cursor on, split into those the round takes
/// and those it leaves.
using Rank = std::tuple<std::uint32_t, int, std::int64_t>;

TEST(RoundCounts, TakesAPrefixOfTheKeyRunPositionOrder) {
  std::mt19937_64 rng(test::announce_seed());
  std::uniform_int_distribution<std::uint32_t> few(0, 20);
  for (std::int64_t window : {1, 7, 64, 500}) {
    SCOPED_TRACE("window=" + std::to_string(window));
    auto runs =
        make_runs<std::uint32_t, std::uint32_t>(sizes_summing_to(rng, 9, 3000), [&](auto, auto) { return few(rng); });
    auto cursors = cursors_of(runs);
    const int m = static_cast<int>(cursors.size());
    std::int64_t left = runs.total();
    while (left > 0) {
      std::int64_t counts[kKeyLoserTreeMaxLeaves];
      const std::int64_t n = round_counts(cursors.data(), m, window, counts);
      ASSERT_GT(n, 0);
      Rank max_taken{0, -1, -1}, min_left{~0u, m, 0};
      bool some_run_reaches_past = false;
      for (int i = 0; i < m; ++i) {
        const auto remaining = cursors[i].end - cursors[i].key;
        some_run_reaches_past |= remaining > window;
        ASSERT_LE(counts[i], std::min(remaining, window));
        if (counts[i] > 0) max_taken = std::max(max_taken, Rank{cursors[i].key[counts[i] - 1], i, counts[i] - 1});
        if (counts[i] < remaining) min_left = std::min(min_left, Rank{cursors[i].key[counts[i]], i, counts[i]});
      }
      EXPECT_LT(max_taken, min_left) << "the round is not a prefix of the merged order";
      if (some_run_reaches_past)
        EXPECT_GE(n, window);
      else
        EXPECT_EQ(n, left) << "the last round takes everything left";
      for (int i = 0; i < m; ++i) {
        cursors[i].key += counts[i];
        cursors[i].payload += counts[i];
      }
      left -= n;
    }
  }
}

}  // namespace
}  // namespace mgjoin::host_merge::detail
