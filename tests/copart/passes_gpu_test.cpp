// The co-partitioned flow in passes on the GPUs (pass p joins the keys of range p, each pass reading R
// and S whole) against a hash-multimap reference that shares no code with it. Two levels:
// - PassesFlow: plans forced into 2, 3 and 4 passes at small sizes, each pass in core or streamed in
//   many rounds and runs, run on stacks of this test's own: random inputs, and adversarial ones (keys
//   sharing their top bits, sorted R and reverse S, few distinct keys with many rows on the ranges'
//   bounds, signed extremes, empty and one-row R beside a spread S, a key holding half of S, which stays
//   in one pass; inputs whose one key is heavier than a pass are refused, saying why), count and
//   materialized, g = 2 to min(4, GPUs) (one GPU has no flow in passes), copy engines and NCCL;
// - PassesPlanner: through the public API, a GPU memory limit that holds part of the smaller relation
//   beside the stream but not all of it makes the planner run passes (the limit found by the planner's
//   own arithmetic), and the answer is still the reference's.
#include "engine/src/flows/copart/passes.hpp"

#include <mgjoin/engine.hpp>
#include <mgjoin/join.hpp>

#include "common/engines.hpp"
#include "common/env.hpp"
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
#include <random>
#include <string>
#include <vector>

