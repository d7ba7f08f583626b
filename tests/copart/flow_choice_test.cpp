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
  std::mt19937_64 rng{test::announce_seed()};
  KeySample r_sample = uniform_sample(rng, rows), s_sample = uniform_sample(rng, rows);
  int sampled = 0, paper_planned = 0;
  std::optional<std::string> host_short;

  FlowQuestion question(JoinStrategy strategy, OutputMode output, std::uint64_t bytes) {
    FlowQuestion q;
    q.request.strategy = strategy;
    q.request.output = output;
    q.gpus = 1;
    q.device_bytes = bytes;
    q.rates = rates_for(nullptr, 1);  // 25 GB/s each way, 40 both ways
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
