#pragma once
// A keyed bijection of the w-bit key space [0, 2^w). Each step (xor with a key, multiply by an odd
// constant, xor with a right shift of itself) is invertible modulo 2^w, so distinct row indices
// give distinct keys: R's keys are unique without a hash set, and the images of indices >= |R| are
// exactly the keys absent from R.
#include "engine/src/generate/counter_rng.hpp"

#include <cstdint>
#include <type_traits>

namespace mgjoin::detail {

template <class Key>
class KeyPermutation {
  static_assert(std::is_same_v<Key, std::uint32_t> || std::is_same_v<Key, std::uint64_t>);

 public:
  explicit constexpr KeyPermutation(std::uint64_t seed)
      : k0_(static_cast<Key>(splitmix64(seed ^ 0x6b6579305f6b6579ull))),
        k1_(static_cast<Key>(splitmix64(seed ^ 0x6b6579315f6b6579ull))) {}

  constexpr Key operator()(Key x) const { return mix(mix(x ^ k0_) ^ k1_); }

 private:
  // Finalizers of MurmurHash3 (fmix32 / fmix64): every input bit affects every output bit.
  static constexpr Key mix(Key x) {
    if constexpr (sizeof(Key) == 4) {
      x ^= x >> 16;
      x *= 0x85ebca6bu;
      x ^= x >> 13;
      x *= 0xc2b2ae35u;
      return x ^ (x >> 16);
    } else {
      x ^= x >> 33;
      x *= 0xff51afd7ed558ccdull;
      x ^= x >> 33;
      x *= 0xc4ceb9fe1a85ec53ull;
      return x ^ (x >> 33);
    }
  }

  Key k0_, k1_;
};

}  // namespace mgjoin::detail
