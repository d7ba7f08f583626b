#pragma once
// NVLink wiring from NVML, loaded at run time: there is no nvml.h at build time and a machine
// without the NVIDIA driver must still run mgjoin.
#include <string>
#include <vector>

namespace mgjoin::topology::detail {

struct NvLinkWiring {
  bool available = false;         ///< NVML loaded and answered for every GPU
  std::vector<int> direct;        ///< n*n: active NVLink bricks from GPU i that end on GPU j
  std::vector<int> switch_links;  ///< n: active bricks of GPU i that end on an NVSwitch
};

/// Queries NVLink state for the GPUs with these (normalized) PCI bus ids, in that order.
/// Returns available = false when libnvidia-ml.so.1 is missing or any call fails.
NvLinkWiring query_nvlink_wiring(const std::vector<std::string>& pci_bus_ids);

}  // namespace mgjoin::topology::detail
