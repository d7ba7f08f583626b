#pragma once
// Inputs of the wide-key suites (keys over 8 bytes, joined by hash and verify): key specs, the weak hash
// switched on for a scope (MGJOIN_TEST_KEY_HASH=weak: tuples collide in masses), and adversarial tables
// (keys that differ only in a later component, a hot key, signed extremes of every component).
#include <mgjoin/types.hpp>

#include "table/table_inputs.hpp"
#include "table/table_names.hpp"
#include "table/test_tables.hpp"

#include <cstdint>
#include <cstdlib>
#include <ostream>
#include <string>
#include <vector>

namespace mgjoin::test {

/// Composite keys of more than 8 bytes: two and four 8-byte columns, mixed widths and signedness.
inline std::vector<KeySpec> wide_key_specs() {
  return {{"int64_int64", {DType::Int64, DType::Int64}},
          {"uint64_int64", {DType::UInt64, DType::Int64}},
          {"int64_int8", {DType::Int64, DType::Int8}},
          {"int32_int64_int8", {DType::Int32, DType::Int64, DType::Int8}},
          {"int16_uint64_uint8_int32", {DType::Int16, DType::UInt64, DType::UInt8, DType::Int32}},
          {"int32_int32_int32", {DType::Int32, DType::Int32, DType::Int32}},
          {"four_int64", std::vector<DType>(4, DType::Int64)}};
}

/// The hash a suite runs under: the engine's, or the weak one of MGJOIN_TEST_KEY_HASH=weak.
enum class Hash : std::uint8_t { Strong, Weak };
inline const char* hash_label(Hash h) { return h == Hash::Weak ? "weak_hash" : "strong_hash"; }
inline void PrintTo(Hash h, std::ostream* os) { *os << hash_label(h); }

/// Sets MGJOIN_TEST_KEY_HASH for its lifetime (unset for Hash::Strong), and unsets it after.
class ScopedKeyHash {
 public:
  explicit ScopedKeyHash(Hash h) {
    if (h == Hash::Weak)
      setenv("MGJOIN_TEST_KEY_HASH", "weak", 1);
    else
      unsetenv("MGJOIN_TEST_KEY_HASH");
  }
  ~ScopedKeyHash() { unsetenv("MGJOIN_TEST_KEY_HASH"); }
  ScopedKeyHash(const ScopedKeyHash&) = delete;
  ScopedKeyHash& operator=(const ScopedKeyHash&) = delete;
};

/// Two int64 key columns "a", "b" whose first component is one value on every row: rows differ only in
/// the second (left b = 0, 1, ..., right b = 0, 2, 4, ... and some beyond the left's), so that every
/// pair collides under the weak hash and the strong hash alone tells them apart. Payloads "v" and "w".
inline TableInput differing_in_the_second_column(std::int64_t left_rows, std::int64_t right_rows, Rng& rng) {
  TableInput in;
  in.shape = "keys differing only in the second column";
  OwnedColumn la = zero_column("a", DType::Int64, left_rows), lb = zero_column("b", DType::Int64, left_rows);
  OwnedColumn ra = zero_column("a", DType::Int64, right_rows), rb = zero_column("b", DType::Int64, right_rows);
  for (std::int64_t i = 0; i < left_rows; ++i) set_integer(la, i, -5), set_integer(lb, i, i % 97);
  for (std::int64_t i = 0; i < right_rows; ++i) set_integer(ra, i, -5), set_integer(rb, i, (2 * i) % 150);
  in.left.columns = {la, random_payload("v", DType::Int32, left_rows, rng), lb};
  in.right.columns = {rb, ra, random_payload("w", DType::Float64, right_rows, rng)};
  in.left_on = in.right_on = {"a", "b"};
  return in;
}

/// Every pair of extremes of int64 and int32 as (int64, int32, int64) keys on the left; on the right the
/// same in reverse order, every third tuple left out and its components swapped to the other extremes.
inline TableInput signed_extremes() {
  TableInput in;
  in.shape = "signed extremes (int64, int32, int64)";
  std::vector<KeyTuple> left, right;
  for (const Int128 x : extreme_values(DType::Int64))
    for (const Int128 y : extreme_values(DType::Int32)) left.push_back({x, y, -x - 1});
  for (std::size_t i = left.size(); i-- > 0;)
    right.push_back(i % 3 ? left[i] : KeyTuple{left[i][2], left[i][1], left[i][0]});
  const KeySpec spec{"int64_int32_int64", {DType::Int64, DType::Int32, DType::Int64}};
  Rng rng(5);
  in.left_on = {"x", "y", "z"};
  in.right_on = {"p", "q", "r"};
  in.left = build_table(spec, in.left_on, left, {DType::Int16}, "v", rng);
  in.right = build_table(spec, in.right_on, right, {DType::UInt64}, "w", rng);
  return in;
}

}  // namespace mgjoin::test
