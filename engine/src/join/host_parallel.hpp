#pragma once
// OpenMP loops for code compiled by nvcc (which builds .cu host code without -fopenmp).
#include <cstdint>
#include <functional>

namespace mgjoin::detail {

/// Runs body(i) for i in [0, n) on all OpenMP threads, one index at a time (dynamic schedule):
/// meant for few, coarse items (pieces of ranges, partition pairs).
void host_parallel_for(std::int64_t n, const std::function<void(std::int64_t)>& body);

}  // namespace mgjoin::detail
