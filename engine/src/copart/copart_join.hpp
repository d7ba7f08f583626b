#pragma once
// The co-partitioned in-core flow: R and S range-partitioned by shared splitters as they arrive, every
// input byte over PCIe once, each GPU sorting and joining the partition pair it owns, output written on
// the GPU and copied out once.
//
//   R, S (host) ── chunks H2D on every GPU's link ─► partition by the plan ─► NVLink to the owner GPU
//     owner d: R_d sorted while S arrives; S_d sorted after its last chunk ─► merge-path join
//     count: summed on the host │ materialize: match arrays, scan, output windows ─► D2H ─► result columns
//
// One GPU counting: R and S cross in runs, each sorted as soon as it is in, and each run of S joined
// with R's runs as soon as it is sorted, so that once the last byte is in only the last run's sort and
// joins are left.
//
// When R and S do not fit together, the smaller relation X can still stay resident (the streamed
// variant): X is partitioned as above and sorted in runs (a run's sort buffer is all the scratch it
// needs), then the larger relation Y streams through in rounds: each round's chunks land on their
// owners (partitioned and sent as X was), are sorted there and joined against every run of X, and
// their output goes out while the next round arrives. Every input byte still crosses PCIe once.
//
//   Y (host) ── round t: chunks H2D ─► partition ─► owner d: landing[t % 2] sorted ─► join with X_d's runs
//                                                      count: summed on the GPU │ materialize: windows D2H
//
// plan_copart() decides from sizes alone (CPU-testable): partition plan, buffer sizes, in core,
// streamed or neither; run_copart() executes a plan. The caller's inputs are read, never written.
#include "alloc/stack_allocator.hpp"
#include "engine/src/copart/copart_kernels.hpp"
#include "engine/src/copart/splitters.hpp"

#include <mgjoin/join.hpp>
#include <mgjoin/types.hpp>

#include <array>
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <vector>

namespace mgjoin::p2p {
class NcclComms;
}

namespace mgjoin::copart {

/// Device scratch sizes that only CUB on a GPU can tell (fakes in CPU tests).
struct ScratchSizes {
  std::function<std::size_t(std::int64_t rows, int key_bytes, int payload_bytes)> sort;
  std::function<std::size_t(std::int64_t rows, int gpus)> partition;
  std::function<std::size_t(std::uint64_t n)> scan;
};

/// Scratch sizes asked of CUB on the current device.
ScratchSizes device_scratch_sizes();

/// Bytes of one GPU's buffers in each step of the flow.
struct GpuBudget {
  std::uint64_t partitions = 0;  ///< R_d and S_d (streamed: X_d)
  std::uint64_t held = 0;        ///< late payloads, g > 1: chunk slots and gather maps, kept to the end
  std::uint64_t transfer = 0;    ///< sort buffer and scratch; chunk slots and partition scratch (g > 1, carried)
  std::uint64_t output = 0;      ///< match arrays, scan scratch and two output windows (materialize)
  bool together = false;         ///< transfer and output held at once (CopartPlan::stream_beside_sort)
  std::uint64_t peak() const { return partitions + held + (together ? transfer + output : std::max(transfer, output)); }
};

/// Streamed: landings of Y per GPU, each a whole round: one is joined while the next crosses, and a
/// round's landing is kept until its output windows are written. (A third landing measured no faster
/// on one H100 with B scale 2 materialized, and it shrank the rounds where memory is tight: workload A
/// at a 4 GB limit took 0.45 s instead of 0.35 s.)
inline constexpr int kLandings = 2;

struct CopartPlan {
  PartitionPlan partitions;
  PartitionSizes sizes;
  Widths r, s;                  ///< what crosses PCIe: keys, and payloads only when materializing
  std::int64_t chunk_rows = 0;  ///< per GPU per round
  Side probe = Side::S;         ///< Y of the resident join (the smaller relation): output in its order
  bool late = false;            ///< PayloadFlow::Late: payloads cross after the keys, gathered on output
  /// Late payloads, g > 1: per side, rows of each GPU's gather map (0: none)
  std::array<std::uint64_t, 2> map_rows{};
  std::uint64_t window_rows = 0;  ///< output rows per window (materialize)
  /// Streamed (X = the side that is not `probe` stays resident, Y = `probe` streams): X's partition on
  /// each GPU is sorted in `resident_runs` runs; each round brings chunk_rows of Y to every GPU, and
  /// at most `landing_rows` land on one GPU (all of a round's tuples, with their hot-key copies: no
  /// sample can make it overflow once output has begun).
  bool streamed = false;
  int resident_runs = 1;
  /// Streamed: Y's landings are taken beside X's run sort instead of in its place, so that Y's first
  /// rounds cross while X's last runs are sorted (where the memory allows).
  bool stream_beside_sort = false;
  std::int64_t landing_rows = 0;
  std::vector<GpuBudget> budget;  ///< per GPU (streamed: partitions = X's, held = chunk slots,
                                  ///< transfer = a run's sort, output = the landings, their sort and output)
  std::uint64_t device_bytes = 0;  ///< what each GPU has
  bool fits = false;
  std::string reason;  ///< one line: why it fits or not

