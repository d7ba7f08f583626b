#pragma once
// Shared pieces of the end-to-end tests: owning copies of relations (joins sort their inputs in
// place), a hash-multimap reference join that never sorts, and checks on the sorted inputs.
#include <mgjoin/generate.hpp>
#include <mgjoin/join.hpp>
#include <mgjoin/types.hpp>

#include "join/join_reference.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

namespace mgjoin::test {

inline HostColumn copy_of(const HostColumn& c) {
  HostColumn out = HostColumn::allocate(c.type(), c.size(), c.memory_kind());
  if (c.bytes() > 0) std::memcpy(out.data(), c.data(), c.bytes());
  return out;
}

inline Relation copy_of(const Relation& rel) {
  Relation out{copy_of(rel.key), std::nullopt};
  if (rel.payload) out.payload = copy_of(*rel.payload);
  return out;
}

/// Key `i` of a column as raw bits: equal bits <=> equal keys for one key type.
/// A relation with the given keys; payload i = i + offset (so that every output row names its rows),
/// of `payload_bytes` (0: key only).
template <class Key>
Relation relation_of(const std::vector<Key>& keys, int payload_bytes, std::uint64_t offset) {
  const auto n = static_cast<std::int64_t>(keys.size());
  Relation rel{HostColumn::allocate(dtype_of<Key>(), n), std::nullopt};
  if (n) std::memcpy(rel.key.data(), keys.data(), keys.size() * sizeof(Key));
  if (payload_bytes) {
    rel.payload = HostColumn::allocate(payload_bytes == 4 ? DType::UInt32 : DType::UInt64, n);
    for (std::int64_t i = 0; i < n; ++i) {
      const std::uint64_t v = static_cast<std::uint64_t>(i) + offset;
      std::memcpy(static_cast<char*>(rel.payload->data()) + i * payload_bytes, &v, payload_bytes);
    }
  }
  return rel;
}

inline std::uint64_t key_bits(const HostColumn& c, std::int64_t i) {
  return word_at(c.data(), dtype_size(c.type()), static_cast<std::size_t>(i));
}

/// Every matching (r, s) pair as (key, R payload, S payload) words (0 for an absent payload), sorted.
/// A hash multimap on S's key bits: shares nothing with the sort-merge code under test.
inline std::vector<Tuple> reference_tuples(const Relation& r, const Relation& s) {
  std::unordered_multimap<std::uint64_t, std::int64_t> s_rows;
  s_rows.reserve(static_cast<std::size_t>(s.size()));
  for (std::int64_t j = 0; j < s.size(); ++j) s_rows.emplace(key_bits(s.key, j), j);
  const auto payload = [](const Relation& rel, std::int64_t i) { return rel.payload ? key_bits(*rel.payload, i) : 0; };
  std::vector<Tuple> out;
  for (std::int64_t i = 0; i < r.size(); ++i) {
    const auto [begin, end] = s_rows.equal_range(key_bits(r.key, i));
    for (auto it = begin; it != end; ++it) out.emplace_back(key_bits(r.key, i), payload(r, i), payload(s, it->second));
  }
  std::sort(out.begin(), out.end());
  return out;
}

/// How many (r, s) pairs match: a hash count of S's key bits, looked up by every R row (the count of
/// reference_tuples without building the tuples).
inline std::uint64_t reference_count(const Relation& r, const Relation& s) {
  std::unordered_map<std::uint64_t, std::uint64_t> s_keys;
  s_keys.reserve(static_cast<std::size_t>(s.size()));
  for (std::int64_t j = 0; j < s.size(); ++j) ++s_keys[key_bits(s.key, j)];
  std::uint64_t count = 0;
  for (std::int64_t i = 0; i < r.size(); ++i)
    if (const auto it = s_keys.find(key_bits(r.key, i)); it != s_keys.end()) count += it->second;
  return count;
}

/// The materialized output of a join as sorted tuples (absent payload columns read as 0).
inline std::vector<Tuple> result_tuples(const JoinResult& result) {
  const auto column = [&](const HostColumn& c) { return c.size() == result.key.size() ? &c : nullptr; };
  return result_tuples(result.key, column(result.r_payload), column(result.s_payload));
}

/// The join sorted `sorted` in place, keys with their payloads: keys ascend in the key type's order
/// and, payloads being row indices of `original`, every row still carries its own key.
template <class Key>
::testing::AssertionResult sorted_with_payloads(const Relation& original, const Relation& sorted) {
  const Key* key = sorted.key.as<Key>();
  if (!std::is_sorted(key, key + sorted.size())) return ::testing::AssertionFailure() << "keys not sorted";
  if (!sorted.payload) return ::testing::AssertionSuccess();
  for (std::int64_t i = 0; i < sorted.size(); ++i) {
    const auto row = static_cast<std::int64_t>(key_bits(*sorted.payload, i));
    if (row >= original.size() || key_bits(original.key, row) != key_bits(sorted.key, i))
      return ::testing::AssertionFailure() << "row " << i << " lost its payload";
  }
  return ::testing::AssertionSuccess();
}

/// sorted_with_payloads for the unsigned key types of the workloads.
inline ::testing::AssertionResult workload_sorted(const Relation& original, const Relation& sorted) {
  return sorted.key.type() == DType::UInt32 ? sorted_with_payloads<std::uint32_t>(original, sorted)
                                            : sorted_with_payloads<std::uint64_t>(original, sorted);
}

inline WorkloadSpec workload_spec(Workload w, double scale, double selectivity, double zipf, std::uint64_t seed) {
  return {.workload = w, .scale = scale, .selectivity = selectivity, .zipf = zipf, .seed = seed};
}

/// "B_s0.5_z1"-style fragment of a parameterized test name (gtest names allow [A-Za-z0-9_] only).
inline std::string spec_name(const WorkloadSpec& spec) {
  const auto tenths = [](double x) { return std::to_string(static_cast<int>(x * 10 + 0.5)); };
  return std::string(spec.workload == Workload::A ? "A" : "B") + "_sel" + tenths(spec.selectivity) + "_zipf" +
         tenths(spec.zipf);
}

}  // namespace mgjoin::test
