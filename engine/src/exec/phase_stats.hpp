#pragma once
// Phase statistics summed by name: a flow that runs a step several times (R and S both report
// "sort.*"; the bucketed flow joins group after group) reports each step once.
#include <mgjoin/join.hpp>

#include <algorithm>
#include <vector>

namespace mgjoin::detail {

/// Adds `stat` to `stats`, summing into an entry of the same name.
inline void add_phase(std::vector<PhaseStat>& stats, const PhaseStat& stat) {
  auto it = std::find_if(stats.begin(), stats.end(), [&](const PhaseStat& p) { return p.name == stat.name; });
  if (it == stats.end()) {
    stats.push_back(stat);
    return;
  }
  it->seconds += stat.seconds;
  it->bytes_pcie += stat.bytes_pcie;
  it->bytes_nvlink += stat.bytes_nvlink;
}

inline void add_phases(std::vector<PhaseStat>& stats, const std::vector<PhaseStat>& more) {
  for (const auto& p : more) add_phase(stats, p);
}

}  // namespace mgjoin::detail
