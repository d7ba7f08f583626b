// Merge phase: k sorted runs -> one sorted relation; checked against a sequential sort of all tuples.
#include "host_merge/multiway_merge.hpp"

#include <gtest/gtest.h>
#include <omp.h>

#include <algorithm>
#include <limits>
#include <random>
#include <span>
#include <vector>

#include <mgjoin/error.hpp>

#include "common/seed.hpp"
#include "host_merge/detail/streaming_store.hpp"
#include "host_merge/run_fixtures.hpp"

namespace mgjoin::host_merge {
namespace {

using test::make_runs;
using test::reference_merge;
using test::Runs;

/// Runs the check with 1 thread (sequential path), 2 and an odd 5 (uneven per-thread splits).
template <class F>
void for_thread_counts(F check) {
  const int saved = omp_get_max_threads();
  for (int threads : {1, 2, 5}) {
    SCOPED_TRACE("threads=" + std::to_string(threads));
    omp_set_num_threads(threads);
    check();
  }
  omp_set_num_threads(saved);
}

/// Output columns with `offset` words before and a few after the merge's output, filled with a
/// marker that the merge must leave alone (streaming stores write whole vectors and lines).
template <class T>
struct GuardedColumn {
  static constexpr T kMarker = T(0x5a5a5a5a5a5a5a5aull);
  static constexpr std::size_t kAfter = 19;
  std::vector<T> words;
  std::size_t offset;

