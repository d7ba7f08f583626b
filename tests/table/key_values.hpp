#pragma once
// Joins of keys compared by value (TableJoinOptions::left_on: integers of any width and signedness on
// either side, float32 and float64, bool): the reference, computed the obvious way, the generators of
// such keys, and the check of join_tables' results against the reference. The reference reads each key
// value as an exact number — an integer as Int128, a float as a double (a float32 widens exactly) with
// -0.0 as 0.0 and every NaN as one value equal to itself (DuckDB's semantics), a bool as 0 or 1 — and
// joins by the suites' reference (reference_rows_by). Nothing here calls the engine.
#include <mgjoin/engine.hpp>
#include <mgjoin/error.hpp>
#include <mgjoin/table.hpp>

#include "common/reference_join.hpp"
#include "table/table_inputs.hpp"
#include "table/table_names.hpp"
#include "table/test_tables.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <optional>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace mgjoin::test {

/// One key component's value, exactly.
struct KeyValue {
  int kind = 0;  ///< 0: an integer or bool, 1: a float, 2: NaN
  Int128 integer = 0;
  double real = 0;
  friend auto operator<=>(const KeyValue&, const KeyValue&) = default;  // never a NaN in `real`
  friend bool operator==(const KeyValue&, const KeyValue&) = default;
};

inline std::string value_text(const KeyValue& v) {
  if (v.kind == 2) return "NaN";
  return v.kind == 1 ? std::to_string(v.real) : int128_text(v.integer);
}

/// Element `row` of a column of any type, as its value.
inline KeyValue key_value_at(const ColumnView& c, std::int64_t row) {
  const auto* p = static_cast<const unsigned char*>(c.data) + row * static_cast<std::int64_t>(element_bytes(c.type));
  KeyValue v;
  if (c.type == DType::Bool) {
    v.integer = *p != 0 ? 1 : 0;
    return v;
  }
  if (c.type == DType::Float32 || c.type == DType::Float64) {
    double d;
    if (c.type == DType::Float32) {
      float f;
      std::memcpy(&f, p, 4);
      d = f;
    } else {
      std::memcpy(&d, p, 8);
    }
    v.kind = std::isnan(d) ? 2 : 1;
    v.real = std::isnan(d) || d == 0 ? 0.0 : d;
    return v;
  }
  v.integer = integer_at(c, row);
  return v;
}

using ValueTuple = std::vector<KeyValue>;

inline ValueTuple value_tuple(const TableView& t, const std::vector<std::string>& on, std::int64_t row) {
  ValueTuple k;
  for (const auto& name : on) k.push_back(key_value_at(column_named(t, name), row));
  return k;
}

/// The rows of `kind` when keys compare by value (reference_rows_by's order).
inline std::vector<RowPair> reference_by_value(const TableView& left, const TableView& right,
                                               const std::vector<std::string>& left_on,
                                               const std::vector<std::string>& right_on, JoinKind kind) {
  return reference_rows_by<ValueTuple>(left, right, left_on, right_on, kind, value_tuple);
}

// ------------------------------------------------------------------------------------ key values

inline bool is_float_type(DType t) { return t == DType::Float32 || t == DType::Float64; }

/// The integers tests draw keys from: small numbers (most rows, so that many match) and the edges where
/// widths and signedness part: each type's extremes, and the values next to them.
inline std::vector<Int128> integer_pool() {
  std::vector<Int128> pool;
  for (int v = -3; v <= 3; ++v) pool.push_back(v);
  for (const DType t : kIntegerTypes)
    for (const Int128 v : {type_min(t), type_max(t), type_max(t) + 1, type_min(t) - 1}) pool.push_back(v);
  return pool;
}

