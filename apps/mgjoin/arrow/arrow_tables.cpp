// Parquet and Arrow IPC tables through Arrow's C++ readers and writers (apps/mgjoin/arrow_tables.hpp).
// Each file is read whole with its needed columns only, by Arrow's multi-threaded reader, and copied into
// the host columns the join takes; streaming row groups into the flow is a later step (docs/CLI.md).
#include "arrow_internal.hpp"

#include "alloc/host_memory.hpp"

#include <arrow/api.h>
#include <arrow/compute/api.h>
#include <arrow/io/file.h>
#include <arrow/ipc/reader.h>
#include <arrow/ipc/writer.h>
#include <arrow/util/bit_util.h>
#include <parquet/arrow/reader.h>
#include <parquet/arrow/schema.h>
#include <parquet/arrow/writer.h>
#include <parquet/exception.h>
#include <parquet/properties.h>

#include <algorithm>
#include <charconv>
#include <cstring>
#include <map>

namespace mgjoin::cli {
namespace fs = std::filesystem;

void expect_arrow_formats(const std::string&) {}

namespace {

constexpr const char* kHiveNull = "__HIVE_DEFAULT_PARTITION__";

/// The engine's storage of an Arrow type: numbers, bool, and the temporal types as their integers;
/// a dictionary as its values' storage.
std::optional<DType> storage_of(const arrow::DataType& t) {
  switch (t.id()) {
    case arrow::Type::INT8: return DType::Int8;
    case arrow::Type::UINT8: return DType::UInt8;
    case arrow::Type::INT16: return DType::Int16;
    case arrow::Type::UINT16: return DType::UInt16;
    case arrow::Type::INT32: case arrow::Type::DATE32: case arrow::Type::TIME32: return DType::Int32;
    case arrow::Type::UINT32: return DType::UInt32;
    case arrow::Type::INT64: case arrow::Type::DATE64: case arrow::Type::TIMESTAMP: case arrow::Type::TIME64:
    case arrow::Type::DURATION: return DType::Int64;
    case arrow::Type::UINT64: return DType::UInt64;
    case arrow::Type::FLOAT: return DType::Float32;
    case arrow::Type::DOUBLE: return DType::Float64;
    case arrow::Type::BOOL: return DType::Bool;
    case arrow::Type::DICTIONARY: return storage_of(*static_cast<const arrow::DictionaryType&>(t).value_type());
    default: return std::nullopt;
  }
}

/// The type a column is written as: a dictionary's values (the output is not dictionary-encoded).
std::shared_ptr<arrow::DataType> decoded(const std::shared_ptr<arrow::DataType>& t) {
  return t->id() == arrow::Type::DICTIONARY ? static_cast<const arrow::DictionaryType&>(*t).value_type() : t;
}

std::shared_ptr<arrow::DataType> arrow_type_of(DType t) {
  switch (t) {
    case DType::Int8: return arrow::int8();
    case DType::UInt8: return arrow::uint8();
    case DType::Int16: return arrow::int16();
    case DType::UInt16: return arrow::uint16();
    case DType::Int32: return arrow::int32();
    case DType::UInt32: return arrow::uint32();
    case DType::Int64: return arrow::int64();
    case DType::UInt64: return arrow::uint64();
    case DType::Float32: return arrow::float32();
    case DType::Float64: return arrow::float64();
    default: return arrow::boolean();
  }
}

bool is_data_file(const fs::path& p, TableFormat format) {
  const std::string name = p.filename().string();
  if (name.empty() || name[0] == '.' || name[0] == '_') return false;  // hidden, _SUCCESS, _metadata
  return table_format_of(p) == format;
}

/// A folder's value percent-decoded ("x%2Fy" -> "x/y"), as pyarrow, DuckDB and Spark read it. A malformed
/// escape ("%G1", a trailing "%") is kept as it is, as pyarrow keeps it; "+" stays "+".
std::string percent_decoded(const std::string& s) {
  const auto hex = [](char c) {
    return c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
  };
  std::string out;
  for (std::size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '%' && i + 2 < s.size() && hex(s[i + 1]) >= 0 && hex(s[i + 2]) >= 0) {
      out += static_cast<char>(hex(s[i + 1]) * 16 + hex(s[i + 2]));
      i += 2;
    } else {
      out += s[i];
    }
  }
  return out;
}

/// A partition folder: its column's name and value (nullopt: the hive's null).
using Partition = std::pair<std::string, std::optional<std::string>>;

/// The hive-style name=value folders between `root` and `file`; a value compared with the hive's null as
/// written, then percent-decoded.
std::vector<Partition> partitions_of(const fs::path& root, const fs::path& file) {
  std::vector<Partition> out;
  for (const fs::path& part : fs::relative(file.parent_path(), root)) {
    const std::string s = part.string();
    const auto eq = s.find('=');
    if (eq == std::string::npos || eq == 0) continue;
    const std::string value = s.substr(eq + 1);
    out.emplace_back(s.substr(0, eq), value == kHiveNull ? std::nullopt : std::optional(percent_decoded(value)));
  }
  return out;
}

bool parses_as_int64(const std::string& s) {
  std::int64_t v;
  const auto r = std::from_chars(s.data(), s.data() + s.size(), v);
  return r.ec == std::errc() && r.ptr == s.data() + s.size();
}

/// One file's schema and rows.
std::pair<std::shared_ptr<arrow::Schema>, std::int64_t> open_schema(const fs::path& file, TableFormat format) {
  return naming_file(file, [&] {
    const std::string what = file.string();
    auto input = value_or_throw(arrow::io::ReadableFile::Open(file.string()), what);
    if (format == TableFormat::Parquet) {
      std::unique_ptr<parquet::arrow::FileReader> reader =
          value_or_throw(parquet::arrow::OpenFile(input, arrow::default_memory_pool()), what);
      std::shared_ptr<arrow::Schema> schema;
      ok_or_throw(reader->GetSchema(&schema), what);
      return std::pair{schema, reader->parquet_reader()->metadata()->num_rows()};
    }
    auto reader = value_or_throw(arrow::ipc::RecordBatchFileReader::Open(input), what);
    return std::pair{reader->schema(), value_or_throw(reader->CountRows(), what)};
  });
}

std::string type_text(const arrow::DataType& t) { return t.ToString(); }

/// Copies `array` (one chunk) into `out` from row `at`; where a value is null, writes zero and, when
/// `valid` is given, false. Returns whether a value is null (a dictionary's: its index or its entry).
bool copy_chunk(const arrow::Array& array, DType storage, std::byte* out, bool* valid, std::int64_t at) {
  const std::size_t w = dtype_size(storage);
  const std::int64_t n = array.length();
  std::byte* dst = out + static_cast<std::size_t>(at) * w;
  if (array.type_id() == arrow::Type::DICTIONARY) {
    const auto& dict = static_cast<const arrow::DictionaryArray&>(array);
    const arrow::Array& values = *dict.dictionary();
    std::vector<std::byte> decoded_values(static_cast<std::size_t>(values.length()) * w);
    if (values.length()) copy_chunk(values, storage, decoded_values.data(), nullptr, 0);
    bool any_null = false;
    for (std::int64_t i = 0; i < n; ++i) {
      // A value is null where its index is, or where the dictionary entry it points at is.
      const bool ok = dict.IsValid(i) && values.IsValid(dict.GetValueIndex(i));
      if (ok)
        std::memcpy(dst + i * w, decoded_values.data() + static_cast<std::size_t>(dict.GetValueIndex(i)) * w, w);
      else
        std::memset(dst + i * w, 0, w);
      if (valid) valid[at + i] = ok;
      any_null = any_null || !ok;
    }
    return any_null;
  }
  if (storage == DType::Bool) {
    const auto& b = static_cast<const arrow::BooleanArray&>(array);
    for (std::int64_t i = 0; i < n; ++i) reinterpret_cast<bool*>(dst)[i] = b.IsValid(i) && b.Value(i);
  } else {
    const std::uint8_t* src = array.data()->buffers[1]->data() + static_cast<std::size_t>(array.offset()) * w;
    std::memcpy(dst, src, static_cast<std::size_t>(n) * w);
    if (array.null_count())
      for (std::int64_t i = 0; i < n; ++i)
        if (array.IsNull(i)) std::memset(dst + i * w, 0, w);
  }
  if (valid)
    for (std::int64_t i = 0; i < n; ++i) valid[at + i] = array.IsValid(i);
  return array.null_count() > 0;
}

/// The Parquet leaf columns of `field` (itself, or a nested column's leaves).
void add_leaves(const parquet::arrow::SchemaField& field, std::vector<int>& leaves) {
  if (field.column_index >= 0) leaves.push_back(field.column_index);
  for (const auto& child : field.children) add_leaves(child, leaves);
}

/// The columns `names` (not partition columns) of one file, in that order.
std::vector<std::shared_ptr<arrow::ChunkedArray>> read_file_columns(const fs::path& file, TableFormat format,
                                                                    const std::vector<std::string>& names) {
  return naming_file(file, [&] {
    const std::string what = file.string();
    auto input = value_or_throw(arrow::io::ReadableFile::Open(file.string()), what);
    std::vector<std::shared_ptr<arrow::ChunkedArray>> out;
    if (format == TableFormat::Parquet) {
      parquet::ArrowReaderProperties props;
      props.set_use_threads(true);  // the columns of a row group decoded by several threads
      props.set_pre_buffer(true);
      parquet::arrow::FileReaderBuilder builder;
      ok_or_throw(builder.Open(input), what);
      builder.properties(props);
      std::unique_ptr<parquet::arrow::FileReader> reader = value_or_throw(builder.Build(), what);
      std::shared_ptr<arrow::Schema> schema;
      ok_or_throw(reader->GetSchema(&schema), what);
      std::vector<int> leaves;  // a nested column's every leaf
      for (const std::string& n : names)
        add_leaves(reader->manifest().schema_fields[static_cast<std::size_t>(schema->GetFieldIndex(n))], leaves);
#if ARROW_VERSION_MAJOR >= 24  // the Status form is deprecated there; older Arrow has only it
      const std::shared_ptr<arrow::Table> table = value_or_throw(reader->ReadTable(leaves), what);
#else
      std::shared_ptr<arrow::Table> table;
      ok_or_throw(reader->ReadTable(leaves, &table), what);
#endif
      for (const std::string& n : names) out.push_back(table->GetColumnByName(n));
      return out;
    }
    arrow::ipc::IpcReadOptions options;
    options.use_threads = true;
    auto reader = value_or_throw(arrow::ipc::RecordBatchFileReader::Open(input, options), what);
    std::vector<std::vector<std::shared_ptr<arrow::Array>>> chunks(names.size());
    for (int b = 0; b < reader->num_record_batches(); ++b) {
      std::shared_ptr<arrow::RecordBatch> batch = value_or_throw(reader->ReadRecordBatch(b), what);
      ok_or_throw(batch->ValidateFull(), what);
      for (std::size_t i = 0; i < names.size(); ++i) chunks[i].push_back(batch->GetColumnByName(names[i]));
    }
    for (std::size_t i = 0; i < names.size(); ++i)
      out.push_back(std::make_shared<arrow::ChunkedArray>(chunks[i], reader->schema()->GetFieldByName(names[i])->type()));
    return out;
  });
}

/// A date, time, timestamp or duration type's full name (unit, zone: "timestamp[ms, tz=UTC]"); "" for
/// the other types.
std::string temporal_name(const arrow::DataType& t) {
  switch (t.id()) {
    case arrow::Type::DATE32: case arrow::Type::DATE64: case arrow::Type::TIME32: case arrow::Type::TIME64:
    case arrow::Type::TIMESTAMP: case arrow::Type::DURATION: return t.ToString();
    default: return "";
  }
}

}  // namespace

