#pragma once
// From the join's matching pairs to the rows a join kind outputs, as gather maps (int64 row indices
// into the left and right tables, -1 where a side is missing), and the CPU's gathers that turn maps into
// columns (gpu_gather.hpp has the GPUs'). Pure host code, run on all OpenMP threads.
#include <mgjoin/table.hpp>
#include <mgjoin/types.hpp>

#include <cstdint>
#include <optional>

namespace mgjoin::table {

/// The output rows of a join as gather maps. `right` is empty for semi and anti joins.
struct RowMaps {
  HostColumn left, right;  ///< Int64
  std::int64_t rows = 0;
};

/// Whether a join of `kind` outputs the left (right) table's unmatched rows, the other side missing there
/// (and so a validity column for that other side).
bool keeps_left_unmatched(JoinKind kind);
bool keeps_right_unmatched(JoinKind kind);

/// The rows of `kind` from the inner join's pairs: `pair_left[i]`, `pair_right[i]` are the row ids
/// (uint32 or uint64 columns) of the i-th matching pair. Outer joins append each table's unmatched rows
/// in table order after the pairs; semi and anti joins give the left rows with (without) a match, in
/// table order. The maps are allocated as `memory` (pinned where GPUs will read them).
RowMaps rows_of_kind(JoinKind kind, const HostColumn& pair_left, const HostColumn& pair_right, std::int64_t left_rows,
                     std::int64_t right_rows, MemoryKind memory = MemoryKind::Pageable);

/// Rows of `kind` for a count: pairs plus unmatched rows, from the same inputs as rows_of_kind.
std::uint64_t rows_of_kind_count(JoinKind kind, const HostColumn& pair_left, const HostColumn& pair_right,
                                 std::int64_t left_rows, std::int64_t right_rows);

/// out[i] = first[first_map[i]] where first_map[i] >= 0, else second[second_map[i]] where given and
/// second_map[i] >= 0, else zero. The output has the type `as` (default: first's), each value converted
/// to it (the key columns of two types: every value gathered is one that `as` holds).
HostColumn gather(const ColumnView& first, const std::int64_t* first_map, std::int64_t rows,
                  const ColumnView* second = nullptr, const std::int64_t* second_map = nullptr,
                  std::optional<DType> as = std::nullopt);

/// out[i] = map[i] >= 0, as bool.
HostColumn validity(const std::int64_t* map, std::int64_t rows);

}  // namespace mgjoin::table
