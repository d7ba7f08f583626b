#pragma once
// The PCIe rate a benchmark's floor should use: measured in the same run, since the lent machines
// differ (DEVICE.md lists ~205 GB/s host-to-device with 4 GPUs; some hosts give ~170).
#include "alloc/stack_allocator.hpp"
#include "core/device.hpp"

#include <mgjoin/error.hpp>

#include <cuda_runtime_api.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <span>
#include <thread>
#include <vector>

namespace mgjoin::bench {

/// Seconds for all GPUs of `devices` to copy `bytes_per_gpu` between `host` (pinned, at least
/// devices.size() × bytes_per_gpu bytes) and their stack at once, in direction `kind` (host-to-device
/// or device-to-host): the slowest GPU, median of 3 after a warm-up. GPU i copies its own slice i of
/// `host`, as the sort phase does.
inline double measured_copy_seconds(const std::vector<int>& devices, std::byte* host, std::uint64_t bytes_per_gpu,
                                    std::span<alloc::DeviceStackAllocator* const> memory, cudaMemcpyKind kind) {
  std::vector<double> times;
  for (int rep = 0; rep < 4; ++rep) {
    std::vector<std::thread> pool;
    std::vector<double> seconds(devices.size());
    for (std::size_t g = 0; g < devices.size(); ++g)
      pool.emplace_back([&, g] {
        gpu::DeviceGuard guard(devices[g]);
        alloc::StackBuffer<std::byte, alloc::DeviceStackAllocator> buffer(*memory[g], bytes_per_gpu);
        gpu::Stream stream(devices[g]);
        gpu::Event begin(devices[g]), end(devices[g]);
        std::byte* slice = host + g * bytes_per_gpu;
        void* dst = kind == cudaMemcpyHostToDevice ? static_cast<void*>(buffer.data()) : static_cast<void*>(slice);
        const void* src = kind == cudaMemcpyHostToDevice ? static_cast<const void*>(slice) : buffer.data();
        begin.record(stream);
        MGJOIN_CUDA_TRY(cudaMemcpyAsync(dst, src, bytes_per_gpu, kind, stream));
        end.record(stream);
        end.synchronize();
        seconds[g] = end.elapsed_ms_since(begin) / 1e3;
      });
    for (auto& t : pool) t.join();
    if (rep > 0) times.push_back(*std::max_element(seconds.begin(), seconds.end()));
  }
  std::sort(times.begin(), times.end());
  return times[times.size() / 2];
}

}  // namespace mgjoin::bench
