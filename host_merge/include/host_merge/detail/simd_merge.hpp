#pragma once
// The per-thread merge (any k) for 4-byte keys with 4-byte payloads on AVX-512 (paper Section 3.2.2:
// the merge phase must run at host memory bandwidth; a loser tree spends ~50 instructions per tuple
// on its replay chain, which bound 4/4 k = 8 to ~55% of memcpy at 64 threads).
//
// A tuple is packed into one 64-bit word, (order-preserving key bits << 32) | its index in the round,
// and its payload is copied to the round's payload column at that index. Runs are sorted by key only
// (equal keys carry their payloads in any order), so the index, not the payload, orders equal keys:
// each run's piece packs to strictly ascending words, and unsigned order of words is the order
// (key, run, position). The thread's share is merged in rounds that fit in L2:
//   1. round_counts() cuts the next at most m * window tuples off the runs, an exact cut of their
//      merged order (below);
//   2. each run's piece is packed into a word segment, padded to whole vectors with max words;
//   3. the segments are merged pairwise, level by level (ceil(log2 m) levels), by branch-free
//      bitonic 8 + 8 merge networks in AVX-512 registers (~3 vector instructions per word and
//      level), from both ends of each pair at once so that two dependency chains overlap;
//   4. the last segment is unpacked into key and payload columns (payloads gathered by index), which
//      stream out to the output in whole 64-byte lines.
// The merge is thus stable. The round buffers (~460 KiB at 16384 tuples) are per thread and kept for
// the thread's next merge.
// Max words pad segments and min words bound them below. No tuple packs to the max word (indices stay
// below 2^32 - 1); the round's first tuple packs to the min word when its key bits are 0, and then a
// bound may take its place in a merge, but it has the same value and unpacks to the same tuple.
//
// The cut: let t be the smallest key found `window` tuples past the cursor of any run, and j the
// first run holding it there. The round takes every tuple before (t, j, that position) in the order
// (key, run, position): from runs before j those with key <= t, from j its next `window`, from runs
// after j those with key < t. Every such tuple lies within its run's next `window`, the round takes
// at least `window` tuples, and successive rounds take successive prefixes of one total order, so
// their outputs concatenate to a sorted one. Binary searches over the next `window` keys of each run
// are all it costs, and those keys are read by the round anyway.
//
// MGJOIN_MERGE_SIMD (compile time; default 1 on x86-64) builds the kernel; it runs where the CPU has
// AVX-512F (checked once at run time) unless the environment sets MGJOIN_MERGE_SIMD=0; else the 2-way
// kernel and the loser trees (tree_merge.hpp) merge. On four x4 hosts at
// 64 threads it merged 4/4 k = 8 1.06-1.42x as fast as the loser trees (PERFORMANCE.md, session 5).
#include <algorithm>
#include <cstdint>

#include "host_merge/detail/key_loser_tree.hpp"

#ifndef MGJOIN_MERGE_SIMD
#if defined(__x86_64__)
#define MGJOIN_MERGE_SIMD 1
#else
#define MGJOIN_MERGE_SIMD 0
#endif
#endif

namespace mgjoin::host_merge::detail {

inline constexpr bool kSimdMergeBuilt = MGJOIN_MERGE_SIMD != 0;

#ifndef MGJOIN_MERGE_SIMD_ROUND_TUPLES
#define MGJOIN_MERGE_SIMD_ROUND_TUPLES 16384
#endif
/// Tuples one round of simd_merge takes at most (all runs together): its buffers, two of words and three
/// columns (2 x 128 + 3 x 64 KiB at 16384), stay in L2.
inline constexpr std::int64_t kSimdRoundTuples = MGJOIN_MERGE_SIMD_ROUND_TUPLES;
static_assert(kSimdRoundTuples >= 64 * 64, "a round takes at least 64 tuples of each of up to 64 runs");

/// Whether simd_merge runs: it was built, the CPU has AVX-512F and MGJOIN_MERGE_SIMD is not 0 in the
/// environment (read once).
bool simd_merge_supported() noexcept;

/// Merges all tuples of m >= 2 non-empty runs (m <= kKeyLoserTreeMaxLeaves) into the output columns
/// and advances every run to its end. Needs simd_merge_supported(). K: int32_t or uint32_t.
template <class K>
void simd_merge(RunCursor<K, std::uint32_t>* runs, int m, K* out_keys, std::uint32_t* out_payloads);

/// How many tuples of each run the next round takes (counts[i] for runs[i]), per the cut above;
/// returns their sum (0 only when every run is used up). window >= 1.
template <class K, class P>
std::int64_t round_counts(const RunCursor<K, P>* runs, int m, std::int64_t window, std::int64_t* counts) {
  int cut_run = -1;  // j: the first run holding the smallest key `window` past its cursor
  K cut_key{};       // t
  for (int i = 0; i < m; ++i)
    if (runs[i].end - runs[i].key > window && (cut_run < 0 || runs[i].key[window] < cut_key)) {
      cut_run = i;
      cut_key = runs[i].key[window];
    }
  std::int64_t total = 0;
  for (int i = 0; i < m; ++i) {
    const K* begin = runs[i].key;
    const K* end = begin + std::min<std::int64_t>(runs[i].end - begin, window);
    if (cut_run < 0)  // no run reaches past the window: the round takes everything left
      counts[i] = runs[i].end - begin;
    else if (i < cut_run)
      counts[i] = std::upper_bound(begin, end, cut_key) - begin;
    else if (i == cut_run)
      counts[i] = window;
    else
      counts[i] = std::lower_bound(begin, end, cut_key) - begin;
    total += counts[i];
  }
  return total;
}

}  // namespace mgjoin::host_merge::detail
