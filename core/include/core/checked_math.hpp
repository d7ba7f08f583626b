#pragma once
// Overflow-checked 64-bit arithmetic for counts and offsets, on the host and in kernels. A join's output
// can reach 2^64 tuples (2^32 equal keys on both sides): such a count must be detected, never wrapped.
#include <cstdint>

#ifdef __CUDACC__
#define MGJOIN_CHECKED_HD __host__ __device__ __forceinline__
#else
#define MGJOIN_CHECKED_HD inline
#endif

namespace mgjoin {

/// *sum = a + b modulo 2^64; true when the exact sum is 2^64 or more.
MGJOIN_CHECKED_HD constexpr bool add_overflows(std::uint64_t a, std::uint64_t b, std::uint64_t* sum) {
  *sum = a + b;
  return *sum < a;
}

/// *product = a * b modulo 2^64; true when the exact product is 2^64 or more.
MGJOIN_CHECKED_HD constexpr bool mul_overflows(std::uint64_t a, std::uint64_t b, std::uint64_t* product) {
  const unsigned __int128 exact = static_cast<unsigned __int128>(a) * b;  // one multiply, high half included
  *product = static_cast<std::uint64_t>(exact);
  return (exact >> 64) != 0;
}

/// A running 64-bit sum that remembers whether it ever reached 2^64 (its value is then meaningless).
struct CheckedSum {
  std::uint64_t value = 0;
  bool overflowed = false;

  MGJOIN_CHECKED_HD constexpr void add(std::uint64_t v) { overflowed = add_overflows(value, v, &value) || overflowed; }
  MGJOIN_CHECKED_HD constexpr void add(const CheckedSum& other) {
    add(other.value);
    overflowed = overflowed || other.overflowed;
  }
  /// Adds a · b (the tuples of a run of a rows matching a run of b rows).
  MGJOIN_CHECKED_HD constexpr void add_product(std::uint64_t a, std::uint64_t b) {
    std::uint64_t p = 0;
    overflowed = mul_overflows(a, b, &p) || overflowed;
    add(p);
  }
};

}  // namespace mgjoin
