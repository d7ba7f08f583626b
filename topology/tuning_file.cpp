// Tuning file format and IO (schema in tuning_file.hpp and topology/README.md).
#include "topology/tuning_file.hpp"

#include "topology/log.hpp"

#include <mgjoin/error.hpp>

#include <nlohmann/json.hpp>

#include <cstdlib>
#include <filesystem>
#include <fstream>

namespace mgjoin::topology {

namespace {

using nlohmann::json;

// n*n row-major <-> a JSON matrix (rows of n).
json matrix_json(const std::vector<double>& flat, std::size_t n) {
  json rows = json::array();
  for (std::size_t i = 0; i < n; ++i)
    rows.push_back(std::vector<double>(flat.begin() + static_cast<std::ptrdiff_t>(i * n),
                                       flat.begin() + static_cast<std::ptrdiff_t>((i + 1) * n)));
  return rows;
}

std::vector<double> matrix_flat(const json& rows, std::size_t n, const std::string& where) {
  std::vector<double> flat;
  MGJOIN_INPUT_EXPECTS(rows.is_array() && rows.size() == n, where + " must be a GPU x GPU matrix");
  for (const auto& r : rows) {
    const auto row = r.get<std::vector<double>>();
    MGJOIN_INPUT_EXPECTS(row.size() == n, where + " must be a GPU x GPU matrix");
    flat.insert(flat.end(), row.begin(), row.end());
  }
  return flat;
}

json bandwidths_json(const MeasuredBandwidths& m) {
  const std::size_t n = m.h2d_alone.size();
  return {{"h2d_alone", m.h2d_alone},
          {"d2h_alone", m.d2h_alone},
          {"h2d_all", m.h2d_all},
          {"d2h_all", m.d2h_all},
          {"p2p_one_way", matrix_json(m.p2p_one_way, n)},
          {"p2p_both_ways", matrix_json(m.p2p_both_ways, n)},
          {"all_to_all", {{"gpus", m.all_to_all_set}, {"gbps", m.all_to_all}}},
          {"both_ways_all", m.both_ways_all},
          {"host_memcpy", m.host_memcpy},
          {"cpu_merge", m.cpu_merge},
          {"cpu_gather", m.cpu_gather}};
}

MeasuredBandwidths bandwidths_from_json(const json& j, const std::string& source) {
  MeasuredBandwidths m;
  m.h2d_alone = j.at("h2d_alone").get<std::vector<double>>();
  m.d2h_alone = j.at("d2h_alone").get<std::vector<double>>();
  const std::size_t n = m.h2d_alone.size();
  MGJOIN_INPUT_EXPECTS(m.d2h_alone.size() == n, source + ": d2h_alone and h2d_alone differ in length");
  m.h2d_all = j.at("h2d_all").get<double>();
  m.d2h_all = j.at("d2h_all").get<double>();
  m.p2p_one_way = matrix_flat(j.at("p2p_one_way"), n, source + ": p2p_one_way");
  m.p2p_both_ways = matrix_flat(j.at("p2p_both_ways"), n, source + ": p2p_both_ways");
  m.all_to_all_set = j.at("all_to_all").at("gpus").get<std::vector<int>>();
  m.all_to_all = j.at("all_to_all").at("gbps").get<double>();
  // Rates added after version 1's first files: 0 (not measured) where absent.
  m.both_ways_all = j.value("both_ways_all", 0.0);
  m.host_memcpy = j.value("host_memcpy", 0.0);
  m.cpu_merge = j.value("cpu_merge", 0.0);
  m.cpu_gather = j.value("cpu_gather", 0.0);
  return m;
}

TuningChoice choice_from_json(const json& j, const std::string& source) {
  TuningChoice c;
  c.g = j.at("g").get<int>();
  c.gpus = j.at("gpus").get<std::vector<int>>();
  c.strategy = j.at("strategy").get<std::string>();
  MGJOIN_INPUT_EXPECTS(c.strategy == "radix" || c.strategy == "merge",
                       source + ": strategy must be \"radix\" or \"merge\", not \"" + c.strategy + "\"");
  MGJOIN_INPUT_EXPECTS(static_cast<int>(c.gpus.size()) == c.g,
                       source + ": best set for g=" + std::to_string(c.g) + " lists " +
                           std::to_string(c.gpus.size()) + " GPUs");
  if (j.contains("seconds") && !j.at("seconds").is_null()) c.seconds = j.at("seconds").get<double>();
  if (j.contains("flow")) {
    c.flow = j.at("flow").get<std::string>();
    MGJOIN_INPUT_EXPECTS(c.flow == "paper" || c.flow == "copart",
                         source + ": flow must be \"paper\" or \"copart\", not \"" + c.flow + "\"");
  }
  if (j.contains("copart_seconds") && !j.at("copart_seconds").is_null())
    c.copart_seconds = j.at("copart_seconds").get<double>();
  return c;
}

std::string describe(const MachineFingerprint& m) {
  std::string s;
  for (const auto& g : m.gpus) {
    if (!s.empty()) s += ", ";
    s += g.name + " @ " + g.pci_bus_id;
  }
  return s.empty() ? "no GPUs" : s;
}

}  // namespace

MachineFingerprint fingerprint_of(const Topology& t) {
  MachineFingerprint m;
  for (const auto& g : t.gpus) m.gpus.push_back({g.name, g.pci_bus_id});
  return m;
}

const TuningChoice* TuningFile::best_for(int g) const {
  for (const auto& c : best)
    if (c.g == g) return &c;
  return nullptr;
}

std::string default_tuning_path() {
  namespace fs = std::filesystem;
  const char* xdg = std::getenv("XDG_CACHE_HOME");
  const char* home = std::getenv("HOME");
  fs::path base = (xdg && *xdg) ? fs::path(xdg) : fs::path(home && *home ? home : ".") / ".cache";
  return (base / "mgjoin" / "tuning.json").string();
}

json tuning_to_json(const TuningFile& f) {
  json machine_gpus = json::array();
  for (const auto& g : f.machine.gpus) machine_gpus.push_back({{"name", g.name}, {"pci_bus_id", g.pci_bus_id}});
  json best = json::array();
  for (const auto& c : f.best) {
    json e = {{"g", c.g}, {"gpus", c.gpus}, {"strategy", c.strategy}};
    if (c.seconds) e["seconds"] = *c.seconds;
    e["flow"] = c.flow;
    if (c.copart_seconds) e["copart_seconds"] = *c.copart_seconds;
    best.push_back(e);
  }
  return {{"version", f.version},
          {"created", f.created},
          {"machine", {{"gpus", machine_gpus}}},
          {"bandwidth_gbps", bandwidths_json(f.bandwidths)},
          {"best", best}};
}

TuningFile tuning_from_json(const json& j, const std::string& source) {
  try {
    TuningFile f;
    f.version = j.at("version").get<int>();
    MGJOIN_INPUT_EXPECTS(f.version == 1, source + ": tuning file version " + std::to_string(f.version) +
                                             " is not supported (expected 1)");
    f.created = j.value("created", "");
    for (const auto& g : j.at("machine").at("gpus"))
      f.machine.gpus.push_back({g.at("name").get<std::string>(),
                                normalize_pci_bus_id(g.at("pci_bus_id").get<std::string>())});
    f.bandwidths = bandwidths_from_json(j.at("bandwidth_gbps"), source);
    for (const auto& c : j.at("best")) f.best.push_back(choice_from_json(c, source));
    return f;
  } catch (const json::exception& e) {
    throw InputError(source + ": not a valid tuning file (" + e.what() + ")");
  }
}

void write_tuning_file(const TuningFile& f, const std::string& path) {
  namespace fs = std::filesystem;
  const fs::path p(path);
  std::error_code ec;
  if (p.has_parent_path()) fs::create_directories(p.parent_path(), ec);
  std::ofstream out(path, std::ios::trunc);
  MGJOIN_INPUT_EXPECTS(out.good(), path + ": cannot write the tuning file");
  out << tuning_to_json(f).dump(2) << '\n';
  MGJOIN_INPUT_EXPECTS(out.good(), path + ": writing the tuning file failed");
}

std::optional<TuningFile> read_tuning_file(const std::string& path, const Topology& machine) {
  std::ifstream in(path);
  if (!in.good()) {
    log_verbose("no tuning file at " + path + ": choosing GPU sets by the topology model");
    return std::nullopt;
  }
  json j;
  try {
    j = json::parse(in);
  } catch (const json::parse_error& e) {
    throw InputError(path + ": not valid JSON (" + e.what() + ")");
  }
  TuningFile f = tuning_from_json(j, path);
  const MachineFingerprint here = fingerprint_of(machine);
  if (!(f.machine == here)) {
    log_warning(path + " was made on another machine (" + describe(f.machine) + "; this one has " +
                describe(here) + "): ignoring it; run `mgjoin tune` to make one here");
    return std::nullopt;
  }
  return f;
}

}  // namespace mgjoin::topology
