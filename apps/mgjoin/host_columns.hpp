#pragma once
// `mgjoin join`'s columns of Parquet and Arrow IPC tables whose types the engine does not take (read in
// Arrow's form: arrow_tables.hpp), around the join. A key column of strings, binary values or decimals
// becomes the int32 codes of a dictionary both sides share; a payload column of such a type stays on the
// host, a hidden int64 row-number column goes through the join in its place, and the output gathers it
// by the row numbers that come out (docs/DESIGN.md says why).
//
//   HostColumns host = prepare_host_columns(r, s, r_arrow, s_arrow, options, memory);  // before the join
//   ... join r and s with options ...
//   stage_arrow_join_output(..., &host);  // keys decoded, payloads gathered, the columns in order
#include "arrow_tables.hpp"
#include "null_keys.hpp"

#include <mgjoin/table.hpp>

#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace mgjoin::cli {

/// The hidden column of row numbers (a name no file column has).
inline constexpr std::string_view kRowNumbers = "\x1frow";

/// Columns in Arrow's form, by name.
using ArrowColumns = std::vector<std::pair<std::string, std::shared_ptr<const ArrowColumn>>>;

struct HostColumns {
  /// The output's payload columns in order ("r.<name>", then "s.<name>"), the engine's and the host's.
  std::vector<std::string> order;
  /// Payload columns gathered after the join: output name -> column; the side's row numbers index it.
  ArrowColumns gathered;
  /// Output columns of dictionary codes ("key", "key.<name>", a key column as a payload "r.<name>"):
  /// output name -> the dictionary they index and the type they are decoded as (a side's key column as
  /// its payload: that side's input type).
  struct Dictionary {
    std::string name;
    std::shared_ptr<const ArrowColumn> dictionary;
    std::shared_ptr<const ArrowType> type;
  };
  std::vector<Dictionary> dictionaries;
};

/// Before the join: each key column pair in `r_arrow` and `s_arrow` (read in Arrow's form, placeholders
/// in the tables) replaced by its dictionary codes; the other columns there taken out of the tables,
/// which get the hidden row-number column instead (`options`' chosen columns likewise).
HostColumns prepare_host_columns(LoadedTable& r, LoadedTable& s, const ArrowColumns& r_arrow,
                                 const ArrowColumns& s_arrow, TableJoinOptions& options, MemoryKind memory);

/// A key column's type for check_key_pairs: where it is ("key column k of --r x.parquet"), its type's
/// name, and its dictionary key family (ArrowColumnInfo::dictionary_key; empty: the engine's types).
struct KeyColumnType {
  std::string where, type_name, dictionary_key;
  std::string temporal;  ///< ArrowColumnInfo::temporal: a date, time, timestamp or duration's full type
};

/// Refuses, in one line naming both columns, a key pair that cannot be compared: a dictionary key against
/// a key of the engine's types or of another family (string and binary; decimals of another scale, which
/// say so; fixed_size_binary of another width); a date, time, timestamp or duration against anything but
/// its own type (unit and zone: Python's rule). Decimals of one scale join whatever their precisions.
void check_key_pairs(const std::vector<KeyColumnType>& left, const std::vector<KeyColumnType>& right);

/// An input column read for the output, with its Arrow type, and where it is ("--r x.parquet").
struct NpyOutputCheck {
  const ArrowColumnInfo* column;
  std::string where;
};
/// .npy output holds the engine's types and strings (npy_holds_as_strings) only: @throw InputError naming
/// the output column, its input column and type, and suggesting --format parquet, for another column of
/// `columns` (`key` among them) without storage; R's key columns stand for the output's key columns, S's
/// are skipped.
void expect_npy_holds(const std::vector<NpyOutputCheck>& columns, const std::vector<std::string>& key,
                      const std::string& prefix);

}  // namespace mgjoin::cli
