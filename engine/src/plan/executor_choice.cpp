// Where a join without an Engine runs (executor_choice.hpp).
#include "engine/src/plan/executor_choice.hpp"

#include <mgjoin/error.hpp>

#include <charconv>
#include <cstdlib>
#include <string>

namespace mgjoin {
namespace detail {

ExecutorChoice executor_for(const JoinOptions& options, std::int64_t r_rows, std::int64_t s_rows,
                            std::int64_t route_rows) {
  if (!options.gpu_ids.empty() || options.gpus > 0) return {Executor::Gpus, {}};
  if (options.gpus == 0) return {Executor::Cpu, "CPU path (no GPUs asked for)"};
  // GPUs left to choose: a small join ends on the CPU before any GPU would have started. A strategy or
  // a GPU memory limit named asks for the GPUs, so it keeps them (and the limit is checked).
  const std::int64_t rows = r_rows + s_rows;
  if (options.strategy == JoinStrategy::Auto && options.gpu_memory_limit == 0 && route_rows > 0 && rows <= route_rows)
    return {Executor::Cpu, "CPU path: " + std::to_string(rows) + " rows join on the CPU before the GPUs would start (at most " +
                               std::to_string(route_rows) + ", MGJOIN_CPU_ROUTE_ROWS)"};
  return {Executor::Gpus, {}};
}

std::int64_t cpu_route_rows(std::optional<std::string_view> text) {
  if (!text || text->empty()) return kDefaultCpuRouteRows;
  std::int64_t rows = -1;
  const char* end = text->data() + text->size();
  const auto [at, ec] = std::from_chars(text->data(), end, rows);
  MGJOIN_INPUT_EXPECTS(ec == std::errc{} && at == end && rows >= 0,
                       "MGJOIN_CPU_ROUTE_ROWS '" + std::string(*text) + "': expected a row count (0 = never)");
  return rows;
}

}  // namespace detail

ExecutorChoice choose_executor(const JoinOptions& options, std::int64_t r_rows, std::int64_t s_rows) {
  const char* env = std::getenv("MGJOIN_CPU_ROUTE_ROWS");
  return detail::executor_for(options, r_rows, s_rows,
                              detail::cpu_route_rows(env ? std::optional<std::string_view>(env) : std::nullopt));
}

}  // namespace mgjoin
