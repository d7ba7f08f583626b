// dist::join_tables under `mpirun -np N` (ctest runs N = 1..4) on the CPU path, against join_tables of
// the whole tables in one process: every rank draws the same whole tables from the seed and passes its
// slice (row ranges, sizes not divisible by N, some empty). For every join kind and output form, the
// ranks' counts must add up to the single process's, their gather maps (row indices into the whole
// tables) and output rows, gathered on rank 0, must be the single process's as multisets, and every
// rank's output columns must have the single process's names and types. Inputs: random keys of 8, 4
// and 2 bytes, signed and unsigned; a composite key; one hot key holding 3/4 of the right table (then
// of the left), which the plan must spread over the ranks where the kind allows (an inner join) and
// must not where it does not (a full outer join); all keys equal; no key matching; an empty table;
// fewer rows than ranks; payload columns chosen by name. Then ranks whose tables differ must make every
// rank throw RankError naming the first of them.
//
// Not GoogleTest: each rank checks, rank 0 prints, and the exit status says whether every rank passed.
// MGJOIN_TEST_SEED replays a seed.
#include <mgjoin/distributed.hpp>
#include <mgjoin/table.hpp>

#include <mpi.h>

#include "mpi_check.hpp"

#include <algorithm>
#include <optional>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <utility>
#include <vector>

namespace {

using mgjoin::DType;
using mgjoin::HostColumn;
using mgjoin::JoinKind;
using mgjoin::TableJoinOptions;
using mgjoin::TableOutput;
using mgjoin::TableView;

using namespace mgjoin::test::mpi;  // rank, ranks, check, my_rows

/// A whole table, the same on every rank.
struct Whole {
  std::vector<std::string> names;
  std::vector<HostColumn> columns;
  std::int64_t rows() const { return columns.empty() ? 0 : columns.front().size(); }

