// The driver's start and the contexts (core/device.hpp).
#include "core/device.hpp"

#include "core/timing.hpp"

#include <atomic>
#include <mutex>
#include <thread>
#include <vector>

namespace mgjoin::gpu {
namespace {
std::once_flag driver_started;
std::atomic<double> driver_seconds{0};
}  // namespace

int device_count() {
  std::call_once(driver_started, [] {
    const auto start = timing::Clock::now();
    int n = 0;
    cudaGetDeviceCount(&n);  // the error, if any, is read again below
    driver_seconds = timing::seconds_since(start);
  });
  int n = 0;
  if (cudaGetDeviceCount(&n) != cudaSuccess) {
    cudaGetLastError();
    return 0;
  }
  return n;
}

double driver_start_seconds() { return driver_seconds; }

void start_contexts(const int* devices, int count) {
  if (count <= 1) {
    if (count == 1) {
      const DeviceGuard guard(devices[0]);
      MGJOIN_CUDA_TRY(cudaFree(nullptr));
    }
    return;
  }
  std::vector<cudaError_t> errors(static_cast<std::size_t>(count), cudaSuccess);
  {
    std::vector<std::jthread> threads;
    for (int i = 0; i < count; ++i)
      threads.emplace_back([&errors, devices, i] {
        cudaError_t e = cudaSetDevice(devices[i]);  // a new thread's current device: no guard needed
        if (e == cudaSuccess) e = cudaFree(nullptr);  // makes the primary context where cudaSetDevice did not
        errors[static_cast<std::size_t>(i)] = e;
      });
  }
  for (const cudaError_t e : errors) MGJOIN_CUDA_TRY(e);
}

}  // namespace mgjoin::gpu
