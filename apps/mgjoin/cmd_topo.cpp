// `mgjoin topo`: the machine as mgjoin sees it (GPUs, NUMA affinity, link matrix) and the GPU set
// it would use for every g. `--fixture` shows a synthetic machine instead (tests/topology/fixtures/).
#include "commands.hpp"

#include "topology/bandwidth.hpp"
#include "topology/log.hpp"
#include "topology/report.hpp"
#include "topology/topology.hpp"
#include "topology/topology_cache.hpp"
#include "topology/tuning_file.hpp"

#include <nlohmann/json.hpp>

#include <cstdio>
#include <memory>
#include <optional>
#include <string>
#include <utility>

namespace mgjoin::cli {

namespace {

struct TopoArgs {
  bool json = false;
  bool verbose = false;
  std::string fixture;  ///< empty: probe this machine
  std::string tuning;   ///< empty: the default tuning file (probed machine only)
};

// The tuning file that applies: --tuning, or for the probed machine the default one if present.
std::optional<topology::TuningFile> applicable_tuning(const TopoArgs& a, const topology::Topology& t) {
  if (!a.tuning.empty()) return topology::read_tuning_file(a.tuning, t);
  if (a.fixture.empty() && t.gpu_count() > 0) return topology::read_tuning_file(topology::default_tuning_path(), t);
  return std::nullopt;
}

void run_topo(const TopoArgs& a) {
  topology::set_verbose(a.verbose || topology::verbose());
  // A probe of the machine also refreshes the topology every engine reads at start-up.
  topology::Topology t = a.fixture.empty() ? topology::probe_and_cache_topology() : topology::load_topology_fixture(a.fixture);
  const auto tuning = applicable_tuning(a, t);
  const topology::TuningFile* tf = tuning ? &*tuning : nullptr;
  if (tuning) {  // show what was measured rather than what is modelled
    t = topology::with_measured_bandwidths(std::move(t), tuning->bandwidths);
    t.machine += " (bandwidths measured by `mgjoin tune` " + tuning->created + ")";
  }
  if (a.json) {
    std::printf("%s\n", topology::topology_report_json(t, tf).dump(2).c_str());
  } else {
    std::fputs(topology::topology_report_text(t, tf).c_str(), stdout);
  }
}

}  // namespace

void add_topo_command(CLI::App& app) {
  auto args = std::make_shared<TopoArgs>();
  auto* cmd = app.add_subcommand("topo", "Show the GPUs, their links and NUMA affinity, and the GPU set chosen per count");
  cmd->add_flag("--json", args->json, "Print JSON (the fixture format plus \"links\" and \"chosen\")");
  cmd->add_option("--fixture", args->fixture, "Show a synthetic machine described by this JSON file")
      ->check(CLI::ExistingFile);
  cmd->add_option("--tuning", args->tuning, "Tuning file to apply (default: the one `mgjoin tune` wrote, if any)");
  cmd->add_flag("-v,--verbose", args->verbose, "Explain what the probe could not learn");
  cmd->callback([args] { run_topo(*args); });
}

}  // namespace mgjoin::cli
