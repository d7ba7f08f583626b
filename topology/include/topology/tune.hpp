#pragma once
// The decision half of `mgjoin tune`: from measured transfers (and, once the engine can, timed joins)
// to the best GPU set and sort strategy for every g.
#include "topology/bandwidth.hpp"
#include "topology/tuning_file.hpp"

#include <functional>
#include <string>
#include <vector>

namespace mgjoin::topology {

/// Seconds of a small end-to-end join on `set` with sort strategy "radix" or "merge".
/// The engine supplies it; while it is null, tuning uses the transfer measurements alone.
using JoinTimer = std::function<double(const std::vector<int>& set, const std::string& strategy)>;

struct TuneOptions {
  int candidates_per_g = 3;   ///< best sets by the measured model that get a timed join
  JoinTimer time_join;        ///< null: no timed joins
  /// Progress lines ("g=2 {0,1} radix: 0.84 s"); optional.
  std::function<void(const std::string&)> progress;
};

/// A tuning file for `machine`: bandwidths `m`, and per g the set chosen by the model fed with the
/// measured bandwidths (strategy "radix", the faster one in the paper's Section 4.3) or, with a
/// JoinTimer, the fastest timed (set, strategy) among the model's best candidates.
TuningFile make_tuning(const Topology& machine, const MeasuredBandwidths& m, const TuneOptions& options = {});

/// "{0,1,3}"
std::string set_string(const std::vector<int>& set);

}  // namespace mgjoin::topology
