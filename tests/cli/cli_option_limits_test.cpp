// Option values at and past their limits (issue 21): each bad one gives a non-zero exit, exactly one
// error line naming the flag, nothing on stdout and no file in the output directory; values at the
// limits work. cli_errors_test.cpp covers --gpus -2, --gpu-memory-limit 8X, --strategy hash, --sort,
// --exchange, --gpu-ids 0,-1, --type float16, --scale -1, --selectivity 1.5, --zipf -0.5, --hot-key 2.
#include "cli_test_util.hpp"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace mgjoin::test {
namespace {

class CliOptionLimits : public CliTest {
 protected:
  void SetUp() override {
    CliTest::SetUp();
    ASSERT_EQ(mgjoin("generate --workload B --scale 0.00001 --out-dir b").exit_code, 0);
  }

  /// Runs `args`; expects failure with one stderr line holding every one of `needles`, an empty
  /// stdout, and no file (not even a temporary one) in out/.
  void expect_error(const std::string& args, const std::vector<std::string>& needles) {
    SCOPED_TRACE(args);
    const CliResult r = mgjoin(args);
    EXPECT_NE(r.exit_code, 0);
    const auto lines = r.err_lines();
    ASSERT_EQ(lines.size(), 1u) << r.err;
    for (const auto& n : needles)
      EXPECT_NE(lines[0].find(n), std::string::npos) << "'" << n << "' not in: " << lines[0];
    EXPECT_EQ(lines[0].find("Options::"), std::string::npos) << "an API field reached the user: " << lines[0];
    EXPECT_EQ(lines[0].find("WorkloadSpec::"), std::string::npos) << "an API field reached the user: " << lines[0];
    EXPECT_TRUE(entries("out").empty()) << "files left in out/";
    EXPECT_TRUE(r.out.empty()) << r.out;
  }

