// Materialization of matching ranges: exact offsets, R-major rows, hot ranges split across threads.
#include "engine/src/join/materialize.hpp"

#include "common/keys.hpp"
#include "common/reference_join.hpp"

#include <gtest/gtest.h>

namespace mgjoin::detail {
namespace {

TEST(Materialize, OffsetsArePrefixSumsOfTupleCounts) {
  const std::vector<MatchRange> ranges{{0, 2, 0, 3}, {2, 2, 3, 5}, {2, 3, 5, 6}, {5, 9, 6, 6}, {9, 10, 6, 8}};
  EXPECT_EQ(output_offsets(ranges), (std::vector<std::uint64_t>{0, 6, 6, 7, 7, 9}));
  EXPECT_EQ(count_tuples(ranges), 9u);
  EXPECT_EQ(output_offsets({}), (std::vector<std::uint64_t>{0}));
}

TEST(Materialize, ManyRangesOffsetsMatchSerialScan) {
  std::vector<MatchRange> ranges;
  for (std::uint64_t i = 0; i < 200000; ++i) ranges.push_back({i, i + 1 + i % 3, i, i + i % 5});
  const auto offsets = output_offsets(ranges);
  std::uint64_t run = 0;
  for (std::size_t i = 0; i < ranges.size(); ++i) {
    ASSERT_EQ(offsets[i], run);
    run += (1 + i % 3) * (i % 5);
  }
  EXPECT_EQ(offsets.back(), run);
}

TEST(Materialize, WritesEveryTupleOfEveryRangeContiguously) {
  // Sorted R: keys 1 1 2 3 3 3; sorted S: keys 1 3 3.
  const std::vector<std::uint32_t> rk{1, 1, 2, 3, 3, 3}, sk{1, 3, 3};
  const std::vector<std::uint64_t> rp{10, 11, 12, 13, 14, 15}, sp{100, 101, 102};
  const std::vector<MatchRange> ranges{{0, 2, 0, 1}, {3, 6, 1, 3}};
  const auto out = materialize(ranges, {rk.data(), 6, DType::UInt32}, ColumnView{rp.data(), 6, DType::UInt64},
                               ColumnView{sp.data(), 3, DType::UInt64});
  ASSERT_EQ(out.key.size(), 8);
  ASSERT_TRUE(out.r_payload && out.s_payload);
  const std::vector<std::uint32_t> key(out.key.as<std::uint32_t>(), out.key.as<std::uint32_t>() + 8);
  const std::vector<std::uint64_t> r(out.r_payload->as<std::uint64_t>(), out.r_payload->as<std::uint64_t>() + 8);
  const std::vector<std::uint64_t> s(out.s_payload->as<std::uint64_t>(), out.s_payload->as<std::uint64_t>() + 8);
  EXPECT_EQ(key, (std::vector<std::uint32_t>{1, 1, 3, 3, 3, 3, 3, 3}));
  EXPECT_EQ(r, (std::vector<std::uint64_t>{10, 11, 13, 13, 14, 14, 15, 15}));
  EXPECT_EQ(s, (std::vector<std::uint64_t>{100, 100, 101, 102, 101, 102, 101, 102}));
}

TEST(Materialize, HotRangeSplitAcrossSlicesMatchesNestedLoop) {
  // One range of 1500 x 1000 = 1.5M tuples (many slices cut it mid-row) plus small ones around it.
  const std::size_t n_r = 1502, n_s = 1002;
  std::vector<std::int64_t> rk(n_r, 7), sk(n_s, 7);
  rk.front() = -1, rk.back() = 9, sk.front() = -1, sk.back() = 9;
  std::vector<std::uint32_t> sp(n_s);
  for (std::size_t j = 0; j < n_s; ++j) sp[j] = static_cast<std::uint32_t>(j * 7 + 1);
  const std::vector<MatchRange> ranges{{0, 1, 0, 1}, {1, n_r - 1, 1, n_s - 1}, {n_r - 1, n_r, n_s - 1, n_s}};
  const auto out = materialize(ranges, {rk.data(), static_cast<std::int64_t>(n_r), DType::Int64}, std::nullopt,
                               ColumnView{sp.data(), static_cast<std::int64_t>(n_s), DType::Float32});
  EXPECT_FALSE(out.r_payload);
  ASSERT_TRUE(out.s_payload);
  std::vector<std::uint64_t> none;
  std::vector<std::uint64_t> sp64(sp.begin(), sp.end());
  EXPECT_EQ(test::result_tuples(out.key, nullptr, &*out.s_payload), test::reference_join(rk, none, sk, sp64));
}

TEST(Materialize, NoRangesGiveEmptyColumns) {
  const std::vector<std::uint64_t> rk{1};
  const auto out = materialize({}, {rk.data(), 1, DType::UInt64}, ColumnView{rk.data(), 1, DType::UInt64}, std::nullopt);
  EXPECT_EQ(out.key.size(), 0);
  EXPECT_EQ(out.r_payload->size(), 0);
  EXPECT_FALSE(out.s_payload);
}

}  // namespace
}  // namespace mgjoin::detail
