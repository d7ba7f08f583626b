// The sort phase over R and S in one pipeline (S's first chunkset arrives while R's last one is sorted):
// relations of different sizes and payload widths (8-byte R payloads, 4-byte S payloads), in-core and
// with a memory limit that cuts each into several chunksets (k_R != k_S), both strategies, g = 1..4.
// Every run of each relation must hold its chunkset's (key, payload) pairs sorted by key.
#include "engine/src/sort/local_sort.hpp"
#include "engine/src/sort/merge_sort.hpp"
#include "engine/src/sort/planner.hpp"
#include "engine/src/sort/sort_phase.hpp"
#include "p2p/peer_access.hpp"

#include "alloc/stack_allocator.hpp"
#include "alloc/stack_set.hpp"
#include "common/gpu.hpp"
#include "common/seed.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <memory>
#include <numeric>
#include <random>
#include <vector>

namespace mgjoin::sort {
namespace {

/// A relation of int64 keys (random, with a hot key on every third row) and payloads of type P = row index.
template <class P>
struct TestRelation {
  std::vector<std::int64_t> keys;
  std::vector<P> payload;
  std::vector<std::int64_t> keys_before;
  std::vector<P> payload_before;

  TestRelation(std::size_t n, std::uint64_t seed) : keys(n), payload(n) {
    std::mt19937_64 rng(seed);
    for (std::size_t i = 0; i < n; ++i) keys[i] = i % 3 == 0 ? -7 : static_cast<std::int64_t>(rng());
    std::iota(payload.begin(), payload.end(), P{0});
    keys_before = keys;
    payload_before = payload;
  }

  RelationView view() {
    const auto n = static_cast<std::int64_t>(keys.size());
    return {{keys.data(), n, DType::Int64},
            MutableColumnView{payload.data(), n, sizeof(P) == 4 ? DType::UInt32 : DType::UInt64}};
  }

  /// Runs tile the relation in order; each is sorted and holds its chunkset's pairs.
  void expect_sorted_runs(const SortPhaseResult& result, int chunksets) const {
    ASSERT_EQ(static_cast<int>(result.runs.size()), chunksets);
    std::int64_t next = 0;
    for (const auto& run : result.runs) {
      ASSERT_EQ(run.begin, next);
      next = run.end;
      std::vector<std::pair<std::int64_t, P>> expected, got;
      for (auto i = run.begin; i < run.end; ++i) {
        expected.emplace_back(keys_before[i], payload_before[i]);
        got.emplace_back(keys[i], payload[i]);
      }
      ASSERT_TRUE(std::is_sorted(keys.begin() + run.begin, keys.begin() + run.end)) << "run " << run.begin;
      std::sort(expected.begin(), expected.end());
      std::sort(got.begin(), got.end());
      ASSERT_EQ(got, expected) << "run " << run.begin;
    }
    EXPECT_EQ(next, static_cast<std::int64_t>(keys.size()));
  }
};

void run_two_relations(int g, SortStrategy strategy, bool several_chunksets) {
  MGJOIN_REQUIRE_GPUS(g);
  SCOPED_TRACE(::testing::Message() << "g=" << g << " merge=" << (strategy == SortStrategy::Merge)
                                    << " several=" << several_chunksets);
  const std::uint64_t seed = test::announce_seed();
  TestRelation<std::uint64_t> r(90'001, seed);
  TestRelation<std::uint32_t> s(200'003, seed + 1);
  const RelationView rels[] = {r.view(), s.view()};

  std::vector<int> devices(g);
  std::iota(devices.begin(), devices.end(), 0);
  std::uint64_t limit = 0;
  if (several_chunksets) {
    const TupleLayout widest{8, 8, true};
    const std::int64_t chunk = std::max<std::int64_t>(kMinChunk, 30'000 / g);
    limit = device_bytes_for_chunk(chunk, widest.tuple_bytes(), local_sort_temp_bytes(widest, chunk + chunk / 100 + 1));
  }
  const SortPlan plan = plan_sort_on_devices(rels[0], rels[1], devices, limit);
  const int k_r = chunksets_for(90'001, plan), k_s = chunksets_for(200'003, plan);
  if (several_chunksets) {
    EXPECT_GE(k_r, 2);
    EXPECT_GT(k_s, k_r);
  }

  alloc::StackSet<alloc::DeviceStackAllocator> stacks;
  for (const int d : devices) stacks.add(d, plan.device_bytes);
  p2p::PeerAccess peers(devices);
  std::vector<PhaseStat> stats;
  const auto results = sort_phase(rels, plan, devices, stacks.view(), strategy, Exchange::CopyEngines, nullptr, stats);
  ASSERT_EQ(results.size(), 2u);
  r.expect_sorted_runs(results[0], k_r);
  s.expect_sorted_runs(results[1], k_s);
}

class TwoRelationSortPhase : public ::testing::TestWithParam<int> {};

TEST_P(TwoRelationSortPhase, RadixInCoreAndSeveralChunksets) {
  run_two_relations(GetParam(), SortStrategy::Radix, false);
  run_two_relations(GetParam(), SortStrategy::Radix, true);
}

TEST_P(TwoRelationSortPhase, MergeInCoreAndSeveralChunksets) {
  if (!merge_sort_supported(GetParam())) GTEST_SKIP() << "the merge strategy needs 2^h GPUs";
  run_two_relations(GetParam(), SortStrategy::Merge, false);
  run_two_relations(GetParam(), SortStrategy::Merge, true);
}

INSTANTIATE_TEST_SUITE_P(Gpus, TwoRelationSortPhase, ::testing::Values(1, 2, 3, 4));

}  // namespace
}  // namespace mgjoin::sort
