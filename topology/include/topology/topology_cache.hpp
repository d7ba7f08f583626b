#pragma once
// This machine's topology, probed once and kept beside the tuning file: probing loads hwloc's PCI tree
// and NVML (0.1-0.4 s measured on a 2-GPU machine, more on larger ones), which every engine would
// otherwise pay at start-up. The cache is keyed by what a probe reads cheaply and what would change
// its answer: the GPUs (name, PCI bus id, memory, in CUDA order), the driver, the CPUs online and the
// NUMA nodes. A file made on other hardware, a corrupt one or one of another version is probed over;
// one that cannot be written is only skipped. MGJOIN_TOPOLOGY_CACHE=off probes every time.
#include "topology/topology.hpp"

#include <functional>
#include <string>
#include <vector>

namespace mgjoin::topology {

/// What identifies this machine's hardware for the cache.
struct HardwareKey {
  std::vector<std::string> gpus;  ///< "name|pci bus id|memory bytes" per GPU, in CUDA order
  int driver_version = 0;
  std::string cpus_online;        ///< /sys/devices/system/cpu/online, e.g. "0-63"
  std::string numa_nodes;         ///< /sys/devices/system/node/online, e.g. "0-1"
  friend bool operator==(const HardwareKey&, const HardwareKey&) = default;
};

/// This machine's key (CUDA device attributes and two /sys files; no hwloc, no NVML).
HardwareKey read_hardware_key();

/// $XDG_CACHE_HOME/mgjoin/topology.json, else ~/.cache/mgjoin/topology.json (the tuning file's folder).
std::string default_topology_cache_path();

/// The topology recorded at `path` for hardware `here`; else `probe()`'s, written to `path` for the next
/// process (atomically: a temporary file renamed). Never throws for the cache file itself.
Topology cached_topology(const std::string& path, const HardwareKey& here, const std::function<Topology()>& probe);

/// This machine's topology through the cache at the default path (probe_topology() on a miss, or
/// always when MGJOIN_TOPOLOGY_CACHE=off).
Topology cached_topology();

/// Probes this machine and records the result at the default path (`mgjoin topo`: a fresh look that
/// also refreshes the cache).
Topology probe_and_cache_topology();

}  // namespace mgjoin::topology
