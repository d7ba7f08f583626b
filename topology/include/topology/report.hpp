#pragma once
// What `mgjoin topo` shows: the GPUs with their NUMA affinity, the link matrix (kind and one-way
// GB/s) and the GPU set chosen for every g, as text for people or JSON for machines.
#include "topology/topology.hpp"
#include "topology/tuning_file.hpp"

#include <nlohmann/json_fwd.hpp>

#include <string>

namespace mgjoin::topology {

/// Short cell name of a link, in the spirit of `nvidia-smi topo -m`: "NV18" (NVLink x18),
/// "NVS18" (NVSwitch), "PIX" (PCIe switch), "PHB" (host bridge), "SYS" (across sockets), "-" (self);
/// a trailing '*' marks a pair without P2P.
std::string link_cell_name(const Link& l);

/// Human-readable report. With a tuning file for this machine, the chosen sets are the measured ones.
std::string topology_report_text(const Topology& t, const TuningFile* tuning = nullptr);

/// topology_to_json(t) plus "chosen": [{"g", "gpus", "source": "model"|"tuning", "model_seconds_per_gb"}].
nlohmann::json topology_report_json(const Topology& t, const TuningFile* tuning = nullptr);

}  // namespace mgjoin::topology
