// NpyResultFiles (io.hpp): a join's output written into .npy files window by window, from several threads
// and in any order, then headed with its row count and committed; nothing left behind by a run that fails.
#include <mgjoin/error.hpp>
#include <mgjoin/io.hpp>

#include "io/io_test_util.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <numeric>
#include <random>
#include <thread>
#include <vector>

namespace mgjoin::test {
namespace {

using Paths = std::array<std::filesystem::path, 3>;

/// A result as a sunk join leaves it: `count` rows, empty columns of the parts' types.
JoinResult sunk_result(std::uint64_t count, DType key, std::optional<DType> r_payload) {
  JoinResult r;
  r.count = count;
  r.sunk = true;
  r.key = HostColumn::allocate(key, 0);
  if (r_payload) r.r_payload = HostColumn::allocate(*r_payload, 0);
  return r;
}

TEST_F(TempDirTest, WindowsFromSeveralThreadsInAnyOrderMakeTheWholeColumns) {
  constexpr std::uint64_t rows = 1'000'003, window = 65'536;
  std::vector<std::int64_t> keys(rows);
  std::vector<std::uint32_t> payload(rows);
  for (std::uint64_t i = 0; i < rows; ++i) {
    keys[i] = static_cast<std::int64_t>(i * 7919) - 500'000'000;
    payload[i] = static_cast<std::uint32_t>(i ^ 0x5a5a5a5au);
  }
  std::vector<std::uint64_t> starts;
  for (std::uint64_t at = 0; at < rows; at += window) starts.push_back(at);
  std::shuffle(starts.begin(), starts.end(), std::mt19937_64(7));
  NpyResultFiles files(dir(), "--out-dir");
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&, t] {
      for (std::size_t k = static_cast<std::size_t>(t); k < starts.size(); k += 4) {
        const std::uint64_t at = starts[k], n = std::min(window, rows - at);
        files.write(ResultPart::RPayload, DType::UInt32, at, n, payload.data() + at);
        files.write(ResultPart::Key, DType::Int64, at, n, keys.data() + at);
      }
    });
  for (auto& t : threads) t.join();
  EXPECT_EQ(files.bytes_written(), rows * 12);
  EXPECT_EQ(entries().size(), 2u);  // two hidden temporary files, no final name yet

  std::vector<StagedColumnFile> staged =
      files.finish(sunk_result(rows, DType::Int64, DType::UInt32), Paths{dir() / "key.npy", dir() / "r.p.npy", {}});
  ASSERT_EQ(staged.size(), 2u);
  commit_all(staged);
  const HostColumn k = read_column(dir() / "key.npy"), p = read_column(dir() / "r.p.npy");
  ASSERT_EQ(k.type(), DType::Int64);
  ASSERT_EQ(p.type(), DType::UInt32);
  ASSERT_EQ(k.size(), static_cast<std::int64_t>(rows));
  EXPECT_TRUE(std::equal(keys.begin(), keys.end(), k.as<std::int64_t>()));
  EXPECT_TRUE(std::equal(payload.begin(), payload.end(), p.as<std::uint32_t>()));
  // The header NumPy would write, padded to the room kept for any row count (128 bytes).
  const std::string bytes = read_file_bytes(dir() / "key.npy");
  EXPECT_EQ(bytes.substr(0, 128), npy_bytes(1, "{'descr': '<i8', 'fortran_order': False, 'shape': (1000003,), }", 128));
  EXPECT_EQ(bytes.size(), 128 + rows * 8);
  std::vector<std::string> names = entries();
  std::sort(names.begin(), names.end());
  EXPECT_EQ(names, (std::vector<std::string>{"key.npy", "r.p.npy"}));
}

TEST_F(TempDirTest, AnEmptyOutputIsItsHeadersAlone) {
  NpyResultFiles files(dir(), "--out-dir");
  std::vector<StagedColumnFile> staged =
      files.finish(sunk_result(0, DType::UInt8, DType::Float64), Paths{dir() / "key.npy", dir() / "r.x.npy", {}});
  commit_all(staged);
  EXPECT_EQ(read_file_bytes(dir() / "key.npy"), npy_bytes(1, "{'descr': '|u1', 'fortran_order': False, 'shape': (0,), }", 128));
  EXPECT_EQ(read_column(dir() / "r.x.npy").size(), 0);
  EXPECT_EQ(read_column(dir() / "r.x.npy").type(), DType::Float64);
}

TEST_F(TempDirTest, RowsPastTheCountAreCutAndALaterWriteOfARowHolds) {
  // A co-partitioned run wrote 6 rows, then failed; the paper flow wrote the whole output (4 rows) again.
  NpyResultFiles files(dir(), "--out-dir");
  const std::vector<std::uint64_t> first{9, 9, 9, 9, 9, 9}, again{1, 2, 3, 4};
  files.write(ResultPart::Key, DType::UInt64, 0, first.size(), first.data());
  files.write(ResultPart::Key, DType::UInt64, 0, again.size(), again.data());
  std::vector<StagedColumnFile> staged = files.finish(sunk_result(4, DType::UInt64, std::nullopt), Paths{dir() / "key.npy", {}, {}});
  commit_all(staged);
  const HostColumn k = read_column(dir() / "key.npy");
  ASSERT_EQ(k.size(), 4);
  EXPECT_TRUE(std::equal(again.begin(), again.end(), k.as<std::uint64_t>()));
}

