// Faults on the GPUs, both flows: a join cancelled at each of its phases, a device allocation that fails
// at each point of a join (alloc::fault), a GPU whose memory another holder took, and host memory too
// small for the paper flow's merge buffers. Each must end with its error, wait for the GPU work in
// flight, free what it took (the same engine then joins again, right), and output nothing.
#include <mgjoin/engine.hpp>
#include <mgjoin/error.hpp>
#include <mgjoin/generate.hpp>
#include <mgjoin/join.hpp>

#include "alloc/fault_injection.hpp"
#include "alloc/stack_allocator.hpp"
#include "common/engines.hpp"
#include "common/gpu.hpp"
#include "common/tier.hpp"
#include "e2e/e2e_util.hpp"
#include "engine/src/sort/planner.hpp"

#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <atomic>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

namespace mgjoin::test {
namespace {

GeneratedWorkload workload(double scale, std::uint64_t seed = 11) {
  WorkloadSpec spec;
  spec.workload = Workload::B;
  spec.scale = scale;
  spec.seed = seed;
  return generate_workload(spec, MemoryKind::Pinned);
}

JoinOptions options_for(JoinStrategy strategy, OutputMode output) {
  JoinOptions o;
  o.strategy = strategy;
  o.output = output;
  return o;
}

/// The flows and outputs every fault is tried on. The paper flow runs out of core (several chunksets
/// and the merge phase) on its engine's small memory limit.
struct FlowCase {
  JoinStrategy strategy;
  OutputMode output;
  const char* name;
};
const FlowCase kFlows[] = {{JoinStrategy::CoPartitioned, OutputMode::Count, "copart count"},
                           {JoinStrategy::CoPartitioned, OutputMode::Materialize, "copart materialize"},
                           {JoinStrategy::Paper, OutputMode::Count, "paper count"},
                           {JoinStrategy::Paper, OutputMode::Materialize, "paper materialize"},
                           {JoinStrategy::Paper, OutputMode::Ranges, "paper ranges"}};

/// Two engines: one with a memory limit small enough that the paper flow takes several chunksets of the
/// workload (and so runs its merge phase), one with the default limit for the co-partitioned flow.
/// Made once for the suite (each test ends with them joining right again: a test that broke them would
/// fail there, and the next test too), freed at its end.
class GpuFaults : public ::testing::Test {
 protected:
  void SetUp() override {
    MGJOIN_REQUIRE_GPUS(1);
    if (paper_engine_) return;
    // Quick: 5 * 10^5 rows a relation; the paper engine's limit is derived from the rows, so its flow
    // still takes two chunksets or more and runs the merge phase (TheFlowsRunAsThisSuiteExpects).
    // Sanitize: 4 * 10^4 rows, for the same reason (a chunk of at most 10^4 rows, over kMinChunk's 1024).
    original_ = workload(per_tier(0.0005, 0.002, 0.00004));
    EngineOptions e;
    e.gpus = gpu_count() >= 2 ? 2 : 1;
    // Half a relation per GPU per chunkset before the sort's scratch: at least two chunksets each.
    e.gpu_memory_limit = sort::device_bytes_for_chunk(original_.r.size() / (2 * e.gpus), 16, /*sort_temp=*/0);
    paper_options_ = e;
    paper_engine_ = std::make_unique<Engine>(e);  // first: the other one takes 80% of what is left
    e.gpu_memory_limit = 0;
    copart_engine_ = std::make_unique<Engine>(test_engine_options(e));
    expected_ = reference_count(original_.r, original_.s);
  }
  void TearDown() override { alloc::fault::fail_nth_allocation(0); }
  static void TearDownTestSuite() {
    copart_engine_.reset();
    paper_engine_.reset();
    original_ = {};
  }

  Engine& engine_for(JoinStrategy strategy) { return strategy == JoinStrategy::Paper ? *paper_engine_ : *copart_engine_; }

