#pragma once
// The files `mgjoin join` writes for a table join, by one process or by each rank into its part.
#include <mgjoin/io.hpp>
#include <mgjoin/table.hpp>

#include <filesystem>
#include <vector>

namespace mgjoin::cli {

/// Stages (writes under temporary names) one `.npy` per output column of `res` in `dir`, named
/// `<column>.npy`, and for gather maps `r.row.npy` and, but for semi and anti joins, `s.row.npy`.
std::vector<StagedColumnFile> stage_join_outputs(const std::filesystem::path& dir, const TableJoinResult& res,
                                                 const TableJoinOptions& o);

}  // namespace mgjoin::cli
