#pragma once
// What the library's code beside the join flows takes from an Engine: late materialization gathers
// payload columns on the engine's GPUs (table/gpu_gather.hpp), in their device stacks, and plans it by
// the rates of the engine's tuning file.
#include "alloc/stack_allocator.hpp"
#include "engine/src/cost_model.hpp"

#include <mgjoin/engine.hpp>

#include <span>

namespace mgjoin::detail {

struct EngineInternals {
  /// Each GPU's device stack, in the order of Engine::devices(); empty between joins.
  static std::span<alloc::DeviceStackAllocator* const> device_stacks(Engine& engine);
  /// The rates of the engine's GPUs together (its tuning file's, or defaults).
  static Rates rates(const Engine& engine);
};

}  // namespace mgjoin::detail
