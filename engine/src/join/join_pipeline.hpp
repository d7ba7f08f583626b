#pragma once
// The multi-GPU join phase on sorted R and S (paper Section 3.3): merge-path partitioning into one
// partition pair per GPU, then on each GPU a three-stream pipeline over its subpartition pairs
// (H2D keys | binary-search join kernel | ranges into mapped pinned memory, all in flight at once).
#include "alloc/stack_allocator.hpp"
#include "topology/topology.hpp"

#include <mgjoin/join.hpp>
#include <mgjoin/types.hpp>

#include <cstdint>
#include <span>
#include <vector>

namespace mgjoin::detail {

/// One subpartition pair's trip through one stream, in ms since its GPU's pipeline started.
struct StreamTimelineEntry {
  int device = 0;
  int stream = 0;
  std::uint64_t subpartition = 0;  ///< index among its GPU's subpartition pairs
  std::uint64_t key_bytes = 0;     ///< copied host-to-device
  float h2d_begin_ms = 0, h2d_end_ms = 0, kernel_end_ms = 0;
};

struct JoinPhaseOptions {
  /// Bound on |R_ij| + |S_ij|; 0 = as large as the stream buffers allow in the device stacks.
  std::uint64_t max_subpartition_rows = 0;
  std::uint64_t min_subpartitions = 3;  ///< per GPU
  int streams = 3;                      ///< per GPU
  bool record_timeline = true;          ///< CUDA events around each copy and kernel
  /// When set, each GPU's host thread runs on the CPUs near its GPU (a no-op on one NUMA node).
  const topology::Topology* topology = nullptr;
};

struct JoinPhaseResult {
  std::uint64_t count = 0;          ///< output tuples (64-bit, checked)
  std::vector<MatchRange> ranges;   ///< empty for OutputMode::Count; unordered
  std::vector<StreamTimelineEntry> timeline;
  std::uint64_t subpartitions = 0;           ///< joined on GPUs
  std::uint64_t cpu_fallback_subpartitions = 0;  ///< redone on the CPU: their ranges overflowed the buffer
};

/// Joins sorted R and S keys (host memory, the user's key representation; pinned for copy/compute
/// overlap) on `devices`, one partition pair per GPU, with `device_memory[i]` serving devices[i].
/// Ranges are written by the kernels into `range_memory[i]` (devices[i]'s own mapped pinned stack, so
/// that it can sit on that GPU's NUMA node); needed unless `output` is Count. Its available space bounds
/// the ranges a stream can hold: subpartition pairs whose ranges overflow are joined again on the CPU
/// (counts are exact regardless).
/// Appends "join.partition", "join.gpu" and "join.ranges" to `stats`.
/// @throw InputError when the output has 2^64 or more tuples (before any range is gathered).
JoinPhaseResult join_phase(ColumnView r_sorted_keys, ColumnView s_sorted_keys, std::span<const int> devices,
                           std::span<alloc::DeviceStackAllocator* const> device_memory,
                           std::span<alloc::PinnedStackAllocator* const> range_memory, OutputMode output,
                           std::vector<PhaseStat>& stats, const JoinPhaseOptions& options = {});

}  // namespace mgjoin::detail
