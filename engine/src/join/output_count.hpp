#pragma once
// The size of a join's output, checked. A count of 2^64 or more tuples (2^32 equal keys on both sides
// suffice) is not a 64-bit number: every flow (CPU path, paper flow, co-partitioned flow) refuses such
// a join with one InputError once it has counted, before any output is allocated; output column sizes
// are computed without overflow.
#include "core/checked_math.hpp"

#include <mgjoin/join.hpp>

#include <cstdint>
#include <optional>
#include <span>
#include <string>

namespace mgjoin::detail {

/// A GPU's count of output tuples, added to by the join kernels (tuple_counter.cuh; device memory).
struct TupleCounter {
  unsigned long long count = 0;
  unsigned long long overflowed = 0;  ///< nonzero once the exact count reached 2^64: `count` wrapped
};

/// @throw InputError "the join's output has 2^64 or more tuples (<where>): ..."
[[noreturn]] void throw_output_overflow(const std::string& where);

/// sum.value. @throw InputError (throw_output_overflow) when the sum reached 2^64.
std::uint64_t checked_total(const CheckedSum& sum, const std::string& where);

/// Output tuples of the GPUs' counters plus `ranges` (the matching ranges found on the host).
/// @throw InputError when a counter overflowed or the total reaches 2^64.
std::uint64_t total_tuples(std::span<const TupleCounter> gpus, std::span<const MatchRange> ranges);

/// `rows` output rows of `row_bytes` bytes (all columns together) as a column size.
/// @throw InputError when they would take 2^63 bytes or more: more than any machine addresses.
std::int64_t output_rows(std::uint64_t rows, std::uint64_t row_bytes);

/// Bytes of one materialized output row of R and S: the key and each side's payload.
std::uint64_t output_row_bytes(const RelationView& r, const RelationView& s);
/// The same from the output's source columns.
std::uint64_t output_row_bytes(ColumnView key, std::optional<ColumnView> r_payload, std::optional<ColumnView> s_payload);

/// Refuses, before any output column is taken, a materialized output of `rows` rows of `row_bytes`
/// bytes that host memory cannot hold (all columns together: each column's own check would not see the
/// others). @throw OutOfMemory "host memory: the join's output (N rows) needs ..."
void expect_output_memory(std::uint64_t rows, std::uint64_t row_bytes);

}  // namespace mgjoin::detail
