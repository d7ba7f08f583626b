// The co-partitioned flow's plan on the CPU: every (r, s) pair of equal keys must meet on exactly one
// GPU (the property the GPU join rests on), partitions must be balanced in R + S tuples, hot keys must
// be split, and the planned bounds must hold the real partition sizes.
#include "engine/src/copart/copart_plan.hpp"
#include "engine/src/copart/splitters.hpp"

#include "common/seed.hpp"
#include "copart/copart_test_util.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <limits>
#include <map>
#include <random>
#include <vector>

namespace mgjoin::copart {
namespace {

using test::count_pairs;
using test::Keys;
using test::route;

ColumnView view_of(const Keys& k) { return {k.data(), static_cast<std::int64_t>(k.size()), DType::UInt64}; }

struct Routed {
  PartitionPlan plan;
  std::vector<Keys> r, s;
};

Routed plan_and_route(const Keys& r, const Keys& s, int gpus, std::int64_t samples = kSampleRows) {
  Routed out;
  out.plan = choose_plan(sample_keys(view_of(r), samples, 7), sample_keys(view_of(s), samples, 8), gpus);
  out.r = route(out.plan, Side::R, r);
  out.s = route(out.plan, Side::S, s);
  return out;
}

/// The join of the routed partitions, GPU by GPU, equals the join of the whole relations.
void expect_pairs_meet_once(const Keys& r, const Keys& s, int gpus, std::int64_t samples = kSampleRows) {
  const Routed routed = plan_and_route(r, s, gpus, samples);
  std::uint64_t local = 0;
  for (int d = 0; d < gpus; ++d) local += count_pairs(routed.r[d], routed.s[d]);
  EXPECT_EQ(local, count_pairs(r, s)) << "gpus " << gpus << ", hot keys " << routed.plan.hot_count;
}

/// Largest GPU load (R + S tuples) over the ideal share.
double imbalance(const Routed& routed, std::size_t total) {
  std::size_t worst = 0;
  for (int d = 0; d < routed.plan.gpus; ++d) worst = std::max(worst, routed.r[d].size() + routed.s[d].size());
  return static_cast<double>(worst) / (static_cast<double>(total) / routed.plan.gpus);
}

Keys uniform(std::mt19937_64& rng, std::size_t n, std::uint64_t lo = 0,
             std::uint64_t hi = std::numeric_limits<std::uint64_t>::max()) {
  std::uniform_int_distribution<std::uint64_t> dist(lo, hi);
  Keys k(n);
  for (auto& x : k) x = dist(rng);
  return k;
}

class PlanTest : public ::testing::Test {
 protected:
  std::mt19937_64 rng{test::announce_seed()};
};

TEST_F(PlanTest, OneGpuTakesEverything) {
  const Keys r = uniform(rng, 1000), s = uniform(rng, 3000);
  const Routed routed = plan_and_route(r, s, 1);
  EXPECT_EQ(routed.plan.hot_count, 0);
  EXPECT_EQ(routed.r[0].size(), r.size());
  EXPECT_EQ(routed.s[0].size(), s.size());
}

TEST_F(PlanTest, UniformKeysBalanceAndMeetOnce) {
  const Keys r = uniform(rng, 200'000), s = uniform(rng, 300'001);
  for (int g = 2; g <= 8; ++g) {
    const Routed routed = plan_and_route(r, s, g, 1 << 14);  // sampled, not exact
    EXPECT_EQ(routed.plan.hot_count, 0) << g;
    // The imbalance is sampling error alone: with 2^14 samples the fullest of 8 GPUs averages ~1.02 with
    // a standard deviation of ~0.008 (a simulation of this plan: 0.25% of seeds passed 1.05), so 1.10
    // is ~10 sigma, a bound that holds for every seed rather than most.
    EXPECT_LT(imbalance(routed, r.size() + s.size()), 1.10) << g;
    expect_pairs_meet_once(r, s, g, 1 << 14);
  }
}

TEST_F(PlanTest, SmallDomainManyDuplicates) {
  const Keys r = uniform(rng, 50'000, 0, 999), s = uniform(rng, 70'000, 0, 999);
  for (int g : {2, 3, 5, 8}) expect_pairs_meet_once(r, s, g);
}

TEST_F(PlanTest, HotKeyHoldingHalfOfSIsSplitAcrossGpus) {
  Keys r = uniform(rng, 100'000), s = uniform(rng, 100'000);
  // In the middle of the key range, so that at g = 2 it falls across the boundary; at g = 4 and 7 it is
  // heavier than a whole share.
  const std::uint64_t hot = 1ull << 63;
  r[0] = r[1] = hot;
  for (std::size_t i = 0; i < s.size(); i += 2) s[i] = hot;
  for (int g : {2, 3, 4, 7}) {
    const Routed routed = plan_and_route(r, s, g);
    expect_pairs_meet_once(r, s, g);
    EXPECT_LT(imbalance(routed, r.size() + s.size()), 1.15) << g;
    if (g == 3) continue;  // fits whole on one GPU there
    ASSERT_GE(routed.plan.hot_count, 1) << g;
    EXPECT_EQ(routed.plan.hot[0].key, hot);
    EXPECT_EQ(routed.plan.hot[0].split_side, Side::S);
    EXPECT_GE(routed.plan.hot[0].span, 2);
  }
}

TEST_F(PlanTest, AHotKeysCopiedSideCountsItsCopiesEvenWhenUnsampled) {
  // S: 60% one key; R: that key in 3 rows of 2M, which a 4096-row sample almost surely misses. Every
  // R row of the key is still copied to each GPU of the key's run: the chunk buffers must hold it.
  Keys r = uniform(rng, 2'000'000, 0, 1ull << 40), s = uniform(rng, 3'000'000, 0, 1ull << 40);
  for (const std::size_t i : {5u, 999'999u, 1'500'000u}) r[i] = 42;
  for (std::size_t i = 0; i < s.size(); ++i)
    if (i % 5 < 3) s[i] = 42;
  const KeySample rs = sample_keys(view_of(r), 4096, 7), ss = sample_keys(view_of(s), 4096, 8);
  const PartitionPlan plan = choose_plan(rs, ss, 4);
  ASSERT_GE(plan.hot_count, 1);
  ASSERT_EQ(plan.hot[0].split_side, Side::S);
  ASSERT_FALSE(std::binary_search(rs.keys.begin(), rs.keys.end(), std::uint64_t{42})) << "the sample caught R's rows";
  const PartitionSizes sizes = estimate_sizes(plan, rs, ss);
  EXPECT_GE(sizes.max_copies[0], plan.hot[0].span);
  EXPECT_EQ(destinations(plan, Side::R, 42, 5).count, plan.hot[0].span);
}

TEST_F(PlanTest, HotKeyInRIsSplitOnR) {
  Keys r = uniform(rng, 80'000), s = uniform(rng, 20'000);
  for (std::size_t i = 0; i < r.size(); i += 3) r[i] = 42;
  s[0] = 42;
  s[1] = 42;
  const Routed routed = plan_and_route(r, s, 4);
  ASSERT_GE(routed.plan.hot_count, 1);
  EXPECT_EQ(routed.plan.hot[0].split_side, Side::R);
  expect_pairs_meet_once(r, s, 4);
}

TEST_F(PlanTest, AllKeysEqualOnBothSides) {
  const Keys r(3000, 5), s(4000, 5);
  for (int g : {2, 3, 8}) {
    const Routed routed = plan_and_route(r, s, g);
    EXPECT_EQ(routed.plan.hot_count, 1) << g;
    expect_pairs_meet_once(r, s, g);
  }
}

TEST_F(PlanTest, KeysSharingTopBitsAndSortedInputs) {
  Keys r = uniform(rng, 60'000, 1ull << 40, (1ull << 40) + (1 << 16));
  Keys s = uniform(rng, 60'000, 1ull << 40, (1ull << 40) + (1 << 16));
  std::sort(r.begin(), r.end());
  std::sort(s.rbegin(), s.rend());
  for (int g : {2, 4, 6}) {
    const Routed routed = plan_and_route(r, s, g, 4096);
    EXPECT_LT(imbalance(routed, r.size() + s.size()), 1.1) << g;
    expect_pairs_meet_once(r, s, g, 4096);
  }
}

TEST_F(PlanTest, EmptyAndOneRowRelations) {
  const Keys none, one{7}, other{8};
  for (int g : {1, 2, 3}) {
    expect_pairs_meet_once(none, none, g);
    expect_pairs_meet_once(one, none, g);
    expect_pairs_meet_once(none, one, g);
    expect_pairs_meet_once(one, one, g);
    expect_pairs_meet_once(one, other, g);
  }
}

TEST_F(PlanTest, ExtremeKeys) {
  const Keys r{0, 0, std::numeric_limits<std::uint64_t>::max(), 1ull << 63, (1ull << 63) - 1};
  const Keys s{std::numeric_limits<std::uint64_t>::max(), 0, 1ull << 63, 5};
  for (int g : {2, 4}) expect_pairs_meet_once(r, s, g);
}

TEST_F(PlanTest, BoundsHoldTheRealSizes) {
  Keys r = uniform(rng, 400'000), s = uniform(rng, 400'000);
  for (std::size_t i = 0; i < s.size(); i += 3) s[i] = r[9];
  for (int g : {2, 3, 4, 8}) {
    const KeySample rs = sample_keys(view_of(r), 1 << 15, 3), ss = sample_keys(view_of(s), 1 << 15, 4);
    const PartitionPlan plan = choose_plan(rs, ss, g);
    const PartitionSizes sizes = estimate_sizes(plan, rs, ss);
    const std::vector<Keys> routed[2] = {route(plan, Side::R, r), route(plan, Side::S, s)};
    for (int side = 0; side < 2; ++side)
      for (int d = 0; d < g; ++d) {
        const auto real = static_cast<std::int64_t>(routed[side][d].size());
        EXPECT_LE(real, sizes.bound[side][d]) << "side " << side << " gpu " << d << " of " << g;
        EXPECT_NEAR(static_cast<double>(real), static_cast<double>(sizes.estimate[side][d]),
                    0.05 * static_cast<double>(r.size()) + 100)
            << "side " << side << " gpu " << d << " of " << g;
      }
  }
}

TEST(SampleKeys, ExactWhenSmallSortedAndSignFlipped) {
  const std::vector<std::int32_t> keys{5, -1, std::numeric_limits<std::int32_t>::min(), 0, 7};
  const KeySample sample = sample_keys({keys.data(), 5, DType::Int32});
  ASSERT_TRUE(sample.exact());
  const Keys expected{0x00000000u, 0x7fffffffu, 0x80000000u, 0x80000005u, 0x80000007u};
  EXPECT_EQ(sample.keys, expected);
}

TEST(SampleKeys, StratifiedSampleOfSortedInputCoversTheRange) {
  Keys k(1'000'000);
  for (std::size_t i = 0; i < k.size(); ++i) k[i] = i;
  const KeySample sample = sample_keys(view_of(k), 1000, 1);
  ASSERT_EQ(sample.keys.size(), 1000u);
  EXPECT_FALSE(sample.exact());
  for (std::size_t i = 0; i < 1000; ++i) {  // one key from each stratum of 1000 rows
    EXPECT_GE(sample.keys[i], i * 1000);
    EXPECT_LT(sample.keys[i], (i + 1) * 1000);
  }
}

using test::fake_scratch;

TEST(PlanCopart, CountMovesKeysOnlyAndMaterializeMovesPayloads) {
  Keys rk(100'000), rp(100'000), sk(50'000), sp(50'000);
  for (std::size_t i = 0; i < rk.size(); ++i) rk[i] = i * 3;
  for (std::size_t i = 0; i < sk.size(); ++i) sk[i] = i * 5;
  RelationView r{{rk.data(), 100'000, DType::UInt64}, MutableColumnView{rp.data(), 100'000, DType::UInt64}};
  RelationView s{{sk.data(), 50'000, DType::UInt64}, MutableColumnView{sp.data(), 50'000, DType::UInt64}};
  const CopartPlan count = plan_copart(r, s, 2, OutputMode::Count, 8ull << 30, fake_scratch());
  EXPECT_TRUE(count.fits) << count.reason;
  EXPECT_EQ(count.r.payload_bytes, 0);
  EXPECT_EQ(count.s.payload_bytes, 0);
  EXPECT_EQ(count.probe, Side::S);  // the smaller relation
  const CopartPlan mat = plan_copart(r, s, 2, OutputMode::Materialize, 8ull << 30, fake_scratch());
  EXPECT_EQ(mat.r.payload_bytes, 8);
  EXPECT_GT(mat.window_rows, 0u);
  EXPECT_GT(mat.budget[0].output, 0u);
  EXPECT_GT(mat.budget[0].partitions, count.budget[0].partitions);
}

TEST(PlanCopart, LatePayloadsWhenTheyFitElseCarried) {
  Keys rk(2'000'000), rp(2'000'000), sk(1'000'000), sp(1'000'000);
  for (std::size_t i = 0; i < rk.size(); ++i) rk[i] = i * 7;
  for (std::size_t i = 0; i < sk.size(); ++i) sk[i] = i * 11;
  RelationView r{{rk.data(), 2'000'000, DType::UInt64}, MutableColumnView{rp.data(), 2'000'000, DType::UInt64}};
  RelationView s{{sk.data(), 1'000'000, DType::UInt64}, MutableColumnView{sp.data(), 1'000'000, DType::UInt64}};
  const auto plan = [&](std::uint64_t bytes, PayloadFlow flow, OutputMode output = OutputMode::Materialize) {
    return plan_copart(r, s, 2, output, bytes, fake_scratch(), flow);
  };
  const CopartPlan late = plan(8ull << 30, PayloadFlow::Auto);
  ASSERT_TRUE(late.fits) << late.reason;
  EXPECT_TRUE(late.late);
  EXPECT_NE(late.reason.find("late payloads"), std::string::npos) << late.reason;
  EXPECT_EQ(late.sorted_payload_bytes(Side::R), 4);  // positions, not the 8-byte payloads
  // Two GPUs: the slots and each landed row's 4-byte gather map stay to the end.
  EXPECT_GE(late.budget[0].held, 4u * 1'000'000);
  const CopartPlan carried = plan(8ull << 30, PayloadFlow::Carry);
  ASSERT_TRUE(carried.fits) << carried.reason;
  EXPECT_FALSE(carried.late);
  EXPECT_EQ(carried.budget[0].held, 0u);
  EXPECT_EQ(carried.sorted_payload_bytes(Side::R), 8);
  EXPECT_NE(carried.reason.find("payloads carried"), std::string::npos) << carried.reason;
  const auto peak = [](const CopartPlan& p) {
    std::uint64_t most = 0;
    for (const GpuBudget& b : p.budget) most = std::max(most, b.peak());
    return most;
  };
  ASSERT_GT(peak(late), peak(carried));
  // Memory for the carried flow but not the late one: auto carries, late asked for does not fit.
  const std::uint64_t between = peak(carried) + 4096;
  const CopartPlan tight = plan(between, PayloadFlow::Auto);
  EXPECT_TRUE(tight.fits) << tight.reason;
  EXPECT_FALSE(tight.late);
  EXPECT_FALSE(plan(between, PayloadFlow::Late).fits);
  // Nothing to make late in a count.
  EXPECT_FALSE(plan(8ull << 30, PayloadFlow::Late, OutputMode::Count).late);
}

TEST(PlanCopart, RefusesWhatDoesNotFitAndSaysWhy) {
  Keys rk(1'000'000), sk(1'000'000);
  for (std::size_t i = 0; i < rk.size(); ++i) rk[i] = rk.size() - i;
  for (std::size_t i = 0; i < sk.size(); ++i) sk[i] = i;
  RelationView r{{rk.data(), 1'000'000, DType::UInt64}, std::nullopt};
  RelationView s{{sk.data(), 1'000'000, DType::UInt64}, std::nullopt};
  const CopartPlan small = plan_copart(r, s, 1, OutputMode::Count, 64ull << 20, fake_scratch());
  EXPECT_FALSE(small.fits);
  EXPECT_NE(small.reason.find("not in core"), std::string::npos) << small.reason;
  const CopartPlan big = plan_copart(r, s, 1, OutputMode::Count, 1ull << 30, fake_scratch());
  EXPECT_TRUE(big.fits) << big.reason;
  EXPECT_NE(big.reason.find("co-partitioned"), std::string::npos) << big.reason;
}

/// Keys 0, 3, 6, ... (R) and 0, 5, 10, ... (S) of the given lengths, with 8-byte payloads.
struct TwoRelations {
  Keys rk, rp, sk, sp;
  TwoRelations(std::size_t r_rows, std::size_t s_rows) : rk(r_rows), rp(r_rows), sk(s_rows), sp(s_rows) {
    for (std::size_t i = 0; i < r_rows; ++i) rk[i] = i * 3;
    for (std::size_t i = 0; i < s_rows; ++i) sk[i] = i * 5;
  }
  RelationView r() { return {{rk.data(), static_cast<std::int64_t>(rk.size()), DType::UInt64}, MutableColumnView{rp.data(), static_cast<std::int64_t>(rp.size()), DType::UInt64}}; }
  RelationView s() { return {{sk.data(), static_cast<std::int64_t>(sk.size()), DType::UInt64}, MutableColumnView{sp.data(), static_cast<std::int64_t>(sp.size()), DType::UInt64}}; }
};

std::uint64_t peak(const CopartPlan& p) {
  std::uint64_t most = 0;
  for (const GpuBudget& b : p.budget) most = std::max(most, b.peak());
  return most;
}

TEST(PlanStreamed, TheSmallerRelationStaysResidentWhenBothDoNotFit) {
  TwoRelations rel(1'000'000, 20'000'000);
  const std::uint64_t bytes = 256ull << 20;
  const CopartPlan p = plan_copart(rel.r(), rel.s(), 1, OutputMode::Count, bytes, fake_scratch());
  ASSERT_TRUE(p.fits) << p.reason;
  EXPECT_TRUE(p.streamed);
  EXPECT_EQ(p.probe, Side::S);  // S streams, R stays
  EXPECT_LE(peak(p), bytes);
  EXPECT_EQ(p.landing_rows, p.chunk_rows);  // one GPU: a round is one chunk
  EXPECT_GE(p.chunk_rows, std::int64_t{1} << 20);
  EXPECT_NE(p.reason.find("not in core"), std::string::npos) << p.reason;
  EXPECT_NE(p.reason.find("streamed: R resident"), std::string::npos) << p.reason;
  // The same sizes fit in core with room to spare: no streaming then.
  const CopartPlan in_core = plan_copart(rel.r(), rel.s(), 1, OutputMode::Count, 4ull << 30, fake_scratch());
  EXPECT_TRUE(in_core.fits && !in_core.streamed) << in_core.reason;
  // S the smaller: S resident, R streams.
  const CopartPlan flipped = plan_copart(rel.s(), rel.r(), 1, OutputMode::Count, bytes, fake_scratch());
  ASSERT_TRUE(flipped.fits && flipped.streamed) << flipped.reason;
  EXPECT_EQ(flipped.probe, Side::R);
  EXPECT_NE(flipped.reason.find("S resident"), std::string::npos) << flipped.reason;
}

TEST(PlanStreamed, SeveralGpusLandAWholeRoundAndCarryPayloads) {
  TwoRelations rel(2'000'000, 30'000'000);
  const std::uint64_t bytes = 640ull << 20;
  const CopartPlan p = plan_copart(rel.r(), rel.s(), 2, OutputMode::Materialize, bytes, fake_scratch(), PayloadFlow::Auto);
  ASSERT_TRUE(p.fits && p.streamed) << p.reason;
  EXPECT_FALSE(p.late);  // a stream carries its payloads
  EXPECT_EQ(p.sorted_payload_bytes(Side::S), 8);
  // The bound no sample can break: every tuple of a round, with its hot-key copies, on one GPU.
  EXPECT_EQ(p.landing_rows, p.chunk_rows * 2 * p.sizes.max_copies[1]);
  for (const GpuBudget& b : p.budget) {
    EXPECT_GT(b.held, 0u);    // the chunk slots
    EXPECT_GT(b.output, 0u);  // landings, match arrays, windows
    EXPECT_LE(b.peak(), bytes);
  }
  // Late payloads asked for cannot stream: the paper flow, and the reason says so.
  const CopartPlan late = plan_copart(rel.r(), rel.s(), 2, OutputMode::Materialize, bytes, fake_scratch(), PayloadFlow::Late);
  EXPECT_FALSE(late.fits);
  EXPECT_NE(late.reason.find("paper flow"), std::string::npos) << late.reason;
}

TEST(PlanStreamed, LessMemoryMeansMoreRunsOrSmallerChunksAndAlwaysFits) {
  TwoRelations rel(8'000'000, 40'000'000);
  int last_runs = 0;
  std::int64_t last_chunk = std::numeric_limits<std::int64_t>::max();
  bool some_fit = false, some_refused = false;
  for (std::uint64_t mib = 1024; mib >= 96; mib -= 16) {
    const CopartPlan p = plan_copart(rel.r(), rel.s(), 1, OutputMode::Count, mib << 20, fake_scratch());
    if (!p.fits) {
      some_refused = true;
      EXPECT_NE(p.reason.find("paper flow"), std::string::npos) << p.reason;
      EXPECT_NE(p.reason.find("not streamed either"), std::string::npos) << p.reason;
      continue;
    }
    EXPECT_LE(peak(p), mib << 20) << p.reason;
    if (!p.streamed) continue;
    some_fit = true;
    // Runs taken so that the stream fits beside X's sort are a preference, not the memory's need.
    if (p.stream_beside_sort) continue;
    // Shrinking memory never buys bigger chunks and fewer runs at once.
    EXPECT_TRUE(p.chunk_rows < last_chunk || (p.chunk_rows == last_chunk && p.resident_runs >= last_runs)) << p.reason;
    last_runs = p.resident_runs;
    last_chunk = p.chunk_rows;
  }
  EXPECT_TRUE(some_fit);
  EXPECT_TRUE(some_refused);
  EXPECT_GT(last_runs, 1);  // at the tightest streamed fit, X is sorted in several runs
}

TEST(PlanStreamed, TheStreamSitsBesideTheResidentSortWhereBothFit) {
  TwoRelations rel(8'000'000, 40'000'000);
  bool beside = false, in_place = false;
  for (std::uint64_t mib = 1024; mib >= 96; mib -= 16) {
    const CopartPlan p = plan_copart(rel.r(), rel.s(), 1, OutputMode::Count, mib << 20, fake_scratch());
    if (!p.fits || !p.streamed) continue;
    const GpuBudget& b = p.budget[0];
    EXPECT_EQ(b.together, p.stream_beside_sort);
    if (p.stream_beside_sort) {
      beside = true;
      // Both held at once, and one GPU sorts X in two runs at least (the first while the second crosses).
      EXPECT_EQ(b.peak(), b.partitions + b.held + b.transfer + b.output);
      EXPECT_LE(b.peak(), mib << 20) << p.reason;
      EXPECT_GE(p.resident_runs, 2) << p.reason;
      EXPECT_NE(p.reason.find("beside the stream"), std::string::npos) << p.reason;
    } else {
      in_place = true;
      EXPECT_EQ(b.peak(), b.partitions + b.held + std::max(b.transfer, b.output));
      // Beside the sort it would not have fit with the runs the preference allows.
      CopartPlan q = p;
      force_streamed(q, rel.r(), rel.s(), p.chunk_rows, std::max(2, p.resident_runs), OutputMode::Count, fake_scratch(), true);
      if (p.resident_runs <= 2) {
        EXPECT_FALSE(q.fits) << q.reason;
      }
    }
  }
  EXPECT_TRUE(beside);
  EXPECT_TRUE(in_place);
}

TEST(PlanStreamed, OneGpuMaterializingSortsTheResidentSideInFourRunsBesideTheStream) {
  TwoRelations rel(8'000'000, 40'000'000);
  int beside = 0, counted_in_two = 0;
  for (std::uint64_t mib = 4096; mib >= 96; mib -= 32) {
    const CopartPlan m = plan_copart(rel.r(), rel.s(), 1, OutputMode::Materialize, mib << 20, fake_scratch());
    if (m.fits && m.streamed && m.stream_beside_sort) {
      ++beside;
      EXPECT_EQ(m.resident_runs, 4) << m.reason;
      EXPECT_LE(peak(m), mib << 20) << m.reason;
    }
    const CopartPlan c = plan_copart(rel.r(), rel.s(), 1, OutputMode::Count, mib << 20, fake_scratch());
    if (c.fits && c.streamed && c.stream_beside_sort && c.resident_runs == 2) ++counted_in_two;
  }
  EXPECT_GT(beside, 0);
  EXPECT_GT(counted_in_two, 0);  // a count keeps two runs where they fit
  // Two GPUs keep the fewest runs that fit.
  bool two_gpus_one_run = false;
  for (std::uint64_t mib = 4096; mib >= 96; mib -= 32) {
    const CopartPlan m = plan_copart(rel.r(), rel.s(), 2, OutputMode::Materialize, mib << 20, fake_scratch());
    if (m.fits && m.streamed && m.stream_beside_sort && m.resident_runs == 1) two_gpus_one_run = true;
  }
  EXPECT_TRUE(two_gpus_one_run);
}

TEST(PlanStreamed, ForcedShapeRecomputesTheBudget) {
  TwoRelations rel(100'000, 1'000'000);
  CopartPlan p = plan_copart(rel.r(), rel.s(), 2, OutputMode::Materialize, 8ull << 30, fake_scratch());
  ASSERT_TRUE(p.fits && !p.streamed) << p.reason;
  force_streamed(p, rel.r(), rel.s(), 4096, 3, OutputMode::Materialize, fake_scratch());
  EXPECT_TRUE(p.fits && p.streamed) << p.reason;
  EXPECT_EQ(p.chunk_rows, 4096);
  EXPECT_EQ(p.resident_runs, 3);
  EXPECT_EQ(p.landing_rows, 4096 * 2 * p.sizes.max_copies[1]);
  EXPECT_NE(p.reason.find("forced"), std::string::npos) << p.reason;
}

}  // namespace
}  // namespace mgjoin::copart
