// The streamed co-partitioned variant on the GPUs (X resident in sorted runs, Y streamed in rounds)
// against a hash-multimap reference that shares no code with it. Two levels:
// - StreamedFlow: plans forced into many rounds and several runs at small sizes (force_streamed), run
//   on stacks of this test's own: random and adversarial inputs (flow_check.hpp), either side resident,
//   count and materialized, g = 1 and 2, copy engines and NCCL, the landings in place of X's sort
//   buffers or beside them;
// - StreamedPlanner: through the public API, a GPU memory limit that holds the smaller relation but not
//   both (found per g by the planner's own arithmetic) makes the planner stream, and the answer is still
//   the reference's.
#include "engine/src/flows/copart/copart_flow.hpp"


#include <mgjoin/engine.hpp>
#include <mgjoin/join.hpp>

#include "common/engines.hpp"
#include "common/gpu.hpp"
#include "common/keys.hpp"
#include "common/reference_join.hpp"
#include "common/relations.hpp"
#include "common/seed.hpp"
#include "common/tier.hpp"
#include "copart/copart_test_util.hpp"
#include "copart/flow_check.hpp"

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
  bool beside_sort = false;  ///< Y's landings beside X's run sort: its first rounds cross while X sorts
};

/// Joins R and S with the streamed variant forced to `shape` on GPUs 0..g-1, on `gpus`' stacks.
JoinResult run_streamed(OwnGpus& gpus, int g, OutputMode output, StreamShape shape, Exchange exchange = Exchange::CopyEngines) {
  const RelationView rv = gpus.r(), sv = gpus.s();
  const copart::ScratchSizes scratch = copart::device_scratch_sizes();
  CopartPlan plan = copart::plan_copart(rv, sv, g, output, OwnGpus::kDeviceBytes, scratch, PayloadFlow::Carry);
  copart::force_streamed(plan, rv, sv, shape.chunk_rows, shape.runs, output, scratch, shape.beside_sort);
  EXPECT_TRUE(plan.fits) << plan.reason;
  JoinResult result;
  copart::run_copart(rv, sv, plan, output, gpus.context(copart::pinned_bytes_needed(plan, output), exchange), result);
  return result;
}

/// run_streamed over copy engines, as check_flow calls it.
JoinResult run_streamed_shape(OwnGpus& gpus, int g, OutputMode output, StreamShape shape) {
  return run_streamed(gpus, g, output, shape);
}

