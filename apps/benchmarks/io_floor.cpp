// The file system's floors under `mgjoin join` (issue 41): how fast these files can be read into the
// page-locked memory a join reads them into, buffered and with O_DIRECT, and how fast bytes can be
// written into new files, with and without fsync. A plain pread/pwrite loop in large blocks on N threads,
// written here on purpose: a floor must not be mgjoin's own reader (engine/src/io/file_handle.cpp).
//
//   bench_io_floor [--threads 8] [--repeat 3] [--block-mib 16] [--no-direct] [--json] [FILE...]
//                  [--write BYTES --write-dir DIR [--write-files 3]]
//
// Each figure is the median of --repeat runs after a warm-up (which also fills the page cache for the
// buffered read). Without a CUDA device the reads go into ordinary memory, and the output says so.
#include "alloc/backings.hpp"
#include "apps/benchmarks/median_time.hpp"
#include "core/byte_size.hpp"
#include "core/device.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <memory>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

namespace {

namespace fs = std::filesystem;
using mgjoin::bench::seconds_of;

// O_DIRECT needs the buffer, the offset and the length aligned to the device's logical block; a page
// covers every block size in use.
constexpr std::size_t kAlign = 4096;

struct Options {
  int threads = 8;
  int repeat = 3;
  std::size_t block = std::size_t{16} << 20;
  bool json = false, direct = true;
  std::vector<std::string> files;
  std::uint64_t write_bytes = 0;
  std::string write_dir;
  int write_files = 3;
};

/// One line on stderr and exit 1: what the user gave that cannot be measured.
class Failure : public std::runtime_error {
  using std::runtime_error::runtime_error;
};

[[noreturn]] void usage(const std::string& why) {
  std::fprintf(stderr,
               "bench_io_floor: %s\nusage: bench_io_floor [--threads N] [--repeat N] [--block-mib N] [--no-direct] [--json] "
               "[FILE...] [--write BYTES --write-dir DIR [--write-files K]]\n",
               why.c_str());
  std::exit(2);
}

int positive_int(const std::string& option, const std::string& text) {
  char* end = nullptr;
  const long v = std::strtol(text.c_str(), &end, 10);
  if (end == text.c_str() || *end != '\0' || v < 1 || v > 4096) usage(option + " " + text + ": expected a positive integer");
  return static_cast<int>(v);
}

Options parse(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) usage(a + ": missing value");
      return argv[++i];
    };
    if (a == "--threads") o.threads = positive_int(a, value());
    else if (a == "--repeat") o.repeat = positive_int(a, value());
    else if (a == "--block-mib") o.block = static_cast<std::size_t>(positive_int(a, value())) << 20;
    else if (a == "--json") o.json = true;
    else if (a == "--no-direct") o.direct = false;
    else if (a == "--write-dir") o.write_dir = value();
    else if (a == "--write-files") o.write_files = positive_int(a, value());
    else if (a == "--write") {
      const std::string v = value();
      const auto bytes = mgjoin::detail::parse_byte_size(v);
      if (!bytes || *bytes == 0) usage("--write " + v + ": expected a byte count like 4096, 512M or 24G");
      o.write_bytes = *bytes;
    } else if (a.starts_with("-")) usage("unknown option " + a);
    else o.files.push_back(a);
  }
  if (o.files.empty() && o.write_bytes == 0) usage("nothing to measure: name files to read, or --write BYTES");
  if (o.write_bytes > 0 && o.write_dir.empty()) usage("--write needs --write-dir DIR");
  if (o.write_bytes == 0 && !o.write_dir.empty()) usage("--write-dir needs --write BYTES");
  return o;
}

std::string reason(int err) { return std::strerror(err); }

/// A file open for the length of a measurement.
class Fd {
 public:
  Fd(const std::string& path, int flags, mode_t mode = 0) : fd_(::open(path.c_str(), flags | O_CLOEXEC, mode)) {}
  ~Fd() {
    if (fd_ >= 0) ::close(fd_);
  }
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  int get() const { return fd_; }

 private:
  int fd_;
};

/// Page-locked memory where a CUDA device exists (the join reads into pinned memory then), ordinary
/// page-aligned memory otherwise; the project's backings are the one place that allocates either.
class Buffer {
 public:
  explicit Buffer(std::size_t bytes) {
    bytes = std::max(bytes, kAlign);
    if (mgjoin::gpu::device_count() > 0) pinned_ = std::make_unique<mgjoin::alloc::PinnedHostBacking>(bytes);
    else host_ = std::make_unique<mgjoin::alloc::HostBacking>(bytes, kAlign);
    std::memset(data(), 0x5a, bytes);  // every page touched before any timing
  }
  std::byte* data() const { return pinned_ ? pinned_->base() : host_->base(); }
  bool pinned() const { return pinned_ != nullptr; }

 private:
  std::unique_ptr<mgjoin::alloc::PinnedHostBacking> pinned_;
  std::unique_ptr<mgjoin::alloc::HostBacking> host_;
};

