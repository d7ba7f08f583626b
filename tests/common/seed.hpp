#pragma once
// Fresh random inputs per run, with the seed printed so that a failure can be replayed:
// MGJOIN_TEST_SEED=<seed> fixes it.
#include <cstdint>
#include <cstdlib>
#include <random>
#include <gtest/gtest.h>

namespace mgjoin::test {

inline std::uint64_t test_seed() {
  if (const char* s = std::getenv("MGJOIN_TEST_SEED")) return std::strtoull(s, nullptr, 10);
  static const std::uint64_t seed = std::random_device{}();
  return seed;
}

/// Records the seed in the test's output (and XML report) and returns it.
inline std::uint64_t announce_seed() {
  const auto seed = test_seed();
  ::testing::Test::RecordProperty("seed", std::to_string(seed));
  std::printf("[ seed     ] MGJOIN_TEST_SEED=%llu\n", static_cast<unsigned long long>(seed));
  return seed;
}

}  // namespace mgjoin::test
