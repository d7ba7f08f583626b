#pragma once
// One mapped pinned stack per GPU, on that GPU's NUMA node (its kernels write there): the paper flow's
// join phase puts its matching ranges in them, the co-partitioned flow its segment sizes and output
// staging. Made once per Engine, grown (made again, larger) when a join needs more.
#include "alloc/stack_allocator.hpp"
#include "alloc/stack_set.hpp"
#include "topology/topology.hpp"

#include <cstdint>
#include <span>
#include <utility>
#include <vector>

namespace mgjoin::exec {

/// Mapped pinned memory per GPU for the join kernels' matching ranges when only counting (the kernels
/// still need somewhere to write); joins that return ranges grow it to their bound.
inline constexpr std::uint64_t kMinRangeBytes = 64ull << 20;
/// Largest range memory kept, all GPUs together: subpartition pairs whose ranges overflow it are
/// joined again on the CPU.
inline constexpr std::uint64_t kMaxRangeBytes = 16ull << 30;

class PinnedStacks {
 public:
  /// No stacks yet (make() makes them) for `devices`, placed by `topology` (which outlives this).
  PinnedStacks(std::vector<int> devices, const topology::Topology& topology)
      : devices_(std::move(devices)), topology_(topology) {}

  /// (Re)creates the stacks with `bytes` each; pinning touches every page, so each stack is made under
  /// its GPU's NUMA memory policy (a no-op on one node).
  void make(std::uint64_t bytes);
  /// Bytes of all the stacks together.
  std::uint64_t bytes() const;
  alloc::PinnedStackAllocator& operator[](std::size_t d) const { return stacks_[d]; }
  std::span<alloc::PinnedStackAllocator* const> view() const { return stacks_.view(); }

 private:
  std::vector<int> devices_;
  const topology::Topology& topology_;
  alloc::StackSet<alloc::PinnedStackAllocator> stacks_;
};

}  // namespace mgjoin::exec
