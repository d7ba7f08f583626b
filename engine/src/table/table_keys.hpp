#pragma once
// The key side of a table join: which columns are the key, whether the two sides' keys can be compared
// (by value: integers of any width and signedness, floats, bool), and the one sort key per row that
// join() runs on (a copy of a single 4- or 8-byte key column, the components encoded and packed into
// 4 or 8 bytes, or over 8 bytes a 64-bit hash of them: wide_keys.hpp), with the row ids that travel
// beside it.
#include <mgjoin/table.hpp>
#include <mgjoin/types.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace mgjoin::table {

/// How the i-th left and the i-th right key column become bits of the sort key, the same way on both
/// sides, so that two values get equal bits exactly when they are equal by value (as pandas, Polars and
/// DuckDB compare keys), and the bits order as the values do wherever both sides can hold them:
/// - Unsigned: unsigned integers, zero-extended to the wider type;
/// - Signed: signed integers, and unsigned ones narrower than the signed type, extended to the wider type
///   with the sign bit flipped;
/// - Shared: an unsigned type at least as wide as the signed one (uint32 against int32, uint64 against
///   any signed type): in the unsigned type's width, the values both sides hold, [0, 2^(8w-1)), keep their
///   order (sign bit set); a negative value becomes 0 and an unsigned one beyond the signed range 1, bits
///   that no value of the other side gets, so that such rows match nothing;
/// - Float: float64 when either side is (float32 otherwise); -0.0 as 0.0; every NaN as one value above
///   +inf, equal to itself (DuckDB's semantics); the IEEE bits mapped to an order-preserving unsigned
///   integer (negative values' bits inverted, positive values' sign bit set);
/// - Bool: one byte, 0 or 1.
/// An integer key does not join a float or a bool key.
struct KeyComponent {
  enum class Kind : std::uint8_t { Unsigned, Signed, Shared, Float, Bool };
  Kind kind = Kind::Unsigned;
  int width = 8;  ///< bytes in the sort key
  DType left = DType::UInt64, right = DType::UInt64;
  /// The type of the output key column: one that holds every value of both sides (int32 and int64:
  /// int64; uint32 and int32: int64; float32 and float64: float64), nullopt where none of 8 bytes does
  /// (uint64 against a signed type).
  std::optional<DType> common;
};

/// The component of a left key column of type `left` and a right one of type `right`; nullopt when they
/// cannot be compared (an integer against a float or a bool, bool against a float).
std::optional<KeyComponent> key_component(DType left, DType right);

/// The type of the output key column of `c` in a join of `kind`: `c.common`, else the type of the side
/// every output row's key comes from (the left one but for right outer joins). @throw InputError for a
/// full outer join of a component without a common type (its key column could not hold both sides).
DType key_output_type(const KeyComponent& c, JoinKind kind, const std::string& left_name, const std::string& right_name);

/// A table's key columns, in key order, and (once paired with the other side's) how each becomes bits
/// of the sort key.
struct KeyColumns {
  std::vector<ColumnView> columns;
  std::vector<std::string> names;
  std::vector<KeyComponent> components;  ///< set by pair_keys
  int bytes() const;                     ///< the components' widths added up
  /// Whether the sort key is a hash of the components (over 8 bytes of them), whose matches join_tables
  /// verifies (wide_keys.hpp); otherwise they are packed, exactly.
  bool hashed() const;
  /// Whether the key is used as it is: one column of a join() key type (int32, uint32, int64, uint64),
  /// the same type on both sides. Otherwise sort_key() encodes it.
  bool as_is() const;
};

/// Checks that the columns of `table` have distinct names and the table's length. `side` names it
/// ("left table"). @throw InputError naming the column.
void check_table(const TableView& table, const char* side);

/// The columns `on` (the option `field`) names in `table`. @throw InputError for an empty list, a
/// column named twice or a missing column.
KeyColumns key_columns(const TableView& table, const std::vector<std::string>& on, const char* side, const char* field);

/// Checks that the left and right keys can be compared — as many columns, pairwise comparable
/// (key_component) — and sets both sides' components.
/// @throw InputError naming the columns.
void pair_keys(KeyColumns& left, KeyColumns& right);

/// What one join of `left` and `right` reads: the key columns of both sides and the payload columns each
/// side outputs (none but for TableOutput::Columns; no right ones for semi and anti joins).
struct JoinColumns {
  KeyColumns left_key, right_key;
  std::vector<DType> key_types;  ///< TableOutput::Columns: each output key column's type (key_output_type)
  std::vector<NamedColumnView> left_columns, right_columns;
};

/// The columns a join of `left` and `right` under `o` reads, checked as join_tables() checks them: the
/// tables (check_table), the keys (key_columns, pair_keys, and key_output_type for columns output),
/// every named payload column whatever the output, and no payload named like an outer join's validity
/// column.
/// @throw InputError naming the table and column, or the option.
JoinColumns join_columns(const TableView& left, const TableView& right, const TableJoinOptions& o);

/// The sort key of every row: a copy of the key column where it is used as it is (KeyColumns::as_is),
/// else the components encoded (KeyComponent) and packed most significant first into a uint32 (up to 4
/// bytes) or uint64, so that the packed keys of both sides are equal exactly when the key tuples are
/// equal by value, and order like them; over 8 bytes (KeyColumns::hashed) a uint64 hash of the encoded
/// components (hash_key: equal tuples, equal hashes; equal hashes, tuples to verify).
HostColumn sort_key(const KeyColumns& key, std::int64_t rows);

/// join_tables' result of an inner join whose payloads went through join() (carried): the count and,
/// with `columns`, the output named "key", "r.<name>" and "s.<name>" (the one payload column each of
/// `left` and `right` carried, where it has one).
TableJoinResult carried_result(JoinResult joined, const std::vector<NamedColumnView>& left,
                               const std::vector<NamedColumnView>& right, bool columns);

/// 0, 1, ..., rows - 1: uint32 below 2^32 rows, uint64 from there.
HostColumn row_ids(std::int64_t rows);

}  // namespace mgjoin::table