  /// `join` of the generated b with `options`, writing to out/ (so that a partial output would show).
  void expect_join_error(const std::string& options, const std::vector<std::string>& needles) {
    expect_error("join --r-dir b --s-dir b --out-dir out " + options, needles);
  }
};

TEST_F(CliOptionLimits, Gpus) {
  expect_join_error("--gpus 1000000000", {"--gpus"});
  expect_join_error("--gpus 2147483648", {"--gpus", "2147483648"});  // past int
  expect_join_error("--gpus -2147483649", {"--gpus", "-2147483649"});
  expect_join_error("--gpus two", {"--gpus", "two"});
  expect_join_error("--gpu-ids 99999999999", {"--gpu-ids", "99999999999"});
}

TEST_F(CliOptionLimits, GpuMemoryLimit) {
  expect_join_error("--gpus 0 --gpu-memory-limit 0", {"--gpu-memory-limit", "more than 0"});
  expect_join_error("--gpus 0 --gpu-memory-limit 0.1", {"--gpu-memory-limit", "more than 0"});  // rounds to 0 bytes
  expect_join_error("--gpus 0 --gpu-memory-limit 16777216T", {"--gpu-memory-limit", "16777216T"});  // 2^64 bytes
  expect_join_error("--gpus 0 --gpu-memory-limit 1e30", {"--gpu-memory-limit", "1e30"});
  expect_join_error("--gpus 0 --gpu-memory-limit -1G", {"--gpu-memory-limit", "-1G"});
  expect_join_error("--gpus 0 --gpu-memory-limit nan", {"--gpu-memory-limit", "nan"});
  expect_join_error("--gpus 0 --gpu-memory-limit inf", {"--gpu-memory-limit", "inf"});
  expect_join_error("--gpus 0 --gpu-memory-limit 8Gx", {"--gpu-memory-limit", "8Gx"});
  expect_join_error("--gpus 0 --gpu-memory-limit 8P", {"--gpu-memory-limit", "8P"});
  expect_join_error("--gpus 0 --gpu-memory-limit G", {"--gpu-memory-limit"});
}

TEST_F(CliOptionLimits, UnknownNamesOfJoin) {
  expect_join_error("--gpus 0 --strategy Paper", {"--strategy", "Paper"});
  expect_join_error("--gpus 0 --payloads early", {"--payloads", "early"});
  expect_join_error("--gpus 0 --type uint128", {"--type", "uint128"});  // refused even where no file is raw
  expect_join_error("--gpus 0 --r-type u8x", {"--r-type", "u8x"});
  expect_join_error("--gpus 0 --s-type int", {"--s-type", "int"});
  expect_join_error("--gpus 0 --r-payload-type x", {"--r-payload-type"});
  expect_join_error("--gpus 0 --s-payload-type float16", {"--s-payload-type", "float16"});
}

TEST_F(CliOptionLimits, Scale) {
  expect_error("generate --workload B --scale nan --out-dir out", {"--scale", "nan"});
  expect_error("generate --workload B --scale inf --out-dir out", {"--scale", "inf"});
  expect_error("generate --workload B --scale -0.00001 --out-dir out", {"--scale"});
  expect_error("generate --workload B --scale 1e300 --out-dir out", {"--scale"});
  expect_error("generate --workload A --scale 43 --out-dir out", {"--scale", "workload A"});
  // 8 TB per column: more than the host can hold (it used to say so without naming --scale).
  expect_error("generate --workload B --scale 1000 --out-dir out", {"--scale 1000", "does not fit"});
  expect_error("generate --workload B --scale lots --out-dir out", {"--scale", "lots"});
  // 2^61 rows of 8 bytes: the column's size wrapped past 2^64 to a few bytes, and generating crashed.
  expect_error("generate --workload B --scale 2305843009.2136941 --out-dir out", {"--scale 2.30584e+09"});
  expect_error("generate --workload B --scale 4e9 --out-dir out", {"--scale 4e+09"});
}

TEST_F(CliOptionLimits, FractionsOfTheWorkload) {
  for (const char* option : {"--selectivity", "--zipf", "--hot-key"})
    for (const char* value : {"-0.1", "1.01", "nan", "inf"})
      expect_error(std::string("generate --workload B --scale 0.00001 ") + option + " " + value + " --out-dir out",
                   {option});
}

// --seed took "-1" as 2^64 - 1 and 2^64 (or more) as 2^64 - 1 without a word.
TEST_F(CliOptionLimits, Seed) {
  for (const char* seed : {"18446744073709551616", "99999999999999999999999", "-1", "1.5", "0x10", "seven", "' '"})
    expect_error(std::string("generate --workload B --scale 0.00001 --seed ") + seed + " --out-dir out", {"--seed"});
}

TEST_F(CliOptionLimits, Bench) {
  const std::string bench = "bench --workload B --scale 0.00001 --gpus 0 ";
  expect_error(bench + "--repeat 0", {"--repeat 0"});
  expect_error(bench + "--repeat -1", {"--repeat"});
  expect_error(bench + "--repeat 2147483648", {"--repeat"});
  expect_error(bench + "--warmup -1", {"--warmup"});
  expect_error(bench + "--output tuples", {"--output", "tuples"});
  expect_error(bench + "--payloads early", {"--payloads", "early"});
  // A negative or nan rate was ignored (the floor used the measured one).
  expect_error(bench + "--h2d-gbps -5", {"--h2d-gbps -5"});
  expect_error(bench + "--h2d-gbps nan", {"--h2d-gbps nan"});
  expect_error(bench + "--h2d-gbps inf", {"--h2d-gbps inf"});
  // No rows: the run timed nothing and reported a throughput of 0/0.
  expect_error("bench --workload B --scale 0 --gpus 0", {"--scale 0", "empty"});
  expect_error("bench --workload A --scale 1e-9 --gpus 0", {"--scale 1e-09", "empty"});  // |R| = 0.1 rows
  expect_error("bench --workload B --scale 1000 --gpus 0", {"--scale 1000", "does not fit"});
  expect_error("bench --workload B --scale 2305843009.2136941 --gpus 0", {"--scale 2.30584e+09"});  // crashed
}

// Checked before tune looks for GPUs, so this machine needs none.
TEST_F(CliOptionLimits, Tune) {
  expect_error("tune --join-scale nan", {"--join-scale nan"});  // CLI::Range let it through
  expect_error("tune --join-scale 11", {"--join-scale"});
  expect_error("tune --join-scale -1", {"--join-scale"});
  expect_error("tune --mib 0", {"--mib"});
  expect_error("tune --mib 65537", {"--mib"});
  expect_error("tune --repeats 0", {"--repeats"});
}

// Values at the limits work: the extreme seeds, selectivity 0 and 1, zipf 1, hot-key 1, one-row relations.
TEST_F(CliOptionLimits, ValuesAtTheLimitsWork) {
  ASSERT_EQ(mgjoin("generate --workload B --scale 1e-9 --seed 18446744073709551615 --selectivity 0 --zipf 1 "
                   "--hot-key 1 --out-dir none")
                .exit_code,
            0);
  CliResult r = mgjoin("join --r-dir none --s-dir none --gpus 0 --count");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "0\n");  // selectivity 0: no S key is in R
  ASSERT_EQ(mgjoin("generate --workload A --scale 1e-8 --seed 0 --selectivity 1 --out-dir all").exit_code, 0);
  r = mgjoin("join --r-dir all --s-dir all --gpus 0 --count");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "10\n");  // |R| = 1, |S| = 10, each S row matches the one R row
  r = mgjoin("bench --workload B --scale 1e-9 --gpus 0 --repeat 1 --warmup 0 --h2d-gbps 0 --json");
  EXPECT_EQ(r.exit_code, 0) << r.err;
}

}  // namespace
}  // namespace mgjoin::test
