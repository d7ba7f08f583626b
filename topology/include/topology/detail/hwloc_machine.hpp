#pragma once
// One loaded hwloc topology of this machine (packages, NUMA nodes, PCI devices and the bridges
// leading to them), shared by the probe and the NUMA binding helpers.
#include <hwloc.h>

namespace mgjoin::topology::detail {

class HwlocMachine {
 public:
  HwlocMachine();
  ~HwlocMachine();
  HwlocMachine(const HwlocMachine&) = delete;
  HwlocMachine& operator=(const HwlocMachine&) = delete;

  hwloc_topology_t get() const { return topo_; }
  bool loaded() const { return loaded_; }

 private:
  hwloc_topology_t topo_ = nullptr;
  bool loaded_ = false;
};

/// Loaded once per process (hwloc's read-only queries and binding calls are thread-safe).
const HwlocMachine& hwloc_machine();

}  // namespace mgjoin::topology::detail
