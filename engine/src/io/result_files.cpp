// NpyResultFiles (io.hpp): a join's output columns written into .npy files as the rows come.
#include <mgjoin/error.hpp>
#include <mgjoin/io.hpp>

#include "engine/src/io/file_handle.hpp"
#include "engine/src/io/npy_header.hpp"

#include <algorithm>
#include <atomic>
#include <mutex>
#include <optional>
#include <string>
#include <utility>

namespace mgjoin {

namespace fs = std::filesystem;

namespace {

// A window of rows (64 MiB of 8-byte values, 32 MiB of 4-byte ones in the co-partitioned flows) goes out in
// 4 MiB blocks on up to 8 threads: in FileHandle's 16 MiB blocks a window took four threads at most, or one
// (under 64 MiB). Measured no faster on 2 H200s (s29: B 2.5·10^8 streamed at ~2.9 GB/s either way, the
// page cache's floor 3.1-3.3 GB/s), where the page cache is the bound; kept so that no window waits on one
// thread where the file system takes more.
constexpr std::size_t kWindowBlock = std::size_t{4} << 20;

/// The temporary file's stem of each part (its final name comes with finish()).
const char* part_stem(std::size_t part) {
  static constexpr const char* stems[] = {"key.npy", "r.payload.npy", "s.payload.npy"};
  return stems[part];
}

/// What an error before finish() names: the key's file is always key.npy; a payload's name is its column's,
/// which only finish() is told.
std::string part_label(const fs::path& dir, std::size_t part) {
  static constexpr const char* labels[] = {"key.npy", "r.<payload>.npy (R's payload column)",
                                           "s.<payload>.npy (S's payload column)"};
  return (dir / labels[part]).string();
}

/// `e` naming `name`, the file the user asked for, where the hidden temporary name starts it.
InputError naming(const std::string& name, const fs::path& temp, const InputError& e) {
  const std::string what = e.what();
  if (!what.starts_with(temp.string())) return e;
  return InputError(name + what.substr(temp.string().size()));
}

/// `dir` absolute, without a trailing separator: its parents are then parent_path() after parent_path().
fs::path absolute_dir(const fs::path& dir) {
  std::error_code ec;
  fs::path p = fs::absolute(dir, ec).lexically_normal();
  return p.has_filename() || p == p.root_path() ? p : p.parent_path();
}

/// The highest of `dir` and its parents that does not exist yet (empty: `dir` exists), which
/// prepare_output_directory would make.
fs::path first_missing(const fs::path& dir) {
  fs::path missing;
  std::error_code ec;
  for (fs::path p = absolute_dir(dir); !p.empty() && !fs::exists(p, ec); p = p.parent_path()) {
    missing = p;
    if (p == p.parent_path()) break;
  }
  return missing;
}

}  // namespace

/// One part's file: made on its first rows (or by finish), its data after the room that a header of any
/// row count takes (npy_header_bytes_for_any_size).
struct NpyResultFiles::Part {
  fs::path temp;
  std::mutex making;
  std::optional<detail::FileHandle> file;
  std::optional<DType> type;
  std::uint64_t data_offset = 0;
  std::atomic<std::uint64_t> bytes{0};
  bool handed_over = false;

  /// The file, made (with `files`' directory) on the part's first rows of `t`.
  const detail::FileHandle& open(DType t, NpyResultFiles& files) {
    std::lock_guard lock(making);  // one thread makes the file, the others wait for it
    if (!file) {
      files.prepare_directory();
      file.emplace(detail::FileHandle::create_new(temp));
      type = t;
      data_offset = detail::npy_header_bytes_for_any_size(t);
    }
    MGJOIN_EXPECTS(*type == t, "NpyResultFiles: a part's rows of two types");
    return *file;
  }
};

NpyResultFiles::NpyResultFiles(fs::path dir, const char* option) : dir_(std::move(dir)), option_(option) {
  for (std::size_t k = 0; k < 3; ++k) {
    parts_.push_back(std::make_unique<Part>());
    parts_.back()->temp = detail::temp_path_for(dir_ / part_stem(k));
  }
}

NpyResultFiles::~NpyResultFiles() {
  bool handed_over = false;
  std::error_code ignored;
  for (const auto& p : parts_) {
    handed_over = handed_over || p->handed_over;
    if (!p->file || p->handed_over) continue;
    p->file.reset();  // closes it
    fs::remove(p->temp, ignored);
  }
  // The folders made for the files go with them (fs::remove takes only empty ones: nothing of the user's).
  if (handed_over || made_.empty()) return;
  for (fs::path p = absolute_dir(dir_); !p.empty(); p = p.parent_path()) {
    if (!fs::remove(p, ignored) || p == made_) break;
  }
}

void NpyResultFiles::write(ResultPart part, DType type, std::uint64_t first_row, std::uint64_t rows, const void* data) {
  Part& p = *parts_[static_cast<std::size_t>(part)];
  const std::uint64_t width = dtype_size(type);
  try {
    const detail::FileHandle& file = p.open(type, *this);
    file.write_exact(data, rows * width, p.data_offset + first_row * width, kWindowBlock);
  } catch (const InputError& e) {
    throw naming(part_label(dir_, static_cast<std::size_t>(part)), p.temp, e);
  }
  p.bytes += rows * width;
}

std::vector<StagedColumnFile> NpyResultFiles::finish(const JoinResult& result, const std::array<fs::path, 3>& paths) {
  const std::array<const HostColumn*, 3> columns{&result.key, &result.r_payload, &result.s_payload};
  std::vector<StagedColumnFile> staged;
  for (std::size_t k = 0; k < parts_.size(); ++k) {
    Part& p = *parts_[k];
    if (paths[k].empty()) {
      MGJOIN_EXPECTS(!p.file, "NpyResultFiles::finish: rows of a part without a path");
      continue;
    }
    const DType type = columns[k]->type();
    // Rows written twice count twice: this catches rows missing, as the cut below would fill them with zeros.
    MGJOIN_EXPECTS(!p.file || p.bytes >= result.count * dtype_size(type), "NpyResultFiles::finish: rows missing");
    try {
      const detail::FileHandle& file = p.open(type, *this);
      const std::uint64_t offset = p.data_offset;
      const std::string header = detail::format_npy_header(type, static_cast<std::int64_t>(result.count), offset);
      file.write_exact(header.data(), header.size(), 0);
      // A row written twice (the paper flow after a failed co-partitioned run) leaves none past the count.
      file.resize(offset + result.count * dtype_size(type));
      p.file->close();
    } catch (const InputError& e) {
      throw naming(paths[k].string(), p.temp, e);
    }
    staged.emplace_back(paths[k], p.temp);  // from here on the staged file removes it unless committed
    p.handed_over = true;
  }
  return staged;
}

void NpyResultFiles::prepare_directory() {
  std::call_once(prepared_, [this] {
    const fs::path missing = first_missing(dir_);
    prepare_output_directory(dir_, option_);
    made_ = missing;
  });
}

std::uint64_t NpyResultFiles::bytes_written() const {
  std::uint64_t total = 0;
  for (const auto& p : parts_) total += p->bytes;
  return total;
}

}  // namespace mgjoin
