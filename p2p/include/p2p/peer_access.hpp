#pragma once
// RAII peer access among a set of GPUs: enables direct P2P loads, stores and copy-engine transfers
// between every pair that supports it, and disables on destruction what this object enabled.
// Pairs without P2P support still work with cudaMemcpyPeerAsync (staged through the host, slower).
#include "core/device.hpp"

#include <mgjoin/error.hpp>

#include <cuda_runtime_api.h>

#include <span>
#include <utility>
#include <vector>

namespace mgjoin::p2p {

class PeerAccess {
 public:
  PeerAccess() = default;
  explicit PeerAccess(std::span<const int> devices) {
    for (const int from : devices)
      for (const int to : devices) {
        if (from == to) continue;
        int can = 0;
        MGJOIN_CUDA_TRY(cudaDeviceCanAccessPeer(&can, from, to));
        if (!can) continue;
        gpu::DeviceGuard guard(from);
        const cudaError_t err = cudaDeviceEnablePeerAccess(to, 0);
        if (err == cudaErrorPeerAccessAlreadyEnabled) {
          cudaGetLastError();  // enabled by someone else: leave it to them
          continue;
        }
        MGJOIN_CUDA_TRY(err);
        enabled_.emplace_back(from, to);
      }
  }
  ~PeerAccess() {
    for (const auto& [from, to] : enabled_) {
      gpu::DeviceGuard guard(from);
      cudaDeviceDisablePeerAccess(to);
    }
  }
  PeerAccess(PeerAccess&& o) noexcept : enabled_(std::exchange(o.enabled_, {})) {}
  PeerAccess& operator=(PeerAccess&&) = delete;
  PeerAccess(const PeerAccess&) = delete;
  PeerAccess& operator=(const PeerAccess&) = delete;

  /// Pairs (from, to) this object enabled.
  const std::vector<std::pair<int, int>>& enabled() const { return enabled_; }

 private:
  std::vector<std::pair<int, int>> enabled_;
};

}  // namespace mgjoin::p2p
