// The bucketed flow's plan on the CPU: bucket groups cut from the sample so that each fits the GPUs,
// the fewest that do, a key heavier than a group spread over several (its pairs still meeting in
// exactly one group), the host memory the buckets take, and a refusal that says why. The PlanBuckets
// tests plan host groups only (Residency{0}); PlanResident the hybrid plans: resident groups sized by
// the memory beside pass 1, the host groups for the rest, and weighted splitters under both.
#include "engine/src/copart/bucket_plan.hpp"
#include "engine/src/copart/splitters.hpp"

#include "common/seed.hpp"
#include "copart/copart_test_util.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <string>
#include <random>
#include <vector>

namespace mgjoin::copart {
namespace {

using test::count_pairs;
using test::fake_scratch;
using test::Keys;
using test::route;
using test::uniform;
using test::view;

/// Every group's real rows stay within its bound, and the groups' joins add up to the join.
void expect_groups_hold_and_meet_once(const BucketPlan& p, const Keys& r, const Keys& s) {
  const auto rg = route(p.groups, Side::R, r), sg = route(p.groups, Side::S, s);
  std::uint64_t pairs = 0;
  for (int q = 0; q < p.groups.gpus; ++q) {
    EXPECT_LE(static_cast<std::int64_t>(rg[q].size()), p.sizes.bound[0][q]) << "group " << q;
    EXPECT_LE(static_cast<std::int64_t>(sg[q].size()), p.sizes.bound[1][q]) << "group " << q;
    pairs += count_pairs(rg[q], sg[q]);
  }
  EXPECT_EQ(pairs, count_pairs(r, s)) << "hot keys " << p.groups.hot_count;
}

BucketPlan plan_for(Keys& r, Keys& s, int gpus, std::uint64_t bytes, int groups = 0,
                    OutputMode output = OutputMode::Count, Residency residency = {0}) {
  return plan_buckets(sample_keys(view(r).key, kSampleRows, 3), sample_keys(view(s).key, kSampleRows, 4), view(r), view(s),
                      gpus, output, bytes, fake_scratch(), PayloadFlow::Auto, groups, Exchange::CopyEngines, residency);
}

TEST(PlanBuckets, TheFewestGroupsThatFitEachJoinedInCore) {
  std::mt19937_64 rng(test::announce_seed());
  Keys r = uniform(rng, 8'000'000, 1ull << 40), s = uniform(rng, 8'000'000, 1ull << 40);
  const std::uint64_t bytes = 112ull << 20;  // 128 MB of keys: neither in core nor streamed
  const CopartPlan copart = plan_copart(view(r), view(s), 1, OutputMode::Count, bytes, fake_scratch());
  ASSERT_FALSE(copart.fits) << copart.reason;
  const BucketPlan p = plan_for(r, s, 1, bytes);
  ASSERT_TRUE(p.fits) << p.reason;
  EXPECT_GE(p.groups.gpus, 2);
  EXPECT_NE(p.reason.find("co-partitioned, bucketed: " + std::to_string(p.groups.gpus) + " bucket group(s)"), std::string::npos) << p.reason;
  // Half of 112 MiB holds less than one in-core plan's slack: one group after the other.
  EXPECT_FALSE(p.overlap);
  EXPECT_EQ(p.reason.find("at once"), std::string::npos) << p.reason;
  // One group fewer does not fit.
  if (p.groups.gpus > 2) {
    EXPECT_FALSE(plan_for(r, s, 1, bytes, p.groups.gpus - 1).fits);
  }
  // The buckets hold every group's bound of keys (count: no payloads).
  std::uint64_t bound_rows = 0;
  for (int side = 0; side < 2; ++side)
    for (const auto b : p.sizes.bound[side]) bound_rows += b;
  EXPECT_EQ(p.host_bytes, bound_rows * 8);
  EXPECT_GE(p.host_bytes, (r.size() + s.size()) * 8);
  EXPECT_LE(p.pass1_device_bytes, bytes);
  EXPECT_EQ(p.device_bytes, bytes);
  expect_groups_hold_and_meet_once(p, r, s);
}

TEST(PlanBuckets, LessMemoryMeansMoreGroupsAndMaterializeCarriesPayloads) {
  std::mt19937_64 rng(test::announce_seed());
  Keys r = uniform(rng, 4'000'000, 1ull << 30), s = uniform(rng, 6'000'000, 1ull << 30);
  Keys rp(r.size()), sp(s.size());
  // Overlapped (two groups in halves of the memory) at 400 and 200 MiB, one by one below: the groups
  // grow as the memory shrinks within either kind.
  int previous = 0;
  bool previous_overlap = true;
  for (const std::uint64_t mib : {400, 200, 120, 90}) {
    const BucketPlan p = plan_for(r, s, 1, mib << 20);
    ASSERT_TRUE(p.fits) << mib << " MiB: " << p.reason;
    EXPECT_EQ(p.overlap, mib >= 200) << mib << " MiB: " << p.reason;
    if (p.overlap == previous_overlap) {
      EXPECT_GE(p.groups.gpus, previous) << mib << " MiB";
    }
    previous = p.groups.gpus;
    previous_overlap = p.overlap;
  }
  EXPECT_GT(previous, 2);
  const BucketPlan m = plan_buckets(sample_keys(view(r).key), sample_keys(view(s).key), view(r, &rp), view(s, &sp), 2,
                                    OutputMode::Materialize, 512ull << 20, fake_scratch(), PayloadFlow::Auto, 0,
                                    Exchange::CopyEngines, Residency{0});
  ASSERT_TRUE(m.fits) << m.reason;
  EXPECT_EQ(m.r.payload_bytes, 8);
  EXPECT_EQ(m.s.payload_bytes, 8);
  std::uint64_t bound_rows = 0;
  for (int side = 0; side < 2; ++side)
    for (const auto b : m.sizes.bound[side]) bound_rows += b;
  EXPECT_EQ(m.host_bytes, bound_rows * 16);
}

TEST(PlanBuckets, AKeyHeavierThanAGroupSpansGroupsAndItsPairsMeetOnce) {
  std::mt19937_64 rng(test::announce_seed());
  Keys r = uniform(rng, 3'000'000, 1ull << 32), s = uniform(rng, 9'000'000, 1ull << 32);
  for (std::size_t i = 0; i < r.size(); i += 1000) r[i] = 77;  // 3000 R rows of the hot key
  for (std::size_t i = 0; i < s.size(); i += 2) s[i] = 77;     // half of S: 36 MB of keys
  const BucketPlan p = plan_for(r, s, 1, 96ull << 20);
  ASSERT_TRUE(p.fits) << p.reason;
  ASSERT_GE(p.groups.hot_count, 1);
  EXPECT_EQ(p.groups.hot[0].key, 77u);
  EXPECT_GE(p.groups.hot[0].span, 2);
  EXPECT_EQ(p.groups.hot[0].split_side, Side::S);
  EXPECT_GE(p.sizes.max_copies[0], p.groups.hot[0].span);  // R's rows of it go to every group of the span
  expect_groups_hold_and_meet_once(p, r, s);
}

TEST(PlanBuckets, ForcedGroupsAndGroupSamplesPartitionTheSample) {
  std::mt19937_64 rng(test::announce_seed());
  Keys r = uniform(rng, 200'000, 5'000), s = uniform(rng, 300'000, 5'000);
  for (std::size_t i = 0; i < s.size(); i += 3) s[i] = 4'000;  // a third of S
  for (const int q : {2, 3, 7, 16}) {
    const BucketPlan p = plan_for(r, s, 2, 1ull << 30, q);
    ASSERT_TRUE(p.fits) << p.reason;
    ASSERT_EQ(p.groups.gpus, q);
    expect_groups_hold_and_meet_once(p, r, s);
    // Each sampled key of S is in the groups' samples once, or in every group of its span (R's copies).
    const KeySample sample = sample_keys(view(s).key, 4096, 9);
    std::size_t total = 0;
    for (int g = 0; g < q; ++g) total += group_sample(sample, Side::S, p.groups, g, 1).keys.size();
    EXPECT_EQ(total, sample.keys.size()) << q << " groups";
  }
}

/// A sample of `sampled` uniform keys standing for `rows` rows (the plan reads sizes and samples only).
KeySample sample_for(std::mt19937_64& rng, std::size_t sampled, std::int64_t rows) {
  Keys k = uniform(rng, sampled, 1ull << 40);
  std::sort(k.begin(), k.end());
  return {std::move(k), rows};
}

RelationView sized(std::int64_t rows) { return {{nullptr, rows, DType::UInt64}, std::nullopt}; }

TEST(PlanBuckets, TwoGroupsAtOnceWhenHalfTheMemoryHoldsEachInCore) {
  std::mt19937_64 rng(test::announce_seed());
  // 4·10^8 rows a side (3.2 GB of keys each) on GPUs of 2 GiB.
  const std::int64_t rows = 400'000'000;
  const KeySample rs = sample_for(rng, 1 << 20, rows), ss = sample_for(rng, 1 << 20, rows);
  const std::uint64_t bytes = 2ull << 30;
  for (const int gpus : {1, 2}) {
    const BucketPlan p = plan_buckets(rs, ss, sized(rows), sized(rows), gpus, OutputMode::Count, bytes, fake_scratch(),
                                      PayloadFlow::Auto, 0, Exchange::CopyEngines, Residency{0});
    ASSERT_TRUE(p.fits) << p.reason;
    ASSERT_TRUE(p.overlap) << p.reason;
    EXPECT_NE(p.reason.find("two on the GPUs at once"), std::string::npos) << p.reason;
    // Two groups' pinned staging, each in a block of its own.
    EXPECT_EQ(p.pinned_bytes, std::max<std::uint64_t>(2 * 4096, 2 * (p.group_pinned_bytes + 64)));
    // Every group fits in core in a half, by its sample.
    for (int q = 0; q < p.groups.gpus; ++q) {
      const CopartPlan g = plan_copart(group_sample(rs, Side::R, p.groups, q, p.sizes.bound[0][q]),
                                       group_sample(ss, Side::S, p.groups, q, p.sizes.bound[1][q]),
                                       sized(p.sizes.bound[0][q]), sized(p.sizes.bound[1][q]), gpus, OutputMode::Count,
                                       overlap_half(bytes), fake_scratch());
      EXPECT_TRUE(g.fits && !g.streamed) << "group " << q << ": " << g.reason;
    }
    // The fewest such groups: one fewer is planned one by one.
    ASSERT_GT(p.groups.gpus, 2);
    const BucketPlan fewer =
        plan_buckets(rs, ss, sized(rows), sized(rows), gpus, OutputMode::Count, bytes, fake_scratch(), PayloadFlow::Auto,
                     p.groups.gpus - 1, Exchange::CopyEngines, Residency{0});
    EXPECT_FALSE(fewer.overlap) << fewer.reason;
  }
}

/// Bytes of the rows the plan's groups [first, last) hold by their estimates (8-byte keys, count).
std::uint64_t estimated_key_bytes(const BucketPlan& p, int first, int last) {
  std::uint64_t rows = 0;
  for (int side = 0; side < 2; ++side)
    for (int q = first; q < last; ++q) rows += static_cast<std::uint64_t>(p.sizes.estimate[side][q]);
  return rows * 8;
}

TEST(PlanResident, GroupsStayOnTheGpusBesidePass1AndMoreMemoryKeepsMore) {
  std::mt19937_64 rng(test::announce_seed());
  // 4·10^8 rows a side (3.2 GB of keys each), as above; GPUs of 2 and 4 GiB.
  const std::int64_t rows = 400'000'000;
  const KeySample rs = sample_for(rng, 1 << 20, rows), ss = sample_for(rng, 1 << 20, rows);
  const double all = 2.0 * rows * 8;
  for (const int gpus : {1, 2}) {
    SCOPED_TRACE(std::to_string(gpus) + " GPU(s)");
    double previous_share = 0;
    for (const std::uint64_t bytes : {2ull << 30, 4ull << 30}) {
      const BucketPlan p = plan_buckets(rs, ss, sized(rows), sized(rows), gpus, OutputMode::Count, bytes, fake_scratch());
      ASSERT_TRUE(p.fits) << p.reason;
      ASSERT_EQ(p.resident, gpus) << p.reason;
      EXPECT_NE(p.reason.find(std::to_string(gpus) + " resident on the GPUs"), std::string::npos) << p.reason;
      const int host = p.host_groups();
      ASSERT_GE(host, 1);
      EXPECT_EQ(p.resident_gpu(host - 1), -1);
      for (int k = 0; k < gpus; ++k) EXPECT_EQ(p.resident_gpu(host + k), k);
      // Each resident group's bound fits beside pass 1's slots, and the one-GPU flow fits beside it.
      for (int q = host; q < p.groups.gpus; ++q) {
        const std::uint64_t kept = static_cast<std::uint64_t>(p.sizes.bound[0][q] + p.sizes.bound[1][q]) * 8;
        EXPECT_LE(kept, p.resident_bytes);
        EXPECT_LE(kept + p.pass1_device_bytes, bytes);
        const CopartPlan one = plan_copart(group_sample(rs, Side::R, p.groups, q, p.sizes.bound[0][q]),
                                           group_sample(ss, Side::S, p.groups, q, p.sizes.bound[1][q]),
                                           sized(p.sizes.bound[0][q]), sized(p.sizes.bound[1][q]), 1, OutputMode::Count,
                                           bytes - p.resident_bytes, fake_scratch(), PayloadFlow::Carry);
        EXPECT_TRUE(one.fits && !one.streamed) << "resident group " << q << ": " << one.reason;
      }
      // The host buckets hold the host groups only, and what pass 1 writes out shrinks by the share kept.
      std::uint64_t host_rows = 0;
      for (int side = 0; side < 2; ++side)
        for (int q = 0; q < host; ++q) host_rows += static_cast<std::uint64_t>(p.sizes.bound[side][q]);
      EXPECT_EQ(p.host_bytes, host_rows * 8);
      EXPECT_EQ(p.estimated_bytes, estimated_key_bytes(p, 0, host));
      const double share = static_cast<double>(estimated_key_bytes(p, host, p.groups.gpus)) / all;
      EXPECT_GT(share, 0.02);
      EXPECT_GT(share, previous_share) << "more memory keeps more on the GPUs";
      previous_share = share;
      // Without residency every byte goes out to the buckets.
      const BucketPlan none = plan_buckets(rs, ss, sized(rows), sized(rows), gpus, OutputMode::Count, bytes, fake_scratch(),
                                           PayloadFlow::Auto, 0, Exchange::CopyEngines, Residency{0});
      ASSERT_TRUE(none.fits) << none.reason;
      EXPECT_EQ(none.resident, 0);
      EXPECT_EQ(none.reason.find("resident"), std::string::npos) << none.reason;
      EXPECT_NEAR(static_cast<double>(p.estimated_bytes), (1 - share) * static_cast<double>(none.estimated_bytes),
                  0.01 * all);
    }
  }
}

TEST(PlanResident, ForcedSharesHoldEveryRowAndPairsMeetOnce) {
  std::mt19937_64 rng(test::announce_seed());
  Keys r = uniform(rng, 200'000, 50'000), s = uniform(rng, 300'000, 50'000);
  for (std::size_t i = 0; i < s.size(); i += 3) s[i] = 40'000;  // a third of S: a hot key across groups
  const double all = static_cast<double>(r.size() + s.size());
  for (const int gpus : {1, 2})
    for (const int host : {1, 3})
      for (const double share : {0.1, 0.6}) {
        SCOPED_TRACE(std::to_string(gpus) + " GPU(s), " + std::to_string(host) + " host group(s), share " + std::to_string(share));
        const BucketPlan p = plan_for(r, s, gpus, 1ull << 30, host, OutputMode::Count, Residency{share});
        ASSERT_TRUE(p.fits) << p.reason;
        ASSERT_EQ(p.resident, gpus);
        ASSERT_EQ(p.host_groups(), host);
        expect_groups_hold_and_meet_once(p, r, s);
        // The resident groups take about `share` of the tuples between them (a hot key's copied side
        // counts on every group of its span).
        double kept = 0;
        for (int q = host; q < p.groups.gpus; ++q) kept += static_cast<double>(p.sizes.estimate[0][q] + p.sizes.estimate[1][q]);
        EXPECT_NEAR(kept / all, share, 0.12);
      }
}

TEST(PlanResident, AForcedShareThatDoesNotFitIsRefusedWithItsReason) {
  std::mt19937_64 rng(test::announce_seed());
  Keys r = uniform(rng, 8'000'000, 1ull << 40), s = uniform(rng, 8'000'000, 1ull << 40);
  // 0.6 of 128 MB of keys on one GPU of 112 MiB: the group leaves pass 1 nothing.
  const BucketPlan p = plan_for(r, s, 1, 112ull << 20, 0, OutputMode::Count, Residency{0.6});
  EXPECT_FALSE(p.fits);
  EXPECT_NE(p.reason.find("not bucketed with resident groups: a resident group of"), std::string::npos) << p.reason;
  // Resident groups on 16 GPUs beside a host group pass the 16 groups a plan cuts: refused, not thrown.
  const BucketPlan wide = plan_for(r, s, 16, 8ull << 30, 0, OutputMode::Count, Residency{0.3});
  EXPECT_FALSE(wide.fits);
  EXPECT_NE(wide.reason.find("16 resident groups beside 1 host group(s) pass the 16 groups a plan cuts"), std::string::npos)
      << wide.reason;
  // The planner's own choice at that memory: a share small enough, or none.
  const BucketPlan chosen = plan_for(r, s, 1, 112ull << 20, 0, OutputMode::Count, Residency{});
  EXPECT_TRUE(chosen.fits) << chosen.reason;
}

TEST(PlanResident, TheKnobParsesAutoOffAndShares) {
  EXPECT_EQ(parse_residency(nullptr).share, 0);
  EXPECT_EQ(parse_residency("").share, 0);
  EXPECT_LT(parse_residency("auto").share, 0);
  EXPECT_LT(Residency{}.share, 0);  // the planner's choice where a caller asks plan_buckets directly
  EXPECT_EQ(parse_residency("off").share, 0);
  EXPECT_EQ(parse_residency("0").share, 0);
  EXPECT_DOUBLE_EQ(parse_residency("0.25").share, 0.25);
  for (const char* bad : {"1", "1.5", "-0.1", "half", "0.3x"}) {
    try {
      parse_residency(bad);
      ADD_FAILURE() << bad << " was accepted";
    } catch (const InputError& e) {
      EXPECT_NE(std::string(e.what()).find(std::string("MGJOIN_BUCKET_RESIDENT '") + bad + "'"), std::string::npos) << e.what();
    }
  }
}

TEST(ChooseShares, DestinationsTakeTheirWeightedShares) {
  std::mt19937_64 rng(test::announce_seed());
  Keys r = uniform(rng, 100'000, 1ull << 40), s = uniform(rng, 100'000, 1ull << 40);
  std::sort(r.begin(), r.end());
  std::sort(s.begin(), s.end());
  const KeySample rs{r, static_cast<std::int64_t>(r.size())}, ss{s, static_cast<std::int64_t>(s.size())};
  const std::vector<double> shares = {1, 3, 1, 5};  // tenths of the whole
  const PartitionPlan plan = choose_plan(rs, ss, 4, {}, shares);
  const auto rg = route(plan, Side::R, r), sg = route(plan, Side::S, s);
  for (int d = 0; d < 4; ++d)
    EXPECT_NEAR(static_cast<double>(rg[d].size() + sg[d].size()) / 200'000.0, shares[d] / 10, 0.005) << "destination " << d;
  EXPECT_THROW(choose_plan(rs, ss, 4, {}, std::vector<double>{1, 2}), Error);
  EXPECT_THROW(choose_plan(rs, ss, 2, {}, std::vector<double>{1, 0}), Error);
}

TEST(PlanBuckets, OverlapHalvesAndTheirAlignmentFitTheMemory) {
  for (const std::uint64_t bytes : {0ull, 511ull, 513ull, 1025ull, 1ull << 20, (8ull << 30) + 77, 80ull << 30}) {
    const std::uint64_t h = overlap_half(bytes);
    EXPECT_EQ(h % 128, 0u) << bytes;
    EXPECT_LE(2 * (h + 128), std::max<std::uint64_t>(bytes, 256)) << bytes;
    if (bytes >= 1024) {
      EXPECT_GE(h + 512, bytes / 2) << bytes;
    }
  }
}

TEST(PlanBuckets, RefusesWhatEvenSixteenGroupsCannotHoldAndSaysWhy) {
  std::mt19937_64 rng(test::announce_seed());
  Keys r = uniform(rng, 8'000'000, 1ull << 40), s = uniform(rng, 8'000'000, 1ull << 40);
  const BucketPlan p = plan_for(r, s, 1, 68ull << 20);  // 4 MiB beside the slack
  EXPECT_FALSE(p.fits);
  EXPECT_NE(p.reason.find("not bucketed"), std::string::npos) << p.reason;
}

}  // namespace
}  // namespace mgjoin::copart
