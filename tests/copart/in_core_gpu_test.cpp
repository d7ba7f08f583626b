// The co-partitioned flow in core on the GPUs (beside the streamed and bucketed variants' suites) against
// the reference join (tests/common/reference_join.hpp), which shares no code with it:
// random and adversarial inputs (all keys equal, a hot key larger than a partition, keys sharing their
// top bits, Zipf, sorted and reverse, empty and one-row relations, signed extremes, sizes not divisible
// by g), 4- and 8-byte keys, count and materialized, g = 1 and 2. Also: the inputs stay untouched, the
// output comes in key order, and the planner's choice between the flows.
#include <mgjoin/engine.hpp>
#include <mgjoin/error.hpp>
#include <mgjoin/generate.hpp>
#include <mgjoin/join.hpp>

#include "alloc/host_memory.hpp"
#include "common/engines.hpp"
#include "common/gpu.hpp"
#include "common/reference_join.hpp"
#include "common/relations.hpp"
#include "common/seed.hpp"
#include "common/tier.hpp"

#include <gtest/gtest.h>

#include <cstdlib>
#include <functional>
#include <limits>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <type_traits>
#include <vector>

namespace mgjoin::test {
namespace {

template <class Key>
using KeyMaker = std::function<std::vector<Key>(std::mt19937_64&, std::size_t rows, bool is_s)>;

bool same_bytes(const HostColumn& a, const HostColumn& b) {
  return a.bytes() == b.bytes() && (a.bytes() == 0 || std::memcmp(a.data(), b.data(), a.bytes()) == 0);
}

template <class Key>
void expect_key_order(const HostColumn& key) {
  const Key* k = key.as<Key>();
  for (std::int64_t i = 1; i < key.size(); ++i)
    if (k[i] < k[i - 1]) {
      ADD_FAILURE() << "output key " << i << " (" << +k[i] << ") below its predecessor (" << +k[i - 1] << ")";
      return;
    }
}

struct Shape {
  std::size_t r_rows, s_rows;
  int payload_bytes;
};

Engine& engine_for(int gpus) { return shared_engines().get(gpus, 0); }

/// Joins copies of R and S with the co-partitioned flow on g GPUs and checks everything it promises;
/// `expected` is reference_tuples(r, s), computed once for every join of the same R and S.
template <class Key>
void check_copart(const Relation& r, const Relation& s, const std::vector<Tuple>& expected, int gpus, OutputMode output,
                  PayloadFlow payloads = PayloadFlow::Auto, Exchange exchange = Exchange::CopyEngines) {
  Relation rc = copy_of(r), sc = copy_of(s);
  JoinOptions options;
  options.strategy = JoinStrategy::CoPartitioned;
  options.output = output;
  options.exchange = exchange;
  options.payloads = payloads;
  const JoinResult result = engine_for(gpus).join(rc.view(), sc.view(), options);
  EXPECT_EQ(result.strategy, JoinStrategy::CoPartitioned) << result.strategy_reason;
  if (output == OutputMode::Materialize && (r.payload || s.payload) && payloads != PayloadFlow::Auto) {
    const char* expected_flow = payloads == PayloadFlow::Late ? "late payloads" : "payloads carried";
    EXPECT_NE(result.strategy_reason.find(expected_flow), std::string::npos) << result.strategy_reason;
  }
  EXPECT_TRUE(same_bytes(rc.key, r.key) && same_bytes(sc.key, s.key)) << "the join modified its input keys";
  if (r.payload) {
    EXPECT_TRUE(same_bytes(*rc.payload, *r.payload)) << "the join modified R's payload";
  }
  if (s.payload) {
    EXPECT_TRUE(same_bytes(*sc.payload, *s.payload)) << "the join modified S's payload";
  }
  EXPECT_EQ(result.count, expected.size());
  if (output != OutputMode::Materialize) return;
  ASSERT_EQ(result.key.size(), static_cast<std::int64_t>(expected.size()));
  EXPECT_EQ(result.r_payload.size(), r.payload ? result.key.size() : 0);
  EXPECT_EQ(result.s_payload.size(), s.payload ? result.key.size() : 0);
  expect_key_order<Key>(result.key);
  EXPECT_TRUE(result_tuples(result) == expected) << "the output tuples differ from the reference";
}

template <class Key>
void run_case(const KeyMaker<Key>& make, Shape shape, const std::string& name) {
  const std::uint64_t seed = announce_seed();
  for (int g = 1; g <= 2; ++g) {
    if (gpu_count() < g) continue;
    std::mt19937_64 rng(seed + g);
    const Relation r = relation_of(make(rng, shape.r_rows, false), shape.payload_bytes, 0);
    const Relation s = relation_of(make(rng, shape.s_rows, true), shape.payload_bytes, 1u << 30);
    const std::vector<Tuple> expected = reference_tuples(r, s);
    {
      SCOPED_TRACE(name + ", g = " + std::to_string(g) + ", count");
      check_copart<Key>(r, s, expected, g, OutputMode::Count);
    }
    for (const PayloadFlow payloads : {PayloadFlow::Carry, PayloadFlow::Late}) {
      SCOPED_TRACE(name + ", g = " + std::to_string(g) + ", materialize, " +
                   (payloads == PayloadFlow::Late ? "late payloads" : "payloads carried"));
      check_copart<Key>(r, s, expected, g, OutputMode::Materialize, payloads);
    }
  }
}

template <class Key>
Key uniform_key(std::mt19937_64& rng, Key lo = std::numeric_limits<Key>::min(), Key hi = std::numeric_limits<Key>::max()) {
  return std::uniform_int_distribution<Key>(lo, hi)(rng);
}

template <class Key>
KeyMaker<Key> uniform_in(Key lo, Key hi) {
  return [=](std::mt19937_64& rng, std::size_t n, bool) {
    std::vector<Key> k(n);
    for (auto& x : k) x = uniform_key<Key>(rng, lo, hi);
    return k;
  };
}

template <class Key>
KeyMaker<Key> full_range() {
  return uniform_in<Key>(std::numeric_limits<Key>::min(), std::numeric_limits<Key>::max());
}

template <class Key>
class CopartFlow : public ::testing::Test {
 protected:
  void SetUp() override { MGJOIN_REQUIRE_GPUS(1); }
};
using KeyTypes = ::testing::Types<std::int32_t, std::uint32_t, std::int64_t, std::uint64_t>;
TYPED_TEST_SUITE(CopartFlow, KeyTypes);

// Quick: a tenth of the rows (odd still: not divisible by g); the in-core flow's partitions, runs and
// output windows are the same branches at every size below a window (OutputLargerThanOneWindow keeps its).
TYPED_TEST(CopartFlow, RandomKeysSizesNotDivisibleByG) {
  using Key = TypeParam;
  run_case<Key>(full_range<Key>(), per_tier<Shape>({30'001, 40'003, 8}, {300'001, 400'003, 8}), "uniform, 8-byte payloads");
  run_case<Key>(uniform_in<Key>(0, 999), per_tier<Shape>({5'001, 7'003, 4}, {50'001, 70'003, 4}), "small domain, m:n");
  run_case<Key>(full_range<Key>(), per_tier<Shape>({10'001, 9'999, 0}, {100'001, 99'999, 0}), "uniform, key only");
}

TYPED_TEST(CopartFlow, AllKeysEqual) {
  using Key = TypeParam;
  // Quick: 7 * 10^5 tuples instead of 6 * 10^6, every one of them still the same key on every GPU.
  run_case<Key>(uniform_in<Key>(7, 7), per_tier<Shape>({700, 1001, 8}, {2000, 3001, 8}), "all keys equal");
}

TYPED_TEST(CopartFlow, HotKeyHoldsHalfOfS) {
  using Key = TypeParam;
  const KeyMaker<Key> hot_s = [](std::mt19937_64& rng, std::size_t n, bool is_s) {
    std::vector<Key> k(n);
    for (std::size_t i = 0; i < n; ++i) k[i] = uniform_key<Key>(rng);
    // Mid-range, so that at g = 2 it falls across the boundary, and in R three times.
    const Key hot = std::is_signed_v<Key> ? Key{0} : Key(std::numeric_limits<Key>::max() / 2);
    for (std::size_t i = 0; i < n; i += is_s ? 2 : n / 3 + 1) k[i] = hot;
    return k;
  };
  // Quick: a tenth of the rows; the hot key is still half of one side, more than a partition at g = 2.
  run_case<Key>(hot_s, per_tier<Shape>({20'000, 20'001, 8}, {200'000, 200'001, 8}), "hot key in half of S");
  const KeyMaker<Key> hot_r = [&](std::mt19937_64& rng, std::size_t n, bool is_s) { return hot_s(rng, n, !is_s); };
  run_case<Key>(hot_r, per_tier<Shape>({20'001, 10'000, 4}, {200'001, 100'000, 4}), "hot key in half of R");
}

TYPED_TEST(CopartFlow, KeysSharingTheirTopBits) {
  using Key = TypeParam;
  const Key base = sizeof(Key) == 8 ? Key(Key(1) << 40) : Key(1 << 30);
  // Quick: a third of the rows, over the same key range (every key still shares the top bits).
  run_case<Key>(uniform_in<Key>(base, Key(base + (sizeof(Key) == 8 ? 65535 : 1023))),
                per_tier<Shape>({10'000, 10'001, 8}, {30'000, 30'001, 8}), "shared top bits");
}

TYPED_TEST(CopartFlow, SortedAndReverseInputs) {
  using Key = TypeParam;
  const KeyMaker<Key> ordered = [](std::mt19937_64& rng, std::size_t n, bool is_s) {
    std::vector<Key> k(n);
    for (auto& x : k) x = uniform_key<Key>(rng, Key(0), Key(100'000));
    if (is_s)
      std::sort(k.rbegin(), k.rend());
    else
      std::sort(k.begin(), k.end());
    return k;
  };
  // Quick: a quarter of the rows, still sorted one way and the other across every partition.
  run_case<Key>(ordered, per_tier<Shape>({30'000, 30'001, 8}, {120'000, 130'001, 8}), "R sorted, S reverse-sorted");
}

TYPED_TEST(CopartFlow, SignedAndUnsignedExtremes) {
  using Key = TypeParam;
  const KeyMaker<Key> extremes = [](std::mt19937_64& rng, std::size_t n, bool) {
    const Key special[] = {std::numeric_limits<Key>::min(), std::numeric_limits<Key>::max(), Key(0), Key(-1), Key(1)};
    std::vector<Key> k(n);
    for (auto& x : k) x = rng() % 3 ? special[rng() % 5] : uniform_key<Key>(rng);
    return k;
  };
  // Quick: 2.7 * 10^5 tuples instead of 3 * 10^6, of the same five extreme keys.
  run_case<Key>(extremes, per_tier<Shape>({1'501, 2'003, 8}, {5'001, 7'003, 8}), "extremes");
}

TYPED_TEST(CopartFlow, EmptyAndOneRowRelations) {
  using Key = TypeParam;
  const auto fixed = [](std::vector<Key> r, std::vector<Key> s) {
    return KeyMaker<Key>([=](std::mt19937_64&, std::size_t, bool is_s) { return is_s ? s : r; });
  };
  run_case<Key>(fixed({}, {}), {0, 0, 8}, "both empty");
  run_case<Key>(fixed({}, {1, 2}), {0, 0, 8}, "R empty");
  run_case<Key>(fixed({1, 2}, {}), {0, 0, 8}, "S empty");
  run_case<Key>(fixed({5}, {5}), {0, 0, 8}, "one row each, matching");
  run_case<Key>(fixed({5}, {6}), {0, 0, 8}, "one row each, not matching");
}

TEST(CopartFlowWorkloads, ZipfAndHotKeyAgainstReference) {
  MGJOIN_REQUIRE_GPUS(1);
  const std::uint64_t seed = announce_seed();
  // Quick: a quarter of the rows; Zipf's first keys and the hot key are still far heavier than a partition.
  const double scale = per_tier(2.5e-4, 1e-3);
  for (const double zipf : {0.0, 1.0})
    for (const double hot : {0.0, 0.5}) {
      WorkloadSpec spec{.workload = Workload::B, .scale = scale, .zipf = zipf, .seed = seed};
      spec.hot_key = hot;
      const GeneratedWorkload w = generate_workload(spec);
      const std::vector<Tuple> expected = reference_tuples(w.r, w.s);
      for (int g = 1; g <= std::min(2, gpu_count()); ++g) {
        SCOPED_TRACE("zipf " + std::to_string(zipf) + ", hot " + std::to_string(hot) + ", g = " + std::to_string(g));
        check_copart<std::uint64_t>(w.r, w.s, expected, g, OutputMode::Materialize, PayloadFlow::Late);
        check_copart<std::uint64_t>(w.r, w.s, expected, g, OutputMode::Materialize, PayloadFlow::Carry);
      }
    }
  const GeneratedWorkload a = generate_workload({.workload = Workload::A, .scale = 10 * scale, .seed = seed});
  const std::vector<Tuple> a_expected = reference_tuples(a.r, a.s);
  for (int g = 1; g <= std::min(2, gpu_count()); ++g) check_copart<std::uint32_t>(a.r, a.s, a_expected, g, OutputMode::Count);
}

TEST(CopartFlowWorkloads, NcclExchange) {
  MGJOIN_REQUIRE_GPUS(2);
  const std::uint64_t seed = announce_seed();
  WorkloadSpec spec{.workload = Workload::B, .scale = 1e-3, .zipf = 1, .seed = seed};
  spec.hot_key = 0.3;
  const GeneratedWorkload w = generate_workload(spec);
  const std::vector<Tuple> expected = reference_tuples(w.r, w.s);
  check_copart<std::uint64_t>(w.r, w.s, expected, 2, OutputMode::Materialize, PayloadFlow::Late, Exchange::Nccl);
  check_copart<std::uint64_t>(w.r, w.s, expected, 2, OutputMode::Materialize, PayloadFlow::Carry, Exchange::Nccl);
}

/// More output rows than a window (8 Mi rows) on one GPU: each column goes out in two windows; on two GPUs
/// each GPU's part in one window per column, the buffers alternating over the columns.
TEST(CopartFlowWorkloads, OutputLargerThanOneWindow) {
  MGJOIN_REQUIRE_GPUS(1);
  const std::uint64_t seed = announce_seed();
  // Both tiers: the size is the point (12 * 10^6 output rows, over a window on one GPU).
  const GeneratedWorkload w = generate_workload({.workload = Workload::B, .scale = 1.2e-2, .seed = seed});
  const std::vector<Tuple> expected = reference_tuples(w.r, w.s);
  for (int g = 1; g <= std::min(2, gpu_count()); ++g)
    for (const PayloadFlow payloads : {PayloadFlow::Carry, PayloadFlow::Late})
      check_copart<std::uint64_t>(w.r, w.s, expected, g, OutputMode::Materialize, payloads);
}

/// A process that joins once (the CLI) on three or more GPUs takes its result columns pageable, the
/// windows crossing through the staging (exec::pin_result_columns: registering fresh memory with every
/// context costs more there); a process expecting later joins pins them. Both right.
TEST(CopartFlowWorkloads, AOneJoinProcessOnThreeOrMoreGpusStagesItsResultColumns) {
  MGJOIN_REQUIRE_GPUS(3);
  const std::uint64_t seed = announce_seed();
  const GeneratedWorkload w = generate_workload({.workload = Workload::B, .scale = per_tier(2e-3, 1.2e-2), .seed = seed});
  const std::vector<Tuple> expected = reference_tuples(w.r, w.s);
  const int g = std::min(4, gpu_count());
  struct LaterJoins {  // restores the process's default whatever the test does
    ~LaterJoins() { alloc::expect_later_joins(true); }
  } restore;
  for (const bool later : {false, true}) {
    alloc::release_pinned_cache();  // no kept block serves the columns
    alloc::expect_later_joins(later);
    Relation r = copy_of(w.r), s = copy_of(w.s);
    JoinOptions options;
    options.strategy = JoinStrategy::CoPartitioned;
    options.output = OutputMode::Materialize;
    const JoinResult result = engine_for(g).join(r.view(), s.view(), options);
    EXPECT_EQ(result.key.memory_kind(), later ? MemoryKind::Pinned : MemoryKind::Pageable) << "later joins " << later;
    EXPECT_TRUE(result_tuples(result) == expected) << "the output tuples differ from the reference (later joins " << later << ")";
  }
}

TEST(CopartPlanner, AutoPicksTheFlowAndSaysWhy) {
  MGJOIN_REQUIRE_GPUS(1);
  const std::uint64_t seed = announce_seed();
  const GeneratedWorkload w = generate_workload({.workload = Workload::B, .scale = 1e-4, .seed = seed});
  const std::uint64_t expected = reference_count(w.r, w.s);
  // On the binary's one-GPU engine: join() would make an engine of these options for each call.
  const auto run = [&](JoinStrategy strategy, OutputMode output) {
    Relation r = copy_of(w.r), s = copy_of(w.s);
    JoinOptions options;
    options.gpus = 1;
    options.strategy = strategy;
    options.output = output;
    return engine_for(1).join(r.view(), s.view(), test_engine_options(options));
  };
  const JoinResult in_core = run(JoinStrategy::Auto, OutputMode::Count);
  EXPECT_EQ(in_core.strategy, JoinStrategy::CoPartitioned);
  EXPECT_NE(in_core.strategy_reason.find("in core"), std::string::npos) << in_core.strategy_reason;
  EXPECT_EQ(in_core.count, expected);
  const JoinResult ranges = run(JoinStrategy::Auto, OutputMode::Ranges);
  EXPECT_EQ(ranges.strategy, JoinStrategy::Paper);
  EXPECT_EQ(ranges.count, expected);
  EXPECT_THROW(run(JoinStrategy::CoPartitioned, OutputMode::Ranges), InputError);
  const JoinResult paper = run(JoinStrategy::Paper, OutputMode::Count);
  EXPECT_EQ(paper.strategy, JoinStrategy::Paper);
  EXPECT_EQ(paper.count, expected);
}

TEST(EngineOptionsPerEngine, AJoinAskingForOtherGpusIsRefused) {
  MGJOIN_REQUIRE_GPUS(1);
  Relation r = relation_of(std::vector<std::int64_t>{1, 2, 3}, 8, 0), s = relation_of(std::vector<std::int64_t>{2, 3}, 8, 0);
  Engine& engine = engine_for(1);
  JoinOptions same;  // the EngineOptions part left at its default: fine
  same.output = OutputMode::Count;
  EXPECT_EQ(engine.join(r.view(), s.view(), same).count, 2u);
  JoinOptions other = same;
  other.gpu_memory_limit = 1ull << 30;  // not what engine_for(1) was made with
  EXPECT_THROW(engine.join(r.view(), s.view(), other), InputError);
}

TEST(CopartPlanner, TooLargeForTheGpusBucketsAndRefusesOnlyWhatNothingFits) {
  MGJOIN_REQUIRE_GPUS(1);
  const std::uint64_t seed = announce_seed();
  const GeneratedWorkload w = generate_workload({.workload = Workload::B, .scale = 2e-2, .seed = seed});
  // 2·10^7 8-byte keys per relation: neither both (320 MB) nor one with the 64 MiB slack (224 MB) fits;
  // bucket groups of a few tens of MB do.
  // Both tiers: the limits below are worked out for these sizes. One engine of the limit for the three
  // flows (join() would make one per call); the refusal below through join().
  JoinOptions options;
  options.gpus = 1;
  options.gpu_memory_limit = 192ull << 20;
  options.output = OutputMode::Count;
  Engine& engine = shared_engines().get(1, options.gpu_memory_limit);
  for (const JoinStrategy strategy : {JoinStrategy::Auto, JoinStrategy::CoPartitioned, JoinStrategy::Paper}) {
    options.strategy = strategy;
    Relation r = copy_of(w.r), s = copy_of(w.s);
    const JoinResult result = engine.join(r.view(), s.view(), options);
    SCOPED_TRACE(result.strategy_reason);
    EXPECT_EQ(result.strategy, strategy == JoinStrategy::Paper ? JoinStrategy::Paper : JoinStrategy::CoPartitioned);
    if (strategy != JoinStrategy::Paper) {
      EXPECT_NE(result.strategy_reason.find("not in core"), std::string::npos);
      EXPECT_NE(result.strategy_reason.find("co-partitioned, bucketed"), std::string::npos);
    }
    EXPECT_EQ(result.count, static_cast<std::uint64_t>(w.s.size()));  // selectivity 1: every S row matches once
  }
  // 2 MiB beside the slack: no bucket group fits; asked for, the co-partitioned flow is refused up front.
  options.gpu_memory_limit = 66ull << 20;
  options.strategy = JoinStrategy::CoPartitioned;
  Relation r2 = copy_of(w.r), s2 = copy_of(w.s);
  EXPECT_THROW(join(r2.view(), s2.view(), options), InputError);
}

}  // namespace
}  // namespace mgjoin::test
