#pragma once
// What the Arrow files of the CLI (apps/mgjoin/arrow/) share: the Arrow types behind arrow_tables.hpp's
// opaque ArrowType and ArrowColumn, and Arrow's results and errors as the CLI's one-line InputErrors.
#include "../arrow_tables.hpp"

#include <mgjoin/error.hpp>

#include <arrow/api.h>

#include <filesystem>
#include <memory>
#include <string>

namespace mgjoin::cli {

struct ArrowType {
  std::shared_ptr<arrow::DataType> type;
};

struct ArrowColumn {
  std::shared_ptr<arrow::ChunkedArray> data;
  std::string where;  ///< for messages: "column p of --r x.parquet"
};

/// Arrow's messages may span lines; the CLI's errors are one.
inline std::string one_line(std::string text) {
  while (!text.empty() && (text.back() == '\n' || text.back() == ' ')) text.pop_back();
  for (std::size_t at; (at = text.find('\n')) != std::string::npos;) text.replace(at, 1, "; ");
  return text;
}

template <class T>
T value_or_throw(arrow::Result<T> r, const std::string& what) {
  if (!r.ok()) throw InputError(what + ": " + one_line(r.status().message()));
  return std::move(r).ValueOrDie();
}
inline void ok_or_throw(const arrow::Status& s, const std::string& what) {
  if (!s.ok()) throw InputError(what + ": " + one_line(s.message()));
}

/// Arrow's and Parquet's own exceptions (a corrupt footer) as one line naming the file.
template <class F>
auto naming_file(const std::filesystem::path& file, F&& f) {
  try {
    return f();
  } catch (const InputError&) {
    throw;
  } catch (const std::exception& e) {
    throw InputError(file.string() + ": " + one_line(e.what()));
  }
}

/// A bitmap of `n` bits from bools (true: set).
std::shared_ptr<arrow::Buffer> bitmap_of(const bool* bits, std::int64_t n);

/// Registers Arrow's compute kernels, once (Arrow 21 on: libarrow_compute's kernels are not registered
/// until arrow::compute::Initialize() runs).
void initialize_arrow_compute();

/// Whether Arrow's Take gathers values of type `t` (arrow_gather.cpp): a payload the engine does not take
/// is carried by row numbers and gathered on the host.
bool takes(const std::shared_ptr<arrow::DataType>& t);

/// The family a key of type `t` joins within through a shared dictionary (arrow_dictionary_keys.cpp):
/// "string" (string, large_string, string_view), "binary" (binary, large_binary, binary_view), the type
/// itself for fixed_size_binary, decimal_family(scale) for decimals; empty for a type that is not keyed so.
std::string dictionary_key_family(const arrow::DataType& t);

/// A column's info from its Arrow type (arrow_tables.cpp): its storage, or how a column without storage
/// goes (gathered, dictionary key).
ArrowColumnInfo column_info(const std::string& name, const std::shared_ptr<arrow::DataType>& type, bool partition);

}  // namespace mgjoin::cli
