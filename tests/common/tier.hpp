#pragma once
// How large the GPU suites' runs are: MGJOIN_TEST_TIER=quick (the default), full or sanitize
// (docs/TESTING-TIERS.md).
// The full tier keeps the sizes and grids the suites were written with; the quick one runs every test with
// smaller data where size adds nothing and thinner loops where cases repeat each other, each change beside
// a comment that says why the same branch is still taken. scripts/device-tests.sh sets the variable.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <stdexcept>
#include <string>
#include <vector>

namespace mgjoin::test {

/// The three tiers. Sanitize (MGJOIN_TEST_TIER=sanitize, set by scripts/device-pending.sh's sanitizer groups)
/// is the quick tier with smaller inputs where a test gives a third size: compute-sanitizer's racecheck
/// slows every instrumented kernel 100x or more, and a test whose point is a branch, not a size, takes the
/// same branch with a few thousand rows. Everything without a sanitize size runs as in the quick tier.
enum class Tier : std::uint8_t { Quick, Full, Sanitize };

/// This run's tier. Any value but "quick", "full", "sanitize" or none throws (every GPU test that asks fails
/// with the message), rather than silently running a tier nobody chose.
inline Tier tier() {
  const char* env = std::getenv("MGJOIN_TEST_TIER");
  const std::string value = env ? env : "";
  if (value.empty() || value == "quick") return Tier::Quick;
  if (value == "full") return Tier::Full;
  if (value == "sanitize") return Tier::Sanitize;
  throw std::invalid_argument("MGJOIN_TEST_TIER '" + value + "': expected quick, full or sanitize");
}

/// Whether this run is the full tier (the sanitize tier is not: it thins as the quick one does).
inline bool full_tier() { return tier() == Tier::Full; }

/// `full` in the full tier, `quick` in the quick and sanitize ones: a size, a count, a scale.
template <class T>
T per_tier(T quick, T full) {
  return full_tier() ? full : quick;
}

/// As above, with `sanitize` in the sanitize tier; each caller says beside it why the branch is the same.
template <class T>
T per_tier(T quick, T full, T sanitize) {
  return tier() == Tier::Sanitize ? sanitize : per_tier(quick, full);
}

/// Whether the sanitize tier leaves case `index` of a sweep out: it runs one case in `stride` (those with
/// index % stride == 0), every other tier runs them all. For sweeps whose cases launch the same kernels on
/// different data or options (kinds, output forms, strategies): racecheck and memcheck look for races and bad
/// accesses inside kernels, and each kernel still runs; each caller says which cases stay.
inline bool sanitize_skips(std::size_t index, std::size_t stride) {
  return tier() == Tier::Sanitize && stride > 1 && index % stride != 0;
}

/// The allocations a fault-injection sweep fails, of `allocations` counted in a clean run (1-based). Full:
/// every `allocations / full_points`-th from the first (the sweeps as written). Quick: about `quick_points`
/// evenly spaced, always the first and the last, and where `phase_starts` (the allocation count at each
/// phase's first progress report) are given, the first and the last of each phase's allocations too.
inline std::vector<std::uint64_t> fault_points(std::uint64_t allocations, std::uint64_t full_points,
                                               std::uint64_t quick_points,
                                               const std::vector<std::uint64_t>& phase_starts = {}) {
  std::vector<std::uint64_t> points;
  if (allocations == 0) return points;
  const std::uint64_t step = std::max<std::uint64_t>(1, allocations / (full_tier() ? full_points : quick_points));
  for (std::uint64_t n = 1; n <= allocations; n += step) points.push_back(n);
  if (full_tier()) return points;
  points.push_back(allocations);
  for (const std::uint64_t start : phase_starts) {  // allocations start + 1 .. next start belong to the phase
    if (start < allocations) points.push_back(start + 1);
    if (start >= 1 && start <= allocations) points.push_back(start);  // the previous phase's last
  }
  std::sort(points.begin(), points.end());
  points.erase(std::unique(points.begin(), points.end()), points.end());
  return points;
}

/// Prints the tier once per binary before its first test, so that a log says which sizes ran.
class TierEnvironment : public ::testing::Environment {
 public:
  void SetUp() override {
    try {
      const char* names[] = {"quick", "full", "sanitize"};
      std::printf("[ tier     ] MGJOIN_TEST_TIER=%s\n", names[static_cast<int>(tier())]);
    } catch (const std::invalid_argument& e) {
      ADD_FAILURE() << e.what();
    }
  }
};
[[maybe_unused]] inline ::testing::Environment* const tier_environment =
    ::testing::AddGlobalTestEnvironment(new TierEnvironment);

}  // namespace mgjoin::test
