#pragma once
// CPU materialization of matching ranges into output columns (paper Section 3.3.2), shared by the
// CPU path and the GPU join phase.
#include <mgjoin/join.hpp>
#include <mgjoin/types.hpp>

#include <cstdint>
#include <optional>
#include <span>
#include <vector>

namespace mgjoin::detail {

/// Number of output tuples of `ranges` (64-bit; parallel).
/// @throw InputError when it is 2^64 or more.
std::uint64_t count_tuples(std::span<const MatchRange> ranges);

/// Exclusive prefix sum of the ranges' tuple counts: element i is range i's first output row, the
/// extra last element the total (parallel).
/// @throw InputError when the total is 2^64 or more.
std::vector<std::uint64_t> output_offsets(std::span<const MatchRange> ranges);

struct MaterializedColumns {
  HostColumn key;                        ///< the matched key, in the key columns' DType
  std::optional<HostColumn> r_payload;   ///< only when R has a payload
  std::optional<HostColumn> s_payload;   ///< only when S has a payload
};

/// Writes every tuple of `ranges` (indices into the sorted inputs) contiguously: range i fills output
/// rows [offset_i, offset_i + tuples_i), R-major within a range. Work is split by output rows, so a
/// single hot range is shared by all threads.
/// @throw InputError before allocating when the output has 2^64 or more tuples or its columns would
///        take 2^63 bytes or more.
MaterializedColumns materialize(std::span<const MatchRange> ranges, ColumnView r_key,
                                std::optional<ColumnView> r_payload, std::optional<ColumnView> s_payload,
                                MemoryKind kind = MemoryKind::Pageable);

}  // namespace mgjoin::detail
