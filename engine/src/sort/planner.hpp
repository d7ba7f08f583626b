#pragma once
// Chunkset planning of the sort phase (paper, Section 3.1.3): R and S are cut into k_R and k_S
// chunksets of g equal chunks; one chunk, with everything the sort keeps on a GPU beside it, must fit
// into the usable memory of every GPU. Pure host code.
//
// Device memory per GPU for a chunk of c tuples of t bytes (c_pad = c + ceil(ε·c) tuples, the most a
// GPU may hold after the bucket exchange):
//   3 · c_pad · t        two primary buffers (double buffering: chunkset i+1 arrives in the flipped
//                        one while chunkset i is sorted) and the secondary buffer
// + sort_temp_bytes(c_pad)   CUB radix-sort temporary storage (queried, or the caller's bound)
// + kPartitionScratchBytes    small scratch beside the sort: bucket counters of every refinement slot
// + kAlignmentSlack           alignment of the stack allocations
#include <cstdint>
#include <functional>
#include <span>

namespace mgjoin::sort {

/// Bytes of small sort scratch (bucket counters) reserved per GPU; the partition's CUB pass uses the
/// sort temp storage, which it never holds at the same time as a local sort.
inline constexpr std::uint64_t kPartitionScratchBytes = 16ull << 20;
/// Bytes reserved for alignment padding of the allocations of one GPU.
inline constexpr std::uint64_t kAlignmentSlack = 64ull << 10;
/// The smallest chunk worth planning; below it the GPUs are pointless and the plan fails.
inline constexpr std::int64_t kMinChunk = 1024;
/// Padding threshold ε: a GPU may hold this fraction of the chunk more than its even share.
inline constexpr double kEpsilon = 0.005;
/// Fraction of a GPU's free memory used when no limit is given.
inline constexpr double kDefaultMemoryFraction = 0.8;

/// The device memory per GPU a join may use: `limit`, or kDefaultMemoryFraction of the tightest GPU's
/// free memory when the limit is 0 (the one home of that rule).
/// @throw InputError naming JoinOptions::gpu_memory_limit when the limit is more than that.
std::uint64_t usable_device_bytes(std::span<const std::uint64_t> free_bytes, std::uint64_t limit);

struct SortPlanInput {
  std::int64_t r_size = 0, s_size = 0;
  int key_bytes = 8;
  int r_payload_bytes = 0, s_payload_bytes = 0;  ///< 0 for a key-only relation
  int gpus = 1;
  std::uint64_t usable_bytes = 0;                ///< device memory per GPU (usable_device_bytes)
  /// Temporary bytes of the local radix sort of n tuples (key_bytes, widest payload). Empty: the
  /// documented bound `default_sort_temp_bytes`.
  std::function<std::uint64_t(std::int64_t n)> sort_temp_bytes;
};

struct SortPlan {
  int gpus = 1;
  std::int64_t chunk = 0;           ///< tuples per GPU per chunkset (the paper's chunk size)
  std::int64_t chunk_capacity = 0;  ///< tuples per device buffer: chunk + ceil(ε·chunk)
  int k_r = 0, k_s = 0;             ///< chunksets of R and S (0 for an empty relation)
  std::uint64_t usable_bytes = 0;   ///< usable device memory of the tightest GPU
  std::uint64_t device_bytes = 0;   ///< device memory the sort phase needs per GPU (≤ usable_bytes)
  std::uint64_t sort_temp_bytes = 0;  ///< CUB temporary storage reserved per GPU
};

/// A bound on CUB's DeviceRadixSort temporary storage with DoubleBuffer (its onesweep look-back state and
/// histograms): 1/64 of the keys' bytes plus 32 MiB. Used only where the real size cannot be queried.
std::uint64_t default_sort_temp_bytes(std::int64_t n, int key_bytes);

/// Device bytes the sort phase needs per GPU for chunks of `chunk` tuples.
std::uint64_t device_bytes_for_chunk(std::int64_t chunk, int tuple_bytes, std::uint64_t sort_temp);

/// Chooses the chunk size and k_R, k_S. Throws InputError when not even a chunk of kMinChunk tuples fits
/// (names --gpu-memory-limit), MGJOIN_EXPECTS on inconsistent input (no GPU, bad widths).
SortPlan plan_sort(const SortPlanInput& in);

/// Half-open row range [begin, end) of one part when `n` rows are cut into `parts` near-equal parts.
struct RowRange {
  std::int64_t begin = 0, end = 0;
  std::int64_t size() const { return end - begin; }
};
RowRange even_part(std::int64_t n, std::int64_t parts, std::int64_t index);

}  // namespace mgjoin::sort
