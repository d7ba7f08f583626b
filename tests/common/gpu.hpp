#pragma once
// Helpers for GPU tests: they run for real on the GPU machine and skip themselves elsewhere.
#include <gtest/gtest.h>
#include <cuda_runtime_api.h>

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

}  // namespace mgjoin::test

/// Skips the current test unless at least `n` GPUs are present.
#define MGJOIN_REQUIRE_GPUS(n)                                                              \
  do {                                                                                      \
    const int mgjoin_have_gpus_ = ::mgjoin::test::gpu_count();                              \
    if (mgjoin_have_gpus_ < (n))                                                            \
      GTEST_SKIP() << "needs " << (n) << " GPU(s), found " << mgjoin_have_gpus_;            \
  } while (0)
