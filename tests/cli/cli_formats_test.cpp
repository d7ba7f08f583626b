// `mgjoin join --format` and `--r`/`--s` whatever the build (Parquet itself: tests/cli/parquet_compare.py,
// against DuckDB, where MGJOIN_PARQUET is on).
#include "cli/cli_test_util.hpp"

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

}  // namespace
}  // namespace mgjoin::test
