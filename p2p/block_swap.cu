// Block swap between the two sides of a merge stage (paper, Section 3.1.1): planning and P2P execution.
#include "p2p/block_swap.hpp"

#include "core/device.hpp"

#include <mgjoin/error.hpp>

#include <algorithm>

namespace mgjoin::p2p {
namespace {

/// Chunks [first, last) seen as one sequence: where each chunk begins in it.
struct Side {
  int first = 0;
  int last = 0;
  std::vector<std::uint64_t> begin;
  std::uint64_t size = 0;
};

Side make_side(std::span<const std::uint64_t> lengths, int first, int last) {
  Side side{first, last, {}, 0};
  for (int c = first; c < last; ++c) {
    side.begin.push_back(side.size);
    side.size += lengths[c];
  }
  return side;
}

/// Appends the copies that bring positions [from, to) of `side` to `dst_chunk` from `dst_offset` on,
/// one copy per source chunk the range crosses.
void append_range(const Side& side, std::span<const std::uint64_t> lengths, std::uint64_t from, std::uint64_t to,
                  int dst_chunk, std::uint64_t dst_offset, std::vector<BlockCopy>& out) {
  for (int c = side.first; c < side.last && from < to; ++c) {
    const std::uint64_t b = side.begin[c - side.first];
    const std::uint64_t lo = std::max(from, b);
    const std::uint64_t hi = std::min(to, b + lengths[c]);
    if (lo >= hi) continue;
    out.push_back({c, lo - b, dst_chunk, dst_offset, hi - lo});
    dst_offset += hi - lo;
  }
}

/// A chunk keeps [kept_from, kept_to) of itself at the same offsets.
BlockCopy kept_block(int chunk, std::uint64_t kept_from, std::uint64_t kept_to) {
  return {chunk, kept_from, chunk, kept_from, kept_to - kept_from};
}

ChunkAfterSwap fate(std::uint64_t kept) { return kept == 0 ? ChunkAfterSwap::replaced : ChunkAfterSwap::two_runs; }

}  // namespace

BlockSwapPlan plan_block_swap(std::span<const std::uint64_t> chunk_lengths, int first, int mid, int last,
                              std::uint64_t pivot) {
  MGJOIN_EXPECTS(0 <= first && first < mid && mid < last && last <= static_cast<int>(chunk_lengths.size()),
                 "block swap: chunk ranges out of order");
  const Side left = make_side(chunk_lengths, first, mid);
  const Side right = make_side(chunk_lengths, mid, last);
  MGJOIN_EXPECTS(pivot <= std::min(left.size, right.size), "block swap: pivot exceeds a side");
  // Left position x >= boundary trades with right position x - boundary.
  const std::uint64_t boundary = left.size - pivot;

  BlockSwapPlan plan;
  for (int c = first; c < mid; ++c) {  // left chunks: kept head, received tail
    const std::uint64_t b = left.begin[c - first];
    const std::uint64_t e = b + chunk_lengths[c];
    const std::uint64_t split = std::clamp(boundary, b, e);
    if (split == e) continue;  // nothing received
    ChunkSwap swap{c, fate(split - b), split - b, {}};
    if (split > b) swap.pieces.push_back(kept_block(c, 0, split - b));
    append_range(right, chunk_lengths, split - boundary, e - boundary, c, split - b, swap.pieces);
    plan.chunks.push_back(std::move(swap));
  }
  for (int c = mid; c < last; ++c) {  // right chunks: received head, kept tail
    const std::uint64_t b = right.begin[c - mid];
    const std::uint64_t e = b + chunk_lengths[c];
    const std::uint64_t split = std::clamp(pivot, b, e);
    if (split == b) continue;  // nothing received
    ChunkSwap swap{c, fate(e - split), split - b, {}};
    append_range(left, chunk_lengths, b + boundary, split + boundary, c, 0, swap.pieces);
    if (split < e) swap.pieces.push_back(kept_block(c, split - b, e - b));
    plan.chunks.push_back(std::move(swap));
  }
  return plan;
}

namespace {

const std::byte* at(const void* base, std::uint64_t offset, std::size_t width) {
  return static_cast<const std::byte*>(base) + offset * width;
}
std::byte* at(void* base, std::uint64_t offset, std::size_t width) {
  return static_cast<std::byte*>(base) + offset * width;
}

/// One block into the destination's other buffers, pulled on the destination's stream.
void issue_copy(const BlockCopy& copy, const SwapEndpoint& src, const SwapEndpoint& dst, std::size_t key_bytes,
                std::size_t payload_bytes) {
  MGJOIN_CUDA_TRY(cudaMemcpyPeerAsync(at(dst.other_keys, copy.dst_offset, key_bytes), dst.device,
                                      at(src.current_keys, copy.src_offset, key_bytes), src.device,
                                      copy.count * key_bytes, dst.stream));
  if (payload_bytes == 0) return;
  MGJOIN_CUDA_TRY(cudaMemcpyPeerAsync(at(dst.other_payload, copy.dst_offset, payload_bytes), dst.device,
                                      at(src.current_payload, copy.src_offset, payload_bytes), src.device,
                                      copy.count * payload_bytes, dst.stream));
}

}  // namespace

std::uint64_t issue_block_swap(const BlockSwapPlan& plan, std::span<const SwapEndpoint> endpoints,
                               std::size_t key_bytes, std::size_t payload_bytes) {
  std::uint64_t bytes_between_gpus = 0;
  for (const ChunkSwap& swap : plan.chunks) {
    const SwapEndpoint& dst = endpoints[swap.chunk];
    gpu::DeviceGuard guard(dst.device);
    for (const BlockCopy& copy : swap.pieces) {
      const SwapEndpoint& src = endpoints[copy.src_chunk];
      issue_copy(copy, src, dst, key_bytes, payload_bytes);
      if (src.device != dst.device) bytes_between_gpus += copy.count * (key_bytes + payload_bytes);
    }
    MGJOIN_CUDA_TRY(cudaEventRecord(dst.copied, dst.stream));
  }
  // Every chunk a swap reads from is one it also writes to, so waiting among the touched chunks is
  // enough to keep a later overwrite of a current buffer behind the peers' reads of it.
  for (const ChunkSwap& waiter : plan.chunks) {
    const SwapEndpoint& w = endpoints[waiter.chunk];
    gpu::DeviceGuard guard(w.device);
    for (const ChunkSwap& other : plan.chunks)
      if (other.chunk != waiter.chunk) MGJOIN_CUDA_TRY(cudaStreamWaitEvent(w.stream, endpoints[other.chunk].copied, 0));
  }
  return bytes_between_gpus;
}

}  // namespace mgjoin::p2p
