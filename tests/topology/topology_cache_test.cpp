// The topology cache (topology/topology_cache.hpp): probed once, read back exactly while the hardware
// is the same, probed again when it changed or the file is bad, never an error for the cache itself.
#include "fixtures.hpp"

#include "topology/topology_cache.hpp"
#include "topology/tuning_file.hpp"

#include <nlohmann/json.hpp>

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <unistd.h>

namespace mgjoin::topology {
namespace {

namespace fs = std::filesystem;

class TopologyCache : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string pattern = (fs::temp_directory_path() / "mgjoin_topo_cache_XXXXXX").string();
    dir_ = mkdtemp(pattern.data());
    path_ = (dir_ / "sub" / "topology.json").string();  // the folder is made on the first write
    machine_ = test::load_fixture("dgx_h100");
    machine_.link(0, 1).performance_rank = 3;  // a probe's fact the fixture reader does not keep
    here_ = {{"NVIDIA H100|0000:18:00.0|85000000000", "NVIDIA H100|0000:2a:00.0|85000000000"}, 12080, "0-63", "0"};
  }
  void TearDown() override { fs::remove_all(dir_); }

  /// A probe that counts its calls and returns `machine_`.
  Topology get(const HardwareKey& key) {
    return cached_topology(path_, key, [&] {
      ++probes_;
      return machine_;
    });
  }

  fs::path dir_;
  std::string path_;
  Topology machine_;
  HardwareKey here_;
  int probes_ = 0;
};

TEST_F(TopologyCache, ProbesOnceThenReadsTheSameTopologyBack) {
  const Topology first = get(here_);
  EXPECT_EQ(probes_, 1);
  ASSERT_TRUE(fs::exists(path_));
  const Topology second = get(here_);
  EXPECT_EQ(probes_, 1) << "the second engine probed again";
  EXPECT_EQ(topology_to_json(second), topology_to_json(machine_));
  EXPECT_EQ(topology_to_json(first), topology_to_json(machine_));
  EXPECT_EQ(second.link(0, 1).performance_rank, 3);
}

TEST_F(TopologyCache, OtherHardwareIsProbedAgainAndRecorded) {
  get(here_);
  HardwareKey moved = here_;
  moved.gpus.pop_back();  // a GPU gone
  get(moved);
  EXPECT_EQ(probes_, 2);
  get(moved);
  EXPECT_EQ(probes_, 2) << "the new hardware's topology was not recorded";
  for (auto change : {+[](HardwareKey& k) { k.driver_version += 10; }, +[](HardwareKey& k) { k.cpus_online = "0-31"; },
                      +[](HardwareKey& k) { k.numa_nodes = "0-1"; }}) {
    HardwareKey other = here_;
    change(other);
    const int before = probes_;
    get(other);
    EXPECT_EQ(probes_, before + 1);
  }
}

TEST_F(TopologyCache, ACorruptOrForeignFileIsOnlyAMiss) {
  fs::create_directories(fs::path(path_).parent_path());
  for (const char* text : {"{ not json", "{\"version\": 99}", "[1, 2, 3]", "", "{\"version\": 1, \"hardware\": 7}"}) {
    std::ofstream(path_, std::ios::trunc) << text;
    const int before = probes_;
    Topology t;
    ASSERT_NO_THROW(t = get(here_)) << text;
    EXPECT_EQ(probes_, before + 1) << text;
    EXPECT_EQ(topology_to_json(t), topology_to_json(machine_));
  }
  get(here_);  // the last miss rewrote it
  EXPECT_EQ(probes_, 5);
}

TEST_F(TopologyCache, AnUnwritablePlaceIsSkipped) {
  fs::create_directories(dir_ / "file");
  path_ = (dir_ / "file").string();  // a directory where the file should be: nothing can be written there
  Topology t;
  ASSERT_NO_THROW(t = get(here_));
  ASSERT_NO_THROW(t = get(here_));
  EXPECT_EQ(probes_, 2);
  EXPECT_EQ(topology_to_json(t), topology_to_json(machine_));
  for (const auto& e : fs::directory_iterator(dir_)) EXPECT_EQ(e.path().filename(), "file") << "left " << e.path();
}

TEST(TopologyCachePath, LivesBesideTheTuningFile) {
  EXPECT_EQ(fs::path(default_topology_cache_path()).parent_path(), fs::path(default_tuning_path()).parent_path());
  EXPECT_EQ(fs::path(default_topology_cache_path()).filename(), "topology.json");
}

}  // namespace
}  // namespace mgjoin::topology
