// All-to-all bucket exchange over copy engines or NCCL (paper, Section 3.1.2).
#include "p2p/all_to_all.hpp"

#include "core/device.hpp"
#include "p2p/nccl_comms.hpp"

#include "p2p/nccl_error.hpp"

#include <mgjoin/error.hpp>

namespace mgjoin::p2p {

void all_to_all_copy_engines(std::span<const PeerCopy> copies, std::span<const int> devices,
                             std::span<const cudaStream_t> lanes) {
  const auto g = devices.size();
  MGJOIN_EXPECTS(lanes.size() == g * g, "all_to_all_copy_engines needs one lane per (destination, source)");
  for (const auto& c : copies) {
    if (c.bytes == 0) continue;
    gpu::DeviceGuard guard(devices[c.dst]);
    const cudaStream_t lane = lanes[static_cast<std::size_t>(c.dst) * g + static_cast<std::size_t>(c.src)];
    if (c.src == c.dst) {
      MGJOIN_CUDA_TRY(cudaMemcpyAsync(c.dst_ptr, c.src_ptr, c.bytes, cudaMemcpyDefault, lane));
    } else {
      MGJOIN_CUDA_TRY(cudaMemcpyPeerAsync(c.dst_ptr, devices[c.dst], c.src_ptr, devices[c.src], c.bytes, lane));
    }
  }
}

void all_to_all_nccl(std::span<const PeerCopy> copies, const NcclComms& comms, std::span<const cudaStream_t> streams) {
  const auto devices = comms.devices();
  for (const auto& c : copies) {  // local moves first, outside the group
    if (c.bytes == 0 || c.src != c.dst) continue;
    gpu::DeviceGuard guard(devices[c.dst]);
    MGJOIN_CUDA_TRY(cudaMemcpyAsync(c.dst_ptr, c.src_ptr, c.bytes, cudaMemcpyDefault, streams[c.dst]));
  }
  // Sends and receives of one GPU pair match in the order they are posted: both sides walk the same
  // list. The list is posted in groups of at most kNcclCopiesPerGroup copies: one thread launches the
  // kernels of all g communicators, and a group with too many operations (about a thousand copies of a
  // skewed relation on 4 GPUs) hung in ncclGroupEnd, apparently waiting for one communicator's work
  // queue to drain before the peers' kernels that drain it were launched. Each group's sends and
  // receives pair up within the group, so the groups complete one after another in stream order.
  std::size_t in_group = 0;
  MGJOIN_NCCL_TRY(nccl().group_start());
  for (const auto& c : copies) {
    if (c.bytes == 0 || c.src == c.dst) continue;
    if (in_group == kNcclCopiesPerGroup) {
      MGJOIN_NCCL_TRY(nccl().group_end());
      MGJOIN_NCCL_TRY(nccl().group_start());
      in_group = 0;
    }
    MGJOIN_NCCL_TRY(nccl().send(c.src_ptr, c.bytes, ncclUint8, c.dst, comms.comm(c.src), streams[c.src]));
    MGJOIN_NCCL_TRY(nccl().recv(c.dst_ptr, c.bytes, ncclUint8, c.src, comms.comm(c.dst), streams[c.dst]));
    ++in_group;
  }
  MGJOIN_NCCL_TRY(nccl().group_end());
}

}  // namespace mgjoin::p2p
