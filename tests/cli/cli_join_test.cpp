// `mgjoin generate` + `mgjoin join` end to end through the built binary, on the CPU path.
#include <mgjoin/io.hpp>

#include "cli_test_util.hpp"
#include "common/seed.hpp"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <tuple>
#include <vector>

namespace mgjoin::test {
namespace {

template <class T>
std::vector<T> values(const HostColumn& c) {
  return {c.as<T>(), c.as<T>() + c.size()};
}

TEST_F(CliTest, GenerateThenCountGivesSizeOfSAtFullSelectivity) {
  const auto seed = announce_seed();
  ASSERT_EQ(mgjoin("generate --workload A --scale 0.0001 --seed " + std::to_string(seed) + " --out-dir gen").exit_code,
            0);
  auto names = entries("gen");
  std::sort(names.begin(), names.end());
  EXPECT_EQ(names, (std::vector<std::string>{"r_key.npy", "r_payload.npy", "s_key.npy", "s_payload.npy"}));
  const CliResult r = mgjoin("join --r-dir gen --s-dir gen --gpus 0 --count");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "100000\n");
  EXPECT_NE(r.err.find("executor: CPU"), std::string::npos) << r.err;
}

TEST_F(CliTest, NoMatchesAtSelectivityZero) {
  ASSERT_EQ(mgjoin("generate --workload B --scale 0.0001 --selectivity 0 --out-dir gen").exit_code, 0);
  const CliResult r = mgjoin("join --r-dir gen --s-dir gen --gpus 0 --count");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "0\n");
}

TEST_F(CliTest, MaterializedRowsPointBackAtTheirInputRows) {
  const auto seed = announce_seed();
  ASSERT_EQ(mgjoin("generate --workload B --scale 0.0001 --zipf 0.8 --seed " + std::to_string(seed) +
                   " --out-dir gen").exit_code, 0);
  const CliResult r = mgjoin("join --r-key gen/r_key.npy --r-payload gen/r_payload.npy --s-key gen/s_key.npy "
                             "--s-payload gen/s_payload.npy --gpus 0 --out-dir out");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto r_key = values<std::uint64_t>(read_column(path("gen/r_key.npy")));
  const auto s_key = values<std::uint64_t>(read_column(path("gen/s_key.npy")));
  const auto key = values<std::uint64_t>(read_column(path("out/key.npy")));
  const auto rp = values<std::uint64_t>(read_column(path("out/r.payload.npy")));
  auto sp = values<std::uint64_t>(read_column(path("out/s.payload.npy")));
  ASSERT_EQ(key.size(), s_key.size()) << "each S row matches exactly one R row";
  for (std::size_t i = 0; i < key.size(); ++i) {
    ASSERT_EQ(key[i], r_key[rp[i]]) << "row " << i;  // payloads are the generator's row indices
    ASSERT_EQ(key[i], s_key[sp[i]]) << "row " << i;
  }
  std::sort(sp.begin(), sp.end());
  for (std::size_t i = 0; i < sp.size(); ++i) ASSERT_EQ(sp[i], i) << "every S row appears once";
}

TEST_F(CliTest, KeyOnlyRelationsWriteOnlyTheFilesTheyHave) {
  ASSERT_EQ(mgjoin("generate --workload A --scale 0.00001 --out-dir gen").exit_code, 0);
  const CliResult r = mgjoin("join --r-key gen/r_key.npy --s-key gen/s_key.npy --s-payload gen/s_payload.npy "
                             "--gpus 0 --out-dir out");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto names = entries("out");
  std::sort(names.begin(), names.end());
  EXPECT_EQ(names, (std::vector<std::string>{"key.npy", "s.payload.npy"}));
  EXPECT_EQ(read_column(path("out/key.npy")).size(), 10'000);
}

TEST_F(CliTest, DirectoryWithPlainNamesAndRawFilesWithType) {
  // key.npy/payload.npy in --r-dir; raw .bin files for S with --type.
  const std::vector<std::int64_t> r_key{5, -2, 1, -2, INT64_MIN, INT64_MAX}, r_val{50, 20, 10, 21, 1, 2};
  const std::vector<std::int64_t> s_key{7, -2, 5, INT64_MIN, INT64_MAX, INT64_MAX};
  std::filesystem::create_directory(dir() / "r");
  write_column(path("r/key.npy"), ColumnView{r_key.data(), 6, DType::Int64});
  write_column(path("r/payload.npy"), ColumnView{r_val.data(), 6, DType::Int64});
  write_column(path("s_key.bin"), ColumnView{s_key.data(), 6, DType::Int64});
  const CliResult r = mgjoin("join --r-dir r --s-key s_key.bin --type int64 --gpus 0 --count");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "6\n");  // -2 twice, 5, MIN, MAX twice
}

