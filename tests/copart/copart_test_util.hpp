#pragma once
// Shared by the co-partitioned flow's tests: a fake device's scratch sizes for the CPU plan tests, and
// (GPU suites) the check of a flow's count and materialized output against the reference.
#include "engine/src/copart/copart_plan.hpp"

#include "common/keys.hpp"

#include <cstddef>
#include <cstdint>
#include <random>
#include <vector>

namespace mgjoin::test {

/// Scratch sizes of a fake device: proportional to rows.
inline copart::ScratchSizes fake_scratch() {
  copart::ScratchSizes s;
  s.sort = [](std::int64_t rows, int, int) { return static_cast<std::size_t>(rows) * 2 + 1024; };
  s.partition = [](std::int64_t rows, int gpus) { return static_cast<std::size_t>(rows / 256 + 1) * gpus * 16; };
  s.scan = [](std::uint64_t n) { return static_cast<std::size_t>(n / 64 + 1024); };
  return s;
}

}  // namespace mgjoin::test
