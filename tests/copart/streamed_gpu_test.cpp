// The streamed co-partitioned variant on the GPUs (X resident in sorted runs, Y streamed in rounds)
// against a hash-multimap reference that shares no code with it. Two levels:
// - StreamedFlow: plans forced into many rounds and several runs at small sizes (force_streamed), run
//   on stacks of this test's own: random and adversarial inputs (all keys equal, a hot key, keys sharing
//   their top bits, sorted and reverse, signed extremes, empty and one-row relations, sizes not divisible
//   by g), either side resident, count and materialized, g = 1 and 2, copy engines and NCCL;
// - StreamedPlanner: through the public API, a GPU memory limit that holds the smaller relation but not
//   both makes the planner stream, and the answer is still the reference's.
#include "engine/src/copart/copart_join.hpp"

#include "alloc/stack_allocator.hpp"
#include "alloc/stack_set.hpp"
#include "p2p/nccl_comms.hpp"
#include "p2p/peer_access.hpp"

#include <mgjoin/engine.hpp>
#include <mgjoin/join.hpp>

#include "common/engines.hpp"
#include "common/gpu.hpp"
#include "common/seed.hpp"
#include "e2e/e2e_util.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <functional>
#include <limits>
#include <memory>
#include <numeric>
#include <random>
#include <string>
#include <vector>

