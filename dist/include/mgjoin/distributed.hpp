#pragma once
// Joins across MPI ranks (libmgjoin_dist, built where MPI is found): each rank holds a slice of R and
// of S, the ranks agree on shared splitters from a global key sample, every rank's rows go to the rank
// that owns their key range (the co-partitioned flow's plan, hot keys included, with ranks in the place
// of GPUs), and each rank joins what it received with the single-process engine (its GPUs, or the CPU
// path). The count is summed over the ranks; a materialized output stays with the rank that made it,
// one part of the whole per rank.
//
//   rank i: R_i, S_i ── sample ─► allgather ─► splitters (same on every rank)
//           R_i, S_i ── partition by the splitters ─► exchange ─►
//           R'_i, S'_i ─► mgjoin::join ─► count (summed) │ part i of the output
//
// The exchange goes through host memory (MPI_Alltoallv; the free functions, RankExchange::Mpi) or
// through each rank's GPU over NCCL (dist::Engine with RankExchange::Nccl or the caller's ncclComm_t).
// Over NCCL, where each rank joins on one GPU (the default: one rank per GPU) and the join is one the
// co-partitioned flow runs whole (dist::join; dist::join_tables' inner joins of one 4- or 8-byte key
// column, counted or with at most one 4- or 8-byte payload column a side), the flow runs on the GPUs: a
// rank's slices cross PCIe once, are partitioned on its GPU, go GPU to GPU (NVLink on a node, the
// network's RDMA between nodes) to the ranks owning their keys, and are joined there; only the output
// comes back. Otherwise, or where a rank's GPU cannot hold its part, the rows cross to the rank's GPU,
// NCCL sends them, and they come back to the host for the local join. The result's phases say which
// ("ranks.gpus" for the first).
//
// Every call is collective over the communicator. A rank that fails (bad input, no memory) does not
// leave the others waiting: after each step the ranks agree on whether all went well, and every rank
// throws RankError with the first failing rank's message.
#include <mgjoin/engine.hpp>
#include <mgjoin/error.hpp>
#include <mgjoin/join.hpp>
#include <mgjoin/table.hpp>
#include <mgjoin/types.hpp>

#include <mpi.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <string>

// NCCL's communicator handle, declared as nccl.h declares it: users who pass none need no NCCL headers.
using ncclComm_t = struct ncclComm*;

namespace mgjoin::dist {

/// Another rank (or this one) failed a step of a collective call; what() names the rank, kind() says
/// what the failing rank threw (so that callers answer as they would in one process).
class RankError : public Error {
 public:
  enum class Kind : int { Error = 0, Input = 1, OutOfMemory = 2, Cancelled = 3 };
  RankError(int rank, Kind kind, const std::string& message)
      : Error("rank " + std::to_string(rank) + ": " + message), rank_(rank), kind_(kind) {}
  int rank() const { return rank_; }
  Kind kind() const { return kind_; }

