// join_tables with keys compared by value on the CPU path: integer keys of every pair of widths and
// signedness, float keys (-0.0 equals 0.0, NaN equals NaN), bool keys and mixed composites, against the
// by-value reference of key_values.hpp in every kind and output form; the edges where a uint64 meets a
// signed key; the output key column's type; and check_key_types, which checks the types alone.
#include <mgjoin/error.hpp>
#include <mgjoin/table.hpp>

#include "common/seed.hpp"
#include "table/key_values.hpp"

#include <gtest/gtest.h>

#include <cstdint>
#include <limits>
#include <string>
#include <vector>

namespace mgjoin::test {
namespace {

/// Every pair of integer types, single keys: random tables from values both types hold in part.
TEST(KeysByValue, EveryPairOfIntegerTypesJoinsByValue) {
  Rng rng(announce_seed());
  for (const DType l : kIntegerTypes)
    for (const DType r : kIntegerTypes) {
      const TableInput in = tables_by_value({{l}, {r}}, uniform(rng, 0, 300), uniform(rng, 0, 300), rng);
      ASSERT_EQ(check_by_value(in, cpu_path_options()), 0) << in.shape;
    }
}

TEST(KeysByValue, FloatKeys) {
  Rng rng(announce_seed() + 1);
  for (const auto& types : std::vector<KeyTypePair>{{{DType::Float32}, {DType::Float32}},
                                                    {{DType::Float64}, {DType::Float64}},
                                                    {{DType::Float32}, {DType::Float64}},
                                                    {{DType::Float64}, {DType::Float32}}})
    for (int round = 0; round < 3; ++round) {
      const TableInput in = tables_by_value(types, uniform(rng, 1, 400), uniform(rng, 1, 400), rng);
      ASSERT_EQ(check_by_value(in, cpu_path_options()), 0) << in.shape;
    }
}

/// Written out: -0.0 joins 0.0, every NaN joins every NaN (whatever its bits) and nothing else, +inf
/// joins +inf; a float32 0.1 is not the float64 0.1, a float32 0.5 is 0.5.
TEST(KeysByValue, ZerosNaNsAndInfinitiesByHand) {
  const double nan = std::numeric_limits<double>::quiet_NaN(), inf = std::numeric_limits<double>::infinity();
  TableInput in;
  in.shape = "floats by hand";
  in.left.columns = {column_of<float>("k", DType::Float32, {-0.0f, 0.0f, std::numeric_limits<float>::quiet_NaN(),
                                                            -std::numeric_limits<float>::quiet_NaN(), 0.1f, 0.5f,
                                                            std::numeric_limits<float>::infinity()})};
  in.right.columns = {column_of<double>("k", DType::Float64, {0.0, nan, 0.1, 0.5, -inf, inf})};
  in.left_on = in.right_on = {"k"};
  add_row_numbers(in);
  TableJoinOptions o = cpu_path_options();
  o.left_on = o.right_on = {"k"};
  o.output = TableOutput::GatherMaps;
  const TableJoinResult res = join_tables(in.left.view(), in.right.view(), o);
  EXPECT_EQ(sorted(result_pairs(res, o.output, o.how)),
            (std::vector<RowPair>{{0, 0}, {1, 0}, {2, 1}, {3, 1}, {5, 3}, {6, 5}}));
  o.output = TableOutput::Columns;
  o.how = JoinKind::FullOuter;
  const TableJoinResult full = join_tables(in.left.view(), in.right.view(), o);
  EXPECT_EQ(full.columns.front().column.type(), DType::Float64);
  EXPECT_TRUE(matches_by_value(in, o, full));
}

/// A uint64 beyond int64's range equals no signed value, and a negative value equals no unsigned one,
/// at every width where the unsigned type is at least as wide as the signed one.
TEST(KeysByValue, UnsignedBeyondTheSignedRangeNeverEqualsANegative) {
  constexpr std::uint64_t u_max = std::numeric_limits<std::uint64_t>::max(), top = std::uint64_t{1} << 63;
  TableInput in;
  in.shape = "uint64 against int64 at the edges";
  in.left.columns = {column_of<std::uint64_t>("k", DType::UInt64, {u_max, top, top - 1, 0, 5, top + 5})};
  in.right.columns = {column_of<std::int64_t>(
      "k", DType::Int64, {-1, std::numeric_limits<std::int64_t>::min(), std::numeric_limits<std::int64_t>::max(), 0, 5, -5})};
  in.left_on = in.right_on = {"k"};
  add_row_numbers(in);
  TableJoinOptions o = cpu_path_options();
  o.left_on = o.right_on = {"k"};
  o.output = TableOutput::GatherMaps;
  EXPECT_EQ(sorted(result_pairs(join_tables(in.left.view(), in.right.view(), o), o.output, o.how)),
            (std::vector<RowPair>{{2, 2}, {3, 3}, {4, 4}}));
  EXPECT_EQ(check_by_value(in, cpu_path_options()), 0);

  TableInput narrow;
  narrow.shape = "uint32 against int32 and int8 at the edges";
  narrow.left.columns = {column_of<std::uint32_t>("k", DType::UInt32, {0xffffffffu, 0x80000000u, 0x7fffffffu, 0, 255, 128})};
  narrow.right.columns = {column_of<std::int32_t>("k", DType::Int32, {-1, std::numeric_limits<std::int32_t>::min(),
                                                                      std::numeric_limits<std::int32_t>::max(), 0, -128, 127})};
  narrow.left_on = narrow.right_on = {"k"};
  add_row_numbers(narrow);
  EXPECT_EQ(check_by_value(narrow, cpu_path_options()), 0);
  o.output = TableOutput::GatherMaps;
  EXPECT_EQ(sorted(result_pairs(join_tables(narrow.left.view(), narrow.right.view(), o), o.output, o.how)),
            (std::vector<RowPair>{{2, 2}, {3, 3}}));
}

/// The output key column: the type that holds both sides; for uint64 against a signed type the left type
/// (the right one for right joins), and a full outer join of such keys refused for columns only.
TEST(KeysByValue, TheOutputKeyTypeHoldsBothSides) {
  const auto key_type = [](DType l, DType r, JoinKind how) {
    TableInput in;
    in.left.columns = {zero_column("k", l, 1)};
    in.right.columns = {zero_column("k", r, 1)};
    TableJoinOptions o = cpu_path_options();
    o.left_on = o.right_on = {"k"};
    o.how = how;
    return join_tables(in.left.view(), in.right.view(), o).columns.front().column.type();
  };
  EXPECT_EQ(key_type(DType::Int32, DType::Int64, JoinKind::Inner), DType::Int64);
  EXPECT_EQ(key_type(DType::UInt32, DType::Int64, JoinKind::LeftOuter), DType::Int64);
  EXPECT_EQ(key_type(DType::UInt32, DType::Int32, JoinKind::FullOuter), DType::Int64);
  EXPECT_EQ(key_type(DType::UInt8, DType::UInt16, JoinKind::Inner), DType::UInt16);
  EXPECT_EQ(key_type(DType::Float32, DType::Float64, JoinKind::Inner), DType::Float64);
  EXPECT_EQ(key_type(DType::UInt64, DType::Int64, JoinKind::Inner), DType::UInt64);
  EXPECT_EQ(key_type(DType::UInt64, DType::Int8, JoinKind::LeftSemi), DType::UInt64);
  EXPECT_EQ(key_type(DType::Int64, DType::UInt64, JoinKind::RightOuter), DType::UInt64);
  EXPECT_THROW(key_type(DType::UInt64, DType::Int64, JoinKind::FullOuter), InputError);
}

TEST(KeysByValue, BoolKeys) {
  Rng rng(announce_seed() + 2);
  const TableInput in = tables_by_value({{DType::Bool}, {DType::Bool}}, 50, 40, rng);
  EXPECT_EQ(check_by_value(in, cpu_path_options()), 0);
}

/// Composites whose components differ in width, signedness or kind: each component compared by value,
/// at most 8 bytes of sort key.
TEST(KeysByValue, CompositesOfMixedComponents) {
  Rng rng(announce_seed() + 3);
  for (const auto& types : std::vector<KeyTypePair>{
           {{DType::Int16, DType::UInt8}, {DType::Int32, DType::UInt16}},
           {{DType::UInt32, DType::Int8}, {DType::Int32, DType::UInt8}},
           {{DType::Float32, DType::Int16}, {DType::Float32, DType::UInt8}},
           {{DType::Bool, DType::Int8, DType::UInt16}, {DType::Bool, DType::UInt8, DType::Int8}},
           {{DType::Int8, DType::Int8, DType::Int8, DType::Int8}, {DType::Int16, DType::UInt8, DType::Int8, DType::Int8}}})
    for (int round = 0; round < 2; ++round) {
      const TableInput in = tables_by_value(types, uniform(rng, 1, 300), uniform(rng, 1, 300), rng);
      ASSERT_EQ(check_by_value(in, cpu_path_options()), 0) << in.shape;
    }
}

/// Carried payloads and may_reorder_inputs apply to keys used as they are; a key encoded for its types
/// takes late materialization and leaves the caller's columns as they were.
TEST(KeysByValue, EncodedKeysMaterializeLateAndLeaveTheInputsAlone) {
  Rng rng(announce_seed() + 4);
  TableInput in = tables_by_value({{DType::Int32}, {DType::Int64}}, 200, 300, rng);
  const TableInput before = in;
  TableJoinOptions o = cpu_path_options();
  o.left_on = in.left_on;
  o.right_on = in.right_on;
  o.materialization = Materialization::Carry;
  o.may_reorder_inputs = true;
  const TableJoinResult res = join_tables(in.left.view(), in.right.view(), o);
  EXPECT_EQ(res.materialization, "late");
  EXPECT_TRUE(matches_by_value(in, o, res));
  for (std::size_t i = 0; i < in.left.columns.size(); ++i) EXPECT_EQ(in.left.columns[i].bytes, before.left.columns[i].bytes);
  for (std::size_t i = 0; i < in.right.columns.size(); ++i) EXPECT_EQ(in.right.columns[i].bytes, before.right.columns[i].bytes);
}

/// check_key_types: join_tables' rules from the types alone, with its messages.
TEST(KeysByValue, CheckKeyTypesFromTheTypesAlone) {
  TableJoinOptions o;
  o.left_on = {"a", "b"};
  o.right_on = {"x", "y"};
  EXPECT_NO_THROW(check_key_types({DType::Int32, DType::UInt8}, {DType::Int16, DType::Int8}, o));
  const auto message = [&](const std::vector<DType>& l, const std::vector<DType>& r) -> std::string {
    try {
      check_key_types(l, r, o);
    } catch (const InputError& e) {
      return e.what();
    }
    return "";
  };
  EXPECT_NE(message({DType::Int32, DType::Float32}, {DType::Int32, DType::Int32}).find("'b' (left table, float32)"),
            std::string::npos);
  EXPECT_EQ(message({DType::Int32, DType::Int8}, {DType::Int64, DType::Int8}), "") << "9 bytes: a hashed key";
  EXPECT_NE(message({DType::Bool, DType::Int8}, {DType::UInt8, DType::Int8}).find("cannot be compared"), std::string::npos);
  o.left_on = o.right_on = {"k"};
  o.how = JoinKind::FullOuter;
  EXPECT_NE(message({DType::UInt64}, {DType::Int32}).find("full outer"), std::string::npos);
  o.output = TableOutput::GatherMaps;
  EXPECT_EQ(message({DType::UInt64}, {DType::Int32}), "");
  o.left_on = {"k", "k"};
  o.right_on = {"k", "j"};
  EXPECT_NE(message({DType::Int8, DType::Int8}, {DType::Int8, DType::Int8}).find("names 'k' twice"), std::string::npos);
}

}  // namespace
}  // namespace mgjoin::test
