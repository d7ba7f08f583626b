// Reading and writing column files (.npy and raw): see <mgjoin/io.hpp>.
#include <mgjoin/error.hpp>
#include <mgjoin/io.hpp>

#include "engine/src/io/file_handle.hpp"
#include "engine/src/io/npy_header.hpp"
#include "core/checked_math.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <cerrno>
#include <cstring>
#include <string>
#include <vector>
#include <system_error>
#include <utility>

namespace mgjoin {
namespace {

namespace fs = std::filesystem;

// A .npy header longer than this is not something numpy writes for a 1-D array.
constexpr std::uint64_t kMaxNpyDictBytes = std::uint64_t{1} << 20;

std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return std::tolower(c); });
  return s;
}

std::string bytes_text(std::uint64_t n) { return std::to_string(n) + " bytes"; }

/// A .npy file's header and where its data starts, checked against the file's size.
struct NpyLayout {
  detail::NpyHeader header;
  std::uint64_t data_offset = 0;
};

NpyLayout read_npy_layout(const detail::FileHandle& file, bool strings) {
  std::string start(std::min<std::uint64_t>(file.size(), detail::kNpyPrefixV2), '\0');
  file.read_exact(start.data(), start.size(), 0);
  const auto prefix = detail::parse_npy_prefix(start, file.path());
  if (prefix.dict_bytes > kMaxNpyDictBytes)
    throw InputError(file.path() + ": malformed .npy header (header length " + bytes_text(prefix.dict_bytes) +
                     ": more than 1 MiB, no 1-D array's header is that long)");
  if (prefix.prefix_bytes + prefix.dict_bytes > file.size())
    throw InputError(file.path() + ": truncated: the file ends inside its .npy header");
  std::string dict(prefix.dict_bytes, '\0');
  file.read_exact(dict.data(), dict.size(), prefix.prefix_bytes);
  NpyLayout layout{detail::parse_npy_dict(dict, file.path(), strings), prefix.prefix_bytes + prefix.dict_bytes};
  const detail::NpyHeader& header = layout.header;

  const std::uint64_t have = file.size() - layout.data_offset;
  const std::uint64_t rows = static_cast<std::uint64_t>(header.size);
  const auto& text = header.strings;
  const std::string element = text ? (text->unicode ? "U" : "S") + std::to_string(text->width) + " string"
                                   : std::string(dtype_name(header.type));
  // A corrupt header's row count times the width may overflow 64 bits: the message must not quote
  // the wrapped product.
  std::uint64_t width = 0, want = 0;
  const bool overflows =
      text ? mul_overflows(static_cast<std::uint64_t>(text->width), text->unicode ? 4u : 1u, &width) ||
                 mul_overflows(rows, width, &want)
           : mul_overflows(rows, dtype_size(header.type), &want);
  if (overflows || want > have)
    throw InputError(file.path() + ": truncated: header says " + std::to_string(header.size) + " " + element +
                     " elements (" + (overflows ? std::string("more than 2^64 bytes") : bytes_text(want)) +
                     ") but the file holds " + bytes_text(have) + " of data");
  if (have > want)
    throw InputError(file.path() + ": " + bytes_text(have - want) + " of unexpected data after the " +
                     std::to_string(header.size) + " elements its header announces");
  return layout;
}

ColumnFileInfo inspect_npy(const detail::FileHandle& file) {
  const NpyLayout layout = read_npy_layout(file, /*strings=*/false);
  return {FileFormat::Npy, layout.header.type, layout.header.size, layout.data_offset};
}

ColumnFileInfo inspect_raw(const detail::FileHandle& file, std::optional<DType> raw_type) {
  if (!raw_type)
    throw InputError(file.path() + ": raw column file (not .npy) needs its element type to be given");
  const std::size_t width = dtype_size(*raw_type);
  if (file.size() % width != 0)
    throw InputError(file.path() + ": size " + bytes_text(file.size()) + " is not a multiple of " +
                     std::to_string(width) + " bytes (" + std::string(dtype_name(*raw_type)) + ")");
  return {FileFormat::Raw, *raw_type, static_cast<std::int64_t>(file.size() / width), 0};
}