namespace mgjoin::test {
namespace {

using copart::CopartPlan;

struct StreamShape {
  std::int64_t chunk_rows;
  int runs;
};

/// Joins R and S with the streamed variant forced to `shape` on GPUs 0..g-1, on stacks of this test's own.
JoinResult run_streamed(const Relation& r, const Relation& s, int g, OutputMode output, StreamShape shape,
                        Exchange exchange = Exchange::CopyEngines) {
  constexpr std::uint64_t kDeviceBytes = 2ull << 30;
  std::vector<int> devices(g);
  std::iota(devices.begin(), devices.end(), 0);
  const p2p::PeerAccess peers(devices);
  alloc::StackSet<alloc::DeviceStackAllocator> device;
  alloc::StackSet<alloc::PinnedStackAllocator> pinned;
  for (const int d : devices) device.add(d, kDeviceBytes);
  Relation rc = copy_of(r), sc = copy_of(s);
  const RelationView rv = rc.view(), sv = sc.view();
  const copart::ScratchSizes scratch = copart::device_scratch_sizes();
  CopartPlan plan = copart::plan_copart(rv, sv, g, output, kDeviceBytes, scratch, PayloadFlow::Carry);
  copart::force_streamed(plan, rv, sv, shape.chunk_rows, shape.runs, output, scratch);
  EXPECT_TRUE(plan.fits) << plan.reason;
  for (int d = 0; d < g; ++d) pinned.add(copart::pinned_bytes_needed(plan, output) + (1u << 20), /*mapped=*/true);
  std::unique_ptr<p2p::NcclComms> comms;
  if (exchange == Exchange::Nccl) comms = std::make_unique<p2p::NcclComms>(devices);
  const copart::CopartContext context{devices, device.view(), pinned.view(), exchange, comms.get()};
  JoinResult result;
  copart::run_copart(rv, sv, plan, output, context, result);
  EXPECT_EQ(std::memcmp(rc.key.data(), r.key.data(), r.key.bytes()), 0) << "the join modified R's keys";
  EXPECT_EQ(std::memcmp(sc.key.data(), s.key.data(), s.key.bytes()), 0) << "the join modified S's keys";
  return result;
}

/// Count and materialized output of the streamed variant against the reference, for the shapes given.
void check_streamed(const Relation& r, const Relation& s, const std::string& name,
                    std::vector<StreamShape> shapes = {{4096, 3}, {50'000, 1}}) {
  const std::vector<Tuple> expected = reference_tuples(r, s);
  for (int g = 1; g <= std::min(2, gpu_count()); ++g)
    for (const StreamShape shape : shapes) {
      SCOPED_TRACE(name + ", g = " + std::to_string(g) + ", chunks of " + std::to_string(shape.chunk_rows) + ", " +
                   std::to_string(shape.runs) + " runs");
      EXPECT_EQ(run_streamed(r, s, g, OutputMode::Count, shape).count, expected.size());
      const JoinResult m = run_streamed(r, s, g, OutputMode::Materialize, shape);
      EXPECT_EQ(m.count, expected.size());
      ASSERT_EQ(m.key.size(), static_cast<std::int64_t>(expected.size()));
      EXPECT_TRUE(result_tuples(m) == expected) << "the output tuples differ from the reference";
    }
}

template <class Key>
std::vector<Key> uniform(std::mt19937_64& rng, std::size_t n, Key lo, Key hi) {
  std::uniform_int_distribution<Key> pick(lo, hi);
  std::vector<Key> k(n);
  for (auto& x : k) x = pick(rng);
  return k;
}

class StreamedFlow : public ::testing::Test {
 protected:
  void SetUp() override { MGJOIN_REQUIRE_GPUS(1); }
};

TEST_F(StreamedFlow, RandomKeysEitherSideResident) {
  std::mt19937_64 rng(announce_seed());
  // Few distinct keys: every probe row matches several resident rows, across runs and rounds.
  const auto small = uniform<std::int64_t>(rng, 30'001, -40'000, 40'000);
  const auto large = uniform<std::int64_t>(rng, 200'003, -40'000, 40'000);
  check_streamed(relation_of(small, 8, 0), relation_of(large, 8, 1u << 30), "R resident");
  check_streamed(relation_of(large, 8, 0), relation_of(small, 8, 1u << 30), "S resident");
  const auto r32 = uniform<std::uint32_t>(rng, 10'007, 0, 5'000), s32 = uniform<std::uint32_t>(rng, 70'001, 0, 6'000);
  check_streamed(relation_of(r32, 0, 0), relation_of(s32, 8, 1u << 30), "4-byte keys, R without payload");
}

TEST_F(StreamedFlow, AllKeysEqualAndAHotKey) {
  std::mt19937_64 rng(announce_seed());
  check_streamed(relation_of(std::vector<std::int64_t>(40, 7), 8, 0),
                 relation_of(std::vector<std::int64_t>(20'000, 7), 8, 1u << 30), "all keys equal");
  auto r = uniform<std::uint64_t>(rng, 5'000, 0, 100'000);
  auto s = uniform<std::uint64_t>(rng, 60'000, 0, 100'000);
  for (std::size_t i = 0; i < r.size(); i += 50) r[i] = 42;  // 100 R rows of the hot key
  for (std::size_t i = 0; i < s.size(); i += 2) s[i] = 42;   // half of S
  check_streamed(relation_of(r, 8, 0), relation_of(s, 8, 1u << 30), "hot key, half of S");
}

TEST_F(StreamedFlow, TopBitsSortedReverseAndExtremes) {
  std::mt19937_64 rng(announce_seed());
  auto top = uniform<std::uint64_t>(rng, 8'000, 0, 3'000);
  auto s_top = uniform<std::uint64_t>(rng, 40'000, 0, 3'000);
  for (auto& k : top) k |= 0xfff0'0000'0000'0000ull;
  for (auto& k : s_top) k |= 0xfff0'0000'0000'0000ull;
  check_streamed(relation_of(top, 8, 0), relation_of(s_top, 8, 1u << 30), "keys sharing their top bits");
  std::vector<std::int32_t> sorted(9'000), reverse(30'000);
  std::iota(sorted.begin(), sorted.end(), -4'500);
  for (std::size_t i = 0; i < reverse.size(); ++i) reverse[i] = 15'000 - static_cast<std::int32_t>(i) / 2;
  check_streamed(relation_of(sorted, 8, 0), relation_of(reverse, 8, 1u << 30), "sorted R, reverse S");
  using L = std::numeric_limits<std::int64_t>;
  std::vector<std::int64_t> ext{L::min(), L::max(), -1, 0, 1, L::min(), L::max()};
  std::vector<std::int64_t> s_ext;
  for (int i = 0; i < 10'000; ++i) s_ext.push_back(ext[i % ext.size()] + (i % 3 == 0 ? 0 : (i % 2 ? 1 : -1)));
  check_streamed(relation_of(ext, 8, 0), relation_of(s_ext, 8, 1u << 30), "signed extremes", {{1000, 2}});
}

TEST_F(StreamedFlow, EmptyAndOneRowRelations) {
  const std::vector<std::uint64_t> none, one{5}, many(9'999, 5);
  check_streamed(relation_of(none, 8, 0), relation_of(many, 8, 0), "empty R", {{1000, 2}});
  check_streamed(relation_of(many, 8, 0), relation_of(none, 8, 0), "empty S", {{1000, 2}});
  check_streamed(relation_of(one, 8, 0), relation_of(many, 8, 0), "one-row R", {{1000, 2}});
  check_streamed(relation_of(many, 8, 0), relation_of(one, 8, 0), "one-row S", {{1000, 2}});
}

TEST_F(StreamedFlow, NcclExchange) {
  MGJOIN_REQUIRE_GPUS(2);
  std::mt19937_64 rng(announce_seed());
  const Relation r = relation_of(uniform<std::uint64_t>(rng, 20'000, 0, 50'000), 8, 0);
  const Relation s = relation_of(uniform<std::uint64_t>(rng, 150'000, 0, 50'000), 8, 1u << 30);
  const std::vector<Tuple> expected = reference_tuples(r, s);
  const JoinResult m = run_streamed(r, s, 2, OutputMode::Materialize, {8192, 2}, Exchange::Nccl);
  EXPECT_TRUE(result_tuples(m) == expected);
  EXPECT_EQ(run_streamed(r, s, 2, OutputMode::Count, {8192, 2}, Exchange::Nccl).count, expected.size());
}

/// R of `r_rows` distinct keys; S of `s_rows` keys, nine in ten of them R's (so about 0.9 |S| matches).
std::pair<Relation, Relation> lookup_join(std::mt19937_64& rng, std::size_t r_rows, std::size_t s_rows, bool payloads) {
  std::vector<std::uint64_t> r(r_rows), s(s_rows);
  for (std::size_t i = 0; i < r_rows; ++i) r[i] = i * 0x9e3779b97f4a7c15ull;
  std::shuffle(r.begin(), r.end(), rng);
  std::uniform_int_distribution<std::size_t> pick(0, r_rows - 1);
  for (std::size_t i = 0; i < s_rows; ++i) s[i] = i % 10 == 9 ? rng() | 1 : r[pick(rng)];
  return {relation_of(r, payloads ? 8 : 0, 0), relation_of(s, payloads ? 8 : 0, 1u << 30)};
}

TEST(StreamedPlanner, AMemoryLimitHoldingOnlyTheSmallerRelationStreams) {
  MGJOIN_REQUIRE_GPUS(1);
  std::mt19937_64 rng(announce_seed());
  struct Case {
    OutputMode output;
    std::size_t s_rows;
    std::uint64_t limit;  ///< below the in-core plan, above the streamed one (printed in the reason)
  };
  for (const Case c : {Case{OutputMode::Count, 6'000'000, 128ull << 20}, Case{OutputMode::Materialize, 12'000'000, 384ull << 20}})
    for (int g = 1; g <= std::min(2, gpu_count()); ++g) {
      const auto [r, s] = lookup_join(rng, 300'000, c.s_rows, c.output == OutputMode::Materialize);
      const std::vector<Tuple> expected = reference_tuples(r, s);
      Relation rc = copy_of(r), sc = copy_of(s);
      JoinOptions options;
      options.output = c.output;
      const JoinResult result = shared_engines().get(g, c.limit).join(rc.view(), sc.view(), options);
      SCOPED_TRACE("g = " + std::to_string(g) + ": " + result.strategy_reason);
      EXPECT_EQ(result.strategy, JoinStrategy::CoPartitioned);
      EXPECT_NE(result.strategy_reason.find("streamed: R resident"), std::string::npos);
      EXPECT_EQ(result.count, expected.size());
      if (c.output == OutputMode::Materialize) {
        EXPECT_TRUE(result_tuples(result) == expected) << "the output tuples differ from the reference";
      }
    }
}

}  // namespace
}  // namespace mgjoin::test
