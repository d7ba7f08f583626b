#pragma once
// Joins of tables: any number of named columns, keys of one column or a composite of several (compared
// by value: integers of any width and signedness, floats, bool), inner, outer, semi and anti joins, and three output forms (a count, gather maps, or the
// joined columns).
//
//   mgjoin::TableView orders{{{"o_id", o_id}, {"c_id", c_id}, {"total", total}}};
//   mgjoin::TableView customers{{{"c_id", cust_id}, {"region", region}}};
//   mgjoin::TableJoinOptions o;
//   o.left_on = {"c_id"};
//   o.right_on = {"c_id"};
//   o.how = mgjoin::JoinKind::LeftOuter;
//   mgjoin::TableJoinResult res = mgjoin::join_tables(orders, customers, o);
//   // res.columns: key, r.o_id, r.total, s.region, s.valid
//
// Underneath, join() runs on (key, row id) relations: the flows sort and move only the keys and 4-byte
// row ids (8-byte ones from 2^32 rows), and the payload columns are gathered once, at the end, in the
// output's order (late materialization). An inner join with at most one 4- or 8-byte payload column per
// side may instead carry the payloads through the flow (TableJoinOptions::materialization).
//
// The caller's columns are never modified (join() sorts its own copies of the keys when a flow sorts
// in place), unless TableJoinOptions::may_reorder_inputs allows it.
#include <mgjoin/join.hpp>
#include <mgjoin/types.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace mgjoin {

/// A column of a table, by name (a non-owning view).
struct NamedColumnView {
  std::string name;
  ColumnView column;
};

/// A table: named columns of one length (checked by join_tables).
struct TableView {
  std::vector<NamedColumnView> columns;
  /// Rows of the first column (0 for a table without columns).
  std::int64_t rows() const { return columns.empty() ? 0 : columns.front().column.size; }
  /// The column named `name`, or nullptr.
  const ColumnView* find(std::string_view name) const;
};

/// Which rows a join outputs.
/// - Inner: every matching (left, right) pair.
/// - LeftOuter / RightOuter / FullOuter: the pairs, plus every row of the left (right, both) table that
///   matches nothing, with the other side missing.
/// - LeftSemi: each left row that matches at least one right row, once. LeftAnti: each left row that
///   matches none. (Right semi and anti joins: swap the tables.)
enum class JoinKind : std::uint8_t { Inner, LeftOuter, RightOuter, FullOuter, LeftSemi, LeftAnti };

/// "inner", "left", "right", "full", "semi", "anti".
const char* join_kind_name(JoinKind kind);
/// The names above, and "left_outer", "right_outer", "full_outer", "outer", "left_semi", "left_anti".
std::optional<JoinKind> parse_join_kind(std::string_view name);
/// parse_join_kind, refusing an unknown name: @throw InputError "<what>: expected inner, left, right,
/// full, semi or anti" (`what` names the option and the value, e.g. "--how sideways").
JoinKind require_join_kind(std::string_view name, const std::string& what);
/// Whether a join of this kind outputs right-side columns and right row ids: all but semi and anti joins.
bool outputs_right_columns(JoinKind kind);

/// What join_tables returns.
enum class TableOutput : std::uint8_t {
  Count,       ///< the number of output rows
  GatherMaps,  ///< int64 row indices into the left and right tables (-1 where a side is missing)
  Columns,     ///< the key and the chosen payload columns of both sides
};

/// How payload columns reach the output.
/// - Late: keys travel with row ids; payload columns are gathered by the row ids at the end.
/// - Carry: payloads travel through the flow with their keys. Applies to inner joins on one 4- or 8-byte
///   key column with at most one 4- or 8-byte payload column per side; otherwise Late is used and
///   `materialization` in the result says so.
/// - Auto: Carry where it applies (the flow then brings the payload its own best way), else Late.
enum class Materialization : std::uint8_t { Auto, Carry, Late };

/// Where late materialization gathers the payload columns (the key and validity columns are gathered
/// by the CPU threads, beside the GPUs' work).
/// - Auto: each column where it is predicted to finish first (the CPU, or a GPU with room for the column
///   and its gather map), from the rates in the tuning file (`mgjoin tune`) or defaults.
/// - Cpu: the CPU threads. - Gpus: the join's GPUs, each column on one GPU, where one has room for it.
/// Joins on the CPU path gather on the CPU whatever this says.
enum class GatherOn : std::uint8_t { Auto, Cpu, Gpus };

/// "auto", "cpu" or "gpus" as a GatherOn. @throw InputError "<what>: expected auto, cpu or gpus" (`what`
/// names the option and the value, e.g. "--gather-on disk").
GatherOn require_gather_on(std::string_view name, const std::string& what);

