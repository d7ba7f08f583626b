// Key columns of strings, binary values and decimals, joined exactly through a dictionary both sides
// share: the distinct non-null values of both get int32 codes, each side's key column is replaced by its
// codes, and the codes join as the engine's 4-byte keys (its fast path: no hash and verify) with the SQL
// null rules of null_keys.hpp (a null key: a null code). The output's key column is decoded back through
// the dictionary (take_arrow_column). docs/DESIGN.md says why.
//
// The dictionary is Arrow's DictionaryEncode of both sides' values together, not a hash table of ours:
// Arrow's hash kernels are maintained and tested, cover every one of these types (offsets of 32 and 64
// bits, views, fixed widths, decimals) and their nulls, and are fast; equality is of the values' bytes,
// which for these types is SQL's equality (decimals of one scale, checked before, each side cast to the
// larger precision: a cast to a wider decimal of the same scale keeps every value as it is).
#include "arrow_internal.hpp"

#include <arrow/compute/api.h>

#include <algorithm>

namespace mgjoin::cli {
namespace {

/// Decimals of one scale as one type: the larger precision of the two, as decimal128 where it fits
/// (decimal32 and decimal64 have no hash kernels), else decimal256.
std::shared_ptr<arrow::DataType> wider_decimal(const arrow::DataType& a, const arrow::DataType& b) {
  const auto& da = static_cast<const arrow::DecimalType&>(a);
  const int precision = std::max(da.precision(), static_cast<const arrow::DecimalType&>(b).precision());
  return precision <= arrow::Decimal128Type::kMaxPrecision ? arrow::decimal128(precision, da.scale())
                                                           : arrow::decimal256(precision, da.scale());
}

/// The type both sides are encoded as: strings and binary values as their large type, whatever the sides'
/// (the shared dictionary is one array: 32-bit offsets would fail past 2 GiB of distinct values; only the
/// dictionary pays the 8-byte offsets); decimals (of one scale) at the larger precision; fixed_size_binary
/// as theirs (the sides agree).
std::shared_ptr<arrow::DataType> encoded_type(const std::shared_ptr<arrow::DataType>& a,
                                              const std::shared_ptr<arrow::DataType>& b) {
  const std::string family = dictionary_key_family(*a);
  if (family == "string") return arrow::large_utf8();
  if (family == "binary") return arrow::large_binary();
  return arrow::is_decimal(a->id()) ? wider_decimal(*a, *b) : a;
}

/// The output key's type: the sides' where they agree, else the type they are encoded as.
std::shared_ptr<arrow::DataType> key_type(const std::shared_ptr<arrow::DataType>& a,
                                          const std::shared_ptr<arrow::DataType>& b) {
  return a->Equals(*b) ? a : encoded_type(a, b);
}

/// Codes of `rows` rows (zero where null) and their validity.
ReadColumn codes_column(std::int64_t rows, MemoryKind memory) {
  return {HostColumn::allocate(DType::Int32, rows, memory), HostColumn::allocate(DType::Bool, rows), nullptr};
}

/// Copies one encoded chunk's codes, whose first row is row `row` of the left rows and then the right
/// ones, into the sides' code columns.
void copy_codes(const arrow::DictionaryArray& chunk, std::int64_t row, DictionaryKeys& out) {
  const auto& codes = static_cast<const arrow::Int32Array&>(*chunk.indices());
  const std::int64_t left_rows = out.left.values.size();
  for (std::int64_t i = 0; i < codes.length(); ++i, ++row) {
    ReadColumn& side = row < left_rows ? out.left : out.right;
    const std::int64_t at = row < left_rows ? row : row - left_rows;
    const bool valid = codes.IsValid(i);
    side.values.as<std::int32_t>()[at] = valid ? codes.Value(i) : 0;
    side.valid->as<bool>()[at] = valid;
  }
}

/// Drops a validity column that holds no null.
void drop_full_validity(ReadColumn& c) {
  const bool* v = c.valid->as<bool>();
  if (std::find(v, v + c.valid->size(), false) == v + c.valid->size()) c.valid.reset();
}

}  // namespace

std::string dictionary_key_family(const arrow::DataType& t) {
  switch (t.id()) {
    case arrow::Type::STRING: case arrow::Type::LARGE_STRING: case arrow::Type::STRING_VIEW: return "string";
    case arrow::Type::BINARY: case arrow::Type::LARGE_BINARY: case arrow::Type::BINARY_VIEW: return "binary";
    case arrow::Type::FIXED_SIZE_BINARY: return t.ToString();
    case arrow::Type::DECIMAL32: case arrow::Type::DECIMAL64: case arrow::Type::DECIMAL128: case arrow::Type::DECIMAL256:
      return decimal_family(static_cast<const arrow::DecimalType&>(t).scale());
    default: return "";
  }
}

DictionaryKeys encode_dictionary_keys(const ArrowColumn& left, const ArrowColumn& right, MemoryKind memory,
                                      const std::string& output) {
  initialize_arrow_compute();
  const std::string what = output + ": encoding " + left.where + " and " + right.where + " through one dictionary";
  const auto type = encoded_type(left.data->type(), right.data->type());
  arrow::ArrayVector chunks;  // the left side's, then the right side's: one column, one dictionary
  for (const ArrowColumn* side : {&left, &right}) {
    arrow::Datum values(side->data);
    if (!side->data->type()->Equals(*type)) values = value_or_throw(arrow::compute::Cast(values, type), what);
    for (const auto& c : values.chunked_array()->chunks()) chunks.push_back(c);
  }
  DictionaryKeys out{codes_column(left.data->length(), memory), codes_column(right.data->length(), memory), {}, {}, {}, {}};
  std::shared_ptr<arrow::Array> dictionary = value_or_throw(arrow::MakeArrayOfNull(type, 0), what);
  const arrow::Datum encoded =
      value_or_throw(arrow::compute::DictionaryEncode(std::make_shared<arrow::ChunkedArray>(chunks, type)), what);
  std::int64_t row = 0;
  for (const auto& chunk : encoded.chunked_array()->chunks()) {
    const auto& dict = static_cast<const arrow::DictionaryArray&>(*chunk);
    copy_codes(dict, row, out);
    row += chunk->length();
    dictionary = dict.dictionary();  // every chunk's indices index the last chunk's dictionary
  }
  MGJOIN_EXPECTS(row == left.data->length() + right.data->length(), "encode_dictionary_keys: rows out of step");
  drop_full_validity(out.left);
  drop_full_validity(out.right);
  out.dictionary = std::make_shared<ArrowColumn>(ArrowColumn{std::make_shared<arrow::ChunkedArray>(dictionary), what});
  out.left_type = std::make_shared<ArrowType>(ArrowType{left.data->type()});
  out.right_type = std::make_shared<ArrowType>(ArrowType{right.data->type()});
  out.key_type = std::make_shared<ArrowType>(ArrowType{key_type(left.data->type(), right.data->type())});
  return out;
}

}  // namespace mgjoin::cli
