#pragma once
// Counter-based random numbers: the value for (stream, row) is a pure function of both, so rows can
// be generated in any order, by any number of threads, with identical results.
#include <cstdint>

namespace mgjoin::detail {

/// The splitmix64 output function (Steele, Lea, Flood 2014): a strong 64-bit bijective mixer.
constexpr std::uint64_t splitmix64(std::uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

/// Independent random stream per (seed, purpose); row i of the stream is splitmix64's i-th output.
class CounterRng {
 public:
  constexpr CounterRng(std::uint64_t seed, std::uint64_t purpose) : base_(splitmix64(splitmix64(seed) ^ purpose)) {}
  constexpr std::uint64_t operator()(std::uint64_t row) const { return splitmix64(base_ + row * 0x9e3779b97f4a7c15ull); }

 private:
  std::uint64_t base_;
};

/// Uniform integer in [0, n) from 64 random bits (Lemire's multiply-shift; bias < n / 2^64).
constexpr std::uint64_t uniform_below(std::uint64_t bits, std::uint64_t n) {
  return static_cast<std::uint64_t>((static_cast<unsigned __int128>(bits) * n) >> 64);
}

/// Uniform double in [0, 1) from the top 53 bits.
constexpr double uniform_unit(std::uint64_t bits) { return static_cast<double>(bits >> 11) * 0x1.0p-53; }

}  // namespace mgjoin::detail
