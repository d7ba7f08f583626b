// join_tables(): checks the tables, makes one sort key and a row id per row, runs join() on those
// (key, row id) relations, and turns its matching pairs into the rows of the join kind and the output
// form: a count, gather maps, or columns gathered by the maps (late materialization: payload columns on
// the CPU threads or the engine's GPUs, as gather_plan.hpp predicts faster). An inner join with at most
// one 4- or 8-byte payload column per side may carry the payloads through join() instead. A key over 8
// bytes joins on hashes, and its pairs are verified before anything is made of them (wide_keys.hpp).
#include <mgjoin/engine.hpp>
#include <mgjoin/error.hpp>
#include <mgjoin/table.hpp>

#include "alloc/host_pin.hpp"
#include "core/timing.hpp"
#include "core/cancel.hpp"
#include "core/device.hpp"
#include "engine/src/api/engine_resources.hpp"
#include "engine/src/join/cpu_sort.hpp"
#include "engine/src/table/gather_plan.hpp"
#include "engine/src/table/gpu_gather.hpp"
#include "engine/src/table/row_maps.hpp"
#include "engine/src/table/table_keys.hpp"
#include "engine/src/table/wide_keys.hpp"

#include <algorithm>
#include <chrono>
#include <functional>
#include <optional>
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

GatherOn require_gather_on(std::string_view name, const std::string& what) {
  if (name == "auto") return GatherOn::Auto;
  if (name == "cpu") return GatherOn::Cpu;
  MGJOIN_INPUT_EXPECTS(name == "gpus", what + ": expected auto, cpu or gpus");
  return GatherOn::Gpus;
}

bool outputs_right_columns(JoinKind k) { return k != JoinKind::LeftSemi && k != JoinKind::LeftAnti; }

namespace {

using timing::Clock;
using timing::seconds_since;
/// join() or an Engine's join: what runs the relations underneath.
using Joiner = std::function<JoinResult(RelationView, RelationView, const JoinOptions&)>;

/// What a table join runs on: the join underneath, and the engine whose GPUs may gather payload columns
/// (none on the CPU path).
struct Backend {
  Joiner join;
  Engine* engine = nullptr;
};

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
  const bool can_carry = o.how == JoinKind::Inner && o.output == TableOutput::Columns && p.left_key.as_is() &&
                         carriable(p.left_columns) && carriable(p.right_columns);
  p.carry = can_carry && o.materialization != Materialization::Late;
  // In place only where the flow moves every column of both tables (their key, and the carried payload):
  // other columns would stay behind and split the rows.
  const bool counts = o.how == JoinKind::Inner && o.output == TableOutput::Count;
  const std::vector<NamedColumnView> none;
  p.in_place = o.may_reorder_inputs && (p.carry || counts) && p.left_key.as_is() &&
               flow_moves_whole_table(left, p.left_key, p.carry ? p.left_columns : none) &&
               flow_moves_whole_table(right, p.right_key, p.carry ? p.right_columns : none);
  return p;
}

/// join()'s options for the relations underneath. The caller's sink (JoinSettings::sink) is for the
/// table's output columns: only a carried join's result is them (carried_options); the joins of row ids
/// and keys that other paths run underneath make columns of their own.
JoinOptions underneath(const TableJoinOptions& o, OutputMode output) {
  JoinOptions j = o.join;
  j.output = output;
  j.sink = nullptr;
  return j;
}

/// A caller's column as join() takes it: join() writes it only where the options let it (keep_inputs).
MutableColumnView mutable_view(const ColumnView& c) { return {const_cast<void*>(c.data), c.size, c.type}; }

/// One side of a carried join: its key and payload. A key used as it is (one 4- or 8-byte integer column,
/// the same type on both sides) and the payload are the caller's own columns, which join() keeps
/// (JoinOptions::keep_inputs: only a flow that sorts in place copies them) unless the caller lets it
/// reorder them; any other key is encoded into a column of its own (table::sort_key).
struct CarriedSide {
  std::optional<HostColumn> packed_key;
  RelationView view;

