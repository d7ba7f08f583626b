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

}  // namespace mgjoin::cli
