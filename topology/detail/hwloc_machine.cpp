#include "topology/detail/hwloc_machine.hpp"

#include "topology/log.hpp"

namespace mgjoin::topology::detail {

HwlocMachine::HwlocMachine() {
  if (hwloc_topology_init(&topo_) != 0) {
    topo_ = nullptr;
    return;
  }
  // Keep the PCI devices that matter (GPUs) and the bridges above them: the PCIe tree is how we
  // learn which GPUs share a switch.
  hwloc_topology_set_io_types_filter(topo_, HWLOC_TYPE_FILTER_KEEP_IMPORTANT);
  loaded_ = hwloc_topology_load(topo_) == 0;
  if (!loaded_) log_warning("hwloc could not load this machine's topology: NUMA placement unknown");
}

HwlocMachine::~HwlocMachine() {
  if (topo_) hwloc_topology_destroy(topo_);
}

const HwlocMachine& hwloc_machine() {
  static const HwlocMachine machine;
  return machine;
}

}  // namespace mgjoin::topology::detail