  CarriedSide(const table::KeyColumns& key, const std::vector<NamedColumnView>& columns, std::int64_t rows) {
    const ColumnView* payload = columns.empty() ? nullptr : &columns[0].column;
    if (key.as_is()) {
      view.key = mutable_view(key.columns[0]);
    } else {
      MGJOIN_EXPECTS(!payload, "only a key used as it is carries a payload");
      packed_key = table::sort_key(key, rows);
      view.key = packed_key->view();
    }
    if (payload) view.payload = mutable_view(*payload);
  }
};

/// join()'s options for a carried join of `l` and `r`: the caller's columns kept unless it lets join()
/// reorder them (packed keys are ours).
JoinOptions carried_options(const Plan& p, const TableJoinOptions& o, OutputMode output, const CarriedSide& l,
                            const CarriedSide& r) {
  JoinOptions j = underneath(o, output);
  j.keep_inputs = !p.in_place && !(l.packed_key && r.packed_key);
  if (output == OutputMode::Materialize) j.sink = o.join.sink;  // the output columns are join()'s
  return j;
}

/// Inner join with the payloads carried through join(): its columns are the output.
TableJoinResult join_carried(const Plan& p, std::int64_t left_rows, std::int64_t right_rows, const TableJoinOptions& o,
                             const Joiner& joiner) {
  CarriedSide l(p.left_key, p.left_columns, left_rows);
  CarriedSide r(p.right_key, p.right_columns, right_rows);
  return table::carried_result(joiner(l.view, r.view, carried_options(p, o, OutputMode::Materialize, l, r)),
                               p.left_columns, p.right_columns, /*columns=*/true);
}

