#include "host_rates.hpp"

#include "benchmarks/median_time.hpp"

#include "host_merge/multiway_merge.hpp"
#include "host_merge/parallel_copy.hpp"

#include <algorithm>
#include <cstdint>
#include <memory>
#include <vector>

namespace mgjoin::cli {
using bench::median_seconds;

namespace {

/// A pseudo-random permutation of [0, n), fixed for a given n: a bijection of [0, 2^k) ⊇ [0, n) (xor-shifts
/// and odd multiplies modulo 2^k, each invertible), walked along its cycle until it lands below n, which keeps
/// it a bijection of [0, n). Unlike a Fisher-Yates shuffle (a cache miss per swap on one thread: seconds at
/// 2^27 rows) it builds in parallel; unlike i × odd mod 2^k alone it has no constant stride a prefetcher could
/// follow.
std::int64_t permuted(std::uint64_t i, int k, std::uint64_t mask, std::uint64_t n) {
  do {
    for (const std::uint64_t odd : {0x9e3779b97f4a7c15ULL, 0xbf58476d1ce4e5b9ULL, 0x94d049bb133111ebULL}) {
      i ^= i >> (k / 2 + 1);
      i = (i * odd) & mask;
    }
  } while (i >= n);
  return static_cast<std::int64_t>(i);
}

}  // namespace

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

double measure_cpu_gather_gbps(std::size_t bytes, int repeats) {
  const std::size_t rows = std::max<std::size_t>(bytes / 8, 1);
  int k = 0;
  while ((std::uint64_t{1} << k) < rows) ++k;
  const std::uint64_t mask = (std::uint64_t{1} << k) - 1;
  // Left uninitialized (a vector would zero them on this thread) and first touched by the fill below, with all
  // threads: the pages sit on the sockets of the threads that gather into them, and no page fault is timed.
  const auto column = std::make_unique_for_overwrite<std::uint64_t[]>(rows);
  const auto map = std::make_unique_for_overwrite<std::int64_t[]>(rows);
  const auto out = std::make_unique_for_overwrite<std::uint64_t[]>(rows);
#pragma omp parallel for schedule(static)
  for (std::size_t i = 0; i < rows; ++i) {
    column[i] = i;
    map[i] = permuted(i, k, mask, rows);
    out[i] = 0;
  }
  const double s = median_seconds(repeats, [&] {
#pragma omp parallel for schedule(static)
    for (std::size_t i = 0; i < rows; ++i) out[i] = column[static_cast<std::size_t>(map[i])];
  });
  return static_cast<double>(rows * 8) / s / 1e9;
}

}  // namespace mgjoin::cli