  /// Rows [first, last) as a view into the whole table's columns.
  TableView slice(std::int64_t first, std::int64_t last) const {
    TableView t;
    for (std::size_t c = 0; c < columns.size(); ++c) {
      const HostColumn& col = columns[c];
      const auto* data = static_cast<const std::byte*>(col.data()) + first * static_cast<std::int64_t>(mgjoin::dtype_size(col.type()));
      t.columns.push_back({names[c], {data, last - first, col.type()}});
    }
    return t;
  }
  TableView all() const { return slice(0, rows()); }
};

/// A column of `n` values drawn by `value(i)`, stored in `type`'s bytes (low first).
template <class F>
HostColumn column(DType type, std::int64_t n, F value) {
  HostColumn c = HostColumn::allocate(type, n);
  const std::size_t w = mgjoin::dtype_size(type);
  for (std::int64_t i = 0; i < n; ++i) {
    const std::uint64_t v = value(i);
    std::memcpy(static_cast<std::byte*>(c.data()) + i * static_cast<std::int64_t>(w), &v, w);
  }
  return c;
}

/// A table of `n` rows: key columns `key_types` named k0, k1, ... with values from `key(i, column)`,
/// and three payloads: an int32, a float64 and a bool column (named with `prefix`).
template <class F>
Whole table(std::mt19937_64& rng, std::int64_t n, const std::vector<DType>& key_types, F key, const std::string& prefix) {
  Whole w;
  for (std::size_t k = 0; k < key_types.size(); ++k) {
    std::string name = "k";  // not "k" + to_string(k): GCC 12 warns falsely there (-Wrestrict, bug 105329)
    name += std::to_string(k);
    w.names.push_back(std::move(name));
    w.columns.push_back(column(key_types[k], n, [&](std::int64_t i) { return key(i, k); }));
  }
  std::vector<std::uint64_t> draws(static_cast<std::size_t>(n));
  for (auto& d : draws) d = rng();
  w.names.push_back(prefix + "_int");
  w.columns.push_back(column(DType::Int32, n, [&](std::int64_t i) { return draws[static_cast<std::size_t>(i)] >> 32; }));
  w.names.push_back(prefix + "_f64");
  w.columns.push_back(column(DType::Float64, n, [&](std::int64_t i) {
    const double x = static_cast<double>(draws[static_cast<std::size_t>(i)] & 0xffff) / 7.0;
    std::uint64_t bits;
    std::memcpy(&bits, &x, 8);
    return bits;
  }));
  w.names.push_back(prefix + "_ok");
  w.columns.push_back(column(DType::Bool, n, [&](std::int64_t i) { return draws[static_cast<std::size_t>(i)] & 1; }));
  return w;
}

/// Every rank's fixed-width records, on rank 0 (empty elsewhere), sorted.
std::vector<std::string> gather_sorted(const std::vector<std::string>& mine, std::size_t width) {
  std::string flat;
  for (const std::string& r : mine) flat += r;
  const int n = static_cast<int>(flat.size());
  std::vector<int> counts(static_cast<std::size_t>(ranks)), at(static_cast<std::size_t>(ranks));
  MPI_Gather(&n, 1, MPI_INT, counts.data(), 1, MPI_INT, 0, MPI_COMM_WORLD);
  int total = 0;
  for (int i = 0; i < ranks; ++i) at[static_cast<std::size_t>(i)] = std::exchange(total, total + counts[static_cast<std::size_t>(i)]);
  std::string all(static_cast<std::size_t>(rank == 0 ? total : 0), '\0');
  MPI_Gatherv(flat.data(), n, MPI_CHAR, all.data(), counts.data(), at.data(), MPI_CHAR, 0, MPI_COMM_WORLD);
  std::vector<std::string> out;
  for (std::size_t i = 0; i + width <= all.size(); i += width) out.push_back(all.substr(i, width));
  std::sort(out.begin(), out.end());
  return out;
}

/// Each output row as the bytes of its columns, one after another.
std::vector<std::string> records(const std::vector<const HostColumn*>& columns, std::uint64_t rows) {
  std::vector<std::string> out(rows);
  for (std::uint64_t i = 0; i < rows; ++i)
    for (const HostColumn* c : columns) {
      const std::size_t w = mgjoin::dtype_size(c->type());
      out[i].append(static_cast<const char*>(c->data()) + i * w, w);
    }
  return out;
}

std::size_t record_width(const std::vector<const HostColumn*>& columns) {
  std::size_t w = 0;
  for (const HostColumn* c : columns) w += mgjoin::dtype_size(c->type());
  return w;
}

/// The columns a result's rows are compared by: its gather maps, or its output columns.
std::vector<const HostColumn*> compared(const mgjoin::TableJoinResult& res, TableOutput output, JoinKind how) {
  std::vector<const HostColumn*> cols;
  if (output == TableOutput::GatherMaps) {
    cols.push_back(&res.left_rows);
    if (mgjoin::outputs_right_columns(how)) cols.push_back(&res.right_rows);
  } else {
    for (const mgjoin::NamedColumn& c : res.columns) cols.push_back(&c.column);
  }
  return cols;
}

std::string names_of(const mgjoin::TableJoinResult& res) {
  std::string s;
  for (const mgjoin::NamedColumn& c : res.columns) s += c.name + ":" + std::string(mgjoin::dtype_name(c.column.type())) + " ";
  return s;
}

/// What else a case checks: the rows the ranks received, where a hot key must be spread over them (an
/// inner join copies the other side's rows to each rank of its run, so the ranks receive more rows than
/// the tables hold; a full outer join spreads no hot key and copies nothing); and payload columns chosen
/// by name (a subset, reordered, the key among them), for every output form, as one process takes them.
struct Also {
  bool hot_key_spread = false;
  std::optional<std::vector<std::string>> left_columns, right_columns;
};

/// Whether the co-partitioned flow runs the join whole (so that, over NCCL, the ranks join on their GPUs
/// without the rows coming back): an inner join on one 4- or 8-byte key column, counted, or its columns
/// output with at most one chosen payload column of 4 or 8 bytes a side.
bool runs_whole(const Whole& left, const std::vector<std::string>& on, JoinKind how, TableOutput output, const Also& also) {
  const auto width = [&](const std::string& name) {
    const auto at = std::find(left.names.begin(), left.names.end(), name);
    return at == left.names.end() ? 0 : mgjoin::dtype_size(left.columns[static_cast<std::size_t>(at - left.names.begin())].type());
  };
  const auto carried = [&](const std::optional<std::vector<std::string>>& chosen, const char* prefix) {
    if (!chosen || chosen->size() > 1) return false;  // (all columns: three payloads)
    if (chosen->empty()) return true;
    // The right table's columns have the left's types under its own prefix.
    std::string name = chosen->front();
    if (name.rfind(prefix, 0) == 0) name = "l" + name.substr(1);
    return width(name) == 4 || width(name) == 8;
  };
  if (how != JoinKind::Inner || on.size() != 1 || (width(on[0]) != 4 && width(on[0]) != 8)) return false;
  return output == TableOutput::Count ||
         (output == TableOutput::Columns && carried(also.left_columns, "l") && carried(also.right_columns, "r"));
}

/// The distributed join of `left` and `right` against the single-process one, every kind and output.
void check_tables(const std::string& name, const Whole& left, const Whole& right, const std::vector<std::string>& on,
                  const Also& also = {}) {
  for (const JoinKind how : {JoinKind::Inner, JoinKind::LeftOuter, JoinKind::RightOuter, JoinKind::FullOuter,
                             JoinKind::LeftSemi, JoinKind::LeftAnti})
    for (const TableOutput output : {TableOutput::Count, TableOutput::GatherMaps, TableOutput::Columns}) {
      const std::string what = name + ", " + mgjoin::join_kind_name(how) + ", " +
                               (output == TableOutput::Count ? "count" : output == TableOutput::GatherMaps ? "maps" : "columns");
      TableJoinOptions o;
      o.left_on = o.right_on = on;
      o.how = how;
      o.output = output;
      o.join.gpus = 0;  // the reference: the CPU path
      o.left_columns = also.left_columns;
      o.right_columns = also.right_columns;
      const mgjoin::TableJoinResult want = mgjoin::join_tables(left.all(), right.all(), o);
      o.join.gpus = local_gpus();
      const auto [l0, l1] = my_rows(left.rows());
      const auto [r0, r1] = my_rows(right.rows());
      try {
        const mgjoin::dist::DistributedTableResult got =
            dist_join_tables(left.slice(l0, l1), right.slice(r0, r1), o);
        check(got.count == want.count, what + ": count " + std::to_string(got.count) + ", single process " +
                                           std::to_string(want.count));
        check(got.ranks == ranks, what + ": ranks");
        const char* route = on_rank_gpus() && runs_whole(left, on, how, output, also) ? "ranks.gpus" : "ranks.shuffle";
        check(has_phase(got.local.join, route), what + ": no phase " + route + " (the rows took the other route)");
        std::uint64_t part = got.local.count, parts = 0;
        MPI_Allreduce(&part, &parts, 1, MPI_UINT64_T, MPI_SUM, MPI_COMM_WORLD);
        check(parts == want.count, what + ": the ranks' parts add up to " + std::to_string(parts));
        std::int64_t received = got.left_received + got.right_received, all_received = 0;
        MPI_Allreduce(&received, &all_received, 1, MPI_INT64_T, MPI_SUM, MPI_COMM_WORLD);
        const std::int64_t rows = left.rows() + right.rows();
        check(all_received >= rows, what + ": rows lost in the shuffle");
        if (also.hot_key_spread && ranks >= 2 && how == JoinKind::Inner)
          check(all_received > rows, what + ": the hot key was not spread (no copies)");
        if (also.hot_key_spread && how == JoinKind::FullOuter)
          check(all_received == rows, what + ": rows were copied for a full outer join");
        if (output == TableOutput::Count) continue;
        check(names_of(got.local) == names_of(want), what + ": columns " + names_of(got.local) + "against " + names_of(want));
        const auto got_cols = compared(got.local, output, how), want_cols = compared(want, output, how);
        const std::vector<std::string> all = gather_sorted(records(got_cols, got.local.count), record_width(got_cols));
        if (rank == 0) {
          std::vector<std::string> expected = records(want_cols, want.count);
          std::sort(expected.begin(), expected.end());
          check(all == expected, what + ": the ranks' rows differ from the single process's (" + std::to_string(all.size()) +
                                     " against " + std::to_string(expected.size()) + ")");
        }
      } catch (const std::exception& e) {
        check(false, what + ": threw " + e.what());
      }
    }
  if (rank == 0) std::printf("%s: checked\n", name.c_str());
}

/// Ranks whose tables differ from rank 0's: every rank must throw RankError naming the first of them.
void check_failing_ranks() {
  if (ranks < 2) return;
  std::mt19937_64 rng(7);
  TableJoinOptions o;
  o.left_on = o.right_on = {"k0"};
  o.join.gpus = local_gpus();
  const auto key = [](std::int64_t i, std::size_t) { return static_cast<std::uint64_t>(i % 5); };
  // Rank 1's payload column has another type (valid on its own: only the ranks' agreement catches it).
  Whole left = table(rng, 10, {DType::Int64}, key, "l");
  const Whole right = table(rng, 10, {DType::Int64}, key, "r");
  if (rank == 1) left.columns[1] = column(DType::Int64, 10, [](std::int64_t i) { return i; });
  try {
    dist_join_tables(left.all(), right.all(), o);
    check(false, "a rank with another payload type: no error");
  } catch (const mgjoin::dist::RankError& e) {
    check(e.rank() == 1 && e.kind() == mgjoin::dist::RankError::Kind::Input,
          std::string("a rank with another payload type: ") + e.what());
    check(std::string(e.what()).find("rank 1: its tables' key or payload columns (names or types) differ from rank 0's") == 0,
          std::string("a rank with another payload type: ") + e.what());
  }
  // The last rank names a key column it does not have: its own check fails, with the column's name.
  TableJoinOptions missing = o;
  if (rank == ranks - 1) missing.left_on = {"nope"};
  try {
    dist_join_tables(right.all(), right.all(), missing);
    check(false, "a rank naming a missing key column: no error");
  } catch (const mgjoin::dist::RankError& e) {
    check(e.rank() == ranks - 1 && std::string(e.what()).find("'nope'") != std::string::npos,
          std::string("a rank naming a missing key column: ") + e.what());
  }
  // Rank 1 asks for another kind of join: its steps would differ (row indices cross for some kinds), so
  // it is refused, not left to hang in a collective the others never call.
  TableJoinOptions other = o;
  if (rank == 1) other.how = JoinKind::LeftOuter;
  try {
    dist_join_tables(right.all(), right.all(), other);
    check(false, "a rank with other options: no error");
  } catch (const mgjoin::dist::RankError& e) {
    check(e.rank() == 1 && std::string(e.what()).find("rank 1: its join options (how, output, materialization, strategy) "
                                                        "differ from rank 0's") == 0,
          std::string("a rank with other options: ") + e.what());
  }
  if (rank == 0) std::printf("failing ranks: checked\n");
}

}  // namespace