/// One block of one file: where it lies in the file and in the buffer.
struct Block {
  int fd;
  std::uint64_t offset;
  std::size_t bytes;
  std::byte* at;
};

/// Runs `blocks` on `threads` threads, each taking the next block; the first errno, or 0.
template <class Io>
int run_blocks(const std::vector<Block>& blocks, int threads, Io io) {
  std::atomic<std::size_t> next{0};
  std::atomic<int> error{0};
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t)
    pool.emplace_back([&] {
      for (std::size_t b = next++; b < blocks.size() && error.load() == 0; b = next++)
        if (const int e = io(blocks[b]); e != 0) {
          int expected = 0;
          error.compare_exchange_strong(expected, e);
        }
    });
  for (auto& t : pool) t.join();
  return error.load();
}

/// pread of a whole block, retrying on EINTR and short reads; a read that ends the file early is done.
int read_block(const Block& b) {
  std::size_t done = 0;
  while (done < b.bytes) {
    const ssize_t n = ::pread(b.fd, b.at + done, b.bytes - done, static_cast<off_t>(b.offset + done));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return errno;
    if (n == 0) return 0;
    done += static_cast<std::size_t>(n);
  }
  return 0;
}

int write_block(const Block& b) {
  std::size_t done = 0;
  while (done < b.bytes) {
    const ssize_t n = ::pwrite(b.fd, b.at + done, b.bytes - done, static_cast<off_t>(b.offset + done));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return n < 0 ? errno : EIO;
    done += static_cast<std::size_t>(n);
  }
  return 0;
}

std::uint64_t round_up(std::uint64_t x, std::uint64_t to) { return (x + to - 1) / to * to; }

std::uint64_t file_size(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) throw Failure(path + ": cannot open: " + reason(errno));
  if (!S_ISREG(st.st_mode)) throw Failure(path + ": not a regular file");
  return static_cast<std::uint64_t>(st.st_size);
}

/// A measured figure: median seconds over the bytes, or why it could not be measured.
struct Figure {
  bool supported = true;
  std::string why;
  double seconds = 0;
  std::uint64_t bytes = 0;
  double gbps() const { return seconds > 0 ? static_cast<double>(bytes) / seconds / 1e9 : 0; }
};

/// The files read whole into `buffer` (each at a page-aligned place), in blocks, on `o.threads` threads.
Figure read_files(const Options& o, const Buffer& buffer, bool direct) {
  Figure f;
  std::vector<std::unique_ptr<Fd>> fds;
  std::vector<Block> blocks;
  std::uint64_t place = 0;
  for (const auto& path : o.files) {
    const std::uint64_t size = file_size(path);
    fds.push_back(std::make_unique<Fd>(path, O_RDONLY | (direct ? O_DIRECT : 0)));
    if (fds.back()->get() < 0) {
      // tmpfs and some network file systems refuse O_DIRECT at open (EINVAL): a missing floor, no error.
      if (direct && errno == EINVAL) return {false, "unsupported: " + path + ": O_DIRECT refused (" + reason(errno) + ")"};
      throw Failure(path + ": cannot open: " + reason(errno));
    }
    for (std::uint64_t off = 0; off < size; off += o.block) {
      // O_DIRECT reads whole aligned blocks; the last one past the end reads short, which is fine.
      const std::uint64_t len = std::min<std::uint64_t>(o.block, size - off);
      blocks.push_back({fds.back()->get(), off, static_cast<std::size_t>(direct ? round_up(len, kAlign) : len),
                        buffer.data() + place + off});
    }
    place += round_up(size, kAlign);
    f.bytes += size;
  }
  int error = 0;
  f.seconds = mgjoin::bench::median_seconds(o.repeat, [&] { error = error ? error : run_blocks(blocks, o.threads, read_block); });
  if (error == EINVAL && direct) return {false, "unsupported: O_DIRECT read refused (" + reason(error) + ")"};
  if (error != 0) throw Failure(std::string(direct ? "O_DIRECT read" : "read") + " failed: " + reason(error));
  return f;
}