ArrowColumnInfo column_info(const std::string& name, const std::shared_ptr<arrow::DataType>& type, bool partition) {
  ArrowColumnInfo c{name, storage_of(*type), false, "", temporal_name(*decoded(type)),
                    type_text(*type) + (partition ? " (partition)" : ""), std::make_shared<ArrowType>(ArrowType{type}),
                    partition};
  if (!c.storage) {
    c.gathered = takes(decoded(type));
    c.dictionary_key = dictionary_key_family(*decoded(type));
  }
  return c;
}

const ArrowColumnInfo* ArrowTableSource::find(const std::string& name) const {
  for (const auto& c : columns)
    if (c.name == name) return &c;
  return nullptr;
}

ArrowTableSource inspect_arrow_table(const fs::path& path, const std::string& option) {
  ArrowTableSource t;
  t.path = path;
  t.option = option;
  t.format = table_format_of(path);
  const std::string where = option + " " + path.string();
  std::error_code ec;
  if (!fs::exists(path, ec)) throw InputError(where + ": no such file or directory");
  if (fs::is_directory(path, ec)) {
    for (auto it = fs::recursive_directory_iterator(path, ec); !ec && it != fs::recursive_directory_iterator(); it.increment(ec))
      if (it->is_regular_file() && is_data_file(it->path(), t.format)) t.files.push_back(it->path());
    std::sort(t.files.begin(), t.files.end());
    if (t.files.empty()) throw InputError(where + ": holds no " + table_format_name(t.format) + " file");
  } else {
    t.files.push_back(path);
  }
  std::shared_ptr<arrow::Schema> first;
  std::vector<Partition> first_parts;
  std::map<std::string, bool> part_is_int;
  for (const fs::path& file : t.files) {
    auto [schema, rows] = open_schema(file, t.format);
    t.file_rows.push_back(rows);
    t.rows += rows;
    const auto parts = partitions_of(fs::is_directory(path, ec) ? path : path.parent_path(), file);
    if (!first) {
      first = schema;
      first_parts = parts;
    } else {
      // Files of one dataset hold the same columns of the same types (a dictionary and its values agree).
      for (const auto& f : first->fields()) {
        const auto other = schema->GetFieldByName(f->name());
        if (!other)
          throw InputError(where + ": " + file.string() + " has no column " + f->name() + " (" + t.files.front().string() + " has)");
        if (!decoded(other->type())->Equals(*decoded(f->type())))
          throw InputError(where + ": " + file.string() + ": column " + f->name() + " is " + type_text(*other->type()) +
                           ", but in " + t.files.front().string() + " it is " + type_text(*f->type()));
      }
      for (const auto& f : schema->fields())
        if (!first->GetFieldByName(f->name()))
          throw InputError(where + ": " + file.string() + ": column " + f->name() + " is not in " + t.files.front().string());
      std::vector<std::string> a, b;
      for (const auto& p : parts) a.push_back(p.first);
      for (const auto& p : first_parts) b.push_back(p.first);
      if (a != b) throw InputError(where + ": " + file.string() + ": its partition folders differ from " + t.files.front().string() + "'s");
    }
    for (const auto& [name, value] : parts) {
      const bool is_int = !value || parses_as_int64(*value);
      part_is_int.try_emplace(name, true);
      part_is_int[name] = part_is_int[name] && is_int;
    }
  }
  for (const auto& f : first->fields()) t.columns.push_back(column_info(f->name(), f->type(), false));
  for (const auto& [name, value] : first_parts) {
    if (first->GetFieldByName(name))
      throw InputError(where + ": partition folder " + name + "=" + value.value_or(kHiveNull) + " names a column the files hold too");
    t.columns.push_back(column_info(name, part_is_int[name] ? arrow::int64() : arrow::utf8(), true));
  }
  return t;
}

