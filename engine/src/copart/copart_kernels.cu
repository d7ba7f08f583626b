// Kernels of the co-partitioned flow (copart_kernels.hpp says what each does).
#include "engine/src/copart/copart_kernels.hpp"

#include "engine/src/join/range_search.cuh"
#include "engine/src/join/tuple_counter.cuh"

#include "core/dispatch.hpp"

#include <mgjoin/error.hpp>

#include <cub/device/device_scan.cuh>

#include <algorithm>

namespace mgjoin::copart {
namespace {

// ------------------------------------------------------------------ partition

constexpr int kPartitionThreads = 256;
constexpr int kPartitionItems = 8;
constexpr int kPartitionTile = kPartitionThreads * kPartitionItems;
constexpr unsigned kFullWarp = 0xffffffffu;

std::int64_t partition_blocks(std::int64_t n) { return std::max<std::int64_t>(1, (n + kPartitionTile - 1) / kPartitionTile); }

/// Scratch layout: block counts [gpus][blocks] plus one trailing 0, their exclusive scan, CUB's temp.
struct PartitionScratch {
  std::uint64_t* counts;
  std::uint64_t* offsets;
  void* scan_temp;
  std::size_t scan_temp_bytes;
};

std::size_t align_up(std::size_t bytes) { return (bytes + 255) / 256 * 256; }

std::size_t scan_temp_bytes_for(std::uint64_t n) {
  std::size_t bytes = 0;
  MGJOIN_CUDA_TRY(cub::DeviceScan::ExclusiveSum(nullptr, bytes, static_cast<const std::uint64_t*>(nullptr),
                                                static_cast<std::uint64_t*>(nullptr), n));
  return bytes;
}

PartitionScratch carve(void* scratch, std::size_t bytes, std::int64_t blocks, int gpus) {
  const std::size_t entries = static_cast<std::size_t>(blocks) * gpus + 1;
  auto* base = static_cast<std::byte*>(scratch);
  PartitionScratch s{};
  s.counts = reinterpret_cast<std::uint64_t*>(base);
  s.offsets = reinterpret_cast<std::uint64_t*>(base + align_up(entries * 8));
  s.scan_temp = base + 2 * align_up(entries * 8);
  MGJOIN_EXPECTS(bytes >= 2 * align_up(entries * 8), "partition scratch too small");
  s.scan_temp_bytes = bytes - 2 * align_up(entries * 8);
  return s;
}

template <class K>
__device__ __forceinline__ K load_key(const void* keys, std::int64_t i, std::uint64_t key_xor) {
  return static_cast<const K*>(keys)[i] ^ static_cast<K>(key_xor);
}

__device__ __forceinline__ void copy_payload(void* to, std::uint64_t to_row, const void* from, std::int64_t from_row,
                                             int bytes) {
  if (bytes == 4)
    static_cast<std::uint32_t*>(to)[to_row] = static_cast<const std::uint32_t*>(from)[from_row];
  else if (bytes == 8)
    static_cast<std::uint64_t*>(to)[to_row] = static_cast<const std::uint64_t*>(from)[from_row];
}

/// Per block and destination GPU: how many tuples (copies included) go there.
template <class K>
__global__ void __launch_bounds__(kPartitionThreads)
    partition_count_kernel(PartitionPlan plan, PartitionArgs a, std::uint64_t* counts) {
  __shared__ unsigned per_gpu[kMaxGpus];
  if (threadIdx.x < kMaxGpus) per_gpu[threadIdx.x] = 0;
  __syncthreads();
  const std::int64_t base = static_cast<std::int64_t>(blockIdx.x) * kPartitionTile;
  for (int j = 0; j < kPartitionItems; ++j) {
    const std::int64_t i = base + j * kPartitionThreads + threadIdx.x;
    if (i >= a.n) break;
    const K key = load_key<K>(a.keys, i, a.key_xor);
    const Destinations d = destinations(plan, a.side, key, a.first_row + i);
    for (int c = 0; c < d.count; ++c) atomicAdd(&per_gpu[d.first + c], 1u);
  }
  __syncthreads();
  if (threadIdx.x < plan.gpus) counts[threadIdx.x * gridDim.x + blockIdx.x] = per_gpu[threadIdx.x];
}

/// Scatters each tuple to its destinations' segments (keys in the ordered form, but for a pass's spill).
/// Lanes of a warp going to the same GPU take
/// consecutive slots with one shared atomic (so their writes coalesce); slots within a block follow
/// the order the warps arrive in: a segment is unordered, as the owner sorts it anyway.
template <class K>
__global__ void __launch_bounds__(kPartitionThreads)
    partition_scatter_kernel(PartitionPlan plan, PartitionArgs a, const std::uint64_t* offsets) {
  __shared__ unsigned next[kMaxGpus];
  __shared__ std::uint64_t start[kMaxGpus];
  if (threadIdx.x < kMaxGpus) next[threadIdx.x] = 0;
  if (threadIdx.x < plan.gpus) start[threadIdx.x] = offsets[threadIdx.x * gridDim.x + blockIdx.x];
  __syncthreads();
  const unsigned lane = threadIdx.x & 31;
  const std::int64_t base = static_cast<std::int64_t>(blockIdx.x) * kPartitionTile;
  for (int j = 0; j < kPartitionItems; ++j) {
    const std::int64_t i = base + j * kPartitionThreads + threadIdx.x;
    const bool valid = i < a.n;
    K key = 0;
    Destinations d{0, 0};
    if (valid) {
      key = load_key<K>(a.keys, i, a.key_xor);
      d = destinations(plan, a.side, key, a.first_row + i);
    }
    const int rounds = __reduce_max_sync(kFullWarp, static_cast<unsigned>(d.count));
    for (int c = 0; c < rounds; ++c) {
      const int dest = c < d.count ? d.first + c : -1;
      const unsigned peers = __match_any_sync(kFullWarp, dest);
      const int leader = __ffs(peers) - 1;
      unsigned slot = 0;
      if (static_cast<int>(lane) == leader && dest >= 0) slot = atomicAdd(&next[dest], __popc(peers));
      slot = __shfl_sync(kFullWarp, slot, leader);
      if (dest < 0) continue;
      const std::uint64_t row = start[dest] + slot + __popc(peers & ((1u << lane) - 1));
      // A pass's spill goes back to the host in the input's key form; the GPUs' segments stay ordered.
      const bool spilled = plan.spill_side >= 0 && dest == plan.gpus - 1;
      static_cast<K*>(a.keys_out)[row] = spilled ? static_cast<K>(key ^ static_cast<K>(a.key_xor)) : key;
      copy_payload(a.payload_out, row, a.payload, i, a.widths.payload_bytes);
      if (a.source_out) a.source_out[row] = static_cast<std::uint32_t>(i);
    }
  }
}

/// segments[d] = where destination d's segment starts; segments[gpus] = the total.
__global__ void segment_bounds_kernel(const std::uint64_t* offsets, std::int64_t blocks, int gpus,
                                      std::uint64_t* segments) {
  const int d = threadIdx.x;
  if (d <= gpus) segments[d] = offsets[d * blocks];
}

template <class T>
__global__ void gather_kernel(const T* __restrict__ in, const std::uint32_t* __restrict__ source, std::uint64_t n,
                              T* __restrict__ out) {
  for (std::uint64_t i = blockIdx.x * static_cast<std::uint64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<std::uint64_t>(gridDim.x) * blockDim.x)
    out[i] = in[source[i]];
}

__global__ void positions_kernel(std::uint32_t* out, std::uint64_t n) {
  for (std::uint64_t i = blockIdx.x * static_cast<std::uint64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<std::uint64_t>(gridDim.x) * blockDim.x)
    out[i] = static_cast<std::uint32_t>(i);
}

unsigned grid_for(std::uint64_t n) { return static_cast<unsigned>(std::min<std::uint64_t>((n + 255) / 256, 8192)); }

// ------------------------------------------------------------------ resident join

constexpr int kJoinThreads = 256;
constexpr int kJoinItems = 8;
constexpr int kJoinTile = kJoinThreads * kJoinItems;
/// Tiles joined per launch: their merge-path bounds are found first, one thread each, so that the
/// searches' dependent loads overlap one another instead of holding each tile's block (a block that
/// searched its own bounds spent most of its time waiting on them).
constexpr std::uint64_t kJoinSliceTiles = std::uint64_t{1} << 16;

/// bounds[i] = the X index where the merge path crosses diagonal (first_tile + i) * kJoinTile, for
/// i in [0, tiles].
template <class K>
__global__ void merge_path_bounds_kernel(const K* __restrict__ x, std::uint64_t nx, const K* __restrict__ y,
                                         std::uint64_t ny, std::uint64_t first_tile, std::uint64_t tiles,
                                         std::uint64_t* bounds) {
  const std::uint64_t i = static_cast<std::uint64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i > tiles) return;
  const std::uint64_t diag = std::min<std::uint64_t>((first_tile + i) * kJoinTile, nx + ny);
  bounds[i] = detail::merge_path_search(x, nx, y, ny, diag);
}

/// One merge-path tile of X and Y per block (ties taken from X first, so every x equal to a probe key y
/// is merged before y). For y in the tile: #x <= y is the tile's X start plus the tile's x <= y (x after
/// the tile are > y); #x < y is found in the tile unless y's run of x starts before it (then a binary
/// search in X). Each (x, y) pair is counted once: in the tile that holds y.
template <class K>
__global__ void __launch_bounds__(kJoinThreads)
    resident_join_kernel(const K* __restrict__ x, std::uint64_t nx, const K* __restrict__ y, std::uint64_t ny,
                         std::uint64_t first_tile, const std::uint64_t* __restrict__ bounds,
                         detail::TupleCounter* count, std::uint64_t* matches, std::uint64_t* first_match) {
  __shared__ K tile[kJoinTile];
  const std::uint64_t diag0 = (first_tile + blockIdx.x) * kJoinTile;
  const std::uint64_t diag1 = std::min<std::uint64_t>(diag0 + kJoinTile, nx + ny);
  const std::uint64_t x0 = bounds[blockIdx.x], x1 = bounds[blockIdx.x + 1];
  const std::uint64_t y0 = diag0 - x0, y1 = diag1 - x1;
  const auto tx = static_cast<unsigned>(x1 - x0), ty = static_cast<unsigned>(y1 - y0);
  for (unsigned i = threadIdx.x; i < tx + ty; i += kJoinThreads) tile[i] = i < tx ? x[x0 + i] : y[y0 + i - tx];
  __syncthreads();
  CheckedSum tuples;
  for (unsigned j = threadIdx.x; j < ty; j += kJoinThreads) {
    const K key = tile[tx + j];
    const std::uint64_t at_most = detail::key_upper_bound(tile, 0, tx, key);
    const std::uint64_t below_in_tile = detail::key_lower_bound(tile, 0, at_most, key);
    std::uint64_t first = x0 + below_in_tile;
    if (below_in_tile == 0 && x0 > 0 && x[x0 - 1] == key) first = detail::key_lower_bound(x, 0, x0, key);
    const std::uint64_t m = x0 + at_most - first;
    tuples.add(m);
    if (matches) {
      matches[y0 + j] = m;
      first_match[y0 + j] = first;
    }
  }
  // The blocks' sums reach 2^64 only together (2^32 equal keys on each side): the counter's flag says so.
  detail::warp_add_tuples(count, tuples);
}

// ------------------------------------------------------------------ output

constexpr int kOutputThreads = 256;
constexpr int kOutputPerThread = 8;
constexpr int kOutputBlockRows = kOutputThreads * kOutputPerThread;
/// Entries of `offsets` a block stages in shared memory: its output rows' probe rows when most of them
/// match (16 KiB); sparser ranges are searched in global memory, within the block's bounds.
constexpr int kStagedOffsets = 2048;

/// The probe row whose output range holds row o: the last y in [y0, y1] with offsets[y] <= o.
template <class Offsets>
__device__ __forceinline__ std::uint64_t probe_row_in(const Offsets* offsets, std::uint64_t y0, std::uint64_t y1,
                                                      std::uint64_t o) {
  return detail::key_upper_bound(offsets, y0, y1 + 1, o) - 1;
}

/// A block writes kOutputBlockRows consecutive output rows, its threads taking consecutive rows (the
/// window's writes and the probe side's reads coalesce). Two searches of the whole offsets array bound
/// the block's probe rows [y0, y1]; each row's probe row is then searched within them, in shared
/// memory when they are few. (Before, each thread searched all the offsets and walked 8 rows of its
/// own, its writes 8 rows apart from its neighbours': on one H100 a 64 MB window took ~2 ms to write
/// beside a sort, ~1.2 ms to copy out, so the copies waited for the kernel.)
template <class K>
__global__ void __launch_bounds__(kOutputThreads) write_window_kernel(OutputWindowArgs a) {
  __shared__ std::uint64_t staged[kStagedOffsets];
  __shared__ std::uint64_t bounds[2];
  const std::uint64_t ob = a.o_begin + static_cast<std::uint64_t>(blockIdx.x) * kOutputBlockRows;
  const std::uint64_t oe = std::min<std::uint64_t>(ob + kOutputBlockRows, a.o_end);
  const std::uint64_t ny = a.pair.ny;
  if (threadIdx.x == 0) bounds[0] = detail::key_upper_bound(a.offsets, 0, ny + 1, ob) - 1;
  if (threadIdx.x == 32) bounds[1] = detail::key_upper_bound(a.offsets, 0, ny + 1, oe - 1) - 1;
  __syncthreads();
  const std::uint64_t y0 = bounds[0], y1 = bounds[1];
  const bool in_shared = y1 - y0 + 1 <= kStagedOffsets;
  if (in_shared)
    for (std::uint64_t i = threadIdx.x; i <= y1 - y0; i += kOutputThreads) staged[i] = a.offsets[y0 + i];
  __syncthreads();
  const auto* ykeys = static_cast<const K*>(a.pair.y_keys);
  void* x_out = a.x_is_r ? a.out_r_payload : a.out_s_payload;
  void* y_out = a.x_is_r ? a.out_s_payload : a.out_r_payload;
  for (std::uint64_t o = ob + threadIdx.x; o < oe; o += kOutputThreads) {
    std::uint64_t yrow, first_out;
    if (in_shared) {
      const std::uint64_t i = probe_row_in(staged, 0, y1 - y0, o);
      yrow = y0 + i;
      first_out = staged[i];
    } else {
      yrow = probe_row_in(a.offsets, y0, y1, o);
      first_out = a.offsets[yrow];
    }
    const std::uint64_t out = o - a.o_begin;
    if (a.out_key) static_cast<K*>(a.out_key)[out] = ykeys[yrow] ^ static_cast<K>(a.key_xor);
    if (x_out) {
      const std::uint64_t xrow = a.first_match[yrow] + (o - first_out);
      const std::uint64_t at = a.x_position ? a.x_position[xrow] : xrow;
      copy_payload(x_out, out, a.x_payload, static_cast<std::int64_t>(at), a.x_payload_bytes);
    }
    if (y_out) {
      const std::uint64_t at = a.y_position ? a.y_position[yrow] : yrow;
      copy_payload(y_out, out, a.y_payload, static_cast<std::int64_t>(at), a.y_payload_bytes);
    }
  }
}

}  // namespace