  GuardedColumn(std::size_t n, std::size_t offset) : words(offset + n + kAfter, kMarker), offset(offset) {}
  T* out() { return words.data() + offset; }
  bool margins_untouched() const {
    const auto n = words.size() - kAfter - offset;
    auto marker = [](T w) { return w == kMarker; };
    return std::all_of(words.begin(), words.begin() + std::ptrdiff_t(offset), marker) &&
           std::all_of(words.begin() + std::ptrdiff_t(offset + n), words.end(), marker);
  }
};

/// Merges into output columns `offset` words past their allocation (offset 1: 4- or 8-byte aligned
/// only) and checks keys sorted, the (key, payload) multiset equal to the reference, margins untouched.
template <class K, class P>
void expect_merged(const Runs<K, P>& runs, std::size_t offset = 0) {
  const auto n = static_cast<std::size_t>(runs.total());
  std::vector<RunView<K, P>> views;
  for (std::size_t r = 0; r < runs.keys.size(); ++r)
    views.push_back({runs.keys[r].data(), runs.payloads[r].data(), std::int64_t(runs.keys[r].size())});
  for_thread_counts([&] {
    GuardedColumn<K> keys(n, offset);
    GuardedColumn<P> payloads(n, offset);
    multiway_merge<K, P>(std::span<const RunView<K, P>>(views), keys.out(), payloads.out());

    ASSERT_TRUE(std::is_sorted(keys.out(), keys.out() + n));
    std::vector<std::pair<K, P>> got;
    for (std::size_t i = 0; i < n; ++i) got.emplace_back(keys.out()[i], payloads.out()[i]);
    std::sort(got.begin(), got.end());
    EXPECT_EQ(got, reference_merge(runs));
    EXPECT_TRUE(keys.margins_untouched());
    EXPECT_TRUE(payloads.margins_untouched());
  });
}

template <class K>
void expect_merged_key_only(const Runs<K, std::uint32_t>& runs) {
  std::vector<RunView<K>> views;
  for (const auto& r : runs.keys) views.push_back({r.data(), std::int64_t(r.size())});
  std::vector<K> expected;
  for (const auto& r : runs.keys) expected.insert(expected.end(), r.begin(), r.end());
  std::sort(expected.begin(), expected.end());
  for_thread_counts([&] {
    std::vector<K> out_keys(expected.size());
    multiway_merge<K>(std::span<const RunView<K>>(views), out_keys.data());
    EXPECT_EQ(out_keys, expected);
  });
}

/// Checks both forms: (key, payload) with the typed payload, and key-only on the same keys.
template <class K, class P, class KeyAt>
void check_shape(const std::vector<std::int64_t>& sizes, KeyAt key_at) {
  expect_merged(make_runs<K, P>(sizes, key_at));
  expect_merged_key_only(make_runs<K, std::uint32_t>(sizes, key_at));
}

template <class KP>
class MultiwayMerge : public ::testing::Test {};
using KeyPayloadTypes =
    ::testing::Types<std::pair<std::int32_t, std::uint32_t>, std::pair<std::uint32_t, std::uint64_t>,
                     std::pair<std::int64_t, std::uint64_t>, std::pair<std::uint64_t, std::uint32_t>,
                     std::pair<std::int32_t, std::uint64_t>, std::pair<std::uint64_t, std::uint64_t>>;
TYPED_TEST_SUITE(MultiwayMerge, KeyPayloadTypes);

#define KP_TYPES                           \
  using K = typename TypeParam::first_type; \
  using P = typename TypeParam::second_type

TYPED_TEST(MultiwayMerge, RandomRunsOfUnequalLengths) {
  KP_TYPES;
  std::mt19937_64 rng(test::announce_seed());
  std::uniform_int_distribution<K> any_key(std::numeric_limits<K>::min(), std::numeric_limits<K>::max());
  for (std::size_t k : {2, 3, 4, 5, 8, 16, 33, 64}) {
    SCOPED_TRACE("k=" + std::to_string(k));
    check_shape<K, P>(test::random_sizes(rng, k, 4000), [&](std::size_t, std::int64_t) { return any_key(rng); });
  }
}

TYPED_TEST(MultiwayMerge, FewRowsTakeTheSequentialPath) {
  KP_TYPES;
  std::mt19937_64 rng(test::announce_seed());
  std::uniform_int_distribution<K> any_key(std::numeric_limits<K>::min(), std::numeric_limits<K>::max());
  for (std::size_t k : {2, 3, 4, 7}) check_shape<K, P>(test::random_sizes(rng, k, 40), [&](auto, auto) { return any_key(rng); });
}

TYPED_TEST(MultiwayMerge, DuplicateHeavyKeys) {
  KP_TYPES;
  std::mt19937_64 rng(test::announce_seed());
  std::uniform_int_distribution<int> few(0, 3);
  for (std::size_t k : {2, 4, 6, 64})
    check_shape<K, P>(test::random_sizes(rng, k, 3000), [&](auto, auto) { return K(few(rng)); });
}

TYPED_TEST(MultiwayMerge, DuplicateKeysWithPayloadsInAnyOrder) {
  // The sort phase orders by key only: equal keys reach the merge with their payloads in any order.
  KP_TYPES;
  std::mt19937_64 rng(test::announce_seed());
  std::uniform_int_distribution<int> few(0, 3);
  for (std::size_t k : {2, 3, 8, 64}) {
    SCOPED_TRACE("k=" + std::to_string(k));
    auto runs = make_runs<K, P>(test::random_sizes(rng, k, 3000), [&](auto, auto) { return K(few(rng)); });
    test::shuffle_payloads(runs, rng);
    expect_merged(runs);
  }
}

TYPED_TEST(MultiwayMerge, AllKeysEqual) {
  KP_TYPES;
  for (std::size_t k : {2, 3, 4, 9}) check_shape<K, P>(std::vector<std::int64_t>(k, 2500), [](auto, auto) { return K(7); });
}

TYPED_TEST(MultiwayMerge, DisjointRangesInRunOrderAndReversed) {
  KP_TYPES;
  for (std::size_t k : {2, 3, 4, 12}) {
    const std::vector<std::int64_t> sizes(k, 1500);
    check_shape<K, P>(sizes, [](std::size_t r, std::int64_t j) { return K(r * 2000 + j); });
    check_shape<K, P>(sizes, [k](std::size_t r, std::int64_t j) { return K((k - 1 - r) * 2000 + j); });
  }
}

TYPED_TEST(MultiwayMerge, PerfectlyInterleavedRuns) {
  KP_TYPES;
  for (std::size_t k : {2, 3, 4, 5, 16})
    check_shape<K, P>(std::vector<std::int64_t>(k, 2000), [k](std::size_t r, std::int64_t j) { return K(j * k + r); });
}

TYPED_TEST(MultiwayMerge, OneLongRunAndManyShortOnes) {
  KP_TYPES;
  std::mt19937_64 rng(test::announce_seed());
  std::uniform_int_distribution<K> any_key(std::numeric_limits<K>::min(), std::numeric_limits<K>::max());
  for (std::size_t k : {2, 4, 20, 64}) {
    auto sizes = test::random_sizes(rng, k, 3);
    sizes[k / 2] = 30000;
    check_shape<K, P>(sizes, [&](auto, auto) { return any_key(rng); });
  }
}

TYPED_TEST(MultiwayMerge, EmptyRunsAnywhere) {
  KP_TYPES;
  std::mt19937_64 rng(test::announce_seed());
  std::uniform_int_distribution<K> any_key(std::numeric_limits<K>::min(), std::numeric_limits<K>::max());
  auto key = [&](auto, auto) { return any_key(rng); };
  check_shape<K, P>({0, 3000, 0, 2000, 0}, key);  // empty first, last and between
  check_shape<K, P>({0, 0, 5000, 0}, key);        // a single non-empty run
  check_shape<K, P>({0, 0, 0}, key);              // nothing at all
  check_shape<K, P>({1, 0, 1}, key);              // one row each
  check_shape<K, P>({4000}, key);                 // k = 1
  check_shape<K, P>({}, key);                     // k = 0
}

TYPED_TEST(MultiwayMerge, RejectsMoreThan64Runs) {
  KP_TYPES;
  std::vector<RunView<K, P>> runs(kMaxRuns + 1);
  K key{};
  P payload{};
  const std::span<const RunView<K, P>> too_many(runs);
  EXPECT_THROW(multiway_merge(too_many, &key, &payload), Error);
}

// ---------------------------------------------------------------- output stores
// The per-thread kernels merge blocks of detail::kStageTuples tuples into a stage and stream each
// block out (MGJOIN_MERGE_STREAMING_STORES): 16-byte stores once the output is 16-byte aligned, word
// stores for the head and the tail. Outputs at every word offset within a line, and lengths around
// the block size, must come out whole without a word written outside them.

TYPED_TEST(MultiwayMerge, UnalignedOutputsAndLengthsAroundTheStageBlock) {
  KP_TYPES;
  std::mt19937_64 rng(test::announce_seed());
  std::uniform_int_distribution<K> any_key(std::numeric_limits<K>::min(), std::numeric_limits<K>::max());
  auto key = [&](auto, auto) { return any_key(rng); };
  constexpr std::int64_t block = detail::kStageTuples;
  for (std::size_t k : {2, 3, 4, 5, 8}) {
    for (std::int64_t total : {std::int64_t{1}, block - 1, block, block + 1, 2 * block + 3, std::int64_t{4017}}) {
      for (std::size_t offset : {0, 1, 3, 5}) {
        SCOPED_TRACE("k=" + std::to_string(k) + " total=" + std::to_string(total) + " offset=" +
                     std::to_string(offset));
        std::vector<std::int64_t> sizes(k, total / std::int64_t(k));
        sizes[0] += total % std::int64_t(k);
        expect_merged(make_runs<K, P>(sizes, key), offset);
      }
    }
  }
}

TYPED_TEST(MultiwayMerge, UnalignedOutputsWithOneLiveRunOrTinyRuns) {
  // One live run is a streaming copy; runs of 1 and 2 tuples hit the 2-way kernel's last-tuple step.
  KP_TYPES;
  std::mt19937_64 rng(test::announce_seed());
  std::uniform_int_distribution<K> any_key(std::numeric_limits<K>::min(), std::numeric_limits<K>::max());
  auto key = [&](auto, auto) { return any_key(rng); };
  for (std::size_t offset : {0, 1, 2, 7}) {
    SCOPED_TRACE("offset=" + std::to_string(offset));
    expect_merged(make_runs<K, P>({0, 3001, 0}, key), offset);
    expect_merged(make_runs<K, P>({1, 2999}, key), offset);
    expect_merged(make_runs<K, P>({2999, 1}, key), offset);
    expect_merged(make_runs<K, P>({2, 2}, key), offset);
    expect_merged(make_runs<K, P>({1, 1, 1}, key), offset);
    expect_merged(make_runs<K, P>({1, 1500, 1, 1500}, key), offset);
  }
}

TEST(StreamingStores, CopyOutputAtEveryAlignmentAndLength) {
  std::vector<std::uint32_t> src32(80);
  std::vector<std::uint64_t> src64(80);
  for (std::size_t i = 0; i < src32.size(); ++i) src32[i] = std::uint32_t(i + 1), src64[i] = (i + 1) << 33;
  for (std::size_t offset = 0; offset < 8; ++offset) {
    for (std::int64_t n = 0; n <= 40; ++n) {
      SCOPED_TRACE("offset=" + std::to_string(offset) + " n=" + std::to_string(n));
      GuardedColumn<std::uint32_t> dst32(std::size_t(n), offset);
      GuardedColumn<std::uint64_t> dst64(std::size_t(n), offset);
      detail::copy_output(dst32.out(), src32.data() + 1, n);
      detail::copy_output(dst64.out(), src64.data() + 1, n);
      detail::finish_output();
      EXPECT_TRUE(std::equal(dst32.out(), dst32.out() + n, src32.data() + 1));
      EXPECT_TRUE(std::equal(dst64.out(), dst64.out() + n, src64.data() + 1));
      EXPECT_TRUE(dst32.margins_untouched());
      EXPECT_TRUE(dst64.margins_untouched());
    }
  }
}

// ---------------------------------------------------------------- the per-thread kernels
// Each thread of __gnu_parallel::multiway_merge merges its pieces of the k runs (one thread: the k
// runs): k = 2 with detail::two_way_merge, k >= 3 with detail::KeyLoserTree. The tree's cliffs: tree
// sizes that are not powers of two, runs exhausted while others hold the numeric max key (the value
// that exhausted leaves hold), and pieces left empty by the splitter.

/// k = 2..17 (every padding of the tree up to 32 leaves), then larger powers of two and neighbours.
std::vector<std::size_t> many_run_counts() {
  std::vector<std::size_t> ks;
  for (std::size_t k = 2; k <= 17; ++k) ks.push_back(k);
  for (std::size_t k : {31, 32, 33, 63, 64}) ks.push_back(k);
  return ks;
}

TYPED_TEST(MultiwayMerge, ManyRunsRandom) {
  KP_TYPES;
  std::mt19937_64 rng(test::announce_seed());
  std::uniform_int_distribution<K> any_key(std::numeric_limits<K>::min(), std::numeric_limits<K>::max());
  for (std::size_t k : many_run_counts()) {
    SCOPED_TRACE("k=" + std::to_string(k));
    check_shape<K, P>(test::random_sizes(rng, k, 1500), [&](auto, auto) { return any_key(rng); });
  }
}

TYPED_TEST(MultiwayMerge, ManyRunsDuplicateHeavy) {
  KP_TYPES;
  std::mt19937_64 rng(test::announce_seed());
  std::uniform_int_distribution<int> few(0, 2);
  for (std::size_t k : {2, 3, 4, 5, 8, 16, 23, 64}) {
    SCOPED_TRACE("k=" + std::to_string(k));
    check_shape<K, P>(test::random_sizes(rng, k, 2000), [&](auto, auto) { return K(few(rng)); });
  }
}

TYPED_TEST(MultiwayMerge, ManyRunsAllKeysAtTheNumericLimits) {
  // Max is the key that exhausted leaves hold: real max keys must still all come out.
  KP_TYPES;
  std::mt19937_64 rng(test::announce_seed());
  for (std::size_t k : {2, 3, 4, 5, 8, 13, 16, 64}) {
    SCOPED_TRACE("k=" + std::to_string(k));
    const auto sizes = test::random_sizes(rng, k, 1200);
    check_shape<K, P>(sizes, [](auto, auto) { return std::numeric_limits<K>::max(); });
    check_shape<K, P>(sizes, [](auto, auto) { return std::numeric_limits<K>::min(); });
  }
}

TYPED_TEST(MultiwayMerge, ManyRunsEndingInMaxKeysWhileOthersRunOut) {
  // Half the runs end in a block of max keys, the others are exhausted long before: the tree sees
  // max-keyed live runs tie with exhausted leaves, at every thread count's split points.
  KP_TYPES;
  std::mt19937_64 rng(test::announce_seed());
  std::uniform_int_distribution<K> small(std::numeric_limits<K>::min(), K(100));
  std::bernoulli_distribution coin(0.3);
  for (std::size_t k : {2, 3, 4, 5, 8, 16, 64}) {
    SCOPED_TRACE("k=" + std::to_string(k));
    check_shape<K, P>(test::random_sizes(rng, k, 1500), [&](std::size_t r, std::int64_t) {
      return r % 2 == 0 && coin(rng) ? std::numeric_limits<K>::max() : small(rng);
    });
  }
}

TYPED_TEST(MultiwayMerge, ManyRunsDisjointAndInterleaved) {
  KP_TYPES;
  for (std::size_t k : {3, 4, 5, 8, 16, 64}) {
    SCOPED_TRACE("k=" + std::to_string(k));
    const std::vector<std::int64_t> sizes(k, 400);
    check_shape<K, P>(sizes, [](std::size_t r, std::int64_t j) { return K(r * 500 + j); });
    check_shape<K, P>(sizes, [k](std::size_t r, std::int64_t j) { return K((k - 1 - r) * 500 + j); });
    check_shape<K, P>(sizes, [k](std::size_t r, std::int64_t j) { return K(j * k + r); });
  }
}

TYPED_TEST(MultiwayMerge, ManyRunsOneLongAndManyShort) {
  KP_TYPES;
  std::mt19937_64 rng(test::announce_seed());
  std::uniform_int_distribution<K> any_key(std::numeric_limits<K>::min(), std::numeric_limits<K>::max());
  for (std::size_t k : {3, 4, 5, 8, 16, 64}) {
    SCOPED_TRACE("k=" + std::to_string(k));
    auto sizes = test::random_sizes(rng, k, 3);
    sizes[k - 1] = 20000;
    check_shape<K, P>(sizes, [&](auto, auto) { return any_key(rng); });
  }
}

TYPED_TEST(MultiwayMerge, ManyRunsWithEmptyRunsMixedIn) {
  // Live runs left after dropping the empty ones: 1 (a copy), 2 (2-way), 3, 4, 5 and 9 (tree sizes 4,
  // 4, 8, 16).
  KP_TYPES;
  std::mt19937_64 rng(test::announce_seed());
  std::uniform_int_distribution<K> any_key(std::numeric_limits<K>::min(), std::numeric_limits<K>::max());
  auto key = [&](auto, auto) { return any_key(rng); };
  for (std::size_t live : {1, 2, 3, 4, 5, 9}) {
    for (std::size_t k : {std::size_t{8}, std::size_t{64}}) {
      if (live > k) continue;
      SCOPED_TRACE("k=" + std::to_string(k) + " live=" + std::to_string(live));
      std::vector<std::int64_t> sizes(k, 0);
      for (std::size_t i = 0; i < live; ++i) sizes[(i * 7 + 3) % k] = 1000 + std::int64_t(i) * 37;
      check_shape<K, P>(sizes, key);
    }
  }
}

TEST(MultiwayMergeSigned, ManyRunsOfNegativeAndPositiveKeys) {
  std::mt19937_64 rng(test::announce_seed());
  std::uniform_int_distribution<std::int64_t> around_zero(-1000, 1000);
  for (std::size_t k : {5, 8, 16, 64}) {
    SCOPED_TRACE("k=" + std::to_string(k));
    const auto sizes = test::random_sizes(rng, k, 1500);
    check_shape<std::int32_t, std::uint64_t>(sizes, [&](auto, auto) { return std::int32_t(around_zero(rng)); });
    check_shape<std::int64_t, std::uint32_t>(sizes, [&](auto, auto) { return around_zero(rng) << 40; });
    check_shape<std::int64_t, std::uint64_t>(sizes, [&](std::size_t r, std::int64_t) {
      return r % 3 == 0 ? std::numeric_limits<std::int64_t>::min() : around_zero(rng);
    });
  }
}

TEST(MultiwayMergeSigned, NegativeKeysSortBeforePositiveOnes) {
  // Host memory holds signed keys as the user wrote them: the merge must use signed order.
  const std::vector<std::int64_t> sizes(6, 3000);
  auto key32 = [](std::size_t r, std::int64_t j) { return std::int32_t((j - 1500) * 1000 + std::int64_t(r)); };
  auto key64 = [](std::size_t r, std::int64_t j) { return std::int64_t((j - 1500) << 40) + std::int64_t(r); };
  check_shape<std::int32_t, std::uint32_t>(sizes, key32);
  check_shape<std::int64_t, std::uint64_t>(sizes, key64);
  check_shape<std::int64_t, std::uint32_t>(sizes, [](auto, auto) { return std::numeric_limits<std::int64_t>::min(); });
}

// ---------------------------------------------------------------- DType dispatch

TEST(MultiwayMergeDispatch, MergesEachKeyTypeAndPayloadWidth) {
  const std::vector<std::int32_t> a{-5, 1, 9}, b{-7, 1, 2, 30};
  const std::vector<std::uint64_t> pa{10, 11, 12}, pb{20, 21, 22, 23};
  const std::vector<RawRun> runs{{a.data(), pa.data(), 3}, {b.data(), pb.data(), 4}};
  std::vector<std::int32_t> keys(7);
  std::vector<std::uint64_t> payloads(7);
  multiway_merge(DType::Int32, 8, runs, keys.data(), payloads.data());
  EXPECT_EQ(keys, (std::vector<std::int32_t>{-7, -5, 1, 1, 2, 9, 30}));
  EXPECT_EQ(payloads[0], 20u);
  EXPECT_EQ(payloads[1], 10u);
  EXPECT_EQ(payloads[6], 23u);

  // Read as uint32, negative keys order after every small positive one (runs sorted that way).
  const std::vector<std::int32_t> ua{1, 9, -5}, ub{1, 2, 30, -7};
  const std::vector<RawRun> unsigned_runs{{ua.data(), nullptr, 3}, {ub.data(), nullptr, 4}};
  multiway_merge(DType::UInt32, 0, unsigned_runs, keys.data(), nullptr);
  EXPECT_EQ(keys, (std::vector<std::int32_t>{1, 1, 2, 9, 30, -7, -5}));
}

TEST(MultiwayMergeDispatch, FourBytePayloadsAndEightByteKeys) {
  const std::vector<std::uint64_t> a{1ull << 40, 3ull << 40}, b{2ull << 40};
  const std::vector<std::uint32_t> pa{1, 3}, pb{2};
  const std::vector<RawRun> runs{{a.data(), pa.data(), 2}, {b.data(), pb.data(), 1}};
  std::vector<std::uint64_t> keys(3);
  std::vector<std::uint32_t> payloads(3);
  multiway_merge(DType::UInt64, 4, runs, keys.data(), payloads.data());
  EXPECT_EQ(keys, (std::vector<std::uint64_t>{1ull << 40, 2ull << 40, 3ull << 40}));
  EXPECT_EQ(payloads, (std::vector<std::uint32_t>{1, 2, 3}));
}

TEST(MultiwayMergeDispatch, RejectsFloatKeysAndOddPayloadWidths) {
  const std::vector<RawRun> runs(2);
  EXPECT_THROW(multiway_merge(DType::Float32, 4, runs, nullptr, nullptr), Error);
  EXPECT_THROW(multiway_merge(DType::Int64, 2, runs, nullptr, nullptr), Error);
}

}  // namespace
}  // namespace mgjoin::host_merge
