#pragma once
// Column files: NumPy .npy (v1/v2/v3; 1-D, C order, little-endian) and raw little-endian binary.
//
//   HostColumn keys = read_column("r_key.npy");                       // dtype from the header
//   HostColumn vals = read_column("r_val.bin", DType::UInt64);         // raw: the caller names the dtype
//   write_column("out/key.npy", keys.view());                          // temp name + rename: atomic
//
// Large files are read and written by several threads at once (pread/pwrite of disjoint blocks).
// Every failure throws InputError with one line that names the file and the problem.
#include <mgjoin/join.hpp>
#include <mgjoin/types.hpp>

#include <array>

#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace mgjoin {

enum class FileFormat : std::uint8_t { Npy, Raw };

/// `.npy` (any case) is NumPy; every other name (`.bin`, `.u64`, none) is raw little-endian binary.
FileFormat file_format_of(const std::filesystem::path& path);

/// What a column file holds, learned from its header (.npy) or its size and the given dtype (raw).
struct ColumnFileInfo {
  FileFormat format = FileFormat::Npy;
  DType type = DType::UInt64;
  std::int64_t size = 0;             ///< number of elements
  std::uint64_t data_offset = 0;     ///< bytes before the first element
};

/// Checks a column file without reading its data: exists, regular, valid header, supported dtype,
/// size consistent with the header. `raw_type` is required for raw files and ignored for .npy.
/// @throw InputError naming the file (missing, bad magic, truncated, unsupported dtype or shape, ...)
ColumnFileInfo inspect_column_file(const std::filesystem::path& path, std::optional<DType> raw_type = {});

/// A .npy column of NumPy's fixed-width strings, which the engine does not join itself (`mgjoin join`
/// reads such columns into Arrow string or binary columns): '|S<n>', n bytes an element, and '<U<n>', n
/// UCS-4 code points (little-endian) an element; in both, trailing NULs are padding, not part of a value.
struct StringColumnFileInfo {
  bool unicode = false;           ///< U (code points), else S (bytes)
  std::int64_t width = 0;         ///< characters an element
  std::int64_t size = 0;          ///< number of elements
  std::uint64_t data_offset = 0;  ///< bytes before the first element
  std::uint64_t element_bytes() const { return static_cast<std::uint64_t>(width) * (unicode ? 4 : 1); }
};

/// The header of a .npy file of fixed-width strings; nullopt for a raw file or a .npy file of a dtype the
/// engine takes (inspect_column_file reads it). @throw InputError as inspect_column_file for a missing,
/// malformed or truncated file, or one of a dtype neither takes (big-endian, float16, objects, ...).
std::optional<StringColumnFileInfo> inspect_string_column_file(const std::filesystem::path& path);

/// The elements of such a file as it holds them (size × element_bytes() bytes, padding included).
/// @throw InputError naming the file when the read fails or the file changed since `info` was read.
std::string read_string_column_file(const std::filesystem::path& path, const StringColumnFileInfo& info);

/// Visits rows [first, first + rows) of a fixed-width string column at `data` (rows × element_bytes()
/// bytes as the file holds them).
using StringRowsVisit = std::function<void(std::int64_t first, std::int64_t rows, const char* data)>;

/// The same elements in pieces of about 64 MiB, in order, each to `visit`: the padded elements of a wide
/// column may be far larger than its values. @throw InputError as read_string_column_file.
void read_string_column_pieces(const std::filesystem::path& path, const StringColumnFileInfo& info,
                               const StringRowsVisit& visit);

/// Reads a whole column file into a new host column (pinned if asked and a CUDA driver is present).
/// @throw InputError as inspect_column_file, or when the read itself fails.
HostColumn read_column(const std::filesystem::path& path, std::optional<DType> raw_type = {},
                       MemoryKind memory = MemoryKind::Pageable);