/// The doubles tests draw float keys from: zeros of both signs, NaNs of several bit patterns (quiet,
/// negative, with a payload), infinities, subnormals, values a float32 rounds (0.1) and halves.
inline std::vector<double> float_pool(DType t) {
  const auto nan_bits = [](std::uint64_t bits) {
    double d;
    std::memcpy(&d, &bits, 8);
    return d;
  };
  std::vector<double> pool{0.0, -0.0, std::numeric_limits<double>::quiet_NaN(), -std::numeric_limits<double>::quiet_NaN(),
                           nan_bits(0x7ff0000000000001ull), std::numeric_limits<double>::infinity(),
                           -std::numeric_limits<double>::infinity(), 0.5, -0.5, 1.5, 0.1, -2.25,
                           static_cast<double>(std::numeric_limits<float>::denorm_min()),
                           static_cast<double>(std::numeric_limits<float>::max())};
  if (t == DType::Float64) {
    pool.push_back(std::numeric_limits<double>::denorm_min());
    pool.push_back(1e300);
  }
  return pool;
}

/// How a test's key values are drawn: numbers in [-spread, spread] (quarters of them for floats), and a
/// share of the rows from the pools above. The CPU tests' few hundred rows take the defaults (many
/// duplicates, so that every kind has matches); tables of tens of thousands of rows widen the spread
/// and thin the pools, or the joins' outputs grow with the square of the rows (a quick-tier GPU test
/// ran its first of 324 joins for over two minutes).
struct KeyDraw {
  std::int64_t spread = 20;
  double pool_share = 0.25;
};

/// A key column of `rows` values of `type`: mostly numbers near zero, a share from the pools above (the
/// values the type holds).
inline OwnedColumn random_key_column(std::string name, DType type, std::int64_t rows, Rng& rng, KeyDraw draw = {}) {
  OwnedColumn c = zero_column(std::move(name), type, rows);
  if (type == DType::Bool) {
    for (std::int64_t i = 0; i < rows; ++i) c.at(i)[0] = coin(rng) ? 1 : 0;
    return c;
  }
  if (is_float_type(type)) {
    const std::vector<double> pool = float_pool(type);
    for (std::int64_t i = 0; i < rows; ++i) {
      const double d = coin(rng, draw.pool_share)
                           ? pool[static_cast<std::size_t>(uniform(rng, 0, static_cast<std::int64_t>(pool.size()) - 1))]
                           : static_cast<double>(uniform(rng, -2 * draw.spread, 2 * draw.spread)) / 4;
      if (type == DType::Float32) {
        const float f = static_cast<float>(d);  // every pool value is in float's range
        std::memcpy(c.at(i), &f, 4);
      } else {
        std::memcpy(c.at(i), &d, 8);
      }
    }
    return c;
  }
  std::vector<Int128> pool;
  for (const Int128 v : integer_pool())
    if (v >= type_min(type) && v <= type_max(type)) pool.push_back(v);
  for (std::int64_t i = 0; i < rows; ++i)
    set_integer(c, i, coin(rng, draw.pool_share)
                          ? pool[static_cast<std::size_t>(uniform(rng, 0, static_cast<std::int64_t>(pool.size()) - 1))]
                          : std::clamp<Int128>(uniform(rng, -draw.spread, draw.spread), type_min(type), type_max(type)));
  return c;
}

/// The left and right key types of a test.
struct KeyTypePair {
  std::vector<DType> left, right;
  std::string label() const {
    std::string s;
    for (std::size_t i = 0; i < left.size(); ++i) {
      if (i) s += "_";
      s += type_label(left[i]);
      s += "_vs_";
      s += type_label(right[i]);
    }
    return s;
  }
};

/// Gives each table its row numbers as an int64 column ("lrow", "rrow"), so that the joined columns say
/// which rows they came from (result_pairs).
inline void add_row_numbers(TableInput& in) {
  for (auto [table, name] : {std::pair{&in.left, "lrow"}, std::pair{&in.right, "rrow"}}) {
    std::vector<std::int64_t> rows(static_cast<std::size_t>(table->rows()));
    for (std::size_t i = 0; i < rows.size(); ++i) rows[i] = static_cast<std::int64_t>(i);
    table->columns.push_back(column_of<std::int64_t>(name, DType::Int64, rows));
  }
}

