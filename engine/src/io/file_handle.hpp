#pragma once
// POSIX file handle with parallel block IO: one thread rarely saturates an NVMe drive or the
// page-cache copy, so large columns are moved by several threads, each with pread/pwrite on
// disjoint blocks (no shared file offset).
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <string>

namespace mgjoin::detail {

/// A hidden name beside `final_path`, unique per host, process and call, so that concurrent writers never
/// share a temporary file (the rename into place is atomic in one directory).
std::filesystem::path temp_path_for(const std::filesystem::path& final_path);

class FileHandle {
 public:
  /// Opens an existing regular file for reading. @throw InputError "F: cannot open: <reason>".
  static FileHandle open_read(const std::filesystem::path& path);
  /// Creates a new file (fails if it exists) for writing. @throw InputError naming the file.
  static FileHandle create_new(const std::filesystem::path& path);

  FileHandle(FileHandle&& other) noexcept;
  FileHandle& operator=(FileHandle&& other) noexcept;
  FileHandle(const FileHandle&) = delete;
  FileHandle& operator=(const FileHandle&) = delete;
  ~FileHandle();

  std::uint64_t size() const { return size_; }
  const std::string& path() const { return path_; }

  /// Reads exactly `bytes` at `offset`, in parallel when large. @throw InputError on short read.
  void read_exact(void* dst, std::size_t bytes, std::uint64_t offset) const;
  /// Writes exactly `bytes` at `offset`, in parallel when large (16 MiB blocks from 64 MiB), or in blocks of
  /// `block` bytes from two on: a piece of a few tens of MiB, e.g. a join's output window, spread over the
  /// threads. @throw InputError on failure.
  void write_exact(const void* src, std::size_t bytes, std::uint64_t offset, std::size_t block = 0) const;
  /// Sets the file's length to `bytes`. @throw InputError naming the file.
  void resize(std::uint64_t bytes) const;
  /// Closes and reports a deferred write error (NFS, quota). @throw InputError.
  void close();

 private:
  FileHandle(int fd, std::string path, std::uint64_t size) : fd_(fd), path_(std::move(path)), size_(size) {}
  int fd_ = -1;
  std::string path_;
  std::uint64_t size_ = 0;
};

}  // namespace mgjoin::detail
