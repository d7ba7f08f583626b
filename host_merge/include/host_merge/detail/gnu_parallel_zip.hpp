#pragma once
// Adapts libstdc++ parallel mode's multiway merge to proxy-reference iterators (paper Section 3.2.2:
// "we adapt it to operate on pointer-based zip iterators"). The primitive assumes that *it is an lvalue
// of value_type in three places; each is replaced here for ZipIterator only, nothing else changes:
//   1. _GuardedIterator/_UnguardedIterator (k = 3, 4) return value_type& from *it: specialized to
//      return the proxy.
//   2. the per-thread kernels, which each thread runs on its pieces of the k runs. For
//      detail::UnstableKeyLess (the merges host_merge::multiway_merge starts): k = 2 takes
//      detail::two_way_merge (branch-free; an ADL overload of __merge_advance), k >= 3
//      detail::tree_merge (tree_merge.hpp: loser trees without tuple copies or sup-flag tests,
//      branch-free, prefetching each run; 8-byte keys on a KeyLoserTree, 4-byte keys on two
//      PackedLoserTrees in lockstep). For 4-byte keys with 4-byte payloads on a CPU with AVX-512,
//      every k takes detail::simd_merge instead (simd_merge.hpp: packed words through bitonic merge
//      networks, in rounds that stay in L2). All write through streaming stores (streaming_store.hpp). Any
//      other comparator, or Stable, keeps libstdc++'s kernels and plain stores; its _LoserTree's &*it
//      filler for exhausted runs becomes a value-initialized one (never compared: exhausted runs carry
//      the sup flag).
//   3. the exact splitting (multiseq_partition) keeps pointers to elements: an ADL overload splits on
//      the key column alone, where elements have addresses; splitting needs only key order.
// Limitation: __gnu_parallel::multiway_merge evaluates *(seqs[0].second) as an unused sentinel, which
// for a zip iterator reads one tuple past the end of the first sequence; host_merge::multiway_merge
// puts an empty run over a static tuple first, so callers of the library never read out of bounds.
// Requirements: the comparator orders by key only (KeyLess or operator<); sequences are ZipIterator<K, P>
// with non-const K and P (parallel mode keeps value_type* into its inputs; const iterators do not compile).
#include "host_merge/zip_iterator.hpp"  // first: KeyLess must be complete below

#include <parallel/algorithm>
#include <parallel/multiseq_selection.h>
#include <parallel/multiway_merge.h>

#include <algorithm>
#include <cstdint>
#include <optional>
#include <type_traits>
#include <utility>
#include <vector>

#include "host_merge/detail/simd_merge.hpp"
#include "host_merge/detail/streaming_store.hpp"
#include "host_merge/detail/tree_merge.hpp"
#include "host_merge/detail/two_way_merge.hpp"

