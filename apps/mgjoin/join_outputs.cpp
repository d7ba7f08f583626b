#include "join_outputs.hpp"

#include <mgjoin/error.hpp>

#include <algorithm>
#include <memory>

namespace mgjoin::cli {
namespace fs = std::filesystem;
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

void expect_npy_strings_hold(const NullKeyJoin& join, const TableJoinOptions& o, const HostColumns& host) {
  if (o.output != TableOutput::Columns) return;  // gather maps hold no string
  const TableJoinResult& res = join.result;
  for (const HostColumns::Dictionary& d : host.dictionaries) expect_utf8(*d.dictionary, d.name);
  for (const auto& [name, column] : host.gathered) {
    expect_utf8(*column, name);
    const std::string side = name.substr(0, 2);
    const HostColumn* rows = find_column(res, side + std::string(kRowNumbers));
    const HostColumn* present = is_side_validity(side + "valid", o.how) ? find_column(res, side + "valid") : nullptr;
    if (!rows) continue;
    const std::int64_t at = first_null_taken(*column, rows->view(), present ? present->as<bool>() : nullptr);
    if (at >= 0)
      throw InputError(name + ": the output holds nulls (output row " + std::to_string(at) +
                       " first), which .npy files cannot hold: use --format parquet or arrow");
  }
}

void drop_validity_columns(NullKeyJoin& join) {
  for (std::size_t k = 0; k < join.key_valid.size(); ++k)
    if (join.key_valid[k] && std::find(join.key_valid[k]->begin(), join.key_valid[k]->end(), false) != join.key_valid[k]->end())
      throw InputError(join.result.columns[k].name + ": the output holds null keys (rows whose key is null, kept "
                       "unmatched or matched by --nulls-equal), which .npy files cannot hold: use --format parquet or arrow");
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

namespace {

/// The Arrow output's columns: validity from the masks that apply, and the columns the host makes (keys
/// decoded from their dictionaries, payloads gathered by row numbers).
struct ArrowOutput {
  const NullKeyJoin& join;
  const TableJoinOptions& o;
  const HostColumns* host;
  std::vector<OutputColumn> columns;
  std::vector<std::unique_ptr<HostColumn>> validity;  // kept alive until the file is written

  /// `c`'s validity: the AND of `masks` (present ones) and `more`; none where nothing applies.
  void with_validity(OutputColumn& c, std::initializer_list<const HostColumn*> masks, const std::vector<bool>* more) {
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
  }

  /// The column (or, for a side's row numbers, the columns gathered by them) of output column `i`.
  void add(std::size_t i, const OutputTypes& types) {
    const TableJoinResult& res = join.result;
    const NamedColumn& c = res.columns[i];
    const auto type = types.find(c.name);
    OutputColumn col{c.name, c.column.view(), std::nullopt, type == types.end() ? nullptr : type->second, nullptr};
    const std::string side = c.name.substr(0, 2);  // "r." or "s." for a payload
    if (i < join.key_valid.size()) {
      with_validity(col, {}, join.key_valid[i] ? &*join.key_valid[i] : nullptr);
    } else {
      const HostColumn* missing = is_side_validity(side + "valid", o.how) ? find_column(res, side + "valid") : nullptr;
      const HostColumn* own = find_column(res, side + validity_column_name(c.name.substr(2)));
      with_validity(col, {missing, own}, nullptr);
    }
    const bool* valid = col.valid ? col.valid->as<bool>() : nullptr;
    if (host && i >= join.key_valid.size() && c.name.substr(2) == kRowNumbers) {
      const auto rows = arrow_row_indices(col.values, valid);  // once for the side's gathered columns
      for (const auto& [name, column] : host->gathered)
        if (name.starts_with(side))
          columns.push_back({name, col.values, std::nullopt, nullptr, take_arrow_column(*column, *rows, nullptr, name)});
      return;
    }
    if (host)
      for (const HostColumns::Dictionary& d : host->dictionaries)
        if (d.name == c.name) col.arrow = take_arrow_column(*d.dictionary, *arrow_row_indices(col.values, valid), d.type.get(), d.name);
    columns.push_back(std::move(col));
  }

  /// The key columns, then host->order's payload columns in that order.
  void put_in_order() {
    if (!host || host->order.empty()) return;
    std::vector<OutputColumn> ordered;
    const auto in_order = [&](const std::string& n) {
      return std::find(host->order.begin(), host->order.end(), n) != host->order.end();
    };
    for (OutputColumn& c : columns)
      if (!in_order(c.name)) ordered.push_back(std::move(c));
    for (const std::string& n : host->order)
      for (OutputColumn& c : columns)
        if (c.name == n) ordered.push_back(std::move(c));
    columns = std::move(ordered);
  }
};

}  // namespace

StagedColumnFile stage_arrow_join_output(const std::filesystem::path& path, const NullKeyJoin& join,
                                         const TableJoinOptions& o, TableFormat format, const OutputTypes& types,
                                         const HostColumns* host) {
  const TableJoinResult& res = join.result;
  ArrowOutput out{join, o, host, {}, {}};
  if (o.output == TableOutput::GatherMaps) {
    out.columns.push_back({"r.row", res.left_rows.view(), std::nullopt, nullptr, nullptr});
    if (outputs_right_columns(o.how)) out.columns.push_back({"s.row", res.right_rows.view(), std::nullopt, nullptr, nullptr});
  }
  for (std::size_t i = 0; i < res.columns.size(); ++i)
    if (!is_side_validity(res.columns[i].name, o.how) && !validity_target(res.columns[i].name)) out.add(i, types);
  out.put_in_order();
  return stage_arrow_file(path, out.columns, format);
}

std::vector<StagedColumnFile> stage_npy_join_outputs(const std::filesystem::path& dir, const NullKeyJoin& join,
                                                     const TableJoinOptions& o, const OutputTypes& types,
                                                     const HostColumns& host) {
  const TableJoinResult& res = join.result;
  if (o.output != TableOutput::Columns || (host.gathered.empty() && host.dictionaries.empty()))
    return stage_join_outputs(dir, res, o);
  // The columns the host makes (strings: keys decoded, payloads gathered) as the Arrow output makes them,
  // each then in a .npy file of its own; the sides' r.valid and s.valid as they are.
  std::vector<StagedColumnFile> files;
  ArrowOutput out{join, o, &host, {}, {}};
  for (std::size_t i = 0; i < res.columns.size(); ++i) {
    const NamedColumn& c = res.columns[i];
    if (is_side_validity(c.name, o.how)) files.push_back(stage_column(dir / (c.name + ".npy"), c.column.view()));
    else out.add(i, types);
  }
  for (const OutputColumn& c : out.columns) {
    const fs::path file = dir / (c.name + ".npy");
    files.push_back(c.arrow ? stage_npy_strings(file, *c.arrow, c.name) : stage_column(file, c.values));
  }
  return files;
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
