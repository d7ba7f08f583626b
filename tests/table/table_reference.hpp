#pragma once
// The reference for join_tables: which (left row, right row) pairs each join kind outputs, computed
// the obvious way. Keys are read as tuples of their typed values (each component widened exactly to a
// 128-bit integer, so int8 -1 and uint8 255 stay different and order as their types do), never as the
// packed bits the engine sorts. A std::map from key tuple to the right table's rows, in table order;
// every left row looks itself up. Nothing here calls the engine (not even TableView::find).
#include <mgjoin/table.hpp>
#include <mgjoin/types.hpp>

#include <cstdint>
#include <cstring>
#include <map>
#include <stdexcept>
#include <string>
#include <vector>

namespace mgjoin::test {

using Int128 = __int128;  // GCC and Clang: holds every value of every integer column exactly

/// One output row: left and right row indices, -1 where that side has no row.
struct RowPair {
  std::int64_t left = -1, right = -1;
  friend bool operator==(const RowPair&, const RowPair&) = default;
  friend auto operator<=>(const RowPair&, const RowPair&) = default;
};

/// A key as the tuple of its components' values.
using KeyTuple = std::vector<Int128>;

/// Bytes per element, written out here rather than taken from the library.
inline std::size_t element_bytes(DType t) {
  switch (t) {
    case DType::Int8: case DType::UInt8: case DType::Bool: return 1;
    case DType::Int16: case DType::UInt16: return 2;
    case DType::Int32: case DType::UInt32: case DType::Float32: return 4;
    case DType::Int64: case DType::UInt64: case DType::Float64: return 8;
  }
  throw std::logic_error("unknown DType");
}

/// Element `row` of an integer column as its exact value.
inline Int128 integer_at(const ColumnView& c, std::int64_t row) {
  const auto* p = static_cast<const unsigned char*>(c.data) + row * static_cast<std::int64_t>(element_bytes(c.type));
  const auto load = [p]<class T>(T) {
    T v;
    std::memcpy(&v, p, sizeof v);
    return static_cast<Int128>(v);
  };
  switch (c.type) {
    case DType::Int8: return load(std::int8_t{});
    case DType::UInt8: return load(std::uint8_t{});
    case DType::Int16: return load(std::int16_t{});
    case DType::UInt16: return load(std::uint16_t{});
    case DType::Int32: return load(std::int32_t{});
    case DType::UInt32: return load(std::uint32_t{});
    case DType::Int64: return load(std::int64_t{});
    case DType::UInt64: return load(std::uint64_t{});
    default: throw std::logic_error("integer_at on a non-integer column");
  }
}

/// The column named `name` (the test's own lookup).
inline const ColumnView& column_named(const TableView& t, const std::string& name) {
  for (const auto& c : t.columns)
    if (c.name == name) return c.column;
  throw std::logic_error("test bug: no column " + name);
}

inline KeyTuple key_tuple(const TableView& t, const std::vector<std::string>& on, std::int64_t row) {
  KeyTuple key;
  key.reserve(on.size());
  for (const auto& name : on) key.push_back(integer_at(column_named(t, name), row));
  return key;
}

inline std::int64_t table_rows(const TableView& t) { return t.columns.empty() ? 0 : t.columns.front().column.size; }

/// The output rows of `kind`, in this order: the matching pairs (left table order, then right table
/// order: the header leaves the pairs' order within a key open), then the left rows that match nothing
/// (outer joins keeping them), then the right rows that match nothing, each in table order. Semi and
/// anti joins: (left row, -1) in left table order.
inline std::vector<RowPair> reference_rows(const TableView& left, const TableView& right,
                                           const std::vector<std::string>& left_on,
                                           const std::vector<std::string>& right_on, JoinKind kind) {
  std::map<KeyTuple, std::vector<std::int64_t>> right_by_key;
  const std::int64_t n_left = table_rows(left), n_right = table_rows(right);
  for (std::int64_t j = 0; j < n_right; ++j) right_by_key[key_tuple(right, right_on, j)].push_back(j);

  std::vector<RowPair> out;
  if (kind == JoinKind::LeftSemi || kind == JoinKind::LeftAnti) {  // membership only: no pairs built
    for (std::int64_t i = 0; i < n_left; ++i)
      if ((right_by_key.count(key_tuple(left, left_on, i)) != 0) == (kind == JoinKind::LeftSemi)) out.push_back({i, -1});
    return out;
  }
  std::vector<RowPair> pairs, left_only, right_only;
  std::vector<bool> right_matched(static_cast<std::size_t>(n_right), false);
  for (std::int64_t i = 0; i < n_left; ++i) {
    const auto it = right_by_key.find(key_tuple(left, left_on, i));
    if (it == right_by_key.end()) {
      left_only.push_back({i, -1});
      continue;
    }
    for (const std::int64_t j : it->second) {
      pairs.push_back({i, j});
      right_matched[static_cast<std::size_t>(j)] = true;
    }
  }
  for (std::int64_t j = 0; j < n_right; ++j)
    if (!right_matched[static_cast<std::size_t>(j)]) right_only.push_back({-1, j});

  const auto append = [&out](const std::vector<RowPair>& rows) { out.insert(out.end(), rows.begin(), rows.end()); };
  append(pairs);
  if (kind == JoinKind::LeftOuter || kind == JoinKind::FullOuter) append(left_only);
  if (kind == JoinKind::RightOuter || kind == JoinKind::FullOuter) append(right_only);
  return out;
}

}  // namespace mgjoin::test
