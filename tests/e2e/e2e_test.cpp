// End-to-end joins through the public API on the CPU path (gpus = 0), checked against a hash-multimap
// reference: the paper's workloads A and B (Section 4.1.3) over selectivity and Zipf skew, signed keys
// with m:n duplicates, key-only relations, empty relations and adversarial key distributions.
#include <mgjoin/generate.hpp>
#include <mgjoin/join.hpp>

#include "common/seed.hpp"
#include "e2e/e2e_util.hpp"

#include <gtest/gtest.h>

#include <limits>
#include <random>
#include <tuple>

namespace mgjoin::test {
namespace {

JoinOptions cpu_options(OutputMode output) {
  JoinOptions options;
  options.gpus = 0;
  options.output = output;
  return options;
}

/// Joins copies of r and s on the CPU path (the originals stay for the reference).
JoinResult cpu_join_copies(const Relation& r, const Relation& s, OutputMode output) {
  Relation r_in = copy_of(r), s_in = copy_of(s);
  return join(r_in.view(), s_in.view(), cpu_options(output));
}

/// Count and materialized output both equal the reference.
void expect_matches_reference(const Relation& r, const Relation& s) {
  const auto expected = reference_tuples(r, s);
  EXPECT_EQ(cpu_join_copies(r, s, OutputMode::Count).count, expected.size());
  const JoinResult materialized = cpu_join_copies(r, s, OutputMode::Materialize);
  EXPECT_EQ(materialized.count, expected.size());
  EXPECT_EQ(result_tuples(materialized), expected);
}

template <class T>
HostColumn column_of(const std::vector<T>& values) {
  HostColumn c = HostColumn::allocate(dtype_of<T>(), static_cast<std::int64_t>(values.size()));
  if (!values.empty()) std::memcpy(c.data(), values.data(), values.size() * sizeof(T));
  return c;
}

/// A relation with keys `keys` and, unless key-only, payloads = 1000 + row index (distinct from keys).
template <class Key>
Relation relation_of(const std::vector<Key>& keys, bool with_payload = true) {
  Relation rel{column_of(keys), std::nullopt};
  if (with_payload) {
    std::vector<std::uint64_t> payload(keys.size());
    for (std::size_t i = 0; i < keys.size(); ++i) payload[i] = 1000 + i;
    rel.payload = column_of(payload);
  }
  return rel;
}

// --- The paper's workloads --------------------------------------------------------------------

using WorkloadCase = std::tuple<Workload, double /*selectivity*/, double /*zipf*/, OutputMode>;

class CpuWorkloadJoin : public ::testing::TestWithParam<WorkloadCase> {};

TEST_P(CpuWorkloadJoin, EqualsHashReference) {
  const auto [w, selectivity, zipf, output] = GetParam();
  // A: |R| = 5e4, |S| = 5e5; B: |R| = |S| = 2e5.
  const double scale = w == Workload::A ? 5e-4 : 2e-4;
  const auto spec = workload_spec(w, scale, selectivity, zipf, announce_seed());
  const GeneratedWorkload original = generate_workload(spec);
  const auto expected = reference_tuples(original.r, original.s);
  // What the generator promises, independent of any join: R keys are unique, so each S row matches
  // at most once; with selectivity 1 every S row matches, with 0 none does.
  if (selectivity == 1) { ASSERT_EQ(expected.size(), static_cast<std::size_t>(original.s.size())); }
  if (selectivity == 0) { ASSERT_TRUE(expected.empty()); }

  GeneratedWorkload input{copy_of(original.r), copy_of(original.s)};
  const JoinResult result = join(input.r.view(), input.s.view(), cpu_options(output));
  EXPECT_EQ(result.count, expected.size());
  if (output == OutputMode::Materialize) { EXPECT_EQ(result_tuples(result), expected); }
  EXPECT_TRUE(workload_sorted(original.r, input.r));
  EXPECT_TRUE(workload_sorted(original.s, input.s));
}

std::string workload_case_name(const ::testing::TestParamInfo<WorkloadCase>& info) {
  const auto [w, selectivity, zipf, output] = info.param;
  return spec_name(workload_spec(w, 1, selectivity, zipf, 0)) +
         (output == OutputMode::Count ? "_count" : "_materialize");
}

INSTANTIATE_TEST_SUITE_P(Workloads, CpuWorkloadJoin,
                         ::testing::Combine(::testing::Values(Workload::A, Workload::B),
                                            ::testing::Values(0.0, 0.5, 1.0), ::testing::Values(0.0, 1.0),
                                            ::testing::Values(OutputMode::Count, OutputMode::Materialize)),
                         workload_case_name);

// --- Hand-built inputs -----------------------------------------------------------------------

TEST(CpuJoinEndToEnd, SignedInt64WithNegativesAndManyToMany) {
  constexpr auto lo = std::numeric_limits<std::int64_t>::min(), hi = std::numeric_limits<std::int64_t>::max();
  // -5: 2 x 1, 0: 3 x 2, -1: 1 x 2, min: 1 x 1, max: 1 x 2; 3, 7, 8 and 1 match nothing.
  const Relation r = relation_of<std::int64_t>({0, -5, 3, lo, 0, -1, hi, -5, 7, 0});
  const Relation s = relation_of<std::int64_t>({-1, 0, hi, -5, 8, lo, 0, -1, hi, 1});
  const auto expected = reference_tuples(r, s);
  ASSERT_EQ(expected.size(), 2u * 1 + 3 * 2 + 1 * 2 + 1 * 1 + 1 * 2);  // the reference itself is checked
  expect_matches_reference(r, s);

  Relation r_in = copy_of(r), s_in = copy_of(s);
  join(r_in.view(), s_in.view(), cpu_options(OutputMode::Count));
  // Signed order: the most negative key first, not the one with the top bit clear.
  EXPECT_EQ(r_in.key.as<std::int64_t>()[0], lo);
  EXPECT_EQ(r_in.key.as<std::int64_t>()[r.size() - 1], hi);
}

template <class Key>
void random_signed_many_to_many(std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_int_distribution<Key> narrow(-60, 60);  // ~40 x ~40 duplicates per key
  std::vector<Key> rk(5000), sk(4000);
  for (auto& k : rk) k = narrow(rng);
  for (auto& k : sk) k = narrow(rng);
  const Relation r = relation_of(rk), s = relation_of(sk);
  expect_matches_reference(r, s);

  // Matching ranges cover every matching pair of the sorted inputs exactly once.
  Relation r_in = copy_of(r), s_in = copy_of(s);
  const JoinResult ranges = join(r_in.view(), s_in.view(), cpu_options(OutputMode::Ranges));
  const std::vector<Key> r_sorted(r_in.key.as<Key>(), r_in.key.as<Key>() + r.size());
  const std::vector<Key> s_sorted(s_in.key.as<Key>(), s_in.key.as<Key>() + s.size());
  EXPECT_EQ(expand(ranges.ranges), matching_pairs(r_sorted, s_sorted));
  EXPECT_EQ(ranges.count, reference_tuples(r, s).size());
}

TEST(CpuJoinEndToEnd, RandomSignedInt64ManyToMany) { random_signed_many_to_many<std::int64_t>(announce_seed()); }
TEST(CpuJoinEndToEnd, RandomSignedInt32ManyToMany) { random_signed_many_to_many<std::int32_t>(announce_seed()); }

TEST(CpuJoinEndToEnd, KeyOnlyRelations) {
  std::mt19937_64 rng(announce_seed());
  std::vector<std::uint32_t> rk(3000), sk(7000);
  for (auto& k : rk) k = static_cast<std::uint32_t>(rng() % 2000);
  for (auto& k : sk) k = static_cast<std::uint32_t>(rng() % 2000);
  expect_matches_reference(relation_of(rk, false), relation_of(sk, false));  // both key-only
  expect_matches_reference(relation_of(rk, false), relation_of(sk, true));   // R key-only
  expect_matches_reference(relation_of(rk, true), relation_of(sk, false));   // S key-only

  Relation r = relation_of(rk, false), s = relation_of(sk, true);
  const JoinResult result = join(r.view(), s.view(), cpu_options(OutputMode::Materialize));
  EXPECT_EQ(result.r_payload.size(), 0);  // no R payload column in the output
  EXPECT_EQ(result.s_payload.size(), result.key.size());
}

TEST(CpuJoinEndToEnd, EmptyRelations) {
  const std::vector<std::uint64_t> none, some{1, 2, 2, 3};
  for (const auto& [rk, sk] : {std::pair{none, some}, std::pair{some, none}, std::pair{none, none}}) {
    for (const OutputMode output : {OutputMode::Count, OutputMode::Ranges, OutputMode::Materialize}) {
      Relation r = relation_of(rk), s = relation_of(sk);
      const JoinResult result = join(r.view(), s.view(), cpu_options(output));
      EXPECT_EQ(result.count, 0u);
      EXPECT_TRUE(result.ranges.empty());
      EXPECT_EQ(result.key.size(), 0);
    }
  }
}

TEST(CpuJoinEndToEnd, AdversarialKeyDistributions) {
  const std::uint64_t seed = announce_seed();
  std::mt19937_64 rng(seed);
  std::vector<std::uint64_t> all_equal_r(300, 42), all_equal_s(200, 42);
  expect_matches_reference(relation_of(all_equal_r), relation_of(all_equal_s));  // one 300 x 200 range

  std::vector<std::uint64_t> hot_r(4000), hot_s(4000);  // one hot key among random ones
  for (std::size_t i = 0; i < hot_r.size(); ++i) hot_r[i] = i % 4 == 0 ? 7 : rng() % 3000;
  for (std::size_t i = 0; i < hot_s.size(); ++i) hot_s[i] = i % 3 == 0 ? 7 : rng() % 3000;
  expect_matches_reference(relation_of(hot_r), relation_of(hot_s));

  std::vector<std::uint64_t> top_bits_r(3000), top_bits_s(3000);  // keys differ only in their low bits
  for (auto& k : top_bits_r) k = 0xFFFF'FFFF'FFFF'0000ull | (rng() & 0x7FF);
  for (auto& k : top_bits_s) k = 0xFFFF'FFFF'FFFF'0000ull | (rng() & 0x7FF);
  expect_matches_reference(relation_of(top_bits_r), relation_of(top_bits_s));

  std::vector<std::uint64_t> ascending(2500), descending(2500);  // presorted and reverse-sorted
  for (std::size_t i = 0; i < ascending.size(); ++i) ascending[i] = i / 2, descending[i] = (2500 - i) / 3;
  expect_matches_reference(relation_of(ascending), relation_of(descending));

  expect_matches_reference(relation_of<std::uint64_t>({9}), relation_of<std::uint64_t>({9}));  // one row each
}

}  // namespace
}  // namespace mgjoin::test
