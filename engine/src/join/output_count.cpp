// Checked output sizes (output_count.hpp).
#include "engine/src/join/output_count.hpp"

#include "alloc/host_memory.hpp"

#include <mgjoin/error.hpp>

#include <cstdint>

namespace mgjoin::detail {

void throw_output_overflow(const std::string& where) {
  throw InputError("the join's output has 2^64 or more tuples (" + where +
                   "): its count is not a 64-bit number; join parts of a relation separately");
}

void throw_tuples_overflow(std::uint64_t r_rows, std::uint64_t s_rows) {
  throw_output_overflow("one key matches " + std::to_string(r_rows) + " rows of R and " + std::to_string(s_rows) +
                        " rows of S");
}

std::uint64_t checked_total(const CheckedSum& sum, const std::string& where) {
  if (sum.overflowed) throw_output_overflow(where);
  return sum.value;
}

std::uint64_t total_tuples(std::span<const TupleCounter> gpus, std::span<const MatchRange> ranges) {
  CheckedSum total;
  for (const TupleCounter& gpu : gpus) {
    if (gpu.overflowed) throw_output_overflow("counted on one GPU");
    total.add(gpu.count);
  }
  for (const MatchRange& m : ranges) total.add(m.tuples());
  return checked_total(total, "summed over the GPUs");
}

std::uint64_t output_row_bytes(ColumnView key, std::optional<ColumnView> r_payload, std::optional<ColumnView> s_payload) {
  return dtype_size(key.type) + (r_payload ? dtype_size(r_payload->type) : 0) + (s_payload ? dtype_size(s_payload->type) : 0);
}

std::uint64_t output_row_bytes(const RelationView& r, const RelationView& s) {
  return output_row_bytes(r.key, r.payload, s.payload);
}

void expect_output_memory(std::uint64_t rows, std::uint64_t row_bytes) {
  alloc::expect_host_rows(rows, row_bytes, "the join's output (" + std::to_string(rows) + " rows)");
}

std::int64_t output_rows(std::uint64_t rows, std::uint64_t row_bytes) {
  std::uint64_t bytes = 0;
  if (mul_overflows(rows, row_bytes, &bytes) || bytes > static_cast<std::uint64_t>(INT64_MAX))
    throw InputError("the join's output has " + std::to_string(rows) + " tuples of " + std::to_string(row_bytes) +
                     " bytes: 2^63 bytes or more, more than any machine addresses");
  return static_cast<std::int64_t>(rows);
}

}  // namespace mgjoin::detail
