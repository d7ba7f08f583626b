#pragma once
// Per-thread 2-way merge kernel for zip-iterator runs ordered by key (paper Section 3.2.2; replaces
// libstdc++'s __merge_advance_movc, which each thread of __gnu_parallel::multiway_merge runs for k = 2).
// Branch-free: on random keys, half of all "which run is next" branches mispredict. Stable (ties take
// the first run), like the kernel it replaces, so __gnu_parallel's stable merges may use it too.
// It writes plain stores; with streaming stores, the caller passes a stage (merge_through_stage).
#include <algorithm>
#include <cstdint>
#include <type_traits>

namespace mgjoin::host_merge::detail {

/// Position of one run of the 2-way merge; the key and payload cursors move together.
template <class K, class P>
struct TwoWayCursor {
  K* key;
  P* payload;
  K* end;

  std::int64_t left() const { return end - key; }
};

/// All ones where `take` holds, else zero, in T's width (for selects GCC cannot turn into branches).
template <class T>
inline T mask_of(bool take) {
  using U = std::make_unsigned_t<T>;
  return static_cast<T>(U(0) - U(take));
}

/// Picks b where mask is all ones, else a.
template <class T>
inline T select(T mask, T a, T b) {
  using U = std::make_unsigned_t<T>;
  return static_cast<T>(U(a) ^ ((U(a) ^ U(b)) & U(mask)));
}

/// Copies the next n tuples of `run` to the output and advances it.
template <class K, class P>
void copy_run(TwoWayCursor<K, P>& run, K* out_keys, P* out_payloads, std::int64_t n) {
  std::copy(run.key, run.key + n, out_keys);
  std::copy(run.payload, run.payload + n, out_payloads);
  run.key += n;
  run.payload += n;
}

/// Writes the `length` smallest tuples of runs a and b (length <= a.left() + b.left()) to the output
/// columns and advances the cursors past them.
template <class K, class P>
__attribute__((optimize("no-tree-slp-vectorize")))  // see KeyLoserTree::merge_levels
void two_way_merge(TwoWayCursor<K, P>& a, TwoWayCursor<K, P>& b, K* __restrict out_keys,
                   P* __restrict out_payloads, std::int64_t length) {
  static_assert(std::is_integral_v<K> && std::is_integral_v<P>, "selects work on the words' bits");
  std::int64_t i = 0;
  while (i < length && a.key != a.end && b.key != b.end) {
    // Each step takes one tuple from a or b and reads the key after each head, so this many steps
    // need no end test. 0 when a run is down to its last tuple: then one step with no look-ahead.
    const std::int64_t steps = std::min({length - i, a.left() - 1, b.left() - 1});
    if (steps == 0) {
      const bool take_b = *b.key < *a.key;
      auto& run = take_b ? b : a;
      out_keys[i] = *run.key++;
      out_payloads[i++] = *run.payload++;
      continue;
    }
    // The heads wait in registers and the next keys are loaded before the compare that needs them,
    // so the chain from one step to the next is compare -> select, not compare -> address -> load.
    K ka = a.key[0], kb = b.key[0];
    K* ak = a.key + 1;
    K* bk = b.key + 1;
    P* ap = a.payload;
    P* bp = b.payload;
    for (std::int64_t s = 0; s < steps; ++s, ++i) {
      const bool take_b = kb < ka;
      const K mask = mask_of<K>(take_b);
      out_keys[i] = select(mask, ka, kb);
      out_payloads[i] = select(mask_of<P>(take_b), *ap, *bp);
      const K next_a = *ak, next_b = *bk;
      ka = select(mask, next_a, ka);  // a advances where b did not win
      kb = select(mask, kb, next_b);
      ak += !take_b;
      ap += !take_b;
      bk += take_b;
      bp += take_b;
    }
    a = {ak - 1, ap, a.end};
    b = {bk - 1, bp, b.end};
  }
  // One run is exhausted (or length reached): the rest comes from the other, in order.
  auto& rest = a.key != a.end ? a : b;
  copy_run(rest, out_keys + i, out_payloads + i, std::min(length - i, rest.left()));
}

}  // namespace mgjoin::host_merge::detail
