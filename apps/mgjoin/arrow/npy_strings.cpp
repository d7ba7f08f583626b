// .npy columns of NumPy's fixed-width strings ('|S<n>', '<U<n>') as Arrow binary and string columns, so
// that they join and come out as a Parquet table's strings do (a key through the shared dictionary, a
// payload gathered by row numbers: host_columns.hpp); and Arrow string and binary output columns written
// as such .npy columns.
#include "arrow_internal.hpp"

#include <mgjoin/io.hpp>

#include <arrow/chunk_resolver.h>
#include <arrow/compute/api.h>
#include <arrow/util/utf8.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <optional>

namespace mgjoin::cli {
namespace {

/// A chunk holds at most this many value bytes: binary and string arrays have 32-bit offsets.
constexpr std::int64_t kChunkValueBytes = std::int64_t{1} << 30;

/// The bytes of an S element without its trailing NULs (NumPy's bytes_ drops them too).
std::string_view trimmed_bytes(const char* element, std::int64_t width) {
  std::int64_t n = width;
  while (n > 0 && element[n - 1] == '\0') --n;
  return {element, static_cast<std::size_t>(n)};
}

/// A U element (little-endian UCS-4 code points) as UTF-8, without its trailing NUL code points (NumPy's
/// str_ drops them too). Returns the first code point that is none (past U+10FFFF, or a surrogate).
std::optional<std::uint32_t> append_utf8(const char* element, std::int64_t width, std::string& out) {
  std::int64_t n = width;
  const auto code_at = [&](std::int64_t i) {
    std::uint32_t c;
    std::memcpy(&c, element + 4 * i, 4);  // little-endian, as this host and NumPy's '<U' are
    return c;
  };
  while (n > 0 && code_at(n - 1) == 0) --n;
  for (std::int64_t i = 0; i < n; ++i) {
    const std::uint32_t c = code_at(i);
    if (c > 0x10FFFF || (c >= 0xD800 && c <= 0xDFFF)) return c;
    if (c < 0x80) {
      out += static_cast<char>(c);
    } else if (c < 0x800) {
      out += static_cast<char>(0xC0 | (c >> 6));
      out += static_cast<char>(0x80 | (c & 0x3F));
    } else if (c < 0x10000) {
      out += static_cast<char>(0xE0 | (c >> 12));
      out += static_cast<char>(0x80 | ((c >> 6) & 0x3F));
      out += static_cast<char>(0x80 | (c & 0x3F));
    } else {
      out += static_cast<char>(0xF0 | (c >> 18));
      out += static_cast<char>(0x80 | ((c >> 12) & 0x3F));
      out += static_cast<char>(0x80 | ((c >> 6) & 0x3F));
      out += static_cast<char>(0x80 | (c & 0x3F));
    }
  }
  return std::nullopt;
}

/// One file's elements appended to `chunks` through `builder`, a new chunk before one would pass
/// kChunkValueBytes.
void append_file(const std::filesystem::path& path, const StringColumnFileInfo& info, arrow::BinaryBuilder& builder,
                 arrow::ArrayVector& chunks, const std::string& option) {
  const std::string what = option + " " + path.string();
  std::string utf8;
  read_string_column_pieces(path, info, [&](std::int64_t first, std::int64_t rows, const char* data) {
    for (std::int64_t i = 0; i < rows; ++i) {
      const char* element = data + static_cast<std::size_t>(i) * info.element_bytes();
      std::string_view value;
      if (info.unicode) {
        utf8.clear();
        if (const auto bad = append_utf8(element, info.width, utf8)) {
          char hex[16];
          std::snprintf(hex, sizeof hex, "0x%X", *bad);
          throw InputError(what + ": element " + std::to_string(first + i) + " holds " + hex +
                           ", which is not a Unicode code point");
        }
        value = utf8;
      } else {
        value = trimmed_bytes(element, info.width);
      }
      if (builder.value_data_length() + static_cast<std::int64_t>(value.size()) > kChunkValueBytes)
        chunks.push_back(value_or_throw(builder.Finish(), what));
      ok_or_throw(builder.Append(value), what);
    }
  });
}

/// The code points of valid UTF-8 `value` (stage_npy_strings checked it) into `out`, at most `width` of
/// them (little-endian UCS-4, as NumPy's '<U').
void put_code_points(std::string_view value, std::int64_t width, char* out) {
  const auto byte = [&](std::size_t i) { return static_cast<std::uint32_t>(static_cast<unsigned char>(value[i])); };
  const char* end = out + 4 * width;
  for (std::size_t i = 0; i < value.size() && out < end; out += 4) {
    const std::uint32_t lead = byte(i);
    const int extra = lead < 0x80 ? 0 : lead < 0xE0 ? 1 : lead < 0xF0 ? 2 : 3;
    std::uint32_t c = extra == 0 ? lead : lead & (0x3Fu >> extra);
    for (int k = 1; k <= extra && i + k < value.size(); ++k) c = (c << 6) | (byte(i + k) & 0x3F);
    std::memcpy(out, &c, 4);
    i += 1 + static_cast<std::size_t>(extra);
  }
}

/// Row `i`'s value; a null's (a side the row has not: first_null_taken refused the others) is empty
/// whatever its offsets span.
std::string_view value_at(const arrow::LargeBinaryArray& a, std::int64_t i) { return a.IsNull(i) ? std::string_view() : a.GetView(i); }

/// A column of strings or binary values (of any offset width, views, or a dictionary of them) as
/// large_binary chunks: one reader for them all.
struct BinaryChunks {
  bool text = false;  ///< strings (UTF-8), not binary values
  arrow::ArrayVector chunks;
};
/// Whether the column holds strings (UTF-8), not binary values; a dictionary by its values.
bool is_text(const ArrowColumn& column) {
  auto type = column.data->type();
  if (type->id() == arrow::Type::DICTIONARY) type = static_cast<const arrow::DictionaryType&>(*type).value_type();
  return dictionary_key_family(*type) == "string";
}

BinaryChunks binary_chunks(const ArrowColumn& column, const std::string& output) {
  initialize_arrow_compute();
  BinaryChunks out{is_text(column), {}};
  for (const auto& c : column.data->chunks())
    out.chunks.push_back(value_or_throw(arrow::compute::Cast(*c, arrow::large_binary()), output));
  return out;
}

/// Code points of valid UTF-8: its bytes that do not continue a character.
std::int64_t code_points(std::string_view value) {
  return std::count_if(value.begin(), value.end(), [](char b) { return (static_cast<unsigned char>(b) & 0xC0) != 0x80; });
}

}  // namespace

std::int64_t first_null_taken(const ArrowColumn& column, ColumnView rows, const bool* present) {
  if (column.data->null_count() == 0) return -1;
  const arrow::ChunkResolver chunks(column.data->chunks());
  const std::int64_t* row = rows.as<std::int64_t>();
  for (std::int64_t i = 0; i < rows.size; ++i) {
    if (present && !present[i]) continue;
    const arrow::ChunkLocation at = chunks.Resolve(row[i]);
    if (column.data->chunk(static_cast<int>(at.chunk_index))->IsNull(at.index_in_chunk)) return i;
  }
  return -1;
}

void expect_utf8(const ArrowColumn& column, const std::string& output) {
  if (!is_text(column)) return;
  const BinaryChunks values = binary_chunks(column, output);
  arrow::util::InitializeUTF8();  // ValidateUTF8's tables
  std::int64_t row = 0;
  for (const auto& chunk : values.chunks) {
    const auto& a = static_cast<const arrow::LargeBinaryArray&>(*chunk);
    for (std::int64_t i = 0; i < a.length(); ++i, ++row)
      if (!arrow::util::ValidateUTF8(value_at(a, i)))
        throw InputError(output + ": row " + std::to_string(row) + " of " + column.where +
                         " is not valid UTF-8, which .npy's U columns cannot hold: use --format parquet (or arrow)");
  }
}

StagedColumnFile stage_npy_strings(const std::filesystem::path& path, const ArrowColumn& column, const std::string& output) {
  const BinaryChunks values = binary_chunks(column, output);
  std::int64_t width = 1;  // NumPy's narrowest string is 1 wide, as np.array([''])'s
  for (const auto& chunk : values.chunks) {
    const auto& a = static_cast<const arrow::LargeBinaryArray&>(*chunk);
    for (std::int64_t i = 0; i < a.length(); ++i) {
      const std::string_view v = value_at(a, i);  // UTF-8: expect_utf8 checked it
      width = std::max(width, values.text ? code_points(v) : static_cast<std::int64_t>(v.size()));
    }
  }
  const StringColumnFileInfo shape{values.text, width, column.data->length(), 0};
  const arrow::ChunkResolver resolver(values.chunks);
  return stage_string_column(path, shape, [&](std::int64_t first, std::int64_t n, char* out) {
    arrow::ChunkLocation at = resolver.Resolve(first);
    for (std::int64_t row = first; row < first + n; ++row, out += shape.element_bytes()) {
      at = resolver.ResolveWithHint(row, at);
      const std::string_view v = value_at(static_cast<const arrow::LargeBinaryArray&>(*values.chunks[at.chunk_index]), at.index_in_chunk);
      if (values.text) put_code_points(v, shape.width, out);
      else std::memcpy(out, v.data(), v.size());
    }
  });
}

ArrowColumnInfo npy_strings_column_info(const std::string& name, bool unicode, const std::string&) {
  return column_info(name, unicode ? arrow::utf8() : arrow::binary(), /*partition=*/false);
}

ReadColumn read_npy_strings(std::span<const std::filesystem::path> files, const std::string& option) {
  std::optional<bool> unicode;
  arrow::ArrayVector chunks;
  std::unique_ptr<arrow::BinaryBuilder> builder;
  for (const std::filesystem::path& f : files) {
    const std::optional<StringColumnFileInfo> info = inspect_string_column_file(f);
    MGJOIN_INPUT_EXPECTS(info, option + " " + f.string() + ": not a .npy file of strings ('U' or 'S')");
    MGJOIN_INPUT_EXPECTS(!unicode || *unicode == info->unicode,
                         option + " " + f.string() + ": expected a .npy file of " +
                             (*unicode ? "unicode strings ('U')" : "byte strings ('S')") + " like the column's first file");
    if (!unicode) {
      unicode = info->unicode;
      if (*unicode) builder = std::make_unique<arrow::StringBuilder>();
      else builder = std::make_unique<arrow::BinaryBuilder>();
    }
    append_file(f, *info, *builder, chunks, option);
  }
  MGJOIN_EXPECTS(builder != nullptr, "read_npy_strings: no file");
  chunks.push_back(value_or_throw(builder->Finish(), option + " " + files.front().string()));
  ReadColumn column;
  column.arrow = std::make_shared<const ArrowColumn>(
      ArrowColumn{std::make_shared<arrow::ChunkedArray>(std::move(chunks), *unicode ? arrow::utf8() : arrow::binary()),
                  "column of " + option + " " + files.front().string()});
  return column;
}

}  // namespace mgjoin::cli
