#pragma once
// Transfer bandwidths measured on this machine (the first half of `mgjoin tune`): host <-> GPU per
// GPU alone and all at once, P2P per pair one way and both ways, and an all-to-all among the GPUs.
// Pinned host buffers near each GPU, CUDA events (or synchronized host clocks for concurrent
// copies), warm-up copies first, the median of the repeats. GB/s = 1e9 bytes per second.
#include "topology/topology.hpp"

#include <cstddef>
#include <functional>
#include <string>
#include <vector>

namespace mgjoin::topology {

struct MeasuredBandwidths {
  std::vector<double> h2d_alone;      ///< per GPU, GPU copying alone
  std::vector<double> d2h_alone;
  double h2d_all = 0;                 ///< aggregate, all GPUs copying at once
  double d2h_all = 0;
  std::vector<double> p2p_one_way;    ///< n*n: copy i -> j alone (0 on the diagonal)
  std::vector<double> p2p_both_ways;  ///< n*n: i -> j and j -> i at once, both directions summed
  std::vector<int> all_to_all_set;    ///< the GPUs of the all-to-all (all of them)
  double all_to_all = 0;              ///< aggregate GB/s, every GPU sending to every other at once
  /// Aggregate, every GPU copying H2D and D2H at once, both directions summed (0: not measured).
  double both_ways_all = 0;
  /// Host rates the planner's cost model weighs (0: not measured; `mgjoin tune` measures them):
  double host_memcpy = 0;  ///< a copy between host buffers with all threads, bytes copied per second
  double cpu_merge = 0;    ///< the merge phase's multiway merge of 8-byte keys with 8-byte payloads, bytes out per second
  double cpu_gather = 0;   ///< 8-byte words gathered by a random row-index map, bytes out per second (a miss per row)

  bool empty() const { return h2d_alone.empty(); }
};

struct BandwidthOptions {
  std::size_t bytes = std::size_t{256} << 20;  ///< bytes per copy (per GPU / per pair)
  int warmup = 2;
  int repeats = 5;
  /// Called with a line such as "h2d GPU 0: 55.2 GB/s" after each measurement; optional.
  std::function<void(const std::string&)> progress;
};

/// Measures every figure of MeasuredBandwidths on the GPUs of `t` (which must be this machine).
/// @throw Error when t has no GPUs; CudaError when a copy or an allocation fails.
MeasuredBandwidths measure_bandwidths(const Topology& t, const BandwidthOptions& options = {});

/// `t` with its modelled bandwidths replaced by measured ones: each GPU's host link by the slower
/// of its H2D and D2H, each P2P link by its one-way figure (where measured). Figures within 10% of
/// the median of their class (all host links; P2P links of the same kind and NVLink count) are
/// replaced by that median, so that noise does not pick between GPUs wired alike; a link that is
/// really slower (degraded, differently wired) keeps its own figure.
Topology with_measured_bandwidths(Topology t, const MeasuredBandwidths& m);

}  // namespace mgjoin::topology
