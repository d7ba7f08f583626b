#pragma once
// Helpers for the column-file tests: a fresh temporary directory per test, raw file bytes, and
// .npy files assembled by hand (so that expected headers are not produced by the code under test).
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>

namespace mgjoin::test {

class TempDirTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string pattern = (std::filesystem::temp_directory_path() / "mgjoin-io-XXXXXX").string();
    ASSERT_NE(::mkdtemp(pattern.data()), nullptr);
    dir_ = pattern;
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  const std::filesystem::path& dir() const { return dir_; }

  /// Names of every entry in dir(), hidden temp files included.
  std::vector<std::string> entries() const {
    std::vector<std::string> names;
    for (const auto& e : std::filesystem::directory_iterator(dir_)) names.push_back(e.path().filename().string());
    return names;
  }

 private:
  std::filesystem::path dir_;
};

inline std::string read_file_bytes(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

inline void write_file_bytes(const std::filesystem::path& p, const std::string& bytes) {
  std::ofstream out(p, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

/// Magic, version, little-endian header length and `dict` padded with spaces + '\n' to `align`.
inline std::string npy_bytes(int major, std::string dict, std::size_t align) {
  const std::size_t prefix = major == 1 ? 10 : 12;
  while ((prefix + dict.size() + 1) % align != 0) dict += ' ';
  dict += '\n';
  std::string out("\x93NUMPY", 6);
  out += static_cast<char>(major);
  out += '\0';
  for (std::size_t i = 0; i < prefix - 8; ++i) out += static_cast<char>((dict.size() >> (8 * i)) & 0xff);
  return out + dict;
}

}  // namespace mgjoin::test
