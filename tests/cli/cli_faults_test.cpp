// Faults seen from the command line: Ctrl-C during a join or just before the output is committed, a
// file-size limit that makes output writes fail as a full disk does, and a host memory cap. Each ends
// with one line and a non-zero exit; no file that looks complete is left, and the table an earlier run
// left in the output directory (which --overwrite would replace) is untouched.
#include <mgjoin/io.hpp>

#include "cli_test_util.hpp"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

namespace mgjoin::test {
namespace {

class CliFaults : public CliTest {
 protected:
  void SetUp() override {
    CliTest::SetUp();
    ASSERT_EQ(mgjoin("generate --workload B --scale 0.0002 --out-dir b").exit_code, 0);
    // An earlier run's table in the output directory, which --overwrite replaces only when a run succeeds:
    // one file the new output replaces, one it does not write (removed with the old table).
    std::filesystem::create_directory(dir() / "out");
    write_file("out/key.npy", "the earlier key");
    write_file("out/r.old.npy", "the earlier column");
  }

  std::string content_of(const std::string& name) const {
    std::ifstream in(dir() / name);
    return {(std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>()};
  }

  void expect_only_the_earlier_table() {
    EXPECT_EQ(entries("out"), (std::vector<std::string>{"key.npy", "r.old.npy"}));
    EXPECT_EQ(content_of("out/key.npy"), "the earlier key");
    EXPECT_EQ(content_of("out/r.old.npy"), "the earlier column");
  }

  CliResult join_into_out(const std::string& env) {
    return mgjoin_with_env(env, "join --r-dir b --s-dir b --gpus 0 --out-dir out --overwrite");
  }

  /// `mgjoin <args>` with `env` (e.g. "A=1 B=2") set.
  CliResult mgjoin_with_env(const std::string& env, const std::string& args) const {
    return mgjoin(args, "env " + env + " ");
  }

  void write_column_file(const std::string& name, const std::vector<std::uint64_t>& values) const {
    write_column(dir() / name, ColumnView{values.data(), static_cast<std::int64_t>(values.size()), DType::UInt64});
  }
};

TEST_F(CliFaults, CtrlCDuringTheJoinStopsItCleanly) {
  for (const char* phase : {"sort", "join", "materialize"}) {
    const CliResult r = join_into_out(std::string("MGJOIN_TEST_SIGINT_AT=") + phase);
    EXPECT_EQ(r.exit_code, 130) << phase << ": " << r.err;
    const auto lines = r.err_lines();
    ASSERT_FALSE(lines.empty()) << phase;
    EXPECT_NE(lines.back().find("mgjoin: interrupted: stopped cleanly, no output was written"), std::string::npos)
        << phase << ": " << r.err;
    expect_only_the_earlier_table();
  }
}

TEST_F(CliFaults, CtrlCAfterTheJoinRemovesTheStagedFiles) {
  // The signal arrives as the join ends: the output is staged, then dropped instead of committed.
  const CliResult r = join_into_out("MGJOIN_TEST_SIGINT_AT=materialize:end");
  EXPECT_EQ(r.exit_code, 130) << r.err;
  expect_only_the_earlier_table();
}

TEST_F(CliFaults, WithoutASignalTheSameJoinWritesItsOutput) {
  // The control for the tests above: the hook's variable set to a phase that never comes. The new table
  // replaces the earlier one whole: its key.npy, and no r.old.npy left beside it.
  const CliResult r = join_into_out("MGJOIN_TEST_SIGINT_AT=never");
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(entries("out"), (std::vector<std::string>{"key.npy", "r.payload.npy", "s.payload.npy"}));
  EXPECT_NE(content_of("out/key.npy"), "the earlier key");
}

TEST_F(CliFaults, AFullDiskIsOneLineAndLeavesNothingBehind) {
  // A file-size limit of 512 KiB: the 3.2 MB key column cannot be written, as on a full disk.
  const CliResult r = mgjoin("join --r-dir b --s-dir b --gpus 0 --out-dir out --overwrite", "ulimit -f 1024; ");
  EXPECT_NE(r.exit_code, 0);
  // The join ran (its executor line) and the write failed: one error line, the last.
  const auto lines = r.err_lines();
  ASSERT_FALSE(lines.empty());
  EXPECT_EQ(std::count_if(lines.begin(), lines.end(), [](const std::string& l) { return l.starts_with("mgjoin: error:"); }), 1)
      << r.err;
  EXPECT_NE(lines.back().find("out/key.npy: write failed: File too large"), std::string::npos) << r.err;
  expect_only_the_earlier_table();
}

TEST_F(CliFaults, AHostMemoryCapTooSmallForTheOutputIsOneLine) {
  // Every row of R and S has one key: 2^12 x 2^13 = 2^25 output rows, 768 MiB materialized.
  std::vector<std::uint64_t> keys(1 << 13, 42);
  write_column_file("r.npy", std::vector<std::uint64_t>(keys.begin(), keys.begin() + (1 << 12)));
  write_column_file("s.npy", keys);
  const CliResult r =
      mgjoin_with_env("MGJOIN_HOST_MEMORY_LIMIT=1M", "join --r-key r.npy --s-key s.npy --gpus 0 --out-dir out --overwrite");
  EXPECT_NE(r.exit_code, 0);
  const auto lines = r.err_lines();
  ASSERT_EQ(lines.size(), 1u) << r.err;
  EXPECT_NE(lines[0].find("host memory:"), std::string::npos) << lines[0];
  EXPECT_NE(lines[0].find("MGJOIN_HOST_MEMORY_LIMIT"), std::string::npos) << lines[0];
  expect_only_the_earlier_table();
  // A count of the same join needs no output memory.
  const CliResult count = mgjoin_with_env("MGJOIN_HOST_MEMORY_LIMIT=1M", "join --r-key r.npy --s-key s.npy --gpus 0 --count");
  EXPECT_EQ(count.exit_code, 0) << count.err;
  EXPECT_EQ(count.out, std::to_string(1ull << 25) + "\n");
}

TEST_F(CliFaults, InputsTheHostCannotHoldAreRefusedBeforeAnyIsRead) {
  // Two columns of 5 * 10^6 uint64 keys, 40 MB each: each under the size from which one allocation is
  // checked (64 MiB), together over it. One at a time, both would be read and the join would go on.
  const std::vector<std::uint64_t> keys(5'000'000, 7);
  write_column_file("r.npy", keys);
  write_column_file("s.npy", keys);
  const CliResult r = mgjoin_with_env("MGJOIN_HOST_MEMORY_LIMIT=1M", "join --r-key r.npy --s-key s.npy --gpus 0 --count");
  EXPECT_NE(r.exit_code, 0);
  const auto lines = r.err_lines();
  ASSERT_EQ(lines.size(), 1u) << r.err;
  EXPECT_NE(lines[0].find("host memory: the input columns (R 38.1 MiB, S 38.1 MiB"), std::string::npos) << lines[0];
  EXPECT_NE(lines[0].find("MGJOIN_HOST_MEMORY_LIMIT"), std::string::npos) << lines[0];
  EXPECT_TRUE(r.out.empty()) << r.out;
}

TEST_F(CliFaults, TheSummaryReportsTheInputsBytesAndThePeakResidentMemory) {
  const std::vector<std::uint64_t> keys(5'000'000, 7);
  write_column_file("r.npy", keys);
  write_column_file("s.npy", std::vector<std::uint64_t>(keys.begin(), keys.begin() + 1000));
  const CliResult r = mgjoin("join --r-key r.npy --s-key s.npy --gpus 0 --count --json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j.at("input_bytes").get<std::uint64_t>(), 5'001'000ull * 8);
  // Both key columns were read whole: the process held at least their bytes at once.
  EXPECT_GE(j.at("peak_rss_bytes").get<std::uint64_t>(), 5'001'000ull * 8);
  EXPECT_EQ(j.at("count").get<std::uint64_t>(), 5'000'000ull * 1000);
}

TEST_F(CliFaults, ABadHostMemoryCapIsOneLine) {
  const CliResult r = mgjoin_with_env("MGJOIN_HOST_MEMORY_LIMIT=lots", "join --r-dir b --s-dir b --gpus 0 --count");
  EXPECT_NE(r.exit_code, 0);
  const auto lines = r.err_lines();
  ASSERT_EQ(lines.size(), 1u) << r.err;
  EXPECT_NE(lines[0].find("MGJOIN_HOST_MEMORY_LIMIT 'lots'"), std::string::npos) << lines[0];
}

TEST_F(CliFaults, BenchRegeneratesItsInputsWhenCopiesDoNotFit) {
  // No room for pristine copies: the runs regenerate their inputs, and every run still finds them
  // unsorted (the counts equal the CPU path's on fresh data: --verify).
  const CliResult r = mgjoin_with_env("MGJOIN_HOST_MEMORY_LIMIT=1M",
                                      "bench --workload B --scale 0.0002 --gpus 0 --repeat 2 --warmup 1 --verify");
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("runs regenerate their inputs"), std::string::npos) << r.err;
  EXPECT_NE(r.out.find("(equal to the CPU path)"), std::string::npos) << r.out;
}

}  // namespace
}  // namespace mgjoin::test
