#include "engine/src/join/host_parallel.hpp"

namespace mgjoin::detail {

void host_parallel_for(std::int64_t n, const std::function<void(std::int64_t)>& body) {
#pragma omp parallel for schedule(dynamic, 1)
  for (std::int64_t i = 0; i < n; ++i) body(i);
}

}  // namespace mgjoin::detail