ColumnFileInfo inspect(const detail::FileHandle& file, const fs::path& path, std::optional<DType> raw_type) {
  return file_format_of(path) == FileFormat::Npy ? inspect_npy(file) : inspect_raw(file, raw_type);
}

}  // namespace

namespace detail {
namespace {

/// This host's name, for temp names: ranks on several hosts that share a directory may share pids.
const std::string& host_name() {
  static const std::string name = [] {
    char buffer[256] = {};
    if (::gethostname(buffer, sizeof buffer - 1) != 0) return std::string("host");
    std::string n = buffer;
    std::replace(n.begin(), n.end(), '/', '_');
    return n;
  }();
  return name;
}

}  // namespace

fs::path temp_path_for(const fs::path& final_path) {
  static std::atomic<std::uint64_t> counter{0};
  std::string name = ".";
  name += final_path.filename().string();
  name += ".tmp-" + host_name() + "-" + std::to_string(::getpid()) + "-" + std::to_string(counter++);
  return final_path.parent_path() / name;
}

}  // namespace detail

using detail::temp_path_for;

FileFormat file_format_of(const fs::path& path) {
  return lower(path.extension().string()) == ".npy" ? FileFormat::Npy : FileFormat::Raw;
}

ColumnFileInfo inspect_column_file(const fs::path& path, std::optional<DType> raw_type) {
  const auto file = detail::FileHandle::open_read(path);
  return inspect(file, path, raw_type);
}

HostColumn read_column(const fs::path& path, std::optional<DType> raw_type, MemoryKind memory) {
  return read_column_rows(path, 0, -1, raw_type, memory);
}

HostColumn read_column_rows(const fs::path& path, std::int64_t first, std::int64_t rows, std::optional<DType> raw_type,
                            MemoryKind memory) {
  const auto file = detail::FileHandle::open_read(path);
  const ColumnFileInfo info = inspect(file, path, raw_type);
  if (rows < 0) rows = info.size - std::min(first, info.size);
  MGJOIN_INPUT_EXPECTS(first >= 0 && first <= info.size && rows <= info.size - first,
                       path.string() + ": " + std::to_string(rows) + " rows from row " + std::to_string(first) +
                           " are past its " + std::to_string(info.size) + " rows");
  HostColumn column = HostColumn::allocate(info.type, rows, memory);
  file.read_exact(column.data(), column.bytes(), info.data_offset + static_cast<std::uint64_t>(first) * dtype_size(info.type));
  return column;
}

std::optional<StringColumnFileInfo> inspect_string_column_file(const fs::path& path) {
  if (file_format_of(path) != FileFormat::Npy) return std::nullopt;
  const auto file = detail::FileHandle::open_read(path);
  const NpyLayout layout = read_npy_layout(file, /*strings=*/true);
  if (!layout.header.strings) return std::nullopt;
  return StringColumnFileInfo{layout.header.strings->unicode, layout.header.strings->width, layout.header.size,
                              layout.data_offset};
}

namespace {

/// Rows of fixed-width strings in a piece of about 64 MiB, the unit these files are read and written in:
/// the elements padded to their width may be far larger than the values.
std::int64_t rows_a_piece(const StringColumnFileInfo& shape) {
  return std::max<std::int64_t>(1, (std::int64_t{64} << 20) / static_cast<std::int64_t>(shape.element_bytes()));
}

/// The file of `info`, opened, its size checked against the header read before.
detail::FileHandle open_string_column(const fs::path& path, const StringColumnFileInfo& info) {
  auto file = detail::FileHandle::open_read(path);
  const std::uint64_t bytes = info.data_offset + static_cast<std::uint64_t>(info.size) * info.element_bytes();
  MGJOIN_INPUT_EXPECTS(bytes == file.size(), path.string() + ": changed since it was inspected (" +
                                                 bytes_text(file.size()) + ", expected " + bytes_text(bytes) + ")");
  return file;
}

}  // namespace

