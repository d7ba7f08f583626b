#pragma once
// Which g GPUs a join should use (paper Sections 4.3-4.4: the fastest set depends on the wiring,
// not only on g; on an IBM AC922 the best 2-GPU set is {0,1}, on a DGX H100 the best 4 are {0..3}).
//
// Cost model: the estimated seconds to join 1 GB of input on set S (g = |S|, each GPU gets 1/g):
//
//   T(S) = 2.5 * t_host + t_exchange + t_compute
//
//   t_host      host <-> GPU copies: the slowest of
//                 - each GPU's own host link:          (1/g)          / host_link_gbps
//                 - each uplink shared by k GPUs of S: (k/g)          / uplink_gbps
//                 - the CPU-CPU interconnect:          (r/g)          / inter_socket_gbps
//               where r = GPUs of S off the home socket (the socket holding most of S, which is
//               where the input is placed; ties to the lower socket). The join moves about 2.5x
//               its input over these links (sort H2D, sorted D2H, keys H2D again).
//   t_exchange  the all-to-all bucket swap: every GPU sends (g-1)/g of its share to its peers at the
//               worst pair's P2P bandwidth in S: ((g-1)/g^2) / min link gbps; pairs without NVLink
//               on different sockets also share the CPU-CPU link: (pairs crossing/g^2) / inter_socket.
//   t_compute   on-GPU sorting and joining: (1/g) / 150 GB/s per GPU (CUB SortPairs on an H200).
//
// Sets are ranked by T (equal within 1e-9 relative counts as a tie), then by fewer GPUs off the
// home socket, then by lower IDs (lexicographically). A tuning file with a measured best set for g
// overrides the model.
#include "topology/topology.hpp"

#include <vector>

namespace mgjoin::topology {

struct TuningFile;

/// The model's terms for one set (seconds per GB of input).
struct SetCost {
  double host_seconds = 0;
  double exchange_seconds = 0;
  double compute_seconds = 0;
  double total = 0;
  int off_home_socket = 0;  ///< GPUs of the set outside the socket that holds most of it
};

/// T(S) of the model above. `set` holds indices into t.gpus, distinct.
SetCost estimate_set_cost(const Topology& t, const std::vector<int>& set);

/// The best `max_sets` sets of g GPUs by the model, best first (each ascending).
/// @throw InputError unless 1 <= g <= t.gpu_count().
std::vector<std::vector<int>> rank_gpu_sets(const Topology& t, int g, int max_sets);

/// The GPU set a join on g GPUs uses: the tuning file's measured best set for g when `tuning`
/// has one for this machine, else the model's best. Ascending GPU indices.
/// @throw InputError unless 1 <= g <= t.gpu_count().
std::vector<int> choose_gpu_set(const Topology& t, int g, const TuningFile* tuning = nullptr);

}  // namespace mgjoin::topology
