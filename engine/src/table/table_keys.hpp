#pragma once
// The key side of a table join: which columns are the key, whether they can be one, and the one sort key
// per row that join() runs on (a copy of a single 4- or 8-byte key column, or a composite packed into
// 4 or 8 bytes), with the row ids that travel beside it.
#include <mgjoin/table.hpp>
#include <mgjoin/types.hpp>

#include <cstdint>
#include <string>
#include <vector>

namespace mgjoin::table {

/// A table's key columns, in key order.
struct KeyColumns {
  std::vector<ColumnView> columns;
  std::vector<std::string> names;
  int bytes() const;  ///< the widths added up
};

/// Checks that the columns of `table` have distinct names and the table's length. `side` names it
/// ("left table"). @throw InputError naming the column.
void check_table(const TableView& table, const char* side);

/// The columns `on` (the option `field`) names in `table`. @throw InputError for an empty list, a
/// column named twice, a missing column, or one that is not an integer column.
KeyColumns key_columns(const TableView& table, const std::vector<std::string>& on, const char* side, const char* field);

/// Checks that the left and right keys can be compared: as many columns, pairwise of one type, at most
/// 8 bytes together. @throw InputError naming the columns.
void check_key_pair(const KeyColumns& left, const KeyColumns& right);

/// What one join of `left` and `right` reads: the key columns of both sides and the payload columns each
/// side outputs (none but for TableOutput::Columns; no right ones for semi and anti joins).
struct JoinColumns {
  KeyColumns left_key, right_key;
  std::vector<NamedColumnView> left_columns, right_columns;
};

/// The columns a join of `left` and `right` under `o` reads, checked as join_tables() checks them: the
/// tables (check_table), the keys (key_columns, check_key_pair), every named payload column whatever
/// the output, and no payload named like an outer join's validity column.
/// @throw InputError naming the table and column, or the option.
JoinColumns join_columns(const TableView& left, const TableView& right, const TableJoinOptions& o);

/// The sort key of every row: a copy of a single 4- or 8-byte key column (its own type), or the
/// columns packed most significant first into a uint32 (up to 4 bytes) or uint64, each signed
/// component with its sign bit flipped, so that the packed keys order like the key tuples and are equal
/// exactly when they are.
HostColumn sort_key(const KeyColumns& key, std::int64_t rows);

/// join_tables' result of an inner join whose payloads went through join() (carried): the count and,
/// with `columns`, the output named "key", "r.<name>" and "s.<name>" (the one payload column each of
/// `left` and `right` carried, where it has one).
TableJoinResult carried_result(JoinResult joined, const std::vector<NamedColumnView>& left,
                               const std::vector<NamedColumnView>& right, bool columns);

/// 0, 1, ..., rows - 1: uint32 below 2^32 rows, uint64 from there.
HostColumn row_ids(std::int64_t rows);

}  // namespace mgjoin::table
