// Link classification and modelled bandwidths on the synthetic machines.
#include "fixtures.hpp"

#include "topology/topology.hpp"

#include <mgjoin/error.hpp>

#include <nlohmann/json.hpp>

#include <gtest/gtest.h>

namespace mgjoin::topology {
namespace {

using test::load_fixture;

TEST(LinkModel, Ac922HasNvLinkWithinASocketAndNoP2pAcrossTheXBus) {
  const Topology t = load_fixture("ac922");
  ASSERT_EQ(t.gpu_count(), 4);
  EXPECT_EQ(t.link(0, 1).kind, LinkKind::NvLink);
  EXPECT_EQ(t.link(0, 1).nvlinks, 3);
  EXPECT_TRUE(t.link(0, 1).p2p_supported);
  EXPECT_DOUBLE_EQ(t.link(0, 1).gbps, 75);  // 3 bricks x 25 GB/s
  EXPECT_EQ(t.link(2, 3).kind, LinkKind::NvLink);
  for (int a : {0, 1})
    for (int b : {2, 3}) {
      EXPECT_EQ(t.link(a, b).kind, LinkKind::CrossSocket);
      EXPECT_FALSE(t.link(a, b).p2p_supported);
      EXPECT_DOUBLE_EQ(t.link(a, b).gbps, 32);  // staged: half of min(75, 75, X-Bus 64)
    }
  EXPECT_EQ(t.link(0, 0).kind, LinkKind::None);
  EXPECT_EQ(t.gpus[2].numa_node, 8);
  EXPECT_EQ(t.gpus[2].package, 1);
}

TEST(LinkModel, DgxH100PairsAllGoThroughNvSwitch) {
  const Topology t = load_fixture("dgx_h100");
  ASSERT_EQ(t.gpu_count(), 8);
  for (int a = 0; a < 8; ++a)
    for (int b = 0; b < 8; ++b) {
      if (a == b) continue;
      EXPECT_EQ(t.link(a, b).kind, LinkKind::NvSwitch) << a << "-" << b;
      EXPECT_EQ(t.link(a, b).nvlinks, 18);
      EXPECT_TRUE(t.link(a, b).p2p_supported);
      EXPECT_DOUBLE_EQ(t.link(a, b).gbps, 450);
    }
}

TEST(LinkModel, Dgx1HybridCubeMeshHasOneOrTwoBricksAndGapsAcrossSockets) {
  const Topology t = load_fixture("dgx1");
  EXPECT_EQ(t.link(0, 1).kind, LinkKind::NvLink);  // NVLink wins over the shared PCIe switch
  EXPECT_EQ(t.link(0, 1).nvlinks, 1);
  EXPECT_EQ(t.link(0, 3).nvlinks, 2);
  EXPECT_EQ(t.link(3, 0).nvlinks, 2);
  EXPECT_EQ(t.link(0, 4).kind, LinkKind::NvLink);
  EXPECT_EQ(t.link(0, 5).kind, LinkKind::CrossSocket);
  EXPECT_FALSE(t.link(0, 5).p2p_supported);
  EXPECT_EQ(t.gpus[0].uplink, t.gpus[1].uplink);
  EXPECT_NE(t.gpus[1].uplink, t.gpus[2].uplink);
  int bricks_of_gpu0 = 0;
  for (int b = 1; b < 8; ++b) bricks_of_gpu0 += t.link(0, b).nvlinks;
  EXPECT_EQ(bricks_of_gpu0, 6);  // a V100 has six NVLink bricks
}

TEST(LinkModel, PcieBoxTellsSameSwitchFromHostBridge) {
  const Topology t = load_fixture("pcie4");
  EXPECT_EQ(t.link(0, 1).kind, LinkKind::PcieSameSwitch);
  EXPECT_DOUBLE_EQ(t.link(0, 1).gbps, 25);
  EXPECT_EQ(t.link(0, 2).kind, LinkKind::PcieHostBridge);
  EXPECT_DOUBLE_EQ(t.link(0, 2).gbps, 20);  // 0.8 x 25 through the root complex
  EXPECT_TRUE(t.link(1, 3).p2p_supported);
}

TEST(LinkModel, OneGpuAndNoGpuMachinesLoad) {
  EXPECT_EQ(load_fixture("one_gpu").gpu_count(), 1);
  const Topology none = load_fixture("none");
  EXPECT_EQ(none.gpu_count(), 0);
  EXPECT_TRUE(none.links.empty());
}

TEST(LinkModel, JsonRoundTripKeepsEveryLink) {
  for (const char* name : {"dgx1", "ac922", "dgx_h100", "pcie4", "one_gpu", "none"}) {
    const Topology a = load_fixture(name);
    const Topology b = topology_from_json(topology_to_json(a));
    ASSERT_EQ(a.gpu_count(), b.gpu_count()) << name;
    EXPECT_EQ(a.uplinks.size(), b.uplinks.size()) << name;
    for (int i = 0; i < a.gpu_count(); ++i) {
      EXPECT_EQ(a.gpus[i].pci_bus_id, b.gpus[i].pci_bus_id);
      EXPECT_EQ(a.gpus[i].memory_bytes, b.gpus[i].memory_bytes);
      for (int j = 0; j < a.gpu_count(); ++j) {
        EXPECT_EQ(a.link(i, j).kind, b.link(i, j).kind) << name << " " << i << "-" << j;
        EXPECT_EQ(a.link(i, j).nvlinks, b.link(i, j).nvlinks);
        EXPECT_EQ(a.link(i, j).p2p_supported, b.link(i, j).p2p_supported);
        EXPECT_DOUBLE_EQ(a.link(i, j).gbps, b.link(i, j).gbps);
      }
    }
  }
}

TEST(LinkModel, P2pOverridesTurnAPairIntoAStagedCopy) {
  auto j = nlohmann::json::parse(R"({"gpus": [
      {"name": "A", "pci_bus_id": "01:00.0", "memory_gib": 1, "host_link_gbps": 20},
      {"name": "A", "pci_bus_id": "02:00.0", "memory_gib": 1, "host_link_gbps": 10}],
    "p2p_unsupported": [[0, 1]]})");
  const Topology t = topology_from_json(j);
  EXPECT_EQ(t.link(0, 1).kind, LinkKind::PcieHostBridge);
  EXPECT_FALSE(t.link(1, 0).p2p_supported);
  EXPECT_DOUBLE_EQ(t.link(0, 1).gbps, 5);  // staged: half the slower host link
  EXPECT_EQ(t.gpus[0].pci_bus_id, "0000:01:00.0");
}

