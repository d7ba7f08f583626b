#pragma once
// On-GPU sort of one sort unit (paper, Section 3.1.2, "On-GPU Chunk Sorting"): CUB's LSB radix sort
// over only the bits the MSB partitioning left unsorted, with a DoubleBuffer so that the temporary
// storage stays small. Kernels exist for unsigned 4/8-byte keys × payloads of 0/4/8 bytes only
// (six CUB instantiations, all in local_sort.cu).
#include "engine/src/sort/chunkset_sorter.hpp"

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>

namespace mgjoin::sort {

/// Temporary bytes CUB needs to sort n tuples of `layout` (queries CUB on the current device).
std::size_t local_sort_temp_bytes(const TupleLayout& layout, std::int64_t n);

/// Where the sorted tuples ended up.
enum class SortedIn : std::uint8_t { Primary, Alternate };

/// Sorts n tuples in keys/payload by bits [begin_bit, end_bit) using alt_keys/alt_payload as the second
/// buffer (both buffers are overwritten). `temp` must hold local_sort_temp_bytes(layout, n') for some
/// n' >= n. With 8 bits it is one stable pass: the radix partition uses it (radix_partition.cu).
SortedIn local_sort(const TupleLayout& layout, void* keys, void* alt_keys, void* payload, void* alt_payload,
                    std::int64_t n, int begin_bit, int end_bit, void* temp, std::size_t temp_bytes,
                    cudaStream_t stream);

}  // namespace mgjoin::sort
