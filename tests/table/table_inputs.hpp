#pragma once
// The join_tables suites' inputs: key specs (single columns and composites), random tables of each
// shape (random, no match, all match, duplicates, empty sides, one row, extremes, sorted, reverse) with
// payload columns of every type, and random choices of output columns.
#include <mgjoin/table.hpp>
#include <mgjoin/types.hpp>

#include "common/reference_join.hpp"
#include "table/table_names.hpp"
#include "table/test_tables.hpp"

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <optional>
#include <ostream>
#include <random>
#include <set>
#include <string>
#include <vector>

namespace mgjoin::test {

/// The key column types of a test (one column, or the components of a composite key).
struct KeySpec {
  std::string label;
  std::vector<DType> types;
  friend void PrintTo(const KeySpec& k, std::ostream* os) { *os << k.label; }
};

inline std::vector<KeySpec> single_key_specs() {
  return {{"int32", {DType::Int32}},   {"uint32", {DType::UInt32}}, {"int64", {DType::Int64}},
          {"uint64", {DType::UInt64}}, {"int8", {DType::Int8}},     {"uint8", {DType::UInt8}},
          {"int16", {DType::Int16}},   {"uint16", {DType::UInt16}}};
}
inline std::vector<KeySpec> composite_key_specs() {
  return {{"int32_int32", {DType::Int32, DType::Int32}},
          {"uint16_int8_int32", {DType::UInt16, DType::Int8, DType::Int32}},
          {"int8_uint8", {DType::Int8, DType::UInt8}},
          {"int16_uint32_int8", {DType::Int16, DType::UInt32, DType::Int8}},
          {"uint32_int16", {DType::UInt32, DType::Int16}},
          {"int16_int16", {DType::Int16, DType::Int16}},
          {"eight_int8", std::vector<DType>(8, DType::Int8)},
          {"uint8_uint16_uint8_int32", {DType::UInt8, DType::UInt16, DType::UInt8, DType::Int32}}};
}

enum class Shape : std::uint8_t {
  Random,         ///< keys shared in part: some match, some are one side's only; duplicates
  NoMatch,        ///< no key of one side is a key of the other
  AllMatch,       ///< every row of both sides has the same key (m:n, every pair matches)
  Duplicates,     ///< few keys, many rows each, on both sides
  EmptyLeft,
  EmptyRight,
  BothEmpty,
  OneRowMatch,    ///< one row each, same key
  OneRowNoMatch,  ///< one row each, different keys
  Extremes,       ///< keys made of each type's min, min+1, -1, 0, 1, max-1, max
  Sorted,         ///< Random, both tables sorted by key
  Reverse,        ///< Random, both tables in descending key order
};

inline const char* shape_label(Shape s) {
  switch (s) {
    case Shape::Random: return "Random";
    case Shape::NoMatch: return "NoMatch";
    case Shape::AllMatch: return "AllMatch";
    case Shape::Duplicates: return "Duplicates";
    case Shape::EmptyLeft: return "EmptyLeft";
    case Shape::EmptyRight: return "EmptyRight";
    case Shape::BothEmpty: return "BothEmpty";
    case Shape::OneRowMatch: return "OneRowMatch";
    case Shape::OneRowNoMatch: return "OneRowNoMatch";
    case Shape::Extremes: return "Extremes";
    case Shape::Sorted: return "Sorted";
    case Shape::Reverse: return "Reverse";
  }
  return "?";
}
inline constexpr Shape kAllShapes[] = {Shape::Random,      Shape::NoMatch,       Shape::AllMatch,  Shape::Duplicates,
                                       Shape::EmptyLeft,   Shape::EmptyRight,    Shape::BothEmpty, Shape::OneRowMatch,
                                       Shape::OneRowNoMatch, Shape::Extremes,    Shape::Sorted,    Shape::Reverse};

using Rng = std::mt19937_64;

inline std::int64_t uniform(Rng& rng, std::int64_t lo, std::int64_t hi) {  // [lo, hi]
  return std::uniform_int_distribution<std::int64_t>(lo, hi)(rng);
}
inline bool coin(Rng& rng, double p = 0.5) { return std::bernoulli_distribution(p)(rng); }

inline std::vector<Int128> extreme_values(DType t) {
  std::vector<Int128> v{type_min(t), type_min(t) + 1, 0, 1, type_max(t) - 1, type_max(t)};
  if (is_signed_type(t)) v.push_back(-1);
  return v;
}

/// A value of an integer type: uniform over the whole type, sometimes an extreme or a small number.
inline Int128 random_integer(DType t, Rng& rng) {
  const int pick = static_cast<int>(uniform(rng, 0, 7));
  if (pick == 0) {
    const auto ex = extreme_values(t);
    return ex[static_cast<std::size_t>(uniform(rng, 0, static_cast<std::int64_t>(ex.size()) - 1))];
  }
  if (pick == 1) return std::clamp<Int128>(uniform(rng, -3, 3), type_min(t), type_max(t));
  const std::uint64_t bits = rng();
  const int width = static_cast<int>(8 * element_bytes(t));
  const std::uint64_t low = width == 64 ? bits : bits & ((std::uint64_t{1} << width) - 1);
  if (!is_signed_type(t)) return low;
  const Int128 value = low;
  return value > type_max(t) ? value - (Int128{1} << width) : value;  // two's complement
}

/// Up to `n` distinct key tuples (fewer when the key types hold fewer).
inline std::vector<KeyTuple> distinct_keys(const KeySpec& spec, std::size_t n, Rng& rng, bool extremes_only = false) {
  std::set<KeyTuple> seen;
  std::vector<KeyTuple> out;
  for (std::size_t attempts = 0; out.size() < n && attempts < 20 * n + 100; ++attempts) {
    KeyTuple k;
    for (const DType t : spec.types) {
      if (extremes_only) {
        const auto ex = extreme_values(t);
        k.push_back(ex[static_cast<std::size_t>(uniform(rng, 0, static_cast<std::int64_t>(ex.size()) - 1))]);
      } else {
        k.push_back(random_integer(t, rng));
      }
    }
    if (seen.insert(k).second) out.push_back(std::move(k));
  }
  return out;
}

/// Fills a payload column with values that tell rows apart where the type allows (bool: 0 or 1; floats:
/// exact multiples of 1/4, never NaN).
inline OwnedColumn random_payload(std::string name, DType t, std::int64_t rows, Rng& rng) {
  OwnedColumn c = zero_column(std::move(name), t, rows);
  for (std::int64_t i = 0; i < rows; ++i) {
    if (t == DType::Bool) {
      c.at(i)[0] = coin(rng) ? 1 : 0;
    } else if (t == DType::Float32) {
      const float v = static_cast<float>(uniform(rng, -4000000, 4000000)) / 4.0f;
      std::memcpy(c.at(i), &v, 4);
    } else if (t == DType::Float64) {
      const double v = static_cast<double>(uniform(rng, -(std::int64_t{1} << 50), std::int64_t{1} << 50)) / 4.0;
      std::memcpy(c.at(i), &v, 8);
    } else {
      set_integer(c, i, random_integer(t, rng));
    }
  }
  return c;
}

/// Which payload columns each table gets.
inline std::vector<DType> random_payload_types(Rng& rng) {
  std::vector<DType> types;
  switch (uniform(rng, 0, 3)) {
    case 0: break;  // key-only table
    case 1: {       // one 4- or 8-byte column: what a carried materialization takes
      constexpr DType wide[] = {DType::Int32, DType::UInt32, DType::Int64, DType::UInt64, DType::Float32, DType::Float64};
      types.push_back(wide[uniform(rng, 0, 5)]);
      break;
    }
    default:
      for (std::int64_t n = uniform(rng, 1, 4); n > 0; --n) types.push_back(kAllTypes[uniform(rng, 0, 10)]);
  }
  return types;
}

/// A table of `keys` (one tuple per row) with key columns `key_names` placed among payload columns of
/// `payload_types` at random positions.
inline OwnedTable build_table(const KeySpec& spec, const std::vector<std::string>& key_names,
                              const std::vector<KeyTuple>& keys, const std::vector<DType>& payload_types,
                              const std::string& payload_prefix, Rng& rng) {
  const auto rows = static_cast<std::int64_t>(keys.size());
  std::vector<OwnedColumn> keys_cols, payload_cols;
  for (std::size_t c = 0; c < spec.types.size(); ++c) {
    OwnedColumn col = zero_column(key_names[c], spec.types[c], rows);
    for (std::int64_t i = 0; i < rows; ++i) set_integer(col, i, keys[static_cast<std::size_t>(i)][c]);
    keys_cols.push_back(std::move(col));
  }
  for (std::size_t p = 0; p < payload_types.size(); ++p)
    payload_cols.push_back(random_payload(payload_prefix + std::to_string(p), payload_types[p], rows, rng));
  // Key columns keep their relative order; each goes in at a random position among the payloads.
  OwnedTable t;
  t.columns = std::move(payload_cols);
  std::int64_t at = 0;
  for (auto& k : keys_cols) {
    at = uniform(rng, at, static_cast<std::int64_t>(t.columns.size()));
    t.columns.insert(t.columns.begin() + at, std::move(k));
    ++at;
  }
  return t;
}

/// Rows of a random shape, `scale` times the CPU suite's sizes (at least one row where it has rows).
struct ShapeSizes {
  std::int64_t min_rows = 1;    ///< Random, NoMatch, Extremes, Sorted, Reverse: rows per side in
  std::int64_t max_rows = 300;  ///< [min_rows, max_rows]
  std::int64_t max_all_match = 60;
  std::int64_t max_duplicates = 200;
};

inline TableInput make_input(const KeySpec& spec, Shape shape, Rng& rng, const ShapeSizes& sizes = {}) {
  TableInput in;
  in.shape = shape_label(shape);
  const bool same_names = coin(rng);
  for (std::size_t c = 0; c < spec.types.size(); ++c) {
    in.left_on.push_back((same_names ? "k" : "lk") + std::to_string(c));
    in.right_on.push_back((same_names ? "k" : "rk") + std::to_string(c));
  }
  std::int64_t n_left = uniform(rng, sizes.min_rows, sizes.max_rows), n_right = uniform(rng, sizes.min_rows, sizes.max_rows);
  std::vector<KeyTuple> left_pool, right_pool;  // each row draws its key from its side's pool
  switch (shape) {
    case Shape::Random:
    case Shape::Sorted:
    case Shape::Reverse:
    case Shape::Extremes: {
      const auto pool = distinct_keys(spec, static_cast<std::size_t>(std::max(n_left, n_right)), rng,
                                      shape == Shape::Extremes);
      // Left draws from the first two thirds, right from the last two thirds: the middle third matches.
      const std::size_t third = pool.size() / 3;
      left_pool.assign(pool.begin(), pool.end() - static_cast<std::ptrdiff_t>(third));
      right_pool.assign(pool.begin() + static_cast<std::ptrdiff_t>(third), pool.end());
      break;
    }
    case Shape::NoMatch: {
      auto pool = distinct_keys(spec, static_cast<std::size_t>(n_left + n_right), rng);
      const std::size_t half = std::max<std::size_t>(1, pool.size() / 2);
      left_pool.assign(pool.begin(), pool.begin() + static_cast<std::ptrdiff_t>(half));
      right_pool.assign(pool.begin() + static_cast<std::ptrdiff_t>(half), pool.end());
      break;
    }
    case Shape::AllMatch: {
      n_left = uniform(rng, 1, sizes.max_all_match);
      n_right = uniform(rng, 1, sizes.max_all_match);
      left_pool = right_pool = distinct_keys(spec, 1, rng);
      break;
    }
    case Shape::Duplicates: {
      n_left = uniform(rng, sizes.max_duplicates / 4, sizes.max_duplicates);
      n_right = uniform(rng, sizes.max_duplicates / 4, sizes.max_duplicates);
      const auto pool = distinct_keys(spec, 6, rng);
      left_pool.assign(pool.begin(), pool.begin() + static_cast<std::ptrdiff_t>(std::min<std::size_t>(4, pool.size())));
      right_pool.assign(pool.begin() + static_cast<std::ptrdiff_t>(std::min<std::size_t>(2, pool.size() - 1)), pool.end());
      break;
    }
    case Shape::EmptyLeft:
    case Shape::EmptyRight:
    case Shape::BothEmpty:
      left_pool = right_pool = distinct_keys(spec, static_cast<std::size_t>(std::max(n_left, n_right)), rng);
      if (shape != Shape::EmptyRight) n_left = 0;
      if (shape != Shape::EmptyLeft) n_right = 0;
      break;
    case Shape::OneRowMatch:
    case Shape::OneRowNoMatch: {
      n_left = n_right = 1;
      const auto pool = distinct_keys(spec, 2, rng);
      left_pool = {pool[0]};
      right_pool = {shape == Shape::OneRowMatch ? pool[0] : pool[1]};
      break;
    }
  }
  const auto draw = [&rng](const std::vector<KeyTuple>& pool, std::int64_t n) {
    std::vector<KeyTuple> keys;
    for (std::int64_t i = 0; i < n; ++i)
      keys.push_back(pool[static_cast<std::size_t>(uniform(rng, 0, static_cast<std::int64_t>(pool.size()) - 1))]);
    return keys;
  };
  auto left_keys = draw(left_pool, n_left), right_keys = draw(right_pool, n_right);
  if (shape == Shape::Sorted || shape == Shape::Reverse) {
    for (auto* keys : {&left_keys, &right_keys}) {
      std::sort(keys->begin(), keys->end());
      if (shape == Shape::Reverse) std::reverse(keys->begin(), keys->end());
    }
  }
  in.left = build_table(spec, in.left_on, left_keys, random_payload_types(rng), coin(rng) ? "p" : "a", rng);
  in.right = build_table(spec, in.right_on, right_keys, random_payload_types(rng), coin(rng) ? "p" : "b", rng);
  return in;
}

/// f(o) for every kind of `kinds` x output form of `outputs`: `o` is `base` with the tables' key columns,
/// the kind and the form.
template <class Kinds, class Outputs, class F>
void for_each_kind_and_output(const TableInput& in, const TableJoinOptions& base, const Kinds& kinds,
                              const Outputs& outputs, F&& f) {
  for (const JoinKind kind : kinds)
    for (const TableOutput output : outputs) {
      TableJoinOptions o = base;
      o.left_on = in.left_on;
      o.right_on = in.right_on;
      o.how = kind;
      o.output = output;
      f(o);
    }
}

/// nullopt (every non-key column) or a random subset of the non-key columns in random order.
inline std::optional<std::vector<std::string>> random_column_choice(const OwnedTable& t,
                                                                   const std::vector<std::string>& keys, Rng& rng) {
  if (coin(rng)) return std::nullopt;
  auto names = t.names_except(keys);
  std::shuffle(names.begin(), names.end(), rng);
  names.resize(static_cast<std::size_t>(uniform(rng, 0, static_cast<std::int64_t>(names.size()))));
  return names;
}

}  // namespace mgjoin::test
