#pragma once
// Random keys for the suites' inputs.
#include <cstddef>
#include <random>
#include <vector>

namespace mgjoin::test {

/// `n` keys drawn uniformly from [lo, hi].
template <class Key>
std::vector<Key> uniform_keys(std::mt19937_64& rng, std::size_t n, Key lo, Key hi) {
  std::uniform_int_distribution<Key> pick(lo, hi);
  std::vector<Key> k(n);
  for (auto& x : k) x = pick(rng);
  return k;
}

}  // namespace mgjoin::test
