#pragma once
// Tables in Parquet and Arrow IPC files for `mgjoin join`, through Apache Arrow's C++ libraries (built in
// where CMake's MGJOIN_PARQUET found them: expect_arrow_formats()). This header holds no Arrow type, so
// that the rest of the CLI compiles without Arrow; apps/mgjoin/arrow/ implements it.
//
//   ArrowTableSource t = inspect_arrow_table("orders/", "--r");       // schemas of every file, rows
//   std::vector<ReadColumn> cols = read_arrow_columns(t, {"o_id", "total"}, MemoryKind::Pageable);
//
// Read whole: only the columns named are decoded (projection), each file by Arrow's multi-threaded
// reader, into host columns of their integer (or float, bool) storage; nulls as a validity column.
#include <mgjoin/io.hpp>
#include <mgjoin/types.hpp>

#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

namespace mgjoin::cli {

/// How a table is stored: .npy column files, Parquet files, or Arrow IPC (Feather v2) files.
enum class TableFormat : std::uint8_t { Npy, Parquet, ArrowIpc };

/// "npy", "parquet", "arrow".
const char* table_format_name(TableFormat format);
/// A file named *.parquet / *.pq: Parquet; *.arrow / *.feather / *.ipc: Arrow IPC; a directory holding
/// such files (at any depth, e.g. hive-style name=value folders) and no .npy file: their format;
/// anything else: .npy (column files).
TableFormat table_format_of(const std::filesystem::path& path);

/// Nothing where this CLI was built with Arrow (CMake's MGJOIN_PARQUET found pyarrow); elsewhere @throw
/// InputError "`what`: this mgjoin was built without Parquet and Arrow IPC support (why)".
void expect_arrow_formats(const std::string& what);

/// An Arrow data type, kept from the input to write the output with it (dates stay dates).
struct ArrowType;

/// A column of an Arrow table: its name, its storage as the engine takes it, and its Arrow type.
struct ArrowColumnInfo {
  std::string name;
  std::optional<DType> storage;  ///< nullopt: a type the engine cannot take (type_name says which)
  std::string type_name;         ///< Arrow's name of the type, e.g. "date32[day]", "dictionary<...>"
  std::shared_ptr<const ArrowType> type;
  bool partition = false;  ///< a hive-style name=value folder's column
};

/// A table of Parquet or Arrow IPC files, inspected (schemas and row counts), nothing decoded.
struct ArrowTableSource {
  std::filesystem::path path;  ///< the file or dataset directory given
  std::string option;          ///< the option that named it, for messages
  TableFormat format = TableFormat::Parquet;
  std::vector<std::filesystem::path> files;  ///< in path order
  std::vector<std::int64_t> file_rows;
  std::vector<ArrowColumnInfo> columns;  ///< the first file's, then the partition columns
  std::int64_t rows = 0;
  const ArrowColumnInfo* find(const std::string& name) const;
};

/// Opens every file's footer (or IPC header): @throw InputError naming the file for a missing, corrupt or
/// truncated file, and naming the file and column for a schema that differs from the first file's.
ArrowTableSource inspect_arrow_table(const std::filesystem::path& path, const std::string& option);

/// A column read: its values (zero where null) and, where it holds nulls, a bool column (true: a value).
struct ReadColumn {
  HostColumn values;
  std::optional<HostColumn> valid;
};

/// Decodes the columns `names` of every file, after checking that host memory holds them.
/// @throw InputError naming the file and column for a type the engine cannot take or a file that fails to
/// decode; OutOfMemory (with the bytes) when host memory cannot hold the decoded columns.
std::vector<ReadColumn> read_arrow_columns(const ArrowTableSource& table, const std::vector<std::string>& names,
                                           MemoryKind memory);

/// A column to write: values, optional validity (bool, true: a value), and the Arrow type to write it as
/// (nullptr: the type of its storage); a type whose storage differs from the values' is not used.
struct OutputColumn {
  std::string name;
  ColumnView values;
  std::optional<ColumnView> valid;
  std::shared_ptr<const ArrowType> type;
};

/// Writes `columns` as one Parquet (ZSTD-compressed row groups) or Arrow IPC file under a temporary name
/// beside `final_path`; committing renames it. @throw InputError naming the file when a write fails.
StagedColumnFile stage_arrow_file(const std::filesystem::path& final_path, std::span<const OutputColumn> columns,
                                  TableFormat format);

}  // namespace mgjoin::cli
