// join_tables(): checks the tables, makes one sort key and a row id per row, runs join() on those
// (key, row id) relations, and turns its matching pairs into the rows of the join kind and the output
// form: a count, gather maps, or columns gathered by the maps (late materialization). An inner join
// with at most one 4- or 8-byte payload column per side may carry the payloads through join() instead.
#include <mgjoin/engine.hpp>
#include <mgjoin/error.hpp>
#include <mgjoin/table.hpp>

#include "core/cancel.hpp"
#include "engine/src/join/cpu_sort.hpp"
#include "engine/src/table/row_maps.hpp"
#include "engine/src/table/table_keys.hpp"

#include <algorithm>
#include <chrono>
#include <functional>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

namespace mgjoin {

const ColumnView* TableView::find(std::string_view name) const {
  for (const NamedColumnView& c : columns)
    if (c.name == name) return &c.column;
  return nullptr;
}

const char* join_kind_name(JoinKind kind) {
  switch (kind) {
    case JoinKind::Inner: return "inner";
    case JoinKind::LeftOuter: return "left";
    case JoinKind::RightOuter: return "right";
    case JoinKind::FullOuter: return "full";
    case JoinKind::LeftSemi: return "semi";
    case JoinKind::LeftAnti: return "anti";
  }
  return "?";
}

std::optional<JoinKind> parse_join_kind(std::string_view name) {
  static const std::pair<std::string_view, JoinKind> kNames[] = {
      {"inner", JoinKind::Inner},          {"left", JoinKind::LeftOuter},       {"left_outer", JoinKind::LeftOuter},
      {"right", JoinKind::RightOuter},     {"right_outer", JoinKind::RightOuter}, {"full", JoinKind::FullOuter},
      {"full_outer", JoinKind::FullOuter}, {"outer", JoinKind::FullOuter},      {"semi", JoinKind::LeftSemi},
      {"left_semi", JoinKind::LeftSemi},   {"anti", JoinKind::LeftAnti},        {"left_anti", JoinKind::LeftAnti}};
  for (const auto& [n, k] : kNames)
    if (n == name) return k;
  return std::nullopt;
}

JoinKind require_join_kind(std::string_view name, const std::string& what) {
  const std::optional<JoinKind> kind = parse_join_kind(name);
  MGJOIN_INPUT_EXPECTS(kind.has_value(), what + ": expected inner, left, right, full (or outer), semi or anti");
  return *kind;
}

bool outputs_right_columns(JoinKind k) { return k != JoinKind::LeftSemi && k != JoinKind::LeftAnti; }

namespace {

using Clock = std::chrono::steady_clock;
double seconds_since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }
/// join() or an Engine's join: what runs the relations underneath.
using Joiner = std::function<JoinResult(RelationView, RelationView, const JoinOptions&)>;

struct Plan : table::JoinColumns {
  bool carry = false;
  bool in_place = false;  ///< join() may reorder the caller's columns (TableJoinOptions::may_reorder_inputs)
};

bool carriable(const std::vector<NamedColumnView>& columns) {
  return columns.size() <= 1 && (columns.empty() || dtype_size(columns[0].column.type) >= 4);
}

/// Whether the flow moves every column of `table`: its one key column and the carried payload, nothing
/// else (a payload that is the key column itself is not a second column that moves).
bool flow_moves_whole_table(const TableView& table, const table::KeyColumns& key,
                            const std::vector<NamedColumnView>& carried) {
  std::vector<std::string> moved = key.names;
  for (const NamedColumnView& c : carried)
    if (std::find(moved.begin(), moved.end(), c.name) != moved.end()) return false;  // the key as its own payload
    else moved.push_back(c.name);
  return std::all_of(table.columns.begin(), table.columns.end(), [&](const NamedColumnView& c) {
    return std::find(moved.begin(), moved.end(), c.name) != moved.end();
  });
}

Plan plan_join(const TableView& left, const TableView& right, const TableJoinOptions& o) {
  Plan p{table::join_columns(left, right, o)};
  // Carrying needs what join() carries (one 4- or 8-byte payload per side) and the key it outputs as is
  // (one 4- or 8-byte key column). join() then brings the payloads its best way (late inside the
  // co-partitioned flow, with the gathers on the GPUs), so Auto carries wherever it can.
  const bool can_carry = o.how == JoinKind::Inner && o.output == TableOutput::Columns &&
                         p.left_key.columns.size() == 1 && is_key_dtype(p.left_key.columns[0].type) &&
                         carriable(p.left_columns) && carriable(p.right_columns);
  p.carry = can_carry && o.materialization != Materialization::Late;
  // In place only where the flow moves every column of both tables (their key, and the carried payload):
  // other columns would stay behind and split the rows.
  const bool counts = o.how == JoinKind::Inner && o.output == TableOutput::Count;
  const std::vector<NamedColumnView> none;
  p.in_place = o.may_reorder_inputs && (p.carry || counts) && p.left_key.columns.size() == 1 &&
               is_key_dtype(p.left_key.columns[0].type) &&
               flow_moves_whole_table(left, p.left_key, p.carry ? p.left_columns : none) &&
               flow_moves_whole_table(right, p.right_key, p.carry ? p.right_columns : none);
  return p;
}

/// join()'s options for the relations underneath.
JoinOptions underneath(const TableJoinOptions& o, OutputMode output) {
  JoinOptions j = o.join;
  j.output = output;
  return j;
}

/// One side of a carried join: its key and payload, copied unless the caller lets join() reorder its own
/// columns (the const views then name memory the caller allowed us to write).
struct CarriedSide {
  std::optional<HostColumn> key_copy, payload_copy;
  RelationView view;

