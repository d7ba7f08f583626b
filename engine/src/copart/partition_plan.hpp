#pragma once
// Where each tuple of R and S goes in the co-partitioned flow: R and S are range-partitioned by the
// same splitters, so partition d of R meets only partition d of S on GPU d.
//
// Keys here are in the order-preserving unsigned form (signed keys with the sign bit flipped), widened
// to 64 bits. GPU d owns the keys x with upper[d-1] < x <= upper[d] (upper[g-1] is the largest key).
// A hot key, one whose tuples are more than a GPU's share, is owned by a run of `span` GPUs: the tuples
// of its split side are spread over them by a hash of the row, each GPU taking its share, and the
// tuples of the other side are replicated to all of them. Every (r, s) pair of the hot key then meets
// on exactly one GPU: the one its split-side tuple went to.
//
// destinations() is __host__ __device__: the partition kernel and the CPU tests run the same code.
#include "engine/src/join/range_search.cuh"  // MGJOIN_HD

#include <cstdint>

namespace mgjoin::copart {

/// Most GPUs one plan spans (the partition kernels keep one counter per GPU in shared memory).
inline constexpr int kMaxGpus = 16;
/// A hot key spans at least two GPUs, so a plan has fewer hot keys than GPUs.
inline constexpr int kMaxHotKeys = kMaxGpus - 1;
/// Shares of a hot key's split side are cut in units of 1/kShareUnits of the row hash.
inline constexpr std::uint32_t kShareUnits = 1u << 16;

enum class Side : int { R = 0, S = 1 };

struct HotKey {
  std::uint64_t key = 0;
  int first = 0;       ///< first GPU of its run
  int span = 1;        ///< GPUs in its run (>= 2)
  Side split_side = Side::S;
  /// cut[i]: GPU first + i takes the split-side tuples whose row hash is below cut[i] (and not below
  /// cut[i - 1]); cut[span - 1] = kShareUnits.
  std::uint32_t cut[kMaxGpus] = {};
};

struct PartitionPlan {
  int gpus = 1;
  std::uint64_t upper[kMaxGpus] = {};
  int hot_count = 0;
  HotKey hot[kMaxHotKeys] = {};
  /// The keys this plan takes, [lowest, highest] (ordered form): a pass of the flow in passes
  /// (pass_plan.hpp) takes one key range, and a tuple with a key outside it goes nowhere, but for a
  /// tuple of `spill_side` above `highest`, which goes to the last destination (gpus - 1: the first
  /// pass's spill of the resident side to the host, for the passes after it; the partition kernel writes
  /// its keys in the input's form).
  std::uint64_t lowest = 0, highest = ~std::uint64_t{0};
  int spill_side = -1;  ///< Side as int; -1: none
};

/// A contiguous run of destination GPUs [first, first + count).
struct Destinations {
  int first = 0;
  int count = 1;
};

/// A hash of the global row index (splitmix64's finalizer), cut to kShareUnits.
MGJOIN_HD std::uint32_t row_share_hash(std::uint64_t row) {
  row += 0x9e3779b97f4a7c15ull;
  row = (row ^ (row >> 30)) * 0xbf58476d1ce4e5b9ull;
  row = (row ^ (row >> 27)) * 0x94d049bb133111ebull;
  row ^= row >> 31;
  return static_cast<std::uint32_t>(row >> 48);
}

/// The GPU owning a key that is not hot: the first d with key <= upper[d].
MGJOIN_HD int range_owner(const PartitionPlan& plan, std::uint64_t key) {
  int d = 0;
  while (d < plan.gpus - 1 && key > plan.upper[d]) ++d;
  return d;
}

/// Where a tuple of `side` with `key` and global row `row` goes (nowhere, count 0, outside the plan's
/// key range).
MGJOIN_HD Destinations destinations(const PartitionPlan& plan, Side side, std::uint64_t key, std::uint64_t row) {
  if (key < plan.lowest || key > plan.highest)
    return key > plan.highest && static_cast<int>(side) == plan.spill_side ? Destinations{plan.gpus - 1, 1} : Destinations{0, 0};
  for (int h = 0; h < plan.hot_count; ++h) {
    const HotKey& hot = plan.hot[h];
    if (hot.key != key) continue;
    if (side != hot.split_side) return {hot.first, hot.span};
    const std::uint32_t u = row_share_hash(row);
    int i = 0;
    while (i < hot.span - 1 && u >= hot.cut[i]) ++i;
    return {hot.first + i, 1};
  }
  return {range_owner(plan, key), 1};
}

}  // namespace mgjoin::copart