std::size_t partition_scratch_bytes(std::int64_t rows, int gpus) {
  const std::size_t entries = static_cast<std::size_t>(partition_blocks(rows)) * gpus + 1;
  return 2 * align_up(entries * 8) + align_up(scan_temp_bytes_for(entries));
}

void partition_chunk(const PartitionPlan& plan, const PartitionArgs& a, cudaStream_t stream) {
  MGJOIN_EXPECTS(plan.gpus >= 1 && plan.gpus <= kMaxGpus, "partition plans span 1 to 16 GPUs");
  const std::int64_t blocks = partition_blocks(a.n);
  const PartitionScratch s = carve(a.scratch, a.scratch_bytes, blocks, plan.gpus);
  const std::size_t entries = static_cast<std::size_t>(blocks) * plan.gpus + 1;
  // The trailing entry stays 0 so that the scan's last entry is the total.
  MGJOIN_CUDA_TRY(cudaMemsetAsync(s.counts + entries - 1, 0, sizeof(std::uint64_t), stream));
  dispatch_key_width(a.widths.key_bytes, [&](auto key) {
    using K = decltype(key);
    if (a.n > 0) {
      partition_count_kernel<K><<<static_cast<unsigned>(blocks), kPartitionThreads, 0, stream>>>(plan, a, s.counts);
      MGJOIN_CHECK_LAUNCH();
    } else {
      MGJOIN_CUDA_TRY(cudaMemsetAsync(s.counts, 0, entries * sizeof(std::uint64_t), stream));
    }
  });
  std::size_t temp_bytes = s.scan_temp_bytes;
  MGJOIN_CUDA_TRY(cub::DeviceScan::ExclusiveSum(s.scan_temp, temp_bytes, s.counts, s.offsets, entries, stream));
  dispatch_key_width(a.widths.key_bytes, [&](auto key) {
    using K = decltype(key);
    if (a.n == 0) return;
    partition_scatter_kernel<K><<<static_cast<unsigned>(blocks), kPartitionThreads, 0, stream>>>(plan, a, s.offsets);
    MGJOIN_CHECK_LAUNCH();
  });
  segment_bounds_kernel<<<1, kMaxGpus + 1, 0, stream>>>(s.offsets, blocks, plan.gpus, a.segments);
  MGJOIN_CHECK_LAUNCH();
}