/// An inner join's count: the keys alone (no row ids, no payloads).
TableJoinResult count_inner(const Plan& p, std::int64_t left_rows, std::int64_t right_rows, const TableJoinOptions& o,
                            const Joiner& joiner) {
  CarriedSide l(p.left_key, {}, left_rows), r(p.right_key, {}, right_rows);
  return table::carried_result(joiner(l.view, r.view, carried_options(p, o, OutputMode::Count, l, r)), {}, {},
                               /*columns=*/false);
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

/// A payload column of a late join's output: where it comes from, and which map (0: left, 1: right).
struct PayloadColumn {
  std::string name;
  const ColumnView* source;
  int map;
};

std::vector<PayloadColumn> payload_columns(const Plan& p) {
  std::vector<PayloadColumn> out;
  for (const NamedColumnView& c : p.left_columns) out.push_back({"r." + c.name, &c.column, 0});
  for (const NamedColumnView& c : p.right_columns) out.push_back({"s." + c.name, &c.column, 1});
  return out;
}

/// Whether late materialization may gather on GPUs: an engine, columns out, and not the CPU asked for.
bool may_gather_on_gpus(const TableJoinOptions& o, const Backend& b) {
  return b.engine && o.output == TableOutput::Columns && o.gather_on != GatherOn::Cpu;
}

/// Where each payload column is gathered; the CPU gathers `cpu_columns` (keys, validity) in any case.
table::GatherPlan plan_payload_gathers(const std::vector<PayloadColumn>& payloads, std::int64_t rows, int cpu_columns,
                                       bool maps_pinned, const TableJoinOptions& o, const Backend& b) {
  table::GatherMachine m;
  m.maps_pinned = maps_pinned;
  if (may_gather_on_gpus(o, b)) {
    const auto stacks = b.engine->resources().device_stacks();
    m.gpus = static_cast<int>(stacks.size());
    m.device_bytes = ~std::uint64_t{0};
    for (const alloc::DeviceStackAllocator* stack : stacks) m.device_bytes = std::min<std::uint64_t>(m.device_bytes, stack->available());
    m.rates = b.engine->resources().rates();
  }
  std::vector<table::GatherColumn> columns;
  for (const PayloadColumn& c : payloads)
    columns.push_back({static_cast<std::uint64_t>(c.source->size), static_cast<int>(dtype_size(c.source->type)), c.map,
                       m.gpus > 0 && alloc::is_pinned(c.source->data, c.source->bytes())});
  return table::plan_gathers(columns, rows, cpu_columns, m, o.gather_on);
}

/// The output columns of a late join, gathered by `maps`: the payload columns `plan` places on GPUs are
/// queued first, then the CPU threads gather the key, its own payload columns and the validity columns
/// while the GPUs work. Where a GPU's memory runs out as the gathers start, the CPU gathers its columns
/// too, and `why` says so.
std::vector<NamedColumn> gather_columns(const Plan& p, JoinKind how, const table::RowMaps& maps,
                                        const std::vector<PayloadColumn>& payloads, table::GatherPlan plan,
                                        const Backend& b, std::string& why) {
  const std::int64_t rows = maps.rows;
  const std::int64_t* map_of[2] = {maps.left.as<std::int64_t>(),
                                   outputs_right_columns(how) ? maps.right.as<std::int64_t>() : nullptr};
  std::vector<NamedColumn> gathered(payloads.size());
  std::vector<table::GpuGatherJob> jobs;
  for (std::size_t i = 0; i < payloads.size(); ++i) {
    if (plan.place[i] == table::kOnCpu) continue;
    gathered[i] = {payloads[i].name, HostColumn::allocate(payloads[i].source->type, rows, MemoryKind::Pinned)};
    jobs.push_back({*payloads[i].source, payloads[i].map, plan.place[i], &gathered[i].column});
  }
  std::optional<table::GpuGathers> gpus;
  if (!jobs.empty()) {
    try {
      gpus.emplace(b.engine->devices(), b.engine->resources().device_stacks());
      gpus->start(jobs, map_of, rows);
    } catch (const OutOfMemory& e) {
      gpus.reset();  // waits for what was queued and gives its buffers back
      std::fill(plan.place.begin(), plan.place.end(), table::kOnCpu);
      why += std::string("; GPU memory ran out (") + e.what() + "): gathered on the CPU";
    }
  }
  std::vector<NamedColumn> out;
  for (std::size_t i = 0; i < p.left_key.columns.size(); ++i)
    out.push_back({p.left_key.columns.size() == 1 ? "key" : "key." + p.left_key.names[i],
                   table::gather(p.left_key.columns[i], map_of[0], rows, map_of[1] ? &p.right_key.columns[i] : nullptr,
                                 map_of[1], p.key_types[i])});
  for (std::size_t i = 0; i < payloads.size(); ++i)
    if (plan.place[i] == table::kOnCpu) gathered[i] = {payloads[i].name, table::gather(*payloads[i].source, map_of[payloads[i].map], rows)};
  std::vector<NamedColumn> validity;
  if (table::keeps_right_unmatched(how)) validity.push_back({"r.valid", table::validity(map_of[0], rows)});
  if (table::keeps_left_unmatched(how)) validity.push_back({"s.valid", table::validity(map_of[1], rows)});
  if (gpus) gpus->finish();
  for (auto* part : {&gathered, &validity})
    for (NamedColumn& c : *part) out.push_back(std::move(c));
  return out;
}

/// Columns the CPU gathers whatever the plan: the key's components and the validity columns.
int cpu_gathered_columns(const Plan& p, JoinKind how) {
  return static_cast<int>(p.left_key.columns.size()) + table::keeps_left_unmatched(how) + table::keeps_right_unmatched(how);
}

/// The most rows a join of `kind` outputs from `pairs` matching pairs of tables of `left` and `right` rows.
std::int64_t most_rows(JoinKind kind, std::int64_t pairs, std::int64_t left, std::int64_t right) {
  if (!outputs_right_columns(kind)) return left;
  return pairs + (table::keeps_left_unmatched(kind) ? left : 0) + (table::keeps_right_unmatched(kind) ? right : 0);
}

std::uint64_t pcie_bytes(const table::GatherPlan& plan) {
  std::uint64_t bytes = 0;
  for (const table::GpuGatherLoad& g : plan.gpus) bytes += g.in + g.out;
  return bytes;
}

/// The relation of sort keys `key` with their row ids `ids` (none when `ids` is empty).
RelationView keys_with_ids(MutableColumnView key, HostColumn& ids) {
  return RelationView{key, ids.data() ? std::optional(ids.view()) : std::nullopt};
}

/// A semi or anti join needs only which left rows match: where the right side would make more than
/// kSemiPairsPerRow pairs a row, it is cut to its distinct keys first. Returns the right relation to join.
RelationView right_for_semi_or_anti(const Plan& p, const Joiner& joiner, const JoinOptions& count, const RelationView& l,
                                    HostColumn& rk, HostColumn& rid, std::int64_t rows) {
  RelationView r = keys_with_ids(rk.view(), rid);
  std::uint64_t pairs = ~std::uint64_t{0};
  try {
    pairs = joiner(l, r, count).count;
  } catch (const InputError&) {
    // 2^64 pairs or more: the distinct keys below need none of them. (Any other input error comes
    // back from the join after them.)
  }
  if (pairs <= kSemiPairsPerRow * static_cast<std::uint64_t>(rows)) return r;
  if (p.left_key.hashed()) {  // one row per distinct tuple, not per hash: colliding tuples stay apart
    table::keep_distinct_rows(table::KeyRows(p.left_key, p.right_key), table::Side::Right, rk, rid);
    return keys_with_ids(rk.view(), rid);
  }
  rk = distinct_keys(std::move(rk));
  return RelationView{rk.view(), std::nullopt};
}

TableJoinResult join_late(const Plan& p, const TableView& left, const TableView& right, const TableJoinOptions& o,
                          const Backend& backend) {
  const Joiner& joiner = backend.join;
  const std::int64_t nl = left.rows(), nr = right.rows();
  const bool semi_or_anti = !outputs_right_columns(o.how);
  // A hashed key's pairs are candidates, verified by their rows' keys: the right side's row ids travel too.
  const bool hashed = p.left_key.hashed();
  auto t = Clock::now();
  // On GPUs a key used as it is joins as the caller's own column, kept (JoinOptions::keep_inputs: only a
  // flow that sorts in place copies it, the co-partitioned flow never does): a copy of it on the host was
  // most of this phase. The CPU path sorts in place, so there, as for any other key, the key is encoded
  // into a column of ours; a semi or anti join's right keys are always ours (right_for_semi_or_anti may cut
  // them to the distinct ones).
  const bool on_gpus = backend.engine != nullptr;
  const bool left_as_is = on_gpus && p.left_key.as_is(), right_as_is = on_gpus && p.right_key.as_is() && !semi_or_anti;
  const auto options = [&](OutputMode output) {
    JoinOptions j = underneath(o, output);
    j.keep_inputs = j.keep_inputs || left_as_is || right_as_is;  // the caller's key beside our row ids
    return j;
  };
  HostColumn lk = left_as_is ? HostColumn() : table::sort_key(p.left_key, nl);
  HostColumn rk = right_as_is ? HostColumn() : table::sort_key(p.right_key, nr);
  // Semi and anti joins need only which left rows match: the right side travels without row ids.
  HostColumn lid = table::row_ids(nl), rid = semi_or_anti && !hashed ? HostColumn() : table::row_ids(nr);
  const double prepare_seconds = seconds_since(t);
  // join() may sort keys and row ids in place, together (ours): they stay a consistent relation.
  const RelationView l = keys_with_ids(left_as_is ? mutable_view(p.left_key.columns[0]) : lk.view(), lid);
  const RelationView r = semi_or_anti ? right_for_semi_or_anti(p, joiner, options(OutputMode::Count), l, rk, rid, nl + nr)
                                      : keys_with_ids(right_as_is ? mutable_view(p.right_key.columns[0]) : rk.view(), rid);
  TableJoinResult res;
  res.materialization = "late";
  detail::throw_if_cancelled();
  res.join = joiner(l, r, options(OutputMode::Materialize));
  res.join.phases.insert(res.join.phases.begin(), PhaseStat{"table.prepare", prepare_seconds, 0, 0});
  if (hashed) {
    t = Clock::now();
    table::keep_equal_pairs(table::KeyRows(p.left_key, p.right_key), res.join.r_payload, res.join.s_payload);
    res.join.phases.push_back({"table.verify", seconds_since(t), 0, 0});
  }
  const HostColumn& pair_left = res.join.r_payload;
  const HostColumn& pair_right = res.join.s_payload;
  if (o.output == TableOutput::Count) {
    res.count = table::rows_of_kind_count(o.how, pair_left, pair_right, nl, r.size());
    return res;
  }
  t = Clock::now();
  // Maps that GPUs will read are made pinned (copies from pageable memory are staged and synchronous),
  // as planned on the most rows the kind can output; the plan is made again on the rows it does output.
  const std::vector<PayloadColumn> payloads = payload_columns(p);
  const int cpu_columns = cpu_gathered_columns(p, o.how);
  const bool pin_maps =
      may_gather_on_gpus(o, backend) &&
      plan_payload_gathers(payloads, most_rows(o.how, pair_left.size(), nl, r.size()), cpu_columns, true, o, backend)
              .columns_on_gpus() > 0;
  table::RowMaps maps = table::rows_of_kind(o.how, pair_left, pair_right, nl, r.size(),
                                            pin_maps ? MemoryKind::Pinned : MemoryKind::Pageable);
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
  const table::GatherPlan plan = plan_payload_gathers(payloads, maps.rows, cpu_columns,
                                                      maps.left.memory_kind() == MemoryKind::Pinned, o, backend);
  res.gathers = plan.why;
  res.columns = gather_columns(p, o.how, maps, payloads, plan, backend, res.gathers);
  res.join.phases.push_back({"table.gather", seconds_since(t), pcie_bytes(plan), 0});
  return res;
}

TableJoinResult run(const TableView& left, const TableView& right, const TableJoinOptions& options, const Backend& backend) {
  const Joiner& joiner = backend.join;
  const auto start = Clock::now();
  const Plan plan = plan_join(left, right, options);
  const detail::CancelScope cancel(options.join.cancel);
  TableJoinResult res = plan.carry ? join_carried(plan, left.rows(), right.rows(), options, joiner)
                        : options.how == JoinKind::Inner && options.output == TableOutput::Count &&
                                  !plan.left_key.hashed()  // a hashed key's pairs are verified first
                            ? count_inner(plan, left.rows(), right.rows(), options, joiner)
                            : join_late(plan, left, right, options, backend);
  res.seconds = seconds_since(start);
  return res;
}

}  // namespace

