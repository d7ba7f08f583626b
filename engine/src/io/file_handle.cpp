#include "engine/src/io/file_handle.hpp"

#include <mgjoin/error.hpp>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <omp.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <utility>

namespace mgjoin::detail {
namespace {

// Blocks of 16 MiB keep every thread busy and each syscall long enough to amortise its cost;
// below 64 MiB one thread is as fast as several.
constexpr std::size_t kBlockBytes = std::size_t{16} << 20;
constexpr std::size_t kParallelThreshold = std::size_t{64} << 20;
// IO threads mostly wait on the device or page faults, so more of them than cores still helps.
constexpr int kMaxIoThreads = 8;

std::string reason(int err) { return std::strerror(err); }

using BlockIo = ssize_t (*)(int, void*, std::size_t, off_t);

ssize_t pread_adapter(int fd, void* buf, std::size_t n, off_t off) { return ::pread(fd, buf, n, off); }
ssize_t pwrite_adapter(int fd, void* buf, std::size_t n, off_t off) { return ::pwrite(fd, buf, n, off); }

/// Moves one contiguous block, retrying on EINTR and short transfers. Returns 0 or an errno;
/// -1 means the file ended early (a read returned 0).
int transfer_block(BlockIo io, int fd, char* buf, std::size_t bytes, std::uint64_t offset) {
  while (bytes > 0) {
    const ssize_t n = io(fd, buf, bytes, static_cast<off_t>(offset));
    if (n < 0) {
      if (errno == EINTR) continue;
      return errno;
    }
    if (n == 0) return -1;
    buf += n;
    bytes -= static_cast<std::size_t>(n);
    offset += static_cast<std::uint64_t>(n);
  }
  return 0;
}

/// Splits [0, bytes) into blocks of `block` bytes moved by up to kMaxIoThreads threads (one thread below
/// `threshold`); returns the first error.
int transfer_parallel(BlockIo io, int fd, char* buf, std::size_t bytes, std::uint64_t offset,
                      std::size_t block = kBlockBytes, std::size_t threshold = kParallelThreshold) {
  if (bytes < threshold) return transfer_block(io, fd, buf, bytes, offset);
  const std::int64_t blocks = static_cast<std::int64_t>((bytes + block - 1) / block);
  std::atomic<int> error{0};
#pragma omp parallel for schedule(dynamic, 1) num_threads(kMaxIoThreads)
  for (std::int64_t b = 0; b < blocks; ++b) {
    if (error.load(std::memory_order_relaxed) != 0) continue;
    const std::size_t begin = static_cast<std::size_t>(b) * block;
    const std::size_t len = std::min(block, bytes - begin);
    if (const int e = transfer_block(io, fd, buf + begin, len, offset + begin); e != 0) {
      int expected = 0;
      error.compare_exchange_strong(expected, e);
    }
  }
  return error.load();
}

}  // namespace

FileHandle FileHandle::open_read(const std::filesystem::path& path) {
  // O_NONBLOCK: opening a FIFO for reading would otherwise wait for a writer, forever. It is cleared
  // once the file is known to be a regular file (where it changes nothing anyway).
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) throw InputError(path.string() + ": cannot open: " + reason(errno));
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    throw InputError(path.string() + ": not a regular file");
  }
  ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) & ~O_NONBLOCK);
  return FileHandle(fd, path.string(), static_cast<std::uint64_t>(st.st_size));
}

FileHandle FileHandle::create_new(const std::filesystem::path& path) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (fd < 0) throw InputError(path.string() + ": cannot create: " + reason(errno));
  return FileHandle(fd, path.string(), 0);
}

FileHandle::FileHandle(FileHandle&& other) noexcept
    : fd_(std::exchange(other.fd_, -1)), path_(std::move(other.path_)), size_(other.size_) {}

FileHandle& FileHandle::operator=(FileHandle&& other) noexcept {
  if (this != &other) {
    if (fd_ >= 0) ::close(fd_);
    fd_ = std::exchange(other.fd_, -1);
    path_ = std::move(other.path_);
    size_ = other.size_;
  }
  return *this;
}

FileHandle::~FileHandle() {
  if (fd_ >= 0) ::close(fd_);
}

void FileHandle::read_exact(void* dst, std::size_t bytes, std::uint64_t offset) const {
  const int e = transfer_parallel(pread_adapter, fd_, static_cast<char*>(dst), bytes, offset);
  if (e == -1) throw InputError(path_ + ": truncated: file ended while reading its data");
  if (e != 0) throw InputError(path_ + ": read failed: " + reason(e));
}

void FileHandle::write_exact(const void* src, std::size_t bytes, std::uint64_t offset, std::size_t block) const {
  // pwrite never modifies the buffer; the adapter type is shared with pread.
  const int e = transfer_parallel(pwrite_adapter, fd_, static_cast<char*>(const_cast<void*>(src)), bytes, offset,
                                  block ? block : kBlockBytes, block ? 2 * block : kParallelThreshold);
  if (e == -1) throw InputError(path_ + ": write failed: no progress");
  if (e != 0) throw InputError(path_ + ": write failed: " + reason(e));
}

void FileHandle::resize(std::uint64_t bytes) const {
  if (::ftruncate(fd_, static_cast<off_t>(bytes)) != 0) throw InputError(path_ + ": cannot set its length: " + reason(errno));
}

void FileHandle::close() {
  if (fd_ < 0) return;
  const int rc = ::close(std::exchange(fd_, -1));
  if (rc != 0 && errno != EINTR) throw InputError(path_ + ": write failed on close: " + reason(errno));
}

}  // namespace mgjoin::detail