namespace {

/// Bytes a row of a column takes decoded: its storage and validity; in Arrow's form, a fixed-width type's
/// width, else a guess of 16 (the check is to fail early, not to account for every byte).
std::uint64_t row_bytes(const ArrowColumnInfo& c) {
  if (c.storage) return dtype_size(*c.storage) + 1;
  const auto* fixed = dynamic_cast<const arrow::FixedWidthType*>(decoded(c.type->type).get());
  return fixed && fixed->bit_width() >= 8 ? static_cast<std::uint64_t>(fixed->bit_width() / 8 + 1) : 16;
}

/// Refuses a column neither the engine nor Arrow's Take takes, and checks that host memory holds the
/// columns and Arrow's decoded copy of the largest file beside them.
void expect_readable(const ArrowTableSource& t, const std::vector<std::string>& names) {
  const std::string where = t.option + " " + t.path.string();
  std::uint64_t bytes = 0, largest_file = 0;
  for (const std::string& n : names) {
    const ArrowColumnInfo* c = t.find(n);
    if (!c) throw InputError(where + ": no column " + n);
    if (!c->storage && !c->gathered)
      throw InputError(where + ": column " + n + " is " + c->type_name +
                       ", which mgjoin cannot join or carry (leave it out with --" + t.option.substr(2) + "-columns)");
    bytes += static_cast<std::uint64_t>(t.rows) * row_bytes(*c);
  }
  for (std::size_t f = 0; f < t.files.size(); ++f)
    largest_file = std::max<std::uint64_t>(largest_file, static_cast<std::uint64_t>(t.file_rows[f]) * bytes /
                                                             std::max<std::uint64_t>(1, static_cast<std::uint64_t>(t.rows)));
  alloc::expect_host_memory(bytes + largest_file, "reading " + std::to_string(names.size()) + " column(s) of " +
                                                      std::to_string(t.rows) + " rows from " + t.path.string());
}

/// A partition column's value in one file's folders, nullopt for the hive's null.
std::optional<std::string> partition_value(const std::vector<Partition>& parts, const std::string& name) {
  for (const auto& p : parts)
    if (p.first == name) return p.second;
  return std::nullopt;
}

/// The columns being read: host columns of storage, or Arrow chunks of the columns without.
struct ReadState {
  const ArrowTableSource& t;
  const std::vector<std::string>& names;
  std::vector<ReadColumn> out;
  std::vector<HostColumn> valid;
  std::vector<bool> any_null;
  std::vector<std::vector<std::shared_ptr<arrow::Array>>> chunks;  ///< per column in Arrow's form
  std::int64_t at = 0;                                             ///< the file's first row

