// join_tables through the GPU flows (join.gpus = 1 and 2; join.strategy Auto, Paper and CoPartitioned)
// against the reference (tests/common/reference_join.hpp), with the checks of the CPU suite (table_check.hpp):
// every join kind x output form x key width (4 and 8 bytes, signed, composite), payload columns gathered
// on the CPU or the GPUs, the adversarial shapes,
// tables of more than 2^16 rows per side (up to 300k), carried payloads, may_reorder_inputs, and both
// overloads (on an Engine made once per GPU count, and the one that makes its own).
#include <mgjoin/engine.hpp>
#include <mgjoin/error.hpp>
#include <mgjoin/table.hpp>

#include "alloc/fault_injection.hpp"
#include "common/engines.hpp"
#include "common/gpu.hpp"
#include "common/seed.hpp"
#include "common/tier.hpp"
#include "common/reference_join.hpp"
#include "table/table_check.hpp"
#include "table/table_inputs.hpp"
#include "table/table_names.hpp"
#include "table/test_tables.hpp"

#include <gtest/gtest.h>

#include <functional>
#include <map>
#include <memory>
#include <ostream>
#include <string>
#include <vector>

namespace mgjoin::test {
namespace {

/// Device memory per GPU of every engine here: the tables take a few MB, and a small stack is quick to
/// take (each plain join_tables call on GPUs makes an engine of its own).
constexpr std::uint64_t kGpuMemory = 1ull << 30;

Engine& engine_for(int gpus) { return shared_engines().get(gpus, kGpuMemory); }

struct GpuFlow {
  int gpus;
  JoinStrategy strategy;
  friend void PrintTo(const GpuFlow& f, std::ostream* os) { *os << "g" << f.gpus << "_" << strategy_label(f.strategy); }
};

class GpuTableJoins : public ::testing::TestWithParam<GpuFlow> {
 protected:
  /// The EngineOptions part equals engine_for(gpus)'s, as join_tables(Engine&, ...) requires.
  TableJoinOptions base() const { return gpu_flow_options(GetParam().gpus, kGpuMemory, GetParam().strategy); }
  Engine* engine() const { return &engine_for(GetParam().gpus); }
  std::string context() const {
    return "g=" + std::to_string(GetParam().gpus) + " " + strategy_label(GetParam().strategy) + ": ";
  }
  /// A seed per flow, from the run's seed.
  Rng rng() const {
    return Rng(announce_seed() ^ (std::hash<int>{}(GetParam().gpus) * 31 + static_cast<int>(GetParam().strategy)));
  }
};

/// Key widths: 4 and 8 bytes, unsigned and signed, and composites (of 1-, 2- and 4-byte columns).
std::vector<KeySpec> gpu_key_specs() {
  return {{"uint32", {DType::UInt32}},
          {"uint64", {DType::UInt64}},
          {"int32", {DType::Int32}},
          {"int64", {DType::Int64}},
          {"uint16_int8_int32", {DType::UInt16, DType::Int8, DType::Int32}},
          {"int32_int16", {DType::Int32, DType::Int16}}};
}

/// Where late materialization gathers payload columns: the sweeps rotate through them.
constexpr GatherOn kGatherPlaces[] = {GatherOn::Auto, GatherOn::Cpu, GatherOn::Gpus};

/// Every key width x kind x output form (Columns under a materialization and a gather place that rotate). The inputs are
/// random with duplicates on both sides, few keys with many rows each, or made of each type's extremes.
TEST_P(GpuTableJoins, EveryKindFormAndKeyWidthAgreesWithTheReference) {
  MGJOIN_REQUIRE_GPUS(GetParam().gpus);
  Rng rng = this->rng();
  constexpr Shape shapes[] = {Shape::Random, Shape::Duplicates, Shape::Extremes};
  const auto specs = gpu_key_specs();
  int failures = 0;
  for (std::size_t c = 0; c < specs.size(); ++c) {
    const TableInput in = make_input(specs[c], shapes[c % 3], rng);
    for (std::size_t k = 0; k < std::size(kAllKinds); ++k)
      for (const TableOutput output : kAllOutputs) {
        // Quick: two of the three output forms per key and kind, the one left out turning with both: each
        // kind still meets each form on four of the six keys, and every materialization and gather place.
        if (!full_tier() && (c + static_cast<std::size_t>(output)) % 3 == k % 3) continue;
        // Sanitize: of those two, the one with c + output = k + 1 (mod 3): every kind still meets every form,
        // every key width and gather place still runs, with half the joins of the quick tier.
        if (sanitize_skips(c + static_cast<std::size_t>(output) + 2 * k + 2, 3)) continue;
        const Materialization m = kAllMaterializations[(c + k) % 3];
        TableJoinOptions o = base();
        o.gather_on = kGatherPlaces[(c + k + static_cast<std::size_t>(output)) % 3];
        if (!check_one(in, o, kAllKinds[k], output, m, rng, context() + "key " + specs[c].label + ": ", engine()))
          ++failures;
        ASSERT_LT(failures, 5) << "stopping after 5 failed joins";
      }
  }
}

/// The adversarial shapes (no match at all, every row matching every row, empty sides, one-row tables,
/// sorted and reverse inputs), each with an outer join and a semi or anti join.
TEST_P(GpuTableJoins, AdversarialShapesAgreeWithTheReference) {
  MGJOIN_REQUIRE_GPUS(GetParam().gpus);
  Rng rng = this->rng();
  constexpr Shape shapes[] = {Shape::NoMatch,     Shape::AllMatch,    Shape::EmptyLeft,     Shape::EmptyRight,
                              Shape::BothEmpty,   Shape::OneRowMatch, Shape::OneRowNoMatch, Shape::Sorted,
                              Shape::Reverse};
  constexpr JoinKind keeping[] = {JoinKind::FullOuter, JoinKind::LeftOuter, JoinKind::RightOuter};
  const auto specs = gpu_key_specs();
  int failures = 0;
  for (std::size_t i = 0; i < std::size(shapes); ++i) {
    const KeySpec& spec = specs[i % specs.size()];
    const TableInput in = make_input(spec, shapes[i], rng);
    const std::string where = context() + "key " + spec.label + ": ";
    const Materialization m = kAllMaterializations[i % 3];
    // Gather maps and columns in turn (the count is part of both).
    if (!check_one(in, base(), keeping[i % 3], kAllOutputs[1 + i % 2], m, rng, where, engine())) ++failures;
    if (!check_one(in, base(), i % 2 ? JoinKind::LeftAnti : JoinKind::LeftSemi, kAllOutputs[2 - i % 2], m, rng, where,
                   engine()))
      ++failures;
    ASSERT_LT(failures, 5) << "stopping after 5 failed joins";
  }
}

/// More than 2^16 rows per side (70k to 300k): 8-byte signed keys and a composite key, every kind,
/// gather maps or columns.
TEST_P(GpuTableJoins, LargeTablesAgreeWithTheReference) {
  MGJOIN_REQUIRE_GPUS(GetParam().gpus);
  Rng rng = this->rng();
  struct Large {
    KeySpec spec;
    ShapeSizes sizes;
  };
  // Quick: 66k-70k rows a side, still over 2^16 (65,536), the sizes' point; the reference's std::map of key
  // tuples costs ~1 s a join at 300k rows.
  const ShapeSizes over_2_16{.min_rows = 66'000, .max_rows = 70'000};
  const Large cases[] = {
      {{"int64", {DType::Int64}}, per_tier<ShapeSizes>(over_2_16, {.min_rows = 200'000, .max_rows = 300'000})},
      {{"uint16_int8_int32", {DType::UInt16, DType::Int8, DType::Int32}},
       per_tier<ShapeSizes>(over_2_16, {.min_rows = 70'000, .max_rows = 100'000})},
  };
  for (std::size_t c = 0; c < std::size(cases); ++c) {
    const TableInput in = make_input(cases[c].spec, Shape::Random, rng, cases[c].sizes);
    const std::string where = context() + "key " + cases[c].spec.label + ", " + std::to_string(in.left.rows()) +
                              " x " + std::to_string(in.right.rows()) + " rows: ";
    for (std::size_t k = 0; k < std::size(kAllKinds); ++k) {
      // Quick: the first key takes the first three kinds, the composite key the last three (each case
      // still outputs gather maps and columns).
      if (!full_tier() && k / 3 != c) continue;
      const TableOutput output = (c + k) % 2 ? TableOutput::Columns : TableOutput::GatherMaps;
      EXPECT_TRUE(check_one(in, base(), kAllKinds[k], output, kAllMaterializations[k % 3], rng, where, engine()));
    }
  }
}

/// Late materialization with every payload column gathered on the GPUs (GatherOn::Gpus): every kind, on
/// tables with payload columns of every type (1, 2, 4 and 8 bytes a value) beside random ones, inputs
/// random, with many duplicates, of extreme keys, matching nothing and with an empty side; through the engine and through
/// the overload that makes its own. The result says that the GPUs gathered every payload column.
TEST_P(GpuTableJoins, PayloadColumnsGatheredOnTheGpus) {
  MGJOIN_REQUIRE_GPUS(GetParam().gpus);
  Rng rng = this->rng();
  // Empty sides: an outer join gathers the empty side's columns by a map of -1 only.
  constexpr Shape shapes[] = {Shape::Random,  Shape::Duplicates, Shape::Extremes,
                              Shape::NoMatch, Shape::EmptyLeft,  Shape::EmptyRight};
  const auto specs = gpu_key_specs();
  for (std::size_t i = 0; i < std::size(shapes); ++i) {
    TableInput in = make_input(specs[i % specs.size()], shapes[i], rng);
    for (auto [table, prefix] : {std::pair{&in.left, "lw"}, std::pair{&in.right, "rw"}})
      for (std::size_t t = 0; t < std::size(kAllTypes); ++t) {
        std::string name = prefix;
        name += std::to_string(t);
        table->columns.push_back(random_payload(std::move(name), kAllTypes[t], table->rows(), rng));
      }
    const std::string where = context() + "key " + specs[i % specs.size()].label + ", " + in.shape + ": ";
    for (std::size_t k = 0; k < std::size(kAllKinds); ++k) {
      // Sanitize: half the kinds on each shape, the other half on the next (the random input keeps the odd
      // kinds, those through an engine of their own): every kind, shape and payload type's gather still runs.
      if (sanitize_skips(i + k + 1, 2)) continue;
      TableJoinOptions o = base();
      o.left_on = in.left_on;
      o.right_on = in.right_on;
      o.how = kAllKinds[k];
      o.materialization = Materialization::Late;
      o.gather_on = GatherOn::Gpus;
      // The odd kinds through the overload that makes its own engine (~0.5 s an engine on two GPUs);
      // quick: only on the random input (a left outer, a full outer and an anti join), the other shapes'
      // odd kinds on the shared engine.
      const bool own_engine = k % 2 == 1 && (full_tier() || i == 0);
      Engine* through = own_engine ? nullptr : engine();
      TableJoinResult res;
      EXPECT_TRUE(run_and_check(in, o, where, CarryCheck::LateOrCarried, through, &res));
      const std::size_t payloads = in.left.names_except(in.left_on).size() +
                                   (outputs_right_columns(o.how) ? in.right.names_except(in.right_on).size() : 0);
      const std::string expected = res.count == 0 ? "gathers: CPU"
                                                  : "gathers: " + std::to_string(payloads) + " payload column(s) on GPUs, 0 on the CPU";
      EXPECT_EQ(res.gathers.substr(0, expected.size()), expected) << where << join_kind_name(o.how) << ": " << res.gathers;
    }
  }
}

/// A hot key on both sides (100k x 100k rows: 10^10 pairs): semi and anti joins output left rows only.
TEST_P(GpuTableJoins, SemiAndAntiJoinsOfAHotKey) {
  MGJOIN_REQUIRE_GPUS(GetParam().gpus);
  Rng rng = this->rng();
  TableInput in;
  // Quick: 30k x 30k rows (9 * 10^8 pairs), still far more than 4 pairs a left row: semi and anti joins
  // still take the branch that joins against the right side's distinct keys. Sanitize: 3k x 3k (9 * 10^6
  // pairs), the same branch.
  const std::int64_t n = per_tier<std::int64_t>(30'000, 100'000, 3'000);
  in.shape = "hot key " + std::to_string(n / 1000) + "k x " + std::to_string(n / 1000) + "k";
  OwnedColumn lk = zero_column("k", DType::UInt64, n + 100), rk = zero_column("k", DType::UInt64, n + 50);
  for (std::int64_t i = 0; i < n + 100; ++i) set_integer(lk, i, i < n ? 12345 : i);  // 100 rows matching nothing
  for (std::int64_t i = 0; i < n + 50; ++i) set_integer(rk, i, i < n ? 12345 : 1'000'000 + i);
  in.left.columns = {lk, random_payload("v", DType::Int32, n + 100, rng)};
  in.right.columns = {rk};
  in.left_on = in.right_on = {"k"};
  EXPECT_EQ(check_kinds_and_outputs(in, base(), {JoinKind::LeftSemi, JoinKind::LeftAnti},
                                    {TableOutput::Count, TableOutput::GatherMaps, TableOutput::Columns}, context(), engine()),
            0);
}

/// Inner joins with one 4- or 8-byte payload column per side, carried through the GPU flow; through
/// the overload that makes its own engine (quick: the 4-byte key's; the 8-byte key's on the shared engine).
TEST_P(GpuTableJoins, CarriedPayloadsWithoutAnEngine) {
  MGJOIN_REQUIRE_GPUS(GetParam().gpus);
  Rng rng = this->rng();
  for (const auto& spec : {KeySpec{"uint32", {DType::UInt32}}, KeySpec{"int64", {DType::Int64}}}) {
    Engine* through = full_tier() || spec.label == "uint32" ? nullptr : engine();
    TableInput in = make_input(spec, Shape::Duplicates, rng);
    OwnedTable left, right;
    left.columns = {in.left.named(in.left_on[0]), random_payload("lp", DType::Float32, in.left.rows(), rng)};
    right.columns = {random_payload("rp", DType::UInt64, in.right.rows(), rng), in.right.named(in.right_on[0])};
    in.left = std::move(left);
    in.right = std::move(right);
    TableJoinOptions o = base();
    o.left_on = in.left_on;
    o.right_on = in.right_on;
    o.materialization = Materialization::Carry;
    EXPECT_TRUE(run_and_check(in, o, context(), CarryCheck::Carried, through));
  }
}

/// may_reorder_inputs on the GPUs: rows stay whole and the result is the original tables' join.
TEST_P(GpuTableJoins, MayReorderInputs) {
  MGJOIN_REQUIRE_GPUS(GetParam().gpus);
  Rng rng = this->rng();
  const KeySpec spec{"int64", {DType::Int64}};
  const TableInput in = make_input(spec, Shape::Random, rng);
  for (const JoinKind kind : {JoinKind::Inner, JoinKind::FullOuter, JoinKind::LeftSemi})
    for (const TableOutput output : {TableOutput::Count, TableOutput::Columns}) {
      TableJoinOptions o = base();
      o.left_on = in.left_on;
      o.right_on = in.right_on;
      o.how = kind;
      o.output = output;
      EXPECT_TRUE(run_and_check_reordering(in, o, context(), engine()));
    }
  // A carried inner join (one 8-byte payload per side) with a column that is not output.
  TableInput carried = in;
  carried.left.columns = {in.left.named(in.left_on[0]), random_payload("lp", DType::Int64, in.left.rows(), rng),
                          random_payload("unused", DType::Int8, in.left.rows(), rng)};
  carried.right.columns = {random_payload("rp", DType::Float64, in.right.rows(), rng), in.right.named(in.right_on[0])};
  TableJoinOptions o = base();
  o.left_on = in.left_on;
  o.right_on = in.right_on;
  o.materialization = Materialization::Carry;
  o.left_columns = std::vector<std::string>{"lp"};
  EXPECT_TRUE(run_and_check_reordering(carried, o, context() + "carried: ", engine()));
}

INSTANTIATE_TEST_SUITE_P(Flows, GpuTableJoins,
                         ::testing::Values(GpuFlow{1, JoinStrategy::Auto}, GpuFlow{1, JoinStrategy::Paper},
                                           GpuFlow{1, JoinStrategy::CoPartitioned}, GpuFlow{2, JoinStrategy::Auto},
                                           GpuFlow{2, JoinStrategy::Paper}, GpuFlow{2, JoinStrategy::CoPartitioned}),
                         [](const auto& info) {
                           return "g" + std::to_string(info.param.gpus) + "_" + strategy_label(info.param.strategy);
                         });

/// GPU gathers that run out of device memory as they start (each of their device allocations failed in
/// turn): the join completes with every column gathered on the CPU, agrees with the reference and says
/// so; the engine is whole afterwards.
TEST(GpuTableGathers, DeviceMemoryRunningOutFallsBackToTheCpu) {
  MGJOIN_REQUIRE_GPUS(1);
  Rng rng(announce_seed());
  TableInput in = make_input({"int64", {DType::Int64}}, Shape::Random, rng);
  for (auto [table, prefix] : {std::pair{&in.left, "lx"}, std::pair{&in.right, "rx"}})
    for (const DType t : {DType::Int64, DType::Int8, DType::Float32}) {
      std::string name = prefix;
      name += dtype_name(t);
      table->columns.push_back(random_payload(std::move(name), t, table->rows(), rng));
    }
  TableJoinOptions o;
  o.left_on = in.left_on;
  o.right_on = in.right_on;
  o.how = JoinKind::FullOuter;
  o.materialization = Materialization::Late;
  o.join.gpus = 1;
  o.join.gpu_memory_limit = kGpuMemory;
  Engine& engine = engine_for(1);
  struct Disarm {
    ~Disarm() { alloc::fault::fail_nth_allocation(0); }
  } disarm;
  const auto device_allocations = [&](GatherOn on) {
    TableJoinOptions counted = o;
    counted.gather_on = on;
    alloc::fault::fail_nth_allocation(~0ull);  // counts, fails none
    join_tables(engine, in.left.view(), in.right.view(), counted);
    return alloc::fault::allocations_counted();
  };
  const std::uint64_t join_only = device_allocations(GatherOn::Cpu), with_gathers = device_allocations(GatherOn::Gpus);
  ASSERT_GT(with_gathers, join_only) << "the GPUs' gathers take device memory (maps, sources, outputs)";
  o.gather_on = GatherOn::Gpus;
  for (std::uint64_t n = join_only + 1; n <= with_gathers; ++n) {
    alloc::fault::fail_nth_allocation(n);
    TableJoinResult res;
    try {
      res = join_tables(engine, in.left.view(), in.right.view(), o);
    } catch (const std::exception& e) {
      ADD_FAILURE() << "device allocation " << n << " failing: join_tables threw " << e.what();
      continue;
    }
    EXPECT_TRUE(matches_reference(in, o, res)) << "device allocation " << n << " failing";
    EXPECT_NE(res.gathers.find("GPU memory ran out"), std::string::npos) << n << ": " << res.gathers;
  }
  alloc::fault::fail_nth_allocation(0);
  EXPECT_TRUE(run_and_check(in, o, "after the faults: ", CarryCheck::LateOrCarried, &engine));
}

/// join_tables(Engine&, ...) refuses options whose EngineOptions part is set and differs from the
/// engine's.
TEST(GpuTableJoinsOnAnEngine, OtherEngineOptionsAreRefused) {
  MGJOIN_REQUIRE_GPUS(1);
  Rng rng(announce_seed());
  const TableInput in = make_input({"int32", {DType::Int32}}, Shape::Random, rng);
  TableJoinOptions o;
  o.left_on = in.left_on;
  o.right_on = in.right_on;
  o.join.gpus = 1;
  o.join.gpu_memory_limit = kGpuMemory;
  EXPECT_NO_THROW(join_tables(engine_for(1), in.left.view(), in.right.view(), o));
  TableJoinOptions unset = o;
  unset.join.gpus = EngineOptions{}.gpus;
  unset.join.gpu_memory_limit = EngineOptions{}.gpu_memory_limit;
  EXPECT_TRUE(run_and_check(in, unset, "EngineOptions left unset: ", CarryCheck::LateOrCarried, &engine_for(1)));
  TableJoinOptions other = o;
  other.join.gpu_memory_limit = 2 * kGpuMemory;
  EXPECT_THROW(join_tables(engine_for(1), in.left.view(), in.right.view(), other), InputError);
}

}  // namespace
}  // namespace mgjoin::test
