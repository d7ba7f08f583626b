#pragma once
// Host-side timing for first-party tools: one warm-up run (first touch of every page), then the median
// of the timed runs.
#include <algorithm>
#include <chrono>
#include <functional>
#include <vector>

namespace mgjoin::bench {

inline double seconds_of(const std::function<void()>& f) {
  const auto t0 = std::chrono::steady_clock::now();
  f();
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

/// One warm-up run, then the median of `reps` (at least one) timed runs.
inline double median_seconds(int reps, const std::function<void()>& f) {
  f();
  std::vector<double> t;
  for (int i = 0; i < std::max(reps, 1); ++i) t.push_back(seconds_of(f));
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}

}  // namespace mgjoin::bench
