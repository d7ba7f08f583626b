// Payload columns of types the engine does not carry (strings, binary, decimals, nested types), gathered
// on the host after the join: a hidden int64 row-number column goes through the join in their place, and
// Arrow's Take gathers each by the row numbers that come out (docs/DESIGN.md says why).
#include "arrow_internal.hpp"

#include <arrow/compute/api.h>
#include <arrow/config.h>

#include <algorithm>
#include <mutex>

namespace mgjoin::cli {
namespace {

/// The type Take gathers a view type through (Take has no kernel for string_view and binary_view).
std::shared_ptr<arrow::DataType> take_type(const std::shared_ptr<arrow::DataType>& t) {
  switch (t->id()) {
    case arrow::Type::STRING_VIEW: return arrow::large_utf8();
    case arrow::Type::BINARY_VIEW: return arrow::large_binary();
    default: return t;
  }
}

/// Take of `values` by `indices` (an Array), through take_type's type and back.
std::shared_ptr<arrow::ChunkedArray> take_chunked(const std::shared_ptr<arrow::ChunkedArray>& values,
                                                  const std::shared_ptr<arrow::Array>& indices) {
  const std::string what = "gathering a column of " + values->type()->ToString();
  const auto type = take_type(values->type());
  arrow::Datum in(values);
  if (type != values->type()) in = value_or_throw(arrow::compute::Cast(in, type), what);
  arrow::Datum out = value_or_throw(arrow::compute::Take(in, indices), what);
  if (type != values->type()) out = value_or_throw(arrow::compute::Cast(out, values->type()), what);
  return out.chunked_array();
}

}  // namespace

void initialize_arrow_compute() {
#if ARROW_VERSION_MAJOR >= 21
  static std::once_flag once;
  std::call_once(once, [] { ok_or_throw(arrow::compute::Initialize(), "Arrow's compute kernels"); });
#endif
}

bool takes(const std::shared_ptr<arrow::DataType>& t) {
  initialize_arrow_compute();
  // Asked of Arrow itself (an empty column), so that whatever its Take gathers, the CLI carries.
  const auto empty = arrow::MakeArrayOfNull(t, 0);
  if (!empty.ok()) return false;
  const auto values = std::make_shared<arrow::ChunkedArray>(arrow::ArrayVector{*empty}, t);
  try {
    take_chunked(values, std::make_shared<arrow::Int64Array>(0, nullptr));
    return true;
  } catch (const InputError&) {
    return false;
  }
}

std::shared_ptr<const ArrowColumn> take_arrow_column(const ArrowColumn& column, ColumnView indices, const bool* valid) {
  initialize_arrow_compute();
  MGJOIN_EXPECTS(indices.type == DType::Int32 || indices.type == DType::Int64, "take_arrow_column: int32 or int64 indices");
  const std::int64_t n = indices.size;
  const std::int64_t nulls = valid ? n - std::count(valid, valid + n, true) : 0;
  // The indices are wrapped, not copied; a null index (a missing side, a null key) takes a null.
  const auto buffer = std::make_shared<arrow::Buffer>(static_cast<const std::uint8_t*>(indices.data),
                                                      static_cast<std::int64_t>(indices.bytes()));
  const auto type = indices.type == DType::Int32 ? arrow::int32() : arrow::int64();
  const auto array = arrow::MakeArray(arrow::ArrayData::Make(type, n, {nulls ? bitmap_of(valid, n) : nullptr, buffer}, nulls));
  return std::make_shared<ArrowColumn>(ArrowColumn{take_chunked(column.data, array)});
}

}  // namespace mgjoin::cli