/// Count and materialized output of the streamed variant against the reference, for the shapes given
/// (`rotation`: shapes_to_run's).
void check_streamed(const Relation& r, const Relation& s, const std::string& name,
                    std::vector<StreamShape> shapes = {{4096, 3}, {50'000, 1}, {8192, 2, true}}, int rotation = kEveryShape) {
  check_flow(r, s, name, shapes, run_streamed_shape,
             [](StreamShape shape) {
               return "chunks of " + std::to_string(shape.chunk_rows) + ", " + std::to_string(shape.runs) + " runs" +
                      (shape.beside_sort ? ", beside the sort" : "");
             },
             rotation);
}

class StreamedFlow : public ::testing::Test {
 protected:
  // OwnGpus takes 2 GiB a GPU, and NCCL memory of its own: the in-core suites' shared engines (each 80% of
  // what was free) would leave too little.
  static void SetUpTestSuite() { shared_engines().release(); }
  void SetUp() override { MGJOIN_REQUIRE_GPUS(1); }
};

TEST_F(StreamedFlow, RandomKeysEitherSideResident) {
  std::mt19937_64 rng(announce_seed());
  for (const FlowInput& in : random_inputs(rng)) check_streamed(in.r, in.s, in.name);
}

TEST_F(StreamedFlow, AdversarialInputs) {
  std::mt19937_64 rng(announce_seed());
  // Quick: each input runs the first shape and one other in turn (small inputs: beside the sort or
  // not, alternating); RandomKeysEitherSideResident runs every shape.
  const std::vector<FlowInput> inputs = adversarial_inputs(rng);
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    const FlowInput& in = inputs[i];
    if (in.small) {
      const std::vector<StreamShape> both{{1000, 2}, {1000, 2, true}};
      check_streamed(in.r, in.s, in.name, full_tier() ? both : std::vector<StreamShape>{both[i % 2]});
    } else {
      check_streamed(in.r, in.s, in.name, {{4096, 3}, {50'000, 1}, {8192, 2, true}}, static_cast<int>(i));
    }
  }
}

TEST_F(StreamedFlow, NcclExchange) {
  MGJOIN_REQUIRE_GPUS(2);
  std::mt19937_64 rng(announce_seed());
  const Relation r = relation_of(uniform_keys<std::uint64_t>(rng, 20'000, 0, 50'000), 8, 0);
  const Relation s = relation_of(uniform_keys<std::uint64_t>(rng, 150'000, 0, 50'000), 8, 1u << 30);
  const std::vector<Tuple> expected = reference_tuples(r, s);
  OwnGpus gpus(2, r, s);  // one set of NCCL communicators for the three joins, as an engine keeps them
  const JoinResult m = run_streamed(gpus, 2, OutputMode::Materialize, {8192, 2}, Exchange::Nccl);
  EXPECT_TRUE(result_tuples(m) == expected);
  EXPECT_EQ(run_streamed(gpus, 2, OutputMode::Count, {8192, 2}, Exchange::Nccl).count, expected.size());
  EXPECT_TRUE(result_tuples(run_streamed(gpus, 2, OutputMode::Materialize, {8192, 2, true}, Exchange::Nccl)) == expected);
  EXPECT_TRUE(gpus.stacks_empty());
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

/// The planner's window for R and S on g GPUs: `streamed`, the smallest GPU memory limit (in 16 MiB
/// steps) whose plan fits streamed, and `in_core`, the smallest whose plan fits in core (0: none up to
/// 4 GiB). By the planner's own arithmetic on what the engine plans with: device_bytes is
/// EngineOptions::gpu_memory_limit itself (sort::usable_device_bytes), the scratch sizes are CUB's on
/// this GPU, and the samples are the engine's (sample_keys is deterministic: the same keys, the same
/// plan). Auto keeps such a plan: the cost model has the co-partitioned flow move every byte in once,
/// less than the paper flow moves, and host memory is checked only for buckets.
struct StreamWindow {
  std::uint64_t streamed = 0, in_core = 0;
  bool wide() const { return streamed > 0 && in_core >= streamed + (32ull << 20); }
  std::uint64_t middle() const { return (streamed + (in_core - streamed) / 2) >> 20 << 20; }
};

StreamWindow stream_window(Relation& r, Relation& s, int g, OutputMode output) {
  const RelationView rv = r.view(), sv = s.view();
  const copart::KeySample rs = copart::sample_keys(rv.key), ss = copart::sample_keys(sv.key);
  const copart::ScratchSizes scratch = copart::device_scratch_sizes();
  StreamWindow w;
  for (std::uint64_t bytes = 16ull << 20; bytes <= (4ull << 30) && w.in_core == 0; bytes += 16ull << 20) {
    const CopartPlan plan = copart::plan_copart(rs, ss, rv, sv, g, output, bytes, scratch);
    if (plan.fits && !plan.streamed) w.in_core = bytes;
    if (plan.fits && plan.streamed && w.streamed == 0) w.streamed = bytes;
  }
  return w;
}

TEST(StreamedPlanner, AMemoryLimitHoldingOnlyTheSmallerRelationStreams) {
  MGJOIN_REQUIRE_GPUS(1);
  std::mt19937_64 rng(announce_seed());
  // Sizes with a wide window at g = 1 and 2: in core needs about 1/g of S per GPU, the streamed plan
  // fixed buffers that do not shrink with g (chunks of at least 2^20 rows, landings of g chunks, output
  // windows), so S must be large for the window to stay open on two GPUs. By the planner's arithmetic
  // with sort scratch of 0.4 bytes a row to a tuple's width: count ~[96, 320..448) MiB at g = 1 and
  // [160, 240..304) at g = 2; materialize ~[272, 832..1104) and [416, 544..736).
  struct Case {
    OutputMode output;
    std::size_t s_rows;
  };
  for (const Case c : {Case{OutputMode::Count, 16'000'000}, Case{OutputMode::Materialize, 24'000'000}}) {
    const bool materialize = c.output == OutputMode::Materialize;
    auto [r, s] = lookup_join(rng, 300'000, c.s_rows, materialize);
    // The reference hashes the small R and looks S up row by row: hashing tens of millions of S rows
    // would take most of this test's time.
    const ReferenceResult expected = reference_result(r, s, c.output, IndexOn::R);
    for (int g = 1; g <= std::min(2, gpu_count()); ++g) {
      const StreamWindow w = stream_window(r, s, g, c.output);
      const std::uint64_t limit = w.middle();
      SCOPED_TRACE(std::string(materialize ? "materialize" : "count") + ", |S| " + std::to_string(c.s_rows) + ", g = " +
                   std::to_string(g) + ": streamed from " + std::to_string(w.streamed >> 20) + " MiB, in core from " +
                   std::to_string(w.in_core >> 20) + " MiB, limit " + std::to_string(limit >> 20) + " MiB");
      ASSERT_TRUE(w.wide()) << "no GPU memory limit (32 MiB or more of them) makes the planner stream these sizes: "
                               "choose others";
      Relation rc = copy_of(r), sc = copy_of(s);
      JoinOptions options;
      options.output = c.output;
      const JoinResult result = shared_engines().get(g, limit).join(rc.view(), sc.view(), options);
      SCOPED_TRACE(result.strategy_reason);
      EXPECT_EQ(result.strategy, JoinStrategy::CoPartitioned);
      EXPECT_NE(result.strategy_reason.find("streamed: R resident"), std::string::npos);
      EXPECT_EQ(result.count, expected.count);
      if (materialize) {
        EXPECT_TRUE(result_tuples(result) == expected.tuples) << "the output tuples differ from the reference";
      }
    }
  }
}

}  // namespace
}  // namespace mgjoin::test
