#include "bench_tables.hpp"

#include <mgjoin/error.hpp>

#include "core/dispatch.hpp"

#include <omp.h>

#include <algorithm>
#include <chrono>

namespace mgjoin::cli {

BenchTables bench_tables(GeneratedWorkload& w, int columns) {
  BenchTables t;
  t.extra.reserve(2 * static_cast<std::size_t>(columns));
  for (auto [rel, table] : {std::pair{&w.r, &t.left}, std::pair{&w.s, &t.right}}) {
    table->columns.push_back({"key", rel->key.view()});
    table->columns.push_back({"p0", rel->payload->view()});
    const std::int64_t n = rel->size();
    const bool narrow = rel->payload->type() == DType::UInt32;
    for (int j = 1; j < columns; ++j) {
      HostColumn c = HostColumn::allocate(DType::UInt64, n, rel->key.memory_kind());
      auto* out = c.as<std::uint64_t>();
#pragma omp parallel for schedule(static)
      for (std::int64_t i = 0; i < n; ++i) {
        const std::uint64_t p = narrow ? rel->payload->as<std::uint32_t>()[i] : rel->payload->as<std::uint64_t>()[i];
        out[i] = p * (2 * static_cast<std::uint64_t>(j) + 1) + static_cast<std::uint64_t>(j);
      }
      t.extra.push_back(std::move(c));
      std::string name = "p";  // not "p" + to_string(j): GCC 12 warns falsely (-Wrestrict, bug 105329) there
      name += std::to_string(j);
      table->columns.push_back({std::move(name), t.extra.back().view()});
    }
  }
  return t;
}

TableJoinOptions bench_table_options(const JoinOptions& join, const std::string& how, const std::string& output,
                                     const std::string& materialization, const std::string& gather_on) {
  TableJoinOptions o;
  o.join = join;
  o.left_on = {"key"};
  o.right_on = {"key"};
  o.how = require_join_kind(how, "--how " + how);
  MGJOIN_INPUT_EXPECTS(output != "ranges", "--output ranges: tables have no ranges output (count or materialize)");
  o.output = output == "count" ? TableOutput::Count : TableOutput::Columns;
  if (materialization == "carry") o.materialization = Materialization::Carry;
  else if (materialization == "late") o.materialization = Materialization::Late;
  else MGJOIN_INPUT_EXPECTS(materialization.empty() || materialization == "auto",
                            "--materialization " + materialization + ": expected auto, carry or late");
  o.gather_on = require_gather_on(gather_on, "--gather-on " + gather_on);
  return o;
}

namespace {

/// One column gathered by `map` (zeros where it is -1), a parallel loop over the output rows; the width
/// known at compile time, so each row is one load and one store (not a call to memcpy).
template <class Word>
void gather_column(const ColumnView& column, const std::int64_t* map, std::int64_t rows, HostColumn& out) {
  const auto* from = static_cast<const Word*>(column.data);
  Word* to = out.as<Word>();
#pragma omp parallel for schedule(static)
  for (std::int64_t i = 0; i < rows; ++i) to[i] = map[i] >= 0 ? from[map[i]] : Word{};
}

/// One plain gather of every chosen column by the maps, column after column (each a parallel loop: one
/// output stream and one map at a time stay in cache); seconds.
double timed_gather(const std::vector<const ColumnView*>& columns, const std::vector<const std::int64_t*>& maps,
                    std::int64_t rows, std::vector<HostColumn>& out) {
  const auto t0 = std::chrono::steady_clock::now();
  for (std::size_t c = 0; c < columns.size(); ++c)
    dispatch_column_width(dtype_size(columns[c]->type), [&](auto word) {
      gather_column<decltype(word)>(*columns[c], maps[c], rows, out[c]);
    });
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace

GatherFloor gather_floor_seconds(Engine* engine, const BenchTables& t, const TableJoinOptions& options) {
  TableJoinOptions maps_options = options;
  maps_options.output = TableOutput::GatherMaps;
  maps_options.join.progress = {};
  const TableJoinResult maps =
      engine ? join_tables(*engine, t.left, t.right, maps_options) : join_tables(t.left, t.right, maps_options);
  const auto rows = static_cast<std::int64_t>(maps.count);
  std::vector<const ColumnView*> columns;
  std::vector<const std::int64_t*> by;
  const bool right_side = maps.right_rows.size() == rows;
  for (const auto& c : t.left.columns) {
    columns.push_back(&c.column);  // the key comes from the left table too
    by.push_back(maps.left_rows.as<std::int64_t>());
  }
  if (right_side)
    for (const auto& c : t.right.columns) {
      if (c.name == "key") continue;
      columns.push_back(&c.column);
      by.push_back(maps.right_rows.as<std::int64_t>());
    }
  const auto new_columns = [&] {
    std::vector<HostColumn> out;
    for (const ColumnView* c : columns) out.push_back(HostColumn::allocate(c->type, rows));
    return out;
  };
  const auto median_of_three = [](std::vector<double> s) {  // after a warm-up run
    s.erase(s.begin());
    std::sort(s.begin(), s.end());
    return s[1];
  };
  std::vector<double> fresh, touched;
  for (int i = 0; i < 4; ++i) {
    const auto t0 = std::chrono::steady_clock::now();
    std::vector<HostColumn> out = new_columns();
    timed_gather(columns, by, rows, out);
    fresh.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  }
  std::vector<HostColumn> out = new_columns();
  for (int i = 0; i < 4; ++i) touched.push_back(timed_gather(columns, by, rows, out));  // the first touches the pages
  return {median_of_three(fresh), median_of_three(touched)};
}

}  // namespace mgjoin::cli
