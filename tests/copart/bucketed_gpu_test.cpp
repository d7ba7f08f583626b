// The bucketed co-partitioned flow on the GPUs (pass 1 into pinned buckets, pass 2 joins group after
// group) against a hash-multimap reference that shares no code with it. Two levels:
// - BucketedFlow: plans forced into 2, 3 and many (7, 16) groups at small sizes, run on stacks of this
//   test's own: random and adversarial inputs (flow_check.hpp; the hot key spans groups), count and
//   materialized, g = 1 and 2; the same with resident groups (hybrid: a forced share of the tuples
//   left on the GPUs by pass 1 beside 1, 3 or 7 host groups);
// - BucketedPlanner: through the public API, a GPU memory limit that holds neither relation makes the
//   planner bucket (the limit found by the planner's own arithmetic), also with one key heavier than a
//   group, and the answer is still the reference's; a limit where the planner keeps groups resident,
//   with and without MGJOIN_BUCKET_RESIDENT=off.
#include "engine/src/flows/copart/bucketed.hpp"

#include "alloc/fault_injection.hpp"


#include <mgjoin/engine.hpp>
#include <mgjoin/error.hpp>
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
#include <cstdlib>
#include <limits>
#include <numeric>
#include <random>
#include <string>
#include <vector>

namespace mgjoin::test {
namespace {

/// How pass 2 runs the groups: overlapped (planned so: the test's GPUs have memory to spare), one by
/// one (the plan's choice overridden), or overlap asked of a plan made for the least memory that holds
/// the groups one by one, whose halves hold none in core, so that every group runs alone.
enum class Pass2 { Overlapped, OneByOne, Alone };

struct Shape {
  int groups;  ///< host groups
  Pass2 pass2;
  double resident = 0;  ///< share of the tuples in resident groups (0: none)
};

std::string describe(const Shape& shape) {
  const char* names[] = {"overlapped", "one by one", "alone"};
  return std::to_string(shape.groups) + " groups, " + names[static_cast<int>(shape.pass2)] +
         (shape.resident > 0 ? ", resident share " + std::to_string(shape.resident) : "");
}

/// Joins R and S with the bucketed flow forced to `shape.groups` groups on GPUs 0..g-1, on this test's
/// stacks, pass 2 run as `shape.pass2` says.
JoinResult run_bucketed(OwnGpus& gpus, int g, OutputMode output, const Shape& shape) {
  const RelationView rv = gpus.r(), sv = gpus.s();
  const copart::KeySample rs = copart::sample_keys(rv.key), ss = copart::sample_keys(sv.key);
  const auto plan_for = [&](std::uint64_t bytes) {
    return copart::plan_buckets(rs, ss, rv, sv, g, output, bytes, copart::device_scratch_sizes(), PayloadFlow::Auto, shape.groups,
                                Exchange::CopyEngines, copart::Residency{shape.resident});
  };
  copart::BucketPlan plan = plan_for(OwnGpus::kDeviceBytes);
  if (shape.pass2 == Pass2::Alone)
    for (std::uint64_t mib = 96; mib < (OwnGpus::kDeviceBytes >> 20); mib += 32)
      if (plan = plan_for(mib << 20); plan.fits) break;
  EXPECT_TRUE(plan.fits) << plan.reason;
  EXPECT_EQ(plan.host_groups(), shape.groups);
  EXPECT_EQ(plan.resident, shape.resident > 0 ? g : 0) << plan.reason;
  EXPECT_EQ(plan.overlap, shape.pass2 != Pass2::Alone) << plan.reason;
  if (shape.pass2 == Pass2::OneByOne) plan.overlap = false;
  if (shape.pass2 == Pass2::Alone) {
    plan.overlap = true;
    plan.pinned_bytes = 2 * (plan.group_pinned_bytes + 64);
  }
  JoinResult result;
  copart::run_bucketed(rv, sv, plan, output, PayloadFlow::Auto, gpus.context(plan.pinned_bytes), result);
  EXPECT_TRUE(has_phase(result, "bucket.pass1"));
  EXPECT_EQ(has_phase(result, "bucket.pass2.resident"), shape.resident > 0);
  const char* ran[] = {"bucket.pass2.overlapped", "bucket.pass2.one_by_one", "bucket.pass2.alone"};
  // Overlap asked with every group alone still reports the (empty) overlapped part; no group runs
  // alone when none joins (an empty side).
  const bool any_joins = rv.size() > 0 && sv.size() > 0;
  for (int k = 0; k < 3; ++k) {
    const bool expected = shape.pass2 == Pass2::Alone ? k == 0 || (k == 2 && any_joins) : k == static_cast<int>(shape.pass2);
    EXPECT_EQ(has_phase(result, ran[k]), expected) << ran[k];
  }
  return result;
}

/// Count and materialized output of the bucketed flow against the reference: each group count with
/// pass 2 overlapped and one by one, and the first with every group alone; then resident groups
/// beside one host group (a large share), three and, with many groups asked for, seven (small shares).
/// `rotation`: shapes_to_run's (the quick tier runs the first shape and one other per input).
void check_bucketed(const Relation& r, const Relation& s, const std::string& name, std::vector<int> group_counts = {2, 3, 16},
                    int rotation = kEveryShape) {
  std::vector<Shape> shapes;
  for (const int groups : group_counts) {
    shapes.push_back({groups, Pass2::Overlapped});
    shapes.push_back({groups, Pass2::OneByOne});
  }
  shapes.push_back({group_counts.front(), Pass2::Alone});
  shapes.push_back({1, Pass2::Overlapped, 0.6});
  shapes.push_back({3, Pass2::OneByOne, 0.2});
  if (group_counts.size() > 2) shapes.push_back({7, Pass2::Overlapped, 0.1});
  check_flow(r, s, name, shapes,
             [&](OwnGpus& gpus, int g, OutputMode output, const Shape& shape) { return run_bucketed(gpus, g, output, shape); },
             describe, rotation);
}

class BucketedFlow : public ::testing::Test {
 protected:
  void SetUp() override { MGJOIN_REQUIRE_GPUS(1); }
};

TEST_F(BucketedFlow, RandomKeys) {
  std::mt19937_64 rng(announce_seed());
  // Sanitize: a tenth of the rows over the same key ranges: 16 groups still split them (the splitters come
  // from a sample; the adversarial inputs go down to 1000 rows), each group still joins.
  const auto r = uniform_keys<std::int64_t>(rng, per_tier<std::size_t>(100'001, 100'001, 10'001), -60'000, 60'000);
  const auto s = uniform_keys<std::int64_t>(rng, per_tier<std::size_t>(150'003, 150'003, 15'003), -60'000, 60'000);
  // Quick: 7 host groups drop out of the overlapped and one-by-one runs; 7 groups still run beside
  // resident ones (three group counts asked for), and 2, 3 and 16 host groups in every pass-2 mode.
  check_bucketed(relation_of(r, 8, 0), relation_of(s, 8, 1u << 30), "signed 8-byte keys",
                 per_tier<std::vector<int>>({2, 3, 16}, {2, 3, 7, 16}));
  const auto r32 = uniform_keys<std::uint32_t>(rng, per_tier<std::size_t>(30'007, 30'007, 3'007), 0, 9'000);
  const auto s32 = uniform_keys<std::uint32_t>(rng, per_tier<std::size_t>(70'001, 70'001, 7'001), 0, 9'000);
  // Quick: this input's point is the key width and R's missing payload, which every group count meets
  // alike: 3 groups in every pass-2 mode, alone and beside resident groups.
  check_bucketed(relation_of(r32, 0, 0), relation_of(s32, 8, 1u << 30), "4-byte keys, R without payload",
                 per_tier<std::vector<int>>({3}, {2, 3, 16}));
}

TEST_F(BucketedFlow, AdversarialInputs) {
  std::mt19937_64 rng(announce_seed());
  // The hot key holds half of S: more than one group's share, so it spans groups. Quick: each input runs
  // 3 groups overlapped and one other shape in turn (the hot key 16 groups overlapped); RandomKeys runs
  // every shape.
  const std::vector<FlowInput> inputs = adversarial_inputs(rng);
  for (std::size_t i = 0; i < inputs.size(); ++i)
    check_bucketed(inputs[i].r, inputs[i].s, inputs[i].name, inputs[i].small ? std::vector<int>{3} : std::vector<int>{3, 16},
                   static_cast<int>(i));
}

// A device allocation that fails anywhere in an overlapped pass 2 (a group's flow, the halves, a
// group's output while the next one is being started on the worker thread) ends the join with the
// error and gives every stack back; the next join on the same stacks is right.
TEST_F(BucketedFlow, AFailedAllocationInAnOverlappedPass2LosesNothing) {
  std::mt19937_64 rng(announce_seed());
  const Relation r = relation_of(uniform_keys<std::int64_t>(rng, 60'001, -40'000, 40'000), 8, 0);
  const Relation s = relation_of(uniform_keys<std::int64_t>(rng, 90'007, -40'000, 40'000), 8, 1u << 30);
  const std::uint64_t expected = reference_count(r, s);
  for (int g = 1; g <= std::min(2, gpu_count()); ++g)
    for (const OutputMode output : {OutputMode::Count, OutputMode::Materialize})
      for (const Shape shape : {Shape{4, Pass2::Overlapped}, Shape{2, Pass2::Overlapped, 0.4}}) {
      SCOPED_TRACE("g = " + std::to_string(g) + (output == OutputMode::Count ? ", count, " : ", materialize, ") + describe(shape));
      OwnGpus gpus(g, r, s);
      struct Disarm {
        ~Disarm() { alloc::fault::fail_nth_allocation(0); }
      } disarm;
      alloc::fault::fail_nth_allocation(~0ull);  // count the flow's device allocations
      EXPECT_EQ(run_bucketed(gpus, g, output, shape).count, expected);
      const std::uint64_t allocations = alloc::fault::allocations_counted();
      alloc::fault::fail_nth_allocation(0);
      ASSERT_GT(allocations, 8u);
      // Full: every allocations/24-th. Quick: every allocations/5-th and the last (pass 1's first ones,
      // pass 2's groups and the halves in between, the last group's output at the end).
      for (const std::uint64_t n : fault_points(allocations, 24, 5)) {
        alloc::fault::fail_nth_allocation(n);
        try {
          run_bucketed(gpus, g, output, shape);
          ADD_FAILURE() << "allocation " << n << " of " << allocations << " failed, yet the join succeeded";
        } catch (const OutOfMemory& e) {
          EXPECT_NE(std::string(e.what()).find("injected"), std::string::npos) << e.what();
        }
        alloc::fault::fail_nth_allocation(0);
        EXPECT_TRUE(gpus.stacks_empty()) << "after allocation " << n << " failed";
      }
      EXPECT_EQ(run_bucketed(gpus, g, output, shape).count, expected);
      EXPECT_TRUE(gpus.stacks_empty());
    }
}

/// The smallest GPU memory (in 8 MiB steps from 64 MiB) at which R and S do not fit the co-partitioned
/// flow in core or streamed but the bucket plan with `residency` (the engine's: MGJOIN_BUCKET_RESIDENT)
/// fits and passes `wanted`, by the planner's own arithmetic; 0 if none below 2 GiB.
template <class Wanted>
std::uint64_t first_limit(const Relation& r, const Relation& s, int g, OutputMode output, copart::Residency residency,
                          Wanted wanted) {
  const RelationView rv = const_cast<Relation&>(r).view(), sv = const_cast<Relation&>(s).view();
  const copart::KeySample rs = copart::sample_keys(rv.key), ss = copart::sample_keys(sv.key);
  const copart::ScratchSizes scratch = copart::device_scratch_sizes();
  for (std::uint64_t mib = 64; mib <= 2048; mib += 8) {
    const std::uint64_t bytes = mib << 20;
    if (copart::plan_copart(rs, ss, rv, sv, g, output, bytes, scratch).fits) return 0;
    const copart::BucketPlan p =
        copart::plan_buckets(rs, ss, rv, sv, g, output, bytes, scratch, PayloadFlow::Auto, 0, Exchange::CopyEngines, residency);
    if (p.fits && wanted(p)) return bytes;
  }
  return 0;
}

/// The smallest such memory at which the planner buckets (with a hot key among the groups' if `want_hot`).
std::uint64_t bucketing_limit(const Relation& r, const Relation& s, int g, OutputMode output, bool want_hot) {
  return first_limit(r, s, g, output, copart::Residency{0},  // the engine's default
                     [&](const copart::BucketPlan& p) { return !want_hot || p.groups.hot_count > 0; });
}

TEST(BucketedPlanner, AMemoryLimitHoldingNeitherRelationBuckets) {
  MGJOIN_REQUIRE_GPUS(1);
  const ScopedEnv no_passes("MGJOIN_COPART_PASSES", "off");  // at g = 2 the bucketed flow, not the passes
  std::mt19937_64 rng(announce_seed());
  struct Case {
    const char* name;
    OutputMode output;
    std::size_t rows;
    bool hot;  ///< one key holds half of S: heavier than a group
  };
  // Sizes kept in both tiers: the limit window where neither relation fits but groups do, and the cost
  // model choosing the bucketed flow over the paper flow, need them. One input and reference per case.
  for (const Case c : {Case{"count", OutputMode::Count, 6'000'000, false}, Case{"count, hot key", OutputMode::Count, 6'000'000, true},
                       Case{"materialize", OutputMode::Materialize, 12'000'000, false}}) {
    auto rk = uniform_keys<std::uint64_t>(rng, c.rows, 0, 4 * c.rows), sk = uniform_keys<std::uint64_t>(rng, c.rows + 1, 0, 4 * c.rows);
    if (c.hot) {
      for (std::size_t i = 0; i < rk.size(); i += 100'000) rk[i] = 12345;
      for (std::size_t i = 0; i < sk.size(); i += 2) sk[i] = 12345;
    }
    const int payload = c.output == OutputMode::Materialize ? 8 : 0;
    const Relation r = relation_of(rk, payload, 0), s = relation_of(sk, payload, 1u << 30);
    const ReferenceResult expected = reference_result(r, s, c.output);
    for (int g = 1; g <= std::min(2, gpu_count()); ++g) {
      const std::uint64_t limit = bucketing_limit(r, s, g, c.output, c.hot);
      SCOPED_TRACE(std::string(c.name) + ", g = " + std::to_string(g) + ", limit " + std::to_string(limit >> 20) + " MiB");
      ASSERT_GT(limit, 0u) << "no GPU memory limit makes the planner bucket";
      check_planned(r, s, g, limit, c.output, "co-partitioned, bucketed", expected);
    }
  }
}

/// The smallest such memory at which the planner (asked for resident groups) keeps them beside its host
/// buckets.
std::uint64_t hybrid_limit(const Relation& r, const Relation& s, int g, OutputMode output) {
  return first_limit(r, s, g, output, copart::Residency{},  // MGJOIN_BUCKET_RESIDENT=auto
                     [](const copart::BucketPlan& p) { return p.resident > 0; });
}

/// Through the engine: with MGJOIN_BUCKET_RESIDENT=auto, where the memory allows, the planner keeps a
/// group resident on every GPU (its reason says so) and the answer is the reference's; by default it
/// plans host groups only, with the same answer; a bad value is one line naming the variable.
TEST(BucketedPlanner, GroupsKeptResidentWhereTheMemoryAllows) {
  MGJOIN_REQUIRE_GPUS(1);
  std::mt19937_64 rng(announce_seed());
  const ScopedEnv no_passes("MGJOIN_COPART_PASSES", "off");  // at g = 2 the bucketed flow, not the passes
  const ScopedEnv resident("MGJOIN_BUCKET_RESIDENT", nullptr);
  for (const OutputMode output : {OutputMode::Count, OutputMode::Materialize}) {
    // (Materialized, fewer rows would be the paper flow's by the cost model: both tiers keep the sizes.)
    const std::size_t rows = output == OutputMode::Count ? 6'000'000 : 12'000'000;
    auto rk = uniform_keys<std::uint64_t>(rng, rows, 0, 4 * rows), sk = uniform_keys<std::uint64_t>(rng, rows + 1, 0, 4 * rows);
    for (std::size_t i = 0; i < sk.size(); i += 4) sk[i] = 777;  // a hot key: a quarter of S
    const int payload = output == OutputMode::Materialize ? 8 : 0;
    const Relation r = relation_of(rk, payload, 0), s = relation_of(sk, payload, 1u << 30);
    const ReferenceResult expected = reference_result(r, s, output);
    for (int g = 1; g <= std::min(2, gpu_count()); ++g) {
      const std::uint64_t limit = hybrid_limit(r, s, g, output);
      SCOPED_TRACE(std::string(output == OutputMode::Count ? "count" : "materialize") + ", g = " + std::to_string(g) +
                   ", limit " + std::to_string(limit >> 20) + " MiB");
      ASSERT_GT(limit, 0u) << "no GPU memory limit makes the planner keep groups resident";
      setenv("MGJOIN_BUCKET_RESIDENT", "auto", 1);
      check_planned(r, s, g, limit, output, std::to_string(g) + " resident on the GPUs", expected);
      unsetenv("MGJOIN_BUCKET_RESIDENT");
      const std::string off = check_planned(r, s, g, limit, output, "co-partitioned, bucketed", expected);
      EXPECT_EQ(off.find("resident on the GPUs"), std::string::npos) << off;
    }
  }
  setenv("MGJOIN_BUCKET_RESIDENT", "most", 1);
  const Relation r = relation_of(uniform_keys<std::uint64_t>(rng, 6'000'000, 0, 24'000'000), 0, 0);
  const Relation s = relation_of(uniform_keys<std::uint64_t>(rng, 6'000'001, 0, 24'000'000), 0, 0);
  const std::uint64_t limit = bucketing_limit(r, s, 1, OutputMode::Count, false);
  ASSERT_GT(limit, 0u);
  Relation rc = copy_of(r), sc = copy_of(s);
  JoinOptions count;
  count.output = OutputMode::Count;
  try {
    shared_engines().get(1, limit).join(rc.view(), sc.view(), count);
    ADD_FAILURE() << "MGJOIN_BUCKET_RESIDENT=most was accepted";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("MGJOIN_BUCKET_RESIDENT 'most'"), std::string::npos) << e.what();
  }
}

/// Host memory too small for the buckets: the co-partitioned flow asked for is refused before pass 1
/// with the bytes it needs; auto says why it leaves the bucketed flow (here the paper flow's merge
/// buffers do not fit either, and are refused the same way); the engine then joins right.
TEST(BucketedPlanner, HostMemoryTooSmallForTheBucketsIsRefusedUpFront) {
  MGJOIN_REQUIRE_GPUS(1);
  std::mt19937_64 rng(announce_seed());
  const Relation r = relation_of(uniform_keys<std::uint64_t>(rng, 6'000'000, 0, 24'000'000), 0, 0);
  const Relation s = relation_of(uniform_keys<std::uint64_t>(rng, 6'000'001, 0, 24'000'000), 0, 0);
  const std::uint64_t limit = bucketing_limit(r, s, 1, OutputMode::Count, false);
  ASSERT_GT(limit, 0u);
  Engine& engine = shared_engines().get(1, limit);
  struct Unset {
    ~Unset() { unsetenv("MGJOIN_HOST_MEMORY_LIMIT"); }
  } unset;
  setenv("MGJOIN_HOST_MEMORY_LIMIT", "1M", 1);  // below what the process holds: no room at all
  for (const JoinStrategy strategy : {JoinStrategy::CoPartitioned, JoinStrategy::Auto}) {
    JoinOptions options;
    options.strategy = strategy;
    options.output = OutputMode::Count;
    Relation rc = copy_of(r), sc = copy_of(s);
    try {
      // Auto may run the paper flow where it needs no host memory beside the inputs (one chunkset).
      const JoinResult result = engine.join(rc.view(), sc.view(), options);
      EXPECT_EQ(strategy, JoinStrategy::Auto) << "a co-partitioned join ran with no host memory for its buckets";
      EXPECT_EQ(result.strategy, JoinStrategy::Paper);
      EXPECT_NE(result.strategy_reason.find("the bucketed flow's pinned buckets"), std::string::npos) << result.strategy_reason;
    } catch (const OutOfMemory& e) {
      const std::string m = e.what();
      if (strategy == JoinStrategy::CoPartitioned) {
        EXPECT_NE(m.find("the bucketed flow's pinned buckets"), std::string::npos) << m;
      }
      EXPECT_NE(m.find("MGJOIN_HOST_MEMORY_LIMIT"), std::string::npos) << m;
    }
  }
  unsetenv("MGJOIN_HOST_MEMORY_LIMIT");
  Relation rc = copy_of(r), sc = copy_of(s);
  JoinOptions count;
  count.output = OutputMode::Count;
  const JoinResult result = engine.join(rc.view(), sc.view(), count);
  EXPECT_NE(result.strategy_reason.find("co-partitioned, bucketed"), std::string::npos) << result.strategy_reason;
  EXPECT_EQ(result.count, reference_count(r, s));
}

}  // namespace
}  // namespace mgjoin::test