  /// Joins fresh copies of the workload (the paper flow sorts in place).
  JoinResult join_copies(const JoinOptions& options) {
    Relation r = copy_of(original_.r), s = copy_of(original_.s);
    return engine_for(options.strategy).join(r.view(), s.view(), options);
  }

  /// After a fault: the same engines join the same inputs right, in every flow.
  void expect_engine_still_joins(const std::string& after) {
    for (const FlowCase& f : kFlows) {
      const JoinResult res = join_copies(options_for(f.strategy, f.output));
      EXPECT_EQ(res.count, expected_) << f.name << " after " << after;
      if (f.output == OutputMode::Materialize) {
        EXPECT_EQ(res.key.size(), static_cast<std::int64_t>(expected_)) << f.name;
      }
    }
  }

  static inline std::unique_ptr<Engine> paper_engine_, copart_engine_;
  static inline EngineOptions paper_options_;
  static inline GeneratedWorkload original_;
  static inline std::uint64_t expected_ = 0;
};

TEST_F(GpuFaults, TheFlowsRunAsThisSuiteExpects) {
  // The premise of the tests below: each flow runs as named, the paper flow with a merge phase.
  for (const FlowCase& f : kFlows) {
    const JoinResult res = join_copies(options_for(f.strategy, f.output));
    EXPECT_EQ(res.count, expected_) << f.name;
    EXPECT_EQ(res.strategy, f.strategy) << f.name << ": " << res.strategy_reason;
    if (f.strategy == JoinStrategy::Paper) {
      bool merged = false;
      for (const PhaseStat& p : res.phases) merged = merged || (p.name == "merge" && p.seconds > 0);
      EXPECT_TRUE(merged) << f.name << ": the paper flow ran in core; the limit no longer forces chunksets";
    }
  }
}

TEST_F(GpuFaults, CancelledAtEveryPhaseStopsCleanly) {
  for (const FlowCase& f : kFlows) {
    // The phases this flow reports, from a clean run.
    std::vector<std::string> phases;
    JoinOptions probe = options_for(f.strategy, f.output);
    probe.progress = [&](const std::string& p, double) {
      if (phases.empty() || phases.back() != p) phases.push_back(p);
    };
    join_copies(probe);
    ASSERT_GE(phases.size(), 2u) << f.name;
    for (const std::string& at : phases) {
      if (at == "done") continue;
      std::atomic<bool> cancel{false};
      JoinOptions o = options_for(f.strategy, f.output);
      o.cancel = &cancel;
      o.progress = [&](const std::string& p, double) {
        if (p == at) cancel = true;
      };
      EXPECT_THROW(join_copies(o), Cancelled) << f.name << ", cancelled at " << at;
    }
    expect_engine_still_joins(std::string("cancels of ") + f.name);
  }
}

TEST_F(GpuFaults, AFailedDeviceAllocationAnywhereIsAnErrorAndLeavesTheEngineWhole) {
  for (const FlowCase& f : kFlows) {
    // Count the flow's device allocations, and how many came before each phase's first progress report.
    std::vector<std::uint64_t> phase_starts;
    std::string phase;
    JoinOptions counted = options_for(f.strategy, f.output);
    counted.progress = [&](const std::string& p, double) {
      if (p != phase) phase_starts.push_back(alloc::fault::allocations_counted());
      phase = p;
    };
    alloc::fault::fail_nth_allocation(~0ull);
    join_copies(counted);
    const std::uint64_t allocations = alloc::fault::allocations_counted();
    alloc::fault::fail_nth_allocation(0);
    ASSERT_GT(allocations, 0u) << f.name;
    // Full: every allocation point, or 40 spread over them when there are more. Quick: 8 spread over
    // them, the last, and the first and the last of each phase's.
    for (const std::uint64_t n : fault_points(allocations, 40, 8, phase_starts)) {
      alloc::fault::fail_nth_allocation(n);
      try {
        join_copies(options_for(f.strategy, f.output));
        ADD_FAILURE() << f.name << ": allocation " << n << " of " << allocations << " failed, yet the join succeeded";
      } catch (const OutOfMemory& e) {
        EXPECT_NE(std::string(e.what()).find("injected"), std::string::npos) << e.what();
      }
      alloc::fault::fail_nth_allocation(0);
    }
    expect_engine_still_joins(std::string("allocation faults in ") + f.name);
  }
}

TEST(GpuBusy, MemoryTakenByAnotherHolderIsRefusedOrPlannedAround) {
  MGJOIN_REQUIRE_GPUS(1);
  // It takes all but 1 GiB of GPU 0 for a while: any test process beside it would fail for want of memory.
  if (side_by_side_gpu_memory_limit() != 0) GTEST_SKIP() << "MGJOIN_TEST_GPU_MEMORY_MIB is set: other test processes share the GPU";
  int device = 0;
  std::size_t free_bytes = 0, total = 0;
  ASSERT_EQ(cudaSetDevice(device), cudaSuccess);
  ASSERT_EQ(cudaMemGetInfo(&free_bytes, &total), cudaSuccess);
  // Other processes on the GPU (suites side by side under scripts/device-sanitize.sh) may leave too
  // little for this test's own holder.
  if (free_bytes < (4ull << 30)) GTEST_SKIP() << "less than 4 GiB of GPU " << device << " is free";
  // Another holder takes all but ~1 GiB of the GPU.
  alloc::DeviceStackAllocator other(device, free_bytes - (1ull << 30));
  EngineOptions too_much;
  too_much.gpu_ids = {device};
  too_much.gpu_memory_limit = 4ull << 30;
  try {
    Engine e(too_much);
    ADD_FAILURE() << "an engine took 4 GiB of a GPU with 1 GiB free";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("JoinOptions::gpu_memory_limit"), std::string::npos) << e.what();
  }
  // With the default limit the engine takes 80% of what is left and still joins right, here through the
  // paper flow out of core when the co-partitioned flow does not fit.
  EngineOptions left;
  left.gpu_ids = {device};
  Engine engine(left);
  GeneratedWorkload w = workload(0.01);  // 10^7 rows each: 320 MB (both tiers: a size the ~1 GiB left must plan around)
  const std::uint64_t expected = reference_count(w.r, w.s);
  JoinOptions o;
  o.output = OutputMode::Count;
  EXPECT_EQ(engine.join(w.r.view(), w.s.view(), o).count, expected);
}

TEST_F(GpuFaults, HostMemoryTooSmallForTheMergeBuffersIsRefusedBeforeTheSort) {
  // An engine of its own: the shared one keeps the merge buffers its earlier joins took, so it asks for
  // no more host memory and nothing would be refused (it failed so on 4 H200s once the engines were shared).
  Engine fresh(paper_options_);
  Relation r = copy_of(original_.r), s = copy_of(original_.s);
  const Relation r_before = copy_of(r);
  setenv("MGJOIN_HOST_MEMORY_LIMIT", "1M", 1);  // no room beside what the process holds
  try {
    fresh.join(r.view(), s.view(), options_for(JoinStrategy::Paper, OutputMode::Count));
    ADD_FAILURE() << "the paper flow's merge buffers were taken under a 1 MiB cap";
  } catch (const OutOfMemory& e) {
    EXPECT_NE(std::string(e.what()).find("the merge phase's buffers"), std::string::npos) << e.what();
  }
  unsetenv("MGJOIN_HOST_MEMORY_LIMIT");
  EXPECT_TRUE(std::memcmp(r.key.data(), r_before.key.data(), r.key.bytes()) == 0) << "refused, but after sorting";
  expect_engine_still_joins("a host memory refusal");
}

}  // namespace
}  // namespace mgjoin::test
