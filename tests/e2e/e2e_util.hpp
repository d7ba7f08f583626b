#pragma once
// Shared pieces of the end-to-end tests: checks on the sorted inputs and workload specs; relations and
// the reference join come from tests/common.
#include <mgjoin/generate.hpp>
#include <mgjoin/join.hpp>
#include <mgjoin/types.hpp>

#include "common/reference_join.hpp"
#include "common/relations.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

namespace mgjoin::test {

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