/// Reads rows [first, first + rows) of a column file (`rows` < 0: to its end), e.g. one rank's slice.
/// @throw InputError as read_column, or naming the file when the rows are past its end.
HostColumn read_column_rows(const std::filesystem::path& path, std::int64_t first, std::int64_t rows,
                            std::optional<DType> raw_type = {}, MemoryKind memory = MemoryKind::Pageable);

/// A column written completely under a temporary name next to `final_path` (same directory, so the
/// rename is atomic). Destroying it uncommitted removes the temporary file: a failed run never
/// leaves a final-named file behind.
class StagedColumnFile {
 public:
  StagedColumnFile(std::filesystem::path final_path, std::filesystem::path temp_path);
  StagedColumnFile(StagedColumnFile&& other) noexcept;
  StagedColumnFile& operator=(StagedColumnFile&& other) noexcept;
  StagedColumnFile(const StagedColumnFile&) = delete;
  StagedColumnFile& operator=(const StagedColumnFile&) = delete;
  ~StagedColumnFile();

  /// Renames the temporary file to its final name. @throw InputError when the rename fails.
  void commit();
  bool committed() const { return committed_; }
  const std::filesystem::path& final_path() const { return final_path_; }
  const std::filesystem::path& temp_path() const { return temp_path_; }

 private:
  void discard() noexcept;
  std::filesystem::path final_path_, temp_path_;
  bool committed_ = false;
};

/// Writes `column` to a temporary file beside `path` in the format of `path`'s extension.
/// @throw InputError naming the file when the directory is missing or unwritable or a write fails.
StagedColumnFile stage_column(const std::filesystem::path& path, ColumnView column);

/// Commits several staged files together: either every final name gets its new file, or the directory is
/// left as it was (files already at the final names are moved aside first and put back when a later
/// rename fails). The paths in `stale` (files or folders an earlier output left, e.g. from
/// table_files_in) are moved aside with them and deleted once every new file is in place, so that what
/// the directory holds afterwards is the new output alone (a stale folder's other files, the user's, are
/// kept: see remove_table_files). @throw InputError naming the file when a rename fails or a final name
/// is a directory.
void commit_all(std::span<StagedColumnFile> files, std::span<const std::filesystem::path> stale = {});

/// Fills the elements of rows [first, first + rows) of a fixed-width string column into `out`, which
/// holds rows × element_bytes() zero bytes (the padding).
using StringRowsFill = std::function<void(std::int64_t first, std::int64_t rows, char* out)>;

/// Writes a .npy column of fixed-width strings of `shape` (unicode, width, size; data_offset unused) to a
/// temporary file beside `path`, its elements from `fill` in pieces. @throw InputError as stage_column.
StagedColumnFile stage_string_column(const std::filesystem::path& path, const StringColumnFileInfo& shape,
                                     const StringRowsFill& fill);

/// stage_column + commit.
void write_column(const std::filesystem::path& path, ColumnView column);

/// A ResultSink (join.hpp) that writes a materialized join's output columns into .npy files while the
/// join runs (`mgjoin join`'s .npy output): each window of rows goes straight to its place in its part's
/// file, a hidden temporary one in `dir` whose header's room is kept (the header, with the row count, is
/// written last, by finish(), which also names the files). Files are made on a part's first rows, `dir`
/// with the first of them (prepare_output_directory; `option` names it in errors); the destructor removes
/// the files finish() did not hand over, and the folders made for them where it handed over none, so a
/// failed join leaves nothing behind. Before finish(), errors name a payload's file by its part ("R's
/// payload column"): its column's name comes with finish().
class NpyResultFiles final : public ResultSink {
 public:
  NpyResultFiles(std::filesystem::path dir, const char* option);
  ~NpyResultFiles() override;
  NpyResultFiles(const NpyResultFiles&) = delete;
  NpyResultFiles& operator=(const NpyResultFiles&) = delete;

  /// @throw InputError naming the file when it cannot be made or written; Error (a misuse) for rows of
  /// another type than the part's earlier rows.
  void write(ResultPart part, DType type, std::uint64_t first_row, std::uint64_t rows, const void* data) override;

