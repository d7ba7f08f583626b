// join_tables on the CPU path (TableJoinOptions::join.gpus = 0): hand-computed cases of every join kind
// and output form, random and adversarial tables of every key type (single and composite) and payload
// type against the reference (tests/common/reference_join.hpp), the documented output order and column layout,
// untouched inputs, and the input errors the header promises.
#include <mgjoin/error.hpp>
#include <mgjoin/table.hpp>

#include "common/reference_join.hpp"
#include "common/seed.hpp"
#include "table/table_check.hpp"
#include "table/table_inputs.hpp"
#include "table/table_names.hpp"
#include "table/test_tables.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <functional>
#include <limits>
#include <string>
#include <tuple>
#include <vector>

namespace mgjoin::test {
namespace {

TableJoinOptions cpu_options(const TableInput& in, JoinKind how, TableOutput output) {
  TableJoinOptions o;
  o.left_on = in.left_on;
  o.right_on = in.right_on;
  o.how = how;
  o.output = output;
  o.join.gpus = 0;
  return o;
}

// ------------------------------------------------------------------------------ hand-computed cases

/// left: key {1, 2, 2, 3}, lv int32 {10, 20, 21, 30}; right: key {2, 2, 4}, rv int64 {200, 201, 400}.
TableInput small_case() {
  TableInput in;
  in.shape = "hand: left {1,2,2,3}, right {2,2,4}";
  in.left.columns = {column_of<std::int32_t>("key", DType::Int32, {1, 2, 2, 3}),
                     column_of<std::int32_t>("lv", DType::Int32, {10, 20, 21, 30})};
  in.right.columns = {column_of<std::int64_t>("rv", DType::Int64, {200, 201, 400}),
                      column_of<std::int32_t>("key", DType::Int32, {2, 2, 4})};
  in.left_on = {"key"};
  in.right_on = {"key"};
  return in;
}

TableJoinResult run(const TableInput& in, const TableJoinOptions& o) {
  return join_tables(in.left.view(), in.right.view(), o);
}

std::vector<std::pair<std::int64_t, std::int64_t>> maps_of(const TableJoinResult& res) {
  std::vector<std::pair<std::int64_t, std::int64_t>> out;
  for (std::int64_t i = 0; i < res.left_rows.size(); ++i)
    out.emplace_back(res.left_rows.as<std::int64_t>()[i],
                     res.right_rows.size() ? res.right_rows.as<std::int64_t>()[i] : std::int64_t{-2});
  return out;
}

template <class T>
std::vector<T> values_of(const TableJoinResult& res, const std::string& name) {
  for (const auto& c : res.columns)
    if (c.name == name) {
      const T* p = c.column.as<T>();
      return std::vector<T>(p, p + c.column.size());
    }
  ADD_FAILURE() << "no column " << name;
  return {};
}

std::vector<std::string> names_of(const TableJoinResult& res) {
  std::vector<std::string> out;
  for (const auto& c : res.columns) out.push_back(c.name);
  return out;
}

using Pairs = std::vector<std::pair<std::int64_t, std::int64_t>>;

/// The first `n` entries sorted (the pairs' order within a key is open), the rest as they are.
template <class T>
std::vector<T> sort_prefix(std::vector<T> v, std::size_t n) {
  std::sort(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(std::min(n, v.size())));
  return v;
}

TEST(JoinTablesByHand, CountOfEveryKind) {
  const TableInput in = small_case();
  const std::vector<std::pair<JoinKind, std::uint64_t>> expected = {
      {JoinKind::Inner, 4},    {JoinKind::LeftOuter, 6}, {JoinKind::RightOuter, 5},
      {JoinKind::FullOuter, 7}, {JoinKind::LeftSemi, 2}, {JoinKind::LeftAnti, 2}};
  for (const auto& [kind, count] : expected) {
    const auto res = run(in, cpu_options(in, kind, TableOutput::Count));
    EXPECT_EQ(res.count, count) << kind_label(kind);
  }
}

TEST(JoinTablesByHand, GatherMapsOfEveryKind) {
  const TableInput in = small_case();
  // Pairs (left row, right row) first (any order: one key), then unmatched left rows, then right rows.
  const Pairs inner = {{1, 0}, {1, 1}, {2, 0}, {2, 1}};
  Pairs left = inner, right = inner, full = inner;
  left.insert(left.end(), {{0, -1}, {3, -1}});
  right.insert(right.end(), {{-1, 2}});
  full.insert(full.end(), {{0, -1}, {3, -1}, {-1, 2}});
  const std::vector<std::pair<JoinKind, Pairs>> cases = {
      {JoinKind::Inner, inner}, {JoinKind::LeftOuter, left}, {JoinKind::RightOuter, right}, {JoinKind::FullOuter, full}};
  for (const auto& [kind, pairs] : cases) {
    const auto res = run(in, cpu_options(in, kind, TableOutput::GatherMaps));
    EXPECT_EQ(res.count, pairs.size()) << kind_label(kind);
    EXPECT_EQ(res.left_rows.type(), DType::Int64);
    EXPECT_EQ(res.right_rows.type(), DType::Int64);
    EXPECT_EQ(sort_prefix(maps_of(res), 4), pairs) << kind_label(kind);
  }
  // Semi and anti joins: left rows only, in left table order.
  for (const auto& [kind, rows] : std::vector<std::pair<JoinKind, std::vector<std::int64_t>>>{
           {JoinKind::LeftSemi, {1, 2}}, {JoinKind::LeftAnti, {0, 3}}}) {
    const auto res = run(in, cpu_options(in, kind, TableOutput::GatherMaps));
    EXPECT_EQ(res.count, rows.size()) << kind_label(kind);
    ASSERT_EQ(res.left_rows.type(), DType::Int64);
    EXPECT_EQ(std::vector<std::int64_t>(res.left_rows.as<std::int64_t>(),
                                        res.left_rows.as<std::int64_t>() + res.left_rows.size()),
              rows)
        << kind_label(kind);
    EXPECT_EQ(res.right_rows.size(), 0) << kind_label(kind) << ": semi and anti joins return left_rows only";
  }
}

TEST(JoinTablesByHand, ColumnsOfAFullOuterJoin) {
  const TableInput in = small_case();
  const auto res = run(in, cpu_options(in, JoinKind::FullOuter, TableOutput::Columns));
  ASSERT_EQ(names_of(res), (std::vector<std::string>{"key", "r.lv", "s.rv", "r.valid", "s.valid"}));
  ASSERT_EQ(res.count, 7u);
  // Rows as (key, r.lv, s.rv, r.valid, s.valid): four pairs of key 2, left 1 and 3 unmatched, right 4
  // unmatched (its key from the right row, the left side's columns zero).
  using Row = std::tuple<std::int32_t, std::int32_t, std::int64_t, bool, bool>;
  const auto key = values_of<std::int32_t>(res, "key");
  const auto lv = values_of<std::int32_t>(res, "r.lv");
  const auto rv = values_of<std::int64_t>(res, "s.rv");
  const auto r_valid = values_of<bool>(res, "r.valid");
  const auto s_valid = values_of<bool>(res, "s.valid");
  std::vector<Row> rows;
  for (std::size_t i = 0; i < key.size(); ++i) rows.emplace_back(key[i], lv[i], rv[i], r_valid[i], s_valid[i]);
  const std::vector<Row> expected = {{2, 20, 200, true, true}, {2, 20, 201, true, true}, {2, 21, 200, true, true},
                                     {2, 21, 201, true, true}, {1, 10, 0, true, false},  {3, 30, 0, true, false},
                                     {4, 0, 400, false, true}};
  EXPECT_EQ(sort_prefix(rows, 4), expected);
}

TEST(JoinTablesByHand, ColumnsOfLeftAndRightOuterJoins) {
  const TableInput in = small_case();
  {
    const auto res = run(in, cpu_options(in, JoinKind::LeftOuter, TableOutput::Columns));
    ASSERT_EQ(res.count, 6u);
    // The left side is never missing: s.valid only.
    EXPECT_EQ(names_of(res), (std::vector<std::string>{"key", "r.lv", "s.rv", "s.valid"}));
    const auto key = values_of<std::int32_t>(res, "key");
    const auto rv = values_of<std::int64_t>(res, "s.rv");
    const auto s_valid = values_of<bool>(res, "s.valid");
    EXPECT_EQ(std::vector<std::int32_t>(key.begin() + 4, key.end()), (std::vector<std::int32_t>{1, 3}));
    EXPECT_EQ(std::vector<std::int64_t>(rv.begin() + 4, rv.end()), (std::vector<std::int64_t>{0, 0}));
    EXPECT_EQ(s_valid, (std::vector<bool>{true, true, true, true, false, false}));
  }
  {
    const auto res = run(in, cpu_options(in, JoinKind::RightOuter, TableOutput::Columns));
    ASSERT_EQ(res.count, 5u);
    EXPECT_EQ(names_of(res), (std::vector<std::string>{"key", "r.lv", "s.rv", "r.valid"}));
    const auto key = values_of<std::int32_t>(res, "key");
    const auto lv = values_of<std::int32_t>(res, "r.lv");
    const auto r_valid = values_of<bool>(res, "r.valid");
    EXPECT_EQ(key.back(), 4) << "the key of an unmatched right row comes from the right table";
    EXPECT_EQ(lv.back(), 0);
    EXPECT_EQ(r_valid, (std::vector<bool>{true, true, true, true, false}));
  }
}

TEST(JoinTablesByHand, ColumnsOfSemiAndAntiJoins) {
  const TableInput in = small_case();
  for (const auto& [kind, keys, lvs] : std::vector<std::tuple<JoinKind, std::vector<std::int32_t>, std::vector<std::int32_t>>>{
           {JoinKind::LeftSemi, {2, 2}, {20, 21}}, {JoinKind::LeftAnti, {1, 3}, {10, 30}}}) {
    const auto res = run(in, cpu_options(in, kind, TableOutput::Columns));
    EXPECT_EQ(names_of(res), (std::vector<std::string>{"key", "r.lv"})) << kind_label(kind) << ": no right columns";
    EXPECT_EQ(values_of<std::int32_t>(res, "key"), keys) << kind_label(kind);
    EXPECT_EQ(values_of<std::int32_t>(res, "r.lv"), lvs) << kind_label(kind);
  }
}

TEST(JoinTablesByHand, InnerColumnsAndChosenPayloads) {
  const TableInput in = small_case();
  auto o = cpu_options(in, JoinKind::Inner, TableOutput::Columns);
  {
    const auto res = run(in, o);
    EXPECT_EQ(names_of(res), (std::vector<std::string>{"key", "r.lv", "s.rv"}));
    auto key = values_of<std::int32_t>(res, "key");
    EXPECT_EQ(key, (std::vector<std::int32_t>{2, 2, 2, 2}));
  }
  o.left_columns = std::vector<std::string>{};
  o.right_columns = std::vector<std::string>{"rv"};
  {
    const auto res = run(in, o);
    EXPECT_EQ(names_of(res), (std::vector<std::string>{"key", "s.rv"}));
    auto rv = values_of<std::int64_t>(res, "s.rv");
    std::sort(rv.begin(), rv.end());
    EXPECT_EQ(rv, (std::vector<std::int64_t>{200, 200, 201, 201}));
  }
}

/// The CPU path gathers on the CPU whatever TableJoinOptions::gather_on asks, and says so.
TEST(JoinTablesByHand, TheCpuPathGathersOnTheCpu) {
  const TableInput in = small_case();
  for (const GatherOn on : {GatherOn::Auto, GatherOn::Cpu, GatherOn::Gpus}) {
    auto o = cpu_options(in, JoinKind::FullOuter, TableOutput::Columns);
    o.gather_on = on;
    const auto res = run(in, o);
    EXPECT_EQ(res.gathers, on == GatherOn::Cpu ? "gathers: CPU (asked for)" : "gathers: CPU (no GPU)");
    EXPECT_EQ(names_of(res), (std::vector<std::string>{"key", "r.lv", "s.rv", "r.valid", "s.valid"}));
    auto rv = values_of<std::int64_t>(res, "s.rv");
    std::sort(rv.begin(), rv.end());
    EXPECT_EQ(rv, (std::vector<std::int64_t>{0, 0, 200, 200, 201, 201, 400}));  // 1 and 3 unmatched, then 4
  }
}

/// Composite key (a int16, b int8): compared as tuples of signed values, so (-1, 1) < (1, -1).
TEST(JoinTablesByHand, CompositeSignedKeyInKeyOrder) {
  TableInput in;
  in.shape = "hand: composite (int16, int8)";
  in.left.columns = {column_of<std::int16_t>("a", DType::Int16, {1, 1, -1, 2}),
                     column_of<std::int8_t>("b", DType::Int8, {-1, 1, 1, 2}),
                     column_of<std::uint8_t>("tag", DType::UInt8, {10, 11, 12, 13})};
  in.right.columns = {column_of<std::int8_t>("y", DType::Int8, {-1, -1, 1, 3}),
                      column_of<std::int16_t>("x", DType::Int16, {1, 1, -1, 3}),
                      column_of<std::int16_t>("w", DType::Int16, {-100, -101, -102, -103})};
  in.left_on = {"a", "b"};
  in.right_on = {"x", "y"};

  // Pairs in key order: (-1,1): (2,2); (1,-1): (0,0), (0,1). Unmatched: left 1, 3; right 3.
  const auto maps = run(in, cpu_options(in, JoinKind::FullOuter, TableOutput::GatherMaps));
  const auto got = maps_of(maps);
  ASSERT_EQ(got.size(), 6u);
  EXPECT_EQ(got[0], (std::pair<std::int64_t, std::int64_t>{2, 2})) << "key (-1, 1) sorts before (1, -1)";
  EXPECT_EQ(sort_prefix(Pairs(got.begin() + 1, got.begin() + 3), 2), (Pairs{{0, 0}, {0, 1}}));
  EXPECT_EQ(Pairs(got.begin() + 3, got.end()), (Pairs{{1, -1}, {3, -1}, {-1, 3}}));

  const auto res = run(in, cpu_options(in, JoinKind::FullOuter, TableOutput::Columns));
  EXPECT_EQ(names_of(res), (std::vector<std::string>{"key.a", "key.b", "r.tag", "s.w", "r.valid", "s.valid"}));
  EXPECT_EQ(values_of<std::int16_t>(res, "key.a"), (std::vector<std::int16_t>{-1, 1, 1, 1, 2, 3}));
  EXPECT_EQ(values_of<std::int8_t>(res, "key.b"), (std::vector<std::int8_t>{1, -1, -1, 1, 2, 3}));
  EXPECT_EQ(values_of<std::uint8_t>(res, "r.tag"), (std::vector<std::uint8_t>{12, 10, 10, 11, 13, 0}));
  auto w = values_of<std::int16_t>(res, "s.w");
  ASSERT_EQ(w.size(), 6u);
  EXPECT_EQ(w[0], -102);
  EXPECT_EQ(sort_prefix(std::vector<std::int16_t>(w.begin() + 1, w.begin() + 3), 2), (std::vector<std::int16_t>{-101, -100}));
  EXPECT_EQ(std::vector<std::int16_t>(w.begin() + 3, w.end()), (std::vector<std::int16_t>{0, 0, -103}));
  EXPECT_EQ(values_of<bool>(res, "r.valid"), (std::vector<bool>{true, true, true, true, true, false}));
  EXPECT_EQ(values_of<bool>(res, "s.valid"), (std::vector<bool>{true, true, true, false, false, true}));
}

/// Distinct signed keys: the pairs' order is fully determined by key order.
TEST(JoinTablesByHand, SignedKeysComeInKeyOrder) {
  TableInput in;
  in.shape = "hand: signed int32";
  in.left.columns = {column_of<std::int32_t>("k", DType::Int32, {-5, 3, -1, 0, std::numeric_limits<std::int32_t>::min()})};
  in.right.columns = {column_of<std::int32_t>("k", DType::Int32, {0, -5, 3, 7, std::numeric_limits<std::int32_t>::min()})};
  in.left_on = in.right_on = {"k"};
  const auto res = run(in, cpu_options(in, JoinKind::Inner, TableOutput::GatherMaps));
  EXPECT_EQ(maps_of(res), (Pairs{{4, 4}, {0, 1}, {3, 0}, {1, 2}}));
  const auto semi = run(in, cpu_options(in, JoinKind::LeftSemi, TableOutput::GatherMaps));
  EXPECT_EQ(maps_of(semi), (Pairs{{0, -2}, {1, -2}, {3, -2}, {4, -2}})) << "left table order, left_rows only";
}

/// may_reorder_inputs: whatever join_tables reorders, it reorders whole rows (every column alike, the
/// ones not in the output too).
TEST(JoinTablesByHand, MayReorderInputsMovesWholeRows) {
  for (const TableOutput output : {TableOutput::Count, TableOutput::Columns}) {
    TableInput in;
    in.shape = "hand: may_reorder_inputs";
    in.left.columns = {column_of<std::uint32_t>("k", DType::UInt32, {3, 1, 2}),
                       column_of<std::int32_t>("v", DType::Int32, {30, 10, 20}),
                       column_of<std::uint8_t>("u", DType::UInt8, {33, 11, 22})};
    in.right.columns = {column_of<std::uint32_t>("k", DType::UInt32, {2, 1}),
                        column_of<std::int64_t>("w", DType::Int64, {200, 100})};
    in.left_on = in.right_on = {"k"};
    TableJoinOptions o = cpu_options(in, JoinKind::Inner, output);
    o.materialization = Materialization::Carry;
    o.left_columns = std::vector<std::string>{"v"};  // u is not output: a carried join moves k, v and w
    o.may_reorder_inputs = true;
    const auto res = join_tables(in.left.view(), in.right.view(), o);
    EXPECT_EQ(res.count, 2u);
    std::vector<std::tuple<std::uint32_t, std::int32_t, std::uint8_t>> left_rows;
    for (int i = 0; i < 3; ++i)
      left_rows.emplace_back(in.left.columns[0].view().as<std::uint32_t>()[i],
                             in.left.columns[1].view().as<std::int32_t>()[i], in.left.columns[2].view().as<std::uint8_t>()[i]);
    std::sort(left_rows.begin(), left_rows.end());
    EXPECT_EQ(left_rows, (std::vector<std::tuple<std::uint32_t, std::int32_t, std::uint8_t>>{{1, 10, 11}, {2, 20, 22}, {3, 30, 33}}))
        << output_label(output) << ": the left table's rows came apart (as (k, v, u), sorted)";
  }
}

TEST(JoinTablesByHand, MayReorderInputsWithTheKeyAsItsOwnPayloadKeepsRowsWhole) {
  // left_columns names the key itself: the flow would move (k, k) and leave v behind.
  TableInput in;
  in.shape = "hand: key chosen as its own payload";
  in.left.columns = {column_of<std::uint32_t>("k", DType::UInt32, {3, 1, 2}),
                     column_of<std::int32_t>("v", DType::Int32, {30, 10, 20})};
  in.right.columns = {column_of<std::uint32_t>("k", DType::UInt32, {2, 1})};
  in.left_on = in.right_on = {"k"};
  TableJoinOptions o = cpu_options(in, JoinKind::Inner, TableOutput::Columns);
  o.left_columns = std::vector<std::string>{"k"};
  o.may_reorder_inputs = true;
  EXPECT_EQ(join_tables(in.left.view(), in.right.view(), o).count, 2u);
  std::vector<std::pair<std::uint32_t, std::int32_t>> rows;
  for (int i = 0; i < 3; ++i)
    rows.emplace_back(in.left.columns[0].view().as<std::uint32_t>()[i], in.left.columns[1].view().as<std::int32_t>()[i]);
  std::sort(rows.begin(), rows.end());
  EXPECT_EQ(rows, (std::vector<std::pair<std::uint32_t, std::int32_t>>{{1, 10}, {2, 20}, {3, 30}}))
      << "the left table's rows came apart";
}

TEST(JoinTablesErrors, AColumnNamedLikeTheValidityColumnOrChosenTwice) {
  TableInput in;
  in.shape = "hand: a column named valid";
  in.left.columns = {column_of<std::uint32_t>("k", DType::UInt32, {1, 2}),
                     column_of<std::uint8_t>("valid", DType::UInt8, {1, 0})};
  in.right.columns = {column_of<std::uint32_t>("k", DType::UInt32, {2, 3})};
  in.left_on = in.right_on = {"k"};
  // A full join outputs r.valid as its validity: a left column "valid" would collide with it.
  TableJoinOptions o = cpu_options(in, JoinKind::FullOuter, TableOutput::Columns);
  try {
    join_tables(in.left.view(), in.right.view(), o);
    ADD_FAILURE() << "a column r.valid beside the validity column r.valid was accepted";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("column 'valid'"), std::string::npos) << e.what();
  }
  // A left outer join has no r.valid: the column passes.
  o.how = JoinKind::LeftOuter;
  EXPECT_EQ(join_tables(in.left.view(), in.right.view(), o).count, 2u);
  o.left_columns = std::vector<std::string>{"valid", "valid"};
  try {
    join_tables(in.left.view(), in.right.view(), o);
    ADD_FAILURE() << "a column chosen twice was accepted";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("names 'valid' twice"), std::string::npos) << e.what();
  }
}

