#pragma once
// The join_tables suites' names for kinds, output forms, materializations, strategies and types (in
// messages and test names), the lists the sweeps run through, and the integer types' ranges.
#include <mgjoin/join.hpp>
#include <mgjoin/table.hpp>
#include <mgjoin/types.hpp>

#include "common/reference_join.hpp"

#include <cstddef>
#include <string>

namespace mgjoin::test {

inline const char* kind_label(JoinKind k) {
  switch (k) {
    case JoinKind::Inner: return "Inner";
    case JoinKind::LeftOuter: return "LeftOuter";
    case JoinKind::RightOuter: return "RightOuter";
    case JoinKind::FullOuter: return "FullOuter";
    case JoinKind::LeftSemi: return "LeftSemi";
    case JoinKind::LeftAnti: return "LeftAnti";
  }
  return "?";
}
inline const char* output_label(TableOutput o) {
  switch (o) {
    case TableOutput::Count: return "Count";
    case TableOutput::GatherMaps: return "GatherMaps";
    case TableOutput::Columns: return "Columns";
  }
  return "?";
}
inline const char* materialization_label(Materialization m) {
  switch (m) {
    case Materialization::Auto: return "Auto";
    case Materialization::Carry: return "Carry";
    case Materialization::Late: return "Late";
  }
  return "?";
}
inline const char* strategy_label(JoinStrategy s) {
  switch (s) {
    case JoinStrategy::Auto: return "Auto";
    case JoinStrategy::Paper: return "Paper";
    case JoinStrategy::CoPartitioned: return "CoPartitioned";
  }
  return "?";
}
/// A type's name for messages (the library's names).
inline std::string type_label(DType t) { return std::string(dtype_name(t)); }

inline constexpr JoinKind kAllKinds[] = {JoinKind::Inner,     JoinKind::LeftOuter, JoinKind::RightOuter,
                                         JoinKind::FullOuter, JoinKind::LeftSemi,  JoinKind::LeftAnti};
inline constexpr TableOutput kAllOutputs[] = {TableOutput::Count, TableOutput::GatherMaps, TableOutput::Columns};
inline constexpr Materialization kAllMaterializations[] = {Materialization::Auto, Materialization::Carry,
                                                           Materialization::Late};
inline constexpr DType kAllTypes[] = {DType::Int32,   DType::UInt32, DType::Int64, DType::UInt64,
                                      DType::Float32, DType::Float64, DType::Int8, DType::UInt8,
                                      DType::Int16,   DType::UInt16, DType::Bool};
inline constexpr DType kIntegerTypes[] = {DType::Int8,  DType::UInt8,  DType::Int16, DType::UInt16,
                                          DType::Int32, DType::UInt32, DType::Int64, DType::UInt64};

inline bool is_signed_type(DType t) {
  return t == DType::Int8 || t == DType::Int16 || t == DType::Int32 || t == DType::Int64;
}
inline Int128 type_min(DType t) {
  if (!is_signed_type(t)) return 0;
  return -(Int128{1} << (8 * element_bytes(t) - 1));
}
inline Int128 type_max(DType t) {
  const int bits = static_cast<int>(8 * element_bytes(t)) - (is_signed_type(t) ? 1 : 0);
  return (Int128{1} << bits) - 1;
}
inline std::string int128_text(Int128 v) {
  if (v == 0) return "0";
  const bool negative = v < 0;
  std::string s;
  for (; v != 0; v /= 10) s.push_back(static_cast<char>('0' + static_cast<int>(negative ? -(v % 10) : v % 10)));
  if (negative) s.push_back('-');
  return {s.rbegin(), s.rend()};
}
inline std::string tuple_text(const KeyTuple& k) {
  std::string s = "(";
  for (std::size_t i = 0; i < k.size(); ++i) {
    if (i) s += ',';
    s += int128_text(k[i]);
  }
  return s + ")";
}

}  // namespace mgjoin::test
