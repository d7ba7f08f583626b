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
  /// Columns of `result`: the key, and each side's payload where `r` / `s` move one; `gpus` is the GPU
  /// count of the join that writes them (pin_result_columns() says why it matters). With a `sink`
  /// (JoinSettings::sink) the rows go to it instead: no host memory is taken, the columns stay empty.
  OutputColumns(const RelationView& r, const RelationView& s, const Widths& rw, const Widths& sw, JoinResult& result,
                int gpus, ResultSink* sink = nullptr);

  /// Output rows [base, base + rows) for one part of the output, `arrived` (0, 1] of the input having
  /// been joined with it; returns base. At `arrived` 1 the columns grow to exactly what is needed.
  /// @throw OutOfMemory when host memory cannot hold the rows (checked before they are taken).
  std::uint64_t reserve(std::uint64_t rows, double arrived);

  /// Cuts the columns to the rows written and sets result.count.
  void finish();

  JoinResult& result() { return result_; }
  /// Where the windows go instead of the columns (nullptr: into the columns).
  ResultSink* sink() const { return sink_; }
  /// Rows reserved so far.
  std::uint64_t rows() const { return next_; }
  /// Whether `more` rows fit the columns as they are (reserve() would not move them).
  bool holds(std::uint64_t more) const { return sink_ || more <= capacity_ - next_; }

 private:
  void take(std::uint64_t rows);

  JoinResult& result_;
  int gpus_;
  ResultSink* sink_;
  std::array<DType, 3> types_;
  std::array<bool, 3> present_;
  std::uint64_t row_bytes_;
  std::uint64_t capacity_ = 0, next_ = 0;
};

/// Whether a join's result columns are pinned (the GPUs' windows go straight into them) rather than
/// pageable (the windows cross through the GPUs' pinned staging, drained by the host). Pinning fresh
/// memory registers it with every GPU context, which costs in proportion to the contexts: on 4× H200
/// (s23, `bench_pin_rates --gib 6`) 50 GB/s with one context, 12-15 GB/s with four, while the staging
/// drains ~6 GB/s a GPU; `mgjoin join` of B 2.5·10^8 materialized spent 0.45 s (g = 1) and 0.64-0.75 s
/// (g = 4) in its output phase pinned, 1.05 s and 0.25 s staged. So the columns are pinned unless
/// nothing repays the registration: no block kept for reuse serves them (`served_from_cache`), no later
/// join of the process would reuse them (`later_joins`: the CLI joins once), and the join has
/// kStagedFromGpus GPUs or more (the rates above put the crossing between 2 and 3).
inline constexpr int kStagedFromGpus = 3;
constexpr bool pin_result_columns(int gpus, bool later_joins, bool served_from_cache) {
  return served_from_cache || later_joins || gpus < kStagedFromGpus;
}

/// Where one run of the flow puts a materialized output: into columns it shares with other runs
/// (nullptr: its own), `before` and `after` being the shares of the whole join's input joined before
/// and after this run (the columns' growth extrapolates from them).
struct OutputInto {
  OutputColumns* columns = nullptr;
  double before = 0, after = 1;
  /// The share joined once `part` (0..1) of this run is done.
  double at(double part) const { return part >= 1 ? after : before + (after - before) * part; }
};

/// Hands a materialized result's columns to `sink` (JoinSettings::sink) where a flow made them in host
/// memory (the paper flow, the CPU path), and frees them; marks the result sunk. Nothing where there is no
/// sink, or the flow already wrote to it.
void pour_into_sink(JoinResult& result, ResultSink* sink);

}  // namespace mgjoin::exec
