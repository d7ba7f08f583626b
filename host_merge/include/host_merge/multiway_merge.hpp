#pragma once
// Merge phase (paper Section 3.2): merges the k sorted chunksets of a relation, which the sort phase left
// in host memory, into one sorted relation with __gnu_parallel::multiway_merge over all OpenMP threads.
// Keys and payloads stay in separate columns and move in lockstep through zip iterators (no pair copies).
//
// Rules for every overload:
//   - 0 <= k <= kMaxRuns runs, each sorted ascending by key; runs may be empty and of unequal lengths.
//   - The output holds sum(size) tuples, is pre-allocated by the caller and overlaps no run.
//   - Order of equal keys is unspecified (the merge is not stable); each (key, payload) tuple of the
//     input appears exactly once in the output.
//   - The output is written with streaming (non-temporal) stores where MGJOIN_MERGE_STREAMING_STORES
//     is 1 (default on x86-64; host_merge/detail/streaming_store.hpp): it is not left in the caches.
//   - Instantiated for K in {int32, uint32, int64, uint64} x P in {uint32, uint64, key-only}. Signed keys
//     are merged in their own order (host memory holds the user's representation).
#include <cstdint>
#include <span>

#include <mgjoin/types.hpp>

namespace mgjoin::host_merge {

/// Most runs one merge accepts (the tested range; chunkset counts are far smaller in practice).
inline constexpr std::size_t kMaxRuns = 64;

/// One sorted run of (key, payload) tuples in separate columns.
template <class K, class P = void>
struct RunView {
  const K* keys = nullptr;
  const P* payloads = nullptr;
  std::int64_t size = 0;
};

/// One sorted run of a key-only relation.
template <class K>
struct RunView<K, void> {
  const K* keys = nullptr;
  std::int64_t size = 0;
};

/// A run whose types are known only at run time (the engine's view of a chunkset in host memory).
struct RawRun {
  const void* keys = nullptr;
  const void* payloads = nullptr;  ///< ignored for key-only relations
  std::int64_t size = 0;
};

/// Merges sorted (key, payload) runs into out_keys/out_payloads.
template <class K, class P>
void multiway_merge(std::span<const RunView<K, P>> runs, K* out_keys, P* out_payloads);

/// Merges sorted key-only runs into out_keys.
template <class K>
void multiway_merge(std::span<const RunView<K>> runs, K* out_keys);

/// Dispatches on the key type and payload width (0 = key-only, 4 or 8 bytes: opaque words).
/// Throws mgjoin::Error for a non-key type, another payload width or more than kMaxRuns runs.
void multiway_merge(DType key_type, int payload_bytes, std::span<const RawRun> runs, void* out_keys,
                    void* out_payloads);

/// Total number of tuples in `runs` (the output size).
template <class Run>
std::int64_t total_size(std::span<const Run> runs) {
  std::int64_t n = 0;
  for (const auto& r : runs) n += r.size;
  return n;
}

}  // namespace mgjoin::host_merge
