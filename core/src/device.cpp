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
  // cudaSetDevice makes the device's primary context (CUDA 12 and later): a thread per device, so that
  // the caller's current device stays as it was.
  std::vector<cudaError_t> errors(static_cast<std::size_t>(count), cudaSuccess);
  {
    std::vector<std::jthread> threads;
    for (int i = 0; i < count; ++i)
      threads.emplace_back([&errors, devices, i] { errors[static_cast<std::size_t>(i)] = cudaSetDevice(devices[i]); });
  }
  for (const cudaError_t e : errors) MGJOIN_CUDA_TRY(e);
}

}  // namespace mgjoin::gpu
