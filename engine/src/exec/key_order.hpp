#pragma once
// Key order: signed keys are mapped to an order-preserving unsigned form by flipping their sign bit
// before they are sorted or partitioned, and back before they leave the GPU (docs/DESIGN.md, "few
// instantiations"). One kernel does it for every flow.
#include <mgjoin/types.hpp>

#include <cuda_runtime_api.h>

#include <cstdint>

namespace mgjoin::exec {

/// The sign bit of `key_bytes`-wide keys: XOR with it maps signed order to unsigned order and back.
constexpr std::uint64_t sign_bit(int key_bytes) { return std::uint64_t{1} << (key_bytes * 8 - 1); }

/// What to XOR into keys of `type` to order them as unsigned (and back): the sign bit of signed keys, 0
/// for unsigned ones.
inline std::uint64_t ordered_key_xor(DType type) {
  return is_signed_key(type) ? sign_bit(static_cast<int>(dtype_size(type))) : 0;
}

/// Most blocks of the flip's grid, per caller (256 threads a block, grid-stride beyond): the values
/// each phase launched with before the flip had one home, kept so that every launch stays the same.
inline constexpr unsigned kSortFlipBlocks = 4096;    ///< the paper flow's sort phase
inline constexpr unsigned kJoinFlipBlocks = 1024;    ///< the paper flow's join phase
inline constexpr unsigned kCopartFlipBlocks = 8192;  ///< the co-partitioned flow and the ranks' GPUs

/// keys[i] ^= key_xor for n keys of `key_bytes` (4 or 8) in device memory, on `stream`; nothing when n
/// or key_xor is 0. The grid is min(ceil(n / 256), max_blocks) blocks of 256 threads.
void flip_keys(int key_bytes, void* keys, std::int64_t n, std::uint64_t key_xor, cudaStream_t stream,
               unsigned max_blocks);

}  // namespace mgjoin::exec