TEST_F(CliTest, NullsEqualIsAcceptedForNpyTablesAndChangesNothing) {
  // .npy files hold no nulls: --nulls-equal leaves every kind's rows as they are (0 is a key like any).
  const std::vector<std::int64_t> r_key{5, 0, 1, 0, 9}, s_key{0, 5, 5, 7};
  std::filesystem::create_directory(dir() / "r");
  std::filesystem::create_directory(dir() / "s");
  write_column(path("r/key.npy"), ColumnView{r_key.data(), 5, DType::Int64});
  write_column(path("s/key.npy"), ColumnView{s_key.data(), 4, DType::Int64});
  const std::pair<const char*, const char*> kinds[] = {{"inner", "4\n"}, {"left", "6\n"}, {"full", "7\n"},
                                                       {"semi", "3\n"}, {"anti", "2\n"}};
  for (const auto& [how, want] : kinds)
    for (const char* flag : {"", " --nulls-equal"}) {
      const CliResult r = mgjoin(std::string("join --r r --s s --how ") + how + flag + " --gpus 0 --count");
      ASSERT_EQ(r.exit_code, 0) << how << flag << "\n" << r.err;
      EXPECT_EQ(r.out, want) << how << flag;
    }
}

TEST_F(CliTest, EmptyRelationJoinsToNothing) {
  ASSERT_EQ(mgjoin("generate --workload B --scale 0 --out-dir gen").exit_code, 0);
  CliResult r = mgjoin("join --r-dir gen --s-dir gen --gpus 0 --count");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "0\n");
  ASSERT_EQ(mgjoin("generate --workload B --scale 0.00001 --out-dir full").exit_code, 0);
  r = mgjoin("join --r-dir gen --s-dir full --gpus 0 --out-dir out");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(read_column(path("out/key.npy")).size(), 0);
}

// A small join with --gpus left out runs on the CPU without a CUDA call, and says why (join.hpp's
// choose_executor); MGJOIN_CPU_ROUTE_ROWS moves the bound, and a bad value is refused naming it.
TEST_F(CliTest, ASmallJoinRunsOnTheCpuAndSaysWhy) {
  ASSERT_EQ(mgjoin("generate --workload A --scale 0.00001 --out-dir gen").exit_code, 0);  // 1000 + 10000 rows
  CliResult r = mgjoin("join --r-dir gen --s-dir gen --count --json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j.at("count").get<std::uint64_t>(), 10'000u);
  EXPECT_NE(j.at("strategy_reason").get<std::string>().find("11000 rows join on the CPU before the GPUs would start"),
            std::string::npos) << r.out;
  r = mgjoin("join --r-dir gen --s-dir gen --count", "env MGJOIN_CPU_ROUTE_ROWS=10999 ");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.err.find("rows join on the CPU before"), std::string::npos) << r.err;  // over the bound
  r = mgjoin("join --r-dir gen --s-dir gen --count", "env MGJOIN_CPU_ROUTE_ROWS=lots ");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("MGJOIN_CPU_ROUTE_ROWS 'lots'"), std::string::npos) << r.err;
}