struct TableJoinOptions {
  /// Key columns: one, or several. Up to 8 bytes together they are packed, order-preserving, into one
  /// sort key; over 8 bytes the sort key is a 64-bit hash of them, and every pair the join finds is
  /// verified against the key columns (a hash collision never yields a row). The i-th left key column is
  /// compared with the i-th right one by value:
  /// - integers of any width and signedness (int32 joins int64, uint64 joins int64: a uint64 beyond
  ///   int64's range equals no signed value; compared in the wider width, or where the unsigned type is
  ///   at least as wide as the signed one, in the unsigned type's width);
  /// - float32 and float64 (-0.0 equals 0.0; NaN equals NaN, as in DuckDB);
  /// - bool and bool.
  /// An integer key does not join a float or bool key.
  std::vector<std::string> left_on, right_on;
  JoinKind how = JoinKind::Inner;
  TableOutput output = TableOutput::Columns;
  /// Payload columns in the output (TableOutput::Columns), in this order; nullopt = every column that
  /// is not a key column, in table order. Semi and anti joins output no right columns.
  std::optional<std::vector<std::string>> left_columns, right_columns;
  Materialization materialization = Materialization::Auto;
  GatherOn gather_on = GatherOn::Auto;
  /// The caller allows join_tables to reorder its columns in place instead of copying them first. Used
  /// only where the flow moves every column of both tables, so that rows stay whole: a carried inner
  /// join of tables holding just their key and the carried payload, or an inner count of tables holding
  /// just their key (what the CLI reads). Off by default: the caller's columns are never modified.
  bool may_reorder_inputs = false;
  /// GPUs, flow, sort, exchange, memory, progress and cancellation of the join underneath. Its `output`
  /// and `payloads` are chosen by join_tables and ignored here. Its `sink` takes the output columns where
  /// a carried join's result is them (TableJoinResult::materialization "carried"; the sink's parts are
  /// the columns "key", "r.<name>", "s.<name>" in that order, those present): the result's `join.sunk`
  /// then says so, and its columns are empty, of their types. Elsewhere it is not used.
  JoinOptions join;
};

/// An owning column of a result, by name.
struct NamedColumn {
  std::string name;
  HostColumn column;
};

struct TableJoinResult {
  std::uint64_t count = 0;  ///< output rows
  /// TableOutput::GatherMaps: for output row i, left_rows[i] and right_rows[i] are row indices (int64)
  /// into the left and right table, -1 where an outer join's side has no row. Semi and anti joins
  /// return left_rows only. Order: the matching pairs first (in key order from the co-partitioned flow
  /// and the CPU path, in hash order there for keys over 8 bytes; in no particular order from the paper
  /// flow), then an outer join's unmatched
  /// rows of the left, then of the right table, each in table order; semi and anti joins in left table
  /// order.
  HostColumn left_rows, right_rows;
  /// TableOutput::Columns, in this order:
  /// - "key" (one key column) or "key.<left name>" per component of a composite key: the key value of
  ///   the row (from the right row where the left one is missing). Where the two sides' key types
  ///   differ it has the type that holds both (int32 and int64: int64; uint32 and int32: int64; float32
  ///   and float64: float64); for uint64 against a signed type, which no such type holds, the left type
  ///   (the right one for right outer joins; full outer joins of such keys are refused for columns);
  /// - "r.<name>" for each chosen left column, "s.<name>" for each chosen right column;
  /// - outer joins: "r.valid" and/or "s.valid" (bool): false where that side has no row, whose columns
  ///   then hold zeros (Arrow's validity, as a column).
  std::vector<NamedColumn> columns;
  /// "late" or "carried": how the payloads came (TableOutput::Columns).
  std::string materialization;
  /// Late materialization: where the payload columns were gathered and the prediction that chose it,
  /// e.g. "gathers: 8 payload column(s) on GPUs, 0 on the CPU (predicted GPUs 0.150 s, CPU 0.310 s)".
  std::string gathers;
  /// The join underneath: phases, executor, strategy and why (its own count and columns are moved here).
  /// Late materialization adds the phases "table.prepare" (row ids, and sort keys where the key is not used
  /// as it is), "table.verify" (keys over 8 bytes: the candidate pairs checked), "table.rows" (the kind's
  /// gather maps) and "table.gather" (the output columns).
  JoinResult join;
  double seconds = 0;  ///< the whole call: key preparation, join, gathers
};

/// Joins two tables on their key columns.
/// @throw InputError naming the table and column for a missing key column, a key column named twice,
///        key columns that cannot be compared (check_key_types),
///        columns of different lengths or with one name, an unknown payload column (whatever the
///        output); as join() for the rest.
TableJoinResult join_tables(const TableView& left, const TableView& right, const TableJoinOptions& options);

/// Checks the key columns' types as join_tables() does — pairwise comparable by value, and for
/// TableOutput::Columns a type for each output key column — from the types
/// alone, so that a caller can refuse a join before it reads the data. `left_types[i]` is the type of
/// the left key column `options.left_on[i]`, `right_types[i]` the right one's.
/// @throw InputError as join_tables() would.
void check_key_types(const std::vector<DType>& left_types, const std::vector<DType>& right_types,
                     const TableJoinOptions& options);

class Engine;
/// The same on an engine's GPUs: its device memory, peers and pinned buffers are made once, so repeated
/// joins skip that cost (engine.hpp). options.join's EngineOptions part must be unset or the engine's.
TableJoinResult join_tables(Engine& engine, const TableView& left, const TableView& right,
                            const TableJoinOptions& options);

}  // namespace mgjoin
