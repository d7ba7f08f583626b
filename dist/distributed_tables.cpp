// dist::join_tables (<mgjoin/distributed.hpp>): the table form of dist::join. Each rank checks its
// slices as join_tables would, the ranks agree on their columns, sample the packed key, and send every
// row's travelling columns (keys, chosen payloads, global row index for gather maps) to the rank owning
// its key; each rank then runs join_tables on what it received, and gather maps are turned back into
// row indices of the whole tables.
#include <mgjoin/distributed.hpp>

#include "core/timing.hpp"
#include "dist/collectives.hpp"
#include "dist/rank_gpus.hpp"
#include "engine/src/api/tables.hpp"

#include <algorithm>
#include <chrono>
#include <optional>
#include <numeric>
#include <string>
#include <utility>
#include <vector>

namespace mgjoin::dist {
namespace {

using copart::Side;
using namespace detail;

/// Whether a hot key's rows of `split` may be spread over several ranks (the other side's rows then
/// copied to each) for a join of kind `how`. A copied row is joined once per copy: fine for the pairs of
/// an inner join, but a left outer, semi or anti join would output (or test) a copied left row once per
/// rank, a right outer join a copied right row, and a full outer join either.
bool may_split(JoinKind how, Side split) {
  switch (how) {
    case JoinKind::Inner: return true;
    case JoinKind::LeftOuter:
    case JoinKind::LeftSemi:
    case JoinKind::LeftAnti: return split == Side::R;
    case JoinKind::RightOuter: return split == Side::S;
    case JoinKind::FullOuter: return false;
  }
  return false;
}

/// `plan` with only the hot keys that `how` may split; the others go whole to the rank owning their
/// range, like any key.
copart::PartitionPlan plan_for_kind(copart::PartitionPlan plan, JoinKind how) {
  int kept = 0;
  for (int h = 0; h < plan.hot_count; ++h)
    if (may_split(how, plan.hot[h].split_side)) plan.hot[kept++] = plan.hot[h];
  plan.hot_count = kept;
  return plan;
}

/// The columns of one table that travel: its key columns, then each chosen payload column not already
/// among them.
std::vector<NamedColumnView> travelling(const table::KeyColumns& key, const std::vector<NamedColumnView>& payloads) {
  std::vector<NamedColumnView> out;
  for (std::size_t i = 0; i < key.columns.size(); ++i) out.push_back({key.names[i], key.columns[i]});
  for (const NamedColumnView& c : payloads)
    if (std::none_of(out.begin(), out.end(), [&](const NamedColumnView& x) { return x.name == c.name; })) out.push_back(c);
  return out;
}

/// "name:type,..." of both tables' travelling columns: what every rank must agree on.
std::string layout_of(const std::vector<NamedColumnView>& left, const std::vector<NamedColumnView>& right) {
  std::string s;
  for (const auto* side : {&left, &right}) {
    for (const NamedColumnView& c : *side) s += c.name + ":" + std::string(dtype_name(c.column.type)) + ",";
    s += "|";
  }
  return s;
}

/// What a rank received of one table: its travelling columns, and (for gather maps) each row's index in
/// the whole table.
struct Received {
  std::vector<NamedColumn> columns;
  HostColumn rows;
  TableView view() const {
    TableView t;
    for (const NamedColumn& c : columns) t.columns.push_back({c.name, c.column.view()});
    return t;
  }
};

/// Sends this rank's rows of one table to the ranks owning their keys (`sort_key`, one per row);
/// returns what this rank owns.
Received shuffle_table(const Comm& c, const std::vector<NamedColumnView>& columns, const ColumnView& sort_key,
                       Side side, const copart::PartitionPlan& plan, std::int64_t first, bool row_indices,
                       const NcclRows* nccl) {
  const std::vector<copart::Destinations> dest = agreed(c, [&] { return destinations_of(plan, side, sort_key, first); });
  Received here;
  for (const NamedColumnView& col : columns) here.columns.push_back({col.name, send_to_owners(c, col.column, dest, nccl)});
  if (row_indices) {
    std::vector<std::int64_t> rows(dest.size());
    std::iota(rows.begin(), rows.end(), first);
    here.rows = send_to_owners(c, {rows.data(), static_cast<std::int64_t>(rows.size()), DType::Int64}, dest, nccl);
  }
  return here;
}

/// The key every rank samples and routes by (table::sort_key's order): the key column itself where it
/// is used as it is (the host only reads it: nothing copied, nothing pinned), else the key encoded.
struct RoutingKey {
  HostColumn packed;
  ColumnView view;
};

RoutingKey routing_key(const table::KeyColumns& key, std::int64_t rows) {
  if (key.as_is()) return {HostColumn{}, key.columns[0]};
  RoutingKey k{table::sort_key(key, rows), {}};
  k.view = k.packed.view();
  return k;
}

/// Turns a local gather map (rows of what this rank received; -1 for a missing side) into rows of the
/// whole table.
void to_global_rows(HostColumn& map, const HostColumn& global) {
  auto* m = map.as<std::int64_t>();
  const auto* g = global.as<std::int64_t>();
#pragma omp parallel for schedule(static)
  for (std::int64_t i = 0; i < map.size(); ++i)
    if (m[i] >= 0) m[i] = g[m[i]];
}

/// The relations under a join the co-partitioned flow runs whole, as join_tables carries them: an inner
/// join of one 4- or 8-byte key column, counted, or its columns output with at most one chosen 4- or
/// 8-byte payload column a side that are not late by request (std::nullopt for any other join).
std::optional<std::pair<RelationView, RelationView>> carried(const table::JoinColumns& cols, const TableJoinOptions& o) {
  const bool count = o.output == TableOutput::Count;
  const auto one_key = [](const table::KeyColumns& k) { return k.as_is(); };
  const auto carries = [&](const std::vector<NamedColumnView>& c) {
    return count || c.empty() || (c.size() == 1 && (dtype_size(c[0].column.type) == 4 || dtype_size(c[0].column.type) == 8));
  };
  if (o.how != JoinKind::Inner || !(count || o.output == TableOutput::Columns) || !one_key(cols.left_key) ||
      !one_key(cols.right_key) || !carries(cols.left_columns) || !carries(cols.right_columns) ||
      (!count && o.materialization == Materialization::Late))
    return std::nullopt;
  // Read, never written: the flow leaves its inputs untouched.
  const auto rel = [&](const table::KeyColumns& k, const std::vector<NamedColumnView>& c) {
    const auto writable = [](const ColumnView& v) { return MutableColumnView{const_cast<void*>(v.data), v.size, v.type}; };
    RelationView v{writable(k.columns[0]), std::nullopt};
    if (!count && !c.empty()) v.payload = writable(c[0].column);
    return v;
  };
  return std::pair{rel(cols.left_key, cols.left_columns), rel(cols.right_key, cols.right_columns)};
}

}  // namespace

DistributedTableResult join_tables(const TableView& left, const TableView& right, const TableJoinOptions& options,
                                   MPI_Comm comm) {
  return join_tables_ranks(left, right, options, Comm(comm), nullptr, nullptr);
}

DistributedTableResult detail::join_tables_ranks(const TableView& left, const TableView& right, const TableJoinOptions& options,
                                                 const Comm& c, const NcclRows* nccl, mgjoin::Engine* engine) {
  StepClock clock;
  const table::JoinColumns cols = agreed(c, [&] {
    check_rank_count(c);
    return table::join_columns(left, right, options);
  });
  const std::vector<NamedColumnView> left_travel = travelling(cols.left_key, cols.left_columns);
  const std::vector<NamedColumnView> right_travel = travelling(cols.right_key, cols.right_columns);
  // Every rank's slices must have the same travelling columns: the first rank that differs from rank 0 is named.
  expect_layout_of_root(c, layout_of(left_travel, right_travel),
                        "its tables' key or payload columns (names or types) differ from rank 0's");
  // The options that choose the ranks' steps (the route, what crosses) must agree too: a rank that took
  // other steps would wait in a collective the others never call.
  expect_layout_of_root(c,
                        std::string(join_kind_name(options.how)) + "," + std::to_string(static_cast<int>(options.output)) +
                            "," + std::to_string(static_cast<int>(options.materialization)) + "," +
                            strategy_name(options.join.strategy),
                        "its join options (how, output, materialization, strategy) differ from rank 0's");

  const auto [left_key, right_key] = agreed(c, [&] {
    return std::pair{routing_key(cols.left_key, left.rows()), routing_key(cols.right_key, right.rows())};
  });
  clock.mark("check");
  // On the ranks' GPUs where the flow runs the join whole: the slices start crossing before the plan.
  const auto relations = options.join.strategy != JoinStrategy::Paper ? carried(cols, options) : std::nullopt;
  const OutputMode output = options.output == TableOutput::Count ? OutputMode::Count : OutputMode::Materialize;
  std::unique_ptr<RankGpuJoin> on_gpus;
  if (relations && rank_gpus_can_join(c, relations->first, relations->second, output, engine, nccl))
    on_gpus = RankGpuJoin::start(c, *nccl, *engine, relations->first, relations->second, output);
  const std::vector<std::int64_t> left_rows = all_gather(c, left.rows()), right_rows = all_gather(c, right.rows());
  const copart::KeySample left_sample = global_sample(c, left_key.view, left_rows);
  const copart::KeySample right_sample = global_sample(c, right_key.view, right_rows);
  const copart::PartitionPlan plan =
      agreed(c, [&] { return plan_for_kind(copart::choose_plan(left_sample, right_sample, c.size), options.how); });

  clock.mark("plan");
  DistributedTableResult result;
  result.ranks = c.size;
  if (on_gpus) {
    const auto start = timing::Clock::now();
    const RankPlan gpu_plan{plan, left_sample, right_sample, first_row(c, left_rows), first_row(c, right_rows)};
    if (std::optional<RankJoined> joined = on_gpus->finish(c, gpu_plan)) {
      clock.mark("gpus");
      result.local = table::carried_result(std::move(joined->local), cols.left_columns, cols.right_columns,
                                           options.output == TableOutput::Columns);
      result.local.seconds = timing::seconds_since(start);
      result.left_received = joined->r_rows;
      result.right_received = joined->s_rows;
      result.count = total_count(c, result.local.count);
      clock.prepend_to(result.local.join.phases);
      return result;
    }
    on_gpus.reset();  // its GPU memory back before the host route's local join
  }
  const bool maps = options.output == TableOutput::GatherMaps;
  Received left_here = shuffle_table(c, left_travel, left_key.view, Side::R, plan, first_row(c, left_rows), maps, nccl);
  Received right_here = shuffle_table(c, right_travel, right_key.view, Side::S, plan, first_row(c, right_rows),
                                      maps && outputs_right_columns(options.how), nccl);

  clock.mark("shuffle");
  result.left_received = left_here.columns.front().column.size();
  result.right_received = right_here.columns.front().column.size();
  const NodePlace place = node_place(c);
  result.local = agreed(c, [&] {
    TableJoinOptions local = options;
    local.join = engine ? options_for_engine(options.join) : options_for_rank(options.join, place);
    local.may_reorder_inputs = true;  // the received columns are this call's own
    // Chosen columns travel only where they are output; join_tables checked them on the caller's tables.
    if (options.output != TableOutput::Columns) local.left_columns.reset();
    if (options.output != TableOutput::Columns || !outputs_right_columns(options.how)) local.right_columns.reset();
    TableJoinResult res = engine ? mgjoin::join_tables(*engine, left_here.view(), right_here.view(), local)
                                 : mgjoin::join_tables(left_here.view(), right_here.view(), local);
    if (maps) {
      to_global_rows(res.left_rows, left_here.rows);
      if (outputs_right_columns(options.how)) to_global_rows(res.right_rows, right_here.rows);
    }
    return res;
  });
  clock.mark("local_join");
  result.count = total_count(c, result.local.count);
  clock.prepend_to(result.local.join.phases);
  return result;
}

}  // namespace mgjoin::dist
