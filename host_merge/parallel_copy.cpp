#include "host_merge/parallel_copy.hpp"

#include <algorithm>
#include <cstdint>
#include <cstring>

namespace mgjoin::host_merge {

void parallel_copy(void* dst, const void* src, std::size_t bytes) {
  constexpr std::size_t kBlock = 64ull << 20;
  const auto blocks = static_cast<std::int64_t>((bytes + kBlock - 1) / kBlock);
#pragma omp parallel for schedule(dynamic, 1)
  for (std::int64_t b = 0; b < blocks; ++b) {
    const std::size_t begin = static_cast<std::size_t>(b) * kBlock;
    std::memcpy(static_cast<char*>(dst) + begin, static_cast<const char*>(src) + begin, std::min(kBlock, bytes - begin));
  }
}

}  // namespace mgjoin::host_merge
