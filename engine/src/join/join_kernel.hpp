#pragma once
// Launchers of the binary-search m:n join kernel (paper Section 3.3.3), callable from host code.
#include "engine/src/join/output_count.hpp"

#include <mgjoin/join.hpp>

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>

namespace mgjoin::detail {

/// One subpartition pair's keys in device memory (unsigned, order-preserving form) and where its
/// matching ranges go.
struct SubpartitionJoinArgs {
  const void* r_keys = nullptr;  ///< device, r_size keys
  std::uint64_t r_size = 0;
  const void* s_keys = nullptr;  ///< device, s_size keys
  std::uint64_t s_size = 0;
  std::uint64_t r_base = 0, s_base = 0;  ///< global row of the first key: ranges hold global indices
  /// Mapped pinned host memory for the ranges (nullptr = count only). Slot k of this stream's region is
  /// written when the stream counter hands out k < range_capacity; the counter keeps counting past the
  /// capacity, so the host sees the overflow.
  MatchRange* ranges = nullptr;
  std::uint64_t range_capacity = 0;
  unsigned long long* range_counter = nullptr;  ///< device, per stream
  TupleCounter* tuple_count = nullptr;           ///< device, shared by the GPU's streams
};

/// Joins one subpartition pair: for each distinct key of the smaller side, binary searches give its run
/// there and its run in the other side; each match adds a range and its tuples (checked: a count that
/// reaches 2^64 sets the counter's flag). key_width is 4 or 8.
void launch_join_subpartition(const SubpartitionJoinArgs& args, std::size_t key_width, cudaStream_t stream);

/// Threads per block and most blocks per grid of the join kernel (the paper's 256 x 128).
inline constexpr int kJoinThreads = 256;
inline constexpr int kJoinMaxBlocks = 128;

}  // namespace mgjoin::detail