namespace mgjoin::host_merge {
namespace detail {

/// KeyLess for merges that promise no order of equal keys and write outputs too large to keep in
/// cache: only merges ordered by it take our per-thread kernels and streaming stores. __gnu_parallel's
/// merges and sorts under any other comparator (KeyLess included) keep libstdc++'s kernels.
struct UnstableKeyLess : KeyLess {};

template <class K, class P>
using ZipSeq = std::pair<ZipIterator<K, P>, ZipIterator<K, P>>;

/// libstdc++'s multiway_merge_loser_tree without its &*it: exhausted runs get a value-initialized filler.
template <class LoserTree, class K, class P, class Out, class Diff, class Compare>
Out loser_tree_merge(ZipSeq<K, P>* seqs_begin, ZipSeq<K, P>* seqs_end, Out target, Diff length,
                     Compare comp) {
  using Value = typename ZipIterator<K, P>::value_type;
  const int k = static_cast<int>(seqs_end - seqs_begin);
  LoserTree tree(static_cast<unsigned>(k), comp);
  const Value filler{};
  for (int t = 0; t < k; ++t) {
    const bool exhausted = seqs_begin[t].first == seqs_begin[t].second;
    tree.__insert_start(exhausted ? filler : Value(*seqs_begin[t].first), t, exhausted);
  }
  tree.__init();
  for (Diff i = 0; i < length; ++i) {
    auto& seq = seqs_begin[tree.__get_min_source()];
    *target = *seq.first;
    ++target;
    ++seq.first;
    if (seq.first == seq.second)
      tree.__delete_min_insert(filler, true);
    else
      tree.__delete_min_insert(*seq.first, false);
  }
  return target;
}

/// Whether simd_merge takes 4/4 tuples of key type K (the types it is instantiated for).
template <class K, class P>
inline constexpr bool kSimdMergeTypes = kSimdMergeBuilt && std::is_same_v<P, std::uint32_t> &&
                                        (std::is_same_v<K, std::int32_t> || std::is_same_v<K, std::uint32_t>);

/// Merges all `total` tuples of m >= 2 non-empty runs with simd_merge and advances the runs, where it
/// takes them: 4/4 tuples, on a CPU with AVX-512, when `length` (what the caller asks for) is the whole
/// share (libstdc++'s threads always take theirs whole). Returns whether it merged.
template <class K, class P>
bool try_simd_merge(RunCursor<K, P>* runs, int m, K* out_keys, P* out_payloads, std::int64_t length,
                    std::int64_t total) {
  if constexpr (kSimdMergeTypes<K, P>) {
    if (length != total || !simd_merge_supported()) return false;
    simd_merge(runs, m, out_keys, out_payloads);
    return true;
  } else {
    return false;
  }
}

/// Merges the `length` smallest of the `total` tuples of m >= 2 non-empty runs and advances the runs:
/// simd_merge where it takes them (try_simd_merge), else the loser trees.
template <class K, class P>
void merge_thread_share(RunCursor<K, P>* runs, int m, K* out_keys, P* out_payloads, std::int64_t length,
                        std::int64_t total) {
  if (!try_simd_merge(runs, m, out_keys, out_payloads, length, total))
    tree_merge<LoserTreeFor<K, P>>(runs, m, out_keys, out_payloads, length);
}

/// The k >= 3 kernel for UnstableKeyLess: drops the empty runs (the guard run, and per-thread pieces
/// that the splitter left empty), then merges the rest (merge_thread_share). Advances each sequence's
/// begin, as libstdc++'s kernels do. nullopt (nothing done) when more runs are live than the trees take.
template <class K, class P, class Diff>
std::optional<ZipIterator<K, P>> merge_live_runs(ZipSeq<K, P>* seqs_begin, ZipSeq<K, P>* seqs_end,
                                                 ZipIterator<K, P> target, Diff length) {
  RunCursor<K, P> runs[kKeyLoserTreeMaxLeaves];
  ZipSeq<K, P>* seq_of[kKeyLoserTreeMaxLeaves];
  int m = 0;
  std::int64_t total = 0;
  for (auto* s = seqs_begin; s != seqs_end; ++s) {
    if (s->first == s->second) continue;
    if (m == kKeyLoserTreeMaxLeaves) return std::nullopt;
    runs[m] = {s->first.keys(), s->first.payloads(), s->second.keys()};
    seq_of[m++] = s;
    total += s->second - s->first;
  }
  const std::int64_t n = std::min<std::int64_t>(static_cast<std::int64_t>(length), total);
  if (n <= 0) return target;
  if (m == 1) {  // one live run: a copy
    copy_output(target.keys(), runs[0].key, n);
    copy_output(target.payloads(), runs[0].payload, n);
    seq_of[0]->first += n;
  } else {
    merge_thread_share(runs, m, target.keys(), target.payloads(), n, total);
    for (int i = 0; i < m; ++i) seq_of[i]->first = make_zip(runs[i].key, runs[i].payload);
  }
  finish_output();
  return target + n;
}

/// Whether a per-thread merge takes our kernels: unstable, integral keys, into a zip output of the same
/// column types (every merge of host_merge::multiway_merge).
template <bool Stable, class K, class P, class Out, class Compare>
inline constexpr bool kOwnKernel = !Stable && std::is_integral_v<K> && std::is_same_v<Compare, UnstableKeyLess> &&
                                   std::is_same_v<Out, ZipIterator<K, P>>;

/// The per-thread kernel for k >= 3 sequences: ours (merge_live_runs) where kOwnKernel, else
/// libstdc++'s `fallback()`.
template <bool Stable, class K, class P, class Out, class Diff, class Compare, class Fallback>
Out per_thread_merge(ZipSeq<K, P>* seqs_begin, ZipSeq<K, P>* seqs_end, Out target, Diff length,
                     Fallback fallback) {
  if constexpr (kOwnKernel<Stable, K, P, Out, Compare>) {
    if (auto end = merge_live_runs(seqs_begin, seqs_end, target, length)) return *end;
  }
  return fallback();
}

/// The body of the 3- and 4-way kernel switches (libstdc++ parallel mode's unrolled kernels, with
/// guarded iterators, as fallback).
template <int Ways, class K, class P, class Out, class Diff, class Compare>
struct SmallKSwitch {
  Out operator()(ZipSeq<K, P>* seqs_begin, ZipSeq<K, P>* seqs_end, Out target, Diff length, Compare comp) {
    return per_thread_merge<false, K, P, Out, Diff, Compare>(seqs_begin, seqs_end, target, length, [&] {
      if constexpr (Ways == 3)
        return __gnu_parallel::multiway_merge_3_variant<__gnu_parallel::_GuardedIterator>(seqs_begin, seqs_end,
                                                                                          target, length, comp);
      else
        return __gnu_parallel::multiway_merge_4_variant<__gnu_parallel::_GuardedIterator>(seqs_begin, seqs_end,
                                                                                          target, length, comp);
    });
  }
};

}  // namespace detail

/// The k = 2 per-thread kernel (found by ADL from __gnu_parallel::__sequential_multiway_merge, more
/// specialized than libstdc++'s __merge_advance): detail::two_way_merge, stable like the kernel it
/// replaces, or, for 4/4 tuples on AVX-512, detail::simd_merge (stable too) as merge_thread_share
/// picks it. Advances begin1 and begin2 past the tuples written. Its name is reserved to the
/// implementation; it is declared here anyway because an ADL overload of it is the only hook that
/// libstdc++ leaves for the 2-way kernel (there is no switch class to specialize, as for k = 3, 4, k).
template <class K, class P, class Diff>
ZipIterator<K, P> __merge_advance(ZipIterator<K, P>& begin1, ZipIterator<K, P> end1, ZipIterator<K, P>& begin2,
                                  ZipIterator<K, P> end2, ZipIterator<K, P> target, Diff max_length,
                                  detail::UnstableKeyLess comp) {
  if constexpr (!std::is_integral_v<K> || !std::is_integral_v<P>) {
    return __gnu_parallel::__merge_advance_movc(begin1, end1, begin2, end2, target, max_length, comp);
  } else {
    detail::TwoWayCursor<K, P> a{begin1.keys(), begin1.payloads(), end1.keys()};
    detail::TwoWayCursor<K, P> b{begin2.keys(), begin2.payloads(), end2.keys()};
    const std::int64_t total = a.left() + b.left();
    const auto n = std::min<std::int64_t>(static_cast<std::int64_t>(max_length), total);
    detail::RunCursor<K, P> runs[2] = {{a.key, a.payload, a.end}, {b.key, b.payload, b.end}};
    if (a.left() > 0 && b.left() > 0 && detail::try_simd_merge(runs, 2, target.keys(), target.payloads(), n, total)) {
      a = {runs[0].key, runs[0].payload, a.end};
      b = {runs[1].key, runs[1].payload, b.end};
    } else {
      detail::merge_through_stage(target.keys(), target.payloads(), n, [&](K* keys, P* payloads, std::int64_t block) {
        detail::two_way_merge(a, b, keys, payloads, block);
      });
    }
    detail::finish_output();
    begin1 = make_zip(a.key, a.payload);
    begin2 = make_zip(b.key, b.payload);
    return target + n;
  }
}

/// Exact splitting for zip sequences (found by ADL from __gnu_parallel::multiway_merge_exact_splitting):
/// partitions the key columns, then maps the split positions back to zip iterators.
template <class K, class P, class RankType, class RankIterator, class Compare>
void multiseq_partition(
    __gnu_cxx::__normal_iterator<detail::ZipSeq<K, P>*, std::vector<detail::ZipSeq<K, P>>> seqs_begin,
    __gnu_cxx::__normal_iterator<detail::ZipSeq<K, P>*, std::vector<detail::ZipSeq<K, P>>> seqs_end,
    RankType rank, RankIterator begin_offsets, Compare comp) {
  using Value = typename ZipIterator<K, P>::value_type;
  std::vector<std::pair<K*, K*>> key_seqs;
  key_seqs.reserve(static_cast<std::size_t>(seqs_end - seqs_begin));
  for (auto s = seqs_begin; s != seqs_end; ++s) key_seqs.emplace_back(s->first.keys(), s->second.keys());
  std::vector<K*> key_offsets(key_seqs.size());
  auto key_comp = [comp](const K& a, const K& b) mutable { return comp(Value{a, {}}, Value{b, {}}); };
  __gnu_parallel::multiseq_partition(key_seqs.begin(), key_seqs.end(), rank, key_offsets.begin(), key_comp);
  for (std::size_t i = 0; i < key_seqs.size(); ++i)
    begin_offsets[i] = seqs_begin[i].first + (key_offsets[i] - key_seqs[i].first);
}

}  // namespace mgjoin::host_merge

