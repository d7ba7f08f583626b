#pragma once
// Shared by the co-partitioned flow's tests: a fake device's scratch sizes for the CPU plan tests, and
// (GPU suites) the check of a flow's count and materialized output against the reference.
#include "engine/src/copart/copart_plan.hpp"

#include "common/keys.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <random>
#include <vector>

namespace mgjoin::test {

using Keys = std::vector<std::uint64_t>;

inline RelationView view(Keys& k, Keys* payload = nullptr) {
  RelationView v{{k.data(), static_cast<std::int64_t>(k.size()), DType::UInt64}, std::nullopt};
  if (payload) v.payload = MutableColumnView{payload->data(), static_cast<std::int64_t>(payload->size()), DType::UInt64};
  return v;
}

inline Keys uniform(std::mt19937_64& rng, std::size_t n, std::uint64_t hi) {
  std::uniform_int_distribution<std::uint64_t> dist(0, hi);
  Keys k(n);
  for (auto& x : k) x = dist(rng);
  return k;
}

/// Where every row of a relation goes under `plan` (GPUs, bucket groups or a pass's GPUs), as the
/// partition kernel routes it (global row for the hot-key hash): per destination, the keys it receives
/// (replicas included).
inline std::vector<Keys> route(const copart::PartitionPlan& plan, copart::Side side, const Keys& keys) {
  std::vector<Keys> out(plan.gpus);
  for (std::size_t row = 0; row < keys.size(); ++row) {
    const copart::Destinations d = destinations(plan, side, keys[row], row);
    EXPECT_GE(d.first, 0);
    EXPECT_LE(d.first + d.count, plan.gpus);
    for (int i = 0; i < d.count; ++i) out[d.first + i].push_back(keys[row]);
  }
  return out;
}

/// Pairs of equal keys (sorted copies walked together).
inline std::uint64_t count_pairs(Keys r, Keys s) {
  std::sort(r.begin(), r.end());
  std::sort(s.begin(), s.end());
  std::uint64_t n = 0;
  for (std::size_t i = 0, j = 0; i < r.size() && j < s.size();) {
    if (r[i] != s[j]) {
      r[i] < s[j] ? ++i : ++j;
      continue;
    }
    std::size_t i2 = i, j2 = j;
    while (i2 < r.size() && r[i2] == r[i]) ++i2;
    while (j2 < s.size() && s[j2] == s[j]) ++j2;
    n += (i2 - i) * (j2 - j);
    i = i2;
    j = j2;
  }
  return n;
}

/// Scratch sizes of a fake device: proportional to rows.
inline copart::ScratchSizes fake_scratch() {
  copart::ScratchSizes s;
  s.sort = [](std::int64_t rows, int, int) { return static_cast<std::size_t>(rows) * 2 + 1024; };
  s.partition = [](std::int64_t rows, int gpus) { return static_cast<std::size_t>(rows / 256 + 1) * gpus * 16; };
  s.scan = [](std::uint64_t n) { return static_cast<std::size_t>(n / 64 + 1024); };
  return s;
}

}  // namespace mgjoin::test