 private:
  int rank_;
  Kind kind_;
};

struct DistributedResult {
  std::uint64_t count = 0;  ///< output rows of all ranks together (the same on every rank)
  int ranks = 1;
  JoinResult local;         ///< this rank's part: its output rows (Materialize), its count, its phases
  std::int64_t r_rows = 0, s_rows = 0;  ///< rows of R and S this rank joined (its key range's)
};

/// Runs `step` on this rank, then the ranks of `comm` agree on whether it failed on any of them: if so
/// every rank throws RankError with the message of the lowest rank that failed (collective). Callers wrap
/// their own local steps between collectives in it (reading a rank's slice, writing its part).
void agree(MPI_Comm comm, const std::function<void()>& step);

/// Most ranks one join spans (the splitters' plan; as many as the co-partitioned flow's GPUs).
inline constexpr int kMaxRanks = 16;

/// Joins the slices `r` and `s` of this rank with those of every other rank of `comm` (collective; slices
/// may be empty and of any length; their order across ranks is the rank order). `options` is the
/// single-process join every rank runs on what it receives (OutputMode::Count or Materialize). Unless
/// it names GPUs (`gpu_ids`) or asks for none (`gpus = 0`: the CPU path), each rank of a node takes its
/// own `gpus` of the node's GPUs, in node-rank order (by default an equal share: one rank per GPU).
/// @throw RankError when any rank fails a step (every rank throws it, naming the first that failed).
DistributedResult join(RelationView r, RelationView s, const JoinOptions& options, MPI_Comm comm);

struct DistributedTableResult {
  std::uint64_t count = 0;  ///< output rows of all ranks together (the same on every rank)
  int ranks = 1;
  /// This rank's part of the output, as join_tables() gives it for the rows this rank joined: its
  /// columns (TableOutput::Columns), or its gather maps, whose row indices are into the whole tables
  /// (every rank's slice, one after another in rank order). The parts of all ranks, in any order, are
  /// the output of the join of the whole tables; within a part, the pairs come first, then the part's
  /// unmatched rows.
  TableJoinResult local;
  std::int64_t left_received = 0, right_received = 0;  ///< rows of each table this rank received and joined
};

/// join_tables() across the ranks of `comm` (collective): each rank holds a slice of the left and of the
/// right table (the same column names and types on every rank, any lengths, in rank order). Every kind,
/// output form and key of join_tables: the ranks agree on splitters of the packed key, send each row's
/// key columns (and, for TableOutput::Columns, its chosen payload columns; for gather maps, its row
/// index) to the rank owning its key, and each rank runs join_tables on what it received. A hot key is
/// spread over several ranks only where the kind allows it: an inner join either side, a left outer,
/// semi or anti join only the left side's rows (the right side's are copied), a right outer join only
/// the right side's, a full outer join neither (its rows all go to one rank).
/// @throw RankError when any rank fails a step (every rank throws it, naming the first that failed).
DistributedTableResult join_tables(const TableView& left, const TableView& right, const TableJoinOptions& options,
                                   MPI_Comm comm);

/// How the rows travel between ranks in the shuffle.
enum class RankExchange {
  Mpi,   ///< host memory, MPI_Alltoallv
  Nccl,  ///< each rank's GPU, grouped ncclSend/ncclRecv
  Auto,  ///< Nccl where every rank has a GPU of its own on its node, else Mpi
};

namespace detail {
class NcclRows;
}

/// A distributed engine over an MPI communicator the caller owns, for engines that already run MPI
/// (and NCCL): join() and join_tables() as the free functions, the rows travelling as it was made.
/// Every call (the constructors too) is collective over the communicator.
class Engine {
 public:
  /// Over `comm`. RankExchange::Nccl makes an NCCL communicator over the same ranks (rank 0's
  /// ncclGetUniqueId, MPI_Bcast, ncclCommInitRank) on each rank's first GPU of its node's share (as
  /// JoinOptions's default: one GPU per rank) and destroys it with the engine. With NCCL, the engine
  /// also holds each rank's local mgjoin::Engine (its GPUs' memory, taken once), made for the default
  /// options and made again for a join that asks for other GPUs or memory.
  /// @throw RankError when a rank has no GPU for it or NCCL fails on any rank.
  explicit Engine(MPI_Comm comm, RankExchange exchange = RankExchange::Mpi);
  /// Over `comm` and `nccl`, an NCCL communicator the caller made over the same ranks in the same order
  /// (rank i of comm is rank i of nccl); the rows travel through the GPU it was made on. Both stay the
  /// caller's: they must outlive the engine.
  /// @throw RankError when nccl's size or rank differ from comm's on any rank.
  Engine(MPI_Comm comm, ncclComm_t nccl);
  ~Engine();
  Engine(const Engine&) = delete;
  Engine& operator=(const Engine&) = delete;

  RankExchange exchange() const { return nccl_ ? RankExchange::Nccl : RankExchange::Mpi; }

  /// dist::join through this engine's exchange.
  DistributedResult join(RelationView r, RelationView s, const JoinOptions& options) const;
  /// dist::join_tables through this engine's exchange.
  DistributedTableResult join_tables(const TableView& left, const TableView& right, const TableJoinOptions& options) const;

 private:
  /// This rank's engine for a join with `options` (collective): the one held when it was made for the
  /// same GPUs and memory, else made anew; nullptr without NCCL or for the CPU path.
  mgjoin::Engine* local_for(const JoinOptions& options) const;

  MPI_Comm comm_;
  std::unique_ptr<detail::NcclRows> nccl_;
  mutable std::unique_ptr<mgjoin::Engine> local_;
  mutable EngineOptions local_options_;
};

}  // namespace mgjoin::dist
