// .npy columns of NumPy's fixed-width strings ('|S<n>', '<U<n>') as Arrow binary and string columns, so
// that they join and come out as a Parquet table's strings do (a key through the shared dictionary, a
// payload gathered by row numbers: host_columns.hpp).
#include "arrow_internal.hpp"

#include <mgjoin/io.hpp>

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
/// str_ drops them too); an element holding no code point (past U+10FFFF, or a surrogate) is refused.
void append_utf8(const char* element, std::int64_t width, std::string& out, const std::string& where) {
  std::int64_t n = width;
  const auto code_at = [&](std::int64_t i) {
    std::uint32_t c;
    std::memcpy(&c, element + 4 * i, 4);  // little-endian, as this host and NumPy's '<U' are
    return c;
  };
  while (n > 0 && code_at(n - 1) == 0) --n;
  for (std::int64_t i = 0; i < n; ++i) {
    const std::uint32_t c = code_at(i);
    if (c > 0x10FFFF || (c >= 0xD800 && c <= 0xDFFF)) {
      char hex[16];
      std::snprintf(hex, sizeof hex, "0x%X", c);
      throw InputError(where + " holds " + hex + ", which is not a Unicode code point");
    }
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
}

/// One file's elements appended to `chunks` through `builder`, a new chunk before one would pass
/// kChunkValueBytes.
void append_file(const std::filesystem::path& path, const StringColumnFileInfo& info, arrow::BinaryBuilder& builder,
                 arrow::ArrayVector& chunks, const std::string& option) {
  const std::string data = read_string_column_file(path, info);
  const std::string what = option + " " + path.string();
  std::string utf8;
  for (std::int64_t row = 0; row < info.size; ++row) {
    const char* element = data.data() + static_cast<std::size_t>(row) * info.element_bytes();
    std::string_view value;
    if (info.unicode) {
      utf8.clear();
      append_utf8(element, info.width, utf8, what + ": element " + std::to_string(row));
      value = utf8;
    } else {
      value = trimmed_bytes(element, info.width);
    }
    if (builder.value_data_length() + static_cast<std::int64_t>(value.size()) > kChunkValueBytes)
      chunks.push_back(value_or_throw(builder.Finish(), what));
    ok_or_throw(builder.Append(value), what);
  }
}

}  // namespace

ArrowColumnInfo npy_strings_column_info(const std::string& name, bool unicode, const std::string&) {
  return column_info(name, unicode ? arrow::utf8() : arrow::binary(), /*partition=*/false);
}

ReadColumn read_npy_strings(std::span<const std::filesystem::path> files, const std::string& option) {
  std::optional<bool> unicode;
  arrow::ArrayVector chunks;
  std::unique_ptr<arrow::BinaryBuilder> builder;
  for (const std::filesystem::path& f : files) {
    const std::optional<StringColumnFileInfo> info = inspect_string_column_file(f);
    MGJOIN_INPUT_EXPECTS(info && (!unicode || *unicode == info->unicode),
                         option + " " + f.string() + ": expected a .npy file of " +
                             (unicode && !*unicode ? "byte strings ('S')" : "unicode strings ('U')") +
                             " like the column's first file");
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
