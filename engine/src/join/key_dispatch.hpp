#pragma once
// Calls a generic lambda with a value of the C++ type of a key column (host code templates on the
// four real key types; device code on the unsigned width only).
#include <mgjoin/error.hpp>
#include <mgjoin/types.hpp>

#include <cstdint>
#include <utility>

namespace mgjoin::detail {

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

}  // namespace mgjoin::detail
