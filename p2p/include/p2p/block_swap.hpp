#pragma once
// Block swap of the merge-based multi-GPU sort (paper, Section 3.1.1, Figure 3): within a group of
// chunks [first, last) split at `mid` into a left and a right side, the last `pivot` tuples of the left
// side trade places with the first `pivot` tuples of the right side. Each side is a concatenation of
// chunks on different GPUs, so one swap may touch several GPU pairs; every copy is a contiguous block
// whose by-key order is preserved.
//
// Planning (plan_block_swap) is pure host code. Execution (issue_block_swap) copies every block from the
// chunks' current buffers into their other buffers: each destination GPU pulls on its own stream, so the
// two directions of a GPU pair run at once (bi-directional P2P), and local kept blocks move at HBM speed.
#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

namespace mgjoin::p2p {

/// One contiguous copy of `count` tuples from chunk `src_chunk` at `src_offset` to chunk `dst_chunk` at
/// `dst_offset` (chunk indices are positions in the chunkset, offsets are in tuples).
struct BlockCopy {
  int src_chunk = 0;
  std::uint64_t src_offset = 0;
  int dst_chunk = 0;
  std::uint64_t dst_offset = 0;
  std::uint64_t count = 0;
  bool operator==(const BlockCopy&) const = default;
};

/// What a swap leaves in a chunk that it touches.
enum class ChunkAfterSwap {
  replaced,  // every tuple came from the other side: one sorted run, now in the other buffer
  two_runs,  // kept tuples and received tuples: two sorted runs in the other buffer, to be merged
};

/// The new content of one chunk: `pieces` fill [0, length) of its other buffer in order. The first run
/// is [0, first_run) (left side: the kept tuples; right side: the received ones), the second the rest.
struct ChunkSwap {
  int chunk = 0;
  ChunkAfterSwap after = ChunkAfterSwap::replaced;
  std::uint64_t first_run = 0;
  std::vector<BlockCopy> pieces;
};

/// The chunks a swap touches (chunks it leaves alone are absent; an empty plan means pivot 0).
struct BlockSwapPlan {
  std::vector<ChunkSwap> chunks;
};

/// Plans the swap of the last `pivot` tuples of chunks [first, mid) with the first `pivot` tuples of
/// chunks [mid, last). `chunk_lengths` holds the length of every chunk of the chunkset; lengths are kept.
/// Expects first < mid < last <= chunk_lengths.size() and pivot <= min(left length, right length).
BlockSwapPlan plan_block_swap(std::span<const std::uint64_t> chunk_lengths, int first, int mid, int last,
                              std::uint64_t pivot);

/// Where one chunk of the chunkset lives, for executing a swap: its GPU, the stream its work goes to, its
/// current buffers (read) and its other buffers (written). payload pointers are null for key-only data.
struct SwapEndpoint {
  int device = 0;
  cudaStream_t stream = nullptr;
  const void* current_keys = nullptr;
  const void* current_payload = nullptr;
  void* other_keys = nullptr;
  void* other_payload = nullptr;
  cudaEvent_t copied = nullptr;  // event on `device`, recorded by issue_block_swap
};

/// Enqueues the plan's copies (cudaMemcpyPeerAsync, each on its destination's stream), then makes every
/// touched chunk's stream wait until all copies of the swap are done: after this call, work a touched
/// chunk enqueues may overwrite its current buffer, which a peer may have been reading. Expects the
/// source buffers ready for the destination streams (the caller orders them; see merge_sort.cu).
/// Returns the bytes it copies between different GPUs.
std::uint64_t issue_block_swap(const BlockSwapPlan& plan, std::span<const SwapEndpoint> endpoints,
                               std::size_t key_bytes, std::size_t payload_bytes);

}  // namespace mgjoin::p2p