int main(int argc, char** argv) {
  const std::uint64_t seed = mgjoin::test::mpi::start(argc, argv, "dist_tables_mpi");
  std::mt19937_64 rng(seed);  // the same draws on every rank

  const auto uniform = [&](std::uint64_t domain) {
    std::vector<std::uint64_t> v(40'000);
    for (auto& x : v) x = (rng() % domain) * 0x9E3779B97F4A7C15ull;  // spread over the key's width and sign
    return [v](std::int64_t i, std::size_t) { return v[static_cast<std::size_t>(i) % v.size()]; };
  };
  {
    const auto lk = uniform(6'000), rk = uniform(6'000);
    const Whole l = table(rng, 9'001, {DType::Int64}, lk, "l"), r = table(rng, 12'007, {DType::Int64}, rk, "r");
    check_tables("random 8-byte signed keys", l, r, {"k0"});
    check_tables("random 8-byte signed keys, columns chosen", l, r, {"k0"},
                 Also{false, std::vector<std::string>{"l_ok", "k0", "l_int"}, std::vector<std::string>{"r_f64"}});
    check_tables("random 8-byte signed keys, one payload column a side", l, r, {"k0"},
                 Also{false, std::vector<std::string>{"l_int"}, std::vector<std::string>{"r_f64"}});
  }
  {
    const auto lk = uniform(3'000), rk = uniform(3'000);
    const auto top = [&](auto f) { return [f](std::int64_t i, std::size_t c) { return f(i, c) >> 32; }; };
    const Whole l = table(rng, 5'003, {DType::UInt32}, top(lk), "l"), r = table(rng, 7'001, {DType::UInt32}, top(rk), "r");
    check_tables("random 4-byte unsigned keys", l, r, {"k0"});
  }
  {
    // (int16, int32): 6 bytes packed into one 8-byte sort key, signed components.
    const auto lk = uniform(50), rk = uniform(50), lk2 = uniform(40), rk2 = uniform(40);
    const auto pair = [](auto a, auto b) {
      return [a, b](std::int64_t i, std::size_t c) { return c == 0 ? a(i, c) >> 48 : b(i, c) >> 32; };
    };
    const Whole l = table(rng, 6'007, {DType::Int16, DType::Int32}, pair(lk, lk2), "l");
    const Whole r = table(rng, 4'003, {DType::Int16, DType::Int32}, pair(rk, rk2), "r");
    check_tables("composite (int16, int32) keys", l, r, {"k0", "k1"});
  }
  {
    // 3/4 of the right table on one key: the plan spreads it over the ranks (the right side split) for
    // inner and right outer joins only; then 3/4 of the left table on one key, the left side split.
    const auto lk = uniform(4'000), rk = uniform(4'000);
    const auto hot_most = [](auto f) { return [f](std::int64_t i, std::size_t c) { return i % 4 ? 42 : f(i, c); }; };
    const auto hot_some = [](auto f) { return [f](std::int64_t i, std::size_t c) { return i % 97 ? f(i, c) : 42; }; };
    const Whole l = table(rng, 6'001, {DType::UInt64}, hot_some(lk), "l"), r = table(rng, 30'011, {DType::UInt64}, hot_most(rk), "r");
    const Also spread{true, std::nullopt, std::nullopt};
    check_tables("one hot key holding 3/4 of the right table", l, r, {"k0"}, spread);
    check_tables("one hot key holding 3/4 of the left table", r, l, {"k0"}, spread);
    check_tables("one hot key holding 3/4 of the right table, one payload column a side", l, r, {"k0"},
                 Also{true, std::vector<std::string>{"l_f64"}, std::vector<std::string>{"r_int"}});
  }
  {
    const auto seven = [](std::int64_t, std::size_t) { return std::uint64_t{7}; };
    const Whole l = table(rng, 150, {DType::Int64}, seven, "l"), r = table(rng, 101, {DType::Int64}, seven, "r");
    check_tables("all keys equal", l, r, {"k0"});
  }
  {
    const auto even = [](std::int64_t i, std::size_t) { return static_cast<std::uint64_t>(2 * i); };
    const auto odd = [](std::int64_t i, std::size_t) { return static_cast<std::uint64_t>(2 * i + 1); };
    const Whole l = table(rng, 3'001, {DType::Int32}, even, "l"), r = table(rng, 2'999, {DType::Int32}, odd, "r");
    check_tables("no key matching", l, r, {"k0"});
  }
  {
    const auto lk = uniform(100);
    const Whole empty = table(rng, 0, {DType::Int64}, lk, "l"), r = table(rng, 1'000, {DType::Int64}, lk, "r");
    check_tables("empty left table", empty, r, {"k0"});
    const Whole few_l = table(rng, 2, {DType::Int64}, lk, "l"), few_r = table(rng, 3, {DType::Int64}, lk, "r");
    check_tables("fewer rows than ranks", few_l, few_r, {"k0"});
  }
  check_failing_ranks();

  return mgjoin::test::mpi::finish("dist_tables_mpi");
}
