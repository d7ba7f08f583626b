#pragma once
// The bits of one key value in its component (KeyComponent says what each kind does): what packed keys
// are made of, what wide keys hash, and what their verification compares. Pure host code.
#include "core/dispatch.hpp"
#include "engine/src/table/table_keys.hpp"

#include <bit>
#include <cstdint>
#include <cstring>
#include <type_traits>

namespace mgjoin::table {

constexpr std::uint64_t sign_bit(int width) { return std::uint64_t{1} << (8 * width - 1); }
constexpr std::uint64_t low_bits(int width) { return width == 8 ? ~std::uint64_t{0} : (std::uint64_t{1} << (8 * width)) - 1; }

/// A float's bits as an unsigned integer that orders as the floats do: -0.0 as 0.0, every NaN as all ones
/// (above +inf, whose bits are below them).
template <class Float, class Bits>
std::uint64_t ordered_float(Float f) {
  if (f != f) return ~Bits{0};
  if (f == 0) f = 0;
  const Bits bits = std::bit_cast<Bits>(f);
  const Bits sign = Bits{1} << (8 * sizeof(Bits) - 1);
  return (bits & sign) ? static_cast<Bits>(~bits) : static_cast<Bits>(bits | sign);
}

/// The bits of value `v` of a key column in component `c`.
template <class T>
std::uint64_t encode(T v, const KeyComponent& c) {
  using Kind = KeyComponent::Kind;
  if constexpr (std::is_floating_point_v<T>) {
    return c.width == 4 ? ordered_float<float, std::uint32_t>(static_cast<float>(v))
                        : ordered_float<double, std::uint64_t>(static_cast<double>(v));
  } else {
    switch (c.kind) {
      case Kind::Bool: return v != 0 ? 1 : 0;
      case Kind::Unsigned: return static_cast<std::uint64_t>(v);
      case Kind::Signed:  // a narrower unsigned value fits the signed type: the cast keeps it
        return (static_cast<std::uint64_t>(static_cast<std::int64_t>(v)) & low_bits(c.width)) ^ sign_bit(c.width);
      case Kind::Shared:
        if constexpr (std::is_signed_v<T>)
          return v < 0 ? 0 : static_cast<std::uint64_t>(v) | sign_bit(c.width);
        else
          return static_cast<std::uint64_t>(v) >= sign_bit(c.width) ? 1 : static_cast<std::uint64_t>(v) | sign_bit(c.width);
      case Kind::Float: break;
    }
    return 0;
  }
}

/// The bits of row `row` of a column of value type T (its data at `values`) in component `c`.
template <class T>
std::uint64_t encoded_at(const char* values, std::int64_t row, const KeyComponent& c) {
  T v;
  std::memcpy(&v, values + static_cast<std::size_t>(row) * sizeof(T), sizeof(T));
  return encode(v, c);
}

/// f(i, r, bits) for the bits of every row r of every component i of `key` (paired), one component (one
/// pass over the rows, on all OpenMP threads) at a time, in key order: f may combine a row's components.
template <class F>
void for_each_encoded(const KeyColumns& key, std::int64_t rows, F&& f) {
  for (std::size_t i = 0; i < key.columns.size(); ++i) {
    const KeyComponent& c = key.components[i];
    const char* values = static_cast<const char*>(key.columns[i].data);
    dispatch_value_type(key.columns[i].type, [&](auto type) {
      using T = decltype(type);
#pragma omp parallel for schedule(static)
      for (std::int64_t r = 0; r < rows; ++r) f(i, r, encoded_at<T>(values, r, c));
    });
  }
}

}  // namespace mgjoin::table