std::string read_string_column_file(const fs::path& path, const StringColumnFileInfo& info) {
  const auto file = open_string_column(path, info);
  std::string data(static_cast<std::size_t>(info.size) * info.element_bytes(), '\0');
  file.read_exact(data.data(), data.size(), info.data_offset);
  return data;
}

void read_string_column_pieces(const fs::path& path, const StringColumnFileInfo& info, const StringRowsVisit& visit) {
  const auto file = open_string_column(path, info);
  std::string piece;
  for (std::int64_t first = 0; first < info.size; first += rows_a_piece(info)) {
    const std::int64_t rows = std::min(rows_a_piece(info), info.size - first);
    piece.resize(static_cast<std::size_t>(rows) * info.element_bytes());
    file.read_exact(piece.data(), piece.size(), info.data_offset + static_cast<std::uint64_t>(first) * info.element_bytes());
    visit(first, rows, piece.data());
  }
}

// ---------------------------------------------------------------------------------------- writing

StagedColumnFile::StagedColumnFile(fs::path final_path, fs::path temp_path)
    : final_path_(std::move(final_path)), temp_path_(std::move(temp_path)) {}

StagedColumnFile::StagedColumnFile(StagedColumnFile&& other) noexcept
    : final_path_(std::move(other.final_path_)),
      temp_path_(std::move(other.temp_path_)),
      committed_(std::exchange(other.committed_, true)) {}

StagedColumnFile& StagedColumnFile::operator=(StagedColumnFile&& other) noexcept {
  if (this != &other) {
    discard();
    final_path_ = std::move(other.final_path_);
    temp_path_ = std::move(other.temp_path_);
    committed_ = std::exchange(other.committed_, true);
  }
  return *this;
}

StagedColumnFile::~StagedColumnFile() { discard(); }

void StagedColumnFile::discard() noexcept {
  if (committed_) return;
  std::error_code ignored;
  fs::remove(temp_path_, ignored);
  committed_ = true;  // nothing left to discard
}

void StagedColumnFile::commit() {
  MGJOIN_EXPECTS(!committed_, "staged file committed twice or discarded");
  std::error_code ec;
  fs::rename(temp_path_, final_path_, ec);
  if (ec) throw InputError(final_path_.string() + ": cannot rename the finished file into place: " + ec.message());
  committed_ = true;
}

namespace {

/// A file written by `write(file)` under a temporary name beside `path`, staged for the commit.
template <class Write>
StagedColumnFile staged_file(const fs::path& path, Write&& write) {
  const fs::path temp = temp_path_for(path);
  try {
    auto file = detail::FileHandle::create_new(temp);
    StagedColumnFile staged(path, temp);  // from here on, a failure removes the temp file
    write(file);
    file.close();
    return staged;
  } catch (const InputError& e) {
    // Name the file the user asked for, not the hidden temp name that prefixes the message.
    const std::string what = e.what();
    throw InputError(path.string() + what.substr(std::min(what.size(), temp.string().size())));
  }
}

}  // namespace

StagedColumnFile stage_column(const fs::path& path, ColumnView column) {
  return staged_file(path, [&](const detail::FileHandle& file) {
    std::uint64_t offset = 0;
    if (file_format_of(path) == FileFormat::Npy) {
      const std::string header = detail::format_npy_header(column.type, column.size);
      file.write_exact(header.data(), header.size(), 0);
      offset = header.size();
    }
    file.write_exact(column.data, column.bytes(), offset);
  });
}

