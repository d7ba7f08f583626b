// Pivot search of the merge-based sort (engine/src/sort/pivot_search.cuh) on host arrays, against a
// brute-force reference that tries every pivot.
#include "engine/src/sort/pivot_search.cuh"

#include "common/seed.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <random>
#include <vector>

namespace mgjoin::sort {
namespace {

using Keys = std::vector<std::uint64_t>;

/// True when swapping the last p of a with the first p of b leaves max(a') <= min(b').
bool swap_orders(const Keys& a, const Keys& b, std::size_t p) {
  Keys left(a.begin(), a.end() - static_cast<std::ptrdiff_t>(p));
  left.insert(left.end(), b.begin(), b.begin() + static_cast<std::ptrdiff_t>(p));
  Keys right(a.end() - static_cast<std::ptrdiff_t>(p), a.end());
  right.insert(right.end(), b.begin() + static_cast<std::ptrdiff_t>(p), b.end());
  if (left.empty() || right.empty()) return true;
  return *std::max_element(left.begin(), left.end()) <= *std::min_element(right.begin(), right.end());
}

std::uint64_t brute_force_pivot(const Keys& a, const Keys& b) {
  for (std::size_t p = 0; p <= std::min(a.size(), b.size()); ++p)
    if (swap_orders(a, b, p)) return p;
  ADD_FAILURE() << "no valid pivot exists";
  return 0;
}

Keys sorted_random(std::mt19937_64& rng, std::size_t n, std::uint64_t max_key) {
  std::uniform_int_distribution<std::uint64_t> dist(0, max_key);
  Keys k(n);
  for (auto& x : k) x = dist(rng);
  std::sort(k.begin(), k.end());
  return k;
}

/// The same sequence cut into chunks of the given lengths (zero allowed), as the GPU sees a side.
ChunkGroupView<std::uint64_t> as_chunks(const Keys& k, const std::vector<std::size_t>& cuts) {
  ChunkGroupView<std::uint64_t> view;
  std::size_t begin = 0;
  for (std::size_t cut : cuts) {
    view.append(k.data() + begin, cut - begin);
    begin = cut;
  }
  view.append(k.data() + begin, k.size() - begin);
  return view;
}

void expect_pivot_matches_reference(const Keys& a, const Keys& b) {
  const std::uint64_t expected = brute_force_pivot(a, b);
  EXPECT_EQ(find_pivot(a, b), expected) << "|a| = " << a.size() << ", |b| = " << b.size();
  // Cut each side in three chunks (one of them possibly empty): same answer through the chunk view.
  const std::vector<std::size_t> cuts_a{a.size() / 3, a.size() / 3, a.size() - a.size() / 4};
  const std::vector<std::size_t> cuts_b{b.size() / 2, b.size()};
  EXPECT_EQ(find_pivot(as_chunks(a, cuts_a), as_chunks(b, cuts_b)), expected);
}

TEST(MergeSortPivot, EmptyAndSingleTuples) {
  expect_pivot_matches_reference({}, {});
  expect_pivot_matches_reference({5}, {});
  expect_pivot_matches_reference({}, {5});
  expect_pivot_matches_reference({5}, {5});
  expect_pivot_matches_reference({7}, {3});
  expect_pivot_matches_reference({3}, {7});
  EXPECT_EQ(find_pivot(Keys{7}, Keys{3}), 1u);
  EXPECT_EQ(find_pivot(Keys{5}, Keys{5}), 0u);
}

TEST(MergeSortPivot, AllKeysEqualSwapsNothing) {
  const Keys a(100, 42), b(100, 42);
  EXPECT_EQ(find_pivot(a, b), 0u);
  expect_pivot_matches_reference(a, b);
}

TEST(MergeSortPivot, DisjointSides) {
  Keys low(64), high(64);
  for (std::size_t i = 0; i < 64; ++i) {
    low[i] = i;
    high[i] = 1000 + i;
  }
  EXPECT_EQ(find_pivot(low, high), 0u);    // already in order
  EXPECT_EQ(find_pivot(high, low), 64u);   // every tuple changes sides
  expect_pivot_matches_reference(low, high);
  expect_pivot_matches_reference(high, low);
}

TEST(MergeSortPivot, InterleavedSides) {
  Keys even(50), odd(50);
  for (std::size_t i = 0; i < 50; ++i) {
    even[i] = 2 * i;
    odd[i] = 2 * i + 1;
  }
  expect_pivot_matches_reference(even, odd);
  expect_pivot_matches_reference(odd, even);
  EXPECT_EQ(find_pivot(even, odd), 25u);
}

TEST(MergeSortPivot, DuplicatesAcrossTheBoundary) {
  // The run of 7s straddles the split point: the leftmost pivot leaves the 7s wherever they may stay.
  expect_pivot_matches_reference({1, 7, 7, 7, 7}, {7, 7, 7, 9, 9});
  expect_pivot_matches_reference({7, 7, 7, 7, 8}, {1, 2, 7, 7, 7});
  expect_pivot_matches_reference({1, 2, 3, 9, 9, 9}, {9, 9, 9, 9, 9, 9});
  expect_pivot_matches_reference({9, 9, 9, 9}, {1, 9, 9, 9});
  EXPECT_EQ(find_pivot(Keys{1, 7, 7, 7, 7}, Keys{7, 7, 7, 9, 9}), 0u);
}

TEST(MergeSortPivot, UnequalLengths) {
  expect_pivot_matches_reference({5, 6, 7, 8, 9, 10}, {1, 2});
  expect_pivot_matches_reference({1, 2}, {0, 0, 0, 0, 5});
  expect_pivot_matches_reference({4, 4, 4}, {1, 4, 4, 4, 4, 4, 4});
}

TEST(MergeSortPivot, RandomSidesMatchBruteForce) {
  std::mt19937_64 rng(test::announce_seed());
  for (int trial = 0; trial < 2000; ++trial) {
    const std::size_t na = rng() % 40;
    const std::size_t nb = trial % 2 == 0 ? na : rng() % 40;
    const std::uint64_t max_key = trial % 3 == 0 ? 3 : (trial % 3 == 1 ? 100 : ~0ull);  // many or no duplicates
    expect_pivot_matches_reference(sorted_random(rng, na, max_key), sorted_random(rng, nb, max_key));
    if (HasFailure()) return;
  }
}

TEST(MergeSortPivot, LargeSidesNeedLogarithmicReads) {
  std::mt19937_64 rng(test::announce_seed() + 1);
  const Keys a = sorted_random(rng, 1 << 20, 1 << 22), b = sorted_random(rng, 1 << 20, 1 << 22);
  const std::uint64_t p = find_pivot(a, b);
  EXPECT_TRUE(swap_orders(a, b, p));
  if (p > 0) {
    EXPECT_FALSE(swap_orders(a, b, p - 1));
  }
}

}  // namespace
}  // namespace mgjoin::sort