TEST(JoinTablesByHand, ResultsAgreeWithTheReferenceChecker) {
  // The generic checker on the hand case: a sanity check of the checker itself.
  const TableInput in = small_case();
  Rng rng(1);
  EXPECT_EQ(check_every_kind_and_form(in, cpu_options(in, JoinKind::Inner, TableOutput::Count), rng), 0);
}

TEST(JoinTablesReferenceChecker, RejectsAWrongResult) {
  // The checker must be able to fail: a tampered result is caught.
  const TableInput in = small_case();
  auto o = cpu_options(in, JoinKind::LeftOuter, TableOutput::GatherMaps);
  TableJoinResult res = run(in, o);
  ASSERT_TRUE(matches_reference(in, o, res));
  ASSERT_EQ(res.count, 6u);
  std::swap(res.left_rows.as<std::int64_t>()[4], res.left_rows.as<std::int64_t>()[5]);  // unmatched out of order
  EXPECT_FALSE(matches_reference(in, o, res));
  o.output = TableOutput::Columns;
  res = run(in, o);
  ASSERT_TRUE(matches_reference(in, o, res));
  res.columns[1].column.as<std::int32_t>()[0] += 1;
  EXPECT_FALSE(matches_reference(in, o, res));
}

// --------------------------------------------------------------------------------- random inputs