StagedColumnFile stage_string_column(const fs::path& path, const StringColumnFileInfo& shape, const StringRowsFill& fill) {
  MGJOIN_EXPECTS(shape.width > 0 && shape.size >= 0, "stage_string_column: a width of at least 1 and rows");
  return staged_file(path, [&](const detail::FileHandle& file) {
    const std::string header = detail::format_npy_header(detail::NpyStrings{shape.unicode, shape.width}, shape.size);
    file.write_exact(header.data(), header.size(), 0);
    std::vector<char> piece;
    for (std::int64_t first = 0; first < shape.size; first += rows_a_piece(shape)) {
      const std::int64_t rows = std::min(rows_a_piece(shape), shape.size - first);
      piece.assign(static_cast<std::size_t>(rows) * shape.element_bytes(), '\0');
      fill(first, rows, piece.data());
      file.write_exact(piece.data(), piece.size(), header.size() + static_cast<std::uint64_t>(first) * shape.element_bytes());
    }
  });
}

namespace {

/// A file (or folder) that was at a path before the commit, moved aside until the commit is done.
struct MovedAside {
  fs::path path, backup;
};

void put_back(const std::vector<MovedAside>& aside) noexcept {
  std::error_code ignored;
  for (const MovedAside& m : aside) fs::rename(m.backup, m.path, ignored);
}

/// Moves what sits at each of `paths` aside (a file or a link; a folder too where `folders`; anything
/// else is refused untouched), appending to `aside`; paths with nothing there are skipped.
void move_aside(std::span<const fs::path> paths, bool folders, std::vector<MovedAside>& aside) {
  for (const fs::path& path : paths) {
    std::error_code ec;
    const fs::file_status st = fs::symlink_status(path, ec);
    if (!fs::exists(st)) continue;
    if (!fs::is_regular_file(st) && !fs::is_symlink(st) && !(folders && fs::is_directory(st)))
      throw InputError(path.string() + ": exists and is not a file; it is left as it is");
    MovedAside m{path, temp_path_for(path)};
    fs::rename(m.path, m.backup, ec);
    if (ec) throw InputError(m.path.string() + ": cannot move the existing file aside: " + ec.message());
    aside.push_back(std::move(m));
  }
}

/// Fails with "`failure`: why" unless a file can be created in `dir` (access() says yes to root for any
/// directory; creating a file is the real test).
void expect_writable(const fs::path& dir, const std::string& failure) {
  const fs::path probe = temp_path_for(dir / "write-test");
  const int fd = ::open(probe.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (fd < 0) throw InputError(failure + ": " + std::strerror(errno));
  ::close(fd);
  std::error_code ignored;
  fs::remove(probe, ignored);
}

/// A table's file in a directory: a .npy column, or a part of the CLI's Parquet or Arrow IPC output.
bool is_column_file(const fs::directory_entry& entry) {
  const std::string ext = entry.path().extension().string();
  const bool table_file = file_format_of(entry.path()) == FileFormat::Npy || ext == ".parquet" || ext == ".arrow" ||
                          ext == ".feather";
  return (entry.is_regular_file() || entry.is_symlink()) && table_file;
}

/// Removes what an earlier table left at `path`: a file or a link (never what a link points to), or a
/// part folder's column files and then the folder, unless it holds other files (the user's: kept).
/// Returns the error of the first removal that failed.
std::error_code remove_table_entry(const fs::path& path) {
  std::error_code ec;
  const fs::file_status st = fs::symlink_status(path, ec);
  if (!fs::exists(st)) return {};
  if (!fs::is_directory(st)) {
    fs::remove(path, ec);
    return ec;
  }
  for (const auto& entry : fs::directory_iterator(path, ec))
    if (is_column_file(entry) && !fs::remove(entry.path(), ec) && ec) return ec;
  if (ec) return ec;
  if (fs::is_empty(path, ec)) fs::remove(path, ec);
  return ec;
}

}  // namespace

void commit_all(std::span<StagedColumnFile> files, std::span<const fs::path> stale) {
  // A later rename can fail after earlier ones replaced the user's files: those are moved aside first
  // and put back, so a failed commit leaves the directory as it found it.
  std::vector<fs::path> finals, leftovers;
  for (const StagedColumnFile& f : files) finals.push_back(f.final_path().lexically_normal());
  for (const fs::path& p : stale)
    if (std::find(finals.begin(), finals.end(), p.lexically_normal()) == finals.end()) leftovers.push_back(p);
  std::vector<MovedAside> aside;
  try {
    move_aside(finals, false, aside);
    move_aside(leftovers, true, aside);
  } catch (...) {
    put_back(aside);
    throw;
  }
  std::error_code ignored;
  try {
    for (StagedColumnFile& f : files) f.commit();
  } catch (...) {
    for (const StagedColumnFile& f : files)
      if (f.committed()) fs::remove(f.final_path(), ignored);
    put_back(aside);
    throw;
  }
  // What stays of an old part folder (the user's own files) goes back under its name.
  for (const MovedAside& m : aside) {
    remove_table_entry(m.backup);
    if (fs::exists(fs::symlink_status(m.backup, ignored))) fs::rename(m.backup, m.path, ignored);
  }
}

void remove_table_files(std::span<const fs::path> paths) {
  for (const fs::path& p : paths)
    if (const std::error_code ec = remove_table_entry(p))
      throw InputError(p.string() + ": cannot remove the earlier table's file: " + ec.message());
}

void write_column(const fs::path& path, ColumnView column) { stage_column(path, column).commit(); }

void prepare_output_directory(const fs::path& dir, const char* option) {
  const std::string name = std::string(option) + " " + dir.string();
  std::error_code ec;
  if (!fs::exists(dir, ec)) {
    fs::create_directories(dir, ec);
    if (ec) throw InputError(name + ": cannot create the output directory: " + ec.message());
  }
  if (!fs::is_directory(dir, ec)) throw InputError(name + ": not a directory");
  expect_writable(dir, name + ": output directory is not writable");
}

bool is_part_folder_name(std::string_view name) {
  return name.size() > 5 && name.starts_with("part-") &&
         std::all_of(name.begin() + 5, name.end(), [](unsigned char c) { return std::isdigit(c) != 0; });
}

std::vector<fs::path> table_files_in(const fs::path& dir) {
  std::vector<fs::path> found;
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) return found;
  // Part folders are a table's only beside its manifest: a folder that happens to be named part-2024
  // is the user's.
  const bool manifest = fs::is_regular_file(dir / "manifest.json", ec);
  for (const auto& entry : fs::directory_iterator(dir, ec)) {
    const std::string name = entry.path().filename().string();
    const bool parts = manifest && (name == "manifest.json" || (entry.is_directory() && is_part_folder_name(name)));
    if (is_column_file(entry) || parts) found.push_back(entry.path());
  }
  std::sort(found.begin(), found.end());
  return found;
}

