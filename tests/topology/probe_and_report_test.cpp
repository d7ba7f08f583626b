// probe_topology() on a machine without GPUs, the `topo` report, and NUMA binding as a no-op.
#include "common/gpu.hpp"
#include "fixtures.hpp"

#include "topology/numa_binding.hpp"
#include "topology/report.hpp"
#include "topology/topology.hpp"

#include <nlohmann/json.hpp>

#include <gtest/gtest.h>

#include <vector>

namespace mgjoin::topology {
namespace {

using test::load_fixture;

TEST(Probe, FindsExactlyTheGpusCudaReportsWithoutThrowing) {
  Topology t;
  ASSERT_NO_THROW(t = probe_topology());
  EXPECT_EQ(t.gpu_count(), test::gpu_count());  // 0 in CI: no driver, no device
  EXPECT_GE(t.packages, 1);
  EXPECT_GE(t.numa_nodes, 1);
  EXPECT_EQ(t.links.size(), static_cast<std::size_t>(t.gpu_count() * t.gpu_count()));
}

TEST(Report, NoGpusSaysSoPlainly) {
  const std::string text = topology_report_text(load_fixture("none"));
  EXPECT_NE(text.find("no CUDA GPUs found"), std::string::npos) << text;
  EXPECT_TRUE(topology_report_json(load_fixture("none")).at("chosen").empty());
}

TEST(Report, Ac922ShowsLinksAffinityAndChosenSets) {
  const std::string text = topology_report_text(load_fixture("ac922"));
  EXPECT_NE(text.find("NV3 75"), std::string::npos) << text;
  EXPECT_NE(text.find("SYS* 32"), std::string::npos) << text;  // staged across the X-Bus
  EXPECT_NE(text.find("80-159"), std::string::npos) << text;   // CPUs near GPUs 2 and 3
  EXPECT_NE(text.find("g=2   {0,1}"), std::string::npos) << text;
  EXPECT_NE(text.find("g=4   {0,1,2,3}"), std::string::npos) << text;
}

TEST(Report, JsonListsTheChosenSetPerG) {
  const auto j = topology_report_json(load_fixture("dgx_h100"));
  ASSERT_EQ(j.at("chosen").size(), 8u);
  EXPECT_EQ(j.at("chosen").at(3).at("gpus"), (std::vector<int>{0, 1, 2, 3}));
  EXPECT_EQ(j.at("chosen").at(3).at("source"), "model");
  EXPECT_EQ(j.at("links").at(0).at(5).at("kind"), "NvSwitch");
  // The report is itself a fixture: `mgjoin topo --json > m.json; mgjoin topo --fixture m.json`.
  EXPECT_EQ(topology_from_json(j).gpu_count(), 8);
}

TEST(Report, LinkCellNames) {
  EXPECT_EQ(link_cell_name({LinkKind::NvLink, 18, true, 0, 450}), "NV18");
  EXPECT_EQ(link_cell_name({LinkKind::NvSwitch, 18, true, 0, 450}), "NVS18");
  EXPECT_EQ(link_cell_name({LinkKind::PcieSameSwitch, 0, true, 0, 25}), "PIX");
  EXPECT_EQ(link_cell_name({LinkKind::PcieHostBridge, 0, true, 0, 20}), "PHB");
  EXPECT_EQ(link_cell_name({LinkKind::CrossSocket, 0, false, 0, 10}), "SYS*");
  EXPECT_EQ(link_cell_name({LinkKind::None, 0, false, -1, 0}), "-");
}

TEST(NumaBinding, OneNodeMachineIsANoOp) {
  const Topology t = load_fixture("one_gpu");
  std::vector<char> buffer(1 << 16);
  EXPECT_NO_THROW(bind_thread_to_gpu_numa(t, 0));
  EXPECT_NO_THROW(bind_memory_to_gpu_numa(t, 0, buffer.data(), buffer.size()));
  EXPECT_NO_THROW({ ScopedGpuNumaMemory near(t, 0); });
}

TEST(NumaBinding, NodesThisMachineLacksAreAWarningNotAnError) {
  // The AC922 fixture places GPU 2 on NUMA node 8 and CPUs 80-159, which CI does not have.
  const Topology t = load_fixture("ac922");
  std::vector<char> buffer(1 << 16);
  EXPECT_NO_THROW(bind_memory_to_gpu_numa(t, 2, buffer.data(), buffer.size()));
  EXPECT_NO_THROW({ ScopedGpuNumaMemory near(t, 2); });
  EXPECT_NO_THROW(bind_thread_to_gpu_numa(load_fixture("none"), 0));
}

}  // namespace
}  // namespace mgjoin::topology