  CarriedSide(const table::KeyColumns& key, const std::vector<NamedColumnView>& columns, std::int64_t rows,
              bool reorder_in_place) {
    const ColumnView* payload = columns.empty() ? nullptr : &columns[0].column;
    if (reorder_in_place) {
      MGJOIN_EXPECTS(key.columns.size() == 1 && is_key_dtype(key.columns[0].type), "only a 4- or 8-byte key sorts in place");
      view.key = mutable_view(key.columns[0]);
      if (payload) view.payload = mutable_view(*payload);
      return;
    }
    key_copy = table::sort_key(key, rows);
    view.key = key_copy->view();
    if (payload) {
      payload_copy = table::copy_column(*payload);
      view.payload = payload_copy->view();
    }
  }

  static MutableColumnView mutable_view(const ColumnView& c) { return {const_cast<void*>(c.data), c.size, c.type}; }
};

/// Inner join with the payloads carried through join(): its columns are the output.
TableJoinResult join_carried(const Plan& p, std::int64_t left_rows, std::int64_t right_rows, const TableJoinOptions& o,
                             const Joiner& joiner) {
  CarriedSide l(p.left_key, p.left_columns, left_rows, p.in_place);
  CarriedSide r(p.right_key, p.right_columns, right_rows, p.in_place);
  TableJoinResult res;
  res.join = joiner(l.view, r.view, underneath(o, OutputMode::Materialize));
  res.count = res.join.count;
  res.materialization = "carried";
  res.columns.push_back({"key", std::move(res.join.key)});
  if (l.view.payload) res.columns.push_back({"r." + p.left_columns[0].name, std::move(res.join.r_payload)});
  if (r.view.payload) res.columns.push_back({"s." + p.right_columns[0].name, std::move(res.join.s_payload)});
  return res;
}

/// An inner join's count: the keys alone (no row ids, no payloads).
TableJoinResult count_inner(const Plan& p, std::int64_t left_rows, std::int64_t right_rows, const TableJoinOptions& o,
                            const Joiner& joiner) {
  CarriedSide l(p.left_key, {}, left_rows, p.in_place), r(p.right_key, {}, right_rows, p.in_place);
  TableJoinResult res;
  res.join = joiner(l.view, r.view, underneath(o, OutputMode::Count));
  res.count = res.join.count;
  return res;
}

/// The right table's distinct sort keys: a semi or anti join needs only whether a left row matches, and the pairs of a key repeated many times on the right would
/// multiply its output.
HostColumn distinct_keys(HostColumn keys) {
  detail::sort_relation_cpu(RelationView{keys.view(), std::nullopt});
  const auto unique_count = [&](auto* k) { return std::unique(k, k + keys.size()) - k; };
  const std::int64_t n = dtype_size(keys.type()) == 4 ? unique_count(keys.as<std::uint32_t>())
                                                     : unique_count(keys.as<std::uint64_t>());
  keys.truncate(n);
  return keys;
}

/// Pairs of a semi or anti join beyond which the right keys are made distinct first: a few per row
/// cost less than a CPU sort of the right keys.
constexpr std::uint64_t kSemiPairsPerRow = 4;

TableJoinResult join_late(const Plan& p, const TableView& left, const TableView& right, const TableJoinOptions& o,
                          const Joiner& joiner) {
  const std::int64_t nl = left.rows(), nr = right.rows();
  const bool semi_or_anti = !outputs_right_columns(o.how);
  auto t = Clock::now();
  HostColumn lk = table::sort_key(p.left_key, nl), rk = table::sort_key(p.right_key, nr);
  // Semi and anti joins need only which left rows match: the right side travels without row ids.
  HostColumn lid = table::row_ids(nl), rid = semi_or_anti ? HostColumn() : table::row_ids(nr);
  const double prepare_seconds = seconds_since(t);
  // join() may sort keys and row ids in place, together: they stay a consistent relation.
  const auto with_ids = [&](HostColumn& key, HostColumn& ids) {
    return RelationView{key.view(), ids.data() ? std::optional(ids.view()) : std::nullopt};
  };
  RelationView l = with_ids(lk, lid), r = with_ids(rk, rid);
  TableJoinResult res;
  res.materialization = "late";
  if (semi_or_anti) {
    std::uint64_t pairs = ~std::uint64_t{0};
    try {
      pairs = joiner(l, r, underneath(o, OutputMode::Count)).count;
    } catch (const InputError&) {
      // 2^64 pairs or more: the distinct keys below need none of them. (Any other input error comes
      // back from the join after them.)
    }
    if (pairs > kSemiPairsPerRow * static_cast<std::uint64_t>(nl + nr)) {
      rk = distinct_keys(std::move(rk));
      r = RelationView{rk.view(), std::nullopt};
    }
  }
  detail::throw_if_cancelled();
  res.join = joiner(l, r, underneath(o, OutputMode::Materialize));
  res.join.phases.insert(res.join.phases.begin(), PhaseStat{"table.prepare", prepare_seconds, 0, 0});
  const HostColumn& pair_left = res.join.r_payload;
  const HostColumn& pair_right = res.join.s_payload;
  if (o.output == TableOutput::Count) {
    res.count = table::rows_of_kind_count(o.how, pair_left, pair_right, nl, r.size());
    return res;
  }
  t = Clock::now();
  table::RowMaps maps = table::rows_of_kind(o.how, pair_left, pair_right, nl, r.size());
  res.join.phases.push_back({"table.rows", seconds_since(t), 0, 0});
  res.count = static_cast<std::uint64_t>(maps.rows);
  res.join.key = HostColumn();
  res.join.r_payload = HostColumn();
  res.join.s_payload = HostColumn();
  detail::throw_if_cancelled();
  if (o.output == TableOutput::GatherMaps) {
    res.left_rows = std::move(maps.left);
    res.right_rows = std::move(maps.right);
    return res;
  }
  t = Clock::now();
  const std::int64_t* lmap = maps.left.as<std::int64_t>();
  const std::int64_t* rmap = semi_or_anti ? nullptr : maps.right.as<std::int64_t>();
  for (std::size_t i = 0; i < p.left_key.columns.size(); ++i)
    res.columns.push_back({p.left_key.columns.size() == 1 ? "key" : "key." + p.left_key.names[i],
                           table::gather(p.left_key.columns[i], lmap, maps.rows,
                                         rmap ? &p.right_key.columns[i] : nullptr, rmap)});
  for (const NamedColumnView& c : p.left_columns)
    res.columns.push_back({"r." + c.name, table::gather(c.column, lmap, maps.rows)});
  for (const NamedColumnView& c : p.right_columns)
    res.columns.push_back({"s." + c.name, table::gather(c.column, rmap, maps.rows)});
  if (o.how == JoinKind::RightOuter || o.how == JoinKind::FullOuter)
    res.columns.push_back({"r.valid", table::validity(lmap, maps.rows)});
  if (o.how == JoinKind::LeftOuter || o.how == JoinKind::FullOuter)
    res.columns.push_back({"s.valid", table::validity(rmap, maps.rows)});
  res.join.phases.push_back({"table.gather", seconds_since(t), 0, 0});
  return res;
}

TableJoinResult run(const TableView& left, const TableView& right, const TableJoinOptions& options, const Joiner& joiner) {
  const auto start = Clock::now();
  const Plan plan = plan_join(left, right, options);
  const detail::CancelScope cancel(options.join.cancel);
  TableJoinResult res = plan.carry ? join_carried(plan, left.rows(), right.rows(), options, joiner)
                        : options.how == JoinKind::Inner && options.output == TableOutput::Count
                            ? count_inner(plan, left.rows(), right.rows(), options, joiner)
                            : join_late(plan, left, right, options, joiner);
  res.seconds = seconds_since(start);
  return res;
}

}  // namespace

TableJoinResult join_tables(const TableView& left, const TableView& right, const TableJoinOptions& options) {
  return run(left, right, options, [](RelationView r, RelationView s, const JoinOptions& o) { return join(r, s, o); });
}

TableJoinResult join_tables(Engine& engine, const TableView& left, const TableView& right,
                            const TableJoinOptions& options) {
  return run(left, right, options,
             [&engine](RelationView r, RelationView s, const JoinOptions& o) { return engine.join(r, s, o); });
}

}  // namespace mgjoin
