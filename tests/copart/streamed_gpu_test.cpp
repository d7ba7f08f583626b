// The streamed co-partitioned variant on the GPUs (X resident in sorted runs, Y streamed in rounds)
// against a hash-multimap reference that shares no code with it. Two levels:
// - StreamedFlow: plans forced into many rounds and several runs at small sizes (force_streamed), run
//   on stacks of this test's own: random and adversarial inputs (flow_check.hpp), either side resident,
//   count and materialized, g = 1 and 2, copy engines and NCCL;
// - StreamedPlanner: through the public API, a GPU memory limit that holds the smaller relation but not
//   both makes the planner stream, and the answer is still the reference's.
#include "engine/src/copart/copart_join.hpp"


#include <mgjoin/engine.hpp>
#include <mgjoin/join.hpp>

#include "common/engines.hpp"
#include "common/gpu.hpp"
#include "common/seed.hpp"
#include "copart/copart_test_util.hpp"
#include "copart/flow_check.hpp"
#include "e2e/e2e_util.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <limits>
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
  OwnGpus gpus(g, r, s);
  const RelationView rv = gpus.r(), sv = gpus.s();
  const copart::ScratchSizes scratch = copart::device_scratch_sizes();
  CopartPlan plan = copart::plan_copart(rv, sv, g, output, OwnGpus::kDeviceBytes, scratch, PayloadFlow::Carry);
  copart::force_streamed(plan, rv, sv, shape.chunk_rows, shape.runs, output, scratch);
  EXPECT_TRUE(plan.fits) << plan.reason;
  JoinResult result;
  copart::run_copart(rv, sv, plan, output, gpus.context(copart::pinned_bytes_needed(plan, output), exchange), result);
  return result;
}

/// Count and materialized output of the streamed variant against the reference, for the shapes given.
void check_streamed(const Relation& r, const Relation& s, const std::string& name,
                    std::vector<StreamShape> shapes = {{4096, 3}, {50'000, 1}}) {
  check_flow(r, s, name, shapes, [&](int g, OutputMode output, StreamShape shape) { return run_streamed(r, s, g, output, shape); },
             [](StreamShape shape) {
               return "chunks of " + std::to_string(shape.chunk_rows) + ", " + std::to_string(shape.runs) + " runs";
             });
}

class StreamedFlow : public ::testing::Test {
 protected:
  void SetUp() override { MGJOIN_REQUIRE_GPUS(1); }
};

TEST_F(StreamedFlow, RandomKeysEitherSideResident) {
  std::mt19937_64 rng(announce_seed());
  // Few distinct keys: every probe row matches several resident rows, across runs and rounds.
  const auto small = uniform_keys<std::int64_t>(rng, 30'001, -40'000, 40'000);
  const auto large = uniform_keys<std::int64_t>(rng, 200'003, -40'000, 40'000);
  check_streamed(relation_of(small, 8, 0), relation_of(large, 8, 1u << 30), "R resident");
  check_streamed(relation_of(large, 8, 0), relation_of(small, 8, 1u << 30), "S resident");
  const auto r32 = uniform_keys<std::uint32_t>(rng, 10'007, 0, 5'000), s32 = uniform_keys<std::uint32_t>(rng, 70'001, 0, 6'000);
  check_streamed(relation_of(r32, 0, 0), relation_of(s32, 8, 1u << 30), "4-byte keys, R without payload");
}

TEST_F(StreamedFlow, AdversarialInputs) {
  std::mt19937_64 rng(announce_seed());
  for (const FlowInput& in : adversarial_inputs(rng))
    if (in.small)
      check_streamed(in.r, in.s, in.name, {{1000, 2}});
    else
      check_streamed(in.r, in.s, in.name);
}

TEST_F(StreamedFlow, NcclExchange) {
  MGJOIN_REQUIRE_GPUS(2);
  std::mt19937_64 rng(announce_seed());
  const Relation r = relation_of(uniform_keys<std::uint64_t>(rng, 20'000, 0, 50'000), 8, 0);
  const Relation s = relation_of(uniform_keys<std::uint64_t>(rng, 150'000, 0, 50'000), 8, 1u << 30);
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
      check_planned(r, s, g, c.limit, c.output, "streamed: R resident");
    }
}

}  // namespace
}  // namespace mgjoin::test
