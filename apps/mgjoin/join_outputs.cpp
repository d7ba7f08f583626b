#include "join_outputs.hpp"

#include <mgjoin/error.hpp>

#include <algorithm>

namespace mgjoin::cli {
namespace {

const HostColumn* find_column(const TableJoinResult& res, const std::string& name) {
  for (const NamedColumn& c : res.columns)
    if (c.name == name) return &c.column;
  return nullptr;
}

/// The side-validity columns an outer join adds ("r.valid" where R may be missing, "s.valid" where S may).
bool is_side_validity(const std::string& name, JoinKind how) {
  return (name == "r.valid" && (how == JoinKind::RightOuter || how == JoinKind::FullOuter)) ||
         (name == "s.valid" && (how == JoinKind::LeftOuter || how == JoinKind::FullOuter));
}

/// "r.\x1fvalid:x" -> "r.x" for a hidden validity column of the output.
std::optional<std::string> validity_target(const std::string& name) {
  if (name.size() < 2 || name[1] != '.') return std::nullopt;
  const auto column = column_of_validity(std::string_view(name).substr(2));
  if (!column) return std::nullopt;
  return name.substr(0, 2) + *column;
}

}  // namespace

void drop_validity_columns(NullKeyJoin& join) {
  for (std::size_t k = 0; k < join.key_valid.size(); ++k)
    if (join.key_valid[k] && std::find(join.key_valid[k]->begin(), join.key_valid[k]->end(), false) != join.key_valid[k]->end())
      throw InputError(join.result.columns[k].name + ": the output holds null keys (rows whose key is null, kept "
                       "unmatched), which .npy files cannot hold: use --format parquet or arrow");
  auto& cols = join.result.columns;
  for (const NamedColumn& c : cols) {
    const auto target = validity_target(c.name);
    if (!target) continue;
    const bool* v = c.column.as<bool>();
    if (std::find(v, v + c.column.size(), false) != v + c.column.size())
      throw InputError(*target + ": the output holds nulls, which .npy files cannot hold: use --format parquet or arrow");
  }
  cols.erase(std::remove_if(cols.begin(), cols.end(), [](const NamedColumn& c) { return validity_target(c.name).has_value(); }),
             cols.end());
}

StagedColumnFile stage_arrow_join_output(const std::filesystem::path& path, const NullKeyJoin& join,
                                         const TableJoinOptions& o, TableFormat format, const OutputTypes& types) {
  const TableJoinResult& res = join.result;
  std::vector<OutputColumn> out;
  std::vector<std::unique_ptr<HostColumn>> validity;  // kept alive until the file is written
  const auto with_validity = [&](OutputColumn& c, std::initializer_list<const HostColumn*> masks,
                                 const std::vector<bool>* more) {
    std::vector<const HostColumn*> present;
    for (const HostColumn* m : masks)
      if (m) present.push_back(m);
    if (present.empty() && !more) return;
    auto v = std::make_unique<HostColumn>(HostColumn::allocate(DType::Bool, c.values.size));
    bool* dst = v->as<bool>();
    for (std::int64_t i = 0; i < c.values.size; ++i) {
      bool ok = !more || (*more)[static_cast<std::size_t>(i)];
      for (const HostColumn* m : present) ok = ok && m->as<bool>()[i];
      dst[i] = ok;
    }
    c.valid = v->view();
    validity.push_back(std::move(v));
  };
  if (o.output == TableOutput::GatherMaps) {
    out.push_back({"r.row", res.left_rows.view(), std::nullopt, nullptr});
    if (outputs_right_columns(o.how)) out.push_back({"s.row", res.right_rows.view(), std::nullopt, nullptr});
  }
  for (std::size_t i = 0; i < res.columns.size(); ++i) {
    const NamedColumn& c = res.columns[i];
    if (is_side_validity(c.name, o.how) || validity_target(c.name)) continue;
    const auto type = types.find(c.name);
    OutputColumn col{c.name, c.column.view(), std::nullopt, type == types.end() ? nullptr : type->second};
    if (i < join.key_valid.size()) {
      with_validity(col, {}, join.key_valid[i] ? &*join.key_valid[i] : nullptr);
    } else {
      const std::string side = c.name.substr(0, 2);  // "r." or "s."
      const HostColumn* missing = is_side_validity(side + "valid", o.how) ? find_column(res, side + "valid") : nullptr;
      const HostColumn* own = find_column(res, side + validity_column_name(c.name.substr(2)));
      with_validity(col, {missing, own}, nullptr);
    }
    out.push_back(std::move(col));
  }
  return stage_arrow_file(path, out, format);
}

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
