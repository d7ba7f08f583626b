#include "topology/report.hpp"

#include "topology/gpu_set.hpp"
#include "topology/tune.hpp"

#include <nlohmann/json.hpp>

#include <cstdio>
#include <sstream>

namespace mgjoin::topology {

namespace {

std::string format(const char* fmt, auto... args) {
  char buf[256];
  std::snprintf(buf, sizeof buf, fmt, args...);
  return buf;
}

bool from_tuning(const Topology& t, int g, const TuningFile* tuning) {
  return tuning && tuning->machine == fingerprint_of(t) && tuning->best_for(g) != nullptr;
}

void gpu_table(std::ostringstream& out, const Topology& t) {
  out << format("%-4s %-24s %-13s %10s %5s %7s %-16s %s\n", "GPU", "name", "PCI bus id", "memory", "NUMA",
                "socket", "CPUs", "host link");
  for (const auto& g : t.gpus)
    out << format("%-4d %-24s %-13s %6.1f GiB %5d %7d %-16s %.1f GB/s (uplink %d)\n", g.cuda_id,
                  g.name.c_str(), g.pci_bus_id.c_str(), double(g.memory_bytes) / double(1ull << 30), g.numa_node,
                  g.package, g.cpuset.empty() ? "?" : g.cpuset.c_str(), g.host_link_gbps, g.uplink);
}

void link_matrix(std::ostringstream& out, const Topology& t) {
  out << "\nlinks: kind and one-way GB/s (NV<n> NVLink x n, NVS<n> NVSwitch, PIX PCIe switch,\n"
         "       PHB host bridge, SYS across sockets, * no P2P)\n"
      << format("%-6s", "");
  for (int j = 0; j < t.gpu_count(); ++j) out << format("%-13s", ("GPU" + std::to_string(j)).c_str());
  out << '\n';
  for (int i = 0; i < t.gpu_count(); ++i) {
    out << format("%-6s", ("GPU" + std::to_string(i)).c_str());
    for (int j = 0; j < t.gpu_count(); ++j) {
      const Link& l = t.link(i, j);
      const std::string cell = i == j ? "-" : link_cell_name(l) + format(" %.0f", l.gbps);
      out << format("%-13s", cell.c_str());
    }
    out << '\n';
  }
}

void chosen_sets(std::ostringstream& out, const Topology& t, const TuningFile* tuning) {
  out << "\nchosen GPU set per g (model: estimated seconds per GB of input; see topology/gpu_set.hpp)\n";
  for (int g = 1; g <= t.gpu_count(); ++g) {
    const auto set = choose_gpu_set(t, g, tuning);
    const double model = estimate_set_cost(t, set).total;
    out << format("  g=%-3d %-20s model %.4f s/GB", g, set_string(set).c_str(), model);
    if (from_tuning(t, g, tuning)) out << "  (tuning file, " << tuning->best_for(g)->strategy << ")";
    out << '\n';
  }
}

}  // namespace

std::string link_cell_name(const Link& l) {
  std::string s;
  switch (l.kind) {
    case LinkKind::NvLink: s = "NV" + std::to_string(l.nvlinks); break;
    case LinkKind::NvSwitch: s = "NVS" + std::to_string(l.nvlinks); break;
    case LinkKind::PcieSameSwitch: s = "PIX"; break;
    case LinkKind::PcieHostBridge: s = "PHB"; break;
    case LinkKind::CrossSocket: s = "SYS"; break;
    case LinkKind::None: return "-";
  }
  return l.p2p_supported ? s : s + "*";
}

std::string topology_report_text(const Topology& t, const TuningFile* tuning) {
  std::ostringstream out;
  out << "machine: " << t.machine << ", " << t.gpu_count() << " GPU(s), " << t.packages << " socket(s), "
      << t.numa_nodes << " NUMA node(s)";
  if (t.packages > 1) out << format(", CPU-CPU link %.0f GB/s", t.inter_socket_gbps);
  out << '\n';
  if (t.gpus.empty()) {
    out << "no CUDA GPUs found\n";
    return out.str();
  }
  gpu_table(out, t);
  link_matrix(out, t);
  chosen_sets(out, t, tuning);
  return out.str();
}

nlohmann::json topology_report_json(const Topology& t, const TuningFile* tuning) {
  nlohmann::json j = topology_to_json(t);
  j["chosen"] = nlohmann::json::array();
  for (int g = 1; g <= t.gpu_count(); ++g) {
    const auto set = choose_gpu_set(t, g, tuning);
    j["chosen"].push_back({{"g", g},
                           {"gpus", set},
                           {"source", from_tuning(t, g, tuning) ? "tuning" : "model"},
                           {"model_seconds_per_gb", estimate_set_cost(t, set).total}});
  }
  return j;
}

}  // namespace mgjoin::topology
