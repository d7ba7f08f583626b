#pragma once
// The per-thread k >= 3 merge of host_merge::multiway_merge (paper Section 3.2.2) on loser trees.
// With 4-byte keys a tree's replay chain, not memory, bounds a thread, so where the tree supports it
// (PackedLoserTree::merge_pair) the thread's share is split at its median into two halves, by an exact
// multisequence split (ties cannot put a tuple in both), and two trees merge the halves in lockstep:
// the out-of-order core overlaps their independent chains.
#include <parallel/algorithm>  // first: multiseq_selection.h needs parallel mode's base headers
#include <parallel/multiseq_selection.h>

#include <algorithm>
#include <cstdint>
#include <functional>
#include <type_traits>
#include <utility>
#include <vector>

#include "host_merge/detail/key_loser_tree.hpp"
#include "host_merge/detail/packed_loser_tree.hpp"
#include "host_merge/detail/streaming_store.hpp"

#ifndef MGJOIN_MERGE_LANES
#define MGJOIN_MERGE_LANES 2
#endif

namespace mgjoin::host_merge::detail {

/// Trees per thread where the tree type supports two (compile time: 1 or 2).
inline constexpr int kMergeLanes = MGJOIN_MERGE_LANES;
static_assert(kMergeLanes == 1 || kMergeLanes == 2, "MGJOIN_MERGE_LANES must be 1 or 2");

/// The tree for K: one-word nodes where a key and a leaf index fit in 64 bits, else key + leaf arrays.
template <class K, class P>
using LoserTreeFor = std::conditional_t<sizeof(K) == 4, PackedLoserTree<K, P>, KeyLoserTree<K, P>>;

/// Below this many tuples in a thread's share, one tree: the split would not pay for itself.
inline constexpr std::int64_t kLanePairMinTuples = 4096;

/// Merges with one tree, through the streaming stage where stores stream.
template <class Tree, class K, class P>
void merge_one_tree(Tree& tree, K* out_keys, P* out_payloads, std::int64_t length) {
  merge_through_stage(out_keys, out_payloads, length,
                      [&](K* keys, P* payloads, std::int64_t block) { tree.merge(keys, payloads, block); });
}

/// Trees a and b write `length` tuples each, to out_a_* and out_b_*: a stage block of both at a time.
template <class Tree, class K, class P>
void merge_two_trees(Tree& a, K* out_a_keys, P* out_a_payloads, Tree& b, K* out_b_keys, P* out_b_payloads,
                     std::int64_t length) {
  // Lockstep until either tree has only max keys left, then each on its own.
  auto block_of_both = [&](K* ak, P* ap, K* bk, P* bp, std::int64_t n) {
    const std::int64_t paired = Tree::merge_pair(a, ak, ap, b, bk, bp, n);
    a.merge(ak + paired, ap + paired, n - paired);
    b.merge(bk + paired, bp + paired, n - paired);
  };
  if constexpr (!kStreamingStores) {
    block_of_both(out_a_keys, out_a_payloads, out_b_keys, out_b_payloads, length);
  } else {
    alignas(64) K a_keys[kStageTuples], b_keys[kStageTuples];
    alignas(64) P a_payloads[kStageTuples], b_payloads[kStageTuples];
    for (std::int64_t done = 0; done < length; done += kStageTuples) {
      const std::int64_t n = std::min(kStageTuples, length - done);
      block_of_both(a_keys, a_payloads, b_keys, b_payloads, n);
      copy_output(out_a_keys + done, a_keys, n);
      copy_output(out_a_payloads + done, a_payloads, n);
      copy_output(out_b_keys + done, b_keys, n);
      copy_output(out_b_payloads + done, b_payloads, n);
    }
  }
}

/// Splits m non-empty runs at `rank` of their merged order: `below` gets the non-empty pieces before
/// the split, `above` those after it. Returns their counts.
template <class K, class P>
std::pair<int, int> split_runs(const RunCursor<K, P>* runs, int m, std::int64_t rank, RunCursor<K, P>* below,
                               RunCursor<K, P>* above) {
  std::vector<std::pair<K*, K*>> key_runs;
  key_runs.reserve(static_cast<std::size_t>(m));
  for (int i = 0; i < m; ++i) key_runs.emplace_back(runs[i].key, const_cast<K*>(runs[i].end));
  std::vector<K*> split(static_cast<std::size_t>(m));
  __gnu_parallel::multiseq_partition(key_runs.begin(), key_runs.end(), rank, split.begin(), std::less<K>());
  int n_below = 0, n_above = 0;
  for (int i = 0; i < m; ++i) {
    const RunCursor<K, P>& run = runs[i];
    const auto at = split[static_cast<std::size_t>(i)] - run.key;
    if (at > 0) below[n_below++] = {run.key, run.payload, run.key + at};
    if (run.key + at != run.end) above[n_above++] = {run.key + at, run.payload + at, run.end};
  }
  return {n_below, n_above};
}

/// Writes the `length` smallest tuples of m >= 2 non-empty runs to the output columns and advances
/// each run past the tuples it gave.
template <class Tree, class K, class P>
void tree_merge(RunCursor<K, P>* runs, int m, K* out_keys, P* out_payloads, std::int64_t length) {
  constexpr bool kPairs = requires(Tree& t, K* k, P* p) { Tree::merge_pair(t, k, p, t, k, p, 0); };
  if constexpr (kPairs && kMergeLanes == 2) {
    std::int64_t total = 0;
    for (int i = 0; i < m; ++i) total += runs[i].end - runs[i].key;
    // The halves are split from whole runs: libstdc++'s threads always take their pieces whole.
    if (length >= kLanePairMinTuples && length == total) {
      RunCursor<K, P> below[kKeyLoserTreeMaxLeaves], above[kKeyLoserTreeMaxLeaves];
      const std::int64_t half = length / 2;
      const auto [m_below, m_above] = split_runs(runs, m, half, below, above);
      if (m_below >= 2 && m_above >= 2) {
        const int levels = tree_levels(std::max(m_below, m_above));
        Tree a(below, m_below, levels), b(above, m_above, levels);
        merge_two_trees(a, out_keys, out_payloads, b, out_keys + half, out_payloads + half, half);
        // An odd length leaves one tuple, the largest, to b.
        if (length > 2 * half) merge_one_tree(b, out_keys + 2 * half, out_payloads + 2 * half, length - 2 * half);
        for (int i = 0; i < m; ++i) {  // every run is used up
          const auto left = runs[i].end - runs[i].key;
          runs[i].key += left;
          runs[i].payload += left;
        }
        return;
      }
    }
  }
  Tree tree(runs, m);
  merge_one_tree(tree, out_keys, out_payloads, length);
  for (int i = 0; i < m; ++i) runs[i] = tree.cursor(i);
}

}  // namespace mgjoin::host_merge::detail
