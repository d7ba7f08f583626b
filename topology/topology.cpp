// Link classification, the bandwidth model of a pair, and the fixture format (topology/README.md).
#include "topology/topology.hpp"

#include <mgjoin/error.hpp>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <array>
#include <cstdio>
#include <fstream>
#include <sstream>

namespace mgjoin::topology {

namespace {

constexpr std::array<std::pair<LinkKind, std::string_view>, 6> kLinkKindNames{{
    {LinkKind::NvLink, "NvLink"},
    {LinkKind::NvSwitch, "NvSwitch"},
    {LinkKind::PcieSameSwitch, "PcieSameSwitch"},
    {LinkKind::PcieHostBridge, "PcieHostBridge"},
    {LinkKind::CrossSocket, "CrossSocket"},
    {LinkKind::None, "None"},
}};

// P2P through the root complex loses to P2P below one switch on every platform we know of.
constexpr double kHostBridgeP2pEfficiency = 0.8;
// A copy without P2P is staged through host memory: two hops, half the slower link.
constexpr double kStagedEfficiency = 0.5;

bool same_package(const Gpu& a, const Gpu& b) { return a.package < 0 || b.package < 0 || a.package == b.package; }

LinkKind classify_pair(const Topology& t, int i, int j, const PairFacts& f) {
  const Gpu& a = t.gpus[static_cast<std::size_t>(i)];
  const Gpu& b = t.gpus[static_cast<std::size_t>(j)];
  if (i == j) return LinkKind::None;
  if (f.nvlinks_direct > 0) return LinkKind::NvLink;
  if (a.nvswitch_links > 0 && b.nvswitch_links > 0) return LinkKind::NvSwitch;
  if (!same_package(a, b)) return LinkKind::CrossSocket;
  if (a.uplink >= 0 && a.uplink == b.uplink) return LinkKind::PcieSameSwitch;
  return LinkKind::PcieHostBridge;
}

// Default P2P claim of a fixture: what CUDA reports on such machines (no P2P across sockets).
bool default_p2p(const Topology& t, int i, int j, int nvlinks_direct) {
  const Gpu& a = t.gpus[static_cast<std::size_t>(i)];
  const Gpu& b = t.gpus[static_cast<std::size_t>(j)];
  if (i == j) return false;
  if (nvlinks_direct > 0 || (a.nvswitch_links > 0 && b.nvswitch_links > 0)) return true;
  return same_package(a, b);
}

template <class T>
T field(const nlohmann::json& j, const char* key, const std::string& where) {
  MGJOIN_INPUT_EXPECTS(j.contains(key), where + ": missing field \"" + key + "\"");
  try {
    return j.at(key).get<T>();
  } catch (const nlohmann::json::exception&) {
    throw InputError(where + ": field \"" + key + "\" has the wrong type");
  }
}

template <class T>
T field_or(const nlohmann::json& j, const char* key, T fallback, const std::string& where) {
  return j.contains(key) ? field<T>(j, key, where) : fallback;
}

Gpu gpu_from_json(const nlohmann::json& j, int index, const std::string& where) {
  Gpu g;
  g.cuda_id = field_or<int>(j, "cuda_id", index, where);
  g.name = field<std::string>(j, "name", where);
  g.pci_bus_id = normalize_pci_bus_id(field<std::string>(j, "pci_bus_id", where));
  if (j.contains("memory_bytes")) {
    g.memory_bytes = field<std::uint64_t>(j, "memory_bytes", where);
  } else {
    g.memory_bytes = static_cast<std::uint64_t>(field<double>(j, "memory_gib", where) * double(1ull << 30));
  }
  g.numa_node = field_or<int>(j, "numa_node", 0, where);
  g.package = field_or<int>(j, "package", 0, where);
  g.cpuset = field_or<std::string>(j, "cpuset", "", where);
  g.uplink = field_or<int>(j, "uplink", -1, where);
  g.host_link_gbps = field<double>(j, "host_link_gbps", where);
  g.nvswitch_links = field_or<int>(j, "nvswitch_links", 0, where);
  return g;
}

// Each GPU without an explicit uplink gets one of its own at its host link's rate.
void assign_own_uplinks(Topology& t, const std::string& where) {
  for (auto& g : t.gpus) {
    if (g.uplink < 0) {
      g.uplink = static_cast<int>(t.uplinks.size());
      t.uplinks.push_back({g.host_link_gbps});
    }
    MGJOIN_INPUT_EXPECTS(g.uplink < static_cast<int>(t.uplinks.size()),
                         where + ": GPU " + std::to_string(g.cuda_id) + " names uplink " +
                             std::to_string(g.uplink) + " but only " + std::to_string(t.uplinks.size()) +
                             " are listed");
  }
}

std::vector<PairFacts> facts_from_json(const nlohmann::json& j, const Topology& t, const std::string& where) {
  const int n = t.gpu_count();
  std::vector<PairFacts> facts(static_cast<std::size_t>(n * n));
  auto at = [&](int a, int b) -> PairFacts& { return facts[static_cast<std::size_t>(a * n + b)]; };
  auto check_gpu = [&](int g) {
    MGJOIN_INPUT_EXPECTS(g >= 0 && g < n, where + ": GPU index " + std::to_string(g) + " out of range");
  };
  for (const auto& e : field_or<std::vector<std::array<int, 3>>>(j, "nvlinks", {}, where)) {
    check_gpu(e[0]);
    check_gpu(e[1]);
    at(e[0], e[1]).nvlinks_direct += e[2];
    at(e[1], e[0]).nvlinks_direct += e[2];
  }
  for (int a = 0; a < n; ++a)
    for (int b = 0; b < n; ++b) at(a, b).p2p_supported = default_p2p(t, a, b, at(a, b).nvlinks_direct);
  if (j.contains("p2p")) {
    const auto m = field<std::vector<std::vector<bool>>>(j, "p2p", where);
    MGJOIN_INPUT_EXPECTS(m.size() == static_cast<std::size_t>(n), where + ": \"p2p\" must be a GPU x GPU matrix");
    for (int a = 0; a < n; ++a) {
      MGJOIN_INPUT_EXPECTS(m[a].size() == static_cast<std::size_t>(n), where + ": \"p2p\" must be a GPU x GPU matrix");
      for (int b = 0; b < n; ++b) at(a, b).p2p_supported = m[a][b] && a != b;
    }
  }
  for (const auto& e : field_or<std::vector<std::array<int, 2>>>(j, "p2p_unsupported", {}, where)) {
    check_gpu(e[0]);
    check_gpu(e[1]);
    at(e[0], e[1]).p2p_supported = at(e[1], e[0]).p2p_supported = false;
  }
  return facts;
}

}  // namespace

std::string_view link_kind_name(LinkKind k) {
  for (const auto& [kind, name] : kLinkKindNames)
    if (kind == k) return name;
  return "None";
}

LinkKind parse_link_kind(std::string_view name) {
  for (const auto& [kind, n] : kLinkKindNames)
    if (n == name) return kind;
  throw InputError("unknown link kind \"" + std::string(name) + "\"");
}

double modelled_link_gbps(const Topology& t, int i, int j) {
  if (i == j) return 0;
  const Link& l = t.link(i, j);
  const Gpu& a = t.gpus[static_cast<std::size_t>(i)];
  const Gpu& b = t.gpus[static_cast<std::size_t>(j)];
  if (l.kind == LinkKind::NvLink || l.kind == LinkKind::NvSwitch) return l.nvlinks * t.nvlink_gbps_per_link;
  double host = std::min(a.host_link_gbps, b.host_link_gbps);
  if (l.kind == LinkKind::CrossSocket && t.inter_socket_gbps > 0) host = std::min(host, t.inter_socket_gbps);
  if (!l.p2p_supported) return host * kStagedEfficiency;
  return l.kind == LinkKind::PcieHostBridge ? host * kHostBridgeP2pEfficiency : host;
}

void classify_links(Topology& t, const std::vector<PairFacts>& facts) {
  const int n = t.gpu_count();
  MGJOIN_EXPECTS(facts.size() == static_cast<std::size_t>(n * n), "pair facts must be n x n");
  t.links.assign(static_cast<std::size_t>(n * n), Link{});
  for (int i = 0; i < n; ++i) {
    for (int j = 0; j < n; ++j) {
      const PairFacts& f = facts[static_cast<std::size_t>(i * n + j)];
      Link& l = t.link(i, j);
      l.kind = classify_pair(t, i, j, f);
      l.p2p_supported = f.p2p_supported && i != j;
      l.performance_rank = f.performance_rank;
      if (l.kind == LinkKind::NvLink) l.nvlinks = f.nvlinks_direct;
      if (l.kind == LinkKind::NvSwitch)
        l.nvlinks = std::min(t.gpus[static_cast<std::size_t>(i)].nvswitch_links,
                             t.gpus[static_cast<std::size_t>(j)].nvswitch_links);
    }
  }
  for (int i = 0; i < n; ++i)
    for (int j = 0; j < n; ++j) t.link(i, j).gbps = modelled_link_gbps(t, i, j);
}

Topology topology_from_json(const nlohmann::json& j, const std::string& source) {
  MGJOIN_INPUT_EXPECTS(j.is_object(), source + ": a topology fixture must be a JSON object");
  Topology t;
  t.machine = field_or<std::string>(j, "machine", "synthetic", source);
  t.packages = field_or<int>(j, "packages", 1, source);
  t.numa_nodes = field_or<int>(j, "numa_nodes", t.packages, source);
  t.inter_socket_gbps = field_or<double>(j, "inter_socket_gbps", 0.0, source);
  t.nvlink_gbps_per_link = field_or<double>(j, "nvlink_gbps_per_link", 25.0, source);
  for (const auto& u : field_or<nlohmann::json>(j, "uplinks", nlohmann::json::array(), source))
    t.uplinks.push_back({field<double>(u, "gbps", source + ": uplinks")});
  const auto gpus = field_or<nlohmann::json>(j, "gpus", nlohmann::json::array(), source);
  for (std::size_t i = 0; i < gpus.size(); ++i)
    t.gpus.push_back(gpu_from_json(gpus[i], static_cast<int>(i), source + ": gpus[" + std::to_string(i) + "]"));
  assign_own_uplinks(t, source);
  classify_links(t, facts_from_json(j, t, source));
  return t;
}

Topology load_topology_fixture(const std::string& path) {
  std::ifstream in(path);
  MGJOIN_INPUT_EXPECTS(in.good(), path + ": cannot open topology fixture");
  try {
    return topology_from_json(nlohmann::json::parse(in), path);
  } catch (const nlohmann::json::parse_error& e) {
    throw InputError(path + ": not valid JSON (" + e.what() + ")");
  }
}

nlohmann::json topology_to_json(const Topology& t) {
  nlohmann::json j;
  j["machine"] = t.machine;
  j["packages"] = t.packages;
  j["numa_nodes"] = t.numa_nodes;
  j["inter_socket_gbps"] = t.inter_socket_gbps;
  j["nvlink_gbps_per_link"] = t.nvlink_gbps_per_link;
  j["uplinks"] = nlohmann::json::array();
  for (const auto& u : t.uplinks) j["uplinks"].push_back({{"gbps", u.gbps}});
  j["gpus"] = nlohmann::json::array();
  for (const auto& g : t.gpus)
    j["gpus"].push_back({{"cuda_id", g.cuda_id}, {"name", g.name}, {"pci_bus_id", g.pci_bus_id},
                         {"memory_bytes", g.memory_bytes}, {"numa_node", g.numa_node}, {"package", g.package},
                         {"cpuset", g.cpuset}, {"uplink", g.uplink}, {"host_link_gbps", g.host_link_gbps},
                         {"nvswitch_links", g.nvswitch_links}});
  const int n = t.gpu_count();
  j["nvlinks"] = nlohmann::json::array();
  j["p2p"] = nlohmann::json::array();
  j["links"] = nlohmann::json::array();
  for (int a = 0; a < n; ++a) {
    auto p2p_row = nlohmann::json::array();
    auto link_row = nlohmann::json::array();
    for (int b = 0; b < n; ++b) {
      const Link& l = t.link(a, b);
      if (a < b && l.kind == LinkKind::NvLink) j["nvlinks"].push_back({a, b, l.nvlinks});
      p2p_row.push_back(l.p2p_supported);
      link_row.push_back({{"kind", link_kind_name(l.kind)}, {"nvlinks", l.nvlinks}, {"p2p", l.p2p_supported},
                          {"performance_rank", l.performance_rank}, {"gbps", l.gbps}});
    }
    j["p2p"].push_back(p2p_row);
    j["links"].push_back(link_row);
  }
  return j;
}

std::string cpu_list_string(const std::vector<int>& cpus) {
  std::string out;
  for (std::size_t i = 0; i < cpus.size();) {
    std::size_t k = i;
    while (k + 1 < cpus.size() && cpus[k + 1] == cpus[k] + 1) ++k;
    if (!out.empty()) out += ',';
    out += std::to_string(cpus[i]);
    if (k > i) out += '-' + std::to_string(cpus[k]);
    i = k + 1;
  }
  return out;
}

std::vector<int> parse_cpu_list(std::string_view list) {
  std::vector<int> cpus;
  std::stringstream ss{std::string(list)};
  std::string item;
  while (std::getline(ss, item, ',')) {
    if (item.empty()) continue;
    int lo = 0, hi = 0;
    const int got = std::sscanf(item.c_str(), "%d-%d", &lo, &hi);
    MGJOIN_INPUT_EXPECTS(got >= 1 && lo >= 0, "bad CPU list \"" + std::string(list) + "\"");
    if (got == 1) hi = lo;
    for (int c = lo; c <= hi; ++c) cpus.push_back(c);
  }
  return cpus;
}

std::string normalize_pci_bus_id(std::string_view bus_id) {
  unsigned domain = 0, bus = 0, dev = 0, func = 0;
  const std::string s(bus_id);
  if (std::sscanf(s.c_str(), "%x:%x:%x.%x", &domain, &bus, &dev, &func) != 4) {
    domain = 0;
    MGJOIN_INPUT_EXPECTS(std::sscanf(s.c_str(), "%x:%x.%x", &bus, &dev, &func) == 3,
                         "bad PCI bus id \"" + s + "\"");
  }
  char out[32];
  std::snprintf(out, sizeof out, "%04x:%02x:%02x.%x", domain & 0xffffu, bus, dev, func);
  return out;
}

}  // namespace mgjoin::topology
