#pragma once
// SQL's nulls for `mgjoin join` of tables read with validity (Parquet, Arrow IPC): a null key matches
// nothing (`=`). Inner and semi joins drop the rows whose key is null before the join; left, right, full
// and anti joins keep them as unmatched rows of their side (the other side's columns null), appended
// after the join's own output. With nulls_equal (--nulls-equal, SQL's `IS NOT DISTINCT FROM`) a null key
// matches the other side's null keys instead: the rows of each null pattern (which components of a
// composite key are null) join those of the same pattern on both sides, their null components made
// equal, in one more engine join per pattern. A payload column's validity travels through the join as a
// hidden bool column.
//
//   LoadedTable r = ..., s = ...;                       // columns, validity, key names
//   carry_payload_validity(r, chosen_r);                // r.<name>'s validity as a hidden column
//   NullKeyJoin j = join_with_null_keys(r, s, options, nulls_equal, run);
//   // j.result: the join's result with the null-key rows appended; j.key_valid: per output key column
#include <mgjoin/table.hpp>

#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace mgjoin::cli {

/// A table read into memory: owning columns, their validity where they hold nulls, the key's names.
struct LoadedTable {
  std::vector<std::string> names;
  std::vector<HostColumn> columns;
  std::vector<std::optional<HostColumn>> valid;  ///< bool, true: a value; absent: no nulls
  std::vector<std::string> key;
  TableView view() const;
};

/// The hidden column that carries `name`'s validity through the join (a name no file column has).
std::string validity_column_name(std::string_view name);
/// The column whose validity `hidden` carries, or nullopt when `hidden` is no such column.
std::optional<std::string> column_of_validity(std::string_view hidden);

/// Adds, for every non-key column with nulls (and a key column with nulls that `chosen` names as a
/// payload), its validity as a hidden bool column, and names it in `chosen` (the payload columns asked
/// for, when given) after the column it belongs to.
void carry_payload_validity(LoadedTable& t, std::optional<std::vector<std::string>>& chosen);

/// The join's result with SQL's null keys, and the validity of each output key column ("key" or
/// "key.<name>"; absent: no null there) for TableOutput::Columns.
struct NullKeyJoin {
  TableJoinResult result;
  std::vector<std::optional<std::vector<bool>>> key_valid;  ///< one per key column
};

/// Joins `r` and `s` by `run` (join_tables with the CLI's engine and progress) after setting aside the
/// rows whose key is null, which match nothing or, with `nulls_equal`, the other side's rows whose key
/// is null in the same components; gather maps index the tables as read. A sink in `options` (JoinSettings::sink)
/// is used only where no key is null (one join, whose output is the whole).
NullKeyJoin join_with_null_keys(const LoadedTable& r, const LoadedTable& s, const TableJoinOptions& options,
                                bool nulls_equal,
                                const std::function<TableJoinResult(const TableView&, const TableView&,
                                                                    const TableJoinOptions&)>& run);

}  // namespace mgjoin::cli
