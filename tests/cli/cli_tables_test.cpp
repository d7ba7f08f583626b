// `mgjoin join` over tables: directories of columns, composite keys, join kinds, output forms, and the
// option combinations around them (the library's own results are checked in tests/table).
#include <mgjoin/io.hpp>

#include "cli_test_util.hpp"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdint>
#include <string>
#include <tuple>
#include <vector>

namespace mgjoin::test {
namespace {

using CliTables = TwoTablesCliTest;

TEST_F(CliTables, ChosenColumnsWorkWithMapsAndCountsToo) {
  const CliResult maps = mgjoin(join_ab("--r-columns p --how left --output maps --out-dir out"));
  ASSERT_EQ(maps.exit_code, 0) << maps.err;
  EXPECT_EQ(read_values<std::int64_t>(dir() / "out/r.row.npy").size(), 6u);
  const CliResult count = mgjoin(join_ab("--r-columns p --s-columns w --how full --count"));
  ASSERT_EQ(count.exit_code, 0) << count.err;
  EXPECT_EQ(count.out, "7\n");
}

TEST_F(CliTables, SemiJoinsNeedNoRightColumns) {
  // A right column that cannot be read must not matter: a semi join outputs none.
  write_file("b/broken.npy", "not a numpy file");
  const CliResult r = mgjoin("join --r-dir a --s-dir b --r-key k --s-key k --s-columns w --gpus 0 --how semi --out-dir out");
  ASSERT_NE(r.exit_code, 0) << "the broken file is still inspected (an input error is an input error)";
  std::filesystem::remove(dir() / "b/broken.npy");
  const CliResult ok = mgjoin(join_ab("--how semi --out-dir out"));
  ASSERT_EQ(ok.exit_code, 0) << ok.err;
  EXPECT_EQ(read_values<std::int16_t>(dir() / "out/r.p.npy"), (std::vector<std::int16_t>{20, 21}));
  auto names = entries("out");
  std::sort(names.begin(), names.end());
  EXPECT_EQ(names, (std::vector<std::string>{"key.npy", "r.p.npy"}));
}

TEST_F(CliTables, GeneratedLayoutReadsAsKeyAndPayloadWithOrWithoutRKey) {
  ASSERT_EQ(mgjoin("generate --workload B --scale 0.00001 --out-dir gen").exit_code, 0);
  const CliResult plain = mgjoin("join --r-dir gen --s-dir gen --gpus 0 --count");
  const CliResult named = mgjoin("join --r-dir gen --s-dir gen --r-key key --s-key key --gpus 0 --count");
  ASSERT_EQ(plain.exit_code, 0) << plain.err;
  ASSERT_EQ(named.exit_code, 0) << named.err;
  EXPECT_EQ(plain.out, named.out);
  EXPECT_EQ(plain.out, "10000\n");
}

TEST_F(CliTables, ErrorsNameTheFlagsNotTheLibraryFields) {
  write_values<std::int32_t>(dir() / "a/k2.npy", DType::Int32, {5, 6, 7, 8});
  for (const auto& [args, needle] : std::vector<std::pair<std::string, std::string>>{
           {"join --r-dir a --s-dir b --r-key k,k --s-key k,k --gpus 0 --count", "--r-key names 'k' twice"},
           {join_ab("--r-columns p,p --out-dir out"), "--r-columns names 'p' twice"},
           {"join --r-dir a --s-dir b --r-key k --s-key k,k --gpus 0 --count", "--s-key names 'k' twice"},
           {"join --r-dir a --s-dir b --r-key k,p --s-key k --gpus 0 --count", "R's key has 2 columns but S's key has 1"},
           {"join --r-dir a --s-dir b --r-key k,k2 --s-key k,w --gpus 0 --count",
            "key columns 'k2' (R, int32) and 'w' (S, float64) cannot be compared"},
           {"join --r-dir a --s-dir b --r-key a/k.npy --s-key k --gpus 0 --count",
            "--r-key a/k.npy: with --r-dir, name key columns (file stems, such as key), not files"},
           {"join --r-dir a --s-dir b --r-key kk --s-key k --gpus 0 --count", "a holds no kk.npy (its columns: k, k2, p)"},
           {join_ab("--r-columns q --count"), "--r-columns q: no such column (a holds no q.npy; its columns: k, k2, p)"},
           {join_ab("--output count --out-dir out"), "--output count and --out-dir exclude each other"}}) {
    const CliResult r = mgjoin(args);
    EXPECT_NE(r.exit_code, 0) << args;
    const auto lines = r.err_lines();
    ASSERT_EQ(lines.size(), 1u) << args << "\n" << r.err;
    EXPECT_NE(lines[0].find(needle), std::string::npos) << lines[0];
    EXPECT_EQ(lines[0].find("TableJoinOptions::"), std::string::npos) << lines[0];
  }
}

/// A key over 8 bytes (int32 + int64 + int16 against int64 + int64 + int16: 18 bytes compared) joins by hash
/// and verify; its columns come back as key.<name>.npy of the types that hold both sides.
TEST_F(CliTables, KeysOverEightBytesJoinAndComeBackWithTheirTypes) {
  write_values<std::int64_t>(dir() / "a/big.npy", DType::Int64, {-1, 5, 5, std::int64_t{1} << 40});
  write_values<std::int64_t>(dir() / "b/k64.npy", DType::Int64, {2, 2, 3});
  write_values<std::int64_t>(dir() / "b/big.npy", DType::Int64, {5, 6, std::int64_t{1} << 40});
  write_values<std::int16_t>(dir() / "b/p.npy", DType::Int16, {20, 21, 30});
  const CliResult full = mgjoin("join --r-dir a --s-dir b --r-key k,big,p --s-key k64,big,p --gpus 0 --how full "
                                "--out-dir out");
  ASSERT_EQ(full.exit_code, 0) << full.err;
  // R (k, big, p): (1,-1,10) (2,5,20) (2,5,21) (3,2^40,30); S (k64, big, p): (2,5,20) (2,6,21) (3,2^40,30).
  // Pairs: R1-S0, R3-S2; unmatched R0, R2; unmatched S1.
  EXPECT_EQ(read_values<std::int64_t>(dir() / "out/key.k.npy").size(), 5u);
  const auto k = read_values<std::int64_t>(dir() / "out/key.k.npy");
  const auto big = read_values<std::int64_t>(dir() / "out/key.big.npy");
  const auto p = read_values<std::int16_t>(dir() / "out/key.p.npy");
  std::vector<std::tuple<std::int64_t, std::int64_t, std::int16_t>> keys;
  for (std::size_t i = 0; i < k.size(); ++i) keys.emplace_back(k[i], big[i], p[i]);
  std::sort(keys.begin(), keys.end());
  const std::int64_t t40 = std::int64_t{1} << 40;
  EXPECT_EQ(keys, (std::vector<std::tuple<std::int64_t, std::int64_t, std::int16_t>>{
                      {1, -1, 10}, {2, 5, 20}, {2, 5, 21}, {2, 6, 21}, {3, t40, 30}}));
  for (const char* how : {"inner", "left", "right", "full", "semi", "anti"}) {
    const CliResult count = mgjoin("join --r-dir a --s-dir b --r-key k,big,p --s-key k64,big,p --gpus 0 --count --how " +
                                   std::string(how));
    ASSERT_EQ(count.exit_code, 0) << how << ": " << count.err;
    const std::string want = std::string(how) == "inner" || std::string(how) == "semi" ? "2\n"
                             : std::string(how) == "full"                              ? "5\n"
                             : std::string(how) == "right"                             ? "3\n"
                                                                                       : (std::string(how) == "left" ? "4\n" : "2\n");
    EXPECT_EQ(count.out, want) << how;
  }
}

TEST_F(CliTables, AnOutputDirectoryHoldingATableIsReplacedOnlyWithOverwrite) {
  ASSERT_EQ(mgjoin(join_ab("--out-dir out")).exit_code, 0);
  write_values<std::int64_t>(dir() / "out/r.old.npy", DType::Int64, {1, 2, 3, 4, 5, 6, 7});  // an earlier run's
  write_file("out/notes.txt", "the user's notes");
  const auto key_before = read_values<std::int32_t>(dir() / "out/key.npy");
  const CliResult again = mgjoin(join_ab("--how left --out-dir out"));
  EXPECT_EQ(again.exit_code, 2);
  ASSERT_EQ(again.err_lines().size(), 1u) << again.err;
  EXPECT_NE(again.err.find("--out-dir out: already holds a table (key.npy, r.old.npy, r.p.npy, ...): pass --overwrite"),
            std::string::npos)
      << again.err;
  EXPECT_EQ(read_values<std::int32_t>(dir() / "out/key.npy"), key_before) << "a refused run touched the old table";
  const CliResult replaced = mgjoin(join_ab("--how left --out-dir out --overwrite"));
  ASSERT_EQ(replaced.exit_code, 0) << replaced.err;
  auto names = entries("out");
  std::sort(names.begin(), names.end());
  EXPECT_EQ(names, (std::vector<std::string>{"key.npy", "notes.txt", "r.p.npy", "s.valid.npy", "s.w.npy"}))
      << "the new table alone, and the user's other files";
  EXPECT_EQ(read_values<std::int32_t>(dir() / "out/key.npy").size(), 6u);
}

TEST_F(CliTables, TheOutputNeverGoesWhereItsInputsAre) {
  for (const std::string out : {"a", "b", "./a/"}) {
    const CliResult r = mgjoin(join_ab("--overwrite --out-dir " + out));
    EXPECT_EQ(r.exit_code, 2) << out;
    ASSERT_EQ(r.err_lines().size(), 1u) << r.err;
    EXPECT_NE(r.err.find("--out-dir " + out + ": holds this join's input"), std::string::npos) << r.err;
  }
  const CliResult files = mgjoin("join --r-key a/k.npy --s-key b/k.npy --gpus 0 --overwrite --out-dir b");
  EXPECT_EQ(files.exit_code, 2);
  EXPECT_NE(files.err.find("holds this join's input b/k.npy (--s-key)"), std::string::npos) << files.err;
  auto names = entries("a");
  std::sort(names.begin(), names.end());
  EXPECT_EQ(names, (std::vector<std::string>{"k.npy", "p.npy"}));

  // An input in a part folder of the output, reached through a link, or one part of a table in parts
  // that is itself the output's part: each would be replaced by --overwrite.
  const auto expect_refused = [&](const std::string& args, const std::string& input) {
    const CliResult r = mgjoin(args);
    EXPECT_EQ(r.exit_code, 2) << args << "\n" << r.err;
    EXPECT_NE(r.err.find("holds this join's input " + input), std::string::npos) << args << "\n" << r.err;
  };
  std::filesystem::create_directories(dir() / "t/part-0");
  std::filesystem::copy(dir() / "a/k.npy", dir() / "t/part-0/k.npy");
  write_file("t/manifest.json", "{}");
  expect_refused("join --r-dir t/part-0 --s-dir b --r-key k --s-key k --gpus 0 --overwrite --out-dir t", "t/part-0/k.npy");
  std::filesystem::create_directories(dir() / "linked");
  std::filesystem::create_symlink(dir() / "a/k.npy", dir() / "linked/k.npy");
  expect_refused("join --r-dir linked --s-dir b --r-key k --s-key k --gpus 0 --overwrite --out-dir a", "linked/k.npy");
  ASSERT_EQ(mgjoin("join --r-dir a --s-dir b --r-key k --s-key k --gpus 0 --out-dir whole").exit_code, 0);
  const std::string parts_dir = dir() / "parts";
  std::filesystem::create_directories(parts_dir + "/part-0");
  std::filesystem::create_directories(parts_dir + "/part-1");
  for (const char* f : {"key.npy", "r.p.npy", "s.w.npy"}) {
    std::filesystem::copy(dir() / "whole" / f, parts_dir + "/part-0/" + f);
    std::filesystem::copy(dir() / "whole" / f, parts_dir + "/part-1/" + f);
  }
  write_parts_manifest(parts_dir, PartsTable{{"key.npy", "r.p.npy", "s.w.npy"},
                                             {parts_dir + "/part-0", parts_dir + "/part-1"},
                                             {4, 4}});
  expect_refused("join --r-dir parts --s-dir b --s-key k --r-columns r.p --gpus 0 --overwrite --out-dir parts/part-1",
                 "parts/part-1/key.npy");
}

TEST_F(CliTables, ARunThatFailsBeforeWritingCreatesNoOutputDirectory) {
  const CliResult r = mgjoin(join_ab("--r-columns p,p --out-dir fresh/out"));
  EXPECT_NE(r.exit_code, 0);
  EXPECT_FALSE(std::filesystem::exists(dir() / "fresh")) << r.err;
}

TEST_F(CliTables, BenchReportsTheGatherFloorIntoNewAndIntoTouchedMemory) {
  const CliResult r = mgjoin("bench --workload B --scale 0.0002 --gpus 0 --columns 3 --output materialize --repeat 1 "
                             "--warmup 0 --json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto tables = nlohmann::json::parse(r.out).at("tables");
  EXPECT_EQ(tables.at("columns"), 3);
  EXPECT_GT(tables.at("gather_floor_seconds").get<double>(), 0);
  EXPECT_GT(tables.at("gather_into_touched_memory_seconds").get<double>(), 0);
  const CliResult text = mgjoin("bench --workload B --scale 0.0002 --gpus 0 --columns 3 --output materialize --repeat 1 "
                                "--warmup 0");
  ASSERT_EQ(text.exit_code, 0) << text.err;
  EXPECT_NE(text.out.find("one plain parallel gather into new columns"), std::string::npos) << text.out;
}

TEST_F(CliTables, AStrategyOnTheCpuPathIsSaidToHaveNoEffect) {
  const CliResult r = mgjoin(join_ab("--strategy copart --count"));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("--strategy copart chooses between the GPU flows: the CPU path has one"), std::string::npos) << r.err;
  EXPECT_EQ(mgjoin(join_ab("--count")).err.find("--strategy"), std::string::npos);
}

TEST_F(CliTables, GatherOnIsCheckedAndReported) {
  const CliResult bad = mgjoin(join_ab("--how left --gather-on disk --out-dir out"));
  EXPECT_NE(bad.exit_code, 0);
  EXPECT_NE(bad.err.find("--gather-on disk: expected auto, cpu or gpus"), std::string::npos) << bad.err;
  EXPECT_TRUE(entries("out").empty());
  const CliResult cpu = mgjoin(join_ab("--how left --gather-on gpus --out-dir out --json"));
  ASSERT_EQ(cpu.exit_code, 0) << cpu.err;
  EXPECT_EQ(nlohmann::json::parse(cpu.out).at("gathers"), "gathers: CPU (no GPU)");  // the CPU path gathers there
  // The pairs in key order, then the unmatched left rows in table order.
  EXPECT_EQ(read_values<std::int16_t>(dir() / "out/r.p.npy"), (std::vector<std::int16_t>{20, 20, 21, 21, 10, 30}));
}

TEST_F(CliTables, AColumnNamedValidCannotHideTheValidity) {
  write_values<std::uint8_t>(dir() / "a/valid.npy", DType::UInt8, {1, 1, 1, 1});
  const CliResult r = mgjoin(join_ab("--how full --out-dir out"));
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.err.find("column 'valid'"), std::string::npos) << r.err;
  EXPECT_TRUE(entries("out").empty());
}

}  // namespace
}  // namespace mgjoin::test
