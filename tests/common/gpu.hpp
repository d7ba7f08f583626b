#pragma once
// Helpers for GPU tests: they run for real on the GPU machine and skip themselves elsewhere.
#include <gtest/gtest.h>
#include <cuda_runtime_api.h>

#include <cstdlib>

namespace mgjoin::test {

/// Number of usable GPUs; 0 where there is no driver or no device (as in CI).
inline int gpu_count() {
  int n = 0;
  if (cudaGetDeviceCount(&n) != cudaSuccess) {
    cudaGetLastError();  // clear the non-sticky "no device" error
    return 0;
  }
  return n;
}

/// Every test binary that includes this header sets NCCL_NVLS_ENABLE=0 before its first test: NVLink
/// multicast can take a shared host's GPUs out of service (DEVICE.md). An inline variable: registered
/// once per binary, however many files include it.
class NoNvlsEnvironment : public ::testing::Environment {
 public:
  void SetUp() override { setenv("NCCL_NVLS_ENABLE", "0", 1); }
};
[[maybe_unused]] inline ::testing::Environment* const no_nvls_environment =
    ::testing::AddGlobalTestEnvironment(new NoNvlsEnvironment);

}  // namespace mgjoin::test

/// Skips the current test unless at least `n` GPUs are present.
#define MGJOIN_REQUIRE_GPUS(n)                                                              \
  do {                                                                                      \
    const int mgjoin_have_gpus_ = ::mgjoin::test::gpu_count();                              \
    if (mgjoin_have_gpus_ < (n))                                                            \
      GTEST_SKIP() << "needs " << (n) << " GPU(s), found " << mgjoin_have_gpus_;            \
  } while (0)
