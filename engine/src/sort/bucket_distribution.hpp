#pragma once
// Bucket distribution of the radix-partitioning multi-GPU sort (paper, Section 3.1.2): from the
// device-local histograms of all GPUs, decide which GPU receives which buckets, which buckets span
// GPUs and must be refined on the next m = 8 bits, and how the all-to-all bucket swap and the local
// sorts are laid out. Pure host code: the sorter runs it between its histogram exchanges.
//
// Global order: buckets in key order; within a bucket, the tuples of GPU 0, then GPU 1, ... Each GPU's
// secondary buffer holds its tuples in bucket order (the MSB scatter), so the tuples that GPU s sends to
// GPU d are contiguous there.
#include <array>
#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

namespace mgjoin::sort {

inline constexpr int kRadixBits = 8;                    ///< m: bits per MSB partitioning pass
inline constexpr int kRadixBuckets = 1 << kRadixBits;   ///< 2^m
inline constexpr double kFusingThreshold = 0.01;        ///< γ, relative to the chunk size
using Histogram = std::array<std::int64_t, kRadixBuckets>;

/// A bucket: the keys (in the order-preserving unsigned form) whose top `bits` bits equal `prefix`.
struct Bucket {
  std::uint64_t prefix = 0;
  int bits = 0;
  std::vector<std::int64_t> counts;  ///< tuples of the bucket on each GPU

  std::int64_t total() const;
  std::uint64_t lowest_key(int key_bits) const;
  std::uint64_t highest_key(int key_bits) const;
  /// All bits consumed: every tuple has the same key, so it may be split anywhere.
  bool single_key(int key_bits) const { return bits >= key_bits; }
};

/// The non-empty buckets of the first pass (top 8 bits) from each GPU's histogram.
std::vector<Bucket> top_level_buckets(std::span<const Histogram> per_gpu);

/// Replaces bucket `index` by its non-empty children on the next 8 bits (histograms per GPU, of the
/// tuples of that bucket only).
void refine_bucket(std::vector<Bucket>& buckets, std::size_t index, std::span<const Histogram> per_gpu);

struct BucketDistribution {
  /// g + 1 global ranks: GPU d receives the tuples of global ranks [boundaries[d], boundaries[d+1]).
  std::vector<std::int64_t> boundaries;
  /// Spanning buckets (indices, ascending) to refine before the distribution is final.
  std::vector<std::size_t> spanning;
  bool final() const { return spanning.empty(); }
};

/// Places the g - 1 GPU boundaries at the bucket edges nearest the even split such that no GPU receives
/// more than its buffer holds, max(ceil(N/g), chunk) + floor(ε·chunk) tuples: for a full chunkset an
/// edge within ε·chunk of the even split, for a smaller (last) one any edge its GPUs' buffers allow.
/// A boundary that finds no such edge lies in a spanning bucket: refined if it has bits left, else (a
/// single key) split by count exactly.
BucketDistribution distribute_buckets(std::span<const Bucket> buckets, int key_bits, int gpus,
                                      std::int64_t chunk, double epsilon);

/// A range of a destination GPU's exchange buffer sorted by one local radix sort.
struct SortUnit {
  std::int64_t offset = 0, count = 0;
  std::uint64_t lowest_key = 0, highest_key = 0;
  /// Bits [0, end_bit) still unsorted: below the highest bit in which lowest and highest key differ.
  int end_bit() const;
};

/// One copy of the bucket swap: `count` tuples of GPU `src` (secondary buffer, at src_offset) to GPU
/// `dst` (exchange buffer, at dst_offset).
struct ExchangeCopy {
  int src = 0, dst = 0;
  std::int64_t src_offset = 0, dst_offset = 0, count = 0;
  bool operator==(const ExchangeCopy&) const = default;
};

struct ExchangePlan {
  std::vector<std::int64_t> dest_sizes;       ///< tuples each GPU receives
  std::vector<std::vector<SortUnit>> units;   ///< per destination GPU, in key order
  std::vector<ExchangeCopy> copies;           ///< grouped by destination, then unit, then source
};

/// Fewest tuples the radix sorter wants in a sort unit, whatever γ·chunk: each unit costs one CUB sort
/// and 2·g copies issued by the host (~5 µs each), which dominated small chunksets (10^7 tuples per
/// GPU: 64 units per GPU, ~20 ms of exchange and sort launches per relation on 4 GPUs).
inline constexpr std::int64_t kMinUnitTuples = std::int64_t{1} << 20;

/// Lays out the bucket swap for a final distribution: within each destination, neighbouring buckets
/// are fused into one sort unit while their combined size stays below max(γ·chunk, min_unit_tuples);
/// inside a unit the tuples of each source are contiguous, so each (unit, source) pair is a single copy.
ExchangePlan plan_exchange(std::span<const Bucket> buckets, std::span<const std::int64_t> boundaries,
                           int key_bits, std::int64_t chunk, double gamma, std::int64_t min_unit_tuples = 0);

}  // namespace mgjoin::sort
