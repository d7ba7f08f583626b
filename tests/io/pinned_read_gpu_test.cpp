// On a machine with a CUDA device, columns requested pinned are really page-locked.
#include <mgjoin/io.hpp>

#include "common/gpu.hpp"
#include "io_test_util.hpp"

#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <cstring>
#include <numeric>
#include <vector>

namespace mgjoin::test {
namespace {

TEST_F(TempDirTest, PinnedReadIsPageLockedAndCopiesToTheGpu) {
  MGJOIN_REQUIRE_GPUS(1);
  std::vector<std::uint64_t> values(9'000'000);  // 72 MB: the parallel read path
  std::iota(values.begin(), values.end(), 0);
  write_column(dir() / "k.npy", ColumnView{values.data(), static_cast<std::int64_t>(values.size()), DType::UInt64});
  HostColumn c = read_column(dir() / "k.npy", std::nullopt, MemoryKind::Pinned);
  ASSERT_EQ(c.memory_kind(), MemoryKind::Pinned);
  cudaPointerAttributes attr{};
  ASSERT_EQ(cudaPointerGetAttributes(&attr, c.data()), cudaSuccess);
  EXPECT_EQ(attr.type, cudaMemoryTypeHost);
  void* d = nullptr;
  ASSERT_EQ(cudaMalloc(&d, c.bytes()), cudaSuccess);
  std::vector<std::uint64_t> back(values.size());
  EXPECT_EQ(cudaMemcpy(d, c.data(), c.bytes(), cudaMemcpyHostToDevice), cudaSuccess);
  EXPECT_EQ(cudaMemcpy(back.data(), d, c.bytes(), cudaMemcpyDeviceToHost), cudaSuccess);
  cudaFree(d);
  EXPECT_EQ(back, values);
}

}  // namespace
}  // namespace mgjoin::test
