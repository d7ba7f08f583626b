#pragma once
// The co-partitioned flow's plan (docs/DESIGN.md draws the flow; flows/copart runs it): R and S
// range-partitioned by shared splitters, each GPU sorting and joining the partition pair it owns, in
// core (R and S fit the GPUs together) or streamed (the smaller relation X stays resident, sorted in
// runs, and the larger one Y streams through in rounds). Every input byte crosses PCIe once.
//
// plan_copart() decides from sizes alone (CPU-testable): partition plan, buffer sizes, in core,
// streamed or neither.
#include "engine/src/copart/copart_kernels.hpp"
#include "engine/src/copart/splitters.hpp"

#include <mgjoin/error.hpp>
#include <mgjoin/join.hpp>
#include <mgjoin/types.hpp>

#include <algorithm>
#include <array>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

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

/// Sizes a plan's buffers again for its shape (in core, or streamed in its chunks and runs) after its
/// partitions changed (a pass's spill destination), and whether it still fits; the reason is left as it was.
void resize_buffers(CopartPlan& plan, const RelationView& r, const RelationView& s, OutputMode output,
                    const ScratchSizes& scratch);

/// The real partition sizes outgrew the plan's bounds (the sample misled): nothing was output, the
/// caller may run another flow.
class PlanMissed : public Error {
 public:
  using Error::Error;
};

/// Pinned bytes per GPU run_copart takes for a plan (the output windows' staging and small buffers).
std::uint64_t pinned_bytes_needed(const CopartPlan& plan, OutputMode output);

}  // namespace mgjoin::copart
