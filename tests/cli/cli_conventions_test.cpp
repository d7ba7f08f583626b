// The CLI's conventions (issue 45, item 5): every bad invocation exits 2 with one line; under --json
// every failure is also JSON on stdout.
#include <mgjoin/io.hpp>

#include "cli_test_util.hpp"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <cstdint>
#include <tuple>
#include <string>
#include <vector>

namespace mgjoin::test {
namespace {

template <class T>
void write_values(const std::filesystem::path& path, DType type, const std::vector<T>& values) {
  write_column(path, ColumnView{values.data(), static_cast<std::int64_t>(values.size()), type});
}

template <class T>
std::vector<T> read_values(const std::filesystem::path& path) {
  const HostColumn c = read_column(path);
  return std::vector<T>(c.as<T>(), c.as<T>() + c.size());
}

class CliConventions : public CliTest {
 protected:
  void SetUp() override {
    CliTest::SetUp();
    std::filesystem::create_directories(dir() / "a");
    std::filesystem::create_directories(dir() / "b");
    write_values<std::int32_t>(dir() / "a/k.npy", DType::Int32, {1, 2, 2, 3});
    write_values<std::int16_t>(dir() / "a/p.npy", DType::Int16, {10, 20, 21, 30});
    write_values<std::int32_t>(dir() / "b/k.npy", DType::Int32, {2, 2, 4});
    write_values<double>(dir() / "b/w.npy", DType::Float64, {1.5, 2.5, 4.5});
  }

  /// Expects exit status 2, one stderr line "mgjoin: error: ..." holding `needle`, and nothing on stdout.
  void expect_bad_invocation(const std::string& args, const std::string& needle) {
    const CliResult r = mgjoin(args);
    EXPECT_EQ(r.exit_code, 2) << args << "\n" << r.err;
    const auto lines = r.err_lines();
    ASSERT_EQ(lines.size(), 1u) << args << "\n" << r.err;
    EXPECT_EQ(lines[0].rfind("mgjoin: error: ", 0), 0u) << lines[0];
    EXPECT_NE(lines[0].find(needle), std::string::npos) << "'" << needle << "' not in: " << lines[0];
    EXPECT_TRUE(r.out.empty()) << r.out;
  }
};

TEST_F(CliConventions, ParseErrorsExitTwoWithOneLine) {
  expect_bad_invocation("join --no-such-option", "--no-such-option");
  expect_bad_invocation("join --r-dir", "--r-dir");
  expect_bad_invocation("", "subcommand");
  expect_bad_invocation("sideways --count", "unknown command 'sideways' (expected generate, join, bench, topo or tune)");
  expect_bad_invocation("join --gpus two --count", "--gpus");
  expect_bad_invocation("generate --workload B --out-dir x", "--scale");
  // What is not an error keeps status 0.
  EXPECT_EQ(mgjoin("--help").exit_code, 0);
  EXPECT_EQ(mgjoin("join --help").exit_code, 0);
  const CliResult version = mgjoin("--version");
  EXPECT_EQ(version.exit_code, 0);
  EXPECT_NE(version.out.find("mgjoin"), std::string::npos);
}

TEST_F(CliConventions, UnderJsonEveryFailureIsAlsoJsonOnStdout) {
  for (const auto& [args, status, needle] : std::vector<std::tuple<std::string, int, std::string>>{
           {"join --json --no-such-option", 2, "--no-such-option"},
           {"join --r-dir nope --s-dir b --s-key k --gpus 0 --count --json", 2, "--r-dir nope"},
           {"join --r-dir a --s-dir b --r-key k --s-key k --gpus 0 --how sideways --count --json", 2, "--how sideways"},
           {"bench --workload B --scale 0.000001 --gpus 0 --repeat 0 --json", 2, "--repeat"}}) {
    const CliResult r = mgjoin(args);
    EXPECT_EQ(r.exit_code, status) << args << "\n" << r.err;
    ASSERT_EQ(r.err_lines().size(), 1u) << args << "\n" << r.err;
    EXPECT_NE(r.err.find(needle), std::string::npos) << r.err;
    const auto j = nlohmann::json::parse(r.out, nullptr, /*allow_exceptions=*/false);
    ASSERT_TRUE(j.is_object()) << args << ": stdout is not one JSON object: " << r.out;
    ASSERT_TRUE(j.contains("error")) << r.out;
    EXPECT_NE(j["error"].get<std::string>().find(needle), std::string::npos) << r.out;
    // The same message as the stderr line, without its "mgjoin: error: ".
    EXPECT_EQ("mgjoin: error: " + j["error"].get<std::string>(), r.err_lines()[0]);
  }
  // Without --json, stdout stays empty; a successful --json run prints its summary, not an error.
  EXPECT_TRUE(mgjoin("join --r-dir nope --s-dir b --gpus 0 --count").out.empty());
  const CliResult ok = mgjoin("join --r-dir a --s-dir b --r-key k --s-key k --gpus 0 --count --json");
  ASSERT_EQ(ok.exit_code, 0) << ok.err;
  const auto summary = nlohmann::json::parse(ok.out);
  EXPECT_EQ(summary["count"], 4);
  EXPECT_FALSE(summary.contains("error"));
}

}  // namespace
}  // namespace mgjoin::test
