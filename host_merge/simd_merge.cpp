// The AVX-512 per-thread merge of 4/4 tuples in packed words (host_merge/detail/simd_merge.hpp says
// how and why). Only the functions marked MGJOIN_AVX512 use AVX-512: the library is built for baseline
// x86-64 and calls them only where simd_merge_supported().
#include "host_merge/detail/simd_merge.hpp"

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <string_view>
#include <type_traits>
#include <vector>

#include "host_merge/detail/streaming_store.hpp"

#if MGJOIN_MERGE_SIMD
// GCC 12's AVX-512 intrinsics self-initialize their "undefined" vectors (__m512i __Y = __Y), which
// -Wmaybe-uninitialized reports at every inlined use (GCC bug 105593, fixed in GCC 13).
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <immintrin.h>
#endif

namespace mgjoin::host_merge::detail {

#if !MGJOIN_MERGE_SIMD

bool simd_merge_supported() noexcept { return false; }

template <class K>
void simd_merge(RunCursor<K, std::uint32_t>*, int, K*, std::uint32_t*) {
  std::abort();  // never called: simd_merge_supported() is false
}

#else

bool simd_merge_supported() noexcept {
  // MGJOIN_MERGE_SIMD=0 in the environment turns the kernel off at run time (to compare kernels in one
  // binary, or to rule it out).
  static const bool supported = [] {
    const char* env = std::getenv("MGJOIN_MERGE_SIMD");
    return __builtin_cpu_supports("avx512f") && !(env && std::string_view(env) == "0");
  }();
  return supported;
}

namespace {

#define MGJOIN_AVX512 __attribute__((target("avx512f")))

using Word = std::uint64_t;
constexpr Word kMaxWord = std::numeric_limits<Word>::max();
constexpr std::int64_t kWordsPerVector = 8;

/// XOR that makes unsigned order of a key's bits its own order (flips a signed key's sign bit).
template <class K>
constexpr std::uint32_t kOrderFlip = std::is_signed_v<K> ? 0x80000000u : 0u;

constexpr Word kMinWord = 0;

/// A sorted run of packed words: `padded` (a multiple of 8) words, the tail past its tuples max words.
/// A vector of min words before it and one of max words after it stand in for every word beyond its
/// ends: merge_segments reads there once an input is used up from either end.
struct Segment {
  Word* words;
  std::int64_t padded;
};

std::int64_t round_up_to_vector(std::int64_t n) {
  return (n + kWordsPerVector - 1) / kWordsPerVector * kWordsPerVector;
}

/// Words a segment of n tuples occupies in a buffer, with its padding and its two bounding vectors.
std::int64_t segment_words(std::int64_t n) { return round_up_to_vector(n) + 2 * kWordsPerVector; }

/// Where the next segment's words start after `segment` in a buffer.
Word* after(const Segment& segment) { return segment.words + segment.padded + 2 * kWordsPerVector; }

/// Writes the bounding vectors around a segment of n words at `words`, and pads it to whole vectors.
void bound_segment(Word* words, std::int64_t n) {
  std::fill(words - kWordsPerVector, words, kMinWord);
  std::fill(words + n, words + round_up_to_vector(n) + kWordsPerVector, kMaxWord);
}

/// Packs n tuples of a run into a segment at `words` (64-byte aligned, a vector past a buffer's start):
/// word j = (key j's order bits << 32) | (first + j), the tuple's index in the round, whose payload goes
/// to round_payloads[first + j].
template <class K>
MGJOIN_AVX512 Segment pack_segment(const K* keys, const std::uint32_t* payloads, std::int64_t n,
                                   std::uint32_t first, Word* words, std::uint32_t* round_payloads) {
  const __m256i flip = _mm256_set1_epi32(static_cast<int>(kOrderFlip<K>));
  __m512i index = _mm512_add_epi64(_mm512_set1_epi64(first), _mm512_set_epi64(7, 6, 5, 4, 3, 2, 1, 0));
  std::int64_t i = 0;
  for (; i + kWordsPerVector <= n; i += kWordsPerVector) {
    const __m256i key = _mm256_xor_si256(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(keys + i)), flip);
    _mm512_store_si512(words + i, _mm512_or_si512(_mm512_slli_epi64(_mm512_cvtepu32_epi64(key), 32), index));
    index = _mm512_add_epi64(index, _mm512_set1_epi64(kWordsPerVector));
  }
  for (; i < n; ++i)
    words[i] = Word(static_cast<std::uint32_t>(keys[i]) ^ kOrderFlip<K>) << 32 |
               (first + static_cast<std::uint32_t>(i));
  std::memcpy(round_payloads + first, payloads, static_cast<std::size_t>(n) * sizeof(std::uint32_t));
  bound_segment(words, n);
  return {words, round_up_to_vector(n)};
}

/// Sorts a bitonic vector of 8 words ascending: half-cleaners at distances 4, 2 and 1.
MGJOIN_AVX512 inline __m512i sort_bitonic(__m512i v) {
  __m512i p = _mm512_shuffle_i64x2(v, v, 0x4E);  // word i <-> i ^ 4
  v = _mm512_mask_blend_epi64(0xF0, _mm512_min_epu64(v, p), _mm512_max_epu64(v, p));
  p = _mm512_permutex_epi64(v, 0x4E);  // i <-> i ^ 2
  v = _mm512_mask_blend_epi64(0xCC, _mm512_min_epu64(v, p), _mm512_max_epu64(v, p));
  p = _mm512_shuffle_epi32(v, _MM_PERM_BADC);  // i <-> i ^ 1
  return _mm512_mask_blend_epi64(0xAA, _mm512_min_epu64(v, p), _mm512_max_epu64(v, p));
}

/// Merges two ascending vectors: lo gets the 8 smallest words, hi the 8 largest, both ascending.
MGJOIN_AVX512 inline void merge_vectors(__m512i& lo, __m512i& hi) {
  const __m512i reversed = _mm512_permutexvar_epi64(_mm512_set_epi64(0, 1, 2, 3, 4, 5, 6, 7), hi);
  const __m512i small = _mm512_min_epu64(lo, reversed);  // lo ++ reversed is bitonic
  const __m512i large = _mm512_max_epu64(lo, reversed);
  lo = sort_bitonic(small);
  hi = sort_bitonic(large);
}

/// The vector at a if take_a (0 or 1), else the one at b. Both are loaded and blended: GCC makes a
/// select of the address a branch, mispredicted half the time on random keys (~1.6x slower merges).
MGJOIN_AVX512 inline __m512i select_vector(std::int64_t take_a, const Word* a, const Word* b) {
  return _mm512_mask_blend_epi64(static_cast<__mmask8>(-take_a), _mm512_load_si512(b),
                                 _mm512_load_si512(a));
}

/// The streaming merge from the front: it writes output vectors upwards from `out`.
/// (The initializers read a and b: they must stay declared first.)
struct FrontMerge {
  Segment a, b;
  __m512i carry, next;
  std::int64_t ia = kWordsPerVector, ib = kWordsPerVector;  // past the vectors loaded
  Word* out;