std::vector<KeySpec> all_key_specs() {
  auto specs = single_key_specs();
  for (auto& s : composite_key_specs()) specs.push_back(s);
  specs.push_back({"one_column_composite_int64", {DType::Int64}});
  return specs;
}


class RandomTableJoins : public ::testing::TestWithParam<KeySpec> {};

TEST_P(RandomTableJoins, EveryKindFormAndMaterializationAgreesWithTheReference) {
  const KeySpec& spec = GetParam();
  const auto seed = announce_seed();
  Rng rng(seed ^ std::hash<std::string>{}(spec.label));
  int failures = 0;
  for (int round = 0; round < 2; ++round)
    for (const Shape shape : kAllShapes) {
      const TableInput in = make_input(spec, shape, rng);
      TableJoinOptions base;
      base.join.gpus = 0;
      failures += check_every_kind_and_form(in, base, rng, "key " + spec.label + ": ");
      ASSERT_LT(failures, 5) << "stopping after 5 failed joins";
    }
}

INSTANTIATE_TEST_SUITE_P(KeyTypes, RandomTableJoins, ::testing::ValuesIn(all_key_specs()),
                         [](const auto& info) { return info.param.label; });

TEST(RandomTableJoinsPayloads, EveryPayloadTypeArrivesIntactInEveryKind) {
  Rng rng(announce_seed());
  for (const auto& spec : {KeySpec{"int64", {DType::Int64}}, KeySpec{"int16_uint8", {DType::Int16, DType::UInt8}}}) {
    for (const Shape shape : {Shape::Random, Shape::Duplicates, Shape::EmptyLeft, Shape::OneRowMatch}) {
      TableInput in = make_input(spec, shape, rng);
      // Every type on both sides, next to the keys.
      for (auto* side : {&in.left, &in.right}) {
        std::vector<OwnedColumn> extra;
        int i = 0;
        for (const DType t : kAllTypes) extra.push_back(random_payload("all" + std::to_string(i++), t, side->rows(), rng));
        side->columns.insert(side->columns.end(), extra.begin(), extra.end());
      }
      for (const JoinKind kind : kAllKinds)
        for (const Materialization m : kAllMaterializations) {
          TableJoinOptions o;
          o.left_on = in.left_on;
          o.right_on = in.right_on;
          o.how = kind;
          o.materialization = m;
          o.join.gpus = 0;
          EXPECT_TRUE(run_and_check(in, o));
        }
    }
  }
}

