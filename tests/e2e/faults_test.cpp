// Faults on the CPU path: a join cancelled through JoinOptions::cancel stops with mgjoin::Cancelled at
// its next cancellation point and outputs nothing, leaving its inputs a permutation of themselves; a
// join whose output the host cannot hold is refused before the output is taken.
#include <mgjoin/error.hpp>
#include <mgjoin/generate.hpp>
#include <mgjoin/join.hpp>

#include "e2e/e2e_util.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <cstdlib>
#include <string>
#include <vector>

namespace mgjoin::test {
namespace {

GeneratedWorkload small_workload() {
  WorkloadSpec spec;
  spec.workload = Workload::B;
  spec.scale = 0.0002;  // 200k rows each
  spec.seed = 7;
  return generate_workload(spec);
}

/// The multiset of (key, payload) rows: what a cancelled in-place sort must keep.
std::vector<std::pair<std::uint64_t, std::uint64_t>> rows_of(const Relation& rel) {
  std::vector<std::pair<std::uint64_t, std::uint64_t>> rows;
  for (std::int64_t i = 0; i < rel.size(); ++i) rows.emplace_back(key_bits(rel.key, i), key_bits(*rel.payload, i));
  std::sort(rows.begin(), rows.end());
  return rows;
}

class CpuCancel : public ::testing::TestWithParam<const char*> {};

TEST_P(CpuCancel, StopsAtTheNextCancellationPointAndKeepsEveryRow) {
  GeneratedWorkload w = small_workload();
  const auto r_rows = rows_of(w.r), s_rows = rows_of(w.s);
  std::atomic<bool> cancel{false};
  JoinOptions options;
  options.gpus = 0;
  options.output = OutputMode::Materialize;
  options.cancel = &cancel;
  std::vector<std::string> phases_after;
  options.progress = [&](const std::string& phase, double) {
    if (cancel) phases_after.push_back(phase);
    if (phase == GetParam()) cancel = true;
  };
  EXPECT_THROW(join(w.r.view(), w.s.view(), options), Cancelled);
  EXPECT_TRUE(phases_after.empty()) << "progress went on after the cancel, first: " << phases_after.front();
  EXPECT_EQ(rows_of(w.r), r_rows);
  EXPECT_EQ(rows_of(w.s), s_rows);
}

INSTANTIATE_TEST_SUITE_P(Phases, CpuCancel, ::testing::Values("sort", "join", "materialize"));

TEST(CpuCancel, AFlagSetBeforehandStopsTheJoinBeforeItStarts) {
  GeneratedWorkload w = small_workload();
  const HostColumn r_before = copy_of(w.r.key);
  std::atomic<bool> cancel{true};
  JoinOptions options;
  options.gpus = 0;
  options.cancel = &cancel;
  EXPECT_THROW(join(w.r.view(), w.s.view(), options), Cancelled);
  EXPECT_EQ(std::memcmp(r_before.data(), w.r.key.data(), r_before.bytes()), 0) << "R was sorted before the check";
}

TEST(CpuCancel, AnUnsetFlagChangesNothing) {
  GeneratedWorkload w = small_workload();
  Relation r = copy_of(w.r), s = copy_of(w.s);
  std::atomic<bool> cancel{false};
  JoinOptions options;
  options.gpus = 0;
  options.output = OutputMode::Count;
  options.cancel = &cancel;
  EXPECT_EQ(join(r.view(), s.view(), options).count, reference_tuples(w.r, w.s).size());
}

TEST(HostMemory, AnOutputTheHostCannotHoldIsRefusedWithItsSize) {
  // Every S row matches R row 0's key: 2^12 x 2^14 = 2^26 output rows of 24 bytes (1.5 GiB).
  const std::int64_t nr = 1 << 12, ns = 1 << 14;
  Relation r{HostColumn::allocate(DType::UInt64, nr), HostColumn::allocate(DType::UInt64, nr)};
  Relation s{HostColumn::allocate(DType::UInt64, ns), HostColumn::allocate(DType::UInt64, ns)};
  for (std::int64_t i = 0; i < nr; ++i) r.key.as<std::uint64_t>()[i] = 5, r.payload->as<std::uint64_t>()[i] = i;
  for (std::int64_t i = 0; i < ns; ++i) s.key.as<std::uint64_t>()[i] = 5, s.payload->as<std::uint64_t>()[i] = i;
  setenv("MGJOIN_HOST_MEMORY_LIMIT", "1M", 1);  // below what the process holds: no room
  JoinOptions options;
  options.gpus = 0;
  options.output = OutputMode::Materialize;
  try {
    join(r.view(), s.view(), options);
    ADD_FAILURE() << "a 1.5 GiB output was taken under a 1 MiB cap";
  } catch (const OutOfMemory& e) {
    // Refused as a whole, before any column is taken (each column's own check would not see the others).
    EXPECT_NE(std::string(e.what()).find("host memory: the join's output (67108864 rows)"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("MGJOIN_HOST_MEMORY_LIMIT"), std::string::npos) << e.what();
  }
  options.output = OutputMode::Count;  // a count needs no output memory
  EXPECT_EQ(join(r.view(), s.view(), options).count, static_cast<std::uint64_t>(nr * ns));
  unsetenv("MGJOIN_HOST_MEMORY_LIMIT");
}

}  // namespace
}  // namespace mgjoin::test