  /// One file's rows of partition column `i`.
  void add_partition(std::size_t i, const std::optional<std::string>& value, std::int64_t rows) {
    const ArrowColumnInfo& info = *t.find(names[i]);
    if (!info.storage) {
      const auto type = decoded(info.type->type);
      chunks[i].push_back(value ? value_or_throw(arrow::MakeArrayFromScalar(arrow::StringScalar(*value), rows), names[i])
                                : value_or_throw(arrow::MakeArrayOfNull(type, rows), names[i]));
      return;
    }
    std::int64_t v = 0;
    if (value) std::from_chars(value->data(), value->data() + value->size(), v);
    std::fill(out[i].values.as<std::int64_t>() + at, out[i].values.as<std::int64_t>() + at + rows, v);
    std::fill(valid[i].as<bool>() + at, valid[i].as<bool>() + at + rows, value.has_value());
    any_null[i] = any_null[i] || (!value && rows > 0);
  }

  /// One file's chunks of file column `i`.
  void add_chunks(std::size_t i, const arrow::ChunkedArray& column, const fs::path& file) {
    const ArrowColumnInfo& info = *t.find(names[i]);
    std::int64_t row = at;
    for (const auto& chunk : column.chunks()) {
      if (!info.storage) {  // a dictionary decoded: files may hold different dictionaries, or none
        chunks[i].push_back(chunk->type_id() != arrow::Type::DICTIONARY ? chunk
                            : naming_file(file, [&] {
                                return value_or_throw(arrow::compute::Cast(*chunk, decoded(info.type->type)),
                                                      file.string() + ": column " + names[i]);
                              }));
        continue;
      }
      const bool nulls = naming_file(file, [&] {
        return copy_chunk(*chunk, *info.storage, static_cast<std::byte*>(out[i].values.data()), valid[i].as<bool>(), row);
      });
      any_null[i] = any_null[i] || nulls;
      row += chunk->length();
    }
  }

