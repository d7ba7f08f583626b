// Output sizes past 2^32 and 2^64 tuples on the CPU, without the inputs that would produce them: the
// checked arithmetic, and the sums every flow runs over matching ranges and GPU counters, fed with
// synthetic ranges of billions of rows (nothing is allocated for them). Expected values are written out.
#include "core/checked_math.hpp"
#include "engine/src/join/materialize.hpp"
#include "engine/src/join/output_count.hpp"

#include <mgjoin/error.hpp>

#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

namespace mgjoin::detail {
namespace {

constexpr std::uint64_t kMax = UINT64_MAX;
constexpr std::uint64_t k2to32 = std::uint64_t{1} << 32;
constexpr std::uint64_t k2to63 = std::uint64_t{1} << 63;

/// A range of r_rows x s_rows; its indices are never read by the functions under test.
MatchRange range_of(std::uint64_t r_rows, std::uint64_t s_rows) { return {0, r_rows, 0, s_rows}; }

/// Runs f, expecting the InputError that refuses an output of 2^64 or more tuples.
template <class F>
void expect_refused(F&& f, const std::string& detail = "") {
  try {
    f();
    ADD_FAILURE() << "no error: the output's count wrapped";
  } catch (const InputError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("the join's output has 2^64 or more tuples"), std::string::npos) << what;
    EXPECT_NE(what.find(detail), std::string::npos) << what;
  }
}

TEST(CheckedMath, AddReportsSumsOfTwoToThe64OrMore) {
  std::uint64_t sum = 1;
  EXPECT_FALSE(add_overflows(kMax, 0, &sum));
  EXPECT_EQ(sum, kMax);
  EXPECT_FALSE(add_overflows(kMax - 5, 5, &sum));
  EXPECT_EQ(sum, kMax);
  EXPECT_TRUE(add_overflows(kMax, 1, &sum));
  EXPECT_EQ(sum, 0u);
  EXPECT_TRUE(add_overflows(k2to63, k2to63, &sum));
}

TEST(CheckedMath, MultiplyReportsProductsOfTwoToThe64OrMore) {
  std::uint64_t product = 1;
  EXPECT_FALSE(mul_overflows(k2to32 - 1, k2to32 + 1, &product));  // 2^64 - 1: the largest count
  EXPECT_EQ(product, kMax);
  EXPECT_TRUE(mul_overflows(k2to32, k2to32, &product));  // 2^64 wraps to 0
  EXPECT_EQ(product, 0u);
  EXPECT_FALSE(mul_overflows(kMax, 1, &product));
  EXPECT_FALSE(mul_overflows(0, kMax, &product));
  EXPECT_EQ(product, 0u);
  EXPECT_TRUE(mul_overflows(kMax, 2, &product));
  EXPECT_TRUE(mul_overflows(k2to32 + 1, k2to32 + 1, &product));  // 2^64 + 2^33 + 1
}

TEST(CheckedMath, CheckedSumRemembersAnOverflowForGood) {
  CheckedSum sum;
  sum.add(kMax - 1);
  sum.add(1);
  EXPECT_FALSE(sum.overflowed);
  EXPECT_EQ(sum.value, kMax);
  sum.add(2);  // wraps to 1
  EXPECT_TRUE(sum.overflowed);
  sum.add(0);
  EXPECT_TRUE(sum.overflowed);

  CheckedSum product;
  product.add_product(k2to32, k2to32);  // wraps to 0 without a carry from the addition
  EXPECT_TRUE(product.overflowed);
  CheckedSum total;
  total.add(product);
  EXPECT_TRUE(total.overflowed) << "the flag travels with the sum";
}

TEST(MatchRangeTuples, ExactUpToTwoToThe64MinusOne) {
  EXPECT_EQ(range_of(k2to32 - 1, k2to32 + 1).tuples(), kMax);
  EXPECT_EQ(range_of(k2to32, k2to32 / 2).tuples(), k2to63);
  EXPECT_EQ(MatchRange(7, 7, 0, k2to32).tuples(), 0u);
}

TEST(MatchRangeTuples, TwoToThe32EqualKeysOnEachSideAreRefused) {
  expect_refused([] { (void)range_of(k2to32, k2to32).tuples(); }, "4294967296 rows of R and 4294967296 rows of S");
  expect_refused([] { (void)MatchRange(5, 5 + k2to63, 0, 2).tuples(); });
}

TEST(CountTuples, PastTwoToThe32Exact) {
  // Ranges of 2^31 x (i + 1) tuples: 2^31 * 5050 in all, far past 2^32.
  std::vector<MatchRange> ranges;
  for (std::uint64_t i = 0; i < 100; ++i) ranges.push_back(range_of(std::uint64_t{1} << 31, i + 1));
  EXPECT_EQ(count_tuples(ranges), (std::uint64_t{1} << 31) * 5050);
}

TEST(CountTuples, SumsOfTwoToThe64OrMoreAreRefused) {
  // Two ranges of 2^63: the wrapped sum would be 0.
  expect_refused([] { count_tuples(std::vector<MatchRange>{range_of(k2to32, k2to32 / 2), range_of(k2to32 / 2, k2to32)}); });
  // 2^63 + 2^63 + 5 wraps to 5, which a plain sum would return.
  expect_refused([] { count_tuples(std::vector<MatchRange>{range_of(k2to63, 1), range_of(1, k2to63), range_of(5, 1)}); });
  // One range alone.
  expect_refused([] { count_tuples(std::vector<MatchRange>{range_of(3, 4), range_of(k2to32, k2to32)}); });
  EXPECT_EQ(count_tuples(std::vector<MatchRange>{range_of(k2to32 - 1, k2to32 + 1), range_of(9, 0)}), kMax);
}

TEST(CountTuples, ManyRangesSummedInParallel) {
  // 100000 ranges (the parallel path) of 2^32 x 2^15 = 2^47 tuples: 100000 * 2^47 < 2^64 ...
  std::vector<MatchRange> ranges(100'000, range_of(k2to32, 1 << 15));
  EXPECT_EQ(count_tuples(ranges), std::uint64_t{100'000} << 47);
  // ... and 140000 of them pass 2^64 (by 2^47 * 140000 - 2^64, about 1.3 * 10^18).
  ranges.resize(140'000, range_of(k2to32, 1 << 15));
  expect_refused([&] { count_tuples(ranges); });
}

TEST(OutputOffsets, PastTwoToThe32Exact) {
  // Range i has 2^31 * (i + 1) tuples: it starts at 2^31 * i (i + 1) / 2.
  std::vector<MatchRange> ranges;
  for (std::uint64_t i = 0; i < 100; ++i) ranges.push_back(range_of(std::uint64_t{1} << 31, i + 1));
  const std::vector<std::uint64_t> offsets = output_offsets(ranges);
  ASSERT_EQ(offsets.size(), 101u);
  for (std::uint64_t i = 0; i <= 100; ++i) ASSERT_EQ(offsets[i], (std::uint64_t{1} << 31) * (i * (i + 1) / 2)) << i;
}

TEST(OutputOffsets, ManyRangesPastTwoToThe32InParallel) {
  // 200000 ranges of 2^20 x 3: range i starts at 3 * 2^20 * i, 6.3 * 10^11 rows in all.
  const std::vector<MatchRange> ranges(200'000, range_of(1 << 20, 3));
  const std::vector<std::uint64_t> offsets = output_offsets(ranges);
  for (std::uint64_t i = 0; i <= 200'000; ++i) ASSERT_EQ(offsets[i], (std::uint64_t{3} << 20) * i) << i;
}

TEST(OutputOffsets, TotalsOfTwoToThe64OrMoreAreRefused) {
  expect_refused([] { output_offsets(std::vector<MatchRange>{range_of(k2to63, 1), range_of(1, k2to63), range_of(5, 1)}); });
  std::vector<MatchRange> ranges(140'000, range_of(k2to32, 1 << 15));  // the parallel path
  expect_refused([&] { output_offsets(ranges); });
}

TEST(Materialize, OutputOfTwoToThe64OrMoreTuplesIsRefusedBeforeAllocating) {
  const std::vector<std::uint32_t> key{1};
  const ColumnView r_key{key.data(), 1, DType::UInt32};
  expect_refused([&] { materialize(std::vector<MatchRange>{range_of(k2to63, 2)}, r_key, std::nullopt, std::nullopt); });
}

TEST(Materialize, ColumnsOfTwoToThe63BytesOrMoreAreRefused) {
  const std::vector<std::uint32_t> key{1};
  const std::vector<std::uint64_t> payload{2};
  const ColumnView r_key{key.data(), 1, DType::UInt32};
  // 2^61 rows of a 4-byte key: 2^63 bytes.
  EXPECT_THROW(materialize(std::vector<MatchRange>{range_of(std::uint64_t{1} << 31, k2to32 / 2)}, r_key, std::nullopt,
                           std::nullopt),
               InputError);
  // 2^62 rows of 4 + 8 bytes: 3 * 2^64 bytes, which wrap to 0 unchecked.
  EXPECT_THROW(materialize(std::vector<MatchRange>{range_of(k2to32, k2to32 / 4)}, r_key,
                           ColumnView{payload.data(), 1, DType::UInt64}, std::nullopt),
               InputError);
}

TEST(OutputRows, RowsTimesBytesMustStayBelowTwoToThe63) {
  EXPECT_EQ(output_rows((std::uint64_t{1} << 61) - 1, 4), (std::int64_t{1} << 61) - 1);
  EXPECT_EQ(output_rows(k2to32 + 1, 24), static_cast<std::int64_t>(k2to32 + 1));
  EXPECT_THROW(output_rows(std::uint64_t{1} << 61, 4), InputError);  // 2^63 bytes
  EXPECT_THROW(output_rows(std::uint64_t{1} << 62, 16), InputError);  // 2^66 bytes wrap to 0
  EXPECT_THROW(output_rows(kMax, 1), InputError);
}

TEST(TotalTuples, GpuCountersAndRangesSumExactlyUpToTwoToThe64MinusOne) {
  const std::vector<TupleCounter> gpus{{kMax - 7, 0}, {1, 0}};
  EXPECT_EQ(total_tuples(gpus, std::vector<MatchRange>{range_of(2, 3)}), kMax);
  EXPECT_EQ(total_tuples({}, {}), 0u);
}

TEST(TotalTuples, OverflowOnAGpuInTheSumOrInARangeIsRefused) {
  // A GPU's counter that wrapped: its count (small) must not be used.
  expect_refused([] { total_tuples(std::vector<TupleCounter>{{12, 1}}, {}); }, "counted on one GPU");
  // Two GPUs of 2^63 each: the sum wraps to 0.
  expect_refused([] { total_tuples(std::vector<TupleCounter>{{k2to63, 0}, {k2to63, 0}}, {}); });
  // A boundary range of one key with 2^32 rows on each side.
  expect_refused([] { total_tuples(std::vector<TupleCounter>{{1, 0}}, std::vector<MatchRange>{range_of(k2to32, k2to32)}); },
                 "one key matches");
  // The counters plus the ranges.
  expect_refused([] { total_tuples(std::vector<TupleCounter>{{kMax - 5, 0}}, std::vector<MatchRange>{range_of(2, 3)}); });
}

}  // namespace
}  // namespace mgjoin::detail
