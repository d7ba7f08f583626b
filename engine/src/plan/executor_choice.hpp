#pragma once
// Where a join without an Engine runs (mgjoin::choose_executor, join.hpp): the rule, pure, so that CI
// tests it; the public function reads MGJOIN_CPU_ROUTE_ROWS and asks it.
#include <mgjoin/join.hpp>

#include <cstdint>
#include <optional>
#include <string_view>

namespace mgjoin::detail {

/// MGJOIN_CPU_ROUTE_ROWS's default: 2^17 rows in all. The CPU path joins them in a few milliseconds on
/// one core, where one GPU's start alone took 0.4 s (2 H200s) to 1.4 s (4 H200s) (PERFORMANCE.md).
inline constexpr std::int64_t kDefaultCpuRouteRows = std::int64_t{1} << 17;

/// The rule of choose_executor with the route's bound given (`route_rows`; 0 = never route).
ExecutorChoice executor_for(const JoinOptions& options, std::int64_t r_rows, std::int64_t s_rows,
                            std::int64_t route_rows);

/// MGJOIN_CPU_ROUTE_ROWS's value (`text`, nullopt when unset). @throw InputError naming a bad value.
std::int64_t cpu_route_rows(std::optional<std::string_view> text);

}  // namespace mgjoin::detail
