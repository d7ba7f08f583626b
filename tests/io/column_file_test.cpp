// Column files: round trips for every dtype in .npy and raw form, and hand-written numpy headers.
#include <mgjoin/error.hpp>
#include <mgjoin/io.hpp>

#include "common/seed.hpp"
#include "io_test_util.hpp"

#include <gtest/gtest.h>

#include <cstring>
#include <fstream>
#include <iterator>
#include <random>
#include <vector>

namespace mgjoin::test {
namespace {

namespace fs = std::filesystem;

/// Random bytes of `n` elements of `type` (any bit pattern is a valid element for a round trip).
HostColumn random_column(DType type, std::int64_t n, std::uint64_t seed) {
  HostColumn c = HostColumn::allocate(type, n);
  std::mt19937_64 rng(seed);
  auto* bytes = static_cast<unsigned char*>(c.data());
  for (std::size_t i = 0; i < c.bytes(); ++i) bytes[i] = static_cast<unsigned char>(rng());
  return c;
}

void expect_same(const HostColumn& expected, const HostColumn& actual) {
  ASSERT_EQ(actual.type(), expected.type());
  ASSERT_EQ(actual.size(), expected.size());
  EXPECT_EQ(std::memcmp(actual.data(), expected.data(), expected.bytes()), 0);
}

constexpr DType kAllTypes[] = {DType::Int32, DType::UInt32, DType::Int64, DType::UInt64, DType::Float32, DType::Float64,
                               DType::Int8,  DType::UInt8,  DType::Int16, DType::UInt16, DType::Bool};

class RoundTrip : public TempDirTest, public ::testing::WithParamInterface<DType> {};

TEST_P(RoundTrip, NpyKeepsTypeSizeAndBytes) {
  const auto seed = announce_seed();
  for (const std::int64_t n : {0, 1, 7, 100'003}) {
    const HostColumn c = random_column(GetParam(), n, seed + n);
    const fs::path path = dir() / "col.npy";
    write_column(path, c.view());
    expect_same(c, read_column(path));
    const ColumnFileInfo info = inspect_column_file(path);
    EXPECT_EQ(info.format, FileFormat::Npy);
    EXPECT_EQ(info.data_offset % 64, 0u) << "numpy aligns the data to 64 bytes";
  }
}

TEST_P(RoundTrip, RawNeedsTheTypeAndKeepsBytes) {
  const auto seed = announce_seed();
  const HostColumn c = random_column(GetParam(), 12'345, seed);
  const fs::path path = dir() / "col.bin";
  write_column(path, c.view());
  EXPECT_EQ(fs::file_size(path), c.bytes()) << "raw files have no header";
  expect_same(c, read_column(path, GetParam()));
}

TEST_P(RoundTrip, PinnedRequestFallsBackWithoutDriver) {
  const HostColumn c = random_column(GetParam(), 1000, announce_seed());
  const fs::path path = dir() / "col.npy";
  write_column(path, c.view());
  expect_same(c, read_column(path, std::nullopt, MemoryKind::Pinned));
}

INSTANTIATE_TEST_SUITE_P(AllDTypes, RoundTrip, ::testing::ValuesIn(kAllTypes),
                         [](const auto& info) { return std::string(dtype_name(info.param)); });

TEST_F(TempDirTest, LargeColumnRoundTripsThroughParallelIo) {
  // 80 MB: above the parallel threshold, not a multiple of the block size.
  const HostColumn c = random_column(DType::UInt64, 10'000'001, announce_seed());
  const fs::path path = dir() / "big.npy";
  write_column(path, c.view());
  expect_same(c, read_column(path));
}

TEST_F(TempDirTest, RowRangesReadSlicesAndRefuseRowsPastTheEnd) {
  const HostColumn c = random_column(DType::UInt32, 1001, announce_seed());
  for (const char* name : {"col.npy", "col.bin"}) {
    const fs::path path = dir() / name;
    write_column(path, c.view());
    const std::optional<DType> raw = file_format_of(path) == FileFormat::Raw ? std::optional(DType::UInt32) : std::nullopt;
    const HostColumn mid = read_column_rows(path, 333, 334, raw);
    ASSERT_EQ(mid.size(), 334);
    EXPECT_EQ(std::memcmp(mid.data(), c.as<std::uint32_t>() + 333, 334 * 4), 0) << name;
    EXPECT_EQ(read_column_rows(path, 1000, -1, raw).size(), 1);  // to the end
    EXPECT_EQ(read_column_rows(path, 1001, 0, raw).size(), 0);   // an empty slice at the end
    try {
      read_column_rows(path, 900, 200, raw);
      ADD_FAILURE() << name << ": rows past the end were read";
    } catch (const InputError& e) {
      EXPECT_NE(std::string(e.what()).find("200 rows from row 900 are past its 1001 rows"), std::string::npos) << e.what();
    }
  }
}

TEST_F(TempDirTest, ATableInPartsReadsAsOneAndAWrongManifestIsNamed) {
  const HostColumn a = random_column(DType::Int64, 300, announce_seed()), b = random_column(DType::Int64, 0, 1),
                   c = random_column(DType::Int64, 77, 2);
  const HostColumn* parts[] = {&a, &b, &c};
  for (int i = 0; i < 3; ++i) {
    fs::create_directories(dir() / ("part-" + std::to_string(i)));
    write_column(dir() / ("part-" + std::to_string(i)) / "key.npy", parts[i]->view());
  }
  const auto manifest = [&](int middle_rows) {
    std::ofstream(dir() / "manifest.json") << R"({"format": "mgjoin-parts", "version": 1, "columns": ["key.npy"], "parts": [)"
                                           << R"({"dir": "part-0", "rows": 300}, {"dir": "part-1", "rows": )" << middle_rows
                                           << R"(}, {"dir": "part-2", "rows": 77}], "rows": )" << 377 + middle_rows << "}";
  };
  EXPECT_FALSE(read_parts_manifest(dir()).has_value());  // no manifest: not a table in parts
  manifest(0);
  const auto table = read_parts_manifest(dir());
  ASSERT_TRUE(table.has_value());
  ASSERT_EQ(table->part_dirs.size(), 3u);
  std::vector<fs::path> files;
  for (const fs::path& d : table->part_dirs) files.push_back(d / "key.npy");
  const HostColumn whole = read_column_concat(files);
  ASSERT_EQ(whole.size(), 377);
  EXPECT_EQ(std::memcmp(whole.data(), a.data(), 300 * 8), 0);
  EXPECT_EQ(std::memcmp(whole.as<std::int64_t>() + 300, c.data(), 77 * 8), 0);
  std::ofstream(dir() / "manifest.json") << R"({"format": "mgjoin-parts", "version": 1, "columns": ["key.npy"], )"
                                         << R"("parts": [{"dir": "../part-0", "rows": 300}], "rows": 300})";
  try {
    read_parts_manifest(dir());
    ADD_FAILURE() << "a part outside the directory was accepted";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("part \"../part-0\" is not a folder inside"), std::string::npos) << e.what();
  }
  manifest(5);  // a part that holds other rows than the manifest says
  try {
    read_parts_manifest(dir());
    ADD_FAILURE() << "a manifest that disagrees with its parts was read";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("part-1/key.npy: 0 rows, but"), std::string::npos) << e.what();
  }
}

TEST_F(TempDirTest, WrittenHeaderIsNumpyV1AlignedTo64) {
  const std::vector<std::uint64_t> v{1, 2, 3};
  write_column(dir() / "h.npy", ColumnView{v.data(), 3, DType::UInt64});
  const std::string bytes = read_file_bytes(dir() / "h.npy");
  ASSERT_GE(bytes.size(), 10u);
  EXPECT_EQ(bytes.substr(0, 8), std::string("\x93NUMPY\x01\x00", 8));
  const std::size_t header_len = static_cast<unsigned char>(bytes[8]) | (static_cast<unsigned char>(bytes[9]) << 8);
  EXPECT_EQ((10 + header_len) % 64, 0u);
  const std::string dict = bytes.substr(10, header_len);
  EXPECT_NE(dict.find("'descr': '<u8'"), std::string::npos) << dict;
  EXPECT_NE(dict.find("'fortran_order': False"), std::string::npos) << dict;
  EXPECT_NE(dict.find("'shape': (3,)"), std::string::npos) << dict;
  EXPECT_EQ(dict.back(), '\n');
  EXPECT_EQ(bytes.size(), 10 + header_len + 24);
}

// Headers as numpy writes them (v1 with the old 16-byte alignment, v2, v3), built here by hand.
TEST_F(TempDirTest, ReadsHandWrittenV1V2V3Headers) {
  const std::vector<std::int32_t> values{-5, 0, 7, 2147483647};
  const std::string data(reinterpret_cast<const char*>(values.data()), values.size() * 4);
  const std::string dict = "{'descr': '<i4', 'fortran_order': False, 'shape': (4,), }";
  for (const int major : {1, 2, 3}) {
    std::string name = "v";
    name += std::to_string(major) + ".npy";
    const fs::path path = dir() / name;
    write_file_bytes(path, npy_bytes(major, dict, major == 1 ? 16 : 64) + data);
    const HostColumn c = read_column(path);
    ASSERT_EQ(c.type(), DType::Int32) << "version " << major;
    ASSERT_EQ(c.size(), 4);
    EXPECT_EQ(std::vector<std::int32_t>(c.as<std::int32_t>(), c.as<std::int32_t>() + 4), values);
  }
}

TEST_F(TempDirTest, ReadsHeaderVariants) {
  // Double quotes, no trailing comma, keys in another order, '=' (native) byte order, no spaces.
  const std::vector<std::uint64_t> values{42, 43};
  const std::string data(reinterpret_cast<const char*>(values.data()), 16);
  for (const std::string dict : {"{\"shape\": (2,), \"fortran_order\": False, \"descr\": \"<u8\"}",
                                 "{'descr': '=u8', 'fortran_order': False, 'shape': (2,)}",
                                 "{'descr':'<u8','fortran_order':False,'shape':(2,)}"}) {
    write_file_bytes(dir() / "x.npy", npy_bytes(1, dict, 64) + data);
    const HostColumn c = read_column(dir() / "x.npy");
    ASSERT_EQ(c.type(), DType::UInt64) << dict;
    ASSERT_EQ(c.size(), 2) << dict;
    EXPECT_EQ(c.as<std::uint64_t>()[1], 43u) << dict;
  }
}

TEST_F(TempDirTest, NarrowTypesGetNumpysOwnDescr) {
  // What numpy writes for them: no byte order for one byte, '<' for two.
  const std::pair<DType, const char*> expected[] = {{DType::Int8, "'|i1'"},  {DType::UInt8, "'|u1'"},
                                                    {DType::Bool, "'|b1'"},  {DType::Int16, "'<i2'"},
                                                    {DType::UInt16, "'<u2'"}, {DType::Float32, "'<f4'"}};
  for (const auto& [type, descr] : expected) {
    const HostColumn c = HostColumn::allocate(type, 3);
    write_column(dir() / "c.npy", c.view());
    std::ifstream in(dir() / "c.npy", std::ios::binary);
    const std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    EXPECT_NE(bytes.find(std::string("'descr': ") + descr), std::string::npos) << dtype_name(type) << ": " << bytes.substr(0, 80);
  }
}

TEST(FileFormat, ByExtension) {
  EXPECT_EQ(file_format_of("a/b/key.npy"), FileFormat::Npy);
  EXPECT_EQ(file_format_of("KEY.NPY"), FileFormat::Npy);
  EXPECT_EQ(file_format_of("key.bin"), FileFormat::Raw);
  EXPECT_EQ(file_format_of("key"), FileFormat::Raw);
  EXPECT_EQ(file_format_of("key.npy.bin"), FileFormat::Raw);
}

}  // namespace
}  // namespace mgjoin::test
