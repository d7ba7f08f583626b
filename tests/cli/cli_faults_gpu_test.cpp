// On the GPU machine: GPUs that are missing or short of memory, and Ctrl-C during a GPU join, each one
// line with a non-zero exit and no output files.
#include "cli_test_util.hpp"
#include "common/gpu.hpp"

#include <gtest/gtest.h>

#include <filesystem>
#include <string>

namespace mgjoin::test {
namespace {

class CliGpuFaults : public CliTest {
 protected:
  void SetUp() override {
    MGJOIN_REQUIRE_GPUS(1);
    CliTest::SetUp();
    ASSERT_EQ(mgjoin("generate --workload B --scale 0.002 --out-dir b").exit_code, 0);  // 2M rows each
  }

  void expect_one_error(const std::string& args, const std::string& needle, const std::string& env = "") {
    const CliResult r = mgjoin(args, env.empty() ? "" : "env NCCL_NVLS_ENABLE=0 " + env + " ");
    EXPECT_NE(r.exit_code, 0) << env << " " << args;
    const auto lines = r.err_lines();
    ASSERT_FALSE(lines.empty()) << args;
    EXPECT_TRUE(lines.back().starts_with("mgjoin: ")) << r.err;
    EXPECT_NE(lines.back().find(needle), std::string::npos) << "'" << needle << "' not in: " << r.err;
    EXPECT_TRUE(entries("out").empty()) << env << " " << args << " left files in out/";
    std::filesystem::remove_all(dir() / "out");  // a failure here must not fail the next case
  }
};

TEST_F(CliGpuFaults, MissingGpusAreNamed) {
  const int n = gpu_count();
  expect_one_error("join --r-dir b --s-dir b --gpus " + std::to_string(n + 1) + " --out-dir out",
                   "--gpus " + std::to_string(n + 1) + ": only " + std::to_string(n) + " GPUs present");
  expect_one_error("join --r-dir b --s-dir b --gpu-ids " + std::to_string(n) + " --out-dir out",
                   "--gpu-ids: GPU " + std::to_string(n) + " does not exist");
}

TEST_F(CliGpuFaults, MoreMemoryThanTheGpuHasIsNamed) {
  expect_one_error("join --r-dir b --s-dir b --gpus 1 --gpu-memory-limit 64T --out-dir out",
                   "--gpu-memory-limit: 70368744177664 bytes per GPU is more than");
}

TEST_F(CliGpuFaults, CtrlCDuringAGpuJoinStopsItCleanly) {
  // The paper flow out of core (64 MiB: three chunksets of the 2M-row relations, so the merge phase
  // runs) and the co-partitioned flow.
  for (const char* phase : {"sort", "merge R", "merge S", "join", "materialize"})
    expect_one_error("join --r-dir b --s-dir b --gpus 1 --strategy paper --gpu-memory-limit 64M --out-dir out",
                     "interrupted: stopped cleanly", std::string("'MGJOIN_TEST_SIGINT_AT=") + phase + "'");
  expect_one_error("join --r-dir b --s-dir b --gpus 1 --strategy copart --out-dir out", "interrupted: stopped cleanly",
                   "MGJOIN_TEST_SIGINT_AT=co-partitioned\\ join");
}

}  // namespace
}  // namespace mgjoin::test
