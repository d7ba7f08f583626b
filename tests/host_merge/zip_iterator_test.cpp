// Zip iterator: sorting (key, payload) columns in place and merging them with libstdc++ parallel mode.
#include "host_merge/zip_iterator.hpp"

#include <gtest/gtest.h>
#include <omp.h>

#include <algorithm>
#include <limits>
#include <numeric>
#include <random>
#include <vector>

#include "common/seed.hpp"
#include "host_merge/run_fixtures.hpp"

namespace mgjoin::host_merge {
namespace {

/// Random keys (full range, so negatives for signed K; or only `distinct` values) with payload = row id.
template <class K, class P>
struct Columns {
  std::vector<K> keys;
  std::vector<P> payloads;

  Columns(std::size_t n, std::uint64_t seed, std::uint64_t distinct = 0) : keys(n), payloads(n) {
    std::mt19937_64 rng(seed);
    std::uniform_int_distribution<K> any_key(std::numeric_limits<K>::min(), std::numeric_limits<K>::max());
    for (auto& k : keys) k = distinct ? K(rng() % distinct) : any_key(rng);
    std::iota(payloads.begin(), payloads.end(), P{0});
  }
  auto begin() { return make_zip(keys.data(), payloads.data()); }
  auto end() { return begin() + static_cast<std::ptrdiff_t>(keys.size()); }
};

/// Sorted by key, and every payload (the original row id) still sits next to its own key.
template <class K, class P>
void expect_sorted_permutation(const Columns<K, P>& sorted, const Columns<K, P>& original) {
  ASSERT_TRUE(std::is_sorted(sorted.keys.begin(), sorted.keys.end()));
  std::vector<bool> seen(original.keys.size());
  for (std::size_t i = 0; i < sorted.keys.size(); ++i) {
    const auto row = static_cast<std::size_t>(sorted.payloads[i]);
    ASSERT_LT(row, seen.size());
    ASSERT_FALSE(seen[row]) << "payload " << row << " appears twice";
    seen[row] = true;
    ASSERT_EQ(sorted.keys[i], original.keys[row]) << "payload " << row << " lost its key";
  }
}

template <class KP>
class ZipSort : public ::testing::Test {};
using KeyPayloadTypes =
    ::testing::Types<std::pair<std::uint32_t, std::uint32_t>, std::pair<std::int32_t, std::uint64_t>,
                     std::pair<std::int64_t, std::uint32_t>, std::pair<std::uint64_t, std::uint64_t>>;
TYPED_TEST_SUITE(ZipSort, KeyPayloadTypes);

#define KP_TYPES                           \
  using K = typename TypeParam::first_type; \
  using P = typename TypeParam::second_type

TYPED_TEST(ZipSort, StdSortPermutesBothColumns) {
  KP_TYPES;
  const auto seed = test::announce_seed();
  for (std::uint64_t distinct : {0, 5}) {
    const Columns<K, P> original(20000, seed, distinct);
    auto cols = original;
    std::sort(cols.begin(), cols.end());
    expect_sorted_permutation(cols, original);
    auto with_comp = original;
    std::sort(with_comp.begin(), with_comp.end(), KeyLess{});
    expect_sorted_permutation(with_comp, original);
  }
}

TYPED_TEST(ZipSort, StdStableSortKeepsRowOrderOfEqualKeys) {
  KP_TYPES;
  const Columns<K, P> original(20000, test::announce_seed(), 7);
  auto cols = original;
  std::stable_sort(cols.begin(), cols.end());
  expect_sorted_permutation(cols, original);
  for (std::size_t i = 1; i < cols.keys.size(); ++i)
    if (cols.keys[i] == cols.keys[i - 1]) {
      ASSERT_LT(cols.payloads[i - 1], cols.payloads[i]);
    }
}

TYPED_TEST(ZipSort, GnuParallelSortWithEachAlgorithm) {
  KP_TYPES;
  const auto seed = test::announce_seed();
  const int saved = omp_get_max_threads();
  omp_set_num_threads(4);  // parallel even on a 2-core CI machine
  for (std::uint64_t distinct : {0, 3}) {
    const Columns<K, P> original(50000, seed, distinct);
    auto by_default = original;
    __gnu_parallel::sort(by_default.begin(), by_default.end());  // std::less<value_type>
    expect_sorted_permutation(by_default, original);
    auto mwms = original;
    __gnu_parallel::sort(mwms.begin(), mwms.end(), KeyLess{}, __gnu_parallel::multiway_mergesort_tag());
    expect_sorted_permutation(mwms, original);
    auto quick = original;
    __gnu_parallel::sort(quick.begin(), quick.end(), KeyLess{}, __gnu_parallel::quicksort_tag());
    expect_sorted_permutation(quick, original);
    auto balanced = original;
    __gnu_parallel::sort(balanced.begin(), balanced.end(), KeyLess{}, __gnu_parallel::balanced_quicksort_tag());
    expect_sorted_permutation(balanced, original);
  }
  omp_set_num_threads(saved);
}

TYPED_TEST(ZipSort, GnuParallelMultiwayMergeOnZipSequences) {
  // The primitive itself, without host_merge::multiway_merge around it: k = 2 (merge_advance), 3 and 4
  // (guarded register merges), 5+ (loser tree), both the sequential and the parallel path.
  KP_TYPES;
  std::mt19937_64 rng(test::announce_seed());
  std::uniform_int_distribution<K> any_key(std::numeric_limits<K>::min(), std::numeric_limits<K>::max());
  const int saved = omp_get_max_threads();
  omp_set_num_threads(3);
  for (std::size_t k : {2, 3, 4, 5, 17}) {
    for (std::int64_t max_size : {50, 5000}) {
      SCOPED_TRACE("k=" + std::to_string(k) + " max_size=" + std::to_string(max_size));
      auto sizes = test::random_sizes(rng, k, max_size);
      sizes[0] += 1;  // the primitive reads *(seqs[0].second) as a sentinel: keep it inside the first run
      auto runs = test::make_runs<K, P>(sizes, [&](auto, auto) { return any_key(rng); });
      std::vector<std::pair<ZipIterator<K, P>, ZipIterator<K, P>>> seqs;
      for (std::size_t r = 0; r < k; ++r) {
        const auto b = make_zip(runs.keys[r].data(), runs.payloads[r].data());
        seqs.emplace_back(b, b + static_cast<std::ptrdiff_t>(runs.keys[r].size()) - (r == 0 ? 1 : 0));
      }
      runs.keys[0].pop_back();
      runs.payloads[0].pop_back();
      const auto n = runs.total();
      std::vector<K> keys(static_cast<std::size_t>(n));
      std::vector<P> payloads(keys.size());
      __gnu_parallel::multiway_merge(seqs.data(), seqs.data() + k, make_zip(keys.data(), payloads.data()), n,
                                     KeyLess{});
      ASSERT_TRUE(std::is_sorted(keys.begin(), keys.end()));
      std::vector<std::pair<K, P>> got;
      for (std::size_t i = 0; i < keys.size(); ++i) got.emplace_back(keys[i], payloads[i]);
      std::sort(got.begin(), got.end());
      EXPECT_EQ(got, test::reference_merge(runs));
    }
  }
  omp_set_num_threads(saved);
}

TEST(ZipIterator, ArithmeticAndProxySemantics) {
  std::vector<std::uint64_t> k{30, 10, 20};
  std::vector<std::uint32_t> p{3, 1, 2};
  auto it = make_zip(k.data(), p.data());
  const auto end = it + 3;
  EXPECT_EQ(end - it, 3);
  EXPECT_TRUE(it < end);
  EXPECT_EQ((it + 2)[-1].key(), 10u);

  swap(*it, *(it + 1));  // ADL swap of proxies swaps the tuples, not the proxies
  EXPECT_EQ(k, (std::vector<std::uint64_t>{10, 30, 20}));
  EXPECT_EQ(p, (std::vector<std::uint32_t>{1, 3, 2}));

  KeyPayload<std::uint64_t, std::uint32_t> v = it[2];  // copy out
  it[2] = it[0];                                         // assignment writes through
  EXPECT_EQ(k[2], 10u);
  EXPECT_EQ(p[2], 1u);
  *it = v;
  EXPECT_EQ(k[0], 20u);
  EXPECT_EQ(p[0], 2u);
  EXPECT_TRUE(it[2] < it[0]);  // key order only
  EXPECT_TRUE(KeyLess{}(v, it[1]));
}

}  // namespace
}  // namespace mgjoin::host_merge
