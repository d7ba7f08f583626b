#pragma once
// The GPUs' part of late materialization's gathers (gather_plan.hpp places the columns). A GPU takes its
// columns whole, one after the other: the column in over PCIe, out[i] = column[map[i]] (zero where
// map[i] < 0) at HBM speed, the gathered rows out into pinned host memory; the next column comes in
// while the last goes out (two buffers each way, three streams).
#include "alloc/host_pin.hpp"
#include "alloc/stack_allocator.hpp"

#include <mgjoin/types.hpp>

#include <cstdint>
#include <memory>
#include <span>
#include <vector>

namespace mgjoin::table {

/// One column for a GPU: out[i] = source[maps[map][i]] for the gather's rows, zero where the map is
/// negative.
struct GpuGatherJob {
  ColumnView source;
  int map = 0;                ///< 0 or 1: which of the gather's maps
  int gpu = 0;                ///< an index into the gather's devices
  HostColumn* out = nullptr;  ///< the rows' values, of the source's type (pinned, or pinned here)
};

/// Gathers in flight on the GPUs. start() returns once the work is queued, so that the host can gather
/// its own columns meanwhile; finish() waits for it. Destroying it waits as well (an error unwinding), so
/// the GPUs no longer touch host memory that is about to be freed or unpinned.
class GpuGathers {
 public:
  /// `stacks[i]` is the device memory of `devices[i]`.
  GpuGathers(std::span<const int> devices, std::span<alloc::DeviceStackAllocator* const> stacks);
  ~GpuGathers();
  GpuGathers(const GpuGathers&) = delete;
  GpuGathers& operator=(const GpuGathers&) = delete;

  /// Queues `jobs` (with `rows` rows of each map, int64 row ids) on their GPUs: pins what is pageable,
  /// takes each GPU's buffers from its stack. @throw OutOfMemory when a GPU's stack has no room (the plan
  /// checked it: gather_device_bytes).
  void start(std::span<const GpuGatherJob> jobs, const std::int64_t* const maps[2], std::int64_t rows);
  /// Waits for every queued gather. @throw CudaError for a failed copy or kernel.
  void finish();

 private:
  struct Gpu;
  std::vector<alloc::HostPin> pins_;  // destroyed after gpus_, whose destructor waits for their copies
  std::vector<std::unique_ptr<Gpu>> gpus_;
};

}  // namespace mgjoin::table
