#pragma once
// Keys for the suites' inputs: random, and sorted.
#include <algorithm>
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

/// Sorted-key inputs for partitioning tests.
template <class Key>
std::vector<Key> sorted(std::vector<Key> v) {
  std::sort(v.begin(), v.end());
  return v;
}

}  // namespace mgjoin::test