  /// After the join: `paths[part]` is the final .npy path of each part `result` has (empty for one it has
  /// not). Writes each part's header for `result.count` rows of its column's type (`result`'s key,
  /// r_payload, s_payload, which a sunk result holds empty), cuts its file to those rows (makes it where
  /// the join output none), and returns the files staged for commit_all (stage_column's rules).
  /// @throw InputError naming the file; Error (a misuse) where a part with rows has no path.
  std::vector<StagedColumnFile> finish(const JoinResult& result, const std::array<std::filesystem::path, 3>& paths);

  /// Bytes written into the files so far (the rows, not the headers).
  std::uint64_t bytes_written() const;

 private:
  struct Part;
  /// dir_ made, and checked, once.
  void prepare_directory();
  std::filesystem::path dir_;
  std::filesystem::path made_;  ///< the highest folder prepare_directory made (removed with the files)
  const char* option_;
  std::once_flag prepared_;
  std::vector<std::unique_ptr<Part>> parts_;
};

/// A table written in parts (`mpirun -np N mgjoin join ... --out-dir D`): D/manifest.json with
/// "format": "mgjoin-parts" names its column files and its part directories, in order; a column is its
/// file in every part, one after the other.
struct PartsTable {
  std::vector<std::string> columns;  ///< file names, e.g. "key.npy"
  std::vector<std::filesystem::path> part_dirs;
  std::vector<std::int64_t> part_rows;
};

/// The manifest of `dir`, checked against its parts' files (each holds the rows the manifest says; names
/// stay inside `dir`; no column file of the same name beside it); nullopt when `dir` holds no
/// manifest.json. @throw InputError naming the file that is wrong.
std::optional<PartsTable> read_parts_manifest(const std::filesystem::path& dir);

/// Writes `dir`/manifest.json for `table` (part folders inside `dir`), atomically: the manifest is what
/// makes the parts a table, so it is written last. @throw InputError naming the file.
void write_parts_manifest(const std::filesystem::path& dir, const PartsTable& table);

/// The files `paths` (one dtype) read one after the other into one column.
/// @throw InputError as read_column, or naming a file of another dtype.
HostColumn read_column_concat(std::span<const std::filesystem::path> paths, std::optional<DType> raw_type = {},
                              MemoryKind memory = MemoryKind::Pageable);

/// Creates `dir` (and parents) when missing and checks that files can be created in it.
/// `option` names the option in the error message (e.g. "--out-dir").
/// @throw InputError "--out-dir D: ..." when it is not a directory or not writable.
void prepare_output_directory(const std::filesystem::path& dir, const char* option);

/// Whether a folder's name is that of a part of a table in parts: part-N.
bool is_part_folder_name(std::string_view name);

/// What a reader of `dir` takes for a table (its `*.npy` column files, `*.parquet`, `*.arrow` and `*.feather`
/// files (the CLI's other outputs); a table in parts' manifest.json
/// and, beside it, its part-N folders), sorted by name; nothing when `dir` does not exist.
std::vector<std::filesystem::path> table_files_in(const std::filesystem::path& dir);

/// Removes an earlier table's files (from table_files_in): column files and links (never what a link
/// points to), manifests, and a part folder's column files, then the folder unless other files remain.
/// @throw InputError naming the first that cannot be removed.
void remove_table_files(std::span<const std::filesystem::path> paths);

/// Whether a table output may go into a directory that already holds one.
enum class ExistingTable { Refuse, Replace };

/// Checks before any work that `dir` can take a table output, without creating it (so that a run that
/// fails before writing leaves nothing behind): an existing directory must be writable and, unless
/// `existing` is Replace, hold no table (table_files_in); a missing one must be creatable (its nearest
/// existing ancestor a writable directory). A later prepare_output_directory creates it.
/// @throw InputError "--out-dir D: ..." naming what is wrong (and, for a table already there, the
/// option `replace_option` that allows replacing it).
void check_output_directory(const std::filesystem::path& dir, const char* option, ExistingTable existing,
                            const char* replace_option);

}  // namespace mgjoin