  MGJOIN_AVX512 FrontMerge(Segment a_in, Segment b_in, Word* out_in)
      : a(a_in), b(b_in), carry(_mm512_load_si512(a.words)), next(_mm512_load_si512(b.words)), out(out_in) {}

  MGJOIN_AVX512 void step() {
    merge_vectors(next, carry);  // next: the 8 smallest, carry: the 8 largest
    _mm512_store_si512(out, next);
    out += kWordsPerVector;
    const std::int64_t take_a = a.words[ia] <= b.words[ib];
    next = select_vector(take_a, a.words + ia, b.words + ib);
    ia = std::min(ia + take_a * kWordsPerVector, a.padded);
    ib = std::min(ib + (1 - take_a) * kWordsPerVector, b.padded);
  }
};

/// The streaming merge from the back: it writes output vectors downwards, ending just below `end`.
/// (The initializers read a, b, ia and ib: they must stay declared in this order.)
struct BackMerge {
  Segment a, b;
  std::int64_t ia, ib;  // at the lowest vectors loaded
  __m512i carry, next;
  Word* out;  // the next output vector, from the top down

  MGJOIN_AVX512 BackMerge(Segment a_in, Segment b_in, Word* end)
      : a(a_in),
        b(b_in),
        ia(a.padded - kWordsPerVector),
        ib(b.padded - kWordsPerVector),
        carry(_mm512_load_si512(a.words + ia)),
        next(_mm512_load_si512(b.words + ib)),
        out(end - kWordsPerVector) {}