  /// Reads file `f`.
  void read_file(std::size_t f, const std::vector<std::string>& file_columns) {
    const fs::path& file = t.files[f];
    const auto chunked = read_file_columns(file, t.format, file_columns);
    const auto parts = partitions_of(fs::is_directory(t.path) ? t.path : t.path.parent_path(), file);
    std::size_t next_file_column = 0;
    for (std::size_t i = 0; i < names.size(); ++i) {
      if (t.find(names[i])->partition) {
        add_partition(i, partition_value(parts, names[i]), t.file_rows[f]);
        continue;
      }
      const auto& column = chunked[next_file_column++];
      if (column->length() != t.file_rows[f])
        throw InputError(t.option + " " + t.path.string() + ": " + file.string() + ": column " + names[i] + " has " +
                         std::to_string(column->length()) + " rows, the file's footer says " + std::to_string(t.file_rows[f]));
      add_chunks(i, *column, file);
    }
    at += t.file_rows[f];
  }
};

}  // namespace

std::vector<ReadColumn> read_arrow_columns(const ArrowTableSource& t, const std::vector<std::string>& names,
                                           MemoryKind memory) {
  expect_readable(t, names);
  initialize_arrow_compute();  // a dictionary's values decoded by Cast
  ReadState read{t, names, std::vector<ReadColumn>(names.size()), std::vector<HostColumn>(names.size()),
                 std::vector<bool>(names.size(), false), std::vector<std::vector<std::shared_ptr<arrow::Array>>>(names.size())};
  std::vector<std::string> file_columns;  // the names the files hold (not partitions)
  for (std::size_t i = 0; i < names.size(); ++i) {
    const ArrowColumnInfo& info = *t.find(names[i]);
    if (!info.partition) file_columns.push_back(names[i]);
    if (!info.storage) continue;
    read.out[i].values = HostColumn::allocate(*info.storage, t.rows, memory);
    read.valid[i] = HostColumn::allocate(DType::Bool, t.rows);
  }
  for (std::size_t f = 0; f < t.files.size(); ++f) read.read_file(f, file_columns);
  for (std::size_t i = 0; i < names.size(); ++i) {
    const auto type = decoded(t.find(names[i])->type->type);
    if (!t.find(names[i])->storage && read.chunks[i].empty())  // no rows: one empty chunk, which Take takes
      read.chunks[i].push_back(value_or_throw(arrow::MakeArrayOfNull(type, 0), names[i]));
    if (!t.find(names[i])->storage)
      read.out[i].arrow = std::make_shared<ArrowColumn>(ArrowColumn{
          std::make_shared<arrow::ChunkedArray>(read.chunks[i], type), "column " + names[i] + " of " + t.option + " " + t.path.string()});
    else if (read.any_null[i])
      read.out[i].valid = std::move(read.valid[i]);
  }
  return std::move(read.out);
}

