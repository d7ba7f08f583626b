#pragma once
// Output stores of the per-thread merge kernels (paper Section 3.2.2: the merge phase is bound by host
// memory bandwidth). A plain store of a line that is not in cache first reads it (read for ownership),
// so a merge writing with plain stores moves 1.5x the bytes of a streaming memcpy; non-temporal
// (streaming) stores write whole lines without reading them. The merge output is far larger than the
// caches and is read next by another phase, so bypassing the caches costs nothing there.
//
// MGJOIN_MERGE_STREAMING_STORES (compile time; default 1 on x86-64, where SSE2 always exists, else 0)
// picks streaming (movntdq / movnti) or plain stores. A kernel merges a block of tuples into a small,
// L1-resident stage with plain stores, then streams the block out (merge_through_stage): a line then
// fills within a few cycles, where one streaming store per merged word kept each write-combining buffer
// busy for a whole line's worth of merge steps (k = 8 ran ~30% slower on one thread). Streaming stores
// are weakly ordered: a kernel that wrote with them ends with finish_output() (sfence), so that the
// threads that read the output after the merge's OpenMP barrier see every tuple.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <type_traits>

#ifndef MGJOIN_MERGE_STREAMING_STORES
#if defined(__x86_64__)
#define MGJOIN_MERGE_STREAMING_STORES 1
#else
#define MGJOIN_MERGE_STREAMING_STORES 0
#endif
#endif

#if MGJOIN_MERGE_STREAMING_STORES
#if !defined(__x86_64__)
#error "MGJOIN_MERGE_STREAMING_STORES=1 needs x86-64 (SSE2 non-temporal stores)"
#endif
#include <emmintrin.h>
#endif

namespace mgjoin::host_merge::detail {

inline constexpr bool kStreamingStores = MGJOIN_MERGE_STREAMING_STORES != 0;

/// Writes one 4- or 8-byte output word (a key or an opaque payload) past the caches.
template <class T>
inline void store_output(T* p, T v) noexcept {
  static_assert(std::is_trivially_copyable_v<T> && (sizeof(T) == 4 || sizeof(T) == 8),
                "merge columns hold 4- or 8-byte words");
#if MGJOIN_MERGE_STREAMING_STORES
  if constexpr (sizeof(T) == 8) {
    long long w;
    std::memcpy(&w, &v, sizeof w);
    _mm_stream_si64(reinterpret_cast<long long*>(p), w);
  } else {
    int w;
    std::memcpy(&w, &v, sizeof w);
    _mm_stream_si32(reinterpret_cast<int*>(p), w);
  }
#else
  *p = v;
#endif
}

/// Copies n words of a column to the output past the caches: 16-byte streaming stores once dst is
/// 16-byte aligned, word stores for the unaligned head and the tail.
template <class T>
inline void copy_output(T* dst, const T* src, std::int64_t n) noexcept {
#if MGJOIN_MERGE_STREAMING_STORES
  std::int64_t i = 0;
  for (; i < n && reinterpret_cast<std::uintptr_t>(dst + i) % 16 != 0; ++i) store_output(dst + i, src[i]);
  constexpr std::int64_t kPerVector = 16 / sizeof(T);
  for (; i + kPerVector <= n; i += kPerVector)
    _mm_stream_si128(reinterpret_cast<__m128i*>(dst + i),
                     _mm_loadu_si128(reinterpret_cast<const __m128i*>(src + i)));
  for (; i < n; ++i) store_output(dst + i, src[i]);
#else
  if (n > 0) std::memcpy(dst, src, static_cast<std::size_t>(n) * sizeof(T));
#endif
}

/// Tuples per block of merge_through_stage: a stage of 256 x (8 + 8) bytes = 4 KiB stays in L1.
inline constexpr std::int64_t kStageTuples = 256;

/// Calls merge(keys, payloads, n) to write the next n merged tuples into a stage, block by block, and
/// streams each block out to out_keys/out_payloads; with plain stores, merges straight into the output.
template <class K, class P, class Merge>
void merge_through_stage(K* out_keys, P* out_payloads, std::int64_t length, Merge&& merge) {
  if constexpr (!kStreamingStores) {
    merge(out_keys, out_payloads, length);
  } else {
    alignas(64) K stage_keys[kStageTuples];
    alignas(64) P stage_payloads[kStageTuples];
    for (std::int64_t done = 0; done < length; done += kStageTuples) {
      const std::int64_t n = std::min(kStageTuples, length - done);
      merge(stage_keys, stage_payloads, n);
      copy_output(out_keys + done, stage_keys, n);
      copy_output(out_payloads + done, stage_payloads, n);
    }
  }
}

/// Orders this thread's streaming stores before whatever it does next (the merge's closing barrier).
inline void finish_output() noexcept {
#if MGJOIN_MERGE_STREAMING_STORES
  _mm_sfence();
#endif
}

}  // namespace mgjoin::host_merge::detail