/// Carry applies (the header: an inner join with at most one 4- or 8-byte payload column per side):
/// TableJoinResult::materialization says "carried", for every key type, single or composite, and the
/// rows are right. One failure reported per key type.
TEST(RandomTableJoinsPayloads, CarriedPayloadsWhereTheyApply) {
  Rng rng(announce_seed() + 1);
  const std::vector<std::optional<DType>> payloads = {std::nullopt,   DType::Int32,   DType::UInt32,
                                                      DType::Int64,   DType::UInt64,  DType::Float32,
                                                      DType::Float64};
  for (const auto& spec : all_key_specs()) {
    int failed = 0, joins = 0;
    std::string first;
    for (const auto& lt : payloads)
      for (const auto& rt : payloads) {
        const Shape shape = kAllShapes[uniform(rng, 0, std::size(kAllShapes) - 1)];
        TableInput in = make_input(spec, shape, rng);
        OwnedTable left, right;
        for (const auto& k : in.left_on) left.columns.push_back(in.left.named(k));
        for (const auto& k : in.right_on) right.columns.push_back(in.right.named(k));
        if (lt) left.columns.push_back(random_payload("lp", *lt, left.rows(), rng));
        if (rt) right.columns.insert(right.columns.begin(), random_payload("rp", *rt, right.rows(), rng));
        in.left = std::move(left);
        in.right = std::move(right);
        TableJoinOptions o;
        o.left_on = in.left_on;
        o.right_on = in.right_on;
        o.materialization = Materialization::Carry;
        o.join.gpus = 0;
        ++joins;
        const auto res = join_tables(in.left.view(), in.right.view(), o);
        const auto ok = matches_reference(in, o, res, CarryCheck::Carried);
        if (!ok && failed++ == 0) first = std::string(ok.message()) + "\n" + describe(in, o);
      }
    EXPECT_EQ(failed, 0) << "key " << spec.label << ": " << failed << " of " << joins
                         << " carried joins failed; the first: " << first;
  }
}

