#pragma once
// An Engine's resources (the Engine's pimpl, engine.hpp): its GPU set, the device stack of every GPU,
// peer access, NCCL communicators, the pinned range stacks, the tuning file and the merge phase's
// buffers, made once and reused by every join. This header is the engine's internal API: the library's
// code beside the flows reaches an engine's resources through Engine::resources() (table/: the GPU
// gathers' stacks and rates; dist/: a rank's co-partitioned flow on its GPU), and tests of the flows.
#include "alloc/stack_allocator.hpp"
#include "alloc/stack_set.hpp"
#include "engine/src/exec/input_staging.hpp"
#include "engine/src/exec/pinned_stacks.hpp"
#include "engine/src/flows/copart/copart_flow.hpp"
#include "engine/src/flows/paper/paper_flow.hpp"
#include "engine/src/plan/cost_model.hpp"
#include "p2p/nccl_comms.hpp"
#include "p2p/peer_access.hpp"
#include "topology/topology.hpp"
#include "topology/tuning_file.hpp"

#include <mgjoin/engine.hpp>

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <vector>

namespace mgjoin::detail {

class EngineResources {
 public:
  /// Chooses the GPU set (gpus / gpu_ids, tuning_file) and takes gpu_memory_limit of each GPU.
  /// @throw InputError when no GPU is present, a requested GPU does not exist or the memory limit is
  ///        more than the GPUs have.
  explicit EngineResources(const EngineOptions& options);
  EngineResources(const EngineResources&) = delete;
  EngineResources& operator=(const EngineResources&) = delete;

  /// What the engine was made with (joins may not ask for other GPUs).
  const EngineOptions& made_with() const { return made_with_; }
  const std::vector<int>& devices() const { return devices_; }
  std::uint64_t device_bytes() const { return device_bytes_; }
  /// Engine::startup()'s parts.
  const std::vector<PhaseStat>& startup() const { return startup_; }
  /// Each GPU's device stack, in the order of devices(); empty between joins.
  std::span<alloc::DeviceStackAllocator* const> device_stacks() const { return stacks_.view(); }
  /// The rates of the engine's GPUs together (its tuning file's, or defaults).
  Rates rates() const;
  /// Whether the tuning file timed the paper flow faster on this GPU set.
  bool tuning_says_paper() const;
  /// The communicators for `exchange` (made when first asked for), or nullptr for the copy engines.
  const p2p::NcclComms* comms_for(Exchange exchange);
  /// The co-partitioned flow's context on the engine's GPUs and stacks, with at least `pinned` bytes of
  /// pinned staging per GPU (the range stacks, grown once when a plan needs more); with `stage_inputs`,
  /// copies in from pageable inputs go through the engine's input staging (exec/input_staging.hpp).
  copart::CopartContext copart_context(Exchange exchange, std::uint64_t pinned, bool stage_inputs = false);
  /// The paper flow's context on the engine's GPUs and stacks.
  PaperContext paper_context();
  /// The paper flow's plan for `r` and `s`, or nullopt where it would refuse them (more chunksets than
  /// the merge phase takes, merge buffers host memory cannot hold, no plan).
  std::optional<sort::SortPlan> paper_plan_if_runnable(const RelationView& r, const RelationView& s);
  /// What the GPUs' input staging has copied so far, all together: {"input.staged", host seconds, bytes}.
  PhaseStat staged_inputs() const;
  /// Host bytes the pinned range stacks hold.
  std::uint64_t range_bytes() const { return ranges_.bytes(); }

  /// Waits for every GPU's work: an error or a cancellation unwinds with copies in flight, which must
  /// finish before the caller's memory (inputs, pinned stacks) is unpinned, freed or reused.
  void synchronize() const noexcept;

 private:
  struct Machine;  ///< the topology, the tuning file and the GPU set chosen from them
  static Machine probe_machine(const EngineOptions& options);
  EngineResources(const EngineOptions& options, Machine&& machine);

  std::vector<PhaseStat> startup_;  ///< first: the probe's parts are moved in before the members are made
  EngineOptions made_with_;
  std::vector<int> devices_;
  std::uint64_t device_bytes_ = 0;
  std::optional<topology::TuningFile> tuning_;
  p2p::PeerAccess peers_;
  alloc::StackSet<alloc::DeviceStackAllocator> stacks_;
  std::unique_ptr<p2p::NcclComms> nccl_;
  topology::Topology topo_;
  exec::PinnedStacks ranges_;  ///< one mapped pinned stack per GPU, on its NUMA node: its kernels write there
  MergeBuffers merge_buffers_;
  std::vector<std::unique_ptr<exec::InputStaging>> staging_;  ///< per GPU; buffers made on first use
  std::vector<exec::InputStaging*> staging_view_;
};

/// One join on `engine`'s resources, its inputs checked by the caller (Engine::join, mgjoin::join): the
/// EngineOptions part of `options` must be unset or the engine's.
/// @throw InputError when it is not.
JoinResult join_on(EngineResources& engine, RelationView r, RelationView s, const JoinOptions& options);
/// The same with the join's settings alone.
JoinResult join_on(EngineResources& engine, RelationView r, RelationView s, const JoinSettings& settings);

}  // namespace mgjoin::detail
