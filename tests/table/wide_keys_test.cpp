// Keys over 8 bytes on the CPU path: joined on a 64-bit hash of their components, every candidate pair
// verified (engine/src/table/wide_keys.hpp). Every join kind, output form and count against the
// reference (tests/common/reference_join.hpp, key_values.hpp: no mgjoin code), on random and adversarial
// tables, under the engine's hash and under the weak one (MGJOIN_TEST_KEY_HASH=weak), which makes tuples
// collide in masses: a collision must never yield a row. The hash, the verification and the distinct
// rows of semi and anti joins also alone.
#include <mgjoin/error.hpp>
#include <mgjoin/table.hpp>

#include "common/reference_join.hpp"
#include "common/seed.hpp"
#include "engine/src/table/table_keys.hpp"
#include "engine/src/table/wide_keys.hpp"
#include "table/key_values.hpp"
#include "table/table_check.hpp"
#include "table/table_inputs.hpp"
#include "table/table_names.hpp"
#include "table/test_tables.hpp"
#include "table/wide_key_inputs.hpp"

#include <gtest/gtest.h>

#include <cstdint>
#include <functional>
#include <map>
#include <set>
#include <string>
#include <tuple>
#include <vector>

namespace mgjoin::test {
namespace {

// ------------------------------------------------------------------------------ random and adversarial

class WideKeyJoins : public ::testing::TestWithParam<std::tuple<KeySpec, Hash>> {};

/// Every shape (random, no match, all rows one key, duplicates, empty sides, one row, extremes, sorted,
/// reverse) x every kind x every output form and materialization.
TEST_P(WideKeyJoins, EveryShapeKindAndFormAgreesWithTheReference) {
  const auto& [spec, hash] = GetParam();
  const ScopedKeyHash scoped(hash);
  Rng rng(announce_seed() ^ std::hash<std::string>{}(spec.label) ^ static_cast<std::uint64_t>(hash));
  int failures = 0;
  for (const Shape shape : kAllShapes) {
    const TableInput in = make_input(spec, shape, rng);
    failures += check_every_kind_and_form(in, cpu_path_options(), rng, std::string(hash_label(hash)) + ", key " + spec.label + ": ");
    ASSERT_LT(failures, 5) << "stopping after 5 failed joins";
  }
}

INSTANTIATE_TEST_SUITE_P(Keys, WideKeyJoins,
                         ::testing::Combine(::testing::ValuesIn(wide_key_specs()), ::testing::Values(Hash::Strong, Hash::Weak)),
                         [](const auto& info) {
                           return std::get<0>(info.param).label + "_" + hash_label(std::get<1>(info.param));
                         });

class WideKeyAdversarial : public ::testing::TestWithParam<Hash> {};

TEST_P(WideKeyAdversarial, KeysDifferingOnlyInTheSecondColumn) {
  const ScopedKeyHash scoped(GetParam());
  Rng rng(announce_seed());
  const TableInput in = differing_in_the_second_column(300, 200, rng);
  EXPECT_EQ(check_every_kind_and_form(in, cpu_path_options(), rng, hash_label(GetParam())), 0);
}

TEST_P(WideKeyAdversarial, SignedExtremesOfEveryComponent) {
  const ScopedKeyHash scoped(GetParam());
  Rng rng(announce_seed());
  EXPECT_EQ(check_every_kind_and_form(signed_extremes(), cpu_path_options(), rng, hash_label(GetParam())), 0);
}

/// Every row of both sides one tuple: the full m:n product, every candidate a true pair.
TEST_P(WideKeyAdversarial, EveryRowOneKey) {
  const ScopedKeyHash scoped(GetParam());
  Rng rng(announce_seed());
  const KeySpec spec{"int64_uint64", {DType::Int64, DType::UInt64}};
  const std::vector<KeyTuple> one{{type_min(DType::Int64), type_max(DType::UInt64)}};
  TableInput in;
  in.shape = "one key, 250 x 180 rows";
  in.left_on = {"a", "b"};
  in.right_on = {"c", "d"};
  in.left = build_table(spec, in.left_on, std::vector<KeyTuple>(250, one[0]), {DType::Int64}, "v", rng);
  in.right = build_table(spec, in.right_on, std::vector<KeyTuple>(180, one[0]), {DType::Bool, DType::Int8}, "w", rng);
  EXPECT_EQ(check_every_kind_and_form(in, cpu_path_options(), rng, hash_label(GetParam())), 0);
}

/// A hot key on both sides (20k x 20k rows: 4·10^8 pairs) beside a few other tuples of the same weak hash:
/// semi and anti joins reduce the right side to its distinct tuples (never to its distinct hashes) and
/// output left rows only.
TEST_P(WideKeyAdversarial, SemiAndAntiJoinsOfAHotKey) {
  const ScopedKeyHash scoped(GetParam());
  Rng rng(announce_seed());
  const std::int64_t n = 20'000;
  const KeySpec spec{"int64_int64", {DType::Int64, DType::Int64}};
  std::vector<KeyTuple> left, right;
  // Under the weak hash every tuple here hashes alike (first component 8 apart): only the hot one and
  // (8, 3) match; (0, 2) and (16, 1) are one side's only.
  for (std::int64_t i = 0; i < n; ++i) left.push_back({0, 1}), right.push_back({0, 1});
  for (std::int64_t i = 0; i < 100; ++i) left.push_back({i % 2 ? 0 : 8, i % 2 ? 2 : 3});
  for (std::int64_t i = 0; i < 50; ++i) right.push_back({i % 2 ? 16 : 8, i % 2 ? 1 : 3});
  TableInput in;
  in.shape = "hot key 20k x 20k";
  in.left_on = in.right_on = {"a", "b"};
  in.left = build_table(spec, in.left_on, left, {DType::UInt16}, "v", rng);
  in.right = build_table(spec, in.right_on, right, {DType::Float64}, "w", rng);
  EXPECT_EQ(check_kinds_and_outputs(in, cpu_path_options(), {JoinKind::LeftSemi, JoinKind::LeftAnti},
                                    {TableOutput::Count, TableOutput::GatherMaps, TableOutput::Columns}, hash_label(GetParam())),
            0);
}

/// More than 2^16 rows a side: every kind, gather maps and columns (the engine's hash; the weak one would
/// make every eighth of the rows one candidate group).
TEST(WideKeyLarge, SeventyThousandRowsPerSide) {
  Rng rng(announce_seed() + 2);
  const ShapeSizes sizes{.min_rows = 70'000, .max_rows = 80'000};
  const KeySpec spec{"int32_int64_int8", {DType::Int32, DType::Int64, DType::Int8}};
  const TableInput in = make_input(spec, Shape::Random, rng, sizes);
  for (const JoinKind kind : kAllKinds)
    for (const TableOutput output : {TableOutput::GatherMaps, TableOutput::Columns})
      EXPECT_TRUE(check_one(in, cpu_path_options(), kind, output, kAllMaterializations[uniform(rng, 0, 2)], rng));
}

INSTANTIATE_TEST_SUITE_P(Hashes, WideKeyAdversarial, ::testing::Values(Hash::Strong, Hash::Weak),
                         [](const auto& info) { return std::string(hash_label(info.param)); });

// --------------------------------------------------------------------------------- keys by value

class WideKeysByValue : public ::testing::TestWithParam<Hash> {};

/// Components of two types compared by value (int32 against int64, uint64 against int64, float32
/// against float64 with NaNs and signed zeros, bool), over 8 bytes together: every kind and form.
TEST_P(WideKeysByValue, MixedTypesCompareByValue) {
  const ScopedKeyHash scoped(GetParam());
  Rng rng(announce_seed() + 7);
  const KeyTypePair pairs[] = {
      {{DType::Int32, DType::Int64, DType::Float32}, {DType::Int64, DType::Int64, DType::Float64}},
      {{DType::UInt64, DType::Int8}, {DType::Int64, DType::Int8}},
      {{DType::Bool, DType::Float64, DType::UInt32}, {DType::Bool, DType::Float64, DType::Int32}},
      {{DType::UInt16, DType::Float64}, {DType::Int64, DType::Float32}},
  };
  for (const KeyTypePair& types : pairs) {
    const TableInput in = tables_by_value(types, uniform(rng, 0, 300), uniform(rng, 1, 300), rng);
    EXPECT_EQ(check_by_value(in, cpu_path_options()), 0) << in.shape << ", " << hash_label(GetParam());
  }
}

INSTANTIATE_TEST_SUITE_P(Hashes, WideKeysByValue, ::testing::Values(Hash::Strong, Hash::Weak),
                         [](const auto& info) { return std::string(hash_label(info.param)); });

// ------------------------------------------------------------------------- the parts, one by one

/// A paired wide key of `left` and `right` tables on `left_on` / `right_on`.
std::pair<table::KeyColumns, table::KeyColumns> paired(const TableInput& in) {
  auto l = table::key_columns(in.left.view(), in.left_on, "left table", "left_on");
  auto r = table::key_columns(in.right.view(), in.right_on, "right table", "right_on");
  table::pair_keys(l, r);
  return {l, r};
}

/// Left (int32 a, int64 b), right (int64 c, int64 d): rows 0..3 of each are the same tuples by value.
TableInput int32_int64_against_int64s() {
  TableInput in;
  in.left.columns = {column_of<std::int32_t>("a", DType::Int32, {-1, 0, 2147483647, -2147483647 - 1, 5}),
                     column_of<std::int64_t>("b", DType::Int64, {7, -9, 0, 1, 6})};
  in.right.columns = {column_of<std::int64_t>("c", DType::Int64, {-1, 0, 2147483647, -2147483647 - 1, 6}),
                      column_of<std::int64_t>("d", DType::Int64, {7, -9, 0, 1, 5})};
  in.left_on = {"a", "b"};
  in.right_on = {"c", "d"};
  return in;
}

TEST(WideKeyParts, EqualTuplesOfTwoTypesHashAlikeUnderBothHashes) {
  const TableInput in = int32_int64_against_int64s();
  auto [l, r] = paired(in);
  ASSERT_TRUE(l.hashed());
  EXPECT_EQ(l.bytes(), 16);
  for (const table::KeyHash h : {table::KeyHash::Strong, table::KeyHash::Weak}) {
    const HostColumn lh = table::hash_key(l, 5, h), rh = table::hash_key(r, 5, h);
    ASSERT_EQ(lh.type(), DType::UInt64);
    for (std::int64_t i = 0; i < 4; ++i) EXPECT_EQ(lh.as<std::uint64_t>()[i], rh.as<std::uint64_t>()[i]) << i;
  }
  const HostColumn strong = table::hash_key(l, 5, table::KeyHash::Strong);
  std::set<std::uint64_t> distinct(strong.as<std::uint64_t>(), strong.as<std::uint64_t>() + 5);
  EXPECT_EQ(distinct.size(), 5u) << "five tuples, five hashes";
  EXPECT_NE(strong.as<std::uint64_t>()[4], table::hash_key(r, 5, table::KeyHash::Strong).as<std::uint64_t>()[4])
      << "(5, 6) and (6, 5): the components' order counts";
}

TEST(WideKeyParts, TheWeakHashMakesDistinctTuplesCollide) {
  Rng rng(announce_seed());
  const TableInput in = differing_in_the_second_column(200, 10, rng);
  auto [l, r] = paired(in);
  const HostColumn weak = table::hash_key(l, 200, table::KeyHash::Weak);
  const std::set<std::uint64_t> hashes(weak.as<std::uint64_t>(), weak.as<std::uint64_t>() + 200);
  EXPECT_EQ(hashes.size(), 1u) << "97 distinct tuples, one weak hash";
  const HostColumn strong = table::hash_key(l, 200, table::KeyHash::Strong);
  EXPECT_EQ(std::set<std::uint64_t>(strong.as<std::uint64_t>(), strong.as<std::uint64_t>() + 200).size(), 97u);
}

TEST(WideKeyParts, VerificationKeepsTheEqualPairsInTheirOrder) {
  const TableInput in = int32_int64_against_int64s();
  auto [l, r] = paired(in);
  const table::KeyRows rows(l, r);
  for (std::int64_t i = 0; i < 4; ++i) EXPECT_TRUE(rows.equal(i, i)) << i;
  EXPECT_FALSE(rows.equal(4, 4));
  EXPECT_FALSE(rows.equal(0, 1));
  // Candidates (left, right): equal ones at 0, 3, 5; 4-byte left ids against 8-byte right ids.
  HostColumn pl = HostColumn::allocate(DType::UInt32, 6), pr = HostColumn::allocate(DType::UInt64, 6);
  const std::uint32_t lids[] = {3, 4, 0, 2, 1, 1};
  const std::uint64_t rids[] = {3, 4, 1, 2, 0, 1};
  for (int i = 0; i < 6; ++i) pl.as<std::uint32_t>()[i] = lids[i], pr.as<std::uint64_t>()[i] = rids[i];
  EXPECT_EQ(table::keep_equal_pairs(rows, pl, pr), 3);
  ASSERT_EQ(pl.size(), 3);
  ASSERT_EQ(pr.size(), 3);
  EXPECT_EQ((std::vector<std::uint32_t>(pl.as<std::uint32_t>(), pl.as<std::uint32_t>() + 3)), (std::vector<std::uint32_t>{3, 2, 1}));
  EXPECT_EQ((std::vector<std::uint64_t>(pr.as<std::uint64_t>(), pr.as<std::uint64_t>() + 3)), (std::vector<std::uint64_t>{3, 2, 1}));
  HostColumn none_l = HostColumn::allocate(DType::UInt64, 0), none_r = HostColumn::allocate(DType::UInt32, 0);
  EXPECT_EQ(table::keep_equal_pairs(rows, none_l, none_r), 0);
}

/// Many candidates (more than the threads' blocks), most of them collisions: the kept pairs are exactly
/// the equal ones, in order.
TEST(WideKeyParts, VerificationOfManyCandidates) {
  Rng rng(announce_seed());
  const TableInput in = differing_in_the_second_column(300, 200, rng);
  auto [l, r] = paired(in);
  const table::KeyRows rows(l, r);
  std::vector<std::pair<std::int64_t, std::int64_t>> all, equal;
  for (std::int64_t i = 0; i < 300; ++i)
    for (std::int64_t j = 0; j < 200; ++j) {
      all.emplace_back(i, j);
      if (i % 97 == (2 * j) % 150) equal.emplace_back(i, j);
    }
  HostColumn pl = HostColumn::allocate(DType::UInt64, static_cast<std::int64_t>(all.size()));
  HostColumn pr = HostColumn::allocate(DType::UInt32, static_cast<std::int64_t>(all.size()));
  for (std::size_t k = 0; k < all.size(); ++k)
    pl.as<std::uint64_t>()[k] = static_cast<std::uint64_t>(all[k].first), pr.as<std::uint32_t>()[k] = static_cast<std::uint32_t>(all[k].second);
  EXPECT_EQ(table::keep_equal_pairs(rows, pl, pr), static_cast<std::int64_t>(all.size() - equal.size()));
  std::vector<std::pair<std::int64_t, std::int64_t>> kept;
  for (std::int64_t k = 0; k < pl.size(); ++k)
    kept.emplace_back(static_cast<std::int64_t>(pl.as<std::uint64_t>()[k]), pr.as<std::uint32_t>()[k]);
  EXPECT_EQ(kept, equal);
}

TEST(WideKeyParts, DistinctRowsKeepOneRowPerTupleNotPerHash) {
  Rng rng(announce_seed());
  const TableInput in = differing_in_the_second_column(10, 400, rng);  // right b: 0, 2, ..., 148: 75 tuples
  auto [l, r] = paired(in);
  const table::KeyRows rows(l, r);
  for (const table::KeyHash h : {table::KeyHash::Strong, table::KeyHash::Weak}) {
    HostColumn hashes = table::hash_key(r, 400, h), ids = table::row_ids(400);
    table::keep_distinct_rows(rows, table::Side::Right, hashes, ids);
    ASSERT_EQ(ids.size(), 75) << (h == table::KeyHash::Weak ? "weak" : "strong");
    ASSERT_EQ(hashes.size(), 75);
    std::set<std::int64_t> bs;
    for (std::int64_t i = 0; i < 75; ++i) {
      const std::uint32_t row = ids.as<std::uint32_t>()[i];
      bs.insert((2 * static_cast<std::int64_t>(row)) % 150);
      EXPECT_EQ(hashes.as<std::uint64_t>()[i], table::hash_key(r, 400, h).as<std::uint64_t>()[row]) << "ids moved with their hashes";
    }
    EXPECT_EQ(bs.size(), 75u) << "every tuple once";
  }
}

TEST(WideKeyParts, TheTestHookTakesWeakOrNothing) {
  EXPECT_EQ(table::parse_key_hash(std::nullopt), table::KeyHash::Strong);
  EXPECT_EQ(table::parse_key_hash(""), table::KeyHash::Strong);
  EXPECT_EQ(table::parse_key_hash("weak"), table::KeyHash::Weak);
  try {
    table::parse_key_hash("feeble");
    ADD_FAILURE() << "no InputError";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("MGJOIN_TEST_KEY_HASH 'feeble'"), std::string::npos) << e.what();
  }
}

/// Keys of at most 8 bytes are packed, exactly, whatever the hook says: their pairs stay in key order.
TEST(WideKeyParts, NarrowKeysAreNeverHashed) {
  const ScopedKeyHash weak(Hash::Weak);
  Rng rng(announce_seed());
  const TableInput in = make_input({"int32_int32", {DType::Int32, DType::Int32}}, Shape::Duplicates, rng);
  auto [l, r] = paired(in);
  EXPECT_FALSE(l.hashed());
  EXPECT_EQ(check_every_kind_and_form(in, cpu_path_options(), rng, "weak hash, 8-byte key: "), 0);
}

}  // namespace
}  // namespace mgjoin::test
