#include "engine/src/exec/pinned_stacks.hpp"

#include "topology/numa_binding.hpp"

namespace mgjoin::exec {

void PinnedStacks::make(std::uint64_t bytes) {
  stacks_.clear();
  for (const int d : devices_) {
    const topology::ScopedGpuNumaMemory near(topology_, d);
    stacks_.add(bytes, /*mapped=*/true);
  }
}

std::uint64_t PinnedStacks::bytes() const {
  std::uint64_t total = 0;
  for (const auto& m : stacks_) total += m->capacity();
  return total;
}

}  // namespace mgjoin::exec
