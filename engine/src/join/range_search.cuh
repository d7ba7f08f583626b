#pragma once
// Search routines of the join phase (paper Section 3.3): merge-path diagonal search for the
// partitioning and the binary range searches of the m:n join kernel. They are __host__ __device__
// so that the CPU path, the planner and the GPU kernel run the very same code.
//
// All indices are 64-bit and absolute (into the whole array); searches work on [begin, end).
#include <cstdint>

#ifdef __CUDACC__
#define MGJOIN_HD __host__ __device__ __forceinline__
#else
#define MGJOIN_HD inline
#endif

namespace mgjoin::detail {

/// Half-open index range [begin, end).
struct IndexRange {
  std::uint64_t begin = 0, end = 0;
  MGJOIN_HD std::uint64_t size() const { return end - begin; }
  MGJOIN_HD bool empty() const { return end == begin; }
};

/// First index i in [begin, end) with keys[i] >= key (end when none).
template <class Key>
MGJOIN_HD std::uint64_t key_lower_bound(const Key* keys, std::uint64_t begin, std::uint64_t end, Key key) {
  while (begin < end) {
    const std::uint64_t mid = begin + (end - begin) / 2;
    if (keys[mid] < key)
      begin = mid + 1;
    else
      end = mid;
  }
  return begin;
}

/// First index i in [begin, end) with keys[i] > key (end when none).
template <class Key>
MGJOIN_HD std::uint64_t key_upper_bound(const Key* keys, std::uint64_t begin, std::uint64_t end, Key key) {
  while (begin < end) {
    const std::uint64_t mid = begin + (end - begin) / 2;
    if (key < keys[mid])
      end = mid;
    else
      begin = mid + 1;
  }
  return begin;
}

/// The full range of `key` in sorted keys[begin, end) (empty, positioned at the lower bound, when absent).
template <class Key>
MGJOIN_HD IndexRange key_range(const Key* keys, std::uint64_t begin, std::uint64_t end, Key key) {
  const std::uint64_t first = key_lower_bound(keys, begin, end, key);
  return {first, key_upper_bound(keys, first, end, key)};
}

/// Merge-path diagonal search: of the first `diagonal` elements of the stable merge of sorted
/// a[0, na) and b[0, nb) (ties taken from a first), how many come from a. The split
/// (i, diagonal - i) leaves every key on its left <= every key on its right.
template <class Key>
MGJOIN_HD std::uint64_t merge_path_search(const Key* a, std::uint64_t na, const Key* b, std::uint64_t nb,
                                          std::uint64_t diagonal) {
  std::uint64_t begin = diagonal > nb ? diagonal - nb : 0;
  std::uint64_t end = diagonal < na ? diagonal : na;
  while (begin < end) {
    const std::uint64_t mid = begin + (end - begin) / 2;
    // a[mid] <= b[diagonal - 1 - mid]: a[mid] lies on the path before that b, so take more of a.
    if (!(b[diagonal - 1 - mid] < a[mid]))
      begin = mid + 1;
    else
      end = mid;
  }
  return begin;
}

}  // namespace mgjoin::detail
