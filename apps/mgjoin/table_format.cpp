// Which format a table path holds, and, in a CLI built without Arrow (MGJOIN_NO_PARQUET_REASON: CMake's
// MGJOIN_PARQUET off or no pyarrow found), the Arrow functions as one-line refusals saying why.
#include "arrow_tables.hpp"

#include <mgjoin/error.hpp>

#include <algorithm>
#include <cctype>
#include <system_error>

namespace mgjoin::cli {
namespace fs = std::filesystem;
namespace {

std::string lower_extension(const fs::path& p) {
  std::string ext = p.extension().string();
  std::transform(ext.begin(), ext.end(), ext.begin(), [](unsigned char c) { return std::tolower(c); });
  return ext;
}

std::optional<TableFormat> file_table_format(const fs::path& p) {
  const std::string ext = lower_extension(p);
  if (ext == ".parquet" || ext == ".pq") return TableFormat::Parquet;
  if (ext == ".arrow" || ext == ".feather" || ext == ".ipc") return TableFormat::ArrowIpc;
  if (ext == ".npy") return TableFormat::Npy;
  return std::nullopt;
}

}  // namespace

const char* table_format_name(TableFormat format) {
  switch (format) {
    case TableFormat::Parquet: return "parquet";
    case TableFormat::ArrowIpc: return "arrow";
    default: return "npy";
  }
}

TableFormat table_format_of(const fs::path& path) {
  std::error_code ec;
  if (!fs::is_directory(path, ec)) return file_table_format(path).value_or(TableFormat::Npy);
  // .npy files directly inside: a table of column files (the existing layouts), whatever else lies there.
  for (const auto& e : fs::directory_iterator(path, ec))
    if (e.is_regular_file() && file_table_format(e.path()) == TableFormat::Npy) return TableFormat::Npy;
  for (auto it = fs::recursive_directory_iterator(path, ec); !ec && it != fs::recursive_directory_iterator();
       it.increment(ec)) {
    const auto f = file_table_format(it->path());
    if (f && *f != TableFormat::Npy && it->is_regular_file()) return *f;
  }
  return TableFormat::Npy;
}

#ifdef MGJOIN_NO_PARQUET_REASON
namespace {
[[noreturn]] void not_built(const std::string& what) {
  throw InputError(what + ": this mgjoin was built without Parquet and Arrow IPC support (" MGJOIN_NO_PARQUET_REASON ")");
}
}  // namespace
void expect_arrow_formats(const std::string& what) { not_built(what); }
struct ArrowType {};
const ArrowColumnInfo* ArrowTableSource::find(const std::string&) const { return nullptr; }
ArrowTableSource inspect_arrow_table(const fs::path& path, const std::string& option) {
  not_built(option + " " + path.string());
}
std::vector<ReadColumn> read_arrow_columns(const ArrowTableSource& t, const std::vector<std::string>&, MemoryKind) {
  not_built(t.option + " " + t.path.string());
}
ArrowColumnInfo npy_strings_column_info(const std::string&, bool, const std::string& what) {
  not_built(what + ": a column of strings");
}
ReadColumn read_npy_strings(std::span<const fs::path> files, const std::string& option) {
  not_built(option + " " + files.front().string());  // unreachable: npy_strings_column_info refused it
}
StagedColumnFile stage_npy_strings(const fs::path& path, const ArrowColumn&, const std::string&) {
  not_built(path.string());  // unreachable: no column is read in Arrow's form
}
void expect_utf8(const ArrowColumn&, const std::string& output) {
  not_built(output);  // unreachable: no column is read in Arrow's form
}
std::int64_t first_null_taken(const ArrowColumn&, ColumnView, const bool*) {
  not_built("an output column");  // unreachable: no column is read in Arrow's form
}
std::shared_ptr<const ArrowColumn> arrow_row_indices(ColumnView, const bool*) {
  not_built("gathering a column");  // unreachable: no column is read in Arrow's form
}
std::shared_ptr<const ArrowColumn> take_arrow_column(const ArrowColumn&, const ArrowColumn&, const ArrowType*, const std::string&) {
  not_built("gathering a column");  // unreachable: no column is read in Arrow's form
}
DictionaryKeys encode_dictionary_keys(const ArrowColumn&, const ArrowColumn&, MemoryKind, const std::string& output) {
  not_built(output);
}
StagedColumnFile stage_arrow_file(const fs::path& final_path, std::span<const OutputColumn>, TableFormat) {
  not_built(final_path.string());
}
#endif

}  // namespace mgjoin::cli
