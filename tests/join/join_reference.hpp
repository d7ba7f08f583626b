#pragma once
// Simple references for the join tests: nested-loop / std::map joins that the code under test must match.
#include <mgjoin/join.hpp>
#include <mgjoin/types.hpp>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <map>
#include <type_traits>
#include <tuple>
#include <utility>
#include <vector>

namespace mgjoin::test {

/// The DType of a C++ key type.
template <class Key>
constexpr DType dtype_of() {
  if constexpr (std::is_same_v<Key, std::int32_t>) return DType::Int32;
  if constexpr (std::is_same_v<Key, std::uint32_t>) return DType::UInt32;
  if constexpr (std::is_same_v<Key, std::int64_t>) return DType::Int64;
  return DType::UInt64;
}

/// One output tuple as raw 64-bit words (key bits, R payload bits, S payload bits; 0 when absent).
using Tuple = std::tuple<std::uint64_t, std::uint64_t, std::uint64_t>;

inline std::uint64_t word_at(const void* data, std::size_t width, std::size_t i) {
  std::uint64_t w = 0;
  std::memcpy(&w, static_cast<const char*>(data) + i * width, width);
  return w;
}

/// Every (r, s) pair with equal keys, as sorted tuples; built with a multimap on S's keys.
template <class Key>
std::vector<Tuple> reference_join(const std::vector<Key>& rk, const std::vector<std::uint64_t>& rp,
                                  const std::vector<Key>& sk, const std::vector<std::uint64_t>& sp) {
  std::multimap<Key, std::size_t> s_rows;
  for (std::size_t j = 0; j < sk.size(); ++j) s_rows.emplace(sk[j], j);
  std::vector<Tuple> out;
  for (std::size_t i = 0; i < rk.size(); ++i) {
    auto [b, e] = s_rows.equal_range(rk[i]);
    for (auto it = b; it != e; ++it)
      out.emplace_back(word_at(&rk[i], sizeof(Key), 0), rp.empty() ? 0 : rp[i], sp.empty() ? 0 : sp[it->second]);
  }
  std::sort(out.begin(), out.end());
  return out;
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

/// Every (i, j) with r[i] == s[j], sorted: what a set of matching ranges must cover exactly once.
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

/// Sorted-key inputs for partitioning tests.
template <class Key>
std::vector<Key> sorted(std::vector<Key> v) {
  std::sort(v.begin(), v.end());
  return v;
}

}  // namespace mgjoin::test
