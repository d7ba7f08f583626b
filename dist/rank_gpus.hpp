#pragma once
// The co-partitioned flow across ranks on their GPUs (private to dist/): each rank's slices cross PCIe
// once, are partitioned on its GPU by the shared plan (ranks in the place of GPUs, hot keys included),
// go GPU to GPU over NCCL to the ranks owning their keys, and are joined there by the one-GPU
// co-partitioned flow; only the count or the output comes back to the host.
//
//   rank i: R_i, S_i (host) ── H2D ─► partition by the plan ─► NCCL ─► rank d's GPU
//           R'_i, S'_i (what rank i's GPU received) ─► one-GPU co-partitioned join ─► count │ output D2H
//
// Each slice is one chunk: the chunk router's round loop (engine/src/exec/chunk_router.hpp) has nothing
// to overlap here, so this path takes the router's steps alone (exec::copy_rows_in, the partition and its
// bounds: exec::partition_and_read_bounds) on buffers of its own, laid on the GPU's stack so that the sent
// rows are freed before the local join takes the memory (a chunk slot's one allocation would not allow it).
//
// The rows travel through the host instead (distributed_join.cpp's shuffle) where the exchange is MPI's,
// a rank joins on more than one GPU or the CPU, or some rank's GPU cannot hold its part: the slices, what
// it receives and the local join beside them. Every rank learns that before any rows move (or, when the
// sample misled, before any output is made), and then all of them take the host route together.
#include "dist/collectives.hpp"
#include "dist/nccl_rows.hpp"

#include <mgjoin/engine.hpp>

#include <memory>
#include <optional>

namespace mgjoin::dist::detail {

/// The shared plan of a collective join and where this rank's rows start in each relation.
struct RankPlan {
  copart::PartitionPlan partitions;
  copart::KeySample r_sample, s_sample;  ///< of all ranks' rows (the plan's bounds come from them)
  std::int64_t r_first = 0, s_first = 0;
};

/// Whether every rank can join on its GPU (collective): one key column of 4 or 8 bytes, payloads that
/// move (Materialize) of 4 or 8 bytes, `local` one GPU, the NCCL communicator's.
bool rank_gpus_can_join(const Comm& c, const RelationView& r, const RelationView& s, OutputMode output,
                        const mgjoin::Engine* local, const NcclRows* nccl);

/// This rank's part of a join on the ranks' GPUs.
struct RankJoined {
  JoinResult local;                     ///< for the key range this rank owns
  std::int64_t r_rows = 0, s_rows = 0;  ///< rows of R and S it received
};

/// One collective join on the ranks' GPUs, in two steps around the plan: start() takes buffers for this
/// rank's slices on its GPU and starts copying them there, so that they cross PCIe while the ranks
/// sample their keys and agree on splitters; finish() partitions, exchanges and joins them.
class RankGpuJoin {
 public:
  /// Takes the slices' buffers and issues their H2D (collective; Count or Materialize): nullptr on every
  /// rank where some rank's GPU cannot hold them. `r` and `s` must outlive the join.
  static std::unique_ptr<RankGpuJoin> start(const Comm& c, const NcclRows& nccl, mgjoin::Engine& local, const RelationView& r,
                                            const RelationView& s, OutputMode output);
  /// Waits for the copies before the buffers go back.
  ~RankGpuJoin();
  RankGpuJoin(const RankGpuJoin&) = delete;
  RankGpuJoin& operator=(const RankGpuJoin&) = delete;

  /// Partitions the slices by `plan`, sends the rows to their ranks over NCCL and joins what arrived
  /// (collective): this rank's part, or std::nullopt on every rank, with nothing output, where some rank's
  /// GPU could not hold its part. @throw RankError when any rank fails otherwise.
  std::optional<RankJoined> finish(const Comm& c, const RankPlan& plan);

 private:
  struct State;
  explicit RankGpuJoin(std::unique_ptr<State> state);
  std::unique_ptr<State> state_;
};

}  // namespace mgjoin::dist::detail
