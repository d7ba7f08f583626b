// probe_topology(): this machine from hwloc (sockets, NUMA, PCIe tree), CUDA (devices, P2P) and
// NVML (NVLink wiring). Each source may be missing; the probe then knows less, and says so at
// verbose level, but never fails.
#include "topology/detail/hwloc_machine.hpp"
#include "topology/detail/nvml_links.hpp"
#include "topology/log.hpp"
#include "topology/topology.hpp"

#include "core/device.hpp"

#include <mgjoin/error.hpp>

#include <cuda_runtime_api.h>

#include <cstdlib>
#include <map>

namespace mgjoin::topology {

namespace {

// hwloc reports the raw PCIe rate (GT/s x lanes x encoding); copies reach ~88% of it (TLP headers).
constexpr double kPcieEfficiency = 0.88;
// hwloc cannot measure the CPU-CPU interconnect; a conservative UPI / X-Bus figure.
constexpr double kDefaultInterSocketGbps = 64;


// NVLink rate per brick and direction: NVLink 2-4 (V100, A100, H100/H200) 25 GB/s, NVLink 5 50 GB/s.
double nvlink_gbps_per_link(int compute_major) { return compute_major >= 10 ? 50.0 : 25.0; }

// Host link when hwloc cannot read it (containers, VMs): PCIe generation by GPU architecture.
double fallback_host_link_gbps(int compute_major) {
  if (compute_major >= 9) return 64 * kPcieEfficiency;  // PCIe 5 x16
  if (compute_major >= 8) return 32 * kPcieEfficiency;  // PCIe 4 x16
  return 16 * kPcieEfficiency;                          // PCIe 3 x16
}

std::string bitmap_list(hwloc_const_bitmap_t set) {
  char* s = nullptr;
  if (hwloc_bitmap_list_asprintf(&s, set) < 0 || s == nullptr) return "";
  std::string out(s);
  std::free(s);
  return out;
}

bool is_host_bridge(hwloc_obj_t o) {
  return o && o->type == HWLOC_OBJ_BRIDGE && o->attr->bridge.upstream_type == HWLOC_OBJ_BRIDGE_HOST;
}

// The PCI bridge right below the host bridge above `pci` (a root port): GPUs below the same one
// share its link to the CPU. nullptr when the GPU hangs off the host bridge directly.
hwloc_obj_t uplink_bridge(hwloc_obj_t pci) {
  hwloc_obj_t top = nullptr;
  for (hwloc_obj_t o = pci->parent; o && o->type == HWLOC_OBJ_BRIDGE && !is_host_bridge(o); o = o->parent) top = o;
  return top;
}

struct GpuPlace {
  int numa_node = -1;
  int package = -1;
  std::string cpuset;
  double host_link_gbps = 0;
  hwloc_obj_t uplink = nullptr;
  double uplink_gbps = 0;
};

GpuPlace place_of(const std::string& bus_id) {
  GpuPlace p;
  const auto& m = detail::hwloc_machine();
  if (!m.loaded()) return p;
  hwloc_obj_t pci = hwloc_get_pcidev_by_busidstring(m.get(), bus_id.c_str());
  hwloc_obj_t near = pci ? hwloc_get_non_io_ancestor_obj(m.get(), pci) : hwloc_get_root_obj(m.get());
  if (!pci) log_verbose("hwloc does not see GPU " + bus_id + " on the PCI bus: placing it on the whole machine");
  p.cpuset = bitmap_list(near->cpuset);
  if (near->nodeset && !hwloc_bitmap_iszero(near->nodeset) && hwloc_bitmap_weight(near->nodeset) == 1)
    p.numa_node = hwloc_bitmap_first(near->nodeset);
  if (hwloc_obj_t pkg = hwloc_get_ancestor_obj_by_type(m.get(), HWLOC_OBJ_PACKAGE, near))
    p.package = static_cast<int>(pkg->os_index);
  if (pci) {
    p.host_link_gbps = pci->attr->pcidev.linkspeed * kPcieEfficiency;
    p.uplink = uplink_bridge(pci);
    if (p.uplink) p.uplink_gbps = p.uplink->attr->bridge.upstream.pci.linkspeed * kPcieEfficiency;
  }
  return p;
}

Gpu describe_gpu(int device, const GpuPlace& place, int packages) {
  cudaDeviceProp prop{};
  MGJOIN_CUDA_TRY(cudaGetDeviceProperties(&prop, device));
  char bus[32] = {};
  MGJOIN_CUDA_TRY(cudaDeviceGetPCIBusId(bus, sizeof bus, device));
  Gpu g;
  g.cuda_id = device;
  g.name = prop.name;
  g.pci_bus_id = normalize_pci_bus_id(bus);
  g.memory_bytes = prop.totalGlobalMem;
  g.numa_node = place.numa_node;
  if (g.numa_node < 0) {
    int host_numa = -1;  // CUDA's own view, when hwloc could not place the GPU
    if (cudaDeviceGetAttribute(&host_numa, cudaDevAttrHostNumaId, device) == cudaSuccess) g.numa_node = host_numa;
    cudaGetLastError();
  }
  g.package = place.package >= 0 ? place.package : (packages == 1 ? 0 : -1);
  g.cpuset = place.cpuset;
  g.host_link_gbps = place.host_link_gbps > 0 ? place.host_link_gbps : fallback_host_link_gbps(prop.major);
  return g;
}

// GPUs below one root port share an uplink; every other GPU gets its own.
void assign_uplinks(Topology& t, const std::vector<GpuPlace>& places) {
  std::map<hwloc_obj_t, int> by_bridge;
  for (std::size_t i = 0; i < t.gpus.size(); ++i) {
    Gpu& g = t.gpus[i];
    const GpuPlace& p = places[i];
    if (p.uplink && by_bridge.count(p.uplink)) {
      g.uplink = by_bridge[p.uplink];
      continue;
    }
    g.uplink = static_cast<int>(t.uplinks.size());
    t.uplinks.push_back({p.uplink_gbps > 0 ? p.uplink_gbps : g.host_link_gbps});
    if (p.uplink) by_bridge[p.uplink] = g.uplink;
  }
}

std::vector<PairFacts> cuda_pair_facts(int n, const detail::NvLinkWiring& wiring) {
  std::vector<PairFacts> facts(static_cast<std::size_t>(n * n));
  for (int i = 0; i < n; ++i) {
    for (int j = 0; j < n; ++j) {
      if (i == j) continue;
      PairFacts& f = facts[static_cast<std::size_t>(i * n + j)];
      int can = 0;
      MGJOIN_CUDA_TRY(cudaDeviceCanAccessPeer(&can, i, j));
      f.p2p_supported = can != 0;
      if (f.p2p_supported)
        MGJOIN_CUDA_TRY(cudaDeviceGetP2PAttribute(&f.performance_rank, cudaDevP2PAttrPerformanceRank, i, j));
      if (wiring.available) f.nvlinks_direct = wiring.direct[static_cast<std::size_t>(i * n + j)];
    }
  }
  return facts;
}

}  // namespace

Topology probe_topology() {
  Topology t;
  t.machine = "probed";
  const auto& m = detail::hwloc_machine();
  if (m.loaded()) {
    t.packages = std::max(1, hwloc_get_nbobjs_by_type(m.get(), HWLOC_OBJ_PACKAGE));
    t.numa_nodes = std::max(1, hwloc_get_nbobjs_by_type(m.get(), HWLOC_OBJ_NUMANODE));
  }
  t.inter_socket_gbps = t.packages > 1 ? kDefaultInterSocketGbps : 0;
  const int n = gpu::device_count();
  if (n == 0) {
    log_verbose("no CUDA GPUs found (no driver or no device)");
    return t;
  }
  std::vector<GpuPlace> places;
  for (int d = 0; d < n; ++d) {
    char bus[32] = {};
    MGJOIN_CUDA_TRY(cudaDeviceGetPCIBusId(bus, sizeof bus, d));
    places.push_back(place_of(normalize_pci_bus_id(bus)));
    t.gpus.push_back(describe_gpu(d, places.back(), t.packages));
  }
  assign_uplinks(t, places);
  int major = 0;
  MGJOIN_CUDA_TRY(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, 0));
  t.nvlink_gbps_per_link = nvlink_gbps_per_link(major);

  std::vector<std::string> bus_ids;
  for (const auto& g : t.gpus) bus_ids.push_back(g.pci_bus_id);
  const auto wiring = detail::query_nvlink_wiring(bus_ids);
  if (wiring.available)
    for (int i = 0; i < n; ++i) t.gpus[static_cast<std::size_t>(i)].nvswitch_links = wiring.switch_links[static_cast<std::size_t>(i)];
  classify_links(t, cuda_pair_facts(n, wiring));
  return t;
}

}  // namespace mgjoin::topology
