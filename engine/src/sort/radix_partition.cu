// MSB radix partitioning pass (paper, Section 3.1.2, "On-GPU Chunk Partitioning").
#include "engine/src/sort/radix_partition.hpp"

#include "alloc/cub_adapter.cuh"
#include "engine/src/sort/bucket_distribution.hpp"

#include <mgjoin/error.hpp>

#include <cub/block/block_scan.cuh>
#include <cub/device/device_scan.cuh>

#include <algorithm>

namespace mgjoin::sort {
namespace {

constexpr int kThreads = 256;  // one thread per digit in the block-level scan
constexpr int kItems = 8;
constexpr int kTile = kThreads * kItems;
constexpr int kMaxBlocks = 1024;  // bounds the (digit, block) offset table: 256 · 1024 · 8 B = 2 MiB
static_assert(kThreads == kRadixBuckets);

struct NoPayload {};
template <int Bytes> struct PayloadOf { using type = NoPayload; };
template <> struct PayloadOf<4> { using type = std::uint32_t; };
template <> struct PayloadOf<8> { using type = std::uint64_t; };

/// Each block owns a contiguous run of tiles, so its histogram and its scatter see the same tuples.
struct BlockSplit {
  std::int64_t n = 0;
  std::int64_t tiles_per_block = 0;
  int blocks = 0;
  __host__ __device__ std::int64_t begin(int b) const {
    const std::int64_t at = static_cast<std::int64_t>(b) * tiles_per_block * kTile;
    return at < n ? at : n;
  }
  __host__ __device__ std::int64_t end(int b) const { return begin(b + 1); }
};

BlockSplit split_blocks(std::int64_t n) {
  const std::int64_t tiles = (n + kTile - 1) / kTile;
  BlockSplit s{n, 1, 1};
  s.tiles_per_block = std::max<std::int64_t>(1, (tiles + kMaxBlocks - 1) / kMaxBlocks);
  s.blocks = static_cast<int>(std::max<std::int64_t>(1, (tiles + s.tiles_per_block - 1) / s.tiles_per_block));
  return s;
}

template <class K>
__device__ __forceinline__ unsigned digit_of(K key, int shift) {
  return static_cast<unsigned>(key >> shift) & (kRadixBuckets - 1);
}

template <class K>
__global__ void __launch_bounds__(kThreads) block_histogram_kernel(const K* __restrict__ keys, BlockSplit split,
                                                                   int shift, K key_xor,
                                                                   std::uint64_t* __restrict__ block_counts,
                                                                   std::uint64_t* __restrict__ device_counts) {
  __shared__ unsigned hist[kRadixBuckets];
  hist[threadIdx.x] = 0;
  __syncthreads();
  const std::int64_t end = split.end(blockIdx.x);
  for (std::int64_t i = split.begin(blockIdx.x) + threadIdx.x; i < end; i += kThreads)
    atomicAdd(&hist[digit_of<K>(keys[i] ^ key_xor, shift)], 1u);
  __syncthreads();
  const unsigned count = hist[threadIdx.x];
  block_counts[static_cast<std::int64_t>(threadIdx.x) * split.blocks + blockIdx.x] = count;  // digit-major
  if (count) atomicAdd(reinterpret_cast<unsigned long long*>(&device_counts[threadIdx.x]), count);
}

template <class K, class P>
__global__ void __launch_bounds__(kThreads) scatter_kernel(const K* __restrict__ keys_in, const P* __restrict__ payload_in,
                                                           BlockSplit split, int shift, K key_xor,
                                                           const std::uint64_t* __restrict__ block_offsets,
                                                           K* __restrict__ keys_out, P* __restrict__ payload_out) {
  constexpr bool kHasPayload = !std::is_same_v<P, NoPayload>;
  using Scan = cub::BlockScan<unsigned, kThreads>;
  __shared__ typename Scan::TempStorage scan_storage;
  __shared__ unsigned long long cursor[kRadixBuckets];  // next global write position per digit
  __shared__ unsigned count[kRadixBuckets];
  __shared__ unsigned start[kRadixBuckets];
  __shared__ K staged_keys[kTile];
  __shared__ std::conditional_t<kHasPayload, P, char> staged_payload[kHasPayload ? kTile : 1];

  const unsigned t = threadIdx.x;
  cursor[t] = block_offsets[static_cast<std::int64_t>(t) * split.blocks + blockIdx.x];
  const std::int64_t end = split.end(blockIdx.x);
  for (std::int64_t base = split.begin(blockIdx.x); base < end; base += kTile) {
    const int tile = static_cast<int>(end - base < kTile ? end - base : kTile);
    count[t] = 0;
    __syncthreads();
    K key[kItems];
    unsigned rank[kItems];
#pragma unroll
    for (int j = 0; j < kItems; ++j) {
      const int i = j * kThreads + static_cast<int>(t);
      if (i < tile) {
        key[j] = keys_in[base + i] ^ key_xor;
        rank[j] = atomicAdd(&count[digit_of<K>(key[j], shift)], 1u);  // unstable: the local sort follows
      }
    }
    __syncthreads();
    unsigned exclusive = 0;
    Scan(scan_storage).ExclusiveSum(count[t], exclusive);
    start[t] = exclusive;
    __syncthreads();
#pragma unroll
    for (int j = 0; j < kItems; ++j) {
      const int i = j * kThreads + static_cast<int>(t);
      if (i < tile) {
        const unsigned slot = start[digit_of<K>(key[j], shift)] + rank[j];
        staged_keys[slot] = key[j];
        if constexpr (kHasPayload) staged_payload[slot] = payload_in[base + i];
      }
    }
    __syncthreads();
    // Consecutive threads write consecutive slots of one bucket: runs of contiguous global addresses.
    for (int i = static_cast<int>(t); i < tile; i += kThreads) {
      const K k = staged_keys[i];
      const unsigned d = digit_of<K>(k, shift);
      const unsigned long long at = cursor[d] + static_cast<unsigned>(i) - start[d];
      keys_out[at] = k;
      if constexpr (kHasPayload) payload_out[at] = staged_payload[i];
    }
    __syncthreads();
    cursor[t] += count[t];
  }
}

template <class K>
__global__ void xor_kernel(K* keys, std::int64_t n, K key_xor) {
  for (std::int64_t i = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<std::int64_t>(gridDim.x) * blockDim.x)
    keys[i] ^= key_xor;
}

template <class K, class P>
void partition_typed(const void* keys_in, const void* payload_in, void* keys_out, void* payload_out, std::int64_t n,
                     int shift, std::uint64_t key_xor, std::uint64_t* device_counts,
                     alloc::DeviceStackAllocator& memory, cudaStream_t stream) {
  MGJOIN_CUDA_TRY(cudaMemsetAsync(device_counts, 0, kRadixBuckets * sizeof(std::uint64_t), stream));
  if (n == 0) return;
  const BlockSplit split = split_blocks(n);
  const std::size_t table = static_cast<std::size_t>(kRadixBuckets) * split.blocks;
  alloc::StackBuffer<std::uint64_t, alloc::DeviceStackAllocator> block_counts(memory, table);
  alloc::StackBuffer<std::uint64_t, alloc::DeviceStackAllocator> block_offsets(memory, table);
  block_histogram_kernel<K><<<split.blocks, kThreads, 0, stream>>>(static_cast<const K*>(keys_in), split, shift,
                                                                   static_cast<K>(key_xor), block_counts.data(),
                                                                   device_counts);
  MGJOIN_CHECK_LAUNCH();
  alloc::run_cub(memory, [&](void* temp, std::size_t& bytes) {
    return cub::DeviceScan::ExclusiveSum(temp, bytes, block_counts.data(), block_offsets.data(),
                                         static_cast<std::int64_t>(table), stream);
  });
  scatter_kernel<K, P><<<split.blocks, kThreads, 0, stream>>>(
      static_cast<const K*>(keys_in), static_cast<const P*>(payload_in), split, shift, static_cast<K>(key_xor),
      block_offsets.data(), static_cast<K*>(keys_out), static_cast<P*>(payload_out));
  MGJOIN_CHECK_LAUNCH();
}

template <class K>
void partition_key(const TupleLayout& l, const void* ki, const void* pi, void* ko, void* po, std::int64_t n, int shift,
                   std::uint64_t key_xor, std::uint64_t* counts, alloc::DeviceStackAllocator& mem, cudaStream_t s) {
  switch (l.payload_bytes) {
    case 0: return partition_typed<K, NoPayload>(ki, pi, ko, po, n, shift, key_xor, counts, mem, s);
    case 4: return partition_typed<K, std::uint32_t>(ki, pi, ko, po, n, shift, key_xor, counts, mem, s);
    case 8: return partition_typed<K, std::uint64_t>(ki, pi, ko, po, n, shift, key_xor, counts, mem, s);
    default: MGJOIN_EXPECTS(false, "payloads are 0, 4 or 8 bytes");
  }
}

}  // namespace

void radix_partition(const TupleLayout& layout, const void* keys_in, const void* payload_in, void* keys_out,
                     void* payload_out, std::int64_t n, int shift, std::uint64_t key_xor,
                     std::uint64_t* device_counts, alloc::DeviceStackAllocator& memory, cudaStream_t stream) {
  MGJOIN_EXPECTS(shift >= 0 && shift + kRadixBits <= layout.key_bytes * 8, "digit outside the key");
  if (layout.key_bytes == 4)
    partition_key<std::uint32_t>(layout, keys_in, payload_in, keys_out, payload_out, n, shift, key_xor, device_counts,
                                 memory, stream);
  else
    partition_key<std::uint64_t>(layout, keys_in, payload_in, keys_out, payload_out, n, shift, key_xor, device_counts,
                                 memory, stream);
}

void xor_keys(int key_bytes, void* keys, std::int64_t n, std::uint64_t key_xor, cudaStream_t stream) {
  if (n == 0 || key_xor == 0) return;
  const int blocks = static_cast<int>(std::min<std::int64_t>((n + 255) / 256, 4096));
  if (key_bytes == 4)
    xor_kernel<<<blocks, 256, 0, stream>>>(static_cast<std::uint32_t*>(keys), n, static_cast<std::uint32_t>(key_xor));
  else
    xor_kernel<<<blocks, 256, 0, stream>>>(static_cast<std::uint64_t*>(keys), n, key_xor);
  MGJOIN_CHECK_LAUNCH();
}

}  // namespace mgjoin::sort
