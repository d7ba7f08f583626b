#pragma once
// On-GPU chunk partitioning of the radix sort (paper, Section 3.1.2): one MSB radix partitioning pass
// over m = 8 bits (one pass of CUB's onesweep radix sort over that digit; radix_partition.cu says why),
// and the 256 bucket sizes.
#include "engine/src/exec/key_order.hpp"
#include "engine/src/sort/chunkset_sorter.hpp"

#include <cuda_runtime_api.h>

#include <cstdint>

namespace mgjoin::sort {

/// One partitioning pass: n tuples from keys_in/payload_in grouped by the digit (key ^ key_xor) >>
/// shift & 255 into keys_out/payload_out, buckets in digit order (keys written XOR-ed: key_xor flips
/// signed keys into the unsigned order on the first pass). The input buffers are clobbered (they are
/// the sort's second buffer). The 256 bucket sizes go to `device_counts` (device memory, uint64).
/// Scratch comes from `memory` in stream order. payload pointers are ignored for key-only.
void radix_partition(const TupleLayout& layout, void* keys_in, void* payload_in, void* keys_out,
                     void* payload_out, std::int64_t n, int shift, std::uint64_t key_xor,
                     std::uint64_t* device_counts, alloc::DeviceStackAllocator& memory, cudaStream_t stream);

/// Copies n tuples (keys, and payloads unless key-only) between device buffers in stream order.
void copy_tuples(const TupleLayout& layout, void* keys_to, void* payload_to, const void* keys_from,
                 const void* payload_from, std::int64_t n, cudaStream_t stream);

/// The sign bit of a key width: XOR with it maps signed order to unsigned order and back.
constexpr std::uint64_t sign_flip_mask(const TupleLayout& l) { return l.signed_key ? exec::sign_bit(l.key_bytes) : 0; }

}  // namespace mgjoin::sort