TEST_F(CliTest, JsonSummaryParses) {
  ASSERT_EQ(mgjoin("generate --workload A --scale 0.00001 --out-dir gen").exit_code, 0);
  const CliResult r = mgjoin("join --r-dir gen --s-dir gen --gpus 0 --out-dir out --json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j.at("count").get<std::uint64_t>(), 10'000u);
  EXPECT_GE(j.at("seconds").get<double>(), 0.0);
  EXPECT_NE(j.at("executor").get<std::string>().find("CPU"), std::string::npos);
  ASSERT_TRUE(j.at("phases").is_array());
  ASSERT_FALSE(j.at("phases").empty());
  for (const auto& p : j.at("phases")) {
    EXPECT_FALSE(p.at("name").get<std::string>().empty());
    EXPECT_GE(p.at("seconds").get<double>(), 0.0);
    EXPECT_TRUE(p.contains("bytes_pcie"));
  }
  EXPECT_EQ(j.at("output_files").size(), 3u);
  const CliResult c = mgjoin("join --r-dir gen --s-dir gen --gpus 0 --count --json");
  ASSERT_EQ(c.exit_code, 0) << c.err;
  EXPECT_EQ(nlohmann::json::parse(c.out).at("count").get<std::uint64_t>(), 10'000u);
}

// An inner .npy join's columns go to their files as the join makes them (NpyResultFiles); a left join's
// are gathered after it and written whole. Both outputs are the same rows, and nothing hidden is left.
TEST_F(CliTest, AnInnerJoinStreamsItsNpyOutputAndALeftJoinWritesItAfter) {
  const std::vector<std::int64_t> r_key{5, -2, 1, -2, INT64_MIN}, r_val{50, 20, 10, 21, 1};
  const std::vector<std::int64_t> s_key{-2, 5, INT64_MIN, 8}, s_val{7, 8, 9, 10};
  for (const char* side : {"r", "s"}) std::filesystem::create_directory(dir() / side);
  write_column(path("r/key.npy"), ColumnView{r_key.data(), 5, DType::Int64});
  write_column(path("r/v.npy"), ColumnView{r_val.data(), 5, DType::Int64});
  write_column(path("s/key.npy"), ColumnView{s_key.data(), 4, DType::Int64});
  write_column(path("s/w.npy"), ColumnView{s_val.data(), 4, DType::Int64});
  for (const auto& [how, streamed, rows] : {std::tuple{"inner", true, 4}, std::tuple{"left", false, 5}}) {
    SCOPED_TRACE(how);
    const CliResult r = mgjoin(std::string("join --r r --s s --how ") + how + " --gpus 0 --out-dir out --overwrite --json");
    ASSERT_EQ(r.exit_code, 0) << r.err;
    const auto j = nlohmann::json::parse(r.out);
    EXPECT_EQ(j.at("output_streamed").get<bool>(), streamed);
    EXPECT_EQ(j.at("count").get<int>(), rows);
    auto names = entries("out");
    std::sort(names.begin(), names.end());
    const std::vector<std::string> inner{"key.npy", "r.v.npy", "s.w.npy"}, left{"key.npy", "r.v.npy", "s.valid.npy", "s.w.npy"};
    EXPECT_EQ(names, streamed ? inner : left);
    const auto key = values<std::int64_t>(read_column(path("out/key.npy")));
    const auto v = values<std::int64_t>(read_column(path("out/r.v.npy")));
    const auto w = values<std::int64_t>(read_column(path("out/s.w.npy")));
    ASSERT_EQ(key.size(), static_cast<std::size_t>(rows));
    std::vector<std::tuple<std::int64_t, std::int64_t, std::int64_t>> got;
    for (std::size_t i = 0; i < key.size(); ++i) got.emplace_back(key[i], v[i], w[i]);
    std::sort(got.begin(), got.end());
    // By hand: -2 (twice on R) with -2, 5 with 5, MIN with MIN; a left join adds 1's row, S's columns zero.
    std::vector<std::tuple<std::int64_t, std::int64_t, std::int64_t>> want{
        {INT64_MIN, 1, 9}, {-2, 20, 7}, {-2, 21, 7}, {5, 50, 8}};
    if (!streamed) want.insert(want.begin() + 3, {1, 10, 0});
    EXPECT_EQ(got, want);
  }
  // MGJOIN_STREAM_OUTPUT=0 writes an inner join's output after it too; another value is one line.
  const CliResult off = mgjoin("join --r r --s s --gpus 0 --out-dir out --overwrite --json", "MGJOIN_STREAM_OUTPUT=0 ");
  ASSERT_EQ(off.exit_code, 0) << off.err;
  EXPECT_FALSE(nlohmann::json::parse(off.out).at("output_streamed").get<bool>());
  EXPECT_EQ(read_column(path("out/key.npy")).size(), 4);
  const CliResult bad = mgjoin("join --r r --s s --gpus 0 --out-dir out2", "MGJOIN_STREAM_OUTPUT=maybe ");
  EXPECT_NE(bad.exit_code, 0);
  EXPECT_NE(bad.err.find("MGJOIN_STREAM_OUTPUT=maybe: expected 1 or on (the default), 0 or off"), std::string::npos) << bad.err;
  EXPECT_FALSE(std::filesystem::exists(path("out2")));
}

TEST_F(CliTest, SameSeedSameFiles) {
  ASSERT_EQ(mgjoin("generate --workload B --scale 0.00001 --zipf 0.5 --selectivity 0.7 --seed 9 --out-dir a").exit_code, 0);
  ASSERT_EQ(mgjoin("generate --workload B --scale 0.00001 --zipf 0.5 --selectivity 0.7 --seed 9 --out-dir b").exit_code, 0);
  ASSERT_EQ(mgjoin("generate --workload B --scale 0.00001 --zipf 0.5 --selectivity 0.7 --seed 10 --out-dir c").exit_code, 0);
  for (const std::string f : {"r_key.npy", "r_payload.npy", "s_key.npy", "s_payload.npy"}) {
    const HostColumn a = read_column(path("a/" + f)), b = read_column(path("b/" + f));
    ASSERT_EQ(a.bytes(), b.bytes());
    EXPECT_EQ(std::memcmp(a.data(), b.data(), a.bytes()), 0) << f;
  }
  const HostColumn a = read_column(path("a/s_key.npy")), c = read_column(path("c/s_key.npy"));
  EXPECT_NE(std::memcmp(a.data(), c.data(), a.bytes()), 0);
}

}  // namespace
}  // namespace mgjoin::test
