#pragma once
// Host threads and pinned buffers that serve a GPU go on that GPU's NUMA node: a copy from memory
// on the other socket crosses the CPU-CPU link (staging, paper Section 2). On a one-node machine
// every call here is a no-op, and says so at verbose level. Binding is an optimization: a failure
// is a warning, never an error.
#include "topology/topology.hpp"

#include <hwloc.h>

#include <cstddef>

namespace mgjoin::topology {

/// Runs the calling thread on the CPUs near `gpu` (Gpu::cpuset).
void bind_thread_to_gpu_numa(const Topology& t, int gpu);

/// Places the pages of [p, p + bytes) on `gpu`'s NUMA node, moving those already touched.
void bind_memory_to_gpu_numa(const Topology& t, int gpu, void* p, std::size_t bytes);

/// While alive, memory the calling thread allocates and touches comes from `gpu`'s NUMA node:
/// wrap cudaHostAlloc (or a pinned stack allocator's construction) in it, since pinning touches
/// every page at once. Restores the thread's previous memory policy on destruction.
class ScopedGpuNumaMemory {
 public:
  ScopedGpuNumaMemory(const Topology& t, int gpu);
  ~ScopedGpuNumaMemory();
  ScopedGpuNumaMemory(const ScopedGpuNumaMemory&) = delete;
  ScopedGpuNumaMemory& operator=(const ScopedGpuNumaMemory&) = delete;

 private:
  hwloc_bitmap_t previous_ = nullptr;  ///< nodeset in force before; null when nothing was bound
  hwloc_membind_policy_t previous_policy_ = HWLOC_MEMBIND_DEFAULT;
};

}  // namespace mgjoin::topology
