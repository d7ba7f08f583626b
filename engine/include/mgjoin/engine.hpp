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
struct EngineInternals;
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

  /// CUDA device ids of the GPU set, in chunk order.
  const std::vector<int>& devices() const;
  /// Device memory per GPU held by this engine's stacks.
  std::uint64_t device_bytes() const;

 private:
  friend JoinResult join(RelationView r, RelationView s, const JoinOptions& options);
  friend struct detail::EngineInternals;  // the library's own code beside the flows (engine_internals.hpp)
  /// join() without validate_relations: inputs are checked once, where they enter the library.
  JoinResult join_checked(RelationView r, RelationView s, const JoinOptions& options);

  struct Impl;
  std::unique_ptr<Impl> impl_;
};

/// Checks what every join needs of its inputs: equal integer key types, payload lengths equal to
/// key lengths. @throw InputError naming the problem.
void validate_relations(const RelationView& r, const RelationView& s);

}  // namespace mgjoin
