#pragma once
// The one width dispatcher: kernels and merges are templated on the unsigned key type and the payload
// type; these turn the widths known at run time (4 or 8 bytes, payload 0, 4 or 8) into those types.
// Device code sorts signed keys as unsigned ones with the sign bit flipped, so only widths matter.
#include <mgjoin/error.hpp>
#include <mgjoin/types.hpp>

#include <cstddef>
#include <cstdint>
#include <string>
#include <type_traits>
#include <utility>

namespace mgjoin {

/// The payload type of a key-only relation.
struct NoPayload {};

/// Calls f(K{}) with K = std::uint32_t for 4-byte keys and std::uint64_t for 8-byte ones.
template <class F>
decltype(auto) dispatch_key_width(int key_bytes, F&& f) {
  MGJOIN_EXPECTS(key_bytes == 4 || key_bytes == 8, "keys are 4 or 8 bytes, not " + std::to_string(key_bytes));
  if (key_bytes == 4) return std::forward<F>(f)(std::uint32_t{});
  return std::forward<F>(f)(std::uint64_t{});
}

/// Calls f(P{}) with P = NoPayload, std::uint32_t or std::uint64_t for payloads of 0, 4 or 8 bytes.
template <class F>
decltype(auto) dispatch_payload_width(int payload_bytes, F&& f) {
  MGJOIN_EXPECTS(payload_bytes == 0 || payload_bytes == 4 || payload_bytes == 8,
                 "payloads are 0, 4 or 8 bytes, not " + std::to_string(payload_bytes));
  if (payload_bytes == 0) return std::forward<F>(f)(NoPayload{});
  if (payload_bytes == 4) return std::forward<F>(f)(std::uint32_t{});
  return std::forward<F>(f)(std::uint64_t{});
}

/// Calls f(K{}, P{}) for a key width and a payload width (the six instantiations of every kernel).
template <class F>
decltype(auto) dispatch_widths(int key_bytes, int payload_bytes, F&& f) {
  return dispatch_key_width(key_bytes, [&](auto key) -> decltype(auto) {
    return dispatch_payload_width(payload_bytes, [&](auto payload) -> decltype(auto) { return f(key, payload); });
  });
}

/// Calls f(W{}) with W = std::uint8_t, uint16_t, uint32_t or uint64_t for columns of 1, 2, 4 or 8 bytes a
/// value: code that moves values without looking at them (gathers).
template <class F>
decltype(auto) dispatch_column_width(std::size_t value_bytes, F&& f) {
  switch (value_bytes) {
    case 1: return std::forward<F>(f)(std::uint8_t{});
    case 2: return std::forward<F>(f)(std::uint16_t{});
    case 4: return std::forward<F>(f)(std::uint32_t{});
    case 8: return std::forward<F>(f)(std::uint64_t{});
    default: break;
  }
  throw Error("columns hold 1, 2, 4 or 8 bytes a value, not " + std::to_string(value_bytes));
}

/// Calls f(Key{}) with the C++ type of a key column (int32, uint32, int64, uint64): host code that
/// compares signed keys natively. @throw InputError for a type that cannot be a key.
template <class F>
decltype(auto) dispatch_key_type(DType type, F&& f) {
  switch (type) {
    case DType::Int32: return std::forward<F>(f)(std::int32_t{});
    case DType::UInt32: return std::forward<F>(f)(std::uint32_t{});
    case DType::Int64: return std::forward<F>(f)(std::int64_t{});
    case DType::UInt64: return std::forward<F>(f)(std::uint64_t{});
    default: break;
  }
  throw InputError("key column has type " + std::string(dtype_name(type)) +
                   ": keys must be int32, uint32, int64 or uint64");
}

/// Calls f(T{}) with the C++ type of a column's values: std::int8_t ... std::uint64_t, float, double, and
/// for bool its byte (std::uint8_t): host code that converts or compares values of any column type.
template <class F>
decltype(auto) dispatch_value_type(DType type, F&& f) {
  switch (type) {
    case DType::Int8: return std::forward<F>(f)(std::int8_t{});
    case DType::UInt8: case DType::Bool: return std::forward<F>(f)(std::uint8_t{});
    case DType::Int16: return std::forward<F>(f)(std::int16_t{});
    case DType::UInt16: return std::forward<F>(f)(std::uint16_t{});
    case DType::Int32: return std::forward<F>(f)(std::int32_t{});
    case DType::UInt32: return std::forward<F>(f)(std::uint32_t{});
    case DType::Int64: return std::forward<F>(f)(std::int64_t{});
    case DType::UInt64: return std::forward<F>(f)(std::uint64_t{});
    case DType::Float32: return std::forward<F>(f)(float{});
    case DType::Float64: return std::forward<F>(f)(double{});
  }
  throw Error("unknown column type " + std::to_string(static_cast<int>(type)));
}

/// `void` for NoPayload, else P itself: the payload template argument of code that takes void for
/// key-only relations (CUB's keys-only sorts, the merges).
template <class P>
using payload_or_void = std::conditional_t<std::is_same_v<P, NoPayload>, void, P>;

}  // namespace mgjoin
