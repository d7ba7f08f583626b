#pragma once
// Per-thread k-way merge kernel for zip-iterator runs ordered by KeyLess (paper Section 3.2.2: the
// merge phase is __gnu_parallel::multiway_merge on zero-copy zip iterators; this replaces the
// sequential k >= 3 kernels that each of its threads runs, the splitting and dispatch stay libstdc++'s).
//
// Why not libstdc++'s _LoserTree: it keeps a copy of the whole tuple in every node and tests a "sup"
// (exhausted) flag in every comparison, so at k >= 5 each output tuple costs log2(k) branchy compares
// over 2-word nodes: k = 8 ran at 41% of memcpy bandwidth where the unrolled k = 3/4 code reached 74%.
// Here:
//   - an inner node holds only the losing leaf's (run's) index and its head key, not a tuple and no
//     flag, so a replay reads log2(k) small nodes and compares and selects branch-free; each run's
//     next key waits in a small contiguous array, so refilling the winner's leaf is an L1 hit and the
//     load from its run's column stays off the chain of dependent loads from one output to the next;
//   - the leaf count is padded to a power of two, so every replay has the same, compile-time depth;
//   - exhausted runs and padding leaves hold the key type's numeric max. No compare tests a flag: a run
//     with real max keys may tie with them, but when an exhausted leaf wins, every live run's head (its
//     minimum) is >= max, i.e. all remaining tuples have key max, and they are copied out run by run
//     (order of equal keys is unspecified in our API);
//   - the winner's key (already in a register) and its payload go straight into the output columns
//     (with streaming stores, the caller passes a stage: merge_through_stage in streaming_store.hpp).
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <type_traits>

namespace mgjoin::host_merge::detail {

/// Largest leaf count (runs per thread) the kernel takes; more falls back to libstdc++'s tree.
inline constexpr int kKeyLoserTreeMaxLeaves = 64;

#ifndef MGJOIN_MERGE_PREFETCH_BYTES
#define MGJOIN_MERGE_PREFETCH_BYTES 512
#endif
/// How far ahead of a run's cursor the tree kernels prefetch its key and payload columns, each time
/// the run wins (0: no software prefetch). At k = 8 each of 64 threads reads 16 streams, which the
/// hardware prefetchers do not cover: on the x4 host, 512 bytes took 8/8 k = 8 from 45-50% to 83-89% of
/// memcpy bandwidth (PERFORMANCE.md).
inline constexpr std::size_t kMergePrefetchBytes = MGJOIN_MERGE_PREFETCH_BYTES;

/// Position of one run in a tree merge; the key and payload cursors move together.
template <class K, class P>
struct RunCursor {
  K* key;
  P* payload;
  const K* end;
};

/// Prefetches run's columns kMergePrefetchBytes ahead of its cursor. A prefetch never faults, so the
/// address may lie past the run's end; it is computed as an integer, not by pointer arithmetic.
template <class K, class P>
inline void prefetch_ahead(const RunCursor<K, P>& run) {
  if constexpr (kMergePrefetchBytes > 0) {
    auto ahead = [](const void* p) {
      return reinterpret_cast<const void*>(reinterpret_cast<std::uintptr_t>(p) + kMergePrefetchBytes);
    };
    __builtin_prefetch(ahead(run.key));
    __builtin_prefetch(ahead(run.payload));
  }
}

/// Levels of a tree over m >= 2 runs: its leaf count is the next power of two (padding leaves).
inline int tree_levels(int m) {
  int levels = 1;
  while ((1 << levels) < m) ++levels;
  return levels;
}

/// The key after run's head, or the key type's max when the head is the run's last tuple (what an
/// exhausted leaf holds).
template <class K, class P>
inline K key_after_head(const RunCursor<K, P>& run) {
  return run.end - run.key > 1 ? run.key[1] : std::numeric_limits<K>::max();
}

/// Calls f(std::integral_constant<int, levels>{}) for a tree depth of 1..6 (the kernels unroll their
/// replay over a compile-time depth; kKeyLoserTreeMaxLeaves = 64 leaves need at most 6).
template <class F>
decltype(auto) with_levels(int levels, F&& f) {
  switch (levels) {
    case 1: return f(std::integral_constant<int, 1>{});
    case 2: return f(std::integral_constant<int, 2>{});
    case 3: return f(std::integral_constant<int, 3>{});
    case 4: return f(std::integral_constant<int, 4>{});
    case 5: return f(std::integral_constant<int, 5>{});
    default: return f(std::integral_constant<int, 6>{});
  }
}

/// Copies a tree's runs out in leaf order once every live run holds only max keys (then any order is
/// a sorted one): `length` tuples into the output columns.
template <class K, class P>
void drain_max_keys(RunCursor<K, P>* runs, int leaves, K* out_keys, P* out_payloads, std::int64_t length) {
  std::int64_t written = 0;
  for (int i = 0; i < leaves && written < length; ++i) {
    RunCursor<K, P>& run = runs[i];
    const std::int64_t n = std::min<std::int64_t>(run.end - run.key, length - written);
    std::copy(run.key, run.key + n, out_keys + written);
    std::copy(run.payload, run.payload + n, out_payloads + written);
    run.key += n;
    run.payload += n;
    written += n;
  }
}

/// A tournament (loser) tree over at most kKeyLoserTreeMaxLeaves runs of (key, payload) columns.
template <class K, class P>
class KeyLoserTree {
 public:
  using Cursor = RunCursor<K, P>;

