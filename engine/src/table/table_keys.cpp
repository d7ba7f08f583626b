#include "engine/src/table/table_keys.hpp"

#include "engine/src/exec/kept_inputs.hpp"

#include <mgjoin/error.hpp>

#include <omp.h>

#include <algorithm>
#include <cstring>
#include <numeric>
#include <optional>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

namespace mgjoin::table {
namespace {

constexpr const char* kLeft = "left table";
constexpr const char* kRight = "right table";

/// The payload columns one side outputs: those named (each must exist), or every non-key column.
std::vector<NamedColumnView> chosen_columns(const TableView& table, const std::optional<std::vector<std::string>>& names,
                                            const table::KeyColumns& key, const char* side, const char* field) {
  std::vector<NamedColumnView> chosen;
  if (names) {
    for (const std::string& name : *names) {
      const ColumnView* c = table.find(name);
      MGJOIN_INPUT_EXPECTS(c != nullptr, std::string(side) + ": no column named '" + name + "' (" + field + ")");
      MGJOIN_INPUT_EXPECTS(std::none_of(chosen.begin(), chosen.end(), [&](const auto& x) { return x.name == name; }),
                           std::string(field) + " names '" + name + "' twice");
      chosen.push_back({name, *c});
    }
    return chosen;
  }
  for (const NamedColumnView& c : table.columns)
    if (std::find(key.names.begin(), key.names.end(), c.name) == key.names.end()) chosen.push_back(c);
  return chosen;
}

/// Refuses a payload column whose output name is the validity column's ("r.valid"): the output would
/// hold two columns of one name, and a file writer would keep one of them.
void check_output_names(const JoinColumns& p, JoinKind how) {
  const bool r_valid = how == JoinKind::RightOuter || how == JoinKind::FullOuter;
  const bool s_valid = how == JoinKind::LeftOuter || how == JoinKind::FullOuter;
  for (const auto& [columns, validity, side, field] :
       {std::tuple{&p.left_columns, r_valid, kLeft, "TableJoinOptions::left_columns"},
        std::tuple{&p.right_columns, s_valid, kRight, "TableJoinOptions::right_columns"}})
    for (const NamedColumnView& c : *columns)
      MGJOIN_INPUT_EXPECTS(!(validity && c.name == "valid"),
                           std::string(side) + ": column 'valid' would be output under the name of the outer join's "
                           "validity column; rename it or leave it out (" + field + ")");
}

}  // namespace

int KeyColumns::bytes() const {
  int total = 0;
  for (const ColumnView& c : columns) total += static_cast<int>(dtype_size(c.type));
  return total;
}

void check_table(const TableView& table, const char* side) {
  for (std::size_t i = 0; i < table.columns.size(); ++i)
    for (std::size_t j = 0; j < i; ++j)
      MGJOIN_INPUT_EXPECTS(table.columns[i].name != table.columns[j].name,
                           std::string(side) + ": two columns are named '" + table.columns[i].name + "'");
  for (const NamedColumnView& c : table.columns) {
    MGJOIN_INPUT_EXPECTS(c.column.size == table.rows(),
                         std::string(side) + ": column '" + c.name + "' has " + std::to_string(c.column.size) +
                             " rows but column '" + table.columns.front().name + "' has " +
                             std::to_string(table.rows()));
    MGJOIN_INPUT_EXPECTS(c.column.size == 0 || c.column.data != nullptr,
                         std::string(side) + ": column '" + c.name + "' has rows but no data");
  }
}

KeyColumns key_columns(const TableView& table, const std::vector<std::string>& on, const char* side,
                       const char* field) {
  MGJOIN_INPUT_EXPECTS(!on.empty(), std::string(field) + " is empty: name at least one key column of the " + side);
  KeyColumns key;
  for (const std::string& name : on) {
    MGJOIN_INPUT_EXPECTS(std::find(key.names.begin(), key.names.end(), name) == key.names.end(),
                         std::string(field) + " names '" + name + "' twice");
    const ColumnView* c = table.find(name);
    MGJOIN_INPUT_EXPECTS(c != nullptr, std::string(side) + ": no column named '" + name + "'");
    MGJOIN_INPUT_EXPECTS(is_integer_dtype(c->type), std::string(side) + ": key column '" + name + "' is " +
                                                        std::string(dtype_name(c->type)) +
                                                        ": keys are integer columns");
    key.columns.push_back(*c);
    key.names.push_back(name);
  }
  return key;
}

void check_key_pair(const KeyColumns& left, const KeyColumns& right) {
  MGJOIN_INPUT_EXPECTS(left.columns.size() == right.columns.size(),
                       "the left key has " + std::to_string(left.columns.size()) + " columns but the right key has " +
                           std::to_string(right.columns.size()));
  for (std::size_t i = 0; i < left.columns.size(); ++i)
    MGJOIN_INPUT_EXPECTS(left.columns[i].type == right.columns[i].type,
                         "key columns left '" + left.names[i] + "' (" + std::string(dtype_name(left.columns[i].type)) +
                             ") and right '" + right.names[i] + "' (" +
                             std::string(dtype_name(right.columns[i].type)) + ") differ in type");
  if (left.bytes() <= 8) return;
  std::string names, listed;
  for (std::size_t i = 0; i < left.columns.size(); ++i) {
    (names += i ? "," : "") += left.names[i];
    (listed += i ? ", " : "") += left.names[i] + " (" + std::string(dtype_name(left.columns[i].type)) + ")";
  }
  throw InputError("TableJoinOptions::left_on " + names + ": the key columns " + listed + " add up to " +
                   std::to_string(left.bytes()) + " bytes: a composite key is at most 8 bytes");
}

namespace {

/// Component i of row r as unsigned bits, its sign bit flipped when signed (order-preserving).
std::uint64_t ordered_bits(const ColumnView& c, std::int64_t r) {
  const std::size_t width = dtype_size(c.type);
  std::uint64_t v = 0;
  std::memcpy(&v, static_cast<const char*>(c.data) + static_cast<std::size_t>(r) * width, width);
  if (is_signed_key(c.type)) v ^= std::uint64_t{1} << (8 * width - 1);
  return v;
}

template <class Packed>
void pack(const KeyColumns& key, std::int64_t rows, Packed* out) {
#pragma omp parallel for schedule(static)
  for (std::int64_t r = 0; r < rows; ++r) {
    std::uint64_t packed = 0;
    for (const ColumnView& c : key.columns) packed = (packed << (8 * dtype_size(c.type))) | ordered_bits(c, r);
    out[r] = static_cast<Packed>(packed);
  }
}

}  // namespace

TableJoinResult carried_result(JoinResult joined, const std::vector<NamedColumnView>& left,
                               const std::vector<NamedColumnView>& right, bool columns) {
  TableJoinResult res;
  res.count = joined.count;
  if (columns) {
    res.materialization = "carried";
    res.columns.push_back({"key", std::move(joined.key)});
    if (!left.empty()) res.columns.push_back({"r." + left[0].name, std::move(joined.r_payload)});
    if (!right.empty()) res.columns.push_back({"s." + right[0].name, std::move(joined.s_payload)});
  }
  res.join = std::move(joined);
  return res;
}

HostColumn sort_key(const KeyColumns& key, std::int64_t rows) {
  if (key.columns.size() == 1 && is_key_dtype(key.columns[0].type)) return detail::copy_column(key.columns[0]);
  const bool narrow = key.bytes() <= 4;
  HostColumn packed = HostColumn::allocate(narrow ? DType::UInt32 : DType::UInt64, rows, MemoryKind::Pinned);
  if (narrow)
    pack(key, rows, packed.as<std::uint32_t>());
  else
    pack(key, rows, packed.as<std::uint64_t>());
  return packed;
}

HostColumn row_ids(std::int64_t rows) {
  const bool narrow = static_cast<std::uint64_t>(rows) < (std::uint64_t{1} << 32);
  HostColumn ids = HostColumn::allocate(narrow ? DType::UInt32 : DType::UInt64, rows, MemoryKind::Pinned);
#pragma omp parallel for schedule(static)
  for (std::int64_t r = 0; r < rows; ++r) {
    if (narrow)
      ids.as<std::uint32_t>()[r] = static_cast<std::uint32_t>(r);
    else
      ids.as<std::uint64_t>()[r] = static_cast<std::uint64_t>(r);
  }
  return ids;
}

JoinColumns join_columns(const TableView& left, const TableView& right, const TableJoinOptions& o) {
  check_table(left, kLeft);
  check_table(right, kRight);
  JoinColumns p;
  p.left_key = key_columns(left, o.left_on, kLeft, "TableJoinOptions::left_on");
  p.right_key = key_columns(right, o.right_on, kRight, "TableJoinOptions::right_on");
  check_key_pair(p.left_key, p.right_key);
  // Named columns are checked whatever the output, so that a typo fails the first run, not a later one.
  auto left_columns = chosen_columns(left, o.left_columns, p.left_key, kLeft, "TableJoinOptions::left_columns");
  auto right_columns = chosen_columns(right, o.right_columns, p.right_key, kRight, "TableJoinOptions::right_columns");
  if (o.output == TableOutput::Columns) {
    p.left_columns = std::move(left_columns);
    if (outputs_right_columns(o.how)) p.right_columns = std::move(right_columns);
  }
  check_output_names(p, o.how);
  return p;
}

}  // namespace mgjoin::table
