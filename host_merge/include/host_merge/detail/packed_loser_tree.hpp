#pragma once
// Per-thread k-way merge kernel for 4-byte keys (paper Section 3.2.2; the k >= 3 kernel that each
// thread of __gnu_parallel::multiway_merge runs, like KeyLoserTree, which serves 8-byte keys).
//
// Why a second tree: with 4-byte keys a merged tuple is half the bytes of an 8/8 one, so the same
// memory bandwidth needs twice the tuples per second, and KeyLoserTree's replay, a chain of
// compare -> mask -> and -> xor per level, held 4/4 merges at 47-56% of memcpy bandwidth on the x4
// host. Here a node is one 64-bit word, (order-preserving key bits << 32) | leaf: the smaller word
// is the smaller key, ties broken by leaf, so one compare orders two nodes and a level of the
// replay is compare + two conditional moves (min goes up, max stays): two cycles on the chain.
//
// Exhausted runs and padding leaves hold the key type's max, as in KeyLoserTree: when such a leaf
// wins, every live run's head is max too, and the rest is copied out run by run.
#include <algorithm>
#include <cstdint>
#include <limits>
#include <type_traits>

#include "host_merge/detail/key_loser_tree.hpp"

namespace mgjoin::host_merge::detail {

/// lo = min(lo, hi), hi = max(lo, hi), branch-free. GCC compiles ?: and std::min/max on this chain
/// into branches (mispredicted half the time on random keys), so x86-64 gets cmov by hand.
inline void order_pair(std::uint64_t& lo, std::uint64_t& hi) noexcept {
#if defined(__x86_64__)
  const std::uint64_t old_lo = lo;
  asm("cmpq %[hi], %[lo]\n\t"
      "cmova %[hi], %[lo]\n\t"      // lo > hi: lo takes hi
      "cmova %[old_lo], %[hi]"      // same flags: hi takes the old lo
      : [lo] "+&r"(lo), [hi] "+&r"(hi)
      : [old_lo] "r"(old_lo)
      : "cc");
#else
  const std::uint64_t a = lo, b = hi;
  lo = a < b ? a : b;
  hi = a < b ? b : a;
#endif
}

/// A tournament (loser) tree of one-word nodes over at most kKeyLoserTreeMaxLeaves runs of 4-byte keys.
template <class K, class P>
class PackedLoserTree {
 public:
  using Cursor = RunCursor<K, P>;

  /// Takes m >= 2 non-empty runs (m <= kKeyLoserTreeMaxLeaves) and plays the first tournament. The
  /// tree gets at least `min_levels` levels (padding leaves), so that two trees can merge in lockstep.
  PackedLoserTree(const Cursor* runs, int m, int min_levels = 1)
      : levels_(std::max(min_levels, tree_levels(m))), leaves_(1 << levels_) {
    std::uint64_t winner[2 * kKeyLoserTreeMaxLeaves];
    for (int i = 0; i < leaves_; ++i) {
      const auto leaf = static_cast<std::uint32_t>(i);
      cursor_[i] = i < m ? runs[i] : Cursor{nullptr, nullptr, nullptr};  // padding: an empty run
      winner[leaves_ + i] = pack(i < m ? runs[i].key[0] : kMax, leaf);
      next_[i] = pack(i < m ? key_after_head(runs[i]) : kMax, leaf);
    }
    for (int node = leaves_ - 1; node >= 1; --node) {  // each inner node keeps its subtrees' loser
      std::uint64_t lo = winner[2 * node], hi = winner[2 * node + 1];
      order_pair(lo, hi);
      winner[node] = lo;
      node_[node] = hi;
    }
    node_[0] = winner[1];
  }

  /// Writes the `length` smallest remaining tuples to out_keys/out_payloads (length <= tuples left).
  void merge(K* out_keys, P* out_payloads, std::int64_t length) {
    with_levels(levels_, [&](auto levels) { merge_levels<levels()>(out_keys, out_payloads, length); });
  }

  /// Two independent merges in one instruction stream: up to `length` tuples of a to a_keys/a_payloads
  /// and as many of b to b_keys/b_payloads, one step of each per iteration, so that the out-of-order
  /// core overlaps their replays (one tree's chain of dependent steps leaves the core mostly idle: two
  /// in lockstep merged 1.7x the tuples per second in cache). Returns the steps done: fewer than
  /// `length` once either tree has only max keys left (finish each with merge()). a and b must have
  /// the same depth (build both with the same min_levels).
  static std::int64_t merge_pair(PackedLoserTree& a, K* a_keys, P* a_payloads, PackedLoserTree& b, K* b_keys,
                                 P* b_payloads, std::int64_t length) {
    return with_levels(a.levels_, [&](auto levels) {
      return merge_pair_levels<levels()>(a, a_keys, a_payloads, b, b_keys, b_payloads, length);
    });
  }