/// Two tables of keys of `types` (columns "l0", "l1", ... and "r0", ...), each with its row number as an
/// int64 payload ("lrow", "rrow"), so that the joined columns say which rows they came from.
inline TableInput tables_by_value(const KeyTypePair& types, std::int64_t left_rows, std::int64_t right_rows, Rng& rng,
                                  KeyDraw draw = {}) {
  TableInput in;
  in.shape = types.label() + " (" + std::to_string(left_rows) + " x " + std::to_string(right_rows) + " rows)";
  for (std::size_t i = 0; i < types.left.size(); ++i) {
    in.left_on.push_back(std::string(1, 'l').append(std::to_string(i)));  // not "l" + ...: GCC 12 warns
    in.right_on.push_back(std::string(1, 'r').append(std::to_string(i)));
    in.left.columns.push_back(random_key_column(in.left_on.back(), types.left[i], left_rows, rng, draw));
    in.right.columns.push_back(random_key_column(in.right_on.back(), types.right[i], right_rows, rng, draw));
  }
  add_row_numbers(in);
  return in;
}

/// The output key column type the header documents for a left key of type `l` and a right one of `r`:
/// the one type that holds both, or (uint64 against a signed type) the left one but for right joins.
inline DType expected_key_type(DType l, DType r, JoinKind kind) {
  if (l == r) return l;
  if (is_float_type(l)) return DType::Float64;
  const bool ls = is_signed_type(l), rs = is_signed_type(r);
  const std::size_t wl = element_bytes(l), wr = element_bytes(r);
  const auto integer = [](std::size_t bytes, bool is_signed) {
    switch (bytes) {
      case 1: return is_signed ? DType::Int8 : DType::UInt8;
      case 2: return is_signed ? DType::Int16 : DType::UInt16;
      case 4: return is_signed ? DType::Int32 : DType::UInt32;
      default: return is_signed ? DType::Int64 : DType::UInt64;
    }
  };
  if (ls == rs) return integer(std::max(wl, wr), ls);
  const std::size_t wu = ls ? wr : wl, ws = ls ? wl : wr;
  if (wu < ws) return integer(ws, true);
  if (wu < 8) return integer(2 * wu, true);
  return kind == JoinKind::RightOuter ? r : l;
}

// ------------------------------------------------------------------------------------- checking

inline const NamedColumn* result_column(const TableJoinResult& res, const std::string& name) {
  for (const auto& c : res.columns)
    if (c.name == name) return &c;
  return nullptr;
}

/// The result's rows as (left row, right row): from gather maps, or from the joined "r.lrow"/"s.rrow"
/// columns and their validity.
inline std::vector<RowPair> result_pairs(const TableJoinResult& res, TableOutput output, JoinKind kind) {
  std::vector<RowPair> out(static_cast<std::size_t>(res.count));
  const bool semi_or_anti = kind == JoinKind::LeftSemi || kind == JoinKind::LeftAnti;
  for (std::size_t i = 0; i < out.size(); ++i) {
    if (output == TableOutput::GatherMaps) {
      out[i].left = res.left_rows.as<std::int64_t>()[i];
      out[i].right = semi_or_anti ? -1 : res.right_rows.as<std::int64_t>()[i];
      continue;
    }
    const NamedColumn* l = result_column(res, "r.lrow");
    if (!l) throw std::logic_error("test bug: a columns result without r.lrow (add_row_numbers)");
    const NamedColumn* r = result_column(res, "s.rrow");
    const NamedColumn* lv = result_column(res, "r.valid");
    const NamedColumn* rv = result_column(res, "s.valid");
    out[i].left = lv && !lv->column.as<std::uint8_t>()[i] ? -1 : l->column.as<std::int64_t>()[i];
    out[i].right = !r || (rv && !rv->column.as<std::uint8_t>()[i]) ? -1 : r->column.as<std::int64_t>()[i];
  }
  return out;
}

inline std::vector<RowPair> sorted(std::vector<RowPair> v) {
  std::sort(v.begin(), v.end());
  return v;
}