/// TableJoinOptions::may_reorder_inputs: the tables may come back reordered, rows whole; the result is
/// still the join of the original tables. Every kind, counts and columns, and the carried inner joins
/// (one 4- or 8-byte payload per side) that the option is for.
TEST(RandomTableJoinsPayloads, MayReorderInputsKeepsRowsWholeAndTheResultRight) {
  Rng rng(announce_seed() + 3);
  for (const auto& spec : {KeySpec{"uint32", {DType::UInt32}}, KeySpec{"int64", {DType::Int64}},
                           KeySpec{"int16_int8", {DType::Int16, DType::Int8}}}) {
    for (const Shape shape : {Shape::Random, Shape::Duplicates, Shape::Reverse, Shape::EmptyRight}) {
      const TableInput in = make_input(spec, shape, rng);
      for (const JoinKind kind : kAllKinds)
        for (const TableOutput output : {TableOutput::Count, TableOutput::Columns}) {
          TableJoinOptions o = cpu_options(in, kind, output);
          o.materialization = kAllMaterializations[uniform(rng, 0, 2)];
          o.left_columns = random_column_choice(in.left, in.left_on, rng);
          o.right_columns = random_column_choice(in.right, in.right_on, rng);
          EXPECT_TRUE(run_and_check_reordering(in, o, spec.label + ": "));
        }
      // Carried: one 4- or 8-byte payload per side, and one more column on the left that is not output
      // (it must move with its rows all the same).
      TableInput carried = in;
      OwnedTable left, right;
      for (const auto& k : in.left_on) left.columns.push_back(in.left.named(k));
      for (const auto& k : in.right_on) right.columns.push_back(in.right.named(k));
      left.columns.push_back(random_payload("lp", DType::Int64, left.rows(), rng));
      left.columns.push_back(random_payload("unused", DType::UInt16, left.rows(), rng));
      right.columns.insert(right.columns.begin(), random_payload("rp", DType::Float32, right.rows(), rng));
      carried.left = std::move(left);
      carried.right = std::move(right);
      TableJoinOptions o = cpu_options(carried, JoinKind::Inner, TableOutput::Columns);
      o.materialization = Materialization::Carry;
      o.left_columns = std::vector<std::string>{"lp"};
      EXPECT_TRUE(run_and_check_reordering(carried, o, spec.label + " carried: "));
    }
  }
}

