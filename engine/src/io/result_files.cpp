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
// 4 MiB blocks on up to 8 threads, as the write floor (bench_io_floor) spreads its writes: in FileHandle's
// 16 MiB blocks a window took four threads at most, or one (under 64 MiB), and the drain, not the GPU,
// set the output's pace (2 H200s, s29: B 2.5·10^8 streamed at 2.5 GB/s, the floor 3.2 GB/s).
constexpr std::size_t kWindowBlock = std::size_t{4} << 20;

const char* part_stem(std::size_t part) {
  static constexpr const char* stems[] = {"key.npy", "r.payload.npy", "s.payload.npy"};
  return stems[part];
}

/// `e` naming `path`, the file the user asked for, where the hidden temporary name starts it.
InputError naming(const fs::path& path, const fs::path& temp, const InputError& e) {
  const std::string what = e.what();
  if (!what.starts_with(temp.string())) return e;
  return InputError(path.string() + what.substr(temp.string().size()));
}

}  // namespace

/// One part's file: made on its first rows (or by finish), its data after the room that a header of any
/// row count takes (npy_header_bytes_for_any_size).
struct NpyResultFiles::Part {
  fs::path temp;
  std::mutex making;
  std::optional<detail::FileHandle> file;
  std::optional<DType> type;
  std::atomic<std::uint64_t> bytes{0};
  bool handed_over = false;

  /// The file, made the first time after `prepare` (one thread makes it, the others wait for it).
  template <class Prepare>
  const detail::FileHandle& open(DType t, Prepare&& prepare) {
    std::lock_guard lock(making);
    if (!file) {
      prepare();
      file.emplace(detail::FileHandle::create_new(temp));
      type = t;
    }
    MGJOIN_EXPECTS(*type == t, "NpyResultFiles: a part's rows of two types");
    return *file;
  }

  std::uint64_t data_offset() const { return detail::npy_header_bytes_for_any_size(*type); }
};

NpyResultFiles::NpyResultFiles(fs::path dir, const char* option) : dir_(std::move(dir)), option_(option) {
  for (std::size_t k = 0; k < 3; ++k) {
    parts_.push_back(std::make_unique<Part>());
    parts_.back()->temp = detail::temp_path_for(dir_ / part_stem(k));
  }
}

NpyResultFiles::~NpyResultFiles() {
  for (const auto& p : parts_) {
    if (!p->file || p->handed_over) continue;
    p->file.reset();  // closes it
    std::error_code ignored;
    fs::remove(p->temp, ignored);
  }
}

void NpyResultFiles::write(ResultPart part, DType type, std::uint64_t first_row, std::uint64_t rows, const void* data) {
  Part& p = *parts_[static_cast<std::size_t>(part)];
  const std::uint64_t width = dtype_size(type);
  try {
    const detail::FileHandle& file = p.open(type, [this] { prepare_directory(); });
    file.write_exact(data, rows * width, p.data_offset() + first_row * width, kWindowBlock);
  } catch (const InputError& e) {
    throw naming(dir_ / part_stem(static_cast<std::size_t>(part)), p.temp, e);
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
    try {
      const detail::FileHandle& file = p.open(type, [this] { prepare_directory(); });
      const std::uint64_t offset = p.data_offset();
      const std::string header = detail::format_npy_header(type, static_cast<std::int64_t>(result.count), offset);
      file.write_exact(header.data(), header.size(), 0);
      // A row written twice (the paper flow after a failed co-partitioned run) leaves none past the count.
      file.resize(offset + result.count * dtype_size(type));
      p.file->close();
    } catch (const InputError& e) {
      throw naming(paths[k], p.temp, e);
    }
    staged.emplace_back(paths[k], p.temp);  // from here on the staged file removes it unless committed
    p.handed_over = true;
  }
  return staged;
}

void NpyResultFiles::prepare_directory() {
  std::call_once(prepared_, [this] { prepare_output_directory(dir_, option_); });
}

std::uint64_t NpyResultFiles::bytes_written() const {
  std::uint64_t total = 0;
  for (const auto& p : parts_) total += p->bytes;
  return total;
}

}  // namespace mgjoin
