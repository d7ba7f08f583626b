#pragma once
// Runs the built `mgjoin` binary (MGJOIN_CLI_PATH) in a fresh temporary directory and captures its
// exit code, stdout and stderr; column files written and read back; two small tables to join.
#include "io/io_test_util.hpp"

#include <mgjoin/io.hpp>
#include <mgjoin/types.hpp>

#include <gtest/gtest.h>
#include <sys/wait.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

namespace mgjoin::test {

struct CliResult {
  int exit_code = -1;
  std::string out, err;
  /// stderr lines (without the newline).
  std::vector<std::string> err_lines() const {
    std::vector<std::string> lines;
    std::size_t begin = 0;
    while (begin < err.size()) {
      const auto end = err.find('\n', begin);
      lines.push_back(err.substr(begin, end - begin));
      if (end == std::string::npos) break;
      begin = end + 1;
    }
    return lines;
  }
};

class CliTest : public TempDirTest {
 protected:
  std::string path(const std::string& name) const { return (dir() / name).string(); }

  /// Runs `mgjoin <args>` with the temp dir as working directory; `prefix` goes before the program in
  /// the shell command ("env A=1 ", "ulimit -f 64; ").
  CliResult mgjoin(const std::string& args, const std::string& prefix = "") const {
    return run(MGJOIN_CLI_PATH, args, prefix);
  }

  /// As mgjoin(), of another build of the CLI (`program`: its path). MGJOIN_CLI_WRAPPER, a command line,
  /// goes before the program: scripts/device-sanitize.sh runs each mgjoin process of the cli suite under
  /// compute-sanitizer so (its report in a file of its own, stdout and stderr the program's).
  CliResult run(const std::string& program, const std::string& args, const std::string& prefix = "") const {
    const std::string err_file = (dir() / ".stderr").string();
    const char* wrapper = std::getenv("MGJOIN_CLI_WRAPPER");
    const std::string wrapped = wrapper && *wrapper ? std::string(wrapper) + " " : "";
    const std::string cmd =
        "cd '" + dir().string() + "' && " + prefix + wrapped + "'" + program + "' " + args + " 2>'" + err_file + "'";
    CliResult r;
    FILE* pipe = ::popen(cmd.c_str(), "r");
    if (!pipe) return r;
    char buf[4096];
    for (std::size_t n; (n = std::fread(buf, 1, sizeof buf, pipe)) > 0;) r.out.append(buf, n);
    const int status = ::pclose(pipe);
    r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    std::ifstream in(err_file);
    r.err.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
    std::filesystem::remove(err_file);
    return r;
  }

  void write_file(const std::string& name, const std::string& bytes) const { write_file_bytes(dir() / name, bytes); }

  /// A hand-made v1 .npy header for a 1-D array of `rows` elements of numpy type `descr`.
  static std::string npy_header(const std::string& descr, int rows) {
    return npy_bytes(1, "{'descr': '" + descr + "', 'fortran_order': False, 'shape': (" + std::to_string(rows) + ",), }", 64);
  }

  /// Names in `sub` (hidden temp files included); empty when `sub` does not exist.
  std::vector<std::string> entries(const std::string& sub) const {
    std::vector<std::string> names;
    if (!std::filesystem::is_directory(dir() / sub)) return names;
    for (const auto& e : std::filesystem::directory_iterator(dir() / sub)) names.push_back(e.path().filename().string());
    return names;
  }
};

/// Writes `values` as a column file of `type` (its format by the extension).
template <class T>
void write_values(const std::filesystem::path& path, DType type, const std::vector<T>& values) {
  write_column(path, ColumnView{values.data(), static_cast<std::int64_t>(values.size()), type});
}

template <class T>
std::vector<T> read_values(const std::filesystem::path& path) {
  const HostColumn c = read_column(path);
  return std::vector<T>(c.as<T>(), c.as<T>() + c.size());
}

/// Two small tables as directories: a (k int32 {1, 2, 2, 3}, p int16) and b (k int32 {2, 2, 4}, w float64).
class TwoTablesCliTest : public CliTest {
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
  /// `join` of a and b on k on the CPU path, and `more`.
  std::string join_ab(const std::string& more) const { return "join --r-dir a --s-dir b --r-key k --s-key k --gpus 0 " + more; }
};

}  // namespace mgjoin::test
