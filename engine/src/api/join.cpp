// join(): validates the inputs (the one check at the library's boundary: the layers below trust them)
// and runs the GPU engine, or the CPU path when asked for (gpus = 0) or when the machine has no GPU.
#include <mgjoin/engine.hpp>
#include <mgjoin/error.hpp>
#include <mgjoin/join.hpp>

#include "alloc/host_memory.hpp"
#include "engine/src/api/engine_resources.hpp"
#include "engine/src/join/cpu_join.hpp"
#include "engine/src/exec/kept_inputs.hpp"
#include "engine/src/exec/output_columns.hpp"
#include "engine/src/sort/merge_sort.hpp"
#include "core/cancel.hpp"
#include "core/device.hpp"

#include <optional>
#include <utility>
#include <string>

namespace mgjoin {

void validate_relations(const RelationView& r, const RelationView& s) {
  const auto name = [](DType t) { return std::string(dtype_name(t)); };
  MGJOIN_INPUT_EXPECTS(r.key.type == s.key.type,
                       "R and S keys differ in type (" + name(r.key.type) + " vs " + name(s.key.type) + ")");
  MGJOIN_INPUT_EXPECTS(is_key_dtype(r.key.type),
                       "key type " + name(r.key.type) + " is not supported: keys must be int32, uint32, int64 or uint64");
  MGJOIN_INPUT_EXPECTS(!r.payload || r.payload->size == r.key.size,
                       "R payload has " + std::to_string(r.payload ? r.payload->size : 0) + " rows but R key has " +
                           std::to_string(r.key.size));
  MGJOIN_INPUT_EXPECTS(!s.payload || s.payload->size == s.key.size,
                       "S payload has " + std::to_string(s.payload ? s.payload->size : 0) + " rows but S key has " +
                           std::to_string(s.key.size));
  for (const auto& [side, payload] : {std::pair{"R", &r.payload}, std::pair{"S", &s.payload}})
    MGJOIN_INPUT_EXPECTS(!*payload || dtype_size((*payload)->type) >= 4,
                         std::string(side) + " payload has type " + name((*payload)->type) +
                             ": join() carries payloads of 4 or 8 bytes (join_tables() takes any column)");
}

const char* strategy_name(JoinStrategy s) {
  switch (s) {
    case JoinStrategy::Auto: return "auto";
    case JoinStrategy::Paper: return "paper";
    case JoinStrategy::CoPartitioned: return "copart";
  }
  return "?";
}

namespace {

/// The value of `words` named `name`. @throw InputError "<what>: expected <the words>".
template <class T, std::size_t N>
T parse_word(std::string_view name, const std::string& what, const std::pair<const char*, T> (&words)[N]) {
  std::string expected;
  for (std::size_t i = 0; i < N; ++i) {
    if (name == words[i].first) return words[i].second;
    expected += (i == 0 ? "" : i + 1 == N ? " or " : ", ") + std::string(words[i].first);
  }
  throw InputError(what + ": expected " + expected);
}

}  // namespace

JoinStrategy parse_join_strategy(std::string_view name, const std::string& what) {
  static constexpr std::pair<const char*, JoinStrategy> words[] = {
      {"auto", JoinStrategy::Auto}, {"paper", JoinStrategy::Paper}, {"copart", JoinStrategy::CoPartitioned}};
  return parse_word(name, what, words);
}

PayloadFlow parse_payload_flow(std::string_view name, const std::string& what) {
  static constexpr std::pair<const char*, PayloadFlow> words[] = {
      {"auto", PayloadFlow::Auto}, {"carry", PayloadFlow::Carry}, {"late", PayloadFlow::Late}};
  return parse_word(name, what, words);
}

SortStrategy parse_sort_strategy(std::string_view name, const std::string& what) {
  static constexpr std::pair<const char*, SortStrategy> words[] = {
      {"radix", SortStrategy::Radix}, {"merge", SortStrategy::Merge}, {"auto", SortStrategy::FromTuning}};
  return parse_word(name, what, words);
}

Exchange parse_exchange(std::string_view name, const std::string& what) {
  static constexpr std::pair<const char*, Exchange> words[] = {{"copy", Exchange::CopyEngines}, {"nccl", Exchange::Nccl}};
  return parse_word(name, what, words);
}

bool sort_strategy_supported(SortStrategy s, int gpus) {
  return s != SortStrategy::Merge || sort::merge_sort_supported(gpus);
}

namespace {
JoinResult cpu_path(RelationView r, RelationView s, const JoinOptions& options, std::string reason) {
  const detail::CancelScope cancel(options.cancel);
  detail::expect_inputs_keepable(options);
  std::optional<detail::KeptInputs> kept;  // the CPU path sorts in place
  if (options.keep_inputs) kept = detail::copy_inputs(r, s);
  JoinResult result = kept ? detail::cpu_join(kept->r, kept->s, options) : detail::cpu_join(r, s, options);
  if (options.output == OutputMode::Materialize) exec::pour_into_sink(result, options.sink);
  result.strategy = JoinStrategy::Paper;
  result.strategy_reason = std::move(reason);
  return result;
}
}  // namespace

JoinResult join(RelationView r, RelationView s, const JoinOptions& options) {
  validate_relations(r, s);
  alloc::check_host_memory_environment();
  const ExecutorChoice where = choose_executor(options, r.size(), s.size());
  if (where.executor == Executor::Cpu) return cpu_path(r, s, options, where.reason);
  if (gpu::device_count() == 0) {
    MGJOIN_INPUT_EXPECTS(options.gpus < 0 && options.gpu_ids.empty(),
                         std::string(options.gpu_ids.empty() ? "JoinOptions::gpus" : "JoinOptions::gpu_ids") +
                             ": GPUs were asked for but no CUDA GPU was found on this machine");
    return cpu_path(r, s, options, "CPU path (no CUDA GPU on this machine)");  // the default (all GPUs) without any
  }
  Engine engine(options);
  JoinResult result = detail::join_on(engine.resources(), r, s, options);
  result.phases.insert(result.phases.begin(), engine.startup().begin(), engine.startup().end());
  return result;
}

}  // namespace mgjoin
