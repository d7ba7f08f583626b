#pragma once
// Calls a per-thread merge kernel (tree_merge, simd_merge) directly on Runs, so that every case reaches
// the kernel under test whatever the OpenMP thread count, and checks it against the sequential reference.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <random>
#include <utility>
#include <vector>

#include "host_merge/detail/key_loser_tree.hpp"
#include "host_merge/detail/streaming_store.hpp"
#include "host_merge/run_fixtures.hpp"

namespace mgjoin::test {

/// Cursors over the non-empty runs (the kernels take non-empty runs only).
template <class K, class P>
std::vector<host_merge::detail::RunCursor<K, P>> cursors_of(Runs<K, P>& runs) {
  std::vector<host_merge::detail::RunCursor<K, P>> cursors;
  for (std::size_t r = 0; r < runs.keys.size(); ++r) {
    if (runs.keys[r].empty()) continue;
    auto& keys = runs.keys[r];
    cursors.push_back({keys.data(), runs.payloads[r].data(), keys.data() + keys.size()});
  }
  return cursors;
}

/// Runs kernel(cursors, m, out_keys, out_payloads, n) over all tuples of `runs` and checks keys sorted,
/// the (key, payload) multiset equal to the reference (payloads are unique ids unless a test says
/// otherwise, so each travelled with its own key) and every run used up.
template <class K, class P, class Kernel>
void expect_kernel_merged(Runs<K, P> runs, Kernel kernel) {
  auto cursors = cursors_of(runs);
  ASSERT_GE(cursors.size(), 2u) << "the kernels take at least two non-empty runs";
  const auto n = static_cast<std::size_t>(runs.total());
  std::vector<K> keys(n);
  std::vector<P> payloads(n);
  kernel(cursors.data(), static_cast<int>(cursors.size()), keys.data(), payloads.data(), static_cast<std::int64_t>(n));
  host_merge::detail::finish_output();
  ASSERT_TRUE(std::is_sorted(keys.begin(), keys.end()));
  std::vector<std::pair<K, P>> got;
  for (std::size_t i = 0; i < n; ++i) got.emplace_back(keys[i], payloads[i]);
  std::sort(got.begin(), got.end());
  EXPECT_EQ(got, reference_merge(runs));
  for (const auto& c : cursors) EXPECT_EQ(c.key, c.end) << "a run was not used up";
}

/// `total` tuples spread over k runs of random sizes (some may be empty).
inline std::vector<std::int64_t> sizes_summing_to(std::mt19937_64& rng, std::size_t k, std::int64_t total) {
  std::vector<std::int64_t> cuts{0, total};
  std::uniform_int_distribution<std::int64_t> at(0, total);
  for (std::size_t i = 1; i < k; ++i) cuts.push_back(at(rng));
  std::sort(cuts.begin(), cuts.end());
  std::vector<std::int64_t> sizes;
  for (std::size_t i = 0; i + 1 < cuts.size(); ++i) sizes.push_back(cuts[i + 1] - cuts[i]);
  return sizes;
}

}  // namespace mgjoin::test
