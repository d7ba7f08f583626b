// make_tuning(): the best (set, strategy) per g for `mgjoin tune`.
#include "topology/tune.hpp"

#include "topology/gpu_set.hpp"

#include <chrono>
#include <cstdio>
#include <ctime>

namespace mgjoin::topology {

namespace {

std::string utc_now_iso8601() {
  const std::time_t now = std::chrono::system_clock::to_time_t(std::chrono::system_clock::now());
  std::tm tm{};
  gmtime_r(&now, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

// The fastest timed (set, strategy) among the model's best candidates for g.
TuningChoice timed_choice(const Topology& measured, int g, const TuneOptions& o) {
  TuningChoice best;
  best.g = g;
  for (const auto& set : rank_gpu_sets(measured, g, o.candidates_per_g)) {
    for (const char* strategy : {"radix", "merge"}) {
      const double s = o.time_join(set, strategy);
      if (o.progress) o.progress("g=" + std::to_string(g) + " " + set_string(set) + " " + strategy + ": " +
                                 std::to_string(s) + " s");
      if (!best.seconds || s < *best.seconds) {
        best.gpus = set;
        best.strategy = strategy;
        best.seconds = s;
      }
    }
  }
  return best;
}

}  // namespace

std::string set_string(const std::vector<int>& set) {
  std::string s = "{";
  for (std::size_t i = 0; i < set.size(); ++i) {
    if (i > 0) s += ',';
    s += std::to_string(set[i]);
  }
  return s + "}";
}

TuningFile make_tuning(const Topology& machine, const MeasuredBandwidths& m, const TuneOptions& options) {
  TuningFile f;
  f.created = utc_now_iso8601();
  f.machine = fingerprint_of(machine);
  f.bandwidths = m;
  const Topology measured = with_measured_bandwidths(machine, m);
  for (int g = 1; g <= machine.gpu_count(); ++g) {
    if (options.time_join) {
      f.best.push_back(timed_choice(measured, g, options));
    } else {
      f.best.push_back({g, choose_gpu_set(measured, g), "radix", std::nullopt, "copart", std::nullopt});
    }
  }
  return f;
}

}  // namespace mgjoin::topology