  /// Where run i stands now (i < m of the constructor).
  const Cursor& cursor(int i) const { return cursor_[i]; }

 private:
  static_assert(std::is_integral_v<K> && sizeof(K) == 4, "a node packs a 4-byte key with a 4-byte leaf");
  static_assert(kKeyLoserTreeMaxLeaves == 64, "with_levels() dispatches depths 1..6");
  static constexpr K kMax = std::numeric_limits<K>::max();
  // Flipping the sign bit of a signed key makes unsigned order equal signed order.
  static constexpr std::uint32_t kFlip = std::is_signed_v<K> ? 0x80000000u : 0u;

  static std::uint64_t pack(K key, std::uint32_t leaf) {
    return (std::uint64_t{static_cast<std::uint32_t>(key) ^ kFlip} << 32) | leaf;
  }
  static K key_of(std::uint64_t node) { return static_cast<K>(static_cast<std::uint32_t>(node >> 32) ^ kFlip); }
  static std::uint32_t leaf_of(std::uint64_t node) { return static_cast<std::uint32_t>(node); }

  /// A tree's replay state in locals while it merges: restrict, so that stores to the output columns
  /// cannot alias the tree in the compiler's view, and the winner in a register.
  struct Lane {
    std::uint64_t* __restrict node;
    std::uint64_t* __restrict next;
    Cursor* __restrict cursor;
    std::uint64_t win;

    bool winner_live() const { return cursor[leaf_of(win)].key != cursor[leaf_of(win)].end; }
  };

  Lane lane() { return {node_, next_, cursor_, node_[0]}; }

  /// Outputs the winner (whose run must be live) and replays from its leaf to the root.
  template <int Levels>
  [[gnu::always_inline]] static inline void step(Lane& l, K* out_key, P* out_payload) {
    const std::uint32_t w = leaf_of(l.win);
    Cursor& run = l.cursor[w];
    *out_key = key_of(l.win);
    *out_payload = *run.payload;
    ++run.key;
    ++run.payload;
    prefetch_ahead(run);
    // The winner's next key comes from next (an L1 hit), already packed with its leaf.
    std::uint64_t win = l.next[w];
    l.next[w] = pack(key_after_head(run), w);
    std::uint32_t at = (w + (1u << Levels)) >> 1;
#pragma GCC unroll 8
    for (int level = 0; level < Levels; ++level, at >>= 1) order_pair(win, l.node[at]);
    l.win = win;
  }

  template <int Levels>
  static std::int64_t merge_pair_levels(PackedLoserTree& ta, K* __restrict a_keys, P* __restrict a_payloads,
                                        PackedLoserTree& tb, K* __restrict b_keys, P* __restrict b_payloads,
                                        std::int64_t length) {
    Lane a = ta.lane(), b = tb.lane();
    std::int64_t i = 0;
    for (; i < length && (a.winner_live() & b.winner_live()); ++i) {
      step<Levels>(a, a_keys + i, a_payloads + i);
      step<Levels>(b, b_keys + i, b_payloads + i);
    }
    ta.node_[0] = a.win;
    tb.node_[0] = b.win;
    return i;
  }

  template <int Levels>
  void merge_levels(K* __restrict out_keys, P* __restrict out_payloads, std::int64_t length) {
    Lane l = lane();
    for (std::int64_t i = 0; i < length; ++i) {
      if (!l.winner_live()) [[unlikely]] {  // an empty leaf won: only max keys are left
        node_[0] = l.win;
        return drain_max_keys(cursor_, leaves_, out_keys + i, out_payloads + i, length - i);
      }
      step<Levels>(l, out_keys + i, out_payloads + i);
    }
    node_[0] = l.win;
  }

  int levels_;
  int leaves_;
  std::uint64_t node_[kKeyLoserTreeMaxLeaves];  // inner node i (1..leaves-1): its loser; 0: the winner
  std::uint64_t next_[kKeyLoserTreeMaxLeaves];  // each leaf's key after its head (max past the end)
  Cursor cursor_[kKeyLoserTreeMaxLeaves];
};

}  // namespace mgjoin::host_merge::detail
