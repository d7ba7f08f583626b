// The CLI's conventions (issue 45, item 5): every bad invocation exits 2 with one line; under --json
// every failure is also JSON on stdout; `generate` refuses a directory that holds a table without
// --overwrite; --on names the key of both tables; a progress bar only on a terminal, after a second, and
// never with --quiet; keys of other widths and kinds join by value from the files too.
#include <mgjoin/io.hpp>

#include "cli_test_util.hpp"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <string>
#include <tuple>
#include <vector>

namespace mgjoin::test {
namespace {

class CliConventions : public TwoTablesCliTest {
 protected:
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

  /// `mgjoin <args>` on a pseudo-terminal (util-linux `script`): stdout and stderr as the terminal shows
  /// them. Empty when `script` is missing (the caller skips).
  std::string on_a_terminal(const std::string& args, const std::string& env = "") const {
    if (std::system("command -v script > /dev/null 2>&1") != 0) return {};
    const std::string cmd = "cd '" + dir().string() + "' && " + env + "script -qec \"'" MGJOIN_CLI_PATH "' " + args +
                            "\" /dev/null < /dev/null";
    std::string out;
    FILE* pipe = ::popen(cmd.c_str(), "r");
    if (!pipe) return out;
    char buf[4096];
    for (std::size_t n; (n = std::fread(buf, 1, sizeof buf, pipe)) > 0;) out.append(buf, n);
    ::pclose(pipe);
    return out;
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

// The test harness's MGJOIN_CLI_WRAPPER (how device-sanitize.sh puts each mgjoin process of the cli
// suite under compute-sanitizer): the wrapper runs, with the program and its arguments after it, and the
// program's exit status and output come back as without it.
TEST_F(CliConventions, AWrapperCommandRunsBeforeTheProgram) {
  const char* before = std::getenv("MGJOIN_CLI_WRAPPER");
  const std::string saved = before ? before : "";
  ::setenv("MGJOIN_CLI_WRAPPER", "sh -c 'echo wrapped \"$#\"; exec \"$0\" \"$@\"'", 1);
  const CliResult version = mgjoin("--version");
  const CliResult bad = mgjoin("join --gpus two --count");
  if (before) ::setenv("MGJOIN_CLI_WRAPPER", saved.c_str(), 1); else ::unsetenv("MGJOIN_CLI_WRAPPER");
  EXPECT_EQ(version.exit_code, 0) << version.err;
  EXPECT_EQ(version.out.rfind("wrapped 1\n", 0), 0u) << version.out;  // one argument after the program
  EXPECT_NE(version.out.find("mgjoin"), std::string::npos) << version.out;
  EXPECT_EQ(bad.exit_code, 2) << bad.err;
  EXPECT_NE(bad.err.find("--gpus"), std::string::npos) << bad.err;
}

TEST_F(CliConventions, UnderJsonEveryFailureIsAlsoJsonOnStdout) {
  for (const auto& [args, status, needle] : std::vector<std::tuple<std::string, int, std::string>>{
           {"join --json --no-such-option", 2, "--no-such-option"},
           {"join --r-dir nope --s-dir b --s-key k --gpus 0 --count --json", 2, "--r-dir nope"},
           {"join --r-dir a --s-dir b --on k --gpus 0 --how sideways --count --json", 2, "--how sideways"},
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
  const CliResult ok = mgjoin("join --r-dir a --s-dir b --on k --gpus 0 --count --json");
  ASSERT_EQ(ok.exit_code, 0) << ok.err;
  const auto summary = nlohmann::json::parse(ok.out);
  EXPECT_EQ(summary["count"], 4);
  EXPECT_FALSE(summary.contains("error"));
}

TEST_F(CliConventions, GenerateRefusesATableWithoutOverwrite) {
  ASSERT_EQ(mgjoin("generate --workload B --scale 0.00001 --seed 1 --out-dir gen").exit_code, 0);
  const auto first = read_values<std::uint64_t>(dir() / "gen/s_key.npy");
  write_file("gen/notes.txt", "the user's notes");
  const CliResult again = mgjoin("generate --workload B --scale 0.00001 --seed 2 --out-dir gen");
  EXPECT_EQ(again.exit_code, 2);
  ASSERT_EQ(again.err_lines().size(), 1u) << again.err;
  EXPECT_NE(again.err.find("--out-dir gen: already holds a table"), std::string::npos) << again.err;
  EXPECT_NE(again.err.find("--overwrite"), std::string::npos) << again.err;
  EXPECT_EQ(read_values<std::uint64_t>(dir() / "gen/s_key.npy"), first) << "a refused run touched the table";

  const CliResult replaced = mgjoin("generate --workload B --scale 0.00001 --seed 2 --out-dir gen --overwrite");
  ASSERT_EQ(replaced.exit_code, 0) << replaced.err;
  EXPECT_NE(read_values<std::uint64_t>(dir() / "gen/s_key.npy"), first);
  EXPECT_TRUE(std::filesystem::exists(dir() / "gen/notes.txt")) << "files that are not the table stay";
  // A directory without a table (only other files) is fine without --overwrite.
  std::filesystem::create_directories(dir() / "docs");
  write_file("docs/readme.txt", "x");
  EXPECT_EQ(mgjoin("generate --workload A --scale 0.000001 --out-dir docs").exit_code, 0);
}

TEST_F(CliConventions, OnNamesTheKeyOfBothTables) {
  const CliResult on = mgjoin("join --r-dir a --s-dir b --on k --gpus 0 --how full --out-dir on");
  const CliResult both = mgjoin("join --r-dir a --s-dir b --r-key k --s-key k --gpus 0 --how full --out-dir both");
  ASSERT_EQ(on.exit_code, 0) << on.err;
  ASSERT_EQ(both.exit_code, 0) << both.err;
  for (const char* file : {"key.npy", "r.p.npy", "s.w.npy", "r.valid.npy", "s.valid.npy"}) {
    const HostColumn x = read_column(dir() / "on" / file), y = read_column(dir() / "both" / file);
    ASSERT_EQ(x.bytes(), y.bytes()) << file;
    EXPECT_EQ(std::memcmp(x.data(), y.data(), x.bytes()), 0) << file;
  }
  expect_bad_invocation("join --r-dir a --s-dir b --on k --r-key k --gpus 0 --count", "--on");
  expect_bad_invocation("join --r-dir a --s-dir b --on k --s-key k --gpus 0 --count", "--s-key");
  // Errors about the key name the option the user gave.
  expect_bad_invocation("join --r-dir a --s-dir b --on kk --gpus 0 --count", "--on kk: a holds no kk.npy");
}

TEST_F(CliConventions, AProgressBarOnlyOnATerminal) {
  const std::string join = "join --r-dir a --s-dir b --on k --gpus 0 --out-dir ";
  const std::string shown = on_a_terminal(join + "t1", "MGJOIN_TEST_PROGRESS_AFTER_MS=0 ");
  if (shown.empty()) GTEST_SKIP() << "no `script` to make a pseudo-terminal with";
  EXPECT_NE(shown.find("mgjoin: sort"), std::string::npos) << shown;
  EXPECT_NE(shown.find("%"), std::string::npos) << shown;
  EXPECT_NE(shown.find("\033[K"), std::string::npos) << "the bar's line is cleared at the end: " << shown;
  // --quiet: no bar and no summary lines.
  const std::string quiet = on_a_terminal(join + "t2 --quiet", "MGJOIN_TEST_PROGRESS_AFTER_MS=0 ");
  EXPECT_EQ(quiet.find("%"), std::string::npos) << quiet;
  EXPECT_EQ(quiet.find("mgjoin:"), std::string::npos) << quiet;
  // A join shorter than a second leaves no bar.
  const std::string short_join = on_a_terminal(join + "t3");
  EXPECT_EQ(short_join.find("%"), std::string::npos) << short_join;
  EXPECT_NE(short_join.find("mgjoin: executor"), std::string::npos) << short_join;
  // Not a terminal: no bar whatever the time.
  const CliResult piped = mgjoin(join + "t4", "MGJOIN_TEST_PROGRESS_AFTER_MS=0 ");
  ASSERT_EQ(piped.exit_code, 0) << piped.err;
  EXPECT_EQ(piped.err.find("%"), std::string::npos) << piped.err;
  EXPECT_EQ(piped.err.find('\r'), std::string::npos) << piped.err;
}

/// Keys of other widths, signedness and kinds join by value from the files (the library's rules; its
/// results are checked in tests/table), with the output key in the type that holds both sides.
TEST_F(CliConventions, KeysOfOtherTypesJoinByValue) {
  write_values<std::int64_t>(dir() / "b/k64.npy", DType::Int64, {2, 2, 4});
  write_values<std::uint32_t>(dir() / "b/u.npy", DType::UInt32, {2, 4000000000u, 3});
  const CliResult widths = mgjoin("join --r-dir a --s-dir b --r-key k --s-key k64 --gpus 0 --how full --out-dir o1");
  ASSERT_EQ(widths.exit_code, 0) << widths.err;
  const auto key = read_values<std::int64_t>(dir() / "o1/key.npy");
  EXPECT_EQ(read_column(dir() / "o1/key.npy").type(), DType::Int64);
  EXPECT_EQ(key, (std::vector<std::int64_t>{2, 2, 2, 2, 1, 3, 4}));  // the pairs, then R's and S's rows alone
  EXPECT_EQ(mgjoin("join --r-dir a --s-dir b --r-key k --s-key u --gpus 0 --count").out, "3\n");

  std::filesystem::create_directories(dir() / "f");
  const double nan = std::numeric_limits<double>::quiet_NaN();
  write_values<double>(dir() / "f/k.npy", DType::Float64, {0.0, nan, 1.5});
  write_values<float>(dir() / "f/k32.npy", DType::Float32, {-0.0f, std::numeric_limits<float>::quiet_NaN(), 2.5f});
  const CliResult floats = mgjoin("join --r-dir f --s-dir f --r-key k --s-key k32 --gpus 0 --output maps --out-dir o2");
  ASSERT_EQ(floats.exit_code, 0) << floats.err;
  EXPECT_EQ(read_values<std::int64_t>(dir() / "o2/r.row.npy"), (std::vector<std::int64_t>{0, 1}));  // 0.0 = -0.0, NaN = NaN
  EXPECT_EQ(read_values<std::int64_t>(dir() / "o2/s.row.npy"), (std::vector<std::int64_t>{0, 1}));

  write_values<std::uint64_t>(dir() / "b/big.npy", DType::UInt64, {2, 2, 18446744073709551615ull});
  expect_bad_invocation("join --r-dir a --s-dir b --r-key k --s-key big --gpus 0 --how full --out-dir o3", "full outer");
  EXPECT_FALSE(std::filesystem::exists(dir() / "o3")) << "refused before any output";
  EXPECT_EQ(mgjoin("join --r-dir a --s-dir b --r-key k --s-key big --gpus 0 --how full --count").out, "7\n");
}

}  // namespace
}  // namespace mgjoin::test
