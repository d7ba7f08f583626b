// Fuzzed column files (issue 21): every malformed .npy or raw file below, built byte by byte here,
// gives an InputError whose one-line message names the file and the problem. Nothing else may escape
// (no crash, no other exception, no column returned). bad_input_test.cpp covers the plainer cases
// (bad magic text, version 4.0, '>i4', '<f2', '|O', '|u1', structured, (1, 2), (), fortran_order True,
// an extra or repeated key, a missing 'shape', trailing data, a raw file of 12 bytes as uint64).
#include <mgjoin/error.hpp>
#include <mgjoin/io.hpp>

#include "io_test_util.hpp"

#include <gtest/gtest.h>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <future>
#include <optional>
#include <string>
#include <vector>

namespace mgjoin::test {
namespace {

namespace fs = std::filesystem;
using namespace std::string_literals;

/// A valid header's dict for `descr` and `shape` (numpy's spelling: '<u8', "(2,)").
std::string dict(const std::string& descr, const std::string& shape, const std::string& fortran = "False") {
  return "{'descr': '" + descr + "', 'fortran_order': " + fortran + ", 'shape': " + shape + ", }";
}

/// Magic, version major.minor and a header length of `len_bytes` bytes (2 for v1, 4 for v2/v3), little-endian.
std::string prefix(int major, int minor, std::uint64_t header_len, int len_bytes) {
  std::string out("\x93NUMPY", 6);
  out += static_cast<char>(major);
  out += static_cast<char>(minor);
  for (int i = 0; i < len_bytes; ++i) out += static_cast<char>((header_len >> (8 * i)) & 0xff);
  return out;
}

/// A v1 file whose header text is exactly `text` (no padding or newline added).
std::string raw_header(const std::string& text) { return prefix(1, 0, text.size(), 2) + text; }

/// A v1 file: `dict` padded to a multiple of 64 bytes and ended by '\n', then `data`.
std::string npy(const std::string& dict_text, const std::string& data = std::string(16, '\0')) {
  return npy_bytes(1, dict_text, 64) + data;
}

std::string repeated(const std::string& text, int times) {
  std::string out;
  for (int i = 0; i < times; ++i) out += text;
  return out;
}

const std::string kTwoRows = dict("<u8", "(2,)");  // 16 bytes of data

/// The valid v1 file of kTwoRows with its version bytes set to major.minor.
std::string with_version(int major, int minor) {
  std::string bytes = npy(kTwoRows);
  bytes[6] = static_cast<char>(major);
  bytes[7] = static_cast<char>(minor);
  return bytes;
}

struct BadFile {
  std::string name;   ///< what is wrong, also the test's label
  std::string bytes;  ///< the whole file
  std::string what;   ///< a piece of the message that says what is wrong
  std::string file = "bad.npy";
  std::optional<DType> raw_type = std::nullopt;
};

std::vector<BadFile> bad_npy_files() {
  return {
      // The prefix: magic, version, header length.
      {"near-miss magic", std::string("\x93NUMPy\x01\x00", 8) + npy(kTwoRows).substr(8), "bad magic"},
      {"magic without its first byte", "NUMPY" + npy(kTwoRows).substr(6), "bad magic"},
      {"version 0.0", with_version(0, 0), "version 0.0"},
      {"version 1.1", with_version(1, 1), "version 1.1"},
      {"version 255.0", with_version(255, 0), "version 255.0"},
      {"header length past the end of the file", prefix(1, 0, 0xffff, 2) + npy(kTwoRows).substr(10),
       "ends inside its .npy header"},
      {"v2 header length of 4 GiB", prefix(2, 0, 0xffffffff, 4) + npy(kTwoRows).substr(10),
       "header length 4294967295 bytes"},
      {"header length 0", prefix(1, 0, 0, 2), "empty header"},
      {"header length shorter than the dict", prefix(1, 0, 30, 2) + npy(kTwoRows).substr(10),
       "does not end with '\\n'"},
      // This one and the first two of the dict's were read before: nothing after the '}' was looked at.
      {"header padded with spaces but without '\\n'",
       raw_header(kTwoRows + std::string(10, ' ')) + std::string(16, '\0'),
       "does not end with '\\n'"},
      // The dict itself.
      {"garbage after the dict", npy(kTwoRows + " garbage"), "after the dict: 'garbage'"},
      {"a second dict after the dict", npy(kTwoRows + kTwoRows), "after the dict"},
      {"a list, not a dict", npy("['descr', '<u8']"), "expected '{'"},
      {"the dict never closes", npy("{'descr': '<u8', 'fortran_order': False, 'shape': (2,), "), "not closed"},
      {"missing 'descr'", npy("{'fortran_order': False, 'shape': (2,), }"),
       "needs 'descr', 'fortran_order' and 'shape'"},
      {"missing 'fortran_order'", npy("{'descr': '<u8', 'shape': (2,), }"), "needs 'descr'"},
      {"repeated 'shape'", npy("{'descr': '<u8', 'fortran_order': False, 'shape': (2,), 'shape': (2,), }"),
       "key 'shape' given twice"},
      {"a key that is not a string", npy("{1: 2, 'descr': '<u8', 'fortran_order': False, 'shape': (2,), }"),
       "expected a quoted string"},
      {"a key without its colon", npy("{'descr' '<u8', 'fortran_order': False, 'shape': (2,), }"), "expected ':'"},
      {"a key without a value", npy("{'descr': , 'fortran_order': False, 'shape': (2,), }"), "missing value"},
      {"items without a comma between them", npy("{'descr': '<u8' 'fortran_order': False, 'shape': (2,), }"),
       "expected ',' or '}'"},
      {"a string closed too late", npy("{'descr': '<u8, 'fortran_order': False, 'shape': (2,), }"),
       "expected ',' or '}' after the value of 'descr'"},
      {"a string cut by the end of the line", raw_header("{'descr': '<u8\n"), "unterminated string"},
      {"descr a number", npy("{'descr': 8, 'fortran_order': False, 'shape': (2,), }"),
       "'descr' must be a dtype string"},
      {"fortran_order 0", npy(dict("<u8", "(2,)", "0")), "'fortran_order' must be True or False"},
      {"fortran_order a string", npy(dict("<u8", "(2,)", "'False'")), "'fortran_order' must be True or False"},
      {"fortran_order Falsey", npy(dict("<u8", "(2,)", "Falsey")), "'fortran_order' must be True or False"},
      {"shape a list", npy(dict("<u8", "[2]")), "'shape' must be a tuple"},
      // (2) is the integer 2 in Python: numpy refuses it, so must mgjoin.
      {"shape (2) without its comma", npy(dict("<u8", "(2)")), "'shape' must be a tuple"},
      // Absurd shapes.
      {"shape 2^63", npy(dict("<u8", "(9223372036854775808,)")), "size '9223372036854775808' is more than 2^63 - 1"},
      {"shape 10^30", npy(dict("<u8", "(1000000000000000000000000000000,)")), "is more than 2^63 - 1"},
      {"shape negative", npy(dict("<u8", "(-2,)")), "negative size -2"},
      {"shape hugely negative", npy(dict("<u8", "(-99999999999999999999,)")), "negative size '-99999999999999999999'"},
      {"shape 1.5", npy(dict("<u8", "(1.5,)")), "'shape' must hold non-negative integers"},
      {"shape 1e3", npy(dict("<u8", "(1e3,)")), "'shape' must hold non-negative integers"},
      {"shape a string", npy(dict("<u8", "('2',)")), "'shape' must hold non-negative integers"},
      {"shape (,)", npy(dict("<u8", "(,)")), "'shape' must hold non-negative integers"},
      {"shape (2,,)", npy(dict("<u8", "(2,,)")), "'shape' must hold non-negative integers"},
      {"shape (2 2,)", npy(dict("<u8", "(2 2,)")), "'shape' must hold non-negative integers"},
      {"shape nested", npy(dict("<u8", "((2,),)")), "'shape' must hold non-negative integers"},
      {"3-D", npy(dict("<u8", "(1, 1, 2)")), "3-D"},
      {"2-D of one column", npy(dict("<u8", "(2, 1)")), "2-D"},
      // Found by the fuzzer: the message quoted every size.
      {"100-D", npy(dict("<u8", "(" + repeated("9223372036854775807, ", 100) + ")")),
       "unsupported shape (9223372036854775807, 9223372036854775807, 9223372036854775807, 9223372036854775807, ...) "
       "(100-D array"},
      // Rows times the width past 2^64: the message must not quote the wrapped product.
      {"shape x 8 bytes overflows 64 bits", npy(dict("<u8", "(2305843009213693953,)")),
       "2305843009213693953 uint64 elements (more than 2^64 bytes) but the file holds 16 bytes"},
      {"shape x 4 bytes overflows 64 bits", npy(dict("<i4", "(9223372036854775807,)")),
       "9223372036854775807 int32 elements (more than 2^64 bytes)"},
      {"shape x 8 bytes just below 2^64", npy(dict("<u8", "(1152921504606846976,)")),
       "(9223372036854775808 bytes) but the file holds 16 bytes"},
      // Types.
      {"big-endian int64", npy(dict(">i8", "(2,)")), "unsupported dtype '>i8' (big-endian"},
      {"big-endian float64", npy(dict(">f8", "(2,)")), "big-endian"},
      {"bool with a byte order it cannot have", npy(dict(">b1", "(16,)")), "unsupported dtype '>b1' (big-endian"},
      {"float16", npy(dict("<f2", "(8,)")), "unsupported dtype '<f2' (float16"},
      {"unicode strings", npy(dict("<U4", "(1,)")), "unsupported dtype '<U4' (unicode strings"},
      {"byte strings", npy(dict("|S16", "(1,)")), "unsupported dtype '|S16' (byte strings"},
      {"complex", npy(dict("<c16", "(1,)")), "unsupported dtype '<c16' (complex"},
      {"datetime", npy(dict("<M8[ns]", "(2,)")), "unsupported dtype '<M8[ns]' (datetime"},
      {"void", npy(dict("|V8", "(2,)")), "unsupported dtype '|V8' (raw bytes"},
      {"object arrays under another byte order", npy(dict("<O", "(2,)")), "unsupported dtype '<O' (Python objects"},
      {"int16 written without a byte order", npy(dict("|i2", "(8,)")), "unsupported dtype '|i2' (byte order not applicable"},
      {"int128", npy(dict("<i16", "(1,)")), "unsupported dtype '<i16'"},
      // numpy writes type codes ('<u8'), never names: '<uint64' is not a numpy type string.
      {"a type name instead of its code", npy(dict("<uint64", "(2,)")), "unsupported dtype '<uint64'"},
      {"descr with a trailing space", npy(dict("<u8 ", "(2,)")), "unsupported dtype '<u8 '"},
      {"descr without a byte order", npy(dict("u8", "(2,)")), "unsupported dtype 'u8'"},
      {"descr empty", npy(dict("", "(2,)")), "unsupported dtype ''"},
      // Bytes that are not ASCII text: numpy writes the dict in ASCII.
      {"latin-1 byte in descr", npy(dict("<u8\xe9", "(2,)")), "byte 0xe9 in the header is not ASCII"},
      {"NUL byte in the dict", npy("{'descr': '<u8',\0 'fortran_order': False, 'shape': (2,), }"s),
       "byte 0x00 in the header is not ASCII"},
      {"UTF-8 key", npy("{'d\xc3\xa9scr': '<u8', 'fortran_order': False, 'shape': (2,), }"), "byte 0xc3"},
      {"a tab inside descr", npy(dict("<u\t8", "(2,)")), "unsupported dtype '<u\\t8'"},
      // A long header: the message quotes only its start.
      {"a long structured descr",
       npy("{'descr': [" + repeated("(", 2500) + repeated(")", 2500) + "], 'fortran_order': False, 'shape': (2,), }"),
       "structured arrays are not supported"},
      {"a header of spaces", raw_header(std::string(200, ' ') + "\n"), "expected '{'"},
  };
}

std::vector<BadFile> bad_raw_files() {
  std::vector<BadFile> files;
  for (const int bytes : {1, 2, 3, 5, 7})
    files.push_back({"int32 of " + std::to_string(bytes) + " bytes", std::string(bytes, 'x'), "not a multiple of 4",
                     "k.bin", DType::Int32});
  for (const int bytes : {1, 4, 7, 9, 15, 17})
    files.push_back({"float64 of " + std::to_string(bytes) + " bytes", std::string(bytes, 'x'), "not a multiple of 8",
                     "v.raw", DType::Float64});
  files.push_back({"uint64 of 4 bytes in a file without extension", std::string(4, 'x'), "not a multiple of 8", "key",
                   DType::UInt64});
  files.push_back({"empty .npy", "", "empty file"});
  files.push_back({"empty .NPY (upper case)", "", "empty file", "KEY.NPY"});
  return files;
}

class FuzzedNpy : public TempDirTest {
 protected:
  /// Reads `f` both ways (inspect and read); each must throw an InputError that names the file and
  /// the problem, on one printable line of reasonable length.
  void expect_refused(const BadFile& f) {
    SCOPED_TRACE(f.name);
    const fs::path path = dir() / f.file;
    write_file_bytes(path, f.bytes);
    expect_input_error([&] { (void)read_column(path, f.raw_type); }, path, f.what);
    expect_input_error([&] { (void)inspect_column_file(path, f.raw_type); }, path, f.what);
  }

