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
// Columns of other types (strings, binary, decimals, nested types) stay in Arrow's form (ArrowColumn):
// a payload is gathered on the host after the join by row numbers (take_arrow_column), a key joins by
// the codes of a dictionary of both sides' values (encode_dictionary_keys). docs/DESIGN.md says why.
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

/// A column kept in Arrow's form, opaque here (apps/mgjoin/arrow/arrow_internal.hpp).
struct ArrowColumn;

/// A column of an Arrow table: its name, its storage as the engine takes it, and its Arrow type.
struct ArrowColumnInfo {
  std::string name;
  std::optional<DType> storage;  ///< nullopt: a type the engine cannot take (type_name says which)
  bool gathered = false;         ///< no storage, but Arrow's Take gathers it: a payload carried by row numbers
  /// No storage, but a key through a shared dictionary: its family ("string", "binary", the type for
  /// fixed_size_binary, decimal_family(scale) for decimals of any width and precision: keys of one family
  /// join); empty: no such key.
  std::string dictionary_key;
  /// For a date, time, timestamp or duration (or a dictionary of them): the type with its unit and zone,
  /// which a key on the other side must share (they are integers of different meanings otherwise);
  /// empty for other types.
  std::string temporal;
  std::string type_name;         ///< Arrow's name of the type, e.g. "date32[day]", "dictionary<...>"
  std::shared_ptr<const ArrowType> type;
  bool partition = false;  ///< a hive-style name=value folder's column
};

/// The dictionary key family of decimals of scale `scale` ("decimal of scale 2"): decimals of one scale
/// join whatever their widths and precisions (cast to the larger precision), of different scales never.
inline std::string decimal_family(int scale) { return "decimal of scale " + std::to_string(scale); }
inline bool is_decimal_family(const std::string& family) { return family.starts_with("decimal of scale "); }

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

/// A column read: its values (zero where null) and, where it holds nulls, a bool column (true: a value);
/// a column without storage in Arrow's form instead (values and valid empty).
struct ReadColumn {
  HostColumn values;
  std::optional<HostColumn> valid;
  std::shared_ptr<const ArrowColumn> arrow;
};

/// Decodes the columns `names` of every file, after checking that host memory holds them; a column
/// without storage in Arrow's form (a dictionary-encoded one as its values).
/// @throw InputError naming the file and column for a type neither the engine nor Arrow's Take takes or a
/// file that fails to decode; OutOfMemory (with the bytes) when host memory cannot hold the decoded columns.
std::vector<ReadColumn> read_arrow_columns(const ArrowTableSource& table, const std::vector<std::string>& names,
                                           MemoryKind memory);

/// A .npy column of fixed-width strings (inspect_string_column_file) as an Arrow column: string for
/// '<U<n>' (UCS-4 to UTF-8), binary for '|S<n>', trailing NULs dropped as NumPy drops them. Its info
/// (a dictionary key of family "string" or "binary"; `what`, "--r-key k.npy", names it where this CLI
/// has no Arrow); its values, of `files` one after the other, in Arrow's form.
/// @throw InputError naming the file and element for a U element that holds no Unicode code point, and
/// the file for one of the other kind of strings than the first file's.
ArrowColumnInfo npy_strings_column_info(const std::string& name, bool unicode, const std::string& what);
ReadColumn read_npy_strings(std::span<const std::filesystem::path> files, const std::string& option);

/// Whether .npy output holds a column of this type, as fixed-width strings (stage_npy_strings): strings
/// and binary values of any offset width or view.
inline bool npy_holds_as_strings(const ArrowColumnInfo& c) { return c.dictionary_key == "string" || c.dictionary_key == "binary"; }

/// Stages `column` (strings or binary values) as a .npy column of fixed-width strings, as NumPy would:
/// '<U<n>' for strings (n: the most code points of a value), '|S<n>' for binary (n: the most bytes), n ≥ 1;
/// a null (a side the row has not: first_null_taken refused the others) is written empty.
/// @throw InputError starting with `output` where Arrow cannot read the column as binary values.
StagedColumnFile stage_npy_strings(const std::filesystem::path& path, const ArrowColumn& column, const std::string& output);

/// Nothing for binary values or strings that are all UTF-8; @throw InputError starting with `output`
/// and naming the row otherwise (Arrow's Parquet reader does not check): a U column holds code points.
void expect_utf8(const ArrowColumn& column, const std::string& output);

/// The first of the output rows whose row number `rows[i]` (int64) is a null of `column`, rows where
/// `present` (nullptr: all) is false left out; -1 where none is: .npy output holds no nulls.
std::int64_t first_null_taken(const ArrowColumn& column, ColumnView rows, const bool* present);

/// Row numbers for take_arrow_column: `indices` (int32 or int64, wrapped, not copied), null where `valid`
/// (bool; nullptr: all valid) is false. Made once for every column gathered by them.
std::shared_ptr<const ArrowColumn> arrow_row_indices(ColumnView indices, const bool* valid);

/// The rows `indices` (arrow_row_indices) of `column`, as `type` (nullptr: the column's type); null where
/// the index or the row is null. Arrow's Take, through the large type of strings, binary values and lists
/// (and of view types, which Take has not), in slices of 2^20 rows: the result's chunks, each cast back to
/// `type`, so that no chunk needs 32-bit offsets past 2 GiB. @throw InputError starting with `output`
/// (the output column) and naming the input column where Arrow fails.
std::shared_ptr<const ArrowColumn> take_arrow_column(const ArrowColumn& column, const ArrowColumn& indices,
                                                     const ArrowType* type, const std::string& output);

/// Key columns of one dictionary key family (ArrowColumnInfo::dictionary_key) as int32 codes into a
/// dictionary of the distinct non-null values of both (null keys: null codes, the codes' validity).
/// The dictionary holds strings and binary values as large_string and large_binary (64-bit offsets: its
/// distinct values may pass 2 GiB), whatever the sides' types; the output decodes them back into each
/// output chunk's type (take_arrow_column with one of the types here).
struct DictionaryKeys {
  ReadColumn left, right;                          ///< codes (int32) and validity; `arrow` unset
  std::shared_ptr<const ArrowColumn> dictionary;   ///< the values, codes index it (take_arrow_column)
  std::shared_ptr<const ArrowType> left_type, right_type;  ///< each side's input type (a key as its payload)
  std::shared_ptr<const ArrowType> key_type;  ///< the output key's: the sides' where they agree, else the large type
};
/// @throw InputError starting with `output` (the output key column) and naming both input columns where
/// Arrow cannot encode them (over 2^31 - 1 distinct values).
DictionaryKeys encode_dictionary_keys(const ArrowColumn& left, const ArrowColumn& right, MemoryKind memory,
                                      const std::string& output);

/// A column to write: values, optional validity (bool, true: a value), and the Arrow type to write it as
/// (nullptr: the type of its storage); a type whose storage differs from the values' is not used. With
/// `arrow` set, that column is written as it is instead.
struct OutputColumn {
  std::string name;
  ColumnView values;
  std::optional<ColumnView> valid;
  std::shared_ptr<const ArrowType> type;
  std::shared_ptr<const ArrowColumn> arrow;
};

/// Writes `columns` as one Parquet (ZSTD-compressed row groups) or Arrow IPC file under a temporary name
/// beside `final_path`; committing renames it. @throw InputError naming the file when a write fails.
StagedColumnFile stage_arrow_file(const std::filesystem::path& final_path, std::span<const OutputColumn> columns,
                                  TableFormat format);

}  // namespace mgjoin::cli
