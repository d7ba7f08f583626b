#pragma once
// What the library's code beside the join flows takes from an Engine: late materialization gathers
// payload columns on the engine's GPUs (table/gpu_gather.hpp), in their device stacks, and plans it by
// the rates of the engine's tuning file; the ranks of libmgjoin_dist run the co-partitioned flow's
// steps on each rank's engine (dist/rank_gpus.hpp).
#include "alloc/stack_allocator.hpp"
#include "engine/src/flows/copart/copart_flow.hpp"
#include "engine/src/cost_model.hpp"

#include <mgjoin/engine.hpp>

#include <span>

namespace mgjoin::detail {

struct EngineInternals {
  /// Each GPU's device stack, in the order of Engine::devices(); empty between joins.
  static std::span<alloc::DeviceStackAllocator* const> device_stacks(Engine& engine);
  /// The co-partitioned flow's context on the engine's GPUs and stacks, with at least `pinned` bytes of
  /// pinned staging per GPU.
  static copart::CopartContext copart_context(Engine& engine, Exchange exchange, std::uint64_t pinned);
  /// The rates of the engine's GPUs together (its tuning file's, or defaults).
  static Rates rates(const Engine& engine);
};

}  // namespace mgjoin::detail