TEST_F(TempDirTest, AFailedJoinLeavesNoFileAtAll) {
  const std::vector<std::int32_t> rows{1, 2, 3};
  {
    NpyResultFiles files(dir(), "--out-dir");
    files.write(ResultPart::Key, DType::Int32, 0, rows.size(), rows.data());
    files.write(ResultPart::SPayload, DType::Int32, 3, rows.size(), rows.data());
    EXPECT_EQ(entries().size(), 2u);
  }  // the join threw: finish() never ran
  EXPECT_TRUE(entries().empty());
  {
    NpyResultFiles files(dir(), "--out-dir");
    files.write(ResultPart::Key, DType::Int32, 0, rows.size(), rows.data());
    std::vector<StagedColumnFile> staged = files.finish(sunk_result(3, DType::Int32, std::nullopt), Paths{dir() / "key.npy", {}, {}});
  }  // finished, never committed (interrupted before the commit)
  EXPECT_TRUE(entries().empty());
}

TEST_F(TempDirTest, TheFoldersMadeForAFailedJoinGoWithItsFiles) {
  const std::vector<std::int32_t> rows{1, 2, 3};
  {
    NpyResultFiles files(dir() / "new" / "out/", "--out-dir");
    EXPECT_FALSE(std::filesystem::exists(dir() / "new")) << "made before any row came";
    files.write(ResultPart::Key, DType::Int32, 0, rows.size(), rows.data());
    EXPECT_TRUE(std::filesystem::is_directory(dir() / "new" / "out"));
  }  // the join failed
  EXPECT_TRUE(entries().empty());
  {
    std::filesystem::create_directory(dir() / "kept");
    write_file_bytes(dir() / "kept" / "mine.txt", "the user's");
    NpyResultFiles files(dir() / "kept" / "out", "--out-dir");
    files.write(ResultPart::Key, DType::Int32, 0, rows.size(), rows.data());
  }
  EXPECT_FALSE(std::filesystem::exists(dir() / "kept" / "out"));
  EXPECT_EQ(read_file_bytes(dir() / "kept" / "mine.txt"), "the user's");  // a folder it did not make stays
  {
    NpyResultFiles files(dir() / "done", "--out-dir");
    files.write(ResultPart::Key, DType::Int32, 0, rows.size(), rows.data());
    std::vector<StagedColumnFile> staged = files.finish(sunk_result(3, DType::Int32, std::nullopt), Paths{dir() / "done" / "key.npy", {}, {}});
    commit_all(staged);
  }
  EXPECT_EQ(read_column(dir() / "done" / "key.npy").size(), 3);
}

TEST_F(TempDirTest, AWriteErrorNamesAPayloadByItsPart) {
  // A row past what a file offset (signed 64 bits) holds: pwrite refuses it, as it would a full disk.
  const std::vector<std::int32_t> rows{1};
  NpyResultFiles files(dir(), "--out-dir");
  try {
    files.write(ResultPart::RPayload, DType::Int32, std::uint64_t{1} << 61, 1, rows.data());  // at byte 2^63 + 128
    FAIL() << "a row past 2^63 bytes was written";
  } catch (const InputError& e) {
    EXPECT_TRUE(std::string(e.what()).starts_with((dir() / "r.<payload>.npy (R's payload column): write failed").string()))
        << e.what();
  }
}

TEST_F(TempDirTest, ADirectoryThatCannotBeMadeIsNamedAndTheMisuseIsRefused) {
  const std::vector<std::int32_t> rows{1, 2, 3};
  // The directory is made with the first file: here it cannot be (a file stands where a folder should).
  write_file_bytes(dir() / "afile", "x");
  NpyResultFiles blocked(dir() / "afile" / "out", "--out-dir");
  try {
    blocked.write(ResultPart::Key, DType::Int32, 0, rows.size(), rows.data());
    FAIL() << "a file in a directory that cannot be made was made";
  } catch (const InputError& e) {
    EXPECT_TRUE(std::string(e.what()).starts_with("--out-dir " + (dir() / "afile" / "out").string())) << e.what();
  }
  NpyResultFiles files(dir(), "--out-dir");
  files.write(ResultPart::Key, DType::Int32, 0, rows.size(), rows.data());
  EXPECT_THROW(files.write(ResultPart::Key, DType::Int64, 0, 1, rows.data()), Error);
  EXPECT_THROW(files.finish(sunk_result(3, DType::Int32, std::nullopt), Paths{}), Error);
}

}  // namespace
}  // namespace mgjoin::test
