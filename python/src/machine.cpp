// The machine as mgjoin sees it (what `mgjoin topo --json` prints) and the byte-size parser the CLI's
// --gpu-memory-limit uses, for mgjoin.topology() and mgjoin.join(gpu_memory_limit="8G").
#include "bindings.hpp"

#include "core/byte_size.hpp"
#include "topology/bandwidth.hpp"
#include "topology/report.hpp"
#include "topology/topology.hpp"
#include "topology/tuning_file.hpp"

#include <nanobind/stl/optional.h>
#include <nanobind/stl/string.h>

#include <nlohmann/json.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <utility>

namespace nb = nanobind;

namespace mgjoin::python {
namespace {

/// `mgjoin topo --json` on this machine: the probed topology with the tuning file's measured bandwidths
/// and chosen sets when one applies (`tuning_file`, else the default one when GPUs are present).
std::string topology_json(const std::string& tuning_file) {
  nb::gil_scoped_release no_gil;  // hwloc, CUDA and NVML take a moment
  topology::Topology t = topology::probe_topology();
  std::optional<topology::TuningFile> tuning;
  if (!tuning_file.empty()) {
    tuning = topology::read_tuning_file(tuning_file, t);
  } else if (t.gpu_count() > 0) {
    tuning = topology::read_tuning_file(topology::default_tuning_path(), t);
  }
  if (tuning) {
    t = topology::with_measured_bandwidths(std::move(t), tuning->bandwidths);
    t.machine += " (bandwidths measured by `mgjoin tune` " + tuning->created + ")";
  }
  return topology::topology_report_json(t, tuning ? &*tuning : nullptr).dump();
}

}  // namespace

void bind_machine(nb::module_& m) {
  m.def("topology_json", &topology_json, nb::arg("tuning_file") = "",
        "What `mgjoin topo --json` prints for this machine, as a JSON string.");
  m.def("default_tuning_path", &topology::default_tuning_path,
        "Where `mgjoin tune` writes its tuning file by default.");
  m.def(
      "parse_byte_size", [](const std::string& text) { return detail::parse_byte_size(text); }, nb::arg("text"),
      "Bytes named by '4096', '512M', '8G', '1.5T', '64GiB' (K/M/G/T: powers of 1024); None if not a size.");
}

}  // namespace mgjoin::python
