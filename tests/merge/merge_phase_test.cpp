// The merge phase (engine/src/merge_phase.cpp): k sorted runs of a relation merged and written back
// in place, keys with their payloads; buffers kept between calls.
#include "engine/src/flows/paper/merge_phase.hpp"

#include "common/seed.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <random>
#include <utility>
#include <vector>

namespace mgjoin::detail {
namespace {

/// Cuts n rows into runs at the given lengths and sorts each run (key, payload) by key.
template <class K, class P>
std::vector<sort::RowRange> make_runs(std::vector<K>& keys, std::vector<P>& payloads, const std::vector<std::int64_t>& lengths) {
  std::vector<sort::RowRange> runs;
  std::int64_t begin = 0;
  for (const auto len : lengths) {
    std::vector<std::pair<K, P>> run;
    for (std::int64_t i = begin; i < begin + len; ++i) run.emplace_back(keys[i], payloads[i]);
    std::sort(run.begin(), run.end());
    for (std::int64_t i = 0; i < len; ++i) std::tie(keys[begin + i], payloads[begin + i]) = run[i];
    runs.push_back({begin, begin + len});
    begin += len;
  }
  return runs;
}

template <class K, class P>
std::vector<std::pair<K, P>> sorted_pairs(const std::vector<K>& keys, const std::vector<P>& payloads) {
  std::vector<std::pair<K, P>> v;
  for (std::size_t i = 0; i < keys.size(); ++i) v.emplace_back(keys[i], payloads[i]);
  std::sort(v.begin(), v.end());
  return v;
}

TEST(MergePhase, MergesUnequalRunsInPlaceWithTheirPayloads) {
  std::mt19937_64 rng(mgjoin::test::announce_seed());
  for (const auto& lengths : std::vector<std::vector<std::int64_t>>{
           {1000, 1}, {0, 500, 0, 7000}, {3000, 3000, 3000}, {1, 1, 1, 1, 1, 1, 1, 1}, {100000, 3, 65536, 12345}}) {
    std::int64_t n = 0;
    for (auto l : lengths) n += l;
    std::vector<std::int64_t> keys(n);
    std::vector<std::uint64_t> payloads(n);
    for (std::int64_t i = 0; i < n; ++i) {
      keys[i] = static_cast<std::int64_t>(rng() % 2000) - 1000;  // duplicates and negatives
      payloads[i] = static_cast<std::uint64_t>(i);
    }
    const auto runs = make_runs(keys, payloads, lengths);
    const auto expected = sorted_pairs(keys, payloads);
    RelationView rel{{keys.data(), n, DType::Int64}, MutableColumnView{payloads.data(), n, DType::UInt64}};
    MergeBuffers buffers;
    merge_phase(rel, runs, buffers);
    EXPECT_TRUE(std::is_sorted(keys.begin(), keys.end())) << "runs " << lengths.size();
    EXPECT_EQ(sorted_pairs(keys, payloads), expected);
  }
}

TEST(MergePhase, KeyOnlyRelationAndReusedBuffers) {
  std::mt19937_64 rng(mgjoin::test::announce_seed());
  MergeBuffers buffers;
  for (const std::int64_t n : {5000, 20000, 100}) {  // grows, then reuses the larger buffer
    std::vector<std::uint32_t> keys(n);
    for (auto& k : keys) k = static_cast<std::uint32_t>(rng());
    std::vector<std::uint32_t> none(n);
    auto runs = make_runs(keys, none, {n / 3, n / 3, n - 2 * (n / 3)});
    auto expected = keys;
    std::sort(expected.begin(), expected.end());
    RelationView rel{{keys.data(), n, DType::UInt32}, std::nullopt};
    merge_phase(rel, runs, buffers);
    EXPECT_EQ(keys, expected);
  }
  EXPECT_GE(buffers.keys.size(), 20000);
}

TEST(MergePhase, OneRunIsLeftAlone) {
  std::vector<std::uint64_t> keys{5, 1, 3};  // not sorted: a single run is taken as already sorted
  RelationView rel{{keys.data(), 3, DType::UInt64}, std::nullopt};
  MergeBuffers buffers;
  const std::vector<sort::RowRange> one{{0, 3}};
  merge_phase(rel, one, buffers);
  EXPECT_EQ(keys, (std::vector<std::uint64_t>{5, 1, 3}));
  EXPECT_EQ(buffers.bytes(), 0u);
}

}  // namespace
}  // namespace mgjoin::detail
