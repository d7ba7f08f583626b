// Where a join without an Engine runs: the CPU for gpus = 0 and for small joins with the GPUs left to
// choose (no CUDA call made), the GPUs otherwise (join.hpp's choose_executor).
#include "engine/src/plan/executor_choice.hpp"

#include <mgjoin/error.hpp>
#include <mgjoin/join.hpp>

#include <gtest/gtest.h>

#include <cstdlib>
#include <numeric>
#include <vector>

namespace mgjoin::detail {
namespace {

constexpr std::int64_t kBound = 1000;

JoinOptions with_gpus(int gpus, std::vector<int> ids = {}, JoinStrategy strategy = JoinStrategy::Auto) {
  JoinOptions o;
  o.gpus = gpus;
  o.gpu_ids = std::move(ids);
  o.strategy = strategy;
  return o;
}

TEST(ExecutorChoice, NoGpusAskedForIsTheCpu) {
  const ExecutorChoice c = executor_for(with_gpus(0), 1'000'000, 1'000'000, kBound);
  EXPECT_EQ(c.executor, Executor::Cpu);
  EXPECT_EQ(c.reason, "CPU path (no GPUs asked for)");
}

TEST(ExecutorChoice, ASmallJoinWithTheGpusLeftToChooseRunsOnTheCpu) {
  const ExecutorChoice c = executor_for(with_gpus(-1), 600, 400, kBound);  // 1000 rows in all: at the bound
  EXPECT_EQ(c.executor, Executor::Cpu);
  EXPECT_NE(c.reason.find("1000 rows join on the CPU"), std::string::npos) << c.reason;
  EXPECT_NE(c.reason.find("MGJOIN_CPU_ROUTE_ROWS"), std::string::npos) << c.reason;
  EXPECT_EQ(executor_for(with_gpus(-1), 0, 0, kBound).executor, Executor::Cpu);  // empty relations too
}

TEST(ExecutorChoice, AJoinOverTheBoundKeepsTheGpus) {
  EXPECT_EQ(executor_for(with_gpus(-1), 600, 401, kBound).executor, Executor::Gpus);
  EXPECT_EQ(executor_for(with_gpus(-1), 1, 1, 0).executor, Executor::Gpus);  // 0: never route
}

TEST(ExecutorChoice, GpusAStrategyOrAMemoryLimitNamedKeepTheGpusHoweverSmall) {
  EXPECT_EQ(executor_for(with_gpus(1), 1, 1, kBound).executor, Executor::Gpus);
  EXPECT_EQ(executor_for(with_gpus(0, {0}), 1, 1, kBound).executor, Executor::Gpus);  // ids override gpus = 0
  EXPECT_EQ(executor_for(with_gpus(-1, {}, JoinStrategy::Paper), 1, 1, kBound).executor, Executor::Gpus);
  EXPECT_EQ(executor_for(with_gpus(-1, {}, JoinStrategy::CoPartitioned), 1, 1, kBound).executor, Executor::Gpus);
  JoinOptions limited = with_gpus(-1);
  limited.gpu_memory_limit = 1 << 30;  // a GPU memory limit asks for GPUs (and gets checked)
  EXPECT_EQ(executor_for(limited, 1, 1, kBound).executor, Executor::Gpus);
}

TEST(ExecutorChoice, TheBoundComesFromTheEnvironment) {
  EXPECT_EQ(cpu_route_rows(std::nullopt), kDefaultCpuRouteRows);
  EXPECT_EQ(cpu_route_rows(""), kDefaultCpuRouteRows);
  EXPECT_EQ(cpu_route_rows("0"), 0);
  EXPECT_EQ(cpu_route_rows("5000000"), 5'000'000);
  for (const char* bad : {"-1", "12x", "lots", " 5"}) {
    try {
      cpu_route_rows(bad);
      ADD_FAILURE() << bad << " was taken";
    } catch (const InputError& e) {
      EXPECT_NE(std::string(e.what()).find("MGJOIN_CPU_ROUTE_ROWS '" + std::string(bad) + "'"), std::string::npos) << e.what();
    }
  }
}

/// The public function reads the variable, and join() reports the route it took.
TEST(ExecutorChoice, JoinTakesTheRouteAndSaysWhy) {
  std::vector<std::uint64_t> r(300), s(200);
  std::iota(r.begin(), r.end(), 0);
  std::iota(s.begin(), s.end(), 100);  // keys 100..299 match
  const RelationView rv{{r.data(), static_cast<std::int64_t>(r.size()), DType::UInt64}, std::nullopt};
  const RelationView sv{{s.data(), static_cast<std::int64_t>(s.size()), DType::UInt64}, std::nullopt};
  JoinOptions o;
  o.output = OutputMode::Count;
  ::setenv("MGJOIN_CPU_ROUTE_ROWS", "500", 1);
  const JoinResult routed = join(rv, sv, o);
  EXPECT_EQ(routed.count, 200u);
  EXPECT_NE(routed.strategy_reason.find("500 rows join on the CPU"), std::string::npos) << routed.strategy_reason;
  EXPECT_EQ(choose_executor(o, 300, 201).executor, Executor::Gpus);
  ::setenv("MGJOIN_CPU_ROUTE_ROWS", "many", 1);
  EXPECT_THROW(choose_executor(o, 1, 1), InputError);
  ::unsetenv("MGJOIN_CPU_ROUTE_ROWS");
  EXPECT_EQ(choose_executor(o, 300, 200).executor, Executor::Cpu);
}

}  // namespace
}  // namespace mgjoin::detail
