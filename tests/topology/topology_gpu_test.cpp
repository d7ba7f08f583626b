// The probe on the real 4-GPU machine (nvidia-h200-x4: every pair NVLink, P2P between all pairs).
#include "common/gpu.hpp"

#include "topology/gpu_set.hpp"
#include "topology/report.hpp"
#include "topology/topology.hpp"

#include "core/device.hpp"

#include <mgjoin/error.hpp>

#include <cuda_runtime_api.h>

#include <gtest/gtest.h>

#include <cstdint>
#include <numeric>
#include <vector>

namespace mgjoin::topology {
namespace {

TEST(ProbeGpu, DescribesEveryGpu) {
  MGJOIN_REQUIRE_GPUS(1);
  const Topology t = probe_topology();
  ASSERT_EQ(t.gpu_count(), test::gpu_count());
  for (const Gpu& g : t.gpus) {
    cudaDeviceProp prop{};
    MGJOIN_CUDA_TRY(cudaGetDeviceProperties(&prop, g.cuda_id));
    EXPECT_EQ(g.name, prop.name);
    EXPECT_EQ(g.memory_bytes, prop.totalGlobalMem);
    EXPECT_EQ(g.pci_bus_id, normalize_pci_bus_id(g.pci_bus_id));
    EXPECT_GT(g.host_link_gbps, 0);
    EXPECT_GE(g.uplink, 0);
    EXPECT_FALSE(g.cpuset.empty()) << "GPU " << g.cuda_id << ": hwloc placed it nowhere";
    std::printf("GPU %d %s %s NUMA %d socket %d CPUs %s host link %.1f GB/s\n", g.cuda_id, g.name.c_str(),
                g.pci_bus_id.c_str(), g.numa_node, g.package, g.cpuset.c_str(), g.host_link_gbps);
  }
  std::printf("%s", topology_report_text(t).c_str());
}

TEST(ProbeGpu, FourGpuBoxHasNvLinkAndP2pBetweenEveryPair) {
  MGJOIN_REQUIRE_GPUS(4);
  const Topology t = probe_topology();
  for (int i = 0; i < t.gpu_count(); ++i)
    for (int j = 0; j < t.gpu_count(); ++j) {
      if (i == j) continue;
      const Link& l = t.link(i, j);
      EXPECT_TRUE(l.kind == LinkKind::NvLink || l.kind == LinkKind::NvSwitch)
          << i << "-" << j << " is " << link_kind_name(l.kind) << " (is NVML loadable?)";
      EXPECT_GE(l.nvlinks, 1) << i << "-" << j;
      EXPECT_TRUE(l.p2p_supported) << i << "-" << j;
      EXPECT_GE(l.gbps, 100) << i << "-" << j;
    }
  EXPECT_EQ(choose_gpu_set(t, 4), (std::vector<int>{0, 1, 2, 3}));
}

// P2P "supported" must mean a peer copy actually delivers the bytes.
TEST(ProbeGpu, P2pPairsReallyCopy) {
  MGJOIN_REQUIRE_GPUS(2);
  const Topology t = probe_topology();
  constexpr std::size_t n = 1 << 20;
  std::vector<std::uint32_t> host(n), back(n);
  std::iota(host.begin(), host.end(), 7u);
  for (int i = 0; i < t.gpu_count(); ++i)
    for (int j = 0; j < t.gpu_count(); ++j) {
      if (i == j || !t.link(i, j).p2p_supported) continue;
      void *src = nullptr, *dst = nullptr;
      {
        gpu::DeviceGuard g(i);
        MGJOIN_CUDA_TRY(cudaMalloc(&src, n * 4));
        MGJOIN_CUDA_TRY(cudaMemcpy(src, host.data(), n * 4, cudaMemcpyHostToDevice));
      }
      {
        gpu::DeviceGuard g(j);
        MGJOIN_CUDA_TRY(cudaMalloc(&dst, n * 4));
      }
      MGJOIN_CUDA_TRY(cudaMemcpyPeer(dst, j, src, i, n * 4));
      MGJOIN_CUDA_TRY(cudaMemcpy(back.data(), dst, n * 4, cudaMemcpyDeviceToHost));
      EXPECT_EQ(back, host) << i << " -> " << j;
      cudaFree(src);
      cudaFree(dst);
    }
}

}  // namespace
}  // namespace mgjoin::topology