  /// Bytes sorted with each key of `side`: its payload (carried), a 4-byte position into its payloads
  /// (late) or nothing.
  int sorted_payload_bytes(Side side) const {
    const int payload = (side == Side::R ? r : s).payload_bytes;
    return payload && late ? 4 : payload;
  }
};

/// Samples both relations, chooses the splitters and sizes every buffer for `gpus` GPUs with
/// `device_bytes` each.
CopartPlan plan_copart(const RelationView& r, const RelationView& s, int gpus, OutputMode output,
                       std::uint64_t device_bytes, const ScratchSizes& scratch,
                       PayloadFlow payloads = PayloadFlow::Auto);

/// The same from samples already taken (the tests feed their own).
CopartPlan plan_copart(const KeySample& r_sample, const KeySample& s_sample, const RelationView& r,
                       const RelationView& s, int gpus, OutputMode output, std::uint64_t device_bytes,
                       const ScratchSizes& scratch, PayloadFlow payloads = PayloadFlow::Auto);

/// Reshapes a plan of plan_copart() for the same relations as the streamed variant with chunks of
/// `chunk_rows` rows per GPU, `runs` sorted runs of X and Y's landings beside X's sort or in its place
/// (fits and reason recomputed): the GPU tests force many rounds and runs at small sizes.
void force_streamed(CopartPlan& plan, const RelationView& r, const RelationView& s, std::int64_t chunk_rows, int runs,
                    OutputMode output, const ScratchSizes& scratch, bool beside_sort = false);

/// The real partition sizes outgrew the plan's bounds (the sample misled): nothing was output, the
/// caller may run another flow.
class PlanMissed : public Error {
 public:
  using Error::Error;
};

struct CopartContext {
  std::span<const int> devices;
  std::span<alloc::DeviceStackAllocator* const> device_memory;
  /// Pinned host memory per GPU: segment sizes and the output staging windows come from it.
  std::span<alloc::PinnedStackAllocator* const> pinned;
  Exchange exchange = Exchange::CopyEngines;
  const p2p::NcclComms* comms = nullptr;  ///< for Exchange::Nccl
};

/// Pinned bytes per GPU run_copart takes for a plan (the output windows' staging and small buffers).
std::uint64_t pinned_bytes_needed(const CopartPlan& plan, OutputMode output);

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

/// The in-core flow in three steps, so that a caller can run two joins on the same GPUs at once, each
/// on stacks of its own (CopartContext): the next join's inputs cross PCIe while this one sorts its last
/// partitions and joins. run_copart() runs the steps back to back.
class InCoreJoin {
 public:
  /// Takes the flow's buffers from the context's stacks. Expects a plan that fits in core, and for
  /// Materialize the columns to write into (`into.columns`).
  InCoreJoin(const RelationView& r, const RelationView& s, const CopartPlan& plan, OutputMode output,
             const CopartContext& context, const OutputInto& into);
  /// Waits for the GPUs' work before the buffers go back.
  ~InCoreJoin();
  InCoreJoin(const InCoreJoin&) = delete;
  InCoreJoin& operator=(const InCoreJoin&) = delete;

  /// Issues both relations' transfers and R's sort. One GPU: returns at once; several: once every
  /// chunk is partitioned (the host reads their segment sizes to address the exchange).
  void start();
  /// Waits until every input byte has arrived where it belongs, then issues S's sort (once).
  void arrive();
  /// Arrives if the caller has not, joins, then counts (result.count) or writes into the columns;
  /// appends the phase stats.
  /// @throw InputError when the output has 2^64 or more tuples.
  void finish(JoinResult& result);

 private:
  struct State;
  OutputMode output_;
  OutputInto into_;
  std::unique_ptr<State> state_;
};

/// Runs the flow; fills count (and key/r_payload/s_payload for Materialize, or `into`'s columns) and
/// appends phase stats.
/// @throw PlanMissed when a partition outgrows its bound (before any output is written).
/// @throw InputError when the output has 2^64 or more tuples (counted before any output is allocated).
void run_copart(const RelationView& r, const RelationView& s, const CopartPlan& plan, OutputMode output,
                const CopartContext& context, JoinResult& result, const OutputInto& into = {});

}  // namespace mgjoin::copart