  template <class F>
  static void expect_input_error(F&& read, const fs::path& path, const std::string& what) {
    try {
      read();
      ADD_FAILURE() << "accepted";
    } catch (const InputError& e) {
      const std::string msg = e.what();
      EXPECT_EQ(msg.rfind(path.string() + ":", 0), 0u) << "does not start with the file name: " << msg;
      EXPECT_NE(msg.find(what), std::string::npos) << "expected '" << what << "' in: " << msg;
      EXPECT_LE(msg.size(), path.string().size() + 200) << "too long for one line: " << msg;
      for (const char c : msg)
        ASSERT_TRUE(c >= 0x20 && c < 0x7f) << "byte " << int(static_cast<unsigned char>(c)) << " in: " << msg;
    } catch (const std::exception& e) {
      ADD_FAILURE() << "not an InputError: " << e.what();
    }
  }
};

TEST_F(FuzzedNpy, EveryMalformedHeaderIsRefusedWithItsReason) {
  for (const BadFile& f : bad_npy_files()) expect_refused(f);
}

TEST_F(FuzzedNpy, RawFilesOfOddLengthsAndEmptyNpyFilesAreRefused) {
  for (const BadFile& f : bad_raw_files()) expect_refused(f);
}

// The files the table above mutates are valid: v1, v2 and v3 headers, every supported type.
TEST_F(FuzzedNpy, TheUnmutatedFilesAreRead) {
  write_file_bytes(dir() / "v1.npy", npy(kTwoRows, std::string("\x01\0\0\0\0\0\0\0\x02\0\0\0\0\0\0\0", 16)));
  write_file_bytes(dir() / "v2.npy", npy_bytes(2, kTwoRows, 64) + std::string(16, '\0'));
  write_file_bytes(dir() / "v3.npy", npy_bytes(3, kTwoRows, 64) + std::string(16, '\0'));
  write_file_bytes(dir() / "tight.npy", raw_header(kTwoRows + "\n") + std::string(16, '\0'));  // no padding
  write_file_bytes(dir() / "spaced.npy", npy("{ 'descr' : '<u8' , 'fortran_order' : False , 'shape' : ( 2 , ) }"));
  write_file_bytes(dir() / "dq.npy", npy("{\"descr\": \"<u8\", \"fortran_order\": False, \"shape\": (2,)}"));
  const HostColumn v1 = read_column(dir() / "v1.npy");
  ASSERT_EQ(v1.size(), 2);
  EXPECT_EQ(v1.type(), DType::UInt64);
  EXPECT_EQ(static_cast<const std::uint64_t*>(v1.data())[1], 2u);
  for (const char* name : {"v2.npy", "v3.npy", "tight.npy", "spaced.npy", "dq.npy"})
    EXPECT_EQ(read_column(dir() / name).size(), 2) << name;

  const std::pair<const char*, DType> types[] = {{"<i4", DType::Int32},   {"<u4", DType::UInt32},
                                                 {"<i8", DType::Int64},   {"<u8", DType::UInt64},
                                                 {"<f4", DType::Float32}, {"<f8", DType::Float64}};
  for (const auto& [descr, type] : types) {
    write_file_bytes(dir() / "t.npy", npy(dict(descr, "(4,)"), std::string(4 * dtype_size(type), '\0')));
    EXPECT_EQ(read_column(dir() / "t.npy").type(), type) << descr;
  }
  write_file_bytes(dir() / "none.npy", npy(dict("<u8", "(0,)"), ""));
  EXPECT_EQ(read_column(dir() / "none.npy").size(), 0);
  // An empty raw file is a column of no rows (the only way to write one raw), not an error.
  write_file_bytes(dir() / "none.bin", "");
  EXPECT_EQ(read_column(dir() / "none.bin", DType::Int64).size(), 0);
}

// NumPy's fixed-width strings, which inspect_column_file refuses (bad_npy_files: "unicode strings"),
// are what inspect_string_column_file reads: the kind, the width, the rows and the bytes as written.
TEST_F(FuzzedNpy, FixedWidthStringFilesAreReadByTheStringReaderOnly) {
  write_file_bytes(dir() / "s.npy", npy(dict("|S3", "(2,)"), std::string("ab\0xyz", 6)));
  const std::string u = std::string("h\0\0\0i\0\0\0", 8) + std::string("\xE9\0\0\0\0\0\0\0", 8);  // "hi", "é"
  write_file_bytes(dir() / "u.npy", npy(dict("<U2", "(2,)"), u));
  const auto s = inspect_string_column_file(dir() / "s.npy");
  ASSERT_TRUE(s.has_value());
  EXPECT_FALSE(s->unicode);
  EXPECT_EQ(s->width, 3);
  EXPECT_EQ(s->size, 2);
  EXPECT_EQ(s->element_bytes(), 3u);
  EXPECT_EQ(read_string_column_file(dir() / "s.npy", *s), std::string("ab\0xyz", 6));
  const auto w = inspect_string_column_file(dir() / "u.npy");
  ASSERT_TRUE(w.has_value());
  EXPECT_TRUE(w->unicode);
  EXPECT_EQ(w->width, 2);
  EXPECT_EQ(w->element_bytes(), 8u);
  EXPECT_EQ(read_string_column_file(dir() / "u.npy", *w), u);
  // Other dtypes and raw files are not strings; the numeric reader still refuses strings.
  write_file_bytes(dir() / "n.npy", npy(kTwoRows));
  EXPECT_FALSE(inspect_string_column_file(dir() / "n.npy").has_value());
  write_file_bytes(dir() / "n.bin", std::string(8, '\0'));
  EXPECT_FALSE(inspect_string_column_file(dir() / "n.bin").has_value());
  expect_input_error([&] { (void)inspect_column_file(dir() / "u.npy"); }, dir() / "u.npy", "unicode strings");
  // Malformed string headers get the same messages as numeric ones; a zero width is no string dtype.
  for (const BadFile& f : std::vector<BadFile>{
           {"U2 cut short", npy(dict("<U2", "(2,)"), std::string(12, 'x')), "2 U2 string elements (16 bytes) but the file holds 12 bytes"},
           {"S3 longer", npy(dict("|S3", "(1,)"), std::string(5, 'x')), "2 bytes of unexpected data"},
           {"big-endian U", npy(dict(">U2", "(1,)"), std::string(8, 'x')), "big-endian"},
           {"S0", npy(dict("|S0", "(1,)"), ""), "unsupported dtype '|S0'"},
           {"S of 2-D", npy(dict("|S1", "(1, 1)"), "x"), "2-D"}}) {
    SCOPED_TRACE(f.name);
    write_file_bytes(dir() / f.file, f.bytes);
    expect_input_error([&] { (void)inspect_string_column_file(dir() / f.file); }, dir() / f.file, f.what);
  }
}

/// What a file of two uint64 rows cut after `n` bytes is refused for.
std::string cut_reason(std::size_t n, std::size_t prefix_bytes, std::size_t header_bytes) {
  if (n == 0) return "empty file";
  if (n < prefix_bytes) return "truncated .npy header";
  if (n < header_bytes) return "truncated: the file ends inside its .npy header";
  return "(16 bytes) but the file holds " + std::to_string(n - header_bytes) + " bytes";
}

// Cut a valid file (v1 and v2 prefix) at every byte, and make it longer by every byte count up to
// one element: each is refused, and says where it ends.
TEST_F(FuzzedNpy, FilesCutAtEveryByteOrLongerAreRefused) {
  for (const int major : {1, 2}) {
    const std::size_t prefix_bytes = major == 1 ? 10 : 12;
    const std::string header = npy_bytes(major, kTwoRows, 64);
    const std::string full = header + std::string(16, '\0');
    // (not "v" + std::to_string(major): GCC 12 warns about it, -Wrestrict, wrongly)
    const std::string version = std::string("v").append(std::to_string(major));
    for (std::size_t n = 0; n < full.size(); ++n) {
      const std::string what = cut_reason(n, prefix_bytes, header.size());
      expect_refused({version + " cut at " + std::to_string(n), full.substr(0, n), what});
    }
    for (std::size_t extra = 1; extra <= 8; ++extra)
      expect_refused({version + " longer by " + std::to_string(extra), full + std::string(extra, 'x'),
                      std::to_string(extra) + " bytes of unexpected data after the 2 elements"});
  }
}

// A named pipe called fifo.npy: opening it for reading used to wait for a writer forever.
TEST_F(FuzzedNpy, AFifoIsRefusedWithoutWaitingForAWriter) {
  const fs::path fifo = dir() / "fifo.npy";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0) << std::strerror(errno);
  auto read = std::async(std::launch::async, [&] {
    expect_input_error([&] { (void)read_column(fifo); }, fifo, "not a regular file");
  });
  if (read.wait_for(std::chrono::seconds(10)) == std::future_status::timeout) {
    ADD_FAILURE() << "read_column is blocked on the FIFO";
    const int fd = ::open(fifo.c_str(), O_WRONLY | O_NONBLOCK);  // releases the blocked open
    if (fd >= 0) ::close(fd);
  }
  read.get();
}

TEST_F(FuzzedNpy, ACharacterDeviceIsRefused) {
  fs::create_symlink("/dev/zero", dir() / "zero.npy");
  expect_input_error([&] { (void)read_column(dir() / "zero.npy"); }, dir() / "zero.npy", "not a regular file");
}

}  // namespace
}  // namespace mgjoin::test