/// Every integer type's extremes as keys, both sides, in opposite orders.
TEST(RandomTableJoinsAdversarial, SignedAndUnsignedExtremes) {
  for (const DType t : kIntegerTypes) {
    TableInput in;
    in.shape = std::string("extremes of ") + type_label(t);
    const auto ex = extreme_values(t);
    OwnedColumn lk = zero_column("k", t, static_cast<std::int64_t>(ex.size()));
    OwnedColumn rk = zero_column("k", t, static_cast<std::int64_t>(ex.size()) - 1);
    for (std::size_t i = 0; i < ex.size(); ++i) set_integer(lk, static_cast<std::int64_t>(i), ex[i]);
    for (std::size_t i = 0; i + 1 < ex.size(); ++i) set_integer(rk, static_cast<std::int64_t>(i), ex[ex.size() - 1 - i]);
    in.left.columns = {lk};
    in.right.columns = {rk};
    in.left_on = in.right_on = {"k"};
    Rng rng(7);
    TableJoinOptions base;
    base.join.gpus = 0;
    EXPECT_EQ(check_every_kind_and_form(in, base, rng, std::string(type_label(t)) + ": "), 0);
  }
}

/// Tables of many rows with one key: the full m:n product.
TEST(RandomTableJoinsAdversarial, EveryRowMatchesEveryRow) {
  for (const DType t : {DType::Int32, DType::UInt64, DType::Int8}) {
    TableInput in;
    in.shape = std::string("all equal ") + type_label(t);
    OwnedColumn lk = zero_column("k", t, 300), rk = zero_column("k", t, 200);
    for (std::int64_t i = 0; i < 300; ++i) set_integer(lk, i, type_min(t));
    for (std::int64_t i = 0; i < 200; ++i) set_integer(rk, i, type_min(t));
    Rng rng(11);
    in.left.columns = {lk, random_payload("v", DType::Int64, 300, rng)};
    in.right.columns = {random_payload("w", DType::UInt16, 200, rng), rk};
    in.left_on = in.right_on = {"k"};
    TableJoinOptions base;
    base.join.gpus = 0;
    EXPECT_EQ(check_every_kind_and_form(in, base, rng, std::string(type_label(t)) + ": "), 0);
  }
}

/// Tables without columns at all on one side are empty tables; join them with a key column of zero rows.
TEST(RandomTableJoinsAdversarial, BothSidesEmpty) {
  TableInput in;
  in.shape = "both empty";
  in.left.columns = {zero_column("k", DType::UInt32, 0), zero_column("v", DType::Float64, 0)};
  in.right.columns = {zero_column("k", DType::UInt32, 0), zero_column("w", DType::Bool, 0)};
  in.left_on = in.right_on = {"k"};
  Rng rng(3);
  TableJoinOptions base;
  base.join.gpus = 0;
  EXPECT_EQ(check_every_kind_and_form(in, base, rng), 0);
}

/// More than 2^16 rows per side through the CPU path: every kind, gather maps and columns.
TEST(RandomTableJoinsLarge, SeventyThousandRowsPerSide) {
  Rng rng(announce_seed() + 2);
  const ShapeSizes sizes{.min_rows = 70'000, .max_rows = 90'000};
  for (const auto& spec : {KeySpec{"int64", {DType::Int64}}, KeySpec{"uint16_int8_int32", {DType::UInt16, DType::Int8, DType::Int32}}}) {
    const TableInput in = make_input(spec, Shape::Random, rng, sizes);
    TableJoinOptions base;
    base.join.gpus = 0;
    for (const JoinKind kind : kAllKinds)
      for (const TableOutput output : {TableOutput::GatherMaps, TableOutput::Columns})
        EXPECT_TRUE(check_one(in, base, kind, output, kAllMaterializations[uniform(rng, 0, 2)], rng, spec.label + ": "));
  }
}