/// o.write_bytes written into o.write_files new files in o.write_dir (from `source`, `source_bytes`
/// reused block by block), optionally fsynced, then removed; the median of the timed runs.
Figure write_files(const Options& o, const std::byte* source, std::size_t source_bytes, bool sync) {
  Figure f;
  f.bytes = o.write_bytes;
  const std::uint64_t per_file = (o.write_bytes + o.write_files - 1) / o.write_files;
  std::vector<double> times;
  for (int run = 0; run <= o.repeat; ++run) {  // run 0 is the warm-up
    std::vector<std::string> paths;
    std::vector<std::unique_ptr<Fd>> fds;
    std::vector<Block> blocks;
    for (int k = 0; k < o.write_files; ++k) {
      paths.push_back((fs::path(o.write_dir) / ("io_floor_" + std::to_string(::getpid()) + "_" + std::to_string(k) + ".bin")).string());
      fds.push_back(std::make_unique<Fd>(paths.back(), O_WRONLY | O_CREAT | O_EXCL, 0644));
      if (fds.back()->get() < 0) throw Failure(paths.back() + ": cannot create: " + reason(errno));
      const std::uint64_t begin = per_file * k, end = std::min(o.write_bytes, begin + per_file);
      for (std::uint64_t off = 0; begin + off < end; off += o.block) {
        const std::size_t len = static_cast<std::size_t>(std::min<std::uint64_t>(o.block, end - begin - off));
        std::size_t from = (blocks.size() * o.block) % source_bytes;
        if (from + len > source_bytes) from = 0;
        blocks.push_back({fds.back()->get(), off, len, const_cast<std::byte*>(source) + from});
      }
    }
    int error = 0;
    const double s = seconds_of([&] {
      error = run_blocks(blocks, o.threads, write_block);
      for (const auto& fd : fds)
        if (error == 0 && sync && ::fsync(fd->get()) != 0) error = errno;
    });
    fds.clear();
    for (const auto& p : paths) ::unlink(p.c_str());
    if (error != 0) throw Failure("write into " + o.write_dir + " failed: " + reason(error));
    if (run > 0) times.push_back(s);
  }
  std::sort(times.begin(), times.end());
  f.seconds = times[times.size() / 2];
  return f;
}

void print_text(const char* name, const Figure& f) {
  if (!f.supported) std::printf("%-26s %s\n", name, f.why.c_str());
  else std::printf("%-26s %10.4f s %12.3f GB %10.2f GB/s\n", name, f.seconds, f.bytes / 1e9, f.gbps());
}

std::string json_of(const Figure& f) {
  if (!f.supported) return "{\"supported\": false, \"reason\": \"" + f.why + "\"}";
  char text[160];
  std::snprintf(text, sizeof text, "{\"supported\": true, \"seconds\": %.6f, \"bytes\": %llu, \"gbps\": %.3f}", f.seconds,
                static_cast<unsigned long long>(f.bytes), f.gbps());
  return text;
}

/// A path inside a JSON string: backslashes and quotes escaped.
std::string quoted(const std::string& s) {
  std::string q = "\"";
  for (const char c : s) {
    if (c == '"' || c == '\\') q += '\\';
    q += c;
  }
  return q + "\"";
}

int run(const Options& o) {
  if (!o.write_dir.empty() && !fs::is_directory(o.write_dir))
    throw Failure("--write-dir " + o.write_dir + ": not a directory");
  std::uint64_t layout = 0;
  for (const auto& path : o.files) layout += round_up(file_size(path), kAlign);  // a missing file fails here, first
  const std::size_t source_bytes = std::min<std::uint64_t>(o.write_bytes, std::uint64_t{1} << 30);
  const Buffer buffer(std::max<std::uint64_t>(layout, round_up(source_bytes, kAlign)));
  const std::string memory = buffer.pinned() ? "pinned (cudaHostAlloc)" : "pageable (no CUDA device)";

  Figure read, direct, write, write_sync;
  if (!o.files.empty()) {
    read = read_files(o, buffer, false);
    direct = o.direct ? read_files(o, buffer, true) : Figure{false, "not measured (--no-direct)"};
  }
  if (o.write_bytes > 0) {
    write = write_files(o, buffer.data(), round_up(source_bytes, kAlign), false);
    write_sync = write_files(o, buffer.data(), round_up(source_bytes, kAlign), true);
  }
  if (o.json) {
    std::printf("{\n  \"threads\": %d,\n  \"repeat\": %d,\n  \"block_bytes\": %zu,\n  \"memory\": \"%s\",\n  \"files\": [", o.threads,
                o.repeat, o.block, memory.c_str());
    for (std::size_t i = 0; i < o.files.size(); ++i) std::printf("%s%s", i ? ", " : "", quoted(o.files[i]).c_str());
    std::printf("]");
    if (!o.files.empty()) std::printf(",\n  \"read\": %s,\n  \"read_direct\": %s", json_of(read).c_str(), json_of(direct).c_str());
    if (o.write_bytes > 0)
      std::printf(",\n  \"write_dir\": %s,\n  \"write_files\": %d,\n  \"write\": %s,\n  \"write_fsync\": %s",
                  quoted(o.write_dir).c_str(), o.write_files, json_of(write).c_str(), json_of(write_sync).c_str());
    std::printf("\n}\n");
    return 0;
  }
  std::printf("%d threads, %zu MiB blocks, median of %d after a warm-up; memory %s\n", o.threads, o.block >> 20, o.repeat,
              memory.c_str());
  if (!o.files.empty()) {
    print_text("read (page cache)", read);
    print_text("read O_DIRECT", direct);
  }
  if (o.write_bytes > 0) {
    print_text(("write, " + std::to_string(o.write_files) + " new files").c_str(), write);
    print_text("write + fsync", write_sync);
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  const Options o = parse(argc, argv);
  try {
    return run(o);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "bench_io_floor: %s\n", e.what());
    return 1;
  }
}
