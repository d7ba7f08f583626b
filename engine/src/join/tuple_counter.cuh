#pragma once
// Device side of TupleCounter (output_count.hpp): the join kernels add their tuples warp by warp, and a
// wrap anywhere on the way sets the counter's flag, so that the host refuses the join.
#include "engine/src/join/output_count.hpp"

#include <cstdint>

namespace mgjoin::detail {

/// Adds every lane's checked sum to `counter` with one atomic per warp. All 32 lanes of a warp of a
/// one-dimensional block call it. An overflow of a lane's sum, the warp's reduction or the counter
/// itself sets counter->overflowed (the count is then meaningless).
__device__ __forceinline__ void warp_add_tuples(TupleCounter* counter, CheckedSum sum) {
  constexpr unsigned kFullWarp = 0xffffffffu;
  const unsigned lane = threadIdx.x & 31u;
  for (unsigned offset = 16; offset > 0; offset /= 2) {
    const std::uint64_t other = __shfl_down_sync(kFullWarp, sum.value, offset);
    if (lane + offset < 32) sum.add(other);  // a lane without a source gets its own value back
  }
  const bool overflowed = __any_sync(kFullWarp, sum.overflowed);
  if (lane != 0 || (!overflowed && sum.value == 0)) return;
  if (!overflowed) {
    const unsigned long long before = atomicAdd(&counter->count, static_cast<unsigned long long>(sum.value));
    if (before + sum.value >= before) return;  // no wrap
  }
  atomicExch(&counter->overflowed, 1ull);
}

}  // namespace mgjoin::detail