namespace __gnu_parallel {

template <class K, class P, class Compare>
class _GuardedIterator<mgjoin::host_merge::ZipIterator<K, P>, Compare> {
  using It = mgjoin::host_merge::ZipIterator<K, P>;

 public:
  _GuardedIterator(It begin, It end, Compare& comp) : current_(begin), end_(end), comp_(comp) {}
  _GuardedIterator& operator++() {
    ++current_;
    return *this;
  }
  typename It::reference operator*() const { return *current_; }
  operator It() const { return current_; }

  // An exhausted sequence is an implicit supremum, as in the primary template.
  friend bool operator<(const _GuardedIterator& a, const _GuardedIterator& b) {
    if (a.current_ == a.end_) return b.current_ == b.end_;
    if (b.current_ == b.end_) return true;
    return a.comp_(*a, *b);
  }
  friend bool operator<=(const _GuardedIterator& a, const _GuardedIterator& b) {
    if (b.current_ == b.end_) return a.current_ != a.end_;
    if (a.current_ == a.end_) return false;
    return !b.comp_(*b, *a);
  }

 private:
  It current_;
  It end_;
  Compare& comp_;
};

template <class K, class P, class Compare>
class _UnguardedIterator<mgjoin::host_merge::ZipIterator<K, P>, Compare> {
  using It = mgjoin::host_merge::ZipIterator<K, P>;