TEST(LinkModel, BadFixturesNameTheProblem) {
  EXPECT_THROW(load_topology_fixture("/nonexistent/machine.json"), InputError);
  auto missing_link = nlohmann::json::parse(R"({"gpus": [{"name": "A", "pci_bus_id": "01:00.0", "memory_gib": 1}]})");
  try {
    topology_from_json(missing_link, "m.json");
    FAIL() << "expected InputError";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("host_link_gbps"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("m.json"), std::string::npos) << e.what();
  }
  auto bad_pair = nlohmann::json::parse(R"({"gpus": [], "nvlinks": [[0, 1, 2]]})");
  EXPECT_THROW(topology_from_json(bad_pair), InputError);
}

TEST(LinkModel, LinkKindNamesRoundTrip) {
  for (auto k : {LinkKind::NvLink, LinkKind::NvSwitch, LinkKind::PcieSameSwitch, LinkKind::PcieHostBridge,
                 LinkKind::CrossSocket, LinkKind::None})
    EXPECT_EQ(parse_link_kind(link_kind_name(k)), k);
  EXPECT_THROW(parse_link_kind("Carrier pigeon"), InputError);
}

TEST(TopologyText, CpuListsAndBusIds) {
  EXPECT_EQ(cpu_list_string({0, 1, 2, 3, 8, 10, 11}), "0-3,8,10-11");
  EXPECT_EQ(cpu_list_string({}), "");
  EXPECT_EQ(parse_cpu_list("0-3,8,10-11"), (std::vector<int>{0, 1, 2, 3, 8, 10, 11}));
  EXPECT_TRUE(parse_cpu_list("").empty());
  EXPECT_EQ(normalize_pci_bus_id("00000000:1A:00.0"), "0000:1a:00.0");  // NVML's 8-digit domain
  EXPECT_EQ(normalize_pci_bus_id("0000:18:00.0"), "0000:18:00.0");      // CUDA's
  EXPECT_EQ(normalize_pci_bus_id("18:00.0"), "0000:18:00.0");
  EXPECT_THROW(normalize_pci_bus_id("not a bus id"), InputError);
}

}  // namespace
}  // namespace mgjoin::topology
