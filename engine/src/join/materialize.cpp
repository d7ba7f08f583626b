// Materialization on CPU threads (paper Section 3.3.2): exact output offsets by prefix sum, then
// the output rows are cut into equal slices, one per task, each walking the ranges it overlaps.
#include "engine/src/join/materialize.hpp"

#include "engine/src/join/output_count.hpp"

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

/// Tuples of a range modulo 2^64: for the scan, whose checked total says whether anything wrapped.
std::uint64_t wrapping_tuples(const MatchRange& m) { return (m.r_end - m.r_begin) * (m.s_end - m.s_begin); }

/// Tuples of ranges[begin, end) as a checked sum: it runs inside OpenMP regions, which must not throw.
CheckedSum sum_tuples(std::span<const MatchRange> ranges, std::size_t begin, std::size_t end) {
  CheckedSum sum;
  for (std::size_t i = begin; i < end; ++i)
    sum.add_product(ranges[i].r_end - ranges[i].r_begin, ranges[i].s_end - ranges[i].s_begin);
  return sum;
}

int threads_for(std::size_t ranges) { return ranges > 65536 ? omp_get_max_threads() : 1; }

}  // namespace

std::uint64_t count_tuples(std::span<const MatchRange> ranges) {
  const std::size_t n = ranges.size();
  std::vector<CheckedSum> block_sum(threads_for(n));
#pragma omp parallel num_threads(static_cast<int>(block_sum.size()))
  {
    const int t = omp_get_thread_num(), nt = omp_get_num_threads();
    block_sum[t] = sum_tuples(ranges, n * t / nt, n * (t + 1) / nt);
  }
  CheckedSum total;
  for (const CheckedSum& b : block_sum) total.add(b);
  return checked_total(total, "summed over the matching ranges");
}

std::vector<std::uint64_t> output_offsets(std::span<const MatchRange> ranges) {
  const std::size_t n = ranges.size();
  std::vector<std::uint64_t> offsets(n + 1);
  const int threads = threads_for(n);
  std::vector<CheckedSum> block_sum(threads + 1);
  // Two passes: each thread sums its block, a serial scan of the block sums, each thread scans its block.
  // The scan's last entry is the checked total; when it overflowed, the offsets are thrown away.
#pragma omp parallel num_threads(threads)
  {
    const int t = omp_get_thread_num(), nt = omp_get_num_threads();
    const std::size_t b = n * t / nt, e = n * (t + 1) / nt;
    block_sum[t + 1] = sum_tuples(ranges, b, e);
#pragma omp barrier
#pragma omp single
    for (int k = 0; k < threads; ++k) block_sum[k + 1].add(block_sum[k]);  // blocks past nt stay empty
    std::uint64_t run = block_sum[t].value;
    for (std::size_t i = b; i < e; ++i) {
      offsets[i] = run;
      run += wrapping_tuples(ranges[i]);
    }
  }
  offsets[n] = checked_total(block_sum[threads], "summed over the matching ranges");
  return offsets;
}

MaterializedColumns materialize(std::span<const MatchRange> ranges, ColumnView r_key,
                                std::optional<ColumnView> r_payload, std::optional<ColumnView> s_payload,
                                MemoryKind kind) {
  const std::vector<std::uint64_t> offsets = output_offsets(ranges);
  const std::uint64_t total = offsets.back();
  const std::int64_t rows = output_rows(total, output_row_bytes(r_key, r_payload, s_payload));

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
