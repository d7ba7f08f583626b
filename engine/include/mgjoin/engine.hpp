#pragma once
// A GPU join engine that keeps its resources between joins: the device stack of every GPU, peer
// access, NCCL communicators and pinned host buffers are made once (paper Section 3.1.3: GPU
// allocations cost up to tens of milliseconds each) and reused by every join() call.
//
//   mgjoin::JoinOptions options;  options.gpus = 4;
//   mgjoin::Engine engine(options);            // chooses the GPU set, takes the device memory
//   auto result = engine.join(r, s, options);  // as often as needed
//
// mgjoin::join() makes an Engine for one call (or runs the CPU path for gpus = 0).
#include <mgjoin/join.hpp>

#include <memory>
#include <vector>

namespace mgjoin {

class Engine {
 public:
  /// Uses options.gpus / gpu_ids (the set), gpu_memory_limit and tuning_file.
  /// @throw InputError when no GPU is present, a requested GPU does not exist or the memory limit
  ///        leaves no room for a chunk.
  explicit Engine(const JoinOptions& options);
  ~Engine();
  Engine(const Engine&) = delete;
  Engine& operator=(const Engine&) = delete;

  /// Joins R and S on this engine's GPUs with options.sort, exchange, output and progress (the GPU
  /// set and memory were fixed at construction) and options.strategy; the paper flow sorts r and s in
  /// place, the co-partitioned flow leaves them untouched, as in mgjoin::join().
  JoinResult join(RelationView r, RelationView s, const JoinOptions& options);

  /// CUDA device ids of the GPU set, in chunk order.
  const std::vector<int>& devices() const;
  /// Device memory per GPU held by this engine's stacks.
  std::uint64_t device_bytes() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

/// Checks what every join needs of its inputs: equal integer key types, payload lengths equal to
/// key lengths. @throw InputError naming the problem.
void validate_relations(const RelationView& r, const RelationView& s);

}  // namespace mgjoin
