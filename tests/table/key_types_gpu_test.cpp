// join_tables with keys compared by value through the GPU flows (join.gpus = 1 and 2; strategy Auto,
// Paper and CoPartitioned each), against the by-value reference of key_values.hpp: integer keys of mixed
// widths and signedness (uint64 against int64 included), float keys (float32 against float64, -0.0 and
// NaN among them) and mixed composites, every kind and output form on a shared Engine, and once through
// the overload that makes its own.
#include <mgjoin/engine.hpp>
#include <mgjoin/table.hpp>

#include "common/engines.hpp"
#include "common/gpu.hpp"
#include "common/seed.hpp"
#include "common/tier.hpp"
#include "table/key_values.hpp"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace mgjoin::test {
namespace {

constexpr std::uint64_t kGpuMemory = 1ull << 30;
constexpr JoinStrategy kStrategies[] = {JoinStrategy::Auto, JoinStrategy::Paper, JoinStrategy::CoPartitioned};

/// Each key type pair on g GPUs (the test's parameter) under every strategy, every kind and output form
/// on a shared engine: tables of random size that every flow splits into partitions (quick tier 5k-10k
/// rows a side, full 20k-100k). Once per test, the overload that makes its own engine (an engine a join,
/// about a second each: made for every other case, it ran the first test past its suite's time).
void check_on_gpus(int gpus, const std::vector<KeyTypePair>& pairs) {
  Rng rng(announce_seed() ^ (static_cast<std::uint64_t>(gpus) * 0x9e3779b97f4a7c15ull));
  Engine& engine = shared_engines().get(gpus, kGpuMemory);
  const auto options = [&](JoinStrategy strategy) {
    TableJoinOptions o;  // the EngineOptions part equals the shared engine's, as join_tables(Engine&) needs
    o.join.gpus = gpus;
    o.join.gpu_memory_limit = kGpuMemory;
    o.join.strategy = strategy;
    return o;
  };
  // Values spread over about the rows, 2 % from the edge pools (~40 values, each on a few rows a side:
  // every edge still meets its matches): outputs of about the rows, not of their square.
  const auto draw = [&](const KeyTypePair& types) {
    // Sanitize: 1000-2000 rows (racecheck took 141 s over MixedWidthIntegerKeys/g2 at the quick tier's 5000-10000
    // in s25): still ~40 edge values, each on a few rows a side.
    const std::int64_t rows = uniform(rng, per_tier<std::int64_t>(5'000, 20'000, 1'000), per_tier<std::int64_t>(10'000, 100'000, 2'000));
    return tables_by_value(types, rows, uniform(rng, rows / 2, rows), rng, {rows / 2, 0.02});
  };
  // Sanitize: each key pair under one strategy, turning with the pair (every strategy still meets one pair
  // or more, and each pair's key-order kernels run): a third of the joins, racecheck's minutes.
  for (std::size_t s = 0; s < std::size(kStrategies); ++s)
    for (std::size_t p = 0; p < pairs.size(); ++p) {
      if (sanitize_skips(s + p, std::size(kStrategies))) continue;
      const JoinStrategy strategy = kStrategies[s];
      const KeyTypePair& types = pairs[p];
      const TableInput in = draw(types);
      ASSERT_EQ(check_by_value(in, options(strategy), &engine), 0) << in.shape << ", g=" << gpus << ", " << strategy_label(strategy);
    }
  const TableInput in = draw(pairs.front());
  TableJoinOptions o = options(JoinStrategy::Auto);
  o.left_on = in.left_on;
  o.right_on = in.right_on;
  o.output = TableOutput::Columns;
  EXPECT_TRUE(matches_by_value(in, o, join_tables(in.left.view(), in.right.view(), o))) << "without an engine, g=" << gpus;
}

class GpuKeysByValue : public ::testing::TestWithParam<int> {};

TEST_P(GpuKeysByValue, MixedWidthIntegerKeys) {
  MGJOIN_REQUIRE_GPUS(GetParam());
  check_on_gpus(GetParam(), {{{DType::Int32}, {DType::Int64}},
                             {{DType::UInt32}, {DType::Int64}},
                             {{DType::UInt64}, {DType::Int64}},
                             {{DType::Int64}, {DType::UInt32}},
                             {{DType::UInt32}, {DType::Int32}},
                             {{DType::Int16, DType::UInt8}, {DType::Int32, DType::UInt16}}});
}

TEST_P(GpuKeysByValue, FloatKeys) {
  MGJOIN_REQUIRE_GPUS(GetParam());
  check_on_gpus(GetParam(), {{{DType::Float64}, {DType::Float64}},
                             {{DType::Float32}, {DType::Float64}},
                             {{DType::Float32}, {DType::Float32}},
                             {{DType::Float32, DType::Int16}, {DType::Float32, DType::UInt8}}});
}

INSTANTIATE_TEST_SUITE_P(Gpus, GpuKeysByValue, ::testing::Values(1, 2),
                         [](const auto& info) { return std::string(1, 'g').append(std::to_string(info.param)); });

}  // namespace
}  // namespace mgjoin::test
