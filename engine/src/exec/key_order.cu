// The one key flip kernel (key_order.hpp).
#include "engine/src/exec/key_order.hpp"

#include "core/dispatch.hpp"

#include <mgjoin/error.hpp>

#include <algorithm>

namespace mgjoin::exec {
namespace {

template <class K>
__global__ void flip_kernel(K* keys, std::int64_t n, K key_xor) {
  for (std::int64_t i = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<std::int64_t>(gridDim.x) * blockDim.x)
    keys[i] ^= key_xor;
}

}  // namespace

void flip_keys(int key_bytes, void* keys, std::int64_t n, std::uint64_t key_xor, cudaStream_t stream,
               unsigned max_blocks) {
  if (n == 0 || key_xor == 0) return;
  const auto blocks = static_cast<unsigned>(std::min<std::int64_t>((n + 255) / 256, max_blocks));
  dispatch_key_width(key_bytes, [&](auto key) {
    using K = decltype(key);
    flip_kernel<K><<<blocks, 256, 0, stream>>>(static_cast<K*>(keys), n, static_cast<K>(key_xor));
    MGJOIN_CHECK_LAUNCH();
  });
}

}  // namespace mgjoin::exec
