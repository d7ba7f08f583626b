#pragma once
// Pivot selection of the merge-based multi-GPU sort (paper, Section 3.1.1, "Multi-GPU P2P Block
// Shuffling"). Given two sorted sequences A (left) and B (right), the pivot p is the number of tuples
// swapped: the last p of A trade places with the first p of B so that every key left of the boundary is
// <= every key right of it. The same function runs in a one-thread kernel on the GPU (A and B read
// through peer pointers) and on the host (tests, and the host simulation of the stage schedule).
#include <cstdint>

#ifndef MGJOIN_MSORT_HD
#ifdef __CUDACC__
#define MGJOIN_MSORT_HD __host__ __device__
#else
#define MGJOIN_MSORT_HD
#endif
#endif

namespace mgjoin::sort {

/// Most chunks on one side of a merge stage: half of the largest supported GPU count (16).
inline constexpr int kMaxChunksPerSide = 8;

/// One side of a merge stage: the concatenation of up to kMaxChunksPerSide sorted chunks, each on its own
/// GPU (or host array), seen as one sequence. Trivially copyable, so it is passed to kernels by value.
template <class Key>
struct ChunkGroupView {
  const Key* chunk[kMaxChunksPerSide] = {};
  std::uint64_t end[kMaxChunksPerSide] = {};  // exclusive end of each chunk in the concatenation
  int count = 0;

  /// Appends a chunk of `length` keys at `keys` (host-side set-up).
  void append(const Key* keys, std::uint64_t length) {
    chunk[count] = keys;
    end[count] = size() + length;
    ++count;
  }
  MGJOIN_MSORT_HD std::uint64_t size() const { return count == 0 ? 0 : end[count - 1]; }
  /// The i-th key of the concatenation (i < size()); a linear scan over at most 8 chunk ends.
  MGJOIN_MSORT_HD Key operator[](std::uint64_t i) const {
    int c = 0;
    while (i >= end[c]) ++c;
    return chunk[c][i - (c == 0 ? 0 : end[c - 1])];
  }
};

/// The leftmost pivot p in [0, min(|A|, |B|)] such that swapping the last p tuples of `a` with the first p
/// of `b` leaves max(A') <= min(B'); being the smallest, it moves the fewest tuples over the interconnect.
/// `a` and `b` are sorted ascending and offer size() and operator[] (std::vector, ChunkGroupView).
///
/// Why binary search is exact: the swap is valid iff a[|A|-1-p] <= b[p] (where both exist) and
/// b[p-1] <= a[|A|-p] (where both exist). The first test is monotone false→true in p; at the smallest p
/// where it holds, it failed at p-1, i.e. a[|A|-p] > b[p-1], so the second test holds there too.
/// Costs O(log min(|A|, |B|)) reads of each side.
template <class LeftSeq, class RightSeq>
MGJOIN_MSORT_HD std::uint64_t find_pivot(const LeftSeq& a, const RightSeq& b) {
  const std::uint64_t na = a.size();
  const std::uint64_t nb = b.size();
  std::uint64_t lo = 0;
  std::uint64_t hi = na < nb ? na : nb;  // the test holds at hi: one side runs out
  while (lo < hi) {
    const std::uint64_t p = lo + (hi - lo) / 2;  // p < min(na, nb): both reads are in range
    if (a[na - 1 - p] <= b[p])
      hi = p;
    else
      lo = p + 1;
  }
  return lo;
}

}  // namespace mgjoin::sort