void check_output_directory(const fs::path& dir, const char* option, ExistingTable existing,
                            const char* replace_option) {
  const std::string name = std::string(option) + " " + dir.string();
  std::error_code ec;
  if (fs::exists(dir, ec)) {
    if (!fs::is_directory(dir, ec)) throw InputError(name + ": not a directory");
    expect_writable(dir, name + ": output directory is not writable");
    const std::vector<fs::path> table = table_files_in(dir);
    if (existing == ExistingTable::Refuse && !table.empty()) {
      std::string listed;
      for (std::size_t i = 0; i < std::min<std::size_t>(table.size(), 3); ++i)
        (listed += i ? ", " : "") += table[i].filename().string();
      if (table.size() > 3) listed += ", ...";
      throw InputError(name + ": already holds a table (" + listed + "): pass " + replace_option +
                       " to replace it, or write elsewhere");
    }
    return;
  }
  // Created only when the output is written: find where creating it would start.
  fs::path ancestor = dir.parent_path();
  while (!ancestor.empty() && !fs::exists(ancestor, ec)) ancestor = ancestor.parent_path();
  if (ancestor.empty()) ancestor = ".";
  if (!fs::is_directory(ancestor, ec))
    throw InputError(name + ": cannot create the output directory: " + ancestor.string() + " is not a directory");
  expect_writable(ancestor, name + ": cannot create the output directory in " + ancestor.string());
}

}  // namespace mgjoin
