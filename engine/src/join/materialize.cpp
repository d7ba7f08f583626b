// Materialization on CPU threads (paper Section 3.3.2): exact output offsets by prefix sum, then
// the output rows are cut into equal slices, one per task, each walking the ranges it overlaps.
#include "engine/src/join/materialize.hpp"

#include <mgjoin/error.hpp>

#include <omp.h>

#include <algorithm>
#include <cstring>

namespace mgjoin::detail {
namespace {

/// One output column fed from one input column: either repeats an R row or copies a run of S rows.
struct ColumnCopy {
  std::byte* out = nullptr;
  const std::byte* in = nullptr;
  std::size_t width = 0;  ///< 4 or 8; 0 = no such column

  template <class Word>
  void fill_typed(std::uint64_t pos, std::uint64_t row, std::uint64_t len) const {
    Word value;
    std::memcpy(&value, in + row * sizeof(Word), sizeof(Word));
    std::fill_n(reinterpret_cast<Word*>(out) + pos, len, value);
  }
  /// out[pos, pos + len) = in[row].
  void fill(std::uint64_t pos, std::uint64_t row, std::uint64_t len) const {
    if (width == 4) fill_typed<std::uint32_t>(pos, row, len);
    else if (width == 8) fill_typed<std::uint64_t>(pos, row, len);
  }
  /// out[pos, pos + len) = in[row, row + len).
  void copy(std::uint64_t pos, std::uint64_t row, std::uint64_t len) const {
    if (width) std::memcpy(out + pos * width, in + row * width, len * width);
  }
};

ColumnCopy column_copy(HostColumn* out, std::optional<ColumnView> in) {
  if (!out || !in) return {};
  return {static_cast<std::byte*>(out->data()), static_cast<const std::byte*>(in->data), dtype_size(in->type)};
}

struct Writers {
  ColumnCopy key, r_payload, s_payload;
};

/// Writes output rows [begin, end), which start inside range `first`.
void write_slice(std::span<const MatchRange> ranges, const std::vector<std::uint64_t>& offsets, std::size_t first,
                 std::uint64_t begin, std::uint64_t end, const Writers& w) {
  std::uint64_t pos = begin;
  for (std::size_t i = first; pos < end; ++i) {
    const MatchRange& m = ranges[i];
    const std::uint64_t width = m.s_end - m.s_begin;
    if (width == 0 || m.r_end == m.r_begin) continue;
    const std::uint64_t local = pos - offsets[i];
    std::uint64_t r = m.r_begin + local / width;
    std::uint64_t s_off = local % width;
    for (; r < m.r_end && pos < end; ++r, s_off = 0) {
      const std::uint64_t len = std::min(width - s_off, end - pos);
      w.key.fill(pos, r, len);
      w.r_payload.fill(pos, r, len);
      w.s_payload.copy(pos, m.s_begin + s_off, len);
      pos += len;
    }
  }
}

}  // namespace

std::uint64_t count_tuples(std::span<const MatchRange> ranges) {
  std::uint64_t total = 0;
  const auto n = static_cast<std::int64_t>(ranges.size());
#pragma omp parallel for reduction(+ : total) schedule(static) if (n > 65536)
  for (std::int64_t i = 0; i < n; ++i) total += ranges[i].tuples();
  return total;
}

std::vector<std::uint64_t> output_offsets(std::span<const MatchRange> ranges) {
  const std::size_t n = ranges.size();
  std::vector<std::uint64_t> offsets(n + 1);
  const int threads = n > 65536 ? omp_get_max_threads() : 1;
  std::vector<std::uint64_t> block_sum(threads + 1, 0);
  // Two passes: each thread sums its block, a serial scan of the block sums, each thread scans its block.
#pragma omp parallel num_threads(threads)
  {
    const int t = omp_get_thread_num(), nt = omp_get_num_threads();
    const std::size_t b = n * t / nt, e = n * (t + 1) / nt;
    std::uint64_t sum = 0;
    for (std::size_t i = b; i < e; ++i) sum += ranges[i].tuples();
    block_sum[t + 1] = sum;
#pragma omp barrier
#pragma omp single
    for (int k = 0; k < nt; ++k) block_sum[k + 1] += block_sum[k];
    std::uint64_t run = block_sum[t];
    for (std::size_t i = b; i < e; ++i) {
      offsets[i] = run;
      run += ranges[i].tuples();
    }
    if (t == nt - 1) offsets[n] = run;
  }
  return offsets;
}

MaterializedColumns materialize(std::span<const MatchRange> ranges, ColumnView r_key,
                                std::optional<ColumnView> r_payload, std::optional<ColumnView> s_payload,
                                MemoryKind kind) {
  const std::vector<std::uint64_t> offsets = output_offsets(ranges);
  const std::uint64_t total = offsets.back();
  MGJOIN_EXPECTS(total <= static_cast<std::uint64_t>(INT64_MAX), "join output exceeds 2^63 rows");
  const auto rows = static_cast<std::int64_t>(total);

  MaterializedColumns out;
  out.key = HostColumn::allocate(r_key.type, rows, kind);
  if (r_payload) out.r_payload = HostColumn::allocate(r_payload->type, rows, kind);
  if (s_payload) out.s_payload = HostColumn::allocate(s_payload->type, rows, kind);
  const Writers w{column_copy(&out.key, r_key), column_copy(out.r_payload ? &*out.r_payload : nullptr, r_payload),
                  column_copy(out.s_payload ? &*out.s_payload : nullptr, s_payload)};

  // Slices of equal output size (not equal range count): a hot key's range is shared by all threads.
  constexpr std::uint64_t min_slice_rows = 1 << 16;
  const std::uint64_t max_slices = static_cast<std::uint64_t>(omp_get_max_threads()) * 8;
  const auto slices = static_cast<std::int64_t>(std::clamp<std::uint64_t>(total / min_slice_rows, 1, max_slices));
#pragma omp parallel for schedule(dynamic, 1)
  for (std::int64_t c = 0; c < slices; ++c) {
    const std::uint64_t begin = static_cast<std::uint64_t>(static_cast<unsigned __int128>(total) * c / slices);
    const std::uint64_t end = static_cast<std::uint64_t>(static_cast<unsigned __int128>(total) * (c + 1) / slices);
    if (begin == end) continue;
    // The range holding row `begin`: the last i with offsets[i] <= begin (empty ranges share offsets).
    const auto first = static_cast<std::size_t>(std::upper_bound(offsets.begin(), offsets.end(), begin) -
                                                offsets.begin() - 1);
    write_slice(ranges, offsets, first, begin, end, w);
  }
  return out;
}

}  // namespace mgjoin::detail