  /// Takes m >= 2 non-empty runs (m <= kKeyLoserTreeMaxLeaves) and plays the first tournament.
  KeyLoserTree(const Cursor* runs, int m) : levels_(tree_levels(m)), leaves_(1 << levels_) {
    K head[kKeyLoserTreeMaxLeaves];
    for (int i = 0; i < leaves_; ++i) {
      // Padding leaves are empty runs: key max, cursor == end (never read).
      cursor_[i] = i < m ? runs[i] : Cursor{nullptr, nullptr, nullptr};
      head[i] = i < m ? runs[i].key[0] : kMax;
      next_[i] = i < m ? key_after_head(runs[i]) : kMax;
    }
    play_first_tournament(head);
  }

  /// Writes the `length` smallest remaining tuples to out_keys/out_payloads (length <= tuples left).
  void merge(K* out_keys, P* out_payloads, std::int64_t length) {
    with_levels(levels_, [&](auto levels) { merge_levels<levels()>(out_keys, out_payloads, length); });
  }

  /// Where run i stands now (i < m of the constructor).
  const Cursor& cursor(int i) const { return cursor_[i]; }

 private:
  static_assert(std::is_integral_v<K>, "numeric max must be the largest key (no floating-point keys)");
  static_assert(kKeyLoserTreeMaxLeaves == 64, "with_levels() dispatches depths 1..6");
  static constexpr K kMax = std::numeric_limits<K>::max();
  using U = std::make_unsigned_t<K>;  // for branch-free selects on the key bits

  /// A (head key, leaf) pair while the first tournament is played.
  struct Node {
    K key;
    std::uint32_t leaf;
  };

  /// Bottom-up first round: each inner node keeps the loser of its two subtrees' winners.
  void play_first_tournament(const K* head) {
    Node winner[2 * kKeyLoserTreeMaxLeaves];
    for (int i = 0; i < leaves_; ++i) winner[leaves_ + i] = {head[i], static_cast<std::uint32_t>(i)};
    for (int node = leaves_ - 1; node >= 1; --node) {
      const Node a = winner[2 * node], b = winner[2 * node + 1];
      const bool b_wins = b.key < a.key;
      winner[node] = b_wins ? b : a;
      loser_key_[node] = b_wins ? a.key : b.key;
      loser_leaf_[node] = b_wins ? a.leaf : b.leaf;
    }
    loser_key_[0] = winner[1].key;
    loser_leaf_[0] = winner[1].leaf;
  }

  // No SLP vectorization: for 4-byte keys GCC packs the key and leaf selects into SSE registers, and
  // the moves between register files lengthen the replay's dependency chain (~1.6x slower).
  template <int Levels>
  __attribute__((optimize("no-tree-slp-vectorize"))) void merge_levels(K* __restrict out_keys,
                                                                       P* __restrict out_payloads,
                                                                       std::int64_t length) {
    // Locals, so that stores to the output columns cannot alias the tree in the compiler's view.
    K* __restrict loser_key = loser_key_;
    std::uint32_t* __restrict loser_leaf = loser_leaf_;
    K* __restrict next = next_;
    Cursor* __restrict cursor = cursor_;
    std::uint32_t w = loser_leaf[0];
    K wk = loser_key[0];
    for (std::int64_t i = 0; i < length; ++i) {
      Cursor& run = cursor[w];
      if (run.key == run.end) [[unlikely]] {  // an empty leaf won: only max keys are left
        loser_key[0] = wk;
        loser_leaf[0] = w;
        return drain_max_keys(cursor_, leaves_, out_keys + i, out_payloads + i, length - i);
      }
      out_keys[i] = wk;
      out_payloads[i] = *run.payload;
      ++run.key;
      ++run.payload;
      prefetch_ahead(run);
      // The winner's next key comes from next_ (an L1 hit), not from its run: that keeps the load
      // from the run's column off the dependency chain from one output tuple to the next.
      wk = next[w];
      next[w] = key_after_head(run);
      // Replay from leaf w to the root: at each node the smaller key goes on up, the other stays.
      std::uint32_t node = (w + (1u << Levels)) >> 1;
#pragma GCC unroll 8
      for (int level = 0; level < Levels; ++level, node >>= 1) {
        const K other_key = loser_key[node];
        const std::uint32_t other_leaf = loser_leaf[node];
        // Select with masks, not ?: or std::min/max: GCC turns those into branches here, mispredicted
        // half the time on random keys (that alone made this kernel no faster than _LoserTree).
        const U key_mask = U(0) - U(other_key < wk);  // all ones where the other leaf wins
        const auto leaf_mask = static_cast<std::uint32_t>(key_mask);
        const U keys = U(other_key) ^ U(wk);
        const std::uint32_t leaves = other_leaf ^ w;
        loser_key[node] = K(U(other_key) ^ (keys & key_mask));
        loser_leaf[node] = other_leaf ^ (leaves & leaf_mask);
        wk = K(U(wk) ^ (keys & key_mask));
        w ^= leaves & leaf_mask;
      }
    }
    loser_key[0] = wk;
    loser_leaf[0] = w;
  }

  int levels_;
  int leaves_;
  // Inner node i (1..leaves-1): the leaf that lost there and its head key; index 0: the winner.
  // Two arrays, not one of pairs, so that a node's address is an index scaled by the element size.
  K loser_key_[kKeyLoserTreeMaxLeaves];
  std::uint32_t loser_leaf_[kKeyLoserTreeMaxLeaves];
  K next_[kKeyLoserTreeMaxLeaves];  // key after each leaf's head (max past the end)
  Cursor cursor_[kKeyLoserTreeMaxLeaves];
};

}  // namespace mgjoin::host_merge::detail
