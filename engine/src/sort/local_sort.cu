// Local CUB radix sort over the remaining bits (paper, Section 3.1.2).
#include "engine/src/sort/local_sort.hpp"

#include "core/dispatch.hpp"

#include <mgjoin/error.hpp>

#include <cub/device/device_radix_sort.cuh>

namespace mgjoin::sort {
namespace {

/// One CUB call: buffers, size and bit range (the same for sizing and sorting).
struct SortCall {
  void* keys;
  void* alt_keys;
  void* payload;
  void* alt_payload;
  std::int64_t n;
  int begin_bit;
  int end_bit;
  cudaStream_t stream;
};

template <class K, class P>
cudaError_t cub_sort(void* temp, std::size_t& temp_bytes, const SortCall& c, bool& in_alternate) {
  cub::DoubleBuffer<K> k(static_cast<K*>(c.keys), static_cast<K*>(c.alt_keys));
  cudaError_t err;
  if constexpr (std::is_void_v<P>) {
    err = cub::DeviceRadixSort::SortKeys(temp, temp_bytes, k, c.n, c.begin_bit, c.end_bit, c.stream);
  } else {
    cub::DoubleBuffer<P> p(static_cast<P*>(c.payload), static_cast<P*>(c.alt_payload));
    err = cub::DeviceRadixSort::SortPairs(temp, temp_bytes, k, p, c.n, c.begin_bit, c.end_bit, c.stream);
  }
  in_alternate = k.selector != 0;  // CUB settles the number of passes on the host
  return err;
}

cudaError_t dispatch(const TupleLayout& l, void* temp, std::size_t& temp_bytes, const SortCall& c,
                     bool& in_alternate) {
  return dispatch_widths(l.key_bytes, l.payload_bytes, [&](auto key, auto payload) {
    return cub_sort<decltype(key), payload_or_void<decltype(payload)>>(temp, temp_bytes, c, in_alternate);
  });
}

}  // namespace

std::size_t local_sort_temp_bytes(const TupleLayout& layout, std::int64_t n) {
  std::size_t bytes = 0;
  bool unused = false;
  const SortCall sizing{nullptr, nullptr, nullptr, nullptr, n, 0, layout.key_bytes * 8, nullptr};
  MGJOIN_CUDA_TRY(dispatch(layout, nullptr, bytes, sizing, unused));
  return bytes;
}

SortedIn local_sort(const TupleLayout& layout, void* keys, void* alt_keys, void* payload, void* alt_payload,
                    std::int64_t n, int begin_bit, int end_bit, void* temp, std::size_t temp_bytes,
                    cudaStream_t stream) {
  if (n < 2 || end_bit <= begin_bit) return SortedIn::Primary;
  bool in_alternate = false;
  const SortCall call{keys, alt_keys, payload, alt_payload, n, begin_bit, end_bit, stream};
  MGJOIN_CUDA_TRY(dispatch(layout, temp, temp_bytes, call, in_alternate));
  return in_alternate ? SortedIn::Alternate : SortedIn::Primary;
}

}  // namespace mgjoin::sort
