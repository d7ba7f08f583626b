#pragma once
// What `mgjoin join` writes for a table join, by one process or by each rank into its part: its files,
// and the parts of its --json summary that both share.
#include "arrow_tables.hpp"
#include "host_columns.hpp"
#include "null_keys.hpp"

#include <mgjoin/io.hpp>
#include <mgjoin/table.hpp>

#include <nlohmann/json.hpp>

#include <filesystem>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace mgjoin::cli {

/// Stages (writes under temporary names) one `.npy` per output column of `res` in `dir`, named
/// `<column>.npy`, and for gather maps `r.row.npy` and, but for semi and anti joins, `s.row.npy`.
std::vector<StagedColumnFile> stage_join_outputs(const std::filesystem::path& dir, const TableJoinResult& res,
                                                 const TableJoinOptions& o);

/// Arrow types of output columns by name ("key", "r.<name>", ...), where the inputs had them.
using OutputTypes = std::map<std::string, std::shared_ptr<const ArrowType>>;

/// .npy output of columns the host makes too (strings: keys decoded from their dictionary, payloads
/// gathered by row numbers; stage_npy_strings), each in a `.npy` of its own, in the order of
/// stage_arrow_join_output; stage_join_outputs where there are none. Call drop_validity_columns first.
std::vector<StagedColumnFile> stage_npy_join_outputs(const std::filesystem::path& dir, const NullKeyJoin& join,
                                                     const TableJoinOptions& o, const OutputTypes& types,
                                                     const HostColumns& host);

/// For .npy output, before anything is written: @throw InputError naming the output column when a
/// payload gathered on the host (host_columns.hpp) would hold a null, which .npy files cannot hold (a
/// side an outer join misses is r.valid / s.valid's, not a null), or when a column of strings the host
/// makes is not all UTF-8 (expect_utf8).
void expect_npy_strings_hold(const NullKeyJoin& join, const TableJoinOptions& o, const HostColumns& host);

/// For .npy output: removes the hidden validity columns (null_keys.hpp) after checking that the output
/// holds no null, which .npy files cannot hold. @throw InputError naming the column that has one.
void drop_validity_columns(NullKeyJoin& join);

/// Stages the output as one Parquet or Arrow IPC file at `path`: the columns of stage_join_outputs with
/// real nulls instead of validity columns (a side an outer join misses is null; no r.valid/s.valid),
/// each of its input's Arrow type where `types` has it; with `host`, the key columns of dictionary codes
/// decoded, the payloads gathered by the sides' row numbers, and the payloads in `host`'s order.
StagedColumnFile stage_arrow_join_output(const std::filesystem::path& path, const NullKeyJoin& join,
                                         const TableJoinOptions& o, TableFormat format, const OutputTypes& types,
                                         const HostColumns* host = nullptr);

/// --json's fields that describe how the join ran: seconds (the whole call), join_seconds, executor,
/// strategy, strategy_reason, phases, peak_host_bytes, and for materialized columns materialization.
nlohmann::json run_summary(const TableJoinResult& res);

}  // namespace mgjoin::cli