namespace mgjoin::test {
namespace {

struct PassShape {
  int passes;
  std::int64_t chunk_rows = 0;  ///< each pass streamed in chunks of this many rows a GPU (0: as planned)
  int runs = 1;
  bool beside_sort = false;
  bool spill = true;  ///< streamed: the first pass spills X's rows beyond its range to the host
};

std::string describe(const PassShape& shape) {
  return std::to_string(shape.passes) + " passes" +
         (shape.chunk_rows ? ", streamed in chunks of " + std::to_string(shape.chunk_rows) + ", " + std::to_string(shape.runs) +
                                 " runs" + (shape.beside_sort ? ", beside the sort" : "") +
                                 (shape.spill ? ", the first spilling X" : ", X read whole by every pass")
                           : "");
}

/// The plan in `passes` passes for R and S on g GPUs of OwnGpus' memory.
copart::PassPlan plan_in_passes(const RelationView& rv, const RelationView& sv, int g, OutputMode output, int passes) {
  return copart::plan_passes(copart::sample_keys(rv.key), copart::sample_keys(sv.key), rv, sv, g, output, OwnGpus::kDeviceBytes,
                             copart::device_scratch_sizes(), passes);
}

/// Joins R and S in passes shaped as `shape` on GPUs 0..g-1, on `gpus`' stacks.
JoinResult run_in_passes(OwnGpus& gpus, int g, OutputMode output, const PassShape& shape,
                         Exchange exchange = Exchange::CopyEngines) {
  const RelationView rv = gpus.r(), sv = gpus.s();
  const copart::KeySample rs = copart::sample_keys(rv.key), ss = copart::sample_keys(sv.key);
  const copart::ScratchSizes scratch = copart::device_scratch_sizes();
  // (Planned in OwnGpus' 2 GiB, these small inputs' passes are in core, and so without a spill.)
  copart::PassPlan plan = copart::plan_passes(rs, ss, rv, sv, g, output, OwnGpus::kDeviceBytes, scratch, shape.passes);
  EXPECT_TRUE(plan.fits) << plan.reason;
  EXPECT_EQ(plan.count(), shape.passes) << plan.reason;
  if (shape.chunk_rows) {
    for (copart::CopartPlan& pass : plan.passes)
      copart::force_streamed(pass, rv, sv, shape.chunk_rows, shape.runs, output, scratch, shape.beside_sort);
    if (shape.spill) copart::spill_first_pass(plan, rs, ss, rv, sv, output, scratch);
    // Where X has rows beyond the first range (not an empty or one-row R), the first pass spills them.
    EXPECT_EQ(plan.spill_rows > 0, shape.spill && (plan.spill_side == copart::Side::R ? rv : sv).size() > 1) << plan.reason;
  }
  for (const copart::CopartPlan& pass : plan.passes) {
    EXPECT_TRUE(pass.fits) << pass.reason;
    plan.pinned_bytes = std::max(plan.pinned_bytes, copart::pinned_bytes_needed(pass, output));
  }
  JoinResult result;
  copart::run_passes(rv, sv, plan, output, gpus.context(plan.pinned_bytes, exchange), result);
  const std::string last = "pass" + std::to_string(plan.count()) + ".copart.";
  EXPECT_TRUE(has_phase(result, shape.chunk_rows ? last + "stream" : last + "join"))
      << "the last pass reports its phases under its name";
  if (plan.spill_rows) {
    // The spill ran: the first pass moved all of X in and its rows above the first range out, the second
    // read those back (and nothing else of X).
    const bool r_spills = plan.spill_side == copart::Side::R;
    const RelationView& x = r_spills ? rv : sv;
    const copart::Widths& w = r_spills ? plan.passes[0].r : plan.passes[0].s;
    std::uint64_t above = 0;
    for (std::int64_t row = 0; row < x.size(); ++row) above += copart::ordered_key(x.key, row) > plan.passes[0].partitions.highest;
    const auto pcie = [&](const std::string& name) {
      for (const PhaseStat& p : result.phases)
        if (p.name == name) return p.bytes_pcie;
      ADD_FAILURE() << "no phase " << name;
      return std::uint64_t{0};
    };
    const std::uint64_t width = static_cast<std::uint64_t>(w.key_bytes + w.payload_bytes);
    EXPECT_GT(above, 0u);
    EXPECT_EQ(pcie("pass1.copart.resident"), (static_cast<std::uint64_t>(x.size()) + above) * width);
    if (plan.passes[1].streamed) {
      EXPECT_EQ(pcie("pass2.copart.resident"), above * width) << "the second pass reads X from the spill";
    }
  }
  return result;
}

/// For g = 2..min(4, GPUs) and every shape (shapes_to_run): the passes must count and materialize what
/// the reference joins. One OwnGpus per g serves every run, and its stacks must be empty after each.
void check_passes(const Relation& r, const Relation& s, const std::string& name,
                  std::vector<PassShape> shapes = {{2}, {2, 4096, 3}, {3, 50'000, 1}, {4, 8192, 2, true}, {2, 8192, 2, false, false}},
                  int rotation = kEveryShape) {
  const std::vector<Tuple> expected = reference_tuples(r, s);
  for (int g = 2; g <= std::min(4, gpu_count()); ++g) {
    OwnGpus gpus(g, r, s);
    for (const PassShape& shape : shapes_to_run(shapes, rotation)) {
      SCOPED_TRACE(name + ", g = " + std::to_string(g) + ", " + describe(shape));
      EXPECT_EQ(run_in_passes(gpus, g, OutputMode::Count, shape).count, expected.size());
      EXPECT_TRUE(gpus.stacks_empty()) << "after the count";
      const JoinResult m = run_in_passes(gpus, g, OutputMode::Materialize, shape);
      EXPECT_TRUE(gpus.stacks_empty()) << "after the materialized join";
      ASSERT_EQ(m.key.size(), static_cast<std::int64_t>(expected.size()));
      EXPECT_TRUE(result_tuples(m) == expected) << "the output tuples differ from the reference";
    }
  }
}

class PassesFlow : public ::testing::Test {
 protected:
  // OwnGpus takes 2 GiB a GPU, and NCCL memory of its own: the in-core suites' shared engines (each 80% of
  // what was free) would leave too little.
  static void SetUpTestSuite() { shared_engines().release(); }
  void SetUp() override { MGJOIN_REQUIRE_GPUS(2); }
};

TEST_F(PassesFlow, RandomKeysEitherSideResident) {
  std::mt19937_64 rng(announce_seed());
  for (const FlowInput& in : random_inputs(rng)) check_passes(in.r, in.s, in.name);
}

TEST_F(PassesFlow, AdversarialInputs) {
  std::mt19937_64 rng(announce_seed());
  std::vector<FlowInput> inputs = adversarial_inputs(rng);
  // Few distinct keys, many rows each: splitters fall on keys whose rows all go to one pass.
  std::vector<std::uint64_t> few_r, few_s;
  std::uniform_int_distribution<int> pick(0, 59);
  for (int i = 0; i < 12'001; ++i) few_r.push_back(static_cast<std::uint64_t>(pick(rng)) * 1000);
  for (int i = 0; i < 40'003; ++i) few_s.push_back(static_cast<std::uint64_t>(pick(rng)) * 1000);
  inputs.push_back({"60 keys, many rows on the ranges' bounds", relation_of(few_r, 8, 0), relation_of(few_s, 8, 1u << 30)});
  // Signed extremes among many keys: the first and last pass reach the ordered form's ends.
  using L = std::numeric_limits<std::int64_t>;
  std::vector<std::int64_t> ext_r, ext_s;
  for (int i = 0; i < 5'001; ++i) ext_r.push_back(i % 2 ? L::min() + i % 1000 : L::max() - i % 1000);
  for (int i = 0; i < 20'001; ++i) ext_s.push_back(i % 3 == 0 ? L::min() + i % 1500 : i % 3 == 1 ? L::max() - i % 1500 : i % 700 - 350);
  inputs.push_back({"signed extremes among many keys", relation_of(ext_r, 8, 0), relation_of(ext_s, 8, 1u << 30)});
  const std::vector<std::uint64_t> none, one{77};
  const auto spread = uniform_keys<std::uint64_t>(rng, 30'001, 0, 60'000);
  inputs.push_back({"empty R, spread S", relation_of(none, 8, 0), relation_of(spread, 8, 1u << 30), true});
  inputs.push_back({"one-row R, spread S", relation_of(one, 8, 0), relation_of(spread, 8, 1u << 30), true});
  int run = 0;
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    FlowInput& in = inputs[i];
    std::vector<PassShape> shapes = in.small ? std::vector<PassShape>{{2}, {2, 1000, 2, i % 2 == 1}}
                                             : std::vector<PassShape>{{2}, {2, 4096, 3}, {3, 50'000, 1}, {4, 8192, 2, true}, {2, 8192, 2, false, false}};
    // A key heavier than a pass would span two: such a count of passes is refused up front, saying so
    // (the planner buckets such inputs); a key that fits one pass stays in it.
    std::erase_if(shapes, [&](const PassShape& shape) {
      const copart::PassPlan plan = plan_in_passes(in.r.view(), in.s.view(), 2, OutputMode::Count, shape.passes);
      if (plan.fits) return false;
      EXPECT_NE(plan.reason.find("would span two passes"), std::string::npos) << in.name << ": " << plan.reason;
      return true;
    });
    if (shapes.empty()) continue;
    ++run;
    check_passes(in.r, in.s, in.name, shapes, in.small ? kEveryShape : static_cast<int>(i));
  }
  // Refused: the inputs of one key (all keys equal; 9,999 equal keys beside an empty or one-row side) and
  // the seven signed extremes (each heavier than a pass).
  EXPECT_GE(run, 7) << "most adversarial inputs run in passes";
}

TEST_F(PassesFlow, NcclExchange) {
  std::mt19937_64 rng(announce_seed());
  const Relation r = relation_of(uniform_keys<std::uint64_t>(rng, 20'000, 0, 50'000), 8, 0);
  const Relation s = relation_of(uniform_keys<std::uint64_t>(rng, 150'000, 0, 50'000), 8, 1u << 30);
  const std::vector<Tuple> expected = reference_tuples(r, s);
  OwnGpus gpus(2, r, s);  // one set of NCCL communicators for every pass and join, as an engine keeps them
  EXPECT_TRUE(result_tuples(run_in_passes(gpus, 2, OutputMode::Materialize, {2, 8192, 2}, Exchange::Nccl)) == expected);
  EXPECT_EQ(run_in_passes(gpus, 2, OutputMode::Count, {3, 8192, 2}, Exchange::Nccl).count, expected.size());
  EXPECT_TRUE(result_tuples(run_in_passes(gpus, 2, OutputMode::Materialize, {2, 8192, 2, false, false}, Exchange::Nccl)) ==
              expected);
  EXPECT_TRUE(result_tuples(run_in_passes(gpus, 2, OutputMode::Materialize, {2}, Exchange::Nccl)) == expected);
  EXPECT_TRUE(gpus.stacks_empty());
}

/// The smallest GPU memory (in 16 MiB steps from 64 MiB) at which R and S do not fit the co-partitioned
/// flow in core or streamed but do in two passes, by the planner's own arithmetic on what the engine plans
/// with (its samples, CUB's scratch sizes, the limit itself); 0 if none below 4 GiB.
std::uint64_t two_pass_limit(Relation& r, Relation& s, int g, OutputMode output) {
  const RelationView rv = r.view(), sv = s.view();
  const copart::KeySample rs = copart::sample_keys(rv.key), ss = copart::sample_keys(sv.key);
  const copart::ScratchSizes scratch = copart::device_scratch_sizes();
  for (std::uint64_t mib = 64; mib <= 4096; mib += 16) {
    const std::uint64_t bytes = mib << 20;
    if (copart::plan_copart(rs, ss, rv, sv, g, output, bytes, scratch).fits) return 0;
    if (copart::plan_passes(rs, ss, rv, sv, g, output, bytes, scratch, 2).fits) return bytes;
  }
  return 0;
}

TEST(PassesPlanner, AMemoryLimitHoldingPartOfTheSmallerRelationRunsInPasses) {
  MGJOIN_REQUIRE_GPUS(2);
  std::mt19937_64 rng(announce_seed());
  // Two passes taken over the bucketed flow whatever the cost model predicts of this machine's rates
  // (the choice itself is FlowChoice's, on the CPU).
  const ScopedEnv two("MGJOIN_COPART_PASSES", "2");
  // Sizes kept in both tiers: the window where two passes fit but one streamed pass does not needs R
  // large beside the stream's fixed buffers. Quick: the count only (PassesFlow materializes every pass
  // shape, the spill's included, in both tiers).
  for (const OutputMode output : per_tier<std::vector<OutputMode>>({OutputMode::Count}, {OutputMode::Count, OutputMode::Materialize})) {
    const bool materialize = output == OutputMode::Materialize;
    const std::size_t rows = materialize ? 6'000'000 : 8'000'000;
    const auto rk = uniform_keys<std::uint64_t>(rng, rows, 0, 4 * rows), sk = uniform_keys<std::uint64_t>(rng, 3 * rows + 1, 0, 4 * rows);
    Relation r = relation_of(rk, materialize ? 8 : 0, 0), s = relation_of(sk, materialize ? 8 : 0, 1u << 30);
    const ReferenceResult expected = reference_result(r, s, output);
    // Two GPUs, and the most there are up to four (three adds nothing to the window's arithmetic).
    std::vector<int> counts{2};
    if (gpu_count() > 2) counts.push_back(std::min(4, gpu_count()));
    for (const int g : counts) {
      const std::uint64_t limit = two_pass_limit(r, s, g, output);
      SCOPED_TRACE(std::string(materialize ? "materialize" : "count") + ", g = " + std::to_string(g) + ", limit " +
                   std::to_string(limit >> 20) + " MiB");
      ASSERT_GT(limit, 0u) << "no GPU memory limit makes two passes the only co-partitioned plan: choose other sizes";
      check_planned(r, s, g, limit, output, "co-partitioned in 2 passes by key range", expected);
    }
  }
}

}  // namespace
}  // namespace mgjoin::test