std::shared_ptr<arrow::Buffer> bitmap_of(const bool* bits, std::int64_t n) {
  auto buffer = value_or_throw(arrow::AllocateBitmap(n), "output");
  for (std::int64_t i = 0; i < n; ++i) arrow::bit_util::SetBitTo(buffer->mutable_data(), i, bits[i]);
  return buffer;
}

namespace {

std::shared_ptr<arrow::Array> array_of(const OutputColumn& c) {
  std::shared_ptr<arrow::DataType> type = c.type ? decoded(c.type->type) : nullptr;
  if (!type || storage_of(*type) != c.values.type) type = arrow_type_of(c.values.type);
  const std::int64_t n = c.values.size;
  std::shared_ptr<arrow::Buffer> validity;
  std::int64_t nulls = 0;
  if (c.valid) {
    const bool* v = c.valid->as<bool>();
    nulls = n - std::count(v, v + n, true);
    if (nulls) validity = bitmap_of(v, n);
  }
  // The values are wrapped, not copied: the columns outlive the write.
  std::shared_ptr<arrow::Buffer> values =
      c.values.type == DType::Bool ? bitmap_of(c.values.as<bool>(), n)
                                   : std::make_shared<arrow::Buffer>(static_cast<const std::uint8_t*>(c.values.data),
                                                                     static_cast<std::int64_t>(c.values.bytes()));
  return arrow::MakeArray(arrow::ArrayData::Make(type, n, {validity, values}, nulls));
}

/// Rows of a Parquet row group the output is written in (Arrow's default is 2^20 too).
constexpr std::int64_t kRowGroupRows = std::int64_t{1} << 20;

/// `table` as Parquet (ZSTD, row groups of kRowGroupRows, the Arrow schema stored), its columns encoded
/// and compressed side by side on Arrow's CPU threads: parquet::arrow::WriteTable writes a row group's
/// columns one after the other; the buffered row groups of WriteRecordBatch take them in parallel.
void write_parquet(const arrow::Table& table, const std::shared_ptr<arrow::io::OutputStream>& out, const std::string& what) {
  auto props = parquet::WriterProperties::Builder()
                   .compression(parquet::Compression::ZSTD)
                   ->max_row_group_length(kRowGroupRows)
                   ->build();
  auto arrow_props = parquet::ArrowWriterProperties::Builder().store_schema()->set_use_threads(true)->build();
  auto writer = value_or_throw(
      parquet::arrow::FileWriter::Open(*table.schema(), arrow::default_memory_pool(), out, props, arrow_props), what);
  arrow::TableBatchReader batches(table);
  batches.set_chunksize(kRowGroupRows);
  for (;;) {
    std::shared_ptr<arrow::RecordBatch> batch;
    ok_or_throw(batches.ReadNext(&batch), what);
    if (!batch) break;
    ok_or_throw(writer->WriteRecordBatch(*batch), what);
  }
  ok_or_throw(writer->Close(), what);
}

}  // namespace

