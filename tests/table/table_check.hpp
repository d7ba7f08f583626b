#pragma once
// The check of a TableJoinResult against the reference's row pairs (tests/common/reference_join.hpp):
// everything it expects (count, gather maps, column values, validity, order) is derived from those pairs
// and the input tables; nothing is computed by the engine. Also the runs that check: one join, a join
// that may reorder its inputs, and the sweeps over kinds and output forms.
#include <mgjoin/engine.hpp>
#include <mgjoin/error.hpp>
#include <mgjoin/table.hpp>
#include <mgjoin/types.hpp>

#include "common/reference_join.hpp"
#include "common/tier.hpp"
#include "table/table_inputs.hpp"
#include "table/table_names.hpp"
#include "table/test_tables.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <exception>
#include <initializer_list>
#include <optional>
#include <sstream>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

namespace mgjoin::test {

/// What a failure message needs to replay a case.
inline std::string describe(const TableInput& in, const TableJoinOptions& o) {
  std::ostringstream s;
  s << "shape " << in.shape << ", how " << kind_label(o.how) << ", output " << output_label(o.output)
    << ", materialization " << materialization_label(o.materialization) << ", join.gpus " << o.join.gpus
    << ", strategy " << strategy_label(o.join.strategy) << (o.may_reorder_inputs ? ", may_reorder_inputs" : "")
    << "\n";
  const auto table = [&](const char* side, const OwnedTable& t, const std::vector<std::string>& on,
                         const std::optional<std::vector<std::string>>& chosen) {
    s << "  " << side << " (" << t.rows() << " rows):";
    for (const auto& c : t.columns) s << " " << c.name << ":" << type_label(c.type);
    s << "; on";
    for (const auto& k : on) s << " " << k;
    s << "; columns ";
    if (!chosen) {
      s << "(all)";
    } else {
      s << "{";
      for (const auto& c : *chosen) s << " " << c;
      s << " }";
    }
    s << "\n";
    if (t.rows() <= 24) {
      s << "    keys:";
      for (std::int64_t i = 0; i < t.rows(); ++i) s << " " << tuple_text(key_tuple(t.view(), on, i));
      s << "\n";
    }
  };
  table("left", in.left, in.left_on, o.left_columns);
  table("right", in.right, in.right_on, o.right_columns);
  return s.str();
}

inline bool is_outer(JoinKind k) {
  return k == JoinKind::LeftOuter || k == JoinKind::RightOuter || k == JoinKind::FullOuter;
}
inline bool is_semi_or_anti(JoinKind k) { return k == JoinKind::LeftSemi || k == JoinKind::LeftAnti; }

/// Where a row sits in the documented order: the pairs, the unmatched left rows, the unmatched right
/// rows. Semi and anti joins output left rows only, in left table order (segment 1).
inline int segment_of(const RowPair& p) { return p.left >= 0 && p.right >= 0 ? 0 : (p.left >= 0 ? 1 : 2); }

/// One expected output column.
struct ExpectedColumn {
  enum class Source : std::uint8_t { Key, Left, Right, LeftValid, RightValid } source;
  std::string name;
  DType type;
  std::size_t key_component = 0;  ///< Source::Key
  std::string input;              ///< Source::Left / Right: the input column's name
};

/// The result's columns as the header documents them. Validity columns: one for each side that an outer
/// join may leave missing ("r.valid and/or s.valid ... false where that side has no row"): s.valid for a
/// left outer join, r.valid for a right outer join, both for a full outer join. (The example at the top
/// of table.hpp lists both for a left outer join; the list in TableJoinResult is the reading taken.)
inline std::vector<ExpectedColumn> expected_columns(const TableInput& in, const TableJoinOptions& o) {
  std::vector<ExpectedColumn> out;
  const bool composite = in.left_on.size() > 1;
  for (std::size_t c = 0; c < in.left_on.size(); ++c)
    out.push_back({ExpectedColumn::Source::Key, composite ? "key." + in.left_on[c] : "key",
                   in.left.named(in.left_on[c]).type, c, {}});
  const auto left_cols = o.left_columns ? *o.left_columns : in.left.names_except(in.left_on);
  for (const auto& name : left_cols)
    out.push_back({ExpectedColumn::Source::Left, "r." + name, in.left.named(name).type, 0, name});
  if (!is_semi_or_anti(o.how)) {
    const auto right_cols = o.right_columns ? *o.right_columns : in.right.names_except(in.right_on);
    for (const auto& name : right_cols)
      out.push_back({ExpectedColumn::Source::Right, "s." + name, in.right.named(name).type, 0, name});
  }
  if (o.how == JoinKind::RightOuter || o.how == JoinKind::FullOuter)
    out.push_back({ExpectedColumn::Source::LeftValid, "r.valid", DType::Bool, 0, {}});
  if (o.how == JoinKind::LeftOuter || o.how == JoinKind::FullOuter)
    out.push_back({ExpectedColumn::Source::RightValid, "s.valid", DType::Bool, 0, {}});
  return out;
}

/// The bytes of output row `p` as the expected columns describe it: the key from the left row (the
/// right one where the left is missing), zeros for a missing side's columns, validity as 0 / 1.
inline std::string expected_row_bytes(const TableInput& in, const std::vector<ExpectedColumn>& cols, const RowPair& p) {
  std::string row;
  for (const auto& c : cols) {
    const std::size_t w = element_bytes(c.type);
    switch (c.source) {
      case ExpectedColumn::Source::Key: {
        const OwnedColumn& src = p.left >= 0 ? in.left.named(in.left_on[c.key_component])
                                             : in.right.named(in.right_on[c.key_component]);
        row.append(reinterpret_cast<const char*>(src.at(p.left >= 0 ? p.left : p.right)), w);
        break;
      }
      case ExpectedColumn::Source::Left:
        if (p.left >= 0) row.append(reinterpret_cast<const char*>(in.left.named(c.input).at(p.left)), w);
        else row.append(w, '\0');
        break;
      case ExpectedColumn::Source::Right:
        if (p.right >= 0) row.append(reinterpret_cast<const char*>(in.right.named(c.input).at(p.right)), w);
        else row.append(w, '\0');
        break;
      case ExpectedColumn::Source::LeftValid: row.push_back(p.left >= 0 ? '\1' : '\0'); break;
      case ExpectedColumn::Source::RightValid: row.push_back(p.right >= 0 ? '\1' : '\0'); break;
    }
  }
  return row;
}

inline std::string hex(const std::string& bytes) {
  static const char* digits = "0123456789abcdef";
  std::string s;
  for (const unsigned char b : bytes) {
    s.push_back(digits[b >> 4]);
    s.push_back(digits[b & 15]);
  }
  return s;
}

/// Which order a result must have (TableJoinResult::left_rows documents it).
enum class Order : std::uint8_t {
  KeyOrderedPairs,  ///< pairs in key order, then unmatched left rows, then right ones, each in table
                    ///< order (the CPU path and the co-partitioned flow)
  AnyPairOrder,     ///< the same, the pairs in any order (the paper flow)
  Any,              ///< the same rows in any order (inputs the join may reorder)
};

/// Compares actual rows with the reference's: the same multiset, and in `order` the segments come in
/// order (pairs, unmatched left, unmatched right), the pairs with non-decreasing keys where asked, the
/// unmatched rows exactly the reference's sequence (table order). `Row` is RowPair or a byte string;
/// key_of gives an actual pair row's key tuple.
template <class Row, class KeyOf, class Show>
::testing::AssertionResult same_rows_in_documented_order(const std::vector<Row>& actual,
                                                        const std::vector<int>& actual_segment,
                                                        const std::vector<Row>& expected,
                                                        const std::vector<int>& expected_segment, KeyOf key_of,
                                                        Show show, Order order) {
  if (actual.size() != expected.size())
    return ::testing::AssertionFailure() << actual.size() << " rows, the reference has " << expected.size();
  if (order == Order::Any) {
    std::vector<Row> a = actual, e = expected;
    std::sort(a.begin(), a.end());
    std::sort(e.begin(), e.end());
    for (std::size_t i = 0; i < a.size(); ++i)
      if (!(a[i] == e[i]))
        return ::testing::AssertionFailure() << "sorted rows differ at " << i << ": got " << show(a[i])
                                             << ", the reference " << show(e[i]);
    return ::testing::AssertionSuccess();
  }
  for (std::size_t i = 1; i < actual.size(); ++i)
    if (actual_segment[i] < actual_segment[i - 1])
      return ::testing::AssertionFailure() << "row " << i << " is in segment " << actual_segment[i]
                                           << " after a row of segment " << actual_segment[i - 1]
                                           << " (0 = pairs, 1 = unmatched left, 2 = unmatched right)";
  for (int seg = 0; seg < 3; ++seg) {
    std::vector<Row> a, e;
    std::vector<std::size_t> a_index;
    for (std::size_t i = 0; i < actual.size(); ++i)
      if (actual_segment[i] == seg) a.push_back(actual[i]), a_index.push_back(i);
    for (std::size_t i = 0; i < expected.size(); ++i)
      if (expected_segment[i] == seg) e.push_back(expected[i]);
    if (a.size() != e.size())
      return ::testing::AssertionFailure() << "segment " << seg << " (0 = pairs, 1 = unmatched left, 2 = unmatched right)"
                                           << " has " << a.size() << " rows, the reference " << e.size();
    if (seg == 0) {
      for (std::size_t i = 1; order == Order::KeyOrderedPairs && i < a.size(); ++i) {
        const KeyTuple prev = key_of(a_index[i - 1]), cur = key_of(a_index[i]);
        if (cur < prev)
          return ::testing::AssertionFailure() << "pairs not in key order: row " << a_index[i] << " has key "
                                               << tuple_text(cur) << " after " << tuple_text(prev);
      }
      std::sort(a.begin(), a.end());
      std::sort(e.begin(), e.end());
    }
    for (std::size_t i = 0; i < a.size(); ++i)
      if (!(a[i] == e[i]))
        return ::testing::AssertionFailure()
               << "segment " << seg << (seg == 0 ? " (sorted)" : " (in table order)") << ", row " << i << ": got "
               << show(a[i]) << ", the reference " << show(e[i]);
  }
  return ::testing::AssertionSuccess();
}

/// Whether a carried materialization applies (the header: inner joins with at most one 4- or 8-byte
/// payload column per side).
/// The header: Carry applies to inner joins on one 4- or 8-byte key column with at most one 4- or 8-byte
/// payload column per side.
inline bool carry_applies(const std::vector<ExpectedColumn>& cols, JoinKind how, const std::vector<DType>& key_types) {
  if (how != JoinKind::Inner) return false;
  if (key_types.size() != 1 || (element_bytes(key_types[0]) != 4 && element_bytes(key_types[0]) != 8)) return false;
  int left = 0, right = 0;
  for (const auto& c : cols) {
    if (c.source != ExpectedColumn::Source::Left && c.source != ExpectedColumn::Source::Right) continue;
    if (element_bytes(c.type) != 4 && element_bytes(c.type) != 8) return false;
    (c.source == ExpectedColumn::Source::Left ? left : right) += 1;
  }
  return left <= 1 && right <= 1;
}

/// How strictly TableJoinResult::materialization is checked where Carry was asked and applies.
enum class CarryCheck : std::uint8_t {
  LateOrCarried,  ///< the sweeps: the rows are what they check
  Carried,        ///< the materialization tests: the header says Carry is used where it applies
};

/// Checks a result against the reference for `in` and `o`.
inline ::testing::AssertionResult matches_reference(const TableInput& in, const TableJoinOptions& o,
                                                    const TableJoinResult& res,
                                                    CarryCheck carry_check = CarryCheck::LateOrCarried) {
  const TableView lv = in.left.view(), rv = in.right.view();
  const std::vector<RowPair> expected = reference_rows(lv, rv, in.left_on, in.right_on, o.how);
  std::vector<int> expected_segment;
  for (const auto& p : expected) expected_segment.push_back(segment_of(p));

  if (res.count != expected.size())
    return ::testing::AssertionFailure() << "count " << res.count << ", the reference " << expected.size();
  const auto n = static_cast<std::int64_t>(expected.size());
  // The header: pairs in key order from the CPU path and the co-partitioned flow, in no particular
  // order from the paper flow (JoinResult::strategy says which ran; Paper for the CPU path too), in hash
  // order for keys over 8 bytes.
  const Order order = o.may_reorder_inputs ? Order::Any
                      : (o.join.gpus == 0 || res.join.strategy == JoinStrategy::CoPartitioned) && !hashed_key(in)
                          ? Order::KeyOrderedPairs
                          : Order::AnyPairOrder;

  if (o.output == TableOutput::GatherMaps) {
    if (res.left_rows.type() != DType::Int64) return ::testing::AssertionFailure() << "left_rows is not int64";
    if (res.left_rows.size() != n)
      return ::testing::AssertionFailure() << "left_rows has " << res.left_rows.size() << " rows, count is " << n;
    const bool two_maps = !is_semi_or_anti(o.how);
    if (two_maps && res.right_rows.type() != DType::Int64)
      return ::testing::AssertionFailure() << "right_rows is not int64";
    if (res.right_rows.size() != (two_maps ? n : 0))
      return ::testing::AssertionFailure() << "right_rows has " << res.right_rows.size() << " rows, expected "
                                           << (two_maps ? n : 0) << " (semi and anti joins return left_rows only)";
    std::vector<RowPair> actual;
    std::vector<int> actual_segment;
    for (std::int64_t i = 0; i < n; ++i) {
      const RowPair p{res.left_rows.as<std::int64_t>()[i], two_maps ? res.right_rows.as<std::int64_t>()[i] : -1};
      const bool left_ok = p.left >= (o.how == JoinKind::RightOuter || o.how == JoinKind::FullOuter ? -1 : 0) &&
                           p.left < in.left.rows();
      const bool right_ok = two_maps ? (p.right >= (o.how == JoinKind::LeftOuter || o.how == JoinKind::FullOuter ? -1 : 0) &&
                                        p.right < in.right.rows())
                                     : true;
      if (!left_ok || !right_ok || (p.left < 0 && p.right < 0))
        return ::testing::AssertionFailure() << "output row " << i << " has row indices (" << p.left << ", " << p.right
                                             << ") out of range (left " << in.left.rows() << " rows, right "
                                             << in.right.rows() << ")";
      actual.push_back(p);
      actual_segment.push_back(segment_of(p));
    }
    const auto key_of = [&](std::size_t i) { return key_tuple(lv, in.left_on, actual[i].left); };
    const auto show = [](const RowPair& p) { return "(" + std::to_string(p.left) + ", " + std::to_string(p.right) + ")"; };
    return same_rows_in_documented_order(actual, actual_segment, expected, expected_segment, key_of, show, order);
  }

  if (o.output == TableOutput::Columns) {
    const auto cols = expected_columns(in, o);
    std::ostringstream names;
    for (const auto& c : res.columns) names << " " << c.name;
    if (res.columns.size() != cols.size())
      return ::testing::AssertionFailure() << "columns:" << names.str() << "; expected " << cols.size() << " columns";
    for (std::size_t c = 0; c < cols.size(); ++c) {
      const auto& got = res.columns[c];
      if (got.name != cols[c].name)
        return ::testing::AssertionFailure() << "column " << c << " is " << got.name << ", expected " << cols[c].name
                                             << " (columns:" << names.str() << ")";
      if (got.column.type() != cols[c].type)
        return ::testing::AssertionFailure() << "column " << got.name << " is " << type_label(got.column.type())
                                             << ", expected " << type_label(cols[c].type);
      if (got.column.size() != n)
        return ::testing::AssertionFailure() << "column " << got.name << " has " << got.column.size()
                                             << " rows, count is " << n;
    }
    std::vector<DType> key_types;
    for (const auto& k : o.left_on) key_types.push_back(lv.find(k)->type);
    if (o.materialization == Materialization::Late || !carry_applies(cols, o.how, key_types)) {
      if (res.materialization != "late")
        return ::testing::AssertionFailure() << "materialization \"" << res.materialization << "\", expected \"late\"";
    } else if (o.materialization == Materialization::Carry && carry_check == CarryCheck::Carried) {
      if (res.materialization != "carried")
        return ::testing::AssertionFailure() << "materialization \"" << res.materialization
                                             << "\", expected \"carried\" (Carry asked, and it applies)";
    } else if (res.materialization != "late" && res.materialization != "carried") {
      return ::testing::AssertionFailure() << "materialization \"" << res.materialization << "\"";
    }
    if (res.materialization == "late")
      for (const char* phase : {"table.prepare", "table.rows", "table.gather"})
        if (std::none_of(res.join.phases.begin(), res.join.phases.end(),
                         [&](const PhaseStat& p) { return p.name == phase; }))
          return ::testing::AssertionFailure() << "late materialization without the phase " << phase;
    // Rows as byte strings; the segment from the validity columns.
    std::vector<std::string> actual, expected_rows;
    std::vector<int> actual_segment;
    for (std::int64_t i = 0; i < n; ++i) {
      std::string row;
      bool r_valid = true, s_valid = true;
      for (std::size_t c = 0; c < cols.size(); ++c) {
        const std::size_t w = element_bytes(cols[c].type);
        const char* p = static_cast<const char*>(res.columns[c].column.data()) + i * static_cast<std::int64_t>(w);
        row.append(p, w);
        if (cols[c].source == ExpectedColumn::Source::LeftValid) r_valid = *p != 0;
        if (cols[c].source == ExpectedColumn::Source::RightValid) s_valid = *p != 0;
      }
      actual.push_back(std::move(row));
      actual_segment.push_back(is_semi_or_anti(o.how) ? 1 : segment_of({r_valid ? 0 : -1, s_valid ? 0 : -1}));
    }
    for (const auto& p : expected) expected_rows.push_back(expected_row_bytes(in, cols, p));
    const auto key_of = [&](std::size_t i) {
      KeyTuple k;
      for (std::size_t c = 0; c < cols.size(); ++c)
        if (cols[c].source == ExpectedColumn::Source::Key) k.push_back(integer_at(res.columns[c].column.view(), static_cast<std::int64_t>(i)));
      return k;
    };
    std::string layout;
    for (const auto& c : cols) layout += " " + c.name + ":" + std::to_string(element_bytes(c.type));
    const auto show = [&layout](const std::string& row) { return hex(row) + " (bytes of" + layout + ")"; };
    return same_rows_in_documented_order(actual, actual_segment, expected_rows, expected_segment, key_of, show, order);
  }
  return ::testing::AssertionSuccess();
}

/// join_tables on `engine` when given, else the plain overload (which makes its own for GPUs).
inline TableJoinResult call_join_tables(Engine* engine, const TableView& left, const TableView& right,
                                        const TableJoinOptions& o) {
  return engine ? join_tables(*engine, left, right, o) : join_tables(left, right, o);
}

/// Runs join_tables on `in` with `o`, checks the result against the reference and that the inputs are
/// unchanged; returns false (having reported a failure that replays the case) when anything is off. The
/// result goes to `result` where given (for checks of the caller's own).
inline bool run_and_check(const TableInput& in, const TableJoinOptions& o, const std::string& context = {},
                          CarryCheck carry_check = CarryCheck::LateOrCarried, Engine* engine = nullptr,
                          TableJoinResult* result = nullptr) {
  std::vector<std::vector<unsigned char>> before;
  for (const auto* t : {&in.left, &in.right})
    for (const auto& c : t->columns) before.push_back(c.bytes);
  TableJoinResult res;
  try {
    res = call_join_tables(engine, in.left.view(), in.right.view(), o);
  } catch (const std::exception& e) {
    ADD_FAILURE() << context << "join_tables threw: " << e.what() << "\n" << describe(in, o);
    return false;
  }
  std::size_t at = 0;
  for (const auto* t : {&in.left, &in.right})
    for (const auto& c : t->columns)
      if (c.bytes != before[at++]) {
        ADD_FAILURE() << context << "input column " << c.name << " was modified\n" << describe(in, o);
        return false;
      }
  const auto ok = matches_reference(in, o, res, carry_check);
  if (!ok) ADD_FAILURE() << context << ok.message() << "\n" << describe(in, o);
  if (result) *result = std::move(res);
  return static_cast<bool>(ok);
}

/// The rows of a table as byte strings (every column), sorted: equal for two tables whose rows are the
/// same up to order.
inline std::vector<std::string> sorted_rows(const OwnedTable& t) {
  std::vector<std::string> rows(static_cast<std::size_t>(t.rows()));
  for (const auto& c : t.columns)
    for (std::int64_t i = 0; i < t.rows(); ++i)
      rows[static_cast<std::size_t>(i)].append(reinterpret_cast<const char*>(c.at(i)), element_bytes(c.type));
  std::sort(rows.begin(), rows.end());
  return rows;
}

/// TableJoinOptions::may_reorder_inputs: join_tables may reorder the tables in place, every column of a
/// table alike. The result (a count or columns: gather maps would index tables that moved) must be the
/// reference's rows on the original tables, in any order, and each table afterwards a row permutation
/// of the original.
inline bool run_and_check_reordering(TableInput in, TableJoinOptions o, const std::string& context = {},
                                     Engine* engine = nullptr) {
  o.may_reorder_inputs = true;
  const TableInput original = in;
  TableJoinResult res;
  try {
    res = call_join_tables(engine, in.left.view(), in.right.view(), o);
  } catch (const std::exception& e) {
    ADD_FAILURE() << context << "join_tables threw: " << e.what() << "\n" << describe(original, o);
    return false;
  }
  for (const auto& [side, before, after] : {std::tuple{"left", &original.left, &in.left},
                                            std::tuple{"right", &original.right, &in.right}})
    if (sorted_rows(*before) != sorted_rows(*after)) {
      ADD_FAILURE() << context << "may_reorder_inputs: the " << side
                    << " table's rows did not stay whole (not a row permutation of the original)\n"
                    << describe(original, o);
      return false;
    }
  const auto ok = matches_reference(original, o, res);
  if (!ok) ADD_FAILURE() << context << "may_reorder_inputs: " << ok.message() << "\n" << describe(original, o);
  return static_cast<bool>(ok);
}

/// Every kind of `kinds` x output form of `outputs` on `in` (`base` for the rest, the tables' key columns,
/// every payload column): the number of joins that disagreed with the reference (each reported).
inline int check_kinds_and_outputs(const TableInput& in, const TableJoinOptions& base, std::initializer_list<JoinKind> kinds,
                                   std::initializer_list<TableOutput> outputs, const std::string& context = {},
                                   Engine* engine = nullptr) {
  int failures = 0;
  for_each_kind_and_output(in, base, kinds, outputs, [&](const TableJoinOptions& o) {
    if (!run_and_check(in, o, context, CarryCheck::LateOrCarried, engine)) ++failures;
  });
  return failures;
}

/// Runs one join of `in` (kind, output form, materialization; `base` for the rest) with a random choice
/// of payload columns, and random values in JoinOptions' `output` and `payloads`, which join_tables
/// ignores. Returns whether it agreed with the reference.
inline bool check_one(const TableInput& in, const TableJoinOptions& base, JoinKind kind, TableOutput output,
                      Materialization m, Rng& rng, const std::string& context = {}, Engine* engine = nullptr) {
  TableJoinOptions o = base;
  o.left_on = in.left_on;
  o.right_on = in.right_on;
  o.how = kind;
  o.output = output;
  o.materialization = m;
  o.left_columns = random_column_choice(in.left, in.left_on, rng);
  o.right_columns = random_column_choice(in.right, in.right_on, rng);
  constexpr OutputMode modes[] = {OutputMode::Count, OutputMode::Ranges, OutputMode::Materialize};
  constexpr PayloadFlow flows[] = {PayloadFlow::Auto, PayloadFlow::Carry, PayloadFlow::Late};
  o.join.output = modes[uniform(rng, 0, 2)];
  o.join.payloads = flows[uniform(rng, 0, 2)];
  return run_and_check(in, o, context, CarryCheck::LateOrCarried, engine);
}

/// Every kind x output form (Columns under every materialization) on one input. Returns the number of
/// failed joins.
inline int check_every_kind_and_form(const TableInput& in, const TableJoinOptions& base, Rng& rng,
                                     const std::string& context = {}, Engine* engine = nullptr) {
  int failures = 0;
  // Sanitize: one combination in three, from an offset one further at every call, so that any three
  // inputs checked one after the other still run every kind and form between them (racecheck spent ~50 s
  // on each GpuWideKeyJoins.AdversarialInputs case, nine inputs of ~35 joins, in s25).
  static std::atomic<std::size_t> calls{0};
  std::size_t turn = calls++;
  for (const JoinKind kind : kAllKinds)
    for (const TableOutput output : kAllOutputs)
      for (const Materialization m : kAllMaterializations) {
        if (output != TableOutput::Columns && m != Materialization::Auto) continue;
        if (sanitize_skips(turn++, 3)) continue;
        const Materialization used = output == TableOutput::Columns ? m : kAllMaterializations[uniform(rng, 0, 2)];
        if (!check_one(in, base, kind, output, used, rng, context, engine)) ++failures;
      }
  return failures;
}

}  // namespace mgjoin::test
