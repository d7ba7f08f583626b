#pragma once
// The public entry point of libengine: an inner equi-join of two relations in host memory.
//
//   R: key {1, 2, 2, 5}  payload {10, 20, 21, 50}
//   S: key {2, 5, 7}     payload {200, 500, 700}
//   join(R, S) -> key {2, 2, 5}  r_payload {20, 21, 50}  s_payload {200, 200, 500}  (row order unspecified)
//
// Every matching (r, s) pair appears exactly once (m:n joins included). Counts are 64-bit.
#include <mgjoin/types.hpp>

#include <atomic>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

namespace mgjoin {

/// How the GPUs sort a chunkset (paper Section 3.1).
enum class SortStrategy : std::uint8_t { Radix, Merge, FromTuning };
/// How the radix sort's all-to-all bucket swap moves data between GPUs.
enum class Exchange : std::uint8_t { CopyEngines, Nccl };
/// What the join returns.
enum class OutputMode : std::uint8_t { Count, Ranges, Materialize };
/// Which data flow runs the join.
/// - Paper: the paper's flow (sort chunksets on the GPUs, copy them back, merge on the CPU when a
///   relation took several chunksets, copy the keys in again and join). Sorts the inputs in place.
/// - CoPartitioned: R and S range-partitioned by shared splitters as they arrive, each GPU sorts and
///   joins the partition pair it owns, output built on the GPU and copied out once. In core (R and S
///   with sort scratch fit the GPUs: every input byte crosses PCIe once), streamed (the smaller one
///   fits: kept, the larger streams through once) or bucketed (neither fits: pinned host buckets, then
///   bucket groups joined in core). Leaves the caller's inputs untouched. Count and materialized output
///   only (ranges index sorted inputs: paper flow).
/// - Auto: CoPartitioned wherever it can run, unless the tuning file timed Paper faster on this GPU set
///   or the cost model predicts it faster, or host memory cannot hold the buckets; Paper also takes over
///   (from the untouched inputs) when a co-partitioned plan misses before any output was made.
enum class JoinStrategy : std::uint8_t { Auto, Paper, CoPartitioned };
/// How the co-partitioned flow brings payloads into a materialized output (the paper flow carries them).
/// - Carry: payloads cross PCIe with their keys and are sorted with them.
/// - Late: keys cross first and are sorted with 4-byte positions; the payloads cross while the output's
///   key column goes out (PCIe carries both directions at once) and are gathered into the output on the
///   GPU. The same bytes cross; needs a little more GPU memory when g > 1 (4 bytes per row for the
///   gather maps of each chunk's partitioning).
/// - Auto: Late when it fits the GPUs' memory, else Carry.
enum class PayloadFlow : std::uint8_t { Auto, Carry, Late };

namespace detail {
/// Throws InputError: a range of `r_rows` x `s_rows` has 2^64 or more tuples (MatchRange::tuples).
[[noreturn]] void throw_tuples_overflow(std::uint64_t r_rows, std::uint64_t s_rows);
}  // namespace detail

/// A matching key range in the *sorted* R and S: rows [r_begin, r_end) of R match rows
/// [s_begin, s_end) of S, producing (r_end - r_begin) * (s_end - s_begin) output tuples.
struct MatchRange {
  std::uint64_t r_begin, r_end, s_begin, s_end;
  /// Leaves the fields uninitialized on purpose: results hold up to billions of ranges, and a
  /// value-initializing vector::resize would zero them on one thread before they are overwritten
  /// in parallel (3 s for 2.5·10^8 ranges).
  constexpr MatchRange() noexcept {}  // NOLINT: no member initializers, see above
  constexpr MatchRange(std::uint64_t rb, std::uint64_t re, std::uint64_t sb, std::uint64_t se) noexcept
      : r_begin(rb), r_end(re), s_begin(sb), s_end(se) {}
  /// Output tuples of the range.
  /// @throw InputError when they are 2^64 or more (both runs of 2^32 rows or more): not a 64-bit count.
  constexpr std::uint64_t tuples() const {
    const std::uint64_t r_rows = r_end - r_begin, s_rows = s_end - s_begin;
    const auto exact = __extension__ static_cast<unsigned __int128>(r_rows) * s_rows;  // GCC and Clang
    if (exact >> 64) detail::throw_tuples_overflow(r_rows, s_rows);
    return static_cast<std::uint64_t>(exact);
  }
  friend constexpr bool operator==(const MatchRange&, const MatchRange&) = default;
};

/// The columns of a materialized join's output (JoinResult::key, r_payload, s_payload).
enum class ResultPart : std::uint8_t { Key, RPayload, SPayload };

/// Where a materialized join puts its rows as they are made, instead of result columns in host memory:
/// e.g. files written while the GPUs still join (NpyResultFiles, io.hpp: `mgjoin join`'s .npy output).
/// The co-partitioned flows hand it each output window as it leaves its GPU's pinned staging (so the
/// output never waits whole in host memory); the paper flow and the CPU path hand it their whole columns
/// at the end. Each present part's rows [0, JoinResult::count) are all written, in no particular order,
/// from several threads at once (one per GPU): write() must be safe to call concurrently for disjoint
/// rows. A row may be written again (the paper flow taking over a co-partitioned run that failed): the
/// last write holds. An exception from write() ends the join.
class ResultSink {
 public:
  virtual ~ResultSink() = default;
  /// Rows [first_row, first_row + rows) of `part`, values of `type` (the part's, the same in every call)
  /// at `data`.
  virtual void write(ResultPart part, DType type, std::uint64_t first_row, std::uint64_t rows, const void* data) = 0;
};

/// Progress of a long run, reported from the calling thread: phase name and fraction done [0, 1].
using ProgressCallback = std::function<void(const std::string& phase, double fraction)>;

/// What an Engine is built with (mgjoin::Engine, engine.hpp): the GPU set and how much of their
/// memory it takes, once, for all its joins.
struct EngineOptions {
  /// GPUs to use: -1 = all present (the set chosen by the topology probe / tuning file),
  /// 0 = the CPU path, N = the best N-GPU set. `gpu_ids`, when not empty, overrides it.
  int gpus = -1;
  std::vector<int> gpu_ids;
  /// Bytes of device memory per GPU the engine may use; 0 = 80% of each GPU's free memory.
  std::uint64_t gpu_memory_limit = 0;
  /// Tuning file written by `mgjoin tune`; empty = the default (~/.cache/mgjoin/tuning.json).
  std::string tuning_file;
  friend bool operator==(const EngineOptions&, const EngineOptions&) = default;
};

/// What one join asks of the engine that runs it, whichever engine that is: the flow and what only one
/// flow reads, the output, progress and cancellation. Engine::join() takes it alone; JoinOptions adds
/// the EngineOptions that mgjoin::join() makes its Engine from.
struct JoinSettings {
  JoinStrategy strategy = JoinStrategy::Auto;
  OutputMode output = OutputMode::Materialize;
  SortStrategy sort = SortStrategy::Radix;    ///< the paper flow's
  Exchange exchange = Exchange::CopyEngines;  ///< between GPUs: the paper flow's bucket swap, the co-partitioned flow's segments
  PayloadFlow payloads = PayloadFlow::Auto;   ///< the co-partitioned flow's, materialized joins
  ProgressCallback progress;  ///< optional; every report is also a cancellation point
  /// Leave r and s as they are: the flows that sort in place (the paper flow, the CPU path) then sort
  /// copies, taken only when one of them runs; the co-partitioned flow never writes its inputs. Not with
  /// OutputMode::Ranges (ranges index the sorted inputs): that is refused (InputError).
  bool keep_inputs = false;
  /// Optional: set it (from any thread, or a signal handler: it is lock-free) to stop the join. The
  /// join throws mgjoin::Cancelled at its next cancellation point (between chunksets, rounds and
  /// phases), having waited for its GPU work and freed what it took; nothing is output. The paper flow
  /// and the CPU path may leave the inputs permuted (they sort in place), never with rows lost.
  const std::atomic<bool>* cancel = nullptr;
  /// Optional, OutputMode::Materialize only: the rows go to it (ResultSink) and JoinResult's columns stay
  /// empty (of their types); JoinResult::sunk says so. Not owned: it must outlive the join.
  ResultSink* sink = nullptr;
};

/// What one mgjoin::join() call asks for: the engine it makes (EngineOptions) and the join (JoinSettings).
/// Engine::join() takes it too, and refuses one whose EngineOptions part is set and differs from the
/// engine's (make another Engine for other GPUs or memory).
struct JoinOptions : EngineOptions, JoinSettings {};

/// Time and traffic of one phase ("sort.h2d", "sort.exchange", "merge", "join.kernel", ...).
struct PhaseStat {
  std::string name;
  double seconds = 0;
  std::uint64_t bytes_pcie = 0;    ///< bytes over host<->device links
  std::uint64_t bytes_nvlink = 0;  ///< bytes between GPUs
};

struct JoinResult {
  std::uint64_t count = 0;          ///< number of output tuples
  std::vector<MatchRange> ranges;   ///< OutputMode::Ranges (into the sorted inputs)
  HostColumn key, r_payload, s_payload;  ///< OutputMode::Materialize (payload columns when present)
  bool sunk = false;  ///< the rows went to JoinSettings::sink: the columns above are empty, of their types
  std::vector<PhaseStat> phases;
  double seconds = 0;               ///< wall time of the whole join
  std::uint64_t peak_host_bytes = 0;  ///< host memory held by the join beyond its inputs, at peak
  std::string executor;             ///< "CPU (2 threads)" or "GPUs 0,1,2,3 (radix, copy engines)"
  JoinStrategy strategy = JoinStrategy::Paper;  ///< the flow that ran (Paper for the CPU path too)
  std::string strategy_reason;      ///< why the planner chose it, one line
};

/// "auto", "paper", "copart".
const char* strategy_name(JoinStrategy s);

// The one parser of each option's words, used by the CLI and the Python package. `what` names the
// value where it came from (a flag and its value, a keyword argument): it starts the error message.
/// "auto", "paper" or "copart" (strategy_name's words). @throw InputError "<what>: expected auto, paper or copart".
JoinStrategy parse_join_strategy(std::string_view name, const std::string& what);
/// "auto", "carry" or "late". @throw InputError "<what>: expected auto, carry or late".
PayloadFlow parse_payload_flow(std::string_view name, const std::string& what);
/// "radix", "merge" or "auto" (SortStrategy::FromTuning). @throw InputError "<what>: expected radix, merge or auto".
SortStrategy parse_sort_strategy(std::string_view name, const std::string& what);
/// "copy" (the copy engines) or "nccl". @throw InputError "<what>: expected copy or nccl".
Exchange parse_exchange(std::string_view name, const std::string& what);

/// Whether the paper flow's sort strategy `s` runs on `gpus` GPUs (the merge sort needs a power of two).
bool sort_strategy_supported(SortStrategy s, int gpus);

/// Where a join without an Engine (join(), the engine-less join_tables()) runs.
enum class Executor : std::uint8_t { Cpu, Gpus };

struct ExecutorChoice {
  Executor executor = Executor::Gpus;
  std::string reason;  ///< one line, for the CPU: why (empty for the GPUs: the flow choice says why)
};

/// The CPU when no GPU is asked for (gpus = 0, no gpu_ids), or when the GPUs are left to choose (gpus =
/// -1, no gpu_ids, no gpu_memory_limit, strategy Auto) and the join has at most MGJOIN_CPU_ROUTE_ROWS rows in all (R's and
/// S's; environment, default 131072, 0 = never): the CPU path ends such a join in milliseconds, before
/// the GPUs would have started (the driver's start and a context per GPU take 0.4-1.4 s on the machines
/// measured: PERFORMANCE.md). The GPUs otherwise; join() then still takes the CPU path when none is
/// found. Touches no GPU (a CPU route makes no CUDA call at all).
/// @throw InputError when MGJOIN_CPU_ROUTE_ROWS is not a non-negative integer.
ExecutorChoice choose_executor(const JoinOptions& options, std::int64_t r_rows, std::int64_t s_rows);

/// Joins R and S on key equality. The paper flow sorts the inputs in place (keys with their payloads):
/// ranges in OutputMode::Ranges index into the sorted inputs. The co-partitioned flow leaves them
/// untouched; the CPU path sorts them in place.
/// @throw InputError when key types differ, a payload's length differs from its key's, a requested GPU
///        does not exist, or the output has 2^64 or more tuples (its count is not a 64-bit number);
///        OutOfMemory when host memory cannot hold what the join needs (checked before it is taken);
///        Cancelled when options.cancel was set.
JoinResult join(RelationView r, RelationView s, const JoinOptions& options = {});

}  // namespace mgjoin
