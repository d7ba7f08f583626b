#pragma once
// The suites' reference join: what a join must return, computed the obvious way on the CPU with none of
// mgjoin's code (no sort, no merge path, no packed keys). One step serves every form: rows_by_key puts one
// side's rows in a multimap by key (hashed for integer keys or key bits, ordered for key tuples), and the
// other side looks every row up. Above it:
// - relations (key and payload columns): the matching tuples, their count, either side hashed;
// - typed key vectors (the join phase's tests): the tuples, and the (i, j) pairs that ranges must cover;
// - tables (join_tables): the row pairs of each join kind, keys read as tuples of their typed values.
#include <mgjoin/join.hpp>
#include <mgjoin/table.hpp>
#include <mgjoin/types.hpp>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <map>
#include <stdexcept>
#include <string>
#include <tuple>
#include <type_traits>
#include <unordered_map>
#include <utility>
#include <vector>

namespace mgjoin::test {

// ------------------------------------------------------------------------------- the one step

/// One side's rows by key: a hash multimap for integer keys (key bits or typed values), an ordered
/// multimap for key tuples (each key's rows then in table order). The other side looks every row up.
template <class Key>
using RowsByKey = std::conditional_t<std::is_integral_v<Key>, std::unordered_multimap<Key, std::int64_t>,
                                     std::multimap<Key, std::int64_t>>;

/// Rows 0..rows-1 by key_of(row).
template <class Key, class KeyOf>
RowsByKey<Key> rows_by_key(std::int64_t rows, KeyOf key_of) {
  RowsByKey<Key> index;
  if constexpr (std::is_integral_v<Key>) index.reserve(static_cast<std::size_t>(rows));
  for (std::int64_t j = 0; j < rows; ++j) index.emplace(key_of(j), j);
  return index;
}

// --------------------------------------------------------------------------------- relations

/// One output tuple as raw 64-bit words (key bits, R payload bits, S payload bits; 0 when absent).
using Tuple = std::tuple<std::uint64_t, std::uint64_t, std::uint64_t>;

inline std::uint64_t word_at(const void* data, std::size_t width, std::size_t i) {
  std::uint64_t w = 0;
  std::memcpy(&w, static_cast<const char*>(data) + i * width, width);
  return w;
}

/// The DType of a C++ key type.
template <class Key>
constexpr DType dtype_of() {
  if constexpr (std::is_same_v<Key, std::int32_t>) return DType::Int32;
  if constexpr (std::is_same_v<Key, std::uint32_t>) return DType::UInt32;
  if constexpr (std::is_same_v<Key, std::int64_t>) return DType::Int64;
  return DType::UInt64;
}

/// Key `i` of a column as raw bits: equal bits <=> equal keys for one key type.
inline std::uint64_t key_bits(const HostColumn& c, std::int64_t i) {
  return word_at(c.data(), dtype_size(c.type()), static_cast<std::size_t>(i));
}

/// Which relation the reference hashes; the other is looked up row by row. S by default; R where S is
/// tens of millions of rows and R small (hashing S would take most of a test's time).
enum class IndexOn : std::uint8_t { S, R };

/// Calls match(i, j) for every R row i and S row j with equal key bits.
template <class Match>
void for_each_matching_pair(const Relation& r, const Relation& s, IndexOn on, Match match) {
  const Relation& indexed = on == IndexOn::S ? s : r;
  const Relation& probing = on == IndexOn::S ? r : s;
  const auto index = rows_by_key<std::uint64_t>(indexed.size(), [&](std::int64_t j) { return key_bits(indexed.key, j); });
  for (std::int64_t i = 0; i < probing.size(); ++i) {
    const auto [begin, end] = index.equal_range(key_bits(probing.key, i));
    for (auto it = begin; it != end; ++it) on == IndexOn::S ? match(i, it->second) : match(it->second, i);
  }
}

/// Every matching (r, s) pair as (key, R payload, S payload) words (0 for an absent payload), sorted.
inline std::vector<Tuple> reference_tuples(const Relation& r, const Relation& s, IndexOn on = IndexOn::S) {
  const auto payload = [](const Relation& rel, std::int64_t i) { return rel.payload ? key_bits(*rel.payload, i) : 0; };
  std::vector<Tuple> out;
  for_each_matching_pair(r, s, on, [&](std::int64_t i, std::int64_t j) {
    out.emplace_back(key_bits(r.key, i), payload(r, i), payload(s, j));
  });
  std::sort(out.begin(), out.end());
  return out;
}

/// How many (r, s) pairs match: the count of reference_tuples without building the tuples (a count per
/// key of the indexed side: a hot key costs one lookup a row, not one step a pair).
inline std::uint64_t reference_count(const Relation& r, const Relation& s, IndexOn on = IndexOn::S) {
  const Relation& indexed = on == IndexOn::S ? s : r;
  const Relation& probing = on == IndexOn::S ? r : s;
  std::unordered_map<std::uint64_t, std::uint64_t> rows_of_key;
  rows_of_key.reserve(static_cast<std::size_t>(indexed.size()));
  for (std::int64_t j = 0; j < indexed.size(); ++j) ++rows_of_key[key_bits(indexed.key, j)];
  std::uint64_t count = 0;
  for (std::int64_t i = 0; i < probing.size(); ++i)
    if (const auto it = rows_of_key.find(key_bits(probing.key, i)); it != rows_of_key.end()) count += it->second;
  return count;
}

/// What a join of R and S must return: the count, and for a materialized join the sorted tuples.
struct ReferenceResult {
  std::uint64_t count = 0;
  std::vector<Tuple> tuples;  ///< sorted; only for OutputMode::Materialize
};

inline ReferenceResult reference_result(const Relation& r, const Relation& s, OutputMode output, IndexOn on = IndexOn::S) {
  if (output != OutputMode::Materialize) return {reference_count(r, s, on), {}};
  ReferenceResult e{0, reference_tuples(r, s, on)};
  e.count = e.tuples.size();
  return e;
}

/// The materialized columns of a result as sorted tuples.
inline std::vector<Tuple> result_tuples(const HostColumn& key, const HostColumn* rp, const HostColumn* sp) {
  std::vector<Tuple> out(static_cast<std::size_t>(key.size()));
  const std::size_t kw = dtype_size(key.type());
  for (std::size_t i = 0; i < out.size(); ++i)
    out[i] = {word_at(key.data(), kw, i), rp ? word_at(rp->data(), dtype_size(rp->type()), i) : 0,
              sp ? word_at(sp->data(), dtype_size(sp->type()), i) : 0};
  std::sort(out.begin(), out.end());
  return out;
}

/// The materialized output of a join as sorted tuples (absent payload columns read as 0).
inline std::vector<Tuple> result_tuples(const JoinResult& result) {
  const auto column = [&](const HostColumn& c) { return c.size() == result.key.size() ? &c : nullptr; };
  return result_tuples(result.key, column(result.r_payload), column(result.s_payload));
}

// --------------------------------------------------------------------------- typed key vectors

/// Every (r, s) pair with equal keys, as sorted tuples.
template <class Key>
std::vector<Tuple> reference_join(const std::vector<Key>& rk, const std::vector<std::uint64_t>& rp,
                                  const std::vector<Key>& sk, const std::vector<std::uint64_t>& sp) {
  const auto s_rows = rows_by_key<Key>(static_cast<std::int64_t>(sk.size()), [&](std::int64_t j) { return sk[static_cast<std::size_t>(j)]; });
  std::vector<Tuple> out;
  for (std::size_t i = 0; i < rk.size(); ++i) {
    const auto [b, e] = s_rows.equal_range(rk[i]);
    for (auto it = b; it != e; ++it)
      out.emplace_back(word_at(&rk[i], sizeof(Key), 0), rp.empty() ? 0 : rp[i], sp.empty() ? 0 : sp[static_cast<std::size_t>(it->second)]);
  }
  std::sort(out.begin(), out.end());
  return out;
}

/// Every (i, j) with r[i] == s[j], sorted: what a set of matching ranges must cover exactly once (a
/// nested loop: the inputs of these tests are small).
template <class Key>
std::vector<std::pair<std::uint64_t, std::uint64_t>> matching_pairs(const std::vector<Key>& r, const std::vector<Key>& s) {
  std::vector<std::pair<std::uint64_t, std::uint64_t>> out;
  for (std::size_t i = 0; i < r.size(); ++i)
    for (std::size_t j = 0; j < s.size(); ++j)
      if (r[i] == s[j]) out.emplace_back(i, j);
  return out;
}

/// Expands ranges into their (i, j) pairs, sorted.
inline std::vector<std::pair<std::uint64_t, std::uint64_t>> expand(const std::vector<MatchRange>& ranges) {
  std::vector<std::pair<std::uint64_t, std::uint64_t>> out;
  for (const MatchRange& m : ranges)
    for (auto i = m.r_begin; i < m.r_end; ++i)
      for (auto j = m.s_begin; j < m.s_end; ++j) out.emplace_back(i, j);
  std::sort(out.begin(), out.end());
  return out;
}

// ------------------------------------------------------------------------------------- tables
// Keys are read as tuples of their typed values (each component widened exactly to a 128-bit integer, so
// int8 -1 and uint8 255 stay different and order as their types do), never as the packed bits the engine
// sorts. Nothing here calls the engine (not even TableView::find).

using Int128 = __int128;  // GCC and Clang: holds every value of every integer column exactly

/// One output row: left and right row indices, -1 where that side has no row.
struct RowPair {
  std::int64_t left = -1, right = -1;
  friend bool operator==(const RowPair&, const RowPair&) = default;
  friend auto operator<=>(const RowPair&, const RowPair&) = default;
};

/// A key as the tuple of its components' values.
using KeyTuple = std::vector<Int128>;

/// Bytes per element, written out here rather than taken from the library.
inline std::size_t element_bytes(DType t) {
  switch (t) {
    case DType::Int8: case DType::UInt8: case DType::Bool: return 1;
    case DType::Int16: case DType::UInt16: return 2;
    case DType::Int32: case DType::UInt32: case DType::Float32: return 4;
    case DType::Int64: case DType::UInt64: case DType::Float64: return 8;
  }
  throw std::logic_error("unknown DType");
}

/// Element `row` of an integer column as its exact value.
inline Int128 integer_at(const ColumnView& c, std::int64_t row) {
  const auto* p = static_cast<const unsigned char*>(c.data) + row * static_cast<std::int64_t>(element_bytes(c.type));
  const auto load = [p]<class T>(T) {
    T v;
    std::memcpy(&v, p, sizeof v);
    return static_cast<Int128>(v);
  };
  switch (c.type) {
    case DType::Int8: return load(std::int8_t{});
    case DType::UInt8: return load(std::uint8_t{});
    case DType::Int16: return load(std::int16_t{});
    case DType::UInt16: return load(std::uint16_t{});
    case DType::Int32: return load(std::int32_t{});
    case DType::UInt32: return load(std::uint32_t{});
    case DType::Int64: return load(std::int64_t{});
    case DType::UInt64: return load(std::uint64_t{});
    default: throw std::logic_error("integer_at on a non-integer column");
  }
}

/// The column named `name` (the test's own lookup).
inline const ColumnView& column_named(const TableView& t, const std::string& name) {
  for (const auto& c : t.columns)
    if (c.name == name) return c.column;
  throw std::logic_error("test bug: no column " + name);
}

inline KeyTuple key_tuple(const TableView& t, const std::vector<std::string>& on, std::int64_t row) {
  KeyTuple key;
  key.reserve(on.size());
  for (const auto& name : on) key.push_back(integer_at(column_named(t, name), row));
  return key;
}

inline std::int64_t table_rows(const TableView& t) { return t.columns.empty() ? 0 : t.columns.front().column.size; }

/// The output rows of `kind` where row i of a table has the key key_of(table, on, i) (a Key, ordered), in
/// this order: the matching pairs (left table order, then right table order: the header leaves the pairs'
/// order within a key open), then the left rows that match nothing (outer joins keeping them), then the
/// right rows that match nothing, each in table order. Semi and anti joins: (left row, -1) in left table
/// order.
template <class Key, class KeyOf>
std::vector<RowPair> reference_rows_by(const TableView& left, const TableView& right,
                                       const std::vector<std::string>& left_on,
                                       const std::vector<std::string>& right_on, JoinKind kind, KeyOf key_of) {
  const std::int64_t n_left = table_rows(left), n_right = table_rows(right);
  const auto left_key = [&](std::int64_t i) { return key_of(left, left_on, i); };
  const auto right_key = [&](std::int64_t j) { return key_of(right, right_on, j); };
  // Each key's right rows in table order (an ordered multimap keeps equal keys in insertion order).
  const auto right_by_key = rows_by_key<Key>(n_right, right_key);

  std::vector<RowPair> out;
  if (kind == JoinKind::LeftSemi || kind == JoinKind::LeftAnti) {  // membership only: no pairs built
    for (std::int64_t i = 0; i < n_left; ++i)
      if ((right_by_key.find(left_key(i)) != right_by_key.end()) == (kind == JoinKind::LeftSemi)) out.push_back({i, -1});
    return out;
  }
  std::vector<RowPair> pairs, left_only, right_only;
  std::vector<bool> right_matched(static_cast<std::size_t>(n_right), false);
  for (std::int64_t i = 0; i < n_left; ++i) {
    const auto [begin, end] = right_by_key.equal_range(left_key(i));
    if (begin == end) {
      left_only.push_back({i, -1});
      continue;
    }
    for (auto it = begin; it != end; ++it) {
      pairs.push_back({i, it->second});
      right_matched[static_cast<std::size_t>(it->second)] = true;
    }
  }
  for (std::int64_t j = 0; j < n_right; ++j)
    if (!right_matched[static_cast<std::size_t>(j)]) right_only.push_back({-1, j});

  const auto append = [&out](const std::vector<RowPair>& rows) { out.insert(out.end(), rows.begin(), rows.end()); };
  append(pairs);
  if (kind == JoinKind::LeftOuter || kind == JoinKind::FullOuter) append(left_only);
  if (kind == JoinKind::RightOuter || kind == JoinKind::FullOuter) append(right_only);
  return out;
}

/// reference_rows_by with keys read as tuples of their typed integer values (key_tuple).
inline std::vector<RowPair> reference_rows(const TableView& left, const TableView& right,
                                           const std::vector<std::string>& left_on,
                                           const std::vector<std::string>& right_on, JoinKind kind) {
  return reference_rows_by<KeyTuple>(left, right, left_on, right_on, kind, key_tuple);
}

}  // namespace mgjoin::test
