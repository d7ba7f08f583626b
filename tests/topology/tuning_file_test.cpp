// The tuning file: round trip, another machine's file, bad files, the default path; make_tuning.
#include "common/env.hpp"
#include "fixtures.hpp"

#include "topology/tune.hpp"
#include "topology/tuning_file.hpp"

#include <mgjoin/error.hpp>

#include <nlohmann/json.hpp>

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <unistd.h>

namespace mgjoin::topology {
namespace {

namespace fs = std::filesystem;
using test::load_fixture;
using test::ScopedEnv;
using Set = std::vector<int>;

// A fresh folder per test, removed afterwards.
class TempDir {
 public:
  TempDir() {
    std::string pattern = (fs::temp_directory_path() / "mgjoin_topo_XXXXXX").string();
    path_ = mkdtemp(pattern.data());
  }
  ~TempDir() { fs::remove_all(path_); }
  std::string file(const std::string& name) const { return (path_ / name).string(); }

 private:
  fs::path path_;
};

// Bandwidths of a 4-GPU AC922-like machine, every figure distinct so that a swap would show;
// lower GPUs slightly faster, so that the measured model still prefers {0,1} to {2,3}.
double sample_p2p(int i, int j) { return (i / 2 == j / 2 ? 70 : 30) - 0.1 * i - 0.01 * j; }

MeasuredBandwidths sample_bandwidths() {
  MeasuredBandwidths m;
  m.h2d_alone = {70.4, 70.3, 70.2, 70.1};
  m.d2h_alone = {69.4, 69.3, 69.2, 69.1};
  m.h2d_all = 120.5;
  m.d2h_all = 110.5;
  m.p2p_one_way.assign(16, 0);
  m.p2p_both_ways.assign(16, 0);
  for (int i = 0; i < 4; ++i)
    for (int j = 0; j < 4; ++j)
      if (i != j) {
        m.p2p_one_way[i * 4 + j] = sample_p2p(i, j);
        m.p2p_both_ways[i * 4 + j] = 2 * m.p2p_one_way[i * 4 + j] - 1;
      }
  m.all_to_all_set = {0, 1, 2, 3};
  m.all_to_all = 150.25;
  m.both_ways_all = 190.5;
  m.host_memcpy = 21.5;
  m.cpu_merge = 9.75;
  m.cpu_gather = 4.25;
  return m;
}

TuningFile sample_tuning(const Topology& t) {
  TuningFile f;
  f.created = "2026-11-21T15:00:00Z";
  f.machine = fingerprint_of(t);
  f.bandwidths = sample_bandwidths();
  f.best = {{1, {0}, "radix", std::nullopt},
            {2, {0, 1}, "merge", 0.84, "copart", 0.21},
            {4, {0, 1, 2, 3}, "radix", 1.1, "paper", std::nullopt}};
  return f;
}

void expect_same(const TuningFile& a, const TuningFile& b) {
  EXPECT_EQ(a.version, b.version);
  EXPECT_EQ(a.created, b.created);
  EXPECT_EQ(a.machine, b.machine);
  EXPECT_EQ(a.bandwidths.h2d_alone, b.bandwidths.h2d_alone);
  EXPECT_EQ(a.bandwidths.d2h_alone, b.bandwidths.d2h_alone);
  EXPECT_EQ(a.bandwidths.h2d_all, b.bandwidths.h2d_all);
  EXPECT_EQ(a.bandwidths.d2h_all, b.bandwidths.d2h_all);
  EXPECT_EQ(a.bandwidths.p2p_one_way, b.bandwidths.p2p_one_way);
  EXPECT_EQ(a.bandwidths.p2p_both_ways, b.bandwidths.p2p_both_ways);
  EXPECT_EQ(a.bandwidths.all_to_all_set, b.bandwidths.all_to_all_set);
  EXPECT_EQ(a.bandwidths.all_to_all, b.bandwidths.all_to_all);
  EXPECT_EQ(a.bandwidths.both_ways_all, b.bandwidths.both_ways_all);
  EXPECT_EQ(a.bandwidths.host_memcpy, b.bandwidths.host_memcpy);
  EXPECT_EQ(a.bandwidths.cpu_merge, b.bandwidths.cpu_merge);
  EXPECT_EQ(a.bandwidths.cpu_gather, b.bandwidths.cpu_gather);
  ASSERT_EQ(a.best.size(), b.best.size());
  for (std::size_t i = 0; i < a.best.size(); ++i) {
    EXPECT_EQ(a.best[i].g, b.best[i].g);
    EXPECT_EQ(a.best[i].gpus, b.best[i].gpus);
    EXPECT_EQ(a.best[i].strategy, b.best[i].strategy);
    EXPECT_EQ(a.best[i].seconds, b.best[i].seconds);
    EXPECT_EQ(a.best[i].flow, b.best[i].flow);
    EXPECT_EQ(a.best[i].copart_seconds, b.best[i].copart_seconds);
  }
}

TEST(TuningFile, RoundTripsThroughAFile) {
  const Topology t = load_fixture("ac922");
  const TuningFile f = sample_tuning(t);
  TempDir dir;
  const std::string path = dir.file("sub/dir/tuning.json");  // folders are created
  write_tuning_file(f, path);
  const auto back = read_tuning_file(path, t);
  ASSERT_TRUE(back.has_value());
  expect_same(f, *back);
  EXPECT_EQ(back->best_for(2)->strategy, "merge");
  EXPECT_EQ(back->best_for(4)->flow, "paper");
  EXPECT_EQ(back->best_for(3), nullptr);
}

TEST(TuningFile, JsonFollowsTheDocumentedSchema) {
  const auto j = tuning_to_json(sample_tuning(load_fixture("ac922")));
  EXPECT_EQ(j.at("version"), 1);
  EXPECT_EQ(j.at("machine").at("gpus").at(2).at("pci_bus_id"), "0035:03:00.0");
  EXPECT_DOUBLE_EQ(j.at("bandwidth_gbps").at("p2p_one_way").at(1).at(0).get<double>(), sample_p2p(1, 0));  // row = source
  EXPECT_EQ(j.at("bandwidth_gbps").at("all_to_all").at("gbps"), 150.25);
  EXPECT_EQ(j.at("best").at(1).at("gpus"), (Set{0, 1}));
  EXPECT_FALSE(j.at("best").at(0).contains("seconds"));  // transfers only: no timed join
}

TEST(TuningFile, FilesWithoutTheCostModelsRatesReadAsUnmeasured) {
  auto j = tuning_to_json(sample_tuning(load_fixture("ac922")));
  EXPECT_EQ(j.at("bandwidth_gbps").at("cpu_merge"), 9.75);
  EXPECT_EQ(j.at("bandwidth_gbps").at("cpu_gather"), 4.25);
  for (const char* key : {"both_ways_all", "host_memcpy", "cpu_merge", "cpu_gather"}) j.at("bandwidth_gbps").erase(key);
  const TuningFile back = tuning_from_json(j);
  EXPECT_EQ(back.bandwidths.both_ways_all, 0);
  EXPECT_EQ(back.bandwidths.host_memcpy, 0);
  EXPECT_EQ(back.bandwidths.cpu_merge, 0);
  EXPECT_EQ(back.bandwidths.cpu_gather, 0);
  EXPECT_EQ(back.bandwidths.h2d_all, 120.5);
}

TEST(TuningFile, AnotherMachinesFileIsIgnored) {
  const Topology ac922 = load_fixture("ac922");
  TempDir dir;
  const std::string path = dir.file("tuning.json");
  write_tuning_file(sample_tuning(ac922), path);
  EXPECT_FALSE(read_tuning_file(path, load_fixture("dgx_h100")).has_value());
  Topology moved = ac922;  // same GPUs, other slots
  moved.gpus[3].pci_bus_id = "0035:05:00.0";
  EXPECT_FALSE(read_tuning_file(path, moved).has_value());
  Topology renamed = ac922;
  renamed.gpus[0].name = "Tesla V100-SXM2-16GB";
  EXPECT_FALSE(read_tuning_file(path, renamed).has_value());
}

TEST(TuningFile, MissingFileIsNotAnError) {
  EXPECT_FALSE(read_tuning_file("/nonexistent/mgjoin/tuning.json", load_fixture("ac922")).has_value());
}

TEST(TuningFile, BrokenFilesNameThePath) {
  const Topology t = load_fixture("ac922");
  TempDir dir;
  const std::string path = dir.file("tuning.json");
  auto expect_input_error = [&](const std::string& text) {
    std::ofstream(path, std::ios::trunc) << text;
    try {
      read_tuning_file(path, t);
      ADD_FAILURE() << "expected InputError for: " << text;
    } catch (const InputError& e) {
      EXPECT_NE(std::string(e.what()).find(path), std::string::npos) << e.what();
    }
  };
  expect_input_error("{ not json");
  expect_input_error(R"({"version": 1})");
  auto j = tuning_to_json(sample_tuning(t));
  j["version"] = 7;
  expect_input_error(j.dump());
  j = tuning_to_json(sample_tuning(t));
  j["best"][1]["strategy"] = "bogo";
  expect_input_error(j.dump());
  j = tuning_to_json(sample_tuning(t));
  j["best"][1]["flow"] = "hash";
  expect_input_error(j.dump());
  j = tuning_to_json(sample_tuning(t));
  j["best"][1]["gpus"] = Set{0, 1, 2};
  expect_input_error(j.dump());
}

TEST(TuningFile, DefaultPathRespectsXdgCacheHome) {
  {
    ScopedEnv xdg("XDG_CACHE_HOME", "/tmp/xdg-cache");
    EXPECT_EQ(default_tuning_path(), "/tmp/xdg-cache/mgjoin/tuning.json");
  }
  ScopedEnv xdg("XDG_CACHE_HOME", nullptr);
  ScopedEnv home("HOME", "/home/someone");
  EXPECT_EQ(default_tuning_path(), "/home/someone/.cache/mgjoin/tuning.json");
}

TEST(MakeTuning, WithoutTimedJoinsChoosesByMeasuredBandwidths) {
  const Topology t = load_fixture("ac922");
  MeasuredBandwidths m = sample_bandwidths();
  const TuningFile f = make_tuning(t, m);
  EXPECT_EQ(f.machine, fingerprint_of(t));
  ASSERT_EQ(f.best.size(), 4u);
  EXPECT_EQ(f.best_for(2)->gpus, (Set{0, 1}));
  EXPECT_EQ(f.best_for(2)->strategy, "radix");
  EXPECT_FALSE(f.best_for(2)->seconds.has_value());
  // Measured: NVLink between 0 and 1 is degraded to 5 GB/s; the other socket's pair wins.
  m.p2p_one_way[0 * 4 + 1] = m.p2p_one_way[1 * 4 + 0] = 5;
  EXPECT_EQ(make_tuning(t, m).best_for(2)->gpus, (Set{2, 3}));
}

TEST(MakeTuning, TimedJoinsPickTheFastestSetAndStrategy) {
  const Topology t = load_fixture("ac922");
  int calls = 0;
  TuneOptions o;
  o.candidates_per_g = 2;
  o.time_join = [&](const Set& set, const std::string& strategy) {
    ++calls;
    if (set == Set{2, 3} && strategy == "merge") return 0.5;  // against the model's first choice
    return 1.0 + static_cast<double>(set.size());
  };
  const TuningFile f = make_tuning(t, sample_bandwidths(), o);
  EXPECT_EQ(f.best_for(2)->gpus, (Set{2, 3}));
  EXPECT_EQ(f.best_for(2)->strategy, "merge");
  EXPECT_EQ(f.best_for(2)->seconds, 0.5);
  EXPECT_EQ(f.best_for(4)->gpus, (Set{0, 1, 2, 3}));
  EXPECT_EQ(f.best_for(4)->strategy, "radix");  // ties keep the first strategy tried
  // g=1: 2 candidates, g=2: 2, g=3: 2, g=4: 1 (only one set) -> 7 sets x 2 strategies.
  EXPECT_EQ(calls, 14);
}

TEST(MakeTuning, ADegradedLinkKeepsItsOwnFigure) {
  const Topology t = load_fixture("ac922");
  MeasuredBandwidths b = sample_bandwidths();
  b.p2p_one_way[2 * 4 + 3] = 40;  // far below the other NVLink pairs
  b.h2d_alone[1] = 20;
  const Topology m = with_measured_bandwidths(t, b);
  EXPECT_DOUBLE_EQ(m.link(2, 3).gbps, 40);
  EXPECT_DOUBLE_EQ(m.gpus[1].host_link_gbps, 20);
  // The rest of the class (69.99, 69.90, 69.68 and the 40) has median (69.68 + 69.90) / 2.
  EXPECT_DOUBLE_EQ(m.link(3, 2).gbps, (69.68 + 69.90) / 2);
  EXPECT_DOUBLE_EQ(m.gpus[0].host_link_gbps, (69.1 + 69.2) / 2);
}

TEST(MakeTuning, MeasuredFiguresReplaceTheModelled) {
  const Topology t = load_fixture("ac922");
  const Topology m = with_measured_bandwidths(t, sample_bandwidths());
  // Host links: slower of H2D and D2H = 69.4, 69.3, 69.2, 69.1, all within 10% of their median.
  for (int i = 0; i < 4; ++i) EXPECT_DOUBLE_EQ(m.gpus[i].host_link_gbps, 69.25);
  // NVLink pairs measured 69.99, 69.90, 69.77, 69.68: the median of the class.
  EXPECT_DOUBLE_EQ(m.link(1, 0).gbps, (69.90 + 69.77) / 2);
  // Cross-socket pairs measured 29.69 ... 29.98: their own class and median.
  EXPECT_DOUBLE_EQ(m.link(0, 2).gbps, (29.87 + 29.80) / 2);
  EXPECT_EQ(m.link(0, 2).kind, LinkKind::CrossSocket);  // kinds stay as probed
}

}  // namespace
}  // namespace mgjoin::topology
