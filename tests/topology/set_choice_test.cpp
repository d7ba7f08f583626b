// Choosing the set of GPUs under the cost model of topology/gpu_set.hpp, on the synthetic machines.
#include "fixtures.hpp"

#include "topology/gpu_set.hpp"
#include "topology/tuning_file.hpp"

#include <mgjoin/error.hpp>

#include <gtest/gtest.h>

namespace mgjoin::topology {
namespace {

using test::load_fixture;
using Set = std::vector<int>;

TEST(GpuSet, Ac922TwoGpusStayOnOneSocket) {
  const Topology t = load_fixture("ac922");
  EXPECT_EQ(choose_gpu_set(t, 1), (Set{0}));
  EXPECT_EQ(choose_gpu_set(t, 2), (Set{0, 1}));  // paper Section 4.4: G^2 = {0,1}
  EXPECT_EQ(choose_gpu_set(t, 4), (Set{0, 1, 2, 3}));
  EXPECT_LT(estimate_set_cost(t, {0, 1}).total, estimate_set_cost(t, {0, 2}).total);
}

TEST(GpuSet, Ac922CostOfZeroOneFollowsTheDocumentedModel) {
  // By hand from gpu_set.hpp: g = 2, host links 75 GB/s each on their own uplink, NVLink 75 GB/s:
  // t_host = (1/2)/75, t_exchange = (1/4)/75, t_compute = (1/2)/150, T = 2.5 t_host + t_x + t_c.
  const SetCost c = estimate_set_cost(load_fixture("ac922"), {0, 1});
  EXPECT_DOUBLE_EQ(c.host_seconds, 0.5 / 75);
  EXPECT_DOUBLE_EQ(c.exchange_seconds, 0.25 / 75);
  EXPECT_DOUBLE_EQ(c.compute_seconds, 0.5 / 150);
  EXPECT_NEAR(c.total, 2.5 * 0.5 / 75 + 0.25 / 75 + 0.5 / 150, 1e-15);
  EXPECT_EQ(c.off_home_socket, 0);
  // {0,2}: one GPU across the X-Bus (64 GB/s) and a staged pair at 32 GB/s.
  const SetCost x = estimate_set_cost(load_fixture("ac922"), {0, 2});
  EXPECT_EQ(x.off_home_socket, 1);
  EXPECT_DOUBLE_EQ(x.host_seconds, 0.5 / 64);
  EXPECT_DOUBLE_EQ(x.exchange_seconds, 0.25 / 32);
}

TEST(GpuSet, DgxH100FillsTheFirstSocketBeforeCrossingUpi) {
  const Topology t = load_fixture("dgx_h100");
  EXPECT_EQ(choose_gpu_set(t, 1), (Set{0}));
  EXPECT_EQ(choose_gpu_set(t, 2), (Set{0, 1}));
  EXPECT_EQ(choose_gpu_set(t, 4), (Set{0, 1, 2, 3}));
  EXPECT_EQ(choose_gpu_set(t, 8), (Set{0, 1, 2, 3, 4, 5, 6, 7}));
  // {4,5,6,7} costs the same as {0,1,2,3}: the tie goes to the lower IDs.
  EXPECT_DOUBLE_EQ(estimate_set_cost(t, {4, 5, 6, 7}).total, estimate_set_cost(t, {0, 1, 2, 3}).total);
}

TEST(GpuSet, Dgx1PicksADoubleLinkedPairOnSeparatePcieSwitches) {
  const Topology t = load_fixture("dgx1");
  // {0,1} share a PCIe switch; {0,3} have 2 NVLinks and one switch each, on one socket.
  EXPECT_EQ(choose_gpu_set(t, 2), (Set{0, 3}));
  EXPECT_EQ(choose_gpu_set(t, 8), (Set{0, 1, 2, 3, 4, 5, 6, 7}));
  EXPECT_LT(estimate_set_cost(t, {0, 3}).total, estimate_set_cost(t, {0, 1}).total);
}

TEST(GpuSet, PcieBoxSpreadsTwoGpusOverBothSwitches) {
  const Topology t = load_fixture("pcie4");
  EXPECT_EQ(choose_gpu_set(t, 2), (Set{0, 2}));
  EXPECT_EQ(choose_gpu_set(t, 4), (Set{0, 1, 2, 3}));
  // Both GPUs of {0,1} copy through one 25 GB/s uplink: t_host = 1/25.
  EXPECT_DOUBLE_EQ(estimate_set_cost(t, {0, 1}).host_seconds, 1.0 / 25);
  EXPECT_DOUBLE_EQ(estimate_set_cost(t, {0, 2}).host_seconds, 0.5 / 25);
}

TEST(GpuSet, OneGpuAndNoGpu) {
  const Topology one = load_fixture("one_gpu");
  EXPECT_EQ(choose_gpu_set(one, 1), (Set{0}));
  EXPECT_THROW(choose_gpu_set(one, 2), InputError);
  EXPECT_THROW(choose_gpu_set(one, 0), InputError);
  EXPECT_THROW(choose_gpu_set(load_fixture("none"), 1), InputError);
}

TEST(GpuSet, RankingListsDistinctSetsBestFirst) {
  const Topology t = load_fixture("ac922");
  const auto ranked = rank_gpu_sets(t, 2, 10);
  ASSERT_EQ(ranked.size(), 6u);  // C(4,2)
  EXPECT_EQ(ranked[0], (Set{0, 1}));
  EXPECT_EQ(ranked[1], (Set{2, 3}));
  for (std::size_t i = 1; i < ranked.size(); ++i)
    EXPECT_LE(estimate_set_cost(t, ranked[i - 1]).total, estimate_set_cost(t, ranked[i]).total + 1e-12);
}

TuningFile tuning_for(const Topology& t, int g, Set best) {
  TuningFile f;
  f.machine = fingerprint_of(t);
  f.best.push_back({g, std::move(best), "merge", 1.5, "copart", std::nullopt});
  return f;
}

TEST(GpuSet, TuningFileOverridesTheModelForItsMachineOnly) {
  const Topology t = load_fixture("ac922");
  const TuningFile here = tuning_for(t, 2, {2, 3});
  EXPECT_EQ(choose_gpu_set(t, 2, &here), (Set{2, 3}));
  EXPECT_EQ(choose_gpu_set(t, 4, &here), (Set{0, 1, 2, 3}));  // no entry for g=4: the model
  TuningFile elsewhere = here;
  elsewhere.machine.gpus[0].pci_bus_id = "0000:99:00.0";
  EXPECT_EQ(choose_gpu_set(t, 2, &elsewhere), (Set{0, 1}));
  const TuningFile broken = tuning_for(t, 2, {3, 7});  // names a GPU this machine lacks
  EXPECT_EQ(choose_gpu_set(t, 2, &broken), (Set{0, 1}));
}

}  // namespace
}  // namespace mgjoin::topology