void gather_rows(const void* in, const std::uint32_t* source, std::uint64_t n, int bytes, void* out,
                 cudaStream_t stream) {
  if (n == 0) return;
  dispatch_payload_width(bytes, [&](auto word) {
    using T = decltype(word);
    if constexpr (!std::is_same_v<T, NoPayload>) {
      gather_kernel<T><<<grid_for(n), 256, 0, stream>>>(static_cast<const T*>(in), source, n, static_cast<T*>(out));
      MGJOIN_CHECK_LAUNCH();
    }
  });
}

void fill_positions(std::uint32_t* out, std::uint64_t n, cudaStream_t stream) {
  if (n == 0) return;
  positions_kernel<<<grid_for(n), 256, 0, stream>>>(out, n);
  MGJOIN_CHECK_LAUNCH();
}

std::size_t resident_join_scratch_bytes() { return (kJoinSliceTiles + 1) * sizeof(std::uint64_t); }

void resident_join(const ResidentPair& p, detail::TupleCounter* count, const MatchArrays& arrays, void* scratch,
                   cudaStream_t stream) {
  if (arrays.matches) MGJOIN_CUDA_TRY(cudaMemsetAsync(arrays.matches + p.ny, 0, sizeof(std::uint64_t), stream));
  if (p.nx == 0 || p.ny == 0) {
    if (arrays.matches) MGJOIN_CUDA_TRY(cudaMemsetAsync(arrays.matches, 0, p.ny * sizeof(std::uint64_t), stream));
    return;
  }
  auto* bounds = static_cast<std::uint64_t*>(scratch);
  const std::uint64_t tiles = (p.nx + p.ny + kJoinTile - 1) / kJoinTile;
  dispatch_key_width(p.key_bytes, [&](auto key) {
    using K = decltype(key);
    const auto* x = static_cast<const K*>(p.x_keys);
    const auto* y = static_cast<const K*>(p.y_keys);
    // Slice by slice on one stream: a slice's bounds are overwritten only once its tiles are joined.
    for (std::uint64_t first = 0; first < tiles; first += kJoinSliceTiles) {
      const std::uint64_t n = std::min(kJoinSliceTiles, tiles - first);
      merge_path_bounds_kernel<K><<<static_cast<unsigned>((n + 1 + 255) / 256), 256, 0, stream>>>(x, p.nx, y, p.ny, first, n, bounds);
      MGJOIN_CHECK_LAUNCH();
      resident_join_kernel<K><<<static_cast<unsigned>(n), kJoinThreads, 0, stream>>>(
          x, p.nx, y, p.ny, first, bounds, count, arrays.matches, arrays.first_match);
      MGJOIN_CHECK_LAUNCH();
    }
  });
}

