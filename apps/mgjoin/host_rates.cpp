#include "host_rates.hpp"

#include "benchmarks/median_time.hpp"

#include "host_merge/multiway_merge.hpp"
#include "host_merge/parallel_copy.hpp"

#include <algorithm>
#include <cstdint>
#include <vector>

namespace mgjoin::cli {
using bench::median_seconds;

double measure_host_memcpy_gbps(std::size_t bytes, int repeats) {
  std::vector<char> from(bytes, 1), to(bytes);
  const double s = median_seconds(repeats, [&] { host_merge::parallel_copy(to.data(), from.data(), bytes); });
  return static_cast<double>(bytes) / s / 1e9;
}

double measure_cpu_merge_gbps(std::size_t bytes, int repeats) {
  constexpr int kRuns = 4;
  const auto n = static_cast<std::int64_t>(bytes / 16 / kRuns);
  std::vector<std::uint64_t> keys(static_cast<std::size_t>(n * kRuns)), payloads(keys.size());
  std::vector<std::uint64_t> out_keys(keys.size()), out_payloads(keys.size());
  std::vector<host_merge::RunView<std::uint64_t, std::uint64_t>> runs;
  for (int r = 0; r < kRuns; ++r) {
    // Run r holds r, r + 4, r + 8, ...: the runs interleave, as chunksets of random keys do.
    for (std::int64_t i = 0; i < n; ++i) keys[static_cast<std::size_t>(r * n + i)] = static_cast<std::uint64_t>(i * kRuns + r);
    runs.push_back({keys.data() + r * n, payloads.data() + r * n, n});
  }
  const double s = median_seconds(repeats, [&] {
    host_merge::multiway_merge<std::uint64_t, std::uint64_t>(runs, out_keys.data(), out_payloads.data());
  });
  return static_cast<double>(n * kRuns * 16) / s / 1e9;
}

}  // namespace mgjoin::cli