StagedColumnFile stage_arrow_file(const fs::path& final_path, std::span<const OutputColumn> columns, TableFormat format) {
  std::string temp_name = ".";  // appended, not "." + name: g++ 12 warned (-Wrestrict) of the sum
  temp_name += final_path.filename().string();
  temp_name += ".tmp-" + std::to_string(::getpid());
  const fs::path temp = final_path.parent_path() / temp_name;
  StagedColumnFile staged(final_path, temp);  // from here on, a failure removes the temp file
  std::vector<std::shared_ptr<arrow::Field>> fields;
  std::vector<std::shared_ptr<arrow::ChunkedArray>> arrays;
  for (const OutputColumn& c : columns) {
    arrays.push_back(c.arrow ? c.arrow->data : std::make_shared<arrow::ChunkedArray>(array_of(c)));
    fields.push_back(arrow::field(c.name, arrays.back()->type(), true));
  }
  const auto table = arrow::Table::Make(arrow::schema(fields), arrays);
  const std::string what = final_path.string();
  naming_file(final_path, [&] {
    auto out = value_or_throw(arrow::io::FileOutputStream::Open(temp.string()), what);
    if (format == TableFormat::Parquet) {
      write_parquet(*table, out, what);
    } else {
      auto writer = value_or_throw(arrow::ipc::MakeFileWriter(out, table->schema()), what);
      ok_or_throw(writer->WriteTable(*table), what);
      ok_or_throw(writer->Close(), what);
    }
    ok_or_throw(out->Close(), what);
  });
  return staged;
}

}  // namespace mgjoin::cli
