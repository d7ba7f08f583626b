// Payload columns of types the engine does not carry (strings, binary, decimals, nested types), gathered
// on the host after the join: a hidden int64 row-number column goes through the join in their place, and
// Arrow's Take gathers each by the row numbers that come out (docs/DESIGN.md says why).
#include "arrow_internal.hpp"

#include <arrow/compute/api.h>
#include <arrow/config.h>

#include <algorithm>
#include <cstdlib>
#include <mutex>

namespace mgjoin::cli {
namespace {

/// Rows a slice of the output gathers at most: one Take and one output chunk a slice, so that no chunk of
/// strings needs more than 32-bit offsets unless its rows do (MGJOIN_TEST_TAKE_SLICE_ROWS lowers it, so
/// that a test sees several chunks without gigabytes of data).
constexpr std::int64_t kTakeSliceRows = std::int64_t{1} << 20;

std::int64_t take_slice_rows() {
  const char* rows = std::getenv("MGJOIN_TEST_TAKE_SLICE_ROWS");
  return rows && std::atoll(rows) > 0 ? std::atoll(rows) : kTakeSliceRows;
}

/// The type Take gathers `t` through: strings, binary values and lists with 64-bit offsets (a column's
/// chunks become one array of more than 2 GiB), and view types as those (Take has no kernel for them).
std::shared_ptr<arrow::DataType> take_type(const std::shared_ptr<arrow::DataType>& t) {
  switch (t->id()) {
    case arrow::Type::STRING: case arrow::Type::STRING_VIEW: return arrow::large_utf8();
    case arrow::Type::BINARY: case arrow::Type::BINARY_VIEW: return arrow::large_binary();
    case arrow::Type::LIST: return arrow::large_list(static_cast<const arrow::ListType&>(*t).value_field());
    default: return t;
  }
}

/// `values` as one array of take_type's type (its chunks concatenated once, not once a slice).
std::shared_ptr<arrow::Array> take_input(const arrow::ChunkedArray& values, const std::string& what) {
  const auto type = take_type(values.type());
  arrow::ArrayVector chunks;
  for (const auto& c : values.chunks())
    chunks.push_back(c->type()->Equals(*type) ? c : value_or_throw(arrow::compute::Cast(*c, type), what));
  if (chunks.size() == 1) return chunks.front();
  if (chunks.empty()) return value_or_throw(arrow::MakeArrayOfNull(type, 0), what);
  return value_or_throw(arrow::Concatenate(chunks), what);
}

/// Take of `values` by `indices`, in slices of take_slice_rows() indices, each slice cast to `type`.
std::shared_ptr<arrow::ChunkedArray> take_chunked(const arrow::ChunkedArray& values, const arrow::Array& indices,
                                                  const std::shared_ptr<arrow::DataType>& type, const std::string& what) {
  const auto input = take_input(values, what);
  const std::int64_t slice = take_slice_rows();
  arrow::ArrayVector out;
  for (std::int64_t at = 0; at < indices.length() || out.empty(); at += slice) {
    const auto taken = value_or_throw(arrow::compute::Take(*input, *indices.Slice(at, slice)), what);
    out.push_back(taken->type()->Equals(*type) ? taken : value_or_throw(arrow::compute::Cast(*taken, type), what));
  }
  return value_or_throw(arrow::ChunkedArray::Make(std::move(out), type), what);
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
  try {
    take_chunked(arrow::ChunkedArray(arrow::ArrayVector{*empty}, t), arrow::Int64Array(0, nullptr), t, "");
    return true;
  } catch (const InputError&) {
    return false;
  }
}

std::shared_ptr<const ArrowColumn> arrow_row_indices(ColumnView indices, const bool* valid) {
  MGJOIN_EXPECTS(indices.type == DType::Int32 || indices.type == DType::Int64, "arrow_row_indices: int32 or int64 indices");
  const std::int64_t n = indices.size;
  const std::int64_t nulls = valid ? n - std::count(valid, valid + n, true) : 0;
  // The indices are wrapped, not copied; a null index (a missing side, a null key) takes a null.
  const auto buffer = std::make_shared<arrow::Buffer>(static_cast<const std::uint8_t*>(indices.data),
                                                      static_cast<std::int64_t>(indices.bytes()));
  const auto type = indices.type == DType::Int32 ? arrow::int32() : arrow::int64();
  const auto array = arrow::MakeArray(arrow::ArrayData::Make(type, n, {nulls ? bitmap_of(valid, n) : nullptr, buffer}, nulls));
  return std::make_shared<ArrowColumn>(ArrowColumn{std::make_shared<arrow::ChunkedArray>(array), "row indices"});
}

std::shared_ptr<const ArrowColumn> take_arrow_column(const ArrowColumn& column, const ArrowColumn& indices,
                                                     const ArrowType* type, const std::string& output) {
  initialize_arrow_compute();
  const auto out_type = type ? type->type : column.data->type();
  const std::string what = output + ": gathering " + column.where + " (" + column.data->type()->ToString() + ")";
  MGJOIN_EXPECTS(indices.data->num_chunks() == 1, "take_arrow_column: indices of arrow_row_indices");
  return std::make_shared<ArrowColumn>(ArrowColumn{take_chunked(*column.data, *indices.data->chunk(0), out_type, what), column.where});
}

}  // namespace mgjoin::cli
