// On the GPU machine: `mgjoin join` on GPUs gives the CPU path's result, through the binary.
#include <mgjoin/io.hpp>

#include "cli_test_util.hpp"
#include "common/gpu.hpp"
#include "common/tier.hpp"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <array>
#include <cstring>
#include <vector>

namespace mgjoin::test {
namespace {

/// Output rows as (key, r_payload, s_payload) triples, sorted (row order is unspecified).
std::vector<std::array<std::uint64_t, 3>> rows(const std::string& dir) {
  const HostColumn k = read_column(dir + "/key.npy"), r = read_column(dir + "/r.payload.npy"),
                   s = read_column(dir + "/s.payload.npy");
  std::vector<std::array<std::uint64_t, 3>> out(static_cast<std::size_t>(k.size()));
  for (std::size_t i = 0; i < out.size(); ++i)
    out[i] = {k.as<std::uint64_t>()[i], r.as<std::uint64_t>()[i], s.as<std::uint64_t>()[i]};
  std::sort(out.begin(), out.end());
  return out;
}

TEST_F(CliTest, GpuJoinMatchesCpuJoin) {
  MGJOIN_REQUIRE_GPUS(1);
  // 10^6 rows a side; sanitize: 10^5, still joined on the GPUs asked for (the CPU route takes only joins
  // with the GPUs left to choose), with memcheck's cost per byte a tenth.
  const std::string scale = per_tier<std::string>("0.001", "0.001", "0.0001");
  ASSERT_EQ(mgjoin("generate --workload B --scale " + scale + " --zipf 0.9 --selectivity 0.8 --seed 3 --out-dir gen").exit_code,
            0);
  const CliResult cpu = mgjoin("join --r-dir gen --s-dir gen --gpus 0 --out-dir cpu");
  ASSERT_EQ(cpu.exit_code, 0) << cpu.err;
  for (const std::string gpus : {"-1", "1", "2"}) {
    if (std::stoi(gpus) > gpu_count()) continue;
    // 1 GiB a GPU holds this join in core many times over; without a limit each GPU's engine takes 80% of
    // it, which compute-sanitizer's memcheck took minutes to set up on four H200s.
    const CliResult gpu = mgjoin("join --r-dir gen --s-dir gen --gpus " + gpus + " --gpu-memory-limit 1G --out-dir gpu" +
                                 gpus + " --json");
    ASSERT_EQ(gpu.exit_code, 0) << gpu.err;
    EXPECT_NE(nlohmann::json::parse(gpu.out).at("executor").get<std::string>().find("GPU"), std::string::npos);
    EXPECT_EQ(rows(path("gpu" + gpus)), rows(path("cpu"))) << "--gpus " << gpus;
  }
}

}  // namespace
}  // namespace mgjoin::test
