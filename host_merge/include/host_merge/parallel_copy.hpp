#pragma once
// memcpy split over all OpenMP threads: one thread cannot saturate host memory bandwidth
// (the merge phase copies merged runs back; bench restores its inputs between runs).
#include <cstddef>

namespace mgjoin::host_merge {

void parallel_copy(void* dst, const void* src, std::size_t bytes);

}  // namespace mgjoin::host_merge
