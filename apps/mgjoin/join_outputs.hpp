#pragma once
// What `mgjoin join` writes for a table join, by one process or by each rank into its part: its files,
// and the parts of its --json summary that both share.
#include <mgjoin/io.hpp>
#include <mgjoin/table.hpp>

#include <nlohmann/json.hpp>

#include <filesystem>
#include <vector>

namespace mgjoin::cli {

/// Stages (writes under temporary names) one `.npy` per output column of `res` in `dir`, named
/// `<column>.npy`, and for gather maps `r.row.npy` and, but for semi and anti joins, `s.row.npy`.
std::vector<StagedColumnFile> stage_join_outputs(const std::filesystem::path& dir, const TableJoinResult& res,
                                                 const TableJoinOptions& o);

/// --json's fields that describe how the join ran: seconds (the whole call), join_seconds, executor,
/// strategy, strategy_reason, phases, peak_host_bytes, and for materialized columns materialization.
nlohmann::json run_summary(const TableJoinResult& res);

}  // namespace mgjoin::cli
