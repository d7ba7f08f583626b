#pragma once
// The tuning file `mgjoin tune` writes and the engine reads to choose the GPU set and sort strategy
// for `--gpus N`. JSON; schema (also in topology/README.md):
//
//   {
//     "version": 1,
//     "created": "2026-11-21T15:04:05Z",
//     "machine": { "gpus": [ { "name": "NVIDIA H200", "pci_bus_id": "0000:18:00.0" }, ... ] },
//     "bandwidth_gbps": {                       // GB/s = 1e9 B/s, see topology/bandwidth.hpp
//       "h2d_alone": [55.4, ...], "d2h_alone": [55.4, ...],   // per GPU
//       "h2d_all": 204.8, "d2h_all": 162.1,                   // all GPUs at once, aggregate
//       "p2p_one_way": [[0, 396, ...], ...],                  // GPU x GPU
//       "p2p_both_ways": [[0, 780, ...], ...],                // GPU x GPU, both directions summed
//       "all_to_all": { "gpus": [0, 1, 2, 3], "gbps": 787 },
//       "both_ways_all": 300.5,                               // H2D and D2H at once, summed (0: not measured)
//       "host_memcpy": 21.3, "cpu_merge": 9.8,                // host rates of the cost model (0: not measured)
//       "cpu_gather": 4.2
//     },
//     "best": [ { "g": 2, "gpus": [0, 1], "strategy": "radix", "seconds": 0.84,
//                 "flow": "copart", "copart_seconds": 0.21 }, ... ]
//   }
//
// "seconds" (the timed paper-flow join on that set) is absent while only transfers were measured;
// "flow" is the faster data flow of the two timed there (JoinOptions::strategy = Auto follows it),
// "copart" when absent; "copart_seconds" the co-partitioned flow's time.
// A file whose "machine" differs from this machine's GPUs (names and bus ids, in CUDA order) is
// ignored with a warning.
#include "topology/bandwidth.hpp"
#include "topology/topology.hpp"

#include <nlohmann/json_fwd.hpp>

#include <optional>
#include <string>
#include <vector>

namespace mgjoin::topology {

/// Identifies a machine by its GPUs: name and PCI bus id of each, in CUDA order.
struct MachineFingerprint {
  struct Entry {
    std::string name;
    std::string pci_bus_id;
    friend bool operator==(const Entry&, const Entry&) = default;
  };
  std::vector<Entry> gpus;
  friend bool operator==(const MachineFingerprint&, const MachineFingerprint&) = default;
};

MachineFingerprint fingerprint_of(const Topology& t);

/// The measured best way to run a join on g GPUs.
struct TuningChoice {
  int g = 0;
  std::vector<int> gpus;            ///< ascending
  std::string strategy = "radix";   ///< "radix" or "merge" (JoinOptions::sort)
  std::optional<double> seconds;    ///< timed join on this set; absent when chosen from transfers only
  std::string flow = "copart";      ///< "copart" or "paper": the faster data flow when both fit
  std::optional<double> copart_seconds;  ///< the co-partitioned flow's timed join on this set
};

struct TuningFile {
  int version = 1;
  std::string created;              ///< ISO 8601 UTC
  MachineFingerprint machine;
  MeasuredBandwidths bandwidths;
  std::vector<TuningChoice> best;   ///< one per g, ascending g

  const TuningChoice* best_for(int g) const;
};

/// $XDG_CACHE_HOME/mgjoin/tuning.json, else ~/.cache/mgjoin/tuning.json.
std::string default_tuning_path();

nlohmann::json tuning_to_json(const TuningFile& f);
/// @throw InputError naming `source` on a missing field, a wrong type or an unknown strategy.
TuningFile tuning_from_json(const nlohmann::json& j, const std::string& source = "tuning file");

/// Writes the file, creating its folder. @throw Error naming the path when it cannot be written.
void write_tuning_file(const TuningFile& f, const std::string& path);

/// The tuning file at `path` if it exists and was made on `machine`; nullopt when it does not exist,
/// and nullopt with a warning when it belongs to another machine.
/// @throw InputError naming the path when it exists but is not a valid tuning file.
std::optional<TuningFile> read_tuning_file(const std::string& path, const Topology& machine);

}  // namespace mgjoin::topology