namespace {
__global__ void publish_counter_kernel(const detail::TupleCounter* from, detail::TupleCounter* to) {
  auto* out = static_cast<volatile detail::TupleCounter*>(to);
  out->count = from->count;
  out->overflowed = from->overflowed;
  __threadfence_system();
}
}  // namespace

void publish_counter(const detail::TupleCounter* from, detail::TupleCounter* to, cudaStream_t stream) {
  publish_counter_kernel<<<1, 1, 0, stream>>>(from, to);
  MGJOIN_CHECK_LAUNCH();
}

std::size_t scan_scratch_bytes(std::uint64_t n) { return scan_temp_bytes_for(n); }

void exclusive_scan(const std::uint64_t* in, std::uint64_t* out, std::uint64_t n, void* scratch,
                    std::size_t scratch_bytes, cudaStream_t stream) {
  if (n == 0) return;
  std::size_t bytes = scratch_bytes;
  MGJOIN_CUDA_TRY(cub::DeviceScan::ExclusiveSum(scratch, bytes, in, out, n, stream));
}

void write_output_window(const OutputWindowArgs& a, cudaStream_t stream) {
  if (a.o_end <= a.o_begin) return;
  const std::uint64_t blocks = (a.o_end - a.o_begin + kOutputBlockRows - 1) / kOutputBlockRows;
  MGJOIN_EXPECTS(blocks < (1ull << 31), "output window too large for one grid");
  dispatch_key_width(a.pair.key_bytes, [&](auto key) {
    using K = decltype(key);
    write_window_kernel<K><<<static_cast<unsigned>(blocks), kOutputThreads, 0, stream>>>(a);
    MGJOIN_CHECK_LAUNCH();
  });
}

}  // namespace mgjoin::copart
