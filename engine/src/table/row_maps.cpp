#include "engine/src/table/row_maps.hpp"

#include "alloc/host_memory.hpp"
#include "core/dispatch.hpp"

#include <mgjoin/error.hpp>

#include <omp.h>

#include <atomic>
#include <cstring>
#include <string>
#include <vector>

namespace mgjoin::table {
namespace {

/// Row id `i` of a uint32 or uint64 row-id column.
std::int64_t id_at(const HostColumn& ids, std::int64_t i) {
  return ids.type() == DType::UInt32 ? static_cast<std::int64_t>(ids.as<std::uint32_t>()[i])
                                     : static_cast<std::int64_t>(ids.as<std::uint64_t>()[i]);
}

/// Which rows of a table appear in the pairs (one byte per row).
std::vector<std::uint8_t> matched_rows(const HostColumn& ids, std::int64_t rows) {
  std::vector<std::uint8_t> matched(static_cast<std::size_t>(rows), 0);
  const std::int64_t n = ids.size();
#pragma omp parallel for schedule(static)
  for (std::int64_t i = 0; i < n; ++i)
    std::atomic_ref<std::uint8_t>(matched[static_cast<std::size_t>(id_at(ids, i))]).store(1, std::memory_order_relaxed);
  return matched;
}

/// Rows whose flag equals `wanted`, in table order, written to out[0..) (or only counted when out is
/// null): a count per block, a prefix sum, then each block writes its part.
std::int64_t select_rows(const std::vector<std::uint8_t>& flags, std::uint8_t wanted, std::int64_t* out) {
  const auto n = static_cast<std::int64_t>(flags.size());
  const int blocks = omp_get_max_threads() * 4;
  std::vector<std::int64_t> offset(static_cast<std::size_t>(blocks) + 1, 0);
  const auto bounds = [&](int b) { return std::pair{n * b / blocks, n * (b + 1) / blocks}; };
#pragma omp parallel for schedule(dynamic, 1)
  for (int b = 0; b < blocks; ++b) {
    const auto [lo, hi] = bounds(b);
    std::int64_t c = 0;
    for (std::int64_t r = lo; r < hi; ++r) c += flags[static_cast<std::size_t>(r)] == wanted;
    offset[static_cast<std::size_t>(b) + 1] = c;
  }
  for (int b = 0; b < blocks; ++b) offset[b + 1] += offset[b];
  if (out) {
#pragma omp parallel for schedule(dynamic, 1)
    for (int b = 0; b < blocks; ++b) {
      const auto [lo, hi] = bounds(b);
      std::int64_t at = offset[static_cast<std::size_t>(b)];
      for (std::int64_t r = lo; r < hi; ++r)
        if (flags[static_cast<std::size_t>(r)] == wanted) out[at++] = r;
    }
  }
  return offset.back();
}

void fill(std::int64_t* out, std::int64_t rows, std::int64_t value) {
#pragma omp parallel for schedule(static)
  for (std::int64_t i = 0; i < rows; ++i) out[i] = value;
}

}  // namespace

bool keeps_left_unmatched(JoinKind k) { return k == JoinKind::LeftOuter || k == JoinKind::FullOuter; }
bool keeps_right_unmatched(JoinKind k) { return k == JoinKind::RightOuter || k == JoinKind::FullOuter; }

namespace {

/// The rows a kind outputs, counted before any is written: semi/anti joins, the left rows selected by
/// `left_matched` (matched or not); other kinds, the pairs plus the unmatched rows of the sides kept.
struct KindRows {
  std::vector<std::uint8_t> left_matched, right_matched;  ///< per row of a side: 1 when it is in a pair
  std::int64_t left_alone = 0, right_alone = 0;            ///< unmatched rows kept (outer joins)
  std::int64_t rows = 0;
};

std::uint8_t semi_wanted(JoinKind kind) { return kind == JoinKind::LeftSemi ? 1 : 0; }

KindRows count_kind_rows(JoinKind kind, const HostColumn& pair_left, const HostColumn& pair_right,
                         std::int64_t left_rows, std::int64_t right_rows) {
  KindRows k;
  if (!outputs_right_columns(kind)) {
    k.left_matched = matched_rows(pair_left, left_rows);
    k.rows = select_rows(k.left_matched, semi_wanted(kind), nullptr);
    return k;
  }
  if (keeps_left_unmatched(kind)) {
    k.left_matched = matched_rows(pair_left, left_rows);
    k.left_alone = select_rows(k.left_matched, 0, nullptr);
  }
  if (keeps_right_unmatched(kind)) {
    k.right_matched = matched_rows(pair_right, right_rows);
    k.right_alone = select_rows(k.right_matched, 0, nullptr);
  }
  k.rows = pair_left.size() + k.left_alone + k.right_alone;
  return k;
}

}  // namespace

RowMaps rows_of_kind(JoinKind kind, const HostColumn& pair_left, const HostColumn& pair_right, std::int64_t left_rows,
                     std::int64_t right_rows, MemoryKind memory) {
  const KindRows k = count_kind_rows(kind, pair_left, pair_right, left_rows, right_rows);
  RowMaps maps;
  maps.rows = k.rows;
  if (!outputs_right_columns(kind)) {
    maps.left = HostColumn::allocate(DType::Int64, maps.rows, memory);
    select_rows(k.left_matched, semi_wanted(kind), maps.left.as<std::int64_t>());
    return maps;
  }
  const std::int64_t pairs = pair_left.size();
  alloc::expect_host_rows(static_cast<std::uint64_t>(maps.rows), 2 * sizeof(std::int64_t),
                          "the gather maps (" + std::to_string(maps.rows) + " rows)");
  maps.left = HostColumn::allocate(DType::Int64, maps.rows, memory);
  maps.right = HostColumn::allocate(DType::Int64, maps.rows, memory);
  std::int64_t* l = maps.left.as<std::int64_t>();
  std::int64_t* r = maps.right.as<std::int64_t>();
#pragma omp parallel for schedule(static)
  for (std::int64_t i = 0; i < pairs; ++i) {
    l[i] = id_at(pair_left, i);
    r[i] = id_at(pair_right, i);
  }
  if (k.left_alone) {
    select_rows(k.left_matched, 0, l + pairs);
    fill(r + pairs, k.left_alone, -1);
  }
  if (k.right_alone) {
    fill(l + pairs + k.left_alone, k.right_alone, -1);
    select_rows(k.right_matched, 0, r + pairs + k.left_alone);
  }
  return maps;
}

std::uint64_t rows_of_kind_count(JoinKind kind, const HostColumn& pair_left, const HostColumn& pair_right,
                                 std::int64_t left_rows, std::int64_t right_rows) {
  return static_cast<std::uint64_t>(count_kind_rows(kind, pair_left, pair_right, left_rows, right_rows).rows);
}

namespace {

template <std::size_t Width>
void gather_words(const ColumnView& first, const std::int64_t* first_map, std::int64_t rows, const ColumnView* second,
                  const std::int64_t* second_map, char* out) {
  const char* a = static_cast<const char*>(first.data);
  const char* b = second ? static_cast<const char*>(second->data) : nullptr;
#pragma omp parallel for schedule(static)
  for (std::int64_t i = 0; i < rows; ++i) {
    char* to = out + static_cast<std::size_t>(i) * Width;
    if (first_map[i] >= 0)
      std::memcpy(to, a + static_cast<std::size_t>(first_map[i]) * Width, Width);
    else if (b && second_map[i] >= 0)
      std::memcpy(to, b + static_cast<std::size_t>(second_map[i]) * Width, Width);
    else
      std::memset(to, 0, Width);
  }
}

}  // namespace

namespace {

/// A gather into `out` of type Out from columns of other types: each value read as its own type and
/// converted.
template <class Out>
void gather_converted(const ColumnView& first, const std::int64_t* first_map, std::int64_t rows, const ColumnView* second,
                      const std::int64_t* second_map, Out* out) {
  const auto value_at = [](const ColumnView& c, std::int64_t row) {
    return dispatch_value_type(c.type, [&](auto type) {
      using T = decltype(type);
      T v;
      std::memcpy(&v, static_cast<const char*>(c.data) + static_cast<std::size_t>(row) * sizeof(T), sizeof(T));
      return static_cast<Out>(v);
    });
  };
#pragma omp parallel for schedule(static)
  for (std::int64_t i = 0; i < rows; ++i) {
    if (first_map[i] >= 0)
      out[i] = value_at(first, first_map[i]);
    else if (second && second_map[i] >= 0)
      out[i] = value_at(*second, second_map[i]);
    else
      out[i] = Out{};
  }
}

}  // namespace

HostColumn gather(const ColumnView& first, const std::int64_t* first_map, std::int64_t rows, const ColumnView* second,
                  const std::int64_t* second_map, std::optional<DType> as) {
  const DType type = as.value_or(first.type);
  HostColumn out = HostColumn::allocate(type, rows);
  if (first.type == type && (!second || second->type == type)) {
    char* to = out.as<char>();
    dispatch_column_width(dtype_size(type),
                          [&](auto word) { gather_words<sizeof(word)>(first, first_map, rows, second, second_map, to); });
  } else {
    dispatch_value_type(type, [&](auto t) {
      gather_converted(first, first_map, rows, second, second_map, out.as<decltype(t)>());
    });
  }
  return out;
}

HostColumn validity(const std::int64_t* map, std::int64_t rows) {
  HostColumn out = HostColumn::allocate(DType::Bool, rows);
  auto* valid = out.as<std::uint8_t>();
#pragma omp parallel for schedule(static)
  for (std::int64_t i = 0; i < rows; ++i) valid[i] = map[i] >= 0 ? 1 : 0;
  return out;
}

}  // namespace mgjoin::table
