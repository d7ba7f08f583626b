// Merge phase (paper Section 3.2): k sorted chunksets -> one sorted relation, zero-copy on zip iterators.
#include "host_merge/multiway_merge.hpp"

#include <omp.h>

#include <functional>
#include <iterator>
#include <utility>
#include <vector>

#include "core/dispatch.hpp"

#include <mgjoin/error.hpp>

#include "host_merge/zip_iterator.hpp"

namespace mgjoin::host_merge {
namespace {

template <class It>
using Sequences = std::vector<std::pair<It, It>>;

/// __gnu_parallel::multiway_merge reads *(seqs[0].second) as an (unused) sentinel; for a zip iterator
/// that is a read past the first run. An empty first run over a static element keeps it in bounds; the
/// parallel path drops empty runs, so it costs nothing there; on its sequential path (< 1000 tuples)
/// the merge sees k + 1 sequences. One thread skips both (merge_sequences).
template <class It>
Sequences<It> with_guard_run(It guard, std::size_t k) {
  Sequences<It> seqs;
  seqs.reserve(k + 1);
  seqs.emplace_back(guard, guard);
  return seqs;
}

// libstdc++ parallel mode keeps `value_type*` pointers into the runs (no const iterators), so the
// runs are viewed through mutable pointers; the merge only reads them.
template <class T>
T* mutable_ptr(const T* p) {
  return const_cast<T*>(p);
}

/// seqs: the guard run, then the non-empty runs.
template <class It, class Out, class Compare>
void merge_sequences(Sequences<It>& seqs, Out out, std::int64_t n, Compare comp) {
  if (n == 0) return;
  const int threads = omp_get_max_threads();
  if (threads > 1) {
    __gnu_parallel::multiway_merge(seqs.data(), seqs.data() + seqs.size(), out, n, comp,
                                   __gnu_parallel::parallel_tag(threads));
    return;
  }
  // One thread: the per-thread kernel for the k runs, as each thread of the parallel path runs it,
  // without the guard run (only the front end reads the sentinel; the kernels get a dummy).
  using Value = typename std::iterator_traits<It>::value_type;
  __gnu_parallel::__sequential_multiway_merge</*stable=*/false, /*sentinels=*/false>(
      seqs.data() + 1, seqs.data() + seqs.size(), out, Value{}, n, comp);
}

void expect_run_count(std::size_t k) {
  MGJOIN_EXPECTS(k <= kMaxRuns, "multiway_merge: " + std::to_string(k) + " runs, at most " +
                                    std::to_string(kMaxRuns) + " supported");
}

}  // namespace

template <class K, class P>
void multiway_merge(std::span<const RunView<K, P>> runs, K* out_keys, P* out_payloads) {
  expect_run_count(runs.size());
  static K guard_key{};
  static P guard_payload{};
  auto seqs = with_guard_run(make_zip(&guard_key, &guard_payload), runs.size());
  for (const auto& r : runs) {
    if (r.size == 0) continue;
    const auto begin = make_zip(mutable_ptr(r.keys), mutable_ptr(r.payloads));
    seqs.emplace_back(begin, begin + r.size);
  }
  merge_sequences(seqs, make_zip(out_keys, out_payloads), total_size(runs), detail::UnstableKeyLess{});
}

template <class K>
void multiway_merge(std::span<const RunView<K>> runs, K* out_keys) {
  expect_run_count(runs.size());
  static K guard_key{};
  auto seqs = with_guard_run(&guard_key, runs.size());
  for (const auto& r : runs)
    if (r.size > 0) seqs.emplace_back(mutable_ptr(r.keys), mutable_ptr(r.keys) + r.size);
  merge_sequences(seqs, out_keys, total_size(runs), std::less<K>{});
}

namespace {

template <class K, class P>
void merge_raw(std::span<const RawRun> raw, void* out_keys, void* out_payloads) {
  if constexpr (std::is_void_v<P>) {
    std::vector<RunView<K>> runs;
    for (const auto& r : raw) runs.push_back({static_cast<const K*>(r.keys), r.size});
    multiway_merge<K>(std::span<const RunView<K>>(runs), static_cast<K*>(out_keys));
  } else {
    std::vector<RunView<K, P>> runs;
    for (const auto& r : raw)
      runs.push_back({static_cast<const K*>(r.keys), static_cast<const P*>(r.payloads), r.size});
    multiway_merge<K, P>(std::span<const RunView<K, P>>(runs), static_cast<K*>(out_keys),
                         static_cast<P*>(out_payloads));
  }
}

}  // namespace

void multiway_merge(DType key_type, int payload_bytes, std::span<const RawRun> runs, void* out_keys,
                    void* out_payloads) {
  dispatch_key_type(key_type, [&](auto key) {
    dispatch_payload_width(payload_bytes, [&](auto payload) {
      merge_raw<decltype(key), payload_or_void<decltype(payload)>>(runs, out_keys, out_payloads);
    });
  });
}

// Explicit instantiations: K in {int32, uint32, int64, uint64} x P in {uint32, uint64, key-only}.
#define MGJOIN_HOST_MERGE_INSTANTIATE(K)                                                              \
  template void multiway_merge<K, std::uint32_t>(std::span<const RunView<K, std::uint32_t>>, K*,      \
                                                 std::uint32_t*);                                     \
  template void multiway_merge<K, std::uint64_t>(std::span<const RunView<K, std::uint64_t>>, K*,      \
                                                 std::uint64_t*);                                     \
  template void multiway_merge<K>(std::span<const RunView<K>>, K*);
MGJOIN_HOST_MERGE_INSTANTIATE(std::int32_t)
MGJOIN_HOST_MERGE_INSTANTIATE(std::uint32_t)
MGJOIN_HOST_MERGE_INSTANTIATE(std::int64_t)
MGJOIN_HOST_MERGE_INSTANTIATE(std::uint64_t)
#undef MGJOIN_HOST_MERGE_INSTANTIATE

}  // namespace mgjoin::host_merge
