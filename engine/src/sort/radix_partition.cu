// MSB radix partitioning pass (paper, Section 3.1.2, "On-GPU Chunk Partitioning").
//
// The scatter is one pass of CUB's onesweep radix sort over the digit's 8 bits: a stable sort by one
// digit is a partition by it. CUB's pass is the paper's algorithm (a digit histogram, then tiles ranked
// and staged in shared memory and written as contiguous runs per bucket; decoupled look-back stands
// in for the separate scan of block offsets), tuned per architecture: it ran 2.2-2.6x faster than our
// own histogram + scan + scatter kernels (per H200: 2.5·10^8 8/8 tuples 9 -> 4.0 ms, 5·10^8 4/4
// 12 -> 4.7 ms; PERFORMANCE.md), and it reuses the local sort's six CUB instantiations, so it adds no
// compile time.
// The 256 bucket sizes are then read off the partitioned keys by binary search: no extra pass.
#include "engine/src/sort/radix_partition.hpp"

#include "engine/src/exec/key_order.hpp"
#include "engine/src/sort/bucket_distribution.hpp"
#include "engine/src/sort/local_sort.hpp"

#include "core/dispatch.hpp"

#include <mgjoin/error.hpp>

#include <algorithm>

namespace mgjoin::sort {
namespace {

template <class K>
__device__ __forceinline__ unsigned digit_of(K key, int shift) {
  return static_cast<unsigned>(key >> shift) & (kRadixBuckets - 1);
}

/// Thread d finds where bucket d starts in keys partitioned by the digit at `shift` (digits ascend
/// along the array), then writes bucket d's size to counts[d].
template <class K>
__global__ void __launch_bounds__(kRadixBuckets) bucket_sizes_kernel(const K* __restrict__ keys, std::int64_t n,
                                                                      int shift, std::uint64_t* __restrict__ counts) {
  __shared__ std::int64_t start[kRadixBuckets + 1];
  const unsigned d = threadIdx.x;
  std::int64_t lo = 0, hi = n;  // first index whose digit is >= d
  while (lo < hi) {
    const std::int64_t mid = lo + (hi - lo) / 2;
    if (digit_of<K>(keys[mid], shift) < d) lo = mid + 1;
    else hi = mid;
  }
  start[d] = lo;
  if (d == 0) start[kRadixBuckets] = n;
  __syncthreads();
  counts[d] = static_cast<std::uint64_t>(start[d + 1] - start[d]);
}

void bucket_sizes(int key_bytes, const void* keys, std::int64_t n, int shift, std::uint64_t* counts,
                  cudaStream_t stream) {
  dispatch_key_width(key_bytes, [&](auto key) {
    using K = decltype(key);
    bucket_sizes_kernel<<<1, kRadixBuckets, 0, stream>>>(static_cast<const K*>(keys), n, shift, counts);
  });
  MGJOIN_CHECK_LAUNCH();
}

}  // namespace

void radix_partition(const TupleLayout& layout, void* keys_in, void* payload_in, void* keys_out, void* payload_out,
                     std::int64_t n, int shift, std::uint64_t key_xor, std::uint64_t* device_counts,
                     alloc::DeviceStackAllocator& memory, cudaStream_t stream) {
  MGJOIN_EXPECTS(shift >= 0 && shift + kRadixBits <= layout.key_bytes * 8, "digit outside the key");
  if (n == 0) {
    MGJOIN_CUDA_TRY(cudaMemsetAsync(device_counts, 0, kRadixBuckets * sizeof(std::uint64_t), stream));
    return;
  }
  exec::flip_keys(layout.key_bytes, keys_in, n, key_xor, stream, exec::kSortFlipBlocks);
  alloc::StackBuffer<std::byte, alloc::DeviceStackAllocator> temp(memory,
                                                                  std::max<std::size_t>(1, local_sort_temp_bytes(layout, n)));
  const SortedIn where = local_sort(layout, keys_in, keys_out, payload_in, payload_out, n, shift, shift + kRadixBits,
                                    temp.data(), temp.size(), stream);
  // CUB picks the pass count: one 8-bit pass ends in the second buffer, but n < 2 (or another pass
  // count) leaves the tuples in the first one.
  if (where == SortedIn::Primary) copy_tuples(layout, keys_out, payload_out, keys_in, payload_in, n, stream);
  bucket_sizes(layout.key_bytes, keys_out, n, shift, device_counts, stream);
}

void copy_tuples(const TupleLayout& l, void* keys_to, void* payload_to, const void* keys_from,
                 const void* payload_from, std::int64_t n, cudaStream_t stream) {
  MGJOIN_CUDA_TRY(cudaMemcpyAsync(keys_to, keys_from, n * l.key_bytes, cudaMemcpyDeviceToDevice, stream));
  if (l.payload_bytes)
    MGJOIN_CUDA_TRY(
        cudaMemcpyAsync(payload_to, payload_from, n * l.payload_bytes, cudaMemcpyDeviceToDevice, stream));
}

}  // namespace mgjoin::sort
