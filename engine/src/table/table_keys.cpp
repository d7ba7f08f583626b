#include "engine/src/table/table_keys.hpp"

#include "core/dispatch.hpp"
#include "engine/src/exec/kept_inputs.hpp"
#include "engine/src/table/key_encoding.hpp"
#include "engine/src/table/wide_keys.hpp"

#include <mgjoin/error.hpp>

#include <omp.h>

#include <algorithm>
#include <bit>
#include <cstring>
#include <numeric>
#include <optional>
#include <string>
#include <tuple>
#include <type_traits>
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

namespace {

bool is_float(DType t) { return t == DType::Float32 || t == DType::Float64; }

DType integer_type(std::size_t bytes, bool is_signed) {
  switch (bytes) {
    case 1: return is_signed ? DType::Int8 : DType::UInt8;
    case 2: return is_signed ? DType::Int16 : DType::UInt16;
    case 4: return is_signed ? DType::Int32 : DType::UInt32;
    default: return is_signed ? DType::Int64 : DType::UInt64;
  }
}

std::string type_text(DType t) { return std::string(dtype_name(t)); }

}  // namespace

std::optional<KeyComponent> key_component(DType left, DType right) {
  using Kind = KeyComponent::Kind;
  KeyComponent c;
  c.left = left;
  c.right = right;
  const std::size_t wl = dtype_size(left), wr = dtype_size(right), wider = std::max(wl, wr);
  if (left == DType::Bool || right == DType::Bool) {
    if (left != right) return std::nullopt;
    c.kind = Kind::Bool;
    c.width = 1;
    c.common = DType::Bool;
    return c;
  }
  if (is_float(left) || is_float(right)) {
    if (!is_float(left) || !is_float(right)) return std::nullopt;
    c.kind = Kind::Float;
    c.width = static_cast<int>(wider);
    c.common = wider == 4 ? DType::Float32 : DType::Float64;
    return c;
  }
  const bool left_signed = is_signed_key(left), right_signed = is_signed_key(right);
  if (left_signed == right_signed) {
    c.kind = left_signed ? Kind::Signed : Kind::Unsigned;
    c.width = static_cast<int>(wider);
    c.common = integer_type(wider, left_signed);
    return c;
  }
  const std::size_t unsigned_width = left_signed ? wr : wl, signed_width = left_signed ? wl : wr;
  if (unsigned_width < signed_width) {  // the signed type holds every value of the unsigned one
    c.kind = Kind::Signed;
    c.width = static_cast<int>(signed_width);
    c.common = integer_type(signed_width, true);
    return c;
  }
  c.kind = Kind::Shared;
  c.width = static_cast<int>(unsigned_width);
  if (2 * unsigned_width <= 8) c.common = integer_type(2 * unsigned_width, true);
  return c;
}

DType key_output_type(const KeyComponent& c, JoinKind kind, const std::string& left_name, const std::string& right_name) {
  if (c.common) return *c.common;
  MGJOIN_INPUT_EXPECTS(kind != JoinKind::FullOuter,
                       "key columns '" + left_name + "' (" + kLeft + ", " + type_text(c.left) + ") and '" + right_name +
                           "' (" + kRight + ", " + type_text(c.right) + "): a full outer join's key column would hold "
                           "values of both, which no integer type of 8 bytes holds; cast one side, or ask for gather maps");
  return kind == JoinKind::RightOuter ? c.right : c.left;
}

int KeyColumns::bytes() const {
  int total = 0;
  if (!components.empty())
    for (const KeyComponent& c : components) total += c.width;
  else
    for (const ColumnView& c : columns) total += static_cast<int>(dtype_size(c.type));
  return total;
}

bool KeyColumns::hashed() const { return bytes() > 8; }

bool KeyColumns::as_is() const {
  return columns.size() == 1 && components.size() == 1 && components[0].left == components[0].right &&
         is_key_dtype(columns[0].type);
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
    key.columns.push_back(*c);
    key.names.push_back(name);
  }
  return key;
}

void pair_keys(KeyColumns& left, KeyColumns& right) {
  MGJOIN_INPUT_EXPECTS(left.columns.size() == right.columns.size(),
                       "the left key has " + std::to_string(left.columns.size()) + " columns but the right key has " +
                           std::to_string(right.columns.size()));
  std::vector<KeyComponent> components;
  for (std::size_t i = 0; i < left.columns.size(); ++i) {
    const std::optional<KeyComponent> c = key_component(left.columns[i].type, right.columns[i].type);
    MGJOIN_INPUT_EXPECTS(c.has_value(),
                         "key columns '" + left.names[i] + "' (" + kLeft + ", " + type_text(left.columns[i].type) +
                             ") and '" + right.names[i] + "' (" + kRight + ", " + type_text(right.columns[i].type) +
                             ") cannot be compared: integer keys join integer keys (of any width and signedness), "
                             "float keys float keys, bool keys bool keys; cast one side");
    components.push_back(*c);
  }
  left.components = right.components = components;
}

namespace {

/// The key's components encoded and packed into `out`, most significant first, one component (one pass
/// over the rows) at a time.
template <class Packed>
void pack(const KeyColumns& key, std::int64_t rows, Packed* out) {
  for_each_encoded(key, rows, [&](std::size_t i, std::int64_t r, std::uint64_t bits) {
    out[r] = static_cast<Packed>(i == 0 ? bits : (static_cast<std::uint64_t>(out[r]) << (8 * key.components[i].width)) | bits);
  });
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
  if (key.as_is()) return detail::copy_column(key.columns[0]);
  MGJOIN_EXPECTS(key.components.size() == key.columns.size(), "sort_key of a key not paired with the other side's");
  if (key.hashed()) return hash_key(key, rows, key_hash_from_env());
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
  pair_keys(p.left_key, p.right_key);
  if (o.output == TableOutput::Columns)
    for (std::size_t i = 0; i < p.left_key.columns.size(); ++i)
      p.key_types.push_back(key_output_type(p.left_key.components[i], o.how, p.left_key.names[i], p.right_key.names[i]));
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

namespace mgjoin {

void check_key_types(const std::vector<DType>& left_types, const std::vector<DType>& right_types,
                     const TableJoinOptions& options) {
  // Views of no rows: the names and types are all that the checks read.
  const auto table_of = [](const std::vector<std::string>& names, const std::vector<DType>& types) {
    MGJOIN_EXPECTS(names.size() == types.size(), "check_key_types: one type per key column");
    TableView t;
    for (std::size_t i = 0; i < names.size(); ++i)
      if (!t.find(names[i])) t.columns.push_back({names[i], ColumnView{nullptr, 0, types[i]}});  // twice: key_columns says
    return t;
  };
  TableJoinOptions keys_only = options;  // the payload columns are not there to check
  keys_only.left_columns.reset();
  keys_only.right_columns.reset();
  (void)table::join_columns(table_of(options.left_on, left_types), table_of(options.right_on, right_types), keys_only);
}

}  // namespace mgjoin
