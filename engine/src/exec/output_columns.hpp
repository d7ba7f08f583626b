#pragma once
// The result columns of a materialized join whose length is known only at its end (the streamed
// variant's rounds, the bucketed flow's groups), and where one run of a flow writes into them. The
// output writer (output_writer.hpp) copies the GPUs' windows straight into them.
#include "engine/src/copart/copart_kernels.hpp"

#include <mgjoin/join.hpp>
#include <mgjoin/types.hpp>

#include <array>
#include <cstdint>

namespace mgjoin::exec {

using copart::Widths;

/// Result columns of a materialized join whose length is known only at its end (the streamed variant's
/// rounds, the bucketed flow's groups): taken when the first rows come, pinned (the GPUs' windows go
/// straight into them, and the pinned cache serves the next join), as long as the rows so far
/// extrapolated to the whole input plus a margin, grown (copying what is written) when that falls
/// short, and truncated at the end. Not thread-safe: called between writers.
class OutputColumns {
 public:
  /// Columns of `result`: the key, and each side's payload where `r` / `s` move one.
  OutputColumns(const RelationView& r, const RelationView& s, const Widths& rw, const Widths& sw, JoinResult& result);

  /// Output rows [base, base + rows) for one part of the output, `arrived` (0, 1] of the input having
  /// been joined with it; returns base. At `arrived` 1 the columns grow to exactly what is needed.
  /// @throw OutOfMemory when host memory cannot hold the rows (checked before they are taken).
  std::uint64_t reserve(std::uint64_t rows, double arrived);

  /// Cuts the columns to the rows written and sets result.count.
  void finish();

  JoinResult& result() { return result_; }
  /// Rows reserved so far.
  std::uint64_t rows() const { return next_; }
  /// Whether `more` rows fit the columns as they are (reserve() would not move them).
  bool holds(std::uint64_t more) const { return more <= capacity_ - next_; }

 private:
  void take(std::uint64_t rows);

  JoinResult& result_;
  std::array<DType, 3> types_;
  std::array<bool, 3> present_;
  std::uint64_t row_bytes_;
  std::uint64_t capacity_ = 0, next_ = 0;
};

/// Where one run of the flow puts a materialized output: into columns it shares with other runs
/// (nullptr: its own), `before` and `after` being the shares of the whole join's input joined before
/// and after this run (the columns' growth extrapolates from them).
struct OutputInto {
  OutputColumns* columns = nullptr;
  double before = 0, after = 1;
  /// The share joined once `part` (0..1) of this run is done.
  double at(double part) const { return part >= 1 ? after : before + (after - before) * part; }
};

}  // namespace mgjoin::exec
