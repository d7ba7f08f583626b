// Keys over 8 bytes through the GPU flows (join.gpus = 1 and 2; join.strategy Auto, Paper and
// CoPartitioned): the hashes join on the GPUs, the candidate pairs are verified on the CPU
// (engine/src/table/wide_keys.hpp). Every join kind and output form against the reference, under the
// engine's hash and the weak one (MGJOIN_TEST_KEY_HASH=weak: tuples collide in masses), on random and
// adversarial tables and tables of more than 2^16 rows a side. Skips where too few GPUs exist.
#include <mgjoin/engine.hpp>
#include <mgjoin/table.hpp>

#include "common/engines.hpp"
#include "common/gpu.hpp"
#include "common/seed.hpp"
#include "common/tier.hpp"
#include "table/key_values.hpp"
#include "table/table_check.hpp"
#include "table/table_inputs.hpp"
#include "table/table_names.hpp"
#include "table/wide_key_inputs.hpp"

#include <gtest/gtest.h>

#include <functional>
#include <ostream>
#include <string>
#include <tuple>
#include <vector>

namespace mgjoin::test {
namespace {

constexpr std::uint64_t kGpuMemory = 1ull << 30;

struct WideFlow {
  int gpus;
  JoinStrategy strategy;
  Hash hash;
  std::string label() const {
    return "g" + std::to_string(gpus) + "_" + strategy_label(strategy) + "_" + hash_label(hash);
  }
  friend void PrintTo(const WideFlow& f, std::ostream* os) { *os << f.label(); }
};

class GpuWideKeyJoins : public ::testing::TestWithParam<WideFlow> {
 protected:
  /// Sanitize: each strategy with one of the two hashes (Auto and CoPartitioned the strong, Paper the weak),
  /// at g = 1 and 2: every flow and both hashes' kernels (the weak one's verification of colliding
  /// candidates) still run, in half the cases.
  void SetUp() override {
    const std::size_t flow = GetParam().strategy == JoinStrategy::Paper ? 1 : 0;
    if (sanitize_skips(flow + static_cast<std::size_t>(GetParam().hash), 2))
      GTEST_SKIP() << "sanitize tier: this strategy runs with the other hash";
  }
  TableJoinOptions base() const { return gpu_flow_options(GetParam().gpus, kGpuMemory, GetParam().strategy); }
  Engine* engine() const { return &shared_engines().get(GetParam().gpus, kGpuMemory); }
  std::string context() const { return GetParam().label() + ": "; }
  Rng rng() const {
    return Rng(announce_seed() ^ std::hash<std::string>{}(GetParam().label()));
  }
};

/// Every wide key spec on a random, duplicated or extreme input x every kind x every output form.
TEST_P(GpuWideKeyJoins, EveryKindAndFormAgreesWithTheReference) {
  MGJOIN_REQUIRE_GPUS(GetParam().gpus);
  const ScopedKeyHash scoped(GetParam().hash);
  Rng rng = this->rng();
  constexpr Shape shapes[] = {Shape::Random, Shape::Duplicates, Shape::Extremes};
  const auto specs = wide_key_specs();
  int failures = 0;
  for (std::size_t c = 0; c < specs.size(); ++c) {
    const TableInput in = make_input(specs[c], shapes[c % 3], rng);
    for (std::size_t k = 0; k < std::size(kAllKinds); ++k)
      for (const TableOutput output : kAllOutputs) {
        // Sanitize: one output form per spec and kind, turning with both (every spec, kind and form runs).
        if (sanitize_skips(c + k + static_cast<std::size_t>(output), 3)) continue;
        if (!check_one(in, base(), kAllKinds[k], output, kAllMaterializations[c % 3], rng, context() + specs[c].label + ": ",
                       engine()))
          ++failures;
      }
    ASSERT_LT(failures, 5) << "stopping after 5 failed joins";
  }
}

/// No match, one key on every row, empty sides, one-row tables, keys differing only in the second
/// column, signed extremes, and components of two types compared by value.
TEST_P(GpuWideKeyJoins, AdversarialInputsAgreeWithTheReference) {
  MGJOIN_REQUIRE_GPUS(GetParam().gpus);
  const ScopedKeyHash scoped(GetParam().hash);
  Rng rng = this->rng();
  const KeySpec spec{"int64_int64", {DType::Int64, DType::Int64}};
  std::vector<TableInput> inputs;
  for (const Shape shape : {Shape::NoMatch, Shape::AllMatch, Shape::EmptyLeft, Shape::EmptyRight, Shape::BothEmpty,
                            Shape::OneRowMatch, Shape::OneRowNoMatch})
    inputs.push_back(make_input(spec, shape, rng));
  inputs.push_back(differing_in_the_second_column(300, 200, rng));
  inputs.push_back(signed_extremes());
  int failures = 0;
  for (const TableInput& in : inputs) {
    failures += check_every_kind_and_form(in, base(), rng, context() + in.shape + ": ", engine());
    ASSERT_LT(failures, 5) << "stopping after 5 failed joins";
  }
  const KeyTypePair by_value{{DType::Int32, DType::Int64, DType::Float32}, {DType::Int64, DType::Int64, DType::Float64}};
  EXPECT_EQ(check_by_value(tables_by_value(by_value, 300, 250, rng), base(), engine()), 0) << context();
}

/// More than 2^16 rows a side (under the weak hash every eighth of the rows is one candidate group, so
/// only the engine's hash takes these sizes), every kind, gather maps or columns.
TEST_P(GpuWideKeyJoins, LargeTablesAgreeWithTheReference) {
  MGJOIN_REQUIRE_GPUS(GetParam().gpus);
  if (GetParam().hash == Hash::Weak) GTEST_SKIP() << "the weak hash's candidates grow with the square of the rows";
  Rng rng = this->rng();
  const TableInput in = make_input({"int32_int64_int8", {DType::Int32, DType::Int64, DType::Int8}}, Shape::Random, rng,
                                   {.min_rows = 66'000, .max_rows = 70'000});
  for (std::size_t k = 0; k < std::size(kAllKinds); ++k)
    EXPECT_TRUE(check_one(in, base(), kAllKinds[k], k % 2 ? TableOutput::Columns : TableOutput::GatherMaps,
                          kAllMaterializations[k % 3], rng, context(), engine()));
}

std::vector<WideFlow> wide_flows() {
  std::vector<WideFlow> flows;
  for (const int gpus : {1, 2})
    for (const JoinStrategy s : {JoinStrategy::Auto, JoinStrategy::Paper, JoinStrategy::CoPartitioned})
      for (const Hash h : {Hash::Strong, Hash::Weak}) flows.push_back({gpus, s, h});
  return flows;
}

INSTANTIATE_TEST_SUITE_P(Flows, GpuWideKeyJoins, ::testing::ValuesIn(wide_flows()),
                         [](const auto& info) { return info.param.label(); });

}  // namespace
}  // namespace mgjoin::test
