#pragma once
// Owning test tables for the join_tables suites: columns of bytes, tables of them, and a pair of tables
// with their key columns' names.
#include <mgjoin/table.hpp>
#include <mgjoin/types.hpp>

#include "common/reference_join.hpp"

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <ostream>
#include <stdexcept>
#include <string>
#include <vector>

namespace mgjoin::test {

/// An owning column: its bytes, little-endian elements of `type`.
struct OwnedColumn {
  std::string name;
  DType type = DType::Int32;
  std::vector<unsigned char> bytes;

  std::int64_t rows() const { return static_cast<std::int64_t>(bytes.size() / element_bytes(type)); }
  unsigned char* at(std::int64_t row) { return bytes.data() + row * static_cast<std::int64_t>(element_bytes(type)); }
  const unsigned char* at(std::int64_t row) const {
    return bytes.data() + row * static_cast<std::int64_t>(element_bytes(type));
  }
  ColumnView view() const {
    // A non-null pointer for an empty column too, as a real column's usually is.
    return {bytes.empty() ? static_cast<const void*>(&type) : bytes.data(), rows(), type};
  }
};

inline OwnedColumn zero_column(std::string name, DType type, std::int64_t rows) {
  OwnedColumn c{std::move(name), type, {}};
  c.bytes.assign(static_cast<std::size_t>(rows) * element_bytes(type), 0);
  return c;
}

/// Writes an integer value (in the column type's range) at `row`.
inline void set_integer(OwnedColumn& c, std::int64_t row, Int128 value) {
  const auto bits = static_cast<std::uint64_t>(value);  // two's complement; little-endian low bytes
  std::memcpy(c.at(row), &bits, element_bytes(c.type));
}

template <class T>
OwnedColumn column_of(std::string name, DType type, const std::vector<T>& values) {
  OwnedColumn c = zero_column(std::move(name), type, static_cast<std::int64_t>(values.size()));
  if (!values.empty()) {
    if (sizeof(T) != element_bytes(type)) throw std::logic_error("column_of: width mismatch");
    std::memcpy(c.bytes.data(), values.data(), c.bytes.size());
  }
  return c;
}

struct OwnedTable {
  std::vector<OwnedColumn> columns;

  std::int64_t rows() const { return columns.empty() ? 0 : columns.front().rows(); }
  TableView view() const {
    TableView v;
    for (const auto& c : columns) v.columns.push_back({c.name, c.view()});
    return v;
  }
  const OwnedColumn& named(const std::string& name) const {
    for (const auto& c : columns)
      if (c.name == name) return c;
    throw std::logic_error("test bug: no column " + name);
  }
  std::vector<std::string> names_except(const std::vector<std::string>& keys) const {
    std::vector<std::string> out;
    for (const auto& c : columns)
      if (std::find(keys.begin(), keys.end(), c.name) == keys.end()) out.push_back(c.name);
    return out;
  }
};

/// Two tables and the names of their key columns.
struct TableInput {
  OwnedTable left, right;
  std::vector<std::string> left_on, right_on;
  std::string shape;  ///< for messages
};

/// Options of a join on the CPU path (join.gpus = 0).
inline TableJoinOptions cpu_path_options() {
  TableJoinOptions o;
  o.join.gpus = 0;
  return o;
}

/// Options of a join on `gpus` GPUs with `memory` bytes each by `strategy`: the EngineOptions part of an
/// engine of those GPUs and memory, as join_tables(Engine&, ...) requires.
inline TableJoinOptions gpu_flow_options(int gpus, std::uint64_t memory, JoinStrategy strategy) {
  TableJoinOptions o;
  o.join.gpus = gpus;
  o.join.gpu_memory_limit = memory;
  o.join.strategy = strategy;
  return o;
}

/// Whether join_tables joins `in` on a hash of its key (the components, each as wide as the wider side's
/// column, over 8 bytes together): its pairs then come in hash order, not key order.
inline bool hashed_key(const TableInput& in) {
  std::size_t bytes = 0;
  for (std::size_t i = 0; i < in.left_on.size(); ++i)
    bytes += std::max(element_bytes(in.left.named(in.left_on[i]).type), element_bytes(in.right.named(in.right_on[i]).type));
  return bytes > 8;
}

}  // namespace mgjoin::test
