#pragma once
// All-to-all exchange among the GPUs of a chunkset (paper, Section 3.1.2, "Multi-GPU P2P Bucket
// Swapping", Figure 5): a list of contiguous byte copies between GPUs, issued either on the copy engines
// (cudaMemcpyPeerAsync, each destination pulling on its own stream, so all links run in both directions
// at once) or as one NCCL group of send/receive pairs. Copies within a GPU are plain device copies.
//
// Ordering is the caller's: the sources must be ready when the destination streams reach the copies,
// and the sources must not be overwritten before every destination stream has passed them.
#include <cuda_runtime_api.h>

#include <cstddef>
#include <span>

namespace mgjoin::p2p {

class NcclComms;

/// `bytes` from `src_ptr` on chunkset GPU `src` to `dst_ptr` on chunkset GPU `dst` (indices into the
/// device and stream spans).
/// One copy between GPUs (indices into the devices); a copy from a GPU to itself may also go to pinned
/// host memory (a pass's spill: copies are issued with cudaMemcpyDefault, the pointers say the direction).
struct PeerCopy {
  int src = 0, dst = 0;
  const void* src_ptr = nullptr;
  void* dst_ptr = nullptr;
  std::size_t bytes = 0;
};

/// Issues every copy with the copy engines on lane stream lanes[dst * g + src] of its destination
/// (g = devices.size()): one lane per source, so that a GPU pulls from all its peers at once instead
/// of one peer after the other.
void all_to_all_copy_engines(std::span<const PeerCopy> copies, std::span<const int> devices,
                             std::span<const cudaStream_t> lanes);

/// Copies posted per NCCL group by all_to_all_nccl (each one send and one receive).
inline constexpr std::size_t kNcclCopiesPerGroup = 64;

/// Issues every copy as an NCCL send on the source's stream and receive on the destination's stream,
/// in groups of kNcclCopiesPerGroup copies (comms.comm(i) is the rank of devices[i]); local copies go
/// on the GPU's stream.
void all_to_all_nccl(std::span<const PeerCopy> copies, const NcclComms& comms, std::span<const cudaStream_t> streams);

}  // namespace mgjoin::p2p
