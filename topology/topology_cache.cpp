#include "topology/topology_cache.hpp"

#include "topology/log.hpp"
#include "topology/tuning_file.hpp"

#include <mgjoin/error.hpp>

#include <cuda_runtime_api.h>
#include <nlohmann/json.hpp>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>
#include <string_view>

namespace mgjoin::topology {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

constexpr int kCacheVersion = 1;

std::string first_line(const char* path) {
  std::ifstream in(path);
  std::string line;
  std::getline(in, line);
  return line;
}

json key_json(const HardwareKey& k) {
  return {{"gpus", k.gpus}, {"driver", k.driver_version}, {"cpus_online", k.cpus_online}, {"numa_nodes", k.numa_nodes}};
}

HardwareKey key_from_json(const json& j) {
  HardwareKey k;
  k.gpus = j.at("gpus").get<std::vector<std::string>>();
  k.driver_version = j.at("driver").get<int>();
  k.cpus_online = j.at("cpus_online").get<std::string>();
  k.numa_nodes = j.at("numa_nodes").get<std::string>();
  return k;
}

/// A recorded topology: the fixture reader re-derives the links from the pair facts and leaves out
/// CUDA's performance ranks, so the probe's links are restored as they were recorded.
Topology topology_of_record(const json& j, const std::string& path) {
  Topology t = topology_from_json(j, path);
  const json& links = j.at("links");
  for (int a = 0; a < t.gpu_count(); ++a)
    for (int b = 0; b < t.gpu_count(); ++b) {
      const json& l = links.at(a).at(b);
      Link& link = t.link(a, b);
      link.kind = parse_link_kind(l.at("kind").get<std::string>());
      link.nvlinks = l.at("nvlinks").get<int>();
      link.p2p_supported = l.at("p2p").get<bool>();
      link.performance_rank = l.at("performance_rank").get<int>();
      link.gbps = l.at("gbps").get<double>();
    }
  return t;
}

/// The cached topology at `path` when it was made for `here`.
std::optional<Topology> read_cache(const std::string& path, const HardwareKey& here) {
  std::ifstream in(path);
  if (!in.good()) return std::nullopt;
  try {
    const json j = json::parse(in);
    if (j.at("version").get<int>() != kCacheVersion || !(key_from_json(j.at("hardware")) == here)) {
      log_verbose(path + " was made on other hardware or by another version: probing again");
      return std::nullopt;
    }
    return topology_of_record(j.at("topology"), path);
  } catch (const std::exception& e) {  // a corrupt cache is only a miss
    log_verbose(path + ": unreadable topology cache (" + e.what() + "): probing again");
    return std::nullopt;
  }
}

void write_cache(const std::string& path, const HardwareKey& here, const Topology& t) {
  std::error_code ec;
  const fs::path p(path);
  if (p.has_parent_path()) fs::create_directories(p.parent_path(), ec);
  const std::string temporary = path + ".tmp." + std::to_string(::getpid());
  {
    std::ofstream out(temporary, std::ios::trunc);
    out << json{{"version", kCacheVersion}, {"hardware", key_json(here)}, {"topology", topology_to_json(t)}}.dump(1) << '\n';
    if (!out.good()) {
      fs::remove(temporary, ec);
      log_verbose(path + ": cannot write the topology cache");
      return;
    }
  }
  fs::rename(temporary, path, ec);
  if (ec) fs::remove(temporary, ec);
}

bool cache_off() {
  const char* v = std::getenv("MGJOIN_TOPOLOGY_CACHE");
  return v && (std::string_view(v) == "off" || std::string_view(v) == "0");
}

}  // namespace

HardwareKey read_hardware_key() {
  HardwareKey k;
  int n = 0;
  if (cudaGetDeviceCount(&n) != cudaSuccess) {
    cudaGetLastError();
    n = 0;
  }
  for (int d = 0; d < n; ++d) {
    cudaDeviceProp prop{};
    char bus[32] = {};
    MGJOIN_CUDA_TRY(cudaGetDeviceProperties(&prop, d));
    MGJOIN_CUDA_TRY(cudaDeviceGetPCIBusId(bus, sizeof bus, d));
    k.gpus.push_back(std::string(prop.name) + "|" + normalize_pci_bus_id(bus) + "|" + std::to_string(prop.totalGlobalMem));
  }
  if (cudaDriverGetVersion(&k.driver_version) != cudaSuccess) cudaGetLastError();
  k.cpus_online = first_line("/sys/devices/system/cpu/online");
  k.numa_nodes = first_line("/sys/devices/system/node/online");
  return k;
}

std::string default_topology_cache_path() {
  return (fs::path(default_tuning_path()).parent_path() / "topology.json").string();
}

Topology cached_topology(const std::string& path, const HardwareKey& here, const std::function<Topology()>& probe) {
  if (std::optional<Topology> t = read_cache(path, here)) return *std::move(t);
  Topology t = probe();
  write_cache(path, here, t);
  return t;
}

Topology cached_topology() {
  if (cache_off()) return probe_topology();
  const HardwareKey here = read_hardware_key();
  if (here.gpus.empty()) return probe_topology();  // nothing worth caching: no driver or no GPU
  return cached_topology(default_topology_cache_path(), here, [] { return probe_topology(); });
}

Topology probe_and_cache_topology() {
  Topology t = probe_topology();
  if (!cache_off() && t.gpu_count() > 0) write_cache(default_topology_cache_path(), read_hardware_key(), t);
  return t;
}

}  // namespace mgjoin::topology
