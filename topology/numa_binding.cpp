#include "topology/numa_binding.hpp"

#include "topology/detail/hwloc_machine.hpp"
#include "topology/log.hpp"

#include <memory>
#include <string>

namespace mgjoin::topology {

namespace {

struct BitmapDeleter {
  void operator()(hwloc_bitmap_s* b) const { hwloc_bitmap_free(b); }
};
using Bitmap = std::unique_ptr<hwloc_bitmap_s, BitmapDeleter>;

// The GPU to bind for, or nullptr when binding would change nothing (one node, unknown placement).
const Gpu* gpu_to_bind(const Topology& t, int gpu, const char* what) {
  const std::string tag = std::string(what) + " for GPU " + std::to_string(gpu);
  if (t.numa_nodes <= 1) {
    log_verbose(tag + ": one NUMA node, nothing to bind (no-op)");
    return nullptr;
  }
  if (gpu < 0 || gpu >= t.gpu_count() || !detail::hwloc_machine().loaded()) {
    log_verbose(tag + ": GPU placement unknown, not binding");
    return nullptr;
  }
  const Gpu& g = t.gpus[static_cast<std::size_t>(gpu)];
  if (g.numa_node < 0) {
    log_verbose(tag + ": GPU's NUMA node unknown, not binding");
    return nullptr;
  }
  return &g;
}

Bitmap node_set(int numa_node) {
  Bitmap b(hwloc_bitmap_alloc());
  hwloc_bitmap_only(b.get(), static_cast<unsigned>(numa_node));
  return b;
}

}  // namespace

void bind_thread_to_gpu_numa(const Topology& t, int gpu) {
  const Gpu* g = gpu_to_bind(t, gpu, "thread binding");
  if (!g || g->cpuset.empty()) return;
  Bitmap cpus(hwloc_bitmap_alloc());
  if (hwloc_bitmap_list_sscanf(cpus.get(), g->cpuset.c_str()) != 0 ||
      hwloc_set_cpubind(detail::hwloc_machine().get(), cpus.get(), HWLOC_CPUBIND_THREAD) != 0) {
    log_warning("could not bind a thread to CPUs " + g->cpuset + " near GPU " + std::to_string(gpu));
    return;
  }
  log_verbose("thread bound to CPUs " + g->cpuset + " (NUMA node " + std::to_string(g->numa_node) + ")");
}

void bind_memory_to_gpu_numa(const Topology& t, int gpu, void* p, std::size_t bytes) {
  const Gpu* g = gpu_to_bind(t, gpu, "memory binding");
  if (!g || bytes == 0) return;
  const Bitmap nodes = node_set(g->numa_node);
  if (hwloc_set_area_membind(detail::hwloc_machine().get(), p, bytes, nodes.get(), HWLOC_MEMBIND_BIND,
                             HWLOC_MEMBIND_BYNODESET | HWLOC_MEMBIND_MIGRATE) != 0)
    log_warning("could not bind " + std::to_string(bytes) + " bytes to NUMA node " + std::to_string(g->numa_node));
}

ScopedGpuNumaMemory::ScopedGpuNumaMemory(const Topology& t, int gpu) {
  const Gpu* g = gpu_to_bind(t, gpu, "memory policy");
  if (!g) return;
  hwloc_topology_t topo = detail::hwloc_machine().get();
  Bitmap previous(hwloc_bitmap_alloc());
  if (hwloc_get_membind(topo, previous.get(), &previous_policy_, HWLOC_MEMBIND_THREAD | HWLOC_MEMBIND_BYNODESET) != 0)
    return;
  const Bitmap nodes = node_set(g->numa_node);
  if (hwloc_set_membind(topo, nodes.get(), HWLOC_MEMBIND_BIND, HWLOC_MEMBIND_THREAD | HWLOC_MEMBIND_BYNODESET) != 0) {
    log_warning("could not bind new memory to NUMA node " + std::to_string(g->numa_node));
    return;
  }
  previous_ = previous.release();
}

ScopedGpuNumaMemory::~ScopedGpuNumaMemory() {
  if (!previous_) return;
  hwloc_set_membind(detail::hwloc_machine().get(), previous_, previous_policy_,
                    HWLOC_MEMBIND_THREAD | HWLOC_MEMBIND_BYNODESET);
  hwloc_bitmap_free(previous_);
}

}  // namespace mgjoin::topology
