// Binary-search m:n merge-join kernel (paper Section 3.3.3). One thread per row of the smaller side;
// only the first row of each key run does work: three binary searches (end of its run in the smaller
// side, first and end of the key's run in the other side), so a hot key costs O(log n), not O(run).
#include "engine/src/join/join_kernel.hpp"

#include "engine/src/join/range_search.cuh"
#include "engine/src/join/tuple_counter.cuh"

#include "core/dispatch.hpp"

#include <mgjoin/error.hpp>

#include <algorithm>

namespace mgjoin::detail {
namespace {

/// Resident blocks per SM the kernel is built for: 256 threads x 4 blocks leaves registers for the
/// 64-bit binary searches while keeping half the SM's warps resident to hide memory latency.
constexpr int kJoinMinBlocksPerSm = 4;

template <class UKey>
__global__ void __launch_bounds__(kJoinThreads, kJoinMinBlocksPerSm)
    join_subpartition_kernel(const UKey* __restrict__ r, std::uint64_t nr, const UKey* __restrict__ s,
                             std::uint64_t ns, std::uint64_t r_base, std::uint64_t s_base, MatchRange* ranges,
                             std::uint64_t capacity, unsigned long long* range_counter,
                             TupleCounter* tuple_count) {
  const bool r_smaller = nr <= ns;
  const UKey* a = r_smaller ? r : s;
  const UKey* b = r_smaller ? s : r;
  const std::uint64_t na = r_smaller ? nr : ns, nb = r_smaller ? ns : nr;
  CheckedSum tuples;
  const std::uint64_t stride = static_cast<std::uint64_t>(gridDim.x) * blockDim.x;
  for (std::uint64_t i = static_cast<std::uint64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < na; i += stride) {
    const UKey key = a[i];
    if (i > 0 && a[i - 1] == key) continue;  // only the first row of a key run searches
    const std::uint64_t a_end = key_upper_bound(a, i + 1, na, key);
    const IndexRange in_b = key_range(b, 0, nb, key);
    if (in_b.empty()) continue;
    tuples.add_product(a_end - i, in_b.size());  // 2^32 x 2^32 rows of one key already overflow
    if (ranges == nullptr) continue;
    const unsigned long long slot = atomicAdd(range_counter, 1ull);
    if (slot >= capacity) continue;  // the host sees counter > capacity and redoes this pair
    ranges[slot] = r_smaller ? MatchRange{r_base + i, r_base + a_end, s_base + in_b.begin, s_base + in_b.end}
                             : MatchRange{r_base + in_b.begin, r_base + in_b.end, s_base + i, s_base + a_end};
  }
  warp_add_tuples(tuple_count, tuples);
}

unsigned grid_for(std::uint64_t rows, int max_blocks) {
  const std::uint64_t blocks = (rows + kJoinThreads - 1) / kJoinThreads;
  return static_cast<unsigned>(std::clamp<std::uint64_t>(blocks, 1, static_cast<std::uint64_t>(max_blocks)));
}

template <class UKey>
void launch_join_typed(const SubpartitionJoinArgs& a, cudaStream_t stream) {
  const std::uint64_t smaller = std::min(a.r_size, a.s_size);
  if (smaller == 0) return;
  join_subpartition_kernel<UKey><<<grid_for(smaller, kJoinMaxBlocks), kJoinThreads, 0, stream>>>(
      static_cast<const UKey*>(a.r_keys), a.r_size, static_cast<const UKey*>(a.s_keys), a.s_size, a.r_base,
      a.s_base, a.ranges, a.range_capacity, a.range_counter, a.tuple_count);
  MGJOIN_CHECK_LAUNCH();
}

}  // namespace

void launch_join_subpartition(const SubpartitionJoinArgs& args, std::size_t key_width, cudaStream_t stream) {
  dispatch_key_width(static_cast<int>(key_width), [&](auto key) { launch_join_typed<decltype(key)>(args, stream); });
}

}  // namespace mgjoin::detail
