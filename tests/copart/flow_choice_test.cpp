// The flow choice on the CPU (engine/src/plan/flow_choice.hpp): a strategy asked for, the tuning file's
// choice, in core, bucketed, the cost model's margin, host memory short of the buckets, and the paper
// flow taking over from a co-partitioned run that failed before any output. The machine comes in through
// the question: fake scratch sizes, samples of the keys, the paper flow's plan, the host memory check.
#include "engine/src/plan/flow_choice.hpp"

#include "common/seed.hpp"
#include "copart/copart_test_util.hpp"

#include <mgjoin/error.hpp>

#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <exception>
#include <optional>
#include <random>
#include <string>
#include <vector>

namespace mgjoin::detail {
namespace {

using copart::KeySample;

/// A relation of `rows` rows of 8-byte keys (and 8-byte payloads): the choice reads sizes, never rows.
RelationView sized(std::int64_t rows, bool payload) {
  RelationView v{{nullptr, rows, DType::UInt64}, std::nullopt};
  if (payload) v.payload = MutableColumnView{nullptr, rows, DType::UInt64};
  return v;
}

/// A sorted sample of 2^16 uniform keys standing for `rows` rows.
KeySample uniform_sample(std::mt19937_64& rng, std::int64_t rows) {
  KeySample s;
  s.rows = rows;
  std::uniform_int_distribution<std::uint64_t> dist(0, 1ull << 40);
  for (int i = 0; i < (1 << 16); ++i) s.keys.push_back(dist(rng));
  std::sort(s.keys.begin(), s.keys.end());
  return s;
}

/// A choice between R and S of `rows` rows each on one GPU of `bytes`, with the paper flow able to run
/// in one chunkset a relation and host memory to spare; counts how often the machine was asked.
struct Chooser {
  std::int64_t rows = 8'000'000;
  bool payloads = false;
  int gpus = 1;
  std::mt19937_64 rng{test::announce_seed()};
  KeySample r_sample = uniform_sample(rng, rows), s_sample = uniform_sample(rng, rows);
  int sampled = 0, paper_planned = 0;
  std::optional<std::string> host_short;

  FlowQuestion question(JoinStrategy strategy, OutputMode output, std::uint64_t bytes) {
    FlowQuestion q;
    q.request.strategy = strategy;
    q.request.output = output;
    q.gpus = gpus;
    q.device_bytes = bytes;
    q.rates = rates_for(nullptr, gpus);  // 25 GB/s a GPU each way, 40 both ways
    q.scratch = test::fake_scratch();
    q.samples = [this] {
      ++sampled;
      return std::array<KeySample, 2>{r_sample, s_sample};
    };
    q.paper_plan = [this]() -> std::optional<sort::SortPlan> {
      ++paper_planned;
      sort::SortPlan plan;
      plan.k_r = plan.k_s = 1;
      return plan;
    };
    q.host_refuses = [this](std::uint64_t) { return host_short; };
    return q;
  }