/// Checks one result of a join of `in` under `o`: its count and rows against the reference; for columns,
/// each key column's type (expected_key_type) and every row's key value (the left row's, the right one's
/// where the left is missing); on the CPU path, the matching pairs in key order.
inline ::testing::AssertionResult matches_by_value(const TableInput& in, const TableJoinOptions& o,
                                                   const TableJoinResult& res) {
  const TableView left = in.left.view(), right = in.right.view();
  const std::vector<RowPair> want = reference_by_value(left, right, in.left_on, in.right_on, o.how);
  const auto fail = [&](const std::string& what) {
    return ::testing::AssertionFailure() << in.shape << ", " << kind_label(o.how) << ", " << output_label(o.output)
                                         << ": " << what;
  };
  if (res.count != want.size()) return fail("count " + std::to_string(res.count) + ", expected " + std::to_string(want.size()));
  if (o.output == TableOutput::Count) return ::testing::AssertionSuccess();
  const std::vector<RowPair> got = result_pairs(res, o.output, o.how);
  if (sorted(got) != sorted(want)) return fail("the rows differ from the reference's");
  if (o.join.gpus == 0 && !hashed_key(in))  // the CPU path: matching pairs in key order (hash order over 8 bytes)
    for (std::size_t i = 1; i < got.size(); ++i)
      if (got[i].left >= 0 && got[i].right >= 0 && got[i - 1].left >= 0 && got[i - 1].right >= 0 &&
          value_tuple(left, in.left_on, got[i].left) < value_tuple(left, in.left_on, got[i - 1].left))
        return fail("pairs out of key order at row " + std::to_string(i));
  if (o.output != TableOutput::Columns) return ::testing::AssertionSuccess();
  for (std::size_t k = 0; k < in.left_on.size(); ++k) {
    const std::string name = in.left_on.size() == 1 ? "key" : "key." + in.left_on[k];
    const NamedColumn* c = result_column(res, name);
    if (!c) return fail("no column " + name);
    const DType lt = in.left.named(in.left_on[k]).type, rt = in.right.named(in.right_on[k]).type;
    if (c->column.type() != expected_key_type(lt, rt, o.how))
      return fail(name + " is " + type_label(c->column.type()) + ", expected " + type_label(expected_key_type(lt, rt, o.how)));
    for (std::size_t i = 0; i < got.size(); ++i) {
      const KeyValue v = key_value_at(c->column.view(), static_cast<std::int64_t>(i));
      const KeyValue w = got[i].left >= 0 ? key_value_at(column_named(left, in.left_on[k]), got[i].left)
                                          : key_value_at(column_named(right, in.right_on[k]), got[i].right);
      if (v != w) return fail(name + " row " + std::to_string(i) + " is " + value_text(v) + ", expected " + value_text(w));
    }
  }
  return ::testing::AssertionSuccess();
}

/// Every kind x output form of a join of `in` (`base` for the rest; join_tables on `engine` when given):
/// the number of joins that disagreed with the reference (each reported).
inline int check_by_value(const TableInput& in, const TableJoinOptions& base, Engine* engine = nullptr) {
  int failures = 0;
  for_each_kind_and_output(in, base, kAllKinds, kAllOutputs, [&](const TableJoinOptions& o) {
    const JoinKind kind = o.how;
    const TableOutput output = o.output;
    bool uint64_against_signed = false;
    for (std::size_t k = 0; k < in.left_on.size(); ++k) {
      const DType lt = in.left.named(in.left_on[k]).type, rt = in.right.named(in.right_on[k]).type;
      uint64_against_signed |= (lt == DType::UInt64 && is_signed_type(rt)) || (rt == DType::UInt64 && is_signed_type(lt));
    }
    if (uint64_against_signed && kind == JoinKind::FullOuter && output == TableOutput::Columns) {
      // No output key type holds both sides: refused (the header), whatever the values.
      try {
        (void)(engine ? join_tables(*engine, in.left.view(), in.right.view(), o)
                      : join_tables(in.left.view(), in.right.view(), o));
        ADD_FAILURE() << in.shape << ": a full outer join of uint64 against a signed key output columns";
        ++failures;
      } catch (const InputError& e) {
        EXPECT_NE(std::string(e.what()).find("full outer"), std::string::npos) << e.what();
      }
      return;
    }
    const TableJoinResult res = engine ? join_tables(*engine, in.left.view(), in.right.view(), o)
                                       : join_tables(in.left.view(), in.right.view(), o);
    const auto ok = matches_by_value(in, o, res);
    if (!ok) {
      ADD_FAILURE() << ok.message();
      ++failures;
    }
  });
  return failures;
}

}  // namespace mgjoin::test
