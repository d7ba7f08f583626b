// Outputs past 2^32 rows and counts past 2^32 up to 2^64 through the public API on the GPUs, in the
// paper flow and the co-partitioned flow (run on the GPU machine; skipped without GPUs, and the large
// cases without the host or GPU memory they need). Expected values are written out, not computed by
// the code under test. Run them alone (--gtest_filter='Overflow*'): the other suites of this binary
// keep engines that hold most of the GPUs' memory.
#include <mgjoin/engine.hpp>
#include <mgjoin/error.hpp>
#include <mgjoin/join.hpp>

#include "alloc/host_memory.hpp"
#include "common/gpu.hpp"
#include "common/seed.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

namespace mgjoin::test {
namespace {

constexpr std::uint64_t k2to32 = std::uint64_t{1} << 32;

/// One engine for a suite of these tests (it takes most of every GPU's memory): made on first use, freed
/// when the suite ends, so that later suites of this binary find the GPUs' memory free again.
std::unique_ptr<Engine>& shared_engine() {
  static std::unique_ptr<Engine> engine;
  return engine;
}

Engine& engine() {
  if (!shared_engine()) shared_engine() = std::make_unique<Engine>(EngineOptions{});
  return *shared_engine();
}

class OverflowEndToEndGpu : public ::testing::Test {
 protected:
  static void TearDownTestSuite() { shared_engine().reset(); }
};
class OverflowHugeEndToEndGpu : public OverflowEndToEndGpu {};

/// Host memory the process may still take; nullopt where no bound can be read.
std::optional<std::uint64_t> host_memory_available() { return alloc::host_memory_room(alloc::read_host_memory()).bytes; }

/// Skips the test unless `bytes` of host memory can be had (or no bound can be read).
#define SKIP_UNLESS_HOST_MEMORY(bytes)                                                                   \
  do {                                                                                                   \
    const auto available_ = host_memory_available();                                                     \
    if (available_ && *available_ < (bytes))                                                             \
      GTEST_SKIP() << "needs " << (bytes) / 1'000'000'000 << " GB of host memory, " << *available_ / 1'000'000'000 \
                   << " GB available";                                                                   \
  } while (0)

/// A key-only relation holding `rows` copies of each key, shuffled.
template <class Key>
Relation relation_of(const std::vector<std::pair<Key, std::uint64_t>>& runs, std::mt19937_64& rng) {
  std::vector<Key> keys;
  for (const auto& [key, rows] : runs) keys.insert(keys.end(), rows, key);
  std::shuffle(keys.begin(), keys.end(), rng);
  constexpr DType type = std::is_same_v<Key, std::uint32_t> ? DType::UInt32 : DType::Int64;
  Relation rel{HostColumn::allocate(type, static_cast<std::int64_t>(keys.size())), std::nullopt};
  std::copy(keys.begin(), keys.end(), rel.key.as<Key>());
  return rel;
}

JoinResult join_with(Relation& r, Relation& s, JoinStrategy strategy, OutputMode output) {
  JoinOptions options;
  options.strategy = strategy;
  options.output = output;
  JoinResult result = engine().join(r.view(), s.view(), options);
  EXPECT_EQ(result.strategy, strategy) << result.strategy_reason;
  return result;
}

const char* name_of(JoinStrategy s) { return s == JoinStrategy::Paper ? "paper flow" : "co-partitioned flow"; }

TEST_F(OverflowEndToEndGpu, CountFarPastTwoToThe32InBothFlows) {
  MGJOIN_REQUIRE_GPUS(1);
  std::mt19937_64 rng(announce_seed());
  // A hot key of 2^17 rows on each side (2^34 tuples, found where the partitioning cuts) and 64 keys of
  // 2^14 rows on each side (2^34 tuples, counted by the join kernels): 2^35 in all.
  std::vector<std::pair<std::uint32_t, std::uint64_t>> runs{{7, 1u << 17}};
  std::vector<std::pair<std::int64_t, std::uint64_t>> signed_runs{{INT64_MIN, 1u << 17}};
  for (std::uint32_t k = 0; k < 64; ++k) {
    runs.emplace_back(1000 + 3 * k, 1u << 14);
    signed_runs.emplace_back(-1 - 5 * static_cast<std::int64_t>(k), 1u << 14);
  }
  for (const JoinStrategy strategy : {JoinStrategy::Paper, JoinStrategy::CoPartitioned}) {
    SCOPED_TRACE(name_of(strategy));
    Relation r = relation_of(runs, rng), s = relation_of(runs, rng);
    EXPECT_EQ(join_with(r, s, strategy, OutputMode::Count).count, 34'359'738'368ull);  // 2^35
    Relation rs = relation_of(signed_runs, rng), ss = relation_of(signed_runs, rng);
    EXPECT_EQ(join_with(rs, ss, strategy, OutputMode::Count).count, 34'359'738'368ull);
  }
}

// Just past 2^32 output rows from tiny inputs: key 3 (1000 x 7), key 5 (65536 x 65536 = 2^32), key 9
// (300 x 1000). 4-byte keys, no payloads: the output is one key column of 17.2 GB.
constexpr std::uint64_t kRowsOf3 = 7'000, kRowsOf5 = k2to32, kRowsOf9 = 300'000;
constexpr std::uint64_t kPastTwoToThe32 = 4'295'274'296ull;  // 7000 + 2^32 + 300000

struct PastTwoToThe32 {
  Relation r, s;
  explicit PastTwoToThe32(std::mt19937_64& rng)
      : r(relation_of<std::uint32_t>({{3, 1000}, {5, 65'536}, {9, 300}}, rng)),
        s(relation_of<std::uint32_t>({{3, 7}, {5, 65'536}, {9, 1000}}, rng)) {}
};

/// Rows of the output key column [begin, end) not equal to `key` (parallel: 2^32 rows).
std::uint64_t rows_other_than(const HostColumn& column, std::uint64_t begin, std::uint64_t end, std::uint32_t key) {
  const std::uint32_t* k = column.as<std::uint32_t>();
  std::uint64_t other = 0;
#pragma omp parallel for reduction(+ : other) schedule(static)
  for (std::int64_t i = static_cast<std::int64_t>(begin); i < static_cast<std::int64_t>(end); ++i) other += k[i] != key;
  return other;
}

/// How many output rows hold 3, 5 and 9 (parallel: 2^32 rows).
std::array<std::uint64_t, 3> rows_per_key(const HostColumn& column) {
  const std::uint32_t* k = column.as<std::uint32_t>();
  std::uint64_t threes = 0, fives = 0, nines = 0;
#pragma omp parallel for reduction(+ : threes, fives, nines) schedule(static)
  for (std::int64_t i = 0; i < column.size(); ++i) {
    threes += k[i] == 3;
    fives += k[i] == 5;
    nines += k[i] == 9;
  }
  return {threes, fives, nines};
}

TEST_F(OverflowEndToEndGpu, MaterializeJustPastTwoToThe32RowsInBothFlows) {
  MGJOIN_REQUIRE_GPUS(1);
  // The output column (17.2 GB) of one flow at a time, and the pinned block the co-partitioned flow's
  // output leaves in the pinned cache.
  SKIP_UNLESS_HOST_MEMORY(40'000'000'000ull);
  std::mt19937_64 rng(announce_seed());
  {
    SCOPED_TRACE("co-partitioned flow: output in key order");
    PastTwoToThe32 in(rng);
    const JoinResult result = join_with(in.r, in.s, JoinStrategy::CoPartitioned, OutputMode::Materialize);
    EXPECT_EQ(result.count, kPastTwoToThe32);
    ASSERT_EQ(result.key.size(), static_cast<std::int64_t>(kPastTwoToThe32));
    EXPECT_EQ(rows_other_than(result.key, 0, kRowsOf3, 3), 0u);
    EXPECT_EQ(rows_other_than(result.key, kRowsOf3, kRowsOf3 + kRowsOf5, 5), 0u);
    EXPECT_EQ(rows_other_than(result.key, kRowsOf3 + kRowsOf5, kPastTwoToThe32, 9), 0u) << "rows past 2^32";
  }
  {
    SCOPED_TRACE("paper flow: output in the order of the ranges");
    PastTwoToThe32 in(rng);
    const JoinResult result = join_with(in.r, in.s, JoinStrategy::Paper, OutputMode::Materialize);
    EXPECT_EQ(result.count, kPastTwoToThe32);
    ASSERT_EQ(result.key.size(), static_cast<std::int64_t>(kPastTwoToThe32));
    EXPECT_EQ(rows_per_key(result.key), (std::array<std::uint64_t, 3>{kRowsOf3, kRowsOf5, kRowsOf9}));
  }
}

TEST_F(OverflowEndToEndGpu, RangesJustPastTwoToThe32RowsInThePaperFlow) {
  MGJOIN_REQUIRE_GPUS(1);
  std::mt19937_64 rng(announce_seed());
  PastTwoToThe32 in(rng);
  const JoinResult result = join_with(in.r, in.s, JoinStrategy::Paper, OutputMode::Ranges);
  EXPECT_EQ(result.count, kPastTwoToThe32);
  // The inputs are sorted now: a range's rows hold one key, the same in R and S.
  const std::uint32_t* rk = in.r.key.as<std::uint32_t>();
  const std::uint32_t* sk = in.s.key.as<std::uint32_t>();
  std::uint64_t threes = 0, fives = 0, nines = 0;
  for (const MatchRange& m : result.ranges) {
    ASSERT_TRUE(m.r_begin < m.r_end && m.s_begin < m.s_end);
    const std::uint32_t key = rk[m.r_begin];
    ASSERT_TRUE(rk[m.r_end - 1] == key && sk[m.s_begin] == key && sk[m.s_end - 1] == key) << "range of key " << key;
    std::uint64_t& tuples = key == 3 ? threes : key == 5 ? fives : nines;
    tuples += (m.r_end - m.r_begin) * (m.s_end - m.s_begin);
  }
  EXPECT_EQ(threes, kRowsOf3);
  EXPECT_EQ(fives, kRowsOf5);
  EXPECT_EQ(nines, kRowsOf9);
}

/// 2^32 rows of one 4-byte key (17.2 GB), filled in parallel.
Relation equal_keys(std::uint64_t rows) {
  Relation rel{HostColumn::allocate(DType::UInt32, static_cast<std::int64_t>(rows)), std::nullopt};
  std::uint32_t* k = rel.key.as<std::uint32_t>();
#pragma omp parallel for schedule(static)
  for (std::int64_t i = 0; i < static_cast<std::int64_t>(rows); ++i) k[i] = 42;
  return rel;
}

/// The count of joining r and s, or nullopt when the join was refused: `refusal` must be in its message.
/// The co-partitioned flow may not fit the GPUs at this size: then it says so and returns nullopt.
std::optional<std::uint64_t> count_unless_refused(RelationView r, RelationView s, JoinStrategy strategy,
                                                  const std::string& refusal) {
  JoinOptions options;
  options.strategy = strategy;
  options.output = OutputMode::Count;
  try {
    return engine().join(r, s, options).count;
  } catch (const InputError& e) {
    const std::string what = e.what();
    if (what.find("do not fit the GPUs") != std::string::npos)
      std::printf("[ note     ] %s not run: %s\n", name_of(strategy), what.c_str());
    else
      EXPECT_NE(what.find(refusal), std::string::npos) << what;
    return std::nullopt;
  }
}

TEST_F(OverflowHugeEndToEndGpu, TwoToThe32EqualKeysOnEachSideAreRefusedInBothFlows) {
  MGJOIN_REQUIRE_GPUS(1);
  SKIP_UNLESS_HOST_MEMORY(40'000'000'000ull);  // two 17.2 GB key columns
  // The paper flow sorts each relation in one chunkset; the co-partitioned flow holds both and a sort
  // buffer: 52 GB.
  if (engine().device_bytes() < 56'000'000'000ull)
    GTEST_SKIP() << "needs 56 GB of GPU memory per GPU for the engine, has " << engine().device_bytes() / 1'000'000'000
                 << " GB (run this test alone)";
  Relation r = equal_keys(k2to32), s = equal_keys(k2to32);
  // One row less in S: 2^32 x (2^32 - 1) = 2^64 - 2^32 tuples, the largest count a test can reach here.
  RelationView shorter = s.view();
  shorter.key.size -= 1;
  for (const JoinStrategy strategy : {JoinStrategy::Paper, JoinStrategy::CoPartitioned}) {
    SCOPED_TRACE(name_of(strategy));
    const auto refused = count_unless_refused(r.view(), s.view(), strategy, "the join's output has 2^64 or more tuples");
    EXPECT_FALSE(refused) << "not refused: count " << *refused;
    const auto below = count_unless_refused(r.view(), shorter, strategy, "do not fit the GPUs");
    if (below) {
      EXPECT_EQ(*below, 18'446'744'069'414'584'320ull);  // 2^64 - 2^32
    }
  }
}

TEST_F(OverflowHugeEndToEndGpu, TwoToThe32EqualKeysOnEachSideAreRefusedOnTheCpuPath) {
  MGJOIN_REQUIRE_GPUS(1);  // CI machines have no GPU: this keeps 52 GB of host memory off them
  SKIP_UNLESS_HOST_MEMORY(56'000'000'000ull);  // two 17.2 GB key columns and the parallel sort's buffer
  Relation r = equal_keys(k2to32), s = equal_keys(k2to32);
  JoinOptions options;
  options.gpus = 0;
  options.output = OutputMode::Count;
  try {
    const JoinResult result = join(r.view(), s.view(), options);
    ADD_FAILURE() << "not refused: count " << result.count;
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("the join's output has 2^64 or more tuples"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace mgjoin::test
