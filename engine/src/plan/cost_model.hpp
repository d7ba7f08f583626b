#pragma once
// The planner's cost model: the seconds a data flow should take, from the bytes it moves over PCIe and
// through the CPU merge and the rates `mgjoin tune` measured on this machine (the tuning file), or
// defaults where there is none. GPU sorts and joins are left out: on every measured machine they run
// at HBM speed beside transfers that take several times as long (docs/DESIGN.md, performance model).
#include "engine/src/sort/planner.hpp"
#include "topology/bandwidth.hpp"

#include <mgjoin/types.hpp>

#include <cstdint>
#include <string>

namespace mgjoin::detail {

/// GB/s (1e9 bytes per second) of the join's GPUs together, and of the host.
struct Rates {
  double h2d = 0, d2h = 0;
  double both_ways = 0;  ///< H2D and D2H at once, both summed
  double host_memcpy = 0, cpu_merge = 0;
  double cpu_gather = 0;  ///< 8-byte words gathered at random by all threads (bytes out; a cache miss per row)
  std::string source;  ///< "tuning file", or which figures are defaults
};

/// Per-GPU PCIe and host rates assumed where nothing was measured: PCIe 4.0 x16 (~25 GB/s each way,
/// ~40 GB/s both ways at once), one socket's memory bandwidth shared by the threads of a merge. Where
/// each way was measured but not both at once, both ways is taken as kBothWaysShare of their sum (the
/// H100 machine: 0.81).
inline constexpr double kDefaultPcieGbps = 25, kDefaultBothWaysGbps = 40;
inline constexpr double kDefaultHostMemcpyGbps = 10, kDefaultCpuMergeGbps = 5;
inline constexpr double kBothWaysShare = 0.8;
/// A random gather of 8-byte words with all threads: `mgjoin tune` measured 6.0 and 6.2 GB/s on
/// nvidia-h100-x2's 32 cores (2026-11-25; PERFORMANCE.md, issue 19).
inline constexpr double kDefaultCpuGatherGbps = 6;

/// Rates of `g` GPUs from `measured` (nullptr or unmeasured figures: defaults). Aggregates measured on
/// all of the machine's n GPUs are scaled by g / n.
Rates rates_for(const topology::MeasuredBandwidths* measured, int g);

/// Bytes a flow moves, in the order it moves them.
struct FlowTraffic {
  std::uint64_t in = 0;      ///< H2D, while `out` goes D2H at the same time
  std::uint64_t out = 0;
  std::uint64_t again = 0;   ///< H2D after both
  std::uint64_t merged = 0;  ///< bytes the CPU merge writes
  std::uint64_t copied = 0;  ///< bytes copied between host buffers
};

/// max(in / h2d, out / d2h, (in + out) / both ways) + again / h2d + merged / cpu merge + copied / host
/// memcpy.
double predict_seconds(const FlowTraffic& t, const Rates& rates);

/// Bytes of `rel` a flow moves: its keys, and its payloads when `payloads`.
std::uint64_t moved_bytes(const RelationView& rel, bool payloads);

/// The co-partitioned flow: in core or streamed (each moved byte in once), or bucketed (`bucket_bytes`,
/// the sample's estimate of what pass 1 writes, out to host buckets while the input comes in, then
/// back in).
FlowTraffic copart_traffic(std::uint64_t moved, std::uint64_t bucket_bytes);

/// The co-partitioned flow in passes: `in` bytes over all passes, `spilled` out to the host while they come
/// in (copart::pass_bytes() counts both).
FlowTraffic passes_traffic(std::uint64_t in, std::uint64_t spilled);

/// The paper flow: whole tuples in for the sort and out sorted, relations of several chunksets merged
/// on the CPU into buffers and copied back, keys in again for the join.
FlowTraffic paper_traffic(const RelationView& r, const RelationView& s, const sort::SortPlan& plan);

/// The margin by which the paper flow must be predicted faster to be chosen over the co-partitioned
/// one: the larger of this share of the co-partitioned prediction and these seconds. The model counts
/// bytes moved and leaves out GPU work and fixed costs, of which the paper flow has more (a sort across
/// the GPUs, a CPU merge, a second pass over the keys), so closer predictions cannot tell the flows
/// apart. Within the margin the co-partitioned flow is kept (it leaves the inputs untouched): a tie, or
/// float noise between two equal predictions, never decides the flow.
inline constexpr double kPaperMarginShare = 0.10;
inline constexpr double kPaperMarginSeconds = 0.002;

/// Whether the paper flow, predicted to take `paper` seconds, is chosen over the co-partitioned flow
/// predicted at `copart` seconds: only when faster by more than the margin above.
bool paper_predicted_faster(double copart, double paper);

/// Whether the flow in passes, predicted at `passes` seconds, is chosen over the bucketed flow predicted
/// at `bucketed`: only when faster by more than the same margin. The model leaves out the GPU work each
/// pass repeats (partitioning both relations, sorting its share) and pass 2's sorts of the bucketed
/// flow, so closer predictions cannot tell them apart; within the margin the bucketed flow, measured on
/// more machines, is kept.
bool passes_predicted_faster(double bucketed, double passes);

}  // namespace mgjoin::detail
