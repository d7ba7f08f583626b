// The Engine: a face over its resources (engine_resources.hpp), as libcudf's hash_join forwards to its
// impl; each join runs in run_join.cpp.
#include <mgjoin/engine.hpp>

#include "alloc/host_memory.hpp"
#include "engine/src/api/engine_resources.hpp"

namespace mgjoin {

Engine::Engine(const EngineOptions& options) : resources_(std::make_unique<detail::EngineResources>(options)) {}

Engine::~Engine() = default;

JoinResult Engine::join(RelationView r, RelationView s, const JoinOptions& options) {
  validate_relations(r, s);
  alloc::check_host_memory_environment();
  return detail::join_on(*resources_, r, s, options);
}

JoinResult Engine::join(RelationView r, RelationView s, const JoinSettings& settings) {
  validate_relations(r, s);
  alloc::check_host_memory_environment();
  return detail::join_on(*resources_, r, s, settings);
}

const std::vector<int>& Engine::devices() const { return resources_->devices(); }
std::uint64_t Engine::device_bytes() const { return resources_->device_bytes(); }
const std::vector<PhaseStat>& Engine::startup() const { return resources_->startup(); }
detail::EngineResources& Engine::resources() const noexcept { return *resources_; }

}  // namespace mgjoin
