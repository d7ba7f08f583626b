#pragma once
// `mgjoin bench` over tables (--columns, --how, --materialization, --tables): the generated workload as
// two tables of N payload columns each, joined through join_tables, and the floor of its gathers.
#include <mgjoin/engine.hpp>
#include <mgjoin/generate.hpp>
#include <mgjoin/table.hpp>

#include <string>
#include <vector>

namespace mgjoin::cli {

/// The workload's relations as tables: key, p0 (the generator's payload: the row index) and N - 1 more
/// 8-byte columns derived from it (p_j = p0 * (2j + 1) + j), so every output value can be traced back.
struct BenchTables {
  std::vector<HostColumn> extra;  ///< p1 ... of both sides
  TableView left, right;
};

/// `columns`: 1 to 64 (the bench checks --columns before it generates the workload).
BenchTables bench_tables(GeneratedWorkload& w, int columns);

/// TableJoinOptions for the bench: key "key", every other column chosen.
TableJoinOptions bench_table_options(const JoinOptions& join, const std::string& how, const std::string& output,
                                     const std::string& materialization, const std::string& gather_on);

/// The floor of join_tables' gathers: the same output rows and columns gathered by a plain OpenMP loop,
/// column after column, median of three after a warm-up, in seconds. `fresh`: into new columns, as the
/// join's output must be (the kernel faults in and zeroes their pages); `touched`: into columns already
/// written, the gather alone. The maps come from an untimed join of the same options with
/// TableOutput::GatherMaps.
struct GatherFloor {
  double fresh = 0, touched = 0;
};
GatherFloor gather_floor_seconds(Engine* engine, const BenchTables& t, const TableJoinOptions& options);

}  // namespace mgjoin::cli