 public:
  _UnguardedIterator(It begin, It /*end*/, Compare& comp) : current_(begin), comp_(comp) {}
  _UnguardedIterator& operator++() {
    ++current_;
    return *this;
  }
  typename It::reference operator*() const { return *current_; }
  operator It() const { return current_; }
  friend bool operator<(const _UnguardedIterator& a, const _UnguardedIterator& b) { return a.comp_(*a, *b); }
  friend bool operator<=(const _UnguardedIterator& a, const _UnguardedIterator& b) { return !b.comp_(*b, *a); }

 private:
  It current_;
  Compare& comp_;
};

// The 3-, 4- and k-way kernels for zip sequences (see 2. at the top).
template <class K, class P, class Out, class Diff, class Compare>
struct __multiway_merge_3_variant_sentinel_switch<false, mgjoin::host_merge::detail::ZipSeq<K, P>*, Out, Diff,
                                                  Compare>
    : mgjoin::host_merge::detail::SmallKSwitch<3, K, P, Out, Diff, Compare> {};

template <class K, class P, class Out, class Diff, class Compare>
struct __multiway_merge_4_variant_sentinel_switch<false, mgjoin::host_merge::detail::ZipSeq<K, P>*, Out, Diff,
                                                  Compare>
    : mgjoin::host_merge::detail::SmallKSwitch<4, K, P, Out, Diff, Compare> {};

template <bool Stable, class K, class P, class Out, class Diff, class Compare>
struct __multiway_merge_k_variant_sentinel_switch<false, Stable, mgjoin::host_merge::detail::ZipSeq<K, P>*, Out,
                                                  Diff, Compare> {
  using Seq = mgjoin::host_merge::detail::ZipSeq<K, P>;
  using Value = typename mgjoin::host_merge::ZipIterator<K, P>::value_type;

  Out operator()(Seq* seqs_begin, Seq* seqs_end, Out target, const Value& /*sentinel*/, Diff length,
                 Compare comp) {
    return mgjoin::host_merge::detail::per_thread_merge<Stable, K, P, Out, Diff, Compare>(
        seqs_begin, seqs_end, target, length, [&] {
          return mgjoin::host_merge::detail::loser_tree_merge<_LoserTree<Stable, Value, Compare>>(
              seqs_begin, seqs_end, target, length, comp);
        });
  }
};

}  // namespace __gnu_parallel