TableJoinResult join_tables(const TableView& left, const TableView& right, const TableJoinOptions& options) {
  const JoinOptions& j = options.join;
  // On GPUs, one engine for the whole call (a semi join may join twice, and the gathers use its GPUs).
  // Without a GPU, join() runs the CPU path or refuses GPUs asked for by name, with its own message.
  // A small join with the GPUs left to choose runs on the CPU without starting them (choose_executor).
  if (choose_executor(j, left.rows(), right.rows()).executor == Executor::Gpus && gpu::device_count() > 0) {
    (void)plan_join(left, right, options);  // the tables' errors first, before the GPUs' memory is taken
    Engine engine(j);
    TableJoinResult result = join_tables(engine, left, right, options);
    result.join.phases.insert(result.join.phases.begin(), engine.startup().begin(), engine.startup().end());
    return result;
  }
  return run(left, right, options, Backend{[](RelationView r, RelationView s, const JoinOptions& o) { return join(r, s, o); }});
}

TableJoinResult join_tables(Engine& engine, const TableView& left, const TableView& right,
                            const TableJoinOptions& options) {
  return run(left, right, options,
             Backend{[&engine](RelationView r, RelationView s, const JoinOptions& o) { return engine.join(r, s, o); }, &engine});
}

}  // namespace mgjoin
