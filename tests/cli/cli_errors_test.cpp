// Bad input to the CLI: non-zero exit, one error line naming the file or option, no output files.
#include <mgjoin/io.hpp>

#include "cli_test_util.hpp"

#include "common/gpu.hpp"

#include <gtest/gtest.h>

#include <vector>

namespace mgjoin::test {
namespace {

class CliErrors : public CliTest {
 protected:
  void SetUp() override {
    CliTest::SetUp();
    ASSERT_EQ(mgjoin("generate --workload A --scale 0.00001 --out-dir a").exit_code, 0);
    ASSERT_EQ(mgjoin("generate --workload B --scale 0.00001 --out-dir b").exit_code, 0);
  }

  /// Runs `args`, expects failure with one stderr line containing every one of `needles`, and no
  /// file (not even a temporary one) in out/.
  void expect_error(const std::string& args, const std::vector<std::string>& needles) {
    const CliResult r = mgjoin(args);
    EXPECT_NE(r.exit_code, 0) << args;
    const auto lines = r.err_lines();
    ASSERT_EQ(lines.size(), 1u) << args << "\n" << r.err;
    for (const auto& n : needles) EXPECT_NE(lines[0].find(n), std::string::npos) << "'" << n << "' not in: " << lines[0];
    // The library names API fields (JoinOptions::gpus); the CLI user is told the flag.
    EXPECT_EQ(lines[0].find("JoinOptions::"), std::string::npos) << lines[0];
    EXPECT_EQ(lines[0].find("WorkloadSpec::"), std::string::npos) << lines[0];
    EXPECT_TRUE(entries("out").empty()) << args << " left files in out/";
    EXPECT_TRUE(r.out.empty()) << r.out;
  }
};

TEST_F(CliErrors, MissingFile) {
  expect_error("join --r-key nope.npy --s-dir b --gpus 0 --out-dir out", {"--r-key", "nope.npy", "No such file"});
  expect_error("join --r-dir nope --s-dir b --gpus 0 --out-dir out", {"--r-dir", "nope"});
}

TEST_F(CliErrors, NotNpy) {
  write_file("junk.npy", "hello, world");
  expect_error("join --r-key junk.npy --s-dir b --gpus 0 --out-dir out", {"junk.npy", "bad magic"});
}

TEST_F(CliErrors, TruncatedFile) {
  std::filesystem::copy_file(dir() / "b/s_key.npy", dir() / "cut.npy");
  std::filesystem::resize_file(dir() / "cut.npy", std::filesystem::file_size(dir() / "cut.npy") - 8);
  expect_error("join --r-dir b --s-key cut.npy --gpus 0 --out-dir out", {"--s-key", "cut.npy", "truncated"});
}

TEST_F(CliErrors, UnsupportedDtype) {
  write_file("half.npy", npy_header("<f2", 4) + std::string(8, '\0'));
  expect_error("join --r-key half.npy --s-dir a --gpus 0 --count", {"half.npy", "<f2"});
  write_file("be.npy", npy_header(">i4", 2) + std::string(8, '\0'));
  expect_error("join --r-key be.npy --s-dir a --gpus 0 --count", {"be.npy", "big-endian"});
}

TEST_F(CliErrors, KeyAndPayloadLengthsDiffer) {
  expect_error("join --r-key a/r_key.npy --r-payload a/s_payload.npy --s-dir a --gpus 0 --out-dir out",
               {"--r-payload", "a/s_payload.npy", "rows"});
}

TEST_F(CliErrors, KeysThatCannotBeComparedAreRefusedBeforeReading) {
  const std::vector<float> f{1, 2};
  write_column(path("f.npy"), ColumnView{f.data(), 2, DType::Float32});
  const std::vector<std::uint8_t> flags{0, 1};
  write_column(path("flag.npy"), ColumnView{flags.data(), 2, DType::Bool});
  expect_error("join --r-dir a --s-key f.npy --gpus 0 --out-dir out", {"uint32", "float32", "R", "S", "cannot be compared"});
  expect_error("join --r-key flag.npy --s-dir b --gpus 0 --count", {"bool", "uint64", "cannot be compared"});
}

TEST_F(CliErrors, RawFileWithoutType) {
  write_file("k.bin", std::string(16, '\0'));
  expect_error("join --r-key k.bin --s-dir b --gpus 0 --count", {"--r-key", "k.bin", "--type"});
  expect_error("join --r-key k.bin --s-dir b --type float16 --gpus 0 --count", {"--type", "float16"});
}

TEST_F(CliErrors, UnwritableOutputDirectory) {
  write_file("plain", "x");
  expect_error("join --r-dir b --s-dir b --gpus 0 --out-dir plain/sub", {"--out-dir", "plain/sub"});
  expect_error("join --r-dir b --s-dir b --gpus 0 --out-dir plain", {"--out-dir", "plain", "not a directory"});
}

TEST_F(CliErrors, OutputModeRequired) {
  expect_error("join --r-dir b --s-dir b --gpus 0", {"--out-dir", "--count"});
  expect_error("join --r-dir b --s-dir b --gpus 0 --count --out-dir out", {"--count", "--out-dir"});
}

TEST_F(CliErrors, GpusAskedForOnAMachineWithoutThem) {
  if (test::gpu_count() > 0) GTEST_SKIP() << "this machine has GPUs";
  expect_error("join --r-dir b --s-dir b --gpus 2 --count", {"--gpus", "no CUDA GPU"});
  expect_error("join --r-dir b --s-dir b --gpu-ids 1 --count", {"--gpu-ids", "no CUDA GPU"});
}

TEST_F(CliErrors, InvalidJoinOptions) {
  expect_error("join --r-dir b --s-dir b --gpus -2 --count", {"--gpus"});
  expect_error("join --r-dir b --s-dir b --sort quick --count", {"--sort", "quick"});
  expect_error("join --r-dir b --s-dir b --exchange mpi --count", {"--exchange", "mpi"});
  expect_error("join --r-dir b --s-dir b --gpu-memory-limit 8X --count", {"--gpu-memory-limit", "8X"});
  expect_error("join --r-dir b --s-dir b --gpu-ids 0,-1 --count", {"--gpu-ids"});
  expect_error("join --r-dir b --s-dir b --strategy hash --count", {"--strategy", "hash"});
  expect_error("join --s-dir b --count", {"--r-key", "--r-dir"});
}

TEST_F(CliErrors, InvalidGenerateOptions) {
  expect_error("generate --workload C --scale 1 --out-dir out", {"--workload", "C"});
  expect_error("generate --workload A --scale -1 --out-dir out", {"--scale"});
  expect_error("generate --workload B --scale 0.001 --selectivity 1.5 --out-dir out", {"--selectivity"});
  expect_error("generate --workload B --scale 0.001 --zipf -0.5 --out-dir out", {"--zipf"});
  expect_error("generate --workload B --scale 0.001 --hot-key 2 --out-dir out", {"--hot-key"});
  write_file("plain", "x");
  expect_error("generate --workload B --scale 0.001 --out-dir plain", {"--out-dir", "plain"});
}

}  // namespace
}  // namespace mgjoin::test