  MGJOIN_AVX512 void step() {
    merge_vectors(carry, next);  // carry: the 8 smallest, next: the 8 largest
    _mm512_store_si512(out, next);
    out -= kWordsPerVector;
    const std::int64_t take_a = a.words[ia - 1] >= b.words[ib - 1];
    next = select_vector(take_a, a.words + ia - kWordsPerVector, b.words + ib - kWordsPerVector);
    ia = std::max(ia - take_a * kWordsPerVector, std::int64_t{0});
    ib = std::max(ib - (1 - take_a) * kWordsPerVector, std::int64_t{0});
  }
};

/// Merges segments a and b (both non-empty) into a.padded + b.padded words at out.
/// Two branch-free streaming merges run interleaved, so that the latency of one's network hides behind
/// the other's: from the front, a vector of carried words merged with the next vector of the input
/// whose head is smaller gives up its lower half; from the back, mirrored, its upper half. The front
/// writes the lower half of the output vectors, the back the rest. Each writes the smallest (largest)
/// words of the inputs, so together they write the inputs' words in order: real words are distinct,
/// and a bounding word stands only for one of equal value (simd_merge.hpp).
/// Once an input is used up, the front (back) merge sees its max (min) vector as an endless run of max
/// (min) words; it takes it only when the other input's head is max (min) too.
MGJOIN_AVX512 void merge_both_ends(Segment a, Segment b, Word* out) {
  const std::int64_t vectors = (a.padded + b.padded) / kWordsPerVector;
  FrontMerge front(a, b, out);
  BackMerge back(a, b, out + vectors * kWordsPerVector);
  for (std::int64_t i = 0; i < vectors / 2; ++i) {
    front.step();
    back.step();
  }
  if (vectors % 2 != 0) back.step();
}

/// Merges segments a and b into out (a vector past the end of the previous segment) as one segment.
MGJOIN_AVX512 Segment merge_segments(Segment a, Segment b, Word* out) {
  const std::int64_t n = a.padded + b.padded;
  if (a.padded == 0 || b.padded == 0)
    std::memcpy(out, (a.padded == 0 ? b : a).words, static_cast<std::size_t>(n) * sizeof(Word));
  else
    merge_both_ends(a, b, out);
  bound_segment(out, n);
  return {out, n};
}

/// Merges count segments level by level, ping-ponging between buffers `from` (holding them) and `to`;
/// returns the last one.
MGJOIN_AVX512 Segment merge_levels(Segment* segments, int count, Word* from, Word* to) {
  while (count > 1) {
    Word* at = to + kWordsPerVector;
    int merged = 0;
    for (int i = 0; i < count; i += 2) {
      const Segment b = i + 1 < count ? segments[i + 1] : Segment{after(segments[i]), 0};
      segments[merged] = merge_segments(segments[i], b, at);
      at = after(segments[merged++]);
    }
    count = merged;
    std::swap(from, to);
  }
  return segments[0];
}

/// Unpacks the first n words of a segment into key and payload columns (64-byte aligned, room for n
/// rounded up to 16), 16 at a time: keys from the words, payloads gathered from round_payloads by the
/// words' indices. The segment's padding past n is readable; its indices are not, so lanes past n are
/// not gathered.
template <class K>
MGJOIN_AVX512 void unpack_segment(const Word* words, std::int64_t n, const std::uint32_t* round_payloads, K* keys,
                                  std::uint32_t* payloads) {
  const __m512i flip = _mm512_set1_epi32(static_cast<int>(kOrderFlip<K>));
  // Dwords 2j (indices) and 2j + 1 (keys) of two vectors of words; 16 + i is dword i of the second.
  const __m512i even = _mm512_set_epi32(30, 28, 26, 24, 22, 20, 18, 16, 14, 12, 10, 8, 6, 4, 2, 0);
  const __m512i odd = _mm512_set_epi32(31, 29, 27, 25, 23, 21, 19, 17, 15, 13, 11, 9, 7, 5, 3, 1);
  for (std::int64_t i = 0; i < n; i += 2 * kWordsPerVector) {
    const __m512i low = _mm512_load_si512(words + i), high = _mm512_load_si512(words + i + kWordsPerVector);
    const auto lanes = static_cast<__mmask16>(n - i >= 16 ? 0xFFFF : (1u << (n - i)) - 1);
    const __m512i index = _mm512_permutex2var_epi32(low, even, high);
    _mm512_store_si512(payloads + i,
                       _mm512_mask_i32gather_epi32(_mm512_setzero_si512(), lanes, index, round_payloads, 4));
    _mm512_store_si512(keys + i, _mm512_xor_si512(_mm512_permutex2var_epi32(low, odd, high), flip));
  }
}

/// copy_output of n 4-byte words, with the lines between the first and the last 64-byte boundary of
/// dst written whole (one store per line, where copy_output's 16-byte stores take four).
template <class T>
MGJOIN_AVX512 void stream_column(T* dst, const T* src, std::int64_t n) {
  static_assert(sizeof(T) == 4);
  if constexpr (!kStreamingStores) return copy_output(dst, src, n);
  const auto misaligned = static_cast<std::int64_t>(reinterpret_cast<std::uintptr_t>(dst) % 64 / sizeof(T));
  std::int64_t i = std::min(n, misaligned == 0 ? 0 : 16 - misaligned);
  copy_output(dst, src, i);
  for (; i + 16 <= n; i += 16)
    _mm512_stream_si512(reinterpret_cast<__m512i*>(dst + i), _mm512_loadu_si512(src + i));
  copy_output(dst + i, src + i, n - i);
}

/// This thread's round buffers, kept from merge to merge (one allocation per thread and size): two of
/// words for the merge levels, the round's payloads (by index), and the key and payload columns a round
/// is unpacked into.
class RoundBuffers {
 public:
  struct View {
    Word* from;
    Word* to;
    std::uint32_t* round_payloads;
    std::uint32_t* keys;
    std::uint32_t* payloads;
  };

