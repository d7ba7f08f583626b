#pragma once
// The synthetic machines of tests/topology/fixtures/ (format: topology/README.md).
#include "topology/topology.hpp"

#include <string>

namespace mgjoin::test {

inline std::string topology_fixture_path(const std::string& name) {
  return std::string(MGJOIN_SOURCE_DIR) + "/tests/topology/fixtures/" + name + ".json";
}

inline topology::Topology load_fixture(const std::string& name) {
  return topology::load_topology_fixture(topology_fixture_path(name));
}

}  // namespace mgjoin::test