  FlowChoice choose(const FlowQuestion& q) { return choose_flow(sized(rows, payloads), sized(rows, payloads), q); }
};

bool has(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

constexpr std::uint64_t kRoomy = 4ull << 30;       // R and S in core
constexpr std::uint64_t kNeitherFits = 112ull << 20;  // 128 MB of keys: neither in core nor streamed

TEST(FlowChoice, AStrategyAskedForIsTaken) {
  Chooser c;
  const FlowChoice paper = c.choose(c.question(JoinStrategy::Paper, OutputMode::Count, kRoomy));
  EXPECT_EQ(paper.flow, Flow::Paper);
  EXPECT_EQ(paper.reason, "paper flow: asked for");
  EXPECT_FALSE(paper.planned);
  EXPECT_EQ(c.sampled, 0) << "the paper flow asked for needs no key sample";
  // The co-partitioned flow asked for runs even where the tuning file times the paper flow faster, and
  // without the cost model.
  FlowQuestion q = c.question(JoinStrategy::CoPartitioned, OutputMode::Count, kRoomy);
  q.tuned_paper = true;
  const FlowChoice copart = c.choose(q);
  EXPECT_EQ(copart.flow, Flow::CoPartitioned);
  EXPECT_TRUE(copart.plan.fits) << copart.reason;
  EXPECT_EQ(c.paper_planned, 0);
  // It has no ranges output, and it is refused where R and S do not fit at all.
  EXPECT_THROW(c.choose(c.question(JoinStrategy::CoPartitioned, OutputMode::Ranges, kRoomy)), InputError);
  try {
    c.choose(c.question(JoinStrategy::CoPartitioned, OutputMode::Count, 8ull << 20));
    ADD_FAILURE() << "a co-partitioned join that does not fit was accepted";
  } catch (const InputError& e) {
    EXPECT_TRUE(has(e.what(), "do not fit the GPUs for the co-partitioned flow")) << e.what();
  }
}

TEST(FlowChoice, TheTuningFileAndRangesOutputChooseThePaperFlowWithoutAPlan) {
  Chooser c;
  FlowQuestion q = c.question(JoinStrategy::Auto, OutputMode::Count, kRoomy);
  q.tuned_paper = true;
  const FlowChoice tuned = c.choose(q);
  EXPECT_EQ(tuned.flow, Flow::Paper);
  EXPECT_EQ(tuned.reason, "paper flow: the tuning file timed it faster on this GPU set");
  const FlowChoice ranges = c.choose(c.question(JoinStrategy::Auto, OutputMode::Ranges, kRoomy));
  EXPECT_EQ(ranges.flow, Flow::Paper);
  EXPECT_EQ(ranges.reason, "paper flow: ranges output indexes the sorted inputs");
  EXPECT_EQ(c.sampled, 0);
}

TEST(FlowChoice, InCoreWhereBothRelationsFitAndTheCostModelSaysWhy) {
  Chooser c;
  const FlowChoice in_core = c.choose(c.question(JoinStrategy::Auto, OutputMode::Count, kRoomy));
  EXPECT_EQ(in_core.flow, Flow::CoPartitioned);
  EXPECT_TRUE(in_core.planned);
  EXPECT_FALSE(in_core.buckets.has_value()) << "no bucket plan where the in-core one fits";
  EXPECT_TRUE(has(in_core.reason, "co-partitioned: in core")) << in_core.reason;
  EXPECT_TRUE(has(in_core.reason, "cost model (default rates: no tuning file)")) << in_core.reason;
  EXPECT_EQ(c.sampled, 1);
  // Where the paper flow would refuse these relations, the cost model has nothing to weigh.
  FlowQuestion q = c.question(JoinStrategy::Auto, OutputMode::Count, kRoomy);
  q.paper_plan = [] { return std::optional<sort::SortPlan>{}; };
  const FlowChoice alone = c.choose(q);
  EXPECT_EQ(alone.flow, Flow::CoPartitioned);
  EXPECT_FALSE(has(alone.reason, "cost model")) << alone.reason;
}

TEST(FlowChoice, BucketedWhereNeitherFitsAndHostMemoryHoldsTheBuckets) {
  Chooser c;
  const FlowChoice bucketed = c.choose(c.question(JoinStrategy::Auto, OutputMode::Count, kNeitherFits));
  ASSERT_EQ(bucketed.flow, Flow::Bucketed) << bucketed.reason;
  EXPECT_FALSE(bucketed.plan.fits);
  ASSERT_TRUE(bucketed.buckets.has_value());
  EXPECT_TRUE(bucketed.buckets->fits);
  EXPECT_TRUE(has(bucketed.reason, "co-partitioned, bucketed")) << bucketed.reason;
  // Host memory short of the buckets: Auto takes the paper flow and says why; asked for, the bucketed
  // flow is tried anyway (and refused up front by the flow itself).
  c.host_short = "the bucketed flow's pinned buckets need 1 GiB";
  const FlowChoice short_of = c.choose(c.question(JoinStrategy::Auto, OutputMode::Count, kNeitherFits));
  EXPECT_EQ(short_of.flow, Flow::Paper);
  EXPECT_EQ(short_of.reason, "paper flow: the bucketed flow's pinned buckets need 1 GiB");
  EXPECT_EQ(c.choose(c.question(JoinStrategy::CoPartitioned, OutputMode::Count, kNeitherFits)).flow, Flow::Bucketed);
  c.host_short.reset();
  // Late payloads leave out the bucketed variant.
  FlowQuestion late = c.question(JoinStrategy::Auto, OutputMode::Count, kNeitherFits);
  late.request.payloads = PayloadFlow::Late;
  const FlowChoice no_buckets = c.choose(late);
  EXPECT_EQ(no_buckets.flow, Flow::Paper);
  EXPECT_FALSE(no_buckets.buckets.has_value());
  // MGJOIN_BUCKET_RESIDENT is read where buckets are planned: a bad value is refused there only.
  FlowQuestion bad = c.question(JoinStrategy::Auto, OutputMode::Count, kRoomy);
  bad.request.bucket_resident = "most";
  EXPECT_EQ(c.choose(bad).flow, Flow::CoPartitioned);
  bad.device_bytes = kNeitherFits;
  EXPECT_THROW(c.choose(bad), InputError);
}

/// PCIe rates of two GPUs together in proportion to `one` GB/s each way and `both` both ways at once,
/// scaled down a hundredfold: the predictions for these 64 MB relations then lie far above the margin's
/// 2 ms.
Rates pcie(double one, double both) {
  Rates r = rates_for(nullptr, 2);
  r.h2d = r.d2h = one / 100;
  r.both_ways = both / 100;
  r.source = "test rates";
  return r;
}

/// A memory where neither relation pair fits in core or streamed but both the bucket plan and the plan in
/// two passes fit (0: none from 64 MiB to 1 GiB).
std::uint64_t passes_and_buckets_fit(Chooser& c) {
  for (std::uint64_t mib = 64; mib <= 1024; mib += 8) {
    const FlowChoice f = c.choose(c.question(JoinStrategy::Auto, OutputMode::Count, mib << 20));
    if (!f.plan.fits && f.passes && f.passes->fits && f.passes->count() == 2 && f.buckets && f.buckets->fits) return mib << 20;
  }
  return 0;
}

// Where both fit, the passes read R and S k times, the buckets move them in, out and in again. With
// links much slower both ways at once than one way each (x4's two GPUs: 107 GB/s one way, 141 both)
// the passes are predicted faster by more than the margin and taken; on links as fast both ways as each
// way alone the predictions tie, and the tie keeps the bucketed flow. MGJOIN_COPART_PASSES: off plans no
// passes, a count takes them whatever the model says. One GPU has no plan in passes; host memory short
// of the buckets leaves the passes.
TEST(FlowChoice, PassesOverBucketsOnlyWhenFasterByTheMarginOrAskedFor) {
  Chooser c{.gpus = 2};
  const std::uint64_t bytes = passes_and_buckets_fit(c);
  ASSERT_GT(bytes, 0u) << "no memory limit fits both the passes and the buckets";
  FlowQuestion slow_both_ways = c.question(JoinStrategy::Auto, OutputMode::Count, bytes);
  slow_both_ways.rates = pcie(107, 141);
  const FlowChoice passes = c.choose(slow_both_ways);
  ASSERT_EQ(passes.flow, Flow::Passes) << passes.reason;
  EXPECT_EQ(passes.passes->count(), 2) << passes.reason;
  EXPECT_TRUE(has(passes.reason, "co-partitioned in 2 passes by key range")) << passes.reason;
  EXPECT_TRUE(has(passes.reason, "; cost model: in passes ")) << passes.reason;
  EXPECT_TRUE(has(passes.reason, "cost model (test rates): ")) << "weighed against the paper flow too: " << passes.reason;
  FlowQuestion duplex = c.question(JoinStrategy::Auto, OutputMode::Count, bytes);
  duplex.rates = pcie(50, 100);
  const FlowChoice tie = c.choose(duplex);
  EXPECT_EQ(tie.flow, Flow::Bucketed) << tie.reason;
  EXPECT_TRUE(has(tie.reason, "co-partitioned, bucketed")) << tie.reason;
  // Asked for by count, over the model; off, not even planned.
  duplex.request.passes = "2";
  EXPECT_EQ(c.choose(duplex).flow, Flow::Passes);
  duplex.request.passes = "3";  // (reading R and S three times, slower than the paper flow: asked for)
  duplex.request.strategy = JoinStrategy::CoPartitioned;
  const FlowChoice three = c.choose(duplex);
  ASSERT_EQ(three.flow, Flow::Passes) << three.reason;
  EXPECT_EQ(three.passes->count(), 3);
  duplex.request.strategy = JoinStrategy::Auto;
  slow_both_ways.request.passes = "off";
  const FlowChoice off = c.choose(slow_both_ways);
  EXPECT_EQ(off.flow, Flow::Bucketed) << off.reason;
  EXPECT_FALSE(off.passes.has_value());
  slow_both_ways.request.passes = "all";
  EXPECT_THROW(c.choose(slow_both_ways), InputError);
  // Host memory short of the buckets: the passes need none beside the output.
  duplex.request.passes.reset();
  c.host_short = "the bucketed flow's pinned buckets need 1 GiB";
  const FlowChoice short_of = c.choose(duplex);
  EXPECT_EQ(short_of.flow, Flow::Passes) << short_of.reason;
  EXPECT_TRUE(has(short_of.reason, "; not bucketed: the bucketed flow's pinned buckets need 1 GiB")) << short_of.reason;
  // One GPU: no plan in passes (its reason is not even made).
  Chooser one;
  const FlowChoice bucketed = one.choose(one.question(JoinStrategy::Auto, OutputMode::Count, kNeitherFits));
  EXPECT_EQ(bucketed.flow, Flow::Bucketed);
  EXPECT_FALSE(bucketed.passes.has_value());
}

// Bucketed, counting: the buckets move the keys in, out and in again, as the paper flow's sort and join
// do: a tie, which keeps the co-partitioned flow. Materializing, the buckets also move the payloads
// again, where the paper flow's join takes only the keys: it is predicted faster by more than the
// margin and chosen, saying both predictions.
TEST(FlowChoice, TheCostModelChoosesThePaperFlowOnlyWhenFasterByTheMargin) {
  Chooser count;
  const FlowChoice tie = count.choose(count.question(JoinStrategy::Auto, OutputMode::Count, kNeitherFits));
  ASSERT_EQ(tie.flow, Flow::Bucketed) << tie.reason;
  EXPECT_TRUE(has(tie.reason, "cost model")) << tie.reason;
  Chooser mat;
  mat.payloads = true;
  std::optional<FlowChoice> faster;
  for (std::uint64_t mib = 512; mib >= 96 && !faster; mib -= 32) {
    FlowQuestion q = mat.question(JoinStrategy::Auto, OutputMode::Materialize, mib << 20);
    q.paper_plan = [] { return std::optional<sort::SortPlan>{}; };  // first the plan alone
    const FlowChoice plan = mat.choose(q);
    if (plan.flow == Flow::Bucketed) faster = mat.choose(mat.question(JoinStrategy::Auto, OutputMode::Materialize, mib << 20));
  }
  ASSERT_TRUE(faster.has_value()) << "no memory limit buckets the materialized join";
  EXPECT_EQ(faster->flow, Flow::Paper);
  EXPECT_EQ(faster->reason.rfind("paper flow: cost model (default rates: no tuning file): ", 0), 0u) << faster->reason;
}

TEST(FlowChoice, ThePaperFlowTakesOverFromARunThatFailedBeforeAnyOutput) {
  FlowChoice bucketed;
  bucketed.flow = Flow::Bucketed;
  FlowChoice in_core;
  in_core.flow = Flow::CoPartitioned;
  in_core.plan.fits = true;
  const auto failure = [](auto e) { return std::make_exception_ptr(e); };
  const auto missed = paper_after(failure(copart::PlanMissed("partition 1 of S outgrew the 10 rows its sample planned")),
                                  in_core, JoinStrategy::CoPartitioned);
  ASSERT_TRUE(missed.has_value());
  EXPECT_EQ(*missed, "paper flow: partition 1 of S outgrew the 10 rows its sample planned (the key sample misled the plan)");
  const auto short_of = paper_after(failure(OutOfMemory("the output needs 2 GiB")), bucketed, JoinStrategy::Auto);
  ASSERT_TRUE(short_of.has_value());
  EXPECT_EQ(*short_of, "paper flow: the output needs 2 GiB (beside the bucketed flow's buckets)");
  // Host memory short in core, or with the co-partitioned flow asked for, and any other error: rethrown.
  EXPECT_FALSE(paper_after(failure(OutOfMemory("x")), in_core, JoinStrategy::Auto).has_value());
  EXPECT_FALSE(paper_after(failure(OutOfMemory("x")), bucketed, JoinStrategy::CoPartitioned).has_value());
  EXPECT_FALSE(paper_after(failure(InputError("x")), bucketed, JoinStrategy::Auto).has_value());
}

}  // namespace
}  // namespace mgjoin::detail