/// A hot key on both sides: 40k x 40k rows would be 1.6·10^9 pairs; a semi or anti join outputs left
/// rows, so it must not expand them (and finishes quickly).
TEST(RandomTableJoinsLarge, SemiAndAntiJoinsOfAHotKeyOutputLeftRowsOnly) {
  Rng rng(announce_seed() + 4);
  TableInput in;
  in.shape = "hot key 40k x 40k";
  const std::int64_t n = 40'000;
  OwnedColumn lk = zero_column("k", DType::Int32, n + 100), rk = zero_column("k", DType::Int32, n + 50);
  for (std::int64_t i = 0; i < n + 100; ++i) set_integer(lk, i, i < n ? -7 : i);  // 100 rows matching nothing
  for (std::int64_t i = 0; i < n + 50; ++i) set_integer(rk, i, i < n ? -7 : -i);
  in.left.columns = {random_payload("v", DType::UInt16, n + 100, rng), lk};
  in.right.columns = {rk, random_payload("w", DType::Float64, n + 50, rng)};
  in.left_on = in.right_on = {"k"};
  for (const JoinKind kind : {JoinKind::LeftSemi, JoinKind::LeftAnti})
    for (const TableOutput output : kAllOutputs) EXPECT_TRUE(run_and_check(in, cpu_options(in, kind, output)));
}

// ------------------------------------------------------------------------------- names and views

TEST(JoinKindNames, RoundTripAndAliases) {
  const std::vector<std::pair<JoinKind, const char*>> names = {
      {JoinKind::Inner, "inner"},    {JoinKind::LeftOuter, "left"}, {JoinKind::RightOuter, "right"},
      {JoinKind::FullOuter, "full"}, {JoinKind::LeftSemi, "semi"},  {JoinKind::LeftAnti, "anti"}};
  for (const auto& [kind, name] : names) {
    EXPECT_STREQ(join_kind_name(kind), name);
    EXPECT_EQ(parse_join_kind(name), kind) << name;
  }
  EXPECT_EQ(parse_join_kind("left_outer"), JoinKind::LeftOuter);
  EXPECT_EQ(parse_join_kind("right_outer"), JoinKind::RightOuter);
  EXPECT_EQ(parse_join_kind("full_outer"), JoinKind::FullOuter);
  EXPECT_EQ(parse_join_kind("outer"), JoinKind::FullOuter);
  EXPECT_EQ(parse_join_kind("left_semi"), JoinKind::LeftSemi);
  EXPECT_EQ(parse_join_kind("left_anti"), JoinKind::LeftAnti);
  EXPECT_EQ(parse_join_kind("cross"), std::nullopt);
  EXPECT_EQ(parse_join_kind(""), std::nullopt);
}

TEST(TableViewLookup, FindAndRows) {
  const TableInput in = small_case();
  const TableView v = in.right.view();
  EXPECT_EQ(v.rows(), 3);
  ASSERT_NE(v.find("key"), nullptr);
  EXPECT_EQ(v.find("key")->type, DType::Int32);
  EXPECT_EQ(v.find("rv")->data, in.right.named("rv").bytes.data());
  EXPECT_EQ(v.find("nope"), nullptr);
  EXPECT_EQ(TableView{}.rows(), 0);
}

// -------------------------------------------------------------------------------------- errors

struct ErrorCase {
  std::string label;
  TableInput in;
  TableJoinOptions options;
  std::vector<std::vector<std::string>> must_name;  ///< each inner list: one of these must be in the message
};

