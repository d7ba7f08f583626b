// join_tables with keys compared by value through the GPU flows (join.gpus = 1 and 2; strategy Auto,
// Paper and CoPartitioned), against the by-value reference of key_values.hpp: integer keys of mixed
// widths and signedness (uint64 against int64 included), float keys (float32 against float64, -0.0 and
// NaN among them) and a mixed composite, every kind and output form, on a shared Engine and through the
// overload that makes its own; tables up to 100k rows a side, so that the flows split them.
#include <mgjoin/engine.hpp>
#include <mgjoin/table.hpp>

#include "common/engines.hpp"
#include "common/gpu.hpp"
#include "common/seed.hpp"
#include "table/key_values.hpp"

#include <gtest/gtest.h>

#include <functional>
#include <ostream>
#include <string>
#include <vector>

namespace mgjoin::test {
namespace {

constexpr std::uint64_t kGpuMemory = 1ull << 30;

struct KeyFlow {
  int gpus;
  JoinStrategy strategy;
  friend void PrintTo(const KeyFlow& f, std::ostream* os) { *os << "g" << f.gpus << "_" << strategy_label(f.strategy); }
};

class GpuKeysByValue : public ::testing::TestWithParam<KeyFlow> {
 protected:
  TableJoinOptions base() const {
    TableJoinOptions o;
    o.join.gpus = GetParam().gpus;
    o.join.gpu_memory_limit = kGpuMemory;
    o.join.strategy = GetParam().strategy;
    return o;
  }
  Engine* engine() const { return &shared_engines().get(GetParam().gpus, kGpuMemory); }
  Rng rng() const {
    return Rng(announce_seed() ^ (std::hash<int>{}(GetParam().gpus) * 31 + static_cast<int>(GetParam().strategy)));
  }
};

/// Integer keys of other widths and signedness on each side, and a composite of mixed components.
TEST_P(GpuKeysByValue, MixedWidthIntegerKeys) {
  MGJOIN_REQUIRE_GPUS(GetParam().gpus);
  Rng rng = this->rng();
  int case_number = 0;
  for (const auto& types : std::vector<KeyTypePair>{{{DType::Int32}, {DType::Int64}},
                                                    {{DType::UInt32}, {DType::Int64}},
                                                    {{DType::UInt64}, {DType::Int64}},
                                                    {{DType::Int64}, {DType::UInt32}},
                                                    {{DType::UInt32}, {DType::Int32}},
                                                    {{DType::Int16, DType::UInt8}, {DType::Int32, DType::UInt16}}}) {
    const std::int64_t rows = uniform(rng, 20'000, 100'000);
    const TableInput in = tables_by_value(types, rows, uniform(rng, rows / 2, rows), rng);
    // Alternately on the shared engine and through the overload that makes its own.
    ASSERT_EQ(check_by_value(in, base(), case_number++ % 2 ? nullptr : engine()), 0) << in.shape;
  }
}

/// Float keys: float32 and float64 on either side, -0.0 against 0.0, NaNs of several bits, infinities.
TEST_P(GpuKeysByValue, FloatKeys) {
  MGJOIN_REQUIRE_GPUS(GetParam().gpus);
  Rng rng = this->rng();
  int case_number = 0;
  for (const auto& types : std::vector<KeyTypePair>{{{DType::Float64}, {DType::Float64}},
                                                    {{DType::Float32}, {DType::Float64}},
                                                    {{DType::Float32}, {DType::Float32}},
                                                    {{DType::Float32, DType::Int16}, {DType::Float32, DType::UInt8}}}) {
    const std::int64_t rows = uniform(rng, 20'000, 100'000);
    const TableInput in = tables_by_value(types, rows, uniform(rng, rows / 2, rows), rng);
    ASSERT_EQ(check_by_value(in, base(), case_number++ % 2 ? nullptr : engine()), 0) << in.shape;
  }
}

INSTANTIATE_TEST_SUITE_P(Flows, GpuKeysByValue,
                         ::testing::Values(KeyFlow{1, JoinStrategy::Auto}, KeyFlow{1, JoinStrategy::Paper},
                                           KeyFlow{1, JoinStrategy::CoPartitioned}, KeyFlow{2, JoinStrategy::Auto},
                                           KeyFlow{2, JoinStrategy::Paper}, KeyFlow{2, JoinStrategy::CoPartitioned}),
                         [](const auto& info) {
                           return "g" + std::to_string(info.param.gpus) + "_" + strategy_label(info.param.strategy);
                         });

}  // namespace
}  // namespace mgjoin::test
