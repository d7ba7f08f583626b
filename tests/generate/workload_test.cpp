// Generator properties measured on its output: sizes and types (Table 2), unique and uniform R keys,
// foreign keys at selectivity 1, the matching fraction at 0.5, none at 0, Zipf skew, determinism.
#include <mgjoin/error.hpp>
#include <mgjoin/generate.hpp>

#include "common/seed.hpp"

#include <gtest/gtest.h>
#include <omp.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <unordered_map>
#include <unordered_set>
#include <vector>

namespace mgjoin::test {
namespace {

template <class T>
std::vector<T> values(const HostColumn& c) {
  return {c.as<T>(), c.as<T>() + c.size()};
}

WorkloadSpec spec_of(Workload w, double scale, std::uint64_t seed, double selectivity = 1, double zipf = 0) {
  WorkloadSpec s;
  s.workload = w;
  s.scale = scale;
  s.seed = seed;
  s.selectivity = selectivity;
  s.zipf = zipf;
  return s;
}

bool same_bytes(const HostColumn& a, const HostColumn& b) {
  return a.bytes() == b.bytes() && std::memcmp(a.data(), b.data(), a.bytes()) == 0;
}

bool same_workload(const GeneratedWorkload& a, const GeneratedWorkload& b) {
  return same_bytes(a.r.key, b.r.key) && same_bytes(*a.r.payload, *b.r.payload) && same_bytes(a.s.key, b.s.key) &&
         same_bytes(*a.s.payload, *b.s.payload);
}

/// Number of S keys present among R's keys.
template <class Key>
std::int64_t matching_rows(const GeneratedWorkload& w) {
  const auto r = values<Key>(w.r.key);
  const std::unordered_set<Key> r_keys(r.begin(), r.end());
  std::int64_t n = 0;
  for (const Key k : values<Key>(w.s.key)) n += r_keys.count(k);
  return n;
}

TEST(Workload, SizesAndTypesFollowTable2) {
  const auto a = generate_workload(spec_of(Workload::A, 0.0001, 1));
  EXPECT_EQ(a.r.size(), 10'000);
  EXPECT_EQ(a.s.size(), 100'000);
  EXPECT_EQ(a.r.key.type(), DType::UInt32);
  EXPECT_EQ(a.s.payload->type(), DType::UInt32);
  const auto b = generate_workload(spec_of(Workload::B, 0.0001, 1));
  EXPECT_EQ(b.r.size(), 100'000);
  EXPECT_EQ(b.s.size(), 100'000);
  EXPECT_EQ(b.r.key.type(), DType::UInt64);
  EXPECT_EQ(b.r.payload->type(), DType::UInt64);
  EXPECT_EQ(workload_shape(spec_of(Workload::B, 2.5, 1)).s_rows, 2'500'000'000);
  EXPECT_EQ(workload_shape(spec_of(Workload::A, 0.5, 1)).r_rows, 50'000'000);
}

TEST(Workload, ZeroScaleIsEmpty) {
  const auto w = generate_workload(spec_of(Workload::B, 0, 1));
  EXPECT_EQ(w.r.size(), 0);
  EXPECT_EQ(w.s.size(), 0);
}

TEST(Workload, RKeysAreUniqueAndPayloadsAreRowIndices) {
  const auto seed = announce_seed();
  for (const Workload wl : {Workload::A, Workload::B}) {
    const auto w = generate_workload(spec_of(wl, 0.001, seed));
    if (wl == Workload::A) {
      auto keys = values<std::uint32_t>(w.r.key);
      std::sort(keys.begin(), keys.end());
      EXPECT_EQ(std::adjacent_find(keys.begin(), keys.end()), keys.end()) << "duplicate R key in A";
      const auto payload = values<std::uint32_t>(*w.r.payload);
      for (std::size_t i = 0; i < payload.size(); ++i) ASSERT_EQ(payload[i], i);
    } else {
      auto keys = values<std::uint64_t>(w.r.key);
      std::sort(keys.begin(), keys.end());
      EXPECT_EQ(std::adjacent_find(keys.begin(), keys.end()), keys.end()) << "duplicate R key in B";
      const auto payload = values<std::uint64_t>(*w.s.payload);
      for (std::size_t i = 0; i < payload.size(); ++i) ASSERT_EQ(payload[i], i);
    }
  }
}

TEST(Workload, RKeysSpanTheWholeKeyRangeUniformly) {
  const auto w = generate_workload(spec_of(Workload::B, 0.0001, announce_seed()));
  // 16 buckets by the top 4 bits: each holds n/16 +- 5 binomial standard deviations.
  std::vector<std::int64_t> buckets(16);
  for (const std::uint64_t k : values<std::uint64_t>(w.r.key)) ++buckets[k >> 60];
  const double n = static_cast<double>(w.r.size()), p = 1.0 / 16;
  const double sd = std::sqrt(n * p * (1 - p));
  for (int b = 0; b < 16; ++b) EXPECT_NEAR(static_cast<double>(buckets[b]), n * p, 5 * sd) << "bucket " << b;
  // And R is not stored in key order (it is scattered).
  const auto keys = values<std::uint64_t>(w.r.key);
  EXPECT_FALSE(std::is_sorted(keys.begin(), keys.end()));
}

TEST(Workload, EverySKeyMatchesExactlyOneRRowAtSelectivityOne) {
  const auto seed = announce_seed();
  const auto a = generate_workload(spec_of(Workload::A, 0.0001, seed));
  EXPECT_EQ(matching_rows<std::uint32_t>(a), a.s.size());
  const auto b = generate_workload(spec_of(Workload::B, 0.0001, seed));
  EXPECT_EQ(matching_rows<std::uint64_t>(b), b.s.size());
  // Foreign keys spread over R: with |S| = |R| uniform picks, about 1 - 1/e of R is hit.
  const auto s = values<std::uint64_t>(b.s.key);
  const std::unordered_set<std::uint64_t> distinct(s.begin(), s.end());
  EXPECT_NEAR(static_cast<double>(distinct.size()) / static_cast<double>(b.r.size()), 1 - std::exp(-1.0), 0.01);
}

TEST(Workload, HotKeyTakesItsFractionOfS) {
  const auto seed = announce_seed();
  WorkloadSpec spec = spec_of(Workload::B, 0.0001, seed);
  spec.hot_key = 0.5;
  const auto w = generate_workload(spec);
  const std::uint64_t hot = values<std::uint64_t>(w.r.key)[0];
  const auto s = values<std::uint64_t>(w.s.key);
  const double n = static_cast<double>(s.size());
  const auto hits = static_cast<double>(std::count(s.begin(), s.end(), hot));
  EXPECT_NEAR(hits, n / 2, 5 * std::sqrt(n * 0.25) + n / static_cast<double>(w.r.size()));
  EXPECT_EQ(matching_rows<std::uint64_t>(w), w.s.size());  // every row still matches one R row
  spec.hot_key = 1.5;
  EXPECT_THROW(workload_shape(spec), InputError);
}

TEST(Workload, HalfTheSRowsMatchAtSelectivityHalf) {
  const auto seed = announce_seed();
  for (const double zipf : {0.0, 1.0}) {
    const auto w = generate_workload(spec_of(Workload::B, 0.0001, seed, 0.5, zipf));
    const double n = static_cast<double>(w.s.size());
    const double sd = std::sqrt(n * 0.25);
    EXPECT_NEAR(static_cast<double>(matching_rows<std::uint64_t>(w)), n / 2, 5 * sd) << "zipf " << zipf;
  }
  const auto a = generate_workload(spec_of(Workload::A, 0.0001, seed, 0.5));
  const double n = static_cast<double>(a.s.size());
  EXPECT_NEAR(static_cast<double>(matching_rows<std::uint32_t>(a)), n / 2, 5 * std::sqrt(n * 0.25));
}

TEST(Workload, NoSRowMatchesAtSelectivityZero) {
  const auto seed = announce_seed();
  EXPECT_EQ(matching_rows<std::uint64_t>(generate_workload(spec_of(Workload::B, 0.0001, seed, 0))), 0);
  EXPECT_EQ(matching_rows<std::uint32_t>(generate_workload(spec_of(Workload::A, 0.0001, seed, 0))), 0);
}

TEST(Workload, ZipfOneMakesTheTopKeyAsFrequentAsZipfsLaw) {
  const auto w = generate_workload(spec_of(Workload::B, 0.0001, announce_seed(), 1, 1.0));
  std::unordered_map<std::uint64_t, std::int64_t> freq;
  for (const std::uint64_t k : values<std::uint64_t>(w.s.key)) ++freq[k];
  std::int64_t top = 0;
  for (const auto& [k, f] : freq) top = std::max(top, f);
  // P(top rank) = 1 / H_n for theta = 1; harmonic number computed here directly.
  double harmonic = 0;
  for (std::int64_t i = 1; i <= w.r.size(); ++i) harmonic += 1.0 / static_cast<double>(i);
  const double n = static_cast<double>(w.s.size()), p = 1 / harmonic;
  EXPECT_NEAR(static_cast<double>(top), n * p, 5 * std::sqrt(n * p * (1 - p)));
  EXPECT_GT(top, 1000 * w.s.size() / w.r.size()) << "far above the uniform frequency of 1";
  EXPECT_EQ(matching_rows<std::uint64_t>(w), w.s.size()) << "skewed keys are still foreign keys";
}

TEST(Workload, ZipfZeroIsUniform) {
  const auto w = generate_workload(spec_of(Workload::B, 0.0001, announce_seed()));
  std::unordered_map<std::uint64_t, std::int64_t> freq;
  for (const std::uint64_t k : values<std::uint64_t>(w.s.key)) ++freq[k];
  std::int64_t top = 0;
  for (const auto& [k, f] : freq) top = std::max(top, f);
  EXPECT_LT(top, 20) << "Poisson(1) maximum over 1e5 draws stays below ~10";
}

TEST(Workload, SameSeedSameDataOnAnyThreadCount) {
  const auto seed = announce_seed();
  for (const double zipf : {0.0, 0.7}) {
    const auto spec = spec_of(Workload::A, 0.0002, seed, 0.8, zipf);
    const int threads = omp_get_max_threads();
    omp_set_num_threads(1);
    const auto one = generate_workload(spec);
    omp_set_num_threads(std::max(2, threads));
    const auto many = generate_workload(spec);
    omp_set_num_threads(threads);
    EXPECT_TRUE(same_workload(one, many)) << "zipf " << zipf;
    EXPECT_TRUE(same_workload(one, generate_workload(spec)));
  }
}

TEST(Workload, DifferentSeedDifferentData) {
  const auto seed = announce_seed();
  const auto a = generate_workload(spec_of(Workload::B, 0.00001, seed));
  const auto b = generate_workload(spec_of(Workload::B, 0.00001, seed + 1));
  EXPECT_FALSE(same_bytes(a.r.key, b.r.key));
  EXPECT_FALSE(same_bytes(a.s.key, b.s.key));
}

TEST(Workload, GenerateIntoCallerColumns) {
  const auto spec = spec_of(Workload::A, 0.00001, announce_seed());
  const auto shape = workload_shape(spec);
  Relation r{HostColumn::allocate(DType::UInt32, shape.r_rows), HostColumn::allocate(DType::UInt32, shape.r_rows)};
  Relation s{HostColumn::allocate(DType::UInt32, shape.s_rows), HostColumn::allocate(DType::UInt32, shape.s_rows)};
  generate_workload_into(spec, r.view(), s.view());
  const auto expected = generate_workload(spec);
  EXPECT_TRUE(same_bytes(r.key, expected.r.key));
  EXPECT_TRUE(same_bytes(s.key, expected.s.key));
  Relation wrong{HostColumn::allocate(DType::UInt64, shape.r_rows), HostColumn::allocate(DType::UInt64, shape.r_rows)};
  EXPECT_THROW(generate_workload_into(spec, wrong.view(), s.view()), Error);
}

/// Expects an InputError whose message starts with `option`.
void expect_option_error(const WorkloadSpec& spec, const std::string& option) {
  try {
    workload_shape(spec);
    ADD_FAILURE() << "no error for " << option;
  } catch (const InputError& e) {
    EXPECT_EQ(std::string(e.what()).rfind(option, 0), 0u) << e.what();
  }
}

TEST(Workload, InvalidSpecsNameTheOption) {
  expect_option_error(spec_of(Workload::B, -1, 1), "WorkloadSpec::scale");
  expect_option_error(spec_of(Workload::B, std::nan(""), 1), "WorkloadSpec::scale");
  expect_option_error(spec_of(Workload::B, 1e12, 1), "WorkloadSpec::scale");
  expect_option_error(spec_of(Workload::A, 50, 1), "WorkloadSpec::scale");  // > 2^32 unique 32-bit keys
  expect_option_error(spec_of(Workload::B, 1, 1, 1.5), "WorkloadSpec::selectivity");
  expect_option_error(spec_of(Workload::B, 1, 1, -0.1), "WorkloadSpec::selectivity");
  expect_option_error(spec_of(Workload::B, 1, 1, 1, -1), "WorkloadSpec::zipf");
  expect_option_error(spec_of(Workload::B, 1, 1, 1, 1.5), "WorkloadSpec::zipf");
  EXPECT_FALSE(parse_workload("C").has_value());
  EXPECT_EQ(parse_workload("a"), Workload::A);
}

}  // namespace
}  // namespace mgjoin::test
