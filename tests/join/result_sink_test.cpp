// JoinSettings::sink on the CPU path: a materialized join hands its rows to the sink (the whole columns,
// poured once the CPU join made them) and returns empty columns of their types; a count never uses it; the
// table layer gives it the output of a carried join only, never the row ids of a late one. Compared with the
// suites' reference join (common/reference_join.hpp), not with mgjoin's own output.
#include <mgjoin/error.hpp>
#include <mgjoin/join.hpp>
#include <mgjoin/table.hpp>

#include "common/collecting_sink.hpp"
#include "common/reference_join.hpp"
#include "common/relations.hpp"
#include "common/seed.hpp"

#include <gtest/gtest.h>

#include <random>
#include <stdexcept>
#include <vector>

namespace mgjoin::test {
namespace {

Relation random_relation(std::mt19937_64& rng, std::size_t rows, std::uint64_t domain, std::uint64_t offset) {
  std::vector<std::int64_t> keys(rows);
  for (auto& k : keys) k = static_cast<std::int64_t>(rng() % domain) - static_cast<std::int64_t>(domain / 2);
  if (rows) keys.back() = std::numeric_limits<std::int64_t>::min();  // a signed extreme on both sides
  return relation_of(keys, 8, offset);
}

JoinOptions cpu_options(ResultSink* sink, OutputMode output = OutputMode::Materialize) {
  JoinOptions o;
  o.gpus = 0;
  o.output = output;
  o.sink = sink;
  return o;
}

TEST(ResultSink, TheCpuPathPoursEveryRowIntoItOnce) {
  std::mt19937_64 rng(announce_seed());
  for (const auto& [r_rows, s_rows] : {std::pair{20'000, 30'000}, std::pair{1, 1}, std::pair{0, 500}, std::pair{7, 0}}) {
    SCOPED_TRACE(std::to_string(r_rows) + " x " + std::to_string(s_rows));
    Relation r = random_relation(rng, r_rows, 5'000, 0), s = random_relation(rng, s_rows, 5'000, 1u << 30);
    const ReferenceResult expected = reference_result(r, s, OutputMode::Materialize);
    CollectingSink sink;
    JoinOptions o = cpu_options(&sink);
    o.keep_inputs = true;
    const JoinResult got = join(r.view(), s.view(), o);
    ASSERT_TRUE(got.sunk);
    EXPECT_EQ(got.count, expected.count);
    EXPECT_EQ(got.key.type(), DType::Int64);
    EXPECT_EQ(result_tuples(sink.as_result(got)), expected.tuples);
    EXPECT_EQ(sink.has(ResultPart::Key), expected.count > 0);
  }
}

TEST(ResultSink, ACountLeavesItUnused) {
  std::mt19937_64 rng(announce_seed());
  Relation r = random_relation(rng, 1000, 100, 0), s = random_relation(rng, 1000, 100, 0);
  CollectingSink sink;
  const JoinResult got = join(r.view(), s.view(), cpu_options(&sink, OutputMode::Count));
  EXPECT_FALSE(got.sunk);
  EXPECT_EQ(got.count, reference_count(r, s));
  EXPECT_EQ(sink.calls(), 0u);
}

/// A sink whose disk is full.
class FailingSink final : public ResultSink {
 public:
  void write(ResultPart, DType, std::uint64_t, std::uint64_t, const void*) override {
    throw InputError("out/key.npy: write failed: No space left on device");
  }
};

TEST(ResultSink, ItsErrorEndsTheJoin) {
  std::mt19937_64 rng(announce_seed());
  Relation r = random_relation(rng, 1000, 100, 0), s = random_relation(rng, 1000, 100, 0);
  FailingSink sink;
  EXPECT_THROW(join(r.view(), s.view(), cpu_options(&sink)), InputError);
}

TEST(ResultSink, TablesGiveItACarriedJoinsColumnsAndNeverALateJoinsRowIds) {
  std::mt19937_64 rng(announce_seed());
  Relation r = random_relation(rng, 3000, 700, 0), s = random_relation(rng, 4000, 700, 1u << 20);
  const TableView left{{{"k", r.key.view()}, {"a", r.payload->view()}}};
  const TableView right{{{"k", s.key.view()}, {"b", s.payload->view()}}};
  const ReferenceResult expected = reference_result(r, s, OutputMode::Materialize);

  CollectingSink carried;
  TableJoinOptions o;
  o.left_on = o.right_on = {"k"};
  o.join = cpu_options(&carried);
  const TableJoinResult inner = join_tables(left, right, o);
  ASSERT_EQ(inner.materialization, "carried");
  ASSERT_TRUE(inner.join.sunk);
  ASSERT_EQ(inner.columns.size(), 3u);
  EXPECT_EQ(inner.columns[1].name, "r.a");
  EXPECT_EQ(inner.columns[2].name, "s.b");
  for (const NamedColumn& c : inner.columns) EXPECT_EQ(c.column.size(), 0) << c.name;
  EXPECT_EQ(inner.count, expected.count);
  EXPECT_EQ(result_tuples(carried.as_result(inner.join)), expected.tuples);

  // A left join gathers by row ids that its join underneath makes: the sink must see none of them.
  CollectingSink unused;
  o.how = JoinKind::LeftOuter;
  o.join = cpu_options(&unused);
  const TableJoinResult outer = join_tables(left, right, o);
  EXPECT_FALSE(outer.join.sunk);
  EXPECT_EQ(unused.calls(), 0u);
  ASSERT_FALSE(outer.columns.empty());
  EXPECT_EQ(outer.columns[0].column.size(), static_cast<std::int64_t>(outer.count));
  EXPECT_GE(outer.count, expected.count);
}

}  // namespace
}  // namespace mgjoin::test
