#pragma once
// A GPU join engine that keeps its resources between joins: the device stack of every GPU, peer
// access, NCCL communicators and pinned host buffers are made once (paper Section 3.1.3: GPU
// allocations cost up to tens of milliseconds each) and reused by every join() call.
//
//   mgjoin::EngineOptions gpus;  gpus.gpus = 4;
//   mgjoin::Engine engine(gpus);               // chooses the GPU set, takes the device memory
//   mgjoin::JoinOptions join;  join.output = mgjoin::OutputMode::Count;
//   auto result = engine.join(r, s, join);     // as often as needed
//
// mgjoin::join() makes an Engine for one call (or runs the CPU path for gpus = 0).
#include <mgjoin/join.hpp>

#include <memory>
#include <vector>

namespace mgjoin {

namespace detail {
class EngineResources;
}

class Engine {
 public:
  /// Chooses the GPU set (gpus / gpu_ids, tuning_file) and takes gpu_memory_limit of each GPU.
  /// @throw InputError when no GPU is present, a requested GPU does not exist or the memory limit
  ///        is more than the GPUs have.
  explicit Engine(const EngineOptions& options);
  ~Engine();
  Engine(const Engine&) = delete;
  Engine& operator=(const Engine&) = delete;

  /// Joins R and S on this engine's GPUs with options.strategy, sort, exchange, output and progress;
  /// the paper flow sorts r and s in place, the co-partitioned flow leaves them untouched, as in
  /// mgjoin::join(). @throw InputError when options' EngineOptions part is set (not the default) and
  /// differs from the one this engine was made with: the GPU set and memory are fixed at construction.
  JoinResult join(RelationView r, RelationView s, const JoinOptions& options);
  /// The same with only the join's own settings: nothing to check against the engine's.
  JoinResult join(RelationView r, RelationView s, const JoinSettings& settings);

  /// CUDA device ids of the GPU set, in chunk order.
  const std::vector<int>& devices() const;
  /// Device memory per GPU held by this engine's stacks.
  std::uint64_t device_bytes() const;

  /// How long this engine took to start, in parts: "start.driver" (the process's first CUDA call, which
  /// starts the driver: counted by the first engine only, 0 where something earlier made that call),
  /// "start.gpu_set" (the topology, read from its cache, and the tuning file), "start.contexts" (a
  /// context per GPU, made side by side), "start.device_memory" (free memory read, peer access, the
  /// stacks taken) and "start.pinned" (the pinned range stacks). join() and the engine-less
  /// join_tables() put them first in their result's phases.
  const std::vector<PhaseStat>& startup() const;

  /// The library's own access to this engine's GPUs, stacks and tuning (its internal API,
  /// engine/src/api/engine_resources.hpp); the type is complete only inside libengine.
  detail::EngineResources& resources() const noexcept;

 private:
  std::unique_ptr<detail::EngineResources> resources_;
};

/// Checks what every join needs of its inputs: equal integer key types, payload lengths equal to
/// key lengths. @throw InputError naming the problem.
void validate_relations(const RelationView& r, const RelationView& s);

}  // namespace mgjoin