  /// Word buffers of at least `words` words and columns of at least `tuples` tuples (and 16 more), all
  /// 64-byte aligned.
  View get(std::int64_t words, std::int64_t tuples) {
    const auto word_bytes = static_cast<std::size_t>(round_up_to_vector(words)) * sizeof(Word);
    const auto column_bytes = static_cast<std::size_t>((tuples + 31) / 16 * 16) * sizeof(std::uint32_t);
    const std::size_t bytes = 2 * word_bytes + 3 * column_bytes + 64;
    if (storage_.size() < bytes) storage_.assign(bytes, 0);
    const auto start = reinterpret_cast<std::uintptr_t>(storage_.data());
    char* base = reinterpret_cast<char*>((start + 63) & ~std::uintptr_t{63});
    auto column = [&](int c) { return reinterpret_cast<std::uint32_t*>(base + 2 * word_bytes + c * column_bytes); };
    return {reinterpret_cast<Word*>(base), reinterpret_cast<Word*>(base + word_bytes), column(0), column(1),
            column(2)};
  }

 private:
  std::vector<char> storage_;
};

thread_local RoundBuffers round_buffers;

}  // namespace

template <class K>
MGJOIN_AVX512 void simd_merge(RunCursor<K, std::uint32_t>* runs, int m, K* out_keys,
                              std::uint32_t* out_payloads) {
  const std::int64_t window = kSimdRoundTuples / m;  // >= 64: a round is never mostly padding
  // A round takes at most `window` tuples per run; each run's segment adds up to 23 words.
  const RoundBuffers::View buffers = round_buffers.get(m * segment_words(window), m * window);
  K* stage_keys = reinterpret_cast<K*>(buffers.keys);
  std::int64_t counts[kKeyLoserTreeMaxLeaves];
  Segment segments[kKeyLoserTreeMaxLeaves];
  std::int64_t done = 0;
  while (const std::int64_t n = round_counts(runs, m, window, counts)) {
    int count = 0;
    Word* at = buffers.from + kWordsPerVector;
    std::uint32_t first = 0;  // index in the round of the run's first tuple
    for (int i = 0; i < m; ++i) {
      if (counts[i] == 0) continue;
      RunCursor<K, std::uint32_t>& run = runs[i];
      segments[count] = pack_segment(run.key, run.payload, counts[i], first, at, buffers.round_payloads);
      at = after(segments[count++]);
      first += static_cast<std::uint32_t>(counts[i]);
      run.key += counts[i];
      run.payload += counts[i];
    }
    const Segment merged = merge_levels(segments, count, buffers.from, buffers.to);
    unpack_segment(merged.words, n, buffers.round_payloads, stage_keys, buffers.payloads);
    stream_column(out_keys + done, stage_keys, n);
    stream_column(out_payloads + done, buffers.payloads, n);
    done += n;
  }
}

#undef MGJOIN_AVX512

#endif  // MGJOIN_MERGE_SIMD

template void simd_merge<std::int32_t>(RunCursor<std::int32_t, std::uint32_t>*, int, std::int32_t*, std::uint32_t*);
template void simd_merge<std::uint32_t>(RunCursor<std::uint32_t, std::uint32_t>*, int, std::uint32_t*,
                                        std::uint32_t*);

}  // namespace mgjoin::host_merge::detail
