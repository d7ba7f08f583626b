#pragma once
// Sorted runs for the merge tests and the simple sequential reference they are checked against.
#include <algorithm>
#include <cstdint>
#include <functional>
#include <random>
#include <utility>
#include <vector>

namespace mgjoin::test {

/// k sorted runs held as separate key and payload columns; payload = global tuple id (unique), so the
/// multiset check also proves that every payload travelled with its own key.
template <class K, class P>
struct Runs {
  std::vector<std::vector<K>> keys;
  std::vector<std::vector<P>> payloads;

  std::int64_t total() const {
    std::int64_t n = 0;
    for (const auto& r : keys) n += static_cast<std::int64_t>(r.size());
    return n;
  }
};

/// Builds runs of the given sizes whose keys come from key_at(run, position) and then get sorted.
template <class K, class P, class KeyAt>
Runs<K, P> make_runs(const std::vector<std::int64_t>& sizes, KeyAt key_at) {
  Runs<K, P> runs;
  std::uint64_t id = 0;
  for (std::size_t r = 0; r < sizes.size(); ++r) {
    std::vector<K> keys(static_cast<std::size_t>(sizes[r]));
    for (std::int64_t j = 0; j < sizes[r]; ++j) keys[static_cast<std::size_t>(j)] = key_at(r, j);
    std::sort(keys.begin(), keys.end());
    std::vector<P> payloads(keys.size());
    for (auto& p : payloads) p = static_cast<P>(id++);
    runs.keys.push_back(std::move(keys));
    runs.payloads.push_back(std::move(payloads));
  }
  return runs;
}

/// Shuffles the payload ids within each run, so that equal keys carry their payloads in no particular
/// order (as after the GPU sort, which orders by key only); the keys stay sorted.
template <class K, class P>
void shuffle_payloads(Runs<K, P>& runs, std::mt19937_64& rng) {
  for (auto& payloads : runs.payloads) std::shuffle(payloads.begin(), payloads.end(), rng);
}

/// Sequential reference: all (key, payload) tuples sorted by key, then payload.
template <class K, class P>
std::vector<std::pair<K, P>> reference_merge(const Runs<K, P>& runs) {
  std::vector<std::pair<K, P>> all;
  for (std::size_t r = 0; r < runs.keys.size(); ++r)
    for (std::size_t j = 0; j < runs.keys[r].size(); ++j) all.emplace_back(runs.keys[r][j], runs.payloads[r][j]);
  std::sort(all.begin(), all.end());
  return all;
}

inline std::vector<std::int64_t> random_sizes(std::mt19937_64& rng, std::size_t k, std::int64_t max_size) {
  std::uniform_int_distribution<std::int64_t> size(0, max_size);
  std::vector<std::int64_t> sizes(k);
  for (auto& s : sizes) s = size(rng);
  return sizes;
}

}  // namespace mgjoin::test
