// The co-partitioned flow in passes, planned on the CPU (engine/src/copart/pass_plan.hpp): the passes'
// key ranges cover every key exactly once (a key on a range's bound included), each pass's partitions
// hold the real rows that reach them, the pairs met pass by pass add up to the join, the fewest passes
// that fit are taken, and where none fit (one GPU, a key heavier than a pass, too little memory) the
// reason says why. Rows are routed by destinations(), the code the partition kernel runs.
#include "engine/src/copart/pass_plan.hpp"
#include "engine/src/copart/splitters.hpp"

#include "common/seed.hpp"
#include "copart/copart_test_util.hpp"

#include <mgjoin/error.hpp>

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <limits>
#include <random>
#include <string>
#include <utility>
#include <vector>

namespace mgjoin::copart {
namespace {

using test::count_pairs;
using test::fake_scratch;
using test::Keys;
using test::route;
using test::uniform;
using test::view;

constexpr std::uint64_t kHighest = std::numeric_limits<std::uint64_t>::max();

bool has(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

PassPlan plan_for(Keys& r, Keys& s, int gpus, std::uint64_t bytes, int passes = 0, OutputMode output = OutputMode::Count,
                  Keys* rp = nullptr, Keys* sp = nullptr) {
  return plan_passes(sample_keys(view(r).key, kSampleRows, 3), sample_keys(view(s).key, kSampleRows, 4), view(r, rp),
                     view(s, sp), gpus, output, bytes, fake_scratch(), passes);
}

/// The smallest GPU memory (in 4 MiB steps) at which the plan in passes fits; 0 if none below 1 GiB.
std::uint64_t first_fitting(Keys& r, Keys& s, int gpus, int passes = 0) {
  const KeySample rs = sample_keys(view(r).key, kSampleRows, 3), ss = sample_keys(view(s).key, kSampleRows, 4);
  for (std::uint64_t mib = 64; mib <= 1024; mib += 4)
    if (plan_passes(rs, ss, view(r), view(s), gpus, OutputMode::Count, mib << 20, fake_scratch(), passes).fits) return mib << 20;
  return 0;
}

/// GPUs of a pass: its destinations but the first pass's spill.
int gpus_of(const CopartPlan& pass) { return pass.partitions.gpus - (pass.partitions.spill_side >= 0 ? 1 : 0); }

/// The passes' ranges follow each other from the smallest key to the largest; every row of R and S
/// reaches the GPUs of exactly one pass, and there at most their capacity on each; the pairs met on each
/// pass's GPUs add up to the whole join; the first pass's spill takes exactly X's rows above its range,
/// within the plan's bound.
void expect_passes_cover_and_meet_once(const PassPlan& p, const Keys& r, const Keys& s) {
  ASSERT_TRUE(p.fits) << p.reason;
  EXPECT_EQ(p.passes.front().partitions.lowest, 0u);
  EXPECT_EQ(p.passes.back().partitions.highest, kHighest);
  std::uint64_t pairs = 0;
  for (int q = 0; q < p.count(); ++q) {
    const CopartPlan& pass = p.passes[q];
    if (q > 0) {
      EXPECT_EQ(pass.partitions.lowest, p.passes[q - 1].partitions.highest + 1) << "pass " << q;
      EXPECT_EQ(pass.partitions.spill_side, -1) << "only the first pass spills";
    }
    EXPECT_LE(pass.partitions.lowest, pass.partitions.highest) << "pass " << q;
    const auto rg = route(pass.partitions, Side::R, r), sg = route(pass.partitions, Side::S, s);
    const int g = gpus_of(pass);
    for (int d = 0; d < g; ++d) {
      EXPECT_LE(static_cast<std::int64_t>(rg[d].size()), pass.sizes.bound[0][d]) << "pass " << q << ", GPU " << d;
      EXPECT_LE(static_cast<std::int64_t>(sg[d].size()), pass.sizes.bound[1][d]) << "pass " << q << ", GPU " << d;
      pairs += count_pairs(rg[d], sg[d]);
    }
    if (g < pass.partitions.gpus) {
      const Keys& x = p.spill_side == Side::R ? r : s;
      const auto& spilled = (p.spill_side == Side::R ? rg : sg)[g];
      const auto& other = (p.spill_side == Side::R ? sg : rg)[g];
      const auto above = std::count_if(x.begin(), x.end(), [&](std::uint64_t k) { return k > pass.partitions.highest; });
      EXPECT_EQ(static_cast<std::int64_t>(spilled.size()), above) << "the spill takes X's rows above the first range";
      EXPECT_LE(static_cast<std::int64_t>(spilled.size()), p.spill_rows);
      EXPECT_TRUE(other.empty()) << "Y is never spilled";
    }
  }
  // Every row reaches the GPUs of one pass (and there one GPU, or a hot key's run of them).
  for (const auto& [side, keys] : {std::pair{Side::R, &r}, std::pair{Side::S, &s}})
    for (std::size_t row = 0; row < keys->size(); ++row) {
      int passes = 0;
      for (const CopartPlan& pass : p.passes) {
        const Destinations d = destinations(pass.partitions, side, (*keys)[row], row);
        passes += d.count > 0 && d.first < gpus_of(pass);
      }
      ASSERT_EQ(passes, 1) << "row " << row << " of " << (side == Side::R ? "R" : "S") << ", key " << (*keys)[row];
    }
  EXPECT_EQ(pairs, count_pairs(r, s));
}

TEST(PlanPasses, WhereOnlyPartOfXFitsTheFewestPassesStreamIt) {
  std::mt19937_64 rng(test::announce_seed());
  // S four times R: a pass streams S past its part of R (in core, a pass would hold its part of S too).
  Keys r = uniform(rng, 3'000'000, 1ull << 40), s = uniform(rng, 12'000'001, 1ull << 40);
  for (const int g : {2, 4}) {
    SCOPED_TRACE("g = " + std::to_string(g));
    const std::uint64_t bytes = first_fitting(r, s, g, 2);
    ASSERT_GT(bytes, 0u) << "no memory fits two passes";
    // Where two passes first fit, the co-partitioned plan fits neither in core nor streamed: only part
    // of R (the smaller relation, resident) fits beside the stream.
    const CopartPlan whole = plan_copart(view(r), view(s), g, OutputMode::Count, bytes, fake_scratch());
    EXPECT_FALSE(whole.fits) << whole.reason;
    const PassPlan p = plan_for(r, s, g, bytes);
    EXPECT_EQ(p.count(), 2) << p.reason;
    EXPECT_TRUE(has(p.reason, "co-partitioned in 2 passes by key range")) << p.reason;
    for (const CopartPlan& pass : p.passes) {
      // On more GPUs a pass's fixed buffers (landings of g chunks) outweigh its share of S: in core.
      if (g == 2) {
        EXPECT_TRUE(pass.streamed) << pass.reason;
        EXPECT_EQ(pass.probe, Side::S) << "the larger relation streams";
      }
      EXPECT_EQ(gpus_of(pass), g);
      EXPECT_FALSE(pass.late) << "payloads carried: late payloads would replay a stream";
      for (const GpuBudget& b : pass.budget) EXPECT_LE(b.peak(), bytes);
    }
    if (g == 2) {
      // The first pass, streamed, spills R's rows beyond its range; the second reads R from there.
      EXPECT_EQ(p.spill_side, Side::R);
      EXPECT_GE(p.spill_rows, static_cast<std::int64_t>(r.size() / 2));
      EXPECT_LT(p.spill_rows, static_cast<std::int64_t>(r.size() * 6 / 10));
      EXPECT_TRUE(has(p.reason, "spilling R's rows beyond its range to the host")) << p.reason;
      const PassBytes bytes = pass_bytes(p, r.size() * 8, s.size() * 8);
      EXPECT_EQ(bytes.spilled, r.size() * 8 / 2);
      EXPECT_EQ(bytes.in, 2 * s.size() * 8 + r.size() * 8 + r.size() * 8 / 2);
      expect_passes_cover_and_meet_once(p, r, s);  // (routing 15M rows a plan takes seconds: once)
    }
    // Less memory takes more passes (each pass streamed or in core), up to kMaxPasses.
    const std::uint64_t least = first_fitting(r, s, g);
    ASSERT_GT(least, 0u);
    EXPECT_LE(least, bytes);
    const PassPlan more = plan_for(r, s, g, least);
    EXPECT_GE(more.count(), 2) << more.reason;
    if (least < bytes) {
      EXPECT_GT(more.count(), 2) << more.reason;
    }
    for (const CopartPlan& pass : more.passes)
      for (const GpuBudget& b : pass.budget) EXPECT_LE(b.peak(), least);
    EXPECT_FALSE(plan_for(r, s, g, least - (4ull << 20)).fits);
  }
  // A count asked for is taken where it fits.
  const PassPlan three = plan_for(r, s, 2, 4ull << 30, 3);
  EXPECT_EQ(three.count(), 3) << three.reason;
  expect_passes_cover_and_meet_once(three, r, s);
}

TEST(PlanPasses, MaterializedPassesCarryPayloadsAndTakeTheirPinnedStaging) {
  std::mt19937_64 rng(test::announce_seed());
  Keys r = uniform(rng, 2'000'000, 1ull << 36), s = uniform(rng, 3'000'000, 1ull << 36);
  Keys rp(r.size()), sp(s.size());
  const PassPlan p = plan_for(r, s, 2, 4ull << 30, 2, OutputMode::Materialize, &rp, &sp);
  ASSERT_TRUE(p.fits) << p.reason;
  for (const CopartPlan& pass : p.passes) {
    EXPECT_EQ(pass.r.payload_bytes, 8);
    EXPECT_EQ(pass.s.payload_bytes, 8);
    EXPECT_FALSE(pass.late);
    EXPECT_GE(p.pinned_bytes, pinned_bytes_needed(pass, OutputMode::Materialize));
  }
  expect_passes_cover_and_meet_once(p, r, s);
}

// Keys on the ranges' bounds, many rows each: a key equal to a range's last key belongs to that pass
// alone, however many rows it has on either side; the ordered form's ends (0 and 2^64 - 1) too; in core
// and streamed with the first pass's spill.
TEST(PlanPasses, DuplicatesOnTheBoundsAndTheExtremesMeetInOnePass) {
  std::mt19937_64 rng(test::announce_seed());
  Keys r, s;
  std::uniform_int_distribution<int> pick(0, 59);
  for (int i = 0; i < 300'000; ++i) r.push_back(static_cast<std::uint64_t>(pick(rng)) * 1000);
  for (int i = 0; i < 500'001; ++i) s.push_back(static_cast<std::uint64_t>(pick(rng)) * 1000);
  for (int i = 0; i < 50; ++i) {
    r.push_back(0);
    r.push_back(kHighest);
    s.push_back(kHighest);
    s.push_back(kHighest - 1);
  }
  const KeySample rs = sample_keys(view(r).key, kSampleRows, 3), ss = sample_keys(view(s).key, kSampleRows, 4);
  for (const int passes : {2, 3, 4}) {
    PassPlan p = plan_for(r, s, 2, 4ull << 30, passes);
    ASSERT_EQ(p.count(), passes) << p.reason;
    expect_passes_cover_and_meet_once(p, r, s);
    // The same passes streamed, the first spilling R's rows above its range (at 4 GiB they ran in core).
    for (CopartPlan& pass : p.passes) force_streamed(pass, view(r), view(s), 1 << 16, 2, OutputMode::Count, fake_scratch());
    spill_first_pass(p, rs, ss, view(r), view(s), OutputMode::Count, fake_scratch());
    ASSERT_GT(p.spill_rows, 0) << p.reason;
    EXPECT_EQ(p.spill_side, Side::R);
    expect_passes_cover_and_meet_once(p, r, s);
    // Once only: a second spill would count its destination as a GPU.
    const int destinations = p.passes.front().partitions.gpus;
    spill_first_pass(p, rs, ss, view(r), view(s), OutputMode::Count, fake_scratch());
    EXPECT_EQ(p.passes.front().partitions.gpus, destinations);
  }
}

// A key holding half of S is lighter than a pass: it stays in one pass, whose own plan spreads it over
// that pass's GPUs (its R rows copied to each).
TEST(PlanPasses, AKeyHeavierThanAGpuStaysInOnePass) {
  std::mt19937_64 rng(test::announce_seed());
  Keys r = uniform(rng, 200'000, 1ull << 30), s = uniform(rng, 400'001, 1ull << 30);
  for (std::size_t i = 0; i < s.size(); i += 2) s[i] = 12345;
  for (std::size_t i = 0; i < r.size(); i += 1000) r[i] = 12345;
  for (const int g : {2, 4}) {
    const PassPlan p = plan_for(r, s, g, 4ull << 30, 2);
    ASSERT_TRUE(p.fits) << p.reason;
    int hot = 0;
    for (const CopartPlan& pass : p.passes) hot += pass.partitions.hot_count;
    EXPECT_EQ(hot, 1) << "the key is hot in the one pass that holds it";
    expect_passes_cover_and_meet_once(p, r, s);
  }
}

TEST(PlanPasses, RefusalsSayWhy) {
  std::mt19937_64 rng(test::announce_seed());
  Keys r = uniform(rng, 1'000'000, 1ull << 40), s = uniform(rng, 2'000'000, 1ull << 40);
  const PassPlan one = plan_for(r, s, 1, 4ull << 30);
  EXPECT_FALSE(one.fits);
  EXPECT_TRUE(one.passes.empty());
  EXPECT_TRUE(has(one.reason, "not in passes: one GPU copies a relation into place")) << one.reason;
  // Too little memory for even kMaxPasses passes: the last pass count's reason.
  const PassPlan small = plan_for(r, s, 2, 64ull << 20);
  EXPECT_FALSE(small.fits);
  EXPECT_TRUE(has(small.reason, "not in passes: pass 1 of " + std::to_string(kMaxPasses) + ": ")) << small.reason;
  // A key holding most of R and S would span two ranges (one holding half of S fits one pass: see
  // AKeyHeavierThanAGpuStaysInOnePass).
  for (std::size_t i = 0; i < s.size(); ++i) s[i] = i % 10 ? 12345 : s[i];
  for (std::size_t i = 0; i < r.size(); i += 2) r[i] = 12345;
  const PassPlan hot = plan_for(r, s, 2, 4ull << 30);
  EXPECT_FALSE(hot.fits);
  EXPECT_TRUE(has(hot.reason, "a key heavier than a pass's share would span two passes")) << hot.reason;
}

TEST(PlanPasses, TheSettingParses) {
  EXPECT_EQ(parse_passes(nullptr), 0);
  EXPECT_EQ(parse_passes(""), 0);
  EXPECT_EQ(parse_passes("auto"), 0);
  EXPECT_EQ(parse_passes("off"), -1);
  EXPECT_EQ(parse_passes("2"), 2);
  EXPECT_EQ(parse_passes("4"), 4);
  for (const char* bad : {"1", "5", "0", "22", "two", " 2"}) {
    try {
      parse_passes(bad);
      ADD_FAILURE() << "MGJOIN_COPART_PASSES='" << bad << "' was accepted";
    } catch (const InputError& e) {
      EXPECT_TRUE(has(e.what(), std::string("MGJOIN_COPART_PASSES '") + bad + "'")) << e.what();
    }
  }
}

}  // namespace
}  // namespace mgjoin::copart
