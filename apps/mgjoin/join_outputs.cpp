#include "join_outputs.hpp"

namespace mgjoin::cli {

std::vector<StagedColumnFile> stage_join_outputs(const std::filesystem::path& dir, const TableJoinResult& res,
                                                 const TableJoinOptions& o) {
  std::vector<StagedColumnFile> files;
  for (const NamedColumn& c : res.columns) files.push_back(stage_column(dir / (c.name + ".npy"), c.column.view()));
  if (o.output == TableOutput::GatherMaps) {
    files.push_back(stage_column(dir / "r.row.npy", res.left_rows.view()));
    if (outputs_right_columns(o.how)) files.push_back(stage_column(dir / "s.row.npy", res.right_rows.view()));
  }
  return files;
}

nlohmann::json run_summary(const TableJoinResult& res) {
  const JoinResult& j = res.join;
  nlohmann::json phases = nlohmann::json::array();
  for (const PhaseStat& p : j.phases)
    phases.push_back({{"name", p.name}, {"seconds", p.seconds}, {"bytes_pcie", p.bytes_pcie},
                      {"bytes_nvlink", p.bytes_nvlink}});
  nlohmann::json out{{"seconds", res.seconds},
                     {"join_seconds", j.seconds},
                     {"executor", j.executor},
                     {"strategy", strategy_name(j.strategy)},
                     {"strategy_reason", j.strategy_reason},
                     {"phases", phases},
                     {"peak_host_bytes", j.peak_host_bytes}};
  if (!res.materialization.empty()) out["materialization"] = res.materialization;
  if (!res.gathers.empty()) out["gathers"] = res.gathers;
  return out;
}

}  // namespace mgjoin::cli
