#pragma once
// The machine as the join sees it: GPUs, where they sit (NUMA node, CPUs, socket, PCIe uplink) and
// what links each pair. Which GPUs a join uses matters as much as how many (paper Sections 4.3-4.4:
// on an IBM AC922, 2 of 4 GPUs beat all 4 because the other pair sat across the X-Bus).
//
// A Topology is a plain value: `probe_topology()` builds it from hwloc, CUDA and NVML;
// `topology_from_json()` builds a synthetic one from a fixture (tests, `mgjoin topo --fixture`).
// Bandwidths are in GB/s (1e9 bytes per second), one direction.
#include <nlohmann/json_fwd.hpp>

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace mgjoin::topology {

/// How two GPUs talk, from fastest to slowest kind.
enum class LinkKind : std::uint8_t {
  NvLink,          ///< direct NVLink bricks between the two GPUs (Link::nvlinks of them)
  NvSwitch,        ///< both GPUs on an NVSwitch fabric (Link::nvlinks = links of the weaker GPU)
  PcieSameSwitch,  ///< PCIe, both below one PCIe switch: P2P without touching the root complex
  PcieHostBridge,  ///< PCIe through the CPU's root complex, same socket
  CrossSocket,     ///< through the CPU-CPU interconnect (UPI, X-Bus, Infinity Fabric)
  None,            ///< the GPU with itself, or no path known
};

/// "NvLink", "NvSwitch", "PcieSameSwitch", "PcieHostBridge", "CrossSocket", "None".
std::string_view link_kind_name(LinkKind k);
/// Inverse of link_kind_name; throws InputError on an unknown name.
LinkKind parse_link_kind(std::string_view name);

struct Link {
  LinkKind kind = LinkKind::None;
  int nvlinks = 0;             ///< NVLink bricks used by this pair (NvLink, NvSwitch)
  bool p2p_supported = false;  ///< cudaDeviceCanAccessPeer (or the fixture's claim)
  int performance_rank = -1;   ///< cudaDevP2PAttrPerformanceRank; -1 unknown (lower is faster)
  double gbps = 0;             ///< modelled (or measured) one-way bandwidth of one copy i -> j
};

/// The link from the CPU side to a group of GPUs: a root port, or a PCIe switch's upstream port.
/// GPUs that share an uplink share its bandwidth when they copy to or from host memory at once.
struct Uplink {
  double gbps = 0;
};

struct Gpu {
  int cuda_id = 0;
  std::string name;            ///< "NVIDIA H200"
  std::string pci_bus_id;      ///< "0000:18:00.0" (lower case, 4-digit domain)
  std::uint64_t memory_bytes = 0;
  int numa_node = -1;          ///< OS index of the nearest NUMA node; -1 unknown
  int package = -1;            ///< socket (OS index); -1 unknown
  std::string cpuset;          ///< CPUs near the GPU as a list, "0-31,64-95"
  int uplink = -1;             ///< index into Topology::uplinks
  double host_link_gbps = 0;   ///< the GPU's own link to the CPU side (PCIe x16, or NVLink on POWER9)
  int nvswitch_links = 0;      ///< NVLink bricks that end on an NVSwitch
};

struct Topology {
  std::string machine;             ///< free text: "probed", "IBM AC922 (synthetic)"
  int packages = 1;
  int numa_nodes = 1;
  double inter_socket_gbps = 0;    ///< CPU-CPU interconnect, one direction; 0 = one socket
  double nvlink_gbps_per_link = 25;
  std::vector<Gpu> gpus;
  std::vector<Uplink> uplinks;
  std::vector<Link> links;         ///< gpu_count()^2, row-major: links[i * n + j] = link i -> j

  int gpu_count() const { return static_cast<int>(gpus.size()); }
  const Link& link(int i, int j) const { return links[static_cast<std::size_t>(i * gpu_count() + j)]; }
  Link& link(int i, int j) { return links[static_cast<std::size_t>(i * gpu_count() + j)]; }
};

/// What the probe (or a fixture) says about a pair before it is classified.
struct PairFacts {
  int nvlinks_direct = 0;      ///< NVLink bricks from i that end on j
  bool p2p_supported = false;
  int performance_rank = -1;
};

/// Fills `t.links` from the GPUs' places (package, uplink, nvswitch_links) and the pair facts
/// (n*n row-major): direct NVLink > NVSwitch (both GPUs have switch links) > other socket >
/// same uplink (PCIe switch) > host bridge.
void classify_links(Topology& t, const std::vector<PairFacts>& facts);

/// Modelled one-way bandwidth of a copy i -> j: NVLink bricks x per-link rate; PCIe P2P runs at the
/// slower host link (x0.8 through the root complex); pairs without P2P are staged through host memory.
double modelled_link_gbps(const Topology& t, int i, int j);

/// Probes this machine. Without a CUDA driver or GPU it returns a Topology with no GPUs (no error).
Topology probe_topology();

/// A synthetic machine from a fixture (format in topology/README.md). Throws InputError naming
/// `source` when a field is missing or inconsistent.
Topology topology_from_json(const nlohmann::json& j, const std::string& source = "fixture");
/// Reads a fixture file; throws InputError naming the file when it cannot be read or parsed.
Topology load_topology_fixture(const std::string& path);
/// The fixture fields plus the classified "links"; topology_from_json reads it back.
nlohmann::json topology_to_json(const Topology& t);

/// CPU list ("0-3,8") from ascending CPU indices, and back.
std::string cpu_list_string(const std::vector<int>& cpus);
std::vector<int> parse_cpu_list(std::string_view list);

/// PCI bus id normalized to "dddd:bb:dd.f" lower case (NVML writes an 8-digit domain, CUDA 4).
std::string normalize_pci_bus_id(std::string_view bus_id);

}  // namespace mgjoin::topology
