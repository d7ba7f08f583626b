// The CPU path against a std::multimap reference: random, m:n duplicate-heavy and edge inputs, all
// key types, payloads absent / 4 / 8 bytes, and the three output modes.
#include "engine/src/join/cpu_join.hpp"

#include <mgjoin/error.hpp>

#include "common/keys.hpp"
#include "common/reference_join.hpp"
#include "common/seed.hpp"

#include <gtest/gtest.h>

#include <limits>
#include <random>

namespace mgjoin::detail {
namespace {

using test::dtype_of;
using test::reference_join;
using test::result_tuples;
using test::Tuple;
using test::uniform_keys;

/// Owning test input: keys plus payloads of `payload_width` bytes (0 = none) holding the row number.
template <class Key>
struct Input {
  std::vector<Key> keys;
  std::size_t payload_width = 0;
  std::vector<std::uint32_t> p32;
  std::vector<std::uint64_t> p64;

  Input(std::vector<Key> k, std::size_t width, std::uint64_t tag) : keys(std::move(k)), payload_width(width) {
    for (std::size_t i = 0; i < keys.size(); ++i) {
      if (width == 4) p32.push_back(static_cast<std::uint32_t>(tag * 1000003 + i));
      if (width == 8) p64.push_back(tag << 40 | i);
    }
  }
  std::vector<std::uint64_t> payload_words() const {
    if (payload_width == 4) return {p32.begin(), p32.end()};
    return p64;
  }
  RelationView view() {
    RelationView v{{keys.data(), static_cast<std::int64_t>(keys.size()), dtype_of<Key>()}, std::nullopt};
    if (payload_width == 4) v.payload = MutableColumnView{p32.data(), static_cast<std::int64_t>(p32.size()), DType::UInt32};
    if (payload_width == 8) v.payload = MutableColumnView{p64.data(), static_cast<std::int64_t>(p64.size()), DType::Float64};
    return v;
  }
};

template <class Key>
void check_join(std::vector<Key> rk, std::vector<Key> sk, std::size_t rw, std::size_t sw) {
  Input<Key> r(std::move(rk), rw, 1), s(std::move(sk), sw, 2);
  const std::vector<Tuple> expected = reference_join(r.keys, r.payload_words(), s.keys, s.payload_words());
  // Each mode on fresh copies (the join sorts its inputs in place).
  for (OutputMode mode : {OutputMode::Count, OutputMode::Ranges, OutputMode::Materialize}) {
    Input<Key> rc = r, sc = s;
    JoinOptions options;
    options.gpus = 0;
    options.output = mode;
    const JoinResult result = cpu_join(rc.view(), sc.view(), options);
    EXPECT_EQ(result.count, expected.size());
    EXPECT_NE(result.executor.find("CPU"), std::string::npos);
    EXPECT_EQ(result.phases.size(), mode == OutputMode::Materialize ? 3u : 2u);
    if (mode == OutputMode::Ranges) {
      // Ranges index the sorted inputs: every range's rows carry one key on both sides.
      std::uint64_t tuples = 0;
      for (const MatchRange& m : result.ranges) {
        tuples += m.tuples();
        for (auto i = m.r_begin; i < m.r_end; ++i) EXPECT_EQ(rc.keys[i], sc.keys[m.s_begin]);
        for (auto j = m.s_begin; j < m.s_end; ++j) EXPECT_EQ(sc.keys[j], rc.keys[m.r_begin]);
      }
      EXPECT_EQ(tuples, expected.size());
    }
    if (mode == OutputMode::Materialize) {
      EXPECT_EQ(result.key.type(), dtype_of<Key>());
      EXPECT_EQ(result.r_payload.size(), rw ? result.key.size() : 0);
      EXPECT_EQ(result.s_payload.size(), sw ? result.key.size() : 0);
      EXPECT_EQ(result_tuples(result.key, rw ? &result.r_payload : nullptr, sw ? &result.s_payload : nullptr), expected);
    }
  }
}

template <class Key>
class CpuJoinTyped : public ::testing::Test {};
using KeyTypes = ::testing::Types<std::int32_t, std::uint32_t, std::int64_t, std::uint64_t>;
TYPED_TEST_SUITE(CpuJoinTyped, KeyTypes);

TYPED_TEST(CpuJoinTyped, RandomKeysEveryPayloadWidth) {
  using Key = TypeParam;
  std::mt19937_64 rng(test::announce_seed());
  const Key lo = std::numeric_limits<Key>::min(), hi = std::numeric_limits<Key>::max();
  for (std::size_t rw : {0, 4, 8})
    for (std::size_t sw : {0, 4, 8}) check_join<Key>(uniform_keys<Key>(rng, 3000, lo, hi), uniform_keys<Key>(rng, 2000, lo, hi), rw, sw);
}

TYPED_TEST(CpuJoinTyped, DuplicateHeavyManyToMany) {
  using Key = TypeParam;
  std::mt19937_64 rng(test::announce_seed());
  const Key lo = std::is_signed_v<Key> ? Key(-20) : Key(0);
  check_join<Key>(uniform_keys<Key>(rng, 5000, lo, Key(20)), uniform_keys<Key>(rng, 4000, lo, Key(25)), 8, 4);
}

TYPED_TEST(CpuJoinTyped, MinAndMaxKeys) {
  using Key = TypeParam;
  const Key lo = std::numeric_limits<Key>::min(), hi = std::numeric_limits<Key>::max();
  check_join<Key>({hi, lo, Key(0), hi, lo, Key(1)}, {lo, hi, hi, Key(1), Key(lo + 1)}, 8, 8);
}

TEST(CpuJoin, EmptyRelations) {
  check_join<std::uint64_t>({}, {1, 2, 3}, 8, 8);
  check_join<std::uint64_t>({1, 2, 3}, {}, 8, 8);
  check_join<std::int32_t>({}, {}, 4, 0);
}

TEST(CpuJoin, OneRow) {
  check_join<std::int64_t>({-7}, {-7}, 8, 8);
  check_join<std::int64_t>({-7}, {7}, 8, 8);
}

TEST(CpuJoin, AllKeysEqual) { check_join<std::uint32_t>(std::vector<std::uint32_t>(700, 5), std::vector<std::uint32_t>(300, 5), 4, 8); }

TEST(CpuJoin, NegativeInt32KeysSortBelowPositive) {
  std::mt19937_64 rng(test::announce_seed());
  check_join<std::int32_t>(uniform_keys<std::int32_t>(rng, 4000, -500, 100), uniform_keys<std::int32_t>(rng, 4000, -100, 500), 4, 4);
}

TEST(CpuJoin, OneHotKeyAmongUniqueKeys) {
  std::vector<std::uint64_t> r, s;
  for (std::uint64_t k = 0; k < 2000; ++k) r.push_back(k % 3 ? k : 1000), s.push_back(k % 5 ? k : 1000);
  check_join<std::uint64_t>(r, s, 8, 8);
}

JoinOptions cpu_options() {
  JoinOptions o;
  o.gpus = 0;
  return o;
}

TEST(CpuJoin, MismatchedKeyTypesAreAnInputError) {
  std::vector<std::int32_t> rk{1};
  std::vector<std::int64_t> sk{1};
  RelationView r{{rk.data(), 1, DType::Int32}, std::nullopt}, s{{sk.data(), 1, DType::Int64}, std::nullopt};
  EXPECT_THROW(mgjoin::join(r, s, cpu_options()), InputError);  // checked where inputs enter the library
}

TEST(CpuJoin, PayloadLengthMismatchIsAnInputError) {
  std::vector<std::uint64_t> rk{1, 2}, rp{1};
  RelationView r{{rk.data(), 2, DType::UInt64}, MutableColumnView{rp.data(), 1, DType::UInt64}};
  EXPECT_THROW(mgjoin::join(r, r, cpu_options()), InputError);
}

TEST(CpuJoin, ReportsProgressPerPhase) {
  std::vector<std::uint64_t> rk{3, 1, 2}, sk{2, 3};
  RelationView r{{rk.data(), 3, DType::UInt64}, std::nullopt}, s{{sk.data(), 2, DType::UInt64}, std::nullopt};
  JoinOptions options;
  std::vector<std::string> phases;
  options.progress = [&](const std::string& phase, double fraction) {
    if (fraction == 1.0) phases.push_back(phase);
  };
  EXPECT_EQ(cpu_join(r, s, options).count, 2u);
  EXPECT_EQ(phases, (std::vector<std::string>{"sort", "join", "materialize"}));
}

TEST(CpuJoin, KeepInputsSortsCopiesAndLeavesTheCallersColumnsAsTheyWere) {
  std::vector<std::int64_t> rk{5, -3, 9, 1, -3}, sk{9, -3, 5, 5};
  std::vector<std::uint64_t> rp{10, 11, 12, 13, 14}, sp{20, 21, 22, 23};
  const auto rk0 = rk, sk0 = sk;
  const auto rp0 = rp, sp0 = sp;
  RelationView r{{rk.data(), 5, DType::Int64}, MutableColumnView{rp.data(), 5, DType::UInt64}};
  RelationView s{{sk.data(), 4, DType::Int64}, MutableColumnView{sp.data(), 4, DType::UInt64}};
  JoinOptions options = cpu_options();
  options.keep_inputs = true;
  const JoinResult kept = mgjoin::join(r, s, options);
  EXPECT_EQ(kept.count, 5u);  // 5 twice, -3 twice, 9 once
  EXPECT_EQ(rk, rk0);
  EXPECT_EQ(sk, sk0);
  EXPECT_EQ(rp, rp0);
  EXPECT_EQ(sp, sp0);
  // Without it the CPU path sorts the caller's columns (which is what the copies spare).
  options.keep_inputs = false;
  EXPECT_EQ(mgjoin::join(r, s, options).count, 5u);
  EXPECT_NE(rk, rk0);
}

TEST(CpuJoin, KeepInputsWithRangesIsRefused) {
  std::vector<std::uint64_t> rk{2, 1}, sk{1, 2};
  const auto rk0 = rk;
  RelationView r{{rk.data(), 2, DType::UInt64}, std::nullopt}, s{{sk.data(), 2, DType::UInt64}, std::nullopt};
  JoinOptions options = cpu_options();
  options.keep_inputs = true;
  options.output = OutputMode::Ranges;
  try {
    mgjoin::join(r, s, options);
    ADD_FAILURE() << "keep_inputs with ranges: no error";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("JoinOptions::keep_inputs"), std::string::npos) << e.what();
  }
  EXPECT_EQ(rk, rk0);  // refused before anything ran
}

}  // namespace
}  // namespace mgjoin::detail
