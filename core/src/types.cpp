// Names of the column types (core/'s part of <mgjoin/types.hpp>; HostColumn's memory is alloc/'s).
#include <mgjoin/error.hpp>
#include <mgjoin/types.hpp>

#include <optional>
#include <string_view>

namespace mgjoin {

std::string_view dtype_name(DType t) {
  switch (t) {
    case DType::Int32: return "int32";
    case DType::UInt32: return "uint32";
    case DType::Int64: return "int64";
    case DType::UInt64: return "uint64";
    case DType::Float32: return "float32";
    case DType::Float64: return "float64";
    case DType::Int8: return "int8";
    case DType::UInt8: return "uint8";
    case DType::Int16: return "int16";
    case DType::UInt16: return "uint16";
    case DType::Bool: return "bool";
  }
  return "?";
}

std::optional<DType> parse_dtype(std::string_view n) {
  if (n == "int32" || n == "i4") return DType::Int32;
  if (n == "uint32" || n == "u4") return DType::UInt32;
  if (n == "int64" || n == "i8") return DType::Int64;
  if (n == "uint64" || n == "u8") return DType::UInt64;
  if (n == "float32" || n == "f4") return DType::Float32;
  if (n == "float64" || n == "f8") return DType::Float64;
  if (n == "int8" || n == "i1") return DType::Int8;
  if (n == "uint8" || n == "u1") return DType::UInt8;
  if (n == "int16" || n == "i2") return DType::Int16;
  if (n == "uint16" || n == "u2") return DType::UInt16;
  if (n == "bool" || n == "b1") return DType::Bool;
  return std::nullopt;
}

}  // namespace mgjoin