std::string lower(std::string s) {
  for (auto& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

void expect_input_error(const ErrorCase& c) {
  SCOPED_TRACE(c.label);
  try {
    (void)join_tables(c.in.left.view(), c.in.right.view(), c.options);
    ADD_FAILURE() << c.label << ": no InputError";
  } catch (const InputError& e) {
    const std::string what = lower(e.what());
    for (const auto& any_of : c.must_name) {
      const bool found = std::any_of(any_of.begin(), any_of.end(),
                                     [&](const std::string& s) { return what.find(lower(s)) != std::string::npos; });
      std::string wanted;
      for (const auto& s : any_of) wanted += (wanted.empty() ? "" : " or ") + ("\"" + s + "\"");
      EXPECT_TRUE(found) << c.label << ": the message \"" << e.what() << "\" does not name " << wanted;
    }
  } catch (const std::exception& e) {
    ADD_FAILURE() << c.label << ": threw something else than InputError: " << e.what();
  }
}

/// A valid pair of tables: left (lk int32, lv int64, price float32, flag bool, big int64, small int8),
/// right (rk int32, rw uint16, rk64 int64, rbig int64, rsmall int8), 4 and 3 rows.
ErrorCase base_error_case(std::string label) {
  ErrorCase c;
  c.label = std::move(label);
  c.in.left.columns = {column_of<std::int32_t>("lk", DType::Int32, {1, 2, 3, 4}),
                       column_of<std::int64_t>("lv", DType::Int64, {1, 2, 3, 4}),
                       column_of<float>("price", DType::Float32, {1, 2, 3, 4}),
                       column_of<std::uint8_t>("flag", DType::Bool, {0, 1, 0, 1}),
                       column_of<std::int64_t>("big", DType::Int64, {1, 2, 3, 4}),
                       column_of<std::int8_t>("small", DType::Int8, {1, 2, 3, 4})};
  c.in.right.columns = {column_of<std::int32_t>("rk", DType::Int32, {2, 3, 5}),
                        column_of<std::uint16_t>("rw", DType::UInt16, {7, 8, 9}),
                        column_of<std::int64_t>("rk64", DType::Int64, {2, 3, 5}),
                        column_of<float>("rprice", DType::Float32, {2, 3, 5}),
                        column_of<std::uint8_t>("rflag", DType::Bool, {0, 1, 1}),
                        column_of<std::int64_t>("rbig", DType::Int64, {2, 3, 5}),
                        column_of<std::int8_t>("rsmall", DType::Int8, {2, 3, 5})};
  c.options.left_on = {"lk"};
  c.options.right_on = {"rk"};
  c.options.join.gpus = 0;
  return c;
}

TEST(JoinTablesErrors, TheBaseCaseIsValid) {
  const ErrorCase c = base_error_case("valid");
  EXPECT_EQ(join_tables(c.in.left.view(), c.in.right.view(), c.options).count, 2u);
}

TEST(JoinTablesErrors, MissingKeyColumn) {
  auto c = base_error_case("missing left key column");
  c.options.left_on = {"nope"};
  c.must_name = {{"nope"}, {"left"}};
  expect_input_error(c);
  c = base_error_case("missing right key column");
  c.options.right_on = {"absent_col"};
  c.must_name = {{"absent_col"}, {"right"}};
  expect_input_error(c);
  c = base_error_case("missing second component of a composite key");
  c.options.left_on = {"lk", "lv"};
  c.options.right_on = {"rk", "no_such"};
  c.must_name = {{"no_such"}, {"right"}};
  expect_input_error(c);
}

TEST(JoinTablesErrors, KeyListsOfDifferentLengthsOrEmpty) {
  auto c = base_error_case("left_on longer than right_on");
  c.options.left_on = {"lk", "small"};
  c.must_name = {{"left_on", "right_on", "left key", "right key"}};
  expect_input_error(c);
  c = base_error_case("both empty");
  c.options.left_on = {};
  c.options.right_on = {};
  c.must_name = {{"left_on", "right_on", "empty", "at least one"}};
  expect_input_error(c);
  c = base_error_case("right_on empty");
  c.options.right_on = {};
  c.must_name = {{"right_on", "empty", "at least one"}};
  expect_input_error(c);
}

TEST(JoinTablesErrors, KeysThatCannotBeCompared) {
  auto c = base_error_case("int32 against float32");
  c.options.right_on = {"rprice"};
  c.must_name = {{"lk"}, {"rprice"}, {"int32"}, {"float32"}, {"cannot be compared"}};
  expect_input_error(c);
  c = base_error_case("second component bool against uint16");
  c.options.left_on = {"lk", "flag"};
  c.options.right_on = {"rk", "rw"};
  c.must_name = {{"flag"}, {"rw"}, {"bool"}};
  expect_input_error(c);
  c = base_error_case("float32 against bool");
  c.options.left_on = {"price"};
  c.options.right_on = {"rflag"};
  c.must_name = {{"price"}, {"rflag"}};
  expect_input_error(c);
}

/// Keys over 8 bytes join (by hash and verify: wide_keys_test.cpp); their components' kinds are checked
/// as any key's, one line naming both columns.
TEST(JoinTablesErrors, WideCompositesJoinAndTheirKindsAreChecked) {
  auto c = base_error_case("int32 against int64, + int8: compared as 8 + 1 bytes");
  c.options.left_on = {"lk", "small"};
  c.options.right_on = {"rk64", "rsmall"};
  EXPECT_EQ(join_tables(c.in.left.view(), c.in.right.view(), c.options).count, 2u);
  c.options.left_on = {"lk", "big"};
  c.options.right_on = {"rk", "rbig"};
  EXPECT_EQ(join_tables(c.in.left.view(), c.in.right.view(), c.options).count, 2u) << "int32 + int64 = 12 bytes";
  c = base_error_case("int64 + float32 against int64 + bool");
  c.options.left_on = {"big", "price"};
  c.options.right_on = {"rbig", "rflag"};
  c.must_name = {{"price"}, {"rflag"}, {"float32"}, {"bool"}, {"cannot be compared"}};
  expect_input_error(c);
  c = base_error_case("int64 + int32 + int8 against int64 + float32 + int8");
  c.options.left_on = {"big", "lk", "small"};
  c.options.right_on = {"rbig", "rprice", "rsmall"};
  c.must_name = {{"lk"}, {"rprice"}, {"int32"}, {"float32"}};
  expect_input_error(c);
}

TEST(JoinTablesErrors, UnknownPayloadColumn) {
  auto c = base_error_case("unknown left column");
  c.options.left_columns = std::vector<std::string>{"lv", "ghost"};
  c.must_name = {{"ghost"}, {"left"}};
  expect_input_error(c);
  c = base_error_case("unknown right column");
  c.options.right_columns = std::vector<std::string>{"phantom"};
  c.must_name = {{"phantom"}, {"right"}};
  expect_input_error(c);
}

TEST(JoinTablesErrors, ColumnsOfDifferentLengths) {
  auto c = base_error_case("left payload shorter");
  c.in.left.columns.push_back(column_of<std::int32_t>("short_col", DType::Int32, {1, 2, 3}));
  c.must_name = {{"short_col"}, {"left"}};
  expect_input_error(c);
  c = base_error_case("right payload longer");
  c.in.right.columns.push_back(column_of<std::int16_t>("long_col", DType::Int16, {1, 2, 3, 4, 5}));
  c.must_name = {{"long_col"}, {"right"}};
  expect_input_error(c);
  c = base_error_case("right key column shorter than the first column");
  c.in.right.columns.push_back(column_of<std::int32_t>("rk_short", DType::Int32, {1}));
  c.options.right_on = {"rk_short"};
  c.must_name = {{"rk_short"}, {"right"}};
  expect_input_error(c);
}

}  // namespace
}  // namespace mgjoin::test
