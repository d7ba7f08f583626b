#pragma once
// CUB's two-phase temporary storage fed from a stack allocator:
//   alloc::run_cub(stack, [&](void* temp, std::size_t& temp_bytes) {
//     return cub::DeviceRadixSort::SortPairs(temp, temp_bytes, keys_in, keys_out, vals_in, vals_out, n,
//                                            0, sizeof(Key) * 8, stream);
//   });
// The temporary storage is freed as soon as the second call has enqueued its work, so the next
// allocation may reuse it: that is safe for work on the same stream (stream order), and for other streams
// only after a synchronization (see stack_allocator.hpp).
#include "alloc/stack_allocator.hpp"

#include <mgjoin/error.hpp>

#include <cuda_runtime_api.h>

#include <cstddef>
#include <utility>

namespace mgjoin::alloc {

/// Calls `cub_call(nullptr, bytes)` to size the temporary storage, takes it from `stack`, calls
/// `cub_call(temp, bytes)` again and frees it. `cub_call` returns a cudaError_t; a failure of either call
/// throws mgjoin::CudaError, exhaustion of the stack throws mgjoin::OutOfMemory.
template <class Alloc, class CubCall>
void run_cub(Alloc& stack, CubCall&& cub_call) {
  std::size_t temp_bytes = 0;
  MGJOIN_CUDA_TRY(cub_call(static_cast<void*>(nullptr), temp_bytes));
  StackBuffer<std::byte, Alloc> temp(stack, temp_bytes);
  MGJOIN_CUDA_TRY(cub_call(static_cast<void*>(temp.data()), temp_bytes));
}

}  // namespace mgjoin::alloc
