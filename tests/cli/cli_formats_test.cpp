// `mgjoin join --format` and `--r`/`--s` whatever the build (Parquet itself: tests/cli/parquet_compare.py,
// against DuckDB, where MGJOIN_PARQUET is on).
#include "cli/cli_test_util.hpp"

#include <string>
#include <utility>

namespace mgjoin::test {
namespace {

using CliFormats = TwoTablesCliTest;

TEST_F(CliFormats, AnUnknownFormatIsRefusedNamingTheChoices) {
  const CliResult r = mgjoin(join_ab("--out-dir out --format xml"));
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("--format xml: expected parquet, arrow or npy"), std::string::npos) << r.err;
  EXPECT_TRUE(entries("out").empty());
}

TEST_F(CliFormats, NpyTablesGiveNpyOutputThroughTheTableOptions) {
  const CliResult r = mgjoin("join --r a --s b --on k --gpus 0 -q --out-dir out");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(read_values<std::int32_t>(dir() / "out/key.npy"), (std::vector<std::int32_t>{2, 2, 2, 2}));
}

TEST_F(CliFormats, ADirectoryHoldingAParquetOutputHoldsATable) {
  std::filesystem::create_directories(dir() / "out");
  write_file("out/part-0.parquet", "PAR1");
  const CliResult r = mgjoin(join_ab("-q --out-dir out"));
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("already holds a table (part-0.parquet)"), std::string::npos) << r.err;
  ASSERT_EQ(mgjoin(join_ab("-q --out-dir out --overwrite")).exit_code, 0);
  EXPECT_FALSE(std::filesystem::exists(dir() / "out/part-0.parquet"));
}

TEST_F(CliFormats, ATablePathOfAnotherKindIsRefused) {
  write_file("t.csv", "k\n1\n");
  const CliResult r = mgjoin("join --r t.csv --s b --on k --gpus 0 --count");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("--r t.csv: expected a Parquet file"), std::string::npos) << r.err;
  const CliResult both = mgjoin("join --r a --r-dir a --s b --on k --gpus 0 --count");
  EXPECT_EQ(both.exit_code, 2);
  EXPECT_NE(both.err.find("--r excludes --r-dir"), std::string::npos) << both.err;
}

// The CLI built without Arrow (MGJOIN_PARQUET=OFF, as scripts/pack-devbin.sh builds it): a Parquet or
// Arrow IPC table, or such an output, is refused in one line naming the option and why; .npy tables join.
TEST_F(CliFormats, WithoutParquetAParquetOrArrowPathIsRefusedInOneLine) {
  write_file("x.parquet", "PAR1");
  write_file("y.arrow", "ARROW1");
  const std::string why = ": this mgjoin was built without Parquet and Arrow IPC support (MGJOIN_PARQUET=";
  const std::pair<std::string, std::string> cases[] = {
      {"join --r x.parquet --s b --on k --gpus 0 --count", "--r x.parquet"},
      {"join --r a --s y.arrow --on k --gpus 0 --count", "--s y.arrow"},
      {join_ab("--out-dir out --format parquet"), "--format parquet"},
      {join_ab("--out-dir out --format arrow"), "--format arrow"},
  };
  for (const auto& [args, what] : cases) {
    const CliResult r = run(MGJOIN_CLI_WITHOUT_PARQUET_PATH, args);
    EXPECT_EQ(r.exit_code, 2) << args;
    ASSERT_EQ(r.err_lines().size(), 1u) << r.err;
    EXPECT_EQ(r.err_lines()[0].rfind("mgjoin: error: " + what + why, 0), 0u) << r.err;
  }
  EXPECT_TRUE(entries("out").empty());
  const CliResult npy = run(MGJOIN_CLI_WITHOUT_PARQUET_PATH, "join --r a --s b --on k --gpus 0 -q --out-dir out");
  ASSERT_EQ(npy.exit_code, 0) << npy.err;
  EXPECT_EQ(read_values<std::int32_t>(dir() / "out/key.npy"), (std::vector<std::int32_t>{2, 2, 2, 2}));
}

}  // namespace
}  // namespace mgjoin::test
