#pragma once
// What a join's executor line (JoinResult::executor) names: the GPUs, the sort and the exchange.
#include <mgjoin/join.hpp>

#include <span>
#include <string>

namespace mgjoin::exec {

/// "0,1,2".
inline std::string gpu_list(std::span<const int> ids) {
  std::string s;
  for (const int d : ids) {
    if (!s.empty()) s += ',';
    s += std::to_string(d);
  }
  return s;
}

inline const char* sort_label(SortStrategy s) { return s == SortStrategy::Merge ? "merge" : "radix"; }
inline const char* exchange_label(Exchange e) { return e == Exchange::Nccl ? "NCCL" : "copy engines"; }

}  // namespace mgjoin::exec
